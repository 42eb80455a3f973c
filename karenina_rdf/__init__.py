"""karenina-rdf: Karenina LLM benchmarks as schema.org triples in an RDF graph store."""

from typing import TYPE_CHECKING, Any

from karenina_rdf._importing import ImportReport, ImportResult
from karenina_rdf._progress import Progress
from karenina_rdf._store import Store
from karenina_rdf.authoring import Answer, AnswerTemplate, BenchmarkInfo, Question
from karenina_rdf.checkpoint import (
    CANONICAL_CONTEXT,
    DynamicRubric,
    Rubric,
    RubricTrait,
    map_checkpoint,
    read_checkpoint,
)
from karenina_rdf.rdf import KARENINA, SCHEMA, generate_question_id, question_md5_id, template_id
from karenina_rdf.results import ResultsImport, RunSummary
from karenina_rdf.runner import Benchmark  # the authoring handle and the members calling models
from karenina_rdf.sparql import NamedQuery, QueryParam, named_queries
from karenina_rdf.store import BenchmarkDiff, BenchmarkSummary, BenchmarkVersion
from karenina_rdf.validation import BenchmarkReport, Finding, validate, validate_store

from ._errors import (
    AmbiguousBenchmarkError,
    BenchmarkNotFoundError,
    CheckpointError,
    DuplicateQuestionError,
    FeatureUnavailableError,
    InvalidTypeError,
    InvalidValueError,
    KareninaRDFError,
    NotFoundError,
    Problem,
    ProviderError,
    QueryNotFoundError,
    QuestionNotFoundError,
    ScenarioNotFoundError,
    StoreError,
    VerificationError,
)

__version__ = "0.1.0"

if TYPE_CHECKING:
    from karenina_rdf.web import EndpointSettings, create_app


def __getattr__(name: str) -> Any:
    # The endpoint pulls in FastAPI (0.3 s to import): only code that serves pays for it.
    if name in ("EndpointSettings", "create_app"):
        from karenina_rdf import web

        return getattr(web, name)
    raise AttributeError(f"module 'karenina_rdf' has no attribute {name!r}")


__all__ = [
    "AmbiguousBenchmarkError",
    "Answer",
    "AnswerTemplate",
    "Benchmark",
    "BenchmarkDiff",
    "BenchmarkInfo",
    "BenchmarkNotFoundError",
    "BenchmarkReport",
    "BenchmarkSummary",
    "BenchmarkVersion",
    "CANONICAL_CONTEXT",
    "CheckpointError",
    "DuplicateQuestionError",
    "DynamicRubric",
    "EndpointSettings",
    "FeatureUnavailableError",
    "Finding",
    "ImportReport",
    "ImportResult",
    "InvalidTypeError",
    "InvalidValueError",
    "KARENINA",
    "KareninaRDFError",
    "NamedQuery",
    "NotFoundError",
    "Problem",
    "Progress",
    "ProviderError",
    "QueryNotFoundError",
    "QueryParam",
    "Question",
    "QuestionNotFoundError",
    "ResultsImport",
    "Rubric",
    "RubricTrait",
    "RunSummary",
    "SCHEMA",
    "ScenarioNotFoundError",
    "Store",
    "StoreError",
    "VerificationError",
    "__version__",
    "create_app",
    "generate_question_id",
    "map_checkpoint",
    "named_queries",
    "question_md5_id",
    "read_checkpoint",
    "template_id",
    "validate",
    "validate_store",
]
