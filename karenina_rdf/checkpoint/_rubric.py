"""Rubric traits as values: read from a Rating node, written as Karenina's encoder writes them."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from karenina_rdf._errors import InvalidTypeError, InvalidValueError, validation_message

from ._traits import check, decode_json_string, normalise_type, settings, trait_class, trait_kind

TraitType = Literal["llm", "regex", "callable", "metric", "agentic"]
_CLASS_TO_TYPE: dict[str, TraitType] = {
    "LLMRubricTrait": "llm",
    "RegexRubricTrait": "regex",
    "CallableRubricTrait": "callable",
    "MetricRubricTrait": "metric",
    "AgenticRubricTrait": "agentic",
}
_TYPE_SUFFIX = {
    "regex": "RegexTrait",
    "callable": "CallableTrait",
    "metric": "MetricRubricTrait",
    "agentic": "AgenticRubricTrait",
}
# Karenina's read defaults (spec §6.2-6.7) for settings a Rating may leave out.
_DEFAULTS: dict[str, dict[str, Any]] = {
    "llm": {"higher_is_better": True, "min_score": 1, "max_score": 5},
    "regex": {"pattern": "", "case_sensitive": True, "invert_result": False, "higher_is_better": True},
    "callable": {"callable_code": "", "invert_result": False, "higher_is_better": True},
    "metric": {
        "metrics": [],
        "repeated_extraction": True,
        "evaluation_mode": "tp_only",
        "tp_instructions": [],
        "tn_instructions": [],
        "higher_is_better": None,
    },
    "agentic": {
        "higher_is_better": True,
        "context_mode": "trace_and_workspace",
        "materialize_trace": False,
        "persist_trace": False,
        "max_turns": 15,
        "timeout_seconds": 120,
        "min_score": 1,
        "max_score": 5,
    },
}


class RubricTrait(BaseModel):
    """One rubric trait (a ``schema:Rating``), any of Karenina's five trait classes.

    ``settings`` holds every trait setting with Karenina's defaults filled in; the typed
    fields repeat the common ones.
    """

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    trait_type: TraitType = "llm"
    kind: str = "boolean"
    description: str | None = None
    higher_is_better: bool | None = True
    min_score: int | None = None
    max_score: int | None = None
    classes: dict[str, str] | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    dynamic: bool = False

    # -- constructors mirroring Karenina's trait classes ----------------------------------
    @classmethod
    def llm(
        cls,
        name: str,
        description: str | None = None,
        *,
        kind: str = "boolean",
        min_score: int | None = 1,
        max_score: int | None = 5,
        classes: dict[str, str] | None = None,
        higher_is_better: bool = True,
        summary: str | None = None,
    ) -> RubricTrait:
        if classes is not None:
            kind = "literal"
            min_score, max_score = 0, len(classes) - 1
        return cls._make(
            name, "llm", kind, description, higher_is_better, min_score, max_score, classes, {"summary": summary}
        )

    @classmethod
    def regex(
        cls,
        name: str,
        pattern: str,
        description: str | None = None,
        *,
        case_sensitive: bool = True,
        invert_result: bool = False,
        higher_is_better: bool = True,
        summary: str | None = None,
    ) -> RubricTrait:
        extra = {
            "pattern": pattern,
            "case_sensitive": case_sensitive,
            "invert_result": invert_result,
            "summary": summary,
        }
        return cls._make(name, "regex", "boolean", description, higher_is_better, None, None, None, extra)

    @classmethod
    def callable(
        cls,
        name: str,
        code: bytes,
        description: str | None = None,
        *,
        kind: str = "boolean",
        min_score: int | None = None,
        max_score: int | None = None,
        classes: dict[str, str] | None = None,
        invert_result: bool = False,
        higher_is_better: bool = True,
        summary: str | None = None,
    ) -> RubricTrait:
        """``code`` is the serialised callable (Karenina stores cloudpickle bytes); kept opaque."""
        if not isinstance(code, bytes | bytearray):
            raise InvalidTypeError(
                f"trait {name!r}: code must be the callable's cloudpickle bytes, not {type(code).__name__}"
            )
        extra = {
            "callable_code": base64.b64encode(code).decode("ascii"),
            "invert_result": invert_result,
            "summary": summary,
        }
        if classes is not None:
            kind, min_score, max_score = "literal", 0, len(classes) - 1
        return cls._make(name, "callable", kind, description, higher_is_better, min_score, max_score, classes, extra)

    @classmethod
    def metric(
        cls,
        name: str,
        metrics: list[str],
        tp_instructions: list[str],
        description: str | None = None,
        *,
        tn_instructions: list[str] | None = None,
        evaluation_mode: str = "tp_only",
        repeated_extraction: bool = True,
        summary: str | None = None,
    ) -> RubricTrait:
        extra = {
            "metrics": metrics,
            "repeated_extraction": repeated_extraction,
            "evaluation_mode": evaluation_mode,
            "tp_instructions": tp_instructions,
            "tn_instructions": tn_instructions or [],
            "summary": summary,
        }
        return cls._make(name, "metric", "metric", description, None, None, None, None, extra)

    @classmethod
    def _make(
        cls,
        name: str,
        trait_type: TraitType,
        kind: str,
        description: str | None,
        higher_is_better: bool | None,
        min_score: int | None,
        max_score: int | None,
        classes: dict[str, str] | None,
        extra: dict[str, Any],
    ) -> RubricTrait:
        values = {**_DEFAULTS[trait_type], **{k: v for k, v in extra.items() if v is not None}}
        values.update(higher_is_better=higher_is_better, min_score=min_score, max_score=max_score)
        if trait_type in ("callable", "agentic"):
            values["kind"] = kind
        if classes is not None:
            values["classes"] = classes
        try:
            trait = cls(
                name=name,
                trait_type=trait_type,
                kind=kind,
                description=description,
                higher_is_better=higher_is_better,
                min_score=min_score,
                max_score=max_score,
                classes=classes,
                settings=values,
            )
        except ValidationError as exc:
            raise InvalidValueError(f"trait {name!r}: {validation_message(exc)}") from exc
        problems = [
            m for sev, _, m in check(_class(trait_type), kind, trait.to_rating("Global"), values) if sev == "error"
        ]
        if problems:
            raise InvalidValueError(f"trait {name!r}: " + "; ".join(problems))
        return trait

    # -- Rating JSON ⇄ trait ---------------------------------------------------------------
    @classmethod
    def from_rating(cls, rating: dict[str, Any]) -> RubricTrait:
        if not isinstance(rating, dict) or not isinstance(rating.get("additionalType"), str):
            raise InvalidValueError(
                "a Rating is a JSON object with an 'additionalType' string (e.g. 'GlobalRubricTrait')"
            )
        props = settings(rating)
        atype = normalise_type(rating["additionalType"])
        klass = trait_class(atype, props)
        trait_type = _CLASS_TO_TYPE.get(klass, "llm")
        kind = trait_kind(klass, rating, props)
        values = {**_DEFAULTS[trait_type]}
        for key, value in props.items():
            values[key] = (
                decode_json_string(value)
                if key in ("classes", "metrics", "tp_instructions", "tn_instructions")
                else value
            )
        if kind == "literal" and isinstance(values.get("classes"), dict):
            values["min_score"], values["max_score"] = 0, len(values["classes"]) - 1
        if kind == "template":
            values["higher_is_better"] = None
        classes = values.get("classes") if isinstance(values.get("classes"), dict) else None
        return cls(
            name=rating.get("name") or "?",
            trait_type=trait_type,
            kind=kind,
            description=rating.get("description"),
            higher_is_better=values.get("higher_is_better"),
            min_score=values.get("min_score") if kind in ("score", "literal") or trait_type == "llm" else None,
            max_score=values.get("max_score") if kind in ("score", "literal") or trait_type == "llm" else None,
            classes=classes,
            settings=values,
            dynamic="DynamicRubricTrait" in atype,
        )

    def to_rating(self, scope: Literal["Global", "QuestionSpecific"]) -> dict[str, Any]:
        """The Rating Karenina's encoder writes for this trait (spec §6.3-6.7 property order)."""
        s = self.settings
        props: list[tuple[str, Any]] = []

        def put(key: str, value: Any = None, *, always: bool = False) -> None:
            value = s.get(key) if value is None else value
            if value is not None or always:
                props.append((key, value))

        best, worst = 1.0, 0.0
        if self.trait_type == "llm":
            put("higher_is_better", always=True)
            put("summary")
            put("min_score")
            put("max_score")
            if self.kind == "literal":
                put("kind", "literal")
                put("classes")
                best = float(len(self.classes or {}) - 1)
            elif self.kind == "score":
                best, worst = _score_range(s)
            elif self.kind == "template" and isinstance(s.get("kind"), dict):
                put("kind")  # the class's schema; Karenina's best/worst are 0 for a template trait
                best = 0.0
            suffix = "LLMRubricTrait" if self.kind in ("literal", "template") else "RubricTrait"
        elif self.trait_type == "regex":
            for key in ("pattern", "case_sensitive", "invert_result"):
                put(key)
            put("higher_is_better", always=True)
            put("summary")
            suffix = _TYPE_SUFFIX["regex"]
        elif self.trait_type == "callable":
            for key in ("callable_code", "kind", "invert_result"):
                put(key)
            put("higher_is_better", always=True)
            if self.kind == "score":
                put("min_score")
                put("max_score")
                best, worst = _score_range(s)
            elif self.kind == "literal":
                best = float(len(self.classes or {}) - 1)
            put("summary")
            put("classes")
            suffix = _TYPE_SUFFIX["callable"]
        elif self.trait_type == "metric":
            for key in ("metrics", "repeated_extraction", "evaluation_mode"):
                put(key)
            put("higher_is_better", always=True)
            for key in ("tp_instructions", "tn_instructions"):
                if s.get(key):
                    put(key)
            put("summary")
            suffix = _TYPE_SUFFIX["metric"]
        else:
            for key in (
                "kind",
                "higher_is_better",
                "context_mode",
                "materialize_trace",
                "persist_trace",
                "max_turns",
                "timeout_seconds",
                "classes",
                "model_override",
                "summary",
                "min_score",
                "max_score",
            ):
                put(key, always=key == "higher_is_better")
            if self.kind == "score":
                best, worst = _score_range(s)
            elif self.kind == "template":
                best = 0.0
            suffix = _TYPE_SUFFIX["agentic"]
        rating: dict[str, Any] = {"@type": "Rating", "name": self.name}
        if self.description is not None:
            rating["description"] = self.description
        rating["bestRating"], rating["worstRating"] = best, worst
        rating["additionalType"] = f"karenina:{scope}{suffix}"
        rating["additionalProperty"] = [
            {"@type": "PropertyValue", "name": k, **({} if v is None else {"value": v})} for k, v in props
        ]
        return rating


