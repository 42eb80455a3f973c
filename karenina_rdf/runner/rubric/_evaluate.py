"""Rubric evaluation: score a response against rubric traits (spec §6).

Regex traits run here, callable traits run in a sandbox (only when trusted), and LLM and metric
traits are put to the judge. Nothing here raises for a bad judge reply or a failed call: the
traits that call was for get no value (they are left out of the score dicts, spec §6.2) and a
warning says why. The caller puts ``RubricOutcome.part`` in the result's ``rubric`` part, the
warnings in ``metadata.warnings`` and the responses in the ``rubric_evaluation`` usage.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from karenina_rdf._errors import InvalidValueError, ProviderError
from karenina_rdf.checkpoint import RubricTrait
from karenina_rdf.runner.providers import (
    ChatRequest,
    ChatResponse,
    Message,
    Provider,
    complete_structured,
    json_object,
    with_instructions,
)

from . import _deep_judgment as djr
from . import _prompts as prompts

STAGE = "rubric_evaluation"
MISSING_LABEL = "[MISSING_FROM_RESPONSE]"
WARNING_PREFIX = "Rubric evaluation failed: "
MAX_WARNINGS = 50  # Karenina caps metadata.warnings at 50 entries
CALLABLE_UNTRUSTED = "callable traits run only with --trust-callables"
CALLABLE_NO_SANDBOX = "callable traits need a sandbox and none was given"
AGENTIC_SKIPPED = "agentic traits are evaluated by an agent, which this runner does not do"

_KIND_ORDER = ("llm", "regex", "callable", "metric", "agentic")  # the order of Karenina's Rubric lists
_PROVENANCE_GLOBAL, _PROVENANCE_QUESTION = "global", "question_specific"
_FALSE_WORDS = frozenset({"false", "0", "no"})


# -- the sandbox as this module sees it ---------------------------------------------------------


class CallableOutcome(Protocol):
    """What one sandboxed call reports: ``value`` when ``ok``, else ``error`` (and its ``kind``)."""

    @property
    def ok(self) -> bool: ...
    @property
    def value(self) -> Any: ...
    @property
    def error(self) -> str | None: ...
    @property
    def kind(self) -> str | None: ...


class CallableRunner(Protocol):
    """Runs a cloudpickled one-argument function (base64) on a text, out of this process."""

    def run_callable(self, payload_b64: str, text: str) -> CallableOutcome: ...


# -- merging ------------------------------------------------------------------------------------


def merge_rubrics(
    global_traits: list[RubricTrait] | None, question_traits: list[RubricTrait] | None
) -> tuple[list[RubricTrait], dict[str, str]]:
    """The traits a question is evaluated with, and where each came from (spec §6.3).

    Global traits come before question traits within each trait type. A name used twice raises
    :class:`InvalidValueError` (a ``ValueError``), whether the two traits are of one type (the
    merge refuses it) or of two (Karenina's merged rubric refuses it)."""
    glob, quest = list(global_traits or []), list(question_traits or [])
    if not glob or not quest:
        only = glob or quest
        _check_unique(only)
        origin = _PROVENANCE_GLOBAL if glob else _PROVENANCE_QUESTION
        return only, {t.name: origin for t in only}
    by_type_global = {t.name: t.trait_type for t in glob}
    for t in quest:
        if by_type_global.get(t.name) == t.trait_type:
            raise InvalidValueError(
                f"the {t.trait_type} trait {t.name!r} is in both the global and the question rubric"
            )
    merged = [t for kind in _KIND_ORDER for part in (glob, quest) for t in part if t.trait_type == kind]
    _check_unique(merged)
    provenance = {t.name: _PROVENANCE_GLOBAL for t in glob}
    provenance.update({t.name: _PROVENANCE_QUESTION for t in quest})
    return merged, provenance


def _check_unique(traits: list[RubricTrait]) -> None:
    seen: dict[str, str] = {}
    for t in traits:
        if t.name in seen:
            raise InvalidValueError(
                f"trait name {t.name!r} is used by a {seen[t.name]} trait and a {t.trait_type} trait; "
                "names must be unique across the rubric"
            )
        seen[t.name] = t.trait_type


# -- the outcome --------------------------------------------------------------------------------


class RubricOutcome(BaseModel):
    """What rubric evaluation produced for one task."""

    # The result's ``rubric`` part (spec §10); failed traits left out, empty dicts None. None when
    # a batch call failed: Karenina's evaluator then raises and its stage drops the whole rubric.
    part: dict[str, Any] | None
    calls: list[ChatResponse] = Field(default_factory=list)  # every judge response, for usage accounting
    warnings: list[str] = Field(default_factory=list)  # for metadata.warnings
    skipped: list[str] = Field(default_factory=list)  # "name: reason" for traits not evaluated
    deep_judgment: dict[str, Any] | None = None  # the result's ``deep_judgment_rubric`` part, when it ran
    traits_without_excerpts: list[str] = Field(default_factory=list)  # for DeepJudgmentRubricAutoFail


class _Failed(Exception):
    """A trait got no value; the message says why and goes into a warning."""


class _Aborted(Exception):
    """A batch judge call (boolean/score or literal traits) got no usable reply. Karenina's
    evaluator raises there (evaluator.py l. 198-211, 229-246; the sequential calls, template
    traits and metric traits fail one trait at a time instead), its stage catches it and stores
    no rubric result (rubric_evaluation.py l. 348-366): no later call is made and no trait of the
    rubric keeps a score. The warning was given when the call failed."""


class _Judge:
    """One evaluation's judge calls: builds requests, records responses and warnings."""

    def __init__(self, provider: Provider, model: str, temperature: float, instructions: str | None = None) -> None:
        self.provider, self.model, self.temperature = provider, model, temperature
        self.instructions = instructions  # PromptConfig's rubric_evaluation: last in every system text
        self.calls: list[ChatResponse] = []
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(WARNING_PREFIX + message)

    def ask(self, prompt: prompts.Prompt, names: list[str]) -> dict[str, Any] | None:
        """The judge's reply as a JSON object, or None (with a warning) when there is none."""
        system, user, schema = prompt
        label = ", ".join(names)
        request = ChatRequest(
            model=self.model,
            messages=(
                Message(role="system", content=with_instructions(system, self.instructions)),
                Message(role="user", content=user),
            ),
            temperature=self.temperature,
            json_schema=schema,
            stage=STAGE,
            label=label,
        )
        try:
            # Karenina's evaluator calls go through structured output, with its retries.
            reply, response = complete_structured(self.provider, request, json_object)
        except ProviderError as exc:
            self.warn(f"judge call for {_quote(names)} failed [{exc.category}]: {exc}")
            return None
        except ValueError as exc:  # no usable reply in any attempt
            self.warn(f"judge reply for {_quote(names)} is unusable: {exc}")
            return None
        except Exception as exc:  # a provider bug must not end the task: report it like a failed call
            self.warn(f"judge call for {_quote(names)} failed [unexpected_error]: {type(exc).__name__}: {exc}")
            return None
        self.calls.append(response)
        return reply


def _quote(names: list[str]) -> str:
    return ("trait " if len(names) == 1 else "traits ") + ", ".join(repr(n) for n in names)


# -- evaluation ---------------------------------------------------------------------------------


def evaluate_rubric(
    traits: list[RubricTrait],
    provenance: dict[str, str],
    *,
    question_text: str,
    response: str,
    raw_answer: str,
    judge: Provider,
    judge_model: str,
    sandbox: CallableRunner | None,
    trust_callables: bool,
    strategy: Literal["batch", "sequential"] = "batch",
    temperature: float = 0.0,
    instructions: str | None = None,
    deep_judgment: djr.RubricDeepJudgmentConfig | None = None,
    question_id: str | None = None,
    deep_judgment_fallback: tuple[int, float, int] = (3, 0.80, 2),
    deep_judgment_instructions: str | None = None,
) -> RubricOutcome:
    """Score ``response`` against ``traits`` (spec §6.1-6.2).

    ``raw_answer`` (the reference answer) reaches the judge only in calls made for LLM traits
    with ``include_ground_truth``; batches that mix opted-in traits with others are split.
    Regex and callable traits read ``response`` itself.

    ``deep_judgment``: the run's rubric deep-judgment settings (``_deep_judgment``); the LLM
    traits they select are judged in steps first, ``deep_judgment_fallback`` (the template
    deep-judgment max excerpts, threshold and retries) filling the settings a trait leaves unset."""
    j = _Judge(judge, judge_model, temperature, instructions)
    skipped: list[str] = []
    values: dict[str, Any] = {}  # trait name -> value, None when evaluation failed
    labels: dict[str, str] = {}
    metrics: dict[str, tuple[dict[str, float], dict[str, list[str]]]] = {}
    evaluated: list[RubricTrait] = []
    for t in traits:
        reason = _skip_reason(t, sandbox, trust_callables)
        if reason is None:
            evaluated.append(t)
        else:
            skipped.append(f"{t.name}: {reason}")

    chosen: list[tuple[RubricTrait, djr.TraitSettings]] = []
    if deep_judgment is not None:
        for t in evaluated:
            # Template-kind traits are never judged in steps (Karenina's trait model forbids it;
            # only its enable_all copy, which skips validation, would try, and score a number).
            if t.trait_type == "llm" and t.kind != "template":
                settings = djr.resolve(t, question_id, deep_judgment)
                if settings.enabled:
                    chosen.append((t, settings))
    dj: djr.DeepJudgmentOutcome | None = None
    if chosen:
        dj = djr.evaluate_deep_judgment(
            chosen,
            question_text=question_text,
            response=response,
            judge=judge,
            judge_model=judge_model,
            temperature=temperature,
            instructions=deep_judgment_instructions,
            fallback=deep_judgment_fallback,
        )
        j.calls.extend(dj.calls)
        values.update(dj.scores)
        # Karenina's stage hands the standard evaluator only the other LLM traits (metric traits
        # are evaluated apart): with deep judgment on, regex and callable traits get no score.
        evaluated = [t for t in evaluated if t.trait_type in ("llm", "metric")]
    in_steps = {t.name for t, _ in chosen}

    def of(trait_type: str, *kinds: str) -> list[RubricTrait]:
        return [
            t
            for t in evaluated
            if t.trait_type == trait_type and (not kinds or t.kind in kinds) and t.name not in in_steps
        ]

    # Karenina's order: deterministic traits, then template, boolean/score, literal and metric calls.
    for t in of("regex"):
        values[t.name] = _guard(j, t, _regex, t, response)
    for t in of("callable"):
        assert sandbox is not None  # _skip_reason skipped it otherwise
        values[t.name] = _guard(j, t, _callable, t, sandbox, response)
    for t in of("llm", "template"):
        values[t.name] = _template(j, t, question_text, response, raw_answer)
    batch = strategy == "batch"
    try:
        for group in _groups(of("llm", "boolean", "score"), strategy):
            reference = raw_answer if _wants_reference(group[0]) else None
            values.update(_plain(j, group, question_text, response, reference, abort=batch))
        for group in _groups(of("llm", "literal"), strategy):
            reference = raw_answer if _wants_reference(group[0]) else None
            scores, group_labels = _literal(j, group, question_text, response, reference, abort=batch)
            values.update(scores)
            labels.update(group_labels)
    except _Aborted:
        return RubricOutcome(part=None, calls=j.calls, warnings=j.warnings, skipped=skipped)
    for t in of("metric"):
        result = _metric(j, t, question_text, response)
        if result is not None:
            metrics[t.name] = result

    part = _part(
        evaluated, provenance, traits, values, labels, metrics, strategy, performed=bool(evaluated) or bool(chosen)
    )
    if dj is None:
        return RubricOutcome(part=part, calls=j.calls, warnings=j.warnings, skipped=skipped)
    standard = {k: v for k, v in (part["llm_trait_scores"] or {}).items() if k not in in_steps}
    # Karenina's stage combines the two score dicts into one (a dict even when empty): the rubric
    # counts as evaluated whatever the traits scored.
    part["rubric_evaluation_performed"] = True
    return RubricOutcome(
        part=part,
        calls=j.calls,
        warnings=j.warnings,
        skipped=skipped,
        deep_judgment=dj.part(standard),
        traits_without_excerpts=list(dj.failed),
    )


def _skip_reason(t: RubricTrait, sandbox: CallableRunner | None, trust: bool) -> str | None:
    if t.trait_type == "agentic":
        return AGENTIC_SKIPPED
    if t.trait_type == "callable":
        if not trust:
            return CALLABLE_UNTRUSTED
        if sandbox is None:
            return CALLABLE_NO_SANDBOX
    if t.trait_type == "llm" and t.kind not in ("boolean", "score", "literal", "template"):
        return f"unknown LLM trait kind {t.kind!r}"
    return None


def _guard(j: _Judge, t: RubricTrait, compute: Callable[..., Any], *args: Any) -> Any:
    """``compute(*args)``, or None with a warning when the trait cannot be scored."""
    try:
        return compute(*args)
    except _Failed as exc:
        j.warn(f"trait {t.name!r}: {exc}")
        return None


def _wants_reference(t: RubricTrait) -> bool:
    flag = t.settings.get("include_ground_truth")
    return flag is True or (isinstance(flag, str) and flag.strip().lower() == "true")


def _groups(traits: list[RubricTrait], strategy: str) -> list[list[RubricTrait]]:
    """The calls to make: one per trait (sequential) or one per include_ground_truth value (batch),
    so that the reference answer reaches only the traits that asked for it."""
    if strategy == "sequential":
        return [[t] for t in traits]
    with_ref = [t for t in traits if _wants_reference(t)]
    without = [t for t in traits if not _wants_reference(t)]
    return [g for g in (without, with_ref) if g]


# -- regex and callable traits ------------------------------------------------------------------


def _regex(t: RubricTrait, text: str) -> bool:
    pattern = t.settings.get("pattern")
    if not isinstance(pattern, str):
        raise _Failed("no regex pattern")
    flags = 0 if t.settings.get("case_sensitive", True) else re.IGNORECASE
    try:
        # An empty text counts as no match whatever the pattern (spec §6.1).
        matched = bool(text) and re.search(pattern, text, flags) is not None
    except re.error as exc:
        raise _Failed(f"invalid regex pattern {pattern!r}: {exc}") from None
    return not matched if t.settings.get("invert_result", False) else matched


def _callable(t: RubricTrait, sandbox: CallableRunner, text: str) -> bool | int | float:
    code = t.settings.get("callable_code")
    if not isinstance(code, str) or not code:
        raise _Failed("no callable code")
    try:
        outcome = sandbox.run_callable(code, text)
    except Exception as exc:  # whatever the sandbox raises is this trait's failure, not the task's
        raise _Failed(f"sandbox error: {type(exc).__name__}: {exc}") from None
    if not outcome.ok:
        raise _Failed(f"callable failed [{outcome.kind or 'error'}]: {outcome.error or 'no details'}")
    value = outcome.value
    if t.kind == "boolean":
        if not isinstance(value, bool):
            raise _Failed(f"a boolean callable must return bool, got {type(value).__name__}")
        return not value if t.settings.get("invert_result", False) else value
    if t.kind == "score":
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise _Failed(f"a score callable must return a finite int or float, got {value!r}")
        lo, hi = t.min_score, t.max_score
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise _Failed(f"score {value!r} is outside [{lo}, {hi}]")
        return value
    if t.kind == "literal":
        names = list(t.classes or {})
        if not isinstance(value, str) or value not in names:
            raise _Failed(f"a literal callable must return one of {names}, got {value!r}")
        return names.index(value)
    raise _Failed(f"unknown callable kind {t.kind!r}")


# -- boolean and score LLM traits ---------------------------------------------------------------


def _plain(
    j: _Judge, traits: list[RubricTrait], question: str, response: str, reference: str | None, *, abort: bool
) -> dict[str, Any]:
    names = [t.name for t in traits]
    reply = j.ask(prompts.scores_prompt(traits, question, response, reference), names)
    if reply is None:
        if abort:
            raise _Aborted
        return dict.fromkeys(names)
    scores = reply.get("scores")
    if not isinstance(scores, dict):
        scores = reply  # a judge that left out the wrapper still named the traits
    out: dict[str, Any] = {}
    for t in traits:
        if t.name not in scores or scores[t.name] is None:
            j.warn(f"the judge gave no value for trait {t.name!r}")
            out[t.name] = None
            continue
        value = scores[t.name]
        out[t.name] = (
            _guard(j, t, coerce_boolean, value) if t.kind == "boolean" else _guard(j, t, coerce_score, value, t)
        )
    return out


def coerce_boolean(value: Any) -> bool:
    """A judge's yes/no: booleans as they are; numbers and strings are false when falsy or
    "false"/"0"/"no" (any case), true otherwise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float | str):
        return bool(value) and str(value).strip().lower() not in _FALSE_WORDS
    raise _Failed(f"{value!r} is not a yes/no value")


def coerce_score(value: Any, t: RubricTrait) -> int:
    """A judge's score as an int (fractions truncated, numeric strings read) clamped into the
    trait's range."""
    number: float
    if isinstance(value, bool):
        raise _Failed(f"{value!r} is not a score")
    if isinstance(value, int | float):
        number = value
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise _Failed(f"{value!r} is not a number") from None
    else:
        raise _Failed(f"{value!r} is not a number")
    if not math.isfinite(number):
        raise _Failed(f"{value!r} is not a finite number")
    lo, hi = prompts.score_range(t)
    return max(lo, min(hi, int(number)))


# -- literal LLM traits -------------------------------------------------------------------------


def _literal(
    j: _Judge, traits: list[RubricTrait], question: str, response: str, reference: str | None, *, abort: bool
) -> tuple[dict[str, int | None], dict[str, str]]:
    names = [t.name for t in traits]
    reply = j.ask(prompts.literal_prompt(traits, question, response, reference), names)
    if reply is None:
        if abort:
            raise _Aborted
        return dict.fromkeys(names), {}
    chosen = _classifications(reply)
    scores: dict[str, int | None] = {}
    labels: dict[str, str] = {}
    for t in traits:
        label = chosen.get(t.name)
        if label is None:
            scores[t.name], labels[t.name] = -1, MISSING_LABEL
            continue
        scores[t.name], labels[t.name] = literal_index(t, label)
        if scores[t.name] == -1:
            j.warn(f"trait {t.name!r}: the judge chose {label!r}, not one of {list(t.classes or {})}")
    return scores, labels


def _classifications(reply: dict[str, Any]) -> dict[str, str]:
    """trait name -> class name from a reply: the asked-for list, or a plain mapping."""
    items = reply.get("classifications")
    out: dict[str, str] = {}
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("trait_name"), str):
                value = item.get("class_name")
                if value is not None:
                    out.setdefault(item["trait_name"], str(value))
        return out
    source = items if isinstance(items, dict) else reply
    return {k: str(v) for k, v in source.items() if isinstance(k, str) and v is not None and not isinstance(v, dict)}


