"""Rubric evaluation (spec §6): every scoring rule, offline, with a fake judge and a fake sandbox."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import cloudpickle
import pytest

from karenina_rdf import Benchmark, RubricTrait, Store
from karenina_rdf._errors import ProviderError
from karenina_rdf.runner import ChatRequest, ChatResponse, Usage
from karenina_rdf.runner.providers._base import json_object
from karenina_rdf.runner.providers._structured import format_instructions
from karenina_rdf.runner.rubric._evaluate import (
    CALLABLE_NO_SANDBOX,
    CALLABLE_UNTRUSTED,
    MAX_WARNINGS,
    MISSING_LABEL,
    RubricOutcome,
    evaluate_rubric,
    merge_rubrics,
)
from tests.conftest import SHARED

ALL_FEATURES = SHARED / "corpus" / "karenina" / "generated__all_features.jsonld"
REFERENCE = "REFERENCE-ANSWER-XYZZY"

Reply = str | Exception | Callable[[ChatRequest], str]


class FakeJudge:
    """A Provider that answers from a script and keeps every request."""

    interface = "fake"

    def __init__(self, reply: Reply | list[Reply]) -> None:
        self.replies = reply if isinstance(reply, list) else None
        self.reply = reply
        self.requests: list[ChatRequest] = []

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        reply = self.replies.pop(0) if self.replies is not None else self.reply
        assert not isinstance(reply, list)
        if isinstance(reply, Exception):
            raise reply
        text = reply(request) if callable(reply) else reply
        return ChatResponse(text=text, model="fake-judge", usage=Usage(input_tokens=10, output_tokens=2))


@dataclass(frozen=True)
class Outcome:
    ok: bool
    value: Any = None
    error: str | None = None
    kind: str | None = None


class InProcessSandbox:
    """Stands in for the real sandbox (tested elsewhere): unpickles and calls in this process."""

    def run_callable(self, payload_b64: str, text: str) -> Outcome:
        try:
            fn = cloudpickle.loads(base64.b64decode(payload_b64))
            return Outcome(ok=True, value=fn(text))
        except Exception as exc:
            return Outcome(ok=False, error=f"{type(exc).__name__}: {exc}", kind="exception")


def run(
    traits: list[RubricTrait],
    judge: FakeJudge | None = None,
    *,
    response: str = "The answer is Paris.",
    raw_answer: str = REFERENCE,
    sandbox: InProcessSandbox | None = None,
    trust: bool = False,
    strategy: Literal["batch", "sequential"] = "batch",
    provenance: dict[str, str] | None = None,
) -> RubricOutcome:
    return evaluate_rubric(
        traits,
        provenance if provenance is not None else dict.fromkeys((t.name for t in traits), "global"),
        question_text="What is the capital of France?",
        response=response,
        raw_answer=raw_answer,
        judge=judge or FakeJudge(AssertionError("the judge should not be called")),
        judge_model="judge-model",
        sandbox=sandbox,
        trust_callables=trust,
        strategy=strategy,
    )


def scores(mapping: dict[str, Any]) -> str:
    return json.dumps({"scores": mapping})


def with_settings(trait: RubricTrait, **settings: Any) -> RubricTrait:
    return trait.model_copy(update={"settings": {**trait.settings, **settings}})


BOOL = RubricTrait.llm("clear", "Is the response clear?")
SCORE_0_3 = RubricTrait.llm("depth", "Depth", kind="score", min_score=0, max_score=3)
SCORE_DEFAULT = RubricTrait.llm("detail", "Detail", kind="score")
STANCE = RubricTrait.llm("stance", "Stance", classes={"refutes": "Against", "neutral": "None", "supports": "For"})
REGEX_PARIS = RubricTrait.regex("paris", "Paris")


# -- merging (§6.3) -----------------------------------------------------------------------------


def test_merge_nothing_and_one_side() -> None:
    g, q = RubricTrait.llm("g", "G"), RubricTrait.regex("q", "x")
    assert merge_rubrics(None, None) == ([], {})
    assert merge_rubrics([], None) == ([], {})
    assert merge_rubrics([g], None) == ([g], {"g": "global"})
    assert merge_rubrics(None, [q]) == ([q], {"q": "question_specific"})


def test_merge_orders_global_then_question_per_kind_with_provenance() -> None:
    g_llm, g_re = RubricTrait.llm("g_llm", "x"), RubricTrait.regex("g_re", "x")
    q_llm, q_re = RubricTrait.llm("q_llm", "x"), RubricTrait.regex("q_re", "x")
    traits, provenance = merge_rubrics([g_re, g_llm], [q_re, q_llm])
    assert [t.name for t in traits] == ["g_llm", "q_llm", "g_re", "q_re"]
    assert provenance == {
        "g_re": "global",
        "g_llm": "global",
        "q_re": "question_specific",
        "q_llm": "question_specific",
    }


@pytest.mark.parametrize(
    ("question_trait", "message"),
    [
        (RubricTrait.llm("safety", "again"), "in both the global and the question rubric"),
        (RubricTrait.regex("safety", "x"), "used by a llm trait and a regex trait"),
    ],
    ids=["same kind", "cross kind"],
)
def test_merge_name_collisions_raise_value_error(question_trait: RubricTrait, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        merge_rubrics([RubricTrait.llm("safety", "Is it safe?")], [question_trait])


# -- boolean and score coercion (§6.1) ----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        ("true", True),
        ("False", False),
        ("NO", False),
        ("no ", False),
        ("0", False),
        ("", False),
        ("yes", True),
        ("maybe", True),
        (0, False),
        (1, True),
        (2, True),
        (0.0, False),
        (0.5, True),
        ([1], None),  # not a yes/no value: the trait fails
        (None, None),  # no verdict
    ],
)
def test_boolean_coercion(value: Any, expected: bool | None) -> None:
    out = run([BOOL], FakeJudge(scores({"clear": value})))
    assert out.part["llm_trait_scores"] == (None if expected is None else {"clear": expected})
    assert len(out.warnings) == (1 if expected is None else 0)


@pytest.mark.parametrize(
    ("trait", "value", "expected"),
    [
        (SCORE_0_3, 0, 0),  # 0 is a real lower bound (Karenina's `min_score or 1` is not copied)
        (SCORE_0_3, -2, 0),
        (SCORE_0_3, 2, 2),
        (SCORE_0_3, 7, 3),
        (SCORE_0_3, "2", 2),
        (SCORE_0_3, " 3 ", 3),
        (SCORE_0_3, 2.9, 2),  # truncated, then clamped
        (SCORE_0_3, "2.5", 2),
        (SCORE_0_3, "abc", None),
        (SCORE_0_3, True, None),
        (SCORE_0_3, [2], None),
        (SCORE_0_3, "nan", None),
        (SCORE_DEFAULT, 0, 1),  # default range 1..5
        (SCORE_DEFAULT, 9, 5),
        (SCORE_DEFAULT, 4, 4),
    ],
)
def test_score_coercion_and_clamping(trait: RubricTrait, value: Any, expected: int | None) -> None:
    out = run([trait], FakeJudge(scores({trait.name: value})))
    assert out.part["llm_trait_scores"] == (None if expected is None else {trait.name: expected})
    if expected is None:
        assert out.warnings and out.warnings[0].startswith("Rubric evaluation failed: trait ")


def test_batch_trait_absent_from_reply_is_dropped_and_extra_keys_ignored() -> None:
    judge = FakeJudge(scores({"clear": True, "not_a_trait": 3}))
    out = run([BOOL, SCORE_0_3], judge)
    assert len(judge.requests) == 1
    assert out.part["llm_trait_scores"] == {"clear": True}
    assert out.warnings == ["Rubric evaluation failed: the judge gave no value for trait 'depth'"]


def test_reply_without_the_scores_wrapper_is_read() -> None:
    out = run([BOOL, SCORE_0_3], FakeJudge('{"clear": false, "depth": 1}'))
    assert out.part["llm_trait_scores"] == {"clear": False, "depth": 1}


# -- literal traits -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "score", "label", "warned"),
    [
        ({"classifications": [{"trait_name": "stance", "class_name": "neutral"}]}, 1, "neutral", False),
        ({"classifications": [{"trait_name": "stance", "class_name": "refutes"}]}, 0, "refutes", False),
        ({"classifications": [{"trait_name": "stance", "class_name": "SUPPORTS"}]}, 2, "supports", False),
        ({"classifications": [{"trait_name": "stance", "class_name": "ambivalent"}]}, -1, "ambivalent", True),
        ({"classifications": []}, -1, MISSING_LABEL, False),
        ({"classifications": [{"trait_name": "other", "class_name": "neutral"}]}, -1, MISSING_LABEL, False),
        ({"stance": "Neutral"}, 1, "neutral", False),  # a plain mapping is understood too
    ],
    ids=["exact", "first", "case-insensitive", "unknown", "missing", "other trait", "mapping"],
)
def test_literal_classification(reply: dict[str, Any], score: int, label: str, warned: bool) -> None:
    out = run([STANCE], FakeJudge(json.dumps(reply)))
    assert out.part["llm_trait_scores"] == {"stance": score}
    assert out.part["llm_trait_labels"] == {"stance": label}
    assert bool(out.warnings) is warned


def test_literal_and_plain_traits_take_separate_calls_in_batch() -> None:
    def answer(request: ChatRequest) -> str:
        if request.label == "stance":
            return json.dumps({"classifications": [{"trait_name": "stance", "class_name": "supports"}]})
        return scores({"clear": True, "depth": 3})

    judge = FakeJudge(answer)
    out = run([BOOL, STANCE, SCORE_0_3], judge)
    assert [r.label for r in judge.requests] == ["clear, depth", "stance"]
    assert out.part["llm_trait_scores"] == {"clear": True, "stance": 2, "depth": 3}
    assert out.part["llm_trait_labels"] == {"stance": "supports"}


def test_sequential_makes_one_call_per_trait() -> None:
    def answer(request: ChatRequest) -> str:
        if request.label == "stance":
            return '{"classifications": [{"trait_name": "stance", "class_name": "refutes"}]}'
        return scores({request.label: {"clear": "yes", "depth": 2}[request.label]})

    judge = FakeJudge(answer)
    out = run([BOOL, SCORE_0_3, STANCE], judge, strategy="sequential")
    assert [r.label for r in judge.requests] == ["clear", "depth", "stance"]
    assert out.part["rubric_evaluation_strategy"] == "sequential"
    assert out.part["llm_trait_scores"] == {"clear": True, "depth": 2, "stance": 0}


# -- the reference answer (§5.3) ----------------------------------------------------------------


GT_BOOL = with_settings(RubricTrait.llm("correct", "Agrees with the reference?"), include_ground_truth=True)
GT_LIT = with_settings(
    RubricTrait.llm("verdict", "Verdict", classes={"wrong": "Wrong", "right": "Right"}), include_ground_truth=True
)
METRIC = RubricTrait.metric("genes", ["precision", "recall", "f1"], ["TP53", "RB1"])


def _answer_everything(request: ChatRequest) -> str:
    props = (request.json_schema or {}).get("properties", {})
    if "scores" in props:
        return scores(dict.fromkeys(props["scores"]["properties"], True))
    if "classifications" in props:
        names = props["classifications"]["items"]["properties"]["trait_name"]["enum"]
        return json.dumps({"classifications": [{"trait_name": n, "class_name": "right"} for n in names]})
    return json.dumps({"tp": ["TP53"], "fn": ["RB1"], "fp": []})


@pytest.mark.parametrize("strategy", ["batch", "sequential"])
def test_reference_answer_reaches_only_opted_in_traits(strategy: Literal["batch", "sequential"]) -> None:
    judge = FakeJudge(_answer_everything)
    out = run([BOOL, GT_BOOL, STANCE, GT_LIT, METRIC], judge, strategy=strategy)
    seen = {r.label: any(REFERENCE in m.content for m in r.messages) for r in judge.requests}
    # batch groups by opt-in, so here (one trait of each kind per side) both strategies make the same calls
    assert seen == {"clear": False, "correct": True, "stance": False, "verdict": True, "genes": False}
    assert out.part["llm_trait_scores"] == {"clear": True, "correct": True, "stance": -1, "verdict": 1}


def test_mixed_batch_is_split_in_two_calls() -> None:
    other = RubricTrait.llm("polite", "Polite?")
    judge = FakeJudge(_answer_everything)
    run([BOOL, GT_BOOL, other], judge)
    assert [(r.label, any(REFERENCE in m.content for m in r.messages)) for r in judge.requests] == [
        ("clear, polite", False),
        ("correct", True),
    ]


def test_reference_answer_never_sent_without_opt_in() -> None:
    judge = FakeJudge(_answer_everything)
    run([BOOL, SCORE_0_3, STANCE, METRIC], judge)
    assert judge.requests
    assert not any(REFERENCE in m.content for r in judge.requests for m in r.messages)


def test_request_shape() -> None:
    judge = FakeJudge(scores({"clear": True}))
    out = run([BOOL], judge)
    (request,) = judge.requests
    assert (request.model, request.stage, request.label, request.temperature) == (
        "judge-model",
        "rubric_evaluation",
        "clear",
        0.0,
    )
    assert [m.role for m in request.messages] == ["system", "user"]
    assert request.json_schema is not None and request.json_schema["required"] == ["scores"]
    assert "The answer is Paris." in request.messages[1].content
    assert "What is the capital of France?" in request.messages[1].content
    assert [c.model for c in out.calls] == ["fake-judge"]


# -- judge replies and failures (§6.2) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "clear"),
    [
        ('```json\n{"scores": {"clear": true}}\n```', True),
        ('Sure! Here is my verdict:\n{"scores": {"clear": true}}\nHope this helps {:', True),
        ('Thinking {not json} ... {"scores": {"clear": true}}', True),
        # Karenina's extract_json_from_response takes the last object that decodes (a reply
        # reasons first, then answers), on the instructions call that follows the structured one.
        ('{"scores": {"clear": true}} {"scores": {"clear": false}}', False),
    ],
    ids=["fenced", "prose around", "brace before", "two objects"],
)
def test_json_is_found_in_wrapped_replies(text: str, clear: bool) -> None:
    assert json_object(text) == {"scores": {"clear": True}}
    assert run([BOOL], FakeJudge(text)).part["llm_trait_scores"] == {"clear": clear}


def test_unusable_batch_reply_drops_the_rubric_and_counts_no_call() -> None:
    """Batch: the judge is asked four times (Karenina's structured-output retries); with no usable
    reply Karenina's evaluator raises on the call (evaluator.py l. 198-211) and its stage stores no
    rubric result, the regex trait's score included, and no usage (a failed attempt's usage never
    reaches the stage). tests/runner/test_stages_dynamic.py compares this with Karenina's run."""
    judge = FakeJudge("I cannot judge this.")
    out = run([BOOL, SCORE_0_3, REGEX_PARIS], judge)
    assert out.part is None
    assert len(judge.requests) == 8  # two calls an attempt: structured, then schema instructions
    assert out.calls == []
    assert out.warnings == [
        "Rubric evaluation failed: judge reply for traits 'clear', 'depth' is unusable: "
        "no usable reply in 4 attempts; the last one: Could not extract JSON from response: I cannot judge this...."
    ]


