"""A progress bar for long builds, drawn only where a person is watching.

`progress(total)` returns a context manager with `.advance(n=1)`. It draws on stderr, so stdout stays
clean for diagnostics and `--format json`, and it is a no-op when stderr is not a terminal, when `CI`
is set (CI logs keep every carriage return as a new line), for small builds, and for builds that
finish before `delay` seconds: a bar that flashes for 50 ms is noise. The bar erases itself on exit,
so the diagnostics and the summary line that follow look the same with or without it.

The library never draws it: `promptc.build(..., on_progress=callback)` reports `(done, total)`
and the CLI owns the bar:

    with progress_callback() as on_progress:
        result = build(src, out, config, on_progress=on_progress)
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TextIO

#: Builds with fewer files than this finish too fast for a bar to help.
MIN_TOTAL = 50
#: Seconds before the bar first appears.
DELAY = 0.3
#: Seconds between redraws; a terminal repainting on every file slows the build down.
REDRAW_INTERVAL = 0.1

_FALSE_VALUES = ("", "0", "false", "no", "off")


def in_ci() -> bool:
    """True when the `CI` environment variable is set to anything but an explicit false."""
    return os.environ.get("CI", "").strip().lower() not in _FALSE_VALUES


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or exotic stream
        return False


def enabled(stream: TextIO | None = None) -> bool:
    """Whether a bar may be drawn on `stream` (default stderr) at all."""
    stream = stream if stream is not None else sys.stderr
    if stream is None or in_ci() or os.environ.get("TERM") == "dumb":
        return False
    return _is_terminal(stream)


class Progress:
    """A context manager; `advance()` is cheap and thread-safe, and does nothing when disabled."""

    def __init__(
        self,
        total: int,
        *,
        label: str = "compiling",
        stream: TextIO | None = None,
        delay: float = DELAY,
        min_total: int = MIN_TOTAL,
        active: bool | None = None,
    ) -> None:
        self.total = max(0, total)
        self.done = 0
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.delay = delay
        self.active = (enabled(self.stream) if active is None else active) and self.total >= min_total
        self._lock = threading.Lock()
        self._started = 0.0
        self._last_draw = 0.0
        self._drawn = False

    def __enter__(self) -> Progress:
        self._started = time.monotonic()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def advance(self, n: int = 1) -> None:
        if not self.active:
            return
        with self._lock:
            self.done = min(self.total, self.done + n)
            now = time.monotonic()
            if now - self._started < self.delay:
                return
            if self._drawn and now - self._last_draw < REDRAW_INTERVAL and self.done < self.total:
                return
            self._last_draw = now
            self._draw()

    def close(self) -> None:
        with self._lock:
            if self._drawn:
                # erase the bar: the caller's next output starts on a clean line
                self._write("\r\x1b[2K")
                self._drawn = False
            self.active = False

    def render(self, width: int) -> str:
        """The bar's text for a terminal `width` columns wide (no carriage return)."""
        fraction = self.done / self.total if self.total else 1.0
        counts = f" {self.done}/{self.total} {int(fraction * 100):3d}%"
        head = f"{self.label} "
        room = width - len(head) - len(counts) - 3  # the brackets, and a spare column so no line wraps
        if room < 10:
            return (head + counts.strip())[: max(0, width - 1)]
        filled = int(room * fraction)
        return f"{head}[{'#' * filled}{'-' * (room - filled)}]{counts}"

    def _draw(self) -> None:
        width = shutil.get_terminal_size((80, 24)).columns
        self._write("\r" + self.render(width))
        self._drawn = True

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self.active = False  # the terminal went away; a build must not fail over its progress bar


def progress(
    total: int,
    *,
    label: str = "compiling",
    stream: TextIO | None = None,
    delay: float = DELAY,
    min_total: int = MIN_TOTAL,
) -> Progress:
    """A progress bar over `total` steps on stderr, or a silent stand-in when nobody would see it."""
    return Progress(total, label=label, stream=stream, delay=delay, min_total=min_total)


@contextmanager
def progress_callback(
    *, label: str = "compiling", stream: TextIO | None = None
) -> Iterator[Callable[[int, int], None]]:
    """A `(done, total)` callback for `promptc.build(on_progress=...)` that draws a bar (when one
    would help, see `progress`); the bar is created on the first call, when the total is known."""
    bars: list[Progress] = []

    def on_progress(done: int, total: int) -> None:
        if not bars:
            bars.append(progress(total, label=label, stream=stream).__enter__())
        bar = bars[0]
        bar.advance(done - bar.done)

    try:
        yield on_progress
    finally:
        for bar in bars:
            bar.close()
