"""The parent's handle on one sandbox worker: starting it in a box of its own (bubblewrap: fresh
user, PID, mount, IPC, UTS, cgroup and network namespaces, see ``box_command``) or, when the
user asked for no isolation, as today's plain process (in fresh user and network namespaces when
the host allows); talking to it over its two pipes with deadlines, and telling why it died.
``_pool`` pools these; ``worker._supervisor`` is the code on the other end, and it forks a
process per template inside the box.

Nothing a worker says about itself is trusted beyond the reply it was asked for: a reply that
breaks the protocol ends the worker (the whole box) at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
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
Isolation = Literal["kernel", "unsafe-none"]
UNSAFE_FLAG = "--unsafe-no-isolation"

# The worker package and nothing else goes on the worker's path: runner/worker/ holds only what
# runs inside the sandbox.
WORKER_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "worker")
MAX_REPLY_BYTES = 64 * 1024 * 1024
START_TIMEOUT = 60.0
# The supervisor inside the box enforces the wall clock on the template process; the parent waits
# this much longer before it gives up on the supervisor itself and kills the whole box.
BACKSTOP_SECONDS = 5.0
BOX_WORKER_DIR = "/run/karenina/worker"
BOX_TMPDIR = "/tmp"
_BOOTSTRAP = (
    "import sys, types, importlib\n"
    "package = types.ModuleType('_karenina_sandbox')\n"
    "package.__path__ = [sys.argv[1]]\n"
    "sys.modules['_karenina_sandbox'] = package\n"
    "importlib.import_module('_karenina_sandbox._supervisor').main(sys.argv[2])\n"
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


def _outermost(paths: list[str]) -> list[str]:
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


def box_command(tmpfs_bytes: int) -> list[str]:
    """The bubblewrap command line that starts a worker in a box: every namespace new (user,
    PID, mount, IPC, UTS, cgroup, network: no interface but a down loopback), no capabilities,
    no new privileges, no further user namespaces, a session of its own, killed with the
    parent; in sight only /usr (and the /bin, /lib, /lib64, /sbin links or folders), the Python
    installation read-only, the worker package read-only at a fixed path, fresh /proc and /dev
    (read-only, so no /dev/shm), and one size-limited tmpfs, /tmp, the only writable place. No /etc, /home, /root, store
    folder or working directory; the environment is cleared."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise OSError("bubblewrap (bwrap) is not installed")
    args = [
        bwrap,
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        # No bubblewrap init as PID 1: it stays dumpable, so template code could open its
        # /proc/1/mem and fd/ (its stderr is a file on the host). The supervisor is PID 1, not
        # dumpable, spared by the kernel from signals sent inside the namespace, and reaps.
        "--as-pid-1",
        "--cap-drop",
        "ALL",
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "HOME",
        BOX_TMPDIR,
        "--setenv",
        "TMPDIR",
        BOX_TMPDIR,
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for top in ("/bin", "/lib", "/lib64", "/lib32", "/libx32", "/sbin"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for root in _outermost([r for r in _python_roots() if os.path.isdir(r)]):
        if root != "/usr" and not root.startswith("/usr/"):
            args += ["--ro-bind", root, root]
    executable_dir = os.path.dirname(os.path.realpath(sys.executable))
    if not any(executable_dir == r or executable_dir.startswith(r + "/") for r in ["/usr", *_python_roots()]):
        args += ["--ro-bind", executable_dir, executable_dir]
    args += ["--ro-bind", WORKER_DIR, BOX_WORKER_DIR, "--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
    args += ["--size", str(tmpfs_bytes), "--perms", "0700", "--tmpfs", BOX_TMPDIR, "--chdir", BOX_TMPDIR]
    # bubblewrap's own root and /dev are tmpfs without a size limit: left writable, they were a
    # way around the /tmp limit into the host's memory (/f0, /dev/shm/f0). Read-only, both.
    args += ["--remount-ro", "/"]
    return args


_isolation_problem: list[str | None] = []


def isolation_unavailable() -> str | None:
    """Why this host cannot box template code (probed once), or None when it can."""
    with _probe_lock:
        if not _isolation_problem:
            _isolation_problem.append(_probe_isolation())
        return _isolation_problem[0]


def _probe_isolation() -> str | None:
    if not sys.platform.startswith("linux") or platform.machine() != "x86_64":
        return f"the seccomp filter is written for Linux on x86-64, not {sys.platform} on {platform.machine()}"
    try:
        command = box_command(1 << 20)
    except OSError as exc:
        return str(exc)
    try:
        probe = subprocess.run(
            [*command, sys.executable, "-I", "-S", "-c", "import os; os.listdir('/tmp')"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not be run: {exc}"
    if probe.returncode != 0:
        said = probe.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"bubblewrap cannot create the namespaces here ({said[-1] if said else f'status {probe.returncode}'})"
    return None


class WorkerGone(Exception):
    pass


class ProtocolViolation(WorkerGone):
    """A worker that is still running sent something that is not a reply to the request: code it
    ran has taken over its reply path, so nothing else it sends can be believed."""


class WorkerProcess:
    """One worker (a box, or with ``isolation="unsafe-none"`` a plain process) as the parent sees
    it. Used by one thread at a time."""

    def __init__(self, limits: Limits, isolation: Isolation = "kernel") -> None:
        self.limits = limits
        self.isolation = isolation
        self.ready = False
        self.killed = False
        self.seccomp = False  # whether the supervisor put its template processes under the filter
        # Host side: the worker's stderr (and, unboxed, its working directory). Never in the box.
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
        boxed = isolation == "kernel"
        config = {
            "req_fd": req_r,
            "resp_fd": resp_w,
            "tmpdir": BOX_TMPDIR if boxed else self.tmpdir,
            "memory_mb": limits.memory_mb,
            "max_processes": limits.max_processes,
            "cpu_seconds": limits.cpu_seconds,
            "wall_seconds": limits.wall_seconds,
            "python_roots": _python_roots(),
            "boxed": boxed,
            "seccomp": True,
        }
        env = {"PATH": os.defpath, "HOME": self.tmpdir, "TMPDIR": self.tmpdir, "LANG": "C.UTF-8"}
        try:
            if boxed:
                prefix = box_command(limits.memory_mb * 1024 * 1024)
                worker_dir = BOX_WORKER_DIR
            else:
                prefix, worker_dir = namespace_prefix(), WORKER_DIR
            with open(os.path.join(self.tmpdir, ".worker-stderr"), "wb") as stderr:
                self.proc = subprocess.Popen(
                    [*prefix, sys.executable, "-I", "-B", "-c", _BOOTSTRAP, worker_dir, json.dumps(config)],
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
            self.seccomp = hello.get("seccomp") is True  # said before any untrusted code ran
            self.ready = True

    def call(self, body: bytes, deadline: float) -> dict[str, Any]:
        """Send one JSON request and wait for its reply; raises TimeoutError or WorkerGone.
        ``deadline`` is the call's wall clock: the supervisor enforces it on the template process,
        and the parent gives the supervisor ``BACKSTOP_SECONDS`` more before it kills the box."""
        request_id = os.urandom(ID_SIZE // 2).hex()
        self._write(HEADER.pack(ID_SIZE + len(body)) + request_id.encode("ascii") + body, deadline)
        reply = self._read(deadline + BACKSTOP_SECONDS)
        if reply.get("id") != request_id:
            raise ProtocolViolation("the worker sent a reply to a different request (protocol tampering)")
        return reply

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
        """Why the worker (the supervisor, or the box around it) went away (reaps it)."""
        if isinstance(gone, ProtocolViolation) and not self._exited(0):
            self._reap()
            return "crashed", str(gone)
        self._exited(5)
        code = self._reap()
        if code < 0:
            name = signal.Signals(-code).name
            return "crashed", f"the sandbox worker died from signal {name}{self._stderr_tail()}"
        return "crashed", f"the sandbox worker exited with status {code}{self._stderr_tail()}"

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
