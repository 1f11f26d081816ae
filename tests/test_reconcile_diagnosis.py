"""`promptc reconcile` and the provider's own word on a request: the miss reason a record carries
(Anthropic's cache diagnostics, OpenAI's prompt_cache_diagnostics) is the cause of that miss, and
points at the part of the request it names; a reason that diagnoses nothing is said so; the writes
a provider splits by TTL are priced each at its TTL's write price; an entry lives as long as the
request asked, whatever TTLs the price row prices."""

from __future__ import annotations

import contextlib
import copy
import json
from decimal import Decimal
from pathlib import Path

import pytest

from promptc.driver import build
from promptc.driver.sources import read_tree
from promptc.facts.config import Config
from promptc.runtime.model import Artifact
from promptc.runtime.usage import USAGE_SCHEMA, UsageRecord, iso_timestamp, span_attributes
from promptc.tools.cost import PriceTable, prices
from promptc.tools.reconcile import ReadStats, SourceLocator, reconcile, record_of_span

from .conftest import run_promptc

STABLE = "\n".join(
    f"Policy {i}: answer from the article, cite it, never guess about {i * 7} plans." for i in range(140)
)
TOOL = [
    {
        "name": "lookup_invoice",
        "description": "Look up an invoice by its number and return its lines, totals and status.",
        "input_schema": {"type": "object", "properties": {"number": {"type": "string"}}, "required": ["number"]},
    }
]
PROMPTS = {
    # tools first, then the system prompt (line 5): Claude's cache order
    "cl": "/// param: model=claude-sonnet-4-5, max_tokens=100\n/// cache_ttl: 5m\n/// tools: tools/lookup.json\n"
    f"----- system -----\nYou are the billing assistant.\n{STABLE}\n----- user -----\n${{q}}\n",
    "hour": "/// param: model=claude-sonnet-4-5, max_tokens=100\n/// cache_ttl: 1h\n"
    f"----- system -----\nYou are the refunds assistant.\n{STABLE}\n----- user -----\n${{q}}\n",
    "gp": f"/// param: model=gpt-4o\n----- system -----\n{STABLE}\n----- user -----\n${{q}}\n",
    "rock": "/// param: model=us.anthropic.claude-sonnet-4-5-20250929-v1:0, max_tokens=100\n"
    f"----- system -----\nYou are the orders assistant.\n{STABLE}\n{STABLE.replace('Policy', 'Rule')}\n"
    "----- user -----\n${q}\n",  # twice as long: Bedrock's minimum for Claude Sonnet 4.5 is 4,096
    # GPT-6: no price the table can verify; its breakpoints are kept at least 30 minutes
    "six": f"/// param: model=gpt-6\n----- system -----\n{STABLE}\n----- user -----\n${{q}}\n",
}
T0 = 1_796_115_600.0  # 2026-12-01T09:00:00Z


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("diagnosis")
    src = root / "prompts_src"
    (src / "tools").mkdir(parents=True)
    (src / "tools" / "lookup.json").write_text(json.dumps(TOOL, indent=2))
    (root / "pyproject.toml").write_text('[tool.promptc]\nsrc = "prompts_src"\nout = "build"\n')
    for name, text in PROMPTS.items():
        (src / f"{name}.prompt").write_text(text)
    assert build(src, root / "build", Config()).ok
    return root


def _artifacts(root: Path) -> dict[str, Artifact]:
    return {name: Artifact.from_json(json.loads((root / f"build/{name}.json").read_text())) for name in PROMPTS}


