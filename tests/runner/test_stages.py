"""The optional stages of Karenina's pipeline, run through a real run (store, sandbox, fake judge
behind the provider interface) and compared with Karenina itself: abstention check,
sufficiency check, dynamic rubric (presence check, then evaluation), few-shot selection and
PromptConfig.

Karenina runs offline here: its ``run_single_model_verification`` (the function its batch
runner calls per task) is driven in its own environment with the answer given as cached answer
data and its judge an ``openai_endpoint`` model pointed at a small fake server inside the
script. Both sides get the same judge replies, chosen by what the call is for (Karenina's
structured-output schema name; our request's stage), and the verdicts and result fields are
compared field by field.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

import pytest
from markupsafe import escape

from karenina_rdf import Benchmark, RubricTrait, Store
from karenina_rdf.runner import (
    ChatRequest,
    DeepJudgmentConfig,
    FewShotConfig,
    FunctionProvider,
    ModelSpec,
    PromptConfig,
    QuestionFewShotConfig,
    RunOptions,
    Sandbox,
    run_verification,
)
from tests.conftest import CORPUS
from tests.helpers.karenina_ref import judge_script, karenina
from tests.helpers.stage_runs import Judge, exported_rows

pytestmark = pytest.mark.slow  # template code runs in sandbox workers; Karenina in its own environment

CAPITAL = """class Answer(BaseAnswer):
    capital: str = Field(description="The capital city named in the response")

    def ground_truth(self):
        self.correct = {"capital": "Zanzibar-City-77"}

    def verify(self) -> bool:
        return self.capital.strip().lower() == self.correct["capital"].lower()
