"""Directive lists (`/// tag: a, b`, `/// param: k=v, …`): split on the commas outside quotes and
brackets, each piece with its offset; `typed_value` reads a JSON literal."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from promptc.passes.directives import split_list_at, typed_value

from .conftest import examples


def _reference(value: str) -> list[tuple[str, int]]:
    """The one-character-at-a-time reading (quotes with backslash escapes, bracket depth)."""
    parts: list[tuple[str, int]] = []
    depth, quote, escaped, start = 0, "", False, 0

    def piece(end: int) -> None:
        raw = value[start:end]
        if raw.strip():
            parts.append((raw.strip(), start + len(raw) - len(raw.lstrip())))

    for index, ch in enumerate(value):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            piece(index)
            start = index + 1
    piece(len(value))
    return parts


@settings(max_examples=examples(1000), deadline=None)
@given(
    st.lists(st.sampled_from([",", " ", "\t", "a", "x=1", '"', "'", "[", "]", "{", "}", "(", ")", "\\"]), max_size=14)
)
def test_split_list_at_reads_as_one_character_at_a_time(pieces):
    value = "".join(pieces)
    assert split_list_at(value) == _reference(value)


def test_typed_values_are_their_own_each_time():
    assert typed_value("0.2") == 0.2 and typed_value("0.2") == 0.2
    assert typed_value("1") == 1 and type(typed_value("1")) is int
    assert typed_value("1.0") == 1.0 and type(typed_value("1.0")) is float
    assert typed_value("true") is True and typed_value("gpt-4o") == "gpt-4o"
    first = typed_value('["a", "b"]')
    first.append("changed")  # a container is never shared
    assert typed_value('["a", "b"]') == ["a", "b"]
