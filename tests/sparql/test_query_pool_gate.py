"""The query pool's gate inside ``QueryPool`` (the second reading of issue 20, point 4): a query
passes the gate once, whichever path it takes; a shutdown answers those waiting at once; a query
starting a worker does not hold up the others; a place granted to an event loop that never runs
again comes back.

No worker processes: a stand-in takes the request and the watch is patched to answer it, so the
order of events is set by the test (events and the gate's own queue), never by the clock.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import Store
from karenina_rdf.sparql._pool import QueryFailed, QueryPool, _Admission, _Gate, _Process, _Snapshot

FAR = 3600.0
# A deadline that the fixed code never reaches; the code before the fix waited it out.
SOON = 10.0
ANSWER = (b"answer", "json")
SHUTTING_DOWN = (503, "the endpoint is shutting down")


def _later(seconds: float) -> float:
    return time.monotonic() + seconds


def _params(seconds: float = FAR) -> dict[str, Any]:
    return {
        "base": None,
        "prefixes": {},
        "dataset": None,
        "results_format": "json",
        "graphs_format": "turtle",
        "max_bytes": 1 << 20,
        "deadline": _later(seconds),
        "timeout": seconds,
    }


class _Worker:
    """Stands for a worker process: it takes the request; the pool's watch (patched) answers."""

    frame = staticmethod(_Process.frame)

    def __init__(self) -> None:
        self.snapshot: _Snapshot | None = None
        self.dead = False
        self.pid = 0
        self.requests: list[Any] = []

    def send(self, header: Any) -> None:
        self.requests.append(header)

    def write(self, frame: bytes) -> None:
        self.requests.append(frame)

    def kill(self) -> None:
        self.dead = True


def _pool(monkeypatch: pytest.MonkeyPatch, *, idle: int, spawn: Callable[[], Any] = _Worker) -> QueryPool:
    """A pool of ``idle`` stand-in workers, one place at its gate, room for two workers."""
    pool = QueryPool(heavy_slots=1, reserve=1, running=1)
    pool._current = _Snapshot("/nonexistent/snapshot", {})
    pool._idle.extend(_Worker() for _ in range(idle))  # type: ignore[misc]
    pool._count = idle

    def watch(*args: Any) -> tuple[dict[str, Any], bytes]:
        return {"status": 200, "format": "json"}, b"answer"

    async def watch_async(*args: Any) -> tuple[dict[str, Any], bytes]:
        return watch()

    monkeypatch.setattr(pool, "_watch", watch)
    monkeypatch.setattr(pool, "_watch_async", watch_async)
    monkeypatch.setattr(pool, "_spawn", spawn)
    return pool


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except QueryFailed as exc:
        return exc.status, exc.message


async def _as_the_endpoint(pool: QueryPool, text: str, seconds: float = FAR) -> Any:
    """What ``web/_app._evaluate`` does: ``run_async``, and ``run`` on a thread when it gives
    the query back."""
    params = _params(seconds)
    try:
        answer = await pool.run_async(text, **params)  # type: ignore[arg-type]
        if answer is None:
            answer = await asyncio.to_thread(pool.run, text, **params)  # type: ignore[arg-type]
    except QueryFailed as exc:
        return exc.status, exc.message
    return answer


async def _until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.001)


def _wait(condition: Callable[[], bool]) -> None:
    while not condition():
        time.sleep(0.001)


# -- 1. a query passes the gate once ----------------------------------------------------------
# why the event loop cannot run it once admitted; the query; whether the idle worker is taken
# (by a query on a thread) while it waits
ONCE = [
    ("no idle worker once admitted", "ASK {}", True),
    ("a request too large for the pipe", "ASK {} # " + "x" * 40_000, False),
]