"""
QUESTION = "What is the capital of Atlantis?"
REFERENCE = "The capital is Zanzibar-City-77 (reference answer text, never for the judge)."
DYNAMIC_CHECKPOINT = CORPUS / "generated__dynamic_rubric.jsonld"  # written by Karenina: GlobalDynamicRubricTrait

# The judge's replies by call: our request stage -> Karenina's structured-output schema name.
KINDS = {
    "abstention_check": "AbstentionResult",
    "sufficiency_check": "SufficiencyResult",
    "parsing": "Answer__Relaxed",
    "dynamic_rubric_presence_check": "ConceptPresenceResult",
    "rubric_evaluation": "BatchRubricScores",
    "deep_judgment_excerpts": "DJ_EXCERPTS",
    "deep_judgment_reasoning": "DJ_REASONING",
}
ABSTAINS = json.dumps({"reasoning": 'Quote: "I cannot answer that." No answer given.', "abstention_detected": True})
ANSWERS = json.dumps({"reasoning": "No disclaimer; it names a city.", "abstention_detected": False})
SUFFICIENT = json.dumps({"reasoning": "capital: named (Zanzibar-City-77).", "sufficient": True})
INSUFFICIENT = json.dumps({"reasoning": "capital: nothing in the response maps to it.", "sufficient": False})
PARSED = json.dumps({"capital": "Zanzibar-City-77"})
PARSED_WRONG = json.dumps({"capital": "Paris"})

# (id, answer, switches, judge replies by stage); the template question, template_only mode.
TEMPLATE_CASES: list[tuple[str, str, dict[str, bool], dict[str, str]]] = [
    ("abstains", "I cannot answer that.", {"abstention": True}, {"abstention_check": ABSTAINS, "parsing": PARSED}),
    ("answers", "It is Zanzibar-City-77.", {"abstention": True}, {"abstention_check": ANSWERS, "parsing": PARSED}),
    ("answers wrongly", "It is Paris.", {"abstention": True}, {"abstention_check": ANSWERS, "parsing": PARSED_WRONG}),
    # A reply that is no JSON: the check is not performed and does not fail the task.
    (
        "abstention reply unusable",
        "It is Zanzibar-City-77.",
        {"abstention": True},
        {"abstention_check": "I think it answers.", "parsing": PARSED},
    ),
    # JSON without the verdict: performed, Karenina's default verdict, the reply's reasoning.
    (
        "abstention verdict missing",
        "It is Zanzibar-City-77.",
        {"abstention": True},
        {"abstention_check": json.dumps({"reasoning": "hard to say"}), "parsing": PARSED},
    ),
    (
        "insufficient",
        "Somewhere in the ocean.",
        {"sufficiency": True},
        {"sufficiency_check": INSUFFICIENT, "parsing": PARSED},
    ),
    (
        "sufficient",
        "It is Zanzibar-City-77.",
        {"sufficiency": True},
        {"sufficiency_check": SUFFICIENT, "parsing": PARSED},
    ),
    (
        "sufficiency reply unusable",
        "It is Zanzibar-City-77.",
        {"sufficiency": True},
        {"sufficiency_check": "```json\nnot json\n```", "parsing": PARSED},
    ),
    # Abstention first: an abstaining answer is never checked for sufficiency.
    (
        "both, abstains",
        "I cannot answer that.",
        {"abstention": True, "sufficiency": True},
        {"abstention_check": ABSTAINS, "sufficiency_check": SUFFICIENT, "parsing": PARSED},
    ),
    (
        "both, insufficient",
        "Somewhere in the ocean.",
        {"abstention": True, "sufficiency": True},
        {"abstention_check": ANSWERS, "sufficiency_check": INSUFFICIENT, "parsing": PARSED},
    ),
    (
        "both, passes",
        "It is Zanzibar-City-77.",
        {"abstention": True, "sufficiency": True},
        {"abstention_check": ANSWERS, "sufficiency_check": SUFFICIENT, "parsing": PARSED},
    ),
]

DYN_ANSWER = "BCL2 blocks BAX, which stops mitochondrial outer membrane permeabilisation."
PRESENT = json.dumps(
    {
        "results": [
            {"trait_name": "mechanism", "present": True},
            {"trait_name": "mentions_bax", "present": True},
            {"trait_name": "partners", "present": False},
        ]
    }
)
NONE_PRESENT = json.dumps({"results": [{"trait_name": n, "present": False} for n in ("mechanism", "mentions_bax")]})
SCORES = json.dumps({"scores": {"accuracy": 4, "mechanism": 3}})
# (id, switches, replies): the checkpoint Karenina wrote with a global dynamic rubric, rubric_only.
DYNAMIC_CASES: list[tuple[str, dict[str, bool], dict[str, str]]] = [
    ("dynamic: two present, one absent", {}, {"dynamic_rubric_presence_check": PRESENT, "rubric_evaluation": SCORES}),
    ("dynamic: none present", {}, {"dynamic_rubric_presence_check": NONE_PRESENT, "rubric_evaluation": SCORES}),
    ("dynamic: presence reply unusable", {},
     {"dynamic_rubric_presence_check": "present!", "rubric_evaluation": SCORES}),
    # rubric_only: an abstention sets verify_result False; the rubric is still evaluated.
    ("dynamic: abstains", {"abstention": True},
     {"abstention_check": ABSTAINS, "dynamic_rubric_presence_check": PRESENT, "rubric_evaluation": SCORES}),
]  # fmt: skip

DJ_ANSWER = "Atlantis is governed from its capital, Zanzibar-City-77, on the eastern shore."
GOOD_QUOTE = json.dumps({"capital": [{"text": "its capital, Zanzibar-City-77", "confidence": "high"}]})
INVENTED = json.dumps({"capital": [{"text": "The capital was moved to Poseidonia in 1902", "confidence": "high"}]})
NO_EVIDENCE = json.dumps({"capital": [{"text": "", "confidence": "none", "explanation": "not stated"}]})
DJ_REASONING = json.dumps({"capital": "The quote names Zanzibar-City-77 as the capital."})
# (id, deep_judgment_mode, judge replies by stage; a list is one reply per call)
DJ_CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("dj: quoted", "full", {"deep_judgment_excerpts": GOOD_QUOTE, "deep_judgment_reasoning": DJ_REASONING,
                            "parsing": PARSED}),
    ("dj: invented, then quoted", "full", {"deep_judgment_excerpts": [INVENTED, GOOD_QUOTE],
                                           "deep_judgment_reasoning": DJ_REASONING, "parsing": PARSED}),
    ("dj: no evidence, auto-fail", "full", {"deep_judgment_excerpts": NO_EVIDENCE,
                                            "deep_judgment_reasoning": DJ_REASONING, "parsing": PARSED}),
    ("dj: invented every time", "full", {"deep_judgment_excerpts": INVENTED, "deep_judgment_reasoning": DJ_REASONING,
                                         "parsing": PARSED}),
    ("dj: fenced quote, wrong value", "full", {"deep_judgment_excerpts": f"```json\n{GOOD_QUOTE}\n```",
                                               "deep_judgment_reasoning": DJ_REASONING, "parsing": PARSED_WRONG}),
    ("dj: excerpts never JSON", "full", {"deep_judgment_excerpts": "capital: Zanzibar-City-77",
                                         "deep_judgment_reasoning": DJ_REASONING, "parsing": PARSED}),
    ("dj: reasoning only", "reasoning_only", {"deep_judgment_reasoning": DJ_REASONING, "parsing": PARSED}),
]  # fmt: skip

KARENINA_RUN = judge_script(
    r"""
