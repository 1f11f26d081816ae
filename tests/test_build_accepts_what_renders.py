"""What the build accepts, the runtime renders; what cannot render is a located build error.

The build hands CPython's `compile()` the very program the runtime executes for each section
(`promptc.runtime.template.compile_section` on the artifact's section text), so the two cannot disagree.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptc import compile_text
from promptc.runtime.render import render_artifact
from promptc.runtime.template import compile_section

from .conftest import examples


@pytest.mark.parametrize(
    ("template", "line", "col", "message"),
    [
        ("Hi\n{# def f(a, a): pass #}", 2, 13, "duplicate argument 'a'"),
        ("{{ [y for x in (y := [1])] }}", 1, 17, "comprehension iterable"),
        ("x\n\n{{ await thing }}", 3, 4, "'await' outside async function"),
        ("{# nonlocal q #}", 1, 4, "no binding for nonlocal 'q'"),
        ("{% for x in y %}{# break #}{% endfor %}{# break #}", 1, 43, "'break' outside loop"),
        ("{# return 1 #}", 1, 4, "`return` takes no value"),
        ("A {# yield 1 #}", 1, 6, "'yield' outside function"),
    ],
)
def test_what_cpython_refuses_is_a_located_build_error(template: str, line: int, col: int, message: str) -> None:
    result = compile_text(template)
    assert [(d.code, d.line, d.col) for d in result.diagnostics] == [("E601", line, col)], result.diagnostics
    assert message in result.diagnostics[0].message
    assert result.artifact is None


@pytest.mark.parametrize(
    "template",
    [
        "{% if a %}A{% else %}B{% else %}C{% endif %}",
        "{% if a %}A{% else %}B{% elif c %}C{% endif %}",
        "{% while a %}A{% else %}B{% else %}C{% endwhile %}",
    ],
)
def test_a_misplaced_else_is_a_build_error_not_a_render_failure(template: str) -> None:
    result = compile_text(template)
    assert [d.code for d in result.diagnostics] == ["E209"]
    assert result.diagnostics[0].col > 1  # at the offending tag, not the opener


def test_a_top_level_return_ends_the_section() -> None:
    result = compile_text("----- system -----\nBefore {% if stop %}{# return #}{% endif %}after.\n")
    assert result.artifact is not None, result.diagnostics
    assert render_artifact(result.artifact, {"stop": True}).messages[0]["content"] == "Before "
    assert render_artifact(result.artifact, {"stop": False}).messages[0]["content"] == "Before after."


def test_a_name_assigned_on_some_paths_still_falls_back_to_the_input() -> None:
    result = compile_text("{% if c %}{# x = 'set' #}{% endif %}{{ x }}")
    assert result.artifact is not None and set(result.artifact.inputs) == {"c", "x"}
    assert render_artifact(result.artifact, {"c": False, "x": "input"}).messages[0]["content"] == "input"
    assert render_artifact(result.artifact, {"c": True, "x": "input"}).messages[0]["content"] == "set"


FRAGMENTS = [
    "text ",
    "${a} ",
    "{{ a }}",
    "{{ b + 1 }}",
    "{# x = a #}",
    "{# def f(p, q): return p #}",
    "{# def f(p, p): pass #}",
    "{{ [y for y in a] }}",
    "{{ [y for x in (y := a)] }}",
    "{{ (z := 2) }}",
    "{# return #}",
    "{# return a #}",
    "{# yield #}",
    "{# break #}",
    "{# nonlocal a #}",
    "{# global a #}",
    "{# lambda: (yield) #}",
    "{{ await a }}",
    "{% if a %}",
    "{% elif b %}",
    "{% else %}",
    "{% endif %}",
    "{% for i in a %}",
    "{% endfor %}",
    "{# continue #}",
    "\n",
]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join))
def test_every_section_the_build_accepts_compiles_in_the_runtime(template: str) -> None:
    result = compile_text(template)
    if result.artifact is None:
        assert any(d.severity == "error" for d in result.diagnostics)
        return
    for message in result.artifact.messages:
        for block in message.blocks:
            for section in block.sections:
                compile_section(section.text)  # raises TemplateSyntaxError if the runtime could not run it
