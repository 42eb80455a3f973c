"""The verification pipeline from Python, on a real store and the real sandbox, with fake models
behind the provider interface: what is stored, what the judge sees, failures as data, modes,
replicates and answer sharing, resume, live visibility, rescoring, recorded answers and
generated templates."""

from __future__ import annotations

import io
import json
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

from karenina_rdf import Benchmark, RubricTrait, Store
from karenina_rdf._errors import ProviderError, VerificationError
from karenina_rdf.runner import (
    ChatRequest,
    ChatResponse,
    FunctionProvider,
    ModelSpec,
    RunOptions,
    Sandbox,
    Scheduling,
    generate_templates,
    rescore,
    run_verification,
)

# slow: every test runs verification with template code in sandbox worker processes
pytestmark = pytest.mark.slow

CAPITAL = """class Answer(BaseAnswer):
    capital: str = Field(description="The capital city named in the response")

    def ground_truth(self):
        self.correct = {"capital": "Zanzibar-City-77"}

    def verify(self) -> bool:
        return self.capital.strip().lower() == self.correct["capital"].lower()
"""
LEGS = """class Answer(BaseAnswer):
    legs: int = Field(description="The number of legs the response gives")

    def model_post_init(self, __context):
        self.correct = {"legs": 8}

    def verify(self) -> bool:
        return self.legs == self.correct["legs"]
"""
RUNNER_QUERIES = {"run-cost"}  # named queries tested here (test_queries checks every query has a test)
REFERENCE = "The capital is Zanzibar-City-77, on the coast (reference answer text)."


class Fake:
    """A fake model: ``fn(request) -> str``, every request kept."""

    def __init__(self, name: str, fn: Callable[[ChatRequest], str]) -> None:
        self.requests: list[ChatRequest] = []
        self.lock = threading.Lock()

        def record(request: ChatRequest) -> str:
            with self.lock:
                self.requests.append(request)
            return fn(request)

        self.spec = ModelSpec(
            FunctionProvider(record, interface="claude_tool"), name, "claude_tool", spec=f"anthropic:{name}"
        )

    def stage(self, stage: str) -> list[ChatRequest]:
        return [r for r in self.requests if r.stage == stage]


def answers_right(request: ChatRequest) -> str:
    q = request.messages[-1].content
    if "capital" in q:
        return "It is Zanzibar-City-77."
    if "legs" in q:
        return "A spider has 8 legs."
    return "No idea."


_SCHEMAS: dict[str, dict[str, Any]] = {}  # the parse schema per question, from its structured call


def extracting_judge(request: ChatRequest) -> str:
    """Fills the schema from the response: strings get the word after 'is', integers the first number.
    Its fenced reply is refused by the structured call (which carries the schema), so the
    instructions call, any retry and the parser's plain call follow: the schema is the one the
    question's structured call carried, the response the one under its heading."""
    if request.stage != "parsing":
        return json.dumps({"scores": {}})
    if request.json_schema is not None:
        _SCHEMAS[request.label] = request.json_schema
    user = next(m.content for m in request.messages if "## Response to parse\n" in m.content)
    response = user.split("## Response to parse\n", 1)[1].split("\n\nReply with valid JSON", 1)[0]
    out: dict[str, Any] = {}
    for name, prop in _SCHEMAS[request.label].get("properties", {}).items():
        if prop.get("type") == "integer":
            m = re.search(r"\d+", response)
            out[name] = int(m.group()) if m else None
        elif prop.get("type") == "string":
            m = re.search(r"is ([\w-]+)", response)
            out[name] = m.group(1) if m else ""
    return "```json\n" + json.dumps(out) + "\n```"


def make_bench(store: Store, *, rubric: bool = False, extra: list[tuple[str, str, str | None]] = ()) -> str:
    b = Benchmark.create("runner test", store=store)
    b.add_question("What is the capital of Atlantis?", REFERENCE, CAPITAL, question_id="q-capital", finished=True)
    b.add_question("How many legs does a spider have?", "Eight legs.", LEGS, question_id="q-legs", finished=True)
    for qid, text, code in extra:
        b.add_question(text, "ref", code, question_id=qid, finished=True)
    if rubric:
        b.add_global_rubric_trait(RubricTrait.regex("mentions_number", r"\d"))
    return b.id


