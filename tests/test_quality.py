"""ruff and mypy are part of the test command, so a lint or type error fails CI like a bug."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

# slow: runs ruff and mypy in subprocesses
pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "ruff", "check", "karenina_rdf", "tests", "benchmarks", "examples"],
        [sys.executable, "-m", "ruff", "format", "--check", "karenina_rdf", "tests"],
        [sys.executable, "-m", "mypy"],
    ],
    ids=["ruff check", "ruff format", "mypy"],
)
def test_clean(command: list[str]) -> None:
    r = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
