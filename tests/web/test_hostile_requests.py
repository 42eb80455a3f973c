"""Requests an attacker or a broken client sends to every route: odd IRIs, query parameters that
are not what the page expects, numbers out of range. Each is answered with a 4xx and one line
of text, never a 500 and never a traceback (issue 17, point 5)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from karenina_rdf import Store, create_app
from tests.conftest import EXAMPLES

RUN = "/runs/molecular-biology-2026-05"
# What an attacker puts where a page expects an id, a name or a number.
HOSTILE = [
    "%ZZ",  # a broken percent escape
    "%7B",  # {
    "%5E",  # ^
    "%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E",  # "><script>
    "%00",
    "%FF",
    "%E2%80%AE",  # right-to-left override
    "a%20b",
    "..%2F..%2Fetc%2Fpasswd",
    "urn:uuid:x",
    "http:%2F%2F127.0.0.1:1%2F",
    "9" * 5000,  # beyond Python's int-from-string limit
    "-1",
    "0",
    "1e309",
    "x" * 9000,
]
PATHS = [
    "/benchmarks/{v}",
    "/benchmarks/urn:uuid:x/{v}",
    "/benchmarks/molecular-biology-examples/questions/{v}",
    "/runs/{v}",
    RUN + "/results/{v}",
    "/models/{v}",
    "/models/langchain/{v}",
    "/queries/{v}",
    "/query/{v}",
    "/{v}",
]
QUERIES = [
    RUN + "?model={v}",
    RUN + "?judge={v}",
    RUN + "?outcome={v}",
    RUN + "?page={v}",
    "/benchmarks/molecular-biology-examples?page={v}",
    "/benchmarks/molecular-biology-examples?q={v}",
    "/compare?run={v}",
    "/compare?run=molecular-biology-2026-05&sort={v}",
    "/?format={v}",
    "/queries/questions-by-keyword?keyword={v}",
    "/queries/questions-by-keyword?keyword=x&format={v}",
    "/sparql?query={v}",
    "/.well-known/void?format={v}",
]


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    store = Store.memory()
    store.import_paths([EXAMPLES])
    with TestClient(create_app(store), raise_server_exceptions=False) as c:
        yield c
    store.close()


def _check(client: TestClient, url: str) -> None:
    r = client.get(url)
    assert r.status_code < 500, f"{url[:120]} answered {r.status_code}: {r.text[:200]}"
    assert "Traceback" not in r.text
    if r.status_code >= 400:
        assert r.text.count("\n") <= 1 and len(r.text) < 2000, r.text[:300]


@pytest.mark.parametrize("value", HOSTILE, ids=lambda v: v[:24])
@pytest.mark.parametrize("template", PATHS)
def test_odd_path_segments(client: TestClient, template: str, value: str) -> None:
    _check(client, template.format(v=value))


@pytest.mark.parametrize("value", HOSTILE, ids=lambda v: v[:24])
@pytest.mark.parametrize("template", QUERIES)
def test_odd_query_parameters(client: TestClient, template: str, value: str) -> None:
    _check(client, template.format(v=value))


@pytest.mark.parametrize("raw", ["{", "^", "|", "`", "\\", "<", ">"])
def test_characters_a_client_sends_unescaped(client: TestClient, raw: str) -> None:
    # Some clients send what they were given, unescaped; the server must still answer cleanly.
    _check(client, "/benchmarks/" + quote(raw, safe=raw))


@pytest.mark.parametrize(
    ("path", "html"),
    [("/", True), (RUN, True), ("/query", True), ("/sparql?query=ASK%7B%7D", False), ("/static/site.css", False)],
)
def test_security_headers(client: TestClient, path: str, html: bool) -> None:
    r = client.get(path)
    assert r.status_code == 200
    assert r.headers["x-content-type-options"] == "nosniff"
    policy = r.headers.get("content-security-policy")
    if html:
        assert policy is not None and "script-src 'self';" in policy and "frame-ancestors 'none'" in policy
        assert "default-src 'self'" in policy and "unsafe-eval" not in policy
        assert r.headers["x-frame-options"] == "DENY"
    else:
        assert policy is None


def test_a_checkpoint_with_a_number_python_cannot_read(tmp_path: Path) -> None:
    # A 100,000-digit integer: Python (and Karenina) refuse to convert it. The endpoint answers
    # 400 with the JSON pointer, not a 500.
    from karenina_rdf import EndpointSettings

    text = (EXAMPLES / "pharmacology.jsonld").read_text(encoding="utf-8")
    at = text.index('"version"')
    body = text[:at] + '"big": ' + "9" * 100_000 + ", " + text[at:]
    store = Store.memory()
    with TestClient(create_app(store, EndpointSettings(write_token="t")), raise_server_exceptions=False) as c:
        r = c.post(
            "/benchmarks",
            content=body.encode(),
            headers={"Authorization": "Bearer t", "Content-Type": "application/ld+json"},
        )
    assert r.status_code == 400, r.text
    assert "at /big: an integer of 100,000 digits" in r.text and r.text.count("\n") == 1
    assert store.benchmarks() == []
    store.close()


def test_a_refused_checkpoint_keeps_every_problem_in_the_answer() -> None:
    # Lines are cut, not the message: an importer with the write token sees every problem.
    import json

    from karenina_rdf import EndpointSettings

    doc = json.loads((EXAMPLES / "pharmacology.jsonld").read_text(encoding="utf-8"))
    for element in doc["dataFeedElement"]:
        element["item"].pop("text")  # one problem per question
    store = Store.memory()
    with TestClient(create_app(store, EndpointSettings(write_token="t")), raise_server_exceptions=False) as c:
        r = c.post(
            "/benchmarks",
            content=json.dumps(doc).encode(),
            headers={"Authorization": "Bearer t", "Content-Type": "application/ld+json"},
        )
    assert r.status_code == 400
    lines = r.text.splitlines()
    assert len(lines) == len(doc["dataFeedElement"]) >= 4
    assert all("missing required field 'text'" in line for line in lines)
    store.close()
