"""Which rubric traits get deep judgment, with which settings (Karenina's
``resolve_deep_judgment_config_for_trait``, compared on the same inputs), the reading of a score
reply given as text, and how Karenina's VerificationConfig maps onto the runner's settings."""

from __future__ import annotations

import json
from typing import Any

import pytest

from karenina_rdf import Store
from karenina_rdf._errors import InvalidValueError
from karenina_rdf.checkpoint import RubricTrait
from karenina_rdf.runner._members import verification_plan
from karenina_rdf.runner.rubric import RubricDeepJudgmentConfig
from karenina_rdf.runner.rubric._deep_judgment import TraitSettings, parse_score_text, resolve
from tests.helpers.karenina_ref import karenina


def _trait(name: str = "t", kind: str = "boolean", **dj: Any) -> RubricTrait:
    t = RubricTrait.llm(name, "d", kind=kind)
    return t.model_copy(update={"settings": {**t.settings, **{f"deep_judgment_{k}": v for k, v in dj.items()}}})


CUSTOM = {
    "global": {"t": {"excerpt_enabled": False, "max_excerpts": 4}, "off": {"enabled": False}},
    "question_specific": {"q1": {"t": {"fuzzy_match_threshold": 0.5, "excerpt_retry_attempts": 0}}},
}
# (settings, trait's own deep_judgment_* settings, trait name, question id, expected)
RESOLVE_CASES: list[tuple[dict[str, Any], dict[str, Any], str, str | None, TraitSettings]] = [
    ({}, {}, "t", "q1", TraitSettings(False)),
    ({}, {"enabled": True, "max_excerpts": 2}, "t", "q1", TraitSettings(True, True, 2, None, None)),
    ({}, {"enabled": True, "excerpt_enabled": False}, "t", None, TraitSettings(True, False, None, None, None)),
    ({"mode": "enable_all"}, {}, "t", "q1", TraitSettings(True, True, 7, 0.8, 2)),
    ({"mode": "enable_all", "global_excerpts": False, "max_excerpts_default": 3}, {"enabled": False}, "t", "q1",
     TraitSettings(True, False, 3, 0.8, 2)),
    ({"mode": "use_checkpoint"}, {}, "t", "q1", TraitSettings(False, True, None, None, None)),
    ({"mode": "use_checkpoint"}, {"enabled": True, "fuzzy_match_threshold": 0.9, "excerpt_retry_attempts": 1}, "t",
     "q1", TraitSettings(True, True, None, 0.9, 1)),
    ({"mode": "custom", "config": CUSTOM}, {}, "t", "q1", TraitSettings(True, True, None, 0.5, 0)),
    ({"mode": "custom", "config": CUSTOM}, {}, "t", "q2", TraitSettings(True, False, 4, None, None)),
    ({"mode": "custom", "config": CUSTOM}, {"enabled": True}, "other", "q1", TraitSettings(False)),
    ({"mode": "custom", "config": CUSTOM}, {}, "off", None, TraitSettings(False, True, None, None, None)),
]  # fmt: skip


@pytest.mark.parametrize(("cfg", "own", "name", "qid", "expected"), RESOLVE_CASES)
def test_resolve(cfg: dict[str, Any], own: dict[str, Any], name: str, qid: str | None, expected: TraitSettings) -> None:
    got = resolve(_trait(name, **own), qid, RubricDeepJudgmentConfig.model_validate(cfg))
    if not expected.enabled:  # Karenina's disabled config keeps its other defaults; only "off" matters
        assert not got.enabled
    else:
        assert got == expected


KARENINA_RESOLVE = """
import json, sys
from types import SimpleNamespace
from karenina.schemas.entities import LLMRubricTrait
from karenina.schemas.verification.config import DeepJudgmentRubricCustomConfig
from karenina.benchmark.verification.stages.helpers.deep_judgment_helpers import resolve_deep_judgment_config_for_trait
out = []
for cfg, trait, qid in json.loads(sys.argv[1]):
    ns = {f"deep_judgment_rubric_{k}": v for k, v in cfg.items() if k != "config"}
    if "config" in cfg:
        ns["deep_judgment_rubric_config"] = DeepJudgmentRubricCustomConfig.model_validate(cfg["config"])
    r = resolve_deep_judgment_config_for_trait(LLMRubricTrait(**trait), qid, SimpleNamespace(**ns))
    out.append(r.model_dump())
print(json.dumps(out))
"""


