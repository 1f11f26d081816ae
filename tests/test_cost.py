"""The price table, the cost model, `promptc cost` and `promptc diff --traffic` / `--fail-on cost>`.

Money is compared as the exact decimal strings promptc prints, worked out by hand from the
prices in promptc/data/prices.json and the token counts of the committed build."""

from __future__ import annotations

import json
import re
import shutil
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from promptc.tools import cost
from promptc.tools.cost import Price, PriceTable, PromptFacts, Unpriced, money, parse_fail_on_cost, prices, tree_cost

from .conftest import ROOT, run_promptc

TRAFFIC = {"support/chat": 12000, "helpdesk/agent": 800, "helpdesk/triage": 3000}


# ---------------------------------------------------------------------------------------------
# The price table


def test_every_price_is_sourced_dated_and_decimal() -> None:
    table = prices()
    assert table.path == "promptc/data/prices.json" and table.read_date == "2026-12-06"
    for provider, entry in table.document["providers"].items():
        for item in entry["prices"]:
            assert item["models"] and item["read"] <= "2026-12-06", item
            if item.get("price", True) is None:
                assert item["why"], item  # an unverified model says why it is not priced
                continue
            assert item["effective_from"] == "release" or date.fromisoformat(item["effective_from"]), item
            for value in [item["input"], item["cache_read"], *item["cache_write"].values()]:
                if value is not None:
                    assert isinstance(value, str) and Decimal(value) >= 0, (provider, item)


def test_rows_of_one_model_never_overlap_in_time_and_size() -> None:
    """For every model, at most one row is in force on any day for any prompt size: the lookup
    never has to choose between two prices."""
    rows: dict[tuple[str, str], list[dict]] = {}
    for provider, entry in prices().document["providers"].items():
        for item in entry["prices"]:
            for name in item["models"]:
                rows.setdefault((provider, name), []).append(item)
    for key, items in rows.items():
        for i, a in enumerate(items):
            for b in items[i + 1 :]:
                start = max(a["effective_from"].replace("release", ""), b["effective_from"].replace("release", ""))
                end = min(a.get("effective_until", "9999-12-31"), b.get("effective_until", "9999-12-31"))
                low = max(a.get("over_prompt_tokens", -1), b.get("over_prompt_tokens", -1))
                high = min(a.get("max_prompt_tokens", 10**12), b.get("max_prompt_tokens", 10**12))
                assert not (start < end and low < high), (key, a, b)


def test_anthropic_prices_follow_the_documented_multipliers() -> None:
    """5m write 1.25×, 1h write 2×, read 0.1× — except the read rates the newer model pages give
    (2.5% on Fable 5.1 / Mythos 5.1, 5% on Opus 5.5, and on Sonnet 5.5 since its cut of 2026-10-07)."""
    exceptions = {"claude-fable-5-1": "0.025", "claude-opus-5-5": "0.05"}
    for item in prices().document["providers"]["anthropic"]["prices"]:
        if item.get("price", True) is None:
            continue
        base = Decimal(item["input"])
        assert Decimal(item["cache_write"]["5m"]) == base * Decimal("1.25"), item["models"]
        assert Decimal(item["cache_write"]["1h"]) == base * 2, item["models"]
        read = Decimal(exceptions.get(item["models"][0], "0.1"))
        if item["models"][0] == "claude-sonnet-5-5" and item["effective_from"] == "2026-10-07":
            read = Decimal("0.05")
        assert Decimal(item["cache_read"]) == base * read, item["models"]


def test_gpt_5_6_prices_follow_the_documented_multipliers() -> None:
    """GPT-5.6: a 30-minute write is 1.25× the input rate, a read 0.1×; over 272K prompt tokens the
    whole request is priced at 2× the input rate."""
    for item in prices().document["providers"]["openai"]["prices"]:
        if not item["models"][0].startswith("gpt-5.6") or item.get("price", True) is None:
            continue
        base = Decimal(item["input"])
        assert Decimal(item["cache_write"]["30m"]) == base * Decimal("1.25"), item
        assert Decimal(item["cache_read"]) == base * Decimal("0.1"), item
        if "over_prompt_tokens" in item:
            (low,) = [
                other
                for other in prices().document["providers"]["openai"]["prices"]
                if other["models"] == item["models"]
                and other["effective_from"] == item["effective_from"]
                and "max_prompt_tokens" in other
            ]
            assert base == 2 * Decimal(low["input"]) and item["over_prompt_tokens"] == low["max_prompt_tokens"]


