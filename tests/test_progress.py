"""The build progress bar: drawn on a terminal, silent in pipes and in CI."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from promptc.cli.progress import Progress, enabled, in_ci, progress


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def no_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")


def test_draws_on_a_terminal_and_erases_itself() -> None:
    terminal = FakeTerminal()
    with progress(200, stream=terminal, delay=0) as bar:
        for _ in range(200):
            bar.advance()
    text = terminal.getvalue()
    assert "compiling [" in text
    assert "200/200 100%" in text  # the last step is always drawn
    assert text.endswith("\r\x1b[2K")  # the line is cleared for whatever prints next


def test_prints_nothing_into_a_pipe() -> None:
    read, write = os.pipe()
    with os.fdopen(write, "w") as stream, progress(500, stream=stream, delay=0) as bar:
        assert not bar.active
        bar.advance(500)
    with os.fdopen(read) as pipe:
        assert pipe.read() == ""


def test_prints_nothing_in_a_subprocess_with_piped_output() -> None:
    code = "from promptc.cli.progress import progress\nwith progress(1000, delay=0) as bar:\n    bar.advance(1000)\n"
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("", "")


@pytest.mark.parametrize("value", ["true", "1", "yes"])
def test_silent_in_ci(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    terminal = FakeTerminal()
    assert in_ci() and not enabled(terminal)
    with progress(500, stream=terminal, delay=0) as bar:
        bar.advance(500)
    assert terminal.getvalue() == ""


@pytest.mark.parametrize("value", ["", "0", "false"])
def test_ci_set_to_false_is_not_ci(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    assert not in_ci()
    assert enabled(FakeTerminal())


def test_dumb_terminal_gets_no_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "dumb")
    assert not enabled(FakeTerminal())


def test_small_builds_get_no_bar() -> None:
    terminal = FakeTerminal()
    with progress(5, stream=terminal, delay=0) as bar:
        bar.advance(5)
    assert terminal.getvalue() == ""


def test_fast_builds_get_no_bar() -> None:
    terminal = FakeTerminal()
    with progress(500, stream=terminal, delay=60) as bar:
        bar.advance(500)
    assert terminal.getvalue() == ""


@pytest.mark.parametrize("width", [20, 40, 80, 200])
def test_render_fits_the_terminal(width: int) -> None:
    bar = Progress(300, active=True)
    bar.done = 150
    line = bar.render(width)
    assert len(line) < width
    assert "150/300" in line


def test_a_closed_stream_disables_the_bar_instead_of_failing() -> None:
    terminal = FakeTerminal()
    bar = Progress(100, stream=terminal, delay=0, min_total=1)
    with bar:
        terminal.close()
        bar.advance()  # must not raise
    assert not bar.active
