"""A pool of sandbox workers that run answer-template and callable-trait code (which a shared
benchmark can make do anything) away from the runner, under limits, and report every failure as
a ``SandboxOutcome`` instead of an exception: the run goes on.

Processes. A worker is a *box* (bubblewrap, ``_process.box_command``) holding a *supervisor*
(``runner.worker._supervisor``) that runs no code it was sent: it warms up once (the template
runtime, pydantic) and forks one *template process* per template or callable (by SHA-256 of its
source), relays each request to it and checks its reply. The box is started with ``subprocess``
(``python -I -B -c <bootstrap>``), so it inherits none of the parent's threads, locks or memory;
both directions are length-prefixed JSON over two pipes (the parent must never unpickle what a
worker sends). The bootstrap loads only ``runner/worker/`` under a private package name.

A ``Sandbox`` is one run's (``run_verification`` makes one per run, and a run is one benchmark's),
so code of one benchmark never shares a box with another benchmark's, and a template never
shares a process with another template: one template cannot forge another's verdict.

Speed. Boxes are reused, and so are template processes (an LRU of ``CHILDREN`` per box; one
that keeps more than ``KEEP_GROWTH_MB`` of memory after a call is not kept); a template is
executed once per template process. Forking one from the warm supervisor costs a
few milliseconds; a relayed call costs a little more than the direct one it replaced (see
docs/performance.md, "Verification").

Isolation layers, outermost first, and what each does not cover (``Sandbox.layers`` says which
are active):

* kernel isolation (``isolation="kernel"``, the default; without it, and without
  ``isolation="unsafe-none"`` — ``--unsafe-no-isolation`` — the ``Sandbox`` refuses to start,
  saying why): the box has its own user, PID, mount, IPC, UTS, cgroup and network namespaces (no
  interface but a down loopback), no capabilities, no new privileges, no further user
  namespaces, a session of its own, and dies with the parent (``--die-with-parent``; the
  supervisor is the box's PID 1, and when it dies every process in the box dies). It sees /usr
  and the Python installation read-only, the worker package read-only, fresh /proc and /dev
  (read-only), and one tmpfs (/tmp, at most ``memory_mb``) as the only writable place (the
  box's own root is read-only): no /etc (so no /etc/shadow), /home, /root, store folder,
  ``.env`` or working directory, and a cleared environment;
* the wall clock: the supervisor ends a template process that overruns ``wall_seconds``
  (kind ``timeout``); the parent gives the supervisor a few seconds more, then kills the box;
* a seccomp filter on each template process (``runner.worker._seccomp``): no new processes when
  ``max_processes`` is 0 (``RLIMIT_NPROC`` cannot when the runner is root: the kernel exempts
  uid 0, even in a user namespace), no ptrace or process_vm_*, no signals but to itself, no
  sockets, no namespace or mount calls, no io_uring, bpf, keyctl;
* "not dumpable" (set by the supervisor, inherited by template processes): with no
  capabilities, no process of the box can open another's ``/proc/<pid>/mem``, ``environ`` or
  ``fd/``;
* resource limits on each template process: RLIMIT_CPU, armed by the supervisor before each call
  from the CPU time it reads in ``/proc`` (kernel-enforced in whole seconds, so a call gets
  between ``cpu_seconds`` and a second more, then SIGXCPU ends it: kind ``cpu``; code that
  ignores SIGXCPU meets the wall clock). RLIMIT_AS = ``memory_mb`` (never less than the idle
  process's footprint plus 64 MB): a MemoryError, or death, gives kind ``memory``.
  RLIMIT_FSIZE = ``memory_mb`` per written file, RLIMIT_NOFILE 128, no core dumps;
* a private directory per template process (its cwd, HOME and TMPDIR) in the box's tmpfs;
  template processes of one box can reach each other's directories (same benchmark);
* the audit hook (``runner.worker._main``): reads only under the template process's directory
  and the Python installation, writes only under its directory, no sockets, no new processes
  beyond ``max_processes``, no ctypes, no compiled modules from outside the installation, no
  signals to other processes (kind ``forbidden``). It is a Python-level guard, defence in depth:
  code can reach the hook's objects and switch it off; the layers above are what contain such
  code (tests/runner/sandbox/test_attacks.py runs each attack with the hook on and off).

With ``isolation="unsafe-none"`` the worker is a plain process (in fresh user and network
namespaces when ``unshare -rn`` works) with the supervisor, the template processes, the seccomp
filter, the limits and the hook, but it sees and can write what the runner's user can, once the
hook is off. A warning is logged.

The parent believes nothing a worker reports about itself beyond the reply to the request in
flight, and a worker that sends anything else is killed at once (kind ``crashed``, with what it
sent wrong); the supervisor does the same to a template process.

A template process that dies (segfault, ``os._exit``, a limit) is reaped and the call reports
``crashed`` (or ``cpu``/``memory``); one that leaves threads or child processes behind, or
replaced its SIGXCPU handler, is ended after its call with its process group. A box that dies
is replaced.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
import weakref
from types import TracebackType
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field

from karenina_rdf._errors import InvalidValueError, VerificationError
from karenina_rdf.runner.worker import seccomp_unavailable

from ._process import (
    START_TIMEOUT,
    UNSAFE_FLAG,
    Isolation,
    Kind,
    WorkerGone,
    WorkerProcess,
    isolation_unavailable,
    namespace_prefix,
)

__all__ = ["IsolationUnavailableError", "Limits", "Sandbox", "SandboxOutcome", "check_isolation", "namespace_prefix"]

log = logging.getLogger(__name__)


class IsolationUnavailableError(VerificationError):
    """This host cannot box untrusted code, and the caller did not accept running it unboxed."""


def check_isolation(isolation: Isolation) -> None:
    """Raise ``IsolationUnavailableError`` (one line: why, and the flag) when ``isolation`` is
    "kernel" and this host cannot box code. A run checks before it writes anything."""
    if isolation == "kernel":
        problem = isolation_unavailable()
        if problem is not None:
            raise IsolationUnavailableError(
                f"refusing to run benchmark code without kernel isolation: {problem}; "
                f"install bubblewrap, or accept the risk with {UNSAFE_FLAG}"
            )


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

    def __init__(self, workers: int = 2, limits: Limits | None = None, isolation: Isolation = "kernel") -> None:
        if workers < 1:
            raise InvalidValueError(f"a sandbox needs at least one worker, not {workers}")
        if isolation not in ("kernel", "unsafe-none"):
            raise InvalidValueError(f"isolation is 'kernel' or 'unsafe-none', not {isolation!r}")
        check_isolation(isolation)
        if isolation == "unsafe-none":
            log.warning(
                "running benchmark code WITHOUT kernel isolation (%s): its code can read and write what this user can",
                UNSAFE_FLAG,
            )
        self.isolation: Isolation = isolation
        self.limits = limits if limits is not None else Limits.model_validate({})
        self._size = workers
        self._cond = threading.Condition()
        self._closed = False
        started: list[WorkerProcess] = []
        try:
            for _ in range(workers):  # all boot in parallel; calls wait for their own worker's hello
                started.append(WorkerProcess(self.limits, self.isolation))
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
        boxed = self.isolation == "kernel"
        # A template process that cannot put its filter on runs nothing: it ends, and its calls
        # say crashed. So the filter is active wherever it can be.
        seccomp = seccomp_unavailable() is None
        return {
            "audit_hook": True,
            "wall_clock": True,
            "private_tmpdir": True,
            "clean_environment": True,
            "process_per_template": True,
            "rlimit_cpu": True,
            "rlimit_as": True,
            "rlimit_fsize": True,
            "rlimit_nproc": os.geteuid() != 0 and self.limits.max_processes == 0,
            "seccomp": seccomp,
            "user_and_network_namespace": boxed or bool(namespace_prefix()),
            "pid_mount_ipc_namespaces": boxed,
            "read_only_filesystem_view": boxed,
            "capabilities_dropped": boxed,
            "tmpfs_size_limit": boxed,
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
            worker = WorkerProcess(self.limits, self.isolation)
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
                replacement = WorkerProcess(self.limits, self.isolation)
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