class Day:
    """Records of one prompt, each with the classification it should get."""

    def __init__(self, artifact: Artifact, prompt: str) -> None:
        self.artifact, self.prompt = artifact, prompt
        self.items: list[tuple[UsageRecord, str]] = []

    @property
    def predicted(self) -> int:
        return self.artifact.cache.cacheable_tokens or 0

    def add(self, kind: str, start: float, *, read: int, written: int = 0, **extra) -> None:
        anthropic = self.artifact.provider.name != "openai"  # Claude: on its API or a platform
        record = {
            "schema": USAGE_SCHEMA,
            "prompt": self.prompt,
            "prefix_sha256": self.artifact.cache.prefix_sha256,
            "shape": "anthropic" if anthropic else "openai-responses",
            "provider": self.artifact.provider.name,
            "model": self.artifact.model,
            "started_at": iso_timestamp(start),
            "timestamp": iso_timestamp(start + 1.5),
            "input_tokens": self.predicted + 40,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written if anthropic else None,
            "output_tokens": 20,
            **extra,
        }
        self.items.append((UsageRecord.from_json(record), kind))


def _reconcile(project: Path, items, **options):
    seen: dict[int, str] = {}
    records = [(line, record) for line, (record, _) in enumerate(items, 1)]
    with contextlib.chdir(project):
        tree, _ = read_tree(Path("prompts_src"), Path("build"))
        result = reconcile(
            records,
            _artifacts(project),
            ReadStats(),
            locator=SourceLocator(tree, Config()),
            observe=lambda line, prompt, kind: seen.__setitem__(line, kind),
            **options,
        )
    return result, seen


def test_the_providers_diagnosis_is_the_cause_of_its_miss(project: Path) -> None:
    day = Day(_artifacts(project)["cl"], "cl")
    p = day.predicted
    # the first request of the entry is its first write, whatever the request before it was
    day.add("first-write", T0, read=0, written=p, cache_miss_reason="system_changed", cache_missed_input_tokens=p)
    day.add("hit", T0 + 60, read=p)
    day.add("dynamic", T0 + 120, read=0, written=p, cache_miss_reason="system_changed")
    # ten minutes on, longer than the 5m TTL: promptc's timeline would say `expired`, the provider
    # says the system prompt changed, and its word is the cause
    day.add("dynamic", T0 + 720, read=0, written=p, cache_miss_reason="system_changed")
    day.add("dynamic", T0 + 780, read=0, written=p, cache_miss_reason="tools_changed")
    # the request before went to another model: this one's model is the build's
    day.add("model", T0 + 840, read=0, written=p, cache_miss_reason="model_changed")
    day.add("hit", T0 + 900, read=p)
    # no diagnosis: the timeline classifies them, the detail says what the provider said
    day.add("expired", T0 + 1500, read=0, written=p, cache_miss_reason="previous_message_not_found")
    day.add("hit", T0 + 1560, read=p)
    day.add("dynamic", T0 + 1620, read=0, written=p, cache_miss_reason="pending")
    result, seen = _reconcile(project, day.items)
    assert seen == {line: kind for line, (_, kind) in enumerate(day.items, 1)}
    cl = result.prompts["cl"]
    assert cl.kinds == {"first-write": 1, "hit": 3, "dynamic": 4, "model": 1, "expired": 1}
    assert cl.causes["dynamic"].reasons == {"system_changed": 2, "tools_changed": 1, "pending": 1}
    assert cl.causes["dynamic"].diagnosed == 3
    dynamic = cl.details["dynamic"]
    assert "while the entry was warm" in dynamic  # one of them (pending) is the timeline's
    assert (
        "the provider's diagnosis: system_changed ×2 (the system prompt differs from the previous request's)" in dynamic
    )
    assert "tools_changed ×1 (the tools differ" in dynamic
    assert "not diagnosed: pending ×1 (the diagnosis was not finished when the response was written)" in dynamic
    # the part the most frequent diagnosis names: the system prompt, not the tools that come first
    # in the request (where a read of 0 tokens stops)
    assert cl.where["dynamic"].label() == "prompts_src/cl.prompt:5"
    assert cl.where["dynamic"].text == "You are the billing assistant."
    assert cl.details["model"].startswith("the provider's diagnosis: the previous request went to another model")
    assert "model_changed ×1" in cl.details["model"] and cl.where["model"].line == 1
    assert "not diagnosed: previous_message_not_found ×1 (the provider has no record" in cl.details["expired"]
    causes = {c["cause"]: c for c in result.to_json()["prompts"][0]["causes"]}
    assert causes["dynamic"]["provider_reasons"] == {"pending": 1, "system_changed": 2, "tools_changed": 1}
    assert causes["expired"]["provider_reasons"] == {"previous_message_not_found": 1}


