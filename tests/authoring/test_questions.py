"""Karenina's question-data and reporting members (authoring/_questions.py, _reports.py): the
answers' shapes and the rules behind them. Karenina itself judges the same members in
tests/parity/test_calls_questions.py; these run without it, in the quick loop."""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from karenina_rdf import (
    Benchmark,
    DuplicateQuestionError,
    InvalidTypeError,
    InvalidValueError,
    Question,
    QuestionNotFoundError,
    RubricTrait,
    Store,
)
from karenina_rdf.authoring import QuestionObject

TEMPLATE = """class CityAnswer(BaseAnswer):
    city: str = Field(description="The city named")

    def verify(self) -> bool:
        return self.city.strip().lower() == "paris"
"""
KEYS = [
    "id",
    "question",
    "raw_answer",
    "answer_template",
    "date_created",
    "date_modified",
    "author",
    "sources",
    "custom_metadata",
    "question_rubric",
    "keywords",
    "few_shot_examples",
    "answer_notes",
    "workspace_path",
]
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+$")


@pytest.fixture
def bench(store: Store) -> Benchmark:
    """Three questions: a template of its own, a rubric and no flag, an author and few-shot."""
    b = Benchmark.create("Mixed", "three questions", "1.0.0", store=store)
    b.add_question(
        "What is the capital of France?",
        "Paris",
        author={"name": "Zoë Lindqvist"},
        custom_metadata={"category": "geo", "level": 1},
    )
    b.add_question(
        "How many legs has a spider?",
        "8",
        finished=False,
        sources=[{"title": "Spiders"}],
        custom_metadata={"category": "bio", "level": 2},
    )
    b.add_question(
        "Which gas do plants take up?",
        "CO2",
        author={"name": "Ann Lee"},
        few_shot_examples=[{"question": "Q?", "answer": "A"}],
    )
    q0, q1, _ = b.get_question_ids()
    b.add_answer_template(q0, TEMPLATE)
    b.add_question_rubric_trait(q1, RubricTrait.regex("legs", r"\b8\b", "names eight"))
    return b


def _ids(questions: list[dict[str, Any]]) -> list[int]:
    """Which of the fixture's questions (0, 1, 2 by position) a list of question dicts holds."""
    return [int(q["question"].startswith("How")) + 2 * int(q["question"].startswith("Which")) for q in questions]


# -- the question dicts ------------------------------------------------------------------------
def test_get_question_is_karenina_s_cache_entry(bench: Benchmark) -> None:
    q0, q1, q2 = bench.get_question_ids()
    first, second, third = (bench.get_question(q) for q in (q0, q1, q2))
    assert [list(d) for d in (first, second, third)] == [KEYS] * 3  # its keys, in its order; no "finished"
    assert first["id"] == q0 and first["answer_template"] == TEMPLATE and first["author"] == {"name": "Zoë Lindqvist"}
    assert first["custom_metadata"] == {"category": "geo", "level": 1} and first["keywords"] is None
    assert TIME.match(first["date_created"]) and TIME.match(first["date_modified"])
    rubric = second["question_rubric"]
    assert list(rubric) == ["llm_traits", "regex_traits", "callable_traits", "metric_traits", "agentic_traits"]
    assert [t.name for t in rubric["regex_traits"]] == ["legs"] and rubric["llm_traits"] == []
    assert third["question_rubric"] is None and third["custom_metadata"] is None
    assert third["few_shot_examples"] == [{"question": "Q?", "answer": "A"}]
    assert bench.get_all_questions() == [first, second, third] == list(bench)
    assert bench.get_all_questions(ids_only=True) == [q0, q1, q2]
    assert bench.question_view(q0).to_dict() == first  # the typed view says the same
    with pytest.raises(QuestionNotFoundError, match="Question not found: nope") as caught:
        bench.get_question("nope")
    assert isinstance(caught.value, ValueError)  # what Karenina raises


