"""Errors a user can cause: the public functions given bad input raise an error of the tree
(``KareninaRDFError``) whose message says what is wrong, never a bare ``ValueError``,
``TypeError``, ``KeyError`` or a library's own exception; the CLI prints it as one line."""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

import karenina_rdf
from karenina_rdf import (
    Benchmark,
    BenchmarkNotFoundError,
    CheckpointError,
    EndpointSettings,
    InvalidTypeError,
    InvalidValueError,
    KareninaRDFError,
    NotFoundError,
    QueryNotFoundError,
    QuestionNotFoundError,
    RubricTrait,
    Store,
    StoreError,
    VerificationError,
)
from karenina_rdf import runner as rn
from karenina_rdf.cli import app
from karenina_rdf.store._remote import RemoteStore
from tests.conftest import EXAMPLES, ROOT


@dataclass
class World:
    store: Store
    bench: Benchmark
    qid: str
    tmp: Path


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    store = Store.memory()
    bench = Benchmark.create("B", store=store)
    qid = bench.add_question("What is the capital of France?", "Paris")
    (tmp_path / "truncated.json").write_text('{"@type": "DataFeed", ', encoding="utf-8")
    (tmp_path / "array.json").write_text("[]", encoding="utf-8")
    # JSON allows an integer of any length; Python (and so Karenina) reads at most 4,300 digits.
    checkpoint = (EXAMPLES / "pharmacology.jsonld").read_text(encoding="utf-8")
    at = checkpoint.index('"version"')
    huge = checkpoint[:at] + '"big": ' + "9" * 100_000 + ", " + checkpoint[at:]
    (tmp_path / "huge.jsonld").write_text(huge, encoding="utf-8")
    results = (EXAMPLES / "results" / "pharmacology-2026-05.json").read_text(encoding="utf-8")
    at = results.index('"question_id"', results.index('"results"'))
    huge = results[:at] + '"big": -' + "9" * 5_000 + ", " + results[at:]
    (tmp_path / "huge-results.json").write_text(huge, encoding="utf-8")
    yield World(store, bench, qid, tmp_path)
    store.close()


