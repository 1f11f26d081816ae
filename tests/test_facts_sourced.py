"""Every provider fact and every price in compiler/data/ says where it was read and when.

What counts as a fact (the rule the files' `_comment`, docs/caching.md and docs/cost.md state):

- providers.json: every object that holds a `value` that is not null and not empty, a `by_model`
  table, a JSON `schema` (the request parameters), or a cache key's `identity` — the fact object
  owns what is nested in it (a `by_model` table, `sources_by_model`, a cache key's params), so
  the walk stops there; and every SDK's entry of `sdk_fields`. `{"value": null}` and
  `{"value": []}` record that a provider has no such thing and need no source. The `shapes` (how
  the pinned SDKs spell and serialise a call) are checked against those SDKs by
  tests/test_sdk_shapes.py, and each names its SDK in `body.sdk`.
- prices.json: every row of a provider's `prices` and every provider's `caching` object. A row
  with `price: null`, and a provider with no rows, record an absence: they carry `why` and `read`.

A fact carries `source` (a URL, or an SDK type: `sdk:NAME==VERSION path Type`) or `sources` (a
non-empty list of them), and `read`: the ISO date it was read, never in the future.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest

from .conftest import ROOT

DATA = ROOT / "compiler/data"
SOURCE = re.compile(r"(https://\S+|sdk:[a-z0-9-]+==[0-9][0-9a-z.]*( \S.*)?)\Z")


def _is_fact(node: dict[str, Any]) -> bool:
    value = node.get("value")
    has_value = "value" in node and value is not None and value != [] and value != {}
    return has_value or "by_model" in node or "schema" in node or "identity" in node


def provider_facts(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(JSON path, object) of every fact of providers.json, iteratively."""
    for sdk, entry in document.get("sdk_fields", {}).items():
        if not sdk.startswith("_"):
            yield f"sdk_fields.{sdk}", entry
    stack: list[tuple[str, Any]] = [(key, document[key]) for key in ("providers", "parameters")]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            if _is_fact(node):
                yield path, node
                continue
            stack.extend((f"{path}.{key}", child) for key, child in node.items() if not key.startswith("_"))
        elif isinstance(node, list):
            stack.extend((f"{path}[{i}]", child) for i, child in enumerate(node))


def price_facts(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], bool]]:
    """(JSON path, object, whether it records an absence) of every fact of prices.json."""
    for name, entry in document["providers"].items():
        if "caching" in entry:
            yield f"providers.{name}.caching", entry["caching"], False
        if not entry["prices"]:
            yield f"providers.{name}", entry, True
        for i, row in enumerate(entry["prices"]):
            yield f"providers.{name}.prices[{i}]", row, row.get("price", True) is None


def problems(path: str, node: dict[str, Any], absence: bool = False) -> list[str]:
    out = []
    read = node.get("read")
    try:
        day = date.fromisoformat(read) if isinstance(read, str) else None
    except ValueError:
        day = None
    if day is None:
        out.append(f"{path}: `read` must be the ISO date the fact was read, not {read!r}")
    elif day > date.today():
        out.append(f"{path}: `read` {read} is in the future")
    if absence:
        if not node.get("why"):
            out.append(f"{path}: an unpriced row or provider says `why`")
        return out
    sources = node.get("sources") or ([node["source"]] if "source" in node else [])
    if not sources:
        out.append(f"{path}: a fact needs `source` (a URL or an SDK type) or `sources`")
    for source in sources:
        if not isinstance(source, str) or not SOURCE.match(source):
            out.append(f"{path}: {source!r} is neither an https URL nor `sdk:NAME==VERSION path Type`")
    return out


def test_every_provider_fact_has_a_source_and_a_date() -> None:
    document = json.loads((DATA / "providers.json").read_text(encoding="utf-8"))
    found = list(provider_facts(document))
    assert len(found) > 30  # the walk reaches the facts (tokenizer, minimums, parameters, sdk_fields…)
    bad = [problem for path, node in found for problem in problems(path, node)]
    assert not bad, "\n".join(bad)


def test_every_price_has_a_source_and_a_date() -> None:
    document = json.loads((DATA / "prices.json").read_text(encoding="utf-8"))
    found = list(price_facts(document))
    assert len(found) > 40
    bad = [problem for path, node, absence in found for problem in problems(path, node, absence)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    ("node", "complaint"),
    [
        ({"value": 1024}, "needs `source`"),
        ({"value": 1024, "source": "https://example.invalid/x"}, "`read` must be"),
        ({"value": 1024, "source": "https://example.invalid/x", "read": "2999-01-01"}, "in the future"),
        ({"value": 1024, "source": "the docs", "read": "2026-12-06"}, "neither an https URL"),
        ({"by_model": {"x": 1}, "sources": [], "read": "2026-12-06"}, "needs `source`"),
    ],
)
def test_a_fact_without_a_source_or_a_date_is_refused(node: dict[str, Any], complaint: str) -> None:
    document = {"providers": {"p": {"min_cacheable_tokens": node, "cache_ttls": {"value": []}}}, "parameters": {}}
    found = list(provider_facts(document))
    assert [path for path, _ in found] == ["providers.p.min_cacheable_tokens"]  # `{"value": []}` is no fact
    assert any(complaint in problem for problem in problems(*found[0])), problems(*found[0])


def test_a_price_row_without_a_source_is_refused() -> None:
    row = {"models": ["m"], "effective_from": "release", "input": "1", "cache_write": {"5m": "1"}, "cache_read": None}
    document = {"providers": {"p": {"prices": [row, {"models": ["n"], "price": None, "read": "2026-12-06"}]}}}
    bad = [problem for path, node, absence in price_facts(document) for problem in problems(path, node, absence)]
    assert any("prices[0]: a fact needs `source`" in b for b in bad)
    assert any("prices[1]: an unpriced row or provider says `why`" in b for b in bad)
