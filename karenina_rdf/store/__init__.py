"""The store as storage: ``GraphStore`` (graphs, query, checkpoint export, delete), the catalog
that says which generation graph is live (``Catalog``), loading N-Triples through one sink
protocol (``_loading``), and a SPARQL 1.1 server as the backend (``_remote``)."""

from ._catalog import CONTENT_HASH, FILE_HASH, GRAPH, IMPORTED_AT, RUN_GRAPH, SOURCE, TRIPLE_COUNT, VALIDATED
from ._loading import Sink
from ._remote import is_url
from ._store import (
    BASE_IRI_ENV,
    STORE_ENV,
    BenchmarkSummary,
    Generation,
    GraphStore,
    RebaseReport,
    default_store_path,
)

__all__ = [
    "BASE_IRI_ENV",
    "BenchmarkSummary",
    "CONTENT_HASH",
    "FILE_HASH",
    "GRAPH",
    "Generation",
    "GraphStore",
    "IMPORTED_AT",
    "RUN_GRAPH",
    "RebaseReport",
    "SOURCE",
    "STORE_ENV",
    "Sink",
    "TRIPLE_COUNT",
    "VALIDATED",
    "default_store_path",
    "is_url",
]
