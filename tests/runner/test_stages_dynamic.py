"""Dynamic rubric traits next to a static rubric, through a real run, compared with Karenina's
own run offline: which traits are scored (``llm_trait_scores``, ``regex_trait_scores``), where
each came from (``trait_provenance``: ``global``, ``question_specific``, ``dynamic``), the
promoted and skipped dynamic traits and ``rubric_evaluation_performed``; also a question's own
dynamic traits, ``rubric_trait_names`` and a rubric judge call that gets no usable reply.

Karenina's side is its ``Benchmark.run_verification`` on the checkpoint our store writes, with
only the batch runner's loop replaced (the answers are given as cached answer data, the tasks run
one after the other): its own templates, rubric merge (``merge_rubrics_for_task``, which gives
the static provenance), dynamic rubric merge and task dicts, its ``execute_task`` and pipeline,
its judge a fake OpenAI-compatible server (tests/helpers/karenina_ref.FAKE_OPENAI_JUDGE). The
test_stages.py harness calls ``run_single_model_verification`` directly and so never sees the
static provenance the batch runner adds; this one does.

The case that prompted it: in an every-stage run (rubric deep judgment ``enable_all``) a
promoted dynamic regex trait is listed in ``trait_provenance`` as ``dynamic`` and has no score.
That is Karenina's behaviour (rubric_evaluation.py: the promotion, l. 438-476, sets the
provenance for every promoted trait; with an LLM trait on the deep-judgment path, l. 225-259,
only LLM traits go to the evaluator, so no regex or callable trait is scored), asserted here
against Karenina itself.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from karenina_rdf import Benchmark, RubricTrait, Store
from karenina_rdf.runner import (
    FunctionProvider,
    ModelSpec,
    RubricDeepJudgmentConfig,
    RunOptions,
    Sandbox,
    run_verification,
)
from tests.helpers.karenina_ref import RUBRIC_KIND_OF, judge_script, karenina
from tests.helpers.stage_runs import Judge, exported_rows
from tests.runner.test_stages import CAPITAL, QUESTION, REFERENCE

pytestmark = pytest.mark.slow  # sandbox workers; Karenina in its own environment
# One sandbox worker (tests/runner/conftest.py): tasks run in the order they are queued, as in
# Karenina's runner, so two answering models' tasks meet the judge in the same order.
SANDBOX_WORKERS = 1

WITH_LITERATURE = (
    "Atlantis is governed from its capital, Zanzibar-City-77, on the eastern shore. The literature agrees."
)
WITHOUT = "Atlantis is governed from its capital, Zanzibar-City-77, on the eastern shore."

GLOBAL = [RubricTrait.llm("clarity", "Is the answer clearly stated?"), RubricTrait.regex("mentions_city", r"City")]
OWN = [
    RubricTrait.llm("names_shore", "Does the answer say where the capital lies?"),
    RubricTrait.regex("says_shore", "shore"),
]
DYNAMIC = [
    RubricTrait.llm("explains_mechanism", "Explains the mechanism", kind="score", min_score=1, max_score=5,
                    summary="Mechanism"),
    RubricTrait.regex("mentions_literature", "literature", summary="Literature"),
]  # fmt: skip


def presence(*present: str) -> str:
    return json.dumps({"results": [{"trait_name": t.name, "present": t.name in present} for t in DYNAMIC]})


BOTH, ONLY_REGEX, ONLY_LLM, NONE = (
    presence("explains_mechanism", "mentions_literature"),
    presence("mentions_literature"),
    presence("explains_mechanism"),
    presence(),
)
BATCH = json.dumps({"scores": {"clarity": True, "names_shore": True, "explains_mechanism": 4}})
PARSED = json.dumps({"capital": "Zanzibar-City-77"})
QUOTE = json.dumps({"excerpts": [{"text": "its capital, Zanzibar-City-77", "confidence": "high"}]})
REASONING = "Evidence: the quote names the capital.\nInterpretation: it is stated.\nConclusion: met."
DJ = {
    "EXCERPTS": QUOTE,
    "REASONING": REASONING,
    "SCORE:clarity": json.dumps({"result": True}),
    "SCORE:names_shore": json.dumps({"result": False}),
    "SCORE:explains_mechanism": json.dumps({"score": 3}),
}

# (id, static rubrics ("global", "question"), answer, deep_judgment_rubric mode, replies by kind)
CASES: list[tuple[str, tuple[str, ...], str, str, dict[str, Any]]] = [
    ("both promoted, regex matches", ("global", "question"), WITH_LITERATURE, "disabled", {"PRESENCE": BOTH}),
    ("both promoted, regex does not match", ("global", "question"), WITHOUT, "disabled", {"PRESENCE": BOTH}),
    ("only the regex trait present", ("global", "question"), WITH_LITERATURE, "disabled", {"PRESENCE": ONLY_REGEX}),
    ("only the llm trait present", ("global", "question"), WITH_LITERATURE, "disabled", {"PRESENCE": ONLY_LLM}),
    ("none present", ("global", "question"), WITH_LITERATURE, "disabled", {"PRESENCE": NONE}),
    ("global rubric only", ("global",), WITH_LITERATURE, "disabled", {"PRESENCE": BOTH}),
    ("question rubric only", ("question",), WITH_LITERATURE, "disabled", {"PRESENCE": BOTH}),
    ("no static rubric, regex promoted", (), WITH_LITERATURE, "disabled", {"PRESENCE": ONLY_REGEX}),
    ("no static rubric, none present", (), WITH_LITERATURE, "disabled", {"PRESENCE": NONE}),
    # The every-stage run's case: rubric deep judgment on, the regex traits (static and promoted)
    # get no score; the promoted one keeps its "dynamic" provenance.
    ("deep judgment, both promoted", ("global", "question"), WITH_LITERATURE, "enable_all",
     {"PRESENCE": BOTH, **DJ}),
    ("deep judgment, only regex present", ("global", "question"), WITH_LITERATURE, "enable_all",
     {"PRESENCE": ONLY_REGEX, **DJ}),
    # No LLM trait at all: nothing takes the deep-judgment path, so the regex trait is scored.
    ("deep judgment, no llm trait", (), WITH_LITERATURE, "enable_all", {"PRESENCE": ONLY_REGEX, **DJ}),
]  # fmt: skip
DEFAULTS = {"BATCH": BATCH, "PARSING": PARSED}

# A judge call for rubric traits that gets no usable reply: in batch Karenina's evaluator raises
# and its stage stores no rubric result at all (evaluator.py l. 198-211, rubric_evaluation.py
# l. 348-366); one call per trait (sequential) fails that trait alone and the rubric is performed.
UNUSABLE = "I cannot judge this."
# A question's own dynamic traits, merged after the global ones (Karenina's merge_dynamic_rubrics).
AGREES = RubricTrait.regex("says_agrees", "agrees", summary="Agreement")
CLASH = RubricTrait.regex("mentions_literature", "Literature", summary="Literature, again")
ALL_THREE = json.dumps(
    {
        "results": [
            {"trait_name": n, "present": True} for n in ("explains_mechanism", "mentions_literature", "says_agrees")
        ]
    }
)
# (id, the question's dynamic traits, replies by kind)
QUESTION_DYNAMIC: list[tuple[str, list[RubricTrait], dict[str, Any]]] = [
    ("question dynamic trait", [AGREES], {"PRESENCE": ALL_THREE}),
    ("question dynamic trait clashing with a global one", [CLASH], {"PRESENCE": BOTH}),
]

FILTERED = "rubric_trait_names naming one static trait"

# (id, static rubrics, rubric_evaluation_strategy, replies by kind)
FAILURES: list[tuple[str, tuple[str, ...], str, dict[str, Any]]] = [
    ("batch reply unusable", ("global", "question"), "batch", {"PRESENCE": NONE, "BATCH": UNUSABLE}),
    ("batch reply unusable, dynamic promoted", ("global",), "batch", {"PRESENCE": BOTH, "BATCH": UNUSABLE}),
    ("sequential replies unusable", ("global", "question"), "sequential",
     {"PRESENCE": ONLY_REGEX, "BATCH": UNUSABLE, "SCORE": UNUSABLE}),
]  # fmt: skip

KARENINA_RUN = judge_script(
    RUBRIC_KIND_OF,
    r"""
