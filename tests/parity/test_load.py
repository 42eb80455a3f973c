"""Every checkpoint Karenina loads, we import (issue 18, point 2), judged by Karenina itself.

Karenina (the snapshot in ../shared, in an environment of its own: tests/helpers/karenina_ref.py)
builds one benchmark with its own authoring API: every trait kind, a question rubric, a template
whose class is not named ``Answer``, an author with a non-ASCII name. Each row of ``VARIANTS``
edits that file the way a person or another tool might; Karenina's ``Benchmark.load`` then says
whether the file is a checkpoint, and our import must agree wherever Karenina loads it. Problems
that Karenina loads without a word but that our checks see are reported as warnings that name
the trait or question they are about, never as a refusal.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import Benchmark, KareninaRDFError, Store
from tests.checkpoint import test_checkpoint as bad_input
from tests.helpers.karenina_ref import karenina

pytestmark = [pytest.mark.slow]  # Karenina runs in a subprocess of its own environment

# The file formats Karenina reads and writes that this module checks: (format, direction, how
# ours compares, the test). docs/karenina-parity.md lists them with those of the other modules.
FORMATS: tuple[tuple[str, str, str, str], ...] = (
    (
        "JSON-LD checkpoint (`Benchmark.load` / `save`), built by Karenina with every feature",
        "import and export",
        "same bytes as Karenina's file and as its re-save (`dateModified` aside, the time of saving)",
        "test_every_feature_karenina_writes_imports_quietly_and_exports_as_written",
    ),
    (
        "JSON-LD checkpoint, edited variants (odd templates, traits Karenina loads but cannot use, ids)",
        "import and export",
        "every file Karenina loads imports (stricter checks warn), and exports as it came in and as "
        "Karenina re-saves it",
        "test_what_we_export_is_what_came_in_and_what_karenina_saves",
    ),
    (
        "JSON-LD checkpoint, bad input",
        "import",
        "every file we refuse, Karenina refuses; every file we import with a warning, Karenina loads",
        "test_the_bad_input_tables_agree_with_karenina",
    ),
    (
        "JSON-LD checkpoint with two items of one question id",
        "import and export",
        "the last item is the question, as in Karenina; both are written back; removal as Karenina's",
        "test_an_id_used_twice_reads_and_goes_as_in_karenina",
    ),
)

BUILD = r'''
import json, sys
from karenina import Benchmark
from karenina.schemas.entities import (
    CallableRubricTrait, LLMRubricTrait, MetricRubricTrait, RegexRubricTrait, Rubric,
)

b = Benchmark.create(name="parity", description="built by Karenina", version="1.0.0")
q1 = b.add_question(
    question="What is the capital of France?", raw_answer="Paris", author={"name": "Zoë Lindqvist"}
)
q2 = b.add_question(question="How many legs has a spider?", raw_answer="8")
b.add_answer_template(q1, """class CapitalAnswer(BaseAnswer):
    capital: str = Field(description="the capital named")

    def model_post_init(self, __context):
        self.correct = {"capital": "Paris"}

    def verify(self) -> bool:
        return self.capital.strip().lower() == self.correct["capital"].lower()
""")
b.add_answer_template(q2, """class Answer(BaseAnswer):
    legs: int = Field(description="number of legs")

    def model_post_init(self, __context):
        self.correct = {"legs": 8}

    def verify(self) -> bool:
        return self.legs == self.correct["legs"]
""")


def is_short(text: str) -> bool:
    return len(text) < 200


b.set_global_rubric(Rubric(
    llm_traits=[
        LLMRubricTrait(name="clarity", description="Is it clear?", kind="boolean"),
        LLMRubricTrait(name="depth", description="How deep?", kind="score", min_score=1, max_score=5),
        LLMRubricTrait(
            name="tone", description="Which tone?", kind="literal",
            classes={"formal": "formal tone", "casual": "casual tone"},
        ),
    ],
    regex_traits=[RegexRubricTrait(name="mentions_city", pattern=r"\bParis\b", description="names the city")],
    metric_traits=[MetricRubricTrait(
        name="facts", description="facts", evaluation_mode="tp_only", metrics=["precision", "recall"],
        tp_instructions=["Paris"],
    )],
    callable_traits=[CallableRubricTrait.from_callable(
        name="short", func=is_short, kind="boolean", description="short answer"
    )],
))
b.set_question_rubric(
    q2, Rubric(regex_traits=[RegexRubricTrait(name="has_digit", pattern=r"\d", description="a digit")])
)
b.save(sys.argv[1])
print(json.dumps({"ids": [q1, q2]}))
'''

LOAD = r"""
import json, sys
from karenina import Benchmark

