"""Named queries (queries/*.rq): headers, safe parameter binding, results on known data, CLI."""

from __future__ import annotations

import copy
import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from typer.testing import CliRunner

from karenina_rdf import InvalidValueError, NamedQuery, QueryNotFoundError, Store, named_queries
from karenina_rdf.cli import app
from karenina_rdf.sparql._docs import render
from karenina_rdf.sparql._named import bind_values, find_query, parse_query, to_term
from tests.conftest import EXAMPLES, ROOT, load_json

runner = CliRunner()
MOL, PHARMA, BIO = "Molecular biology examples", "Pharmacology examples", "Bioinformatics methods examples"
IMATINIB = "What is the primary molecular target of imatinib?"


def _variant_doc() -> dict[str, Any]:
    """A fourth benchmark: a near-duplicate of a molecular-biology question (case and spaces),
    one question without a template, one with a blank template, one with Karenina's default."""
    doc = copy.deepcopy(load_json(EXAMPLES / "molecular-biology.jsonld"))
    doc["@id"] = "urn:uuid:variants"
    doc["name"] = "Variants"
    items = doc["dataFeedElement"]
    items[0]["item"]["text"] = "  what is the main   function of the protein encoded by TP53?"
    items[0]["@id"] = "urn:uuid:variant-tp53"
    for i in (1, 2):  # not the same questions as in molecular biology: other ids and texts
        items[i]["@id"] = f"urn:uuid:variant-{i}"
        items[i]["item"]["text"] += f" (variant {i})"
    del items[1]["item"]["hasPart"]
    items[2]["item"]["hasPart"]["text"] = "   \n"
    del items[3:]
    return doc


@pytest.fixture(scope="module")
def stocked() -> Iterator[Store]:
    s = Store.memory()
    s.import_paths([EXAMPLES])
    s.import_checkpoint(_variant_doc(), validate=False)  # a blank template is a shape warning only
    yield s
    s.close()


def rows(store: Store, name: str, **params: Any) -> list[dict[str, str | None]]:
    result = store.query(name, **params)
    names = [v.value for v in result.variables]
    return [{n: (r[n].value if r[n] is not None else None) for n in names} for r in result]


def column(store: Store, name: str, col: str, **params: Any) -> list[str | None]:
    return [r[col] for r in rows(store, name, **params)]


TP53 = "urn:uuid:question-what-is-the-main-function-of-the-protein-encoded-b-8dac577c"

# (query, params, column, expected values of that column in order)
CASES: list[tuple[str, dict[str, Any], str, list[Any]]] = [
    ("questions-by-keyword", {"keyword": "nsaids"}, "text", ["Which enzyme does aspirin irreversibly inhibit?"]),
    ("questions-by-keyword", {"keyword": "genomics"}, "benchmark", [BIO, BIO, MOL, MOL, "Variants"]),
    ("questions-by-keyword", {"keyword": "GENOMICS"}, "benchmark", []),  # keywords match exactly
    # Full-text, best first: the word in the answers (and the text) of these three questions.
    ("search", {"phrase": "KINASE"}, "benchmark", [PHARMA, MOL, "Variants"]),
    ("search", {"phrase": "losartan"}, "text", ["Which receptor does losartan block?"]),
    ("search", {"phrase": '"does losartan"'}, "text", ["Which receptor does losartan block?"]),
    ("search", {"phrase": '"losartan does"'}, "text", []),
    ("questions-per-benchmark", {}, "questions", ["4", "5", "4", "3"]),
    ("benchmark-summary", {}, "finished", ["3", "4", "3", "3"]),
    ("same-question", {}, "question", [IMATINIB, IMATINIB]),
    ("same-question", {}, "match", ["same id", "same text"]),
    ("near-duplicates", {}, "questions", ["2"]),
    ("unfinished-questions", {}, "benchmark_name", [BIO, MOL, PHARMA]),
    ("unfinished-questions", {"benchmark": PHARMA}, "text", ["What is the mechanism of action of omeprazole?"]),
    ("questions-without-template", {}, "why", ["no template", "blank template"]),
    ("evaluation-modes", {"benchmark": "Variants"}, "template_only", ["false", "false", "true"]),
    ("evaluation-modes", {"benchmark": "Variants"}, "rubric_only", ["true", "true", "true"]),
    ("traits-by-kind", {}, "class", ["LLMRubricTrait"] * 4 + ["MetricRubricTrait"] + ["RegexRubricTrait"] * 2),
    ("traits-by-kind", {}, "scope", ["global", "question", "question", "global", "global", "global", "question"]),
    ("benchmarks-by-author", {"author": "EXAMPLES"}, "benchmark", [BIO, MOL, PHARMA, "Variants"]),
    ("benchmarks-by-author", {"author": "nobody"}, "benchmark", []),
    (
        "benchmarks-by-property",
        {"property": "domain"},
        "found",
        ["bioinformatics"] + ["molecular biology"] * 1 + ["pharmacology", "molecular biology"],
    ),
    ("benchmarks-by-property", {"property": "domain", "value": "pharmacology"}, "benchmark", [PHARMA]),
    ("benchmark-summary", {"benchmark": "Variants"}, "with_template", ["1"]),
    ("benchmark-summary", {}, "questions", ["4", "5", "4", "3"]),
]


