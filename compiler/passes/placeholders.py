"""The placeholders pass: `${name}` is a build-time constant or a runtime input.

A placeholder whose root names a define (`-D name=value`, config `defines`) is replaced by the
define's text here; every other root becomes an input of its section, and its path must keep the
attribute rule (`facts.language.unsafe_segment`, E506): the runtimes will read it from the
application's values.
"""

from __future__ import annotations

from ..facts import codes
from ..facts.diagnostics import Span
from ..facts.language import ESCAPE, PLACEHOLDER_OPEN, TEMPLATE_ESCAPES, escape_literal, unsafe_segment
from ..syntax.nodes import Block, Document, Escape, Item, Message, Placeholder, Section, Text, evolve
from .context import Context
from .roles import trim


def _bind_section(section: Section, defines: dict[str, str], ctx: Context) -> Section:
    items: list[Item] = []
    inputs: dict[str, None] = {}  # the roots in first-use order: a dict, as a list's `in` made N roots cost N²
    for item in section.items:
        if isinstance(item, Placeholder):
            root = item.root
            if root in defines:
                if item.path != root:
                    ctx.report(
                        codes.DEFINE_WITH_ATTRIBUTE,
                        f"`${{{item.path}}}`: `{root}` is a build-time define (a string) and has no attributes",
                        item.span,
                        f"use `${{{root}}}`, or stop defining `{root}` to make it a runtime input",
                    )
                items.append(Text(defines[root], item.span))
                continue
            unsafe = unsafe_segment(item.path)
            if unsafe is not None:
                _refuse_path(item, *unsafe, ctx)
            inputs.setdefault(root)
        items.append(item)
    _check_adjacency(items, ctx)
    if len(items) != len(section.items) or any(a is not b for a, b in zip(items, section.items, strict=True)):
        items = trim(items)  # a define's value may start or end with blank lines, or be empty
    return evolve(section, items=tuple(items), inputs=tuple(inputs))


def _refuse_path(item: Placeholder, offset: int, segment: str, ctx: Context) -> None:
    """E506 at the segment the attribute rule refuses (a path is ASCII, on one line)."""
    span = item.span
    at = len(PLACEHOLDER_OPEN) + offset
    why = "starts with `_`" if segment.startswith("_") else "reaches an object's internals"
    if offset == 0:
        plain = segment.lstrip("_")
        hint = f"rename the input{f' (`{plain}`)' if plain and not unsafe_segment(plain) else ''}"
    else:
        hint = "rename the key, or pass the value as an input of its own: a placeholder path reads plain data"
    ctx.report(
        codes.UNSAFE_PATH,
        f"`${{{item.path}}}` reads `{segment}`, which {why}: no placeholder path may, and both runtimes refuse it",
        Span(span.start + at, span.start + at + len(segment), span.line, span.col + at, span.src),
        hint,
    )


_ESCAPED_OPENERS = tuple(ESCAPE + opener for opener in TEMPLATE_ESCAPES)
#: the last characters of literal text that `_check_adjacency` must look at: a backslash, the
#: characters an opener starts with, and those an escaped opener ends with
_RISKY_ENDS = frozenset(
    {ESCAPE, *(opener[0] for opener in TEMPLATE_ESCAPES), *(opener[-1] for opener in TEMPLATE_ESCAPES)}
)


def _check_adjacency(items: list[Item], ctx: Context) -> None:
    """Artifact text escapes openers with a backslash, so literal text may not end, right before a
    placeholder or block, with a character that would join it into an escape or another opener.
    Source text cannot produce this (the lexer would have read the pair differently); a define's
    value or a partial ending without a newline can."""
    for before, after in zip(items, items[1:], strict=False):
        if not isinstance(before, (Text, Escape)) or not isinstance(after, (Placeholder, Block)):
            continue
        if before.value[-1:] not in _RISKY_ENDS:
            continue  # escaping inserts backslashes before openers: the last character stays
        # what emit writes for the literal run: an escaped opener at its end is unambiguous
        # (`\\{{` then `{{ x }}` reads back as a literal `{{` and a block)
        written = escape_literal(before.value)
        if written.endswith(_ESCAPED_OPENERS):
            continue
        tail = written[-1:]
        if tail == "\\" or (tail in ("$", "{") and isinstance(after, Block)):
            ctx.report(
                codes.AMBIGUOUS_ADJACENCY,
                f"text ends with `{tail}` right before `{after.raw[:2] if isinstance(after, Block) else '${'}`; "
                "the artifact could not tell them apart",
                after.span,
                "put a space or a newline between them",
            )


def bind_placeholders(doc: Document, ctx: Context) -> Document:
    defines = ctx.config.defines_map
    messages = tuple(
        Message(m.role, m.span, tuple(_bind_section(s, defines, ctx) for s in m.sections)) for m in doc.messages
    )
    return evolve(doc, messages=messages)
