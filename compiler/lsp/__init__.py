"""The language server (`promptc lsp`): diagnostics, hover, definition, references, completion,
code actions and the cache lens, all computed by the compiler itself.

`workspace` holds the project (the source folder on disk overlaid with the editor's unsaved
documents) and compiles through `promptc.compile.pipeline.compile_prompt`; `features` turns the results into
LSP answers; `server` wires them to pygls (`server.serve`). pygls and lsprotocol are imported
only by this package, which only `promptc lsp` imports, so no other command pays for them.
"""

from __future__ import annotations
