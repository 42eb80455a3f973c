"""The store as storage: ``GraphStore`` (graphs, query, checkpoint export, delete), the catalog
that says which generation graph is live (``Catalog``), loading N-Triples through one sink
protocol (``_loading``), and a SPARQL 1.1 server as the backend (``_remote``)."""

from ._catalog import CONTENT_HASH, FILE_HASH, GRAPH, IMPORTED_AT, RUN_GRAPH, SOURCE, TRIPLE_COUNT, VALIDATED
from ._files import files as store_files
from ._files import keep as keep_files
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
from ._versions import (
    BenchmarkDiff,
    BenchmarkVersion,
    QuestionChange,
    drop_version,
    export_version,
    find_version,
    live_version,
    restore_versions,
    save_version,
    versions,
)
from ._versions import diff as diff_versions
from ._versions import first_facts as first_version_facts
from ._versions import replace_facts as version_facts

__all__ = [
    "BASE_IRI_ENV",
    "BenchmarkDiff",
    "BenchmarkSummary",
    "BenchmarkVersion",
    "CONTENT_HASH",
    "FILE_HASH",
    "GRAPH",
    "Generation",
    "GraphStore",
    "QuestionChange",
    "IMPORTED_AT",
    "RUN_GRAPH",
    "RebaseReport",
    "SOURCE",
    "STORE_ENV",
    "Sink",
    "TRIPLE_COUNT",
    "VALIDATED",
    "default_store_path",
    "diff_versions",
    "drop_version",
    "export_version",
    "find_version",
    "restore_versions",
    "first_version_facts",
    "save_version",
    "version_facts",
    "versions",
    "is_url",
    "keep_files",
    "store_files",
    "live_version",
]
