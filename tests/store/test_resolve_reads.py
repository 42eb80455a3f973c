"""Naming a benchmark (by id or name) reads its two naming triples, not every triple of its
node: the benchmark node links each of its items, so the old read decoded a triple per question
of every stored benchmark (a million on a store of ten 100k benchmarks) for every command that
names one (docs/performance.md § One million questions)."""

from __future__ import annotations

import json
from typing import Any

import pyoxigraph as ox
import pytest

from karenina_rdf import Store
from karenina_rdf._errors import BenchmarkNotFoundError
from karenina_rdf.rdf import ordered_items
from tests.conftest import EXAMPLES


class _Counting:
    """The store's pyoxigraph handle, counting the quads its pattern reads hand to Python."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.read = inner, 0

    def quads_for_pattern(self, *args: Any) -> Any:
        for quad in self.inner.quads_for_pattern(*args):
            self.read += 1
            yield quad

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    s = Store(tmp_path_factory.mktemp("resolve") / "store")
    s.import_paths(sorted(EXAMPLES.glob("*.jsonld")), validate=False)
    return s


def _refs() -> list[tuple[str, str]]:
    doc = json.loads((EXAMPLES / "pharmacology.jsonld").read_text(encoding="utf-8"))
    return [("name", doc["name"]), ("id", doc["@id"])]


@pytest.mark.parametrize(("kind", "ref"), _refs())
def test_resolving_reads_the_naming_triples_only(store: Store, kind: str, ref: str, monkeypatch: Any) -> None:
    expected = store.resolve(ref)
    counting = _Counting(store._ox)
    monkeypatch.setattr(store, "_ox", counting)
    assert store.resolve(ref) == expected, kind
    # At most an identifier and a name per stored benchmark; the old read took every triple of
    # each benchmark node (one per question and more).
    assert counting.read <= 2 * len(store.catalog.benchmarks()), counting.read


def test_an_unknown_name_is_still_refused(store: Store) -> None:
    with pytest.raises(BenchmarkNotFoundError, match="no benchmark with id, IRI or name"):
        store.resolve("no such benchmark")


def test_listing_counts_questions_without_reading_them(store: Store, monkeypatch: Any) -> None:
    """`karenina-rdf list` counts each benchmark's items in the engine: the old count decoded
    every item IRI into Python (45 s of CPU on a store of a million questions)."""
    expected = {s.iri: len(ordered_items(store.oxigraph, ox.NamedNode(s.graph), s.iri)) for s in store.benchmarks()}
    assert all(expected.values())
    counting = _Counting(store._ox)
    monkeypatch.setattr(store, "_ox", counting)
    listed = store.benchmarks()
    assert {s.iri: s.questions for s in listed} == expected
    # identifier, name and version of each benchmark; no item
    assert counting.read <= 3 * len(listed) < sum(expected.values()), counting.read
