"""`promptc cost --advise`: the TTL it picks is the brute-force minimum of promptc's own cost model
(on random traffic: requests per day, and request timestamps), and `--write` changes a prompt's
`/// cache_ttl:` line and nothing else."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from promptc.tools.cost import NO_CACHE, PromptFacts, advise, prices, tree_cost, with_cache_ttl
from promptc.tools.fmt import layout

from .conftest import ROOT, examples, run_promptc

MODELS = ("claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1", "gpt-4o", "gpt-4.1-mini", "gpt-5.6-terra")
TTL_ORDER = (NO_CACHE, "5m", "30m", "1h")


def _facts(name: str, model: str, ttl: str | None, total: int, cached: int, prefix: str = "a" * 64) -> PromptFacts:
    from promptc.facts.profiles import provider_of_model

    return PromptFacts(
        name,
        model,
        provider_of_model(model),
        total,
        prefix,
        cached,
        cached,
        ttl,
        0,
        f"{name}.prompt",
        1024,
        None,
    )


@st.composite
def groups(draw):
    """1–3 prompts sharing one cache entry (one model, one prefix), each with its own TTL and size."""
    model = draw(st.sampled_from(MODELS))
    cached = draw(st.integers(1024, 60_000))
    count = draw(st.integers(1, 3))
    ttls = [None, "5m", "1h", NO_CACHE] if model.startswith("claude") else [None]
    members = []
    for i in range(count):
        ttl = draw(st.sampled_from(ttls))
        f = _facts(f"p{i}", model, ttl, cached + draw(st.integers(0, 5_000)), cached)
        # a prompt built with `cache_ttl: none` counts nothing as cached; its prefix is still there
        members.append(replace(f, cacheable_tokens=0) if ttl == NO_CACHE else f)
    return members


def _choices(f: PromptFacts) -> list[str]:
    price = prices().lookup(f.provider, f.model)
    ttls = [name for name, _ in price.cache_write]
    return [NO_CACHE, *ttls] if f.provider == "anthropic" else ttls


def _pick(costs: dict[str, Decimal], current: str) -> str:
    return min(costs, key=lambda ttl: (costs[ttl], ttl != current, TTL_ORDER.index(ttl)))


def _current(members: list[PromptFacts]) -> str:
    price = prices().lookup(members[0].provider, members[0].model)
    owned = {f.ttl if f.ttl == NO_CACHE else price.ttl(f.ttl) for f in members}
    return owned.pop() if len(owned) == 1 else "mixed"


@settings(max_examples=examples(300))
@given(
    groups(), st.lists(st.sampled_from([0.5, 1, 3, 12, 23, 24, 25, 100, 287, 288, 289, 5000]), min_size=3, max_size=3)
)
def test_advise_picks_the_cost_models_minimum_for_requests_per_day(members, counts) -> None:
    traffic = {f.name: Decimal(str(c)) for f, c in zip(members, counts, strict=False)}
    (advice,) = advise(members, traffic)
    costs = {}
    for ttl in _choices(members[0]):
        # brute force: the whole tree priced by promptc's cost model with every prompt at that TTL
        at = [
            replace(f, cacheable_tokens=0) if ttl == NO_CACHE else replace(f, ttl=ttl, cacheable_tokens=f.prefix_tokens)
            for f in members
        ]
        costs[ttl] = tree_cost(at, traffic).day_with()
    assert {o.ttl: o.cost for o in advice.options} == costs
    assert advice.best == _pick(costs, _current(members))
    assert advice.current_cost == tree_cost(members, traffic).day_with()


def _naive(members: list[PromptFacts], times: dict[str, list[float]], ttl: str) -> Decimal:
    """Every request, one at a time: a read when any earlier request to the entry came within
    the TTL before it (each use refreshes the entry), else a write; what a read, a write and an
    uncached request cost is what promptc's cost model prices (tree_cost, one request)."""
    seconds = prices().ttl_seconds[ttl] if ttl != NO_CACHE else None
    rates = {}
    for f in members:
        one = tree_cost([replace(f, ttl=ttl, cacheable_tokens=f.prefix_tokens)], {f.name: Decimal(1)}).prompts[0]
        rates[f.name] = (one.request_hit, one.request_write, one.request_uncached)
    index = {f.name: i for i, f in enumerate(members)}
    requests = sorted((t, index[name], name) for name, ts in times.items() for t in ts)
    total = Decimal(0)
    for position, (t, _, name) in enumerate(requests):
        hit, write, plain = rates[name]
        if seconds is None:
            total += plain
            continue
        warm = any(0 <= t - u <= seconds for u, _, _ in requests[:position])
        total += hit if warm else write
    return total


