"""Linked data served after a rebase: every resource of the store (benchmarks, questions,
answers, templates, traits, runs, results, models, the graphs themselves) dereferences at its
IRI under the new base, its description names the new IRIs and none under the old base, the
pages link under the new base, and the old addresses are gone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pyoxigraph as ox
import pytest
from fastapi.testclient import TestClient

from karenina_rdf import Store, create_app
from karenina_rdf.linked import Site
from karenina_rdf.rdf import DEFAULT_BASE_IRI
from tests.conftest import EXAMPLES

NEW = "https://bench.example.org/kb/"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, TestClient, set[str]]]:
    path = tmp_path_factory.mktemp("rebased") / "store"
    with Store(path) as store:
        for checkpoint in sorted(EXAMPLES.glob("*.jsonld")):
            store.import_checkpoint(checkpoint)
        for results in sorted((EXAMPLES / "results").glob("*.json")):
            store.import_results(results)
        old = _resources(store)
        store.rebase(NEW)
    store = Store(path)  # as `serve` would open it afterwards
    with TestClient(create_app(store)) as client:
        yield store, client, old
    store.close()


def _resources(store: Store) -> set[str]:
    """Every IRI under the base a benchmark or run graph describes, and those graphs."""
    graphs = [*store.catalog.benchmarks().values(), *store.catalog.runs().values()]
    found = {g.value for g in graphs}
    for g in graphs:
        for q in store.oxigraph.quads_for_pattern(None, None, None, g):
            if isinstance(q.subject, ox.NamedNode) and q.subject.value.startswith(store.base_iri):
                found.add(q.subject.value)
    return found


def test_every_resource_resolves_under_the_new_base(served: tuple[Store, TestClient, set[str]]) -> None:
    store, client, old = served
    now = _resources(store)
    assert now == {NEW + iri[len(DEFAULT_BASE_IRI) :] for iri in old} and len(now) > 500
    site = Site(store)
    failed, leaked = [], []
    for iri in sorted(now):
        path = site.path_for(iri)
        assert path.startswith("/kb/"), iri
        r = client.get(path + ".nt")
        if r.status_code != 200:
            failed.append((iri, r.status_code))
            continue
        triples = list(ox.parse(r.content, format=ox.RdfFormat.N_TRIPLES))
        graphs = {g.value for g in (*store.catalog.benchmarks().values(), *store.catalog.runs().values())}
        # A graph's IRI gives the graph's triples; any other resource its own description.
        if not triples or (iri not in graphs and not any(t.subject.value == iri for t in triples)):
            failed.append((iri, "not described"))
        leaked += [t for t in triples if DEFAULT_BASE_IRI in str(t)]
    assert failed == [] and leaked == []


def test_pages_link_under_the_new_base_and_old_paths_are_gone(served: tuple[Store, TestClient, set[str]]) -> None:
    store, client, old = served
    bench = store.benchmarks()[0]
    page = client.get(Site(store).path_for(bench.iri), headers={"Accept": "text/html"})
    assert page.status_code == 200 and "127.0.0.1" not in page.text
    assert f'href="{urlsplit(bench.iri).path}' in page.text
    for iri in sorted(old)[:20]:
        assert client.get(urlsplit(iri).path + ".nt").status_code == 404, iri


def test_a_question_found_by_search_resolves(served: tuple[Store, TestClient, set[str]], tmp_path: Path) -> None:
    store, client, _ = served
    hit = store.search_text("imatinib").hits[0]
    assert hit.iri.startswith(NEW)
    assert client.get(Site(store).path_for(hit.iri) + ".ttl").status_code == 200
