"""Validation reports: one report for shapes, Python checks and Karenina's load rules, located
by benchmark, question, JSON pointer and property; the CLI's formats and exit codes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from typer.testing import CliRunner

from karenina_rdf import BenchmarkReport, CheckpointError, Finding, Store, validate, validate_store
from karenina_rdf.cli import app
from karenina_rdf.validation._validate import LOAD_RULES, reports_turtle
from tests.conftest import EXAMPLES, ROOT, load_json
from tests.helpers.violations import MESSAGE as VIOLATION
from tests.helpers.violations import violation_after_loading

FIXTURES = ROOT / "tests" / "validation" / "fixtures" / "shapes"

DOC = load_json(EXAMPLES / "molecular-biology.jsonld")
runner = CliRunner()


def _regex_without_pattern(doc: dict[str, Any]) -> None:
    doc["dataFeedElement"][1]["item"]["rating"] = [
        {
            "@type": "Rating",
            "name": "cites",
            "bestRating": 1.0,
            "worstRating": 0.0,
            "additionalType": "karenina:QuestionSpecificRegexTrait",
        }
    ]


def test_example_conforms() -> None:
    report = validate(EXAMPLES / "pharmacology.jsonld", engine="pyshacl")
    assert report.conforms and report.findings == []
    assert report.benchmark == "Pharmacology examples"


def test_warning_is_located_in_the_file() -> None:
    doc = copy.deepcopy(DOC)
    _regex_without_pattern(doc)
    report = validate(doc, engine="pyshacl")
    assert report.conforms  # a warning does not make it fail
    (finding,) = report.warnings
    qid = doc["dataFeedElement"][1]["@id"]
    assert finding.pointer == "/dataFeedElement/1/item/rating/0"
    assert (finding.question_id, finding.question_text) == (qid, doc["dataFeedElement"][1]["item"]["text"])
    assert finding.path == "urn:karenina:vocab:pattern"
    assert "regex trait has no pattern" in finding.message
    assert finding.benchmark == "Molecular biology examples"


def test_load_rules_come_back_in_the_same_report() -> None:
    doc = copy.deepcopy(DOC)
    doc["dataFeedElement"][2]["item"].pop("acceptedAnswer")
    report = validate(doc, engine="pyshacl")
    assert not report.conforms
    (finding,) = report.violations
    assert (finding.component, finding.pointer) == (LOAD_RULES, "/dataFeedElement/2/item")
    assert finding.question_id == doc["dataFeedElement"][2]["@id"]


def test_turtle_is_a_standard_report() -> None:
    doc = copy.deepcopy(DOC)
    _regex_without_pattern(doc)
    text = validate(doc, engine="pyshacl").to_turtle()
    g = ox.Store()
    g.load(input=text.encode(), format=ox.RdfFormat.TURTLE)
    sh = "http://www.w3.org/ns/shacl#"
    ask = g.query(
        f"ASK {{ ?r a <{sh}ValidationReport> ; <{sh}conforms> false ; <{sh}result> ?x . "
        f"?x <{sh}resultSeverity> <{sh}Warning> ; <{sh}focusNode> ?f ; <{sh}resultPath> ?p ; <{sh}resultMessage> ?m }}"
    )
    assert bool(ask)


@pytest.mark.slow  # pyshacl, the reference engine, over whole stored benchmarks
def test_validate_store(store: Store) -> None:
    store.import_paths([EXAMPLES])
    reports = validate_store(store, engine="pyshacl")
    benchmarks = [r for r in reports if r.run is None]
    assert [r.benchmark for r in benchmarks] == sorted(r.benchmark or "" for r in benchmarks)
    # The example runs (examples/results/) are validated too, after the benchmarks.
    assert sorted(r.run for r in reports if r.run is not None) == sorted(
        p.stem for p in (EXAMPLES / "results").glob("*.json")
    )
    assert all(r.conforms and not r.findings for r in reports) and len(benchmarks) == 3


@pytest.mark.parametrize(
    ("args", "code", "expect"),
    [
        pytest.param(  # pyshacl, the reference engine, over every example benchmark and run
            ["validate", str(EXAMPLES)], 0, "conforms (0 violations, 0 warnings)", marks=pytest.mark.slow
        ),
        (["validate", "BAD"], 1, "at /dataFeedElement/2/item (question"),
        (["validate", "BAD", "--format", "json"], 1, '"conforms": false'),
        (["validate", "BAD", "--format", "turtle"], 1, "sh:ValidationReport"),
        (["validate"], 2, ""),
        (["validate", "x", "--format", "xml"], 2, ""),
    ],
)
def test_cli(tmp_path: Path, args: list[str], code: int, expect: str) -> None:
    doc = copy.deepcopy(DOC)
    doc["dataFeedElement"][2]["item"].pop("acceptedAnswer")
    bad = tmp_path / "bad.jsonld"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    args = [str(bad) if a == "BAD" else a for a in args] + ["--engine", "pyshacl", "--store", str(tmp_path / "s")]
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.output
    assert expect in result.stdout


@pytest.mark.slow  # pyshacl, the reference engine, over whole stored benchmarks
def test_cli_stored(tmp_path: Path) -> None:
    store = str(tmp_path / "s")
    assert runner.invoke(app, ["import", str(EXAMPLES), "--store", store]).exit_code == 0
    result = runner.invoke(
        app, ["validate", "--stored", "Pharmacology examples", "--engine", "pyshacl", "--store", store]
    )
    assert result.exit_code == 0 and "Pharmacology examples" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "EMPTY"],
        ["validate", "--stored", "nosuch"],
        ["validate", str(EXAMPLES), "--base-iri", "not an iri"],
    ],
    ids=["no checkpoint files", "unknown stored benchmark", "bad base IRI"],
)
def test_cli_usage_errors(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "empty").mkdir()
    args = [str(tmp_path / "empty") if a == "EMPTY" else a for a in args] + ["--store", str(tmp_path / "s")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "error:" in result.stderr and "Traceback" not in result.output


def _bad_template(doc: dict[str, Any]) -> None:
    doc["dataFeedElement"][0]["item"]["hasPart"]["text"] = "x = 1\n"


def test_import_with_validation_refuses_violations_and_keeps_store(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
    before = set(store.oxigraph.quads_for_pattern(None, None, None, None))
    doc = copy.deepcopy(DOC)
    violation_after_loading(monkeypatch)
    with pytest.raises(CheckpointError) as info:
        store.import_checkpoint(doc, validate=True)
    (problem,) = info.value.problems
    assert problem.pointer == "/dataFeedElement/0/item/hasPart" and problem.message == VIOLATION
    assert set(store.oxigraph.quads_for_pattern(None, None, None, None)) == before
    with pytest.raises(CheckpointError):
        store.import_checkpoint(doc)  # validating is the default
    assert store.import_checkpoint(doc, validate=False).status == "imported"


def test_a_template_karenina_loads_imports_with_a_warning_naming_the_question(store: Store) -> None:
    # Karenina loads a file whatever its templates say (they are only run at verification).
    doc = copy.deepcopy(DOC)
    _bad_template(doc)
    result = store.import_checkpoint(doc)
    assert result.status == "imported"
    (warning,) = [w for w in result.warnings if "BaseAnswer" in w]
    qid = doc["dataFeedElement"][0]["@id"]
    assert f"at /dataFeedElement/0/item/hasPart (question {qid!r})" in warning


def test_import_with_validation_returns_warnings(store: Store) -> None:
    doc = copy.deepcopy(DOC)
    _regex_without_pattern(doc)
    result = store.import_checkpoint(doc, validate=True)
    assert result.status == "imported"
    assert len(result.warnings) == 1 and "/dataFeedElement/1/item/rating/0" in result.warnings[0]


@pytest.mark.parametrize(
    ("flags", "code", "stored"),
    [([], 1, False), (["--validate"], 1, False), (["--no-validate"], 0, True)],
    ids=["default", "validate", "no-validate"],
)
def test_cli_import_validates_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: list[str], code: int, stored: bool
) -> None:
    doc = copy.deepcopy(DOC)
    bad = tmp_path / "bad.jsonld"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    violation_after_loading(monkeypatch)
    result = runner.invoke(app, ["import", str(bad), *flags, "--store", str(tmp_path / "s")])
    assert result.exit_code == code
    if not stored:
        assert f"bad.jsonld at /dataFeedElement/0/item/hasPart: {VIOLATION}" in result.stderr
    with Store(tmp_path / "s") as s:
        assert [b.questions for b in s.benchmarks()] == ([len(doc["dataFeedElement"])] if stored else [])


def test_import_reports_evaluation_mode_readiness(store: Store) -> None:
    doc = copy.deepcopy(DOC)
    items = doc["dataFeedElement"]
    del items[0]["item"]["hasPart"]  # no template: rubric_only at most
    doc.pop("rating", None)
    for item in items:
        item["item"].pop("rating", None)  # no rubric anywhere: the first question is ready for nothing
    result = store.import_checkpoint(doc)
    r = result.readiness
    assert r is not None
    n = len(items)
    assert r.questions == n
    assert r.ready == {"template_only": n - 1, "template_and_rubric": 0, "rubric_only": 0}
    assert r.without_template == (items[0]["@id"],)
    assert r.not_ready == (items[0]["@id"],)
    assert f"template_only {n - 1}" in r.line() and repr(items[0]["@id"]) in r.line()
    assert store.import_checkpoint(doc, validate=False).readiness is None  # unchanged, and not checked


def test_cli_import_prints_readiness(tmp_path: Path) -> None:
    result = runner.invoke(app, ["import", str(EXAMPLES / "pharmacology.jsonld"), "--store", str(tmp_path / "s")])
    assert result.exit_code == 0
    assert "ready for: template_only 4, template_and_rubric 4, rubric_only 4 (of 4 questions)" in result.stdout


def _fixture_report(name: str) -> ox.Store:
    from karenina_rdf.validation._shacl import validate_turtle

    results = validate_turtle(FIXTURES / name).results
    findings = [Finding.of(r) for r in results]
    g = ox.Store()
    g.load(
        reports_turtle([BenchmarkReport(source=name, benchmark=None, findings=findings)]).encode(),
        format=ox.RdfFormat.TURTLE,
    )
    return g


SH_PREFIXES = (
    "PREFIX sh: <http://www.w3.org/ns/shacl#> PREFIX schema: <https://schema.org/> "
    "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> "
)


@pytest.mark.parametrize(
    ("fixture", "pattern"),
    [
        # A complex path is the shape's own path structure, not text.
        ("answer-violates.ttl", "?x sh:resultPath [ sh:inversePath schema:acceptedAnswer ]"),
        # A value keeps its datatype: the fixture's "1.5"^^xsd:double, not the string "1.5".
        ("trait-llm-violates.ttl", '?x sh:value "1.5"^^xsd:double'),
        # An IRI value stays an IRI.
        ("item-violates.ttl", "?x sh:value <http://example.org/notq>"),
    ],
)
def test_turtle_report_keeps_paths_and_value_types(fixture: str, pattern: str) -> None:
    g = _fixture_report(fixture)
    assert bool(g.query(f"{SH_PREFIXES} ASK {{ ?r sh:result ?x . {pattern} }}"))