@settings(max_examples=examples(150))
@given(
    groups(),
    st.lists(
        st.lists(st.floats(0, 20_000, allow_nan=False).map(round), min_size=0, max_size=12), min_size=3, max_size=3
    ),
)
def test_advise_picks_the_cost_models_minimum_for_timestamps(members, drawn) -> None:
    times = {f.name: sorted(ts) for f, ts in zip(members, drawn, strict=False)}
    if not any(times.values()):
        return
    (advice,) = advise(members, times=times)
    costs = {ttl: _naive(members, times, ttl) for ttl in _choices(members[0])}
    assert {o.ttl: o.cost for o in advice.options} == costs
    current = _current(members)
    assert advice.best == _pick(costs, current)


def test_where_caching_loses_money_and_short_prefixes() -> None:
    sparse = [_facts("rare", "claude-sonnet-4-5", "5m", 3000, 2500)]
    (rare,) = advise(sparse, {"rare": Decimal(30)})  # every 48 minutes: at 5m every request writes
    assert rare.current == "5m" and rare.loses_money and rare.best == "1h"
    (rarer,) = advise(sparse, {"rare": Decimal(20)})  # every 72 minutes: even the hour runs out
    assert rarer.best == NO_CACHE and rarer.saving > 0
    short = replace(sparse[0], cacheable_tokens=0, prefix_tokens=700, min_cacheable=1024)
    (advice,) = advise([short], {"rare": Decimal(100)})
    assert advice.short_by == 324
    automatic = [_facts("chat", "gpt-5.6-terra", None, 3000, 2500)]
    (cold,) = advise(automatic, {"chat": Decimal(3)})
    assert not cold.choosable and cold.loses_money  # 1.25x writes, and no way to opt out


# ---------------------------------------------------------------------------------------------
# --write


def test_the_new_line_is_where_the_formatter_puts_it() -> None:
    for path in sorted((ROOT / "prompts_src").rglob("*.prompt")):
        if path.name.startswith("_"):
            continue
        text = path.read_text(encoding="utf-8")
        if layout(text).text != text:
            continue
        for ttl in ("5m", "1h", NO_CACHE):
            changed = with_cache_ttl(text, ttl)
            assert layout(changed).text == changed, path
            added = [line for line in changed.splitlines() if line not in text.splitlines()]
            assert added in ([f"/// cache_ttl: {ttl}"], []), path
    assert with_cache_ttl("/// cache_ttl: 5m  /// lifetime\nHi\n", "1h") == "/// cache_ttl: 1h /// lifetime\nHi\n"
    assert with_cache_ttl("/// about this\n\nHi ${x}\n", "none") == "/// about this\n/// cache_ttl: none\n\nHi ${x}\n"


def _project(tmp_path: Path) -> Path:
    for name in ("prompts_src", "build"):
        shutil.copytree(ROOT / name, tmp_path / name)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "traffic.json").write_text(json.dumps({"helpdesk/agent": 12, "helpdesk/escalate": 12}))
    return tmp_path


