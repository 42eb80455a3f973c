"""Deep judgment for rubric traits, through a real run, compared with Karenina's own pipeline run
offline (its ``run_single_model_verification`` in its environment, its judge a fake
OpenAI-compatible server; the machinery of test_stages.py). Both sides get the same judge replies,
chosen by what the call is for and which trait it is about, and the verdicts and result fields
are compared: the scores, the quotes with their similarity, reasoning, per-trait metadata (calls,
retries, stages), the traits left without evidence, the auto-fail, the usage stages.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from markupsafe import escape

from karenina_rdf import Benchmark, RubricTrait, Store
from karenina_rdf.checkpoint._rubric import karenina_rating
from karenina_rdf.runner import (
    DeepJudgmentConfig,
    FunctionProvider,
    ModelSpec,
    PromptConfig,
    RubricDeepJudgmentConfig,
    RunOptions,
    Sandbox,
    run_verification,
)
from tests.helpers.karenina_ref import RUBRIC_KIND_OF, judge_script, karenina
from tests.helpers.stage_runs import Judge, exported_rows
from tests.runner.test_stages import CAPITAL, KARENINA_LOAD, QUESTION, REFERENCE

pytestmark = pytest.mark.slow  # sandbox workers; Karenina in its own environment

ANSWER = "Atlantis is governed from its capital, Zanzibar-City-77, on the eastern shore. It is clearly put."


def _llm(name: str, description: str, kind: str = "boolean", **dj: Any) -> RubricTrait:
    t = RubricTrait.llm(name, description, kind=kind)
    return t.model_copy(update={"settings": {**t.settings, **{f"deep_judgment_{k}": v for k, v in dj.items()}}})


NAMES = _llm("names_capital", "Does the response name the capital city?")
CLEAR = _llm("clarity", "How clearly is the answer stated?", kind="score")
CITY = RubricTrait.regex("mentions_city", r"City")
NAMES_OWN = _llm("names_capital", "Does the response name the capital city?", enabled=True, excerpt_retry_attempts=0)
CLEAR_OWN = _llm("clarity", "How clearly is the answer stated?", kind="score", enabled=True, excerpt_enabled=False)

QUOTE = json.dumps({"excerpts": [{"text": "its capital, Zanzibar-City-77", "confidence": "high"}]})
QUOTE_FUZZY = json.dumps({"excerpts": [{"text": "its  capital,\nZanzibar City 77", "confidence": "medium"}]})
CLEAR_QUOTE = json.dumps({"excerpts": [{"text": "It is clearly put.", "confidence": "low"}]})
INVENTED = json.dumps({"excerpts": [{"text": "The capital moved to Poseidonia in 1902", "confidence": "high"}]})
EMPTY = json.dumps({"excerpts": []})
REASONING = (
    "Evidence: the quote names Zanzibar-City-77.\nInterpretation: naming it meets the criterion.\nConclusion: met."
)
TRUE, FOUR, NINE = json.dumps({"result": True}), json.dumps({"score": 4}), json.dumps({"score": 9})
BATCH = json.dumps({"scores": {"names_capital": True, "clarity": 3}})
BATCH_CLEAR = json.dumps({"scores": {"clarity": 3}})

# Reply keys: KIND or KIND:trait; kinds: EXCERPTS, REASONING, SCORE (boolean or numeric), BATCH
# (the ordinary rubric call). A list is one reply per call, its last one repeated.
ALL = {
    "EXCERPTS:names_capital": QUOTE,
    "EXCERPTS:clarity": CLEAR_QUOTE,
    "REASONING": REASONING,
    "SCORE:names_capital": TRUE,
    "SCORE:clarity": FOUR,
    "BATCH": BATCH,
}
# (id, traits, evaluation mode, deep_judgment_rubric settings, replies)
CASES: list[tuple[str, list[RubricTrait], str, dict[str, Any], dict[str, Any]]] = [
    ("disabled: nothing opted in", [NAMES, CLEAR, CITY], "rubric_only", {}, ALL),
    ("disabled: a trait opts in", [NAMES_OWN, CLEAR, CITY], "rubric_only", {}, {**ALL, "BATCH": BATCH_CLEAR}),
    ("enable_all", [NAMES, CLEAR, CITY], "rubric_only", {"mode": "enable_all"}, ALL),
    ("enable_all: fuzzy quote", [NAMES], "rubric_only", {"mode": "enable_all"},
     {**ALL, "EXCERPTS:names_capital": QUOTE_FUZZY}),
    ("enable_all: no excerpts", [NAMES, CLEAR], "rubric_only", {"mode": "enable_all", "global_excerpts": False}, ALL),
    ("enable_all: invented, then quoted", [NAMES, CLEAR], "rubric_only", {"mode": "enable_all"},
     {**ALL, "EXCERPTS:names_capital": [INVENTED, EMPTY, QUOTE]}),
    # Karenina's guard runs only when template deep judgment is on too (its stage list): without it
    # the trait is listed, the verdict stands.
    ("enable_all: never found, no guard", [NAMES, CLEAR], "rubric_only",
     {"mode": "enable_all", "excerpt_retry_attempts_default": 1}, {**ALL, "EXCERPTS:names_capital": INVENTED}),
    ("enable_all: never found, auto-fail", [NAMES, CLEAR], "rubric_only",
     {"mode": "enable_all", "excerpt_retry_attempts_default": 1, "template_mode": "full"},
     {**ALL, "EXCERPTS:names_capital": INVENTED}),
    ("enable_all: unreadable excerpts, auto-fail", [NAMES], "rubric_only", {"mode": "enable_all"},
     {**ALL, "EXCERPTS:names_capital": "Zanzibar-City-77"}),
    ("enable_all: score clamped", [CLEAR], "rubric_only", {"mode": "enable_all"}, {**ALL, "SCORE:clarity": NINE}),
    ("enable_all: score as text", [NAMES, CLEAR], "rubric_only", {"mode": "enable_all"},
     {**ALL, "SCORE:clarity": "I would say 2 out of 5", "SCORE:names_capital": "yes"}),
    ("use_checkpoint", [NAMES_OWN, CLEAR_OWN], "rubric_only", {"mode": "use_checkpoint"},
     {**ALL, "EXCERPTS:names_capital": [INVENTED, QUOTE]}),
    ("custom", [NAMES, CLEAR, CITY], "rubric_only",
     {"mode": "custom", "config": {"global": {"clarity": {"excerpt_enabled": False}},
                                   "question_specific": {"q": {"names_capital": {"max_excerpts": 1}}}}},
     ALL),
    ("template and rubric: auto-fail", [NAMES, CLEAR], "template_and_rubric",
     {"mode": "enable_all", "template_mode": "reasoning_only"},
     {**ALL, "EXCERPTS:names_capital": INVENTED, "PARSING": json.dumps({"capital": "Zanzibar-City-77"})}),
]  # fmt: skip

KARENINA_DJR = judge_script(
    RUBRIC_KIND_OF,
    r"""
