"""Karenina's structured-output retries, stage by stage, through a real run and compared with
Karenina's pipeline run offline against a fake judge (the harness of test_stages.py).

Karenina's ``with_structured_output`` adapters try a reply up to four times. Each retry sends
the first messages plus one user message with the last error, and only the call that succeeds
has its usage counted (adapters/langchain/llm.py ``_ainvoke_structured``). Its LangChain
adapter (``openai_endpoint``) makes each attempt up to two calls, first with the server's
structured output and then with schema instructions and no ``response_format``
(``_try_structured_invocation``), and so do we: with a judge whose replies are fixed per call,
the same reply decides in both libraries. Every case below gives one or three unusable replies
and then a usable one, or only unusable replies (the template parser's fallback after them is
tests/runner/test_stages_parser_fallback.py). Both sides must reach the same verdicts, result
fields and failures, and the same usage per stage (the fake server's 5 + 3 tokens for every
call, so one call's worth per stage means only the usable call was counted).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import Store
from karenina_rdf.runner import (
    DeepJudgmentConfig,
    ModelSpec,
    RunOptions,
    Sandbox,
    run_verification,
)
from karenina_rdf.runner.providers import STRUCTURED_ATTEMPTS, Recorder, ReplayProvider, Usage
from karenina_rdf.runner.providers._structured import format_instructions
from tests.helpers.karenina_ref import karenina
from tests.helpers.stage_runs import Judge, exported_rows
from tests.runner.test_stages import (
    ABSTAINS,
    ANSWERS,
    DJ_ANSWER,
    DJ_REASONING,
    DYN_ANSWER,
    DYNAMIC_CHECKPOINT,
    GOOD_QUOTE,
    INSUFFICIENT,
    KARENINA_RUN,
    NONE_PRESENT,
    PARSED,
    PARSED_WRONG,
    PRESENT,
    REFERENCE,
    SCORES,
    SUFFICIENT,
    Fake,
    _dynamic_question,
    _karenina_case,
    template_bench,
)

pytestmark = pytest.mark.slow  # template code runs in sandbox workers; Karenina in its own environment


BAD = "I would rather explain in prose: the answer looks fine."  # no JSON object at all
HALF = json.dumps({"reasoning": "no verdict given"})  # JSON, but not the asked-for shape
ONE, THREE = [BAD], [BAD, HALF, BAD]  # unusable replies before a usable one

# (id, answer, switches, replies by stage: a list is one reply per call, its last one repeated)
TEMPLATE: list[tuple[str, str, dict[str, bool], dict[str, Any]]] = [
    ("abstention: one bad reply", "I cannot answer that.", {"abstention": True},
     {"abstention_check": [*ONE, ABSTAINS], "parsing": PARSED}),
    ("abstention: three bad replies", "It is Zanzibar-City-77.", {"abstention": True},
     {"abstention_check": [*THREE, ANSWERS], "parsing": PARSED}),
    ("abstention: every reply bad", "I cannot answer that.", {"abstention": True},
     {"abstention_check": HALF, "parsing": PARSED}),
    ("sufficiency: one bad reply", "Somewhere in the ocean.", {"sufficiency": True},
     {"sufficiency_check": [*ONE, INSUFFICIENT], "parsing": PARSED}),
    ("sufficiency: three bad replies", "It is Zanzibar-City-77.", {"sufficiency": True},
     {"sufficiency_check": [*THREE, SUFFICIENT], "parsing": PARSED}),
    ("sufficiency: every reply bad", "Somewhere in the ocean.", {"sufficiency": True},
     {"sufficiency_check": BAD, "parsing": PARSED}),
    ("parsing: one bad reply", "It is Zanzibar-City-77.", {}, {"parsing": [*ONE, PARSED]}),
    ("parsing: three bad replies", "It is Paris.", {}, {"parsing": [BAD, BAD, BAD, PARSED_WRONG]}),
    ("parsing: every reply bad", "It is Zanzibar-City-77.", {}, {"parsing": BAD}),
    ("both checks and parsing, one bad reply each", "It is Zanzibar-City-77.",
     {"abstention": True, "sufficiency": True},
     {"abstention_check": [*ONE, ANSWERS], "sufficiency_check": [*ONE, SUFFICIENT], "parsing": [*ONE, PARSED]}),
]  # fmt: skip

# The checkpoint Karenina wrote with a global dynamic rubric, rubric_only: the presence check,
# then the batch rubric call.
DYNAMIC: list[tuple[str, dict[str, Any]]] = [
    ("presence: one bad reply", {"dynamic_rubric_presence_check": [*ONE, PRESENT], "rubric_evaluation": SCORES}),
    ("presence: three bad replies",
     {"dynamic_rubric_presence_check": [BAD, BAD, BAD, NONE_PRESENT], "rubric_evaluation": SCORES}),
    ("presence: every reply bad", {"dynamic_rubric_presence_check": BAD, "rubric_evaluation": SCORES}),
    ("batch rubric: one bad reply", {"dynamic_rubric_presence_check": PRESENT, "rubric_evaluation": [*ONE, SCORES]}),
    ("batch rubric: three bad replies",
     {"dynamic_rubric_presence_check": PRESENT, "rubric_evaluation": [BAD, BAD, BAD, SCORES]}),
    ("batch rubric: every reply bad", {"dynamic_rubric_presence_check": PRESENT, "rubric_evaluation": BAD}),
]  # fmt: skip

# Template deep judgment: its excerpt and reasoning calls are free text in Karenina (no retries
# there), its final parse goes through the parser's structured output (retried).
DEEP: list[tuple[str, dict[str, Any]]] = [
    ("deep judgment: parse after one bad reply",
     {"deep_judgment_excerpts": GOOD_QUOTE, "deep_judgment_reasoning": DJ_REASONING, "parsing": [*ONE, PARSED]}),
    ("deep judgment: parse, every reply bad",
     {"deep_judgment_excerpts": GOOD_QUOTE, "deep_judgment_reasoning": DJ_REASONING, "parsing": BAD}),
]  # fmt: skip

RETRIED = {
    "abstention_check",
    "sufficiency_check",
    "parsing",
    "dynamic_rubric_presence_check",
    "rubric_evaluation",
}


def counted_judge(replies: dict[str, Any]) -> Judge:
    """The fake judge of test_stages.py answering by stage, with the Karenina script's server's
    token counts (5 in, 3 out) for every call."""
    return Judge(replies, kinds={}, usage=Usage(input_tokens=5, output_tokens=3))


def _run(
    sandbox: Sandbox, store: Store, bench: str, answer: str, replies: dict[str, Any], opts: RunOptions
) -> tuple[dict[str, Any], Judge]:
    judge = counted_judge(replies)
    answerer = Fake("a", lambda r: answer).spec
    report = run_verification(store, bench, judges=[judge.spec], answerers=[answerer], sandbox=sandbox, options=opts)
    (row,) = exported_rows(store, report.run_id)
    return row, judge


@pytest.fixture(scope="module")
def theirs() -> dict[str, dict[str, Any]]:
    cases = [_karenina_case(answer, sw, rep) for _, answer, sw, rep in TEMPLATE]
    text, reference = _dynamic_question()
    cases += [
        _karenina_case(DYN_ANSWER, {}, rep, question=text, reference=reference, template="", mode="rubric_only",
                       checkpoint=str(DYNAMIC_CHECKPOINT))
        for _, rep in DYNAMIC
    ]  # fmt: skip
    cases += [_karenina_case(DJ_ANSWER, {}, rep, deep_judgment={"mode": "full"}) for _, rep in DEEP]
    out = karenina(KARENINA_RUN, json.dumps(cases), timeout=900)
    ids = [c[0] for c in TEMPLATE] + [c[0] for c in DYNAMIC] + [c[0] for c in DEEP]
    return dict(zip(ids, out, strict=True))


def _usage(row: dict[str, Any]) -> dict[str, tuple[int, int, int]]:
    usage = row["template"]["usage_metadata"] or {}
    return {
        stage: (u["input_tokens"], u["output_tokens"], u["total_tokens"])
        for stage, u in usage.items()
        if stage not in ("total", "answer_generation")
    }


def _failure(row: dict[str, Any]) -> tuple[str, str] | None:
    f = row["metadata"]["failure"]
    if f is None:
        return None
    if f["stage"] == "ParseTemplate":
        # Karenina's classifier misses its parse stage's own error (test_stages.py
        # test_deep_judgment_decides_as_karenina): unexpected_error at "ParseTemplate" there.
        assert f["category"] == "unexpected_error"
        return ("parsing", "parse_template")
    return (f["category"], f["stage"])


def _requests_check(judge: Judge, replies: dict[str, Any]) -> None:
    """Each stage asked as often as its replies say: one call per unusable reply plus the usable
    one; when none is usable, eight (two an attempt), and parsing one plain call more. Within an
    attempt the structured call carries the schema and the instructions call does not (it has
    the schema instructions at the end of its last user message); a retry is the first request
    plus one user message carrying the last error. No request shows the reference answer (issue
    19 point 4)."""
    for stage in RETRIED & set(judge.stages()):
        asked = [r for r in judge.requests if r.stage == stage]
        given = replies[stage]
        if isinstance(given, list):
            assert len(asked) == len(given), stage
        else:
            unusable = 2 * STRUCTURED_ATTEMPTS + (stage == "parsing")
            assert len(asked) == (1 if given not in (BAD, HALF) else unusable), stage
        first = asked[0]
        instructions = format_instructions(first.json_schema)
        for i, r in enumerate(asked):
            if i >= 2 * STRUCTURED_ATTEMPTS:  # the parser's plain call
                assert stage == "parsing" and r.messages == first.messages and r.json_schema is None
                continue
            sent = r.messages
            if i % 2:  # the instructions call
                assert r.json_schema is None and sent[-1].content.endswith(instructions), stage
                sent = (*sent[:-1], sent[-1].model_copy(update={"content": sent[-1].content[: -len(instructions)]}))
            else:
                assert r.json_schema == first.json_schema, stage
            if i >= 2:
                assert sent[:-1] == first.messages and sent[-1].role == "user", stage
                assert "could not be used" in sent[-1].content, stage
            else:
                assert sent == first.messages, stage
        assert len({r.key() for r in asked}) == len(asked), stage
    for r in judge.requests:
        text = json.dumps(r.model_dump())
        assert REFERENCE not in text and '"correct"' not in text, r.stage


@pytest.mark.parametrize(("case", "answer", "switches", "replies"), TEMPLATE, ids=[c[0] for c in TEMPLATE])
def test_checks_and_parsing_retry_as_karenina(
    sandbox: Sandbox, theirs: dict[str, Any], case: str, answer: str, switches: dict[str, bool], replies: dict[str, Any]
) -> None:
    store = Store.memory()
    opts = RunOptions(
        abstention_enabled=switches.get("abstention", False), sufficiency_enabled=switches.get("sufficiency", False)
    )
    ours, judge = _run(sandbox, store, template_bench(store), answer, replies, opts)
    ref = theirs[case]
    for f in (
        "abstention_check_performed",
        "abstention_detected",
        "abstention_override_applied",
        "abstention_reasoning",
        "sufficiency_check_performed",
        "sufficiency_detected",
        "sufficiency_override_applied",
        "sufficiency_reasoning",
        "parsed_llm_response",
        "template_verification_performed",
    ):
        assert ours["template"][f] == ref["template"][f], (f, ours["template"][f], ref["template"][f])
    assert ours["template"]["verify_result"] == ref["template"]["verify_result"]
    if switches.get("sufficiency") and not ref["template"]["abstention_detected"]:
        # Karenina's classifier reads sufficiency_detected True (sufficient, or not checked) as
        # a failure (test_stages.py test_checks_decide_as_karenina says why); here only an
        # insufficient answer fails, with "sufficiency".
        insufficient = ref["template"]["sufficiency_detected"] is False
        assert (_failure(ref) is None) is insufficient
        assert (_failure(ours) == ("sufficiency", "sufficiency_check")) is insufficient
    else:
        assert _failure(ours) == _failure(ref)
    assert _usage(ours) == _usage(ref)
    _requests_check(judge, replies)
    if "every reply bad" in case:  # pinned: the stage got nothing usable, in both
        stage = next(s for s in replies if s in RETRIED and not isinstance(replies[s], list))
        assert stage not in _usage(ref)
        if stage == "parsing":
            assert ref["template"]["parsed_llm_response"] is None and _failure(ours) == ("parsing", "parse_template")
        else:
            assert ref["template"][stage.replace("_check", "_check_performed")] is False


@pytest.mark.parametrize(("case", "replies"), DYNAMIC, ids=[c[0] for c in DYNAMIC])
def test_presence_check_and_batch_rubric_retry_as_karenina(
    sandbox: Sandbox, theirs: dict[str, Any], case: str, replies: dict[str, Any]
) -> None:
    store = Store.memory()
    bench = store.import_checkpoint(DYNAMIC_CHECKPOINT).benchmark_id
    ours, judge = _run(sandbox, store, bench, DYN_ANSWER, replies, RunOptions(mode="rubric_only"))
    ref = theirs[case]
    assert (ours["metadata"]["failure"] or {}).get("category") == (ref["metadata"]["failure"] or {}).get("category")
    assert (ours["rubric"] is None) is (ref["rubric"] is None)
    if "every reply bad" in case:
        assert ref["rubric"] is None  # pinned: no rubric part in Karenina either way
    else:
        assert ref["rubric"] is not None
        for f in (
            "llm_trait_scores",
            "regex_trait_scores",
            "dynamic_rubric_skipped_traits",
            "dynamic_rubric_promoted_traits",
        ):
            assert ours["rubric"][f] == ref["rubric"][f], (f, ours["rubric"][f], ref["rubric"][f])
    assert _usage(ours) == _usage(ref)
    _requests_check(judge, replies)


@pytest.mark.parametrize(("case", "replies"), DEEP, ids=[c[0] for c in DEEP])
def test_deep_judgment_parse_retries_as_karenina(
    sandbox: Sandbox, theirs: dict[str, Any], case: str, replies: dict[str, Any]
) -> None:
    store = Store.memory()
    opts = RunOptions(deep_judgment=DeepJudgmentConfig(mode="full"))
    ours, judge = _run(sandbox, store, template_bench(store), DJ_ANSWER, replies, opts)
    ref = theirs[case]
    for f in ("verify_result", "parsed_llm_response"):
        assert ours["template"][f] == ref["template"][f], f
    assert _failure(ours) == _failure(ref)
    assert (ours["deep_judgment"] is None) is (ref["deep_judgment"] is None)
    if ref["deep_judgment"] is not None:
        for f in ("extracted_excerpts", "attribute_reasoning", "deep_judgment_model_calls"):
            assert ours["deep_judgment"][f] == ref["deep_judgment"][f], f
    # The free-text steps are asked once each.
    assert judge.stages().count("deep_judgment_excerpts") == 1
    assert judge.stages().count("deep_judgment_reasoning") == 1
    assert _usage(ours) == _usage(ref)
    _requests_check(judge, replies)


def test_a_recorded_run_with_retries_replays_the_same(sandbox: Sandbox, tmp_path: Path) -> None:
    """--record / --replay: every attempt is recorded under its own key (the attempt number
    keeps two retries with the same error apart), and the replayed run asks the same requests
    and decides the same."""
    replies = {
        "abstention_check": [BAD, BAD, BAD, ANSWERS],  # the 2nd and 3rd retries send the same error
        "sufficiency_check": [HALF, SUFFICIENT],
        "parsing": [BAD, PARSED],
    }
    opts = RunOptions(abstention_enabled=True, sufficiency_enabled=True)
    path = tmp_path / "judge.jsonl"
    judge = counted_judge(replies)
    with Recorder(judge.spec.provider, path) as recorder:
        store = Store.memory()
        bench = template_bench(store)
        answerer = Fake("a", lambda r: "It is Zanzibar-City-77.").spec
        spec = ModelSpec(recorder, "j", "openai_endpoint")
        live = run_verification(store, bench, judges=[spec], answerers=[answerer], sandbox=sandbox, options=opts)
    assert len(path.read_text().splitlines()) == len(judge.requests) == 4 + 2 + 2
    replayed = run_verification(
        store,
        bench,
        judges=[ModelSpec(ReplayProvider(path, interface="openai_endpoint"), "j", "openai_endpoint")],
        answerers=[answerer],
        sandbox=sandbox,
        options=opts,
    )
    rows = []
    for run in (live, replayed):
        (row,) = exported_rows(store, run.run_id)
        rows.append(row)
    a, b = rows
    assert a["template"]["abstention_check_performed"] is True and a["template"]["parsed_llm_response"]
    for f in (
        "abstention_detected",
        "abstention_reasoning",
        "sufficiency_detected",
        "sufficiency_reasoning",
        "parsed_llm_response",
        "verify_result",
    ):
        assert a["template"][f] == b["template"][f], f  # fmt: skip
    assert _usage(a) == _usage(b)
