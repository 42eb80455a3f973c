"""The sandbox: template and callable code runs in worker processes under limits, every failure
comes back as a ``SandboxOutcome`` of the right kind, and the same sandbox keeps answering.

Network tests only ever aim at a listener this test opens on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

from karenina_rdf import InvalidValueError, VerificationError
from karenina_rdf.runner import Limits, Sandbox, SandboxOutcome
from karenina_rdf.runner.sandbox._pool import IsolationUnavailableError
from karenina_rdf.runner.sandbox._process import WorkerProcess, isolation_unavailable, namespace_prefix
from tests.conftest import CORPUS, EXAMPLES

GOOD = """
class Answer(BaseAnswer):
    target: str = Field(description="The kinase named as the primary target")

    def ground_truth(self):
        self.correct = {"target": "BCR-ABL"}

    def verify(self) -> bool:
        return "BCRABL" in self.target.upper().replace("-", "")
"""


# Every test that starts worker processes is marked slow (`-m "not slow"` leaves them out); only
# the one whose worker cannot even start is not.


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(workers=2, limits=Limits(cpu_seconds=1, wall_seconds=4, memory_mb=256)) as sb:
        yield sb


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, int]]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    yield server, server.getsockname()[1]
    server.close()


def _still_works(sb: Sandbox) -> None:
    outcome = sb.verify_template(GOOD, {"target": "bcr-abl"}, "It targets BCR-ABL.", "q1")
    assert outcome.ok, outcome
    assert outcome.value["verify_result"] is True


def _attack(body: str) -> str:
    """A valid template whose verify() runs ``body`` first."""
    indented = "\n".join("        " + line for line in body.splitlines())
    return f"""
class Answer(BaseAnswer):
    target: str = Field(description="anything")

    def verify(self) -> bool:
{indented}
        return True