@pytest.mark.parametrize(("text", "taken"), [row[1:] for row in ONCE], ids=[row[0] for row in ONCE])
def test_a_query_from_the_event_loop_passes_the_gate_once_and_keeps_its_turn(
    monkeypatch: pytest.MonkeyPatch, text: str, taken: bool
) -> None:
    pool = _pool(monkeypatch, idle=1)
    gate = pool._gate
    who = contextvars.ContextVar("who", default="earlier")
    admitted: list[str] = []  # who was let in, in order (the re-entries of a single query counted)
    enter, enter_async = gate.enter, gate.enter_async

    def counting_enter(deadline: float) -> bool:
        ok = enter(deadline)
        if ok:
            admitted.append(who.get())
        return ok

    async def counting_enter_async(deadline: float) -> bool:
        ok = await enter_async(deadline)
        if ok:
            admitted.append(who.get())
        return ok

    monkeypatch.setattr(gate, "enter", counting_enter)
    monkeypatch.setattr(gate, "enter_async", counting_enter_async)
    assert gate.enter(_later(FAR))  # a query in its first 50 ms holds the only place
    answers: list[Any] = []

    def on_a_thread() -> None:
        who.set("thread")
        answers.append(_outcome(lambda: pool.run("ASK {}", **_params())))  # type: ignore[arg-type]

    async def main() -> Any:
        who.set("loop")
        query = asyncio.create_task(_as_the_endpoint(pool, text))
        await _until(lambda: len(gate.waiting) == 1)
        if taken:
            pool._idle.clear()  # a query on a thread took the idle worker meanwhile
        thread = threading.Thread(target=on_a_thread)
        thread.start()
        await _until(lambda: len(gate.waiting) == 2)  # it came second
        gate.leave()  # the first query has run 50 ms
        answer = await query
        await asyncio.to_thread(thread.join)
        return answer

    assert asyncio.run(main()) == ANSWER
    assert answers == [ANSWER]
    assert admitted == ["earlier", "loop", "thread"]
    assert gate.admitted == 0 and not gate.waiting
    pool.close()


# -- 2. a shutdown answers those waiting at once -----------------------------------------------
# where the query waits; where close() is called
CLOSE = [
    ("thread", "another thread"),
    ("event loop", "the event loop"),
    ("event loop", "another thread"),
]


@pytest.mark.parametrize(("waits_on", "closed_from"), CLOSE)
def test_close_answers_the_queries_waiting_at_the_gate_at_once(
    monkeypatch: pytest.MonkeyPatch, waits_on: str, closed_from: str
) -> None:
    pool = _pool(monkeypatch, idle=1)
    gate = pool._gate
    assert gate.enter(_later(FAR))  # the only place is taken

    async def main() -> Any:
        if waits_on == "thread":
            query = asyncio.create_task(asyncio.to_thread(_outcome, lambda: pool.run("ASK {}", **_params(SOON))))  # type: ignore[arg-type]
        else:
            query = asyncio.create_task(_as_the_endpoint(pool, "ASK {}", SOON))
        await _until(lambda: len(gate.waiting) == 1)
        if closed_from == "the event loop":
            pool.close()  # the app's lifespan closes the pool on its loop
        else:
            await asyncio.to_thread(pool.close)
        return await query

    assert asyncio.run(main()) == SHUTTING_DOWN
    assert not gate.waiting
    # Past the shutdown a query is answered at once, not queued behind the place still held.
    assert _outcome(lambda: pool.run("ASK {}", **_params())) == SHUTTING_DOWN  # type: ignore[arg-type]
    assert asyncio.run(pool.run_async("ASK {}", **_params())) is None  # type: ignore[arg-type]


