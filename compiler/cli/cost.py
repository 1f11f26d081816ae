"""`promptc cost`, and the money part of `promptc diff --traffic` / `--fail-on cost>AMOUNT`.

The arithmetic lives in `promptc.tools.cost`; this module reads the build and the traffic file, prints,
and picks exit codes (2 for a traffic file or a build that cannot be read, as for any usage error).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import replace
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any, NoReturn

import click
import orjson

from ..driver.sources import read_tree
from ..facts import codes
from ..facts.diagnostics import github_escape, make, render_text, use_color
from ..runtime.atomic import ChangedOnDisk, reason, write_file
from ..runtime.buildfolder import BuildFolderError, manifest_path, read_document
from ..runtime.confine import edit_refusal, source_folder_refusal
from ..runtime.model import ArtifactError, Manifest
from ..runtime.usage import parse_timestamp
from ..tools.cost import (
    NO_CACHE,
    DiffCost,
    TreeCost,
    advise,
    check_traffic,
    diff_cost,
    facts_of_build,
    money,
    parse_fail_on_cost,
    plan_writes,
    prices,
    read_traffic,
    tree_cost,
)
from ..tools.reconcile import ReadStats, read_records, records_problem
from .common import USAGE_ERROR, TextParam, envelope, settings


def _fail(command: str, message: str) -> NoReturn:
    click.echo(f"promptc {command}: {message}", err=True)
    sys.exit(USAGE_ERROR)


class FailOnType(TextParam):
    """`--fail-on`: a kind of change (`bust`, `contract`, …) or `cost>AMOUNT` (dollars)."""

    name = "KIND"

    def __init__(self, kinds: tuple[str, ...]) -> None:
        self.kinds = kinds

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[" + "|".join(self.kinds) + "|cost>AMOUNT]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value).strip()
        if text in self.kinds:
            return text
        try:
            parsed = parse_fail_on_cost(text)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        if parsed is None:
            self.fail(f"{text!r} is not one of {', '.join(self.kinds)}, cost>AMOUNT", param, ctx)
        return f"cost>{parsed.amount}"


def cost_limits(fail_on: tuple[str, ...]) -> list[Decimal]:
    limits = []
    for value in fail_on:
        parsed = parse_fail_on_cost(value)
        if parsed is not None:
            limits.append(parsed.amount)
    return limits


def load_traffic(command: str, path: str, names: Iterable[str], other_names: Iterable[str] = ()) -> dict[str, Decimal]:
    """The traffic file, or exit 2 after printing its diagnostics (E945, E946). W947 warnings are
    printed and the command goes on."""
    traffic, diagnostics = read_traffic(path)
    if traffic is not None:
        diagnostics += check_traffic(traffic, names, path, other_names=other_names)
    color = use_color(settings().color, sys.stderr)
    for d in diagnostics:
        click.echo(render_text(d, color=color) + "\n", err=True, color=color)
    if traffic is None:
        click.echo(f"promptc {command}: the traffic file cannot be used", err=True)
        sys.exit(USAGE_ERROR)
    return traffic


def echo_warnings(found: Iterable[Any]) -> None:
    """Warnings (W948: a model the price table does not price) to stderr, as the build prints them."""
    color = use_color(settings().color, sys.stderr)
    for d in found:
        click.echo(render_text(d, color=color) + "\n", err=True, color=color)


def source_root() -> str:
    """The source folder, where W948 finds a prompt's `model=` parameter."""
    return str(settings().config.src)


class DateParam(TextParam):
    """`--at DATE`: the day whose prices apply (ISO 8601, `2026-12-06`), checked here."""

    name = "DATE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value).strip()
        try:
            date.fromisoformat(text)
        except ValueError:
            self.fail(f"{value!r} is not a date (YYYY-MM-DD, e.g. 2026-12-06)", param, ctx)
        return text


