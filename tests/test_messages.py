"""Messages a newcomer meets in the first hour: each says what is wrong where it is, and each hint
is true in its context."""

from __future__ import annotations

import pytest

from promptc import compile_text


def diagnostics(source: str, **kwargs) -> list[tuple[str, str, str | None]]:
    return [(d.code, d.message, d.hint) for d in compile_text(source, **kwargs).diagnostics]


@pytest.mark.parametrize(
    ("source", "hint"),
    [
        ("/// Section: rules stable\nHi\n", "did you mean `/// section:`?"),
        ("/// section rules stable\nHi\n", "did you mean `/// section: rules stable`?"),
        ("/// include _tone\nHi\n", "did you mean `/// include: _tone`?"),
        ("/// param temperature=0.2\nHi\n", "did you mean `/// param: temperature=0.2`?"),
        ("/// parms: temperature=0.2\nHi\n", "did you mean `param`?"),
        ("/// inputs: a, b\nHi ${a} ${b}\n", "did you mean `input`?"),
        ("/// model: gpt-4o\nHi\n", "model parameters are params: did you mean `/// param: model=gpt-4o`?"),
    ],
)
def test_directive_near_misses_get_did_you_mean(source: str, hint: str) -> None:
    found = diagnostics(source)
    assert [(code, h) for code, _, h in found] == [("W303", hint)]


@pytest.mark.parametrize(
    "source", ["/// include the customer's name when you greet\nHi\n", "/// Note: keep it short\nHi\n"]
)
def test_prose_comments_are_left_alone(source: str) -> None:
    assert diagnostics(source) == []


def test_names_in_template_code_are_names_not_placeholders_and_suggest_the_loop_variable() -> None:
    ((code, message, hint),) = diagnostics("/// input: items\n{% for item in items %}{{ itme }}{% endfor %}\n")
    assert code == "E501"
    assert message == "name `itme` is neither a declared input nor defined by the template"
    assert hint == "did you mean `item`?"


def test_a_typo_in_the_declaration_is_not_where_the_hint_steers() -> None:
    found = [d for d in diagnostics("/// input: questoin\nAnswer ${question}.\n") if d[0] == "E501"]
    assert found[0][2] == "`/// input:` declares `questoin` (line 1), which nothing uses: fix whichever is misspelt"


def test_w502_says_when_a_define_binds_the_input() -> None:
    found = diagnostics("/// input: product, q\nUse ${product} for ${q}.\n", defines={"product": "Acme"})
    assert [(c, m.split(" (")[0]) for c, m, _ in found] == [
        ("W502", "declared input `product` is bound at build time by a define")
    ]


def test_w403_hint_fits_a_file_without_separators() -> None:
    ((code, _, hint),) = diagnostics("/// tag: x\n")
    assert code == "W403" and "separator" not in hint
    ((code, _, hint),) = diagnostics("----- system -----\n----- user -----\nHi\n")
    assert code == "W403" and hint == "remove the separator, or write the message's text"


def test_e704_names_the_conflict() -> None:
    ((code, message, _),) = diagnostics("/// section: rules stable dynamic\nHi\n")
    assert code == "E704"
    assert message == "section `rules` is given both `stable` and `dynamic`: a section is one or the other"


@pytest.mark.parametrize(
    ("source", "code", "hint"),
    [
        ("Use {{ name | upper }}\n", "W605", "write `{{ name.upper() }}`"),
        ("{% for i in items %}{{ loop.index }}{% endfor %}\n", "W605", "enumerate(items)"),
        ("{% if a %}x{% else if b %}y{% endif %}\n", "E601", "write `{% elif … %}`"),
        ("{% set x = 1 %}{{ x }}\n", "E208", "`{# x = … #}`"),
        ("{% include 'x' %}\n", "E208", "`/// include: _partial`"),
        ("A literal {{ brace\n", "E201", "`\\{{`"),
        ("Hi {{ name|default('there') }}\n", "W605", "write `{{ name or 'there' }}`"),
        ("Hi {{ items|join(', ') }}\n", "W605", "write `{{ ', '.join(items) }}`"),
        ("Hi {{ name|upper }}\n", "W605", "write `{{ name.upper() }}`"),
        ("Hi {{ name | trim | title }}\n", "W605", "write `{{ name.strip().title() }}`"),
        ("Hi {# TODO #} there\n", "W605", "write a comment as `/// TODO`"),
        ("Hi {# TODO: fix the tone #} there\n", "E601", "write a comment as `/// …`, or `\\{#`"),
        ("Use {{ and }} to open and close a block.\n", "E601", "to write `{{` as text, escape it: `\\{{`"),
    ],
)
def test_jinja_habits_say_that_blocks_are_python(source: str, code: str, hint: str) -> None:
    found = [(c, h) for c, _, h in diagnostics(source)]
    assert found and found[0][0] == code and hint in (found[0][1] or ""), found


def test_a_bitwise_or_of_inputs_is_not_a_jinja_filter() -> None:
    assert diagnostics("{{ a | b }}\n") == []


def test_one_warning_can_be_allowed_on_one_line() -> None:
    source = (
        "/// section: rules stable\n"
        "/// promptc: allow W706\n"
        "Built on 2024-05-06.\n"
        "Release 2024-05-07 is current. /// promptc: allow W706, W303\n"
        "Shipped 2024-05-08.\n"
    )
    found = compile_text(source).diagnostics
    assert [(d.code, d.line) for d in found] == [("W706", 5)]  # only the line nothing allows
    assert compile_text(source).artifact.metadata == {}  # not metadata


