"""The query pool's gate (issue 20, point 4): at most ``limit`` queries admitted at once, the
others in the order they came, from threads and from the event loop alike; a deadline or a
cancellation gives the place up, and a place is never lost or given twice.

No worker processes here: the gate alone (``QueryPool`` runs every query through it).
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from karenina_rdf.sparql._pool import QueryPool, _Admission, _Gate, default_running

FAR = 3600.0


def _later(seconds: float) -> float:
    return time.monotonic() + seconds


def test_up_to_the_limit_enter_at_once_and_the_next_waits_for_a_place() -> None:
    gate = _Gate(2)
    assert gate.enter(_later(FAR)) and gate.enter(_later(FAR))
    assert gate.admitted == 2
    # No place, and its deadline passes: refused, and it waits no more.
    assert gate.enter(_later(0.05)) is False
    assert gate.admitted == 2 and not gate.waiting
    gate.leave()
    assert gate.enter(_later(FAR))
    assert gate.admitted == 2


def test_waiting_threads_enter_in_the_order_they_came() -> None:
    gate = _Gate(1)
    assert gate.enter(_later(FAR))
    order: list[int] = []

    def wait(i: int) -> None:
        assert gate.enter(_later(FAR))
        order.append(i)
        gate.leave()

    threads = []
    for i in range(5):
        t = threading.Thread(target=wait, args=(i,))
        t.start()
        threads.append(t)
        while len(gate.waiting) < i + 1:  # queued before the next one starts
            time.sleep(0.001)
    gate.leave()
    for t in threads:
        t.join(10)
    assert order == [0, 1, 2, 3, 4]
    assert gate.admitted == 0 and not gate.waiting


def test_a_newcomer_does_not_pass_those_waiting() -> None:
    gate = _Gate(1)
    assert gate.enter(_later(FAR))
    entered: list[bool] = []
    t = threading.Thread(target=lambda: entered.append(gate.enter(_later(FAR))))
    t.start()
    while not gate.waiting:
        time.sleep(0.001)
    gate.leave()  # the place goes to the one waiting, not to whoever asks next
    t.join(10)
    assert entered == [True]
    assert gate.enter(_later(0.05)) is False
    gate.leave()
    assert gate.admitted == 0


def test_the_event_loop_waits_without_blocking_and_a_thread_lets_it_in() -> None:
    gate = _Gate(1)
    assert gate.enter(_later(FAR))

    async def main() -> list[str]:
        seen: list[str] = []

        async def ticker() -> None:
            while gate.waiting or not seen:
                seen.append("tick")
                await asyncio.sleep(0.005)

        tick = asyncio.create_task(ticker())
        threading.Timer(0.1, gate.leave).start()  # the place comes back from another thread
        assert await gate.enter_async(_later(FAR))
        seen.append("in")
        await tick
        return seen

    seen = asyncio.run(main())
    assert "in" in seen and seen.count("tick") > 3  # the loop ran while it waited
    assert gate.admitted == 1
    gate.leave()
    assert gate.admitted == 0


def test_on_the_loop_a_deadline_or_a_cancellation_gives_the_place_up() -> None:
    gate = _Gate(1)
    assert gate.enter(_later(FAR))

    async def main() -> None:
        assert await gate.enter_async(_later(0.05)) is False
        assert not gate.waiting
        waiting = asyncio.create_task(gate.enter_async(_later(FAR)))
        await asyncio.sleep(0.02)
        assert len(gate.waiting) == 1
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    asyncio.run(main())
    gate.leave()
    assert gate.admitted == 0
    assert gate.enter(_later(FAR))  # the place was not kept by the cancelled one
    gate.leave()


def test_a_place_granted_as_its_waiter_is_cancelled_goes_to_the_next() -> None:
    gate = _Gate(1)
    assert gate.enter(_later(FAR))

    async def main() -> None:
        first = asyncio.create_task(gate.enter_async(_later(FAR)))
        second = asyncio.create_task(gate.enter_async(_later(FAR)))
        await asyncio.sleep(0.02)
        gate.leave()  # granted to the first, which is cancelled before it runs again
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        assert await asyncio.wait_for(second, 5)

    asyncio.run(main())
    assert gate.admitted == 1
    gate.leave()
    assert gate.admitted == 0


def test_an_admission_is_given_back_once() -> None:
    gate = _Gate(1)
    assert gate.enter(_later(FAR))
    admission = _Admission(gate)
    admission.release()
    admission.release()
    assert gate.admitted == 0


def test_the_pool_admits_as_many_as_there_are_cores_unless_told() -> None:
    assert default_running() >= 2
    assert QueryPool()._gate.limit == default_running()
    assert QueryPool(running=5)._gate.limit == 5
