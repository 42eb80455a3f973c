"""Every IRI the store mints dereferences on the endpoint: by content negotiation and by file
suffix, with Link alternates; benchmarks download as Karenina checkpoints."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pyoxigraph as ox
import pytest
from fastapi.testclient import TestClient

from karenina_rdf import Store, create_app, map_checkpoint
from karenina_rdf.linked._site import Site, normalise_path
from tests.conftest import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.jsonld"))
BASE = "http://127.0.0.1:8000/"
SCHEMA = "https://schema.org/"
# The node types of the examples (their custom properties and creators are literals, so no
# PropertyValue or Person node: test_all_subjects_dereference covers whatever there is).
KINDS = ["DataFeed", "DataFeedItem", "Question", "Answer", "SoftwareSourceCode", "Rating"]


@pytest.fixture(scope="module")
def store(examples: Store) -> Store:
    return examples


@pytest.fixture(scope="module")
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store)) as c:
        yield c


def _one_of_each(store: Store) -> dict[str, str]:
    found: dict[str, str] = {}
    for kind in KINDS:
        rows = store.query(f"SELECT ?s WHERE {{ ?s a schema:{kind} }} ORDER BY ?s LIMIT 1")
        found[kind] = next(iter(rows))["s"].value
    return found


def _path(iri: str) -> str:
    assert iri.startswith(BASE)
    return "/" + iri[len(BASE) :]


def _parsed(data: bytes, fmt: ox.RdfFormat, base: str | None = None) -> set[ox.Triple]:
    return {ox.Triple(q.subject, q.predicate, q.object) for q in ox.parse(data, format=fmt, base_iri=base)}


def _own_triples(store: Store, iri: str) -> set[ox.Triple]:
    return {
        q.triple
        for q in store.oxigraph.quads_for_pattern(ox.NamedNode(iri), None, None)
        if q.graph_name.value != "urn:karenina-rdf:catalog"
    }


FORMATS = [
    # (Accept, suffix, content type, parser format)
    ("text/turtle", ".ttl", "text/turtle; charset=utf-8", ox.RdfFormat.TURTLE),
    ("application/n-triples", ".nt", "application/n-triples", ox.RdfFormat.N_TRIPLES),
    ("application/ld+json", ".jsonld", "application/ld+json", ox.RdfFormat.JSON_LD),
    ("application/rdf+xml", ".rdf", "application/rdf+xml", ox.RdfFormat.RDF_XML),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("accept", "suffix", "ctype", "parse_as"), FORMATS)
def test_every_minted_iri_dereferences(
    store: Store, client: TestClient, kind: str, accept: str, suffix: str, ctype: str, parse_as: ox.RdfFormat
) -> None:
    iri = _one_of_each(store)[kind]
    expected = _own_triples(store, iri)
    assert expected
    for response in (client.get(_path(iri), headers={"Accept": accept}), client.get(_path(iri) + suffix)):
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == ctype
        got = _parsed(response.content, parse_as, iri)
        assert {t for t in got if t.subject.value == iri} >= expected
        links = response.headers["link"]
        for alt in (".html", ".ttl", ".nt", ".jsonld", ".rdf"):
            assert f'<{_path(iri)}{alt}>; rel="alternate"' in links
    assert client.get(_path(iri), headers={"Accept": accept}).headers["vary"] == "Accept"


@pytest.mark.parametrize("kind", KINDS)
def test_browsers_get_html(store: Store, client: TestClient, kind: str) -> None:
    iri = _one_of_each(store)[kind]
    accept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    for response in (client.get(_path(iri), headers={"Accept": accept}), client.get(_path(iri) + ".html")):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")


def test_all_subjects_dereference(store: Store, client: TestClient) -> None:
    subjects = {
        row["s"].value for row in store.query("SELECT DISTINCT ?s WHERE { ?b karenina:graph ?g GRAPH ?g { ?s ?p ?o } }")
    }
    people_and_works = {s for s in subjects if s.endswith("/author") or "/sources/" in s}
    assert len(people_and_works) == 7  # the examples' question authors and the works they cite
    # benchmarks, item+question+answer+template per question, traits, and those people and works
    assert len(subjects) == 3 + 4 * 13 + 17 + len(people_and_works)
    for iri in sorted(subjects):
        r = client.get(_path(iri) + ".nt")
        assert r.status_code == 200, iri
        assert {t for t in _parsed(r.content, ox.RdfFormat.N_TRIPLES) if t.subject.value == iri} >= (
            _own_triples(store, iri)
        ), iri


def test_benchmark_description_includes_its_catalog_entry(store: Store, client: TestClient) -> None:
    bench = store.benchmarks()[0]
    got = _parsed(client.get(_path(bench.iri) + ".nt").content, ox.RdfFormat.N_TRIPLES)
    predicates = {t.predicate.value for t in got}
    assert "urn:karenina:vocab:graph" in predicates and SCHEMA + "dataFeedElement" in predicates
    assert (
        f'<{_path(bench.iri)}/checkpoint.jsonld>; rel="alternate"'
        in client.get(_path(bench.iri) + ".ttl").headers["link"]
    )


def test_graph_iri_gives_the_whole_graph(store: Store, client: TestClient) -> None:
    bench = store.benchmarks()[0]
    r = client.get(_path(bench.graph), headers={"Accept": "application/n-triples"})
    assert r.status_code == 200
    stored = {q.triple for q in store.oxigraph.quads_for_pattern(None, None, None, ox.NamedNode(bench.graph))}
    assert _parsed(r.content, ox.RdfFormat.N_TRIPLES) == stored


def test_checkpoint_download_is_the_export_and_loads(store: Store, client: TestClient) -> None:
    for bench in store.benchmarks():
        r = client.get(_path(bench.iri) + "/checkpoint.jsonld")
        assert r.status_code == 200 and r.headers["content-type"] == "application/ld+json"
        assert "attachment" in r.headers["content-disposition"]
        doc = json.loads(r.content)
        assert doc == store.export_checkpoint(bench.iri)
        # Karenina's load rules accept it, and it maps back to the very triples stored.
        mapped = map_checkpoint(doc, source="download", base_iri=store.base_iri)
        assert len(mapped.question_ids) == bench.questions
        again = Store.memory()
        assert again.import_checkpoint(doc).questions == bench.questions


@pytest.mark.parametrize(
    "path",
    ["/benchmarks/nope", "/benchmarks/nope.ttl", "/nothing/here", "/benchmarks/", "/favicon.ico"],
)
def test_unknown_paths_are_404(client: TestClient, path: str) -> None:
    r = client.get(path)
    assert r.status_code == 404 and "nothing is published at" in r.text


def test_unknown_child_of_a_benchmark_is_404(store: Store, client: TestClient) -> None:
    bench = store.benchmarks()[0]
    assert client.get(_path(bench.iri) + "/questions/not-a-question").status_code == 404


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/benchmarks/urn%3Auuid%3Ax", "/benchmarks/urn:uuid:x"),
        ("/benchmarks/a%2fb", "/benchmarks/a%2Fb"),  # a slash inside an id stays encoded
        ("/benchmarks/a%20b%7e", "/benchmarks/a%20b~"),
        ("/benchmarks/%C3%BC", "/benchmarks/%C3%BC"),
    ],
)
def test_normalise_path(raw: str, expected: str) -> None:
    assert normalise_path(raw) == expected


def test_differently_encoded_request_finds_the_resource(store: Store, client: TestClient) -> None:
    iri = _one_of_each(store)["Question"]
    encoded = _path(iri).replace(":", "%3A")
    assert encoded != _path(iri)
    r = client.get(encoded + ".nt")
    assert r.status_code == 200
    assert {t.subject.value for t in ox.parse(r.content, format=ox.RdfFormat.N_TRIPLES)} == {iri}


def test_base_iri_with_a_path(tmp_path: Path) -> None:
    store = Store.memory(base_iri="https://bench.example.org/kb/")
    store.import_checkpoint(EXAMPLES[0])
    bench = store.benchmarks()[0]
    site = Site(store)
    assert site.iri_for_path("/elsewhere/x") is None
    local = site.path_for(bench.iri)
    assert local.startswith("/kb/benchmarks/")
    with TestClient(create_app(store)) as c:
        r = c.get(local + ".nt")
        assert r.status_code == 200
        assert {t.subject.value for t in ox.parse(r.content, format=ox.RdfFormat.N_TRIPLES)} == {bench.iri}


# -- verification runs, results and models (docs/data-model.md §9) -------------------------------------------
RUN_KINDS = {
    # kind → a SPARQL pattern binding ?s to one node of that kind in a run graph
    "run": "?s a karenina:VerificationRun",
    "result": "?s a karenina:VerificationResult ; karenina:failure ?f",
    "outcome": "?s a earl:TestResult",
    "failure": "?s a karenina:Failure",
    "usage": "?s a karenina:TokenUsage",
    "field": "?s a karenina:FieldOutcome",
    "rubric": "?s a karenina:RubricEvaluation",
    "score": "?s a karenina:TraitScore ; karenina:metricValue ?m",
    "metric": "?x karenina:metricValue ?s",
    "import": "?s a karenina:ResultsImport",
    "model": "?s a karenina:Model",
}
CATALOG = "urn:karenina-rdf:catalog"
MODELS = "urn:karenina-rdf:models"  # the models of every run, once (docs/data-model.md §9)


@pytest.fixture(scope="module")
def runs_store() -> Iterator[Store]:
    s = Store.memory()
    report = s.import_paths([EXAMPLES[0].parent])
    assert len(report.results) == 3 and not report.errors
    yield s
    s.close()


@pytest.fixture(scope="module")
def runs_client(runs_store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(runs_store)) as c:
        yield c


def _one(store: Store, kind: str) -> str:
    rows = store.query(f"SELECT ?s WHERE {{ {RUN_KINDS[kind]} }} ORDER BY ?s LIMIT 1")
    return str(next(iter(rows))["s"].value)


def _stored(store: Store, subject: str, graphs: set[str] | None = None) -> set[ox.Triple]:
    """The triples with this subject in the run graphs (or the given graphs)."""
    allowed = graphs if graphs is not None else {g.value for g in store.run_graphs()}
    return {
        q.triple
        for q in store.oxigraph.quads_for_pattern(ox.NamedNode(subject), None, None)
        if q.graph_name.value in allowed
    }


def _expected_description(store: Store, kind: str, iri: str) -> set[ox.Triple]:
    """What the description of a node of a run holds (docs/endpoint.md): itself and the nodes
    under its IRI (a result: its whole record; a run: its import records and catalog entry; a
    model: its triples in every run graph)."""
    runs = {g.value for g in store.run_graphs()}
    if kind == "model":
        return _stored(store, iri, {MODELS, *runs})
    subjects = {
        q.subject.value
        for q in store.oxigraph.quads_for_pattern(None, None, None)
        if q.graph_name.value in runs and (q.subject.value == iri or q.subject.value.startswith(iri + "/"))
    }
    if kind == "run":
        subjects = {s for s in subjects if s == iri or s.startswith((iri + "/imports/", iri + "/tallies/"))}
    out = set().union(*(_stored(store, s) for s in subjects))
    if kind == "run":
        out |= _stored(store, iri, {CATALOG})
    return out


@pytest.mark.parametrize("kind", list(RUN_KINDS))
@pytest.mark.parametrize(("accept", "suffix", "ctype", "parse_as"), FORMATS)
def test_run_resources_dereference(
    runs_store: Store,
    runs_client: TestClient,
    kind: str,
    accept: str,
    suffix: str,
    ctype: str,
    parse_as: ox.RdfFormat,
) -> None:
    iri = _one(runs_store, kind)
    expected = _expected_description(runs_store, kind, iri)
    assert expected
    for response in (runs_client.get(_path(iri), headers={"Accept": accept}), runs_client.get(_path(iri) + suffix)):
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == ctype
        assert _parsed(response.content, parse_as, iri) == expected, kind
        for alt in (".html", ".ttl", ".nt", ".jsonld", ".rdf"):
            assert f'<{_path(iri)}{alt}>; rel="alternate"' in response.headers["link"]
    assert runs_client.get(_path(iri), headers={"Accept": accept}).headers["vary"] == "Accept"
    html_page = runs_client.get(_path(iri), headers={"Accept": "text/html"})
    assert html_page.status_code == 200 and html_page.headers["content-type"].startswith("text/html")


@pytest.mark.slow  # a sweep: dereferences every subject of every run (over 500 requests)
def test_all_run_subjects_dereference(runs_store: Store, runs_client: TestClient) -> None:
    runs = {g.value for g in runs_store.run_graphs()}
    subjects = {
        q.subject.value for q in runs_store.oxigraph.quads_for_pattern(None, None, None) if q.graph_name.value in runs
    }
    assert len(subjects) > 500
    for iri in sorted(subjects):
        r = runs_client.get(_path(iri) + ".nt")
        assert r.status_code == 200, iri
        assert {t for t in _parsed(r.content, ox.RdfFormat.N_TRIPLES) if t.subject.value == iri} >= _stored(
            runs_store, iri
        ), iri


def test_run_description_leaves_out_its_results(runs_store: Store, runs_client: TestClient) -> None:
    for run in runs_store.runs():
        got = _parsed(runs_client.get(_path(run.iri) + ".nt").content, ox.RdfFormat.N_TRIPLES)
        assert not any("/results/" in t.subject.value for t in got)
        assert any(t.subject.value.startswith(run.iri + "/tallies/") for t in got), "its tallies"
        predicates = {t.predicate.value for t in got if t.subject.value == run.iri}
        assert {
            "urn:karenina:vocab:runGraph",
            "urn:karenina:vocab:import",
            "http://www.w3.org/ns/prov#used",
        } <= predicates
        assert (
            f'<{_path(run.iri)}/results.json>; rel="alternate"'
            in runs_client.get(_path(run.iri) + ".ttl").headers["link"]
        )


def test_model_description(runs_store: Store, runs_client: TestClient) -> None:
    gpt4o = BASE + "models/langchain/gpt-4o"
    got = _parsed(runs_client.get(_path(gpt4o) + ".nt").content, ox.RdfFormat.N_TRIPLES)
    assert got == _stored(runs_store, gpt4o, {MODELS})
    assert {t.predicate.value for t in got} >= {"http://www.w3.org/2000/01/rdf-schema#label", SCHEMA + "name"}
    assert {(t.predicate.value, t.object.value) for t in got} >= {
        ("http://www.w3.org/2000/01/rdf-schema#label", "langchain:gpt-4o"),
        ("urn:karenina:vocab:canonicalKey", "langchain:gpt-4o:"),
    }


def test_model_copied_into_a_run_graph(runs_store: Store) -> None:
    """A run imported before the models graph existed holds its models in its own graph: those
    describe them too."""
    store = Store.memory()
    store.import_paths([EXAMPLES[0].parent])
    graph = store.run_graphs()[0]
    gpt4o = BASE + "models/langchain/gpt-4o"
    store.update_graph(
        f"DELETE {{ GRAPH <{MODELS}> {{ <{gpt4o}> ?p ?o }} }} INSERT {{ GRAPH {graph} {{ <{gpt4o}> ?p ?o }} }} "
        f"WHERE {{ GRAPH <{MODELS}> {{ <{gpt4o}> ?p ?o }} }}"
    )
    with TestClient(create_app(store)) as c:
        got = _parsed(c.get(_path(gpt4o) + ".nt").content, ox.RdfFormat.N_TRIPLES)
        assert got == _stored(runs_store, gpt4o, {MODELS}) and got
        page = c.get(_path(gpt4o), headers={"Accept": "text/html"})
        assert page.status_code == 200 and "langchain:gpt-4o" in page.text
    store.close()


def test_run_graph_gives_the_whole_graph(runs_store: Store, runs_client: TestClient) -> None:
    for graph in runs_store.run_graphs():
        r = runs_client.get(_path(graph.value), headers={"Accept": "application/n-triples"})
        assert r.status_code == 200
        stored = {q.triple for q in runs_store.oxigraph.quads_for_pattern(None, None, None, graph)}
        assert _parsed(r.content, ox.RdfFormat.N_TRIPLES) == stored


@pytest.mark.parametrize(("suffix", "fmt", "ctype"), [("/results.json", "karenina-json", "application/json"),
                                                      ("/results.csv", "csv", "text/csv; charset=utf-8")])  # fmt: skip
def test_run_downloads(
    runs_store: Store, runs_client: TestClient, suffix: str, fmt: str, ctype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The CSV carries the time of its export in every row (as Karenina's does): the served export
    # and the one made here are the same second only by luck, so both are given one time.
    monkeypatch.setattr("karenina_rdf.results._export.export_stamp", lambda: "2026-11-26 00:00:00 UTC")
    for run in runs_store.runs():
        r = runs_client.get(_path(run.iri) + suffix)
        assert r.status_code == 200 and r.headers["content-type"] == ctype
        assert "attachment" in r.headers["content-disposition"]
        out = io.StringIO()
        runs_store.export_results(run.iri, out, format=fmt)
        assert r.content.decode("utf-8") == out.getvalue()
        if fmt == "csv":
            assert "2026-11-26 00:00:00 UTC" in out.getvalue()  # the stamp above is the one written
        if fmt == "karenina-json":
            # The examples are in Karenina's byte layout: the download is the file imported.
            assert r.content == Path(run.source or "").read_bytes()


@pytest.mark.parametrize(
    "path",
    ["/runs/nope", "/runs/nope.ttl", "/runs/pharmacology-2026-05/results/nope", "/runs/pharmacology-2026-05/x",
     "/models/nope", "/models/", "/runs/", "/runs/pharmacology-2026-05/results.txt"],
)  # fmt: skip
def test_unknown_run_paths_are_404(runs_client: TestClient, path: str) -> None:
    r = runs_client.get(path)
    assert r.status_code == 404 and "nothing is published at" in r.text


def test_runs_are_not_deleted_through_their_iri(runs_client: TestClient) -> None:
    r = runs_client.delete("/runs/pharmacology-2026-05")
    assert r.status_code == 405 and r.headers["allow"] == "GET"
