"""The runtime answer templates are executed against: ``BaseAnswer``, ``VerifiedField`` and the
names a Karenina template may use without importing them (see spec §4).

Template code is ``exec``'d with ``template_namespace()`` as globals and an empty dict as locals,
as Karenina does, so a template written for Karenina runs here unchanged: ``List``/``Dict`` are
the builtin ``list``/``dict``; ``Optional``, ``Union``, ``Any``, ``Literal`` come from typing;
pydantic's ``Field``; every verification primitive, normalizer and composition node.

Two template styles:

* classic: plain ``Field``s, ``ground_truth()`` (wired in as ``model_post_init``) or
  ``model_post_init`` sets ``self.correct`` (and optionally ``self.regex``), ``verify()`` decides;
* declarative: ``VerifiedField(description, ground_truth, verify_with, weight, extraction_hint)``.
  The primitive and ground truth ride in the field's JSON-schema extra under
  ``__verification__`` (Karenina's layout) and are removed from every schema shown to a judge.
  Without an own ``verify``/``verify_granular`` both are generated: per-field results are
  tri-valued (None when the judge returned null), an inner ``VerificationStrategy`` with
  ``verify_strategy`` combines them, and the granular score follows spec §4.1. Per-field
  credit (``field_scores``: 1/0, a graded primitive's partial credit, None for a null) is
  reported whether or not the template brings its own ``verify``. An ``extraction_hint`` is
  appended to the field's description in the judge's schema.

A ``ConditionalGroundTruth`` is stored as Karenina stores it and resolved to its default case
(there is no scenario state in a QA run): that case's value is the field's ground truth and its
primitive, when it names one, replaces the field's. As in Karenina, ``correct`` leaves such
fields out and the result's ``parsed_gt_response`` gets every field's resolved ground truth.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from . import _composition as comp
from . import _primitives as prim
from ._composition import StrategyNode
from ._primitives import TracePrimitive, VerificationPrimitive

VERIFICATION_KEY = "__verification__"
RESERVED_FIELDS = frozenset({"correct"})
NOT_EXTRACTED = frozenset({"id", "correct", "regex"})


@dataclass(frozen=True)
class FieldRule:
    """One VerifiedField, rebuilt from its stored metadata once per class."""

    primitive: VerificationPrimitive
    ground_truth: Any
    weight: float
    extraction_hint: str | None
    conditional: bool = False  # the ground truth was a ConditionalGroundTruth, resolved here

    @property
    def on_trace(self) -> bool:
        return isinstance(self.primitive, TracePrimitive)


def VerifiedField(
    description: str,
    ground_truth: Any,
    verify_with: VerificationPrimitive,
    weight: float = 1.0,
    extraction_hint: str | None = None,
    **kwargs: Any,
) -> Any:
    """A pydantic ``Field`` carrying what the judge must not see: the expected value and how to check it."""
    if not isinstance(description, str) or not description.strip():
        raise ValueError("VerifiedField needs a non-blank description: the judge relies on it to know what to extract")
    if not isinstance(verify_with, VerificationPrimitive):
        raise TypeError(f"verify_with must be a verification primitive such as ExactMatch(), got {verify_with!r}")
    params = verify_with.model_dump(mode="json")
    params["type"] = type(verify_with).__name__
    if isinstance(ground_truth, prim.ConditionalGroundTruth):
        ground_truth = ground_truth.serialize()
    extra = dict(kwargs.pop("json_schema_extra", None) or {})
    extra[VERIFICATION_KEY] = {
        "ground_truth": ground_truth,
        "verify_with": params,
        "weight": float(weight),
        "extraction_hint": extraction_hint,
    }
    return Field(description=description, json_schema_extra=extra, **kwargs)


def _primitive(data: dict[str, Any]) -> VerificationPrimitive:
    params = dict(data)
    name = params.pop("type", None)
    if name not in prim.PRIMITIVES:
        raise ValueError(f"unknown verification primitive {name!r}")
    return prim.PRIMITIVES[name].model_validate(params)


def _rule_from_meta(meta: dict[str, Any]) -> FieldRule:
    primitive = _primitive(meta["verify_with"])
    ground_truth = meta.get("ground_truth")
    conditional = False
    if prim.is_conditional(ground_truth):
        conditional = True
        ground_truth, override = prim.resolve_conditional(ground_truth)
        if override is not None:
            primitive = _primitive(override)
    return FieldRule(
        primitive=primitive,
        ground_truth=ground_truth,
        weight=float(meta.get("weight", 1.0)),
        extraction_hint=meta.get("extraction_hint"),
        conditional=conditional,
    )


def _defines_below_base(cls: type, name: str) -> bool:
    for klass in cls.__mro__:
        if klass is BaseAnswer:
            return False
        if name in klass.__dict__:
            return True
    return False


def _strip_key(node: Any) -> None:
    if isinstance(node, dict):
        node.pop(VERIFICATION_KEY, None)
        for value in node.values():
            _strip_key(value)
    elif isinstance(node, list):
        for value in node:
            _strip_key(value)


class BaseAnswer(BaseModel):
    """Base of every answer template. ``extra="allow"`` lets methods attach ``correct``, ``regex``
    and anything else to an instance without those becoming schema fields."""

    model_config = ConfigDict(extra="allow")

    id: str | None = None

    _source_code: ClassVar[str | None] = None
    _rules: ClassVar[dict[str, FieldRule]] = {}
    _strategy: ClassVar[StrategyNode | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "ground_truth" in cls.__dict__ and "model_post_init" not in cls.__dict__:
            ground_truth = cls.__dict__["ground_truth"]

            def model_post_init(self: BaseAnswer, context: Any, /) -> None:
                ground_truth(self)

            cls.model_post_init = model_post_init  # type: ignore[method-assign]

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        clash = RESERVED_FIELDS & set(cls.model_fields)
        if clash:
            raise TypeError(f"field name(s) {sorted(clash)} are reserved by BaseAnswer; rename them")
        rules = {}
        for name, info in cls.model_fields.items():
            extra = info.json_schema_extra
            if isinstance(extra, dict) and isinstance(extra.get(VERIFICATION_KEY), dict):
                rules[name] = _rule_from_meta(extra[VERIFICATION_KEY])  # type: ignore[arg-type]
        cls._rules = rules
        holder = getattr(cls, "VerificationStrategy", None)
        node = getattr(holder, "verify_strategy", None)
        if node is not None:
            if not isinstance(node, comp.StrategyNode):
                raise TypeError(
                    "VerificationStrategy.verify_strategy must be built from AllOf, AnyOf, AtLeastN, FieldCheck"
                )
            unknown = sorted(set(comp.strategy_fields(node)) - set(rules))
            if unknown:
                raise ValueError(f"VerificationStrategy refers to field(s) {unknown} that are not VerifiedFields")
        cls._strategy = node
        if rules:
            if not _defines_below_base(cls, "verify"):
                cls.verify = _generated_verify  # type: ignore[attr-defined]
            if not _defines_below_base(cls, "verify_granular"):
                cls.verify_granular = _generated_verify_granular  # type: ignore[attr-defined]

    def model_post_init(self, context: Any, /) -> None:
        # Declarative templates get self.correct from their ground truths; a classic template
        # overrides this method (directly or through ground_truth) and sets it itself.
        rules = type(self)._rules
        if rules and getattr(self, "correct", None) is None:
            self.correct = {name: rule.ground_truth for name, rule in rules.items() if not rule.conditional}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        schema = super().model_json_schema(*args, **kwargs)
        _strip_key(schema)
        return schema

    @classmethod
    def get_source_code(cls) -> str | None:
        return cls._source_code

    def set_question_id(self, question_id: str) -> None:
        self.id = question_id

    def field_outcomes(self) -> tuple[dict[str, bool | None], dict[str, float | None]]:
        """Per-VerifiedField (result, score). Trace fields need the raw answer's checks attached
        first (``attach_trace``; the runner does this before calling verify)."""
        cached = self.__dict__.get("_field_outcomes")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        traced: dict[str, bool] | None = self.__dict__.get("_trace_checks")
        results: dict[str, bool | None] = {}
        scores: dict[str, float | None] = {}
        for name, rule in type(self)._rules.items():
            if rule.on_trace:
                if traced is None:
                    raise ValueError(f"field {name!r} checks the raw response, but none is attached")
                ok: bool | None = traced[name] == bool(rule.ground_truth)
                score: float | None = 1.0 if ok else 0.0
            else:
                value = getattr(self, name)
                if value is None:  # the judge returned null: neither pass nor fail
                    ok, score = None, None
                else:
                    ok = bool(rule.primitive.check(value, rule.ground_truth))
                    score = (
                        float(rule.primitive.score(value, rule.ground_truth)) if rule.primitive.graded else float(ok)
                    )
            results[name], scores[name] = ok, score
        self.__dict__["_field_outcomes"] = (results, scores)
        return results, scores

    def verify_regex(self, raw_trace: str) -> dict[str, Any]:
        """Run the ``self.regex`` checks on the raw answer (spec §4.2)."""
        checks = getattr(self, "regex", None)
        if not checks:
            return {"success": True, "results": {}, "details": {}}
        results: dict[str, bool] = {}
        details: dict[str, dict[str, Any]] = {}
        for name, spec in checks.items():
            pattern = spec.get("pattern", "")
            expected = spec.get("expected")
            match_type = spec.get("match_type", "exact")
            try:
                results[name], details[name] = _regex_check(raw_trace, pattern, expected, match_type)
            except Exception as exc:
                results[name] = False
                details[name] = {"error": str(exc), "pattern": pattern, "expected": expected, "match_type": match_type}
        return {"success": all(results.values()), "results": results, "details": details}


def trace_checks(cls: type[BaseAnswer], raw: str) -> dict[str, bool]:
    """The results of the template's checks on the raw answer, by field."""
    return {
        name: rule.primitive.check_trace(raw)  # type: ignore[attr-defined]
        for name, rule in cls._rules.items()
        if rule.on_trace
    }