@pytest.mark.parametrize(
    ("model", "key"),
    [
        ("claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-opus-4-20250514", "claude-opus-4"),
        ("claude-opus-4-8", "claude-opus-4-8"),
        ("claude-opus-5-5", "claude-opus-5-5"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),  # the alias's dated snapshot (providers.json)
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4.1-2025-04-14", "gpt-4.1"),
        ("gpt-5.6-sol", "gpt-5.6-sol"),
        ("gpt-5.6", "gpt-5.6"),  # the alias the model page says routes to GPT-5.6 Sol
    ],
)
def test_a_model_matches_its_own_row_and_snapshot_suffixes(model: str, key: str) -> None:
    found = prices().lookup(None, model)
    assert not isinstance(found, Unpriced) and found.key == key


@pytest.mark.parametrize(
    ("model", "priced"),
    [
        ("anthropic.claude-sonnet-4-5", True),
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", True),  # Bedrock's snapshot and version
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", True),  # a cross-region inference profile
        ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("anthropic.claude-sonnet-4-5@20250929", True),  # Vertex's snapshot spelling
        ("anthropic.claude-sonnet-4-5-2025-09-29", True),
        ("anthropic.claude-sonnet-4-5-1-v1:0", False),
        ("anthropic.claude-sonnet-4-5-v1:0-20250929", False),  # the version comes last
        ("us.anthropic.claude-sonnet-4", False),
        ("anthropic.claude-sonnet-4-5-20250929x", False),
    ],
)
def test_snapshot_suffixes_and_region_prefixes(model: str, priced: bool) -> None:
    """A row's model name matches itself plus a snapshot date (`-20250929`, `-2025-09-29`,
    `@20250929`) and a Bedrock version (`-v1:0`), after an optional region prefix (`us.`,
    `global.`); nothing else."""
    row = {"models": ["anthropic.claude-sonnet-4-5"], "effective_from": "release", "input": "3"}
    row |= {
        "cache_write": {"5m": "3.75"},
        "cache_read": "0.30",
        "source": "https://example.invalid",
        "read": "2026-12-06",
    }
    table = PriceTable({"providers": {"bedrock": {"prices": [row]}}})
    found = table.lookup("bedrock", model)
    assert isinstance(found, Price) is priced, found


@pytest.mark.parametrize(
    "model",
    [
        "claude-fable-5-2",  # unverified: a row that says why, not Fable 5's price
        "claude-opus-4-9",  # not claude-opus-4's price by prefix
        "claude-sonnet-4-5-extended",
        "claude-sonnet-5-5-1",
        "gpt-5.3",
        "gpt-5.6-nova",
        "gpt-5-turbo",
        "gpt-4",
        "gemini-2.5-flash",
    ],
)
def test_unverified_or_unknown_models_are_not_priced_as_a_neighbour(model: str) -> None:
    found = prices().lookup(None, model)
    assert isinstance(found, Unpriced) and found.model == model


def test_openai_ttls_and_write_rates() -> None:
    sol = prices().lookup("openai", "gpt-5.6-sol")
    mini = prices().lookup("openai", "gpt-4o-mini")
    gpt55 = prices().lookup("openai", "gpt-5.5")
    assert sol.ttl(None) == "30m" and sol.write("30m") == sol.input * Decimal("1.25")
    assert mini.ttl("1h") == "5m" and mini.write("5m") == mini.input  # no write charge before GPT-5.6
    assert gpt55.ttl(None) == "24h" and prices().ttl_seconds["24h"] == 86400  # gpt-5.5 accepts only 24h retention


def test_the_price_in_force_at_the_moment_and_in_the_band_of_the_prompt() -> None:
    table = prices()
    sonnet = "claude-sonnet-5-5"
    assert table.lookup(None, sonnet, date(2026, 10, 6)).cache_read == Decimal("0.20")
    assert table.lookup(None, sonnet, date(2026, 10, 7)).cache_read == Decimal("0.10")
    sol = [
        table.lookup(None, "gpt-5.6-sol", day, 1000).input
        for day in (date(2026, 8, 20), date(2026, 9, 1), date(2026, 12, 1))
    ]
    assert sol == [Decimal("5.00"), Decimal("4.00"), Decimal("5.00")]
    haiku = [table.lookup(None, "claude-haiku-5-5", None, size).input for size in (100_000, 100_001)]
    assert haiku == [Decimal("0.10"), Decimal("0.50")]
    over = table.lookup(None, "gpt-5.4", None, 272_001)
    assert isinstance(over, Unpriced) and "over 272000 tokens" in over.reason


