"""Federation is impossible by construction (issue 17, point 1): no query or update sent to the
endpoint opens a network connection, however SERVICE or LOAD is written. A listener on
127.0.0.1 records any contact. Each variant is sent as it is (the text scan refuses what it
recognises) and again with the scan blinded, so that only the kernel's filter on the evaluating
thread stands between the query and the network; a control shows that an allowed SERVICE does
reach the listener, so a missing contact means something."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from fastapi.testclient import TestClient

from karenina_rdf import EndpointSettings, Store, create_app
from karenina_rdf.sparql import _isolation
from tests.conftest import EXAMPLES

pytestmark = [
    pytest.mark.skipif(_isolation.unavailable() is not None, reason=str(_isolation.unavailable())),
    pytest.mark.slow,  # a listener thread per test, 94 endpoint round trips
]


@dataclass
class Listener:
    """A TCP listener on 127.0.0.1 that answers nothing and counts who connected."""

    sock: socket.socket
    contacts: list[bytes] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/"

    def serve(self) -> None:
        self.sock.settimeout(0.05)  # accept() is not woken by close(): poll the stop flag
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(1)
                try:
                    self.contacts.append(conn.recv(200))
                except OSError:
                    self.contacts.append(b"")


@pytest.fixture
def listener() -> Iterator[Listener]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    found = Listener(sock)
    thread = threading.Thread(target=found.serve, daemon=True)
    thread.start()
    yield found
    found.stop.set()
    thread.join(5)
    sock.close()


# {u}: the listener's URL. Each row: the text, then the status it gets as sent (the scan's 403) and
# with the scan blinded (the filtered thread's connection fails: 502, or what SILENT makes of
# it). ADD and COPY name a graph, which is never fetched: they pass the scan. Queries first,
# then updates (sent with the token).
QUERIES = {
    "plain SERVICE": ("SELECT * WHERE { SERVICE <{u}sparql> { ?s ?p ?o } }", 403, 502),
    "SERVICE SILENT": ("SELECT * WHERE { SERVICE SILENT <{u}sparql> { ?s ?p ?o } }", 403, 200),
    "lower case": ("select * where { service <{u}sparql> { ?s ?p ?o } }", 403, 502),
    "mixed case": ("SeLeCt * WhErE { sErViCe <{u}sparql> { ?s ?p ?o } }", 403, 502),
    "comment between tokens": ("SELECT * WHERE { SERVICE # no\n <{u}sparql> { ?s ?p ?o } }", 403, 502),
    "newlines between tokens": ("SELECT * WHERE {\nSERVICE\n\n<{u}sparql>\n{ ?s ?p ?o } }", 403, 502),
    "prefixed name after SERVICE:": ("PREFIX : <{u}> SELECT * WHERE { SERVICE:sparql { ?s ?p ?o } }", 403, 502),
    "SERVICEe:x": ("PREFIX e: <{u}> SELECT * WHERE { SERVICEe:x { ?s ?p ?o } }", 403, 502),
    "\\u escapes in the IRI": ("SELECT * WHERE { SERVICE <{u}\\u0073parql> { ?s ?p ?o } }", 403, 502),
    "relative IRI under BASE": ("BASE <{u}> SELECT * WHERE { SERVICE <sparql> { ?s ?p ?o } }", 403, 502),
    "in a subquery": ("SELECT * WHERE { { SELECT * WHERE { SERVICE <{u}sparql> { ?s ?p ?o } } } }", 403, 502),
    "in FILTER EXISTS": (
        "SELECT * WHERE { ?a ?b ?c FILTER EXISTS { SERVICE <{u}sparql> { ?s ?p ?o } } } LIMIT 1",
        403,
        200,
    ),
    "in OPTIONAL": ("SELECT * WHERE { ?a ?b ?c OPTIONAL { SERVICE <{u}sparql> { ?s ?p ?o } } } LIMIT 1", 403, 502),
    "in a UNION": ("SELECT * WHERE { { ?a ?b ?c } UNION { SERVICE <{u}sparql> { ?s ?p ?o } } }", 403, 502),
    "SERVICE ?var bound by VALUES": ("SELECT * WHERE { VALUES ?e { <{u}sparql> } SERVICE ?e { ?s ?p ?o } }", 403, 502),
    "ASK": ("ASK { SERVICE <{u}sparql> { ?s ?p ?o } }", 403, 502),
    "CONSTRUCT": ("CONSTRUCT { ?s ?p ?o } WHERE { SERVICE <{u}sparql> { ?s ?p ?o } }", 403, 502),
}
UPDATES = {
    "LOAD": ("LOAD <{u}data.ttl>", 403, 502),
    "LOAD SILENT INTO GRAPH": ("LOAD SILENT <{u}data.ttl> INTO GRAPH <urn:x>", 403, 204),
    "LOAD:x after PREFIX :": ("PREFIX : <{u}> LOAD:x", 403, 502),
    "INSERT from a SERVICE": (
        "INSERT { GRAPH <urn:x> { ?s ?p ?o } } WHERE { SERVICE <{u}sparql> { ?s ?p ?o } }",
        403,
        502,
    ),
    "ADD from a remote graph name": ("ADD <{u}g> TO <urn:x>", 204, 204),
    "COPY from a remote graph name": ("COPY SILENT <{u}g> TO <urn:x>", 204, 204),
}


@pytest.fixture(scope="module", params=["memory", "disk"])
def endpoint(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """An endpoint on a store in memory (queries on filtered threads) or on disk (queries in
    worker processes under the same filter); updates run in the server, on filtered threads."""
    where = tmp_path_factory.mktemp("federation") / "store"
    store = Store.memory() if request.param == "memory" else Store(where)
    store.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
    with TestClient(create_app(store, EndpointSettings(write_token="t")), raise_server_exceptions=False) as c:
        assert (c.app.state.endpoint.runner.pool is not None) == (request.param == "disk")  # type: ignore[attr-defined]
        yield c
    store.close()


def _blind_the_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the kernel's filter is left: the text scan finds nothing anywhere.
    from karenina_rdf.sparql import _protocol

    monkeypatch.setattr(_protocol, "service_targets", lambda text, prefixes: iter(()))
    monkeypatch.setattr(_protocol, "load_targets", lambda text, prefixes: iter(()))


def _send(client: TestClient, kind: str, method: str, text: str) -> int:
    if kind == "query":
        if method == "GET":
            return client.get("/sparql", params={"query": text}).status_code
        return client.post("/sparql", content=text, headers={"Content-Type": "application/sparql-query"}).status_code
    headers = {"Authorization": "Bearer t"}
    if method == "GET":  # updates have no GET in the protocol: a form POST instead
        return client.post("/sparql", data={"update": text}, headers=headers).status_code
    headers["Content-Type"] = "application/sparql-update"
    return client.post("/sparql", content=text, headers=headers).status_code


CASES = [pytest.param("query", name, *row, id=f"query: {name}") for name, row in QUERIES.items()] + [
    pytest.param("update", name, *row, id=f"update: {name}") for name, row in UPDATES.items()
]


@pytest.mark.parametrize("mode", ["as sent", "scan blinded"])
@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize(("kind", "name", "template", "as_sent", "blinded"), CASES)
def test_nothing_reaches_the_network(
    endpoint: TestClient,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    listener: Listener,
    kind: str,
    name: str,
    template: str,
    as_sent: int,
    blinded: int,
    method: str,
) -> None:
    if mode == "scan blinded":
        _blind_the_scan(monkeypatch)
    text = template.replace("{u}", listener.url)
    status = _send(endpoint, kind, method, text)
    assert listener.contacts == [], f"{name}: the endpoint contacted {listener.url} (answered {status})"
    assert status == (as_sent if mode == "as sent" else blinded)


def test_an_allowed_service_still_reaches_its_server(listener: Listener) -> None:
    # The control: with --allow-service for the listener, the same SERVICE does go out (on a
    # thread kept for federation), so the empty contact lists above are the filter's doing.
    store = Store.memory()
    app = create_app(store, EndpointSettings(allow_service=(listener.url,), timeout=5))
    with TestClient(app, raise_server_exceptions=False) as c:
        c.get("/sparql", params={"query": f"SELECT * WHERE {{ SERVICE <{listener.url}sparql> {{ ?s ?p ?o }} }}"})
    store.close()
    assert len(listener.contacts) == 1 and listener.contacts[0].startswith((b"POST", b"GET"))


def test_the_filter_refuses_ip_sockets_to_its_own_thread_only() -> None:
    # The filter itself, seen from the thread: IPv4 and IPv6 refused, a Unix socket allowed.
    seen: list[object] = []

    def probe() -> None:
        seen.append(_isolation.block_network_here())
        for family in (socket.AF_INET, socket.AF_INET6, socket.AF_UNIX):
            try:
                socket.socket(family).close()
                seen.append((family.name, "made"))
            except OSError as exc:
                seen.append((family.name, exc.errno))

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    assert seen == [True, ("AF_INET", 13), ("AF_INET6", 13), ("AF_UNIX", "made")]
    socket.socket().close()  # the test's own thread keeps its network


@pytest.mark.parametrize(
    "hidden",
    ["SERVICEe:x", "SERVICE:x"],
)
def test_an_allowed_service_does_not_carry_a_hidden_one(listener: Listener, hidden: str) -> None:
    # With --allow-service, an operation naming an allowed target runs where the network is
    # reachable; a second SERVICE glued to a prefixed name must not ride along to another host.
    other = Listener(socket.socket())
    other.sock.bind(("127.0.0.1", 0))
    other.sock.listen(4)
    thread = threading.Thread(target=other.serve, daemon=True)
    thread.start()
    prefix = "e:" if hidden.startswith("SERVICEe") else ":"
    query = (
        f"PREFIX {prefix} <{other.url}> SELECT * WHERE {{ SERVICE SILENT <{listener.url}s> {{ ?a ?b ?c }} "
        f"{hidden} {{ ?s ?p ?o }} }}"
    )
    store = Store.memory()
    with TestClient(create_app(store, EndpointSettings(allow_service=(listener.url,), timeout=5))) as c:
        status = c.get("/sparql", params={"query": query}).status_code
    store.close()
    other.stop.set()
    thread.join(5)
    other.sock.close()
    assert other.contacts == [] and status == 403
