"""Rubrics as values: ``Rubric`` and ``DynamicRubric``, shaped as Karenina's (one list of traits
per trait class, the same names, the same checks), so code written against Karenina's reads them.

Their lists take our ``RubricTrait``, a dict of a trait's fields, or Karenina's own trait objects
(read by duck typing, see ``_rubric.karenina_trait_fields``); Karenina is never imported.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from karenina_rdf._errors import InvalidTypeError

from ._rubric import RubricTrait, TraitType, coerce_trait

logger = logging.getLogger(__name__)

# Karenina's field per trait class, in its order (the order of get_trait_names and of encoding).
TRAIT_FIELDS: dict[TraitType, str] = {
    "llm": "llm_traits",
    "regex": "regex_traits",
    "callable": "callable_traits",
    "metric": "metric_traits",
    "agentic": "agentic_traits",
}
_LABELS = {"llm": "LLM", "regex": "Regex", "callable": "Callable", "metric": "Metric", "agentic": "Agentic"}


class _TraitSet(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    llm_traits: list[RubricTrait] = Field(default_factory=list)
    regex_traits: list[RubricTrait] = Field(default_factory=list)
    callable_traits: list[RubricTrait] = Field(default_factory=list)
    metric_traits: list[RubricTrait] = Field(default_factory=list)
    agentic_traits: list[RubricTrait] = Field(default_factory=list)

    _kind: ClassVar[str] = "rubric"

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for trait_type, field in TRAIT_FIELDS.items():
            traits = [coerce_trait(t) for t in out.get(field) or []]
            if wrong := [t.name for t in traits if t.trait_type != trait_type]:
                raise ValueError(f"{field} holds traits that are not {trait_type} traits: {wrong}")
            out[field] = traits
        return out

    @model_validator(mode="after")
    def _check_names(self) -> _TraitSet:
        # Karenina's validate_trait_names: unique per class, unique across classes, no dots.
        for trait_type, field in TRAIT_FIELDS.items():
            seen: set[str] = set()
            for trait in getattr(self, field):
                if trait.name in seen:
                    raise ValueError(
                        f"Duplicate {trait_type} trait name '{trait.name}' within the same {self._kind}. "
                        "Trait names must be unique per type."
                    )
                seen.add(trait.name)
        seen_all: set[str] = set()
        for name in self.get_trait_names():
            if name in seen_all:
                raise ValueError(
                    f"Duplicate trait name '{name}' across different trait types. "
                    f"Trait names must be unique across all types within a {self._kind}."
                )
            seen_all.add(name)
        for trait_type, field in TRAIT_FIELDS.items():
            for trait in getattr(self, field):
                if "." in trait.name:
                    raise ValueError(
                        f"{_LABELS[trait_type]} trait name '{trait.name}' contains '.', which would collide "
                        "with dot-notation keys from template-kind traits."
                    )
        return self

    @classmethod
    def from_traits(cls, traits: list[Any] | None) -> Any:
        """Traits of any class sorted into their lists (None for None), as Karenina's."""
        if traits is None:
            return None
        coerced = [coerce_trait(t) for t in traits]
        return cls(**{f: [t for t in coerced if t.trait_type == k] for k, f in TRAIT_FIELDS.items()})

    def all_traits(self) -> list[RubricTrait]:
        """Every trait, class by class (llm, regex, callable, metric, agentic)."""
        return [t for field in TRAIT_FIELDS.values() for t in getattr(self, field)]

    def get_trait_names(self) -> list[str]:
        return [t.name for t in self.all_traits()]

    def get_llm_trait_names(self) -> list[str]:
        return [t.name for t in self.llm_traits]

    def get_regex_trait_names(self) -> list[str]:
        return [t.name for t in self.regex_traits]

    def get_callable_trait_names(self) -> list[str]:
        return [t.name for t in self.callable_traits]

    def get_metric_trait_names(self) -> list[str]:
        return [t.name for t in self.metric_traits]

    def get_agentic_trait_names(self) -> list[str]:
        return [t.name for t in self.agentic_traits]


class Rubric(_TraitSet):
    """Traits applied to every answer: Karenina's ``Rubric``, field for field."""

    def get_trait_max_scores(self) -> dict[str, int]:
        """max_score of the score and literal traits (LLM, agentic; callable: score only)."""
        out: dict[str, int] = {}
        for t in self.all_traits():
            kinds = ("score",) if t.trait_type == "callable" else ("score", "literal")
            if t.trait_type in ("llm", "callable", "agentic") and t.kind in kinds and t.max_score is not None:
                out[t.name] = t.max_score
        return out

    def get_trait_directionalities(self) -> dict[str, bool | None]:
        return {t.name: t.higher_is_better for t in self.all_traits()}


class DynamicRubric(_TraitSet):
    """Traits evaluated only when their concept is found in the answer: Karenina's
    ``DynamicRubric``. Every trait needs a summary or a description (the concept's text)."""

    _kind: ClassVar[str] = "dynamic rubric"

    @model_validator(mode="after")
    def _check_concept_text(self) -> DynamicRubric:
        for trait in self.all_traits():
            if trait.summary is None and trait.description is None:
                raise ValueError(
                    f"Dynamic rubric trait '{trait.name}' has neither summary nor description. "
                    "At least one is required for concept presence checking."
                )
            if trait.summary is None:
                logger.debug("dynamic rubric trait %r has no summary: its description is the concept", trait.name)
        return self

    def is_empty(self) -> bool:
        return not self.all_traits()

    def resolve_concept_text(self, trait: Any) -> str:
        """The text the presence check describes the concept with: summary, else description."""
        for key in ("summary", "description"):
            value = getattr(trait, key, None)
            if value is not None:
                return str(value)
        return str(trait.name)


def rubric_traits(rubric: Any) -> list[RubricTrait]:
    """A rubric's traits in Karenina's encoding order: ours, Karenina's ``Rubric`` or
    ``DynamicRubric`` (any object with its ``*_traits`` lists, read by duck typing), or a plain
    list of traits (kept in its order, as Karenina's rubric manager keeps it)."""
    if isinstance(rubric, list | tuple):
        return [coerce_trait(t) for t in rubric]
    if all(hasattr(rubric, f) for f in ("llm_traits", "regex_traits", "callable_traits", "metric_traits")):
        return [coerce_trait(t) for field in TRAIT_FIELDS.values() for t in getattr(rubric, field, None) or []]
    raise InvalidTypeError(f"a rubric must be a Rubric (or a list of traits), got {type(rubric).__name__}")
