"""`--format markdown` (`promptc check`, `promptc diff`): reports for a pull request's job summary or
a comment, in which every name and message from a source is text, never markup."""

from __future__ import annotations

import re

from promptc.facts import codes
from promptc.facts.diagnostics import make, markdown_escape, render_markdown
from promptc.tools.diff import CacheBust, ContractChange, ManifestDiff
from promptc.tools.diff import render_markdown as render_diff
from tests.conftest import run_promptc

EVIL = "<img src=x onerror=alert(1)>|[click](javascript:alert(1)) @team **bold** `x`\n# heading"


def _unescaped(text: str) -> list[str]:
    """Markup characters not preceded by a backslash (outside the report's own table pipes)."""
    return re.findall(r"(?<!\\)[<>\[\]@*`#]", text)


def test_markdown_escape_leaves_no_markup() -> None:
    escaped = markdown_escape(EVIL)
    assert "\n" not in escaped and _unescaped(escaped) == []
    assert "|" not in escaped.replace("\\|", "")


def test_a_diagnostic_table_row_stays_one_row() -> None:
    d = make(codes.UNDECLARED_INPUT, f"input `{EVIL}` used", path="prompts_src/a|b.prompt", hint="did you mean `x`?")
    report = render_markdown([d], "promptc check", files=1)
    lines = report.splitlines()
    assert lines[0] == "### promptc check: 1 error, 0 warnings in 1 file"
    row = next(line for line in lines if line.startswith("| ❌ error"))
    assert row.count("|") - row.count("\\|") == 5  # four cells
    assert "<br>hint: did you mean \\`x\\`?" in row.replace("\\?", "?")


def test_the_diff_report_tables() -> None:
    diff = ManifestDiff(
        busts=(CacheBust(EVIL, "a" * 64, "b" * 64, 1200, 40, "anthropic", 1200, 0),),
        contracts=(ContractChange("support", ("customer",), ()),),
        added=("new_one",),
    )
    report = render_diff(diff, ["contract"], ["cost: +$1.20 per day"], title="promptc diff against origin/main")
    assert report.startswith("### promptc diff against origin\\/main\n\n❌ **fails**: contract")
    bust = next(line for line in report.splitlines() if "img" in line)
    assert bust.endswith("| 1,200 | 1,200 \\(anthropic\\) | 40 | — |") and _unescaped(bust) == []
    assert "| support | customer | — | — | **yes** |" in report
    assert "#### Cost\n\n- cost\\: \\+\\$1\\.20 per day" in report
    assert "#### Added prompts (1)\n\nnew\\_one" in report


def test_check_format_markdown_from_the_command(tmp_path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.promptc]\n")
    (tmp_path / "prompts_src").mkdir()
    (tmp_path / "prompts_src" / "a.prompt").write_text("/// input: q\n----- user -----\n${qq}\n")
    done = run_promptc("check", "--format", "markdown", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.startswith("### promptc check: 1 error, 1 warning in 1 file\n\n| | where | code | message |")
    assert "| ❌ error | prompts\\_src\\/a\\.prompt\\:3\\:1 | E501 |" in done.stdout