@pytest.mark.slow
def test_resolve_is_karenina_s() -> None:
    cases = [[cfg, _trait(name, **own).karenina_fields(), qid] for cfg, own, name, qid, _ in RESOLVE_CASES]
    theirs = karenina(KARENINA_RESOLVE, json.dumps(cases))
    for (cfg, own, name, qid, _), kar in zip(RESOLVE_CASES, theirs, strict=True):
        got = resolve(_trait(name, **own), qid, RubricDeepJudgmentConfig.model_validate(cfg))
        mine = {
            "enabled": got.enabled,
            "excerpt_enabled": got.excerpt_enabled,
            "max_excerpts": got.max_excerpts,
            "fuzzy_match_threshold": got.fuzzy_match_threshold,
            "excerpt_retry_attempts": got.excerpt_retry_attempts,
        }
        if not kar["enabled"]:  # a trait left off: its other settings are never read
            assert not mine["enabled"], (cfg, own, name, qid)
            continue
        assert mine == {k: kar[k] for k in mine}, (cfg, own, name, qid)


# (text, kind, expected): Karenina's _parse_trait_score_response on a reply given as text
TEXT_SCORES: list[tuple[str, str, int | bool]] = [
    ("true", "boolean", True),
    (" No ", "boolean", False),
    ("It is TRUE that it does", "boolean", True),
    ("not at all", "boolean", False),
    ("nothing", "boolean", False),
    ("4", "score", 4),
    ("I would say 9", "score", 5),
    ("0 of 5", "score", 1),
    ("no number", "score", 1),
]


@pytest.mark.parametrize(("text", "kind", "expected"), TEXT_SCORES)
def test_score_given_as_text(text: str, kind: str, expected: int | bool) -> None:
    assert parse_score_text(text, _trait(kind=kind)) == expected


def _config(**extra: Any) -> dict[str, Any]:
    model = {"model_name": "m", "model_provider": "openai", "interface": "openai_endpoint"}
    model["endpoint_base_url"] = "http://127.0.0.1:9/v1"
    return {"answering_models": [model], "parsing_models": [dict(model)], **extra}


def test_karenina_s_verification_config_maps_to_the_run() -> None:
    with Store.memory() as store:
        plan = verification_plan(
            store,
            _config(
                deep_judgment_rubric_mode="custom",
                deep_judgment_rubric_config={"global": {"t": {"max_excerpts": 2}}},
                deep_judgment_rubric_excerpt_retry_attempts_default=4,
            ),
            None,
        )
        djr = plan.deep_judgment_rubric
        assert (djr.mode, djr.excerpt_retry_attempts_default) == ("custom", 4)
        assert djr.config is not None and djr.config.global_traits["t"].max_excerpts == 2
        assert verification_plan(store, _config(), None).deep_judgment_rubric == RubricDeepJudgmentConfig()
        with pytest.raises(InvalidValueError, match="deep_judgment_rubric_config is required"):
            verification_plan(store, _config(deep_judgment_rubric_mode="custom"), None)
        with pytest.raises(InvalidValueError, match=r"deep_judgment_rubric_\*"):
            verification_plan(store, _config(deep_judgment_rubric_mode="sometimes"), None)


def test_template_kind_traits_are_never_judged_in_steps() -> None:
    """Our choice (docs/verification.md): enable_all takes a boolean trait through the steps and
    leaves a template-kind trait to its ordinary call."""
    from karenina_rdf.runner.providers import ChatRequest, FunctionProvider
    from karenina_rdf.runner.rubric import evaluate_rubric
    from tests.runner.rubric.test_rubric import CITATIONS

    stages: list[str] = []

    def judge(r: ChatRequest) -> str:
        stages.append(r.stage)
        if r.stage == "rubric_deep_judgment_excerpts":
            return json.dumps({"excerpts": [{"text": "Paris", "confidence": "high"}]})
        if r.stage == "rubric_deep_judgment_score":
            return json.dumps({"result": True})
        if r.stage == "rubric_deep_judgment_reasoning":
            return "Conclusion: met."
        return json.dumps({"count": 1, "has_doi": False})

    out = evaluate_rubric(
        [_trait("names_city"), CITATIONS],
        {},
        question_text="Capital of France?",
        response="Paris.",
        raw_answer="Paris",
        judge=FunctionProvider(judge),
        judge_model="j",
        sandbox=None,
        trust_callables=False,
        deep_judgment=RubricDeepJudgmentConfig(mode="enable_all"),
    )
    assert stages == [
        "rubric_deep_judgment_excerpts",
        "rubric_deep_judgment_reasoning",
        "rubric_deep_judgment_score",
        "rubric_evaluation",
    ]
    assert out.deep_judgment is not None and out.deep_judgment["deep_judgment_rubric_scores"] == {"names_city": True}
    assert out.part["llm_trait_scores"] == {"names_city": True, "citations.count": 1, "citations.has_doi": False}
