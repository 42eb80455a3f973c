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
import os
import threading
from pathlib import Path
from typing import IO

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
        if self._fh is not None:
            return self._fh.write(text)
        self._buffer.append(text)
        self._lines += text.count("\n")
        if self._lines >= self.small:
            self._open()
        return len(text)

    def _open(self) -> None:
        os.mkfifo(self.fifo)
        self._thread = threading.Thread(target=self._load, name="karenina-rdf-pipe-loader", daemon=True)
        self._thread.start()
        # Blocks until the loader opens the pipe for reading (or, if it failed first, drains it).
        self._fh = open(self.fifo, "w", encoding="utf-8")  # noqa: SIM115 - closed by finish/abort
        self._fh.write("".join(self._buffer))
        self._buffer.clear()

    def _load(self) -> None:
        try:
            # Our own N-Triples (escaped literals, minted IRIs): lenient skips re-validation.
            self.store.bulk_load(path=str(self.fifo), format=ox.RdfFormat.N_TRIPLES, to_graph=self.graph, lenient=True)
        except BaseException as exc:  # handed to the writing thread by finish()
            self._error = exc
            # If the load failed before opening the pipe, the writer is still waiting in open():
            # open and close the read end so it gets on (and then a broken pipe on its writes).
            try:
                fd = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)
                os.close(fd)
            except OSError:
                pass

    def finish(self) -> None:
        """Load what was written; raises what the loader raised."""
        if self._fh is None:
            if self._buffer:
                self.store.load(input="".join(self._buffer), format=ox.RdfFormat.N_TRIPLES, to_graph=self.graph)
                self._buffer.clear()
            return
        with contextlib.suppress(BrokenPipeError):  # the loader failed: its error is raised below
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