def attach_trace(answer: BaseAnswer, raw: str, checks: dict[str, bool]) -> None:
    """Give an answer its raw text and ``trace_checks(type(answer), raw)``, which field_outcomes uses."""
    answer.__dict__["_raw_trace"] = raw
    answer.__dict__["_trace_checks"] = checks


def _regex_check(text: str, pattern: str, expected: Any, match_type: str) -> tuple[bool, dict[str, Any]]:
    matches = re.findall(pattern, text)
    detail: dict[str, Any] = {
        "pattern": pattern,
        "expected": expected,
        "match_type": match_type,
        "matches_found": matches,
        "match_count": len(matches),
    }
    if match_type == "exact":
        ok = len(matches) == 1 and matches[0] == expected
        reason = (
            "Single exact match found"
            if ok
            else f"Expected exactly one match of '{expected}', got {len(matches)} matches: {matches}"
        )
    elif match_type == "contains":
        ok = expected in matches
        reason = f"Expected pattern '{expected}' {'found in matches' if ok else f'not found in matches: {matches}'}"
    elif match_type == "count":
        ok = isinstance(expected, int) and len(matches) == expected
        reason = (
            f"Found exactly {expected} matches as expected"
            if ok
            else f"Expected {expected} matches, got {len(matches)}"
        )
    elif match_type == "all":
        if isinstance(expected, list):
            missing = set(expected) - set(matches)
            ok = not missing
            reason = "All expected items found in matches" if ok else f"Missing expected items: {list(missing)}"
        else:
            ok, reason = False, f"Expected list for 'all' match type, got {type(expected)}"
    else:
        ok, reason = False, f"Unknown match_type: {match_type}"
    detail["success_reason" if ok else "failure_reason"] = reason
    return ok, detail