def test_a_diagnosis_that_names_the_tools_points_at_them(project: Path) -> None:
    day = Day(_artifacts(project)["cl"], "cl")
    p = day.predicted
    day.add("first-write", T0, read=0, written=p)
    day.add("dynamic", T0 + 30, read=0, written=p, cache_miss_reason="tools_changed")
    result, seen = _reconcile(project, day.items)
    assert list(seen.values()) == ["first-write", "dynamic"]
    assert result.prompts["cl"].where["dynamic"].label() == "prompts_src/tools/lookup.json:1"
    assert "while the entry was warm" not in result.prompts["cl"].details["dynamic"]


def test_an_openai_diagnosis_is_a_cause_too(project: Path) -> None:
    day = Day(_artifacts(project)["gp"], "gp")
    p = day.predicted
    day.add("first-write", T0, read=0)
    day.add("hit", T0 + 60, read=p)
    day.add("dynamic", T0 + 1000, read=0, cache_miss_reason="input_changed", cache_missed_input_tokens=p)
    day.add("dynamic", T0 + 1060, read=0, cache_miss_reason="future_reason_the_sdk_adds")
    day.add("expired", T0 + 3000, read=0, cache_miss_reason="comparison_response_not_found")
    result, seen = _reconcile(project, day.items)
    assert seen == {line: kind for line, (_, kind) in enumerate(day.items, 1)}
    detail = result.prompts["gp"].details["dynamic"]
    assert "input_changed ×1 (the input differs from the compared response's)" in detail
    assert "future_reason_the_sdk_adds ×1" in detail
    assert "comparison_response_not_found ×1" in result.prompts["gp"].details["expired"]


def test_the_diagnosis_survives_an_opentelemetry_span(project: Path) -> None:
    day = Day(_artifacts(project)["cl"], "cl")
    day.add("x", T0, read=0, written=day.predicted, cache_miss_reason="tools_changed", cache_missed_input_tokens=2900)
    record = day.items[0][0]
    record = UsageRecord.from_json({**record.to_json(), "cache_creation_by_ttl": {"1h": 2000, "5m": 500}})
    span = {"name": "chat", "attributes": span_attributes(record), "start_time": T0, "end_time": T0 + 1.5}
    assert record_of_span(span) == record


def _stale(day: Day, by_ttl: dict[str, int]) -> tuple[UsageRecord, str]:
    """A record of another build (`stale`): what it lost is what it cost against a hit."""
    p = day.predicted
    return UsageRecord.from_json(
        {
            **day.items[0][0].to_json(),
            "prefix_sha256": "ee" * 32,
            "input_tokens": p + 40,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": p,
            "cache_creation_by_ttl": by_ttl,
        }
    ), "stale"


def test_ttl_split_writes_are_priced_each_at_its_ttl(project: Path) -> None:
    """claude-sonnet-4-5 (prices.json, prompts up to 200K tokens): input $3, writes $3.75 (5m) and
    $6 (1h), reads $0.30 per million. The TTL the build asked for (5m) prices what is not split."""
    day = Day(_artifacts(project)["cl"], "cl")
    day.add("first-write", T0, read=0)
    p = day.predicted
    rates = {"in": Decimal(3), "5m": Decimal("3.75"), "1h": Decimal(6), "read": Decimal("0.30")}
    hit = (40 * rates["in"] + p * rates["read"]) / 1_000_000
    for by_ttl, writes in (
        ({}, p * rates["5m"]),
        ({"1h": p}, p * rates["1h"]),
        ({"1h": 1000, "5m": 24}, 1000 * rates["1h"] + 24 * rates["5m"] + (p - 1024) * rates["5m"]),
    ):
        result, _ = _reconcile(project, [_stale(day, by_ttl)])
        observed = (40 * rates["in"] + writes) / 1_000_000
        assert result.prompts["cl"].lost == observed - hit, by_ttl


