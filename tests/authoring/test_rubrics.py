"""The rubric members of Benchmark on the graph side: what each call leaves in the graph, read
back through a second handle (no copy is held), the shapes of the answers, Karenina's objects
read by duck typing, and the refusals. Karenina's own answers are compared in
tests/parity/test_calls_rubrics.py; these run without it."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from karenina_rdf import (
    Benchmark,
    DynamicRubric,
    InvalidTypeError,
    InvalidValueError,
    QuestionNotFoundError,
    Rubric,
    RubricTrait,
    Store,
)
from karenina_rdf.checkpoint import read_as_karenina

CLARITY = RubricTrait.llm("clarity", "Is it clear?")
DEPTH = RubricTrait.llm("depth", "How deep?", kind="score", min_score=1, max_score=10)
CITES = RubricTrait.regex("cites", r"\[\d+\]", "Cites a source")
FACTS = RubricTrait.metric("facts", ["precision"], ["Paris"], "facts")


@pytest.fixture
def bench(store: Store) -> Benchmark:
    b = Benchmark.create("Rubrics", "d", "1.0.0", store=store)
    b.add_question("What is the capital of France?", "Paris")
    b.add_question("How many legs has a spider?", "8")
    return b


def _fresh(b: Benchmark) -> Benchmark:
    return Benchmark(b.store, b.iri)


def _rating_types(b: Benchmark, where: str = "benchmark") -> list[str]:
    """The additionalType of every Rating in the graph, of the benchmark or of its questions."""
    pattern = (
        f"<{b.iri}> schema:contentRating|schema:rating ?r"
        if where == "benchmark"
        else "?q a schema:Question ; schema:contentRating|schema:rating ?r"
    )
    rows = b.store.query(
        f"SELECT ?t WHERE {{ GRAPH ?g {{ {pattern} . ?r a schema:Rating ; schema:additionalType ?t }} }}"
    )
    return sorted(str(row["t"].value).removeprefix("urn:karenina:vocab:") for row in rows)


def _rating_count(b: Benchmark) -> int:
    rows = b.store.query("SELECT (COUNT(?r) AS ?n) WHERE { GRAPH ?g { ?r a schema:Rating } }")
    return int(next(iter(rows))["n"].value)


# -- global rubric ---------------------------------------------------------------------------
def test_the_global_rubric_is_a_rubric_of_karenina_s_shape(bench: Benchmark) -> None:
    assert bench.get_global_rubric() is None
    bench.add_global_rubric_trait(CITES)
    bench.add_global_rubric_trait({"name": "clarity", "description": "Is it clear?"})
    bench.add_global_rubric_trait(DEPTH)
    rubric = _fresh(bench).get_global_rubric()
    assert isinstance(rubric, Rubric)
    # Karenina's Rubric: one list per trait class, names class by class.
    assert rubric.get_trait_names() == ["clarity", "depth", "cites"]
    assert [t.name for t in rubric.llm_traits] == ["clarity", "depth"]
    assert rubric.regex_traits[0].pattern == r"\[\d+\]" and rubric.regex_traits[0].case_sensitive is True
    assert rubric.get_trait_max_scores() == {"depth": 10}
    assert rubric.get_trait_directionalities() == {"clarity": True, "depth": True, "cites": True}
    assert rubric.callable_traits == rubric.metric_traits == rubric.agentic_traits == []
    assert _rating_count(bench) == 3


def test_set_global_rubric_replaces_it_and_keeps_karenina_s_order(bench: Benchmark) -> None:
    bench.add_global_rubric_trait(CITES)
    bench.set_global_rubric(Rubric(metric_traits=[FACTS], llm_traits=[DEPTH, CLARITY]))
    names = [r["name"] for r in bench.to_checkpoint()["rating"]]
    assert names == ["depth", "clarity", "facts"]  # llm, regex, callable, metric, agentic
    bench.set_global_rubric([CITES, CLARITY])  # a list keeps its order, as Karenina's manager
    assert [r["name"] for r in _fresh(bench).to_checkpoint()["rating"]] == ["cites", "clarity"]
    bench.set_global_rubric(Rubric())  # Karenina writes an empty list, and so it stays
    assert bench.to_checkpoint()["rating"] == [] and bench.get_global_rubric() is None


def test_a_name_twice_is_refused_when_read(bench: Benchmark) -> None:
    bench.add_global_rubric_trait(CLARITY)
    bench.add_global_rubric_trait(CLARITY)  # Karenina's add does not check
    assert _rating_count(bench) == 2
    with pytest.raises(InvalidValueError, match="Duplicate llm trait name 'clarity'"):
        bench.get_global_rubric()
    with pytest.raises(ValidationError, match="across different trait types"):
        Rubric(llm_traits=[RubricTrait.llm("x")], regex_traits=[RubricTrait.regex("x", "y")])
    with pytest.raises(ValidationError, match=r"contains '\.'"):  # Karenina's trait takes it, its Rubric not
        Rubric(regex_traits=[RegexRubricTrait(name="a.b", pattern="x")])
    with pytest.raises(ValidationError, match="not llm traits"):
        Rubric(llm_traits=[CITES])


def test_clear_global_rubric_says_whether_there_was_one(bench: Benchmark) -> None:
    assert bench.clear_global_rubric() is False
    bench.add_global_rubric_trait(CLARITY)
    bench.set_global_dynamic_rubric(DynamicRubric(regex_traits=[CITES]))
    assert bench.clear_global_rubric() is True
    assert "rating" not in bench.to_checkpoint() and _rating_count(bench) == 0
    assert bench.get_global_dynamic_rubric() is None


# -- question rubrics ------------------------------------------------------------------------
def test_question_rubrics_set_add_remove(bench: Benchmark) -> None:
    q0, q1 = bench.get_question_ids()
    assert bench.get_question_rubric(q0) is None and bench.get_questions_with_rubric() == []
    bench.set_question_rubric(q0, Rubric(regex_traits=[CITES], llm_traits=[DEPTH]))
    bench.add_question_rubric_trait(q0, FACTS)
    rubric = _fresh(bench).get_question_rubric(q0)
    assert rubric is not None and rubric.get_trait_names() == ["depth", "cites", "facts"]
    assert _rating_types(bench, "questions") == [
        "QuestionSpecificMetricRubricTrait",
        "QuestionSpecificRegexTrait",
        "QuestionSpecificRubricTrait",
    ]
    with_rubric = bench.get_questions_with_rubric()
    assert [q["id"] for q in with_rubric] == [q0] and with_rubric[0]["question"] == "What is the capital of France?"
    assert (bench.remove_question_rubric(q1), bench.remove_question_rubric("no-such-question")) == (False, False)
    assert bench.remove_question_rubric(q0) is True and bench.remove_question_rubric(q0) is False
    assert bench.get_question_rubric(q0) is None and _rating_count(bench) == 0


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda b: b.add_question_rubric_trait("no-such-question", CLARITY), QuestionNotFoundError),
        (lambda b: b.set_question_rubric("no-such-question", Rubric(llm_traits=[CLARITY])), QuestionNotFoundError),
        (lambda b: b.set_global_rubric("clarity"), InvalidTypeError),
        (lambda b: b.add_global_rubric_trait(42), InvalidTypeError),
        (lambda b: b.add_global_rubric_trait(RegexRubricTrait(name="bad", pattern="(")), InvalidValueError),
        (
            lambda b: b.set_global_dynamic_rubric(
                DynamicRubric.model_construct(llm_traits=[CLARITY.model_copy(update={"description": None})])
            ),
            InvalidValueError,
        ),
    ],
    ids=[
        "a trait for an unknown question",
        "a rubric for an unknown question",
        "a rubric that is a string",
        "a trait that is a number",
        "a look-alike whose pattern does not compile",
        "a dynamic trait without summary or description",
    ],
)
def test_refusals(bench: Benchmark, call: Any, error: type[Exception]) -> None:
    before = bench.to_checkpoint()
    with pytest.raises(error):
        call(bench)
    assert bench.to_checkpoint() == before  # nothing was written


def test_an_unknown_question_with_nothing_to_add_is_left_alone(bench: Benchmark) -> None:
    before = bench.to_checkpoint()
    bench.set_question_rubric("no-such-question", Rubric())  # Karenina's answer: nothing happens
    q0 = bench.get_question_ids()[0]
    bench.set_question_rubric(q0, [])
    assert bench.to_checkpoint() == before and bench.get_question_rubric("no-such-question") is None


def test_clear_all_rubrics_counts_the_rubrics(bench: Benchmark) -> None:
    q0, q1 = bench.get_question_ids()
    assert bench.clear_all_rubrics() == 0
    bench.add_global_rubric_trait(CLARITY)
    bench.add_question_rubric_trait(q0, CITES)
    bench.add_question_rubric_trait(q1, CITES)
    bench.add_question_rubric_trait(q1, DEPTH)
    assert bench.clear_all_rubrics() == 3 and _rating_count(bench) == 0


def test_validate_rubrics_reports_as_karenina(bench: Benchmark) -> None:
    assert bench.validate_rubrics() == (True, [])
    q0 = bench.get_question_ids()[0]
    bench.add_global_rubric_trait(RubricTrait.llm("terse"))
    bench.add_global_rubric_trait(RubricTrait.regex("any", ""))
    bench.add_question_rubric_trait(q0, RubricTrait.regex("empty", "", "matches all"))
    valid, errors = bench.validate_rubrics()
    assert not valid
    assert errors == [
        {"source": "terse", "error": "Global LLM rubric trait missing name or description"},
        {"source": "any", "error": "Global regex rubric trait missing name or description"},
        {"source": "any", "error": "Regex trait missing pattern"},
        {"source": f"question:{q0}", "error": "Regex trait 'empty' missing pattern"},
    ]


# -- dynamic rubric --------------------------------------------------------------------------
def test_the_dynamic_rubric_lives_beside_the_global_one(bench: Benchmark) -> None:
    bench.add_global_rubric_trait(CLARITY)
    tone = RubricTrait.llm("tone", classes={"formal": "F", "casual": "C"}, summary="tone")
    bench.set_global_dynamic_rubric(DynamicRubric(regex_traits=[CITES], llm_traits=[tone]))
    dynamic = _fresh(bench).get_global_dynamic_rubric()
    assert isinstance(dynamic, DynamicRubric) and dynamic.get_trait_names() == ["tone", "cites"]
    assert [dynamic.resolve_concept_text(t) for t in dynamic.all_traits()] == ["tone", "Cites a source"]
    assert dynamic.regex_traits[0].pattern == CITES.pattern and not dynamic.is_empty()
    # The regular rubric is untouched, and both are in the graph as typed Ratings.
    rubric = bench.get_global_rubric()
    assert rubric is not None and rubric.get_trait_names() == ["clarity"]
    assert _rating_types(bench) == ["GlobalDynamicRubricTrait", "GlobalDynamicRubricTrait", "GlobalRubricTrait"]
    q0 = bench.get_question_ids()[0]
    merged = bench.get_merged_dynamic_rubric_for_question(q0)
    assert merged is not None and merged.get_trait_names() == ["tone", "cites"]
    # As Karenina writes them: the encoder's properties, the class tag, the summary once more,
    # and the deep-judgment settings that save strips only from the regular LLM traits.
    tone_rating = next(r for r in bench.to_checkpoint()["rating"] if r["name"] == "tone")
    names = [p["name"] for p in tone_rating["additionalProperty"]]
    assert names[:3] == ["deep_judgment_enabled", "deep_judgment_excerpt_enabled", "deep_judgment_search_enabled"]
    assert names[-2:] == ["dynamic_trait_type", "summary"] and names.count("summary") == 2
    clarity_rating = next(r for r in bench.to_checkpoint()["rating"] if r["name"] == "clarity")
    assert not any(p["name"].startswith("deep_judgment") for p in clarity_rating["additionalProperty"])


def test_setting_the_dynamic_rubric_again_or_none(bench: Benchmark) -> None:
    bench.add_global_rubric_trait(CLARITY)
    bench.set_global_dynamic_rubric(DynamicRubric(regex_traits=[CITES]))
    bench.set_global_dynamic_rubric(DynamicRubric(metric_traits=[FACTS]))
    dynamic = bench.get_global_dynamic_rubric()
    assert dynamic is not None and dynamic.get_trait_names() == ["facts"]
    bench.set_global_dynamic_rubric(None)
    assert bench.get_global_dynamic_rubric() is None
    assert [r["name"] for r in bench.to_checkpoint()["rating"]] == ["clarity"]
    # A global write drops the dynamic rubric, as Karenina's writes do in its checkpoint.
    bench.set_global_dynamic_rubric(DynamicRubric(regex_traits=[CITES]))
    bench.add_global_rubric_trait(DEPTH)
    assert bench.get_global_dynamic_rubric() is None and _rating_count(bench) == 2


# -- Karenina's objects, read by duck typing --------------------------------------------------
class RegexRubricTrait(BaseModel):  # Karenina's class name and fields; Karenina is not imported
    name: str
    description: str | None = None
    summary: str | None = None
    pattern: str
    case_sensitive: bool = True
    invert_result: bool = False
    higher_is_better: bool | None = True


class KareninaLike(BaseModel):  # the fields of a trait but none of its class names: not a trait
    name: str


class Rubricish:  # any object with Karenina's trait lists is a rubric
    def __init__(self, **lists: list[Any]) -> None:
        for field in ("llm_traits", "regex_traits", "callable_traits", "metric_traits", "agentic_traits"):
            setattr(self, field, lists.get(field, []))


def test_karenina_s_objects_are_read_by_their_fields(bench: Benchmark) -> None:
    theirs = RegexRubricTrait(name="cites", pattern=r"\[\d+\]", description="Cites a source", summary="cites")
    bench.add_global_rubric_trait(theirs)
    bench.set_question_rubric(bench.get_question_ids()[0], Rubricish(regex_traits=[theirs]))
    bench.set_global_dynamic_rubric(Rubricish(regex_traits=[theirs]))
    rubric, dynamic = bench.get_global_rubric(), bench.get_global_dynamic_rubric()
    assert rubric is not None and dynamic is not None
    assert (rubric.regex_traits[0].pattern, rubric.regex_traits[0].summary) == (r"\[\d+\]", "cites")
    assert dynamic.get_trait_names() == ["cites"]
    # The same Rating as our own trait with the same fields makes.
    ours = RubricTrait.regex("cites", r"\[\d+\]", "Cites a source", summary="cites").to_rating("Global")
    assert bench.to_checkpoint()["rating"][0] == ours
    with pytest.raises(InvalidTypeError, match="got KareninaLike"):
        bench.add_global_rubric_trait(KareninaLike(name="x"))


def test_a_template_kind_reads_as_karenina_rebuilds_it() -> None:
    schema = {
        "properties": {"count": {"type": "integer", "description": "how many"}, "doi": {"type": "boolean"}},
        "required": ["count"],
        "title": "Citations",
        "type": "object",
    }
    rating = RubricTrait.llm("citations").to_rating("Global")
    rating["additionalType"] = "karenina:GlobalLLMRubricTrait"
    rating["additionalProperty"] = [
        {"@type": "PropertyValue", "name": "kind", "value": {"type": "template", "schema": schema}}
    ]
    trait = read_as_karenina(rating)
    assert trait.kind == "template" and trait.higher_is_better is None
    rebuilt = trait.settings["kind"]["schema"]
    # Karenina's class from the schema gives every optional field a null default.
    assert rebuilt["properties"]["doi"] == {"default": None, "title": "Doi", "type": "boolean"}
    assert rebuilt["properties"]["count"]["description"] == "how many" and rebuilt["required"] == ["count"]
    again = trait.to_rating("Global")
    assert again["additionalType"] == "karenina:GlobalLLMRubricTrait" and again["bestRating"] == 0.0
