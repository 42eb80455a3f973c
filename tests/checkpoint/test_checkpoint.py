"""Bad input: every case names the file, the place in it and the rule (issue 3, must-hold 6)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import CheckpointError, Store, map_checkpoint, validate
from tests.conftest import EXAMPLES, load_json

BASE = "http://127.0.0.1:8000/"
DOC = load_json(EXAMPLES / "molecular-biology.jsonld")
Q0 = DOC["dataFeedElement"][0]["@id"]


def _edit(fn: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    doc = copy.deepcopy(DOC)
    fn(doc)
    return doc


def _q(doc: dict[str, Any], i: int = 0) -> dict[str, Any]:
    return doc["dataFeedElement"][i]["item"]


def _rating(atype: str, props: dict[str, Any], best: float = 1.0, worst: float = 0.0) -> dict[str, Any]:
    return {
        "@type": "Rating",
        "name": "t",
        "description": "d",
        "bestRating": best,
        "worstRating": worst,
        "additionalType": atype,
        "additionalProperty": [{"@type": "PropertyValue", "name": k, "value": v} for k, v in props.items()],
    }


def _add_q_rating(rating: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    return lambda d: _q(d).__setitem__("rating", [rating])


def _set_setting(value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["rating"][0]["additionalProperty"].__setitem__(
        0, {"@type": "PropertyValue", "name": "higher_is_better", "value": value}
    )


# (id, document edit, JSON pointer, question id or None, message fragment)
CASES = [
    ("root is an array", lambda d: d.clear(), None, None, None),
    ("Dataset era", lambda d: d.__setitem__("@type", "Dataset"), "/@type", None, "'Dataset era' checkpoint"),
    ("missing name", lambda d: d.pop("name"), "", None, "missing required field 'name'"),
    ("name not a string", lambda d: d.__setitem__("name", 3), "/name", None, "'name' must be a string, got a number"),
    (
        "string @context",
        lambda d: d.__setitem__("@context", "https://schema.org"),
        "/@context",
        None,
        "@context must be a JSON object",
    ),
    (
        "missing dataFeedElement",
        lambda d: d.pop("dataFeedElement"),
        "",
        None,
        "missing required field 'dataFeedElement'",
    ),
    (
        "missing question text",
        lambda d: _q(d).pop("text"),
        "/dataFeedElement/0/item",
        Q0,
        "missing required field 'text'",
    ),
    (
        "missing acceptedAnswer",
        lambda d: _q(d).pop("acceptedAnswer"),
        "/dataFeedElement/0/item",
        Q0,
        "missing required field 'acceptedAnswer'",
    ),
    (
        "finished not a boolean",
        lambda d: _q(d)["additionalProperty"][0].__setitem__("value", "maybe"),
        "/dataFeedElement/0/item/additionalProperty/0/value",
        Q0,
        "'finished' must be a boolean",
    ),
    (
        "template not Python",
        lambda d: _q(d)["hasPart"].__setitem__("programmingLanguage", "R"),
        "/dataFeedElement/0/item/hasPart/programmingLanguage",
        Q0,
        "must be exactly 'Python'",
    ),
    (
        "regex does not compile",
        _add_q_rating(_rating("karenina:QuestionSpecificRegexTrait", {"pattern": "(unclosed"})),
        "/dataFeedElement/0/item/rating/0/additionalProperty/0/value",
        Q0,
        "regex pattern does not compile",
    ),
    (
        "literal with one class",
        _add_q_rating(_rating("karenina:QuestionSpecificLLMRubricTrait", {"kind": "literal", "classes": {"a": "A"}})),
        "/dataFeedElement/0/item/rating/0/additionalProperty/1/value",
        Q0,
        "2 to 20 names",
    ),
    (
        "metric not allowed in tp_only",
        _add_q_rating(
            _rating("karenina:QuestionSpecificMetricRubricTrait", {"metrics": ["accuracy"], "tp_instructions": ["x"]})
        ),
        "/dataFeedElement/0/item/rating/0/additionalProperty/0/value",
        Q0,
        "not allowed in tp_only",
    ),
    (
        "callable code not base64",
        _add_q_rating(_rating("karenina:QuestionSpecificCallableTrait", {"callable_code": "not base64!"})),
        "/dataFeedElement/0/item/rating/0/additionalProperty/0/value",
        Q0,
        "not valid base64",
    ),
    (
        "retired Manual trait type",
        _add_q_rating(_rating("QuestionSpecificManualRubricTrait", {})),
        "/dataFeedElement/0/item/rating/0/additionalType",
        Q0,
        "Manual traits were replaced",
    ),
    (
        "question trait in the global rubric",
        lambda d: d.__setitem__("rating", [_rating("karenina:QuestionSpecificRubricTrait", {})]),
        "/rating/0/additionalType",
        None,
        "must be a global trait type",
    ),
    (
        "bestRating not a number",
        lambda d: d["rating"][0].__setitem__("bestRating", "high"),
        "/rating/0/bestRating",
        None,
        "'bestRating' must be a number, got a string",
    ),
    (
        "results export, not a checkpoint",
        lambda d: (d.clear(), d.update({"format_version": "2.2", "results": []})),
        "",
        None,
        "verification results export",
    ),
]


# Files Karenina loads (tests/parity/test_load.py asks it) though a trait in them is one it cannot
# use: imported, with a warning naming the place and the trait.
# (id, document edit, JSON pointer, trait name, message fragment)
WARNED = [
    (
        "score trait min >= max",
        _add_q_rating(_rating("karenina:QuestionSpecificRubricTrait", {"min_score": 5, "max_score": 5}, 5, 5)),
        "/dataFeedElement/0/item/rating/0",
        "t",
        "A score trait's range is empty",
    ),
    (
        "higher_is_better a string",
        _set_setting("yes please"),
        "/rating/0",
        "factually_correct",
        "higher_is_better must be true or false",
    ),
    (
        "max_score a float",
        lambda d: d["rating"][1]["additionalProperty"].append(
            {"@type": "PropertyValue", "name": "max_score", "value": 2.5}
        ),
        "/rating/1/additionalProperty/3/value",
        "completeness",
        "max_score must be an integer",
    ),
    # Templates built to exhaust the parser or the class walk: Karenina loads the file (it only
    # runs templates at verification); the check reports them instead of crashing.
    (
        "template: a million chained attributes",
        lambda d: _q(d)["hasPart"].__setitem__("text", "x" + ".y" * 1_000_000),
        "/dataFeedElement/0/item/hasPart",
        None,
        "The answer template nests too deeply to be read",
    ),
    (
        "template: a chain of 3,000 classes",
        lambda d: _q(d)["hasPart"].__setitem__(
            "text",
            "class A0(BaseAnswer):\n    pass\n" + "".join(f"class A{i}(A{i - 1}):\n    pass\n" for i in range(1, 3000)),
        ),
        "/dataFeedElement/0/item/hasPart",
        None,
        "The answer template nests too deeply to be read",
    ),
    # Karenina keeps both items in its file and answers with the last (tests/parity/test_load.py).
    (
        "duplicate question ids",
        lambda d: d["dataFeedElement"][1].__setitem__("@id", Q0),
        "/dataFeedElement/0/@id",
        None,
        "question id also used at /dataFeedElement/1, the item Karenina answers with",
    ),
    (
        "answer_notes not a string",
        lambda d: _q(d)["additionalProperty"].append({"@type": "PropertyValue", "name": "answer_notes", "value": 0}),
        "/dataFeedElement/0/item/additionalProperty/-1/value",
        None,
        "'answer_notes' should be a string, got 0; kept as written",
    ),
]


@pytest.mark.parametrize(("edit", "pointer", "trait", "message"), [c[1:] for c in WARNED], ids=[c[0] for c in WARNED])
def test_loaded_with_a_warning(edit: Any, pointer: str, trait: str | None, message: str) -> None:
    doc = _edit(edit)
    if "/-1/" in pointer:  # the last entry of a list the edit appended to
        items = _q(doc)["additionalProperty"]
        pointer = pointer.replace("/-1/", f"/{len(items) - 1}/")
    store = Store.memory()
    result = store.import_checkpoint(doc)
    match = [w for w in result.warnings if message in w]
    assert match, result.warnings
    assert f" at {pointer}" in match[0], match[0]
    assert (f"(trait {trait!r})" in match[0]) if trait else "(trait " not in match[0], match[0]
    assert [b.name for b in store.benchmarks()] == [DOC["name"]]
    # Nothing lost: the benchmark exports as it came in, the odd value included.
    exported = store.export_checkpoint(result.benchmark_id)
    assert exported == doc


# Lone surrogates ("\ud800" escapes) are valid JSON that no text holds: Karenina loads them (and
# its save then raises), RDF literals cannot hold them. Imported with U+FFFD and a warning.
SURROGATES = [
    ("in the name", lambda d: d.__setitem__("name", json.loads('"bad \\ud800 name"')), "/name"),
    ("in a question", lambda d: _q(d).__setitem__("text", json.loads('"x \\udfff"')), "/dataFeedElement/0/item/text"),
    (
        "in a key",
        lambda d: d["additionalProperty"].append(
            {"@type": "PropertyValue", "name": "n", "value": {json.loads('"\\ud83d"'): 1}}
        ),
        "/additionalProperty/-1/value",
    ),
]


@pytest.mark.parametrize(("edit", "pointer"), [c[1:] for c in SURROGATES], ids=[c[0] for c in SURROGATES])
@pytest.mark.parametrize("as_file", [True, False], ids=["file", "document"])
def test_lone_surrogates_are_replaced_with_a_warning(tmp_path: Path, edit: Any, pointer: str, as_file: bool) -> None:
    doc = _edit(edit)
    if "/-1/" in pointer:
        pointer = pointer.replace("/-1/", f"/{len(doc['additionalProperty']) - 1}/")
    path = tmp_path / "s.jsonld"
    path.write_text(json.dumps(doc), encoding="ascii")  # the surrogate stays a \u escape
    store = Store.memory()
    result = store.import_checkpoint(path if as_file else doc)
    match = [w for w in result.warnings if "unpaired UTF-16 surrogate" in w]
    assert len(match) == 1 and f" at {pointer}:" in match[0], result.warnings
    exported = json.dumps(store.export_checkpoint(result.benchmark_id))
    assert "\\ufffd" in exported and "\\ud8" not in exported and "\\udf" not in exported
    report = validate(path)
    found = [f for f in report.findings if "unpaired UTF-16 surrogate" in f.message]
    assert [(f.severity, f.pointer) for f in found] == [("Warning", pointer)]


def test_a_surrogate_pair_is_text_not_a_warning(tmp_path: Path) -> None:
    doc = _edit(lambda d: d.__setitem__("name", json.loads('"emoji \\ud83d\\ude00"')))
    path = tmp_path / "pair.jsonld"
    path.write_text(json.dumps(doc), encoding="ascii")
    result = Store.memory().import_checkpoint(path)
    assert result.name == "emoji \U0001f600" and not [w for w in result.warnings if "surrogate" in w]


@pytest.mark.parametrize(("edit", "pointer", "qid", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(tmp_path: Path, edit: Any, pointer: str | None, qid: str | None, message: str | None) -> None:
    doc = _edit(edit)
    path = tmp_path / "bad.jsonld"
    path.write_text(json.dumps([] if doc == {} and message is None else doc), encoding="utf-8")
    store = Store.memory()
    before = set(store.oxigraph.quads_for_pattern(None, None, None, None))
    with pytest.raises(CheckpointError) as info:
        store.import_checkpoint(path)
    problems = info.value.problems
    if message is None:  # the root-is-an-array case
        assert problems[0].pointer == "" and "must be a JSON object, got an array" in problems[0].message
        return
    match = [p for p in problems if message in p.message]
    assert match, f"no problem mentions {message!r}: {[str(p) for p in problems]}"
    assert match[0].file == str(path)
    assert match[0].pointer == pointer
    assert match[0].question_id == qid
    assert set(store.oxigraph.quads_for_pattern(None, None, None, None)) == before


@pytest.mark.parametrize(
    ("data", "line", "message"),
    [
        (b"this is not json", 1, "not valid JSON"),
        (b'{\n  "name": "caf\xe9"\n}', 2, "not UTF-8 text"),
        (b'{\n  "name": "x",\n  "dataFeedElement": [\n', 4, "file ends before the JSON does"),
    ],
    ids=["not JSON", "not UTF-8 (Latin-1 byte)", "truncated"],
)
def test_unreadable_files(tmp_path: Path, data: bytes, line: int, message: str) -> None:
    path = tmp_path / "bad.jsonld"
    path.write_bytes(data)
    with pytest.raises(CheckpointError) as info:
        Store.memory().import_checkpoint(path)
    (problem,) = info.value.problems
    assert (problem.file, problem.line) == (str(path), line)
    assert message in problem.message


@pytest.mark.slow  # writes and reads a 200 MB file
def test_200_mb_file_cut_off_midway(tmp_path: Path) -> None:
    """A large upload interrupted: reported by line, store untouched, memory bounded by the file."""
    item = json.dumps(DOC["dataFeedElement"][0], indent=2)
    path = tmp_path / "big.jsonld"
    with open(path, "w", encoding="utf-8") as fh:
        head = json.dumps(dict(DOC, dataFeedElement=[]), indent=2)
        fh.write(head[: head.index('"dataFeedElement": [') + len('"dataFeedElement": [')] + "\n")
        n = 0
        while fh.tell() < 200_000_000:
            fh.write(item.replace(Q0, f"q{n}") + ",\n")
            n += 1
        fh.write(item[: len(item) // 2])  # cut inside an item
    store = Store.memory()
    store.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
    before = set(store.oxigraph.quads_for_pattern(None, None, None, None))
    with pytest.raises(CheckpointError) as info:
        store.import_checkpoint(path)
    (problem,) = info.value.problems
    assert problem.file == str(path)
    assert problem.line is not None and problem.line > 1_000_000
    assert "file ends before the JSON does (truncated?)" in problem.message
    assert set(store.oxigraph.quads_for_pattern(None, None, None, None)) == before


def test_warnings_for_what_karenina_loads_but_cannot_evaluate() -> None:
    doc = _edit(_add_q_rating(_rating("karenina:QuestionSpecificRegexTrait", {})))
    mapped = map_checkpoint(doc, base_iri=BASE, source="w.jsonld")
    assert [(w.pointer, w.question_id) for w in mapped.warnings] == [
        ("/dataFeedElement/0/item/rating/0/additionalProperty", Q0)
    ]
    assert "regex trait has no pattern" in mapped.warnings[0].message


def test_all_problems_reported_at_once() -> None:
    doc = _edit(lambda d: (_q(d, 0).pop("text"), _q(d, 2).pop("acceptedAnswer")))
    with pytest.raises(CheckpointError) as info:
        map_checkpoint(doc, base_iri=BASE)
    assert [p.pointer for p in info.value.problems] == ["/dataFeedElement/0/item", "/dataFeedElement/2/item"]


# Inputs found by mutating corpus files that once escaped as TypeError/OverflowError/... or
# imported and then broke the views: each must be a CheckpointError with a pointer.
ROBUSTNESS = [
    ("trait name a number", lambda d: d["rating"][0].__setitem__("name", 2.5), "/rating/0/name", "must be a string"),
    (
        "trait settings not a list",
        lambda d: d["rating"][0].__setitem__("additionalProperty", True),
        "/rating/0/additionalProperty",
        "must be an array",
    ),
    (
        "bestRating overflows",
        lambda d: d["rating"][0].__setitem__("bestRating", 10**400),
        "/rating/0/bestRating",
        "too large",
    ),
    (
        "literal classes not strings",
        _add_q_rating(
            _rating("karenina:QuestionSpecificLLMRubricTrait", {"kind": "literal", "classes": {"a": 1, "b": [2]}})
        ),
        "/dataFeedElement/0/item/rating/0/additionalProperty/1/value",
        "description string",
    ),
]


@pytest.mark.parametrize(("edit", "pointer", "message"), [c[1:] for c in ROBUSTNESS], ids=[c[0] for c in ROBUSTNESS])
def test_robustness(edit: Any, pointer: str | None, message: str) -> None:
    with pytest.raises(CheckpointError) as info:
        map_checkpoint(_edit(edit), base_iri=BASE, source="f.jsonld")
    match = [p for p in info.value.problems if message in p.message]
    assert match, [str(p) for p in info.value.problems]
    if pointer is not None:
        assert match[0].pointer == pointer


def test_deeply_nested_json(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000, encoding="utf-8")
    with pytest.raises(CheckpointError, match="nested too deeply"):
        Store.memory().import_checkpoint(path)


@pytest.mark.parametrize(
    ("value", "stored", "exported"),
    [("yes", "true", "yes"), (1, "true", 1), (True, "true", True)],
    ids=["string yes", "integer 1", "boolean"],
)
def test_finished_is_typed_and_written_back_as_found(value: Any, stored: str | None, exported: Any) -> None:
    store = Store.memory()
    doc = _edit(lambda d: _q(d)["additionalProperty"][0].__setitem__("value", value))
    iri = store.import_checkpoint(doc).iri
    rows = list(store.query(f"SELECT ?f WHERE {{ <{iri}/questions/{Q0}> karenina:finished ?f }}"))
    assert [r["f"].value for r in rows] == ([stored] if stored else [])
    pv = store.export_checkpoint(iri)["dataFeedElement"][0]["item"]["additionalProperty"][0]
    assert pv == {"@type": "PropertyValue", "name": "finished", "value": exported}


def test_null_values_are_dropped_as_karenina_saves_them() -> None:
    store = Store.memory()
    doc = _edit(
        lambda d: _q(d)["additionalProperty"].append({"@type": "PropertyValue", "name": "custom_x", "value": None})
    )
    iri = store.import_checkpoint(doc).iri
    pv = store.export_checkpoint(iri)["dataFeedElement"][0]["item"]["additionalProperty"][-1]
    assert pv == {"@type": "PropertyValue", "name": "custom_x"}  # exclude_none: no "value" key


def test_null_in_optional_text_fields_is_absent() -> None:
    store = Store.memory()
    doc = _edit(lambda d: (d.__setitem__("description", None), d["rating"][0].__setitem__("description", None)))
    out = store.export_checkpoint(store.import_checkpoint(doc).iri)
    assert "description" not in out and "description" not in out["rating"][0]


def test_empty_item_id_is_derived_and_written_back() -> None:
    store = Store.memory()
    doc = _edit(lambda d: d["dataFeedElement"][0].__setitem__("@id", ""))
    iri = store.import_checkpoint(doc).iri
    text = _q(doc)["text"]
    from karenina_rdf import Benchmark, generate_question_id

    assert Benchmark(store, iri).get_question_ids()[0] == generate_question_id(text)
    assert store.export_checkpoint(iri)["dataFeedElement"][0]["@id"] == ""
