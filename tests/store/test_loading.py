"""The loader's failure paths: whatever stops a load midway, the store is left as it was (no
generation graph, no pending marker) and no loader thread is left waiting."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

from karenina_rdf import Store
from karenina_rdf.store import _loading, _store
from tests.conftest import EXAMPLES


def _loader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("karenina-rdf") and t.is_alive()]


def _untouched(store: Store, before: set[Any]) -> None:
    assert store.catalog.pending() == []
    assert set(store.oxigraph.named_graphs()) == before
    assert _loader_threads() == []


@pytest.fixture
def small_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    # Small enough that the examples go through the background loader.
    monkeypatch.setattr(_loading, "CHUNK", 40)
    monkeypatch.setattr(_loading, "SMALL", 10)


def test_a_chunk_that_cannot_be_closed_while_aborting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_loads: None
) -> None:
    # The mapping fails, then closing the open chunk fails too (a full disk): the loader thread
    # still stops, and the graph and its marker still go.
    from karenina_rdf.checkpoint import _map

    store = Store(tmp_path / "s")
    before = set(store.oxigraph.named_graphs())
    real_map = _map.map_checkpoint

    def map_then_fail(*args: Any, **kwargs: Any) -> Any:
        real_map(*args, **kwargs)
        raise RuntimeError("mapping failed")

    def close_fails(self: _loading.ChunkSink) -> None:
        if self._fh is not None:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_loading.ChunkSink, "_close_chunk", close_fails)
    monkeypatch.setattr("karenina_rdf._importing.map_checkpoint", map_then_fail)
    with pytest.raises(RuntimeError, match="mapping failed"):
        store.import_checkpoint(EXAMPLES / "molecular-biology.jsonld")
    _untouched(store, before)
    store.close()


def test_stopped_while_the_pipe_opens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_loads: None) -> None:
    # Ctrl-C while the writer waits for the loader to open its end of the pipe: aborting must not
    # wait forever for a loader blocked in its own open().
    store = Store(tmp_path / "s")
    graph = ox.NamedNode("http://example.org/g")
    folder = tmp_path / "work"
    folder.mkdir()
    sink = _loading.PipeSink(store.oxigraph, graph, folder)
    real_open = os.open
    calls = {"n": 0}

    def interrupted_open(path: Any, flags: int, *args: Any) -> int:
        if str(path) == str(sink.fifo) and flags & os.O_WRONLY and calls["n"] == 0:
            calls["n"] += 1
            raise KeyboardInterrupt
        return real_open(path, flags, *args)

    monkeypatch.setattr(_loading.os, "open", interrupted_open)
    with pytest.raises(KeyboardInterrupt):
        for _ in range(20):
            sink.write("<http://example.org/s> <http://example.org/p> <http://example.org/o> .\n")
    done = threading.Thread(target=sink.abort, daemon=True)
    done.start()
    done.join(30)
    assert not done.is_alive(), "abort() is still waiting for the loader"
    assert _loader_threads() == []
    assert list(store.oxigraph.quads_for_pattern(None, None, None, graph)) == []  # the caller drops it anyway
    store.close()


def test_a_generation_left_without_finishing_stops_its_loader(tmp_path: Path, small_loads: None) -> None:
    store = Store(tmp_path / "s")
    with store.generation("http://example.org/b") as gen:
        for i in range(100):  # past SMALL and CHUNK: loads are under way
            gen.sink.write(f"<http://example.org/s{i}> <http://example.org/p> <http://example.org/o> .\n")
    assert _loader_threads() == []
    store.close()


@pytest.mark.parametrize("one_bulk_load", [False, True], ids=["chunk files", "named pipe"])
def test_the_sink_a_store_opens(tmp_path: Path, one_bulk_load: bool) -> None:
    store = Store(tmp_path / "s")
    sink = _store.open_sink(store.oxigraph, ox.NamedNode("http://example.org/g"), tmp_path, one_bulk_load=one_bulk_load)
    assert type(sink) is (_loading.PipeSink if one_bulk_load else _loading.ChunkSink)
    store.close()


def test_folders_a_killed_load_left_are_removed_when_the_store_opens(tmp_path: Path) -> None:
    # What `kill -9` during an import leaves: the load's temporary folder with its chunk files.
    folder = tmp_path / "s"
    Store(folder).close()
    left = folder / ".import-abc123"
    left.mkdir()
    (left / "chunk-00000.nt").write_text("<http://example.org/s> <http://example.org/p> <http://example.org/o> .\n")
    keep = folder / "cache"  # what the store keeps beside its data stays
    keep.mkdir(exist_ok=True)
    store = Store(folder)
    assert not left.exists() and keep.is_dir()
    store.close()


@pytest.mark.parametrize(
    ("small", "chunk", "lines", "expected"),
    [
        # The first chunk is SMALL lines, each next one twice the last, up to CHUNK: the loader
        # starts once the load is known not to be small.
        (10, 40, 135, [10, 20, 40, 40, 25]),
        (10, 25, 60, [10, 20, 25, 5]),
        (10, 40, 10, [10]),
        (10, 40, 9, [9]),  # small: one transactional load, nothing on the loader thread
    ],
)
def test_chunk_sizes_grow_to_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small: int, chunk: int, lines: int, expected: list[int]
) -> None:
    monkeypatch.setattr(_loading, "CHUNK", chunk)
    monkeypatch.setattr(_loading, "SMALL", small)
    store = ox.Store()
    graph = ox.NamedNode("http://example.org/g")
    sink = _loading.ChunkSink(store, graph, tmp_path)
    sizes: list[int] = []
    real_close = _loading.ChunkSink._close_chunk

    def counted_close(self: _loading.ChunkSink) -> None:
        if self._fh is not None:
            sizes.append(self._chunk_lines)
        real_close(self)

    monkeypatch.setattr(_loading.ChunkSink, "_close_chunk", counted_close)
    for i in range(lines):
        sink.write(f"<http://example.org/s{i}> <http://example.org/p> <http://example.org/o> .\n")
    sink.finish()
    assert sizes == expected
    assert len(store) == lines
    assert _loader_threads() == []
