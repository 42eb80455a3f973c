"""``Store.rebase`` / ``karenina-rdf rebase``: a store's base IRI changed after the fact, on every
backend (embedded on disk, in memory, Oxigraph server and Virtuoso: the last two slow), and
atomic: a process killed at any point of an embedded rebase leaves a store that opens with the
old base and all its data, or the new base and all its data.

What a rebase must keep is judged against the store before it: the Karenina checkpoint and
results exports (byte for byte), and every quad with each IRI under the old base moved to the
new one, nothing else changed (literals stay, blank nodes stay shared).
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from typer.testing import CliRunner

from karenina_rdf import Store
from karenina_rdf._errors import InvalidValueError, StoreError
from karenina_rdf.cli import app
from karenina_rdf.rdf import CATALOG_GRAPH, DEFAULT_BASE_IRI, KAR, MODELS_GRAPH, VOCABULARY_GRAPH
from tests.conftest import EXAMPLES, ROOT

NEW = "https://bench.example.org/kb/"
DROPPED = {KAR.baseIri, KAR.validatedFindings, KAR.validationNonce}  # catalog facts a rebase resets
runner = CliRunner()


def _fill(store: Store) -> None:
    for path in sorted(EXAMPLES.glob("*.jsonld")):
        store.import_checkpoint(path)
    for path in sorted((EXAMPLES / "results").glob("*.json")):
        store.import_results(path)


def _ours(store: Store) -> list[ox.NamedNode | ox.BlankNode | ox.DefaultGraph]:
    """The graphs a store keeps (on a server: not anyone else's)."""
    if store.remote is None:
        return [ox.DefaultGraph(), *store.oxigraph.named_graphs()]
    under = list(store.remote.named_graphs(store.base_iri))
    return [*under, CATALOG_GRAPH, VOCABULARY_GRAPH, MODELS_GRAPH]


def _quads(store: Store) -> list[ox.Quad]:
    out: list[ox.Quad] = []
    for g in _ours(store):
        out += store.oxigraph.quads_for_pattern(None, None, None, g)
    return out


def _moved(term: Any, old: str, new: str) -> Any:
    if isinstance(term, ox.NamedNode) and term.value.startswith(old):
        return ox.NamedNode(new + term.value[len(old) :])
    if isinstance(term, ox.Literal) and term.datatype.value.startswith(old):
        return ox.Literal(term.value, datatype=_moved(term.datatype, old, new))
    return term


def _shape(quads: Iterable[ox.Quad], old: str | None = None, new: str | None = None) -> Counter[tuple[str, ...]]:
    """The quads as a multiset, IRIs under ``old`` moved to ``new``, blank nodes as ``_`` (a
    load gives them new labels), without the catalog facts a rebase resets."""
    out: Counter[tuple[str, ...]] = Counter()
    for q in quads:
        if q.graph_name == CATALOG_GRAPH and q.predicate.value in DROPPED:
            continue
        terms = (q.subject, q.predicate, q.object, q.graph_name)
        if old is not None:
            terms = tuple(_moved(t, old, new) for t in terms)
        out[tuple("_" if isinstance(t, ox.BlankNode) else str(t) for t in terms)] += 1
    return out


def _exports(store: Store) -> dict[str, Any]:
    """Everything Karenina would get back: each benchmark's checkpoint, each run's results."""
    out: dict[str, Any] = {}
    for b in store.benchmarks():
        out[b.benchmark_id] = store.export_checkpoint(b.iri)
    for r in store.runs():
        buf = io.StringIO()
        store.export_results(r.iri, buf)
        out[r.run_id] = buf.getvalue()
    return out


# -- every backend ---------------------------------------------------------------------------------


def test_rebase_moves_every_iri_and_keeps_everything(backend: tuple[str, Store]) -> None:
    location, store = backend
    _fill(store)
    old = store.base_iri
    # IRIs a user wrote by SPARQL: one under the base as an object (sameAs), one elsewhere, a
    # literal quoting the base (text: kept), a literal typed by a datatype under the base.
    bench = next(b.iri for b in store.benchmarks() if b.name != "Pharmacology examples")
    graph = store.catalog.benchmarks()[bench]
    store.edit(
        bench,
        f"INSERT DATA {{ GRAPH {graph} {{ <{bench}> <https://schema.org/sameAs> <{old}elsewhere/x>, "
        f"<https://example.org/other> ; <https://schema.org/comment> {ox.Literal('see ' + old + 'x')}, "
        f'"7"^^<{old}units/kg> }} }}',
    )
    before, exports = _quads(store), _exports(store)
    hits = store.search_text("drug")

    report = store.rebase(NEW)

    assert (report.old_base, report.new_base, store.base_iri) == (old, NEW, NEW)
    after = _quads(store)
    assert _shape(after) == _shape(before, old, NEW)
    assert not [q for q in after if any(isinstance(t, ox.NamedNode) and t.value.startswith(old) for t in q)]
    assert [q.object for q in after if q.predicate.value == KAR.baseIri] == [ox.Literal(NEW)]
    assert ox.Literal("see " + old + "x") in {q.object for q in after}
    assert _exports(store) == exports
    assert all(b.iri.startswith(NEW) for b in store.benchmarks())
    assert all(r.iri.startswith(NEW) for r in store.runs())
    moved = store.search_text("drug")
    assert [(h.question_id, h.iri) for h in moved.hits] == [(h.question_id, _moved_iri(h.iri, old)) for h in hits.hits]
    # New IRIs are minted under the new base, and the store says so when opened again.
    again = store.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
    assert again.status == "unchanged" and again.iri.startswith(NEW)
    if store.remote is None:
        store.close()  # one process opens an embedded store once; a server takes many clients
    with Store(location) as reopened:
        assert reopened.base_iri == NEW and _exports(reopened) == exports
        assert reopened.rebase(NEW).quads == len(reopened.oxigraph)  # the same base again: nothing to do
    with pytest.raises(StoreError, match=re.escape(f"karenina-rdf rebase {old}")):
        Store(location, base_iri=old)


def _moved_iri(iri: str, old: str) -> str:
    return NEW + iri[len(old) :] if iri.startswith(old) else iri


def test_text_index_keys_move_without_indexing_again(tmp_path: Path) -> None:
    with Store(tmp_path / "store") as store:
        _fill(store)
        store.search_text("drug")  # the index is built
        store.rebase(NEW)
        sync = store.fulltext
        assert sync.index.stamps() == sync.stamps()  # in step: the next search indexes nothing
        writes = sync.index._writes
        assert store.search_text("drug").total > 0 and sync.index._writes == writes


# -- which bases ----------------------------------------------------------------------------------

BASES = [
    pytest.param(DEFAULT_BASE_IRI, "https://bench.example.org/kb/", id="default-to-public"),
    pytest.param("https://a.example/", "https://a.example/deeper/path/", id="new-under-old"),
    pytest.param("https://a.example/x/y/", "https://a.example/", id="old-under-new"),
    pytest.param("http://a.example/kb#", "https://b.example/kb/", id="hash-base"),
]


@pytest.mark.parametrize(("old", "new"), BASES)
def test_rebase_there_and_back_gives_the_same_store(old: str, new: str) -> None:
    with Store.memory(base_iri=old) as store:
        _fill(store)
        before = _quads(store)
        store.rebase(new)
        assert _shape(_quads(store)) == _shape(before, old, new)
        if old.endswith("/"):  # a '#' base is not one a rebase can go back to
            store.rebase(old)
            assert _shape(_quads(store)) == _shape(before)


BAD = [
    ("ftp://host/kb/", "give an absolute http(s) IRI ending in '/'"),
    ("bench.example.org/kb/", "give an absolute http(s) IRI ending in '/'"),
    ("https:///kb/", "give an absolute http(s) IRI ending in '/'"),
    ("https://host/kb", "it must end in '/'"),
    ("https://host/kb/?x=1/", "it must end in '/'"),
    ("https://host/kb/#", "it must end in '/'"),
    ("https://ho st/kb/", "is not a valid IRI"),
]


@pytest.mark.parametrize(("base", "message"), BAD)
def test_bad_new_base_is_one_line(tmp_path: Path, base: str, message: str) -> None:
    with Store.memory() as store, pytest.raises(InvalidValueError, match=re.escape(message)):
        store.rebase(base)
    path = tmp_path / "store"
    Store(path).close()
    result = runner.invoke(app, ["rebase", base, "--store", str(path)])
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and message in lines[0], result.output
    with Store(path) as store:
        assert store.base_iri == DEFAULT_BASE_IRI


def test_cli_rebase(tmp_path: Path) -> None:
    path = str(tmp_path / "store")
    assert runner.invoke(app, ["import", str(EXAMPLES / "pharmacology.jsonld"), "--store", path]).exit_code == 0
    result = runner.invoke(app, ["rebase", NEW, "--store", path])
    assert result.exit_code == 0, result.output
    assert f"rebased the store at {path} from {DEFAULT_BASE_IRI} to {NEW}" in result.stdout
    again = runner.invoke(app, ["rebase", NEW, "--store", path])
    assert again.exit_code == 0 and "already: nothing to do" in again.stdout
    listed = runner.invoke(app, ["list", "--store", path, "--base-iri", DEFAULT_BASE_IRI])
    assert listed.exit_code == 1 and f"change its base with `karenina-rdf rebase {DEFAULT_BASE_IRI}`" in listed.stderr
    missing = runner.invoke(app, ["rebase", NEW, "--store", str(tmp_path / "none")])
    assert missing.exit_code == 1 and "no store at" in missing.stderr
    assert not (tmp_path / "none").exists()


# -- crash safety ------------------------------------------------------------------------------------

# A process killed (os._exit: no clean-up, no flush) at one point of a rebase, and what the store
# must hold when opened again. The points are methods a rebase passes through, replaced in the
# child process only.
CRASH = r"""
import os, sys
from karenina_rdf import Store
from karenina_rdf.store import _rebase, _store

store = Store(sys.argv[1])  # opened first: opening finishes a rebuild too
point = sys.argv[2]
if point == "mid-dump":  # half the store written out rebased, no commit yet
    calls = []
    real = _rebase.Rewriter.block
    def block(self, data):
        calls.append(1)
        if len(calls) == 3:
            os._exit(9)
        return real(self, data)
    _rebase.Rewriter.block = block
elif point == "at-commit":  # the manifest written, nothing loaded
    _store.GraphStore._finish_rebuild = lambda self, folder=None: os._exit(9)
elif point == "mid-load":  # the store cleared, then killed while loading
    def finish(self, folder=None):
        self._ox.clear()
        self._ox.flush()
        os._exit(9)
    _store.GraphStore._finish_rebuild = finish
store.rebase(sys.argv[3])
os._exit(0)
"""


@pytest.mark.parametrize(("point", "survives"), [("mid-dump", "old"), ("at-commit", "new"), ("mid-load", "new")])
def test_a_killed_rebase_leaves_the_old_store_or_the_new(tmp_path: Path, point: str, survives: str) -> None:
    path = tmp_path / "store"
    with Store(path) as store:
        _fill(store)
        before, exports = _quads(store), _exports(store)
    child = subprocess.run(
        [sys.executable, "-c", CRASH, str(path), point, NEW], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert child.returncode == 9, child.stderr
    with Store(path) as store:
        expected = _shape(before) if survives == "old" else _shape(before, DEFAULT_BASE_IRI, NEW)
        assert store.base_iri == (DEFAULT_BASE_IRI if survives == "old" else NEW)
        assert _shape(_quads(store)) == expected
        assert _exports(store) == exports
        assert not (path / ".rebuild").exists()


def test_a_failed_rebase_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error before the commit (a full disk while the copy is written): the store as it was,
    still open and usable, and nothing left in its folder."""
    from karenina_rdf.store import _rebase

    def full(self: Any, data: bytes) -> bytes:
        raise OSError(28, "No space left on device")

    with Store(tmp_path / "store") as store:
        _fill(store)
        before, exports = _quads(store), _exports(store)
        monkeypatch.setattr(_rebase.Rewriter, "block", full)
        with pytest.raises(OSError, match="No space left"):
            store.rebase(NEW)
        assert store.base_iri == DEFAULT_BASE_IRI and _shape(_quads(store)) == _shape(before)
        assert _exports(store) == exports and not (tmp_path / "store" / ".rebuild").exists()
        assert store.import_checkpoint(EXAMPLES / "pharmacology.jsonld").iri.startswith(DEFAULT_BASE_IRI)


# -- kept versions (store/_versions.py): their graphs live in a second store, the archive -------
def _versioned(store: Store) -> tuple[str, list[dict[str, Any]]]:
    """A benchmark imported three times (two kept versions), and each version's checkpoint."""
    import json

    doc = json.loads((EXAMPLES / "pharmacology.jsonld").read_text(encoding="utf-8"))
    bench = store.import_checkpoint(doc, name="first").iri
    doc["dataFeedElement"] = doc["dataFeedElement"][1:]
    store.import_checkpoint(doc, name="second")
    doc["name"] = doc["name"] + " (third)"
    store.import_checkpoint(doc, name="third")
    return bench, [store.export_version(bench, n) for n in (1, 2, 3)]


@pytest.mark.parametrize("on_disk", [False, True])
def test_kept_versions_move_with_the_store(tmp_path: Path, on_disk: bool) -> None:
    from karenina_rdf.store import _versions

    store = Store(tmp_path / "s") if on_disk else Store.memory()
    with store:
        bench, exports = _versioned(store)
        store.rebase(NEW)
        moved = _moved_iri(bench, DEFAULT_BASE_IRI)
        listed = store.versions(moved)
        assert [v.number for v in listed] == [1, 2, 3]
        assert all(v.iri.startswith(NEW) and (v.graph or NEW).startswith(NEW) for v in listed)
        assert [store.export_version(moved, n) for n in (1, 2, 3)] == exports
        assert not store.diff(moved, 1, 2).empty
        archive = _versions.archive(store)
        assert archive is not None
        assert {g.value for g in archive.named_graphs()} == {v.graph for v in listed if not v.latest}
        del archive  # RocksDB's lock goes with the last reference
    if on_disk:
        with Store(tmp_path / "s") as store:  # and after reopening (the archive drops what no version names)
            assert [store.export_version(moved, n) for n in (1, 2, 3)] == exports


def test_a_rebase_that_dies_after_copying_the_versions_keeps_them(tmp_path: Path) -> None:
    """The archive holds both copies between its load and the store's commit: a crash there
    leaves the old base with every version whole, and the copies are dropped at the next open."""
    script = f"""
import os, sys
sys.path.insert(0, {str(ROOT)!r})
from karenina_rdf import Store
from karenina_rdf.store import _store
def die(*args, **kwargs):
    os._exit(3)
_store.GraphStore._rebuild_rebased = die
with Store(sys.argv[1]) as store:
    store.rebase({NEW!r})
"""
    with Store(tmp_path / "s") as store:
        bench, exports = _versioned(store)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "s")], capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    from karenina_rdf.store import _versions

    with Store(tmp_path / "s") as store:
        assert store.base_iri == DEFAULT_BASE_IRI
        assert [store.export_version(bench, n) for n in (1, 2, 3)] == exports
        archive = _versions.archive(store)
        assert archive is not None and all(g.value.startswith(DEFAULT_BASE_IRI) for g in archive.named_graphs())
        del archive
        store.rebase(NEW)  # and the rebase can be made again
        assert [store.export_version(_moved_iri(bench, DEFAULT_BASE_IRI), n) for n in (1, 2, 3)] == exports
