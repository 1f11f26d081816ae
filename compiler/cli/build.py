"""`promptc build` and `promptc check`."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

import click

from ..driver import build, check
from ..driver.pool import stop_on_sigterm
from .common import Reporter, common_options, config_options, project_config
from .progress import progress_callback


@click.command("build")
@config_options("build")
@common_options
def build_cmd(
    fmt: str, strict: bool, allow: tuple[str, ...], quiet: bool, defines: tuple[str, ...], **options: Any
) -> None:
    """Compile SRC (config: src; default prompts_src) into OUT. All or nothing: on any error OUT is untouched."""
    config, config_diags = project_config(options, defines, allow=allow)
    reporter = Reporter(fmt, strict, quiet)
    with interrupted("build", config.out), progress_callback() as on_progress:
        result = build(
            config.src, config.out, config, strict=strict, config_diagnostics=config_diags, on_progress=on_progress
        )
    state = "unchanged" if result.unchanged else ("written" if result.written else "not written")
    summary = f"build {state}: {len(result.prompts)} prompt{'s' if len(result.prompts) != 1 else ''} → {config.out}"
    if not (result.written or result.unchanged):
        summary = "build failed, nothing written"
    extra = {"written": result.written, "prompts": len(result.prompts), "out": config.out}
    sys.exit(reporter.emit(result.diagnostics, result.source_count, extra=extra, summary=summary))


@click.command("check")
@config_options("check")
@click.option("--locked", is_flag=True, help="Also fail when OUT differs from what build would write.")
@common_options
def check_cmd(
    locked: bool,
    fmt: str,
    strict: bool,
    allow: tuple[str, ...],
    quiet: bool,
    defines: tuple[str, ...],
    **options: Any,
) -> None:
    """Compile SRC without writing anything; with --locked, fail when OUT is stale."""
    config, config_diags = project_config(options, defines, allow=allow)
    with interrupted("check", config.out):
        result = check(config.src, config.out, config, locked=locked, strict=strict, config_diagnostics=config_diags)
    reporter = Reporter(fmt, strict, quiet)
    # paths as the diagnostics spell them, relative to the current folder (`build/stray.json`), not
    # to the output folder as `BuildResult.stale` has them; bindings files as configured
    stale = [(Path(config.out) / rel).as_posix() for rel in result.stale] + list(result.stale_bindings)
    summary = "check"
    if locked and stale:
        summary = f"check: {config.out} is stale ({len(stale)} file{'s' if len(stale) != 1 else ''})"
    sys.exit(reporter.emit(result.diagnostics, result.source_count, extra={"stale": stale}, summary=summary))


class interrupted:
    """`with interrupted("build", out):` — Ctrl-C (SIGINT) or SIGTERM during a build ends the
    command with one line on stderr and exit status 128 + the signal (130, 143), as a shell reports
    a process the signal ended: no traceback from the command or its process pool, and the output
    folder holds a complete build (it is only ever swapped whole)."""

    def __init__(self, command: str, out: str | Path) -> None:
        self.command, self.out = command, out

    def __enter__(self) -> None:
        self._sigterm = stop_on_sigterm()
        self._sigterm.__enter__()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._sigterm.__exit__(kind, value, traceback)
        if kind is None or not issubclass(kind, KeyboardInterrupt):
            return

        signum = getattr(value, "signum", signal.SIGINT)
        name = signal.Signals(signum).name
        click.echo(
            f"promptc {self.command}: interrupted ({name}); `{Path(self.out).as_posix()}` holds the last complete build",
            err=True,
        )
        sys.exit(128 + int(signum))
