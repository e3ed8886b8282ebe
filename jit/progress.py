"""Progress of long steps: what the library reports, and the two ways a front end shows it.

Work that can take minutes on a large catalog (:func:`jit.pipeline.sync`'s discovery,
analysis and embedding, :func:`jit.catalog.embedding_pass.embed_pending`,
:func:`jit.analysis.analyze.analyze_pending`, the evaluation's loops) takes an optional
``progress`` callable and calls it with :class:`ProgressEvent` values. The library never
prints: a front end chooses how to show them (:func:`progress_display`: a rich bar on a
terminal, throttled plain lines elsewhere, nothing with ``-q``), and a harness that
embeds jit passes its own callable (a log, a status line, a UI).

What a callable can rely on, per step (:class:`Step` enforces it):

* the first event has ``done == 0``; later ones have a larger ``done``, never above ``total``;
* exactly one event has ``done == total`` (:attr:`ProgressEvent.finished`), and it is the
  step's last; a step with nothing to do is that one event (``0/0``);
* a step whose size is not known in advance has ``total=None`` until that last event, which
  sets ``total`` to what it counted (its ``done`` may equal the event's before);
* steps follow one another, they do not interleave; a step that fails (an exception) has
  no last event;
* events may come from a worker thread (the pipeline analyzes and embeds off the event loop),
  and the callable runs on the worker's time: keep it quick.

How often a step reports is the step's business: per server discovered, per analysis
batch (256 tools), per embedding chunk (:data:`jit.catalog.embedding_pass.EMBED_CHUNK` texts, the
unit the model and the catalog's transactions work in), per evaluated query.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from .display import visible

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "LINE_INTERVAL",
    "ProgressBar",
    "ProgressCallback",
    "ProgressEvent",
    "ProgressLines",
    "Step",
    "progress_display",
]


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """Where one step stands."""

    #: A stable name for programs: ``discover``, ``analyze``, ``embed``, ``eval.rank``, …
    step: str
    #: What a person reads: ``discovering tools``, ``embedding``, …
    label: str
    done: int
    #: None while the size is unknown; set on the step's last event.
    total: int | None
    #: What ``done`` counts: ``servers``, ``tools``, ``texts``, ``queries``.
    unit: str = ""
    #: Context for a person (``model all-MiniLM-L6-v2, 12 from cache``); may be empty.
    detail: str = ""
    #: Seconds since the step began (a monotonic clock), so a callable needs no clock of its own.
    elapsed: float = 0.0

    @property
    def finished(self) -> bool:
        return self.total is not None and self.done >= self.total

    @property
    def rate(self) -> float | None:
        """``done`` per second so far, once there is something to divide."""
        return self.done / self.elapsed if self.done and self.elapsed > 0 else None


ProgressCallback = Callable[[ProgressEvent], None]


class Step:
    """One step's events, kept to the contract above; every method is a no-op without a callable.

    Emits the first event when created. Use as a context manager: leaving it normally ends
    the step (``done`` set to ``total``); an exception leaves it unended.
    """

    __slots__ = ("_ended", "_progress", "_started", "detail", "done", "label", "step", "total", "unit")

    def __init__(self, progress: ProgressCallback | None, step: str, label: str, total: int | None, *,
                 unit: str = "", detail: str = "") -> None:
        self._progress = progress
        self.step, self.label, self.unit, self.detail = step, label, unit, detail
        self.total = total
        self.done = 0
        self._ended = False
        self._started = time.perf_counter()
        self._emit()

    def _emit(self) -> None:
        if self._progress is None:
            return
        event = ProgressEvent(self.step, self.label, self.done, self.total, self.unit, self.detail,
                              time.perf_counter() - self._started)
        self._ended = event.finished
        self._progress(event)

    def update(self, done: int) -> None:
        """Report ``done`` (clamped to ``total``; a count that does not grow is not reported)."""
        if self._ended:
            return
        if self.total is not None:
            done = min(done, self.total)
        if done > self.done:
            self.done = done
            self._emit()

    def advance(self, n: int = 1) -> None:
        self.update(self.done + n)

    def end(self) -> None:
        """The step's last event: ``done == total`` (a step of unknown size takes what it counted)."""
        if self._ended or self._progress is None:
            return
        if self.total is None:
            self.total = self.done
        self.done = self.total
        self._emit()

    def __enter__(self) -> Step:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.end()


# --------------------------------------------------------------------------- rendering (front ends)

#: Seconds between two plain lines of one step, at most (when events come that often).
LINE_INTERVAL = 5.0
#: A plain line is also written each time a step passes another tenth, at most one a second.
LINE_FRACTION = 0.1
LINE_MIN_GAP = 1.0


def _seconds(s: float) -> str:
    s = max(0.0, s)
    if s < 60:
        return f"{s:.1f}s"
    m, sec = divmod(int(round(s)), 60)
    return f"{m}m{sec:02d}s" if m < 60 else f"{m // 60}h{m % 60:02d}m"


def _rate(event: ProgressEvent) -> str:
    rate = event.rate
    if rate is None:
        return ""
    return f"{rate:,.1f} {event.unit}/s" if rate < 10 else f"{rate:,.0f} {event.unit}/s"


