"""Edge cases of the language where a diagnostic used to be wrong, missing, or in the wrong place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptc import compile_text
from promptc.runtime.render import render_artifact

from .conftest import run_promptc


def _codes(text: str, **kwargs) -> list[tuple[int, int, str]]:
    return [(d.line, d.col, d.code) for d in compile_text(text, **kwargs).diagnostics]


@pytest.mark.parametrize("tag", ["{% endif now %}", "{% endif x == 1 %}", "{%- endif (x) -%}"])
def test_anything_after_an_end_tag_is_an_error_at_the_tag(tag: str) -> None:
    assert _codes("Hi {% if a %}A" + tag) == [(1, 15, "E208")]


def test_a_mismatched_end_tag_is_reported_at_the_opening_tag() -> None:
    result = compile_text("Intro\n  {% for x in xs %}\n{{ x }}\n{% endif %}\n")
    (diagnostic,) = result.diagnostics
    assert (diagnostic.code, diagnostic.line, diagnostic.col) == ("E206", 2, 3)
    assert "closed by `{% endif %}` at 4:1" in diagnostic.message


@pytest.mark.parametrize(
    ("template", "inputs", "expected"),
    [
        ("\\{{{{ x }}", {"x": 1}, "{{1"),  # a literal `{{`, then a block
        ("\\${{{ x }}", {"x": 1}, "${1"),
        ("\\{%{% if x %}y{% endif %}", {"x": True}, "{%y"),
    ],
)
def test_no_e211_where_the_artifact_text_is_unambiguous(template: str, inputs: dict, expected: str) -> None:
    result = compile_text(template)
    assert result.diagnostics == () and result.artifact is not None
    assert render_artifact(result.artifact, inputs).messages[0]["content"] == expected


def test_e211_still_fires_where_the_text_is_ambiguous() -> None:
    assert [c for *_, c in _codes("A${brace}{{ x }}", defines={"brace": "{"})] == ["E211"]


def test_a_declared_input_used_as_a_helper_is_not_never_used() -> None:
    assert _codes("/// input: fmt, value\n{{ fmt(value) }}\n") == []
    assert [c for *_, c in _codes("/// input: fmt, value, spare\n{{ fmt(value) }}\n")] == ["W502"]


@pytest.mark.parametrize(
    "field",
    ["prefix_sha256", "prefix_tokens", "inputs", "sha256", "path", "source", "includes", "source_sha256"],
)
def test_diff_on_a_malformed_manifest_field_exits_2_with_a_message(tmp_path: Path, field: str) -> None:
    good = json.loads((Path(__file__).parent.parent / "build/manifest.json").read_text())
    bad = json.loads(json.dumps(good))
    bad["artifacts"]["support/chat"][field] = {"not": "right"}
    (tmp_path / "good.json").write_text(json.dumps(good))
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    done = run_promptc("diff", str(tmp_path / "bad.json"), str(tmp_path / "good.json"), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "support/chat" in done.stderr and field in done.stderr


@pytest.mark.parametrize(
    ("template", "where"),
    [
        ("/// input: other\n{{ 'name: ' + name }}\n", (2, 15)),  # not inside the string literal
        ("/// input: other\n{# note = 'name' #}{{ note + name }}\n", (2, 30)),
        ("/// input: other\n{% for name2 in xs %}{{ name }}{% endfor %}\n", (2, 25)),  # not in `name2`
    ],
)
def test_e501_points_at_the_use_not_at_the_first_match(template: str, where: tuple[int, int]) -> None:
    first = next(d for d in compile_text(template).diagnostics if d.code == "E501" and "`name`" in d.message)
    assert (first.line, first.col) == where, first


def test_e702_points_at_the_use() -> None:
    result = compile_text("/// section: rules stable\n{{ 'user: ' + user }}\n")
    assert [(d.code, d.line, d.col) for d in result.diagnostics] == [("E702", 2, 15)]


def test_a_builtin_output_as_a_value_warns_at_build_and_fails_at_render() -> None:
    from promptc.runtime.render import TemplateError

    result = compile_text("Ask: {{ input }}\n")
    assert [d.code for d in result.diagnostics] == ["W604"]
    assert result.artifact is not None and result.artifact.inputs == ()
    with pytest.raises(TemplateError, match=r"`\{\{ input \}\}` outputs a function"):
        render_artifact(result.artifact, {})
    assert compile_text("{# input = 'x' #}Ask: {{ input }}\n").diagnostics == ()  # assigned: a value


@pytest.mark.parametrize("value", [len, str, lambda: 1, object().__str__])
def test_a_function_or_a_class_is_never_rendered_as_text(value) -> None:
    from promptc.runtime.render import RenderError

    for template in ("Use ${tool}\n", "Use {{ tool }}\n"):
        artifact = compile_text(template).artifact
        assert artifact is not None
        with pytest.raises(RenderError, match="tool"):
            render_artifact(artifact, {"tool": value})


def test_a_user_message_empty_after_comments_still_receives_the_user_context() -> None:
    result = compile_text(
        "----- system -----\nRules.\n/// section: ctx user_context\nContext here.\n----- user -----\n/// only a comment\n"
    )
    assert [d.code for d in result.diagnostics] == []
    assert result.artifact is not None
    user = result.artifact.messages[1]
    assert user.role == "user" and "Context here." in user.content


def test_a_message_emptied_by_a_define_is_left_out_with_w403() -> None:
    result = compile_text("----- system -----\nRules.\n----- user -----\n${empty}\n", defines={"empty": ""})
    assert [d.code for d in result.diagnostics] == ["W403"]
    assert result.artifact is not None and [m.role for m in result.artifact.messages] == ["system"]


def test_a_define_with_blank_lines_leaves_trimmed_content() -> None:
    result = compile_text("${block}\n", defines={"block": "\n\nText.\n\n\n"})
    assert result.artifact is not None and result.artifact.messages[0].content == "Text."


@pytest.mark.parametrize(("intro", "disclaimer"), [("", ""), ("", "Careful."), ("Context:", "")])
def test_an_empty_intro_or_disclaimer_leaves_no_stray_blank_lines(intro: str, disclaimer: str) -> None:
    from promptc.facts.config import Config

    config = Config(tokenizer="approx-bytes/4", intro=intro, disclaimer=disclaimer)
    result = compile_text(
        "----- system -----\nR.\n/// section: ctx user_context\nCtx.\n----- user -----\nQ\n", config=config
    )
    assert result.artifact is not None
    content = result.artifact.messages[1].content
    assert content == "\n\n".join(part for part in (intro, "Ctx.", disclaimer, "Q") if part)
    assert "\n\n\n" not in content and not content.startswith("\n")


@pytest.mark.parametrize("name", ["user_context.intro", "user_context.disclaimer"])
def test_a_section_may_not_take_a_name_promptc_generates(name: str) -> None:
    result = compile_text(f"----- system -----\n/// section: {name}\nX\n----- user -----\nQ\n")
    assert [d.code for d in result.diagnostics] == ["E701"]