"""


ATTACKS = [
    ("infinite loop", "while True:\n    pass", "cpu", "CPU time limit exceeded"),
    ("sleep", "import time\ntime.sleep(60)", "timeout", "wall-clock limit exceeded"),
    ("one huge allocation", "x = bytearray(4 * 1024 ** 3)", "memory", "memory limit exceeded"),
    ("growing list", "hoard = []\nwhile True:\n    hoard.append(' ' * 10 ** 6)", "memory", "memory limit"),
    ("fork bomb", "import os\nwhile True:\n    os.fork()", "forbidden", "starting a process (os.fork)"),
    ("subprocess", "import subprocess\nsubprocess.run(['true'])", "forbidden", "starting a process"),
    ("os.system", "import os\nos.system('true')", "forbidden", "starting a process (os.system)"),
    ("posix_spawn", "import os\nos.posix_spawn('/bin/true', ['true'], {})", "forbidden", "os.posix_spawn"),
    ("read /etc/passwd", "open('/etc/passwd').read()", "forbidden", "reading '/etc/passwd'"),
    ("list /", "import os\nos.listdir('/')", "forbidden", "reading '/'"),
    ("caught refusal", "try:\n    open('/etc/passwd')\nexcept Exception:\n    pass", "forbidden", "/etc/passwd"),
    ("escape via ..", "open('../../../../etc/hostname').read()", "forbidden", "reading '/etc/hostname'"),
    ("symlink out", "import os\nos.symlink('/etc/passwd', 'p')", "forbidden", "creating links"),
    ("ctypes", "import ctypes", "forbidden", "using ctypes"),
    ("signal the parent", "import os\nos.kill(os.getppid(), 0)", "forbidden", "signalling another process"),
    ("trace hooks", "import sys\nsys.settrace(lambda *a: None)", "forbidden", "sys.settrace"),
    (
        "compiled code from the sandbox directory",
        "import os, shutil, sys, _bz2\nshutil.copy(_bz2.__file__, '.')\ndel sys.modules['_bz2']\n"
        "sys.path.insert(0, os.getcwd())\nimport _bz2",
        "forbidden",
        "loading compiled code from",
    ),
    ("open a directory", "import os\nos.open('.', os.O_RDONLY)", "forbidden", "opening the directory"),
    (
        "chmod through a descriptor",
        "import os\nos.fchmod(os.open(os.__file__, os.O_RDONLY), 0o777)",
        "forbidden",
        "writing",
    ),
    ("sqlite", "import sqlite3\nsqlite3.connect('/tmp/x.db')", "forbidden", "cannot check (import _sqlite3)"),
    ("sub-interpreter", "import _xxsubinterpreters", "forbidden", "sub-interpreters"),
    ("fifo", "import os\nos.mkfifo('/tmp/karenina-fifo')", None, "AttributeError"),  # removed from os
    ("exit", "import os\nos._exit(3)", "crashed", "exited with status 3"),
    ("segfault", "import faulthandler\nfaulthandler._sigsegv()", "crashed", "SIGSEGV"),
    ("sys.exit", "raise SystemExit(4)", "exception", "SystemExit: 4"),  # unlike Exception, not a verify() result
    ("recursion", "def f():\n    return f()\nf()", None, "RecursionError"),  # an ordinary verify() failure
]


@pytest.mark.slow
@pytest.mark.parametrize(("body", "kind", "error"), [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_attacks_end_as_failed_outcomes_and_the_run_goes_on(
    sandbox: Sandbox, body: str, kind: str | None, error: str | None
) -> None:
    outcome = sandbox.verify_template(_attack(body), {"target": "x"}, "raw", None)
    if kind is None:
        assert outcome.ok and outcome.value["verify_result"] is False
        assert error in outcome.value["field_verification_error"]
    else:
        assert not outcome.ok
        assert outcome.kind == kind, outcome
        assert outcome.error is not None and error in outcome.error and len(outcome.error) <= 500
    _still_works(sandbox)


@pytest.mark.slow
def test_template_class_body_is_guarded_too(sandbox: Sandbox) -> None:
    code = GOOD + "\nimport os\nos.listdir('/root')\n"
    outcome = sandbox.validate_template(code)
    assert (outcome.ok, outcome.kind) == (False, "forbidden")
    assert sandbox.validate_template(code).kind == "forbidden"  # a refused load is never cached as valid
    _still_works(sandbox)


@pytest.mark.slow
def test_files_outside_the_sandbox_directory(sandbox: Sandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    read = sandbox.verify_template(_attack(f"open({str(secret)!r}).read()"), {"target": "x"}, "", None)
    assert read.kind == "forbidden" and str(secret) in (read.error or "") and "top secret" not in (read.error or "")

    target = tmp_path / "written.txt"
    write = sandbox.verify_template(_attack(f"open({str(target)!r}, 'w').write('x')"), {"target": "x"}, "", None)
    assert write.kind == "forbidden" and "writing" in (write.error or "")
    assert not target.exists()

    low_level = _attack(f"import os\nos.open({str(target)!r}, os.O_WRONLY | os.O_CREAT)")
    assert sandbox.verify_template(low_level, {"target": "x"}, "", None).kind == "forbidden"
    assert not target.exists()
    _still_works(sandbox)


# The worker module as template code finds it, to tamper with the worker's own code.
WORKER = "import sys\nworker = sys.modules['_karenina_sandbox._main']\n"


def _claim_cpu(cpu: str) -> str:
    """A template after which every reply of its worker claims ``cpu`` seconds of CPU time."""
    return _attack(
        WORKER + "send = worker._send\n"
        f"worker._send = lambda fd, message, *a, **k: send(fd, {{**message, 'cpu': {cpu}}}, *a, **k)"
    )


@pytest.mark.slow
def test_the_cpu_limit_does_not_believe_the_worker() -> None:
    with Sandbox(workers=1, limits=Limits(cpu_seconds=1, wall_seconds=6)) as sb:
        assert sb.verify_template(_claim_cpu("1e9"), {"target": "x"}, "", None).ok
        loop = sb.verify_template(_attack("while True:\n    pass"), {"target": "x"}, "", None)
        assert loop.kind == "cpu", loop  # the claimed 1e9 s did not move the limit out of reach
        _still_works(sb)


@pytest.mark.slow
def test_bogus_cpu_claims_cannot_break_the_runner() -> None:
    with Sandbox(workers=1, limits=Limits(cpu_seconds=1, wall_seconds=6)) as sb:
        for bogus in ("float('nan')", "'many'", "None", "-1e9", "[1]"):
            assert sb.verify_template(_claim_cpu(bogus), {"target": "x"}, "", None).ok
            _still_works(sb)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            "send = worker._send\nworker._send = lambda fd, m, *a, **k: send(fd, {**m, 'id': 'x' * 16}, *a, **k)",
            "a reply to a different request",
        ),
        ("import os\nworker._send = lambda fd, m, *a, **k: os.write(fd, worker.HEADER.pack(2 ** 31))", "oversized"),
        ("import os\nworker._send = lambda fd, m, *a, **k: os.write(fd, worker.HEADER.pack(3) + b'{{{')", "malformed"),
        (
            "import os\nworker._send = lambda fd, m, *a, **k: os.write(fd, (worker.HEADER.pack(2) + b'{}') * 2)",
            "more than one reply",
        ),
    ],
    ids=["wrong id", "oversized", "malformed", "two replies"],
)
def test_protocol_tampering_ends_the_worker_with_the_reason(sandbox: Sandbox, body: str, error: str) -> None:
    # The tampered worker is still running when its bad reply arrives: it is killed at once, and
    # the outcome names what it sent, not the SIGKILL that ended it.
    outcome = sandbox.verify_template(_attack(WORKER + body), {"target": "x"}, "", None)
    assert (outcome.ok, outcome.kind) == (False, "crashed"), outcome
    assert error in (outcome.error or "") and "signal" not in (outcome.error or ""), outcome
    _still_works(sandbox)


def _process_gone(pid: int, command: bytes) -> bool:
    """Whether the process ``pid`` running ``command`` has ended (waiting a little for SIGKILL to land)."""
    for _ in range(100):
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0]
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                running = cmdline.read().split(b"\0")[:2]
        except OSError:
            return True
        if state == b"Z" or running != command.split():  # a zombie, or the pid now names another process
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
def test_children_do_not_outlive_their_worker() -> None:
    # One process is allowed, and it runs outside the audit hook; the template process that
    # started it is ended after the call (it is tainted), with its process group, and the child
    # must go with it. The child's pid is the box's (a PID namespace of its own): it is looked
    # for among the box's processes, seen from the host.
    body = "import subprocess\nself.child = subprocess.Popen(['sleep', '300']).pid"
    with Sandbox(workers=1, limits=Limits(max_processes=1, wall_seconds=10)) as sb:
        outcome = sb.verify_template(_attack(body), {"target": "x"}, "", None)
        assert outcome.ok and outcome.value["verify_result"] is True, outcome
        child = outcome.value["parsed_llm_response"]["child"]
        (worker,) = sb._live
        host_pid = next((host for host, inside in box_processes(worker).items() if inside == child), None)
        assert host_pid is None or _process_gone(host_pid, b"sleep 300")
        _still_works(sb)


@pytest.mark.slow
def test_orphans_die_with_the_box(tmp_path: Path) -> None:
    """A fork + setsid orphan (processes allowed) leaves its template process's group, so ending
    that process does not end it; it still cannot see the store, and it dies with the box."""
    store = tmp_path / "store"
    store.mkdir()
    body = (
        "import os, time\npid = os.fork()\nif pid == 0:\n    os.setsid()\n    time.sleep(1)\n"
        f"    try:\n        open({str(store)!r} + '/late', 'w')\n    finally:\n        time.sleep(300)\n"
        "time.sleep(0.5)\nself.child = pid"  # (the orphan's setsid comes before its parent is ended)
    )
    with Sandbox(workers=1, limits=Limits(max_processes=1, wall_seconds=10)) as sb:
        outcome = sb.verify_template(_attack(body), {"target": "x"}, "", None)
        assert outcome.ok, outcome
        (worker,) = sb._live
        time.sleep(1.5)
        assert outcome.value["parsed_llm_response"]["child"] in box_processes(worker).values()  # still there
        _still_works(sb)
    assert box_processes(worker) == {}
    assert list(store.iterdir()) == []


def test_a_worker_that_cannot_start_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    opened: list[int] = []
    real_pipe = os.pipe

    def pipe() -> tuple[int, int]:
        if opened:
            raise OSError(24, "Too many open files")
        opened.extend(real_pipe())
        return opened[0], opened[1]

    monkeypatch.setattr(os, "pipe", pipe)
    with pytest.raises(OSError, match="Too many open files"):
        WorkerProcess(Limits())
    assert opened and not list(tmp_path.iterdir())
    for fd in opened:
        with pytest.raises(OSError):
            os.fstat(fd)


@pytest.mark.slow
def test_max_processes_allows_that_many() -> None:
    one = _attack("import subprocess\nassert subprocess.run(['true']).returncode == 0")
    two = _attack("import subprocess\nsubprocess.run(['true'])\nsubprocess.run(['true'])")
    with Sandbox(workers=1, limits=Limits(max_processes=1, wall_seconds=10)) as sb:
        assert sb.verify_template(one, {"target": "x"}, "", None).value["verify_result"] is True
        assert sb.verify_template(two, {"target": "x"}, "", None).kind == "forbidden"
        _still_works(sb)


@pytest.mark.slow
def test_the_sandbox_directory_is_usable(sandbox: Sandbox) -> None:
    body = "import os, tempfile\nopen('notes.txt', 'w').write('ok')\nassert open('notes.txt').read() == 'ok'\n"
    body += "os.mkdir('d')\nos.rename('notes.txt', 'd/n.txt')\nassert os.listdir('d') == ['n.txt']\n"
    body += "with tempfile.TemporaryDirectory() as t:\n    open(os.path.join(t, 'x'), 'w').close()"
    outcome = sandbox.verify_template(_attack(body), {"target": "x"}, "", None)
    assert outcome.ok and outcome.value["verify_result"] is True, outcome


@pytest.mark.slow
@pytest.mark.parametrize(
    "body",
    [
        "import socket\ns = socket.socket()\ns.connect(('127.0.0.1', PORT))",
        "import socket\nsocket.create_connection(('127.0.0.1', PORT), timeout=1)",
        "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:PORT/', timeout=1)",
    ],
    ids=["socket", "create_connection", "urllib"],
)
def test_no_network(sandbox: Sandbox, listener: tuple[socket.socket, int], body: str) -> None:
    server, port = listener
    outcome = sandbox.verify_template(_attack(body.replace("PORT", str(port))), {"target": "x"}, "", None)
    assert outcome.kind == "forbidden", outcome
    assert "network access" in (outcome.error or "")
    with pytest.raises(TimeoutError):
        server.accept()  # nothing got through
    _still_works(sandbox)


@pytest.mark.slow
@pytest.mark.skipif(not namespace_prefix(), reason="unprivileged user namespaces are not available here")
def test_network_namespace_holds_without_the_audit_hook(listener: tuple[socket.socket, int]) -> None:
    """What code that gets past the audit hook sees from a worker: no socket at all (the seccomp
    filter refuses socket(2) since issue 17; the network namespace behind it has no route to
    127.0.0.1 either). A child process (allowed by max_processes) runs without the hook, so it
    stands in for such code."""
    server, port = listener
    probe = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)"
    body = (
        f"import subprocess, sys\nresult = subprocess.run([sys.executable, '-c', {probe!r}], capture_output=True)\n"
        "self.probe = [result.returncode, result.stderr.decode()]"
    )
    with Sandbox(workers=1, limits=Limits(max_processes=1, wall_seconds=30)) as sb:
        outcome = sb.verify_template(_attack(body), {"target": "x"}, "", None)
    assert outcome.ok, outcome
    returncode, stderr = outcome.value["parsed_llm_response"]["probe"]
    assert returncode != 0
    assert "PermissionError: [Errno 1] Operation not permitted" in stderr, stderr
    with pytest.raises(TimeoutError):
        server.accept()


@pytest.mark.slow
def test_template_semantics_through_the_sandbox(sandbox: Sandbox) -> None:
    validated = sandbox.validate_template(GOOD)
    assert validated.ok and validated.elapsed > 0
    assert validated.value == {
        "class_name": "Answer",
        "fields": ["target"],
        "json_schema": validated.value["json_schema"],
        "regex_only": False,
        "declarative": False,
    }
    assert set(validated.value["json_schema"]["properties"]) == {"target"}

    wrong = sandbox.verify_template(GOOD, {"target": "EGFR"}, "EGFR", "q1")
    assert wrong.ok and wrong.value["verify_result"] is False
    assert wrong.value["parsed_gt_response"] == {"target": "BCR-ABL"}
    assert wrong.value["parsed_llm_response"] == {"target": "EGFR"}

    parse = sandbox.verify_template(GOOD, {"target": ["not", "a", "string"]}, "", None)
    assert (parse.ok, parse.kind) == (False, "exception") and parse.error is not None
    assert parse.error.startswith("parse:")

    invalid = sandbox.validate_template("class Answer(BaseAnswer):\n    x: int = Field(description='x')\n")
    assert (invalid.ok, invalid.kind) == (False, "exception")
    assert "does not have a 'verify' method" in (invalid.error or "")

    raising = GOOD.replace('return "BCRABL" in self.target.upper().replace("-", "")', "return {}['missing']")
    result = sandbox.verify_template(raising, {"target": "x"}, "", None)
    assert result.ok and result.value["verify_result"] is False
    assert result.value["field_verification_error"] == "KeyError: 'missing'"

    regex_only = (
        "class Answer(BaseAnswer):\n    def ground_truth(self):\n"
        "        self.regex = {'n': {'pattern': r'\\d+', 'expected': '7'}}\n"
    )
    assert sandbox.validate_template(regex_only).value["regex_only"] is True
    result = sandbox.verify_template(regex_only, None, "answer: 7", None)
    assert result.ok and result.value["verify_result"] is True
    assert result.value["regex_extraction_results"] == {"n": ["7"]}


@pytest.mark.slow
def test_every_outcome_is_json(sandbox: Sandbox) -> None:
    code = """