def kind_of(body):
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    system = " ".join(m.get("content") or "" for m in body["messages"] if m["role"] == "system")
    if "excerpt extractor" in system:
        return "DJ_EXCERPTS"
    if name:  # retries without a schema are for the last named kind
        return "Answer__Relaxed" if name.startswith("Answer") else name
    if "DJ_REASONING" in state["queues"] and "reasoning" in system.lower():
        return "DJ_REASONING"
    return state["kind"]

""",
    r"""
from karenina import Benchmark
from karenina.benchmark.verification.runner import run_single_model_verification

out = []
for case in cases:
    set_replies(case["replies"])
    kw = {}
    if case.get("checkpoint"):
        b = Benchmark.load(case["checkpoint"])
        kw = {"rubric": b.get_global_rubric(), "dynamic_rubric": b.get_global_dynamic_rubric()}
    dj = case.get("deep_judgment") or {}
    kw.update({f"deep_judgment_{k}": v for k, v in dj.items()})
    r = run_single_model_verification(
        "q", case["question"], case["template"], model("a"), model("j"),
        abstention_enabled=case["abstention"], sufficiency_enabled=case["sufficiency"],
        evaluation_mode=case["mode"], raw_answer=case["reference"],
        cached_answer_data={"raw_llm_response": case["answer"], "usage_metadata": {}}, **kw)
    out.append(r.model_dump(mode="json"))
print(json.dumps(out))
""",
)


class Fake:
    """A fake model answering ``fn(request)``; every request kept."""

    def __init__(self, name: str, fn: Callable[[ChatRequest], str]) -> None:
        self.requests: list[ChatRequest] = []
        self.lock = threading.Lock()

        def record(request: ChatRequest) -> str:
            with self.lock:
                self.requests.append(request)
            return fn(request)

        self.spec = ModelSpec(FunctionProvider(record, interface="openai_endpoint"), name, "openai_endpoint")

    def stages(self) -> list[str]:
        return [r.stage for r in self.requests]


def judge_of(replies: dict[str, Any]) -> Judge:
    """A judge answering by stage; a list is one reply per call, its last one repeated."""
    return Judge(replies, kinds={})


def run_ours(
    sandbox: Sandbox, store: Store, bench: str, answer: str, replies: dict[str, str], opts: RunOptions
) -> tuple[dict[str, Any], Judge, Any]:
    judge = judge_of(replies)
    report = run_verification(
        store, bench, judges=[judge.spec], answerers=[Fake("a", lambda r: answer).spec], sandbox=sandbox, options=opts
    )
    (row,) = exported_rows(store, report.run_id)
    return row, judge, report


def template_bench(store: Store) -> str:
    b = Benchmark.create("stages", store=store)
    b.add_question(QUESTION, REFERENCE, CAPITAL, question_id="q", finished=True)
    return b.id


def _karenina_case(answer: str, switches: dict[str, bool], replies: dict[str, str], **kw: Any) -> dict[str, Any]:
    return {
        "question": kw.get("question", QUESTION),
        "template": kw.get("template", CAPITAL),
        "reference": kw.get("reference", REFERENCE),
        "answer": answer,
        "abstention": switches.get("abstention", False),
        "sufficiency": switches.get("sufficiency", False),
        "mode": kw.get("mode", "template_only"),
        "checkpoint": kw.get("checkpoint"),
        "replies": {KINDS[k]: v for k, v in replies.items()},
        "deep_judgment": kw.get("deep_judgment"),
    }


@pytest.fixture(scope="module")
def theirs() -> dict[str, dict[str, Any]]:
    """Karenina's result for every case, from one run of its pipeline."""
    cases = [_karenina_case(answer, sw, rep) for _, answer, sw, rep in TEMPLATE_CASES]
    text, reference = _dynamic_question()
    cases += [
        _karenina_case(
            DYN_ANSWER,
            sw,
            rep,
            question=text,
            reference=reference,
            template="",
            mode="rubric_only",
            checkpoint=str(DYNAMIC_CHECKPOINT),
        )
        for _, sw, rep in DYNAMIC_CASES
    ]
    cases += [
        _karenina_case(DJ_ANSWER, {}, rep, deep_judgment={"mode": mode, "excerpt_retry_attempts": 2})
        for _, mode, rep in DJ_CASES
    ]
    out = karenina(KARENINA_RUN, json.dumps(cases), timeout=600)
    ids = [c[0] for c in TEMPLATE_CASES] + [c[0] for c in DYNAMIC_CASES] + [c[0] for c in DJ_CASES]
    return dict(zip(ids, out, strict=True))


def _dynamic_question() -> tuple[str, str]:
    item = json.loads(DYNAMIC_CHECKPOINT.read_text())["dataFeedElement"][0]["item"]
    return item["text"], item["acceptedAnswer"]["text"]


