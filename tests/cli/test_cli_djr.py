"""``karenina-rdf verify`` with deep judgment for rubric traits switched on from the command line
(``--deep-judgment-rubric-*``), against the fake OpenAI-compatible server, a real store folder and
sandbox. What the stage decides is compared with Karenina in tests/runner/test_stages_djr.py;
here: the options reach the run, and bad ones are one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from karenina_rdf import RubricTrait, Store
from karenina_rdf.authoring import Benchmark as AuthoringBenchmark
from tests.cli.test_cli_stages import rows, setup, verify
from tests.helpers.fake_llm_server import FakeLLM, kind

pytestmark = pytest.mark.slow  # the CLI against a fake LLM server, with sandbox workers
__all__ = ["setup"]  # the fixture, used here by name


def _with_rubric(store: str, bench: str) -> None:
    s = Store(store)
    iri, _ = s.graph_of(bench)
    AuthoringBenchmark(s, iri).set_global_rubric(
        [RubricTrait.llm("names_city", "Does it name a city?"), RubricTrait.llm("clarity", "Clear?", kind="score")]
    )
    s.close()


def test_rubric_deep_judgment_from_the_command_line(setup: tuple[str, str, FakeLLM], tmp_path: Path) -> None:
    store, bench, fake = setup
    _with_rubric(store, bench)
    r = verify(
        store, bench, fake.base_url, "--mode", "rubric_only", "--questions", "q-fine",
        "--deep-judgment-rubric-mode", "enable_all", "--deep-judgment-rubric-max-excerpts", "2",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    (row,) = rows(store, r.stdout).values()
    djr = row["deep_judgment_rubric"]
    assert djr["deep_judgment_rubric_scores"] == {"names_city": True, "clarity": 3}
    assert djr["extracted_rubric_excerpts"]["names_city"][0]["text"] == "Paris"
    assert djr["total_deep_judgment_model_calls"] == 6 and djr["traits_without_valid_excerpts"] == []
    assert row["rubric"]["llm_trait_scores"] == {"names_city": True, "clarity": 3}
    kinds = [kind(b) for b in fake.requests()]
    assert kinds == ["answer", *["trait excerpts", "trait reasoning", "trait score"] * 2]
    assert "Quote at most 2 passage(s)." in json.dumps(fake.requests()[1])

    # custom: only the traits the file names, the others the ordinary way
    config = tmp_path / "djr.json"
    config.write_text(json.dumps({"global": {"clarity": {"excerpt_enabled": False}}}))
    r = verify(
        store, bench, fake.base_url, "--mode", "rubric_only", "--questions", "q-fine",
        "--deep-judgment-rubric-mode", "custom", "--deep-judgment-rubric-config", str(config),
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    (row,) = rows(store, r.stdout).values()
    djr = row["deep_judgment_rubric"]
    assert djr["deep_judgment_rubric_scores"] == {"clarity": 3} and djr["extracted_rubric_excerpts"] == {}
    assert djr["standard_rubric_scores"] == {"names_city": True}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--deep-judgment-rubric-mode", "all"], "--deep-judgment-rubric-mode"),
        (["--deep-judgment-rubric-mode", "custom"], "--deep-judgment-rubric-config"),
        (
            ["--deep-judgment-rubric-mode", "custom", "--deep-judgment-rubric-config", "/nonexistent.json"],
            "nonexistent",
        ),
    ],
)
def test_bad_rubric_deep_judgment_options_are_one_line_errors(
    setup: tuple[str, str, FakeLLM], args: list[str], message: str
) -> None:
    store, bench, fake = setup
    r = verify(store, bench, fake.base_url, *args)
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert fake.requests() == []
