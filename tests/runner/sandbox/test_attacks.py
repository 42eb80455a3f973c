"""Issue 17's attack table: what template and callable code from a hostile benchmark tries, and
what the sandbox records for it, each attack run twice:

* with the audit hook in place: the hook refuses it, and the exact ``forbidden`` message is
  recorded (or, for what the hook does not watch, the kernel's answer);
* after switching the hook off first (the bypass issue 17 found, with today's names), so that
  only the kernel layers stand: the box (namespaces, read-only view, tmpfs), the seccomp filter,
  "not dumpable" and the rlimits. The attack code then records the error it met.

Every row also checks that nothing outside the box changed: a canary store folder with a
``.env`` beside it (byte-identical, same mtimes, no new files, its secret in no outcome), the
host side of each worker (only its stderr file, small), the runner alive and answering, another
template's verdict in the same run unchanged; and at the end no process of any box is left.

Network rows aim only at a listener this test opens on 127.0.0.1, which records any contact.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from karenina_rdf.runner import Limits, Sandbox, SandboxOutcome
from karenina_rdf.runner.sandbox._process import isolation_unavailable

from .test_sandbox import GOOD, box_processes

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        isolation_unavailable() is not None, reason=f"no kernel isolation here: {isolation_unavailable()}"
    ),
]

SECRET = "sk-canary-9f2c1e"
# The bypass issue 17 found (`..._sandbox_worker.Guard._refuse = lambda self, what: None`), with
# today's module name: the hook then neither raises nor records anything.
HOOK_OFF = "import sys\nsys.modules['_karenina_sandbox._main'].Guard._refuse = lambda self, what: None\n"


FIRST_BOX: set[int] = set()  # the host pid of the box the attacks start with


class Canary(NamedTuple):
    root: Path
    store: Path
    env: Path


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()
    }


def _template(body: str) -> str:
    """A valid template whose verify() runs ``body``, which sets ``result``; whatever it raises
    becomes the result instead, so the attack reports what it met."""
    indented = "\n".join("            " + line for line in body.splitlines())
    return f"""
class Answer(BaseAnswer):
    target: str = Field(description="anything")

    def verify(self) -> bool:
        result = "done"
        try:
{indented}
        except BaseException as exc:
            result = f"{{type(exc).__name__}}: {{exc}}"
        self.result = str(result)[:300]
        return True
"""


class Row(NamedTuple):
    name: str
    body: str  # sets ``result``; {STORE}, {ENV}, {PORT} are filled in
    hook_on: str  # "forbidden: ..." (the exact recorded failure) or "result: ..." (what the code met)
    hook_off: str


ORPHAN = """import os, time
pid = os.fork()
if pid == 0:
    os.setsid()
    time.sleep(1)
    open({STORE!r} + '/late.ttl', 'w').write('written after verify returned')
    os._exit(0)
