"""The result record a task produces: Karenina's ``VerificationResult`` as JSON (verification
spec §10), built from the field tables the store maps (``_results_model``), so a result made
here has Karenina's keys in Karenina's order and maps and exports like an imported one.

Also here: the failure classifier (§8, first match wins), caveats, per-stage token usage with
cost, and ``result_id``.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from karenina_rdf.results import FAILURE_GROUPS, METADATA, ROOT, TEMPLATE, result_id
from karenina_rdf.runner.providers import DEFAULT_BUDGETS, ChatResponse

# Karenina's retried failure categories: those with a budget (§9.1 retry_policy).
RETRY_CATEGORIES = tuple(DEFAULT_BUDGETS)
_AUTOFAIL_CATEGORY = {"DeepJudgmentAutoFail": "deep_judgment", "DeepJudgmentRubricAutoFail": "deep_judgment_rubric"}
_REASON_LIMIT = 500
_WARNINGS_LIMIT = 50


def fresh_result() -> dict[str, Any]:
    """Every field of a result at the value a fresh ``VerificationResult`` holds."""
    out: dict[str, Any] = {
        "metadata": {f.name: copy.copy(f.default) for f in METADATA},
        "template": {f.name: copy.copy(f.default) for f in TEMPLATE},
        "rubric": None,
        "deep_judgment": None,
        "deep_judgment_rubric": None,
    }
    out.update({f.name: f.default for f in ROOT})
    return out


def now_timestamp() -> str:
    """Karenina's pipeline timestamp: local clock, ``YYYY-MM-DD HH:MM:SS``, no zone."""
    return dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S")


@dataclass
class StageError:
    """An error a stage raised: its failure category (Karenina's), the stage, the message, and
    for retry categories whether the retry budget was used up."""

    category: str
    stage: str
    message: str
    exhausted: bool = False
    retries: dict[str, int] = field(default_factory=dict)  # retries spent before giving up


@dataclass
class TaskState:
    """What the stages of one task have established so far (Karenina's ``context``)."""

    usage: dict[str, list[ChatResponse]] = field(default_factory=dict)
    costs: dict[str, float | None] = field(default_factory=dict)
    retries: dict[str, int] = field(default_factory=dict)
    error: StageError | None = None
    template_error: str | None = None  # a ValidateTemplate failure: classified template_validation
    last_stage: str = "generate_answer"
    warnings: list[str] = field(default_factory=list)
    autofail: str | None = None  # the first auto-fail guard that fired (Karenina's failed_stage)

    def add_call(self, stage: str, response: ChatResponse, cost: float | None, *, retries: bool = True) -> None:
        """Usage of one call; ``retries=False`` for a call another task made (its answer is
        shared), so its retries are counted once."""
        self.usage.setdefault(stage, []).append(response)
        if stage in self.costs and self.costs[stage] is not None and cost is not None:
            self.costs[stage] = (self.costs[stage] or 0.0) + cost
        elif stage not in self.costs:
            self.costs[stage] = cost
        else:
            self.costs[stage] = None  # one call of unknown price makes the stage's cost unknown
        if retries:
            self.add_retries(response.retries)

    def add_retries(self, retries: dict[str, int]) -> None:
        for category, n in retries.items():
            self.retries[category] = self.retries.get(category, 0) + n

    def warn(self, text: str) -> None:
        if len(self.warnings) < _WARNINGS_LIMIT:
            self.warnings.append(text)


def usage_metadata(state: TaskState) -> dict[str, Any] | None:
    """Karenina's ``usage_metadata``: one entry per stage summed over its calls, then ``total``."""
    if not state.usage:
        return None
    out: dict[str, Any] = {}
    total_in = total_out = 0
    for stage, calls in state.usage.items():
        i = sum(c.usage.input_tokens for c in calls)
        o = sum(c.usage.output_tokens for c in calls)
        total_in, total_out = total_in + i, total_out + o
        out[stage] = {
            "input_tokens": i,
            "output_tokens": o,
            "total_tokens": i + o,
            "model": calls[-1].model,
            "input_token_details": {},
            "output_token_details": {},
        }
    out["total"] = {"input_tokens": total_in, "output_tokens": total_out, "total_tokens": total_in + total_out}
    return out


def retry_counts(state: TaskState, budgets: dict[str, int]) -> dict[str, Any] | None:
    if not state.retries:
        return None
    return {c: {"used": state.retries.get(c, 0), "budget": budgets.get(c, 0)} for c in RETRY_CATEGORIES}


def classify(result: dict[str, Any], state: TaskState) -> dict[str, Any] | None:
    """Karenina's failure classifier (§8), first match wins. Of the auto-fail guards only
    DeepJudgmentAutoFail runs here (the others guard agent runs)."""
    template = result["template"]
    error = state.error
    if state.autofail is not None:
        category = _AUTOFAIL_CATEGORY[state.autofail]
        return _failure(category, state.autofail, f"auto-fail at stage {state.autofail}", None)
    if template.get("template_verification_performed") and template.get("verify_result") is False:
        return _failure("content", "verify_template", "verify() returned False", None)
    if error is not None and error.category in RETRY_CATEGORIES and error.exhausted:
        details = {"error_message": error.message, "retry_counts": result["metadata"].get("retry_counts")}
        return _failure(error.category, error.stage, error.message, details)
    if template.get("abstention_detected"):
        return _failure("abstention", "abstention_check", template.get("abstention_reasoning") or "abstention", None)
    if template.get("sufficiency_detected") is False:
        return _failure("sufficiency", "sufficiency_check", template.get("sufficiency_reasoning") or "", None)
    if state.template_error is not None:
        return _failure("template_validation", "validate_template", state.template_error, None)
    if error is not None and error.stage == "parse_template":
        return _failure("parsing", error.stage, error.message, {"error_message": error.message})
    if error is not None:
        return _failure("unexpected_error", error.stage or state.last_stage, error.message, None)
    return None


def _failure(category: str, stage: str, reason: str, details: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "category": category,
        "stage": stage,
        "reason": reason[:_REASON_LIMIT],
        "details": details,
        "group": FAILURE_GROUPS[category],
    }


def caveats(state: TaskState) -> list[str]:
    return ["retries_used"] if any(n > 0 for n in state.retries.values()) else []


def finalize(result: dict[str, Any], state: TaskState, started: float, ended: float, budgets: dict[str, int]) -> None:
    """FinalizeResult: usage, failure, caveats, timing and the result id, in place."""
    meta = result["metadata"]
    result["template"]["usage_metadata"] = usage_metadata(state)
    meta["retry_counts"] = retry_counts(state, budgets)
    meta["failure"] = classify(result, state)
    meta["caveats"] = caveats(state)
    meta["warnings"] = list(state.warnings)
    meta["execution_time"] = round(ended - started, 6)
    meta["timestamp"] = now_timestamp()
    meta["result_id"] = result_id(meta)
