"""The roles pass: role splitting, and cutting each message into its sections (docs/language.md, "Messages").

`----- role -----` lines start messages; `/// section:` markers start sections within a message.
Text before the first section directive of a message is the implicit section `body`.
Each section is trimmed of leading blank lines and trailing whitespace, because sections are
joined with exactly one blank line when emitted.
"""

from __future__ import annotations

import re

from ..facts import codes
from ..facts.diagnostics import Span, replace_word
from ..facts.language import ROLES, SYSTEM_ROLES
from ..facts.suggest import did_you_mean
from ..syntax.nodes import (
    IMPLICIT_SECTION,
    Block,
    Document,
    Escape,
    Item,
    Message,
    NearSeparator,
    Placeholder,
    Section,
    SectionMarker,
    Separator,
    Text,
    evolve,
)
from .context import Context

#: section names promptc generates (the frame of the user_context sections)
GENERATED_SECTIONS = frozenset({"user_context.intro", "user_context.disclaimer"})


def _retext(item: Text, start_cut: int, end_cut: int) -> Text:
    span = item.span
    value = item.value[start_cut : len(item.value) - end_cut]
    if span.src is not None:
        new_span = span.src.span(span.start + start_cut, span.end - end_cut)
    else:
        new_span = span
    return Text(value, new_span)


def trim(items: list[Item]) -> list[Item]:
    """Drop leading blank lines (keeping the first line's indentation) and trailing whitespace."""
    items = list(items)
    while items and isinstance(items[0], Text):
        first = items[0]
        value = first.value
        lead = len(value) - len(value.lstrip(" \t\n"))
        newline = value.rfind("\n", 0, lead)
        if lead == len(value):  # only whitespace: blank lines, then maybe the next line's indentation
            if len(items) == 1 or newline == len(value) - 1:
                items.pop(0)
                continue
            if newline != -1:
                # the indentation of a first line that starts with `${…}`, a block or `\${`: kept,
                # as the first line's indentation always is
                items[0] = _retext(first, newline + 1, 0)
            break
        if newline != -1:
            items[0] = _retext(first, newline + 1, 0)
        break
    while items and isinstance(items[-1], Text):
        last = items[-1]
        stripped = last.value.rstrip()
        if not stripped:
            items.pop()
            continue
        if len(stripped) != len(last.value):
            items[-1] = _retext(last, 0, len(last.value) - len(stripped))
        break
    return items


def _first_text_line(item: Item) -> Span | None:
    """Where `item` has text that is not on a header line, or None when every line it stands on is
    blank or starts with `#` (after indentation): the header lines Composum's template files carry
    before the first separator. Text may not stand there anyway (E402), so treating those lines as
    comments changes the meaning of no valid file."""
    span = item.span
    src = span.src
    if src is None:
        return span
    last = src.span(max(span.start, span.end - 1)).line
    for number in range(span.line, last + 1):
        line = src.line_text(number)
        if line.strip() and not line.strip().startswith("#"):
            start = max(span.start, src.line_starts[number - 1] + len(line) - len(line.lstrip()))
            return src.span(start, min(span.end, src.line_starts[number - 1] + len(line)))
    return None


def has_content(items: list[Item]) -> bool:
    return any(not isinstance(i, Text) or i.value.strip() for i in items)


_SPACE = "[ \t\u00a0\u2000-\u200b\u3000]"
_NEAR = re.compile(rf"({_SPACE}*)(-+)({_SPACE}*)([A-Za-z]+)({_SPACE}*)(-+){_SPACE}*\n?")


def _mistyped(line: str) -> tuple[int, str, int] | None:
    """(dashes on the left, the role word, dashes on the right) when a near-separator line is a
    separator with a typo: it names a role and a side has four dashes or more. `--- User ---`,
    three each side, reads as a divider in prose and stays text (W404)."""
    match = _NEAR.fullmatch(line)
    if match is None or match.group(4).lower() not in ROLES:
        return None
    left, right = len(match.group(2)), len(match.group(6))
    if max(left, right) < 4:
        return None
    return left, match.group(4), right


def _what_is_off(line: str, left: int, right: int) -> str:
    """What keeps a mistyped separator from being one, in a few words."""
    match = _NEAR.fullmatch(line)
    assert match is not None
    problems = []
    if min(left, right) < 5:
        side = "before" if left < 5 else "after"
        short = min(left, right) if left < 5 and right < 5 else (left if left < 5 else right)
        problems.append(f"{short} dashes {side if not (left < 5 and right < 5) else 'around'} the role, not five")
    if match.group(1):
        problems.append("indented")
    if not match.group(3) or not match.group(5):
        problems.append("no space around the role")
    elif any(c not in " \t" for c in match.group(3) + match.group(5)):
        problems.append("an odd space around the role")
    return ", ".join(problems) or "not the exact shape"


