"""Bounded work in the placeholders pass: a section's inputs are collected in one pass over its
placeholders, whatever their number (40,000 distinct ones cost 77 s when each root was looked up
in the list of the roots before it). The benchmark (`bench/pathological.py`) times it; here the
work is counted, never timed."""

from __future__ import annotations

import pytest

from promptc.facts.config import Config
from promptc.facts.diagnostics import SourceText, Span
from promptc.passes.context import Context, SourceTree
from promptc.passes.placeholders import bind_placeholders
from promptc.syntax import nodes
from promptc.syntax.nodes import Document, Message, Placeholder, Section, Text

APPROX = Config(tokenizer="approx-bytes/4")


class _Counted(str):
    """A root that counts how often it is compared: a membership test in a list compares the
    root with every entry before it; one in a dict or a set compares only on a hash match."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        _Counted.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def _bound(paths: list[str]) -> Section:
    source = SourceText.of("p.prompt", "")
    span = Span(0, 0, 1, 1, source)
    items: list[nodes.Item] = []
    for path in paths:
        items += [Placeholder(path, span), Text(" ", span)]
    section = Section("body", None, "system", span, source, tuple(items))
    doc = Document(source, "p", messages=(Message("user", span, (section,)),))
    ctx = Context(APPROX, source, SourceTree(), None)  # type: ignore[arg-type]  # the pass loads no partial
    bound = bind_placeholders(doc, ctx).messages[0].sections[0]
    assert not ctx.diagnostics
    return bound


def test_collecting_a_sections_inputs_compares_each_root_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Placeholder, "root", property(lambda item: _Counted(item.path.split(".", 1)[0])))
    monkeypatch.setattr(_Counted, "compared", 0)
    count = 3_000
    bound = _bound([f"v{i}.x" for i in range(count)] + [f"v{i}" for i in range(count)])
    assert bound.inputs == tuple(f"v{i}" for i in range(count))
    assert _Counted.compared <= 2 * 2 * count  # a list compared each root with all before it: 9 million


def test_forty_thousand_distinct_placeholders_are_inputs_in_first_use_order() -> None:
    count = 40_000
    paths = [f"v{(i * 7919) % count}" for i in range(count)]  # every root once, not in name order
    bound = _bound([*paths, *(f"{path}.again" for path in reversed(paths))])
    assert bound.inputs == tuple(paths)
    assert len(bound.items) == 4 * count  # no define: every item is kept as it was
