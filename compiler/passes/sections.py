"""The sections pass: section partitioning (docs/language.md, "Sections"; the sysprompt model).

Every section gets its boundary (declared, or inferred: dynamic when it uses a runtime input or
holds template code, whose output cannot be known without running it), and the messages are
re-ordered: stable sections first, then dynamic, each group in declaration order. `user_context`
sections from the whole file move to the start of the first user message, framed by the intro
and disclaimer.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..facts import codes
from ..syntax.nodes import Block, Document, Message, Section, Text, evolve
from .context import Context
from .inference import first_use, first_uses
from .roles import has_content

USER_CONTEXT = "user_context"
INTRO_SECTION = "user_context.intro"
DISCLAIMER_SECTION = "user_context.disclaimer"

#: Text that changes from run to run and silently busts the cache when it sits in a stable section:
#: (what, pattern, characters that may not stand right before or after a match). Every pattern
#: starts with a literal or a character class, so the regex engine scans for it in C; the
#: boundaries are checked on the rare matches instead of with lookbehinds, which would make the
#: engine try every position.
DYNAMIC_LOOKING: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "an ISO date",
        re.compile(
            r"(?:19|20)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
            r"(?:[T ][0-2]\d:[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:Z|[+-][0-2]\d:?[0-5]\d)?)?"
        ),
        "0123456789",
    ),
    ("a time of day", re.compile(r"[0-2]\d:[0-5]\d:[0-5]\d"), "0123456789:"),
    (
        "a UUID",
        re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"),
        "0123456789abcdefABCDEF-",
    ),
    ("a long hex id", re.compile(r"[0-9a-f]{16,}"), "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    ("an epoch timestamp", re.compile(r"1[5-9]\d{8}(?:\d{3})?"), "0123456789."),
    ("an absolute home path", re.compile(r"/(?:home|Users)/[A-Za-z0-9._-]+"), ""),
    ("an absolute home path", re.compile(r"[A-Za-z]:\\Users\\[A-Za-z0-9._-]+"), ""),
)
_HEX_LETTER = re.compile(r"[a-f]")
_DIGIT = re.compile(r"\d")
#: for each pattern above, a test that is true of every text the pattern matches anywhere in, and
#: far cheaper than its search (a literal the engine scans for, or one translation of the bytes):
#: most texts skip most searches. The ISO date holds `-MM-`, the time `:MM:`, the UUID `-XXXX-`;
#: the hex id 16 ASCII hex digits in a row, which are 16 such bytes in a row of its UTF-8 (every
#: other character's bytes are above 0x7f); the Windows path `:\Users\`.
_HEX_BYTES = bytes(0x78 if chr(i) in "0123456789abcdef" else 0x20 for i in range(256))
_HINTS: tuple[Callable[[str], object] | None, ...] = (
    re.compile(r"-[01]\d-").search,
    re.compile(r":[0-5]\d:").search,
    re.compile(r"-[0-9a-fA-F]{4}-").search,
    lambda text: b"x" * 16 in text.encode("utf-8", "surrogatepass").translate(_HEX_BYTES),
    None,  # starts with a literal: already as fast
    None,
    lambda text: ":\\Users\\" in text,
)


def dynamic_looking(text: str) -> list[tuple[int, int, str]]:
    """(start, end, what) of every run-to-run value in `text`, leftmost first, never overlapping."""
    found: list[tuple[int, int, str]] = []
    for (what, pattern, fence), hint in zip(DYNAMIC_LOOKING, _HINTS, strict=True):
        if hint is not None and not hint(text):
            continue
        for match in pattern.finditer(text):
            start, end = match.span()
            if fence and ((start and text[start - 1] in fence) or (end < len(text) and text[end] in fence)):
                continue
            if what == "a long hex id" and not (_HEX_LETTER.search(match.group()) and _DIGIT.search(match.group())):
                continue  # all digits is a number, all letters a word
            found.append((start, end, what))
    found.sort()
    kept: list[tuple[int, int, str]] = []
    for item in found:
        if not kept or item[0] >= kept[-1][1]:  # a datetime's time part is not a second finding
            kept.append(item)
    return kept


def _resolve_boundary(section: Section, ctx: Context) -> Section:
    dynamic = bool(section.inputs) or section.has_template
    if section.declared_boundary == "stable":
        uses = first_uses(section)  # once for the section, not a scan per input
        for name in section.inputs:
            ctx.report(
                codes.STABLE_USES_INPUT,
                f"stable section `{section.name}` uses the runtime input `{name}`",
                first_use(section, name, uses),
                f"declare the section `dynamic`, or bind `{name}` at build time with `-D {name}=…`",
            )
        if section.has_template and not section.inputs:
            block = next((i for i in section.items if isinstance(i, Block)), None)
            ctx.report(
                codes.STABLE_HAS_CODE,
                f"stable section `{section.name}` contains template code, whose output cannot be proven at build time",
                block.span if block else section.span,
                "move the template block into a dynamic section",
            )
        return section if section.boundary == "stable" else evolve(section, boundary="stable")
    boundary = section.declared_boundary or ("dynamic" if dynamic else "stable")
    return section if section.boundary == boundary else evolve(section, boundary=boundary)


def _lint_stable_text(section: Section, ctx: Context) -> None:
    for item in section.items:
        if not isinstance(item, Text) or item.span.src is None:
            continue
        # A define's value stands where its placeholder was; only lint text the author wrote.
        if item.span.end - item.span.start != len(item.value):
            continue
        for start, end, what in dynamic_looking(item.value):
            offset = item.span.start + start
            ctx.report(
                codes.DYNAMIC_LOOKING_TEXT,
                f"stable section `{section.name}` contains {what} (`{item.value[start:end]}`)",
                item.span.src.span(offset, offset + end - start),
                "text that changes busts the prompt cache; move it to a dynamic section or an input",
            )


def _ordered(sections: list[Section]) -> list[Section]:
    return [s for s in sections if s.boundary == "stable"] + [s for s in sections if s.boundary == "dynamic"]


def _frame(text: str, name: str, doc: Document) -> Section:
    return Section(
        name, "stable", USER_CONTEXT, None, doc.source, (Text(text, doc.source.span(0, 0)),), boundary="stable"
    )


def partition_sections(doc: Document, ctx: Context) -> Document:
    resolved: list[Message] = []
    user_context: list[Section] = []
    for message in doc.messages:
        own: list[Section] = []
        for section in message.sections:
            if not has_content(list(section.items)):
                continue  # emptied by a define
            section = _resolve_boundary(section, ctx)
            if section.boundary == "stable":
                _lint_stable_text(section, ctx)
            (user_context if section.target == USER_CONTEXT else own).append(section)
        resolved.append(Message(message.role, message.span, tuple(own)))

    messages: list[Message] = []
    placed = not user_context
    for message in resolved:
        sections = _ordered(list(message.sections))
        if not placed and message.role == "user":
            # an empty intro or disclaimer (config "") leaves no blank line behind
            intro = [_frame(ctx.config.intro, INTRO_SECTION, doc)] if ctx.config.intro else []
            disclaimer = [_frame(ctx.config.disclaimer, DISCLAIMER_SECTION, doc)] if ctx.config.disclaimer else []
            sections = [*intro, *_ordered(user_context), *disclaimer, *sections]
            placed = True
        if sections:
            messages.append(Message(message.role, message.span, tuple(sections)))
        else:
            span = message.span
            src = span.src if span is not None and span.src is not None else ctx.source
            separated = span is not None and src.text.startswith("-----", span.start)
            ctx.report(
                codes.EMPTY_MESSAGE,
                f"empty `{message.role}` message left out",
                span,
                "remove the separator, or write the message's text"
                if separated
                else "the file holds only comments and directives: write the prompt's text below them",
            )
    if not placed:
        first = user_context[0]
        ctx.report(
            codes.NO_USER_MESSAGE,
            f"section `{first.name}` targets user_context but the prompt has no user message",
            first.span,
            "add a `----- user -----` message, or target the section at `system`",
        )
    return evolve(doc, messages=tuple(messages))
