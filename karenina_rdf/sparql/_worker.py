"""The other end of a query worker process (``_pool`` is the parent's side).

Run in a fresh interpreter (``python -I``, never a fork of the server) that loads this module and
``_isolation`` by path and nothing else of karenina-rdf: it needs pyoxigraph, the standard
library, and tantivy through ``_fulltext`` (the text functions' ranked index). Before it reads a
request it puts itself under the seccomp filter that refuses IPv4/IPv6 sockets (``_isolation``),
so no query can reach the network from here.

It opens the store snapshot a request names read-only (a RocksDB checkpoint no process writes:
pyoxigraph's ``Store.read_only`` is undefined while another process writes), evaluates the query,
serializes the result in the format the parent chose and sends it back. Requests and replies are
frames on stdin/stdout: two big-endian 32-bit lengths (JSON header, body), then the header and the
body; nothing is pickled. The worker stops the serialization itself past the result-size limit or
the deadline; everything else (the time limit, memory, heavy-query slots) the parent enforces by
killing the process.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import struct
import sys
import threading
import time
from typing import IO, Any, cast

import pyoxigraph as ox

from . import _fulltext

FRAME = struct.Struct("!II")
MAX_REQUEST_BYTES = 64 * 1024 * 1024

# The output formats by name, for the whole sparql room (``_named`` imports them from here: this
# module is loaded alone in a worker and can import nothing of karenina_rdf).
RESULT_FORMATS = {
    "json": ox.QueryResultsFormat.JSON,
    "xml": ox.QueryResultsFormat.XML,
    "csv": ox.QueryResultsFormat.CSV,
    "tsv": ox.QueryResultsFormat.TSV,
}
GRAPH_FORMATS = {
    "turtle": ox.RdfFormat.TURTLE,
    "ntriples": ox.RdfFormat.N_TRIPLES,
    "jsonld": ox.RdfFormat.JSON_LD,
    "rdfxml": ox.RdfFormat.RDF_XML,
}


class Refused(Exception):
    def __init__(self, status: int, message: str, log: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.log = status, message, log


class ResultSink:
    """Collects a serialization; past the byte limit or the deadline it stops the writer with
    :class:`Refused` (the endpoint's threads turn that into their ``ProtocolError``)."""

    def __init__(self, limit: int, deadline: float, timeout: float) -> None:
        self.parts: list[bytes] = []
        self.size, self.limit, self.deadline, self.timeout = 0, limit, deadline, timeout

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.size > self.limit:
            raise Refused(400, f"the result is larger than the endpoint's limit of {self.limit:,} bytes; add a LIMIT")
        if time.monotonic() > self.deadline:
            raise Refused(503, f"the query ran longer than the endpoint's time limit of {self.timeout:g} s")
        self.parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass


def term(text: str) -> Any:
    """A graph name as the parent encoded it: ``<iri>``, ``_:id``, or ``""`` for the default graph."""
    if text == "":
        return ox.DefaultGraph()
    if text.startswith("_:"):
        return ox.BlankNode(text[2:])
    return ox.NamedNode(text[1:-1])


def dataset_kwargs(dataset: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if dataset.get("union"):
        out["use_default_graph_as_union"] = True
    if "default" in dataset:
        out["default_graph"] = [term(t) for t in dataset["default"]]
    if "named" in dataset:
        out["named_graphs"] = [term(t) for t in dataset["named"]]
    return out


class Worker:
    def __init__(self) -> None:
        self.store: Any = None
        self.snapshot: str | None = None
        self.text_indexes: dict[str, _fulltext.TextIndex] = {}

    def text_functions(self, spec: dict[str, Any] | None) -> dict[Any, Any] | None:
        """``karenina:textScore`` / ``textMatch`` on the store's full-text index, opened
        read-only, when the parent says the query calls them (and has brought it in step)."""
        if not spec:
            return None
        path = spec["path"]
        if path not in self.text_indexes:
            self.text_indexes[path] = _fulltext.TextIndex(path, read_only=True)
        return _fulltext.sparql_functions(self.text_indexes[path], spec["score"], spec["match"])

    def open(self, snapshot: str) -> None:
        if snapshot != self.snapshot:
            self.store = None  # closes the old snapshot before the parent may delete it
            self.snapshot = None
            self.store = ox.Store.read_only(snapshot)
            self.snapshot = snapshot

    def handle(self, request: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        received = time.monotonic()
        if request.get("snapshot") is None:
            self.store, self.snapshot = None, None
            return {"status": 204}, b""
        try:
            self.open(request["snapshot"])
        except OSError as exc:
            raise Refused(
                503, "the query could not open the store's snapshot", f"opening the snapshot: {exc}"
            ) from None
        if request.get("query") is None:
            return {"status": 204}, b""
        results: Any = None
        try:
            try:
                results = self.store.query(
                    request["query"],
                    base_iri=request.get("base"),
                    prefixes=request.get("prefixes") or None,
                    custom_functions=self.text_functions(request.get("text")),
                    **dataset_kwargs(request.get("dataset") or {}),
                )
            except SyntaxError as exc:
                raise Refused(400, f"SPARQL syntax error: {exc}") from None
            except (OSError, RuntimeError) as exc:
                raise Refused(
                    502, "the query failed (a SERVICE call or the store failed)", f"query failed: {exc}"
                ) from None
            graph = isinstance(results, ox.QueryTriples)
            name = request["graphs" if graph else "results"]
            if not isinstance(name, str):  # the parent's 406 for this kind of result
                status, message = name
                raise Refused(status, message)
            sink = ResultSink(request["max_bytes"], received + request["seconds"], request["timeout"])
            try:
                if graph:
                    pre = dict(request.get("prefixes") or {}) if name in ("turtle", "rdfxml") else None
                    ox.serialize(results, cast(IO[bytes], sink), GRAPH_FORMATS[name], prefixes=pre)
                else:
                    results.serialize(cast(IO[bytes], sink), RESULT_FORMATS[name])
            except (OSError, RuntimeError) as exc:
                raise Refused(
                    502,
                    "the query failed while it ran (a SERVICE call or the store failed)",
                    f"query failed while it ran: {exc}",
                ) from None
            return {"status": 200, "format": name}, b"".join(sink.parts)
        finally:
            results = None


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def send(fd: int, header: dict[str, Any], body: bytes = b"") -> None:
    head = json.dumps(header).encode()
    _write_all(fd, FRAME.pack(len(head), len(body)) + head + body)


def _orphan_watch(parent: int) -> None:
    # The parent kills its workers; if it dies first (kill -9), the pipes close, but a worker
    # busy in an evaluation would not read them: it checks who its parent is instead.
    while True:
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(0.5)


def main(parent: int, memory_limit: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a terminal is the server's to handle
    requests, replies = os.dup(0), os.dup(1)
    # Anything printed goes to stderr, never into the replies.
    os.dup2(2, 1)
    sys.stdin = open(os.devnull)  # noqa: SIM115
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_limit > 0:
        # A backstop only: the parent watches the resident size and kills far below this.
        address_space = memory_limit * 2 + (1 << 30)
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    from . import _isolation

    try:
        blocked = _isolation.block_network_here()
    except OSError as exc:
        send(replies, {"status": 0, "ready": False, "why": f"the seccomp filter was refused: {exc}"})
        return
    threading.Thread(target=_orphan_watch, args=(parent,), daemon=True).start()
    send(replies, {"status": 0, "ready": True, "network_blocked": blocked})
    worker = Worker()
    while True:
        head = _read_exact(requests, FRAME.size)
        if head is None:
            return
        header_size, body_size = FRAME.unpack(head)
        if header_size + body_size > MAX_REQUEST_BYTES:
            return
        raw = _read_exact(requests, header_size + body_size)
        if raw is None:
            return
        try:
            reply, body = worker.handle(json.loads(raw[:header_size]))
        except Refused as exc:
            reply, body = {"status": exc.status, "message": exc.message, "log": exc.log}, b""
        except Exception as exc:  # reported to the parent, which logs it
            reply, body = {"status": 500, "message": "internal error", "log": f"{type(exc).__name__}: {exc}"}, b""
        send(replies, reply, body)
