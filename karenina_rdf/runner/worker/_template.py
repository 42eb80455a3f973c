"""Loading, validating and verifying answer templates, and calling pickled callable traits.

These are plain functions with no isolation of their own: the sandbox worker
(``_main``) calls them inside its guarded process, and tests call them directly.

* ``load_template`` executes template code the way Karenina does (spec §4.5, §4.6) and returns
  the answer class with what the pipeline needs to know about it.
* ``verify`` builds the answer from the judge's JSON object and computes the Karenina
  ``template`` result keys that VerifyTemplate decides (spec §4.4).
* ``load_callable`` unpickles a callable trait's function (cloudpickle, base64).
"""

from __future__ import annotations

import base64
import contextlib
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import cloudpickle
from pydantic import BaseModel, ValidationError

from ._composition import strategy_label
from ._runtime import (
    NOT_EXTRACTED,
    BaseAnswer,
    _defines_below_base,
    attach_trace,
    extracted_fields,
    judge_fields,
    judge_schema,
    template_namespace,
    trace_checks,
)


class TemplateInvalid(Exception):
    """Template validation failed (Karenina category ``template_validation``)."""


class ParseFailure(Exception):
    """The judge's object does not fit the template (Karenina category ``parsing``)."""


@dataclass(frozen=True)
class LoadedTemplate:
    cls: type[BaseAnswer]
    info: dict[str, Any]  # class_name, fields, json_schema, regex_only, declarative


def load_template(code: str) -> LoadedTemplate:
    if not code.strip():
        raise TemplateInvalid("template code is empty")
    local_ns: dict[str, Any] = {}
    try:
        # dont_inherit: this module's `from __future__ import annotations` must not turn the
        # template's annotations into strings pydantic then cannot resolve.
        exec(compile(code, "<template>", "exec", dont_inherit=True), template_namespace(), local_ns)
    except MemoryError:
        raise
    except Exception as exc:
        raise TemplateInvalid(f"Error executing template code: {type(exc).__name__}: {exc}") from exc
    cls = _leaf_answer_class(local_ns)
    cls._source_code = code
    fields = extracted_fields(cls)
    regex_only = not fields
    declarative = bool(cls._rules)
    if not regex_only and not declarative and not callable(getattr(cls, "verify", None)):
        raise TemplateInvalid(f"Answer class {cls.__name__!r} does not have a 'verify' method")
    _check_ground_truth(cls)
    info = {
        "class_name": cls.__name__,
        "fields": judge_fields(cls),
        "json_schema": judge_schema(cls),
        "regex_only": regex_only,
        "declarative": declarative,
    }
    return LoadedTemplate(cls, info)


def _leaf_answer_class(namespace: dict[str, Any]) -> type[BaseAnswer]:
    found: list[type[BaseAnswer]] = []
    for value in namespace.values():
        if isinstance(value, type) and issubclass(value, BaseAnswer) and value is not BaseAnswer and value not in found:
            found.append(value)
    # Intermediate bases are allowed; the answer class is the one nothing else derives from.
    leaves = [c for c in found if not any(other is not c and issubclass(other, c) for other in found)]
    if not leaves:
        raise TemplateInvalid("No BaseAnswer subclass found in template code")
    if len(leaves) > 1:
        names = ", ".join(sorted(c.__name__ for c in leaves))
        raise TemplateInvalid(f"Template code defines several BaseAnswer subclasses ({names}); exactly one is expected")
    return leaves[0]


def _check_ground_truth(cls: type[BaseAnswer]) -> None:
    """Build a test instance from placeholder values so that a broken ``ground_truth`` or a
    non-dict ``self.correct`` fails validation instead of every verification."""
    if not _defines_below_base(cls, "model_post_init"):
        return
    values = {name: _placeholder(info.annotation) for name, info in cls.model_fields.items() if info.is_required()}
    try:
        try:
            instance = cls.model_validate(values)
        except ValidationError:
            instance = cls.model_construct(**values)  # runs model_post_init without validating placeholders
    except MemoryError:
        raise
    except Exception as exc:
        raise TemplateInvalid(f"Error testing model_post_init: {type(exc).__name__}: {exc}") from exc
    correct = getattr(instance, "correct", None)
    if correct is not None and not isinstance(correct, dict):
        raise TemplateInvalid("model_post_init must assign 'self.correct' as a dictionary")