def test_unusable_sequential_reply_drops_only_its_trait() -> None:
    """Sequential: Karenina's calls fail one trait at a time (llm_trait.py, _execute_serial),
    each after its four structured-output attempts (eight calls)."""
    judge = FakeJudge(["I cannot judge this."] * 8 + [json.dumps({"scores": {"depth": 2}})])
    out = run([BOOL, SCORE_0_3, REGEX_PARIS], judge, strategy="sequential")
    assert out.part is not None
    assert out.part["llm_trait_scores"] == {"depth": 2}
    assert out.part["regex_trait_scores"] == {"paris": True}
    assert out.part["rubric_evaluation_performed"] is True
    assert len(judge.requests) == 9 and len(out.calls) == 1 and len(out.warnings) == 1


@pytest.mark.parametrize("bad", [1, 3], ids=["one bad reply", "three bad replies"])
def test_unusable_reply_is_asked_again_with_its_error(bad: int) -> None:
    """Karenina's structured-output retries (adapters/langchain/llm.py ``_ainvoke_structured``):
    two calls an attempt (structured, then schema instructions without the schema), each retry
    the first request plus one user message with the last call's error, and only the usable
    call's usage counted. The structured-output module's tests check the shapes call by call."""
    good = json.dumps({"scores": {"clear": True, "depth": 2}})
    judge = FakeJudge(["I cannot judge this."] * bad + [good])
    out = run([BOOL, SCORE_0_3], judge)
    assert out.part is not None and out.part["llm_trait_scores"] == {"clear": True, "depth": 2}
    assert out.warnings == [] and len(out.calls) == 1
    first, *others = judge.requests
    assert len(others) == bad
    for i, r in enumerate(others, start=1):
        if i % 2:  # the instructions call: no schema, the instructions after the last message
            assert r.json_schema is None and r.messages[-1].content.endswith(format_instructions(first.json_schema))
        else:  # a retry's structured call
            assert r.messages[:-1] == first.messages and r.messages[-1].role == "user"
            assert "Could not extract JSON from response: I cannot judge this." in r.messages[-1].content
            assert r.json_schema == first.json_schema
        assert r.key() != first.key()