class Answer(BaseAnswer):
    tags: List[str] = Field(description="tags")

    def ground_truth(self):
        self.correct = {"tags": {"b", "a"}}  # a set and a tuple are not JSON: they come back as lists
        self.regex = {"pairs": {"pattern": r"(\\w)=(\\d)", "expected": 1, "match_type": "count"}}

    def verify(self) -> bool:
        self.note = object()  # nor is this: it comes back as its repr
        return set(self.tags) == self.correct["tags"]
"""
    outcome = sandbox.verify_template(code, {"tags": ["a", "b"]}, "a=1", None)
    assert outcome.ok and outcome.value["verify_result"] is True
    assert sorted(outcome.value["parsed_gt_response"]["tags"]) == ["a", "b"]
    assert outcome.value["regex_extraction_results"] == {"pairs": [["a", "1"]]}
    assert outcome.value["parsed_llm_response"]["note"].startswith("<object object at ")


@pytest.mark.slow
def test_example_templates_in_the_sandbox(sandbox: Sandbox) -> None:
    from tests.runner.worker.test_answer import _templates_in

    codes = [code for path in sorted(EXAMPLES.glob("*.jsonld")) for code in _templates_in(path)]
    assert codes
    kinds = {"string": "", "integer": 0, "boolean": False}
    for code in codes:
        info = sandbox.validate_template(code)
        assert info.ok, info
        properties = info.value["json_schema"]["properties"]
        placeholders = {name: kinds[properties[name]["type"]] for name in info.value["fields"]}
        correct = sandbox.verify_template(code, placeholders, "", None).value["parsed_gt_response"]
        assert sandbox.verify_template(code, correct, "", "q").value["verify_result"] is True


def _payload(fn: Callable[[str], Any]) -> str:
    return base64.b64encode(cloudpickle.dumps(fn)).decode()


def _functions() -> dict[str, Callable[[str], Any]]:
    # Defined in a function so cloudpickle sends them by value, as Karenina's callable traits are.
    def is_long(text: str) -> bool:
        return len(text.split()) > 3

    def word_score(text: str) -> float:
        return len(text.split()) / 2

    def broken(text: str) -> bool:
        return 1 / 0 > 0

    def not_json(text: str) -> object:
        return object()

    def snoop(text: str) -> str:
        with open("/etc/passwd") as f:
            return f.read()

    return {"is_long": is_long, "word_score": word_score, "broken": broken, "not_json": not_json, "snoop": snoop}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "text", "ok", "value", "kind", "error"),
    [
        ("is_long", "one two three four", True, True, None, None),
        ("is_long", "short", True, False, None, None),
        ("word_score", "one two three", True, 1.5, None, None),
        ("broken", "x", False, None, "exception", "ZeroDivisionError"),
        ("not_json", "x", False, None, "exception", "callable returned a object"),
        ("snoop", "x", False, None, "forbidden", "/etc/passwd"),
    ],
)
def test_callables(
    sandbox: Sandbox, name: str, text: str, ok: bool, value: Any, kind: str | None, error: str | None
) -> None:
    outcome = sandbox.run_callable(_payload(_functions()[name]), text)
    assert (outcome.ok, outcome.value, outcome.kind) == (ok, value, kind)
    assert type(outcome.value) is type(value)  # a bool stays a bool, a float a float
    if error is not None:
        assert error in (outcome.error or "")
    assert sandbox.run_callable("not base64!", "x").kind == "exception"
    _still_works(sandbox)


@pytest.mark.slow
@pytest.mark.skipif(not CORPUS.is_dir(), reason="the Karenina corpus is absent")
def test_corpus_callable_traits(sandbox: Sandbox) -> None:
    data = json.loads((CORPUS / "generated__all_features.jsonld").read_text())
    traits = {
        r["name"]: next(p["value"] for p in r["additionalProperty"] if p["name"] == "callable_code")
        for r in data["rating"]
        if r.get("additionalType", "").endswith("CallableTrait")
    }
    text = "Therefore the answer is formal and rather long, with well over twenty words in total " * 2
    results = {name: sandbox.run_callable(payload, text) for name, payload in traits.items()}
    assert {name: r.value for name, r in results.items()} == {"is_long": True, "length_bucket": 2, "tone": "formal"}


@pytest.mark.slow
def test_templates_are_executed_once_per_worker() -> None:
    # Each execution of the template bumps a counter the instance then reports as an extra attribute.
    code = "import builtins\nbuiltins.loads = getattr(builtins, 'loads', 0) + 1\n" + GOOD.replace(
        'self.correct = {"target": "BCR-ABL"}', 'self.correct = {"target": "BCR-ABL"}\n        self.loads = loads'
    )
    with Sandbox(workers=1) as sb:
        counts = [sb.verify_template(code, {"target": "BCR-ABL"}, "", None).value for _ in range(20)]
    assert {c["parsed_llm_response"]["loads"] for c in counts} == {1}
    assert all(c["verify_result"] for c in counts)


@pytest.mark.slow
def test_concurrent_calls_share_the_pool(sandbox: Sandbox) -> None:
    seen: list[tuple[Any, Any]] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        for j in range(15):
            if (i + j) % 7 == 0:  # now and then a call kills its worker
                outcome = sandbox.verify_template(_attack("import os\nos._exit(1)"), {"target": "x"}, "", None)
                observed, wanted = outcome.kind, "crashed"
            else:
                target = "BCR-ABL" if j % 2 else "KIT"
                outcome = sandbox.verify_template(GOOD, {"target": target}, target, f"q{i}-{j}")
                observed = outcome.ok and (outcome.value["verify_result"], outcome.value["parsed_llm_response"])
                wanted = (target == "BCR-ABL", {"target": target})
            with lock:
                seen.append((observed, wanted))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 90
    assert all(observed == wanted for observed, wanted in seen), [p for p in seen if p[0] != p[1]]


@pytest.mark.slow
def test_worker_environment_and_cleanup() -> None:
    os.environ["KARENINA_SANDBOX_TEST_SECRET"] = "s3cret"
    try:
        sb = Sandbox(workers=1)
        peek = _attack(
            "import os\nassert 'KARENINA_SANDBOX_TEST_SECRET' not in os.environ\n"
            "assert os.getcwd() == os.environ['HOME'] == os.environ['TMPDIR']"
        )
        assert sb.verify_template(peek, {"target": "x"}, "", None).value["verify_result"] is True
        directories = [w.tmpdir for w in sb._live]
        assert directories and all(os.path.isdir(d) for d in directories)
        sb.close()
        assert not any(os.path.exists(d) for d in directories)
        with pytest.raises(VerificationError, match="the sandbox is closed"):
            sb.validate_template(GOOD)
        sb.close()  # closing twice is harmless
    finally:
        del os.environ["KARENINA_SANDBOX_TEST_SECRET"]


def box_processes(worker: WorkerProcess) -> dict[int, int]:
    """The processes in a worker's box, host pid -> pid inside the box (1: the supervisor, then
    the template processes)."""
    try:
        with open(f"/proc/{worker.proc.pid}/task/{worker.proc.pid}/children") as children:
            init = int(children.read().split()[0])
        namespace = os.readlink(f"/proc/{init}/ns/pid")
    except (OSError, IndexError, ValueError):
        return {}
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.readlink(f"/proc/{name}/ns/pid") != namespace:
                    continue
                with open(f"/proc/{name}/status") as status:
                    nspid = next(line for line in status if line.startswith("NSpid:")).split()
                found[int(name)] = int(nspid[-1])
            except (OSError, StopIteration):
                continue
    return found


def _proc_limits(pid: int) -> dict[str, tuple[str, str]]:
    """A process's resource limits as /proc shows them: name -> (soft, hard)."""
    with open(f"/proc/{pid}/limits") as table:
        rows = [re.split(r"\s{2,}", line.strip()) for line in table.readlines()[1:]]
    return {row[0]: (row[1], row[2]) for row in rows}


