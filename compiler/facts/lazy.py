"""Deferred imports, declared at the top of the module that uses them: `tiktoken =
lazy_import("tiktoken")` is PEP 810's `lazy import tiktoken`.

promptc imports at the top of its files, so the import graph can be read and checked
(`tests/test_structure.py`); only the front ends (`cli/`, `lsp/`) import inside functions, at their
lazy edges. What costs too much to load for runs that never use it is declared with `lazy_import`
and imported on the first attribute read: a few heavy or optional libraries (tiktoken's BPE tables,
lark, jsonschema; the engines `import --check` compares with, OpenTelemetry, filelock on Windows),
the process pool's machinery, and — so that a `promptc build` that finds nothing to compile loads
nothing of the compile stack — the compile stack itself where the build reaches it (the test lists
each of these edges). A missing optional library raises its ImportError then, where the caller
handles it. Type checkers see the real module through a `TYPE_CHECKING` import beside the
declaration. The structure test counts a `lazy_import` call as an import of its module (its layer
rules apply).
"""

from __future__ import annotations

import importlib
import types
from typing import Any

__all__ = ["LazyModule", "lazy_import"]


class LazyModule(types.ModuleType):
    """A stand-in for module `name` that imports it on the first attribute read."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__dict__["_promptc_module"] = None

    def _promptc_load(self) -> types.ModuleType:
        module: types.ModuleType | None = self.__dict__["_promptc_module"]
        if module is None:
            module = self.__dict__["_promptc_module"] = importlib.import_module(self.__name__)
        return module

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._promptc_load(), attr)

    def __setattr__(self, attr: str, value: Any) -> None:  # patching the stand-in patches the module
        setattr(self._promptc_load(), attr, value)

    def __repr__(self) -> str:
        loaded = self.__dict__["_promptc_module"] is not None
        return f"<lazy module {self.__name__!r}{'' if loaded else ' (not imported yet)'}>"


def lazy_import(name: str) -> Any:
    """Module `name`, imported when first used (see the module docstring)."""
    return LazyModule(name)
