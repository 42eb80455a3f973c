"""Real servers for the tests: Oxigraph server and Virtuoso (SPARQL), our endpoint, and a plain
static file server for published sites, started on 127.0.0.1 on free ports, and stopped after. A
server that is not installed is a skip with the reason (`.ci/run` installs them)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def static_site(root: Path, port: int, probe: str) -> Iterator[None]:
    """A plain static file server (``python -m http.server``) for ``root`` on 127.0.0.1:``port``,
    what a published site looks like on a host without content negotiation; returns once
    ``probe`` (a URL it serves) answers, stops on exit."""
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(probe, timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the static server did not start") from None
                time.sleep(0.1)
        yield
    finally:
        server.terminate()
        server.wait(timeout=30)


@dataclass
class Server:
    name: str
    url: str  # what `--store` takes
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def _wait(url: str, process: subprocess.Popen[bytes], log: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(url, params={"query": "ASK {}"}, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    process.kill()
    raise RuntimeError(f"server at {url} did not start within {seconds} s: {log.read_text(errors='replace')[-2000:]}")


def oxigraph_binary() -> str | None:
    # The pip package puts it beside the interpreter, which need not be on PATH (CI's .venv).
    beside = Path(sys.executable).parent / "oxigraph"
    return str(beside) if beside.is_file() else shutil.which("oxigraph")


def virtuoso_binary() -> str | None:
    return shutil.which("virtuoso-t")


def start_oxigraph(folder: Path) -> Server:
    binary = oxigraph_binary()
    assert binary is not None
    port = free_port()
    log = folder / "oxigraph.log"
    process = subprocess.Popen(
        [binary, "serve", "--location", str(folder / "data"), "--bind", f"127.0.0.1:{port}"],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    server = Server("oxigraph", base, process, log)
    try:
        _wait(f"{base}/query", process, log)
    except BaseException:
        server.stop()
        raise
    return server


_VIRTUOSO_INI = """\
[Database]
DatabaseFile = {d}/virtuoso.db
ErrorLogFile = {d}/virtuoso.log
TransactionFile = {d}/virtuoso.trx
xa_persistent_file = {d}/virtuoso.pxa
FileExtend = 200
Striping = 0
TempStorage = TempDatabase

[TempDatabase]
DatabaseFile = {d}/virtuoso-temp.db
TransactionFile = {d}/virtuoso-temp.trx
Striping = 0

[Parameters]
ServerPort = 127.0.0.1:{sql}
DirsAllowed = ., {d}
NumberOfBuffers = 100000
MaxDirtyBuffers = 75000
CheckpointInterval = 60
ResultSetMaxRows = 1000000
MaxQueryExecutionTime = 0
MaxQueryCostEstimationTime = 0

[HTTPServer]
ServerPort = 127.0.0.1:{http}
ServerRoot = {d}
MaxClientConnections = 8
ServerThreads = 8

[SPARQL]
ResultSetMaxRows = 1000000
MaxQueryExecutionTime = 0
MaxQueryCostEstimationTime = 0
"""


def start_virtuoso(folder: Path) -> Server:
    binary = virtuoso_binary()
    assert binary is not None
    sql, http = free_port(), free_port()
    (folder / "virtuoso.ini").write_text(_VIRTUOSO_INI.format(d=folder, sql=sql, http=http), encoding="utf-8")
    log = folder / "stdout.log"
    process = subprocess.Popen(
        [binary, "-f", "-c", str(folder / "virtuoso.ini")],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        cwd=folder,
        env={**os.environ},
    )
    url = f"http://127.0.0.1:{http}/sparql"
    _wait(url, process, log)
    # SPARQL updates over HTTP run as the SPARQL user, who may not write until granted.
    server = Server("virtuoso", url, process, log)
    try:
        isql = shutil.which("isql-vt") or shutil.which("isql")
        assert isql is not None, "Virtuoso's isql is not installed"
        subprocess.run(
            [isql, f"127.0.0.1:{sql}", "dba", "dba", 'exec=GRANT SPARQL_UPDATE TO "SPARQL";'],
            check=True,
            capture_output=True,
            timeout=60,
        )
    except BaseException:
        server.stop()  # never leave a server running behind a failed start
        raise
    return server


def start_endpoint(folder: Path, *options: str, store: str | Path | None = None) -> Server:
    """``karenina-rdf serve`` on 127.0.0.1 and a free port, over ``store`` (default: a new
    store in ``folder``), run as its own process exactly as a user starts it."""
    port = free_port()
    log = folder / "endpoint.log"
    command = [sys.executable, "-c", "from karenina_rdf.cli import main; main()", "serve"]
    command += ["--store", str(store or folder / "store"), "--port", str(port), *options]
    process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    server = Server("karenina-rdf", base, process, log)
    try:
        _wait(f"{base}/sparql", process, log)
    except BaseException:
        server.stop()
        raise
    return server
