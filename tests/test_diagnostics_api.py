"""The diagnostic as a library value: its one-line form and its end position."""

from __future__ import annotations

from promptc import compile_text
from promptc.facts.diagnostics import render_text


def test_str_is_the_clis_one_line_form_and_the_first_line_of_the_full_rendering() -> None:
    (d,) = compile_text("Hello ${nmae}\n/// input: name\n").diagnostics[:1]
    assert str(d) == "prompt.prompt:1:7: error[E501]: " + d.message
    assert render_text(d).splitlines()[0] == str(d)


def test_end_is_just_past_the_span_on_its_line() -> None:
    d = next(x for x in compile_text("Hello ${nmae}\n/// input: name\n").diagnostics if x.code == "E501")
    assert (d.line, d.col) == (1, 7) and d.end == (1, 14)
    assert d.to_json()["end_col"] == 14
