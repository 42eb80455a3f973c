"""Every IRI the store mints dereferences on the endpoint: by content negotiation and by file
suffix, with Link alternates; benchmarks download as Karenina checkpoints."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyoxigraph as ox
import pytest
from fastapi.testclient import TestClient

from karenina_rdf import Store, map_checkpoint
from karenina_rdf._endpoint import create_app
from karenina_rdf._linked import Site, normalise_path

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.jsonld"))
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
    assert len(subjects) == 3 + 4 * 13 + 17  # benchmarks, item+question+answer+template per question, traits
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
