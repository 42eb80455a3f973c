"""The parent's handle on one sandbox worker process: starting it (in fresh user and network
namespaces when the host allows), talking to it over its two pipes with deadlines, arming its CPU
limit before each call, and telling why it died. ``_pool`` pools these; ``worker._main``
is the code on the other end.

Nothing a worker says about itself is trusted beyond the reply it was asked for: its CPU time is
read from ``/proc`` here, and a reply that breaks the protocol ends the worker at once.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import resource
import select
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import threading
import time
from typing import TYPE_CHECKING, Any, Literal

from karenina_rdf.runner.worker import HEADER, ID_SIZE

if TYPE_CHECKING:
    from ._pool import Limits

Kind = Literal["exception", "timeout", "cpu", "memory", "forbidden", "crashed"]

# The worker package and nothing else goes on the worker's path: runner/worker/ holds only what
# runs inside the sandbox.
WORKER_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "worker")
MAX_REPLY_BYTES = 64 * 1024 * 1024
START_TIMEOUT = 60.0
_BOOTSTRAP = (
    "import sys, types, importlib\n"
    "package = types.ModuleType('_karenina_sandbox')\n"
    "package.__path__ = [sys.argv[1]]\n"
    "sys.modules['_karenina_sandbox'] = package\n"
    "importlib.import_module('_karenina_sandbox._main').main(sys.argv[2])\n"
)


_probe_lock = threading.Lock()
_namespace_prefix: list[str] | None = None


def namespace_prefix() -> list[str]:
    """The command that puts a worker in fresh user and network namespaces, if this host allows it."""
    global _namespace_prefix
    with _probe_lock:
        if _namespace_prefix is None:
            _namespace_prefix = []
            unshare = shutil.which("unshare")
            if unshare is not None:
                try:
                    probe = subprocess.run([unshare, "-rn", "true"], capture_output=True, timeout=10, check=False)
                    if probe.returncode == 0:
                        _namespace_prefix = [unshare, "-rn"]
                except (OSError, subprocess.SubprocessError):
                    pass
        return _namespace_prefix


def _python_roots() -> list[str]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *site.getsitepackages()}
    return sorted(os.path.realpath(r) for r in roots)


class WorkerGone(Exception):
    pass


class ProtocolViolation(WorkerGone):
    """A worker that is still running sent something that is not a reply to the request: code it
    ran has taken over its reply path, so nothing else it sends can be believed."""


class WorkerProcess:
    """One worker process as the parent sees it. Used by one thread at a time."""

    cpu_limit_works = True  # False once the host refused to set a worker's RLIMIT_CPU

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.armed: int | None = None  # the soft RLIMIT_CPU last set
        self.hard_cpu: int | None = None
        self.ready = False
        self.killed = False
        self.tmpdir = tempfile.mkdtemp(prefix="karenina-sandbox-")
        opened: list[int] = []
        try:
            for _ in range(2):
                opened.extend(os.pipe())
        except BaseException:
            for fd in opened:
                os.close(fd)
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            raise
        req_r, self.req_w, self.resp_r, resp_w = opened
        config = {
            "req_fd": req_r,
            "resp_fd": resp_w,
            "tmpdir": self.tmpdir,
            "memory_mb": limits.memory_mb,
            "max_processes": limits.max_processes,
            "python_roots": _python_roots(),
        }
        env = {"PATH": os.defpath, "HOME": self.tmpdir, "TMPDIR": self.tmpdir, "LANG": "C.UTF-8"}
        try:
            with open(os.path.join(self.tmpdir, ".worker-stderr"), "wb") as stderr:
                self.proc = subprocess.Popen(
                    [*namespace_prefix(), sys.executable, "-I", "-B", "-c", _BOOTSTRAP, WORKER_DIR, json.dumps(config)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                    pass_fds=(req_r, resp_w),
                    cwd=self.tmpdir,
                    env=env,
                    start_new_session=True,  # its own process group, so a kill takes its children too
                )
        except BaseException:
            os.close(self.req_w)
            os.close(self.resp_r)
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            raise
        finally:
            os.close(req_r)
            os.close(resp_w)
        os.set_blocking(self.req_w, False)
        os.set_blocking(self.resp_r, False)
        self._writable, self._readable = select.poll(), select.poll()
        self._writable.register(self.req_w, select.POLLOUT)
        self._readable.register(self.resp_r, select.POLLIN)

    def ensure_ready(self) -> None:
        """Wait for the worker's hello (once); raises TimeoutError or WorkerGone."""
        if not self.ready:
            hello = self._read(time.monotonic() + START_TIMEOUT)
            if hello.get("ready") is not True:
                raise ProtocolViolation("the worker sent something other than its hello")
            self.ready = True

    def call(self, body: bytes, deadline: float) -> dict[str, Any]:
        """Send one JSON request and wait for its reply; raises TimeoutError or WorkerGone."""
        self._arm_cpu_limit()
        request_id = os.urandom(ID_SIZE // 2).hex()
        self._write(HEADER.pack(ID_SIZE + len(body)) + request_id.encode("ascii") + body, deadline)
        reply = self._read(deadline)
        if reply.get("id") != request_id:
            raise ProtocolViolation("the worker sent a reply to a different request (protocol tampering)")
        return reply

    def _arm_cpu_limit(self) -> None:
        # Only the soft limit moves: raising a hard limit needs CAP_SYS_RESOURCE, which even a
        # container's root often lacks. Code that ignores SIGXCPU is left to the wall clock.
        if not WorkerProcess.cpu_limit_works:
            return
        used = self._cpu_from_proc()
        try:
            if self.hard_cpu is None:
                self.hard_cpu = resource.prlimit(self.proc.pid, resource.RLIMIT_CPU)[1]
            # Usage that cannot be measured lifts the soft limit rather than guess at it: the
            # wall clock still holds.
            soft = self.hard_cpu if used is None else math.ceil(used + self.limits.cpu_seconds)
            if self.hard_cpu != resource.RLIM_INFINITY:
                soft = min(soft, self.hard_cpu)
            if soft == self.armed:
                return
            resource.prlimit(self.proc.pid, resource.RLIMIT_CPU, (soft, self.hard_cpu))
        except ProcessLookupError as exc:
            raise WorkerGone("the worker exited") from exc
        except PermissionError:
            WorkerProcess.cpu_limit_works = False  # this host does not let us: the wall clock still holds
            return
        self.armed = None if soft == resource.RLIM_INFINITY else soft

    def _write(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.req_w, view) :]
            except BlockingIOError:
                self._wait(self._writable, deadline)
            except BrokenPipeError as exc:
                raise WorkerGone("the worker closed its request pipe") from exc

    def _read(self, deadline: float) -> dict[str, Any]:
        # One read usually brings header and body together; ask for more only when it did not.
        buffer = bytearray()
        size: int | None = None
        while size is None or len(buffer) < HEADER.size + size:
            try:
                chunk = os.read(self.resp_r, 1 << 20)
            except BlockingIOError:
                self._wait(self._readable, deadline)
                continue
            if not chunk:
                raise WorkerGone("the worker exited")
            buffer += chunk
            if size is None and len(buffer) >= HEADER.size:
                size = HEADER.unpack_from(buffer)[0]
                if size > MAX_REPLY_BYTES:
                    raise ProtocolViolation(f"the worker sent an oversized reply ({size} bytes)")
        if len(buffer) != HEADER.size + size:
            raise ProtocolViolation("the worker sent more than one reply (protocol tampering)")
        try:
            reply = json.loads(buffer[HEADER.size :])
        except ValueError as exc:
            raise ProtocolViolation("the worker sent a malformed reply") from exc
        if not isinstance(reply, dict):
            raise ProtocolViolation("the worker sent a malformed reply")
        return reply

    @staticmethod
    def _wait(poller: select.poll, deadline: float) -> None:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            if poller.poll(remaining * 1000):
                return

    def death_reason(self, gone: WorkerGone) -> tuple[Kind, str]:
        """Why the worker went away (reaps it): an outcome kind and a message."""
        if isinstance(gone, ProtocolViolation) and not self._exited(0):
            # Its code is still running and speaking for it: waiting would only let it run on,
            # and its exit status (our SIGKILL) would hide the real cause.
            self._reap()
            return "crashed", str(gone)
        # A worker that closed its reply pipe is usually exiting; give it time to finish dying
        # so that its exit status says why.
        self._exited(5)
        cpu = self._cpu_from_proc()  # readable until the worker is reaped
        code = self._reap()
        soft = self.armed
        if code == -signal.SIGXCPU or (
            code == -signal.SIGKILL and soft is not None and cpu is not None and cpu >= soft
        ):
            return "cpu", f"CPU time limit exceeded ({self.limits.cpu_seconds:g} s)"
        if code < 0:
            name = signal.Signals(-code).name
            return "crashed", f"the sandbox worker died from signal {name}{self._stderr_tail()}"
        return "crashed", f"the sandbox worker exited with status {code}{self._stderr_tail()}"

    def _cpu_from_proc(self) -> float | None:
        try:
            with open(f"/proc/{self.proc.pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return None

    def _stderr_tail(self) -> str:
        try:
            with open(os.path.join(self.tmpdir, ".worker-stderr"), "rb") as stderr:
                stderr.seek(0, os.SEEK_END)
                stderr.seek(max(0, stderr.tell() - 300))
                tail = stderr.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""
        return f": {tail}" if tail else ""

    def kill(self) -> None:
        self.killed = True
        self._kill_group()

    def _kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def _exited(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the worker to exit, without reaping it: until it is
        reaped its pid, which is also its process group's id, cannot be given to another process."""
        deadline = time.monotonic() + timeout
        delay = 0.0005
        while self.proc.returncode is None:
            try:
                if os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    return True
            except ChildProcessError:  # reaped elsewhere
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, 0.05)
        return True

    def _reap(self) -> int:
        # The group is killed even when the worker exited by itself: processes its code started
        # (under max_processes) would outlive it otherwise. Once reaped, its id may name
        # another process's group, so it is killed only before that.
        if self.proc.returncode is None:
            self._kill_group()
        return self.proc.wait()

    def close(self, graceful: bool = True) -> None:
        for fd in (self.req_w, self.resp_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        if graceful:  # the worker sees end-of-file on its request pipe and exits by itself
            self._exited(2)
        self._reap()
        shutil.rmtree(self.tmpdir, ignore_errors=True)
