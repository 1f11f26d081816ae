"""`promptc watch`: build, then rebuild on every change until Ctrl-C (the loop is `promptc.driver.watch`)."""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from dataclasses import replace
from typing import Any

import click
import orjson
from click.core import ParameterSource

from ..driver.watch import watch
from ..facts.config import Config, coerce
from ..facts.diagnostics import Diagnostic, render_text, summary_line, use_color
from .common import Reporter, common_options, config_options, parse_defines, project_config, settings, with_allowed


def _stamp(when: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(when))


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _watch_summary(record: Any) -> str:
    """`[12:01:02] rebuilt 1 prompt in 14 ms` (the reporter appends the error and warning counts)."""
    verb = "built" if record.initial else "rebuilt"
    total = len(record.result.prompts) if record.result is not None else 0
    if record.compiled == 0 and not record.removed and total:
        text = f"[{_stamp(record.finished_at)}] {_plural(total, 'prompt')} up to date"
    else:
        text = f"[{_stamp(record.finished_at)}] {verb} {_plural(record.compiled, 'prompt')}"
    if record.removed:
        text += f", removed {_plural(len(record.removed), 'artifact')}"
    text += f" in {record.duration * 1000:.0f} ms"
    result = record.result
    if result is not None and not result.ok:
        text += " (failing prompts keep their last good artifact)"
    return text


def _key(d: Diagnostic) -> tuple[str, str, str, str]:
    """What makes a diagnostic the same one in the next build: its file, code, severity and
    message (not its line: an edit above it moves it without fixing it)."""
    return (d.path, d.code, d.severity, d.message)


class _TextReport:
    """The text report of each build. The first build (and the one after a configuration reload)
    prints every diagnostic; a rebuild prints what changed: new diagnostics in full, fixed ones and
    the ones still there in the files just edited one line each, and one summary line counting the
    tree's errors and warnings. What is unchanged elsewhere is counted, not printed again."""

    def __init__(self, reporter: Any) -> None:
        self.reporter = reporter
        self.previous: list[Any] | None = None

    def __call__(self, record: Any) -> None:
        if record.config_reloaded:
            click.echo(f"[{_stamp(record.finished_at)}] pyproject.toml changed: configuration reloaded", err=True)
        if record.error is not None:
            # one line, never a traceback: the loop keeps watching and the next save tries again
            click.echo(f"[{_stamp(record.finished_at)}] build crashed: {record.error}", err=True)
            return
        reporter = self.reporter
        current = reporter.promote(record.diagnostics)
        previous, self.previous = self.previous, current
        if previous is None or record.config_reloaded or reporter.fmt != "text":
            reporter.emit(current, summary=_watch_summary(record))
            return
        self._delta(record, previous, current)

    def _delta(self, record: Any, previous: list[Any], current: list[Any]) -> None:
        before = Counter(_key(d) for d in previous)
        now = Counter(_key(d) for d in current)
        edited = {os.path.abspath(path) for path in record.changes}
        quiet = self.reporter.quiet
        try:
            color = use_color(settings().color)
        except RuntimeError:
            color = False
        new: list[Diagnostic] = []
        kept: list[Diagnostic] = []
        seen: Counter[tuple[str, str, str, str]] = Counter()
        for d in current:
            key = _key(d)
            seen[key] += 1
            (new if seen[key] > before[key] else kept).append(d)
        fixed: list[Diagnostic] = []
        gone: Counter[tuple[str, str, str, str]] = Counter()
        for d in previous:
            key = _key(d)
            gone[key] += 1
            if gone[key] > now[key]:
                fixed.append(d)
        still = [d for d in kept if os.path.abspath(d.path) in edited]
        if quiet:
            new = [d for d in new if d.severity == "error"]
            still = [d for d in still if d.severity == "error"]
            fixed = []
        for d in new:
            click.echo(render_text(d, color=color) + "\n", color=color)
        for d in fixed:
            click.echo(f"fixed: {d}")
        for d in still:
            click.echo(f"still: {d}")
        errors = any(d.severity == "error" for d in current)
        if quiet and not errors:
            return
        counts = [(len(new), "new"), (len(fixed), "fixed"), (len(kept), "unchanged")]
        detail = ", ".join(f"{n} {label}" for n, label in counts if n)
        line = summary_line(current)
        click.echo(f"{_watch_summary(record)}: {line}" + (f" ({detail})" if detail else ""))