def export(store: Store, run: str) -> dict[str, Any]:
    buf = io.StringIO()
    store.export_results(run, buf)
    return json.loads(buf.getvalue())


def rows_by(store: Store, run: str) -> dict[str, dict[str, Any]]:
    return {r["metadata"]["question_id"]: r for r in export(store, run)["results"]}


def test_template_only_run_stores_graded_results(sandbox: Sandbox) -> None:
    store = Store.memory()
    bench = make_bench(store)
    a, j = Fake("fake-a", answers_right), Fake("fake-j", extracting_judge)
    report = run_verification(store, bench, judges=[j.spec], answerers=[a.spec], sandbox=sandbox)
    assert (report.status, report.tasks, report.completed, report.passed, report.failed) == ("completed", 2, 2, 2, 0)
    data = export(store, report.run_id)
    assert data["format_version"] == "2.2" and data["metadata"]["job_summary"]["is_complete"] is True
    rows = {r["metadata"]["question_id"]: r for r in data["results"]}
    cap = rows["q-capital"]
    assert cap["template"]["verify_result"] is True
    assert cap["template"]["parsed_gt_response"] == {"capital": "Zanzibar-City-77"}
    assert cap["template"]["parsed_llm_response"] == {"capital": "Zanzibar-City-77."[:-1]}
    assert cap["metadata"]["answering"] == {
        "interface": "claude_tool",
        "model_name": "fake-a",
        "tools": [],
        "config_id": None,
    }
    assert cap["metadata"]["replicate"] is None and cap["metadata"]["evaluation_mode"] == "template_only"
    assert set(cap["template"]["usage_metadata"]) == {"answer_generation", "parsing", "total"}
    assert cap["rubric"] is None
    summary = store.runs()[0]
    assert (summary.results, summary.passed, summary.pass_rate) == (2, 2, 1.0)


def test_judge_never_sees_reference_answer_or_ground_truth(sandbox: Sandbox) -> None:
    store = Store.memory()
    bench = make_bench(store)
    wrong = Fake("fake-a", lambda r: "It is Paris, I believe.")
    j = Fake("fake-j", extracting_judge)
    report = run_verification(store, bench, judges=[j.spec], answerers=[wrong.spec], sandbox=sandbox)
    assert report.failed == 2 and report.failures == {"content": 1, "parsing": 1}  # no number: legs is null
    judge_text = json.dumps([r.model_dump() for r in j.requests])
    assert j.requests and REFERENCE not in judge_text and "Eight legs." not in judge_text
    assert "Zanzibar-City-77" not in judge_text  # the template's ground truth
    assert '"correct"' not in judge_text and "verify" not in judge_text
    answer_text = json.dumps([r.model_dump() for r in wrong.requests])
    assert REFERENCE not in answer_text and "Zanzibar-City-77" not in answer_text


@pytest.mark.parametrize(
    ("mode", "template_ran", "rubric_ran"),
    [("template_only", True, False), ("template_and_rubric", True, True), ("rubric_only", False, True)],
)
def test_modes(sandbox: Sandbox, mode: Any, template_ran: bool, rubric_ran: bool) -> None:
    store = Store.memory()
    bench = make_bench(store, rubric=True)
    a, j = Fake("fake-a", answers_right), Fake("fake-j", extracting_judge)
    report = run_verification(
        store, bench, judges=[j.spec], answerers=[a.spec], sandbox=sandbox, options=RunOptions(mode=mode)
    )
    legs = rows_by(store, report.run_id)["q-legs"]
    assert legs["metadata"]["evaluation_mode"] == mode
    assert legs["template"]["template_verification_performed"] is template_ran
    assert legs["template"]["verify_result"] is (True if template_ran else None)
    assert (legs["rubric"] is not None) is rubric_ran
    if rubric_ran:
        assert legs["rubric"]["regex_trait_scores"] == {"mentions_number": True}
        assert legs["rubric"]["trait_provenance"] == {"mentions_number": "global"}
    assert bool(j.stage("parsing")) is template_ran