@pytest.mark.parametrize(("name", "params", "col", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_named_query(stocked: Store, name: str, params: dict[str, Any], col: str, expected: list[Any]) -> None:
    assert column(stocked, name, col, **params) == expected


def test_every_named_query_has_a_case() -> None:
    from tests.checkpoint.test_scenarios import SCENARIO_QUERIES  # and the scenario queries there
    from tests.results.test_results_queries import RESULTS_QUERIES  # the results queries are tested there
    from tests.runner.test_pipeline import RUNNER_QUERIES  # and the cost of runs made here there

    assert not {c[0] for c in CASES} & (RESULTS_QUERIES | RUNNER_QUERIES | SCENARIO_QUERIES)
    assert {c[0] for c in CASES} | RESULTS_QUERIES | RUNNER_QUERIES | SCENARIO_QUERIES == set(named_queries())


def test_near_duplicates_names_both_questions(stocked: Store) -> None:
    (row,) = rows(stocked, "near-duplicates")
    assert row["normalised"] == "what is the main function of the protein encoded by tp53?"
    assert set((row["found"] or "").split(" | ")) == {f"{MOL}: {TP53}", "Variants: urn:uuid:variant-tp53"}


def test_every_query_has_a_title_description_and_documented_params() -> None:
    for name, q in named_queries().items():
        assert q.title != name and q.description, name
        assert all(p.description for p in q.params), name
        for p in q.params:
            assert f"?{p.name}" in q.sparql, (name, p.name)


def test_docs_are_generated_from_the_headers() -> None:
    assert (ROOT / "docs" / "queries.md").read_text(encoding="utf-8") == render(), (
        "docs/queries.md is out of date: regenerate it with `python -m karenina_rdf.sparql._docs > docs/queries.md`"
    )


# -- parameters are values, never SPARQL ---------------------------------------------------------

EVIL = ['x" } DROP ALL #', "x' } ; CLEAR DEFAULT", 'a"""b', "line\nbreak", "<http://evil>", "\\u0022", "}}}"]


@pytest.mark.parametrize("value", EVIL)
def test_a_hostile_value_is_bound_as_a_string(stocked: Store, value: str) -> None:
    (row,) = list(stocked.query("SELECT ?v WHERE { }", v=value))
    assert row["v"] == ox.Literal(value)  # the very string came back: it was data, not SPARQL
    (row,) = list(stocked.query("SELECT ?n WHERE { BIND(STRLEN(?v) AS ?n) }", v=value))
    assert int(row["n"].value) == len(value)


@pytest.mark.parametrize(
    ("value", "type_", "expected"),
    [
        ("genomics", "string", ox.Literal("genomics")),
        ("42", "integer", ox.Literal("42", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer"))),
        (7, "integer", ox.Literal("7", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer"))),
        ("0.5", "decimal", ox.Literal("0.5", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#decimal"))),
        ("yes", "boolean", ox.Literal(True)),
        ("false", "boolean", ox.Literal(False)),
        (
            "2026-11-23",
            "date",
            ox.Literal("2026-11-23", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#date")),
        ),
        ("http://ex.org/b", "iri", ox.NamedNode("http://ex.org/b")),
    ],
)
def test_values_become_typed_terms(value: Any, type_: str, expected: object) -> None:
    assert to_term(value, type_) == expected


@pytest.mark.parametrize(
    ("value", "type_", "fragment"),
    [
        ("4x", "integer", "not a valid integer"),
        (True, "integer", "not a valid integer"),
        ("maybe", "boolean", "not a valid boolean"),
        ("not an iri", "iri", "not a valid iri"),
        ("23/11/2026", "date", "not a valid date"),
        ("x", "colour", "unknown type"),
    ],
)
def test_bad_values_are_refused(value: Any, type_: str, fragment: str) -> None:
    with pytest.raises(InvalidValueError, match=fragment):
        to_term(value, type_)


def test_unknown_query_lists_the_named_ones() -> None:
    with pytest.raises(QueryNotFoundError) as info:
        find_query("questions-by-colour")
    assert "questions-by-keyword" in str(info.value) and "search" in str(info.value)


@pytest.mark.parametrize(
    ("params", "fragment"),
    [({}, "needs the parameter 'keyword' (string)"), ({"keyword": "x", "colour": "red"}, "has no parameter 'colour'")],
)
def test_missing_or_unknown_parameters_list_what_exists(params: dict[str, str], fragment: str) -> None:
    with pytest.raises(InvalidValueError) as info:
        find_query("questions-by-keyword").bind(params)
    assert fragment in str(info.value) and "its parameters: keyword: string" in str(info.value)


@pytest.mark.parametrize(
    ("sparql", "marker"),
    [
        ("SELECT * WHERE { ?s ?p ?o }", "WHERE { VALUES"),
        ("select * where{?s ?p ?o}", "where{ VALUES"),
        ("SELECT * { ?s ?p ?o }", "SELECT * { VALUES"),
        ("ASK { ?s ?p ?o }", "ASK { VALUES"),
        ("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", "} WHERE { VALUES"),
        ("# a { comment\nSELECT * WHERE { ?s ?p '{' }", "WHERE { VALUES"),
        ("SELECT (?a < ?b AS ?c) WHERE { ?s ?p ?o }", "WHERE { VALUES"),
        ("PREFIX x: <http://x/> SELECT * WHERE { ?s x:p 'WHERE {' }", "* WHERE { VALUES"),
        ('SELECT * WHERE { ?s ?p """}""" }', "WHERE { VALUES"),
    ],
)
def test_values_open_the_where_group(sparql: str, marker: str) -> None:
    bound = bind_values(sparql, {"x": ox.Literal("v")})
    assert marker in bound
    ox.Store().query(bound)  # still a query pyoxigraph parses and runs


def test_bad_header_lines_name_file_and_line() -> None:
    with pytest.raises(InvalidValueError, match=r"own\.rq:3: bad '# param:' line"):
        parse_query("# title: t\n# description: d\n# param: keyword colour\nSELECT * {}", name="own", path="own.rq")
    with pytest.raises(InvalidValueError, match="default of 'n'"):
        parse_query("# param: n integer = ten\nSELECT * {}", name="own")


def test_header_defaults_and_continuations() -> None:
    q = parse_query(
        "# title: T\n# description: first\n#   second\n# param: n integer = 3 -- how many\n"
        "# param: who string optional\nSELECT ?n ?who WHERE { }",
        name="own",
    )
    assert isinstance(q, NamedQuery) and q.description == "first second"
    assert [(p.name, p.required, p.default, p.description) for p in q.params] == [
        ("n", False, "3", "how many"),
        ("who", False, None, ""),
    ]
    store = ox.Store()
    (row,) = list(store.query(q.bind({})))
    assert (row["n"], row["who"]) == (to_term(3, "integer"), None)


# -- CLI -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cli_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("cli") / "store")
    assert runner.invoke(app, ["import", str(EXAMPLES), "--store", path]).exit_code == 0
    return path


def _cli(cli_store: str, *args: str) -> Any:
    return runner.invoke(app, [*args, "--store", cli_store])


def test_cli_lists_the_named_queries(cli_store: str) -> None:
    result = runner.invoke(app, ["queries"])
    assert result.exit_code == 0
    for name in named_queries():
        assert name in result.stdout


@pytest.mark.parametrize(
    ("fmt", "check"),
    [
        ("json", lambda out: len(json.loads(out)["results"]["bindings"]) == 1),
        ("csv", lambda out: next(csv.reader(io.StringIO(out))) == ["benchmark", "question_id", "text"]),
        ("tsv", lambda out: out.splitlines()[0] == "?benchmark\t?question_id\t?text"),
        ("xml", lambda out: "<sparql" in out and "aspirin" in out),
        ("table", lambda out: "aspirin" in out),
    ],
)
def test_cli_named_query_formats(cli_store: str, fmt: str, check: Any) -> None:
    result = _cli(cli_store, "query", "questions-by-keyword", "--param", "keyword=nsaids", "--format", fmt)
    assert result.exit_code == 0, result.output
    assert check(result.stdout), result.stdout


@pytest.mark.parametrize(
    ("fmt", "rdf_format"),
    [
        ("turtle", ox.RdfFormat.TURTLE),
        ("ntriples", ox.RdfFormat.N_TRIPLES),
        ("jsonld", ox.RdfFormat.JSON_LD),
        ("rdfxml", ox.RdfFormat.RDF_XML),
    ],
)
def test_cli_construct_formats(cli_store: str, fmt: str, rdf_format: ox.RdfFormat) -> None:
    q = 'CONSTRUCT { ?q schema:text ?t } WHERE { ?q schema:keywords "nsaids" ; schema:text ?t }'
    result = _cli(cli_store, "query", q, "--format", fmt)
    assert result.exit_code == 0, result.output
    triples = list(ox.parse(result.stdout.encode(), format=rdf_format))
    assert [t.object for t in triples] == [ox.Literal("Which enzyme does aspirin irreversibly inhibit?")]


def test_cli_query_file_with_params(cli_store: str, tmp_path: Path) -> None:
    own = tmp_path / "own.rq"
    own.write_text(
        "# title: Own\n# description: d\n# param: word string -- a keyword\n"
        "SELECT ?text WHERE { ?q schema:keywords ?word ; schema:text ?text }",
        encoding="utf-8",
    )
    result = _cli(cli_store, "query", str(own), "--param", "word=nsaids", "--format", "csv")
    assert result.exit_code == 0 and "aspirin" in result.stdout


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["query", "questions-by-colour"], "no named query 'questions-by-colour'"),
        (["query", "questions-by-keyword"], "needs the parameter 'keyword'"),
        (["query", "questions-by-keyword", "--param", "keyword"], "write NAME=VALUE"),
        (["query", "SELECT * WHERE { ?s ?p ?o }", "--param", "a=b"], "--param needs a named query"),
        (["query", "questions-by-keyword", "-p", "keyword=x", "--format", "turtle"], "use one of table, json"),
        (["query", "CONSTRUCT WHERE { ?s ?p ?o }", "--format", "csv"], "use one of turtle"),
        (["query", "search", "--format", "yaml"], "unknown --format 'yaml'"),
    ],
)
def test_cli_usage_errors_exit_2(cli_store: str, args: list[str], fragment: str) -> None:
    result = _cli(cli_store, *args)
    assert result.exit_code == 2, result.output
    assert fragment in result.stderr and "Traceback" not in result.output
