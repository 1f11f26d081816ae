"""The lexer fast path gives exactly what the LALR parse of the grammar gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from lark import Token

from promptc.diagnostics import DiagnosticSink, SourceText
from promptc.parse import parse, parser, tokens

from .conftest import ROOT

SAMPLES = sorted((ROOT / "prompts_src").rglob("*.prompt")) + sorted((ROOT / "tests/cases").rglob("*.prompt"))


def test_grammar_stays_flat() -> None:
    """`start: _item*` is why lexing alone is parsing: every child of the tree is a token."""
    tree = parser().parse("----- user -----\nHi ${a} {{ b }} /// c\n/// flow: x\n{% if y %}z{% endif %}\\${")
    assert tree.data == "start"
    assert all(isinstance(child, Token) for child in tree.children)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_lexer_path_equals_full_parse(path: Path) -> None:
    text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    fast = [(t.type, t.value, t.start_pos, t.line, t.column) for t in tokens(text)]
    full = [(t.type, t.value, t.start_pos, t.line, t.column) for t in tokens(text, full_parse=True)]
    assert fast == full
    src = SourceText.of(path.name, text)
    assert parse(src, DiagnosticSink(src)) == parse(src, DiagnosticSink(src), full_parse=True)