# ---------------------------------------------------------------------------------------------
# The cost model


def _facts(name: str, total: int, cached: int, model: str = "claude-sonnet-4-5", prefix: str = "a" * 64, ttl=None):
    return PromptFacts(name, model, None, total, prefix if cached else None, cached, cached, ttl)


def test_warm_cache_is_written_once_a_day_and_read_by_the_rest() -> None:
    # 1000 tokens, 900 cached, $3 input / $3.75 5m write / $0.30 read per MTok, 1000 requests/day
    # (one every 86.4 s, inside the 5-minute TTL): 1 write + 999 reads
    (p,) = tree_cost([_facts("a", 1000, 900)], {"a": 1000}).prompts
    assert p.warm is True
    assert money(p.request_write) == "0.003675"  # 900 × 3.75 + 100 × 3, per million
    assert money(p.request_hit) == "0.000570"  # 900 × 0.30 + 100 × 3
    assert money(p.day_with_cache) == "0.573105"  # 0.003675 + 999 × 0.000570
    assert money(p.day_without_cache) == "3.000000"


def test_traffic_slower_than_the_ttl_writes_every_time_and_costs_more_than_no_cache() -> None:
    (p,) = tree_cost([_facts("a", 1000, 900)], {"a": 100}).prompts  # one every 14.4 minutes > 5m
    assert p.warm is False
    assert p.day_with_cache > p.day_without_cache
    assert money(p.day_with_cache) == "0.367500"
    (hour,) = tree_cost([_facts("a", 1000, 900, ttl="1h")], {"a": 100}).prompts  # cache_ttl: 1h keeps it warm
    assert hour.warm is True and hour.ttl == "1h"


def test_prompts_sharing_a_prefix_share_one_cache_entry() -> None:
    alone = tree_cost([_facts("a", 1000, 900)], {"a": 1000}).day_with()
    shared = tree_cost([_facts("a", 1000, 900), _facts("b", 1000, 900)], {"a": 500, "b": 500}).day_with()
    assert shared == alone  # one write a day between them, not two


def test_library_takes_plain_numbers_and_prints_no_float_noise() -> None:
    tree = tree_cost([_facts("a", 3, 0, model="gpt-4.1-nano")], {"a": 0.1})
    assert tree.to_json()["prompts"][0]["per_day"]["with_cache"] == "0.000000"  # 0.1 × 3 × $0.10/MTok
    assert money(Decimal("0.1") + Decimal("0.2")) == "0.300000"


@pytest.mark.parametrize(
    ("text", "amount"), [("cost>5", "5"), ("cost>0.50", "0.50"), ("cost>$2", "2"), ("cost > 1", "1")]
)
def test_fail_on_cost_amounts(text: str, amount: str) -> None:
    assert parse_fail_on_cost(text).amount == Decimal(amount)


@pytest.mark.parametrize("text", ["cost", "cost>", "cost>abc", "cost>-1", "cost>nan", "cost<5"])
def test_fail_on_cost_rejects_malformed_amounts(text: str) -> None:
    with pytest.raises(ValueError):
        parse_fail_on_cost(text)


# ---------------------------------------------------------------------------------------------
# The commands, on this repository's own prompts


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository's prompts with the committed build kept as `old/`, then one word
    of the helpdesk identity changed and rebuilt: helpdesk/agent's 1,114-token prefix busts."""
    root = tmp_path_factory.mktemp("cost")
    for name in ("prompts_src", "build"):
        shutil.copytree(ROOT / name, root / name)
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    shutil.copytree(root / "build", root / "old")
    shutil.copy(root / "build/manifest.json", root / "main-manifest.json")  # a manifest without its artifacts
    identity = root / "prompts_src/helpdesk/_identity.prompt"
    identity.write_text(identity.read_text().replace("You are Aria, the", "You are Aria, the friendly"))
    assert run_promptc("build", "-q", cwd=root).returncode == 0
    (root / "traffic.json").write_text(json.dumps(TRAFFIC))
    return root