@pytest.mark.slow
def test_layers_and_limits() -> None:
    mb = 1024 * 1024
    with Sandbox(workers=1, limits=Limits(cpu_seconds=3, memory_mb=512, wall_seconds=1)) as sb:
        _still_works(sb)  # the worker is up and its CPU limit armed for the call
        (worker,) = sb._live
        # The limits are the template process's (forked per template inside the box since issue 17).
        template_process = max(box_processes(worker).items(), key=lambda item: item[1])[0]
        limits = _proc_limits(template_process)
        layers = sb.layers
        forbidden = sb.verify_template(_attack("open('/etc/hostname').read()"), {"target": "x"}, "", None)
        slow = sb.verify_template(_attack("import time\ntime.sleep(30)"), {"target": "x"}, "", None)
    assert forbidden.kind == "forbidden" and slow.kind == "timeout"  # the audit hook and the wall clock
    address_space = limits["Max address space"]
    assert address_space[0] == address_space[1] != "unlimited" and int(address_space[0]) >= 512 * mb
    assert limits["Max file size"] == (str(512 * mb), str(512 * mb))
    assert limits["Max open files"] == ("128", "128")
    assert limits["Max core file size"] == ("0", "0")
    assert limits["Max processes"] == ("1", "1")  # max_processes is 0 (the kernel ignores it for root)
    assert layers["rlimit_nproc"] is (os.geteuid() != 0)
    assert layers["seccomp"] and layers["pid_mount_ipc_namespaces"] and layers["process_per_template"]
    assert int(limits["Max cpu time"][0]) >= 3  # 3 s on top of what the process had used before the call
    with pytest.raises(ValueError):
        Limits(cpu_seconds=0)
    with pytest.raises(InvalidValueError, match="at least one worker"):
        Sandbox(workers=0)
    outcome = SandboxOutcome(ok=True)
    with pytest.raises(ValueError):
        outcome.ok = False  # type: ignore[misc]