@pytest.mark.parametrize(
    ("error", "category"),
    [
        (ProviderError("429 from the server", category="rate_limit", retryable=True), "rate_limit"),
        (ProviderError("read timed out", category="timeout"), "timeout"),
        (RuntimeError("provider bug"), "unexpected_error"),
    ],
)
def test_provider_failure_in_batch_drops_the_rubric_with_a_warning(error: Exception, category: str) -> None:
    out = run([BOOL, STANCE, METRIC], FakeJudge(error))
    assert out.part is None
    assert out.calls == []
    # The first call's failure ends the evaluation: no further call is made, one warning.
    said = f"RuntimeError: {error}" if category == "unexpected_error" else str(error)
    assert out.warnings == [f"Rubric evaluation failed: judge call for trait 'clear' failed [{category}]: {said}"]


def test_provider_failure_in_sequential_is_a_warning_per_trait_and_a_part_without_scores() -> None:
    out = run(
        [BOOL, STANCE, METRIC], FakeJudge(ProviderError("read timed out", category="timeout")), strategy="sequential"
    )
    assert out.part == {
        "rubric_evaluation_performed": True,  # Karenina's evaluator returned, every value None
        "rubric_evaluation_strategy": "sequential",
        "llm_trait_scores": None,
        "llm_trait_labels": None,
        "regex_trait_scores": None,
        "callable_trait_scores": None,
        "metric_trait_scores": None,
        "metric_trait_confusion_lists": None,
        "trait_provenance": {"clear": "global", "stance": "global", "genes": "global"},
    }
    assert out.calls == []
    assert len(out.warnings) == 3
    assert all("[timeout]" in w for w in out.warnings)