# (id, call, error class, what the message must say). Each call is a public entry point with
# input a user can get wrong.
CASES: list[tuple[str, Callable[[World], Any], type[KareninaRDFError], str]] = [
    # checkpoints
    (
        "read missing file",
        lambda w: karenina_rdf.read_checkpoint(w.tmp / "nope.jsonld"),
        CheckpointError,
        r"nope\.jsonld: cannot read file",
    ),
    (
        "read truncated JSON",
        lambda w: karenina_rdf.read_checkpoint(w.tmp / "truncated.json"),
        CheckpointError,
        r"truncated\.json:1: file ends before the JSON does",
    ),
    (
        "map a JSON array",
        lambda w: karenina_rdf.map_checkpoint([], base_iri="http://x/"),
        CheckpointError,
        r"must be a JSON object, got an array",
    ),
    (
        "import a number",
        lambda w: w.store.import_checkpoint(42),  # type: ignore[arg-type]
        InvalidTypeError,
        r"a checkpoint file is named by a str or a Path, got int",
    ),
    (
        "import a JSON array",
        lambda w: w.store.import_checkpoint(w.tmp / "array.json"),
        CheckpointError,
        r"array\.json at /: the checkpoint root",
    ),
    # the store
    ("a base IRI that is no IRI", lambda w: Store(None, base_iri="no iri"), StoreError, r"not an absolute IRI"),
    (
        "unknown benchmark",
        lambda w: Benchmark(w.store, "nope"),
        BenchmarkNotFoundError,
        r"no benchmark with id, IRI or name 'nope' \(stored: 'B'\)",
    ),
    ("unknown run", lambda w: w.store.resolve_run("nope"), NotFoundError, r"no verification run 'nope'"),
    (
        "unknown named query",
        lambda w: w.store.query("no-such-query"),
        QueryNotFoundError,
        r"no named query 'no-such-query'; the named queries: ",
    ),
    (
        "unknown query parameter",
        lambda w: w.store.query("benchmark-summary", colour="red"),
        InvalidValueError,
        r"query 'benchmark-summary' has no parameter 'colour'",
    ),
    (
        "validate an unknown benchmark",
        lambda w: karenina_rdf.validate_store(w.store, "nope"),
        NotFoundError,
        r"no benchmark .* 'nope'",
    ),
    # authoring
    ("unknown question", lambda w: w.bench.get_question("nope"), QuestionNotFoundError, r"Question not found: nope"),
    (
        "a question that is a number",
        lambda w: w.bench.add_question(42),  # type: ignore[arg-type]
        InvalidTypeError,
        r"question must be a string, dict, or Question object, got <class 'int'>",
    ),
    (
        "a template that is a number",
        lambda w: w.bench.add_answer_template(w.qid, 42),  # type: ignore[arg-type]
        InvalidTypeError,
        r"template must be a string or BaseAnswer subclass, got int",
    ),
    (
        "a template class without BaseAnswer",
        lambda w: w.bench.add_answer_template(w.qid, Store),
        InvalidTypeError,
        r"Template class must inherit from BaseAnswer, got Store",
    ),
    (
        "a template that does not parse",
        lambda w: w.bench.add_answer_template(w.qid, "class ("),
        InvalidValueError,
        r"Invalid template: The answer template is not valid Python: invalid syntax \(line 1\)",
    ),
    (
        "a custom property JSON cannot hold",
        lambda w: w.bench.set_custom_property("x", object()),
        InvalidTypeError,
        r"not a JSON value: Object of type object is not JSON serializable",
    ),
    (
        "a trait whose name is a number",
        lambda w: w.bench.add_global_rubric_trait({"name": 1}),
        InvalidValueError,
        r"trait 1: name: Input should be a valid string",
    ),
    (
        "a trait without a name",
        lambda w: RubricTrait.llm(""),
        InvalidValueError,
        r"trait '': name: String should have at least 1 character",
    ),
    (
        "a callable trait from text",
        lambda w: RubricTrait.callable("c", "def f(x): ..."),  # type: ignore[arg-type]
        InvalidTypeError,
        r"trait 'c': code must be the callable's cloudpickle bytes, not str",
    ),
    (
        "a Rating without additionalType",
        lambda w: RubricTrait.from_rating({"name": "r"}),
        InvalidValueError,
        r"a Rating is a JSON object with an 'additionalType' string",
    ),
    (
        "an unknown match mode",
        lambda w: w.bench.filter_by_metadata("author", "x", "fuzzy"),
        InvalidValueError,
        r"Invalid match_mode: fuzzy",
    ),
    # the endpoint
    (
        "a blank write token",
        lambda w: EndpointSettings(write_token="  "),
        InvalidValueError,
        r"endpoint settings: write_token: a write token must not be empty",
    ),
    (
        "a timeout that is no number",
        lambda w: EndpointSettings(timeout="soon"),  # type: ignore[arg-type]
        InvalidValueError,
        r"endpoint settings: timeout: Input should be a valid number",
    ),
    # verification
    (
        "a sandbox without workers",
        lambda w: rn.Sandbox(workers=0),
        InvalidValueError,
        r"a sandbox needs at least one worker, not 0",
    ),
    (
        "a run without a judge",
        lambda w: rn.verify(w.store, "B", answerers=["openai:m"]),
        VerificationError,
        r"a run needs a judge",
    ),
    (
        "a model spec without a provider",
        lambda w: rn.verify(w.store, "B", judges=["gpt-4o"], answerers=["x:y"]),
        VerificationError,
        r"model spec 'gpt-4o' is not PROVIDER:MODEL",
    ),
    (
        "an answers file that is not there",
        lambda w: rn.verify(w.store, "B", judges=["openai:m"], answers=w.tmp / "nope.jsonl", base_url="http://h/v1"),
        VerificationError,
        r"cannot read answers .*nope\.jsonl",
    ),
    # the store
    (
        "a query that does not parse",
        lambda w: w.store.query("SELECT WHERE {"),
        InvalidValueError,
        r"SPARQL syntax error",
    ),
    (
        "an update that does not parse",
        lambda w: w.store.update_graph("INSERT {"),
        InvalidValueError,
        r"SPARQL syntax error",
    ),
    (
        "an unknown results format",
        lambda w: w.store.export_results("any", w.tmp / "out.xml", format="xml"),
        InvalidValueError,  # the format is checked before the run is looked up
        r"unknown results format 'xml': karenina-json, csv or karenina-db",
    ),
    (
        "an unknown validation engine",
        lambda w: karenina_rdf.validate(EXAMPLES / "pharmacology.jsonld", engine="zzz"),  # type: ignore[arg-type]
        InvalidValueError,
        r"engine 'zzz': auto, fast or pyshacl",
    ),
    (
        "run options of the wrong type",
        lambda w: rn.verify(
            w.store, "B", judges=["openai:j"], answerers=["openai:a"], base_url="http://127.0.0.1:9/v1", concurrency="x"
        ),  # type: ignore[arg-type]
        VerificationError,
        r"concurrency",
    ),
    # numbers Python cannot convert
    (
        "a checkpoint holding a 100,000-digit integer",
        lambda w: w.store.import_checkpoint(w.tmp / "huge.jsonld"),
        CheckpointError,
        r"huge\.jsonld at /big: an integer of 100,000 digits: more than Python reads",
    ),
    (
        "a results export holding a 5,000-digit integer",
        lambda w: w.store.import_results(w.tmp / "huge-results.json"),
        CheckpointError,
        r"huge-results\.json:\d+ at /results/0/metadata/big: an integer of 5,000 digits",
    ),
]


