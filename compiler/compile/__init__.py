"""Compiling from the library: one source → its `CompiledPrompt` (artifact, bytes, diagnostics).

Both functions run the declared compile (`promptc.compile.pipeline.STAGES`) through its one entry,
`pipeline.compile_prompt`. Pure: no file system, no printing. The compile stack loads when
either is first called: the build imports this package for `CompiledPrompt` alone.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..facts.config import Config
from ..facts.diagnostics import ordered
from ..facts.language import SOURCE_SUFFIX
from ..facts.lazy import lazy_import
from ..passes.context import SourceTree
from .prompt import CompiledPrompt

if TYPE_CHECKING:
    from . import pipeline
    from .pipeline import PartialLoader
else:
    pipeline = lazy_import("promptc.compile.pipeline")


def compile_source(
    rel: str,
    data: bytes,
    config: Config,
    tree: SourceTree | None = None,
    partials: PartialLoader | None = None,
) -> CompiledPrompt:
    """Compile the prompt `rel` of `tree` (its bytes are `data`). `partials` is the build's loader,
    shared by every prompt of the build; a fresh one is made when it is not given."""
    return pipeline.compile_prompt(
        rel, config, tree or SourceTree(files={rel: data}), data=data, partials=partials
    ).compiled


def compile_text(
    text: str,
    name: str = "prompt",
    defines: dict[str, str] | None = None,
    config: Config | None = None,
    partials: dict[str, str] | None = None,
) -> CompiledPrompt:
    """Compile a prompt held in a string. `partials` maps source-relative paths to their text."""
    config = (config or Config()).with_defines(defines or {})
    rel = f"{name}{SOURCE_SUFFIX}"
    files = {rel: text.encode("utf-8")}
    files.update({path: body.encode("utf-8") for path, body in (partials or {}).items()})
    compiled = compile_source(rel, files[rel], config, SourceTree(files=files))
    # the order the CLI prints them in: by file, line and column
    return replace(compiled, diagnostics=tuple(ordered(compiled.diagnostics)))


__all__ = ["CompiledPrompt", "compile_source", "compile_text"]
