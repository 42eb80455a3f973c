"""Karenina's rubric members, the same calls in both libraries (issue 18, point 3): one call
sequence run on a benchmark built the same way in Karenina (its own environment,
tests/helpers/karenina_ref.py) and here, twice here: once with our own values (``Rubric``,
``DynamicRubric``, traits as ``RubricTrait`` or dicts) and once with stand-ins for Karenina's
objects (pydantic classes named and shaped as its trait and rubric classes), which our API reads
by duck typing. Every answer is compared, and so is the checkpoint each library saves at the
``save`` steps (dates and the benchmark's minted ``@id`` normalised).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, model_validator

from karenina_rdf import Benchmark, DynamicRubric, Rubric, RubricTrait, Store
from tests.conftest import SHARED
from tests.helpers.karenina_ref import karenina

pytestmark = [pytest.mark.slow]  # Karenina runs in a subprocess of its own environment

QUESTIONS = [
    ("What is the capital of France?", "Paris"),
    ("How many legs has a spider?", "8"),
    ("Which gas do plants take up?", "Carbon dioxide"),
]
CODE = base64.b64encode(b"an opaque callable: never run by either library here").decode("ascii")


def T(cls: str, **fields: Any) -> dict[str, Any]:
    return {"T": [cls, fields]}


CLARITY = T("LLMRubricTrait", name="clarity", description="Is it clear?", kind="boolean")
DEPTH = T("LLMRubricTrait", name="depth", description="How deep?", kind="score", min_score=1, max_score=10)
TONE = T(
    "LLMRubricTrait",
    name="tone",
    description="Which tone?",
    kind="literal",
    classes={"formal": "formal tone", "casual": "casual tone", "neutral": "neither"},
    summary="tone",
)
CITES = T("RegexRubricTrait", name="cites", pattern=r"\[\d+\]", description="Cites a source", case_sensitive=False)
NO_DESCRIPTION = T("RegexRubricTrait", name="digits", pattern=r"\d")
FACTS = T(
    "MetricRubricTrait",
    name="facts",
    description="facts named",
    evaluation_mode="full_matrix",
    metrics=["precision", "recall", "specificity"],
    tp_instructions=["Paris"],
    tn_instructions=["Lyon"],
)
SHORT = T("CallableRubricTrait", name="short", description="short answer", kind="boolean", callable_code=CODE)
LENGTH = T(
    "CallableRubricTrait",
    name="length",
    description="length",
    kind="score",
    min_score=0,
    max_score=100,
    callable_code=CODE,
    higher_is_better=False,
)
AGENT = T("AgenticRubricTrait", name="checked", description="an agent checks it", kind="boolean", higher_is_better=True)


def R(**lists: list[dict[str, Any]]) -> dict[str, Any]:
    return {"R": {field: [t["T"] for t in traits] for field, traits in lists.items()}}


def D(**lists: list[dict[str, Any]]) -> dict[str, Any]:
    return {"D": {field: [t["T"] for t in traits] for field, traits in lists.items()}}


# (member, arguments): "Q0".."Q2" stand for the question ids, "save" writes the checkpoint there
# and "reload" makes Karenina reload it (here, where nothing is held in memory, it does nothing).
STEPS: list[tuple[str, list[Any]]] = [
    ("get_global_rubric", []),
    ("get_question_rubric", ["Q0"]),
    ("get_questions_with_rubric", []),
    ("validate_rubrics", []),
    ("clear_global_rubric", []),
    ("add_global_rubric_trait", [CLARITY]),
    ("add_global_rubric_trait", [CITES]),
    ("get_global_rubric", []),
    ("set_global_rubric", [R(llm_traits=[CLARITY, DEPTH, TONE], regex_traits=[CITES], metric_traits=[FACTS])]),
    ("get_global_rubric", []),
    ("save", ["global"]),
    ("set_global_rubric", [R(callable_traits=[SHORT, LENGTH], agentic_traits=[AGENT], llm_traits=[TONE])]),
    ("get_global_rubric", []),
    ("save", ["every trait class"]),
    ("set_question_rubric", ["Q1", R(regex_traits=[NO_DESCRIPTION], llm_traits=[DEPTH])]),
    ("add_question_rubric_trait", ["Q1", FACTS]),
    ("add_question_rubric_trait", ["Q2", SHORT]),
    ("get_question_rubric", ["Q1"]),
    ("get_question_rubric", ["Q2"]),
    ("get_question_rubric", ["no-such-question"]),
    ("get_questions_with_rubric", []),
    ("validate_rubrics", []),
    ("save", ["question rubrics"]),
    # An unknown question: refused when there is a trait to add, ignored when there is none.
    ("add_question_rubric_trait", ["no-such-question", CLARITY]),
    ("set_question_rubric", ["no-such-question", R(llm_traits=[CLARITY])]),
    ("set_question_rubric", ["no-such-question", R()]),
    ("remove_question_rubric", ["no-such-question"]),
    ("remove_question_rubric", ["Q0"]),
    ("remove_question_rubric", ["Q2"]),
    ("remove_question_rubric", ["Q2"]),
    ("set_question_rubric", ["Q1", R()]),
    ("get_questions_with_rubric", []),
    ("add_question_rubric_trait", ["Q0", CITES]),
    # A name twice: added, then the rubric is refused when read.
    ("add_global_rubric_trait", [CLARITY]),
    ("add_global_rubric_trait", [CLARITY]),
    ("get_global_rubric", []),
    ("validate_rubrics", []),
    ("save", ["a name twice"]),
    ("set_global_rubric", [{"L": [CITES["T"], CLARITY["T"]]}]),
    ("get_global_rubric", []),
    # The global dynamic rubric. Karenina's reading strips the trait classes from its in-memory
    # Ratings (convert_ratings_to_dynamic_rubric edits them in place), so each one is read once
    # after it is set, and saved before it is read.
    ("get_global_dynamic_rubric", []),
    ("get_merged_dynamic_rubric_for_question", ["Q0"]),
    (
        "set_global_dynamic_rubric",
        [D(llm_traits=[TONE, DEPTH], regex_traits=[CITES], metric_traits=[FACTS], callable_traits=[LENGTH])],
    ),
    ("save", ["dynamic"]),
    ("get_global_dynamic_rubric", []),
    ("set_global_dynamic_rubric", [D(regex_traits=[CITES], agentic_traits=[AGENT])]),
    ("save", ["dynamic replaced"]),
    ("get_merged_dynamic_rubric_for_question", ["no-such-question"]),
    ("get_global_rubric", []),
    ("set_global_dynamic_rubric", [None]),
    ("get_global_dynamic_rubric", []),
    ("save", ["dynamic cleared"]),
    # Writing the global rubric drops the dynamic one from Karenina's checkpoint (its memory keeps
    # it until a reload): what it saves, and answers after reloading, is what is answered here.
    ("set_global_dynamic_rubric", [D(regex_traits=[CITES])]),
    ("add_global_rubric_trait", [DEPTH]),
    ("save", ["dynamic dropped by a global write"]),
    ("reload", []),
    ("get_global_dynamic_rubric", []),
    ("set_global_dynamic_rubric", [D(llm_traits=[TONE])]),
    ("clear_all_rubrics", []),
    ("clear_all_rubrics", []),
    ("get_global_rubric", []),
    ("clear_global_rubric", []),
    ("save", ["cleared"]),
    ("set_global_rubric", [R()]),
    ("save", ["an empty global rubric"]),
    ("set_global_dynamic_rubric", [None]),
    ("save", ["an empty rating list kept"]),
]

# One function, run in both libraries, turns an answer into plain data: rubrics and traits by
# Karenina's field names, read as attributes; question dicts by their ids; errors by their kind.
SHAPE = r"""
import base64

