"""Karenina's preset files: ``karenina-rdf verify --preset`` and ``load_preset`` read a preset
Karenina itself wrote (``VerificationConfig.save_preset`` run in its environment), with the fake
OpenAI-compatible server as every model; options given on the command line replace the
preset's values, as in Karenina's ``verify``; bad presets are one-line errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from karenina_rdf import Benchmark, Store
from karenina_rdf.cli import app
from karenina_rdf.runner import Sandbox, load_preset
from tests.helpers.fake_llm_server import FakeLLM
from tests.helpers.karenina_ref import karenina

pytestmark = pytest.mark.slow  # Karenina writes the preset in its environment; the CLI runs a real sandbox

runner = CliRunner()
TEMPLATE = """class Answer(BaseAnswer):
    city: str = Field(description="The city named as the capital")

    def ground_truth(self):
        self.correct = {"city": "Paris"}

    def verify(self) -> bool:
        return self.city.strip().lower() == "paris"
"""
QUESTIONS = {"q-right": ("Name the capital of France.", "Paris"), "q-near": ("Capital of France?", "Paris, France")}

SAVE = r"""
import json, sys, pathlib
from karenina.schemas.verification.config import VerificationConfig
from karenina.schemas.config import ModelConfig
url, folder, extra = sys.argv[1], pathlib.Path(sys.argv[2]), json.loads(sys.argv[3])
m = ModelConfig(id="fake", model_name="fake-model", interface="openai_endpoint", endpoint_base_url=url,
                endpoint_api_key="sk-test", temperature=0.0, system_prompt="PRESET-SYSTEM-PROMPT")
config = VerificationConfig(answering_models=[m], parsing_models=[m], **extra)
print(json.dumps(config.save_preset(extra.pop("name", "CLI Preset"), "saved by Karenina", folder)))
"""
SETTINGS = {
    "replicate_count": 2,
    "abstention_enabled": True,
    "embedding_check_enabled": True,
    "embedding_check_threshold": 0.0,
    "embedding_check_model": "emb-preset",
    "prompt_config": {"generation": "GEN-NOTE-FROM-PRESET"},
}


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[str, str, FakeLLM, Path]]:
    folder = tmp_path / "store"
    store = Store(folder)
    b = Benchmark.create("cli preset", store=store)
    for qid, (text, _) in QUESTIONS.items():
        b.add_question(text, "Paris", TEMPLATE, question_id=qid, finished=True)
    bench = b.id
    store.close()
    with FakeLLM() as fake:
        fake.answers = {text: answer for text, answer in QUESTIONS.values()}
        saved = karenina(SAVE, fake.base_url, str(tmp_path / "presets"), json.dumps(SETTINGS))
        yield str(folder), bench, fake, Path(saved["filepath"])


def verify(store: str, bench: str, *extra: str) -> Any:
    return runner.invoke(app, ["verify", bench, "--no-progress", "--store", store, *extra])


def rows(store: str, out: str) -> list[dict[str, Any]]:
    run = out.split("run ", 1)[1].split(" ", 1)[0]
    r = runner.invoke(app, ["results", "export", run, "--store", store])
    assert r.exit_code == 0, r.output
    return list(json.loads(r.stdout)["results"])


def _check_preset_run(got: list[dict[str, Any]], fake: FakeLLM, replicates: int) -> None:
    assert len(got) == len(QUESTIONS) * replicates
    for row in got:
        meta, t = row["metadata"], row["template"]
        assert meta["answering"]["model_name"] == "fake-model" == meta["parsing"]["model_name"]
        assert meta["answering"]["interface"] == "openai_endpoint"
        assert meta["answering_system_prompt"].startswith("PRESET-SYSTEM-PROMPT")
        assert t["abstention_check_performed"] is True
    near = [r["template"] for r in got if r["metadata"]["question_id"] == "q-near"]
    assert all(t["embedding_check_performed"] and t["embedding_model_used"] == "emb-preset" for t in near)
    answering = fake.requests("answer")
    assert answering and all("GEN-NOTE-FROM-PRESET" in json.dumps(b) for b in answering)


def test_a_preset_karenina_wrote_runs_from_the_command_line(setup: tuple[str, str, FakeLLM, Path]) -> None:
    store, bench, fake, preset = setup
    r = verify(store, bench, "--preset", str(preset))
    assert r.exit_code == 0, r.output
    _check_preset_run(rows(store, r.stdout), fake, replicates=2)


def test_a_preset_by_name_from_the_presets_folder(
    setup: tuple[str, str, FakeLLM, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, bench, fake, preset = setup
    monkeypatch.setenv("KARENINA_PRESETS_DIR", str(preset.parent))
    assert preset.name == "cli-preset.json"  # Karenina's file name for "CLI Preset"
    r = verify(store, bench, "--preset", "cli-preset", "--replicates", "3", "--mode", "template_only")
    assert r.exit_code == 0, r.output
    _check_preset_run(rows(store, r.stdout), fake, replicates=3)  # the command line's replicates win


def test_load_preset_feeds_run_verification(setup: tuple[str, str, FakeLLM, Path]) -> None:
    store_path, bench, fake, preset = setup
    config = load_preset(preset)
    assert config["replicate_count"] == 2 and config["embedding_check_model"] == "emb-preset"
    with Store(store_path) as store, Sandbox(workers=1) as sandbox:
        got = Benchmark(store, bench).run_verification(config, sandbox=sandbox)
        _check_preset_run(list(got.results), fake, replicates=2)


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: str(d / "absent.json"), "no such file"),
        (lambda d: _write(d / "broken.json", "{not json"), "is corrupted"),
        (lambda d: _write(d / "empty.json", json.dumps({"name": "x", "config": {}})), "no configuration data"),
        (
            lambda d: _write(
                d / "agentic.json",
                json.dumps({"config": {**load_preset(d / "cli-preset.json"), "agentic_parsing": True}}),
            ),
            "VerificationConfig.agentic_parsing=True is not supported",
        ),
    ],
    ids=["missing", "corrupted", "no config", "unsupported setting"],
)
def test_bad_presets_are_one_line_errors(setup: tuple[str, str, FakeLLM, Path], make: Any, message: str) -> None:
    store, bench, fake, preset = setup
    r = verify(store, bench, "--preset", make(preset.parent))
    assert r.exit_code != 0 and message in r.output.replace("\n", " "), r.output
    assert "Traceback" not in r.output
    assert fake.requests() == []
