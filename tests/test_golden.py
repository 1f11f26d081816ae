"""Golden cases as data: tests/cases/<pass>/<case>.prompt next to <case>.expected.json.

Each case runs the pipeline up to its folder's pass and compares the document and diagnostics;
cases under `emit/` compare the whole artifact. Adding a case is adding two files. To write the
expected file of a new case, run `UPDATE_GOLDEN=1 pytest tests/test_golden.py` and read the result
before committing it.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from promptc.compile import compile_text
from promptc.facts.config import Config

from .golden import FOLDERS, run_until

CASES = Path(__file__).parent / "cases"


def _cases():
    for path in sorted(CASES.glob("*/*.prompt")):
        yield pytest.param(path, id=f"{path.parent.name}/{path.stem}")


def _partials(case: Path) -> dict[str, str]:
    extra = case.with_suffix(".partials.json")
    return json.loads(extra.read_text()) if extra.exists() else {}


def _config(case: Path) -> Config:
    extra = case.with_suffix(".config.json")
    values = json.loads(extra.read_text()) if extra.exists() else {}
    if "defines" in values:
        values["defines"] = tuple(sorted(values["defines"].items()))
    return Config(**values)


def _actual(case: Path) -> dict:
    text = case.read_text(encoding="utf-8")
    folder = case.parent.name
    if folder == "emit":
        result = compile_text(text, name=case.stem, partials=_partials(case), config=_config(case))
        return {
            "artifact": result.artifact.to_json() if result.artifact is not None else None,
            "diagnostics": [f"{d.path}:{d.line}:{d.col} {d.code} {d.message}" for d in result.diagnostics],
        }
    config = replace(_config(case), tokenizer="approx-bytes/4")
    return run_until(text, FOLDERS[folder], partials=_partials(case), config=config)


@pytest.mark.parametrize("case", list(_cases()))
def test_golden(case: Path) -> None:
    expected_path = case.with_suffix(".expected.json")
    actual = _actual(case)
    if os.environ.get("UPDATE_GOLDEN"):
        expected_path.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert expected_path.exists(), f"missing {expected_path.name}; run with UPDATE_GOLDEN=1 and review it"
    assert actual == json.loads(expected_path.read_text(encoding="utf-8"))


def test_every_pass_has_cases() -> None:
    folders = {p.name for p in CASES.iterdir() if p.is_dir() and any(p.glob("*.prompt"))}
    assert set(FOLDERS) | {"emit"} <= folders