CHECK_FIELDS = [
    f"{c}_{f}" for c in ("abstention", "sufficiency") for f in ("check_performed", "detected", "override_applied")
] + ["abstention_reasoning", "sufficiency_reasoning", "verify_result", "template_verification_performed"]


def _usage_stages(row: dict[str, Any]) -> set[str]:
    return set(row["template"]["usage_metadata"] or {}) - {"total", "answer_generation"}


@pytest.mark.parametrize(("case", "answer", "switches", "replies"), TEMPLATE_CASES, ids=[c[0] for c in TEMPLATE_CASES])
def test_checks_decide_as_karenina(
    sandbox: Sandbox,
    theirs: dict[str, dict[str, Any]],
    case: str,
    answer: str,
    switches: dict[str, bool],
    replies: dict[str, str],
) -> None:
    store = Store.memory()
    opts = RunOptions(
        abstention_enabled=switches.get("abstention", False), sufficiency_enabled=switches.get("sufficiency", False)
    )
    ours, judge, report = run_ours(sandbox, store, template_bench(store), answer, replies, opts)
    ref = theirs[case]
    for f in CHECK_FIELDS:
        assert ours["template"][f] == ref["template"][f], f
    assert ours["template"]["parsed_llm_response"] == ref["template"]["parsed_llm_response"]
    # Karenina's structured-output call raises after its last attempt on an unusable reply and
    # the check records no usage; nor does it here (test_stages_retry.py: the retries).
    assert _usage_stages(ours) == _usage_stages(ref)
    # Which calls were made: no parsing after an abstention or an insufficient answer.
    assert ("parsing" in judge.stages()) is (ref["template"]["parsed_llm_response"] is not None)
    mine, karenina_failure = ours["metadata"]["failure"], ref["metadata"]["failure"]
    if (
        switches.get("sufficiency")
        and ref["template"]["sufficiency_check_performed"] is not None
        and not (ref["template"]["abstention_detected"])
    ):
        # Karenina's classifier tests ``sufficiency_detected`` for truth, and True means
        # *sufficient*: there a passing answer judged sufficient (or not checked: the default
        # is sufficient) fails with "sufficiency", and an insufficient one does not fail at
        # all. Here it is classified as its spec says (§8 rule 4: insufficiency -> sufficiency).
        insufficient = ref["template"]["sufficiency_detected"] is False
        assert (karenina_failure is None) is insufficient
        assert (mine is not None and mine["category"] == "sufficiency") is insufficient
        if not insufficient:
            assert karenina_failure["category"] == "sufficiency" and mine is None
    else:
        assert (mine and mine["category"], mine and mine["stage"]) == (
            karenina_failure and karenina_failure["category"],
            karenina_failure and karenina_failure["stage"],
        )
        if karenina_failure and karenina_failure["category"] in ("abstention", "sufficiency"):
            assert mine["reason"] == karenina_failure["reason"] and mine["group"] == "abstained"
    if switches.get("abstention"):
        assert report.abstained == (ours["template"]["abstention_detected"] is True)
    if switches.get("sufficiency"):
        assert report.insufficient == (ours["template"]["sufficiency_detected"] is False)
    assert (report.abstained is None, report.insufficient is None) == (
        not switches.get("abstention"),
        not switches.get("sufficiency"),
    )


@pytest.mark.parametrize(("case", "switches", "replies"), DYNAMIC_CASES, ids=[c[0] for c in DYNAMIC_CASES])
def test_dynamic_rubric_decides_as_karenina(
    sandbox: Sandbox, theirs: dict[str, dict[str, Any]], case: str, switches: dict[str, bool], replies: dict[str, str]
) -> None:
    """Through a real run: the checkpoint Karenina wrote, imported, its global dynamic traits read
    from the store (not through the authoring API), checked for presence, then evaluated."""
    store = Store.memory()
    bench = store.import_checkpoint(DYNAMIC_CHECKPOINT).benchmark_id
    opts = RunOptions(mode="rubric_only", abstention_enabled=switches.get("abstention", False))
    ours, judge, _ = run_ours(sandbox, store, bench, DYN_ANSWER, replies, opts)
    ref = theirs[case]
    # One call, or Karenina's four structured-output attempts of two calls for an unusable reply.
    unusable = replies["dynamic_rubric_presence_check"] == "present!"
    assert judge.stages().count("dynamic_rubric_presence_check") == (8 if unusable else 1)
    mine, karenina_failure = ours["metadata"]["failure"], ref["metadata"]["failure"]
    assert (mine and mine["category"]) == (karenina_failure and karenina_failure["category"])
    if mine and mine["category"] == "unexpected_error":  # an unusable presence reply fails the stage
        assert ours["rubric"] is None is ref["rubric"] and "presence check" in mine["reason"]
        return
    assert (ours["rubric"] is None) is (ref["rubric"] is None)
    for f in ("verify_result", "abstention_detected", "abstention_override_applied"):
        assert ours["template"][f] == ref["template"][f], f
    assert _usage_stages(ours) == _usage_stages(ref)
    if ref["rubric"] is None:
        return
    for f in (
        "llm_trait_scores",
        "regex_trait_scores",
        "metric_trait_scores",
        "dynamic_rubric_skipped_traits",
        "dynamic_rubric_promoted_traits",
    ):
        assert ours["rubric"][f] == ref["rubric"][f], (f, ours["rubric"][f], ref["rubric"][f])
    # Karenina's per-task function is given the static rubric without provenance (its batch
    # runner adds it); the promoted traits' provenance is the stage's own.
    promoted = ref["rubric"]["dynamic_rubric_promoted_traits"] or []
    assert ({n: ours["rubric"]["trait_provenance"][n] for n in promoted} or None) == ref["rubric"]["trait_provenance"]
    assert ours["rubric"]["trait_provenance"]["accuracy"] == "global"


