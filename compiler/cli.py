"""The `promptc` command: a thin click layer over the library. Imports are lazy so that
`promptc --version` does not pay for the parser, the tokenizer or the passes."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from . import __version__

FORMATS = ("text", "json", "github")


class Reporter:
    """Prints diagnostics in the chosen format and decides the exit code."""

    def __init__(self, fmt: str = "text", strict: bool = False, quiet: bool = False) -> None:
        self.fmt = fmt
        self.strict = strict
        self.quiet = quiet

    def promote(self, diagnostics):
        if not self.strict:
            return list(diagnostics)
        return [d.as_error() if d.severity == "warning" else d for d in diagnostics]

    def emit(self, diagnostics, files: int | None = None, extra: dict | None = None, summary: str | None = None) -> int:
        from .diagnostics import render_github, render_text, summary_line

        diagnostics = self.promote(diagnostics)
        errors = any(d.severity == "error" for d in diagnostics)
        if self.fmt == "json":
            import orjson

            payload = {"diagnostics": [d.to_json() for d in diagnostics], **(extra or {})}
            payload["errors"] = sum(1 for d in diagnostics if d.severity == "error")
            payload["warnings"] = sum(1 for d in diagnostics if d.severity == "warning")
            click.echo(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())
            return 1 if errors else 0
        shown = [d for d in diagnostics if not (self.quiet and d.severity == "warning")]
        for d in shown:
            click.echo(render_github(d) if self.fmt == "github" else render_text(d) + "\n")
        if not self.quiet or errors:
            line = summary_line(diagnostics, files)
            click.echo(f"{summary}: {line}" if summary else line)
        return 1 if errors else 0


def _parse_defines(values: tuple[str, ...]) -> dict[str, str]:
    import re

    defines = {}
    for value in values:
        name, eq, text = value.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise click.BadParameter(f"expected NAME=VALUE, got {value!r}", param_hint="-D")
        defines[name] = text
    return defines


def _config(src: str | None, out: str | None, defines: tuple[str, ...] = (), **overrides: Any):
    """Config from pyproject.toml (found from the current folder upward), then CLI flags."""
    from dataclasses import replace

    from .config import find_pyproject, load_config
    from .driver import with_defines

    config, diagnostics = load_config(find_pyproject(Path.cwd()))
    values = {k: v for k, v in overrides.items() if v is not None}
    if src is not None:
        values["src"] = src
    if out is not None:
        values["out"] = out
    context = click.get_current_context(silent=True)
    provider = context.meta.get("promptc.provider") if context is not None else None
    if provider is not None:
        values["provider"] = provider
    config = replace(config, **values)
    from .config import validate

    problem = validate(config)
    if problem:
        raise click.BadParameter(problem, param_hint="--provider")
    return with_defines(config, _parse_defines(defines)), diagnostics


def common_options(fn: Callable) -> Callable:
    fn = click.option(
        "--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="Diagnostics format."
    )(fn)
    fn = click.option("--strict", is_flag=True, help="Treat warnings as errors.")(fn)
    fn = click.option("--quiet", "-q", is_flag=True, help="Print errors only.")(fn)
    fn = click.option("-D", "defines", multiple=True, metavar="NAME=VALUE", help="Build-time constant for ${NAME}.")(fn)
    fn = click.option("--tokenizer", default=None, help="Tokenizer for metering (default from config: cl100k_base).")(
        fn
    )
    # Kept in the click context rather than passed as a parameter, so every command that takes the
    # common options gets it without changing its signature.
    fn = click.option(
        "--provider",
        default=None,
        expose_value=False,
        callback=lambda ctx, _param, value: ctx.meta.__setitem__("promptc.provider", value),
        help="Check prefixes against this provider's minimum (anthropic, openai, gemini:pro, ...).",
    )(fn)
    return fn


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="promptc", message="%(prog)s %(version)s")
def main() -> None:
    """promptc — compile prompt sources into frozen, cache-aware JSON artifacts."""


@main.command("build")
@click.argument("src", required=False)
@click.option("-o", "--out", default=None, help="Output folder (default from config: build).")
@common_options
def build_cmd(src, out, fmt, strict, quiet, defines, tokenizer) -> None:
    """Compile SRC (default prompts_src) into OUT. All or nothing: on any error OUT is untouched."""
    from .driver import build

    config, config_diags = _config(src, out, defines, tokenizer=tokenizer)
    reporter = Reporter(fmt, strict, quiet)
    if reporter.strict:
        # a strict build must not write when a warning would fail it: check first, then write
        from .driver import check

        preview = check(config.src, config.out, config)
        if any(d.severity == "warning" for d in preview.diagnostics) or not preview.ok:
            sys.exit(reporter.emit([*config_diags, *preview.diagnostics], preview.source_count, summary="build failed"))
    result = build(config.src, config.out, config)
    diagnostics = [*config_diags, *result.diagnostics]
    state = "unchanged" if result.unchanged else ("written" if result.written else "not written")
    summary = f"build {state}: {len(result.prompts)} prompt{'s' if len(result.prompts) != 1 else ''} → {config.out}"
    if not result.ok:
        summary = "build failed, nothing written"
    extra = {"written": result.written, "prompts": len(result.prompts), "out": config.out}
    sys.exit(reporter.emit(diagnostics, result.source_count, extra=extra, summary=summary))


@main.command("check")
@click.argument("src", required=False)
@click.option("-o", "--out", default=None, help="Output folder to compare with --locked.")
@click.option("--locked", is_flag=True, help="Also fail when OUT differs from what build would write.")
@common_options
def check_cmd(src, out, locked, fmt, strict, quiet, defines, tokenizer) -> None:
    """Compile SRC without writing anything; with --locked, fail when OUT is stale."""
    from .driver import check

    config, config_diags = _config(src, out, defines, tokenizer=tokenizer)
    result = check(config.src, config.out, config, locked=locked)
    reporter = Reporter(fmt, strict, quiet)
    summary = "check"
    if locked and result.stale:
        summary = f"check: {config.out} is stale ({len(result.stale)} file{'s' if len(result.stale) != 1 else ''})"
    extra = {"stale": result.stale}
    sys.exit(reporter.emit([*config_diags, *result.diagnostics], result.source_count, extra=extra, summary=summary))


def _register() -> None:
    # The command modules import only click at the top, so registering them keeps start-up fast.
    from .cli_dev import diff_cmd, watch_cmd
    from .cli_runtime import inspect_cmd, render_cmd

    for command in (watch_cmd, diff_cmd, render_cmd, inspect_cmd):
        main.add_command(command)


_register()


if __name__ == "__main__":  # pragma: no cover
    main()