import karenina.benchmark.core.verification_manager as vm
from karenina import Benchmark
from karenina.benchmark.verification.batch_runner import execute_task, generate_task_queue
from karenina.schemas.entities.rubric import DynamicRubric, LLMRubricTrait, RegexRubricTrait
from karenina.schemas.results import VerificationResultSet
from karenina.schemas.verification.config import VerificationConfig

def batch(templates, config, run_name=None, global_rubric=None, global_dynamic_rubric=None, **kw):
    # Karenina's batch runner minus its scheduler and answer cache: the same task dicts (rubric
    # merge, provenance, dynamic rubric), each run by execute_task with the answer given.
    if state["question_dynamic"]:
        # Karenina's loader never reads a question's dynamic rubric from a checkpoint; its runner
        # takes one from the finished template, where a caller puts it. Put there.
        traits = {"llm": [], "regex": []}
        for kind, fields in state["question_dynamic"]:
            traits[kind].append((LLMRubricTrait if kind == "llm" else RegexRubricTrait)(**fields))
        for template in templates:
            template.question_dynamic_rubric = DynamicRubric(llm_traits=traits["llm"],
                                                             regex_traits=traits["regex"]).model_dump()
    tasks = generate_task_queue(templates, config, global_rubric, global_dynamic_rubric, run_name)
    results = []
    for t in tasks:
        answer = {"raw_llm_response": state["answers"][t["answering_model"].id], "usage_metadata": {}}
        results.append(execute_task(t, cached_answer_data=answer)[1])
    return VerificationResultSet(results=results)

