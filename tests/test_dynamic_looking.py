"""W706's finder (`passes.sections.dynamic_looking`): its cheap hints skip a pattern's search only
where that pattern cannot match."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from promptc.passes import sections
from promptc.passes.sections import DYNAMIC_LOOKING, dynamic_looking

from .conftest import examples

FRAGMENTS = [
    "2024-05-17",
    "2024-13-01",
    "2023-11-30 08:15",
    "1999-01-31T23:59:59Z",
    "12:34:56",
    "9:99:99",
    "550e8400-e29b-41d4-a716-446655440000",
    "deadbeef-dead-beef-face-decafbadface",
    "0123456789abcdef0",
    "0123456789abcdef",
    "550E8400-E29B-41D4-A716-446655440000",
    "abcdefabcdefabcdef",
    "1712345678",
    "1712345678123",
    "/home/alice",
    "/Users/bob.smith",
    "C:\\Users\\carol",
    "-0",
    "-1",
    ":5",
    ":",
    "-",
    "a",
    "f",
    "7",
    "٣",  # an Arabic-Indic digit: `\d` matches it
    "é",
    " ",
    "\n",
    "x",
]


def _reference(text: str) -> list[tuple[int, int, str]]:
    """What dynamic_looking finds when every pattern searches every text."""
    saved = sections._HINTS
    sections._HINTS = (None,) * len(DYNAMIC_LOOKING)
    try:
        return dynamic_looking(text)
    finally:
        sections._HINTS = saved


@settings(max_examples=examples(1500), deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), max_size=16).map("".join))
def test_the_hints_never_hide_a_finding(text):
    assert dynamic_looking(text) == _reference(text)


def test_each_kind_is_still_found():
    text = " and ".join(["2024-05-17", "12:34:56", "deadbeef-dead-beef-face-decafbadface", "0123456789abcdef"])
    text += " ".join(["", "1712345678", "/home/alice", "C:\\Users\\carol"])
    found = {what for _, _, what in dynamic_looking(text)}
    assert found == {what for what, _, _ in DYNAMIC_LOOKING}
