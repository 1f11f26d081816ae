"""What every `promptc` command shares: the configuration, the common options, the reporter.

The group (`promptc.cli.main`) reads `[tool.promptc]` once and hands it to click as the
`default_map` of every command, so a flag on the command line wins over the file by click's own
precedence (command line, then environment, then default map, then the option's default).
Commands import this module; this module imports no command, so there is no import cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import orjson

from ..facts import codes
from ..facts.config import Config, Invalid, allow_codes, find_pyproject, load_config, options, validate
from ..facts.diagnostics import (
    Diagnostic,
    render_github,
    render_markdown,
    render_sarif,
    render_text,
    summary_line,
    use_color,
)
from ..facts.language import IDENTIFIER

F = TypeVar("F", bound=Callable[..., Any])

if TYPE_CHECKING:
    TextParam = click.ParamType[str]
else:  # click's ParamType is generic from 8.2 on only
    TextParam = click.ParamType

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
_USAGE_CODES = (codes.TOKENIZER_UNAVAILABLE, codes.INVALID_CONFIG)


class Settings:
    """The project configuration as read by the group, kept on the click context (`ctx.obj`)."""

    def __init__(self) -> None:
        self.pyproject = find_pyproject(Path.cwd())
        self.config, self.diagnostics = load_config(self.pyproject)
        #: `--color` (auto | always | never)
        self.color = "auto"

    def default_map(self) -> dict[str, dict[str, Any]]:
        """command → {option: the file's value} for every option a command takes (`Option.commands`);
        an empty value is "not given", so the option's own default (None) applies."""
        found: dict[str, dict[str, Any]] = {}
        for o in options():
            for command in o.commands:
                found.setdefault(command, {})[o.name] = getattr(self.config, o.name) or None
        return found

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


def config_options(command: str) -> Callable[[F], F]:
    """The flags (and the SRC argument) of `command`: one for each option of the table that
    names the command (`Option.commands`), with the option's help. Each defaults to None ("not
    given"); click's `default_map` fills in the file's value, and `project_config` applies them."""

    def decorate(fn: F) -> F:
        for o in reversed(options()):  # decorators apply bottom-up: the table's order in --help
            if command not in o.commands:
                continue
            if o.argument:
                fn = click.argument(o.name, required=False)(fn)
            else:
                fn = click.option(*o.flag, o.name, default=None, help=o.help)(fn)
        return fn

    return decorate


def project_config(
    given: Mapping[str, Any],
    defines: tuple[str, ...] = (),
    *,
    allow: tuple[str, ...] = (),
) -> tuple[Config, list[Diagnostic]]:
    """The file's config with this command's option values (`given`: flags, or the file's
    defaults) applied, and the file's own diagnostics. A value is coerced as the file's would be,
    and one that cannot work is a usage error. `-D` and `--allow` add to the file's."""
    current = settings()
    values: dict[str, Any] = {}
    declared = {o.name: o for o in options()}
    for key, value in given.items():
        if value is None:
            continue
        try:
            values[key] = declared[key].coerce(key, value)
        except Invalid as problem:
            # an unknown tokenizer is one usage error (exit 2), not an E901 for every prompt; one
            # from [tool.promptc] is already an E902 at its line there (and left out of the config)
            message = f"{problem.message}; {problem.hint}" if problem.hint else problem.message
            raise click.BadParameter(
                message, param_hint=declared[key].flag[-1] if declared[key].flag else key
            ) from None
    config = with_allowed(replace(current.config, **values), allow)
    invalid = validate(config)
    if invalid:
        raise click.BadParameter(invalid, param_hint="--provider")
    if config.tokenizer:  # "" lets each prompt's provider profile pick one that ships
        # imported here: a build that compiles nothing loads nothing of the compile stack
        from ..backend.meter import TokenizerError, meter

        try:
            meter(config.tokenizer)
        except TokenizerError as exc:
            raise click.BadParameter(str(exc), param_hint="--tokenizer") from None
    return config.with_defines(parse_defines(defines)), list(current.diagnostics)


def with_allowed(config: Config, allow: tuple[str, ...]) -> Config:
    """`config` with the `--allow` codes added to its `allow`; a usage error for a bad code."""
    if not allow:
        return config

    names, problem = allow_codes(allow)
    if problem:
        raise click.BadParameter(problem, param_hint="--allow")
    return replace(config, allow=tuple(sorted({*config.allow, *names})))


def parse_defines(values: tuple[str, ...]) -> dict[str, str]:
    defines = {}
    for value in values:
        name, eq, text = value.partition("=")
        if not eq or not IDENTIFIER.fullmatch(name):
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
    """The options of the commands that compile besides the configuration's (`config_options`):
    format, strictness, the additive `--allow` and `-D`, quiet."""
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
    return fn


class Reporter:
    """Prints diagnostics in the chosen format and decides the exit code. It filters nothing: the
    project's `allow` is applied where diagnostics are made (the compile, the driver)."""

    def __init__(self, fmt: str = "text", strict: bool = False, quiet: bool = False) -> None:
        self.fmt = fmt
        self.strict = strict
        self.quiet = quiet

    def promote(self, diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
        """With `--strict`, warnings shown as the errors they are to the build (the driver already
        made them errors; a command that does not build still fails on them)."""
        if not self.strict:
            return list(diagnostics)
        return [d.as_error() if d.severity == "warning" else d for d in diagnostics]

    def emit(
        self,
        diagnostics: Iterable[Diagnostic],
        files: int | None = None,
        extra: dict[str, Any] | None = None,
        summary: str | None = None,
    ) -> int:
        promoted = self.promote(diagnostics)
        errors = any(d.severity == "error" for d in promoted)
        # a configuration or tokenizer error is a usage error: exit 2, as for a bad flag
        status = USAGE_ERROR if any(d.code in _USAGE_CODES and d.severity == "error" for d in promoted) else 1
        if self.fmt == "json":
            command = click.get_current_context().info_name or "promptc"
            payload = envelope(command, diagnostics=[d.to_json() for d in promoted], **(extra or {}))
            payload["errors"] = sum(1 for d in promoted if d.severity == "error")
            payload["warnings"] = sum(1 for d in promoted if d.severity == "warning")
            click.echo(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())
            return status if errors else 0
        shown = [d for d in promoted if not (self.quiet and d.severity == "warning")]
        if self.fmt == "markdown":
            command = click.get_current_context().info_name or "promptc"
            click.echo(render_markdown(shown, f"promptc {summary or command}", files))
            return status if errors else 0
        if self.fmt == "sarif":
            # one SARIF 2.1.0 log on stdout, nothing else (code scanning uploads the file as it is)
            click.echo(orjson.dumps(render_sarif(shown), option=orjson.OPT_INDENT_2).decode())
            return status if errors else 0
        try:
            color = use_color(settings().color)
        except RuntimeError:  # no click context: a library caller
            color = False
        for d in shown:
            click.echo(render_github(d) if self.fmt == "github" else render_text(d, color=color) + "\n", color=color)
        if not self.quiet or errors:
            line = summary_line(promoted, files)
            click.echo(f"{summary}: {line}" if summary else line)
        return status if errors else 0
