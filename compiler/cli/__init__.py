"""The `promptc` command: a thin click layer over the library.

`main` is the group; each command lives in a module of this package (`build`, `watch`, `diff`,
`runtime`) and imports only `common`. Heavy imports (the parser, the tokenizer, watchdog) happen
inside the commands, so `promptc --version` does not pay for them.
"""

from __future__ import annotations

import click

from .. import __version__
from .build import build_cmd, check_cmd
from .common import Settings
from .diff import diff_cmd
from .runtime import inspect_cmd, render_cmd
from .watch import watch_cmd

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="promptc", message="%(prog)s %(version)s")
@click.pass_context
def main(ctx: click.Context) -> None:
    """promptc — compile prompt sources into frozen, cache-aware JSON artifacts."""
    settings = Settings()
    ctx.obj = settings
    # [tool.promptc] becomes every command's defaults: a flag on the command line wins.
    ctx.default_map = settings.default_map()


for _command in (build_cmd, check_cmd, watch_cmd, diff_cmd, render_cmd, inspect_cmd):
    main.add_command(_command)


if __name__ == "__main__":  # pragma: no cover
    main()
