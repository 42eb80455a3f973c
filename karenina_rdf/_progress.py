"""How long work reports its progress, without knowing who shows it.

The library layers (store, checkpoint, validation, results, web publishing) take an optional
``progress`` (a :class:`Progress`) and report real counts through it: questions mapped, triples
loaded, results read, files written. They never draw anything; the command line renders the
phases as rich progress bars (``cli/_progress.py``) and everyone else passes nothing, which is
:data:`QUIET`.

A phase is a :class:`Task` returned by :meth:`Progress.start`; phases may overlap (mapping and
loading run on two threads), so each task is advanced by the thread that owns it. Calls are
cheap for the caller to make once per question or row: a renderer throttles its own updates.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol, TypeVar

T = TypeVar("T")


class Task(Protocol):
    """One phase of the work: a count that grows towards its total."""

    def advance(self, n: int = 1, /) -> None:
        """``n`` more units are done."""
        ...

    def set_total(self, total: int, /) -> None:
        """The total, once it is known (a load learns it when mapping ends)."""
        ...

    def done(self) -> None:
        """The phase is over."""
        ...


class Progress(Protocol):
    """Where work reports its phases."""

    def start(self, phase: str, total: int | None = None, unit: str = "") -> Task:
        """A new phase named ``phase`` (e.g. "mapping"), of ``total`` ``unit`` (e.g. "questions";
        None: not known yet)."""
        ...


class _QuietTask:
    def advance(self, n: int = 1, /) -> None:
        pass

    def set_total(self, total: int, /) -> None:
        pass

    def done(self) -> None:
        pass


class _Quiet:
    def start(self, phase: str, total: int | None = None, unit: str = "") -> Task:
        return QUIET_TASK


QUIET_TASK: Task = _QuietTask()
QUIET: Progress = _Quiet()  # nobody is watching: every call does nothing


def counted(items: Iterable[T], task: Task) -> Iterator[T]:
    """``items``, advancing ``task`` by one after each, and ending it when they run out."""
    for item in items:
        yield item
        task.advance()
    task.done()