def test_one_failed_call_leaves_the_others_in_sequential() -> None:
    judge = FakeJudge(
        [
            ProviderError("boom", category="server_error"),
            '{"classifications": [{"trait_name": "stance", "class_name": "neutral"}]}',
        ]
    )
    out = run([BOOL, STANCE], judge, strategy="sequential")
    assert out.part is not None
    assert out.part["llm_trait_scores"] == {"stance": 1}
    assert out.part["rubric_evaluation_performed"] is True
    assert out.warnings == ["Rubric evaluation failed: judge call for trait 'clear' failed [server_error]: boom"]


def test_warnings_are_capped() -> None:
    traits = [RubricTrait.llm(f"t{i}", "x") for i in range(MAX_WARNINGS + 10)]
    out = run(traits, FakeJudge(scores({})))
    assert len(out.warnings) == MAX_WARNINGS


# -- regex traits -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "case_sensitive", "invert", "text", "expected"),
    [
        ("Paris", True, False, "The answer is Paris.", True),
        ("paris", True, False, "The answer is Paris.", False),
        ("paris", False, False, "The answer is Paris.", True),
        ("Paris", True, True, "The answer is Paris.", False),
        (r"\bsorry\b", False, True, "Sorry, I can't.", False),
        (r"\bsorry\b", False, True, "No apology here.", True),
        (r"\[\d+\]", True, False, "As shown [12].", True),
        (".*", True, False, "", False),  # empty text never matches
        (".*", True, True, "", True),
    ],
)
def test_regex_traits(pattern: str, case_sensitive: bool, invert: bool, text: str, expected: bool) -> None:
    trait = RubricTrait.regex("r", pattern, case_sensitive=case_sensitive, invert_result=invert)
    out = run([trait], response=text)
    assert out.part["regex_trait_scores"] == {"r": expected}
    assert out.part["rubric_evaluation_performed"] is True
    assert out.calls == []


