"""The comments pass: comment elimination (docs/language.md, "Comments").

The grammar already decided what is a comment (URL protection, `\\///`, full-line vs inline): a
full-line comment token spans its whole line including the newline, an inline one includes the
whitespace before it. Removing the tokens is therefore the whole rule, and blank lines the author
wrote are untouched. Directive lines are kept for the next pass.

A full-line comment that is one slip away from a directive — `/// Section: rules` (keys are
lowercase), `/// section rules stable` (no colon) — would silently do nothing, so it gets W303
with the directive it was probably meant to be. Only comments whose rest reads as that
directive's value are flagged, so prose such as `/// include the customer's name` is left alone.
"""

from __future__ import annotations

import re

from ..facts import codes
from ..facts.diagnostics import Edit, Fix
from ..syntax.nodes import Comment, Directive, Document, Text, evolve
from .context import Context
from .directives import DIRECTIVES, RESERVED_KEYS

#: `/// Key: value` — a directive but for the case of its key
_CASED = re.compile(r"[ \t]*///[ \t]*([A-Za-z][A-Za-z0-9_.\-]*)[ \t]*:(?!//)")
#: `/// key value` — a directive but for its colon. The value ends at its last character that is not
#: a blank (a greedy repeat backs off once: a lazy one tried `[ \t]*\n?\Z` after every character,
#: reading the rest of a run of blanks each time).
_NO_COLON = re.compile(r"[ \t]*///[ \t]*([a-z][a-z_]*)[ \t]+(\S(?:.*[^ \t\n])?)[ \t]*\n?\Z", re.S)
#: what the value of each directive looks like, for `/// key value` without the colon (each
#: declaration's `bare`)
_VALUE_SHAPES = {d.name: d.bare for d in DIRECTIVES.declared if d.bare is not None}


def _near_miss(line: str) -> tuple[str, str, tuple[int, int, str]] | None:
    """(message, hint, fix) when the comment line looks like a directive with a slip; the fix is
    (start, end, text) within the line."""
    cased = _CASED.match(line)
    if cased and cased.group(1) != cased.group(1).lower() and cased.group(1).lower() in RESERVED_KEYS:
        key = cased.group(1)
        return (
            f"`/// {key}:` is a comment, not a directive: directive keys are lowercase",
            f"did you mean `/// {key.lower()}:`?",
            (cased.start(1), cased.end(1), key.lower()),
        )
    bare = _NO_COLON.match(line)
    if bare and bare.group(1) in _VALUE_SHAPES and _VALUE_SHAPES[bare.group(1)].fullmatch(bare.group(2)):
        key, value = bare.group(1), bare.group(2)
        return (
            f"`/// {key} {value}` is a comment, not a directive: it has no colon",
            f"did you mean `/// {key}: {value}`?",
            (bare.end(1), bare.start(2), ": "),
        )
    return None


def _leading_comment(doc: Document, ctx: Context) -> str | None:
    """The prompt's leading comment: the full-line `///` comments that stand above the first
    directive once `promptc fmt` has sorted the header, each line without its `/// `, joined by
    newlines. fmt keeps the comments above the first directive first and moves the comments just
    above each later directive with it (in `DIRECTIVES.order`), so the leading comment is those
    first comments and the ones that travel with the directive that sorts first: the same
    before and after formatting. With no directive, every comment of the header."""
    text = ctx.source.text
    lead: list[str] | None = None  # the comments above the first directive
    pending: list[str] = []  # comments since the last directive
    best: tuple[int, list[str]] | None = None  # the directive that sorts first, and its comments
    for item in doc.items:
        if isinstance(item, Text) and not item.value.strip():
            continue
        if isinstance(item, Directive) and item.key == "promptc":  # an allow line travels with the next
            continue
        if isinstance(item, Directive) and item.key not in ("section", "include"):
            key = item.key
            rank = DIRECTIVES.rank(key)
            if lead is None:
                lead, pending = pending, []
            if best is None or rank < best[0]:
                best = (rank, pending)
            pending = []
            continue
        if not (isinstance(item, Comment) and item.full_line and item.span.src in (None, ctx.source)):
            break
        body = text[item.span.start : item.span.end].strip()[3:]
        pending.append((body[1:] if body.startswith(" ") else body).rstrip())
    lines = pending if lead is None else [*lead, *(best[1] if best is not None else [])]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines) or None


def strip_comments(doc: Document, ctx: Context) -> Document:
    kept = []
    text = ctx.source.text
    doc_comment = _leading_comment(doc, ctx)
    for item in doc.items:
        if not isinstance(item, Comment):
            kept.append(item)
            continue
        if item.full_line and item.span.src in (None, ctx.source):
            slip = _near_miss(text[item.span.start : item.span.end])
            if slip is not None:
                message, hint, (start, end, new) = slip
                line_end = text.find("\n", item.span.start, item.span.end)
                at = item.span.start
                what = hint.removeprefix("did you mean ").removesuffix("?")
                fix = Fix(f"Write {what}", (Edit.of(ctx.source, at + start, at + end, new),))
                ctx.report(
                    codes.DIRECTIVE_TYPO,
                    message,
                    ctx.source.span(item.span.start, line_end if line_end != -1 else item.span.end),
                    hint,
                    [fix],
                )
    return evolve(doc, items=tuple(kept), doc_comment=doc_comment)
