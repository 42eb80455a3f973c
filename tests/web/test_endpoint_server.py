"""``karenina-rdf serve`` as its own process on 127.0.0.1, spoken to over real HTTP: by
SPARQLWrapper (a SPARQL client people use), by concurrent clients while a slow query runs, and
past the time limit. Also the endpoint over a SPARQL server store (Oxigraph server, Virtuoso)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyoxigraph as ox
import pytest
from fastapi.testclient import TestClient

from karenina_rdf import Store, create_app
from tests.conftest import ROOT
from tests.helpers.servers import Server, start_endpoint

# slow: starts `karenina-rdf serve` (uvicorn) and SPARQL servers as processes
pytestmark = pytest.mark.slow

EXAMPLES = sorted((ROOT / "examples").glob("*.jsonld"))
# About 650 triples squared times K rows to count: seconds of work that cannot stream.
SLOW = "SELECT (COUNT(*) AS ?n) WHERE {{ ?a ?b ?c . ?d ?e ?f VALUES ?k {{ {} }} }}"


def _slow(k: int) -> str:
    return SLOW.format(" ".join(str(i) for i in range(k)))


def _served(folder: Path, *options: str) -> Server:
    store = Store(folder / "store")
    for path in EXAMPLES:
        store.import_checkpoint(path)
    store.close()  # one process holds a RocksDB store: the server's
    return start_endpoint(folder, *options, store=folder / "store")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = _served(tmp_path_factory.mktemp("endpoint"), "--timeout", "60")
    yield s
    s.stop()


def test_sparqlwrapper_client(server: Server) -> None:
    from SPARQLWrapper import JSON, TURTLE, SPARQLWrapper

    sparql = SPARQLWrapper(f"{server.url}/sparql")
    sparql.setQuery("PREFIX schema: <https://schema.org/> SELECT ?q WHERE { ?q a schema:Question }")
    sparql.setReturnFormat(JSON)
    rows = sparql.queryAndConvert()["results"]["bindings"]  # type: ignore[index]
    assert len(rows) == 13
    sparql.setMethod("POST")
    sparql.setQuery("ASK { ?s ?p ?o }")
    assert sparql.queryAndConvert()["boolean"] is True  # type: ignore[index]
    sparql.setMethod("GET")
    sparql.setQuery("PREFIX schema: <https://schema.org/> CONSTRUCT WHERE { ?q a schema:Question }")
    sparql.setReturnFormat(TURTLE)
    turtle = sparql.queryAndConvert()
    assert isinstance(turtle, bytes)
    assert len(list(ox.parse(turtle, format=ox.RdfFormat.TURTLE))) == 13


def test_answers_others_while_a_slow_query_runs(server: Server) -> None:
    outcome: dict[str, Any] = {}

    def slow() -> None:
        outcome["slow"] = httpx.get(f"{server.url}/sparql", params={"query": _slow(60)}, timeout=120)

    runner = threading.Thread(target=slow)
    runner.start()
    try:
        runner.join(0.5)  # let it reach the engine
        assert runner.is_alive()
        quick = [httpx.get(f"{server.url}/sparql", params={"query": "ASK { ?s ?p ?o }"}, timeout=60) for _ in range(5)]
        page = httpx.get(f"{server.url}/.well-known/void", timeout=60)
        still_running = runner.is_alive()
    finally:
        runner.join(120)
    assert [r.status_code for r in quick] == [200] * 5 and page.status_code == 200
    assert still_running, "the quick requests should have been answered before the slow query finished"
    assert outcome["slow"].status_code == 200


def test_time_limit_over_http(tmp_path: Path) -> None:
    server = _served(tmp_path, "--timeout", "1", "--max-running", "2")
    try:
        blocking = httpx.get(f"{server.url}/sparql", params={"query": _slow(200)}, timeout=60)
        assert blocking.status_code == 503
        assert blocking.text == "the query ran longer than the endpoint's time limit of 1 s\n"
        streaming = httpx.get(
            f"{server.url}/sparql", params={"query": "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"}, timeout=60
        )
        assert streaming.status_code in (503, 400)  # the time limit or the 50 MB result limit, whichever first
        # The endpoint goes on answering (the blocking evaluation finishes on its own thread).
        assert httpx.get(f"{server.url}/sparql", params={"query": "ASK {}"}, timeout=60).status_code == 200
    finally:
        server.stop()


def test_read_only_by_default_over_http(server: Server) -> None:
    r = httpx.post(f"{server.url}/sparql", data={"update": "CLEAR ALL"}, timeout=30)
    assert r.status_code == 403
    assert httpx.get(f"{server.url}/sparql", params={"query": "ASK { ?s ?p ?o }"}, timeout=30).json()["boolean"]


@pytest.mark.parametrize("name", ["oxigraph", "virtuoso"])
def test_endpoint_over_a_server_store(name: str, sparql_servers: dict[str, Any]) -> None:
    from tests.conftest import _empty, server_url

    store = Store(server_url(sparql_servers, name))
    try:
        store.import_checkpoint(EXAMPLES[0])
        bench = store.benchmarks()[0]
        with TestClient(create_app(store)) as c:
            r = c.get("/sparql", params={"query": "SELECT (COUNT(?q) AS ?n) WHERE { ?q a schema:Question }"})
            assert r.status_code == 200, r.text
            rows = list(ox.parse_query_results(r.content, format=ox.QueryResultsFormat.JSON))
            assert int(rows[0]["n"].value) == bench.questions
            page = c.get(bench.iri.removeprefix("http://127.0.0.1:8000") + ".ttl")
            assert page.status_code == 200
            triples = list(ox.parse(page.content, format=ox.RdfFormat.TURTLE))
            assert {t.subject.value for t in triples} == {bench.iri} and len(triples) > 5
            # Other applications' graphs on the same server stay out of reach, named or not.
            store.remote.update("INSERT DATA { GRAPH <urn:other:private> { <urn:s> <urn:p> 'private' } }")  # type: ignore[union-attr]
            try:
                ask = "ASK { ?s ?p 'private' }"
                assert c.get("/sparql", params={"query": ask}).json()["boolean"] is False
                for params in ({"default-graph-uri": "urn:other:private"}, {"named-graph-uri": "urn:other:private"}):
                    r = c.get("/sparql", params={"query": ask, **params})
                    assert r.status_code == 403 and "not a graph of this store" in r.text
                r = c.get("/sparql", params={"query": "SELECT * FROM <urn:other:private> WHERE { ?s ?p ?o }"})
                assert r.status_code == 403
            finally:
                store.remote.drop_graph(ox.NamedNode("urn:other:private"))  # type: ignore[union-attr]
            # The pages read through the same calls: the index, the benchmark, a question.
            index = c.get("/")
            assert index.status_code == 200 and bench.name in index.text
            html = c.get(bench.iri.removeprefix("http://127.0.0.1:8000"), headers={"Accept": "text/html"})
            assert html.status_code == 200 and bench.name in html.text
            question = store.query("SELECT ?q ?t WHERE { ?q a schema:Question ; schema:text ?t } LIMIT 1")
            row = next(iter(question))
            shown = c.get(row["q"].value.removeprefix("http://127.0.0.1:8000") + ".html")
            assert shown.status_code == 200 and row["t"].value.split()[0] in shown.text
    finally:
        _empty(store)
        store.close()
