"""Verification results as linked data: Karenina's result record (``_model``), exports read one
row at a time (``_read``, ``_legacy``, ``_sqlite``), rows to EARL assertions (``_map``) and back
(``_export``), runs in the store (``_runs``: import, list, export, delete), Karenina's ``ResultsStore`` files
(``_store_json``) and runs written
while they run (``_live``), and the summaries of its results the named queries read
(``_summaries``)."""

from ._db_write import KareninaDatabase, export_run_db, sqlite_path
from ._export import ResultRebuilder
from ._legacy import result_id
from ._live import LiveRun, RunProvenance, run_configuration, stored_header
from ._map import row_key
from ._model import EARL, FAILURE_GROUPS, METADATA, PROV, RDFS, ROOT, TEMPLATE, canonical_key
from ._read import is_sqlite, looks_like_results
from ._recount import recount_runs, summarise_runs
from ._runs import (
    ResultsImport,
    RunCheck,
    RunSummary,
    delete_run,
    export_run,
    import_results,
    list_runs,
    ordered_results,
    resolve_run,
    run_reader,
    run_summary,
)
from ._sqlite import import_results_db
from ._store_json import import_results_store, is_results_store

__all__ = [
    "EARL",
    "FAILURE_GROUPS",
    "KareninaDatabase",
    "LiveRun",
    "METADATA",
    "PROV",
    "RDFS",
    "ROOT",
    "ResultRebuilder",
    "ResultsImport",
    "RunCheck",
    "RunProvenance",
    "RunSummary",
    "TEMPLATE",
    "canonical_key",
    "delete_run",
    "export_run",
    "export_run_db",
    "import_results",
    "import_results_db",
    "import_results_store",
    "is_results_store",
    "is_sqlite",
    "list_runs",
    "looks_like_results",
    "ordered_results",
    "resolve_run",
    "result_id",
    "row_key",
    "run_configuration",
    "recount_runs",
    "summarise_runs",
    "run_reader",
    "run_summary",
    "sqlite_path",
    "stored_header",
]
