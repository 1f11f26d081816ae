"""Pass 7 — section partitioning (SPEC §6, the sysprompt model).

Every section gets its boundary (declared, or inferred: dynamic when it uses a runtime input or
holds template code, whose output cannot be known without running it), and the messages are
re-ordered: stable sections first, then dynamic, each group in declaration order. `user_context`
sections from the whole file move to the start of the first user message, framed by the intro
and disclaimer.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..context import Context
from ..nodes import Block, Document, Message, Section, Text
from .inference import first_use

USER_CONTEXT = "user_context"
INTRO_SECTION = "user_context.intro"
DISCLAIMER_SECTION = "user_context.disclaimer"

#: Text that changes from run to run and silently busts the cache when it sits in a stable section.
DYNAMIC_LOOKING = (
    (
        "an ISO date",
        re.compile(
            r"\b(?:19|20)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?:[T ][0-2]\d:[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:Z|[+-][0-2]\d:?[0-5]\d)?)?\b"
        ),
    ),
    ("a time of day", re.compile(r"(?<![\d:])(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?![\d:])")),
    ("a UUID", re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")),
    ("a long hex id", re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{16,}\b")),
    ("an epoch timestamp", re.compile(r"(?<![\d.])1[5-9]\d{8}(?:\d{3})?(?![\d.])")),
    ("an absolute home path", re.compile(r"(?:/home/|/Users/|[A-Za-z]:\\Users\\)[A-Za-z0-9._-]+")),
)


def _resolve_boundary(section: Section, ctx: Context) -> Section:
    dynamic = bool(section.inputs) or section.has_template
    if section.declared_boundary == "stable":
        for name in section.inputs:
            ctx.report(
                "E702",
                f"stable section `{section.name}` uses the runtime input `{name}`",
                first_use(section, name),
                f"declare the section `dynamic`, or bind `{name}` at build time with `-D {name}=…`",
            )
        if section.has_template and not section.inputs:
            block = next((i for i in section.items if isinstance(i, Block)), None)
            ctx.report(
                "E707",
                f"stable section `{section.name}` contains template code, whose output cannot be proven at build time",
                block.span if block else section.span,
                "move the template block into a dynamic section",
            )
        return replace(section, boundary="stable")
    boundary = section.declared_boundary or ("dynamic" if dynamic else "stable")
    return replace(section, boundary=boundary)


_LINT = re.compile("|".join(f"(?P<k{i}>{pattern.pattern})" for i, (_, pattern) in enumerate(DYNAMIC_LOOKING)))


def _lint_stable_text(section: Section, ctx: Context) -> None:
    for item in section.items:
        if not isinstance(item, Text) or item.span.src is None:
            continue
        # A define's value stands where its placeholder was; only lint text the author wrote.
        if item.span.end - item.span.start != len(item.value):
            continue
        # One pass with every pattern: leftmost match wins, so a datetime is reported once, not
        # again as a time of day.
        for match in _LINT.finditer(item.value):
            what = DYNAMIC_LOOKING[int(match.lastgroup[1:])][0]
            start = item.span.start + match.start()
            ctx.report(
                "W706",
                f"stable section `{section.name}` contains {what} (`{match.group(0)}`)",
                item.span.src.span(start, start + len(match.group(0))),
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
            framed = [_frame(ctx.config.intro, INTRO_SECTION, doc), *_ordered(user_context)]
            framed.append(_frame(ctx.config.disclaimer, DISCLAIMER_SECTION, doc))
            sections = framed + sections
            placed = True
        if sections:
            messages.append(Message(message.role, message.span, tuple(sections)))
    if not placed:
        first = user_context[0]
        ctx.report(
            "E703",
            f"section `{first.name}` targets user_context but the prompt has no user message",
            first.span,
            "add a `----- user -----` message, or target the section at `system`",
        )
    return replace(doc, messages=tuple(messages))
