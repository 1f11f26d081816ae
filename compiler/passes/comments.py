"""Pass 1 — comment elimination (SPEC §1).

The grammar already decided what is a comment (URL protection, `\\///`, full-line vs inline): a
full-line comment token spans its whole line including the newline, an inline one includes the
whitespace before it. Removing the tokens is therefore the whole rule, and blank lines the author
wrote are untouched. Directive lines are kept for the next pass.
"""

from __future__ import annotations

from dataclasses import replace

from ..context import Context
from ..nodes import Comment, Document


def strip_comments(doc: Document, ctx: Context) -> Document:
    return replace(doc, items=tuple(item for item in doc.items if not isinstance(item, Comment)))
