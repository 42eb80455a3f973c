"""A pool of worker processes that run answer-template and callable-trait code (which a shared
benchmark can make do anything) away from the runner, under limits, and report every failure as
a ``SandboxOutcome`` instead of an exception: the run goes on.

Processes. Workers are started with ``subprocess`` (``python -I -B -c <bootstrap>``): the child
execs a fresh interpreter at once, so it inherits none of the parent's threads, locks or memory
(why plain ``fork`` is out). ``multiprocessing``'s forkserver or spawn would also start clean,
but their pipes speak pickle, and the parent must never unpickle what a worker, possibly taken
over by the code it ran, sends back: here both directions are length-prefixed JSON over two
pipes. The worker's environment is a minimal fresh one, so API keys in the runner's environment
are not visible to template code. The bootstrap loads the runner modules from their directory
under a private package name, without importing ``karenina_rdf`` itself (store, RDF libraries).

Speed. Workers are reused; each caches exec'd templates and unpickled callables by source hash
(see ``runner.worker._main``), so a template is executed once per worker. A call costs 0.2-0.3 ms
on top of the template's own ~0.02 ms (measured on a shared 2-core VM: 3,000-4,500
verify_template calls/s from one thread, 3,200-5,800/s from several threads over two workers);
most of it is two process wake-ups and the JSON.

Isolation layers, outermost first, and what each does not cover (``Sandbox.layers`` says which
are active):

* process boundary and wall clock: the parent waits at most ``wall_seconds`` per call, then
  kills the worker's process group and starts another (kind ``timeout``). This is the layer
  that always holds;
* user and network namespaces (``unshare -rn``, used when the host allows it): the worker has
  no network interface but a down loopback, so even code that slips past the audit hook cannot
  connect anywhere, 127.0.0.1 included; and it holds no capabilities in the host's namespaces
  even when the runner is root. Files are still the host's files;
* resource limits. RLIMIT_CPU, set by the parent before each call: kernel-enforced in whole
  seconds, so a call gets between ``cpu_seconds`` and a second more, then SIGXCPU ends the
  worker (kind ``cpu``); only the soft limit is moved, since raising a hard limit needs a
  privilege even a container's root often lacks, so code that ignores SIGXCPU meets the wall
  clock instead. RLIMIT_AS = ``memory_mb`` (never less than the idle worker's own footprint
  plus 64 MB): a MemoryError, or death, gives kind ``memory``. RLIMIT_FSIZE = ``memory_mb`` per
  written file. RLIMIT_NPROC = 1 when ``max_processes`` is 0, enforced by the kernel for every
  uid but 0 (a root runner relies on the audit hook alone there);
* a private temporary directory per worker (its cwd, HOME and TMPDIR), removed with the worker;
* the audit hook (``runner.worker._main``): reads only under the temporary directory and the Python
  installation, writes only under the temporary directory, no sockets, no new processes beyond
  ``max_processes``, no ctypes, no compiled modules from outside the installation, no signals
  to other processes (kind ``forbidden``). It is a Python-level guard, not a security boundary:
  extension code is not audited, metadata calls (``os.stat``) are not audited, a child process
  allowed by ``max_processes`` runs outside it, and code that reaches the hook's Python objects
  or corrupts the interpreter can get past it. The layers above are what contain such code.
  Templates sharing a worker share its Python state, the worker's own code included: one
  template can change what later templates in that worker see, and forge their verdicts.
  Isolation is between the code and the runner process, not between templates.

The parent believes nothing a worker reports about itself: it measures the worker's CPU time in
``/proc``, and a worker that sends anything but a well-formed reply to the request in flight is
killed at once (kind ``crashed``, with what it sent wrong).

A worker that dies (segfault, ``os._exit``, a limit) is replaced; the call reports ``crashed``
(or ``cpu``/``memory`` when that is what ended it) and the pool keeps working. A worker that
leaves threads or child processes behind, or replaced its SIGXCPU handler, is replaced after
its call, and its process group killed: that ends such children unless they started a session of
their own.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import weakref
from types import TracebackType
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field

from karenina_rdf._errors import InvalidValueError, VerificationError

from ._process import START_TIMEOUT, Kind, WorkerGone, WorkerProcess, namespace_prefix

__all__ = ["Limits", "Sandbox", "SandboxOutcome", "namespace_prefix"]


class Limits(BaseModel):
    """Per-call limits of a sandbox's workers (see the module docstring for how each is enforced)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpu_seconds: float = Field(10.0, gt=0)
    memory_mb: int = Field(1024, ge=64)
    wall_seconds: float = Field(30.0, gt=0)
    max_processes: int = Field(0, ge=0)  # extra processes a call may start (0 = none)


class SandboxOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    ok: bool
    value: Any = None  # JSON-able result when ok
    error: str | None = None  # what went wrong, readable, at most 500 characters
    kind: Kind | None = None
    elapsed: float = 0.0  # seconds, wall clock


def _failure(kind: Kind, error: str, started: float) -> SandboxOutcome:
    return SandboxOutcome(ok=False, kind=kind, error=error[:500], elapsed=time.monotonic() - started)


