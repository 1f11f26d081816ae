"""Staying current: every caching field of the pinned SDKs' request types is modelled or
deliberately not used.

The test walks the request-parameter types of the SDK versions pyproject.toml pins — openai's
chat `CompletionCreateParams` and Responses `ResponseCreateParams`, anthropic's
`MessageCreateParams`, google-genai's `GenerateContentConfig` (a pydantic model) and botocore's
bedrock-runtime `Converse` input shape — through every type they reach (content parts, blocks,
tools, nested configs: iteratively, the types are recursive), and collects each field whose name
holds `cache`, `retention`, `breakpoint` or `diagnostics`. providers.json's `sdk_fields` must
name each one under `modelled` (where promptc models it) or `not_used` (why not). An SDK upgrade
that adds a caching feature fails here with the exact list to add, instead of leaving the proof
silently stale; a field the SDK no longer has fails with the list to remove."""

from __future__ import annotations

import sys
import typing
from collections import deque
from collections.abc import Callable, Iterable
from fnmatch import fnmatchcase
from typing import Any

import pytest
import typing_extensions

from promptc.facts.profiles import data

NEEDLES = ("cache", "retention", "breakpoint", "diagnostics")


def _concerns_caching(name: str) -> bool:
    return any(needle in name.lower() for needle in NEEDLES)


def _fields(tp: Any) -> list[tuple[str, Any]] | None:
    """(name, annotation) of a TypedDict's or a pydantic model's fields; None for anything else."""
    if isinstance(tp, type) and typing_extensions.is_typeddict(tp):
        module = sys.modules[tp.__module__]
        hints = typing.get_type_hints(tp, globalns=vars(module), include_extras=True)
        return sorted(hints.items())
    fields = getattr(tp, "model_fields", None)
    if isinstance(tp, type) and isinstance(fields, dict):
        return sorted((name, field.annotation) for name, field in fields.items())
    return None


def walk_types(roots: Iterable[Any]) -> set[str]:
    """`TypeName.field` of every caching field reachable from `roots`: breadth first over the
    fields' annotations and the arguments of every generic (Union, Optional, Iterable, Required,
    Annotated, Literal…), each type once (no recursion: the SDKs' types refer to themselves)."""
    found: set[str] = set()
    seen: set[Any] = set()
    queue: deque[Any] = deque(roots)
    while queue:
        tp = queue.popleft()
        try:
            key: Any = tp if isinstance(tp, type) else ("repr", repr(tp))
            if key in seen:
                continue
            seen.add(key)
        except TypeError:  # an unhashable annotation: walk it anyway (its arguments are few)
            pass
        fields = _fields(tp)
        if fields is not None:
            for name, annotation in fields:
                if _concerns_caching(name):
                    found.add(f"{tp.__name__}.{name}")
                queue.append(annotation)
            continue
        queue.extend(arg for arg in typing.get_args(tp) if not isinstance(arg, str | int | bool | bytes | None))
    return found


def walk_botocore(service: str, operation: str) -> set[str]:
    """`ShapeName.member` of every caching member reachable from an operation's input shape."""
    import botocore.session

    model = botocore.session.get_session().get_service_model(service)
    found: set[str] = set()
    seen: set[str] = set()
    queue: deque[Any] = deque([model.operation_model(operation).input_shape])
    while queue:
        shape = queue.popleft()
        if shape.name in seen:
            continue
        seen.add(shape.name)
        if shape.type_name == "structure":
            for name, member in sorted(shape.members.items()):
                if _concerns_caching(name):
                    found.add(f"{shape.name}.{name}")
                queue.append(member)
        elif shape.type_name == "list":
            queue.append(shape.member)
        elif shape.type_name == "map":
            queue.extend((shape.key, shape.value))
    return found


def _openai() -> set[str]:
    from openai.types.chat import completion_create_params
    from openai.types.responses import response_create_params

    return walk_types(
        [completion_create_params.CompletionCreateParamsBase, response_create_params.ResponseCreateParamsBase]
    )


def _anthropic() -> set[str]:
    from anthropic.types import message_create_params

    return walk_types([message_create_params.MessageCreateParamsBase])


def _genai() -> set[str]:
    from google.genai import types

    return walk_types([types.GenerateContentConfig])


def _botocore() -> set[str]:
    return walk_botocore("bedrock-runtime", "Converse")


SDKS: dict[str, tuple[str, Callable[[], set[str]]]] = {
    "openai": ("openai", _openai),
    "anthropic": ("anthropic", _anthropic),
    "google-genai": ("google-genai", _genai),
    "botocore": ("botocore", _botocore),
}


def _listed(entry: dict[str, Any]) -> dict[str, str]:
    return {**entry["modelled"], **entry["not_used"]}


@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_every_caching_field_of_the_sdk_is_modelled_or_deliberately_not_used(sdk: str) -> None:
    distribution, walk = SDKS[sdk]
    entry = data()["sdk_fields"][sdk]
    from importlib.metadata import version

    assert entry["sdk"] == f"{distribution}=={version(distribution)}", (
        f"providers.json sdk_fields.{sdk} was read from {entry['sdk']}, but {version(distribution)} is installed: "
        "walk the new version and update the list"
    )
    found = walk()
    listed = _listed(entry)
    unlisted = sorted(path for path in found if not any(fnmatchcase(path, pattern) for pattern in listed))
    assert not unlisted, (
        f"{sdk} {version(distribution)} has caching fields providers.json sdk_fields.{sdk} does not name; "
        "add each under `modelled` (where promptc models it) or `not_used` (why not):\n  " + "\n  ".join(unlisted)
    )
    stale = sorted(pattern for pattern in listed if not any(fnmatchcase(path, pattern) for path in found))
    assert not stale, f"sdk_fields.{sdk} names fields {sdk} no longer has; remove them:\n  " + "\n  ".join(stale)
    for path, why in listed.items():
        assert isinstance(why, str) and len(why) > 20, (sdk, path)
    for path, where in entry["modelled"].items():
        assert where.startswith(("runtime/", "facts/", "tools/", "backend/")), (sdk, path, where)


def test_the_walk_finds_a_field_a_new_sdk_would_add() -> None:
    """The walk itself: a caching field nested under a recursive type, a Union and an Iterable is
    found (and named by the type that declares it), and the recursion ends."""

    class Part(typing_extensions.TypedDict, total=False):
        text: str
        prompt_cache_breakpoint: dict[str, str]
        children: Iterable[Part]

    class Params(typing_extensions.TypedDict, total=False):
        messages: typing_extensions.Required[Iterable[str | Part]]
        extended_retention: typing.Optional[str]  # noqa: UP045 - the SDKs' own spelling

    globals().update(Part=Part, Params=Params)  # get_type_hints resolves the forward reference here
    try:
        assert walk_types([Params]) == {"Params.extended_retention", "Part.prompt_cache_breakpoint"}
    finally:
        del globals()["Part"], globals()["Params"]
