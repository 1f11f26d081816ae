"""`promptc cost`, and the money part of `promptc diff --traffic` / `--fail-on cost>AMOUNT`.

The arithmetic lives in `promptc.cost`; this module reads the build and the traffic file, prints,
and picks exit codes (2 for a traffic file or a build that cannot be read, as for any usage error).
"""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .common import USAGE_ERROR, settings

if TYPE_CHECKING:
    from ..cost import DiffCost, TreeCost


def _fail(command: str, message: str) -> NoReturn:
    click.echo(f"promptc {command}: {message}", err=True)
    sys.exit(USAGE_ERROR)


class FailOnType(click.ParamType):
    """`--fail-on`: a kind of change (`bust`, `contract`, …) or `cost>AMOUNT` (dollars)."""

    name = "KIND"

    def __init__(self, kinds: tuple[str, ...]) -> None:
        self.kinds = kinds

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[" + "|".join(self.kinds) + "|cost>AMOUNT]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from ..cost import parse_fail_on_cost

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
    from ..cost import parse_fail_on_cost

    limits = []
    for value in fail_on:
        parsed = parse_fail_on_cost(value)
        if parsed is not None:
            limits.append(parsed.amount)
    return limits


def load_traffic(command: str, path: str, names: list[str], other_names: list[str] = ()) -> dict[str, Decimal]:
    """The traffic file, or exit 2 after printing its diagnostics (E945, E946). W947 warnings are
    printed and the command goes on."""
    from ..cost import check_traffic, read_traffic
    from ..diagnostics import render_text, use_color

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


def read_build(command: str, folder: str) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """(manifest, facts by name, artifacts by name) of a build folder or a manifest file; exit 2
    when there is no readable manifest."""
    import orjson

    from ..cost import facts_of_build
    from ..model import ArtifactError, Manifest

    path = Path(folder)
    manifest_path = path / "manifest.json" if path.is_dir() else path
    try:
        document = orjson.loads(manifest_path.read_bytes())
        manifest = Manifest.from_json(document)
    except OSError as exc:
        _fail(command, f"cannot read {manifest_path}: {exc.strerror or exc} (run `promptc build` first)")
    except orjson.JSONDecodeError as exc:
        _fail(command, f"{manifest_path} is not valid JSON: {exc}")
    except ArtifactError as exc:
        _fail(command, f"{manifest_path}: {exc}")
    facts, artifacts = facts_of_build(manifest, manifest_path.parent)
    return manifest, facts, artifacts


def _dollars(value: Decimal) -> str:
    from ..cost import money

    text = money(value)
    return f"-${text[1:]}" if text.startswith("-") else f"${text}"


def _signed(value: Decimal) -> str:
    return _dollars(value) if value < 0 else "+" + _dollars(value)


def render_tree_text(tree: TreeCost, traffic_path: str | None) -> str:
    from ..cost import money

    lines = [f"prices: {tree.table.label}, US dollars" + (f"; traffic: {traffic_path}" if traffic_path else "")]
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
    share = tree.cacheable_share()
    basis = "by traffic" if tree.traffic else "one request of each prompt"
    total = f"total: cacheable share {share * 100:.1f}% ({basis})" if share is not None else "total: no tokens"
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
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
def cost_cmd(out: str | None, traffic_path: str | None, fmt: str) -> None:
    """What the build's prompts cost with and without caching: the cacheable share, the cost per
    request (and per day with --traffic), and the prompts whose layout leaves the most stable
    tokens out of the cached prefix. Prices: promptc/data/prices.json (docs/cost.md)."""
    from ..cost import tree_cost

    folder = out or settings().config.out
    _manifest, facts, _artifacts = read_build("cost", folder)
    traffic = load_traffic("cost", traffic_path, list(facts)) if traffic_path else None
    tree = tree_cost(facts.values(), traffic)
    if fmt == "json":
        import orjson

        from .common import envelope

        payload = envelope("cost", out=folder, traffic=traffic_path, **tree.to_json())
        click.echo(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())
        return
    click.echo(render_tree_text(tree, traffic_path))


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
        from ..diagnostics import github_escape

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
    old_document: dict[str, Any],
    old_arg: str,
    new_document: dict[str, Any],
    new_arg: str,
    traffic_path: str | None,
    fail_on: tuple[str, ...],
) -> DiffMoney | None:
    """The cost of a diff between two decoded manifests, read with the artifacts beside them
    (none for `-`, stdin: the old sizes are then estimated). None without --traffic; a `cost>`
    limit without --traffic is a usage error."""
    limits = cost_limits(fail_on)
    if traffic_path is None:
        if limits:
            _fail("diff", "--fail-on cost>AMOUNT needs --traffic FILE (requests per day of each prompt)")
        return None
    from ..cost import diff_cost, facts_of_build
    from ..model import ArtifactError, Manifest

    try:
        old_facts = facts_of_build(Manifest.from_json(old_document), _folder_of(old_arg))[0]
        new_facts = facts_of_build(Manifest.from_json(new_document), _folder_of(new_arg))[0]
    except ArtifactError as exc:  # diff reports a malformed manifest itself; this is a safety net
        _fail("diff", str(exc))
    traffic = load_traffic("diff", traffic_path, list(new_facts), list(old_facts))
    return DiffMoney(diff_cost(old_facts, new_facts, traffic), traffic_path, limits)