def test_regex_that_does_not_compile_is_dropped() -> None:
    broken = RubricTrait(name="broken", trait_type="regex", settings={"pattern": "((", "case_sensitive": True})
    out = run([broken, RubricTrait.regex("ok", "Paris")])
    assert out.part["regex_trait_scores"] == {"ok": True}
    assert len(out.warnings) == 1 and "invalid regex pattern '(('" in out.warnings[0]


# -- metric traits ------------------------------------------------------------------------------


def _metric(mode: str = "tp_only", repeated: bool = True, metrics: list[str] | None = None) -> RubricTrait:
    if mode == "full_matrix":
        return RubricTrait.metric(
            "m",
            metrics or ["precision", "recall", "f1", "specificity", "accuracy"],
            ["TP53", "RB1"],
            tn_instructions=["KRAS"],
            evaluation_mode="full_matrix",
            repeated_extraction=repeated,
        )
    return RubricTrait.metric(
        "m", metrics or ["precision", "recall", "f1"], ["TP53", "RB1"], repeated_extraction=repeated
    )


@pytest.mark.parametrize(
    ("trait", "reply", "lists", "expected"),
    [
        (
            _metric(),
            {"tp": ["TP53", "RB1"], "fn": ["BRCA1"], "fp": ["MYC"]},
            {"tp": ["TP53", "RB1"], "fn": ["BRCA1"], "fp": ["MYC"], "tn": []},
            {"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3},
        ),
        (
            _metric(),
            {"tp": ["TP53"], "fn": ["RB1", "BRCA1", "X"], "fp": [], "tn": ["ignored in tp_only"]},
            {"tp": ["TP53"], "fn": ["RB1", "BRCA1", "X"], "fp": [], "tn": []},
            {"precision": 1.0, "recall": 0.25, "f1": 0.4},
        ),
        (
            _metric(),
            {"tp": [], "fn": [], "fp": []},
            {"tp": [], "fn": [], "fp": [], "tn": []},
            {"precision": 0.0, "recall": 0.0, "f1": 0.0},  # every denominator is zero
        ),
        (
            _metric(),
            {"tp": [], "fn": ["TP53"], "fp": ["MYC"]},
            {"tp": [], "fn": ["TP53"], "fp": ["MYC"], "tn": []},
            {"precision": 0.0, "recall": 0.0, "f1": 0.0},  # P + R = 0
        ),
        (
            _metric(),
            {"tp": ["TP53", "tp53 ", " ", "", "RB1", "Rb1"], "fn": [], "fp": ["MYC", "myc"]},
            {"tp": ["TP53", "RB1"], "fn": [], "fp": ["MYC"], "tn": []},
            {"precision": 2 / 3, "recall": 1.0, "f1": 0.8},
        ),
        (
            _metric(repeated=False),
            {"tp": ["TP53", "tp53 ", "RB1"], "fn": [], "fp": ["MYC", "myc"]},
            {"tp": ["TP53", "tp53 ", "RB1"], "fn": [], "fp": ["MYC", "myc"], "tn": []},
            {"precision": 0.6, "recall": 1.0, "f1": 0.75},
        ),
        (
            _metric("full_matrix"),
            {"tp": ["TP53"], "fn": ["RB1"], "fp": ["KRAS"], "tn": ["EGFR", "KRAS"]},
            {"tp": ["TP53"], "fn": ["RB1"], "fp": ["KRAS"], "tn": ["EGFR", "KRAS"]},
            {"precision": 0.5, "recall": 0.5, "f1": 0.5, "specificity": 2 / 3, "accuracy": 0.6},
        ),
        (
            _metric("full_matrix", metrics=["specificity", "accuracy"]),
            {"tp": [], "fn": [], "fp": [], "tn": []},
            {"tp": [], "fn": [], "fp": [], "tn": []},
            {"specificity": 0.0, "accuracy": 0.0},
        ),
        (
            _metric("full_matrix", metrics=["accuracy"]),
            {"tp": "not a list", "fn": None, "tn": ["KRAS"]},
            {"tp": [], "fn": [], "fp": [], "tn": ["KRAS"]},
            {"accuracy": 1.0},
        ),
    ],
    ids=["basic", "tn ignored", "all zero", "p+r zero", "dedup", "no dedup", "full", "full zero", "bad buckets"],
)
def test_metric_traits(
    trait: RubricTrait, reply: dict[str, Any], lists: dict[str, list[str]], expected: dict[str, float]
) -> None:
    judge = FakeJudge("```json\n" + json.dumps(reply) + "\n```")
    out = run([trait], judge)
    assert out.part["metric_trait_confusion_lists"] == {"m": lists}
    assert list(out.part["metric_trait_confusion_lists"]["m"]) == ["tp", "fn", "fp", "tn"]
    assert out.part["metric_trait_scores"] == {"m": pytest.approx(expected)}
    assert list(out.part["metric_trait_scores"]["m"]) == list(expected)
    schema = judge.requests[0].json_schema or {}
    assert set(schema["required"]) == (
        {"tp", "fn", "fp", "tn"} if trait.settings["evaluation_mode"] == "full_matrix" else {"tp", "fn", "fp"}
    )


def test_metric_trait_with_unusable_reply_is_dropped() -> None:
    out = run([_metric()], FakeJudge("no idea"))
    assert out.part["metric_trait_scores"] is None and out.part["metric_trait_confusion_lists"] is None
    assert len(out.warnings) == 1


# -- callable traits ----------------------------------------------------------------------------


def _callable(fn: Callable[[str], Any], kind: str = "boolean", **kw: Any) -> RubricTrait:
    return RubricTrait.callable("c", cloudpickle.dumps(fn), kind=kind, **kw)


def _boom(text: str) -> bool:
    raise RuntimeError("exploded")


@pytest.mark.parametrize(
    ("trait", "expected", "warning"),
    [
        (_callable(lambda t: "Paris" in t), True, None),
        (_callable(lambda t: "Rome" in t), False, None),
        (_callable(lambda t: "Paris" in t, invert_result=True), False, None),
        (_callable(lambda t: 1), None, "a boolean callable must return bool, got int"),
        (_callable(lambda t: 2, "score", min_score=1, max_score=3), 2, None),
        (_callable(lambda t: 2.5, "score", min_score=1, max_score=3), 2.5, None),  # floats kept
        (_callable(lambda t: 1, "score", min_score=1, max_score=3), 1, None),
        (_callable(lambda t: 4, "score", min_score=1, max_score=3), None, "score 4 is outside [1, 3]"),
        (_callable(lambda t: 0.5, "score", min_score=1, max_score=3), None, "score 0.5 is outside [1, 3]"),
        (_callable(lambda t: "3", "score", min_score=1, max_score=3), None, "must return a finite int or float"),
        (_callable(lambda t: True, "score", min_score=1, max_score=3), None, "must return a finite int or float"),
        (_callable(lambda t: "formal", classes={"casual": "C", "formal": "F"}), 1, None),
        (_callable(lambda t: "casual", classes={"casual": "C", "formal": "F"}), 0, None),
        (_callable(lambda t: "rude", classes={"casual": "C", "formal": "F"}), None, "must return one of"),
        (_callable(_boom), None, "callable failed [exception]: RuntimeError: exploded"),
        (_callable(lambda t: True).model_copy(update={"kind": "weird"}), None, "unknown callable kind 'weird'"),
    ],
)
def test_callable_traits(trait: RubricTrait, expected: Any, warning: str | None) -> None:
    out = run([trait], sandbox=InProcessSandbox(), trust=True)
    assert out.part["callable_trait_scores"] == (None if expected is None else {"c": expected})
    if warning is None:
        assert out.warnings == []
    else:
        assert len(out.warnings) == 1 and warning in out.warnings[0], out.warnings
    assert out.skipped == []


@pytest.mark.parametrize(
    ("sandbox", "trust", "reason"),
    [
        (InProcessSandbox(), False, CALLABLE_UNTRUSTED),
        (None, False, CALLABLE_UNTRUSTED),
        (None, True, CALLABLE_NO_SANDBOX),
    ],
)
def test_callable_traits_need_trust_and_a_sandbox(sandbox: InProcessSandbox | None, trust: bool, reason: str) -> None:
    out = run([_callable(lambda t: True)], sandbox=sandbox, trust=trust)
    assert out.skipped == [f"c: {reason}"]
    assert out.part["callable_trait_scores"] is None
    assert out.part["rubric_evaluation_performed"] is False


# -- skipped traits and provenance ----------------------------------------------------------------


def test_agentic_traits_are_skipped() -> None:
    # Dynamic traits reach the evaluator only once promoted by the presence check
    # (tests/runner/test_stages.py runs that through a real run).
    agentic = RubricTrait(name="agent", trait_type="agentic", kind="boolean")
    out = run([agentic, RubricTrait.regex("r", "Paris")])
    assert [s.split(":")[0] for s in out.skipped] == ["agent"]
    assert "agentic" in out.skipped[0]
    assert out.part["regex_trait_scores"] == {"r": True}


def test_provenance_comes_from_the_merge() -> None:
    traits, provenance = merge_rubrics([RubricTrait.regex("g", "Paris")], [RubricTrait.regex("q", "Rome")])
    out = run(traits, provenance=provenance)
    assert out.part["trait_provenance"] == {"g": "global", "q": "question_specific"}
    assert out.part["regex_trait_scores"] == {"g": True, "q": False}


# -- template-kind LLM traits ---------------------------------------------------------------------

CITATION_SCHEMA = {
    "properties": {
        "count": {"description": "Number of citations", "title": "Count", "type": "integer"},
        "has_doi": {"description": "Whether a DOI is present", "title": "Has Doi", "type": "boolean"},
        "sources": {"description": "Cited sources", "items": {"type": "string"}, "title": "Sources", "type": "array"},
    },
    "required": ["count", "has_doi"],
    "title": "CitationFindings",
    "type": "object",
}
CITATIONS = RubricTrait(
    name="citations",
    trait_type="llm",
    kind="template",
    higher_is_better=None,
    settings={"kind": {"type": "template", "schema": CITATION_SCHEMA}},
)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ({"count": 2, "has_doi": True, "sources": ["a", "b"]}, {"count": 2, "has_doi": True, "sources": ["a", "b"]}),
        ({"count": "3", "has_doi": "false"}, {"count": 3, "has_doi": False}),  # lenient, absent optional dropped
        ({"count": 1.0, "has_doi": False, "extra": 1}, {"count": 1, "has_doi": False}),
        ({"has_doi": True}, None),  # required field missing
        ({"count": "many", "has_doi": True}, None),
        ({"count": 1, "has_doi": True, "sources": [1]}, None),
    ],
)
def test_template_kind_traits(reply: dict[str, Any], expected: dict[str, Any] | None) -> None:
    judge = FakeJudge(json.dumps(reply))
    out = run([CITATIONS], judge)
    flat = None if expected is None else {f"citations.{k}": v for k, v in expected.items()}
    assert out.part["llm_trait_scores"] == flat
    assert judge.requests[0].json_schema == CITATION_SCHEMA
    assert len(out.warnings) == (1 if expected is None else 0)


