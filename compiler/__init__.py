"""promptc: a compiler for LLM prompt sources.

The public API, importable by name (`from promptc import build`):

- compiling: `compile_text(text, name=..., defines=...)` → `CompiledPrompt`;
  `build(src, out, config)` and `check(src, out, config, locked=...)` → `BuildResult`
- configuration: `Config`, `load_config(pyproject)`
- diagnostics: `Diagnostic` (every problem is one, with a stable code and a `path:line:col`;
  `str(d)` is its one-line form), `render_text` (the CLI's full rendering, caret and hint) and
  `render_sarif` (a SARIF 2.1.0 log of many, for code scanning)
- rendering: `load(build_dir)` → `Runtime`; `Runtime.render(name, **inputs)` → `Rendered`;
  `RenderError`, `MissingInputsError`, `UnknownInputsError`
- llmutils-style helpers: `process` → `ProcessedPrompt`, `strip_comments`, `extract_params`,
  `strip_comments_from_messages`
- inputs of the built-in partials: `env_inputs`, `git_inputs`, `date_inputs`
- formatting: `format_text(text, name=..., partials=...)` → the canonical text (or `FormatError`),
  `format_tree(src, paths, config)` → `FormatResult` (what `promptc fmt` runs)
- observed hits: `Rendered.usage(response)` → `UsageRecord`; `reconcile_file(records, build_dir,
  src=...)` → `Reconciliation` (what `promptc reconcile` runs); `advise(facts, traffic)` → the
  TTL advice of `promptc cost --advise`

Names are imported on first use, so `import promptc` and `promptc --version` stay fast; type
checkers see the real definitions through the `TYPE_CHECKING` imports below.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .facts.version import VERSION as __version__

if TYPE_CHECKING:
    from .compile import CompiledPrompt, compile_text
    from .driver import BuildResult, build, check
    from .facts.config import Config, load_config
    from .facts.diagnostics import Diagnostic, render_sarif, render_text
    from .runtime import MissingInputsError, OutputError, Rendered, RenderError, Runtime, UnknownInputsError, load
    from .runtime.envinfo import date_inputs, env_inputs, git_inputs
    from .runtime.usage import UsageRecord
    from .tools.cost import advise
    from .tools.fmt import FormatError, FormatResult, format_text, format_tree
    from .tools.llmutils import ProcessedPrompt, extract_params, process, strip_comments, strip_comments_from_messages
    from .tools.reconcile import Reconciliation, reconcile_file

#: public name → the module that defines it
_EXPORTS = {
    "compile_text": "compile",
    "CompiledPrompt": "compile",
    "build": "driver",
    "check": "driver",
    "BuildResult": "driver",
    "Config": "facts.config",
    "load_config": "facts.config",
    "Diagnostic": "facts.diagnostics",
    "render_text": "facts.diagnostics",
    "render_sarif": "facts.diagnostics",
    "load": "runtime",
    "Runtime": "runtime",
    "Rendered": "runtime",
    "RenderError": "runtime",
    "MissingInputsError": "runtime",
    "UnknownInputsError": "runtime",
    "OutputError": "runtime",
    "process": "tools.llmutils",
    "strip_comments": "tools.llmutils",
    "extract_params": "tools.llmutils",
    "strip_comments_from_messages": "tools.llmutils",
    "ProcessedPrompt": "tools.llmutils",
    "env_inputs": "runtime.envinfo",
    "git_inputs": "runtime.envinfo",
    "date_inputs": "runtime.envinfo",
    "format_text": "tools.fmt",
    "format_tree": "tools.fmt",
    "FormatResult": "tools.fmt",
    "FormatError": "tools.fmt",
    "UsageRecord": "runtime.usage",
    "reconcile_file": "tools.reconcile",
    "Reconciliation": "tools.reconcile",
    "advise": "tools.cost",
}

__all__ = [
    "__version__",
    "compile_text",
    "CompiledPrompt",
    "build",
    "check",
    "BuildResult",
    "Config",
    "load_config",
    "Diagnostic",
    "render_text",
    "render_sarif",
    "load",
    "Runtime",
    "Rendered",
    "RenderError",
    "MissingInputsError",
    "UnknownInputsError",
    "OutputError",
    "process",
    "strip_comments",
    "extract_params",
    "strip_comments_from_messages",
    "ProcessedPrompt",
    "env_inputs",
    "git_inputs",
    "date_inputs",
    "format_text",
    "format_tree",
    "FormatResult",
    "FormatError",
    "UsageRecord",
    "reconcile_file",
    "Reconciliation",
    "advise",
]
assert set(__all__) == {"__version__", *_EXPORTS}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'promptc' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups skip __getattr__; no submodule shares a public name
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