def test_question_without_template_runs_rubric_only_and_says_so(sandbox: Sandbox) -> None:
    store = Store.memory()
    bench = make_bench(store, rubric=True, extra=[("q-free", "Describe a spider.", None)])
    a, j = Fake("fake-a", answers_right), Fake("fake-j", extracting_judge)
    opts = RunOptions(mode="template_and_rubric")
    report = run_verification(store, bench, judges=[j.spec], answerers=[a.spec], sandbox=sandbox, options=opts)
    assert any("without a template run rubric_only: q-free" in n for n in report.notes)
    free = rows_by(store, report.run_id)["q-free"]
    assert free["metadata"]["evaluation_mode"] == "rubric_only" and free["rubric"] is not None
    # template_only: no rubric traits are evaluated, so the question cannot run at all
    report = run_verification(store, bench, judges=[j.spec], answerers=[a.spec], sandbox=sandbox)
    assert report.tasks == 2 and any("left out (no template and no rubric traits): q-free" in n for n in report.notes)


def _raise(exc: Exception) -> Callable[[ChatRequest], str]:
    def fn(request: ChatRequest) -> str:
        raise exc

    return fn


def _judge_or(fn: Callable[[ChatRequest], str]) -> Callable[[ChatRequest], str]:
    return fn


LOOP = LEGS.replace('return self.legs == self.correct["legs"]', "while True:\n            pass")
RAISES = LEGS.replace('return self.legs == self.correct["legs"]', "raise RuntimeError('boom in verify')")
FAILURES = [
    # (name, answerer, judge, legs template, expected (category, stage, group), reason part)
    (
        "judge reply without JSON",
        answers_right,
        lambda r: "I cannot do that",
        LEGS,
        ("parsing", "parse_template", "system"),
        "no JSON object",
    ),
    (
        "judge rate limited to exhaustion",
        answers_right,
        _raise(ProviderError("429 too many", category="rate_limit", retryable=True, exhausted=True)),
        LEGS,
        ("rate_limit", "parse_template", "retry"),
        "429",
    ),
    (
        "answerer timed out to exhaustion",
        _raise(ProviderError("read timeout", category="timeout", retryable=True, exhausted=True)),
        extracting_judge,
        LEGS,
        ("timeout", "generate_answer", "retry"),
        "read timeout",
    ),
    (
        "answerer refused (not retryable)",
        _raise(ProviderError("400 bad request", category="unexpected_error")),
        extracting_judge,
        LEGS,
        ("unexpected_error", "generate_answer", "system"),
        "400",
    ),
    (
        "template does not compile",
        answers_right,
        extracting_judge,
        "class Answer(BaseAnswer:\n",
        ("template_validation", "validate_template", "system"),
        "template validation failed",
    ),
    (
        "template loops forever",
        answers_right,
        extracting_judge,
        LOOP,
        ("unexpected_error", "verify_template", "system"),
        "sandbox (",
    ),
    (
        "verify raises",
        answers_right,
        extracting_judge,
        RAISES,
        ("content", "verify_template", "content"),
        "verify() returned False",
    ),
    (
        "judge output of wrong type",
        answers_right,
        lambda r: '{"legs": "many"}',
        LEGS,
        ("parsing", "parse_template", "system"),
        "",
    ),
]


@pytest.mark.parametrize(
    ("name", "answerer", "judge", "legs", "expected", "reason"), FAILURES, ids=[f[0] for f in FAILURES]
)
def test_failures_are_results(
    sandbox: Sandbox, name: str, answerer: Any, judge: Any, legs: str, expected: tuple[str, str, str], reason: str
) -> None:
    store = Store.memory()
    b = Benchmark.create("failures", store=store)
    b.add_question("How many legs does a spider have?", "Eight legs.", LEGS, question_id="q-legs", finished=True)
    if legs != LEGS:  # written into the graph as given: the AST check of add_answer_template would refuse some
        store.oxigraph.update(
            f"""DELETE {{ GRAPH ?g {{ ?t <https://schema.org/text> ?old }} }}
            INSERT {{ GRAPH ?g {{ ?t <https://schema.org/text> {json.dumps(legs)} }} }}
            WHERE {{ GRAPH ?g {{ ?t a <https://schema.org/SoftwareSourceCode> ; <https://schema.org/text> ?old }} }}"""
        )
    a, j = Fake("fake-a", answerer), Fake("fake-j", judge)
    report = run_verification(store, b.id, judges=[j.spec], answerers=[a.spec], sandbox=sandbox)
    assert report.status == "completed" and report.completed == 1  # a result per task, always
    row = export(store, report.run_id)["results"][0]
    failure = row["metadata"]["failure"]
    assert (failure["category"], failure["stage"], failure["group"]) == expected
    assert reason in failure["reason"]
    if expected[0] != "content":
        assert row["template"]["verify_result"] is None  # a failure is never a verdict or a score
    if name == "verify raises":
        assert "boom in verify" in row["template"]["field_verification_error"]


