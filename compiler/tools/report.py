"""`promptc report`: one self-contained, static HTML page about a build's prompt caches.

What it shows, all computed from the artifacts (never from rendering):

- the **prefix tree**: every prompt's cache-stable prefix as a path of segments in the providers'
  cache order (the tools, the output schema, then each stable block of the messages up to the
  prefix end); prompts whose prefixes start with the same segments share a trunk, and a prompt
  splits off where its next segment differs. Chains that no prompt leaves are drawn as one edge.
  Each edge says its tokens and the tokens from the start of the request; it is green when every
  prompt through it has reached its provider's minimum cacheable prefix by the end of the edge,
  amber when some have, red when none has, grey without a provider profile;
- each prompt's **messages as bars** to one scale: stable blocks in the prefix, stable blocks
  after it (text that could be cached), dynamic blocks; the prefix end and its reason;
- with an old manifest, the **diff**: busted prefixes highlighted, tokens and (with traffic) the
  money at stake.

The page has no external asset and makes no request: CSS, SVG and a few lines of JavaScript are
inline. Every piece of prompt text is escaped (`</script>` in a prompt is text). The bytes depend
only on the inputs: no timestamps, sorted orders.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import field
from decimal import Decimal
from html import escape
from typing import Any

from ..facts.records import dataclass
from ..facts.version import VERSION
from ..runtime.confine import GENERATED_MARK
from ..runtime.requestmodel import of_artifact
from .cost import money
from .reconcile import CAUSES

__all__ = ["PrefixNode", "prefix_tree", "report_html"]


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else (plural or word + 's')}"


def _e(value: object) -> str:
    return escape(str(value), quote=True)


# ---------------------------------------------------------------------------------------------
# The prefix tree


@dataclass(frozen=True, slots=True)
class Segment:
    key: str
    label: str
    tokens: int


@dataclass(slots=True)
class PrefixNode:
    """One edge of the prefix tree (a run of segments no prompt leaves) and what hangs below it."""

    segments: list[Segment] = field(default_factory=list)
    #: the prompts whose prefix runs through this edge
    prompts: list[str] = field(default_factory=list)
    #: the prompts whose prefix ends at the end of this edge
    ends: list[str] = field(default_factory=list)
    children: list[PrefixNode] = field(default_factory=list)
    #: tokens from the start of the request to the end of this edge
    cumulative: int = 0

    @property
    def tokens(self) -> int:
        return sum(s.tokens for s in self.segments)


def prompt_segments(artifact: Any) -> list[Segment]:
    """The cache-stable prefix of an artifact as segments: the parts its request model hashes
    (`promptc.runtime.requestmodel`), in the provider's cache order — the identity (provider and model)
    and the parameters the cache keys on (no tokens of their own: two models never share a
    branch), the tools and output schema, the blocks."""
    out: list[Segment] = []
    if artifact.cache.prefix_end is None:
        return out
    parts = of_artifact(artifact).prefix().parts
    identity = [p for p in parts if p.kind in ("provider", "model")]
    if identity:
        key = "\0".join(f"{p.label}\0{p.text}" for p in identity)
        label = " · ".join(p.text or "" for p in identity)
        out.append(Segment(hashlib.sha256(key.encode()).hexdigest(), label, 0))
    for part in parts:
        if part.kind in ("provider", "model"):
            continue
        digest = hashlib.sha256(f"{part.label}\0{part.text}".encode()).hexdigest()
        if part.kind == "param":
            label = f"{part.label.removeprefix('param:')}={part.text}"
        elif part.kind == "tools":
            label = f"{len(artifact.tools)} tools"
        elif part.kind == "output_schema":
            name = artifact.output_schema.name if artifact.output_schema is not None else ""
            label = f"output schema {name}".strip() + ("" if part.content else " (not cached)")
        else:
            first_line = (part.text or "").strip().split("\n", 1)[0]
            label = f"{part.label}: {first_line[:48]}" + ("…" if len(first_line) > 48 else "")
        out.append(Segment(digest, label, part.tokens if part.content else 0))
    return out


def prefix_tree(artifacts: Mapping[str, Any]) -> PrefixNode:
    """The prefix tree of the artifacts (by name): a trie of their prefix segments with chains
    compressed. The root has no segments; a prompt without a prefix ends at the root."""
    root = PrefixNode()
    # trie: node → {segment key: child}
    index: dict[int, dict[str, PrefixNode]] = {id(root): {}}
    for name in sorted(artifacts):
        node = root
        node.prompts.append(name)
        for segment in prompt_segments(artifacts[name]):
            children = index[id(node)]
            child = children.get(segment.key)
            if child is None:
                child = PrefixNode([segment])
                children[segment.key] = child
                node.children.append(child)
                index[id(child)] = {}
            node = child
            node.prompts.append(name)
        node.ends.append(name)
    # compress chains and sum tokens, iteratively (the tree may be deep)
    stack: list[tuple[PrefixNode, int]] = [(root, 0)]
    while stack:
        node, before = stack.pop()
        while len(node.children) == 1 and not node.ends and node is not root:
            only = node.children[0]
            node.segments.extend(only.segments)
            node.ends, node.children = only.ends, only.children
        node.cumulative = before + node.tokens
        for child in node.children:
            stack.append((child, node.cumulative))
    return root


# ---------------------------------------------------------------------------------------------
# Drawing


_COLOURS = {"met": "#2e7d32", "some": "#ef8f00", "none": "#c62828", "unknown": "#8a8f98"}

CSS = """
:root { color-scheme: light; --ink: #1d232b; --muted: #5b6470; --line: #d8dde3; --stable: #2e7d32;
  --later: #9ccc9c; --dynamic: #f0a33a; --bust: #c62828; --uncached: #b8c2cc; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1200px; padding: 24px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI",
  Roboto, sans-serif; color: var(--ink); background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--line);
  padding-bottom: 4px; } h3 { font-size: 14px; margin: 0; font-family: ui-monospace, monospace; }
