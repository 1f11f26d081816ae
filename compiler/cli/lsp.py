"""`promptc lsp`: the language server, over stdio."""

from __future__ import annotations

import click


@click.command("lsp")
@click.option("--stdio", is_flag=True, help="Talk over stdin and stdout (the default and only transport).")
def lsp_cmd(stdio: bool) -> None:
    """Run the language server over stdio (editors start it; see docs/lsp.md).

    Diagnostics are exactly `promptc check`'s for each open file, computed from the unsaved text;
    settings come from the workspace's [tool.promptc]; nothing is ever written."""
    from ..lsp.server import serve  # the lazy edge: pygls costs half a second to import

    serve()
