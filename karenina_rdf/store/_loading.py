"""Loading N-Triples into a graph while they are still being written: one sink protocol, two
ways to feed pyoxigraph's bulk loader, both on a second thread so that mapping and loading
overlap (pyoxigraph releases the GIL).

:class:`ChunkSink` writes chunk files of up to ``CHUNK`` lines and bulk-loads each as it is
finished.
:class:`PipeSink` has the mapper write into a named pipe that one ``bulk_load`` reads, which
needs ``os.mkfifo`` (POSIX) and an embedded store. Which is faster depends on the size of the
load (docs/performance.md): a results import of 100,000 rows (10.9 M triples, 44 chunks) took
2.2× longer in chunks than through the pipe, as each chunk ingested into an ever larger store;
a checkpoint of 100,000 questions (2.8 M triples, 11 chunks) took 34.0 s in chunks and 35.1 s
through the pipe, whose single load also held twice the memory (2.1 GB against 1.0 GB). So
results ask for ``one_bulk_load``, checkpoints do not. Both keep small loads (fewer than
``SMALL`` lines) in one transactional ``load`` at the end: one atomic write, no SST files.

Both load into a fresh, unpublished generation graph: a failed load leaves a graph the caller
drops, never a half-published benchmark or run.
"""

from __future__ import annotations

import contextlib
import errno
import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, NoReturn, Protocol

import pyoxigraph as ox

SMALL = 50_000  # below this many lines: one transactional load at the end
CHUNK = 250_000  # lines per chunk file (ChunkSink), from the fourth on


class Sink(Protocol):
    """Where a mapper writes N-Triples text; the triples end up in one graph."""

    lines: int
    # Told how many lines (triples) reached the store each time some did: the progress hook
    # (karenina_rdf._progress), called on the loader's thread.
    on_load: Callable[[int], None]

    def write(self, text: str, /) -> int:
        """Raises ``UnicodeEncodeError`` for text that is not UTF-8 (a lone surrogate) before
        anything of it is loaded, and the loader's own error if it stopped early."""
        ...

    def finish(self, while_loading: Callable[[], None] | None = None) -> None:
        """Load what was written; ``while_loading`` runs while the last of it is being loaded
        (Python work that overlaps the loader's). Raises what the loader raised."""
        ...

    def abort(self) -> None:
        """Stop loading and wait for the loader; the caller drops the graph."""
        ...


def open_sink(store: ox.Store, graph: ox.NamedNode, folder: Path, *, one_bulk_load: bool = False) -> Sink:
    """A sink loading into ``graph`` (``folder`` holds the pipe or the chunk files): one bulk
    load through a named pipe where asked for and the store allows it, chunk files otherwise."""
    if one_bulk_load and hasattr(os, "mkfifo") and isinstance(store, ox.Store):
        return PipeSink(store, graph, folder)
    return ChunkSink(store, graph, folder)


def _nothing(_: int) -> None:
    pass


def _transactional_load(store: ox.Store, graph: ox.NamedNode, text: str) -> None:
    store.load(input=text, format=ox.RdfFormat.N_TRIPLES, to_graph=graph)


def _bulk_load(store: ox.Store, graph: ox.NamedNode, path: Path) -> None:
    # Our own N-Triples (escaped literals, minted IRIs): lenient skips re-validation.
    store.bulk_load(path=str(path), format=ox.RdfFormat.N_TRIPLES, to_graph=graph, lenient=True)


