"""SPARQL apart from any store or web framework: named queries (``queries/*.rq``) with typed
parameters bound as terms (``_named``), what the endpoint must know of a query's text
(``_text``), the full-text index (``_fulltext``), the SPARQL 1.1 Protocol (``_protocol``) and
the generated docs (``_docs``)."""

from ._fulltext import (
    FIELDS,
    INDEX_FILE,
    Hit,
    Hits,
    Row,
    SearchSyntaxError,
    TextIndex,
    sparql_functions,
)
from ._named import (
    NamedQuery,
    QueryParam,
    bind_values,
    find_query,
    looks_like_reference,
    named_queries,
    python_term,
    serialize_graph,
    serialize_results,
    to_term,
    where_brace,
)
from ._pool import QueryPool
from ._protocol import (
    GRAPHS,
    MEDIA_TYPES,
    RESULTS,
    SUFFIXES,
    Limits,
    Operation,
    ProtocolError,
    Runner,
    content_type,
    negotiate,
    parse_request,
)
from ._text import dataset_clauses
from ._worker import GRAPH_FORMATS, RESULT_FORMATS

__all__ = [
    "FIELDS",
    "INDEX_FILE",
    "Hit",
    "Hits",
    "Row",
    "SearchSyntaxError",
    "TextIndex",
    "sparql_functions",
    "GRAPHS",
    "GRAPH_FORMATS",
    "Limits",
    "MEDIA_TYPES",
    "NamedQuery",
    "Operation",
    "ProtocolError",
    "QueryParam",
    "QueryPool",
    "RESULTS",
    "RESULT_FORMATS",
    "Runner",
    "SUFFIXES",
    "bind_values",
    "content_type",
    "dataset_clauses",
    "find_query",
    "looks_like_reference",
    "named_queries",
    "negotiate",
    "parse_request",
    "python_term",
    "serialize_graph",
    "serialize_results",
    "to_term",
    "where_brace",
]
