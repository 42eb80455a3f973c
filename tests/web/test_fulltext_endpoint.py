"""Full-text search through the endpoint of an on-disk store: queries run in worker processes
(sparql/_worker.py), which open the store's full-text index read-only; the parent brings it in
step first, so a write through the endpoint is searchable by the next query."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from karenina_rdf import EndpointSettings, Store, create_app
from tests.conftest import ROOT

pytestmark = [pytest.mark.slow]  # worker processes

TOKEN = "fulltext-secret"
JSON = {"Accept": "application/sparql-results+json"}
SCORES = (
    "SELECT ?id ?score WHERE { ?q schema:identifier ?id . BIND(karenina:textScore(?q, %s) AS ?score) "
    "FILTER(BOUND(?score)) } ORDER BY DESC(?score) ?id"
)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Store, TestClient]]:
    store = Store(tmp_path / "store")
    for path in sorted((ROOT / "examples").glob("*.jsonld")):
        store.import_checkpoint(path)
    with TestClient(create_app(store, EndpointSettings(write_token=TOKEN))) as client:
        assert client.app.state.endpoint.runner.pool is not None  # type: ignore[attr-defined]
        yield store, client
    store.close()


def _ids(client: TestClient, sparql: str) -> list[str]:
    r = client.get("/sparql", params={"query": sparql}, headers=JSON)
    assert r.status_code == 200, r.text
    return [b["id"]["value"] for b in r.json()["results"]["bindings"]]


@pytest.mark.parametrize("query", ["kinase", "inhib*", '"active site"', "ASPIRIN OR tp53"])
def test_function_in_a_worker(served: tuple[Store, TestClient], query: str) -> None:
    store, client = served
    expected = [h.question_id for h in store.search_text(query, limit=None).hits]
    assert expected
    got = _ids(client, SCORES % f'"{query.replace(chr(34), chr(92) + chr(34))}"')
    assert sorted(got) == sorted(expected)


def test_named_search_query(served: tuple[Store, TestClient]) -> None:
    store, client = served
    r = client.get("/queries/search", params={"phrase": "kinase"}, headers=JSON)
    assert r.status_code == 200, r.text
    rows = r.json()["results"]["bindings"]
    assert [b["question_id"]["value"] for b in rows] == [h.question_id for h in store.search_text("kinase").hits]
    bad = client.get("/queries/search", params={"phrase": "?!"}, headers=JSON)
    assert bad.status_code == 400 and "nothing to search for" in bad.text


def test_a_write_is_searchable_by_the_next_query(served: tuple[Store, TestClient]) -> None:
    _, client = served
    assert _ids(client, SCORES % '"phosphatase"') == []
    update = (
        "DELETE { GRAPH ?g { ?q <https://schema.org/text> ?t } } "
        'INSERT { GRAPH ?g { ?q <https://schema.org/text> "Which phosphatase opposes PI3K?" } } '
        "WHERE { GRAPH ?g { ?q <https://schema.org/text> ?t ; <https://schema.org/identifier> ?id } "
        'FILTER(CONTAINS(?t, "aspirin")) }'
    )
    r = client.post("/sparql", data={"update": update}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 204, r.text
    assert len(_ids(client, SCORES % '"phosphatase"')) >= 1
