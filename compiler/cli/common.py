"""What every `promptc` command shares: the configuration, the common options, the reporter.

The group (`promptc.cli.main`) reads `[tool.promptc]` once and hands it to click as the
`default_map` of every command, so a flag on the command line wins over the file by click's own
precedence (command line, then environment, then default map, then the option's default).
Commands import this module; this module imports no command, so there is no import cycle.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ..config import Config
    from ..diagnostics import Diagnostic

FORMATS = ("text", "json", "github", "sarif", "markdown")
#: The `schema` of every `--format json` document the CLI prints: one envelope for all commands,
#: `{"schema", "command", …}`; paths in it are as the user named them, relative to the current folder.
OUTPUT_SCHEMA = "promptc.output/1"


def envelope(command: str, **fields: Any) -> dict[str, Any]:
    """The `--format json` document of `command`."""
    return {"schema": OUTPUT_SCHEMA, "command": command, **fields}


#: exit code for usage errors, as click uses for bad options
USAGE_ERROR = 2
#: codes whose errors are usage errors (exit 2): the configuration and the tokenizer
_USAGE_CODES = ("E901", "E902")
#: command name → the config fields its options take defaults from
_OPTION_FIELDS = {
    "build": ("src", "out", "tokenizer", "provider"),
    "check": ("src", "out", "tokenizer", "provider"),
    "watch": ("src", "out", "tokenizer", "provider"),
    "render": ("out", "model"),
    "inspect": ("out",),
    "list": ("out",),
}


class Settings:
    """The project configuration as read by the group, kept on the click context (`ctx.obj`)."""

    def __init__(self) -> None:
        from ..config import find_pyproject, load_config

        self.pyproject = find_pyproject(Path.cwd())
        self.config, self.diagnostics = load_config(self.pyproject)
        #: `--color` (auto | always | never)
        self.color = "auto"

    def default_map(self) -> dict[str, dict[str, Any]]:
        values = {
            "src": self.config.src,
            "out": self.config.out,
            "tokenizer": self.config.tokenizer,
            "provider": self.config.provider or None,
            "model": self.config.model or None,
        }
        return {command: {key: values[key] for key in keys} for command, keys in _OPTION_FIELDS.items()}

    def reload(self) -> tuple[Config, list[Diagnostic]]:
        fresh = Settings()
        self.pyproject, self.config, self.diagnostics = fresh.pyproject, fresh.config, fresh.diagnostics
        return self.config, list(self.diagnostics)


def settings() -> Settings:
    """The current invocation's settings (read on first use when a command runs on its own)."""
    ctx = click.get_current_context()
    root = ctx.find_root()
    if not isinstance(root.obj, Settings):
        root.obj = Settings()
    return root.obj


def project_config(
    src: str | None,
    out: str | None,
    defines: tuple[str, ...] = (),
    *,
    tokenizer: str | None = None,
    provider: str | None = None,
    allow: tuple[str, ...] = (),
) -> tuple[Config, list[Diagnostic]]:
    """The file's config with this command's values (flags or defaults from the file) applied,
    and the file's own diagnostics. Raises a usage error for a value that cannot work. `--allow`
    adds to the file's `allow`."""
    from ..config import validate

    current = settings()
    values: dict[str, Any] = {}
    for key, value in (("src", src), ("out", out), ("tokenizer", tokenizer), ("provider", provider)):
        if value is not None:
            values[key] = value
    config = with_allowed(replace(current.config, **values), allow)
    problem = validate(config)
    if problem:
        raise click.BadParameter(problem, param_hint="--provider")
    from ..meter import TokenizerError, meter

    # an unknown tokenizer is one usage error (exit 2), not an E901 for every prompt; one from
    # [tool.promptc] is already an E902 at its line there (and left out of the config)
    if tokenizer is not None and tokenizer:
        from ..config import tokenizer_problem

        unknown = tokenizer_problem(tokenizer)
        if unknown is not None:
            raise click.BadParameter(f"{unknown[0]}; {unknown[1]}", param_hint="--tokenizer")
    try:
        if config.tokenizer:  # "" lets each prompt's provider profile pick one that ships
            meter(config.tokenizer)
    except TokenizerError as exc:
        raise click.BadParameter(str(exc), param_hint="--tokenizer") from None
    return config.with_defines(parse_defines(defines)), list(current.diagnostics)


def with_allowed(config: Config, allow: tuple[str, ...]) -> Config:
    """`config` with the `--allow` codes added to its `allow`; a usage error for a bad code."""
    if not allow:
        return config
    from ..config import allow_codes

    names, problem = allow_codes(allow)
    if problem:
        raise click.BadParameter(problem, param_hint="--allow")
    return replace(config, allow=tuple(sorted({*config.allow, *names})))


def parse_defines(values: tuple[str, ...]) -> dict[str, str]:
    defines = {}
    for value in values:
        name, eq, text = value.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise click.BadParameter(f"expected NAME=VALUE, got {value!r}", param_hint="-D")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # the shell passed bytes that are not UTF-8 (Python keeps them as lone surrogates):
            # they could reach no artifact, so say so here rather than fail deep in the build
            shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise click.BadParameter(
                f"the value of {name} is not valid UTF-8 text ({shown!r}); pass UTF-8", param_hint="-D"
            ) from None
        defines[name] = text
    return defines


