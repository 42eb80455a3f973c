"""Loading N-Triples into a graph while they are still being written.

pyoxigraph's ``bulk_load`` is fastest as one call over all the data: split into chunk files
(what the checkpoint importer does), a big results import made 44 calls that each ingested into
an ever larger store, and took 2.2× one call's time (docs/performance.md § Results). Here the
mapper writes into a named pipe that a single ``bulk_load`` on a second thread reads: one call,
and mapping and loading still overlap. Small imports never open the pipe; they are loaded in one
transaction at the end. Needs ``os.mkfifo`` (POSIX) and an embedded store; elsewhere the caller
uses chunk files.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from pathlib import Path
from typing import IO, NoReturn

import pyoxigraph as ox


def pipes_available(store: object) -> bool:
    return hasattr(os, "mkfifo") and isinstance(store, ox.Store)


class PipeLoader:
    """A text sink whose N-Triples end up in ``graph``; call :meth:`finish` (or :meth:`abort`)."""

    def __init__(self, store: ox.Store, graph: ox.NamedNode, folder: Path, small: int) -> None:
        self.store, self.graph, self.small = store, graph, small
        self.fifo = folder / "load.nt"
        self._buffer: list[str] = []
        self._lines = 0
        self._fh: IO[str] | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def write(self, text: str) -> int:
        """Raises ``UnicodeEncodeError`` for text that is not UTF-8 (a lone surrogate) before
        anything of it is loaded, and the loader's own error if it stopped reading."""
        if self._fh is not None:
            try:
                return self._fh.write(text)
            except BrokenPipeError:
                self._failed()
        text.encode("utf-8")  # what the pipe would refuse, refused here, row by row
        self._buffer.append(text)
        self._lines += text.count("\n")
        if self._lines >= self.small:
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
        self.write(pending)

    def _load(self) -> None:
        try:
            # Our own N-Triples (escaped literals, minted IRIs): lenient skips re-validation.
            self.store.bulk_load(path=str(self.fifo), format=ox.RdfFormat.N_TRIPLES, to_graph=self.graph, lenient=True)
        except BaseException as exc:  # handed to the writing thread by write() or finish()
            self._error = exc

    def finish(self) -> None:
        """Load what was written; raises what the loader raised."""
        if self._fh is None:
            if self._buffer:
                self.store.load(input="".join(self._buffer), format=ox.RdfFormat.N_TRIPLES, to_graph=self.graph)
                self._buffer.clear()
            return
        with contextlib.suppress(BrokenPipeError, ValueError):  # the loader failed: raised below
            self._fh.close()
        self._fh = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            raise self._error

    def abort(self) -> None:
        """Stop: close the pipe (the loader sees its end) and wait; the caller drops the graph."""
        self._buffer.clear()
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.close()
            self._fh = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None