@pytest.mark.parametrize(
    ("member", "args", "expected"),
    [
        ("get_finished_questions", [], [0, 2]),
        ("get_unfinished_questions", [], [1]),
        ("get_missing_templates", [], [1, 2]),
        ("filter_by_metadata", ["custom_metadata.category", "bio"], [1]),
        ("filter_by_metadata", ["finished", True], [0, 2]),
        ("search_questions", ["the"], [0]),
    ],
)
def test_question_lists_hold_dicts(bench: Benchmark, member: str, args: list[Any], expected: list[int]) -> None:
    found = getattr(bench, member)(*args)
    assert all(isinstance(q, dict) and list(q) == KEYS for q in found)
    assert _ids(found) == expected


# -- adding ------------------------------------------------------------------------------------
def _karenina_like(**fields: Any) -> SimpleNamespace:
    """An object with the attributes of Karenina's Question and nothing of ours."""
    base: dict[str, Any] = {
        "keywords": [],
        "few_shot_examples": None,
        "answer_notes": None,
        "author": None,
        "sources": None,
        "custom_metadata": None,
        "workspace_path": None,
        "answer_template": "class Ignored(BaseAnswer):\n    pass\n",
    }
    return SimpleNamespace(**(base | fields))


@pytest.mark.parametrize(
    "make",
    [
        lambda **f: QuestionObject(**f),
        lambda **f: Question(**f),
        _karenina_like,
    ],
    ids=["QuestionObject", "Question view", "duck-typed"],
)
def test_add_question_from_object(store: Store, make: Any) -> None:
    b = Benchmark.create("Objects", store=store)
    text = "What is 6 times 7?"
    obj = make(question=text, raw_answer="42", keywords=["math"], author={"name": "Bo"}, custom_metadata={"k": 1})
    qid = b.add_question_from_object(obj, sources=[{"title": "Tables"}])
    assert qid == hashlib.md5(text.encode()).hexdigest()  # Karenina's Question.id
    q = b.get_question(qid)
    assert (q["keywords"], q["author"], q["custom_metadata"], q["sources"]) == (
        ["math"],
        {"name": "Bo"},
        {"k": 1},
        [{"title": "Tables"}],
    )
    assert not b.has_template(qid)  # the object's template is not taken, as in Karenina
    with pytest.raises(DuplicateQuestionError, match=f"Question with ID {qid} already exists"):
        b.add_question_from_object(obj)


@pytest.mark.parametrize("bad", ["text", {"question": "Q?", "raw_answer": "A"}, 42, None])
def test_add_question_from_object_refuses_what_is_no_question(store: Store, bad: Any) -> None:
    b = Benchmark.create("Objects", store=store)
    with pytest.raises(InvalidValueError, match="question_obj must be a Question instance"):
        b.add_question_from_object(bad)


@pytest.mark.parametrize(
    ("kwargs", "finished"),
    [
        ({}, [True, True, False]),  # Karenina's programmatic default, unless the item says
        ({"finished": False}, [False, False, False]),
        ({"finished": True}, [True, True, False]),
    ],
)
def test_add_questions(store: Store, kwargs: dict[str, Any], finished: list[bool]) -> None:
    b = Benchmark.create("Batch", store=store)
    data: list[Any] = [
        {"question": "Is the sky blue?", "raw_answer": "yes"},
        QuestionObject(question="Name a prime above 10.", raw_answer="11"),
        {"question": "Is ice cold?", "raw_answer": "yes", "finished": False, "question_id": "ice"},
    ]
    ids = b.add_questions(data, **kwargs)
    assert ids == b.get_question_ids() and ids[2] == "ice"
    assert [b.get_question_metadata(q)["finished"] for q in ids] == finished
    assert b.add_questions_batch([{"question": "Is fire hot?", "raw_answer": "yes"}], **kwargs) == [
        b.get_question_ids()[-1]
    ]
    with pytest.raises(InvalidValueError, match="Dict input must contain a 'question' key"):
        b.add_questions([{"raw_answer": "no question"}])


# -- reading -----------------------------------------------------------------------------------
def test_get_question_as_object(bench: Benchmark) -> None:
    q0, q1, _ = bench.get_question_ids()
    obj = bench.get_question_as_object(q0)
    assert isinstance(obj, QuestionObject)
    assert obj.id == hashlib.md5(b"What is the capital of France?").hexdigest() != q0
    assert (obj.question, obj.raw_answer, obj.keywords, obj.answer_template) == (
        "What is the capital of France?",
        "Paris",
        [],
        TEMPLATE,
    )
    assert obj.model_dump()["id"] == obj.id  # computed, as Karenina's is
    assert [o.question for o in bench.get_all_questions_as_objects()] == [q["question"] for q in bench]
    assert bench.get_question_as_object(q1).question_rubric == bench.get_question(q1)["question_rubric"]
    with pytest.raises(QuestionNotFoundError):
        bench.get_question_as_object("nope")