def common_options(fn: Any) -> Any:
    """The options of the commands that compile: format, strictness, defines, tokenizer, provider."""
    fn = click.option(
        "--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="Diagnostics format."
    )(fn)
    fn = click.option(
        "--allow",
        "allow",
        multiple=True,
        metavar="CODE",
        help="Do not report warning CODE (repeatable; adds to `allow` in [tool.promptc]).",
    )(fn)
    fn = click.option("--strict", is_flag=True, help="Treat warnings as errors.")(fn)
    fn = click.option("--quiet", "-q", is_flag=True, help="Print errors only.")(fn)
    fn = click.option("-D", "defines", multiple=True, metavar="NAME=VALUE", help="Build-time constant for ${NAME}.")(fn)
    fn = click.option(
        "--tokenizer",
        default=None,
        help="Tokenizer for metering (config: tokenizer; default: the provider profile's, else cl100k_base).",
    )(fn)
    fn = click.option(
        "--provider",
        default=None,
        help="Provider profile for every prompt: anthropic, openai or gemini (default: from each prompt's model).",
    )(fn)
    return fn


class Reporter:
    """Prints diagnostics in the chosen format and decides the exit code."""

    def __init__(self, fmt: str = "text", strict: bool = False, quiet: bool = False, allow=()) -> None:
        self.fmt = fmt
        self.strict = strict
        self.quiet = quiet
        #: warning codes not to report (`allow` in config, `--allow`): the prompts' own are already
        #: dropped by the compiler; this catches the build's (W909) and the config's (W903)
        self.allow = frozenset(allow)

    def promote(self, diagnostics):
        if self.allow:
            diagnostics = [d for d in diagnostics if not (d.severity == "warning" and d.code in self.allow)]
        if not self.strict:
            return list(diagnostics)
        return [d.as_error() if d.severity == "warning" else d for d in diagnostics]

    def emit(self, diagnostics, files: int | None = None, extra: dict | None = None, summary: str | None = None) -> int:
        from ..diagnostics import render_github, render_text, summary_line, use_color

        diagnostics = self.promote(diagnostics)
        errors = any(d.severity == "error" for d in diagnostics)
        # a configuration or tokenizer error is a usage error: exit 2, as for a bad flag
        status = USAGE_ERROR if any(d.code in _USAGE_CODES and d.severity == "error" for d in diagnostics) else 1
        if self.fmt == "json":
            import orjson

            command = click.get_current_context().info_name or "promptc"
            payload = envelope(command, diagnostics=[d.to_json() for d in diagnostics], **(extra or {}))
            payload["errors"] = sum(1 for d in diagnostics if d.severity == "error")
            payload["warnings"] = sum(1 for d in diagnostics if d.severity == "warning")
            click.echo(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())
            return status if errors else 0
        shown = [d for d in diagnostics if not (self.quiet and d.severity == "warning")]
        if self.fmt == "markdown":
            from ..diagnostics import render_markdown

            command = click.get_current_context().info_name or "promptc"
            click.echo(render_markdown(shown, f"promptc {summary or command}", files))
            return status if errors else 0
        if self.fmt == "sarif":
            # one SARIF 2.1.0 log on stdout, nothing else (code scanning uploads the file as it is)
            import orjson

            from ..diagnostics import render_sarif

            click.echo(orjson.dumps(render_sarif(shown), option=orjson.OPT_INDENT_2).decode())
            return status if errors else 0
        try:
            color = use_color(settings().color)
        except RuntimeError:  # no click context: a library caller
            color = False
        for d in shown:
            click.echo(render_github(d) if self.fmt == "github" else render_text(d, color=color) + "\n", color=color)
        if not self.quiet or errors:
            line = summary_line(diagnostics, files)
            click.echo(f"{summary}: {line}" if summary else line)
        return status if errors else 0


class interrupted:
    """`with interrupted("build", out):` — Ctrl-C (SIGINT) or SIGTERM during a build ends the
    command with one line on stderr and exit status 128 + the signal (130, 143), as a shell reports
    a process the signal ended: no traceback from the command or its process pool, and the output
    folder holds a complete build (it is only ever swapped whole)."""

    def __init__(self, command: str, out: str | Path) -> None:
        self.command, self.out = command, out

    def __enter__(self) -> None:
        from ..driver.pool import stop_on_sigterm

        self._sigterm = stop_on_sigterm()
        self._sigterm.__enter__()

    def __exit__(self, kind, value, traceback) -> bool:
        self._sigterm.__exit__(kind, value, traceback)
        if kind is None or not issubclass(kind, KeyboardInterrupt):
            return False
        import signal
        import sys

        signum = getattr(value, "signum", signal.SIGINT)
        name = signal.Signals(signum).name
        click.echo(
            f"promptc {self.command}: interrupted ({name}); `{Path(self.out).as_posix()}` holds the last complete build",
            err=True,
        )
        sys.exit(128 + int(signum))