def _report_build_json(record: Any, reporter: Any) -> None:
    """One compact JSON object per line (a stream a tool can read line by line)."""
    payload: dict[str, Any] = {
        "event": "build",
        "seq": record.seq,
        "initial": record.initial,
        "time": round(record.finished_at, 3),
        "duration_ms": round(record.duration * 1000, 1),
        "config_reloaded": record.config_reloaded,
    }
    if record.error is not None:
        payload.update(event="error", error=record.error)
    else:
        diagnostics = reporter.promote(record.diagnostics)
        result = record.result
        payload.update(
            compiled=record.compiled,
            removed=list(record.removed),
            prompts=len(result.prompts),
            written=result.written,
            diagnostics=[d.to_json() for d in diagnostics],
            errors=sum(1 for d in diagnostics if d.severity == "error"),
            warnings=sum(1 for d in diagnostics if d.severity == "warning"),
        )
    click.echo(orjson.dumps(payload).decode())


@click.command("watch")
@config_options("watch")
@click.option(
    "--debounce",
    type=click.IntRange(0, 10_000),
    default=50,
    show_default=True,
    metavar="MS",
    help="Quiet window after a change before rebuilding, in milliseconds.",
)
@common_options
def watch_cmd(
    debounce: int,
    fmt: str,
    strict: bool,
    allow: tuple[str, ...],
    quiet: bool,
    defines: tuple[str, ...],
    **options: Any,
) -> None:
    """Build SRC into OUT, then rebuild on every change until Ctrl-C.

    A prompt with errors (with --strict: or warnings) keeps its last good artifact; the other
    prompts are still written, and the configured bindings follow each build. Changes to
    pyproject.toml reload the configuration and rebuild everything.
    """
    if fmt in ("sarif", "markdown"):
        raise click.BadParameter(
            f"a {fmt} report is one document per run; use `promptc check --format {fmt}` (or --format json, "
            "one object per rebuild)",
            param_hint="--format",
        )
    ctx = click.get_current_context()
    # flags typed on the command line keep winning after pyproject.toml changes
    explicit = {k: v for k, v in options.items() if ctx.get_parameter_source(k) == ParameterSource.COMMANDLINE}
    config, config_diags = project_config(options, defines, allow=allow)
    current = settings()  # the loop runs in another thread, where there is no click context
    reporter = Reporter(fmt, strict, quiet)
    text = _TextReport(reporter)

    def on_result(record: Any) -> None:
        if fmt == "json":
            _report_build_json(record, reporter)
        else:
            text(record)

    def reload() -> tuple[Config, list[Diagnostic]]:
        fresh, diagnostics = current.reload()
        # `--allow` keeps adding to the file's `allow` (a reloaded file's own list included)
        fresh = with_allowed(replace(fresh, **{k: coerce(k, v) for k, v in explicit.items()}), allow)
        return fresh.with_defines(parse_defines(defines)), diagnostics

    click.echo(f"watching {config.src} → {config.out} (Ctrl-C to stop)", err=True)
    try:
        watch(
            config.src,
            config.out,
            config,
            on_result=on_result,
            debounce=debounce / 1000,
            config_loader=reload,
            config_diagnostics=config_diags,
            strict=strict,
        )
    except KeyboardInterrupt:
        pass  # a Ctrl-C that arrived before the signal handlers were installed
    except Exception as exc:  # noqa: BLE001 - e.g. the inotify watch limit; one line, no traceback
        click.echo(f"promptc watch: {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
    click.echo("stopped watching", err=True)
