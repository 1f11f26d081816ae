"""The lexer fast path gives exactly what the LALR parse of the grammar gives."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Token

from promptc.facts.diagnostics import DiagnosticSink, SourceText
from promptc.syntax.parse import lexemes, parse, parser, tokens

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
    assert lexemes(text) == [(kind, value, start) for kind, value, start, _, _ in full]
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
    # runs of blanks before and after `///` and `//` (the TEXT and INLINE_COMMENT terminals)
    "   ",
    " \t ",
    "///",
    "//",
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


@settings(max_examples=examples(400), deadline=None)
@given(
    st.lists(st.sampled_from([*_PIECES, "\ue000", "\ue000\ue001", "-----", "/// a: b\n", "\t"]), max_size=30).map(
        "".join
    )
)
def test_one_regular_expression_over_the_text_gives_the_lexers_tokens(text: str) -> None:
    """`lexemes` (the lexer's union of terminals run once with `finditer`, no Token objects) gives
    exactly the terminals, values and offsets of the lexer, and so the same items."""
    assert lexemes(text) == [(t.type, t.value, t.start_pos) for t in tokens(text)]
    src = SourceText.of("x.prompt", text)
    assert parse(src, DiagnosticSink(src)) == parse(src, DiagnosticSink(src), full_parse=True)


def test_the_marks_own_characters_in_a_source_are_text() -> None:
    """U+E000 U+E001 is how the parser marks an unterminated `{{` for the lexer; written in a
    source, it is text like any other (it stopped the compile with an AssertionError)."""
    from promptc.compile import compile_text
    from promptc.facts.config import Config

    result = compile_text("a \ue000\ue001 b {{ x", config=Config(tokenizer="approx-bytes/4"))
    assert [d.code for d in result.diagnostics if d.severity == "error"] == ["E201"]
    result = compile_text("/// input: x\na \ue000\ue001 ${x}\n", config=Config(tokenizer="approx-bytes/4"))
    assert result.ok
    assert result.artifact is not None
    assert "a \ue000\ue001 ${x}" in result.artifact.messages[0].content


def test_the_lexer_loads_from_the_cache_folder_without_importing_lark(tmp_path: Path) -> None:
    """The lexer's regular expression (text and flags, JSON) is kept in promptc's cache folder: a
    process that parses needs lark only the first time, and a damaged cache is derived again."""
    import json
    import os
    import subprocess
    import sys

    script = (
        "import sys, json\n"
        "from promptc.syntax.parse import lexemes\n"
        "found = lexemes('----- user -----\\nHi ${a} {{ b }} /// c\\n{% if y %}z{% endif %} {{ open')\n"
        "print(json.dumps(['lark' in sys.modules, found]))\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}

    def run() -> tuple[bool, list]:
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        imported, found = json.loads(out.stdout)
        return imported, found

    first = run()
    (cached,) = (tmp_path / "promptc").glob("lexer-*.json")
    again = run()
    cached.write_text("{not json")
    damaged = run()
    assert first[0] and not again[0] and damaged[0]
    assert first[1] == again[1] == damaged[1]
    assert [kind for kind, _, _ in first[1]][:3] == ["SEPARATOR", "TEXT", "PLACEHOLDER"]


@settings(max_examples=examples(500), deadline=None)
@given(
    st.tuples(
        st.sampled_from(["", " ", "\t "]),
        st.sampled_from(["", " ", "\t"]),
        st.from_regex(r"[a-z][a-z0-9_.\-]{0,5}", fullmatch=True),
        st.sampled_from(["", " ", "\t"]),
        st.text(alphabet=" \t/:ab\\é#", max_size=12),
    ).map(lambda p: f"{p[0]}///{p[1]}{p[2]}{p[3]}:{p[4]}\n")
)
def test_a_directive_item_is_what_the_directive_pattern_reads(line):
    """The parser reads a directive line's key and value with string methods; they are what
    `language.DIRECTIVE` matches (the value without its inline comment, stripped)."""
    from promptc.facts.language import DIRECTIVE, INLINE_COMMENT
    from promptc.syntax.nodes import Directive

    src = SourceText.of("t.prompt", line)
    items = [item for item in parse(src, DiagnosticSink(src)) if isinstance(item, Directive)]
    match = DIRECTIVE.match(line)
    if match is None or not items:
        return  # not a directive line (`//` right after the colon makes it a comment)
    (item,) = items
    raw = INLINE_COMMENT.sub("", match.group(2).rstrip("\n"))
    assert (item.key, item.value) == (match.group(1), raw.strip())
    lead = len(raw) - len(raw.lstrip())
    assert item.value_span.start == match.start(2) + lead
    assert item.value_span.end == item.value_span.start + len(raw.strip())


#: TEXT and INLINE_COMMENT as they were before issue 33: a lookahead at each blank over the rest of
#: the run (quadratic in the run), and a run the comment gave back a blank at a time
_RESCANNING = {
    "TEXT": r"(?:[^\\$\{ \t\n\uE000]++|[ \t](?![ \t]*\/\/\/)|\n(?![ \t\u00a0\u2000-\u200b\u3000]*(?:\/\/\/|-{3,})))++",
    "INLINE_COMMENT": r"[ \t]+\/\/\/[^\n]*",
}


@cache
def _rescanning_lexer():
    """The lexer of the grammar with the old blank-run terminals."""
    import lark

    from promptc.syntax.parse import grammar_text

    lines = []
    for line in grammar_text().splitlines():
        name = line.split(".", 1)[0].split(":", 1)[0]
        if name in _RESCANNING and not line.startswith("//"):
            line = f"{line.split(':', 1)[0]}: /{_RESCANNING[name]}/"
        lines.append(line)
    grammar = "\n".join(lines)
    assert all(f"/{p}/" in grammar for p in _RESCANNING.values())
    built = lark.Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=False)
    return lark.lexer.BasicLexer(built.lexer_conf)


@settings(max_examples=examples(600), deadline=None)
@given(
    st.lists(
        st.sampled_from([*_PIECES, "\t", " " * 7, "\t\t", "\u00a0", "/// a: b\n", "-----", "\n   ///", "x ///"]),
        max_size=30,
    ).map("".join)
)
def test_the_blank_run_terminals_give_the_tokens_the_rescanning_ones_gave(text: str) -> None:
    """TEXT takes a run of blanks whole and looks for `///` once after it, and INLINE_COMMENT keeps
    its run (issue 33: 80,000 blanks took 14.5 s): the same tokens as the old terminals on any text
    of blanks, comments, separators and openers."""
    from lark.lexer import LexerThread

    from promptc.syntax.parse import _lexer

    old = [(t.type, t.value, t.start_pos) for t in LexerThread.from_text(_rescanning_lexer(), text).lex(None)]
    new = [(t.type, t.value, t.start_pos) for t in LexerThread.from_text(_lexer(), text).lex(None)]
    assert new == old