class PipeSink:
    """Text buffered until ``SMALL`` lines, then streamed through a named pipe into one
    ``bulk_load`` running on a second thread."""

    def __init__(self, store: ox.Store, graph: ox.NamedNode, folder: Path) -> None:
        self.store, self.graph = store, graph
        self.fifo = folder / "load.nt"
        self.lines = 0
        self.on_load: Callable[[int], None] = _nothing
        self._buffer: list[str] = []
        self._fh: IO[str] | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def write(self, text: str) -> int:
        n = text.count("\n")  # one line per triple: literals escape their newlines
        self.lines += n
        if self._fh is not None:
            try:
                written = self._fh.write(text)
            except BrokenPipeError:
                self._failed()
            # The pipe holds little: what it took is (about) what the loader has read.
            self.on_load(n)
            return written
        text.encode("utf-8")  # what the pipe would refuse, refused here, row by row
        self._buffer.append(text)
        if self.lines >= SMALL:
            self._open()
        return len(text)

    def _failed(self) -> NoReturn:
        """The loader stopped reading: wait for it and raise its error."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._fh = None  # its buffered rest can never be written; the caller drops the graph
        raise self._error or BrokenPipeError("the loader stopped reading")

    def _open(self) -> None:
        os.mkfifo(self.fifo)
        self._thread = threading.Thread(target=self._load, name="karenina-rdf-pipe-loader", daemon=True)
        self._thread.start()
        # Open without blocking, retrying until the loader has opened its end: a plain open()
        # would wait forever if the loader failed before opening the pipe.
        while True:
            try:
                fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as exc:
                if exc.errno != errno.ENXIO:
                    raise
                if not self._thread.is_alive():
                    self._failed()
                time.sleep(0.001)
        os.set_blocking(fd, True)
        self._fh = open(fd, "w", encoding="utf-8")  # noqa: SIM115 - closed by finish/abort
        pending = "".join(self._buffer)
        self._buffer.clear()
        try:
            self._fh.write(pending)
        except BrokenPipeError:
            self._failed()
        self.on_load(self.lines)

    def _load(self) -> None:
        try:
            _bulk_load(self.store, self.graph, self.fifo)
        except BaseException as exc:  # handed to the writing thread by write() or finish()
            self._error = exc

    def finish(self, while_loading: Callable[[], None] | None = None) -> None:
        if self._fh is None:
            if while_loading is not None:
                while_loading()
            if self._buffer:
                _transactional_load(self.store, self.graph, "".join(self._buffer))
                self._buffer.clear()
                self.on_load(self.lines)
            return
        with contextlib.suppress(BrokenPipeError, ValueError):  # the loader failed: raised below
            self._fh.close()
        self._fh = None
        try:
            if while_loading is not None:
                while_loading()
        finally:
            if self._thread is not None:
                self._thread.join()
                self._thread = None
        if self._error is not None:
            raise self._error

    def abort(self) -> None:
        self._buffer.clear()
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.close()
            self._fh = None
        if self._thread is not None:
            # Stopped while _open was waiting: the loader may still be blocked opening its end,
            # which returns only once a writer opens the pipe. Open and close it, so the loader
            # reads an empty input and ends.
            while self._thread.is_alive():
                try:
                    os.close(os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK))
                    break
                except OSError:  # ENXIO: the loader has not opened its end yet, or is gone
                    self._thread.join(0.001)
            self._thread.join()
            self._thread = None


class ChunkSink:
    """Chunk files of about ``CHUNK`` lines, each bulk-loaded on a second thread when it is
    finished, so loading overlaps with mapping.

    The first chunks are smaller (``SMALL`` lines, then twice as many each time up to ``CHUNK``)
    so that the loader, the longest half of an import, starts as soon as the load is known not
    to be small instead of after ``CHUNK`` lines: at 20k questions (582k lines) it started after
    43 % of the mapping. The bulk loader's work does not grow with the number of chunks at this
    size (docs/performance.md § Issue 20 point 3)."""

    def __init__(self, store: ox.Store, graph: ox.NamedNode, folder: Path) -> None:
        self.store, self.graph, self.folder = store, graph, folder
        self.lines = 0
        self.on_load: Callable[[int], None] = _nothing
        self._sizes: dict[Path, int] = {}  # lines of each chunk file, for on_load
        self.paths: list[Path] = []
        self.submitted: list[Path] = []
        self._fh: IO[str] | None = None
        self._chunk_lines = 0
        self._queue: queue.Queue[Path | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def write(self, text: str) -> int:
        if self._fh is not None and self._chunk_lines >= self._chunk_size():
            self._close_chunk()
            self._submit(self.paths[-1])
        if self._fh is None:
            path = self.folder / f"chunk-{len(self.paths):05d}.nt"
            self.paths.append(path)
            self._fh = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by _close_chunk()
            self._chunk_lines = 0
        n = text.count("\n")  # one line per triple: literals escape their newlines
        self._chunk_lines += n
        self.lines += n
        return self._fh.write(text)

    def _chunk_size(self) -> int:
        """Lines of the chunk being written: SMALL, 2 SMALL, 4 SMALL, … up to CHUNK."""
        return min(CHUNK, SMALL << min(len(self.paths) - 1, 16))

    def _close_chunk(self) -> None:
        if self._fh is not None:
            self._sizes[self.paths[-1]] = self._chunk_lines
            self._fh.close()
            self._fh = None

    def _submit(self, path: Path) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="karenina-rdf-loader", daemon=True)
            self._thread.start()
        self.submitted.append(path)
        self._queue.put(path)

    def _run(self) -> None:
        while (path := self._queue.get()) is not None:
            if self._error is not None:
                continue
            try:
                _bulk_load(self.store, self.graph, path)
                self.on_load(self._sizes.get(path, 0))
            except BaseException as exc:  # handed to the importing thread by finish()
                self._error = exc

    def _join(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def finish(self, while_loading: Callable[[], None] | None = None) -> None:
        self._close_chunk()
        last = self.paths[-1:] if self.paths and self.paths[-1] not in self.submitted else []
        if not self.submitted and self.lines < SMALL:
            if while_loading is not None:
                while_loading()
            for path in last:  # small: one transactional write
                self.store.load(path=str(path), format=ox.RdfFormat.N_TRIPLES, to_graph=self.graph)
                self.on_load(self.lines)
            return
        for path in last:
            self._submit(path)
        try:
            if while_loading is not None:
                while_loading()
        finally:
            self._join()
        if self._error is not None:
            raise self._error

    def abort(self) -> None:
        try:
            with contextlib.suppress(OSError):  # a full disk: the chunk is dropped with the graph
                self._close_chunk()
        finally:
            self._join()
