"""Karenina's batch scheduling settings in the runner: ``task_ordering`` (compared with Karenina's
own ``_resolve_task_ordering`` / ``_apply_task_ordering`` over the same tasks, and checked to be the
order a run starts them in), ``answerer_concurrency_limits`` and ``max_concurrent_requests`` (fake
models that record how many calls are in flight; no timed assertion: a cap is a bound that holds
whatever the timing), ``batch_timeout_seconds`` (a model that holds its answer past the ceiling),
and the mapping from Karenina's config and the command line."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from karenina_rdf import Benchmark, Store
from karenina_rdf._errors import InvalidValueError, VerificationError
from karenina_rdf.runner import (
    ChatRequest,
    FunctionProvider,
    ModelSpec,
    RunOptions,
    Sandbox,
    Scheduling,
    run_verification,
)
from karenina_rdf.runner._schedule import order_tasks
from karenina_rdf.runner._tasks import QuestionInput, Task
from tests.helpers.karenina_ref import karenina

pytestmark = pytest.mark.slow  # Karenina in its own environment; templates in sandbox workers

TEMPLATE = """class Answer(BaseAnswer):
    city: str = Field(description="The city")

    def ground_truth(self):
        self.correct = {"city": "Paris"}

    def verify(self) -> bool:
        return self.city == "Paris"
"""

KARENINA_ORDER = r"""
import json, sys
from karenina.schemas.config import ModelConfig
from karenina.schemas.verification.config import VerificationConfig
from karenina.benchmark.verification.batch_runner import _apply_task_ordering, _resolve_task_ordering
case = json.loads(sys.argv[1])
def m(mid):
    return ModelConfig(id=mid, model_name=f"model-{mid}", interface="openai_endpoint",
                       endpoint_base_url="http://127.0.0.1:9/v1", endpoint_api_key="k")
answerers, judges = [m(a) for a in case["answerers"]], [m(j) for j in case["judges"]]
config = VerificationConfig(answering_models=answerers, parsing_models=judges, task_ordering=case["ordering"],
                            replicate_count=case["replicates"])
tasks = []
for q in case["questions"]:
    for a in answerers:
        for j in judges:
            for rep in range(1, case["replicates"] + 1):
                tasks.append({"question_id": q, "answering_model": a, "parsing_model": j,
                              "replicate": None if case["replicates"] == 1 else rep})
strategy = _resolve_task_ordering(config)
out = _apply_task_ordering(tasks, strategy)
print(json.dumps({"strategy": strategy,
                  "order": [[t["question_id"], t["answering_model"].id, t["parsing_model"].id, t["replicate"]]
                            for t in out]}))
