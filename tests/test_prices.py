"""Dated, banded prices: `cost` and `reconcile` price a request at the row of prices.json in force
at its moment, in the size band of its prompt, and equal a brute-force per-request computation
written here from the raw rows (not from `PriceTable`); gpt-5.5's 24-hour retention is the lifetime
both use; a model the table does not price is W948 from every command that prints money."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptc.driver import build
from promptc.facts.config import Config
from promptc.runtime.model import Artifact
from promptc.runtime.usage import UsageRecord, iso_timestamp
from promptc.tools.cost import PromptFacts, money, prices, tree_cost
from promptc.tools.reconcile import ReadStats, reconcile

from .conftest import ROOT, run_promptc

RAW = json.loads((ROOT / "compiler/data/prices.json").read_text(encoding="utf-8"))
MTOK = Decimal(1_000_000)
DAY = 86400


# ---------------------------------------------------------------------------------------------
# The brute force: the raw rows, read here without promptc's lookup


def raw_row(provider: str, model: str, day: date, tokens: int) -> dict | None:
    """The row of `model` (one of its rows' exact names) in force on `day` for a prompt of
    `tokens` tokens: every condition spelled out on the JSON as docs/cost.md states it."""
    found = []
    for row in RAW["providers"][provider]["prices"]:
        if model not in row["models"]:
            continue
        start = row.get("effective_from")
        if start not in (None, "release") and day < date.fromisoformat(start):
            continue
        if "effective_until" in row and day >= date.fromisoformat(row["effective_until"]):
            continue
        if "max_prompt_tokens" in row and tokens > row["max_prompt_tokens"]:
            continue
        if "over_prompt_tokens" in row and tokens <= row["over_prompt_tokens"]:
            continue
        found.append(row)
    assert len(found) <= 1, (model, day, tokens, found)
    return found[0] if found and found[0].get("price", True) is not None else None


def raw_rates(row: dict, ttl: str | None) -> tuple[Decimal, Decimal, Decimal]:
    """(input, read, write) per token of a row, for the TTL `ttl` (the row's first when it has no
    price for it); no cached-input rate: reads and writes cost the input rate."""
    rate_in = Decimal(row["input"]) / MTOK
    if row["cache_read"] is None:
        return rate_in, rate_in, rate_in
    writes = row["cache_write"]
    key = ttl if ttl in writes else next(iter(writes))
    return rate_in, Decimal(row["cache_read"]) / MTOK, Decimal(writes[key]) / MTOK


def raw_ttl_seconds(row: dict, ttl: str | None) -> int:
    writes = row["cache_write"]
    return RAW["ttl_seconds"][ttl if ttl in writes else next(iter(writes))]


#: (provider, model) of rows that change over time or size, and plain ones
MODELS = [
    ("anthropic", "claude-sonnet-5-5"),  # read cut on 2026-10-07
    ("anthropic", "claude-haiku-5-5"),  # 100K band
    ("anthropic", "claude-sonnet-4-5"),  # 200K band
    ("anthropic", "claude-opus-4-8"),
    ("openai", "gpt-5.6-sol"),  # promotion 2026-08-21 – 2026-12-01, 272K band
    ("openai", "gpt-5.6-luna"),  # cut on 2026-07-30
    ("openai", "gpt-5.5"),  # 24h retention, 272K band
    ("openai", "gpt-5.5-pro"),  # no cached-input rate
    ("openai", "gpt-5.4"),  # nothing over 272K
    ("openai", "gpt-4o-mini"),
]
DAYS = st.dates(min_value=date(2026, 6, 1), max_value=date(2027, 3, 1))
SIZES = st.one_of(
    st.integers(min_value=1, max_value=400_000),
    st.sampled_from([100_000, 100_001, 200_000, 200_001, 272_000, 272_001]),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pick=st.sampled_from(MODELS),
    day=DAYS,
    total=SIZES,
    share=st.fractions(min_value=0, max_value=1),
    ttl=st.sampled_from([None, "5m", "1h", "30m", "24h"]),
    requests=st.integers(min_value=1, max_value=5000),
)
def test_cost_equals_the_brute_force_per_request_computation(pick, day, total, share, ttl, requests) -> None:
    provider, model = pick
    cached = int(total * share)
    facts = PromptFacts("p", model, provider, total, "a" * 64 if cached else None, cached, cached, ttl)
    (p,) = tree_cost([facts], {"p": Decimal(requests)}, at=day).prompts
    row = raw_row(provider, model, day, total)
    if row is None:
        assert p.price is None and p.unpriced
        return
    rate_in, rate_read, rate_write = raw_rates(row, ttl)
    uncached = total * rate_in
    hit = cached * rate_read + (total - cached) * rate_in
    write = cached * rate_write + (total - cached) * rate_in
    assert (p.request_uncached, p.request_hit, p.request_write) == (uncached, hit, write)
    # the day, request by request: evenly spaced, each a read when the entry is alive, else a write
    gap = Decimal(DAY) / requests
    lifetime = raw_ttl_seconds(row, ttl)
    spent = Decimal(0)
    last: Decimal | None = None
    for i in range(requests):
        moment = i * gap
        alive = cached and last is not None and moment - last <= lifetime
        spent += hit if alive else (write if cached else uncached)
        last = moment
    assert p.day_with_cache == spent
    assert p.day_without_cache == requests * uncached


def test_gpt_5_5_lives_24_hours_in_the_cost_model() -> None:
    """The issue's example: 24 requests a day to gpt-5.5, 1,950 tokens of which 1,920 cached. With
    the 5-minute lifetime of older models each request was a write ($0.234 a day); gpt-5.5 accepts
    only 24-hour retention, so one write and 23 reads."""
    facts = PromptFacts("p", "gpt-5.5", "openai", 1950, "a" * 64, 1920, 1920, None)
    (p,) = tree_cost([facts], {"p": 24}, at=date(2026, 12, 6)).prompts
    assert p.ttl == "24h" and p.warm is True
    assert money(p.day_without_cache) == "0.234000"  # 24 × 1,950 × $5
    assert money(p.day_with_cache) == "0.035280"  # 1,950 × $5 + 23 × (1,920 × $0.50 + 30 × $5)


# ---------------------------------------------------------------------------------------------
# reconcile: each record at its own moment and size

STABLE = "\n".join(f"Rule {i}: answer from the article, cite it, never guess about {i * 7} plans." for i in range(160))
PROMPTS = {
    "sonnet": ("claude-sonnet-5-5", "5m"),
    "sonnet_hour": ("claude-sonnet-5-5", "1h"),
    "haiku": ("claude-haiku-5-5", "1h"),
    "sol": ("gpt-5.6-sol", None),
    "gpt55": ("gpt-5.5", None),
}


@pytest.fixture(scope="module")
def priced_build(tmp_path_factory) -> dict[str, Artifact]:
    root = tmp_path_factory.mktemp("prices")
    src = root / "prompts_src"
    src.mkdir()
    for name, (model, ttl) in PROMPTS.items():
        head = f"/// param: model={model}, max_tokens=100\n" + (f"/// cache_ttl: {ttl}\n" if ttl else "")
        (src / f"{name}.prompt").write_text(f"{head}----- system -----\n{STABLE}\n----- user -----\n${{q}}\n")
    assert build(src, root / "build", Config()).ok
    return {name: Artifact.from_json(json.loads((root / f"build/{name}.json").read_text())) for name in PROMPTS}


def _record(artifact: Artifact, prompt: str, end: float, total: int, read: int, written: int, *, prefix=None):
    anthropic = artifact.provider.name == "anthropic"
    return UsageRecord(
        prompt=prompt,
        artifact_sha256=None,
        prefix_sha256=prefix or artifact.cache.prefix_sha256,
        shape="anthropic" if anthropic else "openai",
        provider=artifact.provider.name,
        model=artifact.model,
        timestamp=iso_timestamp(end),
        input_tokens=total,
        cache_read_input_tokens=read,
        cache_creation_input_tokens=written if anthropic else None,
        output_tokens=10,
        started_at=iso_timestamp(end - 1),
    )


RECORD = st.tuples(
    st.sampled_from(sorted(PROMPTS)),
    st.floats(
        min_value=datetime(2026, 6, 1, tzinfo=UTC).timestamp(), max_value=datetime(2027, 3, 1, tzinfo=UTC).timestamp()
    ),
    SIZES,
    st.fractions(min_value=0, max_value=1),
    st.fractions(min_value=0, max_value=1),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(drawn=st.lists(RECORD, min_size=1, max_size=12))
def test_reconcile_prices_each_record_at_its_moment_and_size(priced_build, drawn) -> None:
    """Records of a deploy the build does not have (`stale`: each one's loss is its own, what it
    cost against a hit of the predicted prefix) across price changes and size bands: the money lost
    equals the brute force per record from the raw rows."""
    records = []
    expected = Decimal(0)
    for line, (prompt, end, total, read_share, write_share) in enumerate(drawn, 1):
        artifact = priced_build[prompt]
        read = int(total * read_share)
        written = int((total - read) * write_share) if artifact.provider.name == "anthropic" else 0
        records.append((line, _record(artifact, prompt, end, total, read, written, prefix="ee" * 32)))
        day = datetime.fromtimestamp(end, UTC).date()
        row = raw_row(artifact.provider.name, artifact.model, day, total)
        if row is None:
            continue
        rate_in, rate_read, rate_write = raw_rates(row, artifact.cache.ttl)
        predicted = min(artifact.cache.cacheable_tokens or 0, total)
        observed = max(0, total - read - written) * rate_in + read * rate_read + written * rate_write
        hit = (total - predicted) * rate_in + predicted * rate_read
        expected += max(Decimal(0), observed - hit)
    result = reconcile(records, priced_build, ReadStats())
    assert result.lost == expected


def test_gpt_5_5_misses_after_30_minutes_are_not_expired(priced_build) -> None:
    """gpt-5.5 keeps its entries up to 24 hours: a miss 30 minutes after a write is text that
    changed (`dynamic`), not an entry past a 5-minute TTL; 25 hours later it is `expired`."""
    art = priced_build["gpt55"]
    predicted = art.cache.cacheable_tokens
    total = art.totals.tokens
    t0 = datetime(2026, 12, 6, 9, tzinfo=UTC).timestamp()
    records = [
        (1, _record(art, "gpt55", t0, total, 0, 0)),
        (2, _record(art, "gpt55", t0 + 1800, total, predicted, 0)),
        (3, _record(art, "gpt55", t0 + 3600, total, 0, 0)),
        (4, _record(art, "gpt55", t0 + 3600 + 25 * 3600, total, 0, 0)),
    ]
    result = reconcile(records, {"gpt55": art}, ReadStats())
    kinds = result.prompts["gpt55"].kinds
    assert kinds == {"first-write": 1, "hit": 1, "dynamic": 1, "expired": 1}
    assert "24h TTL" in result.prompts["gpt55"].details["expired"]


# ---------------------------------------------------------------------------------------------
# W948 from the commands that print money


@pytest.fixture(scope="module")
def unpriced_project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("unpriced")
    src = root / "prompts_src"
    src.mkdir()
    (root / "pyproject.toml").write_text('[tool.promptc]\nsrc = "prompts_src"\nout = "build"\n')
    (src / "new.prompt").write_text(
        f"/// param: model=claude-opus-4-9, max_tokens=50\n----- system -----\n{STABLE}\n----- user -----\n${{q}}\n"
    )
    (src / "old.prompt").write_text(
        f"/// param: model=claude-opus-4-8, max_tokens=50\n----- system -----\n{STABLE}\n----- user -----\n${{q}}\n"
    )
    assert run_promptc("build", "-q", cwd=root).returncode == 0
    (root / "traffic.json").write_text('{"new": 100, "old": 100}')
    return root


W948 = re.compile(r"prompts_src/new\.prompt:1:12: warning\[W948\]: `claude-opus-4-9` is not priced")


@pytest.mark.parametrize(
    "args",
    [
        ("cost",),
        ("cost", "--traffic", "traffic.json"),
        ("cost", "--advise", "--traffic", "traffic.json"),
        ("diff", "build", "--traffic", "traffic.json"),
        ("report", "-o", "report.html", "--traffic", "traffic.json"),
    ],
)
def test_a_model_the_table_does_not_price_is_w948_not_a_neighbours_price(unpriced_project: Path, args) -> None:
    result = run_promptc(*args, cwd=unpriced_project)
    assert result.returncode == 0, result.stderr
    assert len(W948.findall(result.stderr)) == 1, result.stderr
    assert "claude-opus-4-8" not in result.stderr  # the model next to it is priced, and not lent out


def test_reconcile_names_the_unpriced_model(unpriced_project: Path) -> None:
    art = Artifact.from_json(json.loads((unpriced_project / "build/new.json").read_text()))
    records = unpriced_project / "usage.jsonl"
    end = datetime(2026, 12, 6, tzinfo=UTC).timestamp()
    record = _record(art, "new", end, art.totals.tokens, 0, art.cache.cacheable_tokens)
    records.write_text(json.dumps(record.to_json()) + "\n")
    result = run_promptc("reconcile", "usage.jsonl", cwd=unpriced_project)
    assert len(W948.findall(result.stderr)) == 1, result.stderr
    data = json.loads(run_promptc("reconcile", "usage.jsonl", "--format", "json", cwd=unpriced_project).stdout)
    assert [d["code"] for d in data["diagnostics"]] == ["W948"]


def test_cost_at_prices_another_day(unpriced_project: Path, tmp_path: Path) -> None:
    """`--at DATE` prices at the rows in force that day; a malformed date is a usage error."""
    before = run_promptc("cost", "--at", "2026-09-01", "--format", "json", cwd=unpriced_project)
    data = json.loads(before.stdout)
    assert data["at"] == "2026-09-01"
    bad = run_promptc("cost", "--at", "2026-13-01", cwd=unpriced_project)
    assert bad.returncode == 2 and "is not a date" in bad.stderr


def test_the_table_lookup_is_the_one_every_caller_uses() -> None:
    """One lookup: the advice, the tree and reconcile read the same row for the same moment."""
    table = prices()
    on = date(2026, 9, 1)
    assert table.lookup("openai", "gpt-5.6-sol", on, 1000).input == Decimal("4.00")
    facts = PromptFacts("p", "gpt-5.6-sol", "openai", 1000, None, 0, 0, None)
    (p,) = tree_cost([facts], at=on).prompts
    assert p.request_uncached == 1000 * Decimal("4.00") / MTOK
