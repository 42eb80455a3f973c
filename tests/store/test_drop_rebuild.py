"""Dropping a graph by rebuilding the store without it (GraphStore._rebuild_without): the store
that results equals the one dropping quad by quad leaves, including after a crash at each step
of the rebuild, finished (or undone) by the next open."""

from __future__ import annotations

import gc
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

from karenina_rdf import Store
from karenina_rdf.store import _store as store_module
from karenina_rdf.web import EndpointSettings, create_app
from tests.conftest import EXAMPLES

EXTRA = """INSERT DATA {
  <urn:x:s> <urn:x:p> "in the default graph" .
  GRAPH <urn:x:g1> { _:shared <urn:x:p> "a blank node in two graphs" }
  GRAPH <urn:x:g2> { _:shared <urn:x:p> "line\\nbreak .\\n and a quote \\" ." }
}"""


class Crash(Exception):
    pass


def _content(path: Path) -> tuple[set[tuple[str, ...]], set[str], int]:
    """Every quad (blank nodes by what they say: a reload renames them), every named graph, and
    how many distinct blank nodes there are (sharing kept: one)."""
    store = ox.Store.read_only(str(path))
    blanks = {q.subject.value for q in store if isinstance(q.subject, ox.BlankNode)}
    quads = {
        tuple("_" if isinstance(t, ox.BlankNode) else str(t) for t in (q.subject, q.predicate, q.object, q.graph_name))
        for q in store
    }
    graphs = {str(g) for g in store.named_graphs()}
    del store
    return quads, graphs, len(blanks)


def _seed(path: Path) -> str:
    with Store(path) as s:
        gone = s.import_checkpoint(EXAMPLES / "pharmacology.jsonld").iri
        s.import_checkpoint(EXAMPLES / "molecular-biology.jsonld")
        s.update_graph(EXTRA)
        s.oxigraph.add_graph(ox.NamedNode("urn:x:empty"))
    return gone


def _expected(tmp_path: Path, seeded: Path, gone: str, monkeypatch: pytest.MonkeyPatch) -> tuple:
    reference = tmp_path / "reference"
    shutil.copytree(seeded, reference)
    with monkeypatch.context() as m:
        m.setattr(store_module, "_REBUILD_RATIO", 0)  # quad by quad
        with Store(reference) as s:
            s.delete(gone)
    return _content(reference)


def _crash_at(name: str) -> Callable[[pytest.MonkeyPatch], None]:
    def patch(m: pytest.MonkeyPatch) -> None:
        if name == "before the manifest":
            m.setattr(store_module.json, "dump", lambda *a, **k: (_ for _ in ()).throw(Crash()))
        else:
            real = store_module.GraphStore._finish_rebuild

            def crash_once_committed(self: store_module.GraphStore) -> None:
                if (self.path / store_module._REBUILD / "manifest.json").is_file():  # type: ignore[operator]
                    if name == "mid-load":
                        self._ox.clear()
                    raise Crash
                real(self)

            m.setattr(store_module.GraphStore, "_finish_rebuild", crash_once_committed)

    return patch


@pytest.mark.parametrize("crash", [None, "before the manifest", "after the manifest", "mid-load"])
def test_rebuild_equals_quad_by_quad(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash: str | None) -> None:
    seeded = tmp_path / "seeded"
    gone = _seed(seeded)
    expected = _expected(tmp_path, seeded, gone, monkeypatch)
    assert expected[2] == 1 and "<urn:x:empty>" in expected[1]
    monkeypatch.setattr(store_module, "_REBUILD_RATIO", 1000)  # what stays is small enough
    with monkeypatch.context() as m:
        if crash is not None:
            _crash_at(crash)(m)
        s = Store(seeded)
        try:
            s.delete(gone)
            assert crash is None
        except Crash:
            assert crash is not None
        del s  # the process dies: nothing flushed or closed in order
        gc.collect()  # the store's full-text sync refers back to it: the lock goes with the cycle
    with Store(seeded) as s:  # the next open finishes the rebuild, or removes what it left
        assert [b.name for b in s.benchmarks()] == ["Molecular biology examples"] or crash == "before the manifest"
        assert not (seeded / store_module._REBUILD).exists()
    if crash == "before the manifest":
        # The store was never touched: the benchmark was unpublished and is dropped as an orphan.
        with Store(seeded) as s:
            assert [b.name for b in s.benchmarks()] == ["Molecular biology examples"]
    assert _content(seeded) == expected


def test_big_store_drops_quad_by_quad(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seeded = tmp_path / "seeded"
    gone = _seed(seeded)
    monkeypatch.setattr(store_module, "_REBUILD_RATIO", 0)

    def no_rebuild(self: object, graph: object, *rest: object) -> None:
        raise AssertionError("rebuilt a store holding more than the graph dropped")

    monkeypatch.setattr(store_module.GraphStore, "_rebuild_without", no_rebuild)
    with Store(seeded) as s:
        s.delete(gone)
        assert [b.name for b in s.benchmarks()] == ["Molecular biology examples"]


def test_replacing_the_only_benchmark_rebuilds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    real = store_module.GraphStore._rebuild_without

    def spy(self: store_module.GraphStore, graph: ox.NamedNode, *rest: Any) -> None:
        calls.append(graph)
        real(self, graph, *rest)  # the rest: its progress

    monkeypatch.setattr(store_module.GraphStore, "_rebuild_without", spy)
    doc = (EXAMPLES / "pharmacology.jsonld").read_text(encoding="utf-8")
    changed = tmp_path / "changed.jsonld"
    changed.write_text(doc.replace("imatinib", "imatinib mesylate", 1), encoding="utf-8")
    with Store(tmp_path / "store") as s:
        first = s.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
        old = s.graph_of(first.iri)[1]
        assert s.import_checkpoint(changed).status == "replaced"
        assert calls == [old]
        assert old not in set(s.oxigraph.named_graphs())
        assert s.benchmarks()[0].questions == first.questions


def test_the_endpoint_never_empties_the_store_it_serves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages read the store on other threads while a delete runs: no rebuild there."""

    def no_rebuild(self: object, graph: object, *rest: object) -> None:
        raise AssertionError("the served store was cleared")

    monkeypatch.setattr(store_module.GraphStore, "_rebuild_without", no_rebuild)
    monkeypatch.setattr(store_module, "_REBUILD_RATIO", 1000)
    with Store(tmp_path / "store") as s:
        gone = s.import_checkpoint(EXAMPLES / "pharmacology.jsonld").iri
        create_app(s, EndpointSettings(query_processes=False))
        s.delete(gone)
        assert s.benchmarks() == []