@pytest.mark.slow
@pytest.mark.skipif(isolation_unavailable() is not None, reason=f"no kernel isolation here: {isolation_unavailable()}")
def test_workers_run_in_their_own_namespaces() -> None:
    # Since issue 17 the worker is a bubblewrap box: every process in it (bwrap's init, the
    # supervisor, the template processes) is in namespaces of its own, not just user and net.
    with Sandbox(workers=1) as sb:
        _still_works(sb)
        (worker,) = sb._live
        assert sb.layers["user_and_network_namespace"] is True
        inside = box_processes(worker)
        assert sorted(inside.values()) == [1, 2], inside  # the supervisor, one template process
        for pid in inside:
            for namespace in ("net", "user", "pid", "mnt", "ipc", "uts"):
                ours = os.readlink(f"/proc/self/ns/{namespace}")
                assert os.readlink(f"/proc/{pid}/ns/{namespace}") != ours, namespace
        with open(f"/proc/{max(inside, key=inside.__getitem__)}/status") as status:
            fields = dict(line.split(":", 1) for line in status)
        assert fields["CapEff"].strip() == fields["CapBnd"].strip() == "0" * 16
        assert fields["NoNewPrivs"].strip() == "1" and fields["Seccomp"].strip() == "2"


def test_unboxed_sandbox_needs_the_unsafe_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    from karenina_rdf.runner.sandbox import _process

    monkeypatch.setattr(_process, "_isolation_problem", ["bubblewrap (bwrap) is not installed"])
    with pytest.raises(IsolationUnavailableError) as refused:
        Sandbox(workers=1)
    assert str(refused.value) == (
        "refusing to run benchmark code without kernel isolation: bubblewrap (bwrap) is not installed; "
        "install bubblewrap, or accept the risk with --unsafe-no-isolation"
    )
    with pytest.raises(InvalidValueError, match="isolation is 'kernel' or 'unsafe-none'"):
        Sandbox(workers=1, isolation="none")  # type: ignore[arg-type]


