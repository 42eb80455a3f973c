"""Rubric traits: what a Rating means, and the rules Karenina's trait models enforce (spec §6)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from typing import Any

from karenina_rdf.rdf import DYNAMIC_TRAIT_CLASSES, TRAIT_TYPES

METRICS_TP_ONLY = frozenset({"precision", "recall", "f1"})
METRICS_FULL = METRICS_TP_ONLY | {"specificity", "accuracy"}
AGENTIC_CONTEXT_MODES = ("workspace_only", "trace_and_workspace", "trace_only")


def normalise_type(value: str) -> str:
    """Karenina prepends ``karenina:`` to any additionalType lacking it (spec §6.1)."""
    return value if value.startswith("karenina:") else f"karenina:{value}"


def settings(rating: dict[str, Any]) -> dict[str, Any]:
    """The Rating's additionalProperty list as a dict, last occurrence winning, as Karenina reads it."""
    out: dict[str, Any] = {}
    pvs = rating.get("additionalProperty")
    for pv in pvs if isinstance(pvs, list) else []:
        if isinstance(pv, dict) and isinstance(pv.get("name"), str):
            out[pv["name"]] = pv.get("value")
    return out


def decode_json_string(value: Any) -> Any:
    """Legacy writers stored lists/objects as JSON strings; Karenina decodes them on read."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def trait_class(additional_type: str, props: dict[str, Any]) -> str:
    """`LLMRubricTrait`, `RegexRubricTrait`, … for a normalised additionalType."""
    local = additional_type.removeprefix("karenina:")
    cls = TRAIT_TYPES[local]
    if cls == "DynamicRubricTrait":
        cls = DYNAMIC_TRAIT_CLASSES.get(str(props.get("dynamic_trait_type", "llm")), "LLMRubricTrait")
    return cls


def trait_kind(cls: str, rating: dict[str, Any], props: dict[str, Any]) -> str:
    """boolean, score, literal or template: how the trait is scored (Karenina's decoding rules)."""
    kind = props.get("kind")
    if isinstance(kind, dict):
        return "template"
    if cls == "LLMRubricTrait":
        if isinstance(kind, str):
            return kind
        best, worst = rating.get("bestRating"), rating.get("worstRating")
        return "boolean" if best == 1 and worst == 0 else "score"
    if cls in ("CallableRubricTrait", "AgenticRubricTrait"):
        return kind if isinstance(kind, str) else "boolean"
    if cls == "RegexRubricTrait":
        return "boolean"
    return "metric"


def check(cls: str, kind: str, rating: dict[str, Any], props: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """Yield (severity, property, message) for every rule of Karenina's trait models broken here."""
    name = rating.get("name")
    if not isinstance(name, str):
        pass  # reported by the mapper as a wrong type
    elif not name:
        yield "error", "name", "a rubric trait needs a non-empty name"
    elif "." in name:
        yield "error", "name", "trait names may not contain '.' (Karenina's Rubric refuses them)"
    if kind in ("score",) and cls in ("LLMRubricTrait", "CallableRubricTrait", "AgenticRubricTrait"):
        lo, hi = props.get("min_score"), props.get("max_score")
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo >= hi:
            # Karenina's trait models do not refuse it (tests/parity/test_load.py): a warning.
            yield "warning", "min_score", f"score trait range is empty: min_score {lo} >= max_score {hi}"
    if kind == "literal":
        classes = decode_json_string(props.get("classes"))
        if not isinstance(classes, dict) or not 2 <= len(classes) <= 20:
            yield "error", "classes", "a literal trait needs 'classes': an object of 2 to 20 names"
    yield from _check_types(props)
    if kind not in ("boolean", "score", "literal", "template", "metric"):
        yield "error", "kind", f"unknown trait kind {kind!r} (boolean, score, literal or a template)"
    if cls == "RegexRubricTrait":
        yield from _check_regex(props)
    elif cls == "CallableRubricTrait":
        yield from _check_callable(props)
    elif cls == "MetricRubricTrait":
        yield from _check_metric(props)
    elif cls == "AgenticRubricTrait":
        yield from _check_agentic(rating, props)


_BOOL_SETTINGS = (
    "case_sensitive",
    "invert_result",
    "repeated_extraction",
    "materialize_trace",
    "persist_trace",
    "deep_judgment_enabled",
    "deep_judgment_excerpt_enabled",
    "deep_judgment_search_enabled",
)
_INT_SETTINGS = ("min_score", "max_score", "deep_judgment_max_excerpts", "deep_judgment_excerpt_retry_attempts")
_STR_SETTINGS = ("summary", "pattern", "callable_code", "evaluation_mode", "context_mode", "dynamic_trait_type")


def _check_types(props: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """The JSON types Karenina's trait models accept for each setting (null = not set)."""
    for key, value in props.items():
        if value is None:
            continue
        if key in _BOOL_SETTINGS or key == "higher_is_better":
            if not isinstance(value, bool):
                yield "error", key, f"{key} must be true or false, got {json.dumps(value)}"
        elif key in _INT_SETTINGS:
            if isinstance(value, bool) or not isinstance(value, int):
                yield "error", key, f"{key} must be an integer, got {json.dumps(value)}"
        elif key in _STR_SETTINGS:
            if not isinstance(value, str):
                yield "error", key, f"{key} must be a string, got {json.dumps(value)}"
        elif key == "kind":
            if not isinstance(value, (str, dict)):
                yield "error", key, f"kind must be a string or a template object, got {json.dumps(value)}"
        elif key == "classes":
            classes = decode_json_string(value)
            if isinstance(classes, dict) and not all(isinstance(v, str) for v in classes.values()):
                yield "error", key, "literal classes must map each class name to a description string"
        elif key == "deep_judgment_fuzzy_match_threshold" and not _unit_number(value):
            yield "error", key, f"{key} must be a number from 0 to 1"


def _unit_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def _check_regex(props: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    pattern = props.get("pattern")
    if pattern is None or pattern == "":
        # Karenina loads it (pattern defaults to ""), but an empty pattern matches everything.
        yield "warning", "pattern", "regex trait has no pattern: it matches every answer"
        return
    if not isinstance(pattern, str):
        yield "error", "pattern", "regex pattern must be a string"
        return
    try:
        re.compile(pattern)
    except re.error as exc:
        yield "error", "pattern", f"regex pattern does not compile: {exc}"


def _check_callable(props: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    code = props.get("callable_code")
    if code in (None, ""):
        yield "warning", "callable_code", "callable trait has no code: it cannot be evaluated"
        return
    if not isinstance(code, str):
        yield "error", "callable_code", "callable_code must be a base64 string"
        return
    try:
        base64.b64decode(code, validate=True)
    except (binascii.Error, ValueError) as exc:
        yield "error", "callable_code", f"callable_code is not valid base64: {exc}"


def _check_metric(props: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    mode = props.get("evaluation_mode", "tp_only")
    if mode not in ("tp_only", "full_matrix"):
        yield "error", "evaluation_mode", f"evaluation_mode must be tp_only or full_matrix, not {mode!r}"
        return
    metrics = decode_json_string(props.get("metrics", []))
    allowed = METRICS_TP_ONLY if mode == "tp_only" else METRICS_FULL
    if not isinstance(metrics, list) or not metrics:
        yield "error", "metrics", "a metric trait needs at least one metric"
    elif bad := sorted(set(map(str, metrics)) - allowed):
        yield "error", "metrics", f"metrics {bad} are not allowed in {mode} (allowed: {sorted(allowed)})"
    if not decode_json_string(props.get("tp_instructions", [])):
        yield "error", "tp_instructions", "a metric trait needs tp_instructions"
    if mode == "full_matrix" and not decode_json_string(props.get("tn_instructions", [])):
        yield "error", "tn_instructions", "full_matrix evaluation needs tn_instructions"


def _check_agentic(rating: dict[str, Any], props: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    if not rating.get("description"):
        yield "error", "description", "an agentic trait needs a non-empty description"
    mode = props.get("context_mode", "trace_and_workspace")
    if mode not in AGENTIC_CONTEXT_MODES:
        yield "error", "context_mode", f"context_mode must be one of {list(AGENTIC_CONTEXT_MODES)}"
    if props.get("materialize_trace") and mode == "workspace_only":
        yield "error", "materialize_trace", "materialize_trace cannot be used with workspace_only"
    for key in ("max_turns", "timeout_seconds"):
        v = props.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v <= 0):
            yield "error", key, f"{key} must be a positive integer"