.meta { color: var(--muted); margin: 0 0 12px; }
.legend span { display: inline-block; margin-right: 14px; } .swatch { display: inline-block; width: 12px; height: 12px;
  border-radius: 2px; vertical-align: -1px; margin-right: 4px; }
.scroll { overflow-x: auto; border: 1px solid var(--line); border-radius: 6px; padding: 8px; }
svg text { font: 12px system-ui, sans-serif; fill: var(--ink); } svg .small { font-size: 11px; fill: var(--muted); }
svg .name { font-family: ui-monospace, monospace; } svg .bust { fill: var(--bust); font-weight: 600; }
.prompt { border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; margin: 10px 0; }
.prompt.bust { border-color: var(--bust); box-shadow: inset 4px 0 0 var(--bust); }
.prompt p { margin: 4px 0; color: var(--muted); }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; } tr.bust td:first-child { color: var(--bust); font-weight: 600; }
code { font-family: ui-monospace, monospace; font-size: 12px; }
#filter { font: inherit; padding: 4px 8px; width: 320px; max-width: 100%; }
.hidden { display: none; }
"""

JS = """
(function () {
  "use strict";
  var input = document.getElementById("filter");
  var count = document.getElementById("shown");
  var prompts = Array.prototype.slice.call(document.querySelectorAll(".prompt"));
  function apply() {
    var query = input.value.trim().toLowerCase();
    var shown = 0;
    prompts.forEach(function (el) {
      var match = el.getAttribute("data-name").toLowerCase().indexOf(query) !== -1;
      el.classList.toggle("hidden", !match);
      if (match) { shown += 1; }
    });
    count.textContent = shown + " of " + prompts.length + " prompts shown";
  }
  input.addEventListener("input", apply);
  apply();
})();
"""


def _status(node: PrefixNode, minimums: Mapping[str, int | None]) -> str:
    known = [minimums[name] for name in node.prompts if minimums.get(name) is not None]
    if not known:
        return "unknown"
    met = sum(1 for minimum in known if node.cumulative >= (minimum or 0))
    if met == len(known):
        return "met"
    return "some" if met else "none"


def _tree_svg(root: PrefixNode, minimums: Mapping[str, int | None], busted: set[str]) -> str:
    """A left-to-right drawing: one column per tree level, one row per prompt."""
    # a box holds two lines (12px, then 11px): 36px tall with its padding, rows 44px apart
    column, row, box_w, box_h = 230, 44, 200, 36
    # rows: each prompt gets one, in depth-first order; a node sits at the middle of its rows
    positions: dict[int, tuple[int, float]] = {}
    leaves: list[tuple[str, int, int]] = []  # (name, depth of its end node, row)
    depth_of: dict[int, int] = {id(root): 0}
    parent_of: dict[int, PrefixNode] = {}
    order: list[PrefixNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        order.append(node)
        depth = depth_of[id(node)]
        for name in node.ends:
            leaves.append((name, depth, len(leaves)))
        # visit children in the order they were created (sorted by the first prompt through each)
        for child in reversed(node.children):
            depth_of[id(child)] = depth + 1
            parent_of[id(child)] = node
            stack.append(child)
        # ends of a node are listed when the node is visited; children's leaves follow
    leaf_rows: dict[str, int] = {name: r for name, _, r in leaves}
    for node in order:
        rows = [leaf_rows[name] for name in node.prompts]
        positions[id(node)] = (depth_of[id(node)], (min(rows) + max(rows)) / 2 if rows else 0)
    max_depth = max((d for d, _ in positions.values()), default=0)
    width = (max_depth + 1) * column + 260
    height = max(1, len(leaves)) * row + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="prefix tree of {len(leaves)} prompts">'
    ]

    def xy(node: PrefixNode) -> tuple[float, float]:
        depth, r = positions[id(node)]
        return 10 + (depth - 1) * column if depth else 10.0, 10 + r * row + box_h / 2

    for node in order:
        if node is root:
            continue
        x, y = xy(node)
        status = _status(node, minimums)
        colour = _COLOURS[status]
        parent = parent_of[id(node)]
        if parent is not root:
            px, py = xy(parent)
            weight = 1.5 + min(len(node.prompts), 8)
            parts.append(
                f'<path d="M{px + box_w:.1f},{py:.1f} C{px + box_w + 15:.1f},{py:.1f} {x - 15:.1f},{y:.1f} '
                f'{x:.1f},{y:.1f}" fill="none" stroke="{colour}" stroke-width="{weight:.1f}" stroke-opacity="0.6"/>'
            )
        label = node.segments[0].label if node.segments else ""
        more = f" +{len(node.segments) - 1} blocks" if len(node.segments) > 1 else ""
        title = "; ".join(f"{s.label} ({s.tokens} tokens)" for s in node.segments)
        who = ", ".join(node.prompts)
        parts.append(
            f'<g class="edge" data-status="{status}"><title>{_e(title)} — shared by {_e(who)}; '
            f"{node.cumulative} tokens from the start</title>"
            f'<rect x="{x:.1f}" y="{y - box_h / 2:.1f}" width="{box_w}" height="{box_h}" rx="4" '
            f'fill="#fff" stroke="{colour}" stroke-width="2"/>'
            f'<text x="{x + 6:.1f}" y="{y - 3:.1f}">+{node.tokens} tok · Σ {node.cumulative}'
            f"{_e(more)}</text>"
            f'<text class="small" x="{x + 6:.1f}" y="{y + 12:.1f}">{_e(label[:34])}</text></g>'
        )
        for name in node.ends:
            ly = 10 + leaf_rows[name] * row + box_h / 2
            cls = "name bust" if name in busted else "name"
            parts.append(
                f'<path d="M{x + box_w:.1f},{y:.1f} L{x + box_w + 20:.1f},{ly:.1f}" stroke="{colour}" '
                f'stroke-width="1.5" fill="none"/><text class="{cls}" data-name="{_e(name)}" '
                f'x="{x + box_w + 24:.1f}" y="{ly + 4:.1f}">{_e(name)}</text>'
            )
    for name in root.ends:  # prompts with no cache-stable prefix
        ly = 10 + leaf_rows[name] * row + box_h / 2
        cls = "name bust" if name in busted else "name"
        parts.append(
            f'<text class="{cls}" data-name="{_e(name)}" x="10" y="{ly + 4:.1f}">{_e(name)} '
            f'<tspan class="small">— no cache-stable prefix</tspan></text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _bar_svg(artifact: Any, scale: float, bust: bool) -> str:
    """The request as one bar: the head, then each block, to scale; the prefix end marked."""
    width, height, left = 1000, 58, 0.0
    end = artifact.cache.prefix_end
    in_prefix = end is not None
    pieces: list[tuple[float, str, str]] = []  # (tokens, colour, title)
    if artifact.cache.head_tokens:
        pieces.append(
            (artifact.cache.head_tokens, "var(--stable)", f"tools and schema: {artifact.cache.head_tokens} tokens")
        )
    if end is not None and end.message is None:
        in_prefix = False
    # a prefix below the provider's minimum is stable but not cached: the card says `cached 0`,
    # and the bar must not paint it as the cached prefix
    uncached = artifact.cache.cacheable_tokens == 0 and artifact.cache.prefix_tokens > 0
    minimum = artifact.provider.min_cacheable_tokens if artifact.provider is not None else None
    below = (
        f" — in the stable prefix, but below {artifact.provider.name}'s minimum of {minimum} tokens: not cached"
        if uncached and artifact.provider is not None
        else " — in the stable prefix, not cached"
    )
    if uncached and pieces:
        pieces[0] = (pieces[0][0], "var(--uncached)", f"tools and schema: {artifact.cache.head_tokens} tokens{below}")
    prefix_x = None
    for mi, message in enumerate(artifact.messages):
        for bi, block in enumerate(message.blocks):
            names = ", ".join(section.name for section in block.sections)
            title = f"message {mi} ({message.role}) block {bi}: {block.boundary}, {block.tokens} tokens — {names}"
            if in_prefix and uncached:
                colour = "var(--uncached)"
                title += below
            elif in_prefix:
                colour = "var(--stable)"
                title += " — in the cached prefix"
            elif block.stable:
                colour = "var(--later)"
                title += " — stable, after the prefix end"
            else:
                colour = "var(--dynamic)"
            pieces.append((block.tokens, colour, title))
            if in_prefix and end is not None and end.message == mi and end.block == bi:
                in_prefix = False
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="request of {_e(artifact.name)}">'
    ]
    x = left
    prefix_tokens = artifact.cache.prefix_tokens
    for tokens, colour, title in pieces:
        w = max(2.0, tokens * scale)
        kind = {"var(--stable)": "cached", "var(--uncached)": "uncached", "var(--later)": "later"}.get(
            colour, "dynamic"
        )
        parts.append(
            f'<rect class="block {kind}" x="{x:.1f}" y="14" width="{w:.1f}" height="20" fill="{colour}" '
            f'stroke="#fff" stroke-width="1"><title>{_e(title)}</title></rect>'
        )
        x += w
    if end is not None:
        prefix_x = left + prefix_tokens * scale
        stroke = "var(--bust)" if bust else "var(--ink)"
        parts.append(
            f'<line x1="{prefix_x:.1f}" y1="10" x2="{prefix_x:.1f}" y2="40" stroke="{stroke}" stroke-width="2"/>'
            f'<text class="small" x="{min(prefix_x, width - 260):.1f}" y="52">prefix end: {prefix_tokens} tokens</text>'
        )
    if minimum is not None and minimum * scale < width:
        mx = left + minimum * scale
        parts.append(
            f'<line x1="{mx:.1f}" y1="10" x2="{mx:.1f}" y2="38" stroke="#555" stroke-dasharray="3,3"/>'
            f'<text class="small" text-anchor="end" x="{max(mx - 3, 140):.1f}" y="9">provider minimum {minimum}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _reason(artifact: Any) -> str:
    end = artifact.cache.prefix_end
    reason = getattr(end, "reason", None) if end is not None else None
    source = getattr(end, "source", None) if end is not None else None
    line = getattr(end, "line", None) if end is not None else None
    if not reason:
        return "—"
    where = f" ({source}:{line})" if source and line else ""
    return f"{reason}{where}"


def report_html(
    artifacts: Mapping[str, Any],
    *,
    title: str = "promptc cache report",
    diff: Any = None,
    cost: Any = None,
    diff_cost: Any = None,
    traffic_label: str | None = None,
    observed: Any = None,
) -> str:
    """The page. `artifacts` by name (`model.Artifact`); `diff` a `diff.ManifestDiff` against an
    old build; `cost` a `cost.TreeCost` of the build; `diff_cost` a `cost.DiffCost`; `observed` a
    `reconcile.Reconciliation` of usage records against the build."""
    names = sorted(artifacts)
    busted = {b.name for b in diff.busts} if diff is not None else set()
    minimums = {
        name: (a.provider.min_cacheable_tokens if a.provider is not None else None) for name, a in artifacts.items()
    }
    root = prefix_tree(artifacts)
    longest = max((a.totals.tokens for a in artifacts.values()), default=1) or 1
    scale = 1000 / longest
    shared = sum(1 for group in _shared_groups(artifacts))
    out: list[str] = [
        "<!DOCTYPE html>",
        # the mark in the first lines: the file is promptc's to replace (`promptc.runtime.confine`)
        f"<!-- {GENERATED_MARK} {VERSION} (`promptc report`): do not edit, run it again -->",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<header><h1>{_e(title)}</h1>",
        f'<p class="meta">{len(names)} prompts · {_plural(shared, "shared prefix", "shared prefixes")}'
        + (f" · diff against an old build: {_plural(len(busted), 'cache bust')}" if diff is not None else "")
        + (f" · prices: {_e(cost.table.label)}" if cost is not None else "")
        + (f" · traffic: {_e(traffic_label)}" if traffic_label else "")
        + (f" · usage records: {_e(observed.records_path)}" if observed is not None else "")
        + "</p></header>",
        '<p><label>Filter prompts <input id="filter" type="search" placeholder="name contains…"></label> '
        '<span id="shown" class="meta"></span></p>',
        '<section id="tree"><h2>Prefix tree</h2>',
        '<p class="meta">Each box is a run of the cache-stable prefix in cache order (tools, output schema, then stable '
        "blocks); prompts that share it share the box, and split where their next block differs. +N: the box's tokens; "
        "Σ: tokens from the start of the request.</p>",
        '<p class="legend">'
        + "".join(
            f'<span><i class="swatch" style="background:{_COLOURS[key]}"></i>{label}</span>'
            for key, label in (
                ("met", "provider minimum met"),
                ("some", "met for some prompts"),
                ("none", "below the minimum"),
                ("unknown", "no provider profile"),
            )
        )
        + "</p>",
        f'<div class="scroll">{_tree_svg(root, minimums, busted)}</div></section>',
    ]
    if diff is not None:
        out.append(_diff_section(diff, diff_cost, money))
    if cost is not None:
        out.append(_cost_section(cost, money))
    if observed is not None:
        out.append(_observed_section(observed, money))
    out.append('<section id="prompts"><h2>Prompts</h2>')
    out.append(
        '<p class="legend"><span><i class="swatch" style="background:var(--stable)"></i>cached prefix</span>'
        '<span><i class="swatch" style="background:var(--uncached)"></i>stable prefix below the provider\'s '
        "minimum (not cached)</span>"
        '<span><i class="swatch" style="background:var(--later)"></i>stable, after the prefix end</span>'
        '<span><i class="swatch" style="background:var(--dynamic)"></i>dynamic</span>'
        f"<span>one scale: the longest request is {longest} tokens</span></p>"
    )
    for name in names:
        a = artifacts[name]
        bust = name in busted
        profile = a.provider
        cacheable = a.cache.cacheable_tokens
        facts = [
            f"model {_e(a.model or '—')}",
            f"{a.totals.tokens} tokens ({_e(a.tokenizer.name)}{'' if a.tokenizer.exact else ', estimate'})",
            f"prefix {a.cache.prefix_tokens} tokens",
            "cached " + ("—" if cacheable is None else f"{cacheable} tokens"),
        ]
        if profile is not None:
            facts.append(f"minimum {profile.min_cacheable_tokens} ({_e(profile.name)})")
        out.append(
            f'<div class="prompt{" bust" if bust else ""}" data-name="{_e(name)}"><h3>{_e(name)}'
            + (' <span style="color:var(--bust)">cache bust</span>' if bust else "")
            + f"</h3><p>{' · '.join(facts)}</p>"
            f"<p>prefix ends: {_e(_reason(a))}</p>{_bar_svg(a, scale, bust)}</div>"
        )
    out.append("</section>")
    out.append(f"<script>{JS}</script></body></html>")
    return "\n".join(out) + "\n"


def _shared_groups(artifacts: Mapping[str, Any]) -> list[list[str]]:
    groups: dict[str, list[str]] = {}
    for name, a in sorted(artifacts.items()):
        if a.cache.prefix_sha256:
            groups.setdefault(a.cache.prefix_sha256, []).append(name)
    return [g for g in groups.values() if len(g) > 1]


def _diff_section(diff: Any, diff_cost: Any, money: Any) -> str:
    misses = {m.name: m for m in diff_cost.misses} if diff_cost is not None else {}
    rows = []
    for bust in diff.busts:
        miss = misses.get(bust.name)
        at_stake = "—" if miss is None else "$" + money(miss.cost)
        rows.append(
            f'<tr class="bust"><td>{_e(bust.name)}</td><td><code>{_e((bust.old_prefix_sha256 or "")[:12])}</code> → '
            f'<code>{_e((bust.new_prefix_sha256 or "none")[:12])}</code></td><td class="num">{bust.tokens_at_stake}</td>'
            f'<td class="num">{bust.new_prefix_tokens}</td><td class="num">{at_stake}</td></tr>'
        )
    body = "".join(rows) or '<tr><td colspan="5">no cache busts</td></tr>'
    extra = []
    if diff.added:
        extra.append("added: " + ", ".join(_e(n) for n in diff.added))
    if diff.removed:
        extra.append("removed: " + ", ".join(_e(n) for n in diff.removed))
    money_line = ""
    if diff_cost is not None:
        label = _e(diff_cost.after.table.label)
        money_line = (
            f'<p class="meta">per day ${money(diff_cost.day_before)} before → ${money(diff_cost.day_after)} after; '
            f"deploy ${money(diff_cost.deploy)} once (prices: {label})</p>"
        )
    return (
        '<section id="diff"><h2>Diff against the old build</h2>'
        f"<p>{_plural(len(diff.busts), 'cache bust')}, {diff.tokens_at_stake} prefix tokens at stake"
        + (f" · {'; '.join(extra)}" if extra else "")
        + "</p>"
        + money_line
        + '<table><thead><tr><th>prompt</th><th>prefix</th><th class="num">tokens at stake</th>'
        '<th class="num">new prefix tokens</th><th class="num">deploy cost</th></tr></thead>'
        f"<tbody>{body}</tbody></table></section>"
    )


def _cost_section(cost: Any, money: Any) -> str:
    rows = []
    for p in cost.prompts:
        f = p.facts
        per_day = "—" if p.requests_per_day is None else f"{p.requests_per_day:,}"
        if p.price is None:
            rows.append(
                f'<tr><td>{_e(f.name)}</td><td class="num">{per_day}</td>'
                f'<td colspan="5">not priced: {_e(p.unpriced)}</td></tr>'
            )
            continue
        day = (
            f'<td class="num">${money(p.day_with_cache)}</td><td class="num">${money(p.day_without_cache)}</td>'
            if p.day_with_cache is not None
            else '<td class="num">—</td><td class="num">—</td>'
        )
        rows.append(
            f'<tr><td>{_e(f.name)}</td><td class="num">{per_day}</td><td>{_e(p.price.key)}</td>'
            f'<td class="num">${money(p.request_uncached or Decimal(0))}</td>'
            f'<td class="num">${money(p.request_hit or Decimal(0))}</td>{day}</tr>'
        )
    share = cost.cacheable_share()
    summary = f"cacheable share {share * 100:.1f}%" if share is not None else ""
    if cost.traffic:
        summary += f" · ${money(cost.day_with())}/day with caching, ${money(cost.day_without())}/day without"
    return (
        f'<section id="cost"><h2>Cost</h2><p>{summary} (prices: {_e(cost.table.label)})</p>'
        '<table><thead><tr><th>prompt</th><th class="num">requests/day</th><th>priced as</th>'
        '<th class="num">per request</th>'
        '<th class="num">per cache hit</th><th class="num">per day cached</th><th class="num">per day uncached</th>'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def _observed_section(observed: Any, money: Any) -> str:
    """Promised against observed hits (`promptc reconcile`): per prompt, and each gap's cause with
    its source line."""
    rows = []
    causes = []
    for p in sorted(observed.prompts.values(), key=lambda r: r.name):
        ratio = "—" if p.hit_ratio is None else f"{p.hit_ratio * 100:.1f}%"
        marked = ' class="bust"' if p.hit_ratio is not None and p.hit_ratio < 1 and p.lost > 0 else ""
        rows.append(
            f'<tr data-name="{_e(p.name)}"{marked}><td>{_e(p.name)}</td>'
            f'<td class="num">{p.requests}</td><td class="num">{p.predicted}</td><td class="num">{p.cached}</td>'
            f'<td class="num">{ratio}</td><td class="num">${money(p.lost)}</td></tr>'
        )
        for kind in CAUSES:
            cause = p.causes.get(kind)
            if cause is None:
                continue
            where = p.where.get(kind)
            place = f" <code>{_e(where.label())}</code>" if where is not None else ""
            causes.append(
                f"<li><b>{_e(p.name)}</b>: {_e(kind)}, {_plural(cause.requests, 'request')}, "
                f"{cause.missed} tokens missed, ${money(cause.lost)} lost{place} — {_e(p.details.get(kind, ''))}</li>"
            )
    ratio = observed.hit_ratio
    summary = (
        f"{_plural(observed.requests, 'request')}, {observed.total('predicted')} tokens predicted cached, "
        f"{observed.total('cached')} cached"
        + ("" if ratio is None else f" ({ratio * 100:.1f}%)")
        + f", ${money(observed.lost)} lost against the prediction"
    )
    listed = f"<ul>{''.join(causes)}</ul>" if causes else "<p>no gaps: every request hit as predicted</p>"
    return (
        f'<section id="observed"><h2>Observed hits</h2><p>{summary} (records: {_e(observed.records_path)}; '
        f"prices: {_e(observed.table_label)})</p>"
        '<table><thead><tr><th>prompt</th><th class="num">requests</th><th class="num">predicted</th>'
        '<th class="num">cached</th><th class="num">hit</th><th class="num">lost</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table><h3>Causes</h3>{listed}</section>"
    )
