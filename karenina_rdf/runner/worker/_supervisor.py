"""The worker's supervisor: the process the parent ``Sandbox`` talks to, PID 1 of its box. It
runs no code it was sent. It warms up once (imports the template runtime, pydantic, ctypes), then forks one
*template process* per template (or callable) it is asked about, keyed by the SHA-256 of the
source, and relays each request to that process and its reply back.

Why a process per template: code shares everything with the code in its own process, so a
template that replaces ``verify`` or the reply path could forge the verdicts of every template
served after it there. Forked from a warm supervisor, a template process costs a few
milliseconds, not the interpreter's and pydantic's cold start.

A template process, before it runs anything it was sent (``_child``): closes every descriptor
but its own two pipes, moves into a session of its own (so its process group can be killed),
sends stdout to ``/dev/null`` and stderr to a file of its own, sets its resource limits, asks
to be killed if the supervisor dies, puts the seccomp filter (``_seccomp``) on itself, drops
``ctypes`` from ``sys.modules``, and installs the audit hook. It inherits the supervisor's
"not dumpable" mark, so neither it nor its siblings can read or write the others' memory
through ``/proc/<pid>/mem`` or reach their descriptors through ``/proc/<pid>/fd``: the box
drops every capability, and that takes ``CAP_SYS_PTRACE``.

The supervisor believes nothing a template process says about itself: it arms that process's
``RLIMIT_CPU`` before each call from the CPU time it reads in ``/proc``, enforces the per-call
wall clock, and ends the process at once when what comes back is not one well-formed reply to
the request in flight. Only the fields of a reply it knows are relayed. A template process
whose reply says ``retire`` (threads or children left behind, a replaced SIGXCPU handler, a
MemoryError), or that holds more than ``KEEP_GROWTH_MB`` of anonymous memory beyond the
supervisor's, is ended after its call; at most ``CHILDREN`` stay alive, the least recently used
are ended first and forked again when needed.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import math
import os
import resource
import select
import shutil
import signal
import stat
import sys
import time
from collections import OrderedDict
from typing import Any

from . import _main, _seccomp, _template

CHILDREN = 16
# A template process that holds more anonymous memory than the supervisor plus this after a call
# is ended: idle processes in the LRU must not keep what a call allocated (RLIMIT_AS bounds one
# process, not the sum over the box).
KEEP_GROWTH_MB = 64
MAX_REPLY_BYTES = 64 * 1024 * 1024
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_REPLY_FIELDS = ("ok", "value", "kind", "error")
_KINDS = frozenset({"exception", "memory", "forbidden"})  # what a template process may report itself


class _Gone(Exception):
    """The template process is gone or broke the protocol (``kind``, ``message``)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Child:
    """The supervisor's handle on one template process."""

    def __init__(self, pid: int, req_w: int, resp_r: int, workdir: str, stderr: str) -> None:
        self.pid, self.req_w, self.resp_r = pid, req_w, resp_r
        self.workdir, self.stderr = workdir, stderr
        self.armed: int | None = None
        self.poll = select.poll()
        self.poll.register(resp_r, select.POLLIN)


