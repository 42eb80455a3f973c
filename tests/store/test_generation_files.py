"""The import's N-Triples kept per generation (store._files): a rebuild reloads from them, a
quad-by-quad drop removes by their lines, a replaced generation is kept as a version as its
files, and a re-import takes its old generation out first (GraphStore.evict). Each path leaves
what the path without files leaves (the store's content compared quad by quad, exports compared
byte for byte), including after a crash at each new step, finished or undone by the next open."""

from __future__ import annotations

import gc
import io
import shutil
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

from karenina_rdf import Store
from karenina_rdf import _importing as importing_module
from karenina_rdf.store import _files, _versions
from karenina_rdf.store import _store as store_module
from tests.conftest import EXAMPLES
from tests.store.test_drop_rebuild import Crash, _content, _crash_at

PHARMA = EXAMPLES / "pharmacology.jsonld"
MOLBIO = EXAMPLES / "molecular-biology.jsonld"


def _saved(store: Store, ref: str, version: int | None = None) -> str:
    buf = io.StringIO()
    if version is None:
        store.save(ref, buf)
    else:
        store.save_version(ref, version, buf)
    return buf.getvalue()


def _changed(tmp_path: Path) -> Path:
    changed = tmp_path / "changed.jsonld"
    changed.write_text(PHARMA.read_text(encoding="utf-8").replace("imatinib", "imatinib mesylate", 1), encoding="utf-8")
    return changed


# -- rebuilding and dropping from the files ----------------------------------------------------
def _two(path: Path) -> str:
    with Store(path) as s:
        gone = s.import_checkpoint(PHARMA).iri
        s.import_checkpoint(MOLBIO)
        for g in s.graphs():
            assert _files.files(s, g) is not None  # both unedited since their import
    return gone


