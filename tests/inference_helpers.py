"""A small stand-in for the real parser, for the inference tests.

It turns a template string into the items `promptc.analysis.inference.analyse` consumes: `Text`,
`Placeholder` and `Block` nodes with real spans. It knows nothing about directives, separators or
escapes; swap `items_of` for the real parser once it is in place.
"""

from __future__ import annotations

import re

from promptc.diagnostics import SourceText
from promptc.nodes import Block, Item, Placeholder, Text

# Non-greedy like promplate's own tokenizer: a block ends at the first closing delimiter.
_TOKEN = re.compile(
    r"\$\{(?P<placeholder>[^}]*)\}|\{\{(?P<expr>.*?)\}\}|\{#(?P<exec>.*?)#\}|\{%(?P<stmt>.*?)%\}",
    re.S,
)


def source_of(text: str, path: str = "t.prompt") -> SourceText:
    return SourceText.of(path, text)


def items_of(text: str, path: str = "t.prompt") -> list[Item]:
    src = source_of(text, path)
    items: list[Item] = []
    pos = 0
    for match in _TOKEN.finditer(text):
        if match.start() > pos:
            items.append(Text(text[pos : match.start()], src.span(pos, match.start())))
        pos = match.end()
        kind = match.lastgroup or ""
        span = src.span(match.start(), match.end())
        if kind == "placeholder":
            items.append(Placeholder(match.group(kind).strip(), span))
            continue
        inner = match.group(kind)
        inner_start = match.start(kind)
        # `-` right inside a delimiter is whitespace control, not code (as in the real parser)
        trim_left = inner.startswith("-")
        trim_right = inner.endswith("-") and len(inner) > (1 if trim_left else 0)
        code = inner[(1 if trim_left else 0) : len(inner) - (1 if trim_right else 0)]
        code_start = inner_start + (1 if trim_left else 0)
        keyword = ""
        if kind == "stmt":
            stripped = code.strip()
            keyword = re.split(r"[\s(:]", stripped, maxsplit=1)[0] if stripped else ""
        items.append(
            Block(
                kind,  # type: ignore[arg-type]
                code,
                span,
                src.span(code_start, code_start + len(code)),
                trim_left,
                trim_right,
                keyword,
                match.group(0),
            )
        )
    if pos < len(text):
        items.append(Text(text[pos:], src.span(pos, len(text))))
    return items