def test_dynamic_traits_are_not_evaluated_in_template_only(sandbox: Sandbox) -> None:
    store = Store.memory()
    bench = store.import_checkpoint(DYNAMIC_CHECKPOINT).benchmark_id
    b = Benchmark(store, bench)
    qid = b.get_question_ids()[0]
    b.add_answer_template(qid, CAPITAL)
    ours, judge, report = run_ours(sandbox, store, bench, DYN_ANSWER, {"parsing": PARSED}, RunOptions())
    assert "dynamic_rubric_presence_check" not in judge.stages() and ours["rubric"] is None
    assert any("3 dynamic rubric trait(s) not evaluated" in n for n in report.notes)


def test_judge_never_sees_the_reference_answer_in_the_new_stages(sandbox: Sandbox) -> None:
    store = Store.memory()
    bench = template_bench(store)
    b = Benchmark(store, bench)
    dyn = RubricTrait.llm("cites", "Cites a source", summary="citations").to_rating("Global")
    dyn["additionalType"] = "karenina:GlobalDynamicRubricTrait"
    dyn.setdefault("additionalProperty", []).append(
        {"@type": "PropertyValue", "name": "dynamic_trait_type", "value": "llm"}
    )
    header = b._header()
    header["rating"] = [dyn]
    b._apply(b._header_update(header))
    replies = {
        "abstention_check": ANSWERS,
        "sufficiency_check": SUFFICIENT,
        "parsing": PARSED,
        "dynamic_rubric_presence_check": json.dumps({"results": [{"trait_name": "cites", "present": True}]}),
        "rubric_evaluation": json.dumps({"scores": {"cites": True}}),
    }
    opts = RunOptions(mode="template_and_rubric", abstention_enabled=True, sufficiency_enabled=True)
    ours, judge, _ = run_ours(sandbox, store, bench, "It is Zanzibar-City-77.", replies, opts)
    assert judge.stages() == [
        "abstention_check",
        "sufficiency_check",
        "parsing",
        "dynamic_rubric_presence_check",
        "rubric_evaluation",
    ]
    assert ours["rubric"]["llm_trait_scores"] == {"cites": True}
    for request in judge.requests:
        text = json.dumps(request.model_dump())
        assert REFERENCE not in text, request.stage
        assert '"correct"' not in text and "def verify" not in text, request.stage
    # The template's ground truth reaches no judge call either (the sufficiency schema is the
    # judge schema, stripped by the sandbox); the answer's own words do.
    sufficiency = next(r for r in judge.requests if r.stage == "sufficiency_check")
    assert '"capital"' in sufficiency.messages[-1].content
    assert all(r.temperature == 0.0 for r in judge.requests if r.stage.endswith("check"))


