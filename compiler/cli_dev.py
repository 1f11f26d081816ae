"""The development commands `promptc watch` and `promptc diff`.

compiler/cli.py registers them on the `main` group, after it has defined `common_options`:

    from .cli_dev import diff_cmd, watch_cmd  # at the bottom of cli.py

    main.add_command(watch_cmd)
    main.add_command(diff_cmd)

`watch_cmd` reuses `common_options` from promptc/cli.py, and cli.py imports this module, so it is
built on first access (module `__getattr__`) rather than at import: that works whichever of the two
modules is imported first. Everything heavy (watchdog, the build driver, orjson) is imported inside
the commands, so importing this module costs no more than click itself and `promptc --version`
stays fast.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, NoReturn

import click

#: exit code for usage errors (unreadable or malformed manifest), as click uses for bad options
USAGE_ERROR = 2


# ---------------------------------------------------------------------------------------------
# watch


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


def _report_build(record: Any, reporter: Any) -> None:
    if record.config_reloaded:
        click.echo(f"[{_stamp(record.finished_at)}] pyproject.toml changed: configuration reloaded", err=True)
    if record.error is not None:
        # one line, never a traceback: the loop keeps watching and the next save tries again
        click.echo(f"[{_stamp(record.finished_at)}] build crashed: {record.error}", err=True)
        return
    reporter.emit(record.diagnostics, summary=_watch_summary(record))


def _report_build_json(record: Any, reporter: Any) -> None:
    """One compact JSON object per line (a stream a tool can read line by line)."""
    import orjson

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


def watch_cmd_impl(src, out, debounce, fmt, strict, quiet, defines, tokenizer) -> None:
    """Build SRC into OUT, then rebuild on every change until Ctrl-C.

    A prompt with errors keeps its last good artifact; the other prompts are still written. Changes
    to pyproject.toml reload the configuration and rebuild everything.
    """
    from .cli import Reporter, _config

    config, config_diags = _config(src, out, defines, tokenizer=tokenizer)
    reporter = Reporter(fmt, strict, quiet)
    report = _report_build_json if fmt == "json" else _report_build

    def on_result(record: Any) -> None:
        report(record, reporter)

    def reload() -> tuple[Any, list]:
        # the same precedence as at start-up: pyproject.toml, then this command's flags
        return _config(src, out, defines, tokenizer=tokenizer)

    from .watch import watch

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
        )
    except KeyboardInterrupt:
        pass  # a Ctrl-C that arrived before the signal handlers were installed
    except Exception as exc:  # noqa: BLE001 - e.g. the inotify watch limit; one line, no traceback
        click.echo(f"promptc watch: {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
    click.echo("stopped watching", err=True)


# The decorators are applied on first access (see `__getattr__`) rather than stacked on the function,
# so that `common_options` comes from promptc/cli.py without importing it while it imports us.
def _make_watch_cmd() -> click.Command:
    from .cli import common_options

    fn = common_options(watch_cmd_impl)
    fn = click.option(
        "--debounce",
        type=click.IntRange(0, 10_000),
        default=50,
        show_default=True,
        metavar="MS",
        help="Quiet window after a change before rebuilding, in milliseconds.",
    )(fn)
    fn = click.option("-o", "--out", default=None, help="Output folder (default from config: build).")(fn)
    fn = click.argument("src", required=False)(fn)
    return click.command("watch")(fn)


# ---------------------------------------------------------------------------------------------
# diff


def _usage_error(message: str) -> NoReturn:
    click.echo(f"promptc diff: {message}", err=True)
    sys.exit(USAGE_ERROR)


def _read_manifest(arg: str) -> dict[str, Any]:
    """A manifest from a file, a build folder (its manifest.json), or `-` for stdin."""
    import orjson

    label = "stdin" if arg == "-" else arg
    try:
        if arg == "-":
            data = sys.stdin.buffer.read()
        else:
            path = Path(arg)
            if path.is_dir():
                path = path / "manifest.json"
                label = str(path)
            data = path.read_bytes()
    except OSError as exc:
        _usage_error(f"cannot read {label}: {exc.strerror or exc}")
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        _usage_error(f"{label} is not valid JSON: {exc}")
    if not isinstance(document, dict):
        _usage_error(f"{label} is not a promptc manifest (expected a JSON object)")
    return document


def diff_cmd_impl(old_manifest: str, new_manifest: str | None, fmt: str, fail_on: tuple[str, ...]) -> None:
    """Compare OLD_MANIFEST with NEW_MANIFEST (default: OUT/manifest.json from the config).

    Reports prompts whose cache-stable prefix changed (cache busts, with the prefix tokens at stake),
    whose inputs changed (an added input is breaking), and prompts added or removed. Either manifest
    may be a build folder, and OLD_MANIFEST may be `-` for stdin:

    \b
        git show origin/main:build/manifest.json | promptc diff - --fail-on contract

    Exit codes: 0 no change named by --fail-on, 1 such a change exists, 2 a manifest cannot be read.
    """
    from .cli import _config
    from .diff import ManifestError, diff_manifests, render_github, render_text

    config, _ = _config(None, None)
    if new_manifest is None:
        new_manifest = str(Path(config.out) / "manifest.json")
    old = _read_manifest(old_manifest)
    new = _read_manifest(new_manifest)
    try:
        diff = diff_manifests(old, new)
    except ManifestError as exc:
        _usage_error(str(exc))
    failing = diff.failing(fail_on)
    if fmt == "json":
        import orjson

        payload = {**diff.to_json(), "fail_on": sorted(set(fail_on)), "failed": failing}
        click.echo(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())
    elif fmt == "github":
        for line in render_github(diff, fail_on, source_root=Path(config.src).as_posix()):
            click.echo(line)
        from .diff import summary_line

        click.echo(f"diff: {summary_line(diff)}")
    else:
        click.echo(render_text(diff))
    if failing:
        if fmt != "json":
            click.echo(f"diff failed: {', '.join(failing)} (--fail-on)", err=True)
        sys.exit(1)


#: `promptc.diff.FAIL_KINDS`, spelled out so that registering the command at start-up does not import
#: the diff module (a test keeps the two equal).
FAIL_KINDS = ("bust", "contract", "breaking", "removed")


def _make_diff_cmd() -> click.Command:
    fn = click.option(
        "--fail-on",
        "fail_on",
        multiple=True,
        type=click.Choice(FAIL_KINDS),
        help="Exit 1 when a change of this kind exists (repeatable): bust, contract, breaking (added inputs only), removed.",
    )(diff_cmd_impl)
    fn = click.option(
        "--format",
        "fmt",
        type=click.Choice(("text", "json", "github")),
        default="text",
        show_default=True,
        help="Output format.",
    )(fn)
    fn = click.argument("new_manifest", required=False)(fn)
    fn = click.argument("old_manifest")(fn)
    return click.command("diff")(fn)


_COMMANDS = {"watch_cmd": _make_watch_cmd, "diff_cmd": _make_diff_cmd}


def __getattr__(name: str) -> click.Command:
    maker = _COMMANDS.get(name)
    if maker is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    command = maker()
    globals()[name] = command  # built once; later lookups do not reach __getattr__
    return command
