"""Scenario benchmarks as triples (docs/data-model.md §4): the corpus's scenario checkpoint, which
Karenina wrote, mapped, queried and exported; what Karenina's save does to other layouts; bad
scenarios refused with a pointer. tests/parity/test_scenarios.py checks the same against
Karenina itself, on scenarios its own builder makes."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import CheckpointError, Store, validate
from karenina_rdf.rdf import KAR
from tests.conftest import CORPUS, load_json, needs_corpus

pytestmark = [needs_corpus]

SCENARIO = CORPUS / "generated__scenario.jsonld"
SCENARIO_QUERIES = {"scenario-turns"}  # named queries whose cases are here (tests/sparql/test_queries.py)


@pytest.fixture
def doc() -> dict[str, Any]:
    return copy.deepcopy(load_json(SCENARIO))


def _import(doc: dict[str, Any]) -> tuple[Store, str]:
    store = Store.memory()
    return store, store.import_checkpoint(doc).iri


def _values(store: Store, sparql: str) -> list[tuple[str | None, ...]]:
    result = store.query(sparql)
    names = [v.value for v in result.variables]
    return [tuple(r[n].value if r[n] is not None else None for n in names) for r in result]


def test_the_file_karenina_wrote_comes_back_byte_for_byte(tmp_path: Any) -> None:
    with Store.memory() as store:
        result = store.import_checkpoint(SCENARIO)
        store.save(result.benchmark_id, tmp_path / "out.jsonld")
    assert (tmp_path / "out.jsonld").read_bytes() == SCENARIO.read_bytes()


# (SPARQL over the corpus file, the rows): each part of a scenario is a node SPARQL can reach.
GRAPH = [
    (
        "SELECT ?name ?entry WHERE { ?b schema:hasPart ?s . ?s a karenina:Scenario ; schema:name ?name ;"
        " karenina:entry/schema:identifier ?entry }",
        [("sycophancy_probe", "ask")],
    ),
    (
        "SELECT ?node ?pos ?text ?id WHERE { ?s karenina:scenarioNode ?n . ?n schema:identifier ?node ;"
        " karenina:position ?pos ; karenina:question ?q . ?q a schema:Question ; schema:text ?text ;"
        " schema:identifier ?id } ORDER BY ?pos",
        [
            ("ask", "0", "What is X?", "ee27e8e6a046a4fee869e5d321498721"),
            ("challenge", "1", "Are you sure?", "729a51874fe901b092899e9e8b31c97a"),
        ],
    ),
    (
        "SELECT ?from ?to ?ends ?cond WHERE { ?s karenina:scenarioEdge ?e . ?e karenina:position ?p ;"
        " karenina:fromNode/schema:identifier ?from . OPTIONAL { ?e karenina:toNode/schema:identifier ?to }"
        " OPTIONAL { ?e karenina:endsScenario ?ends } OPTIONAL { ?e karenina:condition ?c }"
        " BIND(BOUND(?c) AS ?cond) } ORDER BY ?p",
        [("ask", "challenge", None, "true"), ("ask", None, "true", "false"), ("challenge", None, "true", "false")],
    ),
    (
        "SELECT ?name ?answer ?language WHERE { ?n karenina:question ?q . ?q schema:text ?name ;"
        " schema:acceptedAnswer/schema:text ?answer ; schema:hasPart/schema:programmingLanguage ?language }"
        " ORDER BY ?name",
        [("Are you sure?", "Yes", "Python"), ("What is X?", "Y", "Python")],
    ),
    (
        "SELECT ?name ?kind WHERE { ?s karenina:scenarioOutcome ?o . ?o schema:name ?name ; karenina:check ?c"
        " BIND(DATATYPE(?c) AS ?kind) }",
        [("holds_position", "http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON")],
    ),
]


@pytest.mark.parametrize(("sparql", "expected"), GRAPH, ids=range(len(GRAPH)))
def test_the_scenario_is_triples(doc: dict[str, Any], sparql: str, expected: list[tuple[str | None, ...]]) -> None:
    store, _ = _import(doc)
    with store:
        assert _values(store, sparql) == expected


def test_the_named_query_lists_scenarios_turns_and_questions(doc: dict[str, Any]) -> None:
    store, _ = _import(doc)
    with store:
        rows = _values(store, "scenario-turns")
        assert rows == [
            (
                "Reference scenario benchmark",
                "sycophancy_probe",
                "0",
                "ask",
                "true",
                "ee27e8e6a046a4fee869e5d321498721",
                "What is X?",
                "Y",
                rows[0][-1],
            ),
            (
                "Reference scenario benchmark",
                "sycophancy_probe",
                "1",
                "challenge",
                "false",
                "729a51874fe901b092899e9e8b31c97a",
                "Are you sure?",
                "Yes",
                "__end__",
            ),
        ]
        assert sorted((rows[0][-1] or "").split(", ")) == ["__end__", "challenge (if)"]
        other = store.query("scenario-turns", scenario="no such scenario")
        assert list(other) == []


def test_the_vocabulary_is_closed() -> None:
    assert KAR.scenarioNode.node.value == "urn:karenina:vocab:scenarioNode"
    with pytest.raises(AttributeError):
        _ = KAR.scenarioNodes  # a misspelt term fails where it is written


def _drop(*path: str | int) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        node: Any = doc["hasPart"][0]
        for key in path[:-1]:
            node = node[key]
        node.pop(path[-1])

    return edit


def _set(value: Any, *path: str | int) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        node: Any = doc["hasPart"][0]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


# (edit, what the export writes instead of the edited file): Karenina's save, as its models dump.
CANONICAL: list[tuple[str, Callable[[dict[str, Any]], None], Callable[[dict[str, Any]], None]]] = [
    ("description left out: written as ''", _drop("description"), _set("", "description")),
    ("metadata left out: written as {}", _drop("metadata"), _set({}, "metadata")),
    ("outcomeCriteria left out: written as []", _drop("outcomeCriteria"), _set([], "outcomeCriteria")),
    ("a node's @type left out: written", _drop("nodes", "ask", "@type"), lambda d: None),
    ("a null agentIdentity: left out", _set(None, "nodes", "ask", "agentIdentity"), lambda d: None),
    ("an unknown key: dropped", _set(1, "nodes", "ask", "x-extra"), lambda d: None),
    ("an edge's null handover: left out", _set(None, "edges", 1, "handover"), lambda d: None),
    (
        "keys in another order: Karenina's order",
        lambda d: d["hasPart"].__setitem__(0, dict(reversed(list(d["hasPart"][0].items())))),
        lambda d: None,
    ),
]


@pytest.mark.parametrize(("name", "edit", "expected"), CANONICAL, ids=[c[0] for c in CANONICAL])
def test_export_writes_what_karenina_saves(
    doc: dict[str, Any],
    name: str,
    edit: Callable[[dict[str, Any]], None],
    expected: Callable[[dict[str, Any]], None],
) -> None:
    want = copy.deepcopy(doc)
    expected(want)
    edit(doc)
    store, iri = _import(doc)
    with store:
        got = store.export_checkpoint(iri)
    assert json.dumps(got["hasPart"]) == json.dumps(want["hasPart"])


# (edit, pointer, message fragment): Karenina refuses these too (tests/parity/test_scenarios.py).
REFUSED: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    ("nodes a list", _set([], "nodes"), "/hasPart/0", "'nodes', an object keyed by node id"),
    ("no entryNode", _drop("entryNode"), "/hasPart/0", "missing required field 'entryNode'"),
    ("no question", _drop("nodes", "ask", "question"), "/hasPart/0/nodes/ask", "'question'"),
    (
        "question text a number",
        _set(3, "nodes", "ask", "question", "text"),
        "/hasPart/0/nodes/ask/question/text",
        "must be a string",
    ),
    ("no template", _drop("nodes", "ask", "question", "hasPart"), "/hasPart/0/nodes/ask/question", "'hasPart'"),
    ("edge without source", _drop("edges", 0, "source"), "/hasPart/0/edges/0", "'source'"),
    ("condition a string", _set("x", "edges", 0, "condition"), "/hasPart/0/edges/0/condition", "an object or an array"),
    (
        "condition a list of strings",
        _set(["x"], "edges", 0, "condition"),
        "/hasPart/0/edges/0/condition",
        "array of objects",
    ),
    ("metadata a list", _set([], "nodes", "ask", "metadata"), "/hasPart/0/nodes/ask/metadata", "an object"),
    ("outcome without name", _drop("outcomeCriteria", 0, "name"), "/hasPart/0/outcomeCriteria/0", "'name'"),
    (
        "node of another type",
        _set("Node", "nodes", "ask", "@type"),
        "/hasPart/0/nodes/ask/@type",
        "karenina:ScenarioNode",
    ),
]


@pytest.mark.parametrize(("name", "edit", "pointer", "message"), REFUSED, ids=[c[0] for c in REFUSED])
def test_bad_scenarios_are_refused_with_a_pointer(
    doc: dict[str, Any], name: str, edit: Callable[[dict[str, Any]], None], pointer: str, message: str
) -> None:
    edit(doc)
    with Store.memory() as store, pytest.raises(CheckpointError) as caught:
        store.import_checkpoint(doc)
    assert any(p.pointer == pointer and message in p.message for p in caught.value.problems), caught.value.problems


def test_a_node_id_with_a_slash_gets_its_own_iri_and_keeps_its_key(doc: dict[str, Any]) -> None:
    scenario = doc["hasPart"][0]
    scenario["nodes"] = {("a/b ✓" if k == "ask" else k): v for k, v in scenario["nodes"].items()}
    scenario["entryNode"] = "a/b ✓"
    for e in scenario["edges"]:
        e["source"] = "a/b ✓" if e["source"] == "ask" else e["source"]
    store, iri = _import(doc)
    with store:
        assert store.export_checkpoint(iri)["hasPart"] == doc["hasPart"]
        (row,) = _values(store, "SELECT ?n WHERE { ?s karenina:entry ?n }")
        assert row[0] is not None and row[0].startswith(iri + "/scenarios/sycophancy_probe/nodes/")


def test_scenario_questions_are_questions_of_the_benchmark_for_queries(doc: dict[str, Any]) -> None:
    doc["hasPart"][0]["nodes"]["ask"]["questionData"]["keywords"] = ["sycophancy", "probe"]
    store, _ = _import(doc)
    with store:
        rows = _values(store, "SELECT ?k ?t WHERE { ?q schema:keywords ?k ; schema:text ?t } ORDER BY ?k")
        assert rows == [("probe", "What is X?"), ("sycophancy", "What is X?")]
        found = store.query("questions-by-keyword", keyword="sycophancy")
        assert [(r["question_id"].value, r["text"].value) for r in found] == [
            ("ee27e8e6a046a4fee869e5d321498721", "What is X?")
        ]
        assert [r[0] for r in _values(store, "questions-per-benchmark")][:1] == ["Reference scenario benchmark"]


def test_scenario_turns_are_not_unfinished_questions_and_readiness_names_them(doc: dict[str, Any]) -> None:
    # Karenina's scenario questions have no finished flag (its get_unfinished_questions is empty).
    doc["hasPart"][0]["nodes"]["challenge"]["question"]["hasPart"]["text"] = ""
    with Store.memory() as store:
        result = store.import_checkpoint(doc)
        assert list(store.query("unfinished-questions")) == []
        assert result.readiness is not None
        assert result.readiness.without_template == ("scenarios/sycophancy_probe/nodes/challenge/question",)


def test_a_finding_on_a_scenario_question_names_the_question(doc: dict[str, Any], tmp_path: Path) -> None:
    doc["hasPart"][0]["nodes"]["challenge"]["question"]["hasPart"]["text"] = ""
    path = tmp_path / "scenario.jsonld"
    path.write_text(json.dumps(doc), encoding="utf-8")
    (finding,) = [f for f in validate(path).findings if f.pointer == "/hasPart/0/nodes/challenge/question/hasPart"]
    assert (finding.severity, finding.question_id, finding.question_text) == (
        "Warning",
        "729a51874fe901b092899e9e8b31c97a",  # Karenina's Question id, from questionData
        "Are you sure?",
    )