out = {}
for path in sys.argv[1:]:
    try:
        b = Benchmark.load(path)
        out[path] = {"loads": True, "questions": len(b.get_question_ids())}
    except Exception as exc:
        out[path] = {"loads": False, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
print(json.dumps(out))
"""


Q2 = "urn:uuid:question-how-many-legs-has-a-spider-fe624ccc"  # Karenina's id for the second question


def _trait(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(r for r in doc["rating"] if r["name"] == name)


def _prop(node: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in node["additionalProperty"] if p["name"] == name)


def _template(doc: dict[str, Any], index: int) -> dict[str, Any]:
    part = doc["dataFeedElement"][index]["item"]["hasPart"]
    return part[0] if isinstance(part, list) else part


def _set_template(index: int, text: str) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        _template(doc, index)["text"] = text

    return edit


def _set_prop(trait: str, prop: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        _prop(_trait(doc, trait), prop)["value"] = value

    return edit


def _scores(low: int, high: int) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        trait = _trait(doc, "depth")
        _prop(trait, "min_score")["value"], _prop(trait, "max_score")["value"] = low, high
        trait["worstRating"], trait["bestRating"] = float(low), float(high)

    return edit


def _question_text(text: str) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        doc["dataFeedElement"][1]["item"]["text"] = text

    return edit


def _question_id(value: str) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        doc["dataFeedElement"][1]["@id"] = value

    return edit


# name -> (the edit, what the import must warn about: a fragment of one warning, which names the
# place; None: no warning at all).
Edit = Callable[[dict[str, Any]], None] | None
VARIANTS: dict[str, tuple[Edit, str | None]] = {
    "as Karenina saved it (a template class named CapitalAnswer)": (None, None),
    # Karenina compiles a global trait's pattern only when the rubric is built, not at load.
    "a regex pattern that does not compile": (
        _set_prop("mentions_city", "pattern", "([a-z"),
        "at /rating/3 (trait 'mentions_city'): The regex pattern '([a-z' does not compile",
    ),
    "template: a syntax error": (
        _set_template(1, "class Answer(BaseAnswer:\n    pass\n"),
        f"at /dataFeedElement/1/item/hasPart (question '{Q2}'): The answer template is not valid Python",
    ),
    "template: no BaseAnswer class": (
        _set_template(1, "class Answer:\n    def verify(self):\n        return True\n"),
        "it has no top-level class deriving from BaseAnswer",
    ),
    "template: two leaf BaseAnswer classes": (
        _set_template(1, "class A(BaseAnswer):\n    pass\n\nclass B(BaseAnswer):\n    pass\n"),
        "it has 2 leaf classes deriving from BaseAnswer (A, B)",
    ),
    "template: a subclass chain, leaf named Final": (
        _set_template(
            1,
            "class Base(BaseAnswer):\n    pass\n\nclass Final(Base):\n    legs: int = Field(description='n')\n\n"
            "    def verify(self) -> bool:\n        return self.legs == 8\n",
        ),
        None,
    ),
    "template: no verify()": (
        _set_template(1, "class Answer(BaseAnswer):\n    legs: int = Field(description='n')\n"),
        f"(question '{Q2}'): The answer class Answer defines no verify() method",
    ),
    "template: empty text": (_set_template(1, ""), f"(question '{Q2}'): The answer template is empty"),
    "callable code that is not base64": (
        _set_prop("short", "callable_code", "not base64 !!"),
        "at /rating/4 (trait 'short'): callable_code is not standard base64",
    ),
    "literal trait with one class": (
        _set_prop("tone", "classes", {"formal": "formal tone"}),
        "at /rating/2 (trait 'tone'): The classes of this literal trait has 1 classes",
    ),
    "metric not allowed in tp_only mode": (
        _set_prop("facts", "metrics", ["precision", "specificity"]),
        "at /rating/5 (trait 'facts'): Metric(s) 'specificity' are not allowed with evaluation_mode 'tp_only'",
    ),
    # Karenina's LLMRubricTrait accepts it, and no score can then be valid.
    "score trait with min_score 9 and max_score 1": (
        _scores(9, 1),
        "at /rating/1 (trait 'depth'): A score trait's range is empty",
    ),
    "question text with emoji and RTL marks": (_question_text("¿Cuántas patas tiene una araña? 🕷️ \u200f"), None),
    "question id: a plain string": (_question_id("spider-legs"), None),
    "question id: an MD5 hex digest": (_question_id("0f8c5b5e4a0f4d2b9c3d1e2f3a4b5c6d"), None),
    # Karenina answers with the last item of an id and writes both back; so do we.
    "two items with one question id": (
        lambda d: d["dataFeedElement"][0].__setitem__("@id", Q2),
        f"at /dataFeedElement/0/@id (question '{Q2}'): question id also used at /dataFeedElement/1",
    ),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("karenina-built")
    path = folder / "built.jsonld"
    karenina(BUILD, str(path))
    return path, json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def variants(built: tuple[Path, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each variant's file and what Karenina's load made of it (one subprocess for all)."""
    path, doc = built
    folder = tmp_path_factory.mktemp("variants")
    files: dict[str, Path] = {}
    for index, (name, (edit, _)) in enumerate(VARIANTS.items()):
        if edit is None:
            files[name] = path
            continue
        changed = copy.deepcopy(doc)
        edit(changed)
        files[name] = folder / f"variant-{index}.jsonld"
        files[name].write_text(json.dumps(changed, indent=2, ensure_ascii=False), encoding="utf-8")
    verdicts = karenina(LOAD, *map(str, files.values()))
    return {name: (files[name], verdicts[str(files[name])]) for name in VARIANTS}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_what_karenina_loads_we_import(variants: dict[str, Any], name: str) -> None:
    path, verdict = variants[name]
    if not verdict["loads"]:
        pytest.skip(f"Karenina refuses this file ({verdict['error'][:200]}): nothing to match")
    store = Store.memory()
    try:
        try:
            result = store.import_checkpoint(path)
        except KareninaRDFError as exc:
            pytest.fail(f"Karenina loads {name!r}; we refused it: {exc}")
        assert result.questions == verdict["questions"]
        assert [b.name for b in store.benchmarks()] == ["parity"]
        expected = VARIANTS[name][1]
        if expected is None:
            assert result.warnings == ()
        else:
            assert any(expected in w for w in result.warnings), result.warnings
    finally:
        store.close()


def test_the_table_has_files_karenina_refuses_and_files_it_loads(variants: dict[str, Any]) -> None:
    # The table is only a test of the rule if Karenina loads most rows (they are the ones we
    # must import); this keeps an edit from silently making every row a refusal.
    loads = [name for name, (_, verdict) in variants.items() if verdict["loads"]]
    assert len(loads) >= len(VARIANTS) - 3, {n: v for n, (_, v) in variants.items() if not v["loads"]}


# The bad-input tables of tests/checkpoint/test_checkpoint.py, judged by Karenina too: what we
# refuse, Karenina must refuse; what we import with a warning, Karenina must load.
def _bad_input_rows() -> list[tuple[str, str, Callable[[dict[str, Any]], Any]]]:
    rows = [("refused", case[0], case[1]) for case in bad_input.CASES]
    rows += [("refused", case[0], case[1]) for case in bad_input.ROBUSTNESS]
    rows += [("warned", case[0], case[1]) for case in bad_input.WARNED]
    rows += [("warned", f"lone surrogate {case[0]}", case[1]) for case in bad_input.SURROGATES]
    return rows


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("bad-input")
    files: dict[str, Path] = {}
    for index, (_, name, edit) in enumerate(_bad_input_rows()):
        doc = bad_input._edit(edit)
        files[name] = folder / f"case-{index}.jsonld"
        # The root-is-an-array case: test_bad_input writes [] for an emptied document.
        files[name].write_text(json.dumps([] if doc == {} else doc), encoding="utf-8")  # \ud800 stays escaped
    verdicts = karenina(LOAD, *map(str, files.values()))
    return {name: verdicts[str(path)] for name, path in files.items()}


# Files Karenina loads that we still refuse: open differences (issue 18), each with why. Strict:
# the day one imports, the test says so and the row leaves this table.
NOT_YET: dict[str, str] = {}


def _marks(name: str) -> list[pytest.MarkDecorator]:
    return [pytest.mark.xfail(reason=NOT_YET[name], strict=True)] if name in NOT_YET else []


@pytest.mark.parametrize(
    ("table", "name"), [pytest.param(t, n, marks=_marks(n), id=n) for t, n, _ in _bad_input_rows()]
)
def test_the_bad_input_tables_agree_with_karenina(bad_inputs: dict[str, Any], table: str, name: str) -> None:
    verdict = bad_inputs[name]
    if table == "refused":
        assert not verdict["loads"], f"we refuse {name!r}, but Karenina loads it"
    else:
        assert verdict["loads"], f"we import {name!r} with a warning, but Karenina refuses it: {verdict['error']}"


RESAVE = r"""
import json, sys
from karenina import Benchmark

for source, target in zip(sys.argv[1::2], sys.argv[2::2]):
    Benchmark.load(source).save(target)
print(json.dumps(True))
"""


def _without_save_time(data: bytes) -> bytes:
    # Karenina's save stamps the feed's dateModified with the time of saving; nothing else moves.
    doc = json.loads(data)
    doc.pop("dateModified", None)
    return json.dumps(doc, indent=2, ensure_ascii=False).encode()


def test_what_we_export_is_what_came_in_and_what_karenina_saves(variants: dict[str, Any], tmp_path: Path) -> None:
    loadable = {name: path for name, (path, verdict) in variants.items() if verdict["loads"]}
    resaved = {name: tmp_path / f"karenina-{i}.jsonld" for i, name in enumerate(loadable)}
    karenina(RESAVE, *[str(p) for name in loadable for p in (loadable[name], resaved[name])])
    for name, path in loadable.items():
        with Store.memory() as store:
            result = store.import_checkpoint(path)
            ours = tmp_path / "ours.jsonld"
            store.save(result.benchmark_id, ours)
        assert ours.read_bytes() == path.read_bytes(), f"{name}: the export differs from the file imported"
        assert _without_save_time(ours.read_bytes()) == _without_save_time(resaved[name].read_bytes()), name


REMOVE_DUPLICATE = r"""
import json, sys
from karenina import Benchmark

b = Benchmark.load(sys.argv[1])
ids = b.get_question_ids()
answer = b.get_question(sys.argv[2])["raw_answer"]
removed = b.remove_question(sys.argv[2])
b.save(sys.argv[3])
print(json.dumps({"ids": ids, "answer": answer, "removed": removed, "left": b.get_question_ids()}))
"""


def test_an_id_used_twice_reads_and_goes_as_in_karenina(variants: dict[str, Any], tmp_path: Path) -> None:
    # Karenina answers with the last item of the id, and its remove_question drops every item
    # with the id; the other questions and their order stay.
    path, _ = variants["two items with one question id"]
    theirs = tmp_path / "karenina.jsonld"
    expected = karenina(REMOVE_DUPLICATE, str(path), Q2, str(theirs))
    with Store.memory() as store:
        bench = Benchmark(store, store.import_checkpoint(path).benchmark_id)
        assert bench.get_question_ids() == expected["ids"]
        assert bench.get_question(Q2)["raw_answer"] == expected["answer"]
        assert bench.remove_question(Q2) is expected["removed"]
        assert bench.get_question_ids() == expected["left"]
        ours = json.loads(json.dumps(store.export_checkpoint(bench.iri)))
    saved = json.loads(theirs.read_text(encoding="utf-8"))
    for doc in (ours, saved):
        doc.pop("dateModified", None)
    assert ours == saved


# What BUILD leaves out, built by Karenina too: a question given as Karenina's Question object
# (keywords, few-shot examples, notes, sources, custom metadata), question traits of every kind,
# agentic traits, global and question dynamic rubrics, a question without a template, and
# question ids of each form Karenina accepts.
BUILD_RICH = r'''
import json, sys
from karenina import Benchmark
from karenina.schemas.entities import (
    AgenticRubricTrait, CallableRubricTrait, DynamicRubric, LLMRubricTrait, MetricRubricTrait, Question,
    RegexRubricTrait, Rubric,
)

b = Benchmark.create(name="rich ✓", description="every feature", version="2.0.0", creator="Ünïcode Lab")
q1 = b.add_question(Question(
    question="Which enzyme does aspirin inhibit? (COX-1/2)", raw_answer="Cyclooxygenase",
    keywords=["pharmacology", "NSAID", "酵素"],
    few_shot_examples=[{"question": "What does ibuprofen inhibit?", "answer": "COX"}],
))
q2 = b.add_question(
    "Name the longest river.", "The Nile", question_id="river-1", answer_notes="Amazon is also argued",
    sources=[{"title": "Atlas", "url": "https://example.org/atlas"}],
    custom_metadata={"difficulty": 3, "tags": ["geo"]},
    author={"name": "Ana Ñúñez", "email": "ana@example.org"}, finished=True,
)
q3 = b.add_question("0f8c5b5e4a0f4d2b9c3d1e2f3a4b5c6d as an id?", "yes", question_id="0f8c5b5e4a0f4d2b9c3d1e2f3a4b5c6d")
b.add_answer_template(q1, """class EnzymeAnswer(BaseAnswer):
    enzyme: str = Field(description="the enzyme")

    def verify(self) -> bool:
        return "cyclooxygenase" in self.enzyme.lower()
""")


def under_100(text: str) -> bool:
    return len(text) < 100


b.set_question_rubric(q1, Rubric(
    llm_traits=[LLMRubricTrait(name="cites", description="Cites a mechanism?", kind="boolean")],
    callable_traits=[CallableRubricTrait.from_callable(
        name="brief", func=under_100, kind="boolean", description="under 100 chars"
    )],
    metric_traits=[MetricRubricTrait(
        name="coverage", description="coverage", evaluation_mode="full_matrix",
        metrics=["precision", "recall", "f1", "specificity", "accuracy"],
        tp_instructions=["COX-1", "COX-2"], tn_instructions=["lipoxygenase"],
    )],
    agentic_traits=[AgenticRubricTrait(name="checked", description="Did it check a source?", kind="boolean")],
))
b.set_global_rubric(Rubric(
    llm_traits=[LLMRubricTrait(name="polite", description="Is it polite?", kind="score", min_score=0, max_score=3)],
))
b.set_global_dynamic_rubric(DynamicRubric(
    llm_traits=[LLMRubricTrait(name="safety", description="Discusses risks", summary="safety", kind="boolean")],
    regex_traits=[RegexRubricTrait(name="dose", pattern=r"\d+ ?mg", description="mentions a dose")],
))
b.save(sys.argv[1])
print(json.dumps({"ids": [q1, q2, q3]}))
'''


def test_every_feature_karenina_writes_imports_quietly_and_exports_as_written(tmp_path: Path) -> None:
    path = tmp_path / "rich.jsonld"
    ids = karenina(BUILD_RICH, str(path))["ids"]
    resaved = tmp_path / "resaved.jsonld"
    karenina(RESAVE, str(path), str(resaved))
    with Store.memory() as store:
        result = store.import_checkpoint(path)
        assert result.warnings == ()
        assert Benchmark(store, result.benchmark_id).get_question_ids() == ids
        ours = tmp_path / "ours.jsonld"
        store.save(result.benchmark_id, ours)
    assert ours.read_bytes() == path.read_bytes()
    assert _without_save_time(ours.read_bytes()) == _without_save_time(resaved.read_bytes())
