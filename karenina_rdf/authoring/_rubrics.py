"""Karenina's rubric members of ``Benchmark``: global and question rubrics, the global dynamic
rubric, their removal and checks (Karenina's ``RubricManager``).

The rubrics are the benchmark's and its questions' ``schema:Rating`` nodes, read on each call and
changed as Karenina changes its checkpoint, so that a save writes what Karenina's save writes
after the same calls. Where that and Karenina's in-memory answers part, the graph (the saved file)
wins: Karenina's ``add_global_rubric_trait``, ``set_global_rubric`` and ``clear_global_rubric``
drop the dynamic rubric from the file but its ``get_global_dynamic_rubric`` still answers it from
memory until the benchmark is reloaded; here it is gone at once, as after Karenina's reload.

The global rubric is read as Karenina's ``extract_global_rubric_from_benchmark`` reads it: its
Ratings, then the legacy traits its GUI converter kept in feed properties (never written back as
such; a global write turns them into Ratings and leaves the properties, as Karenina does).

Traits and rubrics are taken as ours (``RubricTrait``, ``Rubric``, ``DynamicRubric``), as dicts,
or as Karenina's own objects, read by duck typing; Karenina is never imported.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from karenina_rdf._errors import InvalidValueError, QuestionNotFoundError, validation_message
from karenina_rdf.checkpoint import (
    TRAIT_FIELDS,
    DynamicRubric,
    Rubric,
    RubricTrait,
    coerce_trait,
    karenina_rating,
    read_as_karenina,
    rubric_traits,
)
from karenina_rdf.rdf import TRAIT_TYPES, ordered_items, owning_question

from ._core import BenchmarkCore, _now, _StoredIds
from ._question import question_from_item

# The additionalTypes Karenina reads a global, a question and the global dynamic rubric from.
_REGULAR = [local for local, cls in TRAIT_TYPES.items() if cls != "DynamicRubricTrait"]
GLOBAL_TYPES = frozenset(f"karenina:{local}" for local in _REGULAR if local.startswith("Global"))
QUESTION_TYPES = frozenset(f"karenina:{local}" for local in _REGULAR if local.startswith("QuestionSpecific"))
GLOBAL_DYNAMIC = "karenina:GlobalDynamicRubricTrait"
_ORDER = list(TRAIT_FIELDS)


def _type(rating: Any) -> str:
    value = rating.get("additionalType") if isinstance(rating, dict) else None
    if not isinstance(value, str):
        return ""
    return value if value.startswith("karenina:") else f"karenina:{value}"


def _traits(ratings: Any, types: frozenset[str]) -> list[RubricTrait]:
    return [read_as_karenina(r) for r in ratings or [] if _type(r) in types]


# Legacy global traits (Karenina's GUI checkpoint converter): a feed property holding a JSON
# string of trait dicts, read into the global rubric by Karenina (never written), with the
# defaults of its trait classes; `invert` is the old name of a regex trait's `invert_result`.
_LEGACY = {
    "global_regex_rubric_traits": "regex",
    "global_callable_rubric_traits": "callable",
    "global_metric_rubric_traits": "metric",
}
_LEGACY_DEFAULTS: dict[str, dict[str, Any]] = {
    "regex": {"case_sensitive": True, "invert_result": False, "higher_is_better": True},
    "callable": {
        "min_score": None,
        "max_score": None,
        "invert_result": False,
        "classes": None,
        "higher_is_better": True,
    },
    "metric": {
        "evaluation_mode": "tp_only",
        "tp_instructions": [],
        "tn_instructions": [],
        "repeated_extraction": True,
        "higher_is_better": None,
    },
}
_LEGACY_FIELDS = {
    "regex": {"name", "description", "summary", "pattern"},
    "callable": {"name", "description", "summary", "kind", "callable_code"},
    "metric": {"name", "description", "summary", "metrics"},
}


def _legacy_traits(header: dict[str, Any]) -> list[RubricTrait]:
    out: list[RubricTrait] = []
    for pv in header.get("additionalProperty") or []:
        trait_type = _LEGACY.get(str(pv.get("name"))) if isinstance(pv, dict) else None
        value = pv.get("value") if trait_type else None
        if trait_type is None or not isinstance(value, str):
            continue
        try:
            items = json.loads(value)
        except ValueError:
            continue  # Karenina skips a value that is not JSON
        for item in items if isinstance(items, list | dict | str) else []:
            if not isinstance(item, dict):
                break  # Karenina's TypeError on the first item that is not an object ends the list
            data = dict(item)
            if trait_type == "regex" and "invert" in data and "invert_result" not in data:
                data["invert_result"] = data.pop("invert")
            unknown = sorted(set(data) - _LEGACY_FIELDS[trait_type] - set(_LEGACY_DEFAULTS[trait_type]))
            if unknown or not isinstance(data.get("name"), str):
                raise InvalidValueError(
                    f"{pv['name']}: a {trait_type} trait Karenina's model refuses (unknown fields {unknown} or no name)"
                )
            fields = {"description": None, "summary": None, **_LEGACY_DEFAULTS[trait_type], **data}
            if fields.get("kind") == "literal" and isinstance(fields.get("classes"), dict):
                fields["min_score"] = 0 if fields["min_score"] is None else fields["min_score"]
                fields["max_score"] = len(fields["classes"]) - 1 if fields["max_score"] is None else fields["max_score"]
            out.append(RubricTrait.from_rating(karenina_rating(trait_type, fields, "Global")))
    return out


def _rubric(cls: type[Rubric] | type[DynamicRubric], traits: list[RubricTrait]) -> Any:
    """The traits as a rubric, refused as Karenina's rubric refuses them (e.g. a name twice)."""
    try:
        return cls.from_traits(traits)
    except ValidationError as exc:
        raise InvalidValueError(f"the stored {cls.__name__} is not valid: {validation_message(exc)}") from None


