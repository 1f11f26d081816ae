"""Properties of the type language and of the JSON reader: any text gets a type or a located
refusal (never another exception), types print back as written, and bad JSON is a diagnostic."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from promptc.runtime.inputtypes import TypeSyntaxError, check_value, describe, parse_type, predicate
from promptc.syntax.jsonfile import locate, read_json

from .conftest import examples

SCALARS = st.sampled_from(["str", "int", "float", "bool"])
TYPES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        inner.map(lambda t: f"list[{t}]"),
        inner.map(lambda t: f"dict[str, {t}]"),
        inner.map(lambda t: f"{t} | None"),
    ),
    max_leaves=6,
)


@settings(max_examples=examples(200), deadline=None)
@given(TYPES)
def test_types_print_back_as_written(text: str) -> None:
    schema = parse_type(text)
    assert parse_type(describe(schema)) == schema


@settings(max_examples=examples(300), deadline=None)
@given(st.text(alphabet="strintfloabdc[], |None_x", max_size=40))
def test_any_text_is_a_type_or_a_located_refusal(text: str) -> None:
    try:
        parse_type(text)
    except TypeSyntaxError as exc:
        assert 0 <= exc.offset <= len(text)


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=examples(200), deadline=None)
@given(TYPES, JSON_VALUES)
def test_checking_any_value_never_raises(text: str, value: object) -> None:
    problems = check_value(parse_type(text), value, "x")
    assert all(problem.startswith("x") for problem in problems)


SCHEMA_FILE_TYPES = st.sampled_from(
    [
        {"type": ["array", "object", "string"]},
        {"type": ["object", "null"], "properties": {"v": {}}, "required": ["v"]},
        {"enum": ["a", 1, None]},
        {"type": "array"},
        {"type": "array", "items": {"type": "integer"}, "title": "ids"},
        {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
        {"description": "anything"},
    ]
)


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(TYPES.map(parse_type), SCHEMA_FILE_TYPES), JSON_VALUES)
def test_the_render_paths_fast_predicate_agrees_with_check_value(schema: dict, value: object) -> None:
    assert predicate(schema)(value) == (check_value(schema, value, "x") == [])


@settings(max_examples=examples(300), deadline=None)
@given(st.text(alphabet='{}[]",:0123456789 abcnultre\\\n', max_size=60))
def test_any_json_text_is_a_value_or_a_located_diagnostic(text: str) -> None:
    import json

    src, value, diagnostics = read_json("t.json", text.encode())
    errors = [d for d in diagnostics if d.severity == "error"]
    try:
        expected = json.loads(text)
    except (ValueError, RecursionError):
        assert errors and all(d.code == "E821" for d in errors)
    else:
        if not errors:
            assert value == expected
        else:
            assert all(d.code == "E821" for d in errors)  # duplicate keys, too deep
    if src is not None:
        assert 0 <= locate(src.text, [0, "a", 1]) <= len(src.text)
