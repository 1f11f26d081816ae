"""The runtime: what an application ships to render the prompts a build compiled. Standard library
only (tests/test_runtime.py proves it imports nothing of the compiler): rendering (`render`), the
reader and code generator of template text (`template`), the artifact and manifest model
(`model`), the request in each provider's cache order (`requestmodel`) and its SDK shapes
(`shapes`), declared input types (`inputtypes`), usage records (`usage`), the build folder
(`buildfolder`, with its one atomic writer `atomic`) and the inputs of the `std/` partials
(`envinfo`).

`promptc.runtime` is the runtime's public API, importable by that name as generated bindings and
applications do (`from promptc.runtime import load, Rendered`): these names are re-exported from
`promptc.runtime.render`, and nothing else is. They load on first use, so the compiler's own
imports of the runtime's modules (`runtime.model`, `runtime.buildfolder`, `runtime.template` …)
do not load the renderer: a `promptc build` that compiles nothing imports none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..facts.lazy import lazy_import

if TYPE_CHECKING:
    from .render import (
        SHAPES,
        InputTypeError,
        MissingInputsError,
        OutputError,
        Rendered,
        RenderedBlock,
        RenderError,
        Runtime,
        TemplateError,
        UnknownInputsError,
        load,
        parse_output,
        render_artifact,
    )

_render = lazy_import("promptc.runtime.render")

#: `promptc.runtime.render.__all__` (tests/test_runtime.py keeps the two lists equal)
__all__ = [
    "load",
    "Runtime",
    "Rendered",
    "RenderedBlock",
    "render_artifact",
    "RenderError",
    "MissingInputsError",
    "UnknownInputsError",
    "InputTypeError",
    "OutputError",
    "parse_output",
    "TemplateError",
    "SHAPES",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_render, name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
