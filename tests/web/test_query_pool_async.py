"""The query workers watched from the event loop (issue 20, point 4): ``QueryPool.run_async``
answers what ``QueryPool.run`` answers, byte for byte, and holds the same limits; a query by
``GET /sparql`` on a store on disk is answered that way, without a thread.

Worker processes over a snapshot of the example benchmarks (slow: each worker is an interpreter).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from karenina_rdf import Store
from karenina_rdf.rdf import PREFIXES
from karenina_rdf.sparql import QueryPool
from karenina_rdf.sparql._pool import QueryFailed
from karenina_rdf.web import EndpointSettings, create_app
from karenina_rdf.web._app import Endpoint
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # worker processes

EXAMPLES = sorted((ROOT / "examples").glob("*.jsonld"))
QUESTIONS = "SELECT ?q ?t WHERE { ?q a schema:Question ; schema:text ?t } ORDER BY ?q LIMIT 7"
CONSTRUCT = "CONSTRUCT { ?q schema:text ?t } WHERE { ?q a schema:Question ; schema:text ?t } LIMIT 4"
# query, results format, graphs format: each answered alike by run and run_async
SAME = [
    (QUESTIONS, "json", "turtle"),
    (QUESTIONS, "xml", "turtle"),
    (QUESTIONS, "csv", "turtle"),
    (QUESTIONS, "tsv", "turtle"),
    ("ASK { ?q a schema:Question }", "json", "turtle"),
    (CONSTRUCT, "json", "turtle"),
    (CONSTRUCT, "json", "ntriples"),
    (CONSTRUCT, "json", "rdfxml"),
    (CONSTRUCT, "json", (406, "no format fits")),
    ("SELECT * WHERE { ?s ?p }", "json", "turtle"),  # a syntax error: 400 with the parser's message
    ("SELECT * WHERE { ?s ?p ?o }", "json", "turtle"),  # past max_bytes: 400
]
# query, limit in seconds, status, start of the message
LIMITS = [
    ("SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }", 2, 503, "the query ran longer than"),
    ("SELECT * WHERE " + "{" * 5000 + "}" * 5000, 20, 502, "the query failed: its worker process ended (signal"),
    ("SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i } ORDER BY ?c ?f ?i", 20, 503, "the query used more memory"),
]


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueryPool]:
    store = Store(tmp_path_factory.mktemp("pool") / "store")
    for path in EXAMPLES:
        store.import_checkpoint(path)
    pool = QueryPool(heavy_slots=2, reserve=1, memory_limit=256 << 20)
    pool.publish(store.snapshot(), store.dataset())
    pool.start(3)
    try:
        yield pool
    finally:
        pool.close()
        store.close()


def _idle(pool: QueryPool) -> None:
    """Waits until the pool has a worker idle on its current snapshot."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = pool.status()
        if status["idle"]:
            return
        time.sleep(0.05)
    raise AssertionError("no query worker came idle within 60 s")


def _request(query: str, results: Any, graphs: Any, seconds: float = 20) -> dict[str, Any]:
    return {
        "base": None,
        "prefixes": PREFIXES,
        "dataset": None,
        "results_format": results,
        "graphs_format": graphs,
        "max_bytes": 20_000,
        "deadline": time.monotonic() + seconds,
        "timeout": seconds,
    }


def _outcome(call: Any) -> tuple[int, str | bytes, str | None]:
    try:
        body, name = call()
    except QueryFailed as exc:
        return exc.status, exc.message, None
    return 200, body, name


@pytest.mark.parametrize(("query", "results", "graphs"), SAME)
def test_the_event_loop_path_answers_what_the_thread_path_answers(
    pool: QueryPool, query: str, results: Any, graphs: Any
) -> None:
    _idle(pool)
    by_thread = _outcome(lambda: pool.run(query, **_request(query, results, graphs)))

    def on_the_loop() -> tuple[bytes, str]:
        answer = asyncio.run(pool.run_async(query, **_request(query, results, graphs)))
        assert answer is not None, "an idle worker was there: run_async must take it"
        return answer

    _idle(pool)
    by_loop = _outcome(on_the_loop)
    assert by_loop == by_thread
    assert by_loop[0] in (200, 400, 406)


