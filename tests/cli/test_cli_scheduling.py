"""``karenina-rdf verify`` with Karenina's scheduling settings from the command line:
``--task-ordering``, ``--answerer-concurrency-limit``, ``--max-concurrent-requests`` and
``--batch-timeout`` reach the run (recorded in its configuration, resumed with it); bad values
are one-line errors. What each does is tested in tests/runner/test_scheduling.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from karenina_rdf import Benchmark, Store
from karenina_rdf.cli import app
from karenina_rdf.runner._run import stored_config
from tests.helpers.fake_llm_server import FakeLLM

pytestmark = pytest.mark.slow  # the CLI against a fake LLM server, with sandbox workers

runner = CliRunner()
TEMPLATE = """class Answer(BaseAnswer):
    city: str = Field(description="The city named as the capital")

    def ground_truth(self):
        self.correct = {"city": "Paris"}

    def verify(self) -> bool:
        return "paris" in self.city.lower()
"""


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[str, str, FakeLLM]]:
    folder = tmp_path / "store"
    store = Store(folder)
    b = Benchmark.create("cli scheduling", store=store)
    for i in range(3):
        b.add_question(f"Capital {i}?", "Paris", TEMPLATE, question_id=f"q{i}", finished=True)
    bench = b.id
    store.close()
    with FakeLLM() as fake:
        yield str(folder), bench, fake


def verify(store: str, bench: str, url: str, *extra: str) -> Any:
    args = ["verify", bench, "--answerer", "openai:a", "--judge", "openai:j", "--base-url", url]
    return runner.invoke(app, [*args, "--no-progress", "--no-cache", "--store", store, *extra])


def test_scheduling_switches_reach_the_run(setup: tuple[str, str, FakeLLM]) -> None:
    store, bench, fake = setup
    r = verify(
        store, bench, fake.base_url, "--task-ordering", "generation_order", "--answerer-concurrency-limit", "a=1",
        "--max-concurrent-requests", "2", "--batch-timeout", "600",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    run = r.stdout.split("run ", 1)[1].split(" ", 1)[0]
    with Store(store) as s:
        assert stored_config(s, run)["scheduling"] == {
            "task_ordering": "generation_order",
            "answerer_concurrency_limits": {"a": 1},
            "max_concurrent_requests": 2,
            "batch_timeout_seconds": 600.0,
        }
    questions = [b["messages"][-1]["content"] for b in fake.requests("answer")]
    assert [q.split("Capital ", 1)[1][0] for q in questions] == ["0", "1", "2"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--task-ordering", "sideways"], "--task-ordering 'sideways'"),
        (["--answerer-concurrency-limit", "a=0"], "N or ID=N"),
        (["--answerer-concurrency-limit", "=2"], "N or ID=N"),
        (["--answerer-concurrency-limit", "2", "--answerer-concurrency-limit", "3"], "given once"),
        (["--max-concurrent-requests", "0"], "Invalid value for '--max-concurrent-requests'"),
        (["--batch-timeout", "0"], "--batch-timeout 0.0: a number of seconds above 0"),
    ],
)
def test_bad_scheduling_switches_are_one_line_errors(
    setup: tuple[str, str, FakeLLM], extra: list[str], message: str
) -> None:
    store, bench, fake = setup
    r = verify(store, bench, fake.base_url, *extra)
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output
    assert fake.requests() == []