_KEYS = {
    "llm_traits": ("name", "description", "summary", "kind", "min_score", "max_score", "classes", "higher_is_better"),
    "regex_traits": ("name", "description", "summary", "pattern", "case_sensitive", "invert_result",
                     "higher_is_better"),
    "callable_traits": ("name", "description", "summary", "kind", "min_score", "max_score", "classes", "invert_result",
                        "higher_is_better", "callable_code"),
    "metric_traits": ("name", "description", "summary", "evaluation_mode", "metrics", "tp_instructions",
                      "tn_instructions", "repeated_extraction", "higher_is_better"),
    "agentic_traits": ("name", "description", "summary", "kind", "min_score", "max_score", "classes",
                       "higher_is_better", "context_mode"),
}


def shape(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return [shape(v) for v in value]
    if isinstance(value, list):
        # A question (get_questions_with_rubric) by its id; other dicts in full.
        return [v["id"] if isinstance(v, dict) and "question" in v else shape(v) for v in value]
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if hasattr(value, "llm_traits"):
        out = {"class": type(value).__name__, "names": list(value.get_trait_names())}
        for field, keys in _KEYS.items():
            out[field] = [{k: _field(t, k) for k in keys} for t in getattr(value, field)]
        if out["class"] == "Rubric":
            out["max_scores"] = value.get_trait_max_scores()
            out["directions"] = value.get_trait_directionalities()
        else:
            out["empty"] = value.is_empty()
            out["concepts"] = [value.resolve_concept_text(t) for f in _KEYS for t in getattr(value, f)]
        return out
    return repr(value)


def _field(trait, key):
    value = getattr(trait, key)
    if key == "callable_code":
        return base64.b64encode(value).decode()
    if key == "kind" and isinstance(value, type):
        return "template"  # Karenina's template kind is a class; ours says so
    return value


def error(exc):
    kinds = [k.__name__ for k in (KeyError, ValueError, TypeError, AttributeError) if isinstance(exc, k)]
    return {"raises": kinds or [type(exc).__name__]}
"""

SCRIPT = (
    SHAPE
    + r"""
import json, sys
from pathlib import Path
from karenina import Benchmark
from karenina.schemas.entities import (
    CallableRubricTrait, LLMRubricTrait, MetricRubricTrait, RegexRubricTrait, Rubric,
)
from karenina.schemas.entities.rubric import AgenticRubricTrait, DynamicRubric

CLASSES = {c.__name__: c for c in (LLMRubricTrait, RegexRubricTrait, CallableRubricTrait, MetricRubricTrait,
                                   AgenticRubricTrait)}
questions, steps, folder = json.loads(sys.argv[1]), json.loads(sys.argv[2]), Path(sys.argv[3])
b = Benchmark.create(name="rubrics", description="d", version="1.0.0")
ids = [b.add_question(question=q, raw_answer=a) for q, a in questions]


def trait(spec):
    return CLASSES[spec[0]](**spec[1])


def arg(a):
    if isinstance(a, str) and a[:1] == "Q" and a[1:].isdigit():
        return ids[int(a[1:])]
    if isinstance(a, dict) and "T" in a:
        return trait(a["T"])
    if isinstance(a, dict) and ("R" in a or "D" in a):
        cls = Rubric if "R" in a else DynamicRubric
        return cls(**{f: [trait(t) for t in ts] for f, ts in (a["R"] if "R" in a else a["D"]).items()})
    if isinstance(a, dict) and "L" in a:
        return [trait(t) for t in a["L"]]
    return a


out = []
for name, args in steps:
    if name == "save":
        b.save(folder / f"{args[0]}.jsonld")
        out.append(None)
        continue
    if name == "reload":
        b.save(folder / "reload.jsonld")
        b = Benchmark.load(folder / "reload.jsonld")
        out.append(None)
        continue
    try:
        value = getattr(b, name)(*[arg(a) for a in args])
    except Exception as exc:
        out.append(error(exc))
        continue
    out.append(shape(value))  # outside the try: a fault of shape() is not an answer
print(json.dumps({"ids": ids, "results": out}))
"""
)


# -- stand-ins for Karenina's classes: its class names, fields and defaults (no Karenina here) --
class _Trait(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    @model_validator(mode="after")
    def _literal_range(self) -> Any:  # as Karenina's models derive it from the classes
        if getattr(self, "kind", None) == "literal" and getattr(self, "classes", None):
            self.min_score, self.max_score = 0, len(self.classes) - 1  # type: ignore[attr-defined]
        return self


class LLMRubricTrait(_Trait):
    name: str
    description: str | None = None
    summary: str | None = None
    kind: str
    min_score: int | None = 1
    max_score: int | None = 5
    classes: dict[str, str] | None = None
    deep_judgment_enabled: bool = False
    deep_judgment_excerpt_enabled: bool = True
    deep_judgment_max_excerpts: int | None = None
    deep_judgment_fuzzy_match_threshold: float | None = None
    deep_judgment_excerpt_retry_attempts: int | None = None
    deep_judgment_search_enabled: bool = False
    include_ground_truth: bool = False
    higher_is_better: bool | None = True


class RegexRubricTrait(_Trait):
    name: str
    description: str | None = None
    summary: str | None = None
    pattern: str
    case_sensitive: bool = True
    invert_result: bool = False
    higher_is_better: bool | None = True


class CallableRubricTrait(_Trait):
    name: str
    description: str | None = None
    summary: str | None = None
    kind: str
    callable_code: bytes
    min_score: int | None = None
    max_score: int | None = None
    invert_result: bool = False
    classes: dict[str, str] | None = None
    higher_is_better: bool | None = True


class MetricRubricTrait(_Trait):
    name: str
    description: str | None = None
    summary: str | None = None
    evaluation_mode: str = "tp_only"
    metrics: list[str]
    tp_instructions: list[str] = []
    tn_instructions: list[str] = []
    repeated_extraction: bool = True
    higher_is_better: bool | None = None


class AgenticRubricTrait(_Trait):
    name: str
    description: str
    summary: str | None = None
    kind: str
    higher_is_better: bool | None
    min_score: int | None = 1
    max_score: int | None = 5
    classes: dict[str, str] | None = None
    context_mode: str = "trace_and_workspace"
    materialize_trace: bool = False
    persist_trace: bool = False
    max_turns: int = 15
    timeout_seconds: int = 120
    model_override: Any = None


class _Lists(BaseModel):
    llm_traits: list[Any] = []
    regex_traits: list[Any] = []
    callable_traits: list[Any] = []
    metric_traits: list[Any] = []
    agentic_traits: list[Any] = []


STAND_INS: dict[str, type[BaseModel]] = {
    c.__name__: c
    for c in (LLMRubricTrait, RegexRubricTrait, CallableRubricTrait, MetricRubricTrait, AgenticRubricTrait)
}
RUBRIC_STAND_INS = {"R": type("Rubric", (_Lists,), {}), "D": type("DynamicRubric", (_Lists,), {})}


def _stand_in(spec: list[Any]) -> Any:
    fields = dict(spec[1])
    if "callable_code" in fields:
        fields["callable_code"] = base64.b64decode(fields["callable_code"])
    return STAND_INS[spec[0]](**fields)


def _ours(spec: list[Any]) -> Any:
    """Our own value for a trait: a dict for the classes our dict form builds, a RubricTrait
    otherwise (agentic traits have no constructor here: Karenina's object, read by duck typing)."""
    cls, fields = spec
    if cls == "CallableRubricTrait":
        fields = dict(fields)
        return RubricTrait.callable(fields.pop("name"), base64.b64decode(fields.pop("callable_code")), **fields)
    if cls == "AgenticRubricTrait":
        return _stand_in(spec)
    trait_type = {"LLMRubricTrait": "llm", "RegexRubricTrait": "regex", "MetricRubricTrait": "metric"}[cls]
    return {"trait_type": trait_type, **fields}


def _run_ours(folder: Path, duck: bool) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(SHAPE, namespace)
    trait = _stand_in if duck else _ours
    with Store.memory() as store:
        b = Benchmark.create("rubrics", description="d", version="1.0.0", store=store)
        ids = [b.add_question(q, a) for q, a in QUESTIONS]

        def arg(a: Any) -> Any:
            if isinstance(a, str) and a[:1] == "Q" and a[1:].isdigit():
                return ids[int(a[1:])]
            if isinstance(a, dict) and "T" in a:
                return trait(a["T"])
            if isinstance(a, dict) and ("R" in a or "D" in a):
                key = "R" if "R" in a else "D"
                cls: Any = RUBRIC_STAND_INS[key] if duck else (Rubric if key == "R" else DynamicRubric)
                return cls(**{f: [trait(t) for t in ts] for f, ts in a[key].items()})
            if isinstance(a, dict) and "L" in a:
                return [trait(t) for t in a["L"]]
            return a

        results: list[Any] = []
        for name, args in STEPS:
            if name == "save":
                b.save(folder / f"{args[0]}.jsonld")
                results.append(None)
            elif name == "reload":
                results.append(None)  # nothing is held in memory here
            else:
                try:
                    value = getattr(b, name)(*[arg(a) for a in args])
                except Exception as exc:
                    results.append(namespace["error"](exc))
                    continue
                results.append(namespace["shape"](value))
        return {"ids": ids, "results": results}


def _normalised(path: Path) -> str:
    """The saved checkpoint with its times and minted @id left out (each run mints its own)."""

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: "<time>" if k in ("dateCreated", "dateModified") else walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    doc = walk(json.loads(path.read_text(encoding="utf-8")))
    doc["@id"] = "<minted>"
    return json.dumps(doc, indent=2, ensure_ascii=False)


@pytest.fixture(scope="module")
def theirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("karenina-rubrics")
    return folder, karenina(SCRIPT, json.dumps(QUESTIONS), json.dumps(STEPS), str(folder))


@pytest.mark.parametrize("duck", [False, True], ids=["our values", "Karenina's objects by duck typing"])
def test_the_rubric_calls_give_karenina_s_answers_and_files(
    theirs: tuple[Path, dict[str, Any]], duck: bool, tmp_path: Path
) -> None:
    folder, want = theirs
    ours = json.loads(json.dumps(_run_ours(tmp_path, duck)))
    assert ours["ids"] == want["ids"]
    for (name, args), got, expected in zip(STEPS, ours["results"], want["results"], strict=True):
        if isinstance(expected, dict) and "raises" in expected:
            # Ours is a subclass of what Karenina raises (code catching Karenina's catches ours).
            assert isinstance(got, dict) and set(expected["raises"]) <= set(got.get("raises", ())), (name, got)
            continue
        assert got == expected, f"{name}({args}): ours {got!r}, Karenina's {expected!r}"
    for name, args in STEPS:
        if name == "save":
            label = f"{args[0]}.jsonld"
            assert _normalised(tmp_path / label) == _normalised(folder / label), f"the checkpoint saved at {label!r}"


# -- the rubrics of real checkpoints: read, written back, saved --------------------------------
CORPUS = sorted((SHARED / "corpus" / "karenina").glob("*.jsonld"))
ROUND_TRIP = (
    SHAPE
    + r"""
import json, sys
from pathlib import Path
from karenina import Benchmark
from karenina.schemas.entities import RegexRubricTrait

out = {}
for source, target in zip(sys.argv[1::2], sys.argv[2::2]):
    answers = []

    def call(fn, *args):
        try:
            value = fn(*args)
        except Exception as exc:
            answers.append(error(exc))
            return None
        answers.append(shape(value))
        return value

    try:
        b = Benchmark.load(source)
    except Exception:
        continue  # a file Karenina does not load (an old format): nothing to compare
    ids = b.get_question_ids()
    dynamic = call(b.get_global_dynamic_rubric)  # read first: Karenina's reading edits its Ratings
    rubric = call(b.get_global_rubric)
    call(b.get_questions_with_rubric)
    call(b.validate_rubrics)
    for qid in ids:
        call(b.get_question_rubric, qid)
    if rubric is not None:
        call(b.set_global_rubric, rubric)
    if dynamic is not None:
        call(b.set_global_dynamic_rubric, dynamic)
    if ids:
        call(b.add_question_rubric_trait, ids[0], RegexRubricTrait(name="parity_added", pattern="x", description="d"))
    b.save(target)
    out[source] = answers
print(json.dumps(out))
"""
)


def _round_trip_ours(source: Path, target: Path) -> list[Any]:
    namespace: dict[str, Any] = {}
    exec(SHAPE, namespace)
    answers: list[Any] = []

    def call(fn: Any, *args: Any) -> Any:
        try:
            value = fn(*args)
        except Exception as exc:
            answers.append(namespace["error"](exc))
            return None
        answers.append(namespace["shape"](value))
        return value

    with Store.memory() as store:
        b = Benchmark.load(source, store=store)
        ids = b.get_question_ids()
        dynamic = call(b.get_global_dynamic_rubric)
        rubric = call(b.get_global_rubric)
        call(b.get_questions_with_rubric)
        call(b.validate_rubrics)
        for qid in ids:
            call(b.get_question_rubric, qid)
        if rubric is not None:
            call(b.set_global_rubric, rubric)
        if dynamic is not None:
            call(b.set_global_dynamic_rubric, dynamic)
        if ids:
            call(b.add_question_rubric_trait, ids[0], RubricTrait.regex("parity_added", "x", "d"))
        b.save(target)
    return answers


def test_the_rubrics_of_karenina_s_checkpoints_read_and_write_back_as_there(tmp_path: Path) -> None:
    if not CORPUS:
        pytest.skip("the Karenina corpus is not in ../shared")
    targets = {source: tmp_path / f"karenina-{i}.jsonld" for i, source in enumerate(CORPUS)}
    theirs = karenina(ROUND_TRIP, *[str(p) for s in CORPUS for p in (s, targets[s])])
    assert len(theirs) >= len(CORPUS) - 3, "Karenina loads most of the corpus"
    for i, source in enumerate(CORPUS):
        if str(source) not in theirs:
            continue
        ours = json.loads(json.dumps(_round_trip_ours(source, tmp_path / f"ours-{i}.jsonld")))
        assert ours == theirs[str(source)], source.name
        if "scenario" in source.name:
            # Karenina's plain load and save already rewrites a scenario file (its check types,
            # "TurnCheck" as "turn_check"): scenarios' own parity, not the rubrics'.
            continue
        assert _normalised(tmp_path / f"ours-{i}.jsonld") == _normalised(targets[source]), source.name


# Legacy global traits (Karenina's GUI converter wrote them as a feed property holding a JSON
# string of trait dicts): Karenina reads them into the global rubric and never writes them.
LEGACY: dict[str, tuple[str, Any]] = {
    "regex, the old invert": (
        "global_regex_rubric_traits",
        [{"name": "no_refusal", "pattern": "I cannot", "invert": True}, {"name": "cites", "pattern": r"\[\d\]"}],
    ),
    "callable, literal": (
        "global_callable_rubric_traits",
        [{"name": "tone", "kind": "literal", "callable_code": CODE, "classes": {"a": "A", "b": "B"}}],
    ),
    "metric": ("global_metric_rubric_traits", [{"name": "facts", "metrics": ["recall"], "tp_instructions": ["x"]}]),
    "not JSON": ("global_regex_rubric_traits", "[{"),
    "not a list of objects": ("global_regex_rubric_traits", ["cites"]),
    "an unknown field": ("global_regex_rubric_traits", [{"name": "r", "pattern": "x", "colour": "red"}]),
}


def test_legacy_global_traits_read_as_karenina_reads_them(tmp_path: Path) -> None:
    base = SHARED / "corpus" / "karenina" / "tests__fixtures__checkpoints__minimal.jsonld"
    if not base.is_file():
        pytest.skip(f"the Karenina corpus is not at {base} (a fresh clone has no ../shared)")
    sources = {}
    for i, (name, (prop, value)) in enumerate(LEGACY.items()):
        doc = json.loads(base.read_text(encoding="utf-8"))
        text = value if isinstance(value, str) else json.dumps(value)
        doc.setdefault("additionalProperty", []).append({"@type": "PropertyValue", "name": prop, "value": text})
        sources[name] = tmp_path / f"legacy-{i}.jsonld"
        sources[name].write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    targets = {name: tmp_path / f"legacy-{i}-karenina.jsonld" for i, name in enumerate(LEGACY)}
    theirs = karenina(ROUND_TRIP, *[str(p) for name in LEGACY for p in (sources[name], targets[name])])
    for i, name in enumerate(LEGACY):
        ours = json.loads(json.dumps(_round_trip_ours(sources[name], tmp_path / f"legacy-{i}-ours.jsonld")))
        assert ours == theirs[str(sources[name])], name
        assert _normalised(tmp_path / f"legacy-{i}-ours.jsonld") == _normalised(targets[name]), name
