"""The lexer fast path gives exactly what the LALR parse of the grammar gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Token

from promptc.facts.diagnostics import DiagnosticSink, SourceText
from promptc.syntax.parse import parse, parser, tokens

from .conftest import ROOT, examples

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


_PIECES = [
    "{{",
    "}}",
    "{#",
    "#}",
    "{%",
    "%}",
    "${",
    "}",
    "\\",
    "$",
    "{",
    "\n",
    " ",
    "a",
    "/// c",
    "x}",
    "----- user -----\n",
]


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=24).map("".join))
def test_marking_unterminated_openers_changes_no_token(text: str) -> None:
    """The linear-time path (unterminated openers marked before lexing) gives exactly the tokens
    the plain lexer gives."""
    from lark.lexer import LexerThread

    from promptc.syntax.parse import _lexer

    plain = [(t.type, t.value, t.start_pos, t.line, t.column) for t in LexerThread.from_text(_lexer(), text).lex(None)]
    marked = [(t.type, t.value, t.start_pos, t.line, t.column) for t in tokens(text)]
    assert marked == plain


def test_unterminated_openers_by_the_ten_thousand_compile() -> None:
    # 40,000 lines of `{{ a` took minutes (each opener scanned to the end of the file); `make bench`
    # times it, this shows every opener is still reported at its place
    text = "{{ a\n" * 40_000
    items = list(tokens(text))
    assert sum(1 for t in items if t.type == "UNTERMINATED") == 40_000