def test_replicates_share_answers_across_judges(sandbox: Sandbox) -> None:
    store = Store.memory()
    bench = make_bench(store)
    a = Fake("fake-a", answers_right)
    j1, j2 = Fake("judge-1", extracting_judge), Fake("judge-2", extracting_judge)
    opts = RunOptions(replicates=3, concurrency=4)
    report = run_verification(
        store, bench, judges=[j1.spec, j2.spec], answerers=[a.spec], sandbox=sandbox, options=opts
    )
    assert report.tasks == 2 * 2 * 3 and report.completed == 12
    assert len(a.stage("answer_generation")) == 2 * 3  # once per (question, answerer, replicate)
    assert sorted({r.replicate for r in a.requests}) == [1, 2, 3]
    reps = sorted(
        (r["metadata"]["question_id"], r["metadata"]["parsing"]["model_name"], r["metadata"]["replicate"])
        for r in export(store, report.run_id)["results"]
    )
    assert len(set(reps)) == 12 and {r[2] for r in reps} == {1, 2, 3}


def test_interrupted_run_resumes_without_repeating(sandbox: Sandbox) -> None:
    store = Store.memory()
    bench = make_bench(store, extra=[(f"q-{i}", f"How many legs does creature {i} have?", LEGS) for i in range(6)])
    stop = threading.Event()
    calls: list[str] = []

    def judge(request: ChatRequest) -> str:
        calls.append(request.label)
        if len(calls) == 3:
            stop.set()  # as Ctrl-C does: no new task starts, what is complete is stored
        return extracting_judge(request)

    a, j = Fake("fake-a", answers_right), Fake("fake-j", judge)
    opts = RunOptions(concurrency=1, run_id="resumable")
    first = run_verification(
        store, bench, judges=[j.spec], answerers=[a.spec], sandbox=sandbox, options=opts, stop=stop
    )
    # The task whose parse set the stop was in flight: it finishes and is stored.
    assert first.status == "interrupted" and first.completed == 3 < first.tasks
    stored = {r["metadata"]["question_id"] for r in export(store, "resumable")["results"]}
    assert len(stored) == first.completed
    assert export(store, "resumable")["metadata"]["job_summary"]["is_complete"] is False
    a2, j2 = Fake("fake-a", answers_right), Fake("fake-j", extracting_judge)
    second = run_verification(
        store,
        bench,
        judges=[j2.spec],
        answerers=[a2.spec],
        sandbox=sandbox,
        options=opts.model_copy(update={"run_id": None}),
        resume="resumable",
    )
    assert second.status == "completed" and second.skipped == first.completed
    assert second.completed == first.tasks - first.completed
    assert not stored & {r.label for r in a2.requests}  # stored tasks were not answered again
    rows = export(store, "resumable")
    assert len(rows["results"]) == first.tasks and rows["metadata"]["job_summary"]["is_complete"] is True
    assert len({r["metadata"]["question_id"] for r in rows["results"]}) == first.tasks
    assert store.runs()[0].results == first.tasks  # tallies counted once
    again = run_verification(store, bench, judges=[j2.spec], answerers=[a2.spec], sandbox=sandbox, resume="resumable")
    assert (again.skipped, again.completed) == (first.tasks, 0)
    with pytest.raises(VerificationError, match="other settings"):
        run_verification(
            store,
            bench,
            judges=[j2.spec],
            answerers=[a2.spec],
            sandbox=sandbox,
            options=RunOptions(replicates=2),
            resume="resumable",
        )
    with pytest.raises(VerificationError, match="already stored"):
        run_verification(
            store, bench, judges=[j2.spec], answerers=[a2.spec], sandbox=sandbox, options=RunOptions(run_id="resumable")
        )