def test_an_entry_lives_as_long_as_the_request_asked(project: Path) -> None:
    """A price row without a price for the TTL the request carried prices its writes at the row's
    default, but the entry lives for the TTL asked for: 30 minutes after a write to a 1h entry is no
    expiry; two hours is, and the detail names the 1h TTL."""
    document = copy.deepcopy(prices().document)
    for row in document["providers"]["anthropic"]["prices"]:
        if "claude-sonnet-4-5" in row["models"]:
            row["cache_write"].pop("1h")
    table = PriceTable(document)
    day = Day(_artifacts(project)["hour"], "hour")
    p = day.predicted
    day.add("first-write", T0, read=0, written=p)
    day.add("dynamic", T0 + 1800, read=0, written=p)
    day.add("expired", T0 + 1800 + 7200, read=0, written=p)
    result, seen = _reconcile(project, day.items, table=table)
    assert list(seen.values()) == ["first-write", "dynamic", "expired"]
    assert "longer than its 1h TTL" in result.prompts["hour"].details["expired"]


def test_the_lifetime_is_the_one_the_model_keeps_its_entries(project: Path) -> None:
    """A model the price table cannot price still has a lifetime: GPT-6's breakpoints default to
    `30m` (providers.json `cache_ttls`, the SDK's PromptCacheBreakpoint.ttl), so a miss 20 minutes
    after the last use is no expiry (it was, at a guessed 5 minutes); 40 minutes is."""
    day = Day(_artifacts(project)["six"], "six")
    p = day.predicted
    assert p > 0
    day.add("first-write", T0, read=0)
    day.add("dynamic", T0 + 1200, read=0)
    day.add("expired", T0 + 1200 + 2400, read=0)
    result, seen = _reconcile(project, day.items)
    assert list(seen.values()) == ["first-write", "dynamic", "expired"]
    assert "longer than its 30m TTL" in result.prompts["six"].details["expired"]


def test_a_claude_platform_read_of_a_marker_is_a_hit(project: Path) -> None:
    """On Bedrock (and Vertex AI) Claude reads up to a cache point, as on the Claude API: something
    read and nothing written is a hit, whatever Claude's own count of the tokens."""
    day = Day(_artifacts(project)["rock"], "rock")
    assert day.artifact.provider.name == "bedrock"
    day.add("first-write", T0, read=0, written=day.predicted, shape="bedrock")
    day.add("hit", T0 + 60, read=day.predicted // 2, shape="bedrock")
    _, seen = _reconcile(project, day.items)
    assert list(seen.values()) == ["first-write", "hit"]


def test_the_command_prints_the_diagnosis(project: Path) -> None:
    day = Day(_artifacts(project)["cl"], "cl")
    p = day.predicted
    day.add("first-write", T0, read=0, written=p)
    day.add("dynamic", T0 + 30, read=0, written=p, cache_miss_reason="system_changed")
    (project / "usage.jsonl").write_text("".join(record.line() + "\n" for record, _ in day.items))
    done = run_promptc("reconcile", "usage.jsonl", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "cl: dynamic, 1 request" in done.stdout and "— prompts_src/cl.prompt:5" in done.stdout
    assert "the provider's diagnosis: system_changed ×1" in done.stdout


def test_the_reasons_a_cause_keeps_are_bounded(project: Path) -> None:
    """Records are data: a file naming a new reason on every line keeps MAX_REASONS of them."""
    from promptc.tools.reconcile import MAX_REASONS

    day = Day(_artifacts(project)["cl"], "cl")
    day.add("first-write", T0, read=0, written=day.predicted)
    for i in range(3 * MAX_REASONS):
        day.add("dynamic", T0 + 10 + i, read=0, written=day.predicted, cache_miss_reason=f"reason_{i}")
    result, _ = _reconcile(project, day.items)
    cause = result.prompts["cl"].causes["dynamic"]
    assert cause.requests == cause.diagnosed == 3 * MAX_REASONS
    assert len(cause.reasons) == MAX_REASONS and sum(cause.reasons.values()) == MAX_REASONS