@pytest.mark.slow
def test_unsafe_sandbox_still_runs_code(caplog: pytest.LogCaptureFixture) -> None:
    with Sandbox(workers=1, isolation="unsafe-none") as sb:
        _still_works(sb)
        assert sb.layers["pid_mount_ipc_namespaces"] is False
        assert sb.verify_template(_attack("import os\nos.fork()"), {"target": "x"}, "", None).kind == "forbidden"
    assert "WITHOUT kernel isolation" in caplog.text


@pytest.mark.slow
def test_a_template_process_that_ends_between_calls_is_forked_again(sandbox: Sandbox) -> None:
    # A thread hidden from the thread count ends the process after the reply went out; the next
    # call of the same template gets a fresh process, not the dead one's broken pipe.
    body = (
        "import _thread, os, threading, time\n_thread._count = lambda: 0\n"
        "threading.Thread(target=lambda: (time.sleep(0.2), os._exit(0))).start()"
    )
    code = _attack(body)
    assert sandbox.verify_template(code, {"target": "x"}, "", None).ok
    time.sleep(0.5)
    again = sandbox.verify_template(code, {"target": "x"}, "", None)
    assert again.ok and again.value["verify_result"] is True, again


@pytest.mark.slow
def test_a_template_process_that_keeps_memory_is_not_kept(sandbox: Sandbox) -> None:
    # Each call counts itself in the process; one template also keeps 100 MB: its process is
    # ended after each call (so it counts 1 each time), the other's lives on (it counts on).
    counting = "import builtins\nbuiltins.calls = getattr(builtins, 'calls', 0) + 1\nself.calls = builtins.calls\n"
    hoarding = counting + "builtins.hoard = b'x' * (100 * 2 ** 20)"
    for body, expected in ((counting, [1, 2, 3]), (hoarding, [1, 1, 1])):
        calls = [sandbox.verify_template(_attack(body), {"target": "x"}, "", None) for _ in range(3)]
        assert [c.value["parsed_llm_response"]["calls"] for c in calls] == expected, calls