result = 'forked'"""

ROWS = [
    Row(
        "the hook is really off (control)",
        "result = open('/usr/lib/os-release').read()[:4]",
        "forbidden: reading '/usr/lib/os-release' (outside the sandbox directory)",
        "result: PRET",
    ),
    Row(
        "read /etc/shadow",
        "result = open('/etc/shadow').read()",
        "forbidden: reading '/etc/shadow' (outside the sandbox directory)",
        "result: FileNotFoundError: [Errno 2] No such file or directory: '/etc/shadow'",
    ),
    Row(
        "read the .env beside the store",
        "result = open({ENV!r}).read()",
        "forbidden: reading '{ENV}' (outside the sandbox directory)",
        "result: FileNotFoundError: [Errno 2] No such file or directory: '{ENV}'",
    ),
    Row(
        "write into the store folder",
        "open({STORE!r} + '/evil.ttl', 'w').write('<a> <b> <c> .')",
        "forbidden: writing '{STORE}/evil.ttl' (outside the sandbox directory)",
        "result: FileNotFoundError: [Errno 2] No such file or directory: '{STORE}/evil.ttl'",
    ),
    Row(
        "fork + setsid orphan that writes into the store later",
        ORPHAN,
        "forbidden: starting a process (os.fork)",
        "result: PermissionError: [Errno 1] Operation not permitted",
    ),
    Row(
        "fork bomb",
        "import os\nwhile True:\n    os.fork()",
        "forbidden: starting a process (os.fork)",
        "result: PermissionError: [Errno 1] Operation not permitted",
    ),
    Row(
        "subprocess",
        "import subprocess\nsubprocess.run(['/bin/sh', '-c', 'touch /tmp/x'])",
        "forbidden: starting a process (import _posixsubprocess)",
        "result: PermissionError: [Errno 1] Operation not permitted",
    ),
    Row(
        "hide threads from the thread count",
        "import _thread, threading, time\n_thread._count = lambda: 0\n"
        "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\nresult = threading.active_count()",
        "result: 2",  # contained: the thread lives in this template's process alone, ended with the box
        "result: 2",
    ),
    Row(
        "ptrace the supervisor (ctypes)",
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "result = (libc.ptrace(16, os.getppid(), 0, 0), ctypes.get_errno())",
        "forbidden: using ctypes",
        "result: (-1, 1)",
    ),
    Row(
        "ctypes: unshare a new user namespace, fork",
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "result = (libc.unshare(0x10000000), ctypes.get_errno(), libc.fork(), ctypes.get_errno())",
        "forbidden: using ctypes",
        "result: (-1, 1, -1, 1)",
    ),
    Row(
        "read the supervisor's memory (/proc/<ppid>/mem)",
        "import os\nresult = open(f'/proc/{{os.getppid()}}/mem', 'rb').read(1)",
        "forbidden: reading '/proc/1/mem' (outside the sandbox directory)",
        "result: PermissionError: [Errno 13] Permission denied: '/proc/1/mem'",
    ),
    Row(
        "the supervisor's descriptors (/proc/<ppid>/fd)",
        "import os\nresult = open(f'/proc/{{os.getppid()}}/fd/1', 'wb')",
        # Found by this table: the hook's own path resolution raised PermissionError, which the
        # code could catch, and nothing was recorded; now any failure to check is a refusal.
        "forbidden: a path the sandbox cannot resolve (open: [Errno 13] Permission denied: '/proc/1/fd/1')",
        "result: PermissionError: [Errno 13] Permission denied: '/proc/1/fd/1'",
    ),
    Row(
        "the supervisor's environment (/proc/<ppid>/environ)",
        "import os\nresult = open(f'/proc/{{os.getppid()}}/environ', 'rb').read()",
        "forbidden: reading '/proc/1/environ' (outside the sandbox directory)",
        "result: PermissionError: [Errno 13] Permission denied: '/proc/1/environ'",
    ),
    Row(
        "signal the supervisor",
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
        "forbidden: signalling another process (os.kill)",
        "result: PermissionError: [Errno 1] Operation not permitted",
    ),
    Row(
        "signal every process it can (kill -1)",
        "import os, signal\nos.kill(-1, signal.SIGKILL)",
        "forbidden: signalling another process (os.kill)",
        "result: PermissionError: [Errno 1] Operation not permitted",
    ),
    Row(
        "signal PID 1 of the box (the supervisor) with SIGTERM",
        "import os, signal\nos.kill(1, signal.SIGTERM)",
        "forbidden: signalling another process (os.kill)",
        "result: PermissionError: [Errno 1] Operation not permitted",
    ),
    Row(
        "symlink in the temp dir to the store, then write through it",
        "import os\nos.symlink({STORE!r}, 'store')\nopen('store/evil.ttl', 'w').write('x')",
        "forbidden: creating links (os.symlink)",
        "result: FileNotFoundError: [Errno 2] No such file or directory: 'store/evil.ttl'",
    ),
    Row(
        "symlink to the worker package for the supervisor's clean-up, then exit",
        "import os\nos.symlink('/run/karenina/worker', 'pkg')\nos.symlink('/tmp', 'box')\nos._exit(0)",
        "forbidden: creating links (os.symlink)",
        "crashed: the sandbox worker exited with status 0",  # cleaned up without following the links
    ),
    Row(
        "fill the disk",
        "import os\nn = 0\ntry:\n    while True:\n        open(f'fill{{n}}', 'wb').write(b'x' * 2 ** 20)\n"
        "        n += 1\nfinally:\n    for i in range(n + 1):\n        if os.path.exists(f'fill{{i}}'):\n"
        "            os.remove(f'fill{{i}}')",
        "result: OSError: [Errno 28] No space left on device",
        "result: OSError: [Errno 28] No space left on device",
    ),
    Row(
        # Found by this table's author: bubblewrap's root and /dev are tmpfs without a size limit,
        # and were writable: a way around the /tmp limit into the host's memory.
        "fill memory through /dev/shm",
        "open('/dev/shm/x', 'wb').write(b'x' * 2 ** 20)",
        "forbidden: writing '/dev/shm/x' (outside the sandbox directory)",
        "result: OSError: [Errno 30] Read-only file system: '/dev/shm/x'",
    ),
    Row(
        "fill memory through the box's root",
        "open('/x', 'wb').write(b'x' * 2 ** 20)",
        "forbidden: writing '/x' (outside the sandbox directory)",
        "result: OSError: [Errno 30] Read-only file system: '/x'",
    ),
    Row(
        "one file past the file size limit",
        "import os\nfd = os.open('big', os.O_WRONLY | os.O_CREAT)\nos.pwrite(fd, b'x', 300 * 2 ** 20)",
        "result: OSError: [Errno 27] File too large",
        "result: OSError: [Errno 27] File too large",
    ),
    Row(
        "huge stdout and stderr",
        "import os, sys\nfor _ in range(64):\n    os.write(1, b'o' * 2 ** 20)\n    os.write(2, b'e' * 2 ** 20)",
        "result: done",  # stdout is /dev/null, stderr a file in the box's tmpfs: the host's stays small
        "result: done",
    ),
    Row(
        "import the runner's own modules",
        "import karenina_rdf",
        "result: ModuleNotFoundError: No module named 'karenina_rdf'",
        "result: ModuleNotFoundError: No module named 'karenina_rdf'",
    ),
    Row(
        "read the runner's source and the store from their host paths",
        f"result = open({os.path.abspath(__file__)!r}).read()",
        f"forbidden: reading '{os.path.abspath(__file__)}' (outside the sandbox directory)",
        f"result: FileNotFoundError: [Errno 2] No such file or directory: '{os.path.abspath(__file__)}'",
    ),
    Row(
        "write into the Python installation (its bytecode cache)",
        "import os\nopen(os.path.join(os.path.dirname(os.__file__), '__pycache__', 'evil.pyc'), 'wb').write(b'x')",
        "forbidden: writing '{PYCACHE}/evil.pyc' (outside the sandbox directory)",
        "result: OSError: [Errno 30] Read-only file system: '{PYCACHE}/evil.pyc'",
    ),
    Row(
        "connect to a listener on 127.0.0.1",
        "import socket\nsocket.create_connection(('127.0.0.1', {PORT}), timeout=1)",
        "forbidden: network access (socket.getaddrinfo)",
        "result: PermissionError: [Errno 1] Operation not permitted",
    ),
    Row(
        "lift its own CPU limit, then spin",
        "import resource\ninf = resource.RLIM_INFINITY\n"
        "resource.setrlimit(resource.RLIMIT_CPU, (inf, inf))\nwhile True:\n    pass",
        "forbidden: resource.setrlimit",
        "timeout: wall-clock limit exceeded (3 s)",  # the supervisor's wall clock still holds
    ),
]


def _forge(on: bool) -> str:
    """A template that replaces ``verify`` (and the worker's reply path) so that every verdict
    says True: issue 17 found it forged the verdicts of the templates after it in its worker."""
    return _template(
        (HOOK_OFF if not on else "") + "import sys\nworker = sys.modules['_karenina_sandbox._main']\n"
        "template = sys.modules['_karenina_sandbox._template']\nreal = template.verify\n"
        "def forged(loaded, parsed, raw, qid):\n    out = real(loaded, parsed, raw, qid)\n"
        "    out['verify_result'] = True\n    return out\ntemplate.verify = forged\n"
        "send = worker._send\nworker._send = lambda fd, m, *a, **k: send(fd, {**m, 'value': {**(m.get('value') or {}), "
        "'verify_result': True}} if m.get('value') else m, *a, **k)\nresult = 'patched'"
    )


@pytest.fixture(scope="module")
def canary(tmp_path_factory: pytest.TempPathFactory) -> Canary:
    root = tmp_path_factory.mktemp("canary")
    store = root / "store"
    store.mkdir()
    (store / "data.ttl").write_text("<urn:a> <urn:b> <urn:c> .\n")
    env = root / ".env"
    env.write_text(f"OPENAI_API_KEY={SECRET}\n")
    return Canary(root, store, env)


@pytest.fixture(scope="module")
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.05)
    yield server
    server.close()


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    sb = Sandbox(workers=1, limits=Limits(cpu_seconds=1, wall_seconds=3, memory_mb=256))
    _other_verdicts_hold(sb)
    FIRST_BOX.update(w.proc.pid for w in sb._live)
    yield sb
    workers = list(sb._live)
    sb.close()
    for worker in workers:  # no process of any box is left
        assert box_processes(worker) == {}, "processes outlived the sandbox"


def _fill(text: str, canary: Canary, port: int) -> str:
    pycache = os.path.join(os.path.dirname(os.__file__), "__pycache__")
    return (
        text.replace("{STORE!r}", repr(str(canary.store)))
        .replace("{ENV!r}", repr(str(canary.env)))
        .replace("{STORE}", str(canary.store))
        .replace("{ENV}", str(canary.env))
        .replace("{PORT}", str(port))
        .replace("{PYCACHE}", os.path.realpath(pycache))
        .replace("{{", "{")
        .replace("}}", "}")
    )


def _recorded(outcome: SandboxOutcome) -> str:
    """The outcome as the table states it."""
    if outcome.ok:
        assert outcome.value["verify_result"] is True, outcome
        return f"result: {outcome.value['parsed_llm_response']['result']}"
    if outcome.kind == "forbidden":
        return str(outcome.error)
    return f"{outcome.kind}: {outcome.error}"


def _nothing_outside_changed(sb: Sandbox, canary: Canary, before: dict[str, tuple[bytes, int]], *texts: str) -> None:
    assert _snapshot(canary.root) == before
    assert not any(SECRET in t for t in texts)
    for worker in list(sb._live):  # the host side of a worker: its stderr file, small, and nothing else
        assert os.listdir(worker.tmpdir) == [".worker-stderr"]
        assert os.path.getsize(os.path.join(worker.tmpdir, ".worker-stderr")) < 65536


def _other_verdicts_hold(sb: Sandbox) -> None:
    right = sb.verify_template(GOOD, {"target": "bcr-abl"}, "It targets BCR-ABL.", "q1")
    wrong = sb.verify_template(GOOD, {"target": "EGFR"}, "It targets EGFR.", "q2")
    assert right.ok and right.value["verify_result"] is True, right
    assert wrong.ok and wrong.value["verify_result"] is False, wrong


@pytest.mark.parametrize("hook", ["hook on", "hook off"])
@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_template_attack(
    sandbox: Sandbox, canary: Canary, listener: socket.socket, row: Row, hook: str, record: dict[str, Any]
) -> None:
    port = listener.getsockname()[1]
    before = _snapshot(canary.root)
    body = _fill(row.body, canary, port)
    code = _template((HOOK_OFF if hook == "hook off" else "") + body)
    outcome = sandbox.verify_template(code, {"target": "x"}, "raw", None)
    got = _recorded(outcome)
    record[(row.name, hook)] = got
    expected = _fill(row.hook_on if hook == "hook on" else row.hook_off, canary, port)
    assert got == expected, outcome
    if "orphan" in row.name:
        time.sleep(1.5)  # what an orphan would have written by now
    with pytest.raises(TimeoutError):
        listener.accept()  # nothing ever reached the listener
    _nothing_outside_changed(sandbox, canary, before, got, json.dumps(outcome.value))
    _other_verdicts_hold(sandbox)


@pytest.mark.parametrize("hook", ["hook on", "hook off"])
def test_forging_other_templates_verdicts(sandbox: Sandbox, canary: Canary, hook: str) -> None:
    """A template replaces ``verify`` on every answer class it can reach and the worker's reply
    function: its own result says "patched", and another template's verdicts, right and wrong,
    stay what they are (it runs in a process of its own)."""
    before = _snapshot(canary.root)
    forger = sandbox.verify_template(_forge(hook == "hook on"), {"target": "x"}, "raw", None)
    assert forger.ok and forger.value["parsed_llm_response"]["result"] == "patched", forger
    # Another template (another process) keeps its own verdicts, right and wrong.
    _other_verdicts_hold(sandbox)
    _nothing_outside_changed(sandbox, canary, before, json.dumps(forger.value))


def _pickle_running(code: str) -> str:
    class Evil:
        def __reduce__(self) -> tuple[Any, ...]:
            return (exec, (code,))

    return base64.b64encode(pickle.dumps(Evil())).decode()


@pytest.mark.parametrize(
    ("hook", "expected"),
    [
        ("hook on", ("forbidden", "forbidden: reading '{ENV}' (outside the sandbox directory)")),
        (
            "hook off",
            # 32512: glibc's system() when it cannot start the shell (posix_spawn refused: exit status 127)
            (
                "exception",
                "RuntimeError: FileNotFoundError: [Errno 2] No such file or directory: '{ENV}'; system: 32512",
            ),
        ),
    ],
)
def test_malicious_pickle_in_a_callable(
    sandbox: Sandbox, canary: Canary, listener: socket.socket, hook: str, expected: tuple[str, str]
) -> None:
    """A callable trait's payload is a pickle that runs code while it is unpickled: read the .env,
    run a shell that would write into the store, and report both in the error it raises."""
    before = _snapshot(canary.root)
    code = (HOOK_OFF if hook == "hook off" else "") + (
        f"import os\ntry:\n    seen = open({str(canary.env)!r}).read()\nexcept BaseException as exc:\n"
        "    seen = f'{type(exc).__name__}: {exc}'\n"
        f"status = os.system('echo x > {canary.store}/pwned.ttl')\n"
        "raise RuntimeError(f'{seen}; system: {status}')"
    )
    outcome = sandbox.run_callable(_pickle_running(code), "text")
    kind, message = expected
    assert (outcome.kind, outcome.error) == (kind, _fill(message, canary, 0)), outcome
    _nothing_outside_changed(sandbox, canary, before, str(outcome.error))
    _other_verdicts_hold(sandbox)


def test_the_box_survives_its_init_and_supervisor_being_targeted(sandbox: Sandbox) -> None:
    """After every attack above the box is still the one it was: same box, the same supervisor
    as PID 1, still answering."""
    (worker,) = list(sandbox._live)
    assert {worker.proc.pid} == FIRST_BOX
    assert 1 in box_processes(worker).values()
    _other_verdicts_hold(sandbox)


@pytest.fixture(scope="module")
def record() -> Iterator[dict[tuple[str, str], str]]:
    """What each attack returned, written to ATTACKS_OUT (if set) for the docs."""
    results: dict[tuple[str, str], str] = {}
    yield results
    out = os.environ.get("KARENINA_ATTACKS_OUT")
    if out:
        Path(out).write_text(json.dumps([[name, hook, got] for (name, hook), got in results.items()], indent=1))


def test_a_stderr_file_swapped_for_a_link_is_not_followed(sandbox: Sandbox, canary: Canary) -> None:
    """The supervisor reads the end of a dead template process's stderr file into the failure
    reason. Code that replaced that file with a link (to the supervisor's own descriptors, its
    environment) gets no tail at all: the link is not followed."""
    before = _snapshot(canary.root)
    body = (
        HOOK_OFF + "import os\npath = os.readlink('/proc/self/fd/2')\nos.remove(path)\n"
        "os.symlink('/proc/1/environ', path)\nos._exit(3)"
    )
    outcome = sandbox.verify_template(_template(body), {"target": "x"}, "raw", None)
    assert (outcome.kind, outcome.error) == ("crashed", "the sandbox worker exited with status 3"), outcome
    _nothing_outside_changed(sandbox, canary, before, str(outcome.error))
    _other_verdicts_hold(sandbox)
