"""The compiler passes, in order, and the function that runs them (SPEC: pipeline)."""

from __future__ import annotations

from collections.abc import Callable

from .context import Context
from .nodes import Document
from .passes.comments import strip_comments
from .passes.directives import collect_directives
from .passes.includes import expand_includes
from .passes.inference import infer_inputs
from .passes.placeholders import bind_placeholders
from .passes.resources import load_resources
from .passes.roles import split_roles
from .passes.sections import partition_sections

Pass = Callable[[Document, Context], Document]

PASSES: tuple[Pass, ...] = (
    strip_comments,
    collect_directives,
    expand_includes,
    load_resources,
    split_roles,
    bind_placeholders,
    infer_inputs,
    partition_sections,
)


def run(doc: Document, ctx: Context, passes: tuple[Pass, ...] = PASSES) -> Document:
    for compiler_pass in passes:
        doc = compiler_pass(doc, ctx)
    return doc
