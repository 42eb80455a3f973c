"""The W3C SPARQL 1.1 Protocol tests replayed against our endpoint and, as the baseline,
against ``oxigraph serve``, in the same run.

Our endpoint (``karenina-rdf serve`` with a write token, its own process) takes query and update
requests at ``/sparql``; the replayer adds ``Authorization: Bearer <token>`` to every request
(the protocol says nothing of access control, and our endpoint refuses writes without it). It
must pass every test Oxigraph passes; it passes all 34 (``bad_update_get`` included: a GET
carrying an update is a 400 here).

The manifest is ../shared/conformance/sparql11/protocol/manifest.ttl (34 ``mf:ProtocolTest``
entries, 39 requests); :mod:`tests.w3c_protocol` parses and replays it. Oxigraph runs in memory
on a free port; query requests go to ``/query``, update requests to ``/update``; before each test
the dataset is emptied and the test's ``ut:graphData`` loaded through ``/update`` (``DROP ALL``
then ``INSERT DATA``). This module measures oxigraph, it does not require it to pass: the
assertion is that the set of passing tests is exactly ``OXIGRAPH_PASSING``, so a change in either
oxigraph or the replayer is noticed. A later test compares our own endpoint with this baseline.

Observed with oxigraph 0.5.13: 33 of 34 pass — all 20 query tests, 13 of 14 update tests.

Failing (``OXIGRAPH_FAILING``):

* ``bad_update_get`` — ``GET /update?update=CLEAR%20ALL`` answers 200 with the service
  description (application/n-quads) instead of a 4xx; the update is not run.

Notes from the run: ``bad_query_method`` (PUT) gets 404 "PUT /query is not supported", a 4xx as
the manifest wants; the wrong-media-type tests get 415, the other bad_* tests 400; updates 204.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.conftest import SHARED
from tests.helpers.servers import Server, _wait, free_port, oxigraph_binary, start_endpoint
from tests.helpers.w3c_protocol import Outcome, load_manifest, replay, reset_and_load_via_update

MANIFEST = SHARED / "conformance" / "sparql11" / "protocol" / "manifest.ttl"

needs_manifest = pytest.mark.skipif(
    not MANIFEST.is_file(),
    reason=f"the W3C SPARQL 1.1 Protocol manifest is not at {MANIFEST} (a fresh clone has no ../shared)",
)
needs_oxigraph = pytest.mark.skipif(
    oxigraph_binary() is None, reason="`oxigraph` (pip package oxigraph) is not installed; .ci/run installs it"
)

QUERY_TESTS = {
    "query_post_form",
    "query_dataset_default_graphs_get",
    "query_dataset_default_graphs_post",
    "query_dataset_named_graphs_post",
    "query_dataset_named_graphs_get",
    "query_dataset_full",
    "query_multiple_dataset",
    "query_get",
    "query_content_type_select",
    "query_content_type_ask",
    "query_content_type_describe",
    "query_content_type_construct",
    "query_post_direct",
    "bad_query_method",
    "bad_multiple_queries",
    "bad_query_wrong_media_type",
    "bad_query_missing_form_type",
    "bad_query_missing_direct_type",
    "bad_query_non_utf8",
    "bad_query_syntax",
}
UPDATE_TESTS = {
    "update_dataset_default_graph",
    "update_dataset_default_graphs",
    "update_dataset_named_graphs",
    "update_dataset_full",
    "update_post_form",
    "update_post_direct",
    "update_base_uri",
    "bad_update_get",
    "bad_multiple_updates",
    "bad_update_wrong_media_type",
    "bad_update_missing_form_type",
    "bad_update_non_utf8",
    "bad_update_syntax",
    "bad_update_dataset_conflict",
}

# Test name -> how Outcome.reason starts for oxigraph 0.5.13 (the module docstring says more).
OXIGRAPH_FAILING = {
    "bad_update_get": "request 1: expected 4xx, got 200: ",
}
OXIGRAPH_PASSING = (QUERY_TESTS | UPDATE_TESTS) - set(OXIGRAPH_FAILING)


@dataclass
class Endpoint:
    query_url: str
    update_url: str


@pytest.fixture(scope="module")
def oxigraph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    """``oxigraph serve`` in memory (no --location) on 127.0.0.1 and a free port."""
    binary = oxigraph_binary()
    assert binary is not None
    folder = tmp_path_factory.mktemp("oxigraph-protocol")
    port = free_port()
    log = folder / "oxigraph.log"
    with log.open("wb") as out:
        process = subprocess.Popen([binary, "serve", "--bind", f"127.0.0.1:{port}"], stdout=out, stderr=out)
    base = f"http://127.0.0.1:{port}"
    server = Server("oxigraph", base, process, log)
    try:
        _wait(f"{base}/query", process, log)
        yield Endpoint(f"{base}/query", f"{base}/update")
    finally:
        server.stop()


@needs_manifest
def test_manifest_parses() -> None:
    tests = load_manifest(MANIFEST)
    assert len(tests) == 34
    assert len({t.name for t in tests}) == 34
    assert {t.name for t in tests if t.kind == "query"} == QUERY_TESTS
    assert {t.name for t in tests if t.kind == "update"} == UPDATE_TESTS
    assert sum(len(t.requests) for t in tests) == 39
    by_name = {t.name: t for t in tests}
    assert [t.name for t in tests][:2] == ["query_post_form", "query_dataset_default_graphs_get"]
    # Every path starts with /sparql/ and every request expects a status class.
    assert all(r.path_and_query.startswith("/sparql/") and r.expected_statuses for t in tests for r in t.requests)
    # The two UTF-16 bodies are non-UTF-8 bytes: a byte-order mark, then UTF-16BE.
    assert by_name["bad_query_non_utf8"].requests[0].body == b"\xfe\xff" + "ASK {}".encode("utf-16-be")
    assert by_name["bad_update_non_utf8"].requests[0].body == b"\xfe\xff" + "CLEAR NAMED".encode("utf-16-be")
    # Update tests with a follow-up ASK: the first request is an update, the second a query.
    for name in ("update_dataset_default_graph", "update_dataset_full", "update_base_uri"):
        assert [r.operation for r in by_name[name].requests] == ["update", "query"]
        assert by_name[name].requests[1].expected_boolean is True
    assert by_name["bad_update_get"].requests[0].operation == "update"
    assert by_name["bad_update_missing_form_type"].requests[0].operation == "update"
    assert by_name["bad_update_wrong_media_type"].requests[0].operation == "update"
    assert by_name["bad_query_missing_form_type"].requests[0].operation == "query"
    full = by_name["query_dataset_full"]
    assert [(g.rsplit("/", 1)[1], p.name) for g, p in full.graph_data] == [
        ("data1.rdf", "data1.nt"),
        ("data2.rdf", "data2.nt"),
        ("data3.rdf", "data3.nt"),
    ]
    assert all(p.is_file() for t in tests for _, p in t.graph_data)
    assert not any(t.default_data for t in tests)


@pytest.mark.slow  # replays the W3C protocol suite against running servers
@needs_manifest
@needs_oxigraph
def test_oxigraph_baseline(oxigraph: Endpoint, record_property: Callable[[str, object], None]) -> None:
    tests = load_manifest(MANIFEST)
    outcomes: dict[str, Outcome] = {}
    with httpx.Client(timeout=60) as client:
        load = reset_and_load_via_update(oxigraph.update_url, client)
        for test in tests:
            outcomes[test.name] = replay(
                test, query_url=oxigraph.query_url, update_url=oxigraph.update_url, load=load, client=client
            )
    for name, outcome in outcomes.items():  # in the JUnit XML (--junitxml) and, with -s, on stdout
        line = f"{'PASS' if outcome.passed else 'FAIL'} {outcome.statuses} {outcome.reason}"
        record_property(name, line)
        print(f"{name}: {line}")
    passing = {name for name, o in outcomes.items() if o.passed}
    failures = {name: o.reason for name, o in outcomes.items() if not o.passed}
    assert passing == OXIGRAPH_PASSING, f"oxigraph's baseline changed; failures now: {failures}"
    for name, start in OXIGRAPH_FAILING.items():
        assert failures[name].startswith(start), (name, failures[name])
    assert len({n for n in passing if n in QUERY_TESTS}) == 20
    assert len({n for n in passing if n in UPDATE_TESTS}) == 13


TOKEN = "protocol-test-token"


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    server = start_endpoint(tmp_path_factory.mktemp("endpoint-protocol"), "--write-token", TOKEN)
    try:
        yield Endpoint(f"{server.url}/sparql", f"{server.url}/sparql")
    finally:
        server.stop()


def _replay_all(endpoint: Endpoint, headers: dict[str, str]) -> dict[str, Outcome]:
    outcomes: dict[str, Outcome] = {}
    with httpx.Client(timeout=60) as client:
        load = reset_and_load_via_update(endpoint.update_url, client, headers)
        for test in load_manifest(MANIFEST):
            outcomes[test.name] = replay(
                test,
                query_url=endpoint.query_url,
                update_url=endpoint.update_url,
                load=load,
                client=client,
                extra_headers=headers,
            )
    return outcomes


@pytest.mark.slow  # replays the W3C protocol suite against running servers
@needs_manifest
@needs_oxigraph
def test_endpoint_passes_what_oxigraph_passes(ours: Endpoint, oxigraph: Endpoint) -> None:
    mine = _replay_all(ours, {"Authorization": f"Bearer {TOKEN}"})
    theirs = _replay_all(oxigraph, {})
    for name in mine:
        print(f"{name}: ours {'PASS' if mine[name].passed else 'FAIL'} {mine[name].statuses} {mine[name].reason}")
    failures = {name: o.reason for name, o in mine.items() if not o.passed}
    assert failures == {}
    ours_query = {n for n, o in mine.items() if o.passed and n in QUERY_TESTS}
    theirs_query = {n for n, o in theirs.items() if o.passed and n in QUERY_TESTS}
    assert ours_query >= theirs_query and len(ours_query) == len(QUERY_TESTS) == 20
    assert {n for n, o in theirs.items() if o.passed} <= {n for n, o in mine.items() if o.passed}