vm.run_verification_batch = batch
out = []
for case in cases:
    set_replies(case["replies"])
    state["answers"] = case["answers"]
    state["question_dynamic"] = case.get("question_dynamic")
    b = Benchmark.load(case["checkpoint"])
    cfg = VerificationConfig(answering_models=[model(a) for a in case["answers"]], parsing_models=[model("j")],
                             evaluation_mode="template_and_rubric", async_enabled=False,
                             deep_judgment_rubric_mode=case["djr"], rubric_evaluation_strategy=case["strategy"],
                             rubric_trait_names=case.get("trait_names"))
    try:
        out.append([r.model_dump(mode="json") for r in b.run_verification(cfg).results])
    except ValueError as exc:
        out.append({"error": str(exc)})
print(json.dumps(out))
""",
)


def _bench(store: Store, static: tuple[str, ...], question_dynamic: list[RubricTrait] | None = None) -> str:
    b = Benchmark.create("dynamic", store=store)
    b.add_question(QUESTION, REFERENCE, CAPITAL, question_id="q", finished=True)
    if "global" in static:
        b.set_global_rubric(GLOBAL)
    if "question" in static:
        b.set_question_rubric("q", OWN)
    b.set_global_dynamic_rubric(DYNAMIC)
    if question_dynamic:
        # Stored as Karenina writes a question's dynamic traits (QuestionSpecificDynamicRubricTrait).
        ratings = [t.dynamic_rating("QuestionSpecific") for t in question_dynamic]
        b._edit_question("q", lambda q: q.update(rating=[*(q.get("rating") or []), *ratings]))
    return b.id


def _ours(
    sandbox: Sandbox,
    static: tuple[str, ...],
    answers: dict[str, str],
    djr: str,
    replies: dict[str, Any],
    strategy: str = "batch",
    question_dynamic: list[RubricTrait] | None = None,
) -> dict[str, dict[str, Any]]:
    """Our run's results by answering model."""
    store = Store.memory()
    bench = _bench(store, static, question_dynamic)
    judge = Judge({**DEFAULTS, **replies})
    answerers = [
        ModelSpec(FunctionProvider(lambda r, text=text: text, interface="openai_endpoint"), name, "openai_endpoint")
        for name, text in answers.items()
    ]
    opts = RunOptions(
        mode="template_and_rubric",
        deep_judgment_rubric=RubricDeepJudgmentConfig(mode=djr),  # type: ignore[arg-type]
        rubric_strategy=strategy,  # type: ignore[arg-type]
    )
    report = run_verification(store, bench, judges=[judge.spec], answerers=answerers, sandbox=sandbox, options=opts)
    return {r["metadata"]["answering"]["model_name"]: r for r in exported_rows(store, report.run_id)}


# Two answering models, the first one's answer has both concepts, the second's none; Karenina runs
# the first one's task first.
TWO = {"a1": WITH_LITERATURE, "a2": "It is Zanzibar-City-77."}
LEAK_REPLIES = {"PRESENCE": {"The literature agrees": BOTH, "": NONE}}