def _score_range(settings: dict[str, Any]) -> tuple[float, float]:
    """best/worst of a score trait: the range, 5.0/1.0 when unset (null checks, not truthiness)."""
    hi, lo = settings.get("max_score"), settings.get("min_score")
    return float(5 if hi is None else hi), float(1 if lo is None else lo)


def _class(trait_type: str) -> str:
    return next(k for k, v in _CLASS_TO_TYPE.items() if v == trait_type)


def coerce_trait(trait: RubricTrait | dict[str, Any]) -> RubricTrait:
    """Accept a trait or a dict of its fields (Karenina's domain field names)."""
    if isinstance(trait, RubricTrait):
        return trait
    if isinstance(trait, dict):
        data = dict(trait)
        trait_type = data.pop("trait_type", None) or (
            "regex"
            if "pattern" in data
            else "callable"
            if "callable_code" in data
            else "metric"
            if "metrics" in data
            else "llm"
        )
        makers: dict[str, Callable[..., RubricTrait]] = {
            "llm": RubricTrait.llm,
            "regex": RubricTrait.regex,
            "metric": RubricTrait.metric,
        }
        maker = makers.get(trait_type)
        if maker is None:
            raise InvalidValueError(f"build {trait_type} traits with RubricTrait.{trait_type}(...)")
        try:
            return maker(**data)
        except TypeError as exc:
            raise InvalidValueError(f"not a valid {trait_type} trait: {exc}") from None
    raise InvalidValueError(f"a rubric trait must be a RubricTrait or a dict, got {type(trait).__name__}")