def read_build(command: str, folder: str) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """(manifest, facts by name, artifacts by name) of a build folder or a manifest file; exit 2
    when there is no readable manifest."""
    path = manifest_path(folder)
    try:
        manifest = Manifest.from_json(read_document(path))
    except BuildFolderError as exc:
        _fail(command, f"{exc} (run `promptc build` first)" if exc.unreadable else str(exc))
    except ArtifactError as exc:
        _fail(command, f"{path}: {exc}")
    facts, artifacts = facts_of_build(manifest, path.parent)
    return manifest, facts, artifacts


def _dollars(value: Decimal) -> str:
    text = money(value)
    return f"-${text[1:]}" if text.startswith("-") else f"${text}"


def _signed(value: Decimal) -> str:
    return _dollars(value) if value < 0 else "+" + _dollars(value)


def render_tree_text(tree: TreeCost, traffic_path: str | None, at: date | None = None) -> str:
    when = "" if at is None else f", in force on {at.isoformat()}"
    lines = [f"prices: {tree.table.label}{when}, US dollars" + (f"; traffic: {traffic_path}" if traffic_path else "")]
    header = ["prompt", "model", "tokens", "cached", "share", "$/req uncached", "$/req hit"]
    if tree.traffic:
        header += ["req/day", "$/day cached", "$/day uncached"]
    rows = [header]
    for p in tree.priced:
        f = p.facts
        share = f"{Decimal(p.cached_tokens) * 100 / f.total_tokens:.1f}%" if f.total_tokens else "-"
        row = [
            f.name,
            f.model or "-",
            str(f.total_tokens),
            str(p.cached_tokens),
            share,
            money(p.request_uncached or Decimal(0)),
            money(p.request_hit or Decimal(0)),
        ]
        if tree.traffic:
            row += [
                str(p.requests_per_day),
                money(p.day_with_cache or Decimal(0)),
                money(p.day_without_cache or Decimal(0)),
            ]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for r in rows:
        cells = [c.ljust(widths[i]) if i < 2 else c.rjust(widths[i]) for i, c in enumerate(r)]
        lines.append("  ".join(cells).rstrip())
    unpriced = [p for p in tree.prompts if p.price is None]
    if unpriced:
        lines.append("not priced: " + ", ".join(f"{p.facts.name} ({p.unpriced})" for p in unpriced))
    whole = tree.cacheable_share()
    basis = "by traffic" if tree.traffic else "one request of each prompt"
    total = f"total: cacheable share {whole * 100:.1f}% ({basis})" if whole is not None else "total: no tokens"
    if tree.traffic:
        with_cache, without = tree.day_with(), tree.day_without()
        total += (
            f"; per day {_dollars(with_cache)} with caching, {_dollars(without)} without "
            f"(saving {_dollars(without - with_cache)}; prices: {tree.table.label})"
        )
    lines.append(total)
    waste = tree.waste()
    if waste:
        lines.append("stable tokens left out of the cached prefix (most first):")
        for p in waste:
            f = p.facts
            if f.stable_behind:
                line = f"  {f.name}: {f.stable_behind} stable tokens held in a dynamic section by `${{{f.behind}}}`"
                if f.stable_after_prefix:
                    line += f", {f.stable_after_prefix} more after it"
            else:
                line = f"  {f.name}: {f.stable_after_prefix} stable tokens after the prefix end"
            if f.movable_gain and f.stable_behind:
                line += f"; with `${{{f.behind}}}` moved below them, {f.movable_gain} more tokens would be cached"
                if p.day_waste:
                    line += f" ({_dollars(p.day_waste)}/day, prices: {tree.table.label})"
            elif f.movable_gain:
                line += f"; moved before it, {f.movable_gain} more tokens would be cached"
                if p.day_waste:
                    line += f" ({_dollars(p.day_waste)}/day, prices: {tree.table.label})"
            elif f.min_cacheable is not None:
                line += f"; even moved, the prefix stays under the minimum of {f.min_cacheable}"
            lines.append(line)
    return "\n".join(lines)