# -- 3. a query starting a worker does not hold up the others -----------------------------------
@pytest.mark.parametrize("path", ["thread", "event loop"])
def test_a_query_starting_a_worker_lets_the_next_one_use_an_idle_worker(
    monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    starting, started = threading.Event(), threading.Event()

    def slow_spawn() -> _Worker:  # a new interpreter, which takes up to START_TIMEOUT
        starting.set()
        started.wait()
        return _Worker()

    pool = _pool(monkeypatch, idle=0, spawn=slow_spawn)
    first: list[Any] = []
    spawner = threading.Thread(target=lambda: first.append(_outcome(lambda: pool.run("ASK {}", **_params()))))  # type: ignore[arg-type]
    spawner.start()
    starting.wait()
    # A worker comes back idle (a query on it ended) while the first query waits for its own.
    pool._idle.append(_Worker())  # type: ignore[arg-type]
    pool._count += 1
    try:
        if path == "thread":
            answer = _outcome(lambda: pool.run("ASK {}", **_params(SOON)))  # type: ignore[arg-type]
        else:
            answer = asyncio.run(_as_the_endpoint(pool, "ASK {}", SOON))
    finally:
        started.set()
        spawner.join()
    assert answer == ANSWER
    assert first == [ANSWER]
    assert pool._gate.admitted == 0 and not pool._gate.waiting
    assert pool.status()["count"] == 2 and len(pool.status()["idle"]) == 2
    pool.close()


# -- 4. a place granted to an event loop that never runs again comes back -----------------------
# whether the place is granted to the waiter before its loop ends
DROPPED = [("granted before its loop ends", True), ("still waiting as its loop ends", False)]


@pytest.mark.parametrize("granted", [row[1] for row in DROPPED], ids=[row[0] for row in DROPPED])
def test_a_waiter_whose_event_loop_ends_before_it_runs_again_gives_its_place_back(granted: bool) -> None:
    gate = _Gate(1)
    assert gate.enter(_later(FAR))
    loop = asyncio.new_event_loop()
    task = loop.create_task(gate.enter_async(_later(FAR)))
    while not gate.waiting:
        loop.run_until_complete(asyncio.sleep(0))
    if granted:
        gate.leave()  # from this thread, the loop stopped: its wake-up is queued on the loop
        assert gate.admitted == 1 and not gate.waiting
    loop.close()  # and the loop ends without running it
    del task
    gc.collect()  # the waiter, dropped unfinished, is closed: its place comes back
    if not granted:
        # Still queued (the queue holds it): the next place skips it, as its loop is closed.
        assert gate.admitted == 1 and len(gate.waiting) == 1
        gate.leave()
        gc.collect()  # the waiter, out of the queue now, is closed (here, not at the exit)
    assert gate.admitted == 0 and not gate.waiting
    assert gate.enter(_later(FAR))  # the place was not lost
    _Admission(gate).release()
    assert gate.admitted == 0


@pytest.mark.slow  # worker processes
def test_an_admitted_query_whose_idle_worker_is_gone_is_answered_by_a_new_worker(tmp_path: Path) -> None:
    """Row 1 of ONCE with real workers: the thread run_async goes on with starts a worker, and
    the query's answer is the one the event loop's path gives."""
    store = Store(tmp_path / "store")
    pool = QueryPool(heavy_slots=1, reserve=1, running=1)
    try:
        pool.publish(store.snapshot(), store.dataset())
        pool.start(1)
        # idle on the current snapshot (the refresh after the start has moved it there)
        _wait(lambda: any(w.snapshot is pool._current for w in list(pool._idle)))
        assert pool._gate.enter(_later(FAR))

        async def main() -> Any:
            query = asyncio.create_task(_as_the_endpoint(pool, "ASK {}", 60))
            await _until(lambda: len(pool._gate.waiting) == 1)
            with pool._lock:
                taken = pool._idle.pop()  # a query on a thread took the idle worker meanwhile
            pool._gate.leave()
            answer = await query
            pool._checkin(taken, taken.snapshot, alive=True)
            return answer

        assert asyncio.run(main()) == (b'{"head":{},"boolean":true}', "json")
        assert pool.status()["count"] == 2 and len(pool.status()["idle"]) == 2
        assert pool._gate.admitted == 0 and not pool._gate.waiting
    finally:
        pool.close()
        store.close()