"""

# (id, ordering, answerer ids, judge ids, question ids in generation order, replicates)
ORDER_CASES: list[tuple[str, str, list[str], list[str], list[str], int]] = [
    ("auto, two answerers", "auto", ["zeta", "alpha"], ["j-b", "j-a"], ["q-b", "q-a"], 2),
    ("auto, one answerer", "auto", ["zeta"], ["j-b", "j-a"], ["q-b", "q-a", "q-c"], 2),
    ("prefix_cache", "prefix_cache", ["zeta", "alpha"], ["j-b", "j-a"], ["q-b", "q-a"], 1),
    ("distribute_answerers", "distribute_answerers", ["zeta", "alpha", "mid"], ["j-b"], ["q-b", "q-a", "q-c"], 1),
    ("generation_order", "generation_order", ["zeta", "alpha"], ["j-b", "j-a"], ["q-b", "q-a"], 2),
]


def _spec(mid: str, fn: Any = None) -> ModelSpec:
    provider = FunctionProvider(fn or (lambda r: "Paris"), interface="openai_endpoint")
    return ModelSpec(provider, f"model-{mid}", "openai_endpoint", config_id=mid)


def _tasks(answerers: list[str], judges: list[str], questions: list[str], replicates: int) -> list[Task]:
    out = []
    for q in questions:
        qi = QuestionInput(q, f"text {q}", "Paris", None, TEMPLATE, "t", ())
        for a in answerers:
            spec = _spec(a)
            for j in judges:
                for rep in range(1, replicates + 1):
                    r = None if replicates == 1 else rep
                    out.append(Task(qi, spec, spec.identity, _spec(j), r, "template_only"))
    return out


@pytest.mark.parametrize(
    ("case", "ordering", "answerers", "judges", "questions", "replicates"), ORDER_CASES, ids=[c[0] for c in ORDER_CASES]
)
def test_task_ordering_is_karenina_s(
    case: str, ordering: str, answerers: list[str], judges: list[str], questions: list[str], replicates: int
) -> None:
    theirs = karenina(
        KARENINA_ORDER,
        json.dumps(
            {
                "ordering": ordering,
                "answerers": answerers,
                "judges": judges,
                "questions": questions,
                "replicates": replicates,
            }
        ),
    )
    ours = order_tasks(_tasks(answerers, judges, questions, replicates), ordering)  # type: ignore[arg-type]
    got = [[t.question.question_id, t.answerer.config_id, t.judge.config_id, t.replicate] for t in ours if t.answerer]
    assert got == theirs["order"]


def test_random_ordering_is_a_permutation() -> None:
    import random

    tasks = _tasks(["a", "b"], ["j"], ["q1", "q2", "q3"], 2)
    shuffled = order_tasks(tasks, "random", random.Random(7))
    assert sorted(map(id, shuffled)) == sorted(map(id, tasks)) and shuffled != tasks


def _bench(store: Store, n: int) -> str:
    b = Benchmark.create("sched", store=store)
    for i in range(n):
        b.add_question(f"Capital number {i}?", "Paris", TEMPLATE, question_id=f"q{i}", finished=True)
    return b.id


class InFlight:
    """Counts calls in flight per key and the most seen at once. Each call waits (briefly) for a
    partner call of its key to arrive, so calls overlap whenever the runner lets them."""

    def __init__(self, partner_wait: float = 0.3) -> None:
        self.cond = threading.Condition()
        self.now: dict[str, int] = {}
        self.most: dict[str, int] = {}
        self.order: list[str] = []
        self.partner_wait = partner_wait

    def call(self, key: str, reply: str) -> str:
        with self.cond:
            self.now[key] = self.now.get(key, 0) + 1
            self.most[key] = max(self.most.get(key, 0), self.now[key])
            self.order.append(key)
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.now[key] > 1, timeout=self.partner_wait)
            self.now[key] -= 1
        return reply


def test_the_run_starts_tasks_in_karenina_s_order(sandbox: Sandbox) -> None:
    store = Store.memory()
    bench = _bench(store, 2)
    seen: list[tuple[str, str]] = []

    def answerer(mid: str) -> ModelSpec:
        def fn(r: ChatRequest) -> str:
            seen.append((r.label, mid))
            return "Paris"

        return _spec(mid, fn)

    judge = _spec("j", lambda r: json.dumps({"city": "Paris"}))
    opts = RunOptions(concurrency=1, scheduling=Scheduling(task_ordering="auto"))
    run_verification(store, bench, judges=[judge], answerers=[answerer("zeta"), answerer("alpha")],
                     sandbox=sandbox, options=opts)  # fmt: skip
    # Two answerers: distribute_answerers, round robin in first-appearance order.
    assert seen == [("q0", "zeta"), ("q0", "alpha"), ("q1", "zeta"), ("q1", "alpha")]


def test_answerer_concurrency_limits_cap_each_answerer(sandbox: Sandbox) -> None:
    store = Store.memory()
    bench = _bench(store, 4)
    flight = InFlight()
    capped = _spec("capped", lambda r: flight.call("capped", "Paris"))
    free_waits = InFlight(partner_wait=5.0)  # the uncapped answerer waits for a partner: it gets one
    free = _spec("free", lambda r: free_waits.call("free", "Paris"))
    judge = _spec("j", lambda r: json.dumps({"city": "Paris"}))
    opts = RunOptions(concurrency=4, scheduling=Scheduling(answerer_concurrency_limits={"capped": 1}))
    report = run_verification(store, bench, judges=[judge], answerers=[capped, free], sandbox=sandbox, options=opts)
    assert report.completed == 8
    assert flight.most["capped"] == 1
    assert free_waits.most["free"] >= 2


def test_an_int_cap_applies_to_every_answerer(sandbox: Sandbox) -> None:
    store = Store.memory()
    bench = _bench(store, 3)
    flight = InFlight()
    answerers = [_spec(m, lambda r, m=m: flight.call(m, "Paris")) for m in ("a", "b")]
    judge = _spec("j", lambda r: json.dumps({"city": "Paris"}))
    opts = RunOptions(concurrency=4, scheduling=Scheduling(answerer_concurrency_limits=1))
    run_verification(store, bench, judges=[judge], answerers=answerers, sandbox=sandbox, options=opts)
    assert flight.most == {"a": 1, "b": 1}


def test_max_concurrent_requests_bounds_every_model_call(sandbox: Sandbox) -> None:
    store = Store.memory()
    bench = _bench(store, 3)
    flight = InFlight()
    answerer = _spec("a", lambda r: flight.call("all", "Paris"))
    judge = _spec("j", lambda r: flight.call("all", json.dumps({"city": "Paris"})))
    opts = RunOptions(concurrency=4, scheduling=Scheduling(max_concurrent_requests=1))
    report = run_verification(store, bench, judges=[judge], answerers=[answerer], sandbox=sandbox, options=opts)
    assert report.completed == 3 and len(flight.order) == 6
    assert flight.most["all"] == 1


def test_a_batch_past_its_timeout_stops_starting_tasks(sandbox: Sandbox) -> None:
    """The first answer is held well past the ceiling: no other task starts, the one in flight
    is stored, the run raises Karenina's message and is left to resume."""
    store = Store.memory()
    bench = _bench(store, 3)
    release = threading.Event()

    def fn(r: ChatRequest) -> str:
        release.wait(2.0)  # held past the 0.05 s ceiling (the test never sets it)
        return "Paris"

    judge = _spec("j", lambda r: json.dumps({"city": "Paris"}))
    opts = RunOptions(concurrency=1, run_id="timed", scheduling=Scheduling(batch_timeout_seconds=0.05))
    with pytest.raises(VerificationError, match=r"Parallel batch timed out after 0 seconds \(1 of 3 tasks completed\)"):
        run_verification(store, bench, judges=[judge], answerers=[_spec("a", fn)], sandbox=sandbox, options=opts)
    (run,) = store.runs()
    assert run.results == 1  # the task in flight, stored; the others never started
    again = run_verification(store, bench, judges=[judge], answerers=[_spec("a")], sandbox=sandbox, resume="timed")
    assert (again.status, again.skipped, again.completed) == ("completed", 1, 2)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"task_ordering": "sideways"}, "task_ordering"),
        ({"max_concurrent_requests": 0}, "max_concurrent_requests"),
        ({"batch_timeout_seconds": 0}, "batch_timeout_seconds"),
        ({"answerer_concurrency_limits": "two"}, "answerer_concurrency_limits"),
    ],
)
def test_bad_scheduling_settings_are_named(settings: dict[str, Any], message: str) -> None:
    with Store.memory() as store:
        b = Benchmark.create("bad", store=store)
        b.add_question("Capital?", "Paris", TEMPLATE, question_id="q", finished=True)
        model = {"model_name": "m", "interface": "openai_endpoint", "endpoint_base_url": "http://127.0.0.1:9/v1"}
        with pytest.raises(InvalidValueError, match=message):
            b.run_verification({"answering_models": [model], "parsing_models": [model], **settings})
