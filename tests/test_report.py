"""`promptc report`: the prefix tree, the bars, the diff view; one self-contained page, the same
bytes every time, every piece of prompt text escaped. The browser test is `test_report_browser.py`."""

from __future__ import annotations

import json
import re
from pathlib import Path

from promptc.runtime.model import Artifact
from promptc.tools.report import prefix_tree, report_html

from .conftest import ROOT, run_promptc, write


def _artifacts(folder: Path) -> dict[str, Artifact]:
    manifest = json.loads((folder / "manifest.json").read_text())
    return {
        name: Artifact.from_json(json.loads((folder / entry["path"]).read_text()))
        for name, entry in manifest["artifacts"].items()
    }


def test_the_prefix_tree_has_shared_trunks_and_splits() -> None:
    root = prefix_tree(_artifacts(ROOT / "build"))
    assert root.ends == ["support/chat"]  # its first block is dynamic: no prefix
    trunks = {tuple(child.prompts): child for child in root.children}
    agents = trunks[("agents/fixer", "agents/planner", "agents/reviewer")]
    # the shared identity: one edge of 399 tokens that all three agents end on
    assert agents.tokens == agents.cumulative == 399 and agents.ends == agents.prompts and not agents.children
    # the helpdesk identity with its tools: the whole prefix of agent and escalate alike, after the
    # cache identity (provider and model, no tokens of its own), which no other model shares
    agent = trunks[("helpdesk/agent", "helpdesk/escalate")]
    labels = [s.label for s in agent.segments]
    assert agent.cumulative == 1114 and labels[:2] == ["anthropic · claude-sonnet-4-5-20250929", "4 tools"]
    assert agent.ends == ["helpdesk/agent", "helpdesk/escalate"]


def test_report_page_is_self_contained_deterministic_and_shows_every_prompt(tmp_path: Path) -> None:
    first = run_promptc("report", "-o", str(tmp_path / "a.html"), cwd=ROOT)
    second = run_promptc("report", "-o", str(tmp_path / "b.html"), cwd=ROOT)
    assert first.returncode == 0 and second.returncode == 0, first.stderr
    assert first.stdout.strip() == f"report: 9 prompts → {tmp_path / 'a.html'}"
    page = (tmp_path / "a.html").read_bytes()
    assert page == (tmp_path / "b.html").read_bytes()
    text = page.decode()
    for name in json.loads((ROOT / "build/manifest.json").read_text())["artifacts"]:
        assert f'class="prompt" data-name="{name}"' in text
    # nothing loads from elsewhere: no external script, style, image, font or link
    assert not re.search(r"""(src|href)\s*=|<link|@import|url\(""", text)
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert text.count("<script>") == 1 and text.count("<style>") == 1


def test_prompt_text_is_escaped(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.promptc]\nsrc = 'src'\nout = 'out'\ntokenizer = 'approx-bytes/4'\n")
    write(tmp_path, "src/x.prompt", "/// section: rules stable\n</script><script>alert(1)</script> & <b>\n")
    assert run_promptc("build", "-q", cwd=tmp_path).returncode == 0
    assert run_promptc("report", "-o", "r.html", cwd=tmp_path).returncode == 0
    page = (tmp_path / "r.html").read_text()
    assert "alert(1)" in page and "<script>alert" not in page and "<b>" not in page
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page
    assert page.count("<script>") == 1 and page.count("</script>") == 1


def test_report_diff_view_highlights_busts_and_the_money(tmp_path: Path) -> None:
    artifacts = _artifacts(ROOT / "build")
    from promptc.tools.diff import CacheBust, ManifestDiff

    agent = artifacts["helpdesk/agent"]
    diff = ManifestDiff(busts=(CacheBust("helpdesk/agent", "f" * 64, agent.cache.prefix_sha256, 1000, 1114),))
    page = report_html(artifacts, diff=diff)
    assert 'class="prompt bust" data-name="helpdesk/agent"' in page
    assert '<tr class="bust"><td>helpdesk/agent</td>' in page and "1 cache bust, 1000 prefix tokens at stake" in page


def test_report_with_an_old_build_and_traffic(tmp_path: Path) -> None:
    (tmp_path / "t.json").write_text('{"helpdesk/agent": 800}')
    result = run_promptc(
        "report", "-o", str(tmp_path / "r.html"), "--old", "build", "--traffic", str(tmp_path / "t.json"), cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "r.html").read_text()
    assert "0 cache busts" in page and "deploy $0.000000 once" in page
    assert "prices: promptc/data/prices.json (read 2026-12-06)" in page
    assert "$0.295310" in page  # helpdesk/agent per day, as promptc cost prints it


def test_report_of_a_missing_build_is_a_usage_error(tmp_path: Path) -> None:
    result = run_promptc("report", "-o", "r.html", "--out", "nothing", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def _bar_of(page: str, name: str) -> str:
    start = page.index(f'data-name="{name}"><h3>')
    return page[start : page.index("</div>", start)]


def test_a_prefix_below_the_minimum_is_not_painted_as_the_cached_prefix() -> None:
    """The card says `cached 0 tokens`; the bar agrees: its prefix blocks are the uncached colour,
    titled with the provider's minimum, and none is `cached`."""
    artifacts = _artifacts(ROOT / "build")
    page = report_html(artifacts)
    below = sorted(n for n, a in artifacts.items() if a.cache.cacheable_tokens == 0 and a.cache.prefix_tokens > 0)
    cached = sorted(n for n, a in artifacts.items() if a.cache.cacheable_tokens)
    assert below and cached
    for name in below:
        bar = _bar_of(page, name)
        assert "cached 0 tokens" in bar and 'class="block cached"' not in bar
        assert 'class="block uncached"' in bar and "minimum of" in bar and "not cached" in bar
    for name in cached:
        assert 'class="block cached"' in _bar_of(page, name)
        assert 'class="block uncached"' not in _bar_of(page, name)


def test_the_cost_table_has_the_requests_per_day(tmp_path: Path) -> None:
    (tmp_path / "t.json").write_text('{"support/chat": 12000, "helpdesk/agent": 800}')
    result = run_promptc("report", "-o", str(tmp_path / "r.html"), "--traffic", str(tmp_path / "t.json"), cwd=ROOT)
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "r.html").read_text()
    cost = page[page.index('<section id="cost">') :]
    assert '<th class="num">requests/day</th>' in cost
    assert '<tr><td>support/chat</td><td class="num">12,000</td>' in cost
    assert '<tr><td>helpdesk/agent</td><td class="num">800</td>' in cost