def test_write_changes_the_ttl_line_and_nothing_else(tmp_path: Path) -> None:
    root = _project(tmp_path)
    escalate = root / "prompts_src/helpdesk/escalate.prompt"
    before = escalate.read_text()
    old_artifact = json.loads((root / "build/helpdesk/escalate.json").read_text())
    done = run_promptc("cost", "--advise", "--traffic", "traffic.json", "--write", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "wrote `/// cache_ttl: 1h` to prompts_src/helpdesk/escalate.prompt" in done.stdout
    after = escalate.read_text()
    assert [line for line in after.splitlines() if line not in before.splitlines()] == ["/// cache_ttl: 1h"]
    assert (root / "prompts_src/helpdesk/agent.prompt").read_text() == (
        ROOT / "prompts_src/helpdesk/agent.prompt"
    ).read_text()
    assert run_promptc("build", cwd=root).returncode == 0
    new_artifact = json.loads((root / "build/helpdesk/escalate.json").read_text())
    assert new_artifact["cache"]["ttl"] == "1h" and old_artifact["cache"]["ttl"] is None
    for data in (old_artifact, new_artifact):
        data.pop("source_sha256")
        data["cache"]["ttl"] = None
        data["cache"]["prefix_end"].pop("line")
    assert new_artifact == old_artifact
    again = run_promptc("cost", "--advise", "--traffic", "traffic.json", "--write", cwd=root)
    assert again.returncode == 0 and "wrote" not in again.stdout and "keep 1h" in again.stdout


def test_write_leaves_a_file_saved_meanwhile(tmp_path: Path, monkeypatch) -> None:
    import promptc.tools.cost as cost

    root = _project(tmp_path)
    escalate = root / "prompts_src/helpdesk/escalate.prompt"
    planned = cost.plan_writes

    def plan_then_edit(*args, **kwargs):
        writes = planned(*args, **kwargs)
        escalate.write_text(escalate.read_text() + "\n/// an edit saved while promptc ran\n")
        return writes

    import promptc.cli.cost as cost_command

    monkeypatch.setattr(cost_command, "plan_writes", plan_then_edit)  # what `promptc cost --advise` calls
    done = run_promptc("cost", "--advise", "--traffic", "traffic.json", "--write", cwd=root)
    assert done.returncode == 1
    assert "error[E952]: the file changed on disk since it was read" in done.stderr
    assert escalate.read_text().endswith("/// an edit saved while promptc ran\n")
    assert "cache_ttl" not in escalate.read_text()


def test_advise_needs_traffic_and_reads_records(tmp_path: Path) -> None:
    root = _project(tmp_path)
    done = run_promptc("cost", "--advise", cwd=root)
    assert done.returncode == 2 and "--advise needs the traffic" in done.stderr
    assert run_promptc("cost", "--write", cwd=root).returncode == 2
    records = root / "usage.jsonl"
    line = {
        "schema": "promptc.usage/1",
        "prompt": "helpdesk/agent",
        "shape": "anthropic",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "input_tokens": 1200,
        "cache_read_input_tokens": 0,
    }
    hours = range(8, 18, 2)  # two hours apart: longer than any TTL, every request would write
    records.write_text(
        "".join(json.dumps({**line, "timestamp": f"2026-12-01T{h:02d}:00:00Z"}) + "\n" for h in hours) + "{bad\n"
    )
    done = run_promptc("cost", "--advise", "--records", "usage.jsonl", "--format", "json", cwd=root)
    assert done.returncode == 0, done.stderr
    (advice,) = json.loads(done.stdout)["advice"]
    assert advice["prompts"] == ["helpdesk/agent"] and advice["basis"] == "records" and advice["requests"] == 5
    assert advice["best"] == "none" and advice["loses_money"]
    assert "usage.jsonl:6:1: warning[W951]" in done.stderr


def test_none_is_a_choice_wherever_the_provider_caches_only_at_markers() -> None:
    """Claude on Bedrock and on Vertex AI caches only where the request marks it, as on its own API,
    so `cache_ttl: none` opts out there too; OpenAI's implicit breakpoint writes without promptc's."""
    from promptc.tools.cost import _choices

    price = prices().lookup("anthropic", "claude-sonnet-4-5")
    for provider, model in (
        ("anthropic", "claude-sonnet-4-5"),
        ("bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ("anthropic-vertex", "claude-sonnet-4-5@20250929"),
    ):
        choices, opt_out = _choices(replace(_facts("p", model, None, 3000, 2500), provider=provider), price)
        assert opt_out and choices[0] == NO_CACHE, provider
    openai = prices().lookup("openai", "gpt-5.6-terra")
    choices, opt_out = _choices(_facts("p", "gpt-5.6-terra", None, 3000, 2500), openai)
    assert not opt_out and NO_CACHE not in choices
