"""Declared input types (`/// input: name: TYPE`): parsed at build, recorded as `input_schema`,
enforced at render, and used to parse `--var` values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptc import compile_text, load
from promptc.driver import build
from promptc.runtime.inputtypes import TypeSyntaxError, check_value, parse_type
from promptc.runtime.render import InputTypeError, MissingInputsError, render_artifact

from .conftest import run_promptc, write

TYPED = (
    "/// input: question: str, history: list[str], limit: int | None, scores: dict[str, float], vip: bool, note\n"
    "{% if vip %}VIP. {% endif %}${question} ({{ len(history) }}, ${limit}, {{ sorted(scores) }}, ${note})\n"
)


@pytest.mark.parametrize(
    ("text", "schema"),
    [
        ("str", {"type": "string"}),
        ("list[int]", {"type": "array", "items": {"type": "integer"}}),
        ("dict[str, bool]", {"type": "object", "additionalProperties": {"type": "boolean"}}),
        ("float | None", {"anyOf": [{"type": "number"}, {"type": "null"}]}),
        (
            "list[list[str] | None]",
            {"type": "array", "items": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}},
        ),
    ],
)
def test_types_are_json_schema(text: str, schema: dict) -> None:
    assert parse_type(text) == schema


@pytest.mark.parametrize(
    "text", ["lst[str]", "list[str", "dict[int, str]", "str str", "", "list[" * 40 + "str" + "]" * 40]
)
def test_bad_types_are_refused_with_a_position(text: str) -> None:
    with pytest.raises(TypeSyntaxError) as caught:
        parse_type(text)
    assert 0 <= caught.value.offset <= len(text)


def test_a_bad_type_is_a_located_e304() -> None:
    (d,) = compile_text("/// input: q: lst[str]\n${q}\n").diagnostics
    assert (d.code, d.line, d.col) == ("E304", 1, 15) and "unknown type `lst`" in d.message


def test_the_artifact_records_the_input_schema() -> None:
    artifact = compile_text(TYPED).artifact
    schema = artifact.input_schema
    assert schema["properties"]["history"] == {"type": "array", "items": {"type": "string"}}
    assert schema["properties"]["note"] == {}  # untyped: anything
    assert schema["required"] == ["history", "note", "question", "scores", "vip"]  # `limit` may be None


def test_render_checks_every_value_and_reports_all_problems_by_path() -> None:
    artifact = compile_text(TYPED).artifact
    good = {"question": "Q", "history": ["a"], "scores": {"x": 1.5}, "vip": True, "note": 7}
    assert render_artifact(artifact, good).messages[0]["content"] == "VIP. Q (1, None, ['x'], 7)"
    with pytest.raises(InputTypeError) as caught:
        render_artifact(artifact, {**good, "history": ["a", 2], "vip": "false", "limit": "3"})
    assert caught.value.problems == (
        "history[1]: expected a string, got 2",
        'limit: expected int | None, got "3"',
        'vip: expected true or false, got "false"',
    )
    with pytest.raises(MissingInputsError):
        render_artifact(artifact, {"question": "Q"})


def test_partials_declare_types_for_their_inputs() -> None:
    result = compile_text(
        "/// input: name\n/// include: _p\nHi ${name} {{ count + 1 }}\n",
        partials={"_p.prompt": "/// input: count: int\nPartial.\n"},
    )
    assert result.artifact.input_schema["properties"]["count"] == {"type": "integer"}
    assert check_value(result.artifact.input_schema["properties"]["count"], "1", "count")


def test_var_values_are_parsed_by_their_declared_type(tmp_path: Path) -> None:
    write(tmp_path, "prompts_src/p.prompt", TYPED)
    assert build(tmp_path / "prompts_src", tmp_path / "build").ok
    base = ["render", "p", "-o", "build", "--var", "question=Why?", "--var", "note=plain text"]
    done = run_promptc(
        *base, "--var", 'history=["a", "b"]', "--var", 'scores={"x": 2}', "--var", "vip=false", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["content"] == "Why? (2, None, ['x'], plain text)"  # vip=false is False
    wrong = run_promptc(*base, "--var", "history=[]", "--var", "scores={}", "--var", "vip=maybe", cwd=tmp_path)
    assert wrong.returncode == 2 and "`vip`: expected bool, got 'maybe'" in wrong.stderr
    with_file = tmp_path / "v.json"
    with_file.write_text(
        json.dumps({"question": "Q", "history": [], "scores": {}, "vip": True, "note": "n", "limit": 5})
    )
    done = run_promptc("render", "p", "-o", "build", "--vars", str(with_file), cwd=tmp_path)
    assert json.loads(done.stdout)[0]["content"] == "VIP. Q (0, 5, [], n)"
    assert load(tmp_path / "build").artifact("p").input_schema["required"][0] == "history"


@pytest.mark.parametrize(
    ("old", "new", "breaking"),
    [
        ("q: str", "q: str | None", False),  # wider
        ("q: str | None", "q: str", True),  # optional → required
        ("n: int", "n: float", False),  # an int is a float
        ("n: float", "n: int", True),  # narrower
        ("q", "q: str", True),  # untyped (anything) → typed
        ("q: list[str]", "q", False),  # typed → anything
        ("q: list[str]", "q: list[int]", True),
    ],
)
def test_diff_reports_type_changes_as_contract_changes(old: str, new: str, breaking: bool, tmp_path: Path) -> None:
    from promptc.tools.diff import diff_manifests

    manifests = []
    for index, declaration in enumerate((old, new)):
        name = declaration.split(":")[0]
        write(tmp_path, f"v{index}/prompts_src/p.prompt", f"/// input: {declaration}\nValue: {{{{ {name} }}}}\n")
        assert build(tmp_path / f"v{index}/prompts_src", tmp_path / f"v{index}/build").ok
        manifests.append(json.loads((tmp_path / f"v{index}/build/manifest.json").read_text()))
    (change,) = diff_manifests(*manifests).contracts
    assert len(change.type_changes) == 1 and change.breaking is breaking


def test_a_new_optional_input_does_not_break_callers(tmp_path: Path) -> None:
    from promptc.tools.diff import diff_manifests

    manifests = []
    for index, source in enumerate(("/// input: a\n${a}\n", "/// input: a, b: str | None\n${a} ${b}\n")):
        write(tmp_path, f"v{index}/prompts_src/p.prompt", source)
        assert build(tmp_path / f"v{index}/prompts_src", tmp_path / f"v{index}/build").ok
        manifests.append(json.loads((tmp_path / f"v{index}/build/manifest.json").read_text()))
    (change,) = diff_manifests(*manifests).contracts
    assert change.added_inputs == ("b",) and not change.breaking
