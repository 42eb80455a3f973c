"""A template process: the process ``_supervisor`` forks for one template (or callable) and
that runs its code, one request at a time, under the audit hook defined here.

Set-up (``_supervisor._child`` then ``serve_guarded``), in order: its own working directory,
resource limits (address space, written file size, open files, no core dumps, no new processes
when ``max_processes`` is 0), the seccomp filter (``_seccomp``), then the audit hook. Everything
after that, this module's own request loop included, runs under the hook.

The audit hook (PEP 578) refuses, raising ``SandboxViolation``: reads outside the temporary
directory, the Python installation and the runner package; writes outside the temporary
directory; opening directories (so no path can be given relative to a directory descriptor the
hook cannot see); links; sockets, name lookups and URL openers; more new processes than
``max_processes``; signalling processes; ctypes, sub-interpreters and the C modules that open
files themselves (sqlite3, dbm, readline, POSIX shared memory); compiled modules from outside the
installation; changing resource limits; tracing, profiling and ``gc`` object walks (ways to
reach the hook's own state). ``os.mkfifo``, ``os.mknod`` and ``os.pidfd_open``, which are not
audited, are removed. A refusal is also recorded, so code that catches the exception still ends
as a ``forbidden`` outcome, and a template whose loading was refused is never cached.

What the hook cannot see: code inside extension modules, metadata calls such as ``os.stat``,
and anything done by a child process started under ``max_processes``; the module docstring of
``runner.sandbox._pool`` lists the kernel layers that contain those. Code that switches the hook
off (its objects are reachable from the code it guards) meets those layers alone.

Requests and replies are length-prefixed JSON on two pipes to the supervisor (never pickle).
This module runs in the same interpreter as the code it serves: a template can replace its
functions (``_send``, ``_handle``) and so forge its own replies, but this process serves that
one template only, and the supervisor checks each reply's shape and request id and ends the
process when it is not a reply to the request.

The exec'd template class (or unpickled callable) is cached by the SHA-256 of its source, so a
template is executed once per template process however often it is verified.
"""

from __future__ import annotations

import _thread
import hashlib
import json
import os
import resource
import shutil
import signal
import struct
import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NoReturn

from . import _template