def _generated_verify(self: BaseAnswer) -> bool:
    results, _ = self.field_outcomes()
    node = type(self)._strategy
    if node is not None:
        return comp.evaluate_strategy(node, results)
    return all(value is True for value in results.values())


def _generated_verify_granular(self: BaseAnswer) -> float:
    rules = type(self)._rules
    _, scores = self.field_outcomes()
    total = sum(rule.weight for rule in rules.values())
    if total == 0:
        return 0.0
    # A null extraction contributes nothing but keeps its weight in the denominator.
    contributions = sorted((rule.weight * (scores[name] or 0.0) for name, rule in rules.items()), reverse=True)
    node = type(self)._strategy
    if isinstance(node, comp.AnyOf):
        return (contributions[0] if contributions else 0.0) / total
    if isinstance(node, comp.AtLeastN):
        return sum(contributions[: node.n]) / total
    return sum(contributions) / total


def extracted_fields(cls: type[BaseAnswer]) -> list[str]:
    """Model fields a template defines for extraction (``id``, ``correct``, ``regex`` excluded)."""
    return [name for name in cls.model_fields if name not in NOT_EXTRACTED]


def judge_fields(cls: type[BaseAnswer]) -> list[str]:
    """The fields the judge fills in: extracted fields minus those checked on the raw trace."""
    return [name for name in extracted_fields(cls) if not (name in cls._rules and cls._rules[name].on_trace)]


def judge_schema(cls: type[BaseAnswer]) -> dict[str, Any]:
    """JSON schema handed to the judge: no verification metadata, no trace-checked fields, no
    ``id``/``correct``/``regex``; extraction hints are appended to the field descriptions."""
    schema = cls.model_json_schema()
    keep = set(judge_fields(cls))
    properties: dict[str, Any] = schema.get("properties", {})
    for name in list(properties):
        if name not in keep:
            del properties[name]
    if "required" in schema:
        schema["required"] = [name for name in schema["required"] if name in keep]
        if not schema["required"]:
            del schema["required"]
    for name, rule in cls._rules.items():
        if name in properties and rule.extraction_hint:
            described = properties[name].get("description", "")
            properties[name]["description"] = f"{described} (Extraction hint: {rule.extraction_hint})".strip()
    return schema


_TEMPLATE_NAMES: dict[str, Any] = {
    "BaseAnswer": BaseAnswer,
    "Field": Field,
    "VerifiedField": VerifiedField,
    "List": list,
    "Dict": dict,
    "Optional": Optional,
    "Union": Union,
    "Any": Any,
    "Literal": Literal,
    "SynonymMap": prim.SynonymMap,
    "FieldCheck": comp.FieldCheck,
    "AllOf": comp.AllOf,
    "AnyOf": comp.AnyOf,
    "AtLeastN": comp.AtLeastN,
    "ConditionalGroundTruth": prim.ConditionalGroundTruth,
    "GroundTruthCase": prim.GroundTruthCase,
    **prim.PRIMITIVES,
}


def template_namespace() -> dict[str, Any]:
    """Fresh globals for one template: full builtins (templates may import) plus the runtime names."""
    return {"__builtins__": builtins, "__name__": "karenina_template", **_TEMPLATE_NAMES}
