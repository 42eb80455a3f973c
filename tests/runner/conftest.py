"""What the runner's tests share: the sandbox their template code runs in."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from karenina_rdf.runner import Limits, Sandbox

# A task's template code gets these limits in every runner test: generous for the templates the
# tests write, small enough that a runaway one fails the test quickly.
LIMITS = Limits(cpu_seconds=2, wall_seconds=6, memory_mb=512)


@pytest.fixture(scope="module")
def sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    """One sandbox a test module: ``SANDBOX_WORKERS`` workers (a module's own constant; 2 when it
    has none). One worker runs tasks in the order they are queued, as Karenina's runner does."""
    with Sandbox(workers=getattr(request.module, "SANDBOX_WORKERS", 2), limits=LIMITS) as sb:
        yield sb
