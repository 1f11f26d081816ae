"""Jinja habits in Python blocks: what people write out of Jinja muscle memory, recognised so the
diagnostic says that blocks are Python and what to write instead.

- `{{ name | upper }}` is a bitwise or in Python, and `upper` becomes an input: W605, write
  `{{ name.upper() }}`;
- `{{ loop.index }}` reads an input called `loop`: W605, use `enumerate`;
- `{% else if c %}` is a syntax error: E601 gets the hint `{% elif c %}`;
- `{% set x = 1 %}`, `{% include %}`, `{% macro %}`, `{% raw %}`: E208's hint is the promptc way
  (`language.JINJA_TAGS`, used where the parser reports the tag).

Only names the template does not define and that are Jinja's own (its filters, `loop`) are
flagged, so `{{ a | b }}` on two sets the prompt is given stays quiet.
"""

from __future__ import annotations

import re
from dataclasses import replace

from .. import codes
from ..context import Context
from ..nodes import Block, Section

JINJA_FILTERS = frozenset(
    "abs attr batch capitalize center count default dictsort e escape filesizeformat first float forceescape format "
    "groupby indent int items join last length list lower map max min pprint random reject rejectattr replace "
    "reverse round safe select selectattr slice sort string striptags sum title tojson trim truncate unique upper "
    "urlencode urlize wordcount wordwrap xmlattr".split()
)
_FILTER = re.compile(r"(?<![|\w])\|\s*([A-Za-z_][A-Za-z0-9_]*)")
_LOOP = re.compile(r"(?<![\w.])loop\.(index0?|revindex0?|first|last|length|cycle|previtem|nextitem|depth)\b")
_ELSE_IF = re.compile(r"\s*else\s+if\b")


def _hint_for_filter(name: str, value: str) -> str:
    x = value if re.fullmatch(r"[A-Za-z_][\w.]*", value) else "x"
    calls = {"length": f"len({x})", "default": f"{x} or 'fallback'", "join": f"', '.join({x})"}
    return f"blocks are Python, not Jinja: `| {name}` is a bitwise or; write `{{{{ {calls.get(name, f'{x}.{name}()')} }}}}`"


def check(section: Section, inputs: set[str], ctx: Context) -> None:
    """W605 for Jinja filters and `loop` where they would be read as inputs; better hints for the
    errors Jinja syntax causes (reported already, by the parser or the analysis)."""
    for item in section.items:
        if not isinstance(item, Block) or item.code_span.src is None:
            continue
        src = item.code_span.src
        if item.kind == "expr":
            for match in _FILTER.finditer(item.code):
                name = match.group(1)
                if name in JINJA_FILTERS and name in inputs:
                    start = item.code_span.start + match.start()
                    ctx.report(
                        codes.JINJA_HABIT,
                        f"`| {name}` is a Jinja filter; in a Python block it makes `{name}` an input",
                        src.span(start, item.code_span.start + match.end()),
                        _hint_for_filter(name, item.code[: match.start()].strip()),
                    )
        for match in _LOOP.finditer(item.code):
            if "loop" in inputs:
                start = item.code_span.start + match.start()
                ctx.report(
                    codes.JINJA_HABIT,
                    f"`loop.{match.group(1)}` is Jinja's loop variable; here `loop` is read as an input",
                    src.span(start, item.code_span.start + match.end()),
                    "blocks are Python: `{% for i, x in enumerate(items) %}` gives the index as `i`",
                )
        better = None
        if item.kind == "stmt" and _ELSE_IF.match(item.code):
            better = "blocks are Python: write `{% elif … %}`"
        if better is not None:
            _rehint(ctx, item, better)


def _rehint(ctx: Context, block: Block, hint: str) -> None:
    """Give the error already reported inside `block` the Jinja-aware hint."""
    for index, d in enumerate(ctx.diagnostics):
        if d.severity == "error" and d.span is not None and block.span.start <= d.span.start <= block.span.end:
            if d.line == block.span.line or d.span.start >= block.span.start:
                ctx.diagnostics[index] = replace(d, hint=hint)
                return