def test_a_partial_can_allow_its_own_warnings() -> None:
    partial = "/// section: id stable\n/// promptc: allow W706\nSince 2024-05-06.\n"
    found = compile_text("/// include: _p\nHi\n", partials={"_p.prompt": partial}).diagnostics
    assert [d.code for d in found] == []


@pytest.mark.parametrize(
    ("value", "message"),
    [("allow E501", "errors cannot be allowed"), ("allow W999", "not a diagnostic code"), ("ignore W706", "write")],
)
def test_a_bad_allow_is_an_error(value: str, message: str) -> None:
    found = compile_text(f"/// promptc: {value}\nHi\n").diagnostics
    assert [d.code for d in found] == ["E304"] and message in found[0].message


def test_e905_says_what_is_stale_and_why(tmp_path) -> None:
    from promptc.driver import build, check

    from .conftest import write

    write(tmp_path, "prompts_src/a.prompt", "/// include: _p\nA\n")
    write(tmp_path, "prompts_src/_p.prompt", "Shared.\n")
    write(tmp_path, "prompts_src/b.prompt", "B\n")
    src, out = tmp_path / "prompts_src", tmp_path / "build"
    assert build(src, out).ok
    write(tmp_path, "prompts_src/_p.prompt", "Shared, edited.\n")
    write(tmp_path, "prompts_src/b.prompt", "B, edited\n")
    write(tmp_path, "build/stray.json", "{}")
    messages = {d.path.rsplit("/", 1)[-1]: d.message for d in check(src, out, locked=True).diagnostics}
    assert "unchanged, so one of" in messages["a.json"] and "_p.prompt" in messages["a.json"]
    assert "its source" in messages["b.json"] and "changed since it was built" in messages["b.json"]
    assert "should not be there" in messages["stray.json"]


def test_a_filter_with_arguments_is_named_for_what_it_calls() -> None:
    found = diagnostics("Hi {{ name|default('there') }}, {{ items|join(', ') }}\n")
    assert [(c, m) for c, m, _ in found] == [
        ("W605", "`| default(…)` is a Jinja filter; in a Python block it calls `default`, which becomes an input"),
        ("W605", "`| join(…)` is a Jinja filter; in a Python block it calls `join`, which becomes an input"),
    ]


def test_python_that_does_not_parse_keeps_its_own_hint() -> None:
    ((code, _, hint),) = diagnostics("Value: {{ a + }}\n")
    assert code == "E601" and hint is None


def test_loop_index_with_declared_inputs_is_one_error_with_the_enumerate_hint() -> None:
    found = diagnostics("/// input: items\n{% for x in items %}{{ loop.index }}. {{ x }}{% endfor %}\n")
    assert found == [
        (
            "E501",
            "`loop.index` is Jinja's loop variable; here `loop` is read as an input, and it is not declared",
            "blocks are Python: `{% for i, x in enumerate(items) %}` gives the index as `i`",
        )
    ]


def test_require_declared_inputs_points_at_the_misspelt_declaration() -> None:
    from promptc import Config

    config = Config(require_declared_inputs=True)
    found = compile_text("/// inputs: a\n----- user -----\n${a}\n", config=config).diagnostics
    error = next(d for d in found if d.code == "E503")
    assert (error.line, error.col) == (1, 5)
    assert "`/// inputs:` (line 1) is not the `input` directive" in error.message
    assert error.hint == "write `/// input: a`"
    loop = compile_text("{% for x in items %}{{ loop.index }}{% endfor %}\n", config=config).diagnostics
    assert [(d.code, d.hint) for d in loop] == [
        (
            "E503",
            "add `/// input: items`; `loop` comes from Jinja syntax, not meant as an input (W605 says what to write)",
        ),
        ("W605", "blocks are Python: `{% for i, x in enumerate(items) %}` gives the index as `i`"),
    ]


def test_render_without_std_inputs_names_the_flag(tmp_path) -> None:
    from .conftest import run_promptc, write

    write(
        tmp_path,
        "prompts_src/g.prompt",
        "----- system -----\nYou help.\n/// include: std/env\n----- user -----\n${q}\n",
    )
    assert run_promptc("build", cwd=tmp_path).returncode == 0
    done = run_promptc("render", "g", cwd=tmp_path)
    assert done.returncode == 1
    assert "is missing 6 inputs" in done.stderr
    assert "5 of them are the inputs of std/env: pass --std-inputs to fill them from this machine" in done.stderr
    with_flag = run_promptc("render", "g", "--std-inputs", cwd=tmp_path)
    assert with_flag.returncode == 1 and "missing 1 input: q" in with_flag.stderr
    assert "--std-inputs" not in with_flag.stderr


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("---- user -----", "4 dashes before the role, not five"),
        ("----- user ----", "4 dashes after the role, not five"),
        ("  ----- user -----", "indented"),
        ("-----user-----", "no space around the role"),
    ],
)
def test_a_mistyped_separator_is_an_error_not_a_merged_turn(line: str, why: str) -> None:
    result = compile_text(f"----- system -----\nYou help.\n{line}\nHi\n")
    assert result.artifact is None
    ((code, message, hint),) = [(d.code, d.message, d.hint) for d in result.diagnostics]
    assert code == "E406" and f"({why})" in message
    assert message.endswith("as text, the `user` turn it starts would be part of the `system` message above")
    assert hint.startswith("write `----- user -----`")


def test_a_prose_divider_stays_text_with_a_warning() -> None:
    result = compile_text("----- system -----\nExamples:\n--- User ---\nHi\n--- Notes ---\n")
    assert [d.code for d in result.diagnostics] == ["W404", "W404"] and result.artifact is not None