HEADER = struct.Struct(">I")
ID_SIZE = 16
CACHE_SIZE = 512
_PROCESS_EVENTS = frozenset(
    {"os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "subprocess.Popen", "pty.spawn"}
)
_ALWAYS_REFUSED = frozenset(
    {
        "os.symlink",
        "os.link",
        "os.kill",
        "os.killpg",
        "signal.pthread_kill",
        "resource.setrlimit",
        "resource.prlimit",
        "sys.settrace",
        "sys.setprofile",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "webbrowser.open",
    }
)
_REFUSED_PREFIXES = ("socket.", "ctypes.", "syslog.", "urllib.", "http.client.")
# Modules refused outright: each gives a way around the hook (C code that opens files or
# memory itself, interpreters without the hook).
_REFUSED_IMPORTS = {
    "ctypes": "using ctypes",
    "_ctypes": "using ctypes",
    "_sqlite3": "file access the sandbox cannot check (import _sqlite3)",
    "_dbm": "file access the sandbox cannot check (import _dbm)",
    "_gdbm": "file access the sandbox cannot check (import _gdbm)",
    "readline": "file access the sandbox cannot check (import readline)",
    "_posixshmem": "shared memory outside the sandbox directory",
    "_xxsubinterpreters": "sub-interpreters, which run without the audit hook",
    "_xxinterpchannels": "sub-interpreters, which run without the audit hook",
    "_testcapi": "CPython's internal test modules",
    "_testinternalcapi": "CPython's internal test modules",
}
# Audited calls that change a file: the position of their path argument and of their dir_fd.
_WRITE_EVENTS: dict[str, tuple[int, int | None]] = {
    "os.mkdir": (0, 2),
    "os.rmdir": (0, 1),
    "os.remove": (0, 1),
    "os.chmod": (0, 2),
    "os.chown": (0, 3),
    "os.utime": (0, 3),
    "os.truncate": (0, None),
    "os.chflags": (0, None),
    "os.lchflags": (0, None),
    "os.setxattr": (0, None),
    "os.removexattr": (0, None),
    "os.chdir": (0, None),
}
_WRITE_MODE = frozenset("wax+")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class SandboxViolation(PermissionError):
    pass


def inside(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


class Guard:
    """The audit hook's policy and the record of what it refused.

    Paths are resolved (symlinks included) before they are compared with the allowed roots.
    No directory can be opened, so no call can name a file relative to a directory descriptor:
    every path the hook sees is relative to the working directory or absolute.
    """

    def __init__(
        self,
        read_roots: list[str],
        write_roots: list[str],
        code_roots: list[str],
        private_fds: set[int],
        processes: int,
    ) -> None:
        self.read_roots = tuple(os.path.realpath(r) for r in read_roots)
        self.write_roots = tuple(os.path.realpath(r) for r in write_roots)
        self.code_roots = tuple(os.path.realpath(r) for r in code_roots)
        self.private_fds = frozenset(private_fds)
        self.process_budget = processes
        self.processes_started = 0
        self.refused_imports = dict(_REFUSED_IMPORTS)
        if not processes:  # subprocess, multiprocessing and os.popen all need it
            self.refused_imports["_posixsubprocess"] = "starting a process (import _posixsubprocess)"
        self.violation: str | None = None
        self._busy = False

    def take(self) -> str | None:
        found, self.violation = self.violation, None
        return found

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if self._busy:  # our own path resolution below must not re-enter the policy
            return
        if event in _ALWAYS_REFUSED or event.startswith(_REFUSED_PREFIXES):
            self._refuse(_describe(event, args))
        if event == "open" or event in _WRITE_EVENTS or event in ("os.listdir", "os.scandir", "os.rename"):
            self._busy = True
            try:
                self._check_file_event(event, args)
            except SandboxViolation:
                raise
            except Exception as exc:  # e.g. realpath meeting a link it may not read (/proc/<pid>/fd/...)
                self._refuse(f"a path the sandbox cannot resolve ({event}: {exc})")
            finally:
                self._busy = False
        elif event in _PROCESS_EVENTS:
            if self.processes_started >= self.process_budget:
                self._refuse(f"starting a process ({event})")
            self.processes_started += 1
        elif event == "import" and args:
            if args[0] in self.refused_imports:
                self._refuse(self.refused_imports[args[0]])
            # A second "import" event names the file of a compiled extension about to be loaded.
            if len(args) > 1 and isinstance(args[1], str) and not inside(os.path.realpath(args[1]), self.code_roots):
                self._refuse(f"loading compiled code from {args[1]!r}")

    def _refuse(self, what: str) -> NoReturn:
        message = f"forbidden: {what}"
        if self.violation is None:
            self.violation = message
        raise SandboxViolation(message)

    def _check_file_event(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open":  # (path or fd, mode or None, flags)
            target, mode, flags = (*args, None, None, None)[:3]
            if isinstance(target, int):  # wraps a descriptor that was itself opened under the rules
                if target in self.private_fds:
                    self._refuse("opening the sandbox's own pipes")
                return
            writing = (isinstance(mode, str) and bool(_WRITE_MODE & set(mode))) or (
                isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
            )
            resolved = self._check(target, writing)
            if os.path.isdir(resolved):
                self._refuse(f"opening the directory {resolved!r}")
        elif event in ("os.listdir", "os.scandir"):
            if not isinstance(args[0], int):
                self._check("." if args[0] is None else args[0], False)
        elif event == "os.rename":  # (src, dst, src_dir_fd, dst_dir_fd)
            self._no_dir_fd(args[2:4])
            self._check(args[0], True)
            self._check(args[1], True)
        else:
            path_at, dir_fd_at = _WRITE_EVENTS[event]
            if dir_fd_at is not None:
                self._no_dir_fd(args[dir_fd_at : dir_fd_at + 1])
            self._check(args[path_at], True)

    def _no_dir_fd(self, values: tuple[Any, ...]) -> None:
        if any(isinstance(v, int) and v >= 0 for v in values):  # CPython passes -1 for "none given"
            self._refuse("a path relative to a directory descriptor")

    def _check(self, target: Any, writing: bool) -> str:
        if isinstance(target, int):  # fchmod, ftruncate and friends act on the file behind the descriptor
            try:
                resolved = os.readlink(f"/proc/self/fd/{target}")
            except OSError:
                self._refuse(f"an unknown file descriptor ({target})")
        else:
            try:
                path = os.fsdecode(os.fspath(target))
            except TypeError:
                self._refuse(f"a path of type {type(target).__name__}")
            resolved = os.path.realpath(os.path.join(os.getcwd(), path))
        if not inside(resolved, self.write_roots if writing else self.read_roots):
            self._refuse(f"{'writing' if writing else 'reading'} {resolved!r} (outside the sandbox directory)")
        return resolved


def _describe(event: str, args: tuple[Any, ...]) -> str:
    if event.startswith(("socket.", "urllib.", "http.client.")):
        return f"network access ({event})"
    if event in ("os.kill", "os.killpg", "signal.pthread_kill"):
        return f"signalling another process ({event})"
    if event in ("os.symlink", "os.link"):
        return f"creating links ({event})"
    return event


def set_limits(cfg: dict[str, Any]) -> None:
    with open("/proc/self/status") as status:
        vm_kb = next((int(line.split()[1]) for line in status if line.startswith("VmSize:")), 0)
    # Never below what the warmed-up worker already maps, or it could not even reply.
    address_space = max(cfg["memory_mb"], vm_kb // 1024 + 64) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["memory_mb"] * 1024 * 1024,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))
    if cfg["max_processes"] == 0:
        # Ignored by the kernel for uid 0; for any other user it stops fork() even from ctypes.
        resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))


WARM_UP = """
class Answer(BaseAnswer):
    name: str = Field(description="a name")
    n: Optional[int] = VerifiedField(description="n", ground_truth=1, verify_with=NumericExact())
    def ground_truth(self):
        self.correct = {"name": "x"}
        self.regex = {"r": {"pattern": "x", "expected": "x"}}
    def verify(self):
        return self.name == "x"
"""


def serve_guarded(req_fd: int, resp_fd: int, tmpdir: str, cfg: dict[str, Any]) -> None:
    """Serve requests in this (template) process under the audit hook, until the pipe closes or
    the code it ran taints it."""
    # Unaudited ways to signal processes (pidfd) or to create files anywhere (fifo, device node).
    for name in ("pidfd_open", "mkfifo", "mknod"):
        if hasattr(os, name):
            delattr(os, name)
    shutil._use_fd_functions = False  # type: ignore[attr-defined]  # rmtree by path: directories cannot be opened
    code_roots = [os.path.dirname(os.path.abspath(__file__)), *cfg["python_roots"]]
    read_roots = [tmpdir, "/dev/null", "/dev/urandom", *code_roots]
    guard = Guard(read_roots, [tmpdir, "/dev/null"], code_roots, {req_fd, resp_fd}, cfg["max_processes"])
    sys.addaudithook(guard.hook)
    _serve(req_fd, resp_fd, tmpdir, guard)


def _serve(req_fd: int, resp_fd: int, tmpdir: str, guard: Guard) -> None:
    templates: OrderedDict[str, _template.LoadedTemplate | str] = OrderedDict()
    callables: OrderedDict[str, Callable[[str], Any]] = OrderedDict()
    while True:
        request = _receive(req_fd)
        if request is None:  # the parent closed the pipe: shut down
            return
        guard.processes_started = 0
        reply = _handle(request, templates, callables, guard)
        violation = guard.take()
        if violation is not None:
            reply = {"ok": False, "kind": "forbidden", "error": violation}
        # Threads, child processes or a replaced SIGXCPU handler would outlive this call: the
        # parent replaces the worker, and killing its process group ends the children too.
        tainted = (
            _thread._count() > 0
            or guard.processes_started > 0
            or signal.getsignal(signal.SIGXCPU) is not signal.SIG_DFL
        )
        try:
            if os.getcwd() != tmpdir:
                os.chdir(tmpdir)
        except OSError:  # the code removed its own working directory
            tainted = True
        reply.update(id=request.get("id"), retire=bool(reply.get("retire")) or tainted)
        _send(resp_fd, reply, strict=request.get("op") == "callable")
        if reply["retire"]:
            return


def _handle(
    request: dict[str, Any],
    templates: OrderedDict[str, _template.LoadedTemplate | str],
    callables: OrderedDict[str, Callable[[str], Any]],
    guard: Guard,
) -> dict[str, Any]:
    try:
        op = request["op"]
        if op == "callable":
            fn = _cached(callables, request["payload"], _template.load_callable, guard)
            return {"ok": True, "value": fn(request["text"])}  # _send checks that it is JSON
        loaded = _cached(templates, request["code"], _load_or_reason, guard)
        if isinstance(loaded, str):
            return {"ok": False, "kind": "exception", "error": loaded}
        if op == "validate":
            return {"ok": True, "value": loaded.info}
        value = _template.verify(loaded, request.get("parsed"), request.get("raw", ""), request.get("question_id"))
        return {"ok": True, "value": value}
    except MemoryError:
        return {"ok": False, "kind": "memory", "error": "memory limit exceeded (MemoryError)", "retire": True}
    except _template.ParseFailure as exc:
        return {"ok": False, "kind": "exception", "error": str(exc)}
    except BaseException as exc:  # SystemExit and friends from user code must not end the worker
        return {"ok": False, "kind": "exception", "error": f"{type(exc).__name__}: {exc}"}


def _load_or_reason(code: str) -> _template.LoadedTemplate | str:
    try:
        return _template.load_template(code)
    except _template.TemplateInvalid as exc:
        return str(exc)  # cached too: a broken template stays broken


def _cached(cache: OrderedDict[str, Any], source: str, build: Callable[[str], Any], guard: Guard) -> Any:
    key = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    built = build(source)
    if guard.violation is None:  # a refused operation during loading must be refused every time
        cache[key] = built
        if len(cache) > CACHE_SIZE:
            cache.popitem(last=False)
    return built


def _json_fallback(value: Any) -> Any:
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return repr(value)


def _send(fd: int, message: dict[str, Any], strict: bool = False) -> None:
    """Write one message. ``strict``: a callable trait's value must be JSON as it is (no fallback),
    since its type is the trait's result."""
    try:
        body = json.dumps(message, default=None if strict else _json_fallback).encode()
    except MemoryError:
        failure = {"ok": False, "kind": "memory", "error": "memory limit exceeded (MemoryError)"}
        body = json.dumps({**failure, "id": message.get("id"), "retire": True}).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        value = message.get("value")
        error = f"callable returned a {type(value).__name__}" if strict else f"result is not JSON-serialisable: {exc}"
        failure = {"ok": False, "kind": "exception", "error": error}
        body = json.dumps({**failure, "id": message.get("id"), "retire": bool(message.get("retire"))}).encode()
    data = HEADER.pack(len(body)) + body
    while data:
        data = data[os.write(fd, data) :]


def read_frame(fd: int) -> bytes | None:
    """One length-prefixed frame, header included; None at end of file (the supervisor reads
    its requests with this too)."""
    buffer = bytearray()
    size: int | None = None
    while size is None or len(buffer) < HEADER.size + size:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return None
        buffer += chunk
        if size is None and len(buffer) >= HEADER.size:
            size = HEADER.unpack_from(buffer)[0]
    return bytes(buffer)


def _receive(fd: int) -> dict[str, Any] | None:
    """One request: header, request id (ID_SIZE ASCII bytes), JSON body."""
    buffer = read_frame(fd)
    if buffer is None:
        return None
    start = HEADER.size + ID_SIZE
    request = dict(json.loads(buffer[start:]))
    request["id"] = buffer[HEADER.size : start].decode("ascii")
    return request
