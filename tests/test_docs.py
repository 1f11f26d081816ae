"""Docs are part of the product: they must stay true."""

from __future__ import annotations

import re

from promptc.facts.codes import CODES, markdown

from .conftest import ROOT


def test_diagnostics_doc_is_generated_from_the_codes() -> None:
    examples = {p.stem: p.read_text(encoding="utf-8") for p in (ROOT / "compiler/data/diagnostics").glob("*.txt")}
    doc = (ROOT / "docs/diagnostics.md").read_text(encoding="utf-8")
    assert doc == markdown(examples), "run `python -m promptc.facts.codes > docs/diagnostics.md`"
    for code in CODES:
        assert f"## {code}:" in doc


def test_readme_shows_the_two_setup_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make build" in readme and "make test" in readme


def test_docs_only_mention_codes_that_exist() -> None:
    for path in (ROOT / "docs").glob("*.md"):
        for code in re.findall(r"\b[EW][1-9]\d\d\b", path.read_text(encoding="utf-8")):
            assert code in CODES, f"{path.name} mentions unknown code {code}"


def test_caching_doc_lists_every_minimum_of_the_profiles() -> None:
    from promptc.facts.profiles import data

    doc = (ROOT / "docs/caching.md").read_text(encoding="utf-8")
    for name, provider in data()["providers"].items():
        same = (provider.get("same_as") or {}).get("value")
        if same and provider["min_cacheable_tokens"] is data()["providers"][same]["min_cacheable_tokens"]:
            assert f"| {name} | every model | as {same} |" in doc  # a platform with the provider's minimums
            continue
        minimum = provider["min_cacheable_tokens"]
        for prefix, tokens in minimum.get("by_model", {}).items():
            assert f"| {name} | `{prefix}` | {tokens:,} |" in doc
        assert f"| {name} | any other model | {minimum['value']:,} |" in doc