def test_results_are_visible_while_the_run_goes(sandbox: Sandbox) -> None:
    from fastapi.testclient import TestClient

    from karenina_rdf import create_app

    store = Store.memory()
    bench = make_bench(store, extra=[(f"q-{i}", f"How many legs does creature {i} have?", LEGS) for i in range(3)])
    first_done, release = threading.Event(), threading.Event()

    def judge(request: ChatRequest) -> str:
        if request.label != "q-capital" and first_done.is_set():
            release.wait(10)
        if request.label == "q-capital":
            first_done.set()
        return extracting_judge(request)

    a, j = Fake("fake-a", answers_right), Fake("fake-j", judge)
    # q-capital first: generation order (Karenina's default, auto, would sort it after q-0..q-2).
    opts = RunOptions(concurrency=1, run_id="live", scheduling=Scheduling(task_ordering="generation_order"))
    worker = threading.Thread(
        target=run_verification,
        args=(store, bench),
        kwargs={"judges": [j.spec], "answerers": [a.spec], "sandbox": sandbox, "options": opts},
    )
    worker.start()
    try:
        count = "SELECT (COUNT(?r) AS ?n) WHERE { ?r a <urn:karenina:vocab:VerificationResult> }"
        n = 0
        for _ in range(200):
            n = int(next(iter(store.query(count)))[0].value) if store.runs() else 0
            if n:
                break
            threading.Event().wait(0.05)
        assert n == 1  # stored before the run ends
        client = TestClient(create_app(store))
        page = client.get("/runs")
        assert page.status_code == 200 and "live" in page.text
        run_page = client.get("/runs/live")
        assert run_page.status_code == 200 and 'data-status="running"' in run_page.text
        assert export(store, "live")["metadata"]["job_summary"]["is_complete"] is False
    finally:
        release.set()
        worker.join(30)
    assert store.runs()[0].results == 5


def test_rescore_grades_stored_answers_with_a_new_judge(sandbox: Sandbox) -> None:
    store = Store.memory()
    bench = make_bench(store, rubric=True)
    a, j = Fake("fake-a", answers_right), Fake("fake-j", lambda r: '{"capital": "wrong", "legs": 3}')
    first = run_verification(
        store, bench, judges=[j.spec], answerers=[a.spec], sandbox=sandbox, options=RunOptions(run_id="orig")
    )
    assert first.passed == 0
    j2 = Fake("fake-j2", extracting_judge)
    second = rescore(store, "orig", judges=[j2.spec], sandbox=sandbox, options=RunOptions(run_id="again"))
    assert (second.completed, second.passed) == (2, 2)
    assert {r["metadata"]["parsing"]["model_name"] for r in export(store, "again")["results"]} == {"fake-j2"}
    assert {r["template"]["raw_llm_response"] for r in export(store, "again")["results"]} == {
        "It is Zanzibar-City-77.",
        "A spider has 8 legs.",
    }
    informed = store.query("SELECT ?o WHERE { ?s <http://www.w3.org/ns/prov#wasInformedBy> ?o }")
    assert [t[0].value for t in informed] == [first.iri]
    third = rescore(
        store, "orig", judges=[j2.spec], sandbox=sandbox, options=RunOptions(run_id="rubric", mode="rubric_only")
    )
    rows = export(store, "rubric")["results"]
    assert third.completed == 2 and all(r["metadata"]["evaluation_mode"] == "rubric_only" and r["rubric"] for r in rows)


def test_recorded_answers_are_graded(sandbox: Sandbox, tmp_path: Path) -> None:
    from karenina_rdf.runner._recorded import read_answers

    store = Store.memory()
    bench = make_bench(store)
    f = tmp_path / "answers.jsonl"
    f.write_text(
        json.dumps({"question_id": "q-legs", "response": "It has 8 legs", "answering_model": "manual:human"}) + "\n",
        encoding="utf-8",
    )
    answers, identities, _ = read_answers(f)
    j = Fake("fake-j", extracting_judge)
    report = run_verification(
        store, bench, judges=[j.spec], answers=answers, answer_identities=identities, sandbox=sandbox
    )
    assert (report.tasks, report.passed) == (1, 1)
    assert any("no recorded answer" in n for n in report.notes) is False or report.tasks == 1
    row = export(store, report.run_id)["results"][0]
    assert (
        row["metadata"]["answering"]["interface"] == "manual" and row["metadata"]["answering"]["model_name"] == "human"
    )
    assert "answer_generation" not in (row["template"]["usage_metadata"] or {})


