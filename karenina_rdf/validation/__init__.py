"""The contract: SHACL shapes (``_shapes``), the fast SHACL engine compiled to SPARQL
(``_shacl``), the Python checks for what SHACL Core cannot say (``_checks``), reports for files,
benchmarks and runs (``_validate``) and the generated docs (``_docs``)."""

from ._checks import (
    TEMPLATE_DEFINES_ANSWER,
    TEMPLATE_PARSES,
    Readiness,
    readiness,
    template_cache,
    template_problems,
    template_results,
)
from ._shapes import ValidationResult
from ._validate import (
    BenchmarkReport,
    Engine,
    Finding,
    check_engine,
    findings_in_graph,
    findings_in_run,
    load_finding,
    record_import,
    report_json,
    reports_turtle,
    validate,
    validate_run,
    validate_store,
)

__all__ = [
    "TEMPLATE_DEFINES_ANSWER",
    "TEMPLATE_PARSES",
    "BenchmarkReport",
    "Engine",
    "Finding",
    "Readiness",
    "ValidationResult",
    "check_engine",
    "findings_in_graph",
    "findings_in_run",
    "load_finding",
    "readiness",
    "record_import",
    "report_json",
    "reports_turtle",
    "template_cache",
    "template_problems",
    "template_results",
    "validate",
    "validate_run",
    "validate_store",
]
