"""``karenina-rdf verify`` with Karenina's optional stages switched on from the command line:
``--abstention``, ``--sufficiency``, ``--few-shot-mode``/``--few-shot-k``/``--few-shot-config`` and
``--prompt-config``, against the fake OpenAI-compatible server, a real store folder and sandbox.
What each stage decides is compared with Karenina in tests/runner/test_stages.py; here: the
switches reach the run, the report counts, and bad files are one-line errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from karenina_rdf import Benchmark, Store
from karenina_rdf.cli import app
from tests.helpers.fake_llm_server import FakeLLM, kind, user_text

pytestmark = pytest.mark.slow  # the CLI against a fake LLM server, with sandbox workers

runner = CliRunner()
TEMPLATE = """class Answer(BaseAnswer):
    city: str = Field(description="The city named as the capital")

    def ground_truth(self):
        self.correct = {"city": "Paris"}

    def verify(self) -> bool:
        return "paris" in self.city.lower()
"""
QUESTIONS = {
    "q-refuses": ("What is the capital of France?", "I cannot answer that."),
    "q-vague": ("Which city is France's capital?", "No idea, honestly."),
    "q-fine": ("Name the capital of France.", "Paris."),
}
EXAMPLES = [{"question": f"Capital of country {i}?", "answer": f"City {i}."} for i in range(4)]


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[str, str, FakeLLM]]:
    folder = tmp_path / "store"
    store = Store(folder)
    b = Benchmark.create("cli stages", store=store)
    for qid, (text, _) in QUESTIONS.items():
        b.add_question(text, "Paris", TEMPLATE, question_id=qid, finished=True, few_shot_examples=EXAMPLES)
    bench = b.id
    store.close()
    with FakeLLM() as fake:
        fake.answers = {text: answer for text, answer in QUESTIONS.values()}
        yield str(folder), bench, fake


def verify(store: str, bench: str, url: str, *extra: str) -> Any:
    args = ["verify", bench, "--answerer", "openai:a", "--judge", "openai:j", "--base-url", url]
    return runner.invoke(app, [*args, "--no-progress", "--no-cache", "--store", store, *extra])


def rows(store: str, out: str) -> dict[str, dict[str, Any]]:
    run = out.split("run ", 1)[1].split(" ", 1)[0]
    r = runner.invoke(app, ["results", "export", run, "--store", store])
    assert r.exit_code == 0, r.output
    return {row["metadata"]["question_id"]: row for row in json.loads(r.stdout)["results"]}


def test_checks_prompt_config_and_k_shot_from_the_command_line(setup: tuple[str, str, FakeLLM], tmp_path: Path) -> None:
    store, bench, fake = setup
    pc = tmp_path / "prompts.json"
    pc.write_text(json.dumps({"abstention_detection": "ABSTENTION-NOTE", "generation": "GEN-NOTE"}))
    r = verify(
        store, bench, fake.base_url, "--abstention", "--sufficiency", "--prompt-config", str(pc),
        "--few-shot-mode", "k-shot", "--few-shot-k", "2",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "checks: 1 abstained, 1 insufficient" in r.stdout
    assert "failures: abstention 1, sufficiency 1" in r.stdout
    got = rows(store, r.stdout)
    assert got["q-refuses"]["template"]["abstention_detected"] is True
    assert got["q-vague"]["template"]["sufficiency_detected"] is False
    assert got["q-fine"]["template"]["verify_result"] is True
    assert {(m := row["metadata"])["few_shot_enabled"] and m["few_shot_example_count"] for row in got.values()} == {2}
    kinds = [kind(b) for b in fake.requests()]
    assert kinds.count("abstention") == 3 and kinds.count("sufficiency") == 2  # not after an abstention
    for body in fake.requests():
        system = next(m["content"] for m in body["messages"] if m["role"] == "system")
        assert system.endswith("\n\nABSTENTION-NOTE") is (kind(body) == "abstention")
        assert system.endswith("\n\nGEN-NOTE") is (kind(body) == "answer")
        if kind(body) == "answer":
            assert user_text(body).count("Question: ") == 3  # two examples, then the question


def test_without_switches_no_check_runs(setup: tuple[str, str, FakeLLM]) -> None:
    store, bench, fake = setup
    r = verify(store, bench, fake.base_url)
    assert r.exit_code == 0, r.output
    assert "checks:" not in r.stdout
    assert {kind(b) for b in fake.requests()} == {"answer", "parse"}
    got = rows(store, r.stdout)
    assert all(not row["template"]["abstention_check_performed"] for row in got.values())


@pytest.mark.parametrize(
    ("option", "content", "message"),
    [
        ("--prompt-config", '{"generation": 1}', "--prompt-config"),
        ("--prompt-config", '{"nonsense": "x"}', "nonsense"),
        ("--few-shot-config", "not json", "--few-shot-config"),
        ("--few-shot-config", '{"pool_k": 0}', "pool_k"),
    ],
)
def test_bad_config_files_are_one_line_errors(
    setup: tuple[str, str, FakeLLM], tmp_path: Path, option: str, content: str, message: str
) -> None:
    store, bench, fake = setup
    path = tmp_path / "config.json"
    path.write_text(content)
    r = verify(store, bench, fake.base_url, option, str(path))
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert fake.requests() == []


def test_unknown_few_shot_mode_is_refused(setup: tuple[str, str, FakeLLM]) -> None:
    store, bench, fake = setup
    r = verify(store, bench, fake.base_url, "--few-shot-mode", "two-shot")
    assert r.exit_code == 2 and "--few-shot-mode" in r.stderr and "Traceback" not in r.output


def test_deep_judgment_from_the_command_line(setup: tuple[str, str, FakeLLM]) -> None:
    store, bench, fake = setup
    r = verify(store, bench, fake.base_url, "--deep-judgment-mode", "full", "--questions", "q-fine")
    assert r.exit_code == 0, r.output
    (row,) = rows(store, r.stdout).values()
    dj = row["deep_judgment"]
    assert dj["deep_judgment_mode"] == "full" and dj["deep_judgment_stages_completed"] == [
        "excerpts",
        "reasoning",
        "parameters",
    ]
    assert dj["extracted_excerpts"]["city"][0]["text"] == "Paris" and dj["attributes_without_excerpts"] == []
    assert [kind(b) for b in fake.requests()] == ["answer", "excerpts", "reasoning", "parse"]
    bad = verify(store, bench, fake.base_url, "--deep-judgment-mode", "deep")
    assert bad.exit_code == 2 and "--deep-judgment-mode" in bad.stderr and "Traceback" not in bad.output