_RUNNER = """
import json, os, sys, time
from karenina_rdf.runner import Sandbox
from tests.runner.sandbox.test_sandbox import GOOD, box_processes
sb = Sandbox(workers=1)
assert sb.verify_template(GOOD, {"target": "x"}, "", None).ok
(worker,) = sb._live
pid = next(iter(box_processes(worker)))
print(json.dumps({"namespace": os.readlink(f"/proc/{pid}/ns/pid"), "pids": list(box_processes(worker))}), flush=True)
time.sleep(300)
"""


def _in_namespace(namespace: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.readlink(f"/proc/{name}/ns/pid") == namespace:
                    found.append(int(name))
            except OSError:
                continue
    return found


@pytest.mark.slow
@pytest.mark.skipif(isolation_unavailable() is not None, reason=f"no kernel isolation here: {isolation_unavailable()}")
def test_a_killed_runner_takes_its_boxes_with_it() -> None:
    # SIGKILL leaves the runner no chance to close anything: --die-with-parent must end the box,
    # and every process in the box's PID namespace with it.
    import subprocess
    import sys

    runner = subprocess.Popen([sys.executable, "-c", _RUNNER], stdout=subprocess.PIPE, cwd=Path(__file__).parents[3])
    try:
        assert runner.stdout is not None
        seen = json.loads(runner.stdout.readline())
        assert len(seen["pids"]) == 2 and _in_namespace(seen["namespace"])  # supervisor, template process
    finally:
        runner.kill()
        runner.wait()
    deadline = time.monotonic() + 5
    while _in_namespace(seen["namespace"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _in_namespace(seen["namespace"]) == []
