"""The endpoint in process (Starlette's TestClient over the real app and a real store): SPARQL
protocol formats and dataset, service description, VoID, named queries, writes with the token,
and the limits. tests/web/test_endpoint_server.py runs it as its own process over HTTP."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from fastapi.testclient import TestClient

from karenina_rdf import EndpointSettings, Store, create_app
from karenina_rdf.rdf._vocab import CATALOG_GRAPH
from tests.conftest import ROOT, server_url

EXAMPLES = sorted((ROOT / "examples").glob("*.jsonld"))
TOKEN = "s3cret-token"
SD = "http://www.w3.org/ns/sparql-service-description#"
VOID = "http://rdfs.org/ns/void#"
COUNT_QUESTIONS = "SELECT (COUNT(?q) AS ?n) WHERE { ?q a schema:Question }"


@pytest.fixture(scope="module")
def client(examples: Store) -> Iterator[TestClient]:
    with TestClient(create_app(examples)) as c:
        yield c


def _writable(**settings: Any) -> TestClient:
    store = Store.memory()
    for path in EXAMPLES:
        store.import_checkpoint(path)
    return TestClient(create_app(store, EndpointSettings(write_token=TOKEN, **settings)))


def _count(response: Any) -> int:
    assert response.status_code == 200, response.text
    rows = ox.parse_query_results(response.content, format=ox.QueryResultsFormat.JSON)
    return int(next(iter(rows))["n"].value)


# -- results formats ---------------------------------------------------------------------------
SELECT = "SELECT ?q ?text WHERE { ?q a schema:Question ; schema:text ?text } ORDER BY ?q LIMIT 3"
RESULT_CASES = [
    # (Accept, format parameter, expected content type, pyoxigraph format or None for CSV)
    ("application/sparql-results+json", None, "application/sparql-results+json", ox.QueryResultsFormat.JSON),
    ("application/sparql-results+xml", None, "application/sparql-results+xml", ox.QueryResultsFormat.XML),
    ("text/tab-separated-values", None, "text/tab-separated-values; charset=utf-8", ox.QueryResultsFormat.TSV),
    ("text/csv", None, "text/csv; charset=utf-8", None),
    (None, None, "application/sparql-results+json", ox.QueryResultsFormat.JSON),
    ("image/png", "xml", "application/sparql-results+xml", ox.QueryResultsFormat.XML),
]


@pytest.mark.parametrize(("accept", "fmt", "ctype", "parse_as"), RESULT_CASES)
def test_select_formats(
    client: TestClient, accept: str | None, fmt: str | None, ctype: str, parse_as: ox.QueryResultsFormat | None
) -> None:
    params = {"query": SELECT, **({"format": fmt} if fmt else {})}
    r = client.get("/sparql", params=params, headers={"Accept": accept} if accept else {})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == ctype
    if parse_as is None:
        rows = list(csv.reader(io.StringIO(r.text)))
        assert rows[0] == ["q", "text"] and len(rows) == 4
    else:
        rows = list(ox.parse_query_results(r.content, format=parse_as))
        assert len(rows) == 3 and all(row["q"].value.startswith("http://127.0.0.1:8000/benchmarks/") for row in rows)


GRAPH_CASES = [
    ("text/turtle", "text/turtle; charset=utf-8", ox.RdfFormat.TURTLE),
    ("application/n-triples", "application/n-triples", ox.RdfFormat.N_TRIPLES),
    ("application/ld+json", "application/ld+json", ox.RdfFormat.JSON_LD),
    ("application/rdf+xml", "application/rdf+xml", ox.RdfFormat.RDF_XML),
    (None, "text/turtle; charset=utf-8", ox.RdfFormat.TURTLE),
]


@pytest.mark.parametrize(("accept", "ctype", "parse_as"), GRAPH_CASES)
@pytest.mark.parametrize(
    "form", ["CONSTRUCT WHERE { ?q a schema:Question }", "DESCRIBE ?q WHERE { ?q a schema:Question }"]
)
def test_graph_formats(client: TestClient, accept: str | None, ctype: str, parse_as: ox.RdfFormat, form: str) -> None:
    r = client.post(
        "/sparql",
        content=form.encode(),
        headers={"Content-Type": "application/sparql-query", **({"Accept": accept} if accept else {})},
    )
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == ctype
    triples = list(ox.parse(r.content, format=parse_as, base_iri="http://x/"))
    questions = {t.subject for t in triples if t.object == ox.NamedNode("https://schema.org/Question")}
    assert len(questions) == 13


def test_ask_and_methods_agree(client: TestClient) -> None:
    query = "ASK { ?q a schema:Question }"
    answers = [
        client.get("/sparql", params={"query": query}),
        client.post("/sparql", data={"query": query}),
        client.post("/sparql", content=query.encode(), headers={"Content-Type": "application/sparql-query"}),
    ]
    for r in answers:
        assert r.status_code == 200 and json.loads(r.text) == {"head": {}, "boolean": True}


def test_dataset_from_the_request(client: TestClient, examples: Store) -> None:
    summaries = examples.benchmarks()
    everything = _count(client.get("/sparql", params={"query": COUNT_QUESTIONS}))
    assert everything == sum(s.questions for s in summaries) == 13
    for s in summaries:
        only = client.get("/sparql", params={"query": COUNT_QUESTIONS, "default-graph-uri": s.graph})
        assert _count(only) == s.questions
    # named-graph-uri: GRAPH ?g sees exactly the graphs named.
    first, second = summaries[0].graph, summaries[1].graph
    r = client.get(
        "/sparql",
        params={"query": "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }", "named-graph-uri": [first, second]},
    )
    seen = {row["g"].value for row in ox.parse_query_results(r.content, format=ox.QueryResultsFormat.JSON)}
    assert seen == {first, second}


def test_old_generations_are_never_seen(tmp_path: Path) -> None:
    store = Store.memory()
    doc = json.loads(EXAMPLES[0].read_text())
    store.import_checkpoint(doc)
    doc["name"] = doc["name"] + " (renamed)"
    store.import_checkpoint(doc)  # a second generation replaces the first
    # A leftover graph of an interrupted import is hidden from the default graph and GRAPH ?g.
    bench = store.benchmarks()[0]
    leftover = ox.NamedNode(bench.iri + "/graph/0123456789abcdef")
    store.oxigraph.add(
        ox.Quad(ox.NamedNode(bench.iri), ox.NamedNode("https://schema.org/name"), ox.Literal("x"), leftover)
    )
    with TestClient(create_app(store)) as c:
        names = c.get("/sparql", params={"query": f"SELECT ?n WHERE {{ <{bench.iri}> schema:name ?n }}"})
        values = [row["n"].value for row in ox.parse_query_results(names.content, format=ox.QueryResultsFormat.JSON)]
        assert values == [doc["name"]]
        graphs = c.get("/sparql", params={"query": "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }"})
        seen = {row["g"].value for row in ox.parse_query_results(graphs.content, format=ox.QueryResultsFormat.JSON)}
        assert seen == {bench.graph, CATALOG_GRAPH.value}


ERROR_CASES = [
    # (method, kwargs, status, part of the body)
    ("GET", {"params": {"query": "SELEC * WHERE {}"}}, 400, "SPARQL syntax error: error at 1:"),
    ("GET", {"params": {"query": "ASK {}"}, "headers": {"Accept": "image/png"}}, 406, "none of the accepted types"),
    ("GET", {"params": {"query": "CONSTRUCT WHERE { ?s ?p ?o }", "format": "csv"}}, 406, "does not fit"),
    ("POST", {"content": b"ASK {}", "headers": {"Content-Type": "text/plain"}}, 415, "cannot read a body"),
    ("GET", {"params": {"update": "CLEAR ALL"}}, 400, "POST, not GET"),
    ("PUT", {"content": b"ASK {}"}, 405, "Method Not Allowed"),
    ("POST", {"data": {"update": "CLEAR ALL"}}, 403, "read-only"),
    ("GET", {"params": {"query": "SELECT * { SERVICE <http://198.51.100.7/sparql> { ?s ?p ?o } }"}}, 403, "SERVICE"),
]


@pytest.mark.parametrize(("method", "kwargs", "status", "message"), ERROR_CASES)
def test_errors(client: TestClient, method: str, kwargs: dict[str, Any], status: int, message: str) -> None:
    r = client.request(method, "/sparql", **kwargs)
    assert r.status_code == status
    assert message in r.text
    assert r.headers["content-type"].startswith("text/plain")
    assert "Traceback" not in r.text


# -- service description and VoID -------------------------------------------------------------
@pytest.mark.parametrize(
    ("accept", "parse_as"),
    [
        ("text/turtle", ox.RdfFormat.TURTLE),
        ("application/rdf+xml", ox.RdfFormat.RDF_XML),
        ("application/ld+json", ox.RdfFormat.JSON_LD),
        (None, ox.RdfFormat.TURTLE),
    ],
)
def test_service_description(client: TestClient, accept: str | None, parse_as: ox.RdfFormat) -> None:
    # The three tests of ../shared/conformance/sparql11/service-description: GET on the endpoint
    # returns RDF; it has an sd:endpoint triple naming the endpoint; it follows the vocabulary.
    r = client.get("/sparql", headers={"Accept": accept} if accept else {})
    assert r.status_code == 200
    g = ox.Store()
    g.load(r.content, format=parse_as, base_iri="http://testserver/sparql")
    endpoint = "http://testserver/sparql"
    assert g.query(f"ASK {{ ?s a <{SD}Service> ; <{SD}endpoint> <{endpoint}> }}")
    languages = {row["l"].value for row in g.query(f"SELECT ?l {{ ?s <{SD}supportedLanguage> ?l }}")}
    assert languages == {SD + "SPARQL11Query"}  # read-only: no update language
    formats = {row["f"].value for row in g.query(f"SELECT ?f {{ ?s <{SD}resultFormat> ?f }}")}
    assert "http://www.w3.org/ns/formats/SPARQL_Results_JSON" in formats and len(formats) == 8
    graphs = list(
        g.query(
            f"SELECT ?name ?n {{ ?s <{SD}defaultDataset>/<{SD}namedGraph> "
            f"[ <{SD}name> ?name ; <{SD}graph>/<{VOID}triples> ?n ] }}"
        )
    )
    assert len(graphs) == 3


def test_service_description_says_update_when_writable() -> None:
    with _writable() as c:
        g = ox.Store()
        g.load(c.get("/sparql", headers={"Accept": "text/turtle"}).content, format=ox.RdfFormat.TURTLE)
        assert g.query(f"ASK {{ ?s <{SD}supportedLanguage> <{SD}SPARQL11Update> }}")


def test_void_counts_and_dumps(client: TestClient, examples: Store) -> None:
    r = client.get("/.well-known/void", headers={"Accept": "text/turtle"})
    assert r.status_code == 200
    g = ox.Store()
    g.load(r.content, format=ox.RdfFormat.TURTLE)
    subsets = {
        row["b"].value: (int(row["n"].value), row["dump"].value)
        for row in g.query(
            f"SELECT ?b ?n ?dump {{ ?d <{VOID}subset> ?b . ?b <{VOID}triples> ?n ; <{VOID}dataDump> ?dump "
            "FILTER(STRENDS(STR(?dump), '.nt')) }"
        )
    }
    assert set(subsets) == {s.iri for s in examples.benchmarks()}
    for s in examples.benchmarks():
        triples, dump = subsets[s.iri]
        stored = sum(1 for _ in examples.oxigraph.quads_for_pattern(None, None, None, ox.NamedNode(s.graph)))
        assert triples == stored
        body = client.get(dump.removeprefix("http://testserver"))
        assert body.status_code == 200
        assert len(list(ox.parse(body.content, format=ox.RdfFormat.N_TRIPLES))) == stored
    total = next(iter(g.query(f"SELECT ?n {{ ?d <{VOID}subset> ?b ; <{VOID}triples> ?n }}")))["n"]
    assert int(total.value) == sum(v[0] for v in subsets.values())
    partitions = g.query(
        f"SELECT ?n {{ ?b <{VOID}classPartition> [ <{VOID}class> <https://schema.org/Question> ; "
        f"<{VOID}entities> ?n ] }}"
    )
    assert sorted(int(row["n"].value) for row in partitions) == sorted(s.questions for s in examples.benchmarks())


# -- named queries ----------------------------------------------------------------------------
def test_named_query(client: TestClient, examples: Store) -> None:
    r = client.get("/queries/questions-by-keyword", params={"keyword": "genomics"})
    assert r.status_code == 200
    rows = list(ox.parse_query_results(r.content, format=ox.QueryResultsFormat.JSON))
    direct = list(examples.query("questions-by-keyword", keyword="genomics"))
    assert rows and [row["question"] for row in rows] == [row["question"] for row in direct]
    tsv = client.get("/queries/questions-per-benchmark", headers={"Accept": "text/tab-separated-values"})
    assert tsv.status_code == 200 and tsv.headers["content-type"].startswith("text/tab-separated-values")
    listing = client.get("/queries", headers={"Accept": "application/json"}).json()
    assert {q["name"] for q in listing} >= {"questions-by-keyword", "search", "benchmark-summary"}


@pytest.mark.parametrize(
    ("path", "params", "status", "message"),
    [
        ("/queries/no-such-query", {}, 404, "no-such-query"),
        ("/queries/questions-by-keyword", {}, 400, "keyword"),
        ("/queries/questions-by-keyword", {"keyword": "x", "format": "turtle"}, 406, "does not fit"),
    ],
)
def test_named_query_errors(client: TestClient, path: str, params: dict[str, str], status: int, message: str) -> None:
    r = client.get(path, params=params)
    assert r.status_code == status and message in r.text


# -- writes ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        ({"Authorization": "Bearer wrong"}, 401),
        ({"Authorization": f"Basic {TOKEN}"}, 401),
        ({"Authorization": f"Bearer {TOKEN}"}, 204),
    ],
)
def test_update_needs_the_token(headers: dict[str, str], status: int) -> None:
    with _writable() as c:
        r = c.post("/sparql", data={"update": "INSERT DATA { <http://a> <http://b> 'c' }"}, headers=headers)
        assert r.status_code == status, r.text
        after = c.get("/sparql", params={"query": "ASK { <http://a> <http://b> 'c' }"}).json()["boolean"]
        assert after is (status == 204)


def test_update_with_using_and_base() -> None:
    with _writable() as c:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        update = "INSERT { GRAPH <http://out> { ?q a <Seen> } } WHERE { ?q a schema:Question }"
        bench = c.get("/sparql", params={"query": "SELECT ?g { ?b karenina:graph ?g } LIMIT 1"}).json()
        graph = bench["results"]["bindings"][0]["g"]["value"]
        r = c.post(
            "/sparql",
            params={"using-graph-uri": graph},
            content=update.encode(),
            headers={**auth, "Content-Type": "application/sparql-update"},
        )
        assert r.status_code == 204, r.text
        n = _count(
            c.get(
                "/sparql",
                params={"query": "SELECT (COUNT(*) AS ?n) { GRAPH <http://out> { ?q a <http://testserver/Seen> } }"},
            )
        )
        assert (
            0 < n < 13
        )  # only the questions of that one graph, typed with the endpoint-relative IRI; schema: predeclared


def test_import_and_delete_over_http(tmp_path: Path) -> None:
    store = Store.memory()
    with TestClient(create_app(store, EndpointSettings(write_token=TOKEN))) as c:
        auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/ld+json"}
        body = EXAMPLES[0].read_bytes()
        assert c.post("/benchmarks", content=body, headers={"Content-Type": "application/ld+json"}).status_code == 401
        r = c.post("/benchmarks", content=body, headers={**auth, "X-File-Name": EXAMPLES[0].name})
        assert r.status_code == 201, r.text
        made = r.json()
        assert made["status"] == "imported" and r.headers["location"].startswith("/benchmarks/")
        assert c.post("/benchmarks", content=body, headers=auth).json()["status"] == "unchanged"
        # A checkpoint Karenina would refuse: 400 naming the JSON pointer; nothing changes.
        bad = json.loads(body)
        bad["dataFeedElement"][0]["item"]["text"] = 5
        r = c.post("/benchmarks", content=json.dumps(bad).encode(), headers=auth)
        assert r.status_code == 400 and "/dataFeedElement/0/item/text" in r.text
        assert [s.iri for s in store.benchmarks()] == [made["iri"]]
        path = made["iri"].removeprefix("http://127.0.0.1:8000")
        assert c.get(path).status_code == 200
        # Not a checkpoint: a JSON string would otherwise name a file on the server's disk.
        for body in (json.dumps(str(EXAMPLES[1])), "[]", "42", "null"):
            r = c.post("/benchmarks", content=body.encode(), headers=auth)
            assert r.status_code == 400 and "a checkpoint is a JSON object" in r.text
        assert [s.iri for s in store.benchmarks()] == [made["iri"]]
        assert c.delete(path + "/items/x", headers=auth).status_code == 404
        assert c.delete(path).status_code == 401
        assert c.delete(path, headers=auth).status_code == 200
        assert store.benchmarks() == []
        assert c.get(path).status_code == 404


# -- limits ------------------------------------------------------------------------------------
def test_result_size_limit() -> None:
    with _writable(max_result_bytes=5_000) as c:
        r = c.get("/sparql", params={"query": "SELECT * WHERE { ?s ?p ?o }"})
        assert r.status_code == 400 and "larger than the endpoint's limit of 5,000 bytes" in r.text
        assert c.get("/sparql", params={"query": "SELECT * WHERE { ?s ?p ?o } LIMIT 3"}).status_code == 200


def test_body_size_limit() -> None:
    with _writable(max_body_bytes=1_000) as c:
        big = "ASK { " + "?s ?p ?o . " * 200 + "}"
        limit = "the request body is larger than this endpoint's limit of 1,000 bytes (serve --max-body-bytes)\n"
        r = c.post("/sparql", content=big.encode(), headers={"Content-Type": "application/sparql-query"})
        assert (r.status_code, r.text) == (413, limit)  # a declared length, refused before it is read
        r = c.post(
            "/sparql",
            content=(chunk for chunk in [big.encode()[:600], big.encode()[600:]]),
            headers={"Content-Type": "application/sparql-query"},
        )
        assert (r.status_code, r.text) == (413, limit)  # streamed without a length
        assert r.headers["x-content-type-options"] == "nosniff"
        assert (
            c.post("/sparql", content=b"ASK {}", headers={"Content-Type": "application/sparql-query"}).status_code
            == 200
        )


@pytest.mark.slow  # runs a query until the 0.5 s time limit stops it
def test_time_limit_stops_a_streaming_query() -> None:
    with _writable(timeout=0.5, max_result_bytes=10**12) as c:
        r = c.get("/sparql", params={"query": "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"})
        assert r.status_code == 503 and "time limit of 0.5 s" in r.text


@pytest.mark.slow  # starts an Oxigraph server to federate with
@pytest.mark.parametrize(
    ("allowed", "status"), [((), 403), (("http://127.0.0.1:1/",), 403), (("SERVER",), 200), (("*",), 200)]
)
def test_service_allow_list(allowed: tuple[str, ...], status: int, sparql_servers: dict[str, Any]) -> None:
    url = server_url(sparql_servers, "oxigraph")  # a real SPARQL server to federate with
    allowed = tuple(url + "/" if a == "SERVER" else a for a in allowed)
    query = f"SELECT * WHERE {{ SERVICE <{url}/query> {{ BIND(42 AS ?x) }} }}"
    with _writable(allow_service=allowed) as c:
        r = c.get("/sparql", params={"query": query})
        assert r.status_code == status, r.text
        if status == 200:
            rows = list(ox.parse_query_results(r.content, format=ox.QueryResultsFormat.JSON))
            assert [row["x"].value for row in rows] == ["42"]
        load = c.post(
            "/sparql", data={"update": f"LOAD <{url}/store?default>"}, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        if status == 403:
            assert load.status_code == 403 and "LOAD" in load.text
        else:  # allowed: the server answers the GET (an empty default graph loads fine)
            assert load.status_code == 204, load.text


def test_no_stack_trace_on_an_internal_error(examples: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app(examples)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internals /home/x/.env")

    monkeypatch.setattr(app.state.endpoint.site, "void", broken)
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/.well-known/void")
    assert r.status_code == 500
    assert r.text == "internal error (the server log has the details)\n"


@pytest.mark.parametrize(
    ("origins", "allowed"), [((), None), (("http://app.example",), "http://app.example"), (("*",), "*")]
)
def test_cors(examples: Store, origins: tuple[str, ...], allowed: str | None) -> None:
    with TestClient(create_app(examples, EndpointSettings(cors_origins=origins))) as c:
        r = c.get("/sparql", params={"query": "ASK {}"}, headers={"Origin": "http://app.example"})
        assert r.headers.get("access-control-allow-origin") == allowed
        pre = c.options(
            "/sparql",
            headers={
                "Origin": "http://app.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type",
            },
        )
        assert (pre.status_code == 200) == (allowed is not None)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * WHERE { ?s ?p ?o.SERVICE <http://198.51.100.7/sparql> { ?a ?b ?x } }",
        "SELECT * WHERE { SERVICE <http://198.51.100.7/\\u0073parql> { ?s ?p ?x } }",
        "PREFIX ex: <http://e/> SELECT * WHERE { BIND(ex:a\\# AS ?z) SERVICE <http://198.51.100.7/> { ?s ?p ?x } }",
    ],
)
def test_hidden_service_is_refused(client: TestClient, query: str) -> None:
    r = client.get("/sparql", params={"query": query})
    assert r.status_code == 403 and "SERVICE" in r.text


def test_query_with_its_own_from(client: TestClient, examples: Store) -> None:
    # The query's FROM is its dataset (SPARQL 1.1 Protocol §2.1.4), not the union of everything.
    graph = examples.benchmarks()[0].graph
    own = _count(
        client.get("/sparql", params={"query": f"SELECT (COUNT(*) AS ?n) FROM <{graph}> WHERE {{ ?s ?p ?o }}"})
    )
    stored = sum(1 for _ in examples.oxigraph.quads_for_pattern(None, None, None, ox.NamedNode(graph)))
    assert own == stored
    everything = _count(client.get("/sparql", params={"query": "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"}))
    assert everything > own


@pytest.mark.parametrize("path", ["/", "/sparql", "/.well-known/void", "/queries", "/query"])
def test_head(client: TestClient, path: str) -> None:
    r = client.head(path)
    assert r.status_code == 200 and r.content == b""


def test_negotiation_respects_q_zero(client: TestClient) -> None:
    r = client.get(
        "/sparql", params={"query": "ASK {}"}, headers={"Accept": "application/sparql-results+json;q=0, */*;q=0.1"}
    )
    assert r.status_code == 200 and r.headers["content-type"] == "application/sparql-results+xml"


def test_empty_write_token_is_refused() -> None:
    from karenina_rdf import InvalidValueError

    for blank in ("", "  "):
        with pytest.raises(InvalidValueError, match="write_token: a write token must not be empty"):
            EndpointSettings(write_token=blank)


def test_ids_made_of_dots_dereference() -> None:
    store = Store.memory()
    doc = json.loads(EXAMPLES[0].read_text())
    for k, qid in enumerate((".", "..")):
        doc["dataFeedElement"][k]["@id"] = qid
        doc["dataFeedElement"][k]["item"]["@id"] = qid
    bench = store.import_checkpoint(doc).iri
    with TestClient(create_app(store)) as c:
        for qid in (".", ".."):
            iri = f"{bench}/questions/{qid.replace('.', '%2E')}"
            assert store.oxigraph.query(f"ASK {{ GRAPH ?g {{ <{iri}> a <https://schema.org/Question> }} }}")
            r = c.get(iri.removeprefix("http://127.0.0.1:8000") + ".nt")
            assert r.status_code == 200
            assert {t.subject.value for t in ox.parse(r.content, format=ox.RdfFormat.N_TRIPLES)} == {iri}
