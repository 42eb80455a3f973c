"""Rubric traits as values: read from a Rating node, written as Karenina's encoder writes them."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

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
_NO: Any = object()
_RANGED = ("llm", "agentic")
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
            # LLM and agentic traits always have a range (1..5 by default); the others per kind.
            min_score=values.get("min_score") if kind in ("score", "literal") or trait_type in _RANGED else None,
            max_score=values.get("max_score") if kind in ("score", "literal") or trait_type in _RANGED else None,
            classes=classes,
            settings=values,
            dynamic="DynamicRubricTrait" in atype,
        )

    def to_rating(self, scope: Literal["Global", "QuestionSpecific"]) -> dict[str, Any]:
        """The Rating Karenina's ``save`` writes for this trait: its encoder's, with the
        deep-judgment settings of LLM traits left out, as ``save`` leaves them out by default."""
        return strip_deep_judgment(karenina_rating(self.trait_type, self.karenina_fields(), scope))

    def dynamic_rating(self, scope: Literal["Global", "QuestionSpecific"]) -> dict[str, Any]:
        """The Rating Karenina writes for this trait in a dynamic rubric: the encoder's, re-typed,
        with ``dynamic_trait_type`` and the summary appended (again: it is in the encoder's
        too). ``save`` strips no deep-judgment setting from these."""
        rating = karenina_rating(self.trait_type, self.karenina_fields(), scope)
        rating["additionalType"] = f"karenina:{scope}DynamicRubricTrait"
        rating["additionalProperty"].append(_pv("dynamic_trait_type", self.trait_type))
        if self.summary is not None:
            rating["additionalProperty"].append(_pv("summary", self.summary))
        return rating

    def karenina_fields(self) -> dict[str, Any]:
        """The trait as the fields of Karenina's trait class (its ``model_dump()``, callable
        code as base64 text, a template kind as its ``{"type": "template", ...}`` dict)."""
        s = self.settings
        kind: Any = s.get("kind") if self.kind == "template" else self.kind
        fields: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "summary": s.get("summary"),
            "higher_is_better": self.higher_is_better,
        }
        if self.trait_type == "llm":
            fields.update(kind=kind, min_score=s.get("min_score"), max_score=s.get("max_score"), classes=self.classes)
            fields.update({k: s.get(k, v) for k, v in _DEEP_JUDGMENT.items()})
        elif self.trait_type == "regex":
            fields.update({k: s.get(k) for k in ("pattern", "case_sensitive", "invert_result")})
        elif self.trait_type == "callable":
            fields.update(kind=kind, classes=self.classes)
            fields.update({k: s.get(k) for k in ("callable_code", "min_score", "max_score", "invert_result")})
        elif self.trait_type == "metric":
            metric = ("evaluation_mode", "metrics", "tp_instructions", "tn_instructions", "repeated_extraction")
            fields.update({k: s.get(k) for k in metric})
        else:
            fields.update(kind=kind, classes=self.classes)
            keys = ("min_score", "max_score", "context_mode", "materialize_trace", "persist_trace", "max_turns")
            fields.update({k: s.get(k) for k in (*keys, "timeout_seconds", "model_override")})
        return fields

    # -- Karenina's field names, read as its trait classes answer them ---------------------
    @property
    def summary(self) -> str | None:
        return self.settings.get("summary")

    @property
    def pattern(self) -> str | None:
        return self.settings.get("pattern")

    @property
    def case_sensitive(self) -> bool | None:
        return self.settings.get("case_sensitive")

    @property
    def invert_result(self) -> bool | None:
        return self.settings.get("invert_result")

    @property
    def callable_code(self) -> bytes | None:
        """The serialised callable, as bytes (Karenina's field; stored as base64 text)."""
        code = self.settings.get("callable_code")
        return base64.b64decode(code) if isinstance(code, str) and self.trait_type == "callable" else None

    @property
    def metrics(self) -> list[str] | None:
        return self.settings.get("metrics")

    @property
    def tp_instructions(self) -> list[str] | None:
        return self.settings.get("tp_instructions")

    @property
    def tn_instructions(self) -> list[str] | None:
        return self.settings.get("tn_instructions")

    @property
    def evaluation_mode(self) -> str | None:
        return self.settings.get("evaluation_mode")

    @property
    def repeated_extraction(self) -> bool | None:
        return self.settings.get("repeated_extraction")

    @property
    def context_mode(self) -> str | None:
        return self.settings.get("context_mode")

    @property
    def is_template_kind(self) -> bool:
        return self.kind == "template"


_DEEP_JUDGMENT: dict[str, Any] = {
    "deep_judgment_enabled": False,
    "deep_judgment_excerpt_enabled": True,
    "deep_judgment_max_excerpts": None,
    "deep_judgment_fuzzy_match_threshold": None,
    "deep_judgment_excerpt_retry_attempts": None,
    "deep_judgment_search_enabled": False,
}
_LLM_TYPES = frozenset(
    f"karenina:{s}{k}" for s in ("Global", "QuestionSpecific") for k in ("RubricTrait", "LLMRubricTrait")
)


def _pv(name: str, value: Any) -> dict[str, Any]:
    # Karenina dumps with exclude_none: a None value leaves the key out.
    return {"@type": "PropertyValue", "name": name, **({} if value is None else {"value": value})}


def karenina_rating(trait_type: str, f: dict[str, Any], scope: str) -> dict[str, Any]:
    """Karenina's ``convert_rubric_trait_to_rating`` on a trait's fields (``karenina_fields``):
    the properties, their order, best/worst rating and additionalType, per trait class."""
    props: list[tuple[str, Any]] = []

    def put(key: str, value: Any = _NO, *, if_set: bool = False) -> None:
        value = f.get(key) if value is _NO else value
        if not if_set or value is not None:
            props.append((key, value))

    kind = f.get("kind")
    template = isinstance(kind, dict)
    lo, hi = f.get("min_score"), f.get("max_score")
    best, worst = 1.0, 0.0
    if trait_type == "llm":
        for key in ("deep_judgment_enabled", "deep_judgment_excerpt_enabled", "deep_judgment_search_enabled"):
            put(key, f.get(key, _DEEP_JUDGMENT[key]))
        for key in ("deep_judgment_max_excerpts", "deep_judgment_fuzzy_match_threshold"):
            put(key, if_set=True)
        put("deep_judgment_excerpt_retry_attempts", if_set=True)
        put("higher_is_better")
        for key in ("summary", "min_score", "max_score"):
            put(key, if_set=True)
        suffix = "RubricTrait"
        if template:
            put("kind")
            best, worst, suffix = 0.0, 0.0, "LLMRubricTrait"
        elif kind == "literal":
            put("kind", "literal")
            put("classes", if_set=True)
            best = float(hi) if hi is not None else 0.0
            worst = float(lo) if lo is not None else 0.0
            suffix = "LLMRubricTrait"
        elif kind != "boolean":
            best, worst = float(5 if hi is None else hi), float(1 if lo is None else lo)
    elif trait_type == "regex":
        for key in ("pattern", "case_sensitive", "invert_result", "higher_is_better"):
            put(key)
        put("summary", if_set=True)
        suffix = _TYPE_SUFFIX["regex"]
    elif trait_type == "callable":
        for key in ("callable_code", "kind", "invert_result", "higher_is_better"):
            put(key)
        if kind == "score":
            put("min_score", if_set=True)
            put("max_score", if_set=True)
        put("summary", if_set=True)
        put("classes", if_set=True)
        if kind != "boolean":
            best, worst = float(5 if hi is None else hi), float(1 if lo is None else lo)
        suffix = _TYPE_SUFFIX["callable"]
    elif trait_type == "metric":
        for key in ("metrics", "repeated_extraction", "evaluation_mode", "higher_is_better"):
            put(key)
        for key in ("tp_instructions", "tn_instructions"):
            if f.get(key):
                put(key)
        put("summary", if_set=True)
        suffix = _TYPE_SUFFIX["metric"]
    else:
        for key in ("kind", "higher_is_better", "context_mode", "materialize_trace", "persist_trace"):
            put(key)
        put("max_turns")
        put("timeout_seconds")
        for key in ("classes", "model_override", "summary", "min_score", "max_score"):
            put(key, if_set=True)
        if template:
            best, worst = 0.0, 0.0
        elif kind == "literal" and hi is not None and lo is not None:
            best, worst = float(hi), float(lo)
        elif kind != "boolean":
            best, worst = float(5 if hi is None else hi), float(1 if lo is None else lo)
        suffix = _TYPE_SUFFIX["agentic"]
    rating: dict[str, Any] = {"@type": "Rating", "name": f.get("name")}
    if f.get("description") is not None:
        rating["description"] = f["description"]
    rating["bestRating"], rating["worstRating"] = best, worst
    rating["additionalType"] = f"karenina:{scope}{suffix}"
    rating["additionalProperty"] = [_pv(k, v) for k, v in props]
    return rating


def strip_deep_judgment(rating: dict[str, Any]) -> dict[str, Any]:
    """What Karenina's ``save`` does to an LLM trait's Rating by default: the deep-judgment
    settings go, and an emptied property list with them."""
    if rating.get("additionalType") in _LLM_TYPES and rating.get("additionalProperty"):
        kept = [p for p in rating["additionalProperty"] if not str(p.get("name", "")).startswith("deep_judgment_")]
        if kept:
            rating["additionalProperty"] = kept
        else:
            del rating["additionalProperty"]
    return rating


def _class(trait_type: str) -> str:
    return next(k for k, v in _CLASS_TO_TYPE.items() if v == trait_type)


def coerce_trait(trait: Any) -> RubricTrait:
    """Accept a trait, a dict of its fields (Karenina's domain field names) or one of Karenina's
    trait objects (read by duck typing: ``karenina_trait_fields``)."""
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
    fields = karenina_trait_fields(trait)
    if fields is None:
        raise InvalidTypeError(
            f"a rubric trait must be a RubricTrait, a dict or one of Karenina's trait objects, "
            f"got {type(trait).__name__}"
        )
    trait_type, data = fields
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidValueError(f"a {type(trait).__name__} needs a non-empty name")
    read = RubricTrait.from_rating(karenina_rating(trait_type, data, "Global"))
    # Karenina's own objects were checked by its models; a look-alike is checked here. A dot
    # in the name is left to the Rubric a trait ends up in, which refuses it, as Karenina's does.
    found = check(_class(trait_type), read.kind, read.to_rating("Global"), read.settings)
    if errors := [m for sev, prop, m in found if sev == "error" and prop != "name"]:
        raise InvalidValueError(f"trait {name!r}: " + "; ".join(errors))
    return read


# Karenina's trait classes, by the name a duck-typed object's class (or a base of it) carries.
KARENINA_TRAIT_CLASSES: dict[str, TraitType] = dict(_CLASS_TO_TYPE)


def karenina_trait_fields(obj: Any) -> tuple[TraitType, dict[str, Any]] | None:
    """One of Karenina's trait objects (or any object whose class, or a base of it, bears the
    name of one of its trait classes), read by its fields, never by importing Karenina: its
    ``model_dump()`` if it has one, else its attributes. None when ``obj`` is not one."""
    names = [c.__name__ for c in type(obj).__mro__]
    trait_type = next((KARENINA_TRAIT_CLASSES[n] for n in names if n in KARENINA_TRAIT_CLASSES), None)
    if trait_type is None:
        return None
    dump = getattr(obj, "model_dump", None)
    fields = dict(dump()) if callable(dump) else dict(vars(obj))
    kind = getattr(obj, "kind", fields.get("kind"))
    schema_of = getattr(kind, "model_json_schema", None) if isinstance(kind, type) else None
    if callable(schema_of):  # a template kind: a class, written as its JSON Schema
        fields["kind"] = {"type": "template", "schema": schema_of()}
    code = fields.get("callable_code")
    if isinstance(code, bytes | bytearray):
        fields["callable_code"] = base64.b64encode(code).decode("ascii")
    override = fields.get("model_override")
    if override is not None and callable(getattr(override, "model_dump", None)):
        fields["model_override"] = override.model_dump()
    return trait_type, fields


# -- a template kind as Karenina reads it ---------------------------------------------------
_JSON_TYPES: dict[str, type[Any]] = {"integer": int, "number": float, "string": str, "boolean": bool}


def read_as_karenina(rating: dict[str, Any]) -> RubricTrait:
    """A stored Rating as Karenina reads it into a trait object. Differs from ``from_rating``
    only for a template kind: Karenina rebuilds a pydantic class from the stored JSON Schema
    (``_reconstruct_model_from_schema``) and writes that class's schema when it encodes the
    trait again, so the schema it saves back is the rebuilt class's, not the one it read."""
    trait = RubricTrait.from_rating(rating)
    kind = trait.settings.get("kind")
    if trait.kind != "template" or not isinstance(kind, dict) or not isinstance(kind.get("schema"), dict):
        return trait
    try:
        schema = _rebuilt_schema(kind["schema"])
    except Exception:
        return trait
    return trait.model_copy(update={"settings": {**trait.settings, "kind": {**kind, "schema": schema}}})


def _rebuilt_schema(schema: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    required = set(schema.get("required", []))
    for name, prop in schema.get("properties", {}).items():
        default = prop.get("default", ... if name in required else None)
        fields[name] = (_json_type(prop), Field(default=default, description=prop.get("description")))
    model: type[BaseModel] = create_model(schema.get("title", "ReconstructedTemplate"), **fields)
    return model.model_json_schema()


def _json_type(prop: dict[str, Any]) -> Any:
    if "anyOf" in prop:
        non_null = [s for s in prop["anyOf"] if s.get("type") != "null"]
        return _json_type(non_null[0]) | None if len(non_null) == 1 else str
    if prop.get("type") == "array":
        return list[_JSON_TYPES.get(prop.get("items", {}).get("type", "string"), str)]  # type: ignore[misc]
    return _JSON_TYPES.get(prop.get("type", "string"), str)