def test_question_metadata_and_timestamps(bench: Benchmark) -> None:
    q0, q1, _ = bench.get_question_ids()
    meta = bench.get_question_metadata(q1)
    assert list(meta) == [
        "id",
        "question",
        "raw_answer",
        "date_created",
        "date_modified",
        "finished",
        "author",
        "sources",
        "custom_metadata",
        "has_template",
        "has_rubric",
    ]
    assert (meta["finished"], meta["has_template"], meta["has_rubric"]) == (False, False, True)
    assert bench.get_question_metadata(q0)["has_template"] is True
    times = bench.get_question_timestamps(q0)
    q = bench.get_question(q0)
    assert times == {
        "created": q["date_created"],
        "modified": q["date_modified"],
        "date_added": q["date_created"],
        "registry_modified": q["date_modified"],
    }


# -- filtering ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, [0, 1, 2]),
        ({"finished": True}, [0, 2]),
        ({"finished": False}, [1]),
        ({"has_template": True}, [0]),
        ({"has_template": False, "has_rubric": True}, [1]),
        ({"has_rubric": False}, [0, 2]),
        ({"author": "ANN"}, [2]),  # a substring of the name, any case
        ({"author": "zoë"}, [0]),
        ({"author": "nobody"}, []),
        ({"custom_filter": lambda q: q["custom_metadata"]["level"] > 1}, [1]),  # raising skips
        ({"finished": True, "custom_filter": lambda q: "gas" in q["question"]}, [2]),
    ],
)
def test_filter_questions(bench: Benchmark, kwargs: dict[str, Any], expected: list[int]) -> None:
    assert _ids(bench.filter_questions(**kwargs)) == expected
    if set(kwargs) == {"author"}:
        assert bench.get_questions_by_author(kwargs["author"]) == bench.filter_questions(**kwargs)


@pytest.mark.parametrize(
    ("match_all", "criteria", "expected"),
    [
        (True, {"category": "geo"}, [0]),
        (True, {"category": "geo", "level": 2}, []),
        (False, {"category": "geo", "level": 2}, [0, 1]),
        (True, {}, [0, 1]),  # every question with custom metadata
        (False, {}, []),
        (True, {"missing": None}, [0, 1]),  # an absent key reads as None
    ],
)
def test_filter_by_custom_metadata(
    bench: Benchmark, match_all: bool, criteria: dict[str, Any], expected: list[int]
) -> None:
    assert _ids(bench.filter_by_custom_metadata(match_all, **criteria)) == expected


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("custom_metadata.category", {"geo": 1, "bio": 1, None: 1}),
        ("finished", {True: 2, False: 1}),
        ("author.name", {"Zoë Lindqvist": 1, None: 1, "Ann Lee": 1}),
        ("no.such.field", {None: 3}),
    ],
)
def test_count_by_field(bench: Benchmark, field: str, expected: dict[Any, int]) -> None:
    counts = bench.count_by_field(field)
    assert counts == expected and list(counts) == list(expected)  # first-seen order, as Counter


def test_count_by_field_over_given_questions(bench: Benchmark) -> None:
    _, q1, _ = bench.get_question_ids()
    assert bench.count_by_field("finished", [{"id": q1}, {"id": "not there"}]) == {False: 2}
    assert bench.count_by_field("custom_metadata.level", bench.filter_questions(finished=True)) == {1: 1, None: 1}
    with pytest.raises(InvalidTypeError, match="not hashable"):
        bench.count_by_field("sources")  # a list cannot be counted (TypeError, as in Karenina)


