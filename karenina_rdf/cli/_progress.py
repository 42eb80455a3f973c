"""Progress bars for long commands: the one place that draws what the library layers report
through ``karenina_rdf._progress`` (they never import rich).

Each phase a command reports (mapping, loading, validating, writing …) is one line on stderr
with its count, total, elapsed time and time left, as ``verify`` shows its run. The bars are
drawn only on a terminal, unless ``--progress`` asks for them (then a non-terminal gets their
final state once), and never with ``--no-progress`` or ``--quiet``: piped output stays clean.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.filesize import decimal
from rich.progress import BarColumn, ProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.progress import Progress as RichProgress
from rich.progress import Task as RichTask
from rich.text import Text

from karenina_rdf._progress import Progress, Task

ProgressOpt = Annotated[
    bool | None,
    typer.Option(
        "--progress/--no-progress",
        help="Show progress bars on stderr (default: when stderr is a terminal).",
        show_default=False,
    ),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", help="No progress bars (as --no-progress).")]

# At most this many updates a second reach rich per phase: a phase is advanced once per
# question or result row (a million times in a big results import), rich's advance takes a lock
# and keeps speed samples, and the bar is redrawn only a few times a second anyway.
_UPDATES_PER_SECOND = 10


def wanted(progress: bool | None, quiet: bool) -> bool:
    """Whether to draw: never with --quiet or --no-progress, always with --progress, and
    otherwise only when stderr is a terminal (piped output is read by programs)."""
    if quiet or progress is False:
        return False
    return progress is True or sys.stderr.isatty()


def _short(n: float | None) -> str:
    """A count in a few characters: exact below 10,000, then 58.4k, 3.9M."""
    if n is None:
        return "?"
    if n < 10_000:
        return f"{int(n):,}"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


class _Count(ProgressColumn):
    """``done/total unit``: bytes as sizes, other units as short counts."""

    def render(self, task: RichTask) -> Text:
        unit = task.fields.get("unit", "")
        if unit == "bytes":
            total = decimal(int(task.total)) if task.total is not None else "?"
            text = f"{decimal(int(task.completed))}/{total}"
        else:
            text = f"{_short(task.completed)}/{_short(task.total)} {unit}"
        return Text(text, style="progress.download", no_wrap=True, overflow="ellipsis")


class _BarTask:
    """One phase's line. Counts are gathered here and handed to rich at most
    ``_UPDATES_PER_SECOND`` times a second. Each task is advanced by one thread (a load's by the
    loader thread), and ended once that thread is done: only ``done`` flushes from outside."""

    def __init__(self, bars: RichProgress, task: Any, total: int | None) -> None:
        self.bars, self.task, self.total = bars, task, total
        self.pending = self.completed = 0
        self.next_flush = 0.0

    def advance(self, n: int = 1, /) -> None:
        self.pending += n
        now = time.monotonic()
        if now >= self.next_flush:
            self.next_flush = now + 1 / _UPDATES_PER_SECOND
            self._flush()

    def _flush(self) -> None:
        n, self.pending = self.pending, 0
        if n:
            self.completed += n
            self.bars.advance(self.task, n)

    def set_total(self, total: int, /) -> None:
        self.total = total
        self.bars.update(self.task, total=total)

    def done(self) -> None:
        self._flush()
        if self.total is None:  # never told its total: what was counted is all there was
            self.bars.update(self.task, total=self.completed)
        self.bars.stop_task(self.task)  # the clock stops: elapsed shows the phase's own time


class Bars:
    """A :class:`Progress` drawn as rich progress bars, one line per phase."""

    def __init__(self, console: Console, label: str) -> None:
        self.label = label
        self.bars = RichProgress(
            TextColumn("[bold]{task.description}[/]"),
            # Narrow enough for the longest line ("results import mapping", "409.4k/409.4k
            # triples") to fit in 80 columns.
            BarColumn(bar_width=12),
            _Count(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            # A redraw of four lines costs about 2.5 ms of CPU: twice a second keeps a 20k import's
            # bars under 1% of its time on a quiet machine (docs/performance.md § Progress bars).
            refresh_per_second=2,
            # stdout may be a file the command is writing (export > file.json): never capture it.
            redirect_stdout=False,
            redirect_stderr=False,
        )

    def start(self, phase: str, total: int | None = None, unit: str = "") -> Task:
        description = f"{self.label} {phase}"
        # The next file's phase takes the line of the last file's: a folder of fifty checkpoints
        # shows a handful of lines, not a hundred and fifty.
        for old in self.bars.tasks:
            if old.description == description and old.finished:
                self.bars.remove_task(old.id)
        task = self.bars.add_task(description, total=total, unit=unit)
        return _BarTask(self.bars, task, total)


@contextmanager
def progress_bars(progress: bool | None, quiet: bool, label: str) -> Iterator[Progress | None]:
    """Bars on stderr for the duration of the block if :func:`wanted`, else None (the library's
    quiet default). ``label`` starts each line (the command's name)."""
    if not wanted(progress, quiet):
        yield None
        return
    from ._common import err  # warnings printed while the bars are shown go above them

    bars = Bars(err, label)
    bars.bars.start()
    try:
        yield bars
    finally:
        bars.bars.stop()