class Supervisor:
    def __init__(self, cfg: dict[str, Any], libc: Any, ctypes: Any) -> None:
        self.cfg = cfg
        self.libc, self.ctypes = libc, ctypes
        self.children: OrderedDict[str, _Child] = OrderedDict()
        self.sequence = 0
        self.pid = os.getpid()
        self.keep_anon_kb = (_anon_kb(self.pid) or 0) + KEEP_GROWTH_MB * 1024
        self.seccomp = cfg.get("seccomp", True) and _seccomp.unavailable() is None

    # The request loop ------------------------------------------------------------------------

    def serve(self, req_fd: int, resp_fd: int) -> None:
        while True:
            frame = _main.read_frame(req_fd)
            if frame is None:  # the parent closed the pipe: shut down
                break
            request = json.loads(frame[_main.HEADER.size + _main.ID_SIZE :])
            request_id = frame[_main.HEADER.size : _main.HEADER.size + _main.ID_SIZE].decode("ascii")
            reply = self.relay(request, frame, request_id)
            reply["id"] = request_id
            _main._send(resp_fd, reply)
            self.reap_orphans()
        for key in list(self.children):
            self.end(key)

    def relay(self, request: dict[str, Any], frame: bytes, request_id: str) -> dict[str, Any]:
        source = request.get("payload") if request.get("op") == "callable" else request.get("code")
        if not isinstance(source, str):
            return {"ok": False, "kind": "exception", "error": "malformed request"}
        kind = "c" if request.get("op") == "callable" else "t"
        key = kind + hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
        child = self.children.get(key)
        if child is not None and (child.pid < 0 or _exited(child.pid)):  # ended between calls
            child.pid = -1
            self.end(key)
            child = None
        if child is None:
            try:
                child = self.spawn(key)
            except OSError as exc:
                return {"ok": False, "kind": "crashed", "error": f"could not start a template process: {exc}"}
        else:
            self.children.move_to_end(key)
        started = time.monotonic()
        try:
            self.arm_cpu(child)
            _write_all(child.req_w, frame)
            body = self.read_reply(child, started + float(self.cfg["wall_seconds"]))
            reply = _checked(body, request_id)
        except _Gone as gone:
            self.end(key, reason=gone)
            return {"ok": False, "kind": gone.kind, "error": str(gone)}
        except TimeoutError:
            self.end(key)
            return {
                "ok": False,
                "kind": "timeout",
                "error": f"wall-clock limit exceeded ({self.cfg['wall_seconds']:g} s)",
            }
        anon = _anon_kb(child.pid)
        if reply.pop("retire", False) or anon is None or anon > self.keep_anon_kb:
            self.end(key)
        return reply

    # Template processes ----------------------------------------------------------------------

    def spawn(self, key: str) -> _Child:
        while len(self.children) >= CHILDREN:
            self.end(next(iter(self.children)))
        self.sequence += 1
        root = self.cfg["tmpdir"]
        workdir = os.path.join(root, f"t{self.sequence}")
        stderr = os.path.join(root, f".stderr-{self.sequence}")
        os.mkdir(workdir, 0o700)
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the template process
            code = 70
            try:
                self._child(req_r, resp_w, workdir, stderr)
                code = 0
            except BaseException:
                with contextlib.suppress(BaseException):
                    import traceback

                    traceback.print_exc()
            finally:
                os._exit(code)
        os.close(req_r)
        os.close(resp_w)
        os.set_blocking(resp_r, False)
        child = _Child(pid, req_w, resp_r, workdir, stderr)
        self.children[key] = child
        return child

    def _child(self, req_fd: int, resp_fd: int, workdir: str, stderr_path: str) -> None:
        cfg = self.cfg
        stderr = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        devnull = os.open("/dev/null", os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.dup2(stderr, 2)
        keep = {0, 1, 2, req_fd, resp_fd}
        for fd in _open_fds():
            if fd not in keep:
                with contextlib.suppress(OSError):
                    os.close(fd)
        os.setsid()
        os.chdir(workdir)
        os.environ.update(HOME=workdir, TMPDIR=workdir)
        import tempfile

        tempfile.tempdir = None
        signal.signal(signal.SIGXCPU, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        self.libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != self.pid:  # the supervisor died before that
            os._exit(70)
        _main.set_limits(cfg)
        if self.seccomp:
            _seccomp.install(self.ctypes, cfg["max_processes"])
        for name in [m for m in sys.modules if m == "ctypes" or m.startswith(("ctypes.", "_ctypes"))]:
            del sys.modules[name]
        del self.libc, self.ctypes
        _main.serve_guarded(req_fd, resp_fd, workdir, cfg)

    def reap_orphans(self) -> None:
        """Reap the processes that ended while orphaned to this one (PID 1 of the box: what
        template processes started under max_processes and left behind), and notice template
        processes that ended between calls."""
        tracked = {child.pid: key for key, child in self.children.items()}
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if info is None:
                return
            if info.si_pid in tracked:  # a template process: its next call forks a new one
                _exited(info.si_pid)
                self.children[tracked.pop(info.si_pid)].pid = -1
                continue
            with contextlib.suppress(ChildProcessError):
                os.waitpid(info.si_pid, 0)

    def arm_cpu(self, child: _Child) -> None:
        used = _cpu_seconds(child.pid)
        if used is None:
            raise _Gone("crashed", "the template process exited")
        soft = math.ceil(used + float(self.cfg["cpu_seconds"]))
        if soft == child.armed:
            return
        try:
            hard = resource.prlimit(child.pid, resource.RLIMIT_CPU)[1]
            if hard != resource.RLIM_INFINITY:
                soft = min(soft, hard)
            resource.prlimit(child.pid, resource.RLIMIT_CPU, (soft, hard))
        except ProcessLookupError as exc:
            raise _Gone("crashed", "the template process exited") from exc
        child.armed = soft

    def read_reply(self, child: _Child, deadline: float) -> bytes:
        buffer = bytearray()
        size: int | None = None
        header = _main.HEADER
        while size is None or len(buffer) < header.size + size:
            try:
                chunk = os.read(child.resp_r, 1 << 20)
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError from None
                child.poll.poll(remaining * 1000)
                continue
            if not chunk:
                raise self.death(child)
            buffer += chunk
            if size is None and len(buffer) >= header.size:
                size = header.unpack_from(buffer)[0]
                if size > MAX_REPLY_BYTES:
                    raise _Gone("crashed", f"the worker sent an oversized reply ({size} bytes)")
        if len(buffer) != header.size + size:
            raise _Gone("crashed", "the worker sent more than one reply (protocol tampering)")
        return bytes(buffer[header.size :])

    def death(self, child: _Child) -> _Gone:
        """Why the template process went away (reaps it)."""
        cpu = None
        deadline = time.monotonic() + 5
        while True:
            cpu = _cpu_seconds(child.pid)  # readable until the process is reaped
            if _ended(child.pid) or time.monotonic() > deadline:
                break
            time.sleep(0.001)
        # Its process group goes too (what it started under max_processes); until it is reaped
        # its pid, which is the group's id, cannot name another process.
        _kill(child.pid)
        _, status = os.waitpid(child.pid, 0)
        child.pid = -1
        code = os.waitstatus_to_exitcode(status)
        soft = child.armed
        if code == -signal.SIGXCPU or (
            code == -signal.SIGKILL and soft is not None and cpu is not None and cpu >= soft
        ):
            return _Gone("cpu", f"CPU time limit exceeded ({self.cfg['cpu_seconds']:g} s)")
        tail = _tail(child.stderr)
        if code < 0:
            return _Gone("crashed", f"the sandbox worker died from signal {signal.Signals(-code).name}{tail}")
        return _Gone("crashed", f"the sandbox worker exited with status {code}{tail}")

    def end(self, key: str, reason: _Gone | None = None) -> None:
        child = self.children.pop(key)
        for fd in (child.req_w, child.resp_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        if child.pid > 0:
            _kill(child.pid)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child.pid, 0)
        shutil.rmtree(child.workdir, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.remove(child.stderr)


def _checked(body: bytes, request_id: str) -> dict[str, Any]:
    """The fields of a template process's reply the supervisor relays, or ``_Gone``."""
    try:
        reply = json.loads(body)
    except ValueError:
        raise _Gone("crashed", "the worker sent a malformed reply") from None
    if not isinstance(reply, dict):
        raise _Gone("crashed", "the worker sent a malformed reply")
    if reply.get("id") != request_id:
        raise _Gone("crashed", "the worker sent a reply to a different request (protocol tampering)")
    out = {name: reply[name] for name in _REPLY_FIELDS if name in reply}
    if out.get("ok") is not True:
        out["ok"] = False
        out["kind"] = out.get("kind") if out.get("kind") in _KINDS else "exception"
        out["error"] = str(out.get("error") or "unknown error")[:500]
        out.pop("value", None)
    out["retire"] = bool(reply.get("retire"))
    return out


def _kill(pid: int) -> None:
    # Its process group first (what it started under max_processes), then itself in case it left
    # the group by starting a session of its own.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def _ended(pid: int) -> bool:
    """Whether the template process ``pid`` has ended, without reaping it."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _exited(pid: int) -> bool:
    """Whether the template process ``pid`` has ended; if so its group is killed and it is reaped."""
    if not _ended(pid):
        return False
    _kill(pid)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    return True


def _anon_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cpu_seconds(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _tail(path: str) -> str:
    """The end of a template process's stderr file. The file sits where template code can write,
    so it is opened without following a link, and read only if it is a regular file (not, say, a
    link to one of this process's own /proc entries or pipes)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ""
        tail = os.pread(fd, 300, max(0, info.st_size - 300)).decode("utf-8", "replace").strip()
    except OSError:
        return ""
    finally:
        os.close(fd)
    return f": {tail}" if tail else ""


def _open_fds() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 1024))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except BrokenPipeError:
        raise _Gone("crashed", "the template process exited") from None


def main(config_json: str) -> None:
    """The worker's entry point (the parent's bootstrap calls it)."""
    import ctypes

    cfg = json.loads(config_json)
    req_fd, resp_fd, tmpdir = cfg["req_fd"], cfg["resp_fd"], cfg["tmpdir"]
    os.chdir(tmpdir)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    libc = ctypes.CDLL(None, use_errno=True)
    # Not dumpable: no process of the box can open this one's /proc/<pid>/mem or fd/, and the
    # template processes forked from it inherit the mark.
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    _template.verify(_template.load_template(_main.WARM_UP), {"name": "x", "n": 1}, "x", None)
    python_roots = tuple(cfg["python_roots"])
    sys.path[:] = [p for p in sys.path if _main.inside(os.path.realpath(p), python_roots)]
    supervisor = Supervisor(cfg, libc, ctypes)
    gc.collect()
    # Forked template processes then share the warm heap instead of copying it: their collector
    # never walks (and so never writes to) these objects. They stay frozen there: unfreezing
    # cost a full walk of the heap in every new template process (about 6 ms each, measured).
    gc.freeze()
    _main._send(resp_fd, {"ready": True, "seccomp": supervisor.seccomp})
    supervisor.serve(req_fd, resp_fd)