@pytest.mark.parametrize(("call", "kind", "message"), [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_bad_input_raises_an_error_of_the_tree(
    world: World, call: Callable[[World], Any], kind: type[KareninaRDFError], message: str
) -> None:
    with pytest.raises(KareninaRDFError) as caught:
        call(world)
    assert type(caught.value) is kind, f"{type(caught.value).__name__}: {caught.value}"
    assert caught.match(message)


def test_errors_are_also_the_builtin_kinds_karenina_raises(world: World) -> None:
    # Code written against Karenina catches TypeError and ValueError there: it still does here.
    with pytest.raises(TypeError):
        world.bench.add_question(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        world.bench.add_answer_template(world.qid, "class (")
    with pytest.raises(ValueError):
        EndpointSettings(write_token="")


def test_a_server_reply_that_is_not_results_is_a_store_error() -> None:
    # An HTML page sent with status 200 (a proxy's login page): the server's fault, said as such.
    remote = RemoteStore("http://sparql.invalid/sparql")
    page = httpx.Response(200, content=b"<html>sign in</html>", headers={"Content-Type": "text/html"})
    remote._http = httpx.Client(transport=httpx.MockTransport(lambda request: page))
    for query, expected in (
        ("SELECT * WHERE { ?s ?p ?o }", "SPARQL results JSON"),
        ("CONSTRUCT WHERE { ?s ?p ?o }", "N-Triples"),
    ):
        with pytest.raises(
            StoreError, match=f"http://sparql.invalid/sparql answered a query with something that is not {expected}"
        ):
            remote.query(query)
    remote.close()


# -- pyshacl, an optional extra ------------------------------------------------------------------
NO_PYSHACL = "pyshacl is not installed: pip install 'karenina-rdf[pyshacl]'"


@pytest.fixture
def without_pyshacl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyshacl", None)  # `import pyshacl` raises ImportError


def test_pyshacl_is_an_extra_and_the_tests_have_it() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert extras["pyshacl"] == ["pyshacl>=0.26"]
    assert "pyshacl>=0.26" in extras["test"]


@pytest.mark.usefixtures("without_pyshacl")
def test_the_pyshacl_engine_without_pyshacl_says_how_to_get_it(examples: Store) -> None:
    with pytest.raises(InvalidValueError, match=r"^pyshacl is not installed: pip install 'karenina-rdf\[pyshacl\]'"):
        karenina_rdf.validate(EXAMPLES / "pharmacology.jsonld", engine="pyshacl")
    with pytest.raises(InvalidValueError, match=r"^pyshacl is not installed"):
        karenina_rdf.validate_store(examples, "Pharmacology examples", engine="pyshacl")
    # The default engine needs no extra.
    assert karenina_rdf.validate(EXAMPLES / "pharmacology.jsonld").conforms


@pytest.mark.usefixtures("without_pyshacl")
def test_validate_engine_pyshacl_without_pyshacl_is_one_line_in_the_cli() -> None:
    result = CliRunner().invoke(app, ["validate", "--engine", "pyshacl", str(EXAMPLES / "pharmacology.jsonld")])
    assert result.exit_code == 2, result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
    assert result.stderr.strip().splitlines() == [
        f"error: {NO_PYSHACL} (or validate with the default engine, which needs no extra)"
    ]
    assert "Traceback" not in result.output


def test_serve_with_a_blank_write_token_is_one_line_in_the_cli() -> None:
    result = CliRunner().invoke(app, ["serve", "--store", ":memory:", "--write-token", "  "])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [
        "error: endpoint settings: write_token: a write token must not be empty (None makes the endpoint read-only)"
    ]