class ProgressLines:
    """Events as plain lines on a stream that is not a terminal (a log file, CI, a pipe).

    Per step: a line when it starts (what and how many), then at most one line each
    :data:`LINE_INTERVAL` seconds or each tenth passed (no closer than
    :data:`LINE_MIN_GAP`), with the count, share, rate and time left, and a line when it
    ends with its time and rate. Thread-safe; text is shown through
    :func:`jit.display.visible`.
    """

    def __init__(self, stream: IO[str], prefix: str = "jit", *, interval: float = LINE_INTERVAL) -> None:
        self.stream = stream
        self.prefix = prefix
        self.interval = interval
        self._lock = threading.Lock()
        self._step: str | None = None
        self._last = 0.0  # elapsed at the step's last line
        self._tenth = 0
        self._sized = True  # the step's size was known from its start

    def _write(self, event: ProgressEvent, text: str) -> None:
        line = visible(f"{self.prefix}: {event.label}: {text}", layout=False)
        self.stream.write(line + "\n")
        self.stream.flush()

    def __call__(self, event: ProgressEvent) -> None:
        with self._lock:
            unit = f" {event.unit}" if event.unit else ""
            detail = f" ({event.detail})" if event.detail else ""
            first = event.step != self._step or (event.done == 0 and not event.finished)
            if first:
                self._step, self._last, self._tenth = event.step, event.elapsed, 0
                self._sized = event.total is not None
            if event.finished:
                if event.total == 0 and not self._sized:
                    self._write(event, f"done in {_seconds(event.elapsed)}")
                elif event.total == 0:
                    self._write(event, f"nothing to do{detail}")
                else:
                    rate = _rate(event)
                    self._write(event, f"{event.done:,}/{event.total:,}{unit} done in {_seconds(event.elapsed)}"
                                + (f" ({rate})" if rate else ""))
                self._step = None
                return
            if first:
                size = f"{event.total:,}{unit}" if event.total is not None else "started"
                self._write(event, size + detail)
                return
            tenth = int(event.done / event.total / LINE_FRACTION) if event.total else 0
            since = event.elapsed - self._last
            if since >= self.interval or (tenth > self._tenth and since >= LINE_MIN_GAP):
                self._last, self._tenth = event.elapsed, tenth
                self._write(event, self._status(event, unit))

    @staticmethod
    def _status(event: ProgressEvent, unit: str) -> str:
        if event.total is None:
            return f"{event.done:,}{unit}, {_seconds(event.elapsed)} elapsed"
        parts = [f"{event.done:,}/{event.total:,}{unit} ({100 * event.done / event.total:.0f}%)"]
        rate = event.rate
        if rate:
            parts.append(_rate(event))
        parts.append(f"{_seconds(event.elapsed)} elapsed")
        if rate:
            parts.append(f"about {_seconds((event.total - event.done) / rate)} left")
        return ", ".join(parts)


class ProgressBar:
    """Events as rich progress bars on a terminal: one bar per step, left on screen when it ends.

    Each bar shows the step, its detail, a bar (pulsing while the size is unknown), the
    count, the share, the rate, the time elapsed and the time left. Use as a context
    manager (it owns a rich live display on ``console`` while open). Thread-safe.
    """

    def __init__(self, console: Console) -> None:
        # Here, not at the top: the library imports this module for Step, and rich (~50 ms)
        # is needed only by a front end that draws bars.
        from rich.markup import escape
        from rich.progress import (
            BarColumn,
            Progress,
            ProgressColumn,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text

        class CountColumn(ProgressColumn):
            """``2048/6564  31%``; nothing for a step whose size was not known when it began."""

            def render(self, task: Any) -> Text:
                if not task.fields.get("sized") or not task.total:
                    return Text("")
                width = len(f"{task.total:,}")
                return Text(f"{int(task.completed):>{width},}/{int(task.total):,} {task.percentage:>3.0f}%",
                            style="progress.download")

        class RateColumn(ProgressColumn):
            """``123 tools/s``: the step's count per second so far (:attr:`ProgressEvent.rate`)."""

            def render(self, task: Any) -> Text:
                speed = task.fields.get("rate")
                unit = task.fields.get("unit", "")
                if not speed:
                    return Text("")
                return Text(f"{speed:,.1f} {unit}/s" if speed < 10 else f"{speed:,.0f} {unit}/s",
                            style="progress.data.speed")

        self.progress = Progress(
            SpinnerColumn(finished_text="[green]✓[/]"),
            TextColumn("{task.description}"),
            BarColumn(),
            CountColumn(),
            RateColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self._escape = escape
        self._lock = threading.Lock()
        self._step: str | None = None
        self._task: Any = None

    def __enter__(self) -> ProgressBar:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def __call__(self, event: ProgressEvent) -> None:
        with self._lock:
            if event.step != self._step or (event.done == 0 and not event.finished) or self._task is None:
                text = visible(event.label + (f" ({event.detail})" if event.detail else ""), layout=False)
                self._task = self.progress.add_task(self._escape(text), total=event.total, unit=event.unit,
                                                    sized=event.total is not None)
                self._step = event.step
            self.progress.update(self._task, completed=event.done, total=event.total, rate=event.rate)
            if event.finished:
                if not event.total:  # a full bar for a step that is over, whatever it counted
                    self.progress.update(self._task, total=1, completed=1)
                self.progress.stop_task(self._task)
                self._step = self._task = None


@contextlib.contextmanager
def progress_display(console: Console, *, prefix: str = "jit",
                     quiet: bool = False) -> Iterator[ProgressCallback | None]:
    """The callable a front end passes to the library: a :class:`ProgressBar` when
    ``console`` is a terminal, else :class:`ProgressLines` on its file, None when ``quiet``."""
    if quiet:
        yield None
    elif console.is_terminal:
        with ProgressBar(console) as bar:
            yield bar
    else:
        yield ProgressLines(console.file, prefix)
