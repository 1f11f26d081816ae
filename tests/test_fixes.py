"""Diagnostics carry their suggestions as data (`Diagnostic.fixes`: a title and edits, like ruff's
Fix/Edit): applying a preferred fix makes the diagnostic go away; `--format json` and SARIF carry
the fixes; the incremental cache keeps them; the language server offers them as code actions
(`tests/test_lsp.py`), built from the data, never from the text of a hint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptc.compile import compile_text
from promptc.driver import build
from promptc.facts.config import Config
from promptc.facts.diagnostics import Diagnostic, Fix, render_sarif

from .conftest import run_promptc, write
from .test_sarif import validate

APPROX = Config(tokenizer="approx-bytes/4")


def apply(text: str, fix: Fix) -> str:
    """`text` with the fix's edits made (the edits' offsets are into the normalised text)."""
    for edit in sorted(fix.edits, key=lambda e: e.start, reverse=True):
        assert text[: edit.start].count("\n") + 1 == edit.line  # the offsets and lines agree
        text = text[: edit.start] + edit.text + text[edit.end :]
    return text


def diagnostic(text: str, code: str, **partials: str) -> Diagnostic:
    found = [d for d in compile_text(text, config=APPROX, partials=partials or None).diagnostics if d.code == code]
    assert len(found) == 1, found
    return found[0]


CASES = [
    # (source, code, fix title, the source the preferred fix makes)
    (
        "/// input: items\n{% for item in items %}- {{ itme }}\n{% endfor %}\n",
        "E501",
        "Replace `itme` with `item`",
        "/// input: items\n{% for item in items %}- {{ item }}\n{% endfor %}\n",
    ),
    ("/// sectoin: x\nText\n", "W303", "Replace `sectoin` with `section`", "/// section: x\nText\n"),
    ("/// max_tokens: 100\nText\n", "W303", "Write `/// param: max_tokens=100`", "/// param: max_tokens=100\nText\n"),
    ("/// Section: x\nText\n", "W303", "Write `/// section:`", "/// section: x\nText\n"),
    ("/// include _part\nText\n", "W303", "Write `/// include: _part`", "/// include: _part\nText\n"),
    ("----- usr -----\nHi\n", "E401", "Replace `usr` with `user`", "----- user -----\nHi\n"),
    ("/// role: assitant\nHi\n", "E305", "Replace `assitant` with `assistant`", "/// role: assistant\nHi\n"),
]


@pytest.mark.parametrize(("text", "code", "title", "fixed"), CASES)
def test_a_preferred_fix_makes_its_diagnostic_go_away(text: str, code: str, title: str, fixed: str) -> None:
    found = diagnostic(text, code)
    preferred = [fix for fix in found.fixes if fix.preferred]
    assert [fix.title for fix in preferred] == [title]
    assert apply(text, preferred[0]) == fixed
    again = compile_text(fixed, config=APPROX).diagnostics
    assert all(d.code != code for d in again), again


def test_an_undeclared_input_can_be_renamed_or_declared() -> None:
    """When the declaration nothing uses may hold the typo instead, neither fix is the one."""
    text = "/// input: question\n----- user -----\nQ: ${questoin}\n"
    rename, add = diagnostic(text, "E501").fixes
    assert (rename.title, rename.preferred) == ("Replace `questoin` with `question`", False)
    assert apply(text, rename) == "/// input: question\n----- user -----\nQ: ${question}\n"
    assert (add.title, add.preferred) == ("Add `questoin` to `/// input:`", False)
    assert apply(text, add) == "/// input: question, questoin\n----- user -----\nQ: ${questoin}\n"


def test_an_include_typo_is_fixed_only_to_a_path_that_resolves_as_written() -> None:
    partials = {"_identity.prompt": "I am.\n"}
    fix = diagnostic("/// include: _identty.prompt\nHi\n", "E801", **partials).fixes
    assert [f.title for f in fix] == ["Replace `_identty.prompt` with `_identity.prompt`"]

    assert not diagnostic("/// include: _nothing_close\nHi\n", "E801").fixes


def test_json_and_sarif_carry_the_fixes(project: Path) -> None:
    write(project, "prompts_src/w.prompt", "/// sectoin: x\nText\n")
    payload = json.loads(run_promptc("check", "--format", "json", "--tokenizer", "approx-bytes/4", cwd=project).stdout)
    (found,) = payload["diagnostics"]
    assert found["fixes"] == [
        {
            "title": "Replace `sectoin` with `section`",
            "edits": [{"line": 1, "col": 5, "end_line": 1, "end_col": 12, "text": "section"}],
            "preferred": True,
        }
    ]
    d = diagnostic("/// sectoin: x\nText\n", "W303")
    log = render_sarif([d], version="0")
    validate(log)
    (fix,) = log["runs"][0]["results"][0]["fixes"]
    assert fix["description"]["text"] == "Replace `sectoin` with `section`"
    (replacement,) = fix["artifactChanges"][0]["replacements"]
    assert replacement == {
        "deletedRegion": {"startLine": 1, "startColumn": 5, "endLine": 1, "endColumn": 12},
        "insertedContent": {"text": "section"},
    }


def test_the_incremental_cache_keeps_a_warnings_fixes(project: Path) -> None:
    write(project, "prompts_src/w.prompt", "/// sectoin: x\nText\n")
    config = Config(src=str(project / "prompts_src"), out=str(project / "build"), tokenizer="approx-bytes/4")
    first = build(config=config)
    second = build(config=config)
    assert second.prompts[0].reused
    assert [d.fixes for d in second.diagnostics] == [d.fixes for d in first.diagnostics] != [()]