from karenina.schemas.entities import LLMRubricTrait, RegexRubricTrait, Rubric
from karenina.schemas.verification.config import DeepJudgmentRubricCustomConfig
from karenina.benchmark.verification.runner import run_single_model_verification

out = []
for case in cases:
    set_replies(case["replies"])
    llm = [LLMRubricTrait(**f) for c, f in case["traits"] if c == "llm"]
    regex = [RegexRubricTrait(**f) for c, f in case["traits"] if c == "regex"]
    kw = {f"deep_judgment_rubric_{k}": v for k, v in case["djr"].items() if k not in ("config", "template_mode")}
    if "template_mode" in case["djr"]:
        kw["deep_judgment_mode"] = case["djr"]["template_mode"]
    if "config" in case["djr"]:
        kw["deep_judgment_rubric_config"] = DeepJudgmentRubricCustomConfig.model_validate(case["djr"]["config"])
    r = run_single_model_verification(
        "q", case["question"], case["template"], model("a"), model("j"),
        evaluation_mode=case["mode"], raw_answer=case["reference"], rubric=Rubric(llm_traits=llm, regex_traits=regex),
        cached_answer_data={"raw_llm_response": case["answer"], "usage_metadata": {}}, **kw)
    out.append(r.model_dump(mode="json"))
