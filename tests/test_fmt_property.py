"""Properties of `promptc fmt` (docs/formatter.md): over generated sources and the example corpus,
the layout on its own (before the safety check that would refuse it) keeps every compiled artifact
byte-identical and the warnings the same, and formatting twice changes nothing more.

The generator writes sources line by line from the shapes the layout rewrites — directives with
odd spacing and inline comments, long and upper-case separators, blank lines holding spaces,
trailing whitespace, section directives, comments, blocks spanning lines, includes — so that
most examples compile and each exercises several rules at once."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptc.facts.config import Config
from promptc.tools.fmt import FormatError, format_text, format_tree, layout

from .conftest import ROOT, examples

APPROX = Config(tokenizer="approx-bytes/4")

_indent = st.sampled_from(["", "", "  ", "\t"])
_gap = st.sampled_from(["", " ", " ", "   ", "\t"])
_trail = st.sampled_from(["", "", " ", "\t ", " /// note", "  /// note  ", "\t///x"])


@st.composite
def _directive(draw, key: str, value: str) -> str:
    return f"{draw(_indent)}///{draw(_gap)}{key}{draw(st.sampled_from(['', ' ']))}:{draw(_gap)}{value}{draw(_trail)}"


_HEADER = [
    ("flow", "support"),
    ("node", "answer"),
    ("tag", "a, b"),
    ("tag", "c"),
    ("param", "temperature=0.5"),
    ("param", 'stop="a, b", max_tokens=10'),
    ("param", "temperature=0.7"),
    ("cache_ttl", "1h"),
    ("owner", "team-a"),
    ("owner", "team-b"),
    ("promptc", "allow W502"),
]
_TEXT = [
    "Answer briefly.",
    "Answer briefly.   ",
    "Use ${x} here.",
    "Use ${x} here.  \t",
    "  indented ${y}",
    "Literal \\${x} and C:\\dir.",
    "text /// inline note",
    "text\t\t///   spaced note   ",
    "file:///etc/hosts a///b",
    "- a list item",
    "# a header-like line",
    "-- not -- a -- separator --",
]
_BLANK = ["", " ", "\t", "   "]
_COMMENT = ["/// a note", "  /// an indented note  ", "///", "/// http://example.com", "///\tnote\t"]
_BLOCKS = [
    "{{ x }}",
    "{{ x\n   }}  ",
    "{% if x %}\nyes  \n{% endif %}",
    "{%- if y -%}\n  both\n{%- endif -%}",
    "{# z = 1\n #}{{ z }}",
    "Total: {{ x -}}   ",
]


@st.composite
def _separator(draw) -> str:
    role = draw(st.sampled_from(["system", "user", "assistant", "User", "SYSTEM", "developer"]))
    left, right = draw(st.integers(5, 9)), draw(st.integers(5, 9))
    tail = draw(st.sampled_from(["", " ", "\t", " /// c", "  ///c  "]))
    return f"{'-' * left}{draw(st.sampled_from([' ', '  ', chr(9)]))}{role}{draw(st.sampled_from([' ', '   ']))}{'-' * right}{tail}"


@st.composite
def _body_line(draw, index: int, partial: bool) -> str:
    kind = draw(st.sampled_from(["text"] * 4 + ["blank"] * 3 + ["comment", "block", "section", "separator"]))
    if kind == "text":
        return draw(st.sampled_from(_TEXT))
    if kind == "blank":
        return draw(st.sampled_from(_BLANK))
    if kind == "comment":
        return draw(st.sampled_from(_COMMENT))
    if kind == "block":
        return draw(st.sampled_from(_BLOCKS))
    if kind == "section" or partial:
        boundary = draw(st.sampled_from(["", " dynamic", " stable"]))
        return draw(_directive("section", f"s{index}{boundary}"))
    return draw(_separator())


@st.composite
def sources(draw, partial: bool = False) -> str:
    header = draw(st.lists(st.sampled_from(_HEADER) | st.just(None), max_size=7))
    lines = []
    for entry in header:
        if entry is None:
            lines.append(draw(st.sampled_from(_BLANK + _COMMENT)))
        elif not (partial and entry[0] in ("param", "flow", "node", "cache_ttl")):
            lines.append(draw(_directive(*entry)))
    if draw(st.booleans()) and not partial:
        lines.append(draw(_directive("input", "x, y")))
    lines += [draw(_body_line(i, partial)) for i in range(draw(st.integers(0, 14)))]
    end = draw(st.sampled_from(["\n", "", "\n\n\n", "  \n"]))
    return "\n".join(lines) + end


def _check(text: str, **kwargs) -> None:
    """The layout passes the safety check whenever the source compiles, and is idempotent."""
    partial = kwargs.get("name", "prompt").startswith("_")
    once = layout(text, partial=partial).text
    assert layout(once, partial=partial).text == once
    try:
        formatted = format_text(text, config=APPROX, **kwargs)
    except FormatError as exc:
        # refused only because the source itself does not compile, never because of the layout
        assert [d.code for d in exc.diagnostics] == ["E930"], exc.diagnostics
        return
    assert formatted == once


_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=examples(60), **_SETTINGS)
@given(text=sources())
def test_generated_prompts_keep_their_artifact(text: str) -> None:
    _check(text)


@settings(max_examples=examples(30), **_SETTINGS)
@given(text=sources(partial=True), before=st.sampled_from(["Before.\n", "Before.\n\n", "/// section: a\nA.\n"]))
def test_generated_partials_keep_every_includer(text: str, before: str) -> None:
    """A partial splices into the includer's text: its own edges are text, not a message's."""
    host = f"{before}/// include: _p\nAfter ${{x}}.\n"
    _check(text, name="_p", partials={"host.prompt": host})


def _corpus() -> list[tuple[Path, str]]:
    found = [
        (ROOT / "prompts_src", rel.relative_to(ROOT / "prompts_src").as_posix())
        for rel in sorted((ROOT / "prompts_src").rglob("*.prompt"))
    ]
    return found


def test_example_corpus_formats_under_the_rule(tmp_path: Path) -> None:
    """prompts_src is formatted (fmt --check passes on it) and tests/cases: every case that
    compiles formats without a refusal, and formatting twice is a fixed point."""
    result = format_tree(ROOT / "prompts_src", None, APPROX)
    assert result.files and {f.status for f in result.files} == {"unchanged"}, [
        (f.rel, f.status, f.diagnostics) for f in result.files if f.status != "unchanged"
    ]
    cases = sorted((ROOT / "tests" / "cases").rglob("*.prompt"))
    assert cases
    for case in cases:
        text = case.read_text(encoding="utf-8")
        partials_file = case.with_name(case.name.replace(".prompt", ".partials.json"))
        partials = __import__("json").loads(partials_file.read_text()) if partials_file.exists() else None
        _check(text.replace("\r\n", "\n"), name=case.stem, partials=partials)


def _bench_corpus():
    spec = importlib.util.spec_from_file_location("bench_corpus", ROOT / "bench" / "corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("index", [0, 1, 2, 3, 5, 8])
def test_bench_corpus_files_format_under_the_rule(index: int) -> None:
    text = _bench_corpus().render_file(index)
    _check(text, name=f"bench{index}")