@pytest.fixture(scope="module")
def theirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict[str, Any]]]:
    """Karenina's results (by answering model) for every case and the two-answerer run, from one
    run of its interpreter; each case's checkpoint is the one our store writes for its benchmark."""
    tmp = tmp_path_factory.mktemp("dynamic")
    runs = (
        [(c[0], c[1], {"a": c[2]}, c[3], c[4], "batch") for c in CASES]
        + [("two answerers", ("global",), TWO, "disabled", LEAK_REPLIES, "batch")]
        + [(c[0], c[1], {"a": WITH_LITERATURE}, "disabled", c[3], c[2]) for c in FAILURES]
    )
    own = {c[0]: c[1] for c in QUESTION_DYNAMIC}
    runs += [(c[0], ("global",), {"a": WITH_LITERATURE}, "disabled", c[2], "batch") for c in QUESTION_DYNAMIC]
    runs += [(FILTERED, ("global", "question"), {"a": WITH_LITERATURE}, "disabled", {"PRESENCE": BOTH}, "batch")]
    cases = []
    for i, (name, static, answers, djr, replies, strategy) in enumerate(runs):
        with Store.memory() as store:
            path = Benchmark(store, _bench(store, static)).save(tmp / f"case{i}.jsonld")
        replies = {**DEFAULTS, **replies}
        cases.append(
            {"checkpoint": str(path), "answers": answers, "djr": djr, "replies": replies, "strategy": strategy,
             "question_dynamic": [[t.trait_type, t.karenina_fields()] for t in own.get(name, [])],
             "trait_names": ["clarity"] if name == FILTERED else None}
        )  # fmt: skip
    out = karenina(KARENINA_RUN, json.dumps(cases), timeout=900)
    return {
        run[0]: rows if isinstance(rows, dict) else {r["metadata"]["answering"]["model_name"]: r for r in rows}
        for run, rows in zip(runs, out, strict=True)
    }


FIELDS = (
    "rubric_evaluation_performed",
    "llm_trait_scores",
    "regex_trait_scores",
    "trait_provenance",
    "dynamic_rubric_promoted_traits",
    "dynamic_rubric_skipped_traits",
)
# What Karenina decides in the cases this test was written for, pinned so that the comparison
# cannot pass on two empty results: (regex_trait_scores, provenance of mentions_literature).
PINNED = {
    "both promoted, regex matches": (
        {"mentions_city": True, "says_shore": True, "mentions_literature": True},
        "dynamic",
    ),
    "both promoted, regex does not match": (
        {"mentions_city": True, "says_shore": True, "mentions_literature": False},
        "dynamic",
    ),
    "none present": ({"mentions_city": True, "says_shore": True}, None),
    "deep judgment, both promoted": (None, "dynamic"),
    "deep judgment, only regex present": (None, "dynamic"),
    "deep judgment, no llm trait": ({"mentions_literature": True}, "dynamic"),
}


@pytest.mark.parametrize(("case", "static", "answer", "djr", "replies"), CASES, ids=[c[0] for c in CASES])
def test_dynamic_traits_beside_a_static_rubric_as_karenina(
    sandbox: Sandbox,
    theirs: dict[str, dict[str, dict[str, Any]]],
    case: str,
    static: tuple[str, ...],
    answer: str,
    djr: str,
    replies: dict[str, Any],
) -> None:
    ours, ref = _ours(sandbox, static, {"a": answer}, djr, replies)["a"], theirs[case]["a"]
    assert (ours["rubric"] is None) is (ref["rubric"] is None), (ours["rubric"], ref["rubric"])
    assert ours["metadata"]["failure"] == ref["metadata"]["failure"]
    if case in PINNED:
        regex, origin = PINNED[case]
        assert ref["rubric"]["regex_trait_scores"] == regex
        assert ref["rubric"]["trait_provenance"].get("mentions_literature") == origin
    if ref["rubric"] is None:
        return
    for f in FIELDS:
        assert ours["rubric"][f] == ref["rubric"][f], (f, ours["rubric"][f], ref["rubric"][f])