def render_diff_text(cost: DiffCost, traffic_path: str) -> list[str]:
    label = cost.after.table.label
    change = cost.day_after - cost.day_before
    lines = [
        f"cost (traffic: {traffic_path}; prices: {label}):",
        f"  per day: {_dollars(cost.day_before)} before → {_dollars(cost.day_after)} after ({_signed(change)})",
    ]
    if cost.misses:
        parts = ", ".join(f"{m.name} {m.tokens} tokens {_dollars(m.cost)}" for m in cost.misses)
        lines.append(f"  deploy: {_dollars(cost.deploy)} once, for the cache entries written again ({parts})")
    else:
        lines.append("  deploy: $0.000000 (no cache entry to write again)")
    lines.append(f"  first day: {_signed(cost.first_day)} (deploy + change per day)")
    if cost.estimated:
        lines.append("  estimated before (the old build's artifacts were not available): " + ", ".join(cost.estimated))
    return lines


@click.command("cost")
@click.option("-o", "--out", default=None, help="Build folder (default from config: build).")
@click.option(
    "--traffic",
    "traffic_path",
    default=None,
    metavar="FILE",
    help="JSON object: prompt name → requests per day. Without it, costs are per request.",
)
@click.option(
    "--advise",
    is_flag=True,
    help="Per cache entry, the TTL that costs least at the traffic (none, 5m, 1h by the provider's write and read "
    "prices), where caching loses money, and how far a prefix is short of its minimum. Needs --traffic or --records.",
)
@click.option(
    "--records",
    "records",
    default=None,
    metavar="FILE",
    help="With --advise: usage records (JSONL or an OpenTelemetry export) whose timestamps are the traffic.",
)
@click.option(
    "--write",
    "write",
    is_flag=True,
    help="With --advise: add or change each prompt's `/// cache_ttl:` line to the advised TTL (atomically; only "
    "when the artifact changes in nothing but the TTL).",
)
@click.option(
    "--at",
    "at_text",
    type=DateParam(),
    default=None,
    help="Price at the prices in force on this day (YYYY-MM-DD; default: today): the table keeps each price "
    "with the dates it holds.",
)
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
def cost_cmd(
    out: str | None,
    traffic_path: str | None,
    advise: bool,
    records: str | None,
    write: bool,
    at_text: str | None,
    fmt: str,
) -> None:
    """What the build's prompts cost with and without caching: the cacheable share, the cost per
    request (and per day with --traffic), and the prompts whose layout leaves the most stable
    tokens out of the cached prefix. With --advise, the TTL each prompt's traffic makes cheapest.
    Prices: promptc/data/prices.json (docs/cost.md)."""
    if (records or write) and not advise:
        _fail("cost", "--records and --write go with --advise")
    at = None if at_text is None else date.fromisoformat(at_text)
    if advise:
        _advise_cmd(out, traffic_path, records, write, fmt, at)
        return
    folder = out or settings().config.out
    _manifest, facts, _artifacts = read_build("cost", folder)
    traffic = load_traffic("cost", traffic_path, list(facts)) if traffic_path else None
    tree = tree_cost(facts.values(), traffic, at=at)
    warnings = tree.warnings(source_root())
    if fmt == "json":
        extra = {} if at is None else {"at": at.isoformat()}
        payload = envelope(
            "cost",
            out=folder,
            traffic=traffic_path,
            **extra,
            **tree.to_json(),
            diagnostics=[d.to_json() for d in warnings],
        )
        click.echo(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())
        return
    echo_warnings(warnings)
    click.echo(render_tree_text(tree, traffic_path, at))