def test_cost_command_totals_the_tree(project: Path) -> None:
    result = run_promptc("cost", "--out", "old", "--traffic", "traffic.json", "--format", "json", cwd=project)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["command"] == "cost" and data["prices"] == {"table": "promptc/data/prices.json", "read": "2026-12-06"}
    agent = next(p for p in data["prompts"] if p["name"] == "helpdesk/agent")
    # 1,123 tokens, 1,114 cached for an hour (claude-sonnet-4-5: $3 / $6 1h write / $0.30 read)
    assert agent["per_request"] == {
        "without_cache": "0.003369",
        "cache_hit": "0.000361",
        "cache_write": "0.006711",
        "prices": "promptc/data/prices.json (read 2026-12-06)",
    }
    assert agent["per_day"]["with_cache"] == "0.295310"  # 0.006711 + 799 × 0.0003612
    assert data["summary"]["per_day"]["with_cache"] == "0.751910"
    assert data["summary"]["per_day"]["without_cache"] == "3.151800"
    chat = next(p for p in data["prompts"] if p["name"] == "support/chat")
    assert chat["cacheable_tokens"] == 0 and chat["stable_after_prefix_tokens"] == 47
    # support/chat: `${product}` holds its first section's 49 stable tokens, and 47 follow (W710's 96)
    assert [w["name"] for w in data["waste"]][:2] == ["support/chat", "agents/reviewer"]
    assert data["waste"][0]["stable_behind_placeholder_tokens"] == 49 and data["waste"][0]["placeholder"] == "product"
    text = run_promptc("cost", "--out", "old", cwd=project).stdout
    assert text.startswith("prices: promptc/data/prices.json (read 2026-12-06)")
    assert "not priced: agents/fixer (no model)" in text
    assert (
        "support/chat: 49 stable tokens held in a dynamic section by `${product}`, 47 more after it; even moved, "
        "the prefix stays under" in text
    )