def split_roles(doc: Document, ctx: Context) -> Document:
    items = doc.items
    has_separators = any(isinstance(i, Separator) for i in items)
    messages: list[Message] = []
    role = doc.header.role or ctx.config.default_role
    message_span = None
    sections: list[Section] = []
    seen_sections: dict[str, int] = {}  # name → line of its directive (0: the implicit `body`)
    current: SectionMarker | None = None
    current_items: list[Item] = []
    markers: dict[str, SectionMarker] = {}  # declared sections of the current message, by name
    insert_at: int | None = None  # where a resumed section goes back in `sections`
    in_message = not has_separators
    reported_preamble = False
    separated = False  # a real separator has been read

    def place(section: Section) -> None:
        nonlocal insert_at
        if insert_at is None:
            sections.append(section)
        else:
            sections.insert(insert_at, section)
            insert_at = None

    def close_section() -> None:
        nonlocal current_items
        trimmed = trim(current_items)
        if current is None:
            if has_content(trimmed):
                if IMPLICIT_SECTION in seen_sections and seen_sections[IMPLICIT_SECTION]:
                    ctx.report(
                        codes.SECTION_TWICE,
                        f"text before the first section directive forms the section `{IMPLICIT_SECTION}`, "
                        f"which is also declared at line {seen_sections[IMPLICIT_SECTION]}",
                        trimmed[0].span,
                        "rename the declared section",
                    )
                seen_sections.setdefault(IMPLICIT_SECTION, 0)
                place(Section(IMPLICIT_SECTION, None, "system", None, doc.source, tuple(trimmed)))
        elif has_content(trimmed):
            place(
                Section(
                    current.name,
                    current.boundary,
                    current.target,
                    current.span,
                    current.span.src or doc.source,
                    tuple(trimmed),
                )
            )
        current_items = []

    def close_message() -> None:
        nonlocal sections, current
        close_section()
        if in_message:
            # kept even when empty: a user message receives the user_context sections; empty
            # messages are left out (W403) by partitioning, once defines are bound
            messages.append(Message(role, message_span, tuple(sections)))
        sections = []
        markers.clear()
        current = None

    for item in items:
        if isinstance(item, Separator):
            close_message()
            name = item.role.lower()
            if name not in ROLES:
                close = did_you_mean(name, ROLES, limit=2)
                ctx.report(
                    codes.UNKNOWN_SEPARATOR_ROLE,
                    f"unknown role `{item.role}` in separator",
                    item.role_span,
                    (f"did you mean `{close}`? " if close else "") + f"valid roles: {', '.join(ROLES)}",
                    [replace_word(ctx.source_of(item.role_span), item.role_span, item.role, close)] if close else (),
                )
            role = name
            message_span = item.span
            in_message = True
            separated = True
            continue
        if isinstance(item, NearSeparator):
            typo = _mistyped(item.value)
            if typo is not None:
                left, word, right = typo
                effect = (
                    f"as text, the `{word.lower()}` turn it starts would be part of the `{role}` message above"
                    if separated
                    else f"it stays text, and no `{word.lower()}` message starts here"
                )
                ctx.report(
                    codes.MISTYPED_SEPARATOR,
                    f"`{item.value.strip()}` is not a role separator ({_what_is_off(item.value, left, right)}): {effect}",
                    item.span,
                    f"write `----- {word.lower()} -----` (five or more dashes, a space, the role, a space, five or "
                    "more dashes, alone on its line)",
                )
                reported_preamble = True  # the line is the mistake, not text before the first separator
            else:
                ctx.report(
                    codes.NEAR_SEPARATOR,
                    "line looks like a role separator but is not one; kept as text",
                    item.span,
                    "a separator is alone on its line: five or more dashes, a space, the role, a space, "
                    "five or more dashes — `----- user -----`",
                )
            item = Text(item.value, item.span)
        if not in_message:
            if isinstance(item, (Block, Placeholder, Escape, SectionMarker)) or (
                isinstance(item, Text) and item.value.strip()
            ):
                offending = None if isinstance(item, SectionMarker) else _first_text_line(item)
                if offending is None and not isinstance(item, SectionMarker):
                    continue  # Composum's `#` header lines before the first separator are comments
                if not reported_preamble:
                    what = "section directive" if isinstance(item, SectionMarker) else "text"
                    ctx.report(
                        codes.TEXT_BEFORE_SEPARATOR,
                        f"{what} before the first role separator",
                        offending or item.span,
                        "move it below a `----- system -----` line, or make it a `///` comment",
                    )
                    reported_preamble = True
            continue
        if isinstance(item, SectionMarker) and item.resume:
            # Text after an included partial that opened sections goes back to the includer's section.
            close_section()
            current = markers.get(item.name) if item.name != IMPLICIT_SECTION else None
            index = next((i for i, s in enumerate(sections) if s.name == item.name), None)
            if index is not None:
                current_items = [*sections.pop(index).items, Text("\n", item.span)]
                insert_at = index
            continue
        if isinstance(item, SectionMarker):
            close_section()
            if item.name in GENERATED_SECTIONS:
                ctx.report(
                    codes.SECTION_TWICE,
                    f"section name `{item.name}` is the one promptc gives the user_context "
                    f"{item.name.rpartition('.')[2]}",
                    item.span,
                    "choose another name",
                )
            markers[item.name] = item
            earlier = seen_sections.get(item.name)
            if earlier is not None:
                where = f"first at line {earlier}" if earlier else "the implicit section before any section directive"
                ctx.report(
                    codes.SECTION_TWICE,
                    f"section `{item.name}` declared twice ({where})",
                    item.span,
                    "section names are unique within a file",
                )
            else:
                seen_sections[item.name] = item.span.line
            current = item
            continue
        current_items.append(item)
    close_message()
    _warn_late_system(messages, ctx)
    return evolve(doc, messages=tuple(messages), items=())


def _warn_late_system(messages: list[Message], ctx: Context) -> None:
    """A system or developer message after a user or assistant message: chat APIs differ on it
    (Anthropic has one system prompt, at the start), so say what the shapes do with it."""
    started = False
    for message in messages:
        if message.role in SYSTEM_ROLES and started:
            ctx.report(
                codes.LATE_SYSTEM_MESSAGE,
                f"`{message.role}` message after the conversation started",
                message.span,
                "the anthropic shape sends it as a user turn in its place (it has one system prompt, "
                "at the start); put standing instructions in the opening system message",
            )
        started = started or message.role not in SYSTEM_ROLES