# -- real traits from the Karenina corpus -----------------------------------------------------------


def _corpus_judge(request: ChatRequest) -> str:
    # The fenced batch reply is refused by the structured call; the instructions call that
    # follows carries no schema but has it in its last message.
    props = (request.json_schema or {}).get("properties", {})
    if request.json_schema is None and format_instructions(None)[:20] in request.messages[-1].content:
        props = {"scores": {}}
    if "scores" in props:
        return "```json\n" + scores({"clarity": "yes", "depth": 12, "mentions_river": False}) + "\n```"
    if "classifications" in props:
        return json.dumps({"classifications": [{"trait_name": "stance", "class_name": "Supports"}]})
    if request.label == "citations":
        return json.dumps({"count": 1, "has_doi": False})
    if request.label == "gene_recall":
        return json.dumps({"tp": ["TP53", "tp53"], "fn": ["RB1"], "fp": []})
    if request.label == "gene_matrix":
        return json.dumps({"tp": ["TP53"], "fn": [], "fp": ["KRAS"], "tn": []})
    raise AssertionError(f"unexpected call {request.label}")


def test_real_traits_from_the_corpus() -> None:
    if not ALL_FEATURES.is_file():
        pytest.skip(f"the Karenina corpus is not at {ALL_FEATURES} (a fresh clone has no ../shared)")
    store = Store.memory()
    try:
        ref = store.import_checkpoint(ALL_FEATURES)
        bench = Benchmark(store, ref.benchmark_id)
        qid = next(q for q in bench.get_question_ids() if bench.get_question_rubric(q) and q.endswith("cb0b4aaf"))
        glob, quest = bench.get_global_rubric(), bench.get_question_rubric(qid)
        assert glob is not None and quest is not None
        traits, provenance = merge_rubrics(glob.all_traits(), quest.all_traits())
    finally:
        store.close()
    judge = FakeJudge(_corpus_judge)
    response = "Paris is the capital of France [1]; it lies on the Seine and is formal in tone therefore."
    out = run(traits, judge, response=response, sandbox=InProcessSandbox(), trust=True, provenance=provenance)
    assert out.part == {
        "rubric_evaluation_performed": True,
        "rubric_evaluation_strategy": "batch",
        "llm_trait_scores": {
            "clarity": True,
            "depth": 10,  # 12 clamped into 1..10
            "stance": 2,
            "citations.count": 1,
            "citations.has_doi": False,
            "mentions_river": False,
        },
        "llm_trait_labels": {"stance": "supports"},
        "regex_trait_scores": {"has_citation": True, "no_apology": True, "says_paris": True},
        "callable_trait_scores": {"is_long": False, "length_bucket": 2, "tone": 1},
        "metric_trait_scores": {
            "gene_recall": {"precision": 1.0, "recall": 0.5, "f1": pytest.approx(2 / 3)},
            "gene_matrix": {"accuracy": 0.5, "specificity": 0.0},
        },
        "metric_trait_confusion_lists": {
            "gene_recall": {"tp": ["TP53"], "fn": ["RB1"], "fp": [], "tn": []},
            "gene_matrix": {"tp": ["TP53"], "fn": [], "fp": ["KRAS"], "tn": []},
        },
        "trait_provenance": {
            **dict.fromkeys(["clarity", "depth", "stance", "citations"], "global"),
            "mentions_river": "question_specific",
            **dict.fromkeys(["has_citation", "no_apology"], "global"),
            "says_paris": "question_specific",
            **dict.fromkeys(["is_long", "length_bucket", "tone", "gene_recall", "gene_matrix"], "global"),
            **dict.fromkeys(["runs_tests", "audit"], "global"),
        },
    }
    assert list(out.part["trait_provenance"]) == [t.name for t in traits]
    assert out.warnings == []
    assert [s.split(":")[0] for s in out.skipped] == ["runs_tests", "audit"]
    # calls in Karenina's order (the fenced batch reply: its structured call, then the
    # instructions call that reads it); scores in trait order
    assert [r.label for r in judge.requests] == [
        "citations",
        "clarity, depth, mentions_river",
        "clarity, depth, mentions_river",
        "stance",
        "gene_recall",
        "gene_matrix",
    ]
    assert list(out.part["llm_trait_scores"]) == [
        "clarity",
        "depth",
        "stance",
        "citations.count",
        "citations.has_doi",
        "mentions_river",
    ]
    assert not any(REFERENCE in m.content for r in judge.requests for m in r.messages)
    assert all(r.stage == "rubric_evaluation" for r in judge.requests)
    assert len(out.calls) == len(judge.requests) - 1  # the refused fenced reply is not counted