def test_prompt_config_reaches_each_kind_of_call(sandbox: Sandbox) -> None:
    """Karenina's PromptConfig: the instructions of a task go last in its system text; rubric
    calls (the presence check included) fall back to ``rubric_evaluation``."""
    store = Store.memory()
    bench = template_bench(store)
    Benchmark(store, bench).add_global_rubric_trait(RubricTrait.llm("clear", "Is it clear?"))
    pc = PromptConfig(
        generation="GEN-NOTE",
        parsing="PARSE-NOTE",
        abstention_detection="ABST-NOTE",
        sufficiency_detection="SUFF-NOTE",
        rubric_evaluation="RUBRIC-NOTE",
        deep_judgment="DJ-NOTE",
    )
    replies = {
        "abstention_check": ANSWERS,
        "sufficiency_check": SUFFICIENT,
        "parsing": PARSED,
        "rubric_evaluation": json.dumps({"scores": {"clear": True}}),
        "deep_judgment_excerpts": json.dumps({"capital": [{"text": "Zanzibar-City-77", "confidence": "high"}]}),
        "deep_judgment_reasoning": DJ_REASONING,
    }
    answerer = Fake("a", lambda r: "It is Zanzibar-City-77.")
    judge = judge_of(replies)
    opts = RunOptions(
        mode="template_and_rubric",
        abstention_enabled=True,
        sufficiency_enabled=True,
        prompt_config=pc,
        deep_judgment=DeepJudgmentConfig(mode="full"),
    )
    run_verification(store, bench, judges=[judge.spec], answerers=[answerer.spec], sandbox=sandbox, options=opts)
    systems = {r.stage: r.messages[0].content for r in [*judge.requests, *answerer.requests]}
    expected = {
        "answer_generation": "GEN-NOTE",
        "parsing": "PARSE-NOTE",
        "abstention_check": "ABST-NOTE",
        "sufficiency_check": "SUFF-NOTE",
        "rubric_evaluation": "RUBRIC-NOTE",
        "deep_judgment_excerpts": "DJ-NOTE",
        "deep_judgment_reasoning": "DJ-NOTE",
    }
    for stage, note in expected.items():
        assert systems[stage].endswith("\n\n" + note), stage
        others = set(expected.values()) - {note}  # each call gets its own task's instructions only
        assert not any(o in systems[stage] for o in others), stage
    assert PromptConfig(rubric_evaluation="R").for_task("rubric_dynamic_presence_check") == "R"
    assert PromptConfig(deep_judgment="D").for_task("dj_template_reasoning") == "D"
    assert PromptConfig().for_task("generation") is None


POOL = [{"question": f"Example question {i}?", "answer": f"Answer {i}."} for i in range(6)]
FEW_SHOT_CASES: list[tuple[str, dict[str, Any]]] = [
    ("none", {"source": "disabled"}),
    ("all", {}),
    ("k-shot", {"pool_mode": "k-shot", "pool_k": 3}),
    ("k-shot, k above the pool", {"pool_mode": "k-shot", "pool_k": 9}),
    ("custom by index", {"pool_mode": "custom", "question_configs": {"q": {"selected_examples": [4, 1]}}}),
    (
        "custom by hash",
        {"pool_mode": "custom", "question_configs": {"q": {"selected_examples": ["HASH2", 0]}}},
    ),
    ("per question k-shot", {"question_configs": {"q": {"mode": "k-shot", "k": 2}}}),
    ("excluded", {"question_configs": {"q": {"excluded_examples": [0, "HASH3"]}}}),
    ("global only", {"source": "global", "global_examples": [{"question": "G?", "answer": "g."}]}),
    ("both", {"pool_mode": "k-shot", "pool_k": 2, "global_examples": [{"question": "G?", "answer": "g."}]}),
]

KARENINA_FEW_SHOT = r"""
import json, sys
from karenina.schemas.config import FewShotConfig
from karenina.benchmark.verification.utils.llm_invocation import _construct_few_shot_prompt
pool, question, configs = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
out = []
for raw in configs:
    cfg = FewShotConfig.model_validate(raw)
    examples = cfg.resolve_examples_for_question("q", pool, question) if cfg.source != "disabled" else None
    enabled = cfg.source != "disabled"
    out.append({"prompt": _construct_few_shot_prompt(question, examples, enabled),
                "count": len(examples) if examples else 0, "enabled": enabled})
print(json.dumps(out))
"""


