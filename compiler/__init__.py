"""promptc: a compiler for LLM prompt sources.

Library API (imported lazily, so `import compiler` and `promptc --version` stay fast):

- `compile_text(text, name=..., defines=...)` → `CompiledPrompt` (artifact + diagnostics)
- `build(src, out, config)` → `BuildResult`; `check(src, out, config, locked=...)`
- `load(build_dir)` → a runtime that renders artifacts: `load("build").render("name", **inputs)`
- llmutils-style helpers: `process`, `strip_comments`, `extract_params`, `strip_comments_from_messages`
"""

from __future__ import annotations

__version__ = "0.1.0"

_EXPORTS = {
    "compile_text": ("compiler.compile", "compile_text"),
    "CompiledPrompt": ("compiler.compile", "CompiledPrompt"),
    "build": ("compiler.build", "build"),
    "check": ("compiler.build", "check"),
    "BuildResult": ("compiler.build", "BuildResult"),
    "Config": ("compiler.config", "Config"),
    "load_config": ("compiler.config", "load_config"),
    "load": ("compiler.runtime", "load"),
    "process": ("compiler.llmutils", "process"),
    "strip_comments": ("compiler.llmutils", "strip_comments"),
    "extract_params": ("compiler.llmutils", "extract_params"),
    "strip_comments_from_messages": ("compiler.llmutils", "strip_comments_from_messages"),
    "ProcessedPrompt": ("compiler.llmutils", "ProcessedPrompt"),
    "Diagnostic": ("compiler.diagnostics", "Diagnostic"),
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'compiler' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value
