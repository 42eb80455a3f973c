"""Namespaces and terms of the RDF model (documented in docs/data-model.md)."""

from __future__ import annotations

import re

import pyoxigraph as ox

SCHEMA = "https://schema.org/"
# Karenina's own canonical context binds `karenina:` to this URN; reusing it means an
# `additionalType` CURIE in a checkpoint and the IRI in the store are the same term.
KARENINA = "urn:karenina:vocab:"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
XSD = "http://www.w3.org/2001/XMLSchema#"
CATALOG_GRAPH = ox.NamedNode("urn:karenina-rdf:catalog")
VOCABULARY_GRAPH = ox.NamedNode("urn:karenina-rdf:vocabulary")  # the failure taxonomy (SKOS)
# The models of every run, once: a model node copied into each run graph would be seen once per
# run by queries over the union of graphs (pyoxigraph's union default graph keeps duplicates).
MODELS_GRAPH = ox.NamedNode("urn:karenina-rdf:models")
DEFAULT_BASE_IRI = "http://127.0.0.1:8000/"

PREFIXES = {
    "schema": SCHEMA,
    "karenina": KARENINA,
    "rdf": RDF,
    "xsd": XSD,
    # Verification results (docs/data-model.md §9): test outcomes, provenance, the failure taxonomy.
    "earl": "http://www.w3.org/ns/earl#",
    "prov": "http://www.w3.org/ns/prov#",
    "skos": "http://www.w3.org/2004/02/skos/core#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
}


def sparql_prefixes() -> str:
    return "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in PREFIXES.items())


def schema(local: str) -> ox.NamedNode:
    return ox.NamedNode(SCHEMA + local)


TYPE = ox.NamedNode(RDF + "type")
RDF_JSON = ox.NamedNode(RDF + "JSON")
XSD_STRING = ox.NamedNode(XSD + "string")
XSD_BOOLEAN = ox.NamedNode(XSD + "boolean")
XSD_INTEGER = ox.NamedNode(XSD + "integer")
XSD_DOUBLE = ox.NamedNode(XSD + "double")
XSD_BASE64 = ox.NamedNode(XSD + "base64Binary")

_CAMEL = re.compile(r"_([a-z0-9])")


def camel(name: str) -> str:
    """`higher_is_better` → `higherIsBetter`: Karenina setting names as RDF property names."""
    return _CAMEL.sub(lambda m: m.group(1).upper(), name)


# Question-level additionalProperty names with a typed predicate of their own (spec §4).
QUESTION_SETTINGS = (
    "finished",
    "author",
    "sources",
    "few_shot_examples",
    "answer_notes",
    "workspace_path",
)
# Values Karenina writes as JSON-encoded strings; stored decoded, as rdf:JSON.
JSON_STRING_SETTINGS = frozenset(
    {
        "author",
        "sources",
        "few_shot_examples",
        "classes",
        "metrics",
        "tp_instructions",
        "tn_instructions",
    }
)
# Trait-level additionalProperty names (spec §6.0).
TRAIT_SETTINGS = (
    "higher_is_better",
    "summary",
    "min_score",
    "max_score",
    "kind",
    "classes",
    "deep_judgment_enabled",
    "deep_judgment_excerpt_enabled",
    "deep_judgment_search_enabled",
    "deep_judgment_max_excerpts",
    "deep_judgment_excerpt_retry_attempts",
    "deep_judgment_fuzzy_match_threshold",
    "pattern",
    "case_sensitive",
    "invert_result",
    "callable_code",
    "metrics",
    "tp_instructions",
    "tn_instructions",
    "repeated_extraction",
    "evaluation_mode",
    "context_mode",
    "materialize_trace",
    "persist_trace",
    "max_turns",
    "timeout_seconds",
    "model_override",
    "dynamic_trait_type",
)
# Benchmark-level names that are system data rather than user custom properties (spec §5).
BENCHMARK_SETTINGS = ("benchmark_format_version", "benchmark_type")
CUSTOM_PREFIX = "custom_"

# The 14 rubric-trait additionalType values (spec §6.1) and the trait class each one means.
TRAIT_TYPES = {
    f"{scope}{suffix}": cls
    for scope in ("Global", "QuestionSpecific")
    for suffix, cls in (
        ("RubricTrait", "LLMRubricTrait"),
        ("LLMRubricTrait", "LLMRubricTrait"),
        ("RegexTrait", "RegexRubricTrait"),
        ("CallableTrait", "CallableRubricTrait"),
        ("MetricRubricTrait", "MetricRubricTrait"),
        ("AgenticRubricTrait", "AgenticRubricTrait"),
        ("DynamicRubricTrait", "DynamicRubricTrait"),
    )
}
DYNAMIC_TRAIT_CLASSES = {
    "llm": "LLMRubricTrait",
    "regex": "RegexRubricTrait",
    "callable": "CallableRubricTrait",
    "metric": "MetricRubricTrait",
    "agentic": "AgenticRubricTrait",
}