class Sandbox:
    """A thread-safe pool of sandbox workers. Every method returns a ``SandboxOutcome``; none raises
    because of what the code it runs does. Calling a closed sandbox raises ``VerificationError``."""

    def __init__(self, workers: int = 2, limits: Limits | None = None) -> None:
        if workers < 1:
            raise InvalidValueError(f"a sandbox needs at least one worker, not {workers}")
        self.limits = limits if limits is not None else Limits.model_validate({})
        self._size = workers
        self._cond = threading.Condition()
        self._closed = False
        started: list[WorkerProcess] = []
        try:
            for _ in range(workers):  # all boot in parallel; calls wait for their own worker's hello
                started.append(WorkerProcess(self.limits))
        except BaseException:
            for worker in started:
                worker.close(graceful=False)
            raise
        self._idle: list[WorkerProcess | None] = list(started)
        self._live: set[WorkerProcess] = set(started)
        # Workers are cleaned up even if close() is never called.
        self._finalizer = weakref.finalize(self, _shutdown, self._live)

    @property
    def layers(self) -> dict[str, bool]:
        """Which isolation layers are active on this host (see the module docstring)."""
        return {
            "audit_hook": True,
            "wall_clock": True,
            "private_tmpdir": True,
            "clean_environment": True,
            "rlimit_cpu": WorkerProcess.cpu_limit_works,
            "rlimit_as": True,
            "rlimit_fsize": True,
            "rlimit_nproc": os.geteuid() != 0 and self.limits.max_processes == 0,
            "user_and_network_namespace": bool(namespace_prefix()),
        }

    def validate_template(self, code: str) -> SandboxOutcome:
        return self._run({"op": "validate", "code": code})

    def verify_template(
        self, code: str, parsed: dict[str, Any] | None, raw_response: str, question_id: str | None = None
    ) -> SandboxOutcome:
        request = {"op": "verify", "code": code, "parsed": parsed, "raw": raw_response, "question_id": question_id}
        return self._run(request)

    def run_callable(self, payload_b64: str, text: str) -> SandboxOutcome:
        return self._run({"op": "callable", "payload": payload_b64, "text": text})

    def _run(self, request: dict[str, Any]) -> SandboxOutcome:
        try:
            body = json.dumps(request).encode()
        except (TypeError, ValueError) as exc:
            return _failure("exception", f"the request cannot be sent as JSON: {exc}", time.monotonic())
        try:
            worker = self._acquire()
        except OSError as exc:
            return _failure("crashed", f"could not start a sandbox worker: {exc}", time.monotonic())
        keep = False
        try:
            started = time.monotonic()
            try:
                worker.ensure_ready()
                started = time.monotonic()  # start-up does not count against the call's limits
                reply = worker.call(body, started + self.limits.wall_seconds)
            except TimeoutError:
                worker.kill()
                if not worker.ready:
                    return _failure("crashed", f"the sandbox worker did not start within {START_TIMEOUT:g} s", started)
                return _failure("timeout", f"wall-clock limit exceeded ({self.limits.wall_seconds:g} s)", started)
            except WorkerGone as gone:
                return _failure(*worker.death_reason(gone), started)
            except OSError as exc:
                return _failure("crashed", f"the sandbox worker could not be reached: {exc}", started)
            keep = not reply.get("retire")
            if reply.get("ok"):
                return SandboxOutcome(ok=True, value=reply.get("value"), elapsed=time.monotonic() - started)
            kind = _KINDS.get(str(reply.get("kind")), "exception")
            return _failure(kind, str(reply.get("error") or "unknown error"), started)
        finally:
            self._release(worker, keep)

    def _acquire(self) -> WorkerProcess:
        with self._cond:
            while not self._idle and not self._closed:
                self._cond.wait()
            if self._closed:
                raise VerificationError("the sandbox is closed: open a new Sandbox to run more code")
            slot = self._idle.pop()
        if slot is not None:
            return slot
        try:
            worker = WorkerProcess(self.limits)
        except BaseException:
            self._put_back(None)
            raise
        with self._cond:
            self._live.add(worker)
        return worker

    def _release(self, worker: WorkerProcess, keep: bool) -> None:
        if keep:
            self._put_back(worker)
            return
        worker.close(graceful=not worker.killed)
        with self._cond:
            self._live.discard(worker)
        replacement = None
        if not self._closed:
            # Started now, it boots while the caller carries on; if it cannot start, the next
            # call tries again.
            with contextlib.suppress(OSError):
                replacement = WorkerProcess(self.limits)
        if replacement is not None:
            with self._cond:
                self._live.add(replacement)
        self._put_back(replacement)

    def _put_back(self, slot: WorkerProcess | None) -> None:
        with self._cond:
            self._idle.append(slot)
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
            while len(self._idle) < self._size:  # let calls in flight finish (each is bounded)
                self._cond.wait()
        self._finalizer()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


_KINDS: dict[str, Kind] = {kind: kind for kind in get_args(Kind)}


def _shutdown(workers: set[WorkerProcess]) -> None:
    for worker in list(workers):
        worker.close()
    workers.clear()