# -- reports -----------------------------------------------------------------------------------
def test_summary_and_statistics(bench: Benchmark) -> None:
    bench.add_global_rubric_trait(RubricTrait.llm("clarity", "Is it clear?"))
    bench.add_global_rubric_trait(RubricTrait.regex("cites", r"\[\d+\]", "Cites"))
    summary = bench.get_summary()
    assert summary == {
        "name": "Mixed",
        "version": "1.0.0",
        "creator": "Karenina Benchmarking System",
        "created_at": bench.created_at,
        "modified_at": bench.modified_at,
        "question_count": 3,
        "finished_count": 2,
        "has_template_count": 1,
        "has_rubric_count": 1,
        "progress_percentage": 2 / 3 * 100,
        "is_complete": False,
        "has_global_rubric": True,
        "global_rubric_traits": 1,  # Karenina counts the LLM traits only
    }
    stats = bench.get_statistics()
    assert stats == summary | {
        "avg_template_length": len(TEMPLATE),
        "min_template_length": len(TEMPLATE),
        "max_template_length": len(TEMPLATE),
        "questions_with_custom_metadata": 3,
    }


def _with_template(store: Store, code: str) -> Benchmark:
    """A benchmark holding ``code`` as a template: add_answer_template refuses a broken one,
    but Karenina loads a checkpoint with it, and so does our import."""
    b = Benchmark.create("Broken", store=store)
    qid = b.add_question("What is 2 + 2?", "4", answer_template=TEMPLATE)
    doc = b.to_checkpoint()
    doc["dataFeedElement"][0]["item"]["hasPart"]["text"] = code
    other = Store.memory()
    loaded = Benchmark(other, other.import_checkpoint(doc).iri)
    assert loaded.get_question_ids() == [qid]
    return loaded


@pytest.mark.parametrize(
    ("code", "valid", "template_error"),
    [
        (TEMPLATE, (True, "Benchmark is valid"), None),
        ("class Answer(BaseAnswer:\n    pass\n", False, "Syntax error"),
        ("x = 1\n", False, None),  # parses, but has no answer class: validate says so
    ],
)
def test_readiness_validation_and_health(store: Store, code: str, valid: Any, template_error: str | None) -> None:
    b = _with_template(store, code)
    (qid,) = b.get_question_ids()
    readiness = b.check_readiness()
    if template_error:
        try:
            ast.parse(code)
        except SyntaxError as e:
            message = f"Syntax error: {e.msg} at line {e.lineno}"
        assert readiness["template_errors"] == [{"question_id": qid, "error": message}]
    else:
        assert readiness["template_errors"] == []
    assert readiness["templates_valid"] is (template_error is None)
    assert readiness["unfinished_count"] == 0.0 and isinstance(readiness["unfinished_count"], float)
    result = b.validate()
    if valid is False:
        assert result[0] is False and result[1].startswith(f"Invalid template for {qid}: ")
    else:
        assert result == valid
    report = b.get_health_report()
    # 20 for questions, 30 for progress, 25 for valid templates, 15 for valid rubrics, 10 finished.
    assert report["health_score"] == (100 if template_error is None else 75)
    assert report["health_status"] == ("excellent" if template_error is None else "good")
    assert report["readiness"] == readiness and TIME.match(report["timestamp"])
    assert ("Fix template syntax errors" in report["recommendations"]) is (template_error is not None)


def test_an_empty_benchmark_reports_as_karenina_does(store: Store) -> None:
    b = Benchmark.create("Empty", store=store)
    report = b.get_health_report()
    assert (report["health_score"], report["health_status"]) == (0.0, "critical")
    assert report["recommendations"] == [
        "Add questions to the benchmark",
        "Consider adding more questions for a robust benchmark",
        "Consider adding a global rubric for consistent evaluation",
    ]
    assert b.check_readiness()["ready_for_verification"] is False
    assert b.to_csv() == "Question ID,Question,Raw Answer,Has Template,Finished,Author,Created,Modified\r\n"


@pytest.mark.parametrize(
    ("trait", "error"),
    [
        (
            RubricTrait.llm("clarity"),
            {"source": "clarity", "error": "Global LLM rubric trait missing name or description"},
        ),
        (
            RubricTrait.regex("cites", r"\d", None),
            {"source": "cites", "error": "Global regex rubric trait missing name or description"},
        ),
    ],
)
def test_rubric_errors_make_a_benchmark_unready(bench: Benchmark, trait: RubricTrait, error: dict[str, str]) -> None:
    bench.add_global_rubric_trait(trait)
    readiness = bench.check_readiness()
    assert readiness["rubric_errors"] == [error] and readiness["rubrics_valid"] is False
    assert "Fix rubric configuration issues" in bench.get_health_report()["recommendations"]


