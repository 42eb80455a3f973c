"""``karenina-rdf verify --embedding-check`` against the fake OpenAI-compatible server: the
embeddings come from its ``/embeddings`` endpoint over HTTP, the equivalence question goes to
the judge, and bad switch combinations are one-line errors. What the check decides is compared
with Karenina in tests/runner/test_embedding.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from karenina_rdf import Benchmark, Store
from karenina_rdf.cli import app
from tests.helpers.fake_llm_server import FakeLLM, kind

pytestmark = pytest.mark.slow  # the CLI against a fake LLM server, with sandbox workers

runner = CliRunner()
TEMPLATE = """class Answer(BaseAnswer):
    city: str = Field(description="The city named as the capital")

    def ground_truth(self):
        self.correct = {"city": "Paris"}

    def verify(self) -> bool:
        return self.city.strip().lower() == "paris"
"""
REFERENCE = "REFERENCE-ANSWER-TEXT: Paris, on the Seine."
QUESTIONS = {"q-right": ("Name the capital of France.", "Paris"), "q-near": ("Capital of France?", "Paris, France")}


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[str, str, FakeLLM]]:
    folder = tmp_path / "store"
    store = Store(folder)
    b = Benchmark.create("cli embedding", store=store)
    for qid, (text, _) in QUESTIONS.items():
        b.add_question(text, REFERENCE, TEMPLATE, question_id=qid, finished=True)
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


# (id, extra switches, the judge's equivalence reply, q-near's verdict, override, judge asked)
CASES = [
    ("overridden", ["--embedding-threshold", "0.5"], "YES", True, True, True),
    ("judge says no", ["--embedding-threshold", "0.5"], "NO", False, False, True),
    ("threshold out of reach", ["--embedding-threshold", "1.0"], "YES", False, False, False),
]


@pytest.mark.parametrize(("case", "extra", "reply", "passes", "override", "asked"), CASES, ids=[c[0] for c in CASES])
def test_embedding_check_from_the_command_line(
    setup: tuple[str, str, FakeLLM], case: str, extra: list[str], reply: str, passes: bool, override: bool, asked: bool
) -> None:
    store, bench, fake = setup
    fake.equivalent = reply
    r = verify(store, bench, fake.base_url, "--embedding-check", "--embedding-model", "emb-small", *extra)
    assert r.exit_code == 0, r.output
    got = rows(store, r.stdout)
    right, near = got["q-right"]["template"], got["q-near"]["template"]
    # A passing verification is never checked.
    assert (right["verify_result"], right["embedding_check_performed"]) == (True, False)
    assert near["embedding_check_performed"] is True and near["embedding_model_used"] == "emb-small"
    assert 0.5 < near["embedding_similarity_score"] < 1.0  # the server's character-count vectors
    assert (near["verify_result"], near["embedding_override_applied"]) == (passes, override)
    embeds = fake.requests("embeddings")
    assert len(embeds) == 1 and embeds[0]["model"] == "emb-small"
    assert embeds[0]["input"] == ['{"city": "Paris"}', '{"city": "Paris, France"}']
    assert len(fake.requests("equivalence")) == (1 if asked else 0)
    # The reference answer reaches neither the embeddings endpoint nor the judge.
    for body in fake.requests():
        if kind(body) != "answer":
            assert "REFERENCE-ANSWER-TEXT" not in json.dumps(body)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--embedding-model", "m"], "need --embedding-check"),
        (["--embedding-threshold", "0.3"], "need --embedding-check"),
        (["--embedding-check", "--embedding-threshold", "1.5"], "Invalid value for '--embedding-threshold'"),
    ],
)
def test_bad_embedding_switches_are_one_line_errors(
    setup: tuple[str, str, FakeLLM], extra: list[str], message: str
) -> None:
    store, bench, fake = setup
    r = verify(store, bench, fake.base_url, *extra)
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output
    assert fake.requests() == []


def test_embedding_check_records_and_replays(setup: tuple[str, str, FakeLLM], tmp_path: Path) -> None:
    """--record writes the embeddings calls with the chat calls; --replay, with the server
    gone quiet, answers all of them and the embedding fields come out the same."""
    store, bench, fake = setup
    recordings = tmp_path / "calls.jsonl"
    switches = ["--embedding-check", "--embedding-threshold", "0.5"]
    r = verify(store, bench, fake.base_url, *switches, "--record", str(recordings))
    assert r.exit_code == 0, r.output
    live = rows(store, r.stdout)
    stages = [json.loads(line)["stage"] for line in recordings.read_text(encoding="utf-8").splitlines()]
    assert stages.count("embedding_check") == 2  # the embeddings call and the equivalence question
    asked = len(fake.requests())
    r = verify(store, bench, "http://127.0.0.1:9/v1", *switches, "--replay", str(recordings))
    assert r.exit_code == 0, r.output
    assert len(fake.requests()) == asked  # nothing went to the server
    replayed = rows(store, r.stdout)
    fields = ("embedding_check_performed", "embedding_similarity_score", "embedding_override_applied", "verify_result")
    for qid in QUESTIONS:
        assert [replayed[qid]["template"][f] for f in fields] == [live[qid]["template"][f] for f in fields], qid
    assert replayed["q-near"]["template"]["embedding_override_applied"] is True