print(json.dumps(out))
""",
)

_SETTING = {  # our RubricDeepJudgmentConfig field -> Karenina's deep_judgment_rubric_* suffix
    "mode": "mode",
    "global_excerpts": "global_excerpts",
    "config": "config",
    "max_excerpts_default": "max_excerpts_default",
    "fuzzy_match_threshold_default": "fuzzy_match_threshold_default",
    "excerpt_retry_attempts_default": "excerpt_retry_attempts_default",
    "template_mode": "template_mode",  # not a rubric setting: the template deep_judgment_mode
}


def _bench(store: Store, traits: list[RubricTrait]) -> str:
    """The traits stored with their deep-judgment settings, as a checkpoint Karenina saved with
    ``save_deep_judgment_config=True`` holds them (its default save, like ours, strips them)."""
    b = Benchmark.create("djr", store=store)
    b.add_question(QUESTION, REFERENCE, CAPITAL, question_id="q", finished=True)
    b._set_header(rating=[karenina_rating(t.trait_type, t.karenina_fields(), "Global") for t in traits])
    return b.id


def run_ours(
    sandbox: Sandbox, traits: list[RubricTrait], mode: str, djr: dict[str, Any], replies: dict[str, Any], **kw: Any
) -> tuple[dict[str, Any], Judge, Store, Any]:
    store = Store.memory()
    judge = Judge(replies)
    answerer = ModelSpec(FunctionProvider(lambda r: ANSWER, interface="openai_endpoint"), "a", "openai_endpoint")
    rubric = {k: v for k, v in djr.items() if k != "template_mode"}
    template = DeepJudgmentConfig(mode=djr.get("template_mode", "disabled"))
    opts = RunOptions(
        mode=mode,  # type: ignore[arg-type]
        deep_judgment_rubric=RubricDeepJudgmentConfig.model_validate(rubric),
        deep_judgment=template,
        **kw,
    )
    report = run_verification(
        store, _bench(store, traits), judges=[judge.spec], answerers=[answerer], sandbox=sandbox, options=opts
    )
    (row,) = exported_rows(store, report.run_id)
    return row, judge, store, report


@pytest.fixture(scope="module")
def theirs() -> dict[str, dict[str, Any]]:
    cases = [
        {
            "question": QUESTION,
            "template": CAPITAL,
            "reference": REFERENCE,
            "answer": ANSWER,
            "mode": mode,
            "traits": [[t.trait_type, t.karenina_fields()] for t in traits],
            "djr": {_SETTING[k]: v for k, v in djr.items()},
            "replies": replies,
        }
        for _, traits, mode, djr, replies in CASES
    ]
    out = karenina(KARENINA_DJR, json.dumps(cases), timeout=600)
    return dict(zip([c[0] for c in CASES], out, strict=True))


DJR_FIELDS = (
    "deep_judgment_rubric_performed",
    "extracted_rubric_excerpts",
    "rubric_trait_reasoning",
    "deep_judgment_rubric_scores",
    "standard_rubric_scores",
    "trait_metadata",
    "traits_without_valid_excerpts",
    "rubric_hallucination_risk_assessment",
    "total_deep_judgment_model_calls",
    "total_traits_evaluated",
    "total_excerpt_retries",
)
RUBRIC_FIELDS = ("rubric_evaluation_performed", "llm_trait_scores", "regex_trait_scores", "llm_trait_labels")


def _usage_stages(row: dict[str, Any]) -> set[str]:
    return set((row["template"].get("usage_metadata") or {}).keys()) - {"total", "answer_generation"}


@pytest.mark.parametrize(("case", "traits", "mode", "djr", "replies"), CASES, ids=[c[0] for c in CASES])
def test_rubric_deep_judgment_decides_as_karenina(
    sandbox: Sandbox,
    theirs: dict[str, dict[str, Any]],
    case: str,
    traits: list[RubricTrait],
    mode: str,
    djr: dict[str, Any],
    replies: dict[str, Any],
) -> None:
    ours, judge, _, _ = run_ours(sandbox, traits, mode, djr, replies)
    ref = theirs[case]
    mine, their_failure = ours["metadata"]["failure"], ref["metadata"]["failure"]
    assert (mine and (mine["category"], mine["stage"], mine["reason"])) == (
        their_failure and (their_failure["category"], their_failure["stage"], their_failure["reason"])
    )
    assert ours["template"]["verify_result"] == ref["template"]["verify_result"]
    for f in RUBRIC_FIELDS:
        assert (ours["rubric"] or {}).get(f) == (ref["rubric"] or {}).get(f), f
    assert (ours["deep_judgment_rubric"] is None) is (ref["deep_judgment_rubric"] is None)
    if ref["deep_judgment_rubric"] is not None:
        for f in DJR_FIELDS:
            assert ours["deep_judgment_rubric"][f] == ref["deep_judgment_rubric"][f], (
                f,
                ours["deep_judgment_rubric"][f],
            )
    # A structured call with no usable reply in any attempt counts no usage, in both
    # (test_stages_retry.py: the retries).
    assert _usage_stages(ours) == _usage_stages(ref)
    # The judge never sees the reference answer in a deep-judgment call (Karenina renders none).
    steps = [r for r in judge.requests if r.stage.startswith("rubric_deep_judgment")]
    assert steps or ref["deep_judgment_rubric"] is None
    assert REFERENCE not in json.dumps([r.model_dump() for r in judge.requests])


def test_prompt_config_deep_judgment_reaches_the_steps(sandbox: Sandbox) -> None:
    """PromptConfig.deep_judgment is appended to each deep-judgment call (Karenina's dj_* tasks),
    rubric_evaluation to the ordinary rubric call."""
    prompts = PromptConfig(deep_judgment="DJ-NOTE-42", rubric_evaluation="RUBRIC-NOTE-7")
    _, judge, _, _ = run_ours(
        sandbox,
        [NAMES_OWN, CLEAR],
        "rubric_only",
        {},
        {**ALL, "BATCH": BATCH_CLEAR},
        prompt_config=prompts,
    )
    for r in judge.requests:
        system = r.messages[0].content
        if r.stage.startswith("rubric_deep_judgment"):
            assert system.endswith("DJ-NOTE-42") and "RUBRIC-NOTE-7" not in system
        elif r.stage == "rubric_evaluation":
            assert system.endswith("RUBRIC-NOTE-7") and "DJ-NOTE-42" not in system


def test_rubric_deep_judgment_results_map_validate_load_in_karenina_and_show(sandbox: Sandbox) -> None:
    """A rubric deep-judgment run: the shapes hold, Karenina loads the export as the same
    VerificationResults, the result page shows the quotes, the reasoning and the auto-fail."""
    from fastapi.testclient import TestClient

    from karenina_rdf import create_app, validate_store

    row, _, store, report = run_ours(
        sandbox,
        [NAMES, CLEAR],
        "rubric_only",
        {"mode": "enable_all", "template_mode": "full"},  # the guard needs template deep judgment on
        {**ALL, "EXCERPTS:clarity": INVENTED},
    )
    assert row["deep_judgment_rubric"]["traits_without_valid_excerpts"] == ["clarity"]
    problems = [f for r in validate_store(store) if r.run for f in r.findings if f.severity == "Violation"]
    assert problems == []
    assert karenina(KARENINA_LOAD, json.dumps([row])) == [row]
    client = TestClient(create_app(store))
    run_page = client.get(f"/runs/{report.run_id}", headers={"accept": "text/html"}).text
    (link,) = sorted(set(re.findall(r'href="(/runs/[^"]+/results/[^"]+)"', run_page)))
    page = client.get(link, headers={"accept": "text/html"}).text
    assert 'id="deep-judgment-rubric"' in page
    assert str(escape("its capital, Zanzibar-City-77")) in page
    assert str(escape(REASONING.splitlines()[0])) in page
    assert "clarity" in page and "no valid excerpts" in page
    assert "failure: deep_judgment_rubric" in page
