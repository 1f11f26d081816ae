"""The runtime: what an application ships to render the prompts a build compiled. Standard library
only (tests/test_runtime.py proves it imports nothing of the compiler): rendering (`render`), the
reader and code generator of template text (`template`), the artifact and manifest model
(`model`), the request in each provider's cache order (`requestmodel`) and its SDK shapes
(`shapes`), declared input types (`inputtypes`), usage records (`usage`), the build folder
(`buildfolder`, with its one atomic writer `atomic`) and the inputs of the `std/` partials
(`envinfo`).

`promptc.runtime` is the runtime's public API, importable by that name as generated bindings and
applications do (`from promptc.runtime import load, Rendered`): these names are re-exported from
`promptc.runtime.render`, and nothing else is.
"""

from __future__ import annotations

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