def test_csv_and_markdown(bench: Benchmark) -> None:
    q0, q1, q2 = bench.get_question_ids()
    rows = list(csv.reader(io.StringIO(bench.to_csv())))
    assert rows[0] == [
        "Question ID",
        "Question",
        "Raw Answer",
        "Has Template",
        "Finished",
        "Author",
        "Created",
        "Modified",
    ]
    assert [r[:6] for r in rows[1:]] == [
        [q0, "What is the capital of France?", "Paris", "Yes", "Yes", "Zoë Lindqvist"],
        [q1, "How many legs has a spider?", "8", "Yes", "No", ""],  # the default template counts here
        [q2, "Which gas do plants take up?", "CO2", "Yes", "Yes", "Ann Lee"],
    ]
    md = bench.to_markdown()
    assert md.startswith("# Mixed\n\nthree questions\n\n## Metadata\n- **Version**: 1.0.0\n")
    assert "- **Progress**: 66.7%\n- **Has Templates**: 1\n" in md
    assert "### 2. How many legs has a spider?\n**Status**: ❌ | **Template**: 📝\n\n**Expected Answer**: 8\n" in md
    assert "## Global Rubric" not in md
    bench.add_global_rubric_trait(RubricTrait.llm("clarity", "Is it clear?"))
    assert "## Global Rubric\n- **clarity**: Is it clear?\n\n## Questions" in bench.to_markdown()


def test_to_dict(bench: Benchmark) -> None:
    bench.add_global_rubric_trait(RubricTrait.llm("clarity", "Is it clear?"))
    d = bench.to_dict()
    assert list(d) == ["metadata", "statistics", "questions", "global_rubric"]
    assert d["metadata"]["name"] == "Mixed" and d["statistics"] == bench.get_summary()
    assert d["questions"] == bench.get_all_questions()
    assert [t["name"] for t in d["global_rubric"]["llm_traits"]] == ["clarity"]


# -- metadata, clones, the workspace root ------------------------------------------------------
def test_set_metadata(bench: Benchmark) -> None:
    before = bench.modified_at
    bench.set_metadata(name="Renamed", description="new", version="2.0.0", creator="Someone", not_a_field=1)
    fresh = Benchmark(bench.store, bench.iri)
    assert (fresh.name, fresh.description, fresh.version, fresh.creator) == ("Renamed", "new", "2.0.0", "Someone")
    assert fresh.modified_at >= before
    with pytest.raises(InvalidValueError, match="Benchmark must have a name"):
        bench.set_metadata(name="")
    with pytest.raises(InvalidValueError, match="cannot set 'dataFeedElement'"):
        bench.set_metadata(dataFeedElement=[])


def test_clone_is_independent(bench: Benchmark) -> None:
    bench.set_workspace_root(Path("/data/tasks"))
    copy = bench.clone()
    assert copy.store is not bench.store and copy.id == bench.id
    assert copy.get_all_questions() == bench.get_all_questions() and copy.workspace_root == Path("/data/tasks")
    copy.remove_question(copy.get_question_ids()[0])
    assert len(copy) == 2 and len(bench) == 3
    with pytest.raises(InvalidValueError, match="own store"):
        bench.clone(store=bench.store)
    other = Store.memory()
    assert bench.clone(store=other).store is other


def test_workspace_root_lives_on_the_handle(store: Store) -> None:
    b = Benchmark.create("Tasks", workspace_root=Path("/data/tasks"), store=store)
    assert b.workspace_root == Path("/data/tasks")
    assert Benchmark(store, b.iri).workspace_root is None  # not stored, as Karenina does not save it
    b.set_workspace_root(Path("/elsewhere"))
    assert b.workspace_root == Path("/elsewhere")
    assert "/elsewhere" not in str(b.jsonld_data)


def test_jsonld_data_is_the_checkpoint(bench: Benchmark) -> None:
    data = bench.jsonld_data
    assert data == bench.to_checkpoint() and data["name"] == "Mixed"
    data["name"] = "changed"
    assert bench.name == "Mixed"  # a copy: changing it changes nothing stored