def _advise_cmd(
    out: str | None, traffic_path: str | None, records: str | None, write: bool, fmt: str, at: date | None = None
) -> None:
    if (traffic_path is None) == (records is None):
        _fail("cost", "--advise needs the traffic: --traffic FILE (requests per day) or --records FILE (timestamps)")
    config = settings().config
    folder = out or config.out
    _manifest, facts, _artifacts = read_build("cost", folder)
    if traffic_path is not None:
        traffic = load_traffic("cost", traffic_path, list(facts))
        advice = advise(facts.values(), traffic, at=at)
        basis = f"traffic: {traffic_path}, per day"
    else:
        assert records is not None
        times = _record_times(records, list(facts))
        advice = advise(facts.values(), times=times, at=at)
        basis = f"records: {records}, over their timestamps"
    writes = []
    if write:
        src = Path(config.src)
        if not src.is_dir():
            _fail("cost", f"--write needs the source folder ({config.src}) to change the `/// cache_ttl:` lines")
        # the source folder [tool.promptc] names is written only inside the project
        refused = source_folder_refusal(src, "src", project=config.project, setting=config.setting("src", src))
        if refused is not None:
            click.echo(render_text(refused), err=True)
            sys.exit(1)
        tree, _ = read_tree(src, Path(folder))
        writes = plan_writes(advice, tree, config)
        writes = _apply(writes, src)
    table = prices()
    # only the prompts the advice is about: those with traffic
    sent = {a_name for item in advice for a_name in item.names}
    warnings = tree_cost([f for f in facts.values() if f.name in sent], at=at).warnings(source_root())
    if fmt != "json":
        echo_warnings(warnings)
    if fmt == "json":
        payload = envelope(
            "cost",
            out=folder,
            advise=True,
            traffic=traffic_path,
            records=records,
            prices=table.to_json(),
            advice=[a.to_json() for a in advice],
            written=[{"prompt": w.name, "path": w.path, "ttl": w.ttl} for w in writes if w.diagnostic is None],
            diagnostics=[d.to_json() for d in warnings]
            + [w.diagnostic.to_json() for w in writes if w.diagnostic is not None],
        )
        click.echo(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(render_advice_text(advice, f"{basis}; prices: {table.label}, US dollars"))
        written = [w for w in writes if w.diagnostic is None]
        for w in written:
            click.echo(f"wrote `/// cache_ttl: {w.ttl}` to {w.path}")
        if written:
            click.echo("run `promptc build` to compile the new TTLs")
    failed = [w for w in writes if w.diagnostic is not None]
    if failed:
        for w in failed:
            assert w.diagnostic is not None
            click.echo(render_text(w.diagnostic), err=True)
        sys.exit(1)


def _record_times(records: str, names: list[str]) -> dict[str, list[float]]:
    """When each prompt's requests started, from a records file (streamed; the times are kept)."""

    problem = records_problem(records)
    if problem is not None:
        click.echo(render_text(problem), err=True)
        sys.exit(USAGE_ERROR)
    stats = ReadStats()
    times: dict[str, list[float]] = {}
    for _line, record in read_records(records, stats):
        stamp = record.started_at or record.timestamp
        times.setdefault(record.prompt, []).append(parse_timestamp(stamp))
    for d in stats.diagnostics:
        click.echo(render_text(d), err=True)
    return {name: found for name, found in times.items() if name in names}


def _apply(writes: list[Any], src: Path) -> list[Any]:
    """Write each planned change atomically, only over the bytes that were read (a file saved in
    the meantime is left alone: E952)."""
    done = []
    for w in writes:
        if w.diagnostic is None and w.text is not None:
            rel = Path(w.path)
            target = src / rel.relative_to(src) if rel.is_relative_to(src) else rel
            refused = edit_refusal(target, src, "cost --advise --write", w.path)
            if refused is not None:
                done.append(replace(w, diagnostic=refused))
                continue
            try:
                write_file(target, w.text.encode("utf-8"), expect=w.original)
            except ChangedOnDisk:
                w = replace(
                    w,
                    diagnostic=make(
                        codes.ADVICE_NOT_WRITTEN,
                        "the file changed on disk since it was read; run again",
                        None,
                        None,
                        path=w.path,
                    ),
                )
            except OSError as exc:
                w = replace(
                    w,
                    diagnostic=make(
                        codes.ADVICE_NOT_WRITTEN,
                        f"cannot write the file: {reason(exc)}; it is unchanged",
                        None,
                        None,
                        path=w.path,
                    ),
                )
        done.append(w)
    return done


def render_advice_text(advice: list[Any], basis: str) -> str:
    lines = [f"advice ({basis}):"]
    for a in advice:
        f = a.facts[0]
        names = " + ".join(a.names)
        if a.price is None:
            lines.append(f"{names}: not priced ({a.unpriced})")
            continue
        head = f"{names}: {f.model}, {f.cacheable_tokens or 0} cached tokens, {a.requests.normalize():f} requests"
        lines.append(head)
        if not f.prefix_sha256:
            lines.append("  no cache-stable prefix (the request starts with dynamic text): nothing to cache")
            continue
        if a.short_by is not None:
            lines.append(
                f"  the prefix is {f.prefix_tokens} tokens, {a.short_by} short of the minimum of {f.min_cacheable}: "
                "nothing is cached at any TTL"
            )
            continue
        costs = " · ".join(f"{o.ttl} {_dollars(o.cost)}" for o in a.options)
        now = (
            a.current if a.current != "mixed" else "mixed (" + ", ".join(sorted({x.ttl or "5m" for x in a.facts})) + ")"
        )
        lines.append(f"  {costs} (now: {now}, {_dollars(a.current_cost or Decimal(0))})")
        if not a.choosable:
            note = "the provider caches automatically: no TTL to choose"
            if a.loses_money:
                note += f"; caching costs {_dollars((a.current_cost or Decimal(0)) - (a.uncached or Decimal(0)))} more than no cache"
            lines.append(f"  {note}")
            continue
        if a.best == a.current:
            lines.append(f"  keep {a.best}")
        else:
            line = f"  → `/// cache_ttl: {a.best}` saves {_dollars(a.saving)}"
            if a.best == NO_CACHE:
                line += ": caching loses money at this traffic"
            lines.append(line)
        if a.loses_money and a.best != NO_CACHE and a.best != a.current:
            lines.append(
                f"  (today's TTL costs {_dollars((a.current_cost or Decimal(0)) - (a.uncached or Decimal(0)))} more than no cache)"
            )
    return "\n".join(lines)


class DiffMoney:
    """The cost section of `promptc diff --traffic`: its JSON, its text lines, and which
    `cost>AMOUNT` limits it exceeds."""

    def __init__(self, cost: DiffCost, traffic_path: str, limits: list[Decimal]) -> None:
        self.cost = cost
        self.traffic_path = traffic_path
        self.failing = [f"cost>{limit}" for limit in limits if cost.first_day > limit]

    def to_json(self) -> dict[str, Any]:
        return {"traffic": self.traffic_path, **self.cost.to_json()}

    def text_lines(self) -> list[str]:
        return render_diff_text(self.cost, self.traffic_path)

    def github_lines(self) -> list[str]:
        level = "error" if self.failing else "notice"
        message = "; ".join(line.strip() for line in self.text_lines()[1:])
        title = github_escape("promptc: cost", prop=True)
        return [f"::{level} title={title}::{github_escape(message)}"]


def _folder_of(arg: str) -> Path | None:
    """Where the artifacts of a manifest argument are: the build folder, the manifest file's
    folder, or nowhere for stdin."""
    if arg == "-":
        return None
    path = Path(arg)
    return path if path.is_dir() else path.parent


def diff_money(
    old_manifest: Manifest,
    old_arg: str,
    new_manifest: Manifest,
    new_arg: str,
    traffic_path: str | None,
    fail_on: tuple[str, ...],
) -> DiffMoney | None:
    """The cost of a diff between two manifests, read with the artifacts beside them
    (none for `-`, stdin: the old sizes are then estimated). None without --traffic; a `cost>`
    limit without --traffic is a usage error."""
    limits = cost_limits(fail_on)
    if traffic_path is None:
        if limits:
            _fail("diff", "--fail-on cost>AMOUNT needs --traffic FILE (requests per day of each prompt)")
        return None

    old_facts = facts_of_build(old_manifest, _folder_of(old_arg))[0]
    new_facts = facts_of_build(new_manifest, _folder_of(new_arg))[0]
    traffic = load_traffic("diff", traffic_path, list(new_facts), list(old_facts))
    money = diff_cost(old_facts, new_facts, traffic)
    echo_warnings(money.after.warnings(source_root()))
    return DiffMoney(money, traffic_path, limits)
