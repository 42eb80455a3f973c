"""Query worker processes: every query from a client of an on-disk store runs in one, so that a
query past its time or memory limit can be stopped (pyoxigraph has no cancellation: only a
process can be). ``_worker`` is the code on the other end.

The parent (the server) is the store's only writer. After every change it makes a RocksDB
checkpoint of the store (hard links: cheap) and :meth:`QueryPool.publish` es it with the dataset
queries see in it; workers open the newest snapshot read-only and the old ones are deleted once
no worker has them open.

The thread that runs a query watches its worker while it waits for the reply, every
``POLL_SECONDS``: past the deadline, or past ``memory_limit`` bytes resident, the worker is killed
(SIGKILL; it is gone, and its CPU with it, before the client reads its 503) and a new one starts
on demand. A query that has run ``heavy_after`` seconds is heavy and must take one of
``heavy_slots`` tokens; when none is free it is killed with a 503 that says so. The pool has
``heavy_slots + reserve`` workers, so a cheap query finds one within about ``heavy_after``
seconds however many heavy ones are running.

:meth:`QueryPool.run_async` does the same on the server's event loop, without a thread: the
reply pipe is watched by the loop and the checks are timers. It takes a query only when a worker
is idle and the request fits the pipe (otherwise the caller runs :meth:`QueryPool.run` on a
thread, which may wait for one or start one); if the worker is gone when the query's turn at the
gate comes, the query goes on on a thread of its own with its place, and is never handed back
to wait at the gate twice. The limits and the answers are the same.

At most ``running`` queries (default: the cores, two at least) are in their first ``release_after``
seconds at once; the others wait their turn (first come, first served, from threads and the loop
alike) until one ends or has run that long. Running more short queries than there are cores at
once only time-slices them, and across more processes: eight queries at once on ten workers cost
the workers about 0.4 ms of CPU more per query than the same queries two or three at a time on
the same warm workers (caches and TLBs of eight address spaces; docs/performance.md, "Worker cost per
request"). A query past ``release_after`` lets the next one in, so a long one holds up the others
for that long at most. A query that has to start a worker gives its place up as it starts it (an
interpreter's start, longer than ``release_after``: the others may find idle workers meanwhile).
:meth:`QueryPool.close` answers those waiting at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, Unpack

from ._worker import FRAME

log = logging.getLogger("karenina_rdf.endpoint")

POLL_SECONDS = 0.02
# A request frame the event loop writes itself (run_async); larger ones go by a thread. Below the
# 64 KiB a pipe holds, so the write into an idle worker's empty pipe cannot block.
ASYNC_REQUEST_BYTES = 32 * 1024
START_TIMEOUT = 60.0
PAGE = os.sysconf("SC_PAGE_SIZE")
HERE = os.path.dirname(os.path.abspath(__file__))
_BOOTSTRAP = (
    "import sys, types, importlib\n"
    "package = types.ModuleType('_karenina_query')\n"
    "package.__path__ = [sys.argv[1]]\n"
    "sys.modules['_karenina_query'] = package\n"
    "importlib.import_module('_karenina_query._worker').main(int(sys.argv[2]), int(sys.argv[3]))\n"
)


class QueryFailed(Exception):
    """A query the endpoint answers with ``status`` and ``message`` (the protocol turns it into
    a ``ProtocolError``)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def mebibytes(size: int) -> str:
    return f"{size / (1 << 20):,.0f} MiB"


@dataclass
class _Snapshot:
    path: str
    dataset: dict[str, Any]
    holders: int = 0


# glibc's per-thread cache of freed small chunks (at most 1,032 bytes each) kept at 2,000 a size
# instead of 7: the engine frees and allocates many of the same sizes a query, and the light mix
# cost the workers 0.02-0.11 ms (about 5 %) less a query with it, in 4 rounds of 4 through a pool
# (benchmarks/bench_worker_variants.py; within the noise of the whole server: docs/performance.md,
# "Worker start-up variants"). It can hold about 65 MiB more a thread at worst (2-7 MiB more was
# seen), inside the worker's memory limit, which is unchanged.
_WORKER_TUNABLES = "glibc.malloc.tcache_count=2000"


