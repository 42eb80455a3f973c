"""``resume_verification`` without a config resumes with the run's own recorded settings, every
stage's included (Karenina resumes with the config its state file holds), and the embedding
check is refused up front, in one line naming the model and the switch, when nothing can embed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import Benchmark, Store, VerificationError
from karenina_rdf.runner import _members
from karenina_rdf.runner._embedding import EmbeddingCheckConfig
from karenina_rdf.runner._run import RunOptions, run_verification, verify
from karenina_rdf.runner._tasks import ModelSpec
from karenina_rdf.runner.providers import ReplayProvider
from karenina_rdf.runner.providers._base import ChatRequest
from karenina_rdf.runner.providers._registry import FunctionProvider
from tests.authoring.test_templates import T_CAPITAL, AcceptingSandbox

STAGE_FIELDS = (
    "mode",
    "replicates",
    "rubric_strategy",
    "few_shot",
    "few_shot_config",
    "prompt_config",
    "abstention_enabled",
    "sufficiency_enabled",
    "deep_judgment",
    "deep_judgment_rubric",
    "embedding_check",
    "scheduling",
)


def _reply(request: ChatRequest) -> str:
    return json.dumps({"capital": "Paris", "abstention_detected": False, "reasoning": "ok"})


def _model(name: str, embeds: bool = False) -> ModelSpec:
    provider = FunctionProvider(_reply, embed_fn=(lambda r: [[1.0, 0.0] for _ in r.texts]) if embeds else None)
    return ModelSpec(provider, name, "openai_endpoint", spec=f"openai:{name}")


# Karenina VerificationConfig fields (as a dict), each switching on other stages.
CONFIGS: dict[str, dict[str, Any]] = {
    "abstention+sufficiency": {"abstention_enabled": True, "sufficiency_enabled": True},
    "deep judgment": {
        "deep_judgment_mode": "full",
        "deep_judgment_max_excerpts_per_attribute": 2,
        "evaluation_mode": "template_and_rubric",
        "deep_judgment_rubric_mode": "enable_all",
    },
    "embedding check": {"embedding_check_enabled": True, "embedding_check_threshold": 0.7},
    "prompts, few-shot, scheduling": {
        "prompt_config": {"parsing": "Answer tersely.", "abstention_detection": "Be strict."},
        "few_shot_config": {"pool_mode": "k-shot", "pool_k": 2},
        "task_ordering": "generation_order",
        "max_concurrent_requests": 3,
        "rubric_evaluation_strategy": "sequential",
    },
}


@pytest.mark.parametrize("extra", CONFIGS.values(), ids=list(CONFIGS))
def test_resume_verification_resumes_with_the_run_s_own_stage_settings(
    extra: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Resuming rebuilds the models from their recorded specs (an OpenAI-compatible server here,
    # never called: the resumed run is caught before it starts).
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    seen: list[dict[str, Any]] = []
    real = _members.run_verification

    class Caught(Exception):
        pass

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs)
        if kwargs.get("resume") is not None:
            raise Caught
        return real(*args, **kwargs)

    monkeypatch.setattr(_members, "run_verification", spy)
    with Store.memory() as store:
        b = Benchmark.create("resume", store=store)
        b.add_question("What is the capital of France?", "Paris", T_CAPITAL, question_id="q0")
        config = {"answering_models": [_model("fake-a")], "parsing_models": [_model("fake-j", embeds=True)], **extra}
        first = b.run_verification(config, sandbox=AcceptingSandbox())
        with pytest.raises(Caught):
            b.resume_verification(first.metadata["run_id"], sandbox=AcceptingSandbox())
    ran, resumed = (call["options"] for call in seen)
    for name in STAGE_FIELDS:
        assert getattr(resumed, name) == getattr(ran, name), name
    assert resumed != RunOptions(mode=ran.mode, replicates=ran.replicates)  # the settings are not the defaults
    assert (seen[1]["embedder"] is not None) == ran.embedding_check.enabled


def _one_line(exc: pytest.ExceptionInfo[VerificationError]) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def _bench(store: Store) -> str:
    b = Benchmark.create("embed", store=store)
    b.add_question("What is the capital of France?", "Paris", T_CAPITAL, question_id="q0")
    return b.id


def _recordings(tmp_path: Path) -> Path:
    path = tmp_path / "rec.jsonl"
    path.write_text("", encoding="utf-8")
    return path


# What is asked to embed, and what the refusal must name.
REFUSALS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "judge that cannot embed, no embedder": (None, ("'fake-j'", "embedding_check")),
    "embedder without the capability": (FunctionProvider(_reply), ("FunctionProvider", "embedding_check")),
    "replay file without embeddings": ("replay", ("rec.jsonl", "embedding_check", "'emb-model'")),
}


@pytest.mark.parametrize("embedder, names", REFUSALS.values(), ids=list(REFUSALS))
def test_an_embedding_check_nothing_can_serve_is_refused_before_the_run(
    tmp_path: Path, embedder: Any, names: tuple[str, ...]
) -> None:
    with Store.memory() as store:
        bench = _bench(store)
        if embedder == "replay":
            embedder = ReplayProvider(_recordings(tmp_path))
        opts = RunOptions(embedding_check=EmbeddingCheckConfig(enabled=True, model="emb-model"))
        with pytest.raises(VerificationError) as exc:
            run_verification(
                store,
                bench,
                judges=[_model("fake-j")],
                answerers=[_model("fake-a")],
                options=opts,
                sandbox=AcceptingSandbox(),
                embedder=embedder,
            )
        text = _one_line(exc)
        assert all(n in text for n in names), text
        assert store.runs() == []  # refused before anything was written


def test_verify_with_embedding_check_and_no_server_names_the_judge_and_the_switch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with Store.memory() as store:
        bench = _bench(store)
        with pytest.raises(VerificationError) as exc:
            verify(
                store,
                bench,
                judges=[_model("fake-j")],
                answerers=[_model("fake-a")],
                embedding_check={"enabled": True},
                unsafe_no_isolation=True,
            )
        text = _one_line(exc)
        assert "'fake-j'" in text and "embedding_check" in text and "$OPENAI_BASE_URL" in text
        # From a replay file that holds no embeddings: refused up front too, naming the file.
        with pytest.raises(VerificationError) as exc:
            verify(
                store,
                bench,
                judges=[_model("fake-j")],
                answerers=[_model("fake-a")],
                embedding_check={"enabled": True},
                replay=_recordings(tmp_path),
                unsafe_no_isolation=True,
            )
        assert "rec.jsonl" in _one_line(exc)
        assert store.runs() == []