def test_dynamic_provenance_is_each_task_s_own(sandbox: Sandbox, theirs: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Karenina's batch runner hands every task of a question the same provenance dict, and its
    rubric stage writes the promoted traits into it (rubric_evaluation.py l. 472-476,
    batch_runner.py l. 173 and 223, runner.py l. 249: no copy on the way). So a task run after
    another of the same question lists that task's promoted traits as ``dynamic`` even when its
    own presence check skipped them, and which ones depends on the order the tasks ran in (with
    ``async_enabled``, on timing). Here each task's provenance is its own; every other field is
    Karenina's."""
    ours, ref = _ours(sandbox, ("global",), TWO, "disabled", LEAK_REPLIES), theirs["two answerers"]
    static = {"clarity": "global", "mentions_city": "global"}
    promoted = {"explains_mechanism": "dynamic", "mentions_literature": "dynamic"}
    assert ours["a1"]["rubric"]["trait_provenance"] == ref["a1"]["rubric"]["trait_provenance"] == static | promoted
    assert ours["a2"]["rubric"]["dynamic_rubric_promoted_traits"] is None
    assert ref["a2"]["rubric"]["trait_provenance"] == static | promoted  # a1's promotions, leaked
    assert ours["a2"]["rubric"]["trait_provenance"] == static
    for name in ("a1", "a2"):
        for f in FIELDS:
            if f != "trait_provenance" or name == "a1":
                assert ours[name]["rubric"][f] == ref[name]["rubric"][f], (name, f)


@pytest.mark.parametrize(("case", "static", "strategy", "replies"), FAILURES, ids=[c[0] for c in FAILURES])
def test_a_failed_rubric_call_as_karenina(
    sandbox: Sandbox,
    theirs: dict[str, dict[str, dict[str, Any]]],
    case: str,
    static: tuple[str, ...],
    strategy: str,
    replies: dict[str, Any],
) -> None:
    ours = _ours(sandbox, static, {"a": WITH_LITERATURE}, "disabled", replies, strategy)["a"]
    ref = theirs[case]["a"]
    assert (ref["rubric"] is None) is (strategy == "batch")  # what Karenina does, pinned
    assert (ours["rubric"] is None) is (ref["rubric"] is None), ours["rubric"]
    assert ours["metadata"]["failure"] == ref["metadata"]["failure"]
    # Karenina warns when its evaluator raises (batch); a sequential call that fails is only
    # logged there. Here every failed call is a warning.
    assert any(w.startswith("Rubric evaluation failed: ") for w in ours["metadata"]["warnings"])
    assert any(w.startswith("Rubric evaluation failed: ") for w in ref["metadata"]["warnings"] or []) is (
        strategy == "batch"
    )
    if ref["rubric"] is not None:
        for f in FIELDS:
            assert ours["rubric"][f] == ref["rubric"][f], (f, ours["rubric"][f], ref["rubric"][f])


@pytest.mark.parametrize(("case", "own", "replies"), QUESTION_DYNAMIC, ids=[c[0] for c in QUESTION_DYNAMIC])
def test_question_dynamic_traits_as_karenina_s_runner_merges_them(
    sandbox: Sandbox,
    theirs: dict[str, Any],
    case: str,
    own: list[RubricTrait],
    replies: dict[str, Any],
) -> None:
    """Read from the store here; given to Karenina's runner on the finished template (its loader
    reads none from a checkpoint). A name used twice within one kind: Karenina's
    ``generate_task_queue`` raises and no task runs; here it is the task's error (docs/verification.md,
    differences), with Karenina's message."""
    ours = _ours(sandbox, ("global",), {"a": WITH_LITERATURE}, "disabled", replies, question_dynamic=own)["a"]
    ref = theirs[case]
    if "error" in ref:
        assert "Same-type trait name conflicts between global and question dynamic rubrics" in ref["error"]
        failure = ours["metadata"]["failure"]
        assert (failure["category"], failure["stage"]) == ("unexpected_error", "rubric_evaluation")
        assert "['regex:mentions_literature']" in ref["error"] and "['regex:mentions_literature']" in failure["reason"]
        assert ours["rubric"] is None
        return
    ref = ref["a"]
    assert ref["rubric"]["dynamic_rubric_promoted_traits"] == [
        "explains_mechanism",
        "mentions_literature",
        "says_agrees",
    ]
    for f in FIELDS:
        assert ours["rubric"][f] == ref["rubric"][f], (f, ours["rubric"][f], ref["rubric"][f])


def test_rubric_trait_names_filters_no_dynamic_trait_in_karenina_s_run(
    sandbox: Sandbox, theirs: dict[str, Any]
) -> None:
    """Karenina's rubric stage would skip a present dynamic trait the filter does not name
    ("excluded by rubric_trait_names filter", rubric_evaluation.py l. 443-445), but its task dicts
    never carry the setting (task_helpers.extract_feature_flags), so its run promotes and scores
    every present trait; ours, which records the setting and filters nothing, decides the same."""
    ref = theirs[FILTERED]["a"]
    assert ref["rubric"]["dynamic_rubric_promoted_traits"] == ["explains_mechanism", "mentions_literature"]
    assert ref["rubric"]["dynamic_rubric_skipped_traits"] is None
    ours = _ours(sandbox, ("global", "question"), {"a": WITH_LITERATURE}, "disabled", {"PRESENCE": BOTH})["a"]
    for f in FIELDS:
        assert ours["rubric"][f] == ref["rubric"][f], f