def test_diff_traffic_reports_cost_per_day_and_the_deploy(project: Path) -> None:
    result = run_promptc("diff", "old", "--traffic", "traffic.json", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "cost (traffic: traffic.json; prices: promptc/data/prices.json (read 2026-12-06)):" in result.stdout
    assert "  per day: $0.751910 before → $0.752156 after (+$0.000246)" in result.stdout
    # the new 1,115-token prefix is written once at $6 instead of read at $0.30 per MTok
    assert "deploy: $0.006356 once" in result.stdout and "helpdesk/agent 1115 tokens" in result.stdout
    data = json.loads(run_promptc("diff", "old", "--traffic", "traffic.json", "--format", "json", cwd=project).stdout)
    assert data["cost"]["deploy"] == "0.006356" and data["cost"]["first_day"] == "0.006601"


def test_fail_on_cost_gates_ci(project: Path) -> None:
    over = run_promptc("diff", "old", "--traffic", "traffic.json", "--fail-on", "cost>0.005", cwd=project)
    assert over.returncode == 1 and "diff failed: cost>0.005" in over.stderr
    under = run_promptc("diff", "old", "--traffic", "traffic.json", "--fail-on", "cost>0.01", cwd=project)
    assert under.returncode == 0, under.stderr
    github = run_promptc(
        "diff", "old", "--traffic", "traffic.json", "--fail-on", "cost>0.005", "--format", "github", cwd=project
    )
    assert github.returncode == 1 and "::error title=promptc%3A cost::per day: $0.751910 before" in github.stdout
    bad = run_promptc("diff", "old", "--traffic", "traffic.json", "--fail-on", "cost>lots", cwd=project)
    assert bad.returncode == 2 and "is not an amount of dollars" in bad.stderr
    alone = run_promptc("diff", "old", "--fail-on", "cost>1", cwd=project)
    assert alone.returncode == 2 and "needs --traffic" in alone.stderr


def test_old_manifest_on_stdin_estimates_the_old_sizes(project: Path) -> None:
    manifest = (project / "old/manifest.json").read_text()
    result = run_promptc("diff", "-", "--traffic", "traffic.json", cwd=project, input=manifest)
    assert result.returncode == 0, result.stderr
    assert "estimated before (the old build's artifacts were not available)" in result.stdout
    assert "deploy: $0.006356 once" in result.stdout


@pytest.mark.parametrize(
    ("content", "code", "where"),
    [
        ('{"support/chat": 12000,}', "E945", ":1:24:"),
        ('["support/chat"]', "E946", ":1:1:"),
        ('{"support/chat": 12000,\n "helpdesk/agent": "lots"}', "E946", ":2:20:"),
        ('{"support/chat": -3}', "E946", ":1:18:"),
    ],
)
def test_a_bad_traffic_file_is_a_located_diagnostic_and_exit_2(project: Path, content: str, code: str, where: str):
    (project / "bad.json").write_text(content)
    result = run_promptc("diff", "old", "--traffic", "bad.json", cwd=project)
    assert result.returncode == 2
    assert re.search(rf"^bad\.json{where} error\[{code}\]", result.stderr, re.M), result.stderr
    assert "Traceback" not in result.stderr and "cost (" not in result.stdout
    missing = run_promptc("cost", "--traffic", "nowhere.json", cwd=project)
    assert missing.returncode == 2 and "nowhere.json:1:1: error[E945]" in missing.stderr


def test_an_unknown_prompt_in_the_traffic_is_a_warning(project: Path) -> None:
    (project / "typo.json").write_text('{"support/chatt": 5}')
    result = run_promptc("cost", "--traffic", "typo.json", cwd=project)
    assert result.returncode == 0
    assert "typo.json:1:2: warning[W947]" in result.stderr and "did you mean `support/chat`?" in result.stderr


def test_cost_of_a_missing_build_is_a_usage_error(tmp_path: Path) -> None:
    result = run_promptc("cost", "--out", "nothing", cwd=tmp_path)
    assert result.returncode == 2 and "run `promptc build` first" in result.stderr


def test_facts_of_a_manifest_without_artifacts_have_no_size() -> None:
    from promptc.runtime.model import Manifest

    manifest = Manifest.from_json(json.loads((ROOT / "build/manifest.json").read_text()))
    facts, artifacts = cost.facts_of_build(manifest, None)
    assert not artifacts and facts["helpdesk/agent"].total_tokens is None
    (p,) = [p for p in tree_cost(facts.values()).prompts if p.facts.name == "helpdesk/agent"]
    assert p.price is None and "request size unknown" in p.unpriced


def test_the_docs_diff_sample_is_what_promptc_prints(project: Path) -> None:
    """docs/cost.md's `diff --traffic` sample, run on this module's build (the same one-word
    change) instead of a build of its own in tests/test_docs_run.py."""
    doc = (ROOT / "docs/cost.md").read_text(encoding="utf-8")
    block = re.search(r"```console\n\$ promptc build -q && (promptc diff [^\n]*)\n(.*?)```", doc, re.S)
    assert block, "docs/cost.md has no diff sample"
    args = ["diff", "main-manifest.json", "--traffic", "traffic.json", "--fail-on", "cost>0.005"]
    assert block.group(1) == "promptc " + " ".join(args[:-1]) + " 'cost>0.005'"
    result = run_promptc(*args, cwd=project)
    assert result.returncode == 1
    assert (result.stdout + result.stderr).splitlines() == block.group(2).splitlines()


def test_cost_names_the_layout_where_one_placeholder_holds_a_whole_block(tmp_path: Path) -> None:
    """`${customer_name}` in the first line, thousands of stable tokens after it in the same block:
    the prefix is empty, W710 says so, and `promptc cost` lists the waste with the tokens W710
    counts, the placeholder to move, and (with traffic) the money per day."""
    from .conftest import write

    body = "You are the support assistant of the Acme store; answer from the policy below. " * 450
    write(
        tmp_path,
        "prompts_src/support.prompt",
        "/// param: model=claude-sonnet-4-5\n/// param: max_tokens=512\n----- system -----\n"
        f"Hello ${{customer_name}}. {body}\n----- user -----\n${{q}}\n",
    )
    built = run_promptc("build", cwd=tmp_path)
    assert built.returncode == 0, built.stdout
    w710 = re.search(r"cutting off (\d+) stable tokens", built.stdout)
    assert w710, built.stdout
    (tmp_path / "t.json").write_text('{"support": 5000}')
    done = run_promptc("cost", "--traffic", "t.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    line = next(l for l in done.stdout.splitlines() if l.startswith("  support:"))  # noqa: E741
    assert line.startswith(
        f"  support: {w710.group(1)} stable tokens held in a dynamic section by `${{customer_name}}`"
    )
    assert "with `${customer_name}` moved below them, " in line and "/day" in line
    data = json.loads(run_promptc("cost", "--format", "json", cwd=tmp_path).stdout)
    (waste,) = data["waste"]
    assert waste["name"] == "support" and waste["placeholder"] == "customer_name"
    assert waste["stable_behind_placeholder_tokens"] == int(w710.group(1)) and waste["cacheable_if_moved"] > 1024