def test_callable_traits_need_trust(sandbox: Sandbox) -> None:
    store = Store.memory()
    bench = make_bench(store)
    trait = RubricTrait.callable("short", cloudpickle.dumps(lambda text: len(text) < 100), kind="boolean")
    Benchmark(store, bench).add_global_rubric_trait(trait)
    a, j = Fake("fake-a", answers_right), Fake("fake-j", extracting_judge)
    for trust, expected in ((False, None), (True, {"short": True})):
        opts = RunOptions(mode="template_and_rubric", trust_callables=trust)
        report = run_verification(store, bench, judges=[j.spec], answerers=[a.spec], sandbox=sandbox, options=opts)
        row = rows_by(store, report.run_id)["q-legs"]
        assert row["rubric"]["callable_trait_scores"] == expected
        if not trust:
            assert any("--trust-callables" in w for w in row["metadata"]["warnings"])


GOOD = CAPITAL.replace("Zanzibar-City-77", "Paris")


@pytest.mark.parametrize(
    ("reply", "stored", "reason"),
    [
        (f"```python\n{GOOD}```", True, None),
        ("```python\nx = 1\n```", False, "invalid template"),
        (f"```python\n{GOOD.replace('Paris', 'Rome')}```", False, "rejects the reference answer"),
    ],
)
def test_templates_generate(sandbox: Sandbox, reply: str, stored: bool, reason: str | None) -> None:
    store = Store.memory()
    b = Benchmark.create("gen", store=store)
    b.add_question("What is the capital of France?", "Paris is the capital of France.", question_id="q1")

    def writer(request: ChatRequest) -> str:
        if request.stage == "template_generation" and request.json_schema is None:
            assert "Paris is the capital of France." in request.messages[-1].content
            return reply
        return '{"capital": "Paris"}'

    model = Fake("writer", writer)
    made = generate_templates(store, b.id, model.spec, sandbox)
    assert [m.stored for m in made] == [stored]
    assert (reason or "") in (made[0].reason or "")
    assert Benchmark(store, b.id).has_template("q1") is stored


def test_cost_per_stage_and_model_is_stored_and_queried(sandbox: Sandbox) -> None:
    from karenina_rdf.runner import Usage
    from karenina_rdf.runner.providers._pricing import cost_usd

    store = Store.memory()
    bench = make_bench(store)
    a = Fake("claude-sonnet-4-5", answers_right)
    j = Fake("unpriced-judge", extracting_judge)
    report = run_verification(store, bench, judges=[j.spec], answerers=[a.spec], sandbox=sandbox, cost=cost_usd)
    assert report.cost_usd is None  # the judge has no price: the total is unknown, not a guess
    expected = 0.0
    for row in export(store, report.run_id)["results"]:
        u = row["template"]["usage_metadata"]["answer_generation"]
        price = cost_usd("claude-sonnet-4-5", Usage(input_tokens=u["input_tokens"], output_tokens=u["output_tokens"]))
        assert price is not None and price > 0
        expected += price
    result = store.query("run-cost", run=report.run_id)
    cols = [v.value for v in result.variables]
    rows = {(r["model"].value, r["stage"].value): {c: r[c].value for c in cols} for r in result}
    answer = rows[("claude-sonnet-4-5", "answer_generation")]
    assert int(answer["results"]) == 2 and int(answer["priced"]) == 2
    assert float(answer["cost_usd"]) == pytest.approx(expected, rel=1e-6)
    parsing = rows[("unpriced-judge", "parsing")]
    assert int(parsing["priced"]) == 0 and int(parsing["results"]) == 2


def test_a_verified_run_meets_the_shapes(sandbox: Sandbox) -> None:
    from karenina_rdf import validate_store

    store = Store.memory()
    bench = make_bench(store, rubric=True)
    a, j = Fake("fake-a", answers_right), Fake("fake-j", extracting_judge)
    opts = RunOptions(mode="template_and_rubric", replicates=2)
    report = run_verification(store, bench, judges=[j.spec], answerers=[a.spec], sandbox=sandbox, options=opts)
    reports = [r for r in validate_store(store) if r.run]
    assert reports, "the run was validated"
    problems = [f for r in reports for f in r.findings if f.severity == "Violation"]
    assert problems == [], problems
    assert report.completed == 4