def _hashes(raw: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(raw)
    for i, e in enumerate(POOL):
        text = text.replace(f'"HASH{i}"', json.dumps(FewShotConfig.generate_example_hash(e["question"])))
    return json.loads(text)


def test_few_shot_selection_is_karenina_s(sandbox: Sandbox) -> None:
    """The answering prompt and the two result fields, per FewShotConfig, against Karenina's
    ``resolve_examples_for_question`` and prompt construction (k-shot draws included)."""
    configs = [_hashes(raw) for _, raw in FEW_SHOT_CASES]
    ref = karenina(KARENINA_FEW_SHOT, json.dumps(POOL), QUESTION, json.dumps(configs))
    store = Store.memory()
    b = Benchmark.create("few-shot", store=store)
    b.add_question(QUESTION, REFERENCE, CAPITAL, question_id="q", finished=True, few_shot_examples=POOL)
    for (case, _), raw, want in zip(FEW_SHOT_CASES, configs, ref, strict=True):
        answerer = Fake("a", lambda r: "It is Zanzibar-City-77.")
        opts = RunOptions(few_shot_config=FewShotConfig.model_validate(raw))
        report = run_verification(
            store,
            b.id,
            judges=[judge_of({"parsing": PARSED}).spec],
            answerers=[answerer.spec],
            sandbox=sandbox,
            options=opts,
        )
        (request,) = answerer.requests
        assert request.messages[-1].content == want["prompt"], case
        meta = exported_rows(store, report.run_id)[0]["metadata"]
        assert (meta["few_shot_enabled"], meta["few_shot_example_count"]) == (want["enabled"], want["count"]), case
    with pytest.raises(ValueError, match="pool_k"):
        FewShotConfig(pool_k=0)
    assert QuestionFewShotConfig().mode == "inherit"


KARENINA_LOAD = r"""
import json, sys
from karenina.schemas.verification.result import VerificationResult
rows = json.loads(sys.argv[1])
print(json.dumps([VerificationResult.model_validate(r).model_dump(mode="json") for r in rows]))
"""


def test_check_results_map_validate_export_and_load_in_karenina(sandbox: Sandbox) -> None:
    """Two questions, one abstaining and one insufficient: the stored run meets the shapes, its
    export loads in Karenina as the same VerificationResults, the run page counts them and each
    result page shows the verdict and the judge's reasoning."""
    from fastapi.testclient import TestClient

    from karenina_rdf import create_app, validate_store

    store = Store.memory()
    b = Benchmark.create("checks", store=store)
    b.add_question(QUESTION, REFERENCE, CAPITAL, question_id="q-abstains", finished=True)
    b.add_question("Name the capital of Atlantis.", REFERENCE, CAPITAL, question_id="q-vague", finished=True)
    b.add_question("Which city is Atlantis' capital?", REFERENCE, CAPITAL, question_id="q-fine", finished=True)

    def judge(r: ChatRequest) -> str:
        user = r.messages[-1].content
        if r.stage == "abstention_check":
            return ABSTAINS if "What is the capital" in user else ANSWERS
        if r.stage == "sufficiency_check":
            return INSUFFICIENT if "Name the capital" in user else SUFFICIENT
        return PARSED

    j = Fake("j", judge)
    answerer = Fake(
        "a", lambda r: "I cannot answer that." if "What is" in r.messages[-1].content else "Zanzibar-City-77"
    )
    opts = RunOptions(abstention_enabled=True, sufficiency_enabled=True)
    report = run_verification(store, b.id, judges=[j.spec], answerers=[answerer.spec], sandbox=sandbox, options=opts)
    assert (report.abstained, report.insufficient, report.passed, report.failed) == (1, 1, 1, 2)
    assert report.failures == {"abstention": 1, "sufficiency": 1}
    problems = [f for r in validate_store(store) if r.run for f in r.findings if f.severity == "Violation"]
    assert problems == []
    rows = exported_rows(store, report.run_id)
    assert karenina(KARENINA_LOAD, json.dumps(rows)) == rows
    by_id = {r["metadata"]["question_id"]: r for r in rows}
    assert by_id["q-abstains"]["template"]["abstention_reasoning"] == json.loads(ABSTAINS)["reasoning"]
    assert by_id["q-vague"]["template"]["sufficiency_detected"] is False

    client = TestClient(create_app(store))
    run_page = client.get(f"/runs/{report.run_id}", headers={"accept": "text/html"}).text
    assert 'data-count="abstained">1<' in run_page and 'data-count="insufficient">1<' in run_page
    links = sorted(set(re.findall(r'href="(/runs/[^"]+/results/[^"]+)"', run_page)))
    pages = [client.get(link, headers={"accept": "text/html"}).text for link in links]
    assert len(pages) == 3
    abstained = next(p for p in pages if 'data-verdict="abstained"' in p)
    assert str(escape(json.loads(ABSTAINS)["reasoning"])) in abstained
    vague = next(p for p in pages if 'data-verdict="insufficient"' in p)
    assert "nothing in the response maps to it" in vague and 'data-verdict="answered"' in vague
    fine = next(p for p in pages if p not in (abstained, vague))
    assert 'data-verdict="sufficient"' in fine and "failure:" not in fine


DJ_FIELDS = (
    "deep_judgment_mode",
    "deep_judgment_performed",
    "extracted_excerpts",
    "attribute_reasoning",
    "deep_judgment_stages_completed",
    "deep_judgment_model_calls",
    "deep_judgment_excerpt_retry_count",
    "attributes_without_excerpts",
    "deep_judgment_search_enabled",
    "hallucination_risk_assessment",
)


@pytest.mark.parametrize(("case", "mode", "replies"), DJ_CASES, ids=[c[0] for c in DJ_CASES])
def test_deep_judgment_decides_as_karenina(
    sandbox: Sandbox, theirs: dict[str, dict[str, Any]], case: str, mode: str, replies: dict[str, Any]
) -> None:
    """Template deep judgment (no web search) and its auto-fail guard, through a real run, with
    the same judge replies as Karenina's pipeline: quotes, their similarity scores, retries,
    reasoning, calls, attributes without evidence, the verdict and the failure."""
    store = Store.memory()
    opts = RunOptions(deep_judgment=DeepJudgmentConfig(mode=mode, excerpt_retry_attempts=2))  # type: ignore[arg-type]
    ours, judge, _ = run_ours(sandbox, store, template_bench(store), DJ_ANSWER, replies, opts)
    ref = theirs[case]
    mine, karenina_failure = ours["metadata"]["failure"], ref["metadata"]["failure"]
    if karenina_failure and karenina_failure["stage"] == "ParseTemplate":
        # Karenina's classifier files parse failures under stage "parse_template", but the stage
        # records its own error under its class name, so there they fall through to
        # unexpected_error at "ParseTemplate". Here: parsing at parse_template (spec §8 rule 6).
        assert karenina_failure["category"] == "unexpected_error"
        assert (mine["category"], mine["stage"]) == ("parsing", "parse_template")
        assert "Deep judgment parsing failed" in mine["reason"]
        assert "Deep judgment parsing failed" in karenina_failure["reason"]
    else:
        assert (mine and (mine["category"], mine["stage"])) == (
            karenina_failure and (karenina_failure["category"], karenina_failure["stage"])
        )
    if karenina_failure and karenina_failure["category"] == "deep_judgment":
        assert mine["reason"] == karenina_failure["reason"] and mine["group"] == "autofail"
    if karenina_failure and karenina_failure["category"] == "parsing":
        assert (
            "Deep judgment parsing failed" in mine["reason"]
            and "Deep judgment parsing failed" in (karenina_failure["reason"])
        )
    for f in ("verify_result", "template_verification_performed", "parsed_llm_response"):
        assert ours["template"][f] == ref["template"][f], f
    assert (ours["deep_judgment"] is None) is (ref["deep_judgment"] is None)
    if ref["deep_judgment"] is not None:
        for f in DJ_FIELDS:
            assert ours["deep_judgment"][f] == ref["deep_judgment"][f], (f, ours["deep_judgment"][f])
    assert _usage_stages(ours) == _usage_stages(ref)
    text = json.dumps([r.model_dump() for r in judge.requests])
    assert REFERENCE not in text and '"correct"' not in text


def test_deep_judgment_results_map_validate_load_in_karenina_and_show(sandbox: Sandbox) -> None:
    """A deep-judgment run (one question quoted, one auto-failed): the shapes hold, Karenina loads
    the export as the same VerificationResults, the result page shows quotes and reasoning."""
    from fastapi.testclient import TestClient

    from karenina_rdf import create_app, validate_store

    store = Store.memory()
    b = Benchmark.create("deep judgment", store=store)
    b.add_question(QUESTION, REFERENCE, CAPITAL, question_id="q-quoted", finished=True)
    b.add_question("Name the capital of Atlantis.", REFERENCE, CAPITAL, question_id="q-bare", finished=True)

    def judge(r: ChatRequest) -> str:
        if r.stage == "deep_judgment_excerpts":
            return GOOD_QUOTE if "What is the capital" in r.messages[-1].content else NO_EVIDENCE
        return {"deep_judgment_reasoning": DJ_REASONING, "parsing": PARSED}.get(r.stage, "{}")

    j, a = Fake("j", judge), Fake("a", lambda r: DJ_ANSWER)
    opts = RunOptions(deep_judgment=DeepJudgmentConfig(mode="full"))
    report = run_verification(store, b.id, judges=[j.spec], answerers=[a.spec], sandbox=sandbox, options=opts)
    assert (report.passed, report.failures) == (1, {"deep_judgment": 1})
    problems = [f for r in validate_store(store) if r.run for f in r.findings if f.severity == "Violation"]
    assert problems == []
    rows = exported_rows(store, report.run_id)
    assert karenina(KARENINA_LOAD, json.dumps(rows)) == rows
    client = TestClient(create_app(store))
    run_page = client.get(f"/runs/{report.run_id}", headers={"accept": "text/html"}).text
    links = sorted(set(re.findall(r'href="(/runs/[^"]+/results/[^"]+)"', run_page)))
    pages = [client.get(link, headers={"accept": "text/html"}).text for link in links]
    quoted = next(p for p in pages if "its capital, Zanzibar-City-77" in p)
    assert 'id="deep-judgment"' in quoted and str(escape(json.loads(DJ_REASONING)["capital"])) in quoted
    bare = next(p for p in pages if p is not quoted)
    assert "no evidence" in bare and "none: not stated" in bare and "failure: deep_judgment" in bare
