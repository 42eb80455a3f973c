"""The shape of a Karenina verification result, as the RDF model of results needs it.

Karenina writes every field of a result (``model_dump``), in declaration order, nulls included
(spec verification.md §10-11). The tables below list each part's fields in that order with the
value a fresh result holds: the mapper writes no triple for a field at that value and the
exporter writes it back, so a result costs triples only for what happened in it. Fields whose
value is structured (models, failure, usage, per-field results, trait scores) get nodes of their
own; other lists and objects are stored whole as ``rdf:JSON``. docs/data-model.md §8 is the
picture; this module is the reference the mapper and the exporter share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from karenina_rdf.rdf import KAR, SCHEMA, camel

EARL = "http://www.w3.org/ns/earl#"
PROV = "http://www.w3.org/ns/prov#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
DCTERMS = "http://purl.org/dc/terms/"

# Karenina's failure taxonomy as SKOS: the scheme KAR.failure (also a result's link to its failure
# node), a concept KAR.failure_category(category) per category, KAR.failure_group(group) per group
# (the broader concept of its categories).
FORMAT_VERSION = "2.2"
READABLE_VERSIONS = ("2.0", "2.1", "2.2")

# Karenina's failure taxonomy (spec §8): category → group.
FAILURE_GROUPS: dict[str, str] = {
    "content": "content",
    "recursion_limit": "autofail",
    "trace_validation": "autofail",
    "deep_judgment": "autofail",
    "deep_judgment_rubric": "autofail",
    "timeout": "retry",
    "connection": "retry",
    "rate_limit": "retry",
    "server_error": "retry",
    "abstention": "abstained",
    "sufficiency": "abstained",
    "template_validation": "system",
    "parsing": "system",
    "unexpected_error": "system",
}
GROUP_LABELS = {
    "content": "the answer was judged wrong",
    "autofail": "a guard failed the task",
    "retry": "a transient error outlived its retries",
    "abstained": "the model abstained or the answer was insufficient",
    "system": "the pipeline itself failed",
}

# The five score dicts of a rubric result, by the kind their traits are (spec §10).
SCORE_DICTS = {
    "llm": "llm_trait_scores",
    "regex": "regex_trait_scores",
    "callable": "callable_trait_scores",
    "metric": "metric_trait_scores",
    "agentic": "agentic_trait_scores",
}
CONFUSION_BUCKETS = ("tp", "fn", "fp", "tn")
USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens", "model", "input_token_details", "output_token_details")


@dataclass(frozen=True)
class Field:
    """One field of a part of the record: its JSON name, the value a fresh result holds (no
    triple is written for it), and how it is stored: ``value`` (a literal on the part's node),
    or the name of a structure the mapper builds nodes for."""

    name: str
    default: Any = None
    store: str = "value"
    # The IRI of the field's own predicate (hot in the mapper): by default karenina: + the camelCase
    # name, looked up in the closed vocabulary when the table is built, so a name missing from it
    # fails at import. A field kept only as a link or under other names (a model, the job summary,
    # a skipped one) has none.
    predicate: str = ""

    def __post_init__(self) -> None:
        if not self.predicate and self.store not in _NO_PREDICATE:
            object.__setattr__(self, "predicate", str(KAR.term(camel(self.name))))


# Stores of fields with no triple under their own name: a model is a link to its node (or
# ``{field}_identity`` verbatim), the job summary is fields of the run node (or
# ``jobSummaryVerbatim``/``jobSummaryNull``), and ``skip`` fields are written by someone else.
_NO_PREDICATE = frozenset({"model", "summary", "skip"})


def _fields(*specs: str | tuple[str, Any] | tuple[str, Any, str]) -> tuple[Field, ...]:
    out = []
    for spec in specs:
        if isinstance(spec, str):
            out.append(Field(spec))
        else:
            out.append(Field(*spec))
    return tuple(out)


METADATA = _fields(
    ("question_id", None, "key"),
    ("template_id", None, "key"),
    ("failure", None, "failure"),
    ("caveats", []),
    ("warnings", []),
    "partial_content",
    "retry_counts",
    "question_text",
    "raw_answer",
    "keywords",
    ("answering", None, "model"),
    ("parsing", None, "model"),
    "answering_system_prompt",
    "parsing_system_prompt",
    "execution_time",
    "timestamp",
    "result_id",
    "run_name",
    "replicate",
    ("few_shot_enabled", False),
    ("few_shot_example_count", 0),
    "evaluation_mode",
    "scenario_id",
    "scenario_node",
    "scenario_turn",
    "scenario_path",
)
TEMPLATE = _fields(
    ("raw_llm_response", ""),
    ("trace_messages", []),
    ("conversation_context", []),
    "parsed_gt_response",
    "parsed_llm_response",
    ("template_verification_performed", False),
    "verify_result",
    "verify_granular_result",
    "field_verification_error",
    ("field_results", None, "fields"),
    ("field_scores", None, "fields"),
    "composition_strategy",
    ("embedding_check_performed", False),
    "embedding_similarity_score",
    ("embedding_override_applied", False),
    "embedding_model_used",
    ("regex_validations_performed", False),
    "regex_validation_results",
    "regex_validation_details",
    "regex_overall_success",
    "regex_extraction_results",
    ("recursion_limit_reached", False),
    ("response_timeout_partial", False),
    ("usage_unavailable", False),
    "investigation_trace",
    ("agentic_parsing_performed", False),
    "agentic_extraction_recovery",
    "agentic_extraction_error",
    ("dynamic_parsing_performed", False),
    "dynamic_parse_decision",
    "dynamic_decision_reasoning",
    ("abstention_check_performed", False),
    "abstention_detected",
    ("abstention_override_applied", False),
    "abstention_reasoning",
    ("sufficiency_check_performed", False),
    "sufficiency_detected",
    ("sufficiency_override_applied", False),
    "sufficiency_reasoning",
    "answering_mcp_servers",
    ("usage_metadata", None, "usage"),
    "agent_metrics",
)
RUBRIC = _fields(
    ("rubric_evaluation_performed", False),
    "rubric_evaluation_strategy",
    ("llm_trait_scores", None, "scores"),
    ("llm_trait_labels", None, "scores"),
    ("regex_trait_scores", None, "scores"),
    ("callable_trait_scores", None, "scores"),
    ("metric_trait_scores", None, "scores"),
    ("metric_trait_confusion_lists", None, "scores"),
    ("agentic_trait_scores", None, "scores"),
    "agentic_trait_investigation_traces",
    "agentic_trait_extraction_metadata",
    "dynamic_rubric_skipped_traits",
    "dynamic_rubric_promoted_traits",
    ("trait_provenance", None, "scores"),
)
DEEP_JUDGMENT = _fields(
    "deep_judgment_mode",
    ("deep_judgment_performed", False),
    "extracted_excerpts",
    "attribute_reasoning",
    "deep_judgment_stages_completed",
    ("deep_judgment_model_calls", 0),
    ("deep_judgment_excerpt_retry_count", 0),
    "attributes_without_excerpts",
    ("deep_judgment_search_enabled", False),
    "hallucination_risk_assessment",
)
DEEP_JUDGMENT_RUBRIC = _fields(
    ("deep_judgment_rubric_performed", False),
    "extracted_rubric_excerpts",
    "rubric_trait_reasoning",
    "deep_judgment_rubric_scores",
    "standard_rubric_scores",
    "trait_metadata",
    "traits_without_valid_excerpts",
    "rubric_hallucination_risk_assessment",
    ("total_deep_judgment_model_calls", 0),
    ("total_traits_evaluated", 0),
    ("total_excerpt_retries", 0),
)
ROOT = _fields(
    "evaluation_input",
    ("used_full_trace", True),
    "trace_extraction_error",
)
# The fields of a model node and of a failure node, with the predicates they have there.
MODEL_IDENTITY = (
    Field("interface"),
    Field("model_name", predicate=SCHEMA + "name"),
    Field("tools", []),
    Field("config_id"),
)
FAILURE_FIELDS = (
    Field("category", predicate=str(KAR.failureCategory)),
    Field("stage", predicate=str(KAR.failureStage)),
    Field("reason", predicate=SCHEMA + "description"),
    Field("details", predicate=str(KAR.failureDetails)),
    Field("group", predicate=str(KAR.failureGroup)),
)

# A result's parts in output order: (JSON key, fields, node suffix). The metadata and template
# fields live on the result node itself (every result has both); the others on a child node
# whose presence says the part was not null.
PARTS: tuple[tuple[str, tuple[Field, ...], str | None], ...] = (
    ("metadata", METADATA, ""),
    ("template", TEMPLATE, ""),
    ("rubric", RUBRIC, "/rubric"),
    ("deep_judgment", DEEP_JUDGMENT, "/deep-judgment"),
    ("deep_judgment_rubric", DEEP_JUDGMENT_RUBRIC, "/deep-judgment-rubric"),
)
RESULT_KEYS = ("metadata", "template", "rubric", "deep_judgment", "deep_judgment_rubric", *(f.name for f in ROOT))

JOB_SUMMARY = _fields(
    "total_questions",
    "successful_count",
    "failed_count",
    "start_time",
    "end_time",
    "total_duration",
    ("is_complete", False),
)


def is_default(value: Any, default: Any) -> bool:
    """``value`` is the field's fresh value, type included (``0`` is not ``False``, ``0.0`` not ``0``)."""
    return type(value) is type(default) and value == default


def canonical_key(identity: dict[str, Any] | None) -> str:
    """Karenina's ``ModelIdentity.canonical_key``: ``interface:model_name[:config_id]:`` + sorted tools."""
    if not identity:
        return ":"
    key = f"{identity.get('interface') or ''}:{identity.get('model_name') or ''}"
    if identity.get("config_id"):
        key += f":{identity['config_id']}"
    return key + ":" + "|".join(sorted(str(t) for t in identity.get("tools") or ()))


def display_string(identity: dict[str, Any] | None) -> str:
    """Karenina's ``ModelIdentity.display_string``: ``interface:model_name[ (config_id)][ +[t1, t2]]``."""
    if not identity:
        return ""
    text = f"{identity.get('interface') or ''}:{identity.get('model_name') or ''}"
    if identity.get("config_id"):
        text += f" ({identity['config_id']})"
    tools = identity.get("tools") or []
    if tools:
        text += " +[" + ", ".join(str(t) for t in tools) + "]"
    return text
