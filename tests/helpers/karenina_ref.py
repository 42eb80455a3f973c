"""Karenina itself, as the judge of fidelity: the snapshot in ../shared/karenina installed in a
virtual environment of its own and driven in a subprocess, so this project's environment never
imports it.

The environment is built once per snapshot and kept under ``$KARENINA_RDF_CACHE`` (default
``~/.cache/karenina-rdf``), in a folder named by the first 16 hex digits of the tarball's
SHA-256: a new snapshot gets a new environment, an unchanged one is reused between runs. It is
built into a temporary folder and renamed when complete, so an interrupted install is never
taken for a finished one. Tests that need it skip, saying why, when ../shared is absent or the
install fails (Karenina's dependencies come from the package registries).

    out = karenina("import json; from karenina import Benchmark; ...; print(json.dumps(x))")

runs a script in that environment and returns what it printed last, parsed as JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED

SNAPSHOTS = SHARED / "karenina"


def cache_root() -> Path:
    return Path(os.environ.get("KARENINA_RDF_CACHE") or Path.home() / ".cache" / "karenina-rdf")


@cache
def _environment() -> tuple[Path | None, str]:
    tarballs = sorted(SNAPSHOTS.glob("karenina-*.tar.gz")) if SNAPSHOTS.is_dir() else []
    if not tarballs:
        return None, f"no Karenina snapshot in {SNAPSHOTS} (../shared is absent)"
    tarball = tarballs[-1]
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()[:16]
    venv = cache_root() / f"venv-{digest}"
    python = venv / "bin" / "python"
    if python.exists():
        return python, ""
    cache_root().mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f"venv-{digest}-building-", dir=cache_root()))
    try:
        # Built under a name that says it is incomplete, renamed when it imports. Only bin/python
        # is used afterwards: a symlink to the base interpreter, which the rename does not break
        # (the scripts' shebangs, which would name the old path, are never run).
        shutil.rmtree(building)
        subprocess.run([sys.executable, "-m", "venv", str(building)], check=True, capture_output=True, timeout=300)
        install = subprocess.run(
            [str(building / "bin" / "pip"), "install", "-q", str(tarball)],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if install.returncode != 0:
            tail = (install.stderr or install.stdout).strip().splitlines()[-3:]
            return None, f"installing Karenina from {tarball.name} failed: {' / '.join(tail)}"
        probe = subprocess.run(
            [str(building / "bin" / "python"), "-c", "import karenina"], capture_output=True, text=True, timeout=300
        )
        if probe.returncode != 0:
            return None, f"Karenina installed but does not import: {probe.stderr.strip()[-300:]}"
        try:
            building.rename(venv)
        except OSError:  # another process finished first: use its environment
            if not python.exists():
                raise
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"could not build Karenina's environment: {exc}"
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return python, ""


def karenina_python() -> Path:
    """The Karenina environment's interpreter; skips the test (with the reason) when there is none."""
    python, why = _environment()
    if python is None:
        pytest.skip(why)
    return python


def karenina(script: str, *args: str, cwd: Path | None = None, timeout: float = 300) -> Any:
    """Run ``script`` with Karenina's interpreter and return its last printed line as JSON.
    A failing script fails the test with Karenina's own error (its last lines)."""
    python = karenina_python()
    done = subprocess.run(
        [str(python), "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"), "PYTHONHASHSEED": "0"},
    )
    if done.returncode != 0:
        pytest.fail(f"Karenina's script failed: {done.stderr.strip()[-1500:]}")
    lines = done.stdout.strip().splitlines()
    if not lines:
        pytest.fail("Karenina's script printed nothing")
    return json.loads(lines[-1])


# The judge Karenina's own pipeline talks to in the stage parity scripts: an OpenAI-compatible
# chat server on 127.0.0.1 answering every call with what the script's ``reply(body)`` returns
# (the request's JSON in, the message content out). A script defines ``reply`` first, then
# includes this text; it gets ``url`` and ``model(name)``, a ModelConfig pointed at the server.
FAKE_OPENAI_JUDGE = r"""
import json as _json, threading as _threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from karenina.schemas.config import ModelConfig


class Judge(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        body = _json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        out = {"id": "x", "object": "chat.completion", "created": 0, "model": body.get("model"),
               "choices": [{"index": 0, "message": {"role": "assistant", "content": reply(body)},
                            "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}
        data = _json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


server = ThreadingHTTPServer(("127.0.0.1", 0), Judge)
_threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_address[1]}/v1"


def model(name):
    return ModelConfig(id=name, model_name=name, interface="openai_endpoint", endpoint_base_url=url,
                       endpoint_api_key="k", temperature=0.0)
"""


# The start of a stage parity script: the cases (argv[1]) and a judge replying by call kind. The
# script defines ``kind_of(body)`` (a request's kind from its schema name and system prompt;
# ``state["kind"]``, the last kind, for a retry without a schema) and starts each case with
# ``set_replies(case["replies"])``: replies by kind or by "kind:trait" (the trait a rubric call
# names); a list is one reply per call, its last one repeated; a dict picks its reply by a marker
# the request's user text holds ("" for the others). :func:`judge_script` puts the parts together.
_JUDGE_BY_KIND = r"""
import json, re, sys
cases = json.loads(sys.argv[1])
state = {"queues": {}, "kind": None}

def set_replies(replies):
    state["queues"] = {k: list(v) if isinstance(v, list) else [v] for k, v in replies.items()}
    state["kind"] = None

def reply(body):
    state["kind"] = kind = kind_of(body)
    user = " ".join(m.get("content") or "" for m in body["messages"] if m["role"] == "user")
    trait = re.search(r"## Trait\n(.+)", user)
    key = f"{kind}:{trait.group(1).strip()}" if trait else kind
    queue = state["queues"].get(key) or state["queues"].get(kind) or ["{}"]
    content = queue.pop(0) if len(queue) > 1 else queue[0]
    if isinstance(content, dict):  # by what the request says: {marker: reply, "": otherwise}
        content = next((v for m, v in content.items() if m and m in user), content.get(""))
    return content

"""

# ``kind_of`` for the rubric stages: presence checks, deep-judgment excerpts, reasoning and scores,
# batch scores and parsing, by the schema Karenina asks for.
RUBRIC_KIND_OF = r"""
def kind_of(body):
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    system = " ".join(m.get("content") or "" for m in body["messages"] if m["role"] == "system")
    if name == "ConceptPresenceResult":
        return "PRESENCE"
    if name == "TraitExcerptsOutput":
        return "EXCERPTS"
    if name in ("SingleBooleanScore", "SingleNumericScore"):
        return "SCORE"
    if name == "BatchRubricScores":
        return "BATCH"
    if name and name.startswith("Answer"):
        return "PARSING"
    if name is None and "You produce reasoning that explains" in system:
        return "REASONING"
    return state["kind"]  # a retry without a schema is for the last kind

"""


def judge_script(kind_of: str, run: str) -> str:
    """A stage parity script: the cases and the judge by kind, ``kind_of`` (the source of its
    ``kind_of(body)``), the fake OpenAI server (:data:`FAKE_OPENAI_JUDGE`), then ``run``, which
    loops over ``cases`` calling ``set_replies`` and prints its JSON answer last."""
    return _JUDGE_BY_KIND + kind_of + FAKE_OPENAI_JUDGE + run
