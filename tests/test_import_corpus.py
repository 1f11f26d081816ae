"""The done-when of `promptc import`: the Dotprompt and Prompty projects' own spec and example
fixtures and the Jinja corpus (tests/import_fixtures/) are imported with --check; every file is
either written and renders the same messages as its original engine on its inputs, or refused with
a located diagnostic. The counts are the table in docs/import.md, which this test keeps true."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from promptc.facts.config import Config
from promptc.tools.importers import import_tree

from .import_corpus import FIXTURES, dotprompt_spec_tree

ROOT = Path(__file__).resolve().parent.parent
APPROX = Config(tokenizer="approx-bytes/4")


def _corpora(tmp_path: Path):
    spec = tmp_path / "dotprompt-spec"
    inputs = dotprompt_spec_tree(spec)
    examples = tmp_path / "dotprompt-examples"
    shutil.copytree(FIXTURES / "dotprompt" / "examples", examples)
    return {
        "Dotprompt spec (`spec/**/*.yaml`, one prompt per entry)": ("dotprompt", spec, inputs),
        "Dotprompt examples (`examples/`)": ("dotprompt", examples, None),
        "Prompty fixtures, tests and docs examples": ("prompty", FIXTURES / "prompty", None),
        "Jinja corpus (written for promptc)": ("jinja", FIXTURES / "jinja", FIXTURES / "jinja" / "inputs.json"),
    }


def documented_counts() -> dict[str, tuple[int, int, int]]:
    """The table in docs/import.md: corpus → (files, imported, refused)."""
    text = (ROOT / "docs" / "import.md").read_text(encoding="utf-8")
    section = text.split("## Measured on the projects' own fixtures", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for m in re.finditer(r"^\| (.+?) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", section, re.M):
        rows[m.group(1)] = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
    return rows


@pytest.mark.slow
def test_every_file_is_imported_and_checked_or_refused_with_a_location(tmp_path: Path) -> None:
    counts = {}
    for label, (kind, src, inputs) in _corpora(tmp_path).items():
        out = tmp_path / "out" / kind / src.name
        result = import_tree(kind, src, out, check=True, inputs=inputs, config=APPROX)
        errors = [d for d in result.diagnostics if d.severity == "error"]
        assert all(re.fullmatch(r"E9[67]\d", d.code) for d in errors), [str(d) for d in errors]
        refused = {f.source for f in result.files if f.status == "refused"}
        for d in errors:  # a refusal points into the foreign file, at a line and column
            assert d.span is not None and d.line >= 1 and d.col >= 1, str(d)
        by_file = {Path(d.path).resolve() for d in errors}
        for source in refused:
            assert (src / source).resolve() in by_file, f"{source} refused without a diagnostic of its own"
        written = [f for f in result.files if f.status == "written"]
        for f in written:  # every written prompt was rendered by both engines and compared
            assert (out / f.target).is_file()
            if not f.partial:
                assert result.checked.get(f.target.removesuffix(".prompt"), 0) >= 1, f.target
        assert not any(d.code in ("E967", "E969", "E971") for d in errors), [
            str(d) for d in errors if d.code in ("E967", "E969", "E971")
        ]
        counts[label] = (len(result.files), len(written), len(refused))
        # importing again changes nothing
        again = import_tree(kind, src, out, config=APPROX)
        assert {f.status for f in again.files} <= {"unchanged", "refused"}
    assert counts == documented_counts(), counts