def worker_tunables(environ: Mapping[str, str]) -> str:
    """``GLIBC_TUNABLES`` for a worker: ours first, the operator's own after (the later wins)."""
    own = environ.get("GLIBC_TUNABLES")
    return f"{_WORKER_TUNABLES}:{own}" if own else _WORKER_TUNABLES


class _Process:
    """One worker process and its pipes."""

    def __init__(self, memory_limit: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _BOOTSTRAP, HERE, str(os.getpid()), str(memory_limit)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
            cwd="/",
            # An engine panic prints its message to the server's log, not 50 lines of backtrace.
            env={**os.environ, "RUST_BACKTRACE": "0", "GLIBC_TUNABLES": worker_tunables(os.environ)},
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.requests, self.replies = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self.replies, False)
        # poll, not select: a busy server's descriptors pass select's limit of 1024.
        self.poller = select.poll()
        self.poller.register(self.replies, select.POLLIN | select.POLLHUP | select.POLLERR)
        self.statm = os.open(f"/proc/{self.proc.pid}/statm", os.O_RDONLY)
        self.snapshot: _Snapshot | None = None
        self.buffer = bytearray()
        self.dead = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def resident(self) -> int:
        try:
            return int(os.pread(self.statm, 64, 0).split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            return 0

    def send(self, header: Mapping[str, Any]) -> None:
        self.write(self.frame(header))

    @staticmethod
    def frame(header: Mapping[str, Any]) -> bytes:
        head = json.dumps(header).encode()
        return FRAME.pack(len(head), 0) + head

    def write(self, frame: bytes) -> None:
        data = memoryview(frame)
        while data:
            data = data[os.write(self.requests, data) :]

    def receive(self, wait: float) -> tuple[dict[str, Any], bytes] | None:
        """A whole reply if one came within ``wait`` seconds (None if not yet); ``EOFError``
        if the worker is gone."""
        if self.poller.poll(max(0, int(wait * 1000 + 0.999))):
            return self.drain()
        return self.reply()

    def drain(self) -> tuple[dict[str, Any], bytes] | None:
        """What the pipe holds now, read without waiting: a whole reply, or None; ``EOFError``
        if the worker is gone."""
        while True:
            try:
                chunk = os.read(self.replies, 1 << 16)  # a pipe holds 64 KiB: no bigger buffer
            except BlockingIOError:
                break
            if not chunk:
                raise EOFError
            self.buffer += chunk
        return self.reply()

    def reply(self) -> tuple[dict[str, Any], bytes] | None:
        if len(self.buffer) < FRAME.size:
            return None
        head_size, body_size = FRAME.unpack_from(self.buffer)
        end = FRAME.size + head_size + body_size
        if len(self.buffer) < end:
            return None
        header = json.loads(bytes(self.buffer[FRAME.size : FRAME.size + head_size]))
        body = bytes(self.buffer[FRAME.size + head_size : end])
        del self.buffer[:end]
        return header, body

    def kill(self) -> None:
        if self.dead:
            return
        self.dead = True
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                stream.close()  # type: ignore[union-attr]
        with contextlib.suppress(OSError):
            os.close(self.statm)


class QueryParams(TypedDict):
    """What :meth:`QueryPool.run` and :meth:`QueryPool.run_async` take besides the query text,
    defined once so that the two cannot drift apart."""

    base: str | None
    prefixes: Mapping[str, str]
    dataset: Mapping[str, Any] | None  # Store.query's dataset arguments; None: the snapshot's own
    results_format: str | tuple[int, str]  # a format name, or the (status, message) to answer
    graphs_format: str | tuple[int, str]
    max_bytes: int
    deadline: float  # time.monotonic() past which the query is stopped with a 503
    timeout: float  # the limit the 503 names


_WAITING, _GRANTED, _GONE = 0, 1, 2


class _Ticket:
    """A query waiting at the gate: woken by an event (a thread) or a future (the event loop)."""

    __slots__ = ("event", "future", "loop", "state")

    def __init__(
        self,
        event: threading.Event | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        future: asyncio.Future[None] | None = None,
    ) -> None:
        self.state = _WAITING
        self.event, self.loop, self.future = event, loop, future

    def wake(self) -> bool:
        if self.event is not None:
            self.event.set()
            return True
        assert self.loop is not None and self.future is not None
        if asyncio._get_running_loop() is self.loop:
            _resolve(self.future)  # on its own loop (a query there ended): no wake-up through its pipe
            return True
        try:
            self.loop.call_soon_threadsafe(_resolve, self.future)
        except RuntimeError:  # its loop is closed: no one is waiting any more
            return False
        return True


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _Gate:
    """At most ``limit`` queries admitted at once; the others wait in the order they came
    (see the module's doc)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.admitted = 0
        self.waiting: deque[_Ticket] = deque()
        self.lock = threading.Lock()
        self.closed = False

    def _enter_now(self) -> bool:
        # with self.lock held; behind those already waiting, never before them
        if self.closed:
            raise QueryFailed(503, _SHUTTING_DOWN)
        if self.admitted < self.limit and not self.waiting:
            self.admitted += 1
            return True
        return False

    def try_enter(self) -> bool:
        """Admitted at once (True), or not now (False: nothing held, nothing queued)."""
        with self.lock:
            return self._enter_now()

    def enter(self, deadline: float) -> bool:
        """Admitted (True), or the deadline came first (False); :class:`QueryFailed` once the
        gate is closed. Blocking: a thread's."""
        with self.lock:
            if self._enter_now():
                return True
            ticket = _Ticket(event=threading.Event())
            self.waiting.append(ticket)
        assert ticket.event is not None
        ticket.event.wait(max(0.0, deadline - time.monotonic()))
        return self._outcome(ticket)

    async def enter_async(self, deadline: float) -> bool:
        """:meth:`enter` on the event loop."""
        with self.lock:
            if self._enter_now():
                return True
            loop = asyncio.get_running_loop()
            ticket = _Ticket(loop=loop, future=loop.create_future())
            self.waiting.append(ticket)
        assert ticket.future is not None
        timer = loop.call_later(max(0.0, deadline - time.monotonic()), _resolve, ticket.future)
        try:
            await ticket.future
        except BaseException:
            # Cancelled, or dropped unfinished (GeneratorExit: its loop was closed before it ran
            # again, maybe with the wake-up of a place granted to it still queued there): a
            # place granted meanwhile goes to the next, and a ticket still queued leaves the queue.
            if self._settle(ticket):
                self.leave()
            raise
        finally:
            timer.cancel()
        return self._outcome(ticket)

    def _settle(self, ticket: _Ticket) -> bool:
        with self.lock:
            if ticket.state == _GRANTED:
                return True
            ticket.state = _GONE  # leave() skips it from now on
            with contextlib.suppress(ValueError):
                self.waiting.remove(ticket)
            return False

    def _outcome(self, ticket: _Ticket) -> bool:
        if self._settle(ticket):
            return True
        if self.closed:
            raise QueryFailed(503, _SHUTTING_DOWN)
        return False

    def close(self) -> None:
        """Refuse every query from now on, those waiting at once (a 503 that says so, not their
        deadline's)."""
        with self.lock:
            self.closed = True
            waiting, self.waiting = self.waiting, deque()
            for ticket in waiting:
                if ticket.state == _WAITING:
                    ticket.state = _GONE
                    ticket.wake()

    def leave(self) -> None:
        with self.lock:
            self.admitted -= 1
            while self.waiting and self.admitted < self.limit:
                ticket = self.waiting.popleft()
                if ticket.state != _WAITING:
                    continue
                ticket.state = _GRANTED
                self.admitted += 1
                if not ticket.wake():
                    ticket.state = _GONE
                    self.admitted -= 1


class _Admission:
    """One query's place at the gate, given back once: when it ends or has run long enough."""

    __slots__ = ("gate", "held")

    def __init__(self, gate: _Gate) -> None:
        self.gate, self.held = gate, True

    def release(self) -> None:
        if self.held:
            self.held = False
            self.gate.leave()


def default_running() -> int:
    """The cores this process may run on, two at least (one query runs while the reply of
    another is read). On 2 cores, 2 at once cost the workers 1.71-1.72 ms a query of the light
    mix, 3 at once 1.82-2.00, 8 at once 1.93-2.07 (docs/performance.md)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(2, cores)


@dataclass
class QueryPool:
    """Worker processes for the queries of one on-disk store (see the module's doc)."""

    heavy_slots: int = 8
    reserve: int = 2
    memory_limit: int = 1 << 30  # bytes resident per worker; 0: no limit
    heavy_after: float = 1.0  # seconds after which a query counts as heavy
    running: int = 0  # queries in their first release_after seconds at once; 0: default_running()
    release_after: float = 0.05
    _idle: list[_Process] = field(default_factory=list)
    _count: int = 0  # processes alive or starting
    _closed: bool = False

    def __post_init__(self) -> None:
        self.size = self.heavy_slots + self.reserve
        self._lock = threading.Condition()
        self._heavy = threading.BoundedSemaphore(self.heavy_slots)
        self._gate = _Gate(self.running or default_running())
        self._current: _Snapshot | None = None
        self._snapshots: dict[str, _Snapshot] = {}
        self._refreshing = False
        # An app dropped without its shutdown (a test's TestClient without ``with``) still ends
        # its idle workers and deletes its snapshots.
        weakref.finalize(self, _abandon, self._idle, self._snapshots)

    # -- snapshots ---------------------------------------------------------------------------
    def publish(self, path: str | Path, dataset: Mapping[str, Any]) -> None:
        """``path`` (a checkpoint of the store no one writes) is what queries read from now on,
        with ``dataset`` (``Store.query`` keyword arguments) as their default dataset. Old
        snapshots go once no worker has them open; idle workers move to the new one."""
        snap = _Snapshot(str(path), encode_dataset(dataset))
        with self._lock:
            old, self._current = self._current, snap
            self._snapshots[snap.path] = snap
            if old is not None:
                self._release_if_unused(old)
        self._kick_refresh()

    def _kick_refresh(self) -> None:
        with self._lock:
            refresh = not self._refreshing and bool(self._idle) and self._current is not None
            self._refreshing = self._refreshing or refresh
        if refresh:
            threading.Thread(target=self._refresh, name="karenina-rdf-snapshot-refresh", daemon=True).start()

    def _release_if_unused(self, snap: _Snapshot) -> None:
        # with self._lock held
        if snap is not self._current and snap.holders == 0 and self._snapshots.pop(snap.path, None) is not None:
            shutil.rmtree(snap.path, ignore_errors=True)

    def _hold(self, worker: _Process, snap: _Snapshot | None) -> None:
        # with self._lock held
        old, worker.snapshot = worker.snapshot, snap
        if snap is not None:
            snap.holders += 1
        if old is not None:
            old.holders -= 1
            self._release_if_unused(old)

    def _refresh(self) -> None:
        """Move idle workers to the current snapshot (so that the old ones can go, and the next
        query does not pay the opening), one at a time, so queries still find idle workers."""
        # A worker that fails to open it is killed, so each round ends with one stale worker less.
        # The flag drops under the same lock that finds nothing left: a publish meanwhile either
        # is seen here or starts a new refresh.
        while True:
            with self._lock:
                current = self._current
                stale = [w for w in self._idle if w.snapshot is not current]
                if self._closed or current is None or not stale:
                    self._refreshing = False
                    return
                worker = stale[-1]
                self._idle.remove(worker)
            ok = False
            try:
                worker.send({"snapshot": current.path})
                reply = self._wait_plain(worker, time.monotonic() + 10)
                ok = reply is not None and reply[0].get("status") == 204
            except (OSError, EOFError, ValueError):
                ok = False
            except BaseException:
                with self._lock:
                    self._refreshing = False
                self._checkin(worker, None, alive=False)
                raise
            self._checkin(worker, current if ok else None, alive=ok)

    def _wait_plain(self, worker: _Process, deadline: float) -> tuple[dict[str, Any], bytes] | None:
        while time.monotonic() < deadline:
            reply = worker.receive(min(POLL_SECONDS * 5, deadline - time.monotonic()))
            if reply is not None:
                return reply
        return None

    # -- workers -----------------------------------------------------------------------------
    def start(self, count: int | None = None) -> None:
        """Start ``count`` workers (default: the reserve) on the side, so the first queries do
        not wait for an interpreter to start."""
        n = self.reserve if count is None else count

        def spawn() -> None:
            for _ in range(n):
                with self._lock:
                    if self._closed or self._count >= self.size:
                        return
                    self._count += 1
                try:
                    worker = self._spawn()
                except QueryFailed:
                    with self._lock:
                        self._count -= 1
                        self._lock.notify()
                    return
                self._checkin(worker, None, alive=True)
            self._kick_refresh()  # open the current snapshot before the first query needs it

        threading.Thread(target=spawn, name="karenina-rdf-query-workers", daemon=True).start()

    def _spawn(self) -> _Process:
        try:
            worker = _Process(self.memory_limit)
        except OSError as exc:
            log.error("cannot start a query worker: %s", exc)
            raise QueryFailed(503, "the endpoint could not start a query worker") from None
        try:
            reply = self._wait_plain(worker, time.monotonic() + START_TIMEOUT)
        except (EOFError, ValueError):
            reply = None
        if reply is None or not reply[0].get("ready"):
            why = reply[0].get("why") if reply else "it did not start"
            log.error("a query worker failed to start: %s", why)
            worker.kill()
            raise QueryFailed(503, "the endpoint could not start a query worker")
        if not reply[0].get("network_blocked"):
            log.warning("query workers cannot be put under the seccomp filter here: queries keep the network")
        return worker

    def _checkout(self, deadline: float, timeout: float, admission: _Admission) -> _Process:
        with self._lock:
            while True:
                if self._closed:
                    raise QueryFailed(503, _SHUTTING_DOWN)
                if self._idle:
                    return self._idle.pop()
                if self._count < self.size:
                    self._count += 1
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise QueryFailed(503, _timed_out(timeout))
                self._lock.wait(left)
        # Starting a worker takes an interpreter's start at least (up to START_TIMEOUT): the place
        # at the gate goes to the next query meanwhile, which may find an idle worker, and is not
        # taken again. This query has waited longer than release_after by then, as one that has
        # run that long (and a worker is started only when none is idle: after a kill, at the
        # start). Waiting at the gate again would hold the new worker out of the pool meanwhile.
        admission.release()
        try:
            return self._spawn()
        except BaseException:
            with self._lock:
                self._count -= 1
                self._lock.notify()
            raise

    def _checkin(self, worker: _Process, snap: _Snapshot | None, *, alive: bool) -> None:
        """Back to the idle workers, holding ``snap``; or ended (dead, or the pool closed), holding
        nothing, so that its snapshot can go."""
        if not alive:
            worker.kill()
        with self._lock:
            keep = alive and not self._closed
            if not keep:
                worker.kill()
            self._hold(worker, snap if keep else None)
            if keep:
                self._idle.append(worker)
            else:
                self._count -= 1
            self._lock.notify()

    # -- queries -----------------------------------------------------------------------------
    def run(
        self, text: str, *, text_index: Mapping[str, Any] | None = None, **params: Unpack[QueryParams]
    ) -> tuple[bytes, str]:
        """Evaluate ``text`` on the current snapshot in a worker and return the serialized result
        and its format name (``params``: see :class:`QueryParams`). ``text_index``: where the
        full-text index is and its functions' IRIs, for a query calling them. Raises
        :class:`QueryFailed`."""
        if not self._gate.enter(params["deadline"]):
            raise QueryFailed(503, _timed_out(params["timeout"]))
        return self._run_admitted(text, params, text_index, _Admission(self._gate))

    def _run_admitted(
        self, text: str, params: QueryParams, text_index: Mapping[str, Any] | None, admission: _Admission
    ) -> tuple[bytes, str]:
        """:meth:`run` past the gate, with the place ``admission`` holds (given back here)."""
        deadline, timeout = params["deadline"], params["timeout"]
        try:
            worker = self._checkout(deadline, timeout, admission)
            with self._lock:
                snap = self._current
            if snap is None:
                self._checkin(worker, worker.snapshot, alive=True)
                raise QueryFailed(503, "the endpoint has no snapshot of its store yet")
            request = _request(snap, text, params, text_index)
            alive = False
            try:
                # The worker holds the snapshot from the request on (it may open it).
                with self._lock:
                    self._hold(worker, snap)
                worker.send(request)
                header, body = self._watch(worker, deadline, timeout, admission)
                alive = True
            except (EOFError, OSError) as exc:
                raise _ended(worker, exc) from None
            finally:
                self._checkin(worker, snap, alive=alive)
        finally:
            admission.release()
        return _answer(header, body)

    async def run_async(self, text: str, **params: Unpack[QueryParams]) -> tuple[bytes, str] | None:
        """:meth:`run` on the running event loop, with no thread: None (and nothing done) when no
        worker is idle or the request is too large for the pipe at once; then call :meth:`run`
        on a thread. The worker is watched as :meth:`run` watches it: the reply pipe by the loop,
        the deadline, the memory and the heavy-query slot by timers. A query waits its turn at the
        gate on the loop too, once: if the idle worker is gone when its turn comes, it goes on
        on a thread of its own with its place (never back to the caller, to wait again at the
        back of the queue and against the same deadline)."""
        deadline, timeout = params["deadline"], params["timeout"]
        with self._lock:
            snap = self._current
            if self._closed or snap is None or not self._idle:
                return None
        frame = _Process.frame(_request(snap, text, params, None))
        if len(frame) > ASYNC_REQUEST_BYTES:
            # An idle worker's request pipe is empty, and a write up to its size does not block
            # the loop; a larger one could. Known before the gate: run passes it, once.
            return None
        built: _Snapshot | None = snap
        if not self._gate.try_enter():
            if not await self._gate.enter_async(deadline):
                raise QueryFailed(503, _timed_out(timeout))
            built = None  # it waited: the time left in the request is less now
        admission = _Admission(self._gate)
        handed = False  # to the thread, which gives the place back
        try:
            with self._lock:
                snap = self._current
                worker = self._idle.pop() if not self._closed and snap is not None and self._idle else None
                if worker is not None:
                    # The worker holds the snapshot from the request on (it may open it).
                    self._hold(worker, snap)
            if worker is not None and snap is not built:
                assert snap is not None
                frame = worker.frame(_request(snap, text, params, None))
            if worker is None or len(frame) > ASYNC_REQUEST_BYTES:
                if worker is not None:
                    self._checkin(worker, snap, alive=True)
                handed = True
                return await self._run_on_thread(text, params, admission)
            alive = False
            try:
                worker.write(frame)
                header, body = await self._watch_async(worker, deadline, timeout, admission)
                alive = True
            except (EOFError, OSError) as exc:
                raise _ended(worker, exc) from None
            except asyncio.CancelledError:
                worker.kill()  # the reply would come to nobody; a worker mid-query is not reusable
                raise
            finally:
                self._checkin(worker, snap, alive=alive)
        finally:
            if not handed:
                admission.release()
        return _answer(header, body)

    async def _run_on_thread(self, text: str, params: QueryParams, admission: _Admission) -> tuple[bytes, str]:
        """An admitted query that the loop cannot run (no idle worker, or a request too large
        for the pipe) on a thread of its own, with its place. Its own thread, not the loop's
        executor: it may wait for a worker or start one, and the executor's few threads also
        reap the workers killed (``_watch_async``). The threads are few: at most ``running``
        wait for a worker at once, and at most the pool's size start one or run."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[tuple[bytes, str]] = loop.create_future()

        def settle(outcome: tuple[bytes, str] | None, error: BaseException | None) -> None:
            if done.done():  # given up (cancelled, or past the deadline): its outcome goes to no one
                return
            if error is not None:
                done.set_exception(error)
            else:
                assert outcome is not None
                done.set_result(outcome)

        def job() -> None:
            outcome, error = None, None
            try:
                outcome = self._run_admitted(text, params, None, admission)
            except BaseException as exc:
                error = exc
            with contextlib.suppress(RuntimeError):  # its loop is closed: no one is waiting
                loop.call_soon_threadsafe(settle, outcome, error)

        try:
            threading.Thread(target=job, name="karenina-rdf-query", daemon=True).start()
        except BaseException:
            admission.release()  # no thread (none could start): the place is given back here
            raise
        # Starting a worker is not bound by the deadline: the client is answered at it (as
        # Endpoint.timed answers a thread's query), and the thread ends on its own.
        try:
            return await asyncio.wait_for(done, max(0.0, params["deadline"] - time.monotonic()) + 0.5)
        except TimeoutError:
            raise QueryFailed(503, _timed_out(params["timeout"])) from None

    async def _watch_async(
        self, worker: _Process, deadline: float, timeout: float, admission: _Admission
    ) -> tuple[dict[str, Any], bytes]:
        loop = asyncio.get_running_loop()
        state: dict[str, Any] = {}

        def wake(waiter: asyncio.Future[None]) -> None:
            if not waiter.done():
                waiter.set_result(None)

        def unwatch() -> None:
            # Before the pipe is closed (a kill closes it): its number may be a new worker's next.
            if state.pop("watched", False):
                loop.remove_reader(worker.replies)

        def readable() -> None:
            try:
                reply = worker.drain()
            except (EOFError, OSError) as exc:
                state["error"] = exc
            else:
                if reply is None:
                    return
                state["reply"] = reply
            unwatch()
            wake(state["waiter"])

        async def stop(message: str) -> QueryFailed:
            unwatch()
            # SIGKILL and reaped before the client hears of it, as _stop; the reaping (a large
            # process takes a while to tear down) on a thread, not on the loop.
            await asyncio.to_thread(worker.kill)
            return QueryFailed(503, message)

        started = time.monotonic()
        heavy = False
        state["waiter"] = loop.create_future()
        loop.add_reader(worker.replies, readable)
        state["watched"] = True
        try:
            while True:
                if "reply" in state:
                    reply: tuple[dict[str, Any], bytes] = state["reply"]
                    return reply
                if "error" in state:
                    raise state["error"]
                now = time.monotonic()
                if now >= deadline:
                    raise await stop(_timed_out(timeout))
                if not heavy and now - started >= self.heavy_after:
                    if not self._heavy.acquire(blocking=False):
                        raise await stop(_slots_busy(self.heavy_after, self.heavy_slots))
                    heavy = True
                if self.memory_limit and worker.resident() > self.memory_limit:
                    raise await stop(_too_much_memory(self.memory_limit))
                wait = self._next_check(now, started, deadline, heavy, admission)
                waiter = state["waiter"]
                timer = loop.call_later(max(0.0, wait), wake, waiter)
                try:
                    await waiter
                finally:
                    timer.cancel()
                state["waiter"] = loop.create_future()
        finally:
            unwatch()
            if heavy:
                self._heavy.release()

    def _next_check(self, now: float, started: float, deadline: float, heavy: bool, admission: _Admission) -> float:
        """Seconds until the watch looks again (the memory check's period at most); a query that
        has run ``release_after`` gives its place at the gate to the next one here."""
        wait = min(POLL_SECONDS, deadline - now)
        if not heavy:
            wait = min(wait, started + self.heavy_after - now)
        if admission.held:
            if now - started >= self.release_after:
                admission.release()
            else:
                wait = min(wait, started + self.release_after - now)
        return wait

    def _watch(
        self, worker: _Process, deadline: float, timeout: float, admission: _Admission
    ) -> tuple[dict[str, Any], bytes]:
        started = time.monotonic()
        heavy = False
        try:
            while True:
                now = time.monotonic()
                if now >= deadline:
                    raise self._stop(worker, _timed_out(timeout))
                if not heavy and now - started >= self.heavy_after:
                    if not self._heavy.acquire(blocking=False):
                        raise self._stop(worker, _slots_busy(self.heavy_after, self.heavy_slots))
                    heavy = True
                if self.memory_limit and worker.resident() > self.memory_limit:
                    raise self._stop(worker, _too_much_memory(self.memory_limit))
                reply = worker.receive(self._next_check(now, started, deadline, heavy, admission))
                if reply is not None:
                    return reply
        finally:
            if heavy:
                self._heavy.release()

    def _stop(self, worker: _Process, message: str) -> QueryFailed:
        worker.kill()  # SIGKILL and reaped: no CPU, no memory, before the client hears of it
        return QueryFailed(503, message)

    def close(self) -> None:
        """Kill every worker and delete every snapshot."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._lock.notify_all()
        self._gate.close()  # those waiting at the gate are answered now, not at their deadline
        for worker in idle:
            worker.kill()
            with self._lock:
                self._hold(worker, None)
                self._count -= 1
        with self._lock:
            self._current = None
            for snap in list(self._snapshots.values()):
                if snap.holders == 0:
                    self._release_if_unused(snap)

    @property
    def closed(self) -> bool:
        return self._closed

    def status(self) -> dict[str, Any]:
        """For tests and logs: worker pids (idle), snapshots and their holders."""
        with self._lock:
            return {
                "idle": [w.pid for w in self._idle],
                "count": self._count,
                "snapshots": {s.path: s.holders for s in self._snapshots.values()},
                "current": self._current.path if self._current else None,
            }


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _abandon(idle: list[_Process], snapshots: dict[str, _Snapshot]) -> None:
    for worker in list(idle):
        worker.kill()
    for snap in list(snapshots.values()):
        shutil.rmtree(snap.path, ignore_errors=True)


_SHUTTING_DOWN = "the endpoint is shutting down"


def _timed_out(timeout: float) -> str:
    return f"the query ran longer than the endpoint's time limit of {timeout:g} s"


def _slots_busy(heavy_after: float, slots: int) -> str:
    return (
        f"the query ran longer than {heavy_after:g} s while all {slots} "
        "long-query slots were busy (serve --max-running); try again later"
    )


def _too_much_memory(limit: int) -> str:
    return f"the query used more memory than the endpoint's limit of {mebibytes(limit)} (serve --max-query-memory)"


def _request(snap: _Snapshot, text: str, params: QueryParams, text_index: Mapping[str, Any] | None) -> dict[str, Any]:
    """The worker's request frame (``_worker.Worker.handle`` reads it), for run and run_async alike."""
    dataset = params["dataset"]
    return {
        "snapshot": snap.path,
        "query": text,
        "base": params["base"],
        "prefixes": dict(params["prefixes"]),
        "dataset": snap.dataset if dataset is None else encode_dataset(dataset),
        "results": params["results_format"],
        "graphs": params["graphs_format"],
        "max_bytes": params["max_bytes"],
        "seconds": params["deadline"] - time.monotonic(),
        "timeout": params["timeout"],
        "text": dict(text_index) if text_index else None,
    }


def _ended(worker: _Process, exc: BaseException) -> QueryFailed:
    """The worker died under a query: the engine aborted (pyoxigraph 0.5 panics on some sorts: the
    whole server died of it before queries ran in workers), or the address-space backstop was hit."""
    worker.kill()
    code = worker.proc.returncode
    how = f"signal {_signal_name(-code)}" if code is not None and code < 0 else f"exit code {code}"
    log.warning("a query worker (pid %d) ended during a query (%s): %s", worker.pid, how, exc or "")
    return QueryFailed(
        502, f"the query failed: its worker process ended ({how}) before it answered; the server goes on"
    )


def _answer(header: Mapping[str, Any], body: bytes) -> tuple[bytes, str]:
    """A worker's reply as the result and its format name, or its refusal as :class:`QueryFailed`."""
    if header.get("log"):
        log.warning("%s", header["log"])
    status = header.get("status")
    if status != 200:
        if status == 500:
            log.error("unexpected error in a query worker: %s", header.get("log"))
        raise QueryFailed(int(status or 500), str(header.get("message") or "the query failed"))
    return body, str(header["format"])


def _graph_name(term: Any) -> str:
    kind = type(term).__name__
    if kind == "DefaultGraph":
        return ""
    if kind == "BlankNode":
        return "_:" + str(term.value)
    return "<" + str(term.value) + ">"


def encode_dataset(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``Store.query`` dataset keyword arguments as the worker reads them (``_worker.dataset_kwargs``)."""
    out: dict[str, Any] = {}
    if kwargs.get("use_default_graph_as_union"):
        out["union"] = True
    if "default_graph" in kwargs:
        graphs = kwargs["default_graph"]
        out["default"] = [_graph_name(g) for g in (graphs if isinstance(graphs, list | tuple) else [graphs])]
    if "named_graphs" in kwargs:
        out["named"] = [_graph_name(g) for g in kwargs["named_graphs"]]
    return out