def _reference(tmp_path: Path, seeded: Path, gone: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """The store a delete leaves without any file: quad by quad, each quad read from RocksDB."""
    reference = tmp_path / "reference"
    shutil.copytree(seeded, reference)
    with monkeypatch.context() as m:
        m.setattr(store_module, "_REBUILD_RATIO", 0)
        m.setattr(_files, "files", lambda *a: None)
        with Store(reference) as s:
            s.delete(gone)
    return _content(reference)


@pytest.mark.parametrize("crash", [None, "before the manifest", "after the manifest", "mid-load"])
def test_a_rebuild_from_the_files_equals_quad_by_quad(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash: str | None
) -> None:
    seeded = tmp_path / "seeded"
    gone = _two(seeded)
    expected = _reference(tmp_path, seeded, gone, monkeypatch)
    dumped: list[object] = []
    real_dump = store_module.GraphStore._dump_as_quads
    monkeypatch.setattr(store_module, "_REBUILD_RATIO", 1000)
    with monkeypatch.context() as m:
        m.setattr(
            store_module.GraphStore,
            "_dump_as_quads",
            lambda self, g, *a: (dumped.append(g), real_dump(self, g, *a))[1],
        )
        if crash is not None:
            _crash_at(crash)(m)
        s = Store(seeded)
        kept = next(g for g in s.graphs() if g != s.graph_of(gone)[1])
        try:
            s.delete(gone)
            assert crash is None
        except Crash:
            assert crash is not None
        del s  # the process dies: nothing flushed or closed in order
        gc.collect()  # RocksDB's lock goes with the cycle
    assert kept not in dumped  # reloaded from its files, never read back out of RocksDB
    with Store(seeded) as s:  # the next open finishes the rebuild, or removes what it left
        assert [b.name for b in s.benchmarks()] == ["Molecular biology examples"]
        assert not (seeded / store_module._REBUILD).exists()
        assert _files.files(s, kept) is not None
    assert _content(seeded) == expected
    # The dropped graph's files went with it (or with the next open, after a crash).
    assert len(list((seeded / _files.FOLDER).iterdir())) == 1


def test_a_drop_by_the_files_lines_equals_quad_by_quad(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seeded = tmp_path / "seeded"
    gone = _two(seeded)
    expected = _reference(tmp_path, seeded, gone, monkeypatch)
    monkeypatch.setattr(store_module, "_REBUILD_RATIO", 0)
    read: list[object] = []
    with Store(seeded) as s:
        graph = s.graph_of(gone)[1]
        with monkeypatch.context() as m:
            m.setattr(s, "_ox", _Spy(s.oxigraph, read))
            s.delete(gone)
        assert graph not in read  # named by the lines, not read back
    assert _content(seeded) == expected


class _Spy:
    """A pyoxigraph store that notes which graphs are iterated quad by quad."""

    def __init__(self, inner: ox.Store, read: list[object]) -> None:
        self._inner, self._read = inner, read

    def quads_for_pattern(self, s: Any, p: Any, o: Any, g: Any = None) -> Any:
        if s is None and p is None and o is None:
            self._read.append(g)
        return self._inner.quads_for_pattern(s, p, o, g)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


# -- versions kept as their files --------------------------------------------------------------
def test_a_replaced_generation_is_its_files_until_read(tmp_path: Path) -> None:
    with Store(tmp_path / "s") as s:
        bench = s.import_checkpoint(PHARMA).iri
        first, graph = _saved(s, bench), s.graph_of(bench)[1]
        s.import_checkpoint(_changed(tmp_path))
        assert _versions.archive(s) is None  # nothing copied
        assert _files.files(s, graph) is not None
    with Store(tmp_path / "s") as s:  # the files outlive the process: a version names them
        assert _files.files(s, graph) is not None
        assert _saved(s, bench, 1) == first  # byte for byte
        archive = _versions.archive(s)
        assert archive is not None and archive.contains_named_graph(graph)
        assert _files.files(s, graph) is None  # one source: the archive now
        assert _saved(s, bench, 1) == first
        s.drop_version(bench, 1)
        assert not archive.contains_named_graph(graph)


def test_a_version_whose_loading_died_is_loaded_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store(tmp_path / "s") as s:
        bench = s.import_checkpoint(PHARMA).iri
        first, graph = _saved(s, bench), s.graph_of(bench)[1]
        s.import_checkpoint(_changed(tmp_path))
    s = Store(tmp_path / "s")
    real = _files.load

    def half(target: ox.Store, g: ox.NamedNode, parts: Any) -> None:
        real(target, g, parts)
        target.remove(next(iter(target.quads_for_pattern(None, None, None, g))))  # one quad short
        raise Crash

    with monkeypatch.context() as m:
        m.setattr(_files, "load", half)
        with pytest.raises(Crash):
            _saved(s, bench, 1)
    del s  # the process dies
    gc.collect()
    with Store(tmp_path / "s") as s:
        assert _files.files(s, graph) is not None  # still there: the load never finished
        assert _saved(s, bench, 1) == first
        assert _files.files(s, graph) is None


def test_an_edited_generation_is_kept_as_it_is_in_the_store(tmp_path: Path) -> None:
    """Files say what an import loaded; after an edit in place the version is the graph."""
    with Store(tmp_path / "s") as s:
        bench, graph = (r := s.import_checkpoint(PHARMA)).iri, s.graph_of(r.iri)[1]
        name = "<https://schema.org/name>"
        s.edit(
            bench,
            f"DELETE WHERE {{ GRAPH {graph} {{ <{bench}> {name} ?n }} }} ;\n"
            f'INSERT DATA {{ GRAPH {graph} {{ <{bench}> {name} "edited" }} }}',
        )
        assert _files.files(s, graph) is None
        edited = _saved(s, bench)
        assert "edited" in edited
        s.import_checkpoint(_changed(tmp_path))
        assert _saved(s, bench, 1) == edited


def test_dropped_and_unkept_versions_leave_no_files(tmp_path: Path) -> None:
    with Store(tmp_path / "s") as s:
        bench = s.import_checkpoint(PHARMA).iri
        s.import_checkpoint(_changed(tmp_path), keep_version=False)
        assert len(list((tmp_path / "s" / _files.FOLDER).iterdir())) == 1  # the live one's
        s.import_checkpoint(PHARMA)
        s.delete(bench)
        assert list((tmp_path / "s" / _files.FOLDER).iterdir()) == []
        assert _versions.archive(s) is None


def test_a_rebase_keeps_versions_that_were_only_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    new = "https://bench.example.org/kb/"
    exports = {}
    for name in ("reference", "s"):
        with monkeypatch.context() as m:
            if name == "reference":  # no files: the version copied into the archive, as before
                m.setattr(_files, "keep", lambda *a: None)
            with Store(tmp_path / name) as s:
                s.import_checkpoint(PHARMA)
                s.import_checkpoint(_changed(tmp_path))
                if name == "s":
                    assert _versions.archive(s) is None  # version 1 is only its files
                s.rebase(new)
                assert not (tmp_path / name / _files.FOLDER).exists()
        with Store(tmp_path / name) as s:
            (moved,) = s.catalog.benchmarks()
            assert moved.startswith(new)
            exports[name] = [_saved(s, moved, 1), _saved(s, moved), [v.number for v in s.versions(moved)]]
    assert exports["s"] == exports["reference"]
    assert exports["s"][2] == [1, 2]


# -- a re-import takes its old generation out first ----------------------------------------------
def _spy_evict(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    done: list[bool] = []
    real = store_module.GraphStore.evict

    def spy(self: store_module.GraphStore, graph: ox.NamedNode, size: int | None) -> bool:
        try:
            done.append(real(self, graph, size))
        except BaseException:
            done.append(True)  # died while taking it out
            raise
        return done[-1]

    monkeypatch.setattr(store_module.GraphStore, "evict", spy)
    return done


def test_a_reimport_loads_into_a_store_without_the_old_generation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    evicted = _spy_evict(monkeypatch)
    reference = tmp_path / "reference"
    with monkeypatch.context() as m:  # the same steps without taking it out first
        m.setattr(store_module.GraphStore, "evict", lambda *a: False)
        with Store(reference) as s:
            s.import_checkpoint(PHARMA)
            s.import_checkpoint(_changed(tmp_path))
    with Store(tmp_path / "s") as s:
        bench = s.import_checkpoint(PHARMA).iri
        first = _saved(s, bench)
        old = s.graph_of(bench)[1]
        loaded: list[set[Any]] = []
        real = importing_module._import_into

        def watch(store: Any, gen: Any, *a: Any, **k: Any) -> Any:
            loaded.append(set(store.oxigraph.named_graphs()))
            return real(store, gen, *a, **k)

        monkeypatch.setattr(importing_module, "_import_into", watch)
        assert s.import_checkpoint(_changed(tmp_path)).status == "replaced"
        assert evicted == [True] and old not in loaded[0]
        assert _saved(s, bench, 1) == first
        assert s.hidden_graphs() == set()
    with Store(reference) as r, Store(tmp_path / "s") as s:
        assert _saved(r, bench) == _saved(s, bench) and _saved(r, bench, 1) == _saved(s, bench, 1)
        assert [(v.number, v.revision_of, v.questions, v.triples) for v in r.versions(bench)] == [
            (v.number, v.revision_of, v.questions, v.triples) for v in s.versions(bench)
        ]


def _fail_mapping(m: pytest.MonkeyPatch) -> None:
    def boom(*a: Any, **k: Any) -> Any:
        raise Crash

    m.setattr(importing_module, "map_checkpoint", boom)


def _patch_point(point: str, m: pytest.MonkeyPatch, marker: Path) -> None:
    if point == "before the eviction's commit":
        m.setattr(store_module.json, "dump", lambda *a, **k: (_ for _ in ()).throw(Crash()))
    elif point == "after the eviction's commit":
        _crash_at("after the manifest")(m)
    elif point == "the eviction's rebuild cut short":  # the store cleared, the rest half loaded
        _crash_at("mid-load")(m)
    elif point == "the new one loaded, not published":
        m.setattr(importing_module, "_publish", lambda *a, **k: (_ for _ in ()).throw(Crash()))
        m.setattr(store_module.GraphStore, "restore_evicted", lambda self: None)
    elif point in ("while loading", "refused"):
        _fail_mapping(m)
        if point == "while loading":  # dies before loading the old generation back
            m.setattr(store_module.GraphStore, "restore_evicted", lambda self: None)
    elif point == "loading it back":
        _fail_mapping(m)
        real = _files.load

        def half(target: ox.Store, graph: ox.NamedNode, parts: Any) -> None:
            parts = list(parts)
            if '"restoring": true' not in marker.read_text(encoding="utf-8"):
                return real(target, graph, parts)  # the eviction's rebuild reloading the rest
            real(target, graph, parts[:1])  # some of it in, then the process dies
            target.remove(next(iter(target.quads_for_pattern(None, None, None, graph))))
            raise Crash

        m.setattr(_files, "load", half)
    elif point == "after the publish":
        m.setattr(store_module.GraphStore, "retire", lambda *a, **k: (_ for _ in ()).throw(Crash()))
    else:
        raise AssertionError(point)


@pytest.mark.parametrize(
    ("point", "survives"),
    [
        ("before the eviction's commit", "old"),
        ("after the eviction's commit", "old"),
        ("the eviction's rebuild cut short", "old"),
        ("while loading", "old"),
        ("the new one loaded, not published", "old"),
        ("refused", "old"),
        ("loading it back", "old"),
        ("after the publish", "new"),
    ],
)
def test_a_reimport_that_dies_leaves_the_old_or_the_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str, survives: str
) -> None:
    with Store(tmp_path / "s") as s:
        bench = s.import_checkpoint(PHARMA).iri
        s.import_checkpoint(MOLBIO)
        other = s.resolve("Molecular biology examples")
        expected_other = _saved(s, other)
        old = _saved(s, bench)
    new_store = tmp_path / "new"
    with Store(new_store) as s:
        s.import_checkpoint(PHARMA)
        s.import_checkpoint(MOLBIO)
        s.import_checkpoint(_changed(tmp_path))
        new = _saved(s, bench)
    assert new != old
    monkeypatch.setattr(store_module, "_REBUILD_RATIO", 1000)  # the other benchmark is no obstacle
    evicted = _spy_evict(monkeypatch)
    s = Store(tmp_path / "s")
    with monkeypatch.context() as m:
        _patch_point(point, m, tmp_path / "s" / store_module._EVICTED)
        with pytest.raises(Crash):
            s.import_checkpoint(_changed(tmp_path))
        if point == "refused":  # the process lives on: the old generation is back already
            assert _saved(s, bench) == old and not (tmp_path / "s" / store_module._EVICTED).exists()
            s.close()
        else:
            del s  # the process dies: nothing flushed or closed in order
        gc.collect()  # RocksDB's lock goes with the cycle
    assert evicted == [True] or point == "before the eviction's commit"
    with Store(tmp_path / "s") as s:
        assert not (tmp_path / "s" / store_module._EVICTED).exists()
        assert _saved(s, bench) == (old if survives == "old" else new)
        assert _saved(s, other) == expected_other
        assert [v.number for v in s.versions(bench)] == ([1] if survives == "old" else [1, 2])
        if survives == "new":
            assert _saved(s, bench, 1) == old
        assert s.hidden_graphs() == set()
        live = set(s.graphs())
        assert {g for g in s.oxigraph.named_graphs() if "/graph/" in str(g)} == live
        # Every live graph still has its files, and none are left over.
        assert all(_files.files(s, g) is not None for g in live)
        # (Reading version 1 above loaded the new state's kept version into the archive.)
        assert len(list((tmp_path / "s" / _files.FOLDER).iterdir())) == len(live)


def test_the_endpoint_never_takes_a_generation_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from karenina_rdf.web import EndpointSettings, create_app

    with Store(tmp_path / "s") as s:
        s.import_checkpoint(PHARMA)
        create_app(s, EndpointSettings(query_processes=False))
        evicted = _spy_evict(monkeypatch)
        s.import_checkpoint(_changed(tmp_path))
        assert evicted == [False]


# -- durability of the commit points -------------------------------------------------------------
@pytest.mark.parametrize("commit_point", [store_module._EVICTED, "manifest.json"])
def test_a_commit_point_renamed_into_place_is_synced_with_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, commit_point: str
) -> None:
    """A rename is durable only once its folder is synced: after a power loss the store, cleared
    for a rebuild, is put back from what the marker or the manifest says, so each must be on disk
    before the next step. The folder's sync must follow the rename, not precede it."""
    with Store(tmp_path / "s") as s:
        s.import_checkpoint(PHARMA)
        s.import_checkpoint(MOLBIO)
    monkeypatch.setattr(store_module, "_REBUILD_RATIO", 1000)  # the re-import takes the old one out
    events: list[tuple[str, str]] = []
    real_replace, real_sync = store_module.os.replace, _files.fsync_dir

    def replace(src: Any, dst: Any) -> None:
        real_replace(src, dst)
        events.append(("rename", Path(dst).name))

    def sync(path: Path) -> None:
        real_sync(path)
        events.append(("sync", str(path)))

    monkeypatch.setattr(store_module.os, "replace", replace)
    monkeypatch.setattr(_files, "fsync_dir", sync)
    with Store(tmp_path / "s") as s:
        assert s.import_checkpoint(_changed(tmp_path)).status == "replaced"
    renames = [i for i, e in enumerate(events) if e == ("rename", commit_point)]
    assert renames, f"{commit_point} was never renamed into place: {events}"
    for i in renames:
        assert i + 1 < len(events) and events[i + 1][0] == "sync", (commit_point, events)
