"""The language server (`promptc lsp`): diagnostics, hover, definition, references, completion,
code actions and the cache lens, all computed by the compiler itself.

`workspace` holds the project (the source folder on disk overlaid with the editor's unsaved
documents) and compiles through `promptc.compile.pipeline.compile_prompt`; `features` turns the results into
LSP answers; `server` wires them to pygls. pygls and lsprotocol are imported only here, so no
other command pays for them.
"""

from __future__ import annotations


def serve() -> None:
    """Run the server over stdio until the client says exit."""
    from .server import serve as _serve

    _serve()


__all__ = ["serve"]