@pytest.mark.parametrize(("query", "seconds", "status", "message"), LIMITS, ids=["time", "crash", "memory"])
def test_the_event_loop_path_holds_the_limits(
    pool: QueryPool, query: str, seconds: float, status: int, message: str
) -> None:
    _idle(pool)
    started = time.monotonic()
    answer = _outcome(lambda: asyncio.run(_run_async(pool, query, seconds)))
    assert answer[0] == status, answer
    assert str(answer[1]).startswith(message), answer
    assert time.monotonic() - started <= seconds + 1.5
    # The worker was killed and reaped; the next query finds the pool working (the thread path
    # starts a worker when none is idle: the event loop's never waits for one).
    assert pool.run("ASK {}", **_request("ASK {}", "json", "turtle")) == (b'{"head":{},"boolean":true}', "json")
    _idle(pool)
    assert asyncio.run(_run_async(pool, "ASK {}", 20)) == (b'{"head":{},"boolean":true}', "json")


async def _run_async(pool: QueryPool, query: str, seconds: float) -> tuple[bytes, str]:
    answer = await pool.run_async(query, **_request(query, "json", "turtle", seconds))
    assert answer is not None
    return answer


def test_without_an_idle_worker_run_async_leaves_the_query_to_a_thread(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    pool = QueryPool(heavy_slots=1, reserve=1)
    try:
        pool.publish(store.snapshot(), store.dataset())  # no worker started yet
        assert asyncio.run(pool.run_async("ASK {}", **_request("ASK {}", "json", "turtle"))) is None
        assert pool.run("ASK {}", **_request("ASK {}", "json", "turtle")) == (b'{"head":{},"boolean":true}', "json")
    finally:
        pool.close()
        store.close()


def test_a_get_query_on_a_store_on_disk_needs_no_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path / "store")
    store.import_checkpoint(EXAMPLES[0])
    app = create_app(store, EndpointSettings())
    with TestClient(app) as client:
        ep: Endpoint = app.state.endpoint
        assert ep.pool is not None
        _idle(ep.pool)

        async def no_thread(job: Any) -> Any:
            raise AssertionError("the query went to a thread")

        monkeypatch.setattr(ep, "timed", no_thread)
        r = client.get("/sparql", params={"query": QUESTIONS}, headers={"Accept": "text/csv"})
        assert r.status_code == 200, r.text
        assert r.headers["content-type"] == "text/csv; charset=utf-8"
        assert r.headers["vary"] == "Accept" and r.headers["x-content-type-options"] == "nosniff"
        rows = client.get("/sparql", params={"query": QUESTIONS}).json()["results"]["bindings"]
        assert r.text.splitlines()[0] == "q,t" and len(r.text.splitlines()) == len(rows) + 1 > 1
        # POST goes by the FastAPI route, to the same answer.
        posted = client.post(
            "/sparql", content=QUESTIONS, headers={"Content-Type": "application/sparql-query", "Accept": "text/csv"}
        )
        assert posted.status_code == 200 and posted.content == r.content
        # The same checks as the route: a refused SERVICE, a malformed query, a format that fits not.
        assert (
            client.get("/sparql", params={"query": "SELECT * { SERVICE <http://x.example/> { ?s ?p ?o } }"}).status_code
            == 403
        )
        bad = client.get("/sparql", params={"query": "SELECT * WHERE { ?s ?p }"})
        assert bad.status_code == 400 and bad.text.startswith("SPARQL syntax error:")
        assert bad.headers["x-content-type-options"] == "nosniff"
        assert client.get("/sparql", params={"query": QUESTIONS, "format": "turtle"}).status_code == 406
        # HEAD: the headers of the GET, no body.
        head = client.head("/sparql", params={"query": QUESTIONS})
        assert head.status_code == 200 and head.content == b""
        assert int(head.headers["content-length"]) > 0
    store.close()