def literal_index(t: RubricTrait, label: str) -> tuple[int, str]:
    """(index, label) of a class name: exact match, else case-insensitive match (the canonical
    name is kept), else -1 with the judge's label kept for inspection."""
    names = list(t.classes or {})
    if label in names:
        return names.index(label), label
    folded = {n.lower(): n for n in names}
    canonical = folded.get(label.strip().lower())
    if canonical is not None:
        return names.index(canonical), canonical
    return -1, label


# -- template-kind LLM traits -------------------------------------------------------------------


def _template(j: _Judge, t: RubricTrait, question: str, response: str, raw_answer: str) -> dict[str, Any] | None:
    kind = t.settings.get("kind")
    schema = kind.get("schema") if isinstance(kind, dict) else None
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        j.warn(f"trait {t.name!r}: its template kind has no schema with properties")
        return None
    reference = raw_answer if _wants_reference(t) else None
    reply = j.ask(prompts.template_prompt(t, schema, question, response, reference), [t.name])
    if reply is None:
        return None
    try:
        return _conform_object(reply, schema)
    except _Failed as exc:
        j.warn(f"trait {t.name!r}: {exc}")
        return None


def _conform_object(reply: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The reply's fields in schema order, each checked (and leniently converted) to its type;
    optional fields the judge left out are None."""
    required = set(schema.get("required") or [])
    out: dict[str, Any] = {}
    for field, spec in schema["properties"].items():
        value = reply.get(field)
        if value is None:
            if field in required and not _allows_null(spec):
                raise _Failed(f"required field {field!r} is missing")
            out[field] = None
            continue
        out[field] = _conform(value, spec, field)
    return out


def _allows_null(spec: Any) -> bool:
    if not isinstance(spec, dict):
        return True
    if spec.get("type") == "null" or (isinstance(spec.get("type"), list) and "null" in spec["type"]):
        return True
    return any(_allows_null(s) for s in spec.get("anyOf") or spec.get("oneOf") or [] if isinstance(s, dict))


def _conform(value: Any, spec: Any, path: str) -> Any:
    if not isinstance(spec, dict):
        return value
    options = spec.get("anyOf") or spec.get("oneOf")
    types = spec.get("type")
    if isinstance(types, list):
        options = [{**spec, "type": ty} for ty in types]
    if isinstance(options, list):
        for option in options:
            try:
                return _conform(value, option, path)
            except _Failed:
                continue
        raise _Failed(f"field {path!r}: {value!r} matches none of its allowed types")
    if "enum" in spec and value not in spec["enum"]:
        raise _Failed(f"field {path!r}: {value!r} is not one of {spec['enum']}")
    check = _TYPE_CHECKS.get(types) if isinstance(types, str) else None
    if check is None:
        return value  # $ref, const and untyped fields are taken as given
    converted = check(value)
    if converted is _NO:
        raise _Failed(f"field {path!r}: {value!r} is not of type {types}")
    if types == "array" and isinstance(spec.get("items"), dict):
        return [_conform(v, spec["items"], f"{path}[{i}]") for i, v in enumerate(converted)]
    return converted


_NO = object()


def _as_integer(v: Any) -> Any:
    if isinstance(v, bool):
        return _NO
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            return _NO
    return _NO


def _as_number(v: Any) -> Any:
    if isinstance(v, bool):
        return _NO
    if isinstance(v, int | float):
        return v
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            return _NO
    return _NO


def _as_boolean(v: Any) -> Any:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    return _NO


_TYPE_CHECKS: dict[str, Callable[[Any], Any]] = {
    "integer": _as_integer,
    "number": _as_number,
    "boolean": _as_boolean,
    "string": lambda v: v if isinstance(v, str) else _NO,
    "array": lambda v: v if isinstance(v, list) else _NO,
    "object": lambda v: v if isinstance(v, dict) else _NO,
    "null": lambda v: v if v is None else _NO,
}


# -- metric traits ------------------------------------------------------------------------------


def _metric(
    j: _Judge, t: RubricTrait, question: str, response: str
) -> tuple[dict[str, float], dict[str, list[str]]] | None:
    reply = j.ask(prompts.metric_prompt(t, question, response), [t.name])
    if reply is None:
        return None
    full = t.settings.get("evaluation_mode") == "full_matrix"
    lists = {b: _bucket(reply.get(b)) for b in ("tp", "fn", "fp", "tn")}
    if not full:
        lists["tn"] = []  # no negative set in tp_only mode: TN is not computed
    if t.settings.get("repeated_extraction", True):
        lists = {b: dedupe(items) for b, items in lists.items()}
    requested = [str(m) for m in t.settings.get("metrics") or []]
    unknown = [m for m in requested if m not in _METRICS]
    if unknown:
        j.warn(f"trait {t.name!r}: unknown metrics {unknown} not computed")
    return compute_metrics(lists, [m for m in requested if m in _METRICS]), lists


def _bucket(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [v if isinstance(v, str) else json.dumps(v) for v in value if v is not None]


def dedupe(items: list[str]) -> list[str]:
    """Blanks and case-insensitive repeats (after trimming) dropped; the first occurrence kept."""
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.strip().lower()
        if key and key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _ratio(num: int, den: int) -> float:
    return num / den if den > 0 else 0.0


def _f1(tp: int, fn: int, fp: int, tn: int) -> float:
    if tp + fp == 0 or tp + fn == 0:
        return 0.0
    p, r = tp / (tp + fp), tp / (tp + fn)
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


_METRICS: dict[str, Callable[[int, int, int, int], float]] = {
    "precision": lambda tp, fn, fp, tn: _ratio(tp, tp + fp),
    "recall": lambda tp, fn, fp, tn: _ratio(tp, tp + fn),
    "f1": _f1,
    "specificity": lambda tp, fn, fp, tn: _ratio(tn, tn + fp),
    "accuracy": lambda tp, fn, fp, tn: _ratio(tp + tn, tp + tn + fp + fn),
}


def compute_metrics(lists: dict[str, list[str]], requested: list[str]) -> dict[str, float]:
    """The requested metrics over the lengths of the confusion lists; a zero denominator gives 0.0."""
    counts = (len(lists["tp"]), len(lists["fn"]), len(lists["fp"]), len(lists["tn"]))
    return {m: float(_METRICS[m](*counts)) for m in requested}


# -- the result part ----------------------------------------------------------------------------


def _part(
    evaluated: list[RubricTrait],
    provenance: dict[str, str],
    traits: list[RubricTrait],
    values: dict[str, Any],
    labels: dict[str, str],
    metrics: dict[str, tuple[dict[str, float], dict[str, list[str]]]],
    strategy: str,
    *,
    performed: bool,
) -> dict[str, Any]:
    llm: dict[str, Any] = {}
    regex: dict[str, Any] = {}
    callables: dict[str, Any] = {}
    for t in evaluated:  # trait order, whatever order the calls were made in
        value = values.get(t.name)
        if value is None:
            continue
        if t.trait_type == "llm" and t.kind == "template":
            llm.update({f"{t.name}.{k}": v for k, v in value.items() if v is not None})
        elif t.trait_type == "llm":
            llm[t.name] = value
        elif t.trait_type == "regex":
            regex[t.name] = value
        elif t.trait_type == "callable":
            callables[t.name] = value
    trait_labels = {t.name: labels[t.name] for t in evaluated if t.name in labels and values.get(t.name) is not None}
    metric_scores = {t.name: metrics[t.name][0] for t in evaluated if t.name in metrics}
    metric_lists = {t.name: metrics[t.name][1] for t in evaluated if t.name in metrics}
    origin = {t.name: provenance[t.name] for t in traits if t.name in provenance}
    return {
        # Karenina's: its evaluator returned (a dict, whatever the traits scored), which is so
        # whenever a trait was put to it; a trait that failed alone leaves the rest performed.
        "rubric_evaluation_performed": performed,
        "rubric_evaluation_strategy": strategy,
        "llm_trait_scores": llm or None,
        "llm_trait_labels": trait_labels or None,
        "regex_trait_scores": regex or None,
        "callable_trait_scores": callables or None,
        "metric_trait_scores": metric_scores or None,
        "metric_trait_confusion_lists": metric_lists or None,
        "trait_provenance": origin or None,
    }