def _dynamic_tag(rating: dict[str, Any]) -> Any:
    tag: Any = "llm"
    for pv in rating.get("additionalProperty") or []:
        if isinstance(pv, dict) and pv.get("name") == "dynamic_trait_type":
            tag = pv.get("value")
    return tag


class RubricMembers(BenchmarkCore):
    """Rubrics: global, per question, dynamic (Karenina's ``RubricManager``)."""

    # -- global rubric ---------------------------------------------------------------------
    def add_global_rubric_trait(self, trait: Any) -> None:
        """Add a trait to the global rubric. As Karenina's, the global rubric is written anew
        from its traits: a dynamic rubric is dropped, and a name used twice is refused only when
        the rubric is read (``get_global_rubric``)."""
        new = coerce_trait(trait)
        header = self._header()
        self._write_global(header, [*self._global_traits(header), new])

    def set_global_rubric(self, rubric: Any) -> None:
        """Replace the global rubric by ``rubric`` (a Rubric, Karenina's, or a list of traits)."""
        self._write_global(self._header(), rubric_traits(rubric))

    def get_global_rubric(self) -> Rubric | None:
        """The global rubric as a ``Rubric``; None when it has no trait."""
        traits = self._global_traits(self._header())
        return _rubric(Rubric, traits) if traits else None

    def clear_global_rubric(self) -> bool:
        """Remove every global trait, dynamic ones included; False when there was none."""
        header = self._header()
        if not header.get("rating"):
            return False
        header.pop("rating")
        header["dateModified"] = _now()
        self._apply(self._header_update(header))
        return True

    @staticmethod
    def _global_traits(header: dict[str, Any]) -> list[RubricTrait]:
        """Karenina's extract_global_rubric_from_benchmark: the Ratings, then legacy traits."""
        return [*_traits(header.get("rating"), GLOBAL_TYPES), *_legacy_traits(header)]

    def _write_global(self, header: dict[str, Any], traits: list[RubricTrait]) -> None:
        header.update(rating=[t.to_rating("Global") for t in traits], dateModified=_now())
        self._apply(self._header_update(header))

    # -- question rubrics ------------------------------------------------------------------
    def add_question_rubric_trait(self, question_id: str, trait: Any) -> None:
        """Add a trait to a question's rubric; a name used twice is refused only when read."""

        def change(q: dict[str, Any]) -> None:
            q["rating"] = [*(q.get("rating") or []), coerce_trait(trait).to_rating("QuestionSpecific")]

        self._edit_question(question_id, change)

    def set_question_rubric(self, question_id: str, rubric: Any) -> None:
        """Replace a question's rubric (every Rating of it, dynamic ones included) by ``rubric``.
        As Karenina's: an unknown question is refused only when there is a trait to add."""
        traits = rubric_traits(rubric)
        if question_id not in _StoredIds(self):
            if traits:
                raise QuestionNotFoundError(f"Question not found: {question_id}")
            return
        if not traits and not self._item_json(question_id)["item"].get("rating"):
            return  # nothing to remove, nothing to add: Karenina touches nothing

        def change(q: dict[str, Any]) -> None:
            q.pop("rating", None)
            if traits:
                q["rating"] = [t.to_rating("QuestionSpecific") for t in traits]

        self._edit_question(question_id, change)

    def get_question_rubric(self, question_id: str) -> Rubric | None:
        """The question's own rubric as a ``Rubric``; None when it has none or there is no
        such question (Karenina's answer for both)."""
        try:
            item = self._item_json(question_id)
        except QuestionNotFoundError:
            return None
        traits = _traits(item["item"].get("rating"), QUESTION_TYPES)
        return _rubric(Rubric, traits) if traits else None

    def remove_question_rubric(self, question_id: str) -> bool:
        """Remove a question's rubric; False when it has none or there is no such question."""
        try:
            if not self._item_json(question_id)["item"].get("rating"):
                return False
        except QuestionNotFoundError:
            return False
        self._edit_question(question_id, lambda q: q.pop("rating", None))
        return True

    def clear_all_rubrics(self) -> int:
        """Remove the global rubric and every question's; returns how many rubrics went."""
        count = int(self.clear_global_rubric())
        for question_id in self._ids():
            count += self.remove_question_rubric(question_id)
        return count

    def get_questions_with_rubric(self) -> list[dict[str, Any]]:
        """The questions (as dicts, ``get_question``'s) that have a rubric of their own."""
        out = []
        for question_id in self._ids():
            item = self._item_json(question_id)
            if any(_type(r) in QUESTION_TYPES for r in item["item"].get("rating") or []):
                item.setdefault("@id", question_id)
                out.append(question_from_item(item).to_dict())
        return out

    def _ids(self) -> list[str]:
        items = ordered_items(self.store.oxigraph, self._graph, self.iri)
        return [owned[0] for i in items if (owned := owning_question(self.iri, i))]

    # -- checks ----------------------------------------------------------------------------
    def validate_rubrics(self) -> tuple[bool, list[dict[str, str]]]:
        """Karenina's checks: every trait has a name and a description, a score trait its
        range, a regex trait its pattern, a metric trait a metric. ``(all_valid, errors)``,
        each error a dict of ``source`` (the trait, or ``question:<id>``) and ``error``."""
        errors: list[dict[str, str]] = []

        def add(source: str, error: str) -> None:
            errors.append({"source": source, "error": error})

        rubric = self.get_global_rubric()
        labels = {"llm": "LLM", "regex": "regex", "callable": "callable", "metric": "metric"}
        for t in rubric.all_traits() if rubric else []:
            source = t.name or "global"
            if t.trait_type not in labels:
                continue  # Karenina does not check global agentic traits
            if not t.name or not t.description:
                add(source, f"Global {labels[t.trait_type]} rubric trait missing name or description")
            if t.trait_type == "llm" and t.kind == "score" and (t.min_score is None or t.max_score is None):
                add(source, "Score trait missing min/max scores")
            if t.trait_type == "regex" and not t.pattern:
                add(source, "Regex trait missing pattern")
            if t.trait_type == "metric" and not t.metrics:
                add(source, "Metric trait has no metrics defined")
        for question_id in self._ids():
            traits = _traits(self._item_json(question_id)["item"].get("rating"), QUESTION_TYPES)
            source = f"question:{question_id}"
            for t in sorted(traits, key=lambda t: _ORDER.index(t.trait_type)):
                if not t.name or not t.description:
                    add(source, "Rubric trait missing name or description")
                if t.trait_type == "llm" and t.kind == "score" and (t.min_score is None or t.max_score is None):
                    add(source, f"Score trait '{t.name}' missing min/max scores")
                if t.trait_type == "regex" and not t.pattern:
                    add(source, f"Regex trait '{t.name}' missing pattern")
                if t.trait_type == "metric" and not t.metrics:
                    add(source, f"Metric trait '{t.name}' has no metrics defined")
        return not errors, errors

    # -- dynamic rubric --------------------------------------------------------------------
    def get_global_dynamic_rubric(self) -> DynamicRubric | None:
        """The global dynamic rubric; None when the benchmark has none. A trait whose
        ``dynamic_trait_type`` Karenina does not know is skipped, as there."""
        ratings = [r for r in self._header().get("rating") or [] if _type(r) == GLOBAL_DYNAMIC]
        traits = [read_as_karenina(r) for r in ratings if _dynamic_tag(r) in TRAIT_FIELDS]
        return _rubric(DynamicRubric, traits) if ratings else None

    def set_global_dynamic_rubric(self, dynamic_rubric: Any) -> None:
        """Set the global dynamic rubric (ours, Karenina's, or any object with its trait lists),
        or clear it with None; the regular global rubric is kept."""
        header = self._header()
        ratings = header.get("rating")
        if dynamic_rubric is None:
            if ratings:  # as Karenina's: no dateModified, and a list left empty stays []
                header["rating"] = [r for r in ratings if _type(r) != GLOBAL_DYNAMIC]
                self._apply(self._header_update(header))
            return
        try:
            rubric = DynamicRubric.from_traits(rubric_traits(dynamic_rubric))
        except ValidationError as exc:
            raise InvalidValueError(f"not a valid dynamic rubric: {validation_message(exc)}") from None
        kept = [r for r in ratings or [] if _type(r) != GLOBAL_DYNAMIC]
        new = [t.dynamic_rating("Global") for t in rubric.all_traits()]
        header.update(rating=kept + new, dateModified=_now())
        self._apply(self._header_update(header))

    def get_merged_dynamic_rubric_for_question(self, question_id: str) -> DynamicRubric | None:
        """The dynamic rubric a question is evaluated with. Karenina merges the global one with
        the question's, but never reads a question's from a checkpoint (its question cache has
        no such entry): the global one, for any question id, as there."""
        return self.get_global_dynamic_rubric()
