"""Pass 5 — placeholder binding (SPEC §4): `${name}` is a build-time constant or a runtime input.

A placeholder whose root names a define (`-D name=value`, config `defines`) is replaced by the
define's text here; every other root becomes an input of its section.
"""

from __future__ import annotations

from dataclasses import replace

from ..context import Context
from ..nodes import Document, Message, Placeholder, Section, Text


def _bind_section(section: Section, defines: dict[str, str], ctx: Context) -> Section:
    items = []
    inputs: list[str] = []
    for item in section.items:
        if isinstance(item, Placeholder):
            root = item.root
            if root in defines:
                if item.path != root:
                    ctx.report(
                        "E504",
                        f"`${{{item.path}}}`: `{root}` is a build-time define (a string) and has no attributes",
                        item.span,
                        f"use `${{{root}}}`, or stop defining `{root}` to make it a runtime input",
                    )
                items.append(Text(defines[root], item.span))
                continue
            if root not in inputs:
                inputs.append(root)
        items.append(item)
    return replace(section, items=tuple(items), inputs=tuple(inputs))


def bind_placeholders(doc: Document, ctx: Context) -> Document:
    defines = ctx.config.defines_map
    messages = tuple(
        Message(m.role, m.span, tuple(_bind_section(s, defines, ctx) for s in m.sections)) for m in doc.messages
    )
    return replace(doc, messages=messages)
