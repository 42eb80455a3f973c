"""Karenina's template parser on its ``openai_endpoint`` path, through a real run and compared
with Karenina's pipeline run offline against a fake judge (the harness of test_stages.py and
test_stages_retry.py).

Template parsing and template deep judgment's final parse go through Karenina's
``LangChainParserAdapter.aparse_to_pydantic`` (adapters/langchain/parser.py l.172–280): up to four
structured attempts of two calls each (the server's structured output, then schema instructions
without ``response_format``), then one plain call with the first messages whose reply is read with
``extract_json_from_response`` and else repaired with ``json_repair``, then a null-feedback and a
format-feedback retry when the plain reply's own wording triggers them. The fake judges on both
sides give one reply a call from one queue per stage, and tell the calls apart by their shape:
S a structured call (a schema / ``response_format``), I an instructions call (the schema
instructions at the end of its last user message), P a plain call. Both sides must make the same
calls in the same order and reach the same verdicts, result fields, failures and usage (the fake
server's 5 + 3 tokens a call: 8 for one counted call, 16 when a feedback retry adds its own).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import Store
from karenina_rdf.runner import (
    ChatRequest,
    DeepJudgmentConfig,
    ModelSpec,
    RunOptions,
    Sandbox,
    run_verification,
)
from karenina_rdf.runner.providers import STRUCTURED_ATTEMPTS, Recorder, ReplayProvider
from karenina_rdf.runner.providers._structured import format_instructions
from tests.helpers.karenina_ref import karenina
from tests.helpers.stage_runs import Judge
from tests.runner.test_stages import (
    DJ_ANSWER,
    DJ_REASONING,
    GOOD_QUOTE,
    KARENINA_RUN,
    PARSED,
    REFERENCE,
    Fake,
    _karenina_case,
    template_bench,
)
from tests.runner.test_stages_retry import BAD, _failure, _usage, counted_judge

pytestmark = pytest.mark.slow  # template code runs in sandbox workers; Karenina in its own environment

ANSWER = "It is Zanzibar-City-77."
TRUNCATED = '{"capital": "Zanzibar-City-77"'
IN_PROSE = 'Reading the response, the capital named is {"capital": "Zanzibar-City-77"} as stated.'
FENCED = f"```json\n{PARSED}\n```"
NULL = json.dumps({"capital": None})
WRONG_TYPE = json.dumps({"capital": 77})
# A plain reply worded so that Karenina's parser error text triggers its retries: "from
# completion" and an object with a null field (the null-feedback retry); a JSON error phrase
# (the format-feedback retry).
NULL_WORDING = 'Failed to parse from completion {"capital": null}. Got: nothing'
FORMAT_WORDING = "Expecting value: I cannot give the capital as JSON."
EIGHT = [BAD] * 2 * STRUCTURED_ATTEMPTS

# (id, parsing replies: one a call, the last one repeated; the calls, by shape)
CASES: list[tuple[str, Any, str]] = [
    ("truncated JSON: repaired by the plain call", TRUNCATED, "SISISISIP"),
    ("JSON in prose: the instructions call", IN_PROSE, "SI"),
    ("fenced JSON: the instructions call", FENCED, "SI"),
    ("four bad replies, then good", [BAD] * 4 + [PARSED], "SISIS"),
    ("five bad replies, then good", [BAD] * 5 + [PARSED], "SISISI"),
    ("seven bad replies, then good", [BAD] * 7 + [PARSED], "SISISISI"),
    ("eight bad replies, then good: the plain call", [*EIGHT, PARSED], "SISISISIP"),
    ("every reply bad", BAD, "SISISISIP"),
    ("null fields every time", NULL, "SISISISIP"),
    ("a wrong type, then good", [WRONG_TYPE, PARSED], "SI"),
    ("the null-feedback retry", [*EIGHT, NULL_WORDING, PARSED], "SISISISIPP"),
    ("the format-feedback retry", [*EIGHT, FORMAT_WORDING, PARSED], "SISISISIPP"),
    ("both feedback retries, the second usable",
     [*EIGHT, f"{FORMAT_WORDING} {NULL_WORDING}", BAD, PARSED], "SISISISIPPP"),
    ("both feedback retries unusable", [*EIGHT, f"{FORMAT_WORDING} {NULL_WORDING}", BAD], "SISISISIPPP"),
]  # fmt: skip

# Template deep judgment's final parse: the same parser (its excerpt and reasoning calls are
# free text, asked once each).
DEEP: list[tuple[str, Any, str]] = [
    ("deep judgment: truncated JSON", TRUNCATED, "SISISISIP"),
    ("deep judgment: seven bad, then good", [BAD] * 7 + [PARSED], "SISISISI"),
    ("deep judgment: every reply bad", BAD, "SISISISIP"),
]

# Karenina's pipeline script of test_stages.py, also logging the shape of every parsing call,
# and run inside a BlockingPortal as Karenina's batch executor runs its tasks (executor.py
# ``sequential_portal``; the parallel one likewise). Without one, the parser runs under
# ``asyncio.run`` inside an ``except RuntimeError("no running event loop")`` block
# (parser.py ``parse_to_pydantic``), so its final ParseError carries that error as context,
# ``parse_to_pydantic_resilient`` classifies it "connection" by the words "event loop" and runs
# the whole parser again, three more times: an accident of calling the task function directly
# that a real run does not have.
KARENINA_UNPORTALED = KARENINA_RUN.replace(
    '    queue = state["queues"].get(key) or state["queues"].get(kind) or ["{}"]\n',
    '    if kind == "Answer__Relaxed":\n'
    '        last = body["messages"][-1]["content"]\n'
    "        last = last if isinstance(last, str) else json.dumps(last)\n"
    '        state.setdefault("log", []).append("S" if body.get("response_format") else\n'
    '                                           "I" if "You must respond with valid JSON" in last else "P")\n'
    '    queue = state["queues"].get(key) or state["queues"].get(kind) or ["{}"]\n',
).replace(
    '    out.append(r.model_dump(mode="json"))\n',
    '    out.append({**r.model_dump(mode="json"), "_calls": "".join(state.pop("log", []))})\n',
)
KARENINA_LOGGED = KARENINA_UNPORTALED.replace(
    "out = []\n",
    "from anyio.from_thread import start_blocking_portal\n"
    "from karenina.benchmark.verification.async_lifecycle import set_async_portal\n"
    "_portal = start_blocking_portal(backend='asyncio')\n"
    "set_async_portal(_portal.__enter__())\n"
    "out = []\n",
).replace(
    "print(json.dumps(out))\n",
    "set_async_portal(None)\n_portal.__exit__(None, None, None)\nprint(json.dumps(out))\n",
)
assert KARENINA_LOGGED.count('"_calls"') == 1 and KARENINA_LOGGED.count('"log"') == 2
assert KARENINA_LOGGED.count("set_async_portal(") == 2 and "set_async_portal" not in KARENINA_UNPORTALED


def _shape(r: ChatRequest, first: ChatRequest) -> str:
    if r.json_schema is not None:
        return "S"
    return "I" if r.messages[-1].content.endswith(format_instructions(first.json_schema)) else "P"


def _calls(judge: Fake) -> str:
    asked = [r for r in judge.requests if r.stage == "parsing"]
    return "".join(_shape(r, asked[0]) for r in asked)


def _run(sandbox: Sandbox, replies: dict[str, Any], opts: RunOptions, answer: str) -> tuple[dict[str, Any], Judge]:
    store = Store.memory()
    bench = template_bench(store)
    judge = counted_judge(replies)
    report = run_verification(
        store, bench, judges=[judge.spec], answerers=[Fake("a", lambda r: answer).spec], sandbox=sandbox, options=opts
    )
    buf = io.StringIO()
    store.export_results(report.run_id, buf)
    (row,) = json.loads(buf.getvalue())["results"]
    return row, judge


def _deep_replies(parsing: Any) -> dict[str, Any]:
    return {"deep_judgment_excerpts": GOOD_QUOTE, "deep_judgment_reasoning": DJ_REASONING, "parsing": parsing}


@pytest.fixture(scope="module")
def theirs() -> dict[str, dict[str, Any]]:
    cases = [_karenina_case(ANSWER, {}, {"parsing": rep}) for _, rep, _ in CASES]
    cases += [_karenina_case(DJ_ANSWER, {}, _deep_replies(rep), deep_judgment={"mode": "full"}) for _, rep, _ in DEEP]
    out = karenina(KARENINA_LOGGED, json.dumps(cases), timeout=900)
    return dict(zip([c[0] for c in CASES] + [c[0] for c in DEEP], out, strict=True))


def _same(ours: dict[str, Any], ref: dict[str, Any], judge: Judge, calls: str) -> None:
    assert ref["_calls"] == calls  # pinned: Karenina's own calls
    assert _calls(judge) == calls
    for f in ("parsed_llm_response", "verify_result", "template_verification_performed"):
        assert ours["template"][f] == ref["template"][f], (f, ours["template"][f], ref["template"][f])
    assert _failure(ours) == _failure(ref)
    assert _usage(ours) == _usage(ref)
    for r in judge.requests:  # issue 19 point 4: the fallback's calls included
        text = json.dumps(r.model_dump())
        assert REFERENCE not in text and '"correct"' not in text, r.stage


@pytest.mark.parametrize(("case", "replies", "calls"), CASES, ids=[c[0] for c in CASES])
def test_template_parsing_falls_back_as_karenina(
    sandbox: Sandbox, theirs: dict[str, Any], case: str, replies: Any, calls: str
) -> None:
    ours, judge = _run(sandbox, {"parsing": replies}, RunOptions(), ANSWER)
    ref = theirs[case]
    _same(ours, ref, judge, calls)
    usable = ref["template"]["parsed_llm_response"] is not None
    # Pinned in Karenina: a usable reply is counted alone, a feedback retry adds the plain call's.
    assert _usage(ref) == ({"parsing": (10, 6, 16) if "feedback" in case else (5, 3, 8)} if usable else {})


@pytest.mark.parametrize(("case", "replies", "calls"), DEEP, ids=[c[0] for c in DEEP])
def test_deep_judgment_parse_falls_back_as_karenina(
    sandbox: Sandbox, theirs: dict[str, Any], case: str, replies: Any, calls: str
) -> None:
    ours, judge = _run(sandbox, _deep_replies(replies), RunOptions(deep_judgment=DeepJudgmentConfig(mode="full")),
                       DJ_ANSWER)  # fmt: skip
    ref = theirs[case]
    _same(ours, ref, judge, calls)
    assert (ours["deep_judgment"] is None) is (ref["deep_judgment"] is None)
    if ref["deep_judgment"] is not None:
        for f in ("extracted_excerpts", "attribute_reasoning", "deep_judgment_model_calls"):
            assert ours["deep_judgment"][f] == ref["deep_judgment"][f], f
    assert judge.stages().count("deep_judgment_excerpts") == judge.stages().count("deep_judgment_reasoning") == 1


def test_a_recorded_fallback_replays_the_same(sandbox: Sandbox, tmp_path: Path) -> None:
    """--record / --replay: every call of the parser (the eight attempts' calls, the plain call,
    a feedback retry) is recorded under its own key, and the replayed run asks the same requests
    and decides the same."""
    replies = {"parsing": [*EIGHT, NULL_WORDING, PARSED]}
    path = tmp_path / "judge.jsonl"
    judge = counted_judge(replies)
    store = Store.memory()
    bench = template_bench(store)
    answerer = Fake("a", lambda r: ANSWER).spec
    with Recorder(judge.spec.provider, path) as recorder:
        spec = ModelSpec(recorder, "j", "openai_endpoint")
        live = run_verification(store, bench, judges=[spec], answerers=[answerer], sandbox=sandbox)
    assert len(path.read_text().splitlines()) == len(judge.requests) == 10
    replay = ReplayProvider(path, interface="openai_endpoint")
    replayed = run_verification(
        store, bench, judges=[ModelSpec(replay, "j", "openai_endpoint")], answerers=[answerer], sandbox=sandbox
    )
    rows = []
    for run in (live, replayed):
        buf = io.StringIO()
        store.export_results(run.run_id, buf)
        (row,) = json.loads(buf.getvalue())["results"]
        rows.append(row)
    a, b = rows
    assert a["template"]["parsed_llm_response"] == {"capital": "Zanzibar-City-77"} and a["template"]["verify_result"]
    for f in ("parsed_llm_response", "verify_result"):
        assert a["template"][f] == b["template"][f], f
    assert _usage(a) == _usage(b) == {"parsing": (10, 6, 16)}


def test_without_a_portal_karenina_parses_again() -> None:
    """Pinned, the reason the comparisons above run Karenina in a portal (docs/verification.md):
    its task function called directly, with no BlockingPortal, runs the whole parse four times
    when every reply is unusable, and a reply that comes after the first round is then taken;
    in a portal, as its batch executor runs tasks, it is not."""
    cases = json.dumps([_karenina_case(ANSWER, {}, {"parsing": r}) for r in ([*EIGHT, BAD, PARSED], BAD)])
    direct, direct_bad = karenina(KARENINA_UNPORTALED, cases, timeout=600)
    portal, portal_bad = karenina(KARENINA_LOGGED, cases, timeout=600)
    assert portal["_calls"] == portal_bad["_calls"] == "SISISISIP"
    assert portal["template"]["parsed_llm_response"] is None
    assert direct["_calls"] == "SISISISIP" + "S" and direct["template"]["parsed_llm_response"] == json.loads(PARSED)
    assert direct_bad["_calls"] == "SISISISIP" * 4  # three more rounds: its connection retry budget
