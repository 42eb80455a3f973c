"""Claims of docs/verification.md's stage-and-switch table that no other test held to: the
number of tasks in flight (``async_max_workers`` / ``--concurrency``, ``async_enabled``), an
answering model without an id capped by its model name, and ``PromptConfig.agentic_parsing``
accepted and sent with no call.

Karenina's values are read from its own source: ``VerificationConfig`` defaults to
``async_max_workers`` 2 (config.py ``DEFAULT_ASYNC_MAX_WORKERS``), and its batch runner runs
that many tasks at once (batch_runner.py ``run_verification_batch``: ``max_workers`` from the
config).
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from karenina_rdf import Benchmark, RubricTrait, Store
from karenina_rdf.runner import (
    ChatRequest,
    FunctionProvider,
    ModelSpec,
    PromptConfig,
    RunOptions,
    Sandbox,
    Scheduling,
    run_verification,
)
from karenina_rdf.runner._members import verification_plan
from tests.runner.test_scheduling import InFlight, _bench

pytestmark = pytest.mark.slow  # templates run in sandbox workers


def _spec(name: str, fn: Any) -> ModelSpec:
    return ModelSpec(FunctionProvider(fn, interface="openai_endpoint"), name, "openai_endpoint")


# (concurrency, how long a call waits for a partner call to overlap with)
CONCURRENCY = [(1, 0.1), (2, 5.0), (3, 5.0)]


@pytest.mark.parametrize(("concurrency", "wait"), CONCURRENCY, ids=[f"concurrency {c}" for c, _ in CONCURRENCY])
def test_concurrency_bounds_the_tasks_in_flight(sandbox: Sandbox, concurrency: int, wait: float) -> None:
    """Each answer waits for a partner answer: with one task at a time none comes (the wait runs
    out), with more they overlap, never beyond the bound."""
    store = Store.memory()
    bench = _bench(store, 4)
    flight = InFlight(partner_wait=wait)
    answerer = _spec("a", lambda r: flight.call("answers", "Paris"))
    judge = _spec("j", lambda r: json.dumps({"city": "Paris"}))
    report = run_verification(
        store, bench, judges=[judge], answerers=[answerer], sandbox=sandbox, options=RunOptions(concurrency=concurrency)
    )
    assert report.completed == 4
    assert flight.most["answers"] <= concurrency
    assert (flight.most["answers"] >= 2) is (concurrency > 1)


MODEL = {"model_name": "m", "interface": "openai_endpoint", "endpoint_base_url": "http://127.0.0.1:9/v1"}
# (VerificationConfig fields, run_verification's async_enabled, the tasks in flight)
WORKERS: list[tuple[dict[str, Any], bool | None, int]] = [
    ({}, None, 2),  # Karenina's default async_max_workers
    ({"async_max_workers": 5}, None, 5),
    ({"async_max_workers": 5, "async_enabled": False}, None, 1),
    ({"async_max_workers": 5}, False, 1),
]


@pytest.mark.parametrize(("fields", "enabled", "expected"), WORKERS)
def test_karenina_s_worker_settings_give_the_run_s_concurrency(
    fields: dict[str, Any], enabled: bool | None, expected: int
) -> None:
    with Store.memory() as store:
        plan = verification_plan(store, {"answering_models": [MODEL], "parsing_models": [MODEL], **fields}, enabled)
    assert plan.concurrency == expected


def test_an_answerer_without_an_id_is_capped_by_its_model_name(sandbox: Sandbox) -> None:
    """docs/verification.md, differences: Karenina keys answerer_concurrency_limits by
    ModelConfig.id and never caps a model without one; here its model name stands in."""
    store = Store.memory()
    bench = _bench(store, 3)
    flight = InFlight(partner_wait=1.0)  # uncapped, a partner call would come well within it
    capped = _spec("no-id-model", lambda r: flight.call("capped", "Paris"))
    judge = _spec("j", lambda r: json.dumps({"city": "Paris"}))
    opts = RunOptions(concurrency=3, scheduling=Scheduling(answerer_concurrency_limits={"no-id-model": 1}))
    report = run_verification(store, bench, judges=[judge], answerers=[capped], sandbox=sandbox, options=opts)
    assert report.completed == 3 and flight.most["capped"] == 1


def test_prompt_config_agentic_parsing_is_accepted_and_sent_nowhere(sandbox: Sandbox) -> None:
    store = Store.memory()
    bench = _bench(store, 1)
    seen: list[ChatRequest] = []

    def judge_fn(r: ChatRequest) -> str:
        seen.append(r)
        return json.dumps({"city": "Paris"})

    opts = RunOptions(prompt_config=PromptConfig(agentic_parsing="AGENTIC-NOTE-9", parsing="PARSING-NOTE-3"))
    report = run_verification(
        store, bench, judges=[_spec("j", judge_fn)], answerers=[_spec("a", lambda r: "Paris")], sandbox=sandbox,
        options=opts,
    )  # fmt: skip
    assert report.completed == 1 and seen
    assert all("AGENTIC-NOTE-9" not in m.content for r in seen for m in r.messages)
    assert any("PARSING-NOTE-3" in m.content for r in seen for m in r.messages)  # the config did reach the run


def test_a_rubric_of_agentic_traits_alone_gives_no_rubric_part(sandbox: Sandbox) -> None:
    """Karenina's rubric stage runs only for LLM, regex, callable or metric traits
    (rubric_evaluation.py ``should_run``); agentic traits are not evaluated here (a warning)."""
    store = Store.memory()
    bench = _bench(store, 1)
    agent = RubricTrait(name="agent", trait_type="agentic", kind="boolean", description="Investigates the answer")
    Benchmark(store, bench).set_global_rubric([agent])
    judge = _spec("j", lambda r: json.dumps({"city": "Paris"}))
    opts = RunOptions(mode="template_and_rubric")
    report = run_verification(
        store, bench, judges=[judge], answerers=[_spec("a", lambda r: "Paris")], sandbox=sandbox, options=opts
    )
    buf = io.StringIO()
    store.export_results(report.run_id, buf)
    (row,) = json.loads(buf.getvalue())["results"]
    assert row["rubric"] is None and row["template"]["verify_result"] is True
    assert any(w.startswith("not evaluated: agent: ") for w in row["metadata"]["warnings"])