def _placeholder(annotation: Any) -> Any:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _placeholder(args[0])
    if origin is Literal:
        return args[0]
    if origin in (Union, types.UnionType):
        return None if type(None) in args else _placeholder(args[0])
    base = origin or annotation
    if not isinstance(base, type):
        return None
    if issubclass(base, BaseModel):
        return {n: _placeholder(f.annotation) for n, f in base.model_fields.items() if f.is_required()}
    for kind, value in ((bool, False), (int, 0), (float, 0.0), (str, ""), (bytes, b""), (dict, {})):
        if issubclass(base, kind):
            return value
    if issubclass(base, list | set | frozenset | tuple):
        return []
    return None


def verify(tpl: LoadedTemplate, parsed: dict[str, Any] | None, raw: str, question_id: str | None) -> dict[str, Any]:
    cls, regex_only = tpl.cls, tpl.info["regex_only"]
    data: dict[str, Any] = {}
    traced: dict[str, bool] = {}
    if not regex_only:
        if parsed is not None and not isinstance(parsed, dict):
            raise ParseFailure(f"parse: the judge's answer is a {type(parsed).__name__}, not a JSON object")
        traced = trace_checks(cls, raw)  # once: field_outcomes reuses them
        # The judge must not be able to supply ground truth or regex checks.
        data = {**traced, **{k: v for k, v in (parsed or {}).items() if k not in NOT_EXTRACTED}}
    if question_id is not None:
        data["id"] = question_id
    try:
        answer = cls.model_validate(data)
    except MemoryError:
        raise
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors())
        raise ParseFailure(f"parse: the judge's answer does not fit {cls.__name__}: {problems}") from exc
    except Exception as exc:
        raise ParseFailure(f"parse: building {cls.__name__} failed: {type(exc).__name__}: {exc}") from exc
    attach_trace(answer, raw, traced)

    field_error: str | None = None
    verify_raised = False
    field_ok: Any = True  # a regex-only template without verify() passes on its regex checks alone
    if callable(getattr(answer, "verify", None)):
        try:
            field_ok = answer.verify()  # type: ignore[attr-defined]
        except MemoryError:
            raise
        except Exception as exc:
            field_ok, verify_raised = False, True
            if not regex_only:  # Karenina's regex-only path only logs the error
                field_error = f"{type(exc).__name__}: {exc}"
    try:
        regex = answer.verify_regex(raw)
    except MemoryError:
        raise
    except Exception:
        regex = {"success": False, "results": {}, "details": {}}

    granular = None if verify_raised else _granular(answer)
    field_results = field_scores = None
    dumped = answer.model_dump()
    gt = dumped.get("correct")
    if cls._rules:
        with contextlib.suppress(Exception):  # Karenina logs it and records no per-field results
            field_results, field_scores = answer.field_outcomes()
            # Karenina merges every field's resolved ground truth (a conditional one's included)
            # into parsed_gt_response once the per-field results are computed.
            resolved = {name: rule.ground_truth for name, rule in cls._rules.items()}
            if isinstance(gt, dict):
                gt.update(resolved)
            elif gt is None:
                gt = dict(resolved)
    return {
        "parsed_gt_response": gt,
        "parsed_llm_response": {k: v for k, v in dumped.items() if k not in NOT_EXTRACTED},
        "template_verification_performed": True,
        "verify_result": bool(field_ok) and bool(regex["success"]),
        # Not a result field: the pipeline's embedding check runs when exactly this is False.
        "field_verification_result": bool(field_ok),
        "verify_granular_result": granular,
        "field_verification_error": field_error,
        "field_results": field_results,
        "field_scores": field_scores,
        "composition_strategy": strategy_label(cls._strategy) if cls._strategy is not None else None,
        "regex_validations_performed": bool(regex["results"]),
        "regex_validation_results": regex["results"],
        "regex_validation_details": regex["details"],
        "regex_overall_success": bool(regex["success"]),
        "regex_extraction_results": {n: d.get("matches_found", []) for n, d in regex["details"].items()},
    }


def _granular(answer: BaseAnswer) -> float | None:
    method = getattr(answer, "verify_granular", None)
    if not callable(method):
        return None
    try:
        value = method()
    except MemoryError:
        raise
    except Exception:
        return None  # Karenina logs it and leaves the granular result absent
    return float(value) if isinstance(value, int | float) else None


def load_callable(payload_b64: str) -> Callable[[str], Any]:
    fn = cloudpickle.loads(base64.b64decode(payload_b64, validate=True))
    if not callable(fn):
        raise TypeError(f"callable_code unpickles to a {type(fn).__name__}, not a function")
    return fn  # type: ignore[no-any-return]
