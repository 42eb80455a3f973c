"""The environment a query worker starts with: glibc's tcache setting of the pool
(docs/performance.md, "Worker start-up variants"), with an operator's own GLIBC_TUNABLES after it,
so that theirs wins where both name a tunable (glibc keeps the last value it reads)."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from karenina_rdf.sparql import _pool
from karenina_rdf.sparql._pool import worker_tunables

CASES = [
    ({}, "glibc.malloc.tcache_count=2000"),
    ({"GLIBC_TUNABLES": ""}, "glibc.malloc.tcache_count=2000"),
    ({"GLIBC_TUNABLES": "glibc.malloc.arena_max=1"}, "glibc.malloc.tcache_count=2000:glibc.malloc.arena_max=1"),
    ({"GLIBC_TUNABLES": "glibc.malloc.tcache_count=7"}, "glibc.malloc.tcache_count=2000:glibc.malloc.tcache_count=7"),
    ({"PATH": "/bin"}, "glibc.malloc.tcache_count=2000"),
]


@pytest.mark.parametrize(("environ", "expected"), CASES)
def test_worker_tunables(environ: dict[str, str], expected: str) -> None:
    assert worker_tunables(environ) == expected


def test_a_worker_is_started_with_them(monkeypatch: pytest.MonkeyPatch) -> None:
    # The environment handed to the worker's Popen (glibc rewrites the copy /proc shows).
    seen: dict[str, Any] = {}

    def popen(*args: Any, **kwargs: Any) -> Any:
        seen.update(kwargs["env"])
        raise OSError("not started: the test only reads its environment")

    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")
    monkeypatch.setattr(subprocess, "Popen", popen)
    with pytest.raises(OSError, match="not started"):
        _pool._Process(0)
    assert seen["GLIBC_TUNABLES"] == "glibc.malloc.tcache_count=2000:glibc.malloc.arena_max=2"
    assert seen["RUST_BACKTRACE"] == "0"
