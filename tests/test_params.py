"""Request parameters typed by the provider profile (issue 25): `/// param:` values checked at
build against providers.json's `parameters` (E730 at the value), per shape and model family; the
table agrees with the types of the SDK versions pyproject.toml pins."""

from __future__ import annotations

import typing

import pytest

from promptc.backend.params import parameter_schema, parameters
from promptc.compile import compile_text
from promptc.facts.config import Config
from promptc.facts.profiles import data

APPROX = Config(tokenizer="approx-bytes/4")


def _errors(text: str, config: Config = APPROX) -> list:
    return [d for d in compile_text(text, name="p", config=config).diagnostics if d.code == "E730"]


def test_the_issues_params_are_errors_at_each_value():
    line = "/// param: model=gpt-4o-mini, temperature=hot, max_tokens=lots, top_p=2"
    errors = _errors(line + "\nHi\n")
    assert [(d.span.line, d.span.col, d.span.end - d.span.start) for d in errors] == [
        (1, line.index("hot") + 1, 3),
        (1, line.index("lots") + 1, 4),
        (1, line.index("top_p=2") + 7, 1),
    ]
    assert [d.message for d in errors] == [
        'param `temperature` for gpt-4o-mini (openai): expected a number, got "hot"',
        'param `max_tokens` for gpt-4o-mini (openai): expected an integer, got "lots"',
        "param `top_p` for gpt-4o-mini (openai): expected a number <= 1, got 2",
    ]
    assert "a number from 0 to 2" in errors[0].hint and "platform.openai.com" in errors[0].hint


def test_values_the_provider_takes_build():
    assert _errors('/// param: model=gpt-4o, temperature=0.2, top_p=1, stop=["a", "b"], seed=7\nHi\n') == []
    assert _errors("/// param: model=claude-sonnet-4-5, max_tokens=0, service_tier=auto\nHi\n") == []
    assert _errors("/// param: model=gemini-2.5-flash, temperature=2, top_k=40, candidate_count=1\nHi\n") == []


def test_ranges_differ_by_provider_and_model_family():
    assert _errors("/// param: model=gemini-2.5-flash, presence_penalty=2\nHi\n")  # [-2, 2)
    assert not _errors("/// param: model=gpt-4o, presence_penalty=2\nHi\n")  # [-2, 2]
    family = _errors("/// param: model=o3-mini, temperature=0.2\nHi\n")
    assert [d.message for d in family] == ["param `temperature` for o3-mini (openai): expected 1, got 0.2"]
    assert "o3… models take" in family[0].hint and "guides/reasoning" in family[0].hint
    assert _errors('/// param: model=claude-sonnet-4-5, max_tokens=9, service_tier="priority"\nHi\n')
    stops = '/// param: model=gpt-4o, stop=["a", "b", "c", "d", "e"]\nHi\n'
    assert [d.message for d in _errors(stops)] == [
        'param `stop` for gpt-4o (openai): expected str | list[str], got ["a", "b", "c", "d", "e"]'
    ]


def test_without_a_profile_only_a_value_no_provider_takes_is_refused():
    errors = _errors("/// param: temperature=hot, top_p=2, max_tokens=5, temperature_x=1\nHi\n")
    assert [d.message for d in errors] == [
        'param `temperature`: expected a number, got "hot", which no provider takes',
        "param `top_p`: expected a number <= 1, got 2, which no provider takes",
    ]
    assert _errors("/// param: temperature=1.5\nHi\n") == []  # openai and gemini take up to 2


def test_every_entry_is_sourced_and_dated():
    for shape, entries in parameters().items():
        assert set(entries) == set(data()["shapes"][shape]["params"]), shape
        for name, entry in entries.items():
            assert entry["source"].startswith("https://") and entry["read"], (shape, name)
            assert entry["sdk"], (shape, name)
            if "by_model" in entry:
                assert entry["by_model_source"].startswith("https://")
    schema, _, family = parameter_schema("openai", "temperature", "gpt-5-mini")
    assert (schema, family) == ({"const": 1}, "gpt-5")


def _sdk_fields(shape: str) -> dict[str, object]:
    if shape == "anthropic":
        from anthropic.types.message_create_params import MessageCreateParamsBase

        return typing.get_type_hints(MessageCreateParamsBase)
    if shape == "openai":
        from openai.types.chat.completion_create_params import CompletionCreateParamsBase

        return typing.get_type_hints(CompletionCreateParamsBase)
    if shape == "openai-responses":
        from openai.types.responses.response_create_params import ResponseCreateParamsBase

        return typing.get_type_hints(ResponseCreateParamsBase)
    from google.genai.types import GenerateContentConfig

    return {name: field.annotation for name, field in GenerateContentConfig.model_fields.items()}


def _leaves(annotation: object) -> list[object]:
    """The types an annotation admits, with Optional, Required and aliases unwrapped."""
    out, stack = [], [annotation]
    while stack:
        item = stack.pop()
        origin = typing.get_origin(item)
        if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)) or str(origin).endswith(
            ("Required", "NotRequired")
        ):
            stack.extend(typing.get_args(item))
        else:
            out.append(item)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["anthropic", "openai", "openai-responses", "gemini"])
def test_the_types_agree_with_the_pinned_sdks(shape: str):
    """Scalars are the SDK's scalars (int, float, bool, str) and enums its Literal values."""
    native = data()["shapes"][shape]["params"]
    fields = _sdk_fields(shape)
    kinds = {int: "integer", float: "number", bool: "boolean", str: "string"}
    for name, entry in parameters()[shape].items():
        annotation = fields[native[name]]
        leaves = [leaf for leaf in _leaves(annotation) if leaf is not type(None)]
        literals = {v for leaf in leaves if typing.get_origin(leaf) is typing.Literal for v in typing.get_args(leaf)}
        schema = entry["schema"]
        if "enum" in schema:
            assert set(schema["enum"]) == literals, (shape, name, literals)
        elif schema.get("type") in kinds.values():
            expected = {kinds[leaf] for leaf in leaves if leaf in kinds}
            assert schema["type"] in expected, (shape, name, annotation)


def test_remembered_checks_tell_equal_values_of_other_types_apart():
    """The checks of scalar values are remembered per (schema, name, type, value): `1`, `1.0`
    and `True` hash alike but are checked each as itself."""
    from promptc.backend import params

    schema = {"type": "integer", "minimum": 0, "maximum": 2}
    params._CHECKED.clear()
    for _ in range(2):  # the second time from what was remembered
        assert params._problems(schema, 1, "n") == []
        assert params._problems(schema, 1.5, "n") != []
        assert params._problems(schema, True, "n") != []  # a boolean is no integer in JSON Schema
        assert params._problems(schema, 3, "n") != []
    assert params._problems({"type": "boolean"}, 1, "n") != []  # another schema, the same value