def test_an_error_while_storing_leaves_the_run_resumable(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    from karenina_rdf.results import _live as _results_live

    store = Store.memory()
    bench = make_bench(store)
    real_add = _results_live.LiveRun.add
    stored = 0

    def failing_add(self: Any, results: list[Any], *args: Any, **kwargs: Any) -> list[int]:
        # The disk fills up at the batch holding the second result, however the results were
        # batched (one batch or two: it depends on when the main thread drains the queue).
        nonlocal stored
        if stored + len(results) >= 2:
            raise OSError("disk full")
        stored += len(results)
        return real_add(self, results, *args, **kwargs)

    monkeypatch.setattr(_results_live.LiveRun, "add", failing_add)
    a, j = Fake("fake-a", answers_right), Fake("fake-j", extracting_judge)
    opts = RunOptions(concurrency=1, run_id="broken")
    with pytest.raises(OSError, match="disk full"):
        run_verification(store, bench, judges=[j.spec], answerers=[a.spec], sandbox=sandbox, options=opts)
    summary = export(store, "broken")["metadata"]["job_summary"]
    assert summary["is_complete"] is False
    monkeypatch.setattr(_results_live.LiveRun, "add", real_add)
    run = store.runs()[0]
    # Resumed by the run's IRI, not only its id.
    again = run_verification(
        store,
        bench,
        judges=[j.spec],
        answerers=[a.spec],
        sandbox=sandbox,
        options=opts.model_copy(update={"run_id": None}),
        resume=run.iri,
    )
    assert again.status == "completed" and again.run_id == "broken"
    assert again.skipped + again.completed == again.tasks == 2


def test_resumed_judges_grade_the_stored_answer(sandbox: Sandbox) -> None:
    store = Store.memory()
    bench = make_bench(store)
    stop = threading.Event()

    def first_judge(request: ChatRequest) -> str:
        stop.set()  # after this task: the other judge's task of the same answer is left
        return extracting_judge(request)

    a = Fake("fake-a", lambda r: f"It is Zanzibar-City-77, said at {time.monotonic_ns()}.")
    j1, j2 = Fake("judge-1", first_judge), Fake("judge-2", extracting_judge)
    opts = RunOptions(concurrency=1, run_id="shared", questions=("q-capital",))
    first = run_verification(
        store, bench, judges=[j1.spec, j2.spec], answerers=[a.spec], sandbox=sandbox, options=opts, stop=stop
    )
    assert first.status == "interrupted" and first.completed == 1
    answered = len(a.requests)
    second = run_verification(
        store, bench, judges=[j1.spec, j2.spec], answerers=[a.spec], sandbox=sandbox,
        options=opts.model_copy(update={"run_id": None}), resume="shared",
    )  # fmt: skip
    assert second.completed == 1 and len(a.requests) == answered  # no new answer was asked for
    responses = {r["template"]["raw_llm_response"] for r in export(store, "shared")["results"]}
    assert len(responses) == 1


def test_a_shared_answer_counts_its_retries_once(sandbox: Sandbox) -> None:
    class Retried:
        interface = "claude_tool"

        def complete(self, request: ChatRequest) -> ChatResponse:
            return ChatResponse(text=answers_right(request), model="fake-a", attempts=3, retries={"rate_limit": 2})

    store = Store.memory()
    bench = make_bench(store)
    a = ModelSpec(Retried(), "fake-a", "claude_tool", spec="anthropic:fake-a")
    j1, j2 = Fake("judge-1", extracting_judge), Fake("judge-2", extracting_judge)
    opts = RunOptions(concurrency=1, run_id="retried", questions=("q-capital",))
    run_verification(store, bench, judges=[j1.spec, j2.spec], answerers=[a], sandbox=sandbox, options=opts)
    rows = export(store, "retried")["results"]
    counts = sorted((r["metadata"]["retry_counts"] or {}).get("rate_limit", {}).get("used", 0) for r in rows)
    assert counts == [0, 2]
    assert sorted(r["metadata"]["caveats"] for r in rows) == [[], ["retries_used"]]
