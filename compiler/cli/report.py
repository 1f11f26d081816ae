"""`promptc report -o report.html`: the build's prompt caches as one self-contained HTML page."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..facts.diagnostics import render_text
from ..runtime.atomic import reason, write_file
from ..runtime.confine import refusal
from ..tools.cost import diff_cost, tree_cost
from ..tools.diff import diff_manifests
from ..tools.report import report_html
from .common import USAGE_ERROR, settings
from .cost import echo_warnings, load_traffic, read_build, source_root
from .reconcile import run_reconcile


@click.command("report")
@click.option("-o", "--output", "output", required=True, metavar="FILE", help="Where to write the HTML page.")
@click.option("--out", "out", default=None, help="Build folder (default from config: build).")
@click.option(
    "--old",
    "old",
    default=None,
    metavar="MANIFEST_OR_BUILD_DIR",
    help="An older build (its folder or its manifest.json): highlight the prefixes this build busts.",
)
@click.option(
    "--traffic",
    "traffic_path",
    default=None,
    metavar="FILE",
    help="JSON object: prompt name → requests per day; adds cost per day (and the deploy cost with --old).",
)
@click.option(
    "--records",
    "records",
    default=None,
    metavar="FILE",
    help="Usage records (JSONL or an OpenTelemetry export): add the observed hits and their causes (promptc reconcile).",
)
def report_cmd(output: str, out: str | None, old: str | None, traffic_path: str | None, records: str | None) -> None:
    """Write one static HTML page (no network, no external assets): the prefix tree of all prompts,
    each prompt's request as stable and dynamic bars with its prefix end, with --old the cache
    busts and what they cost, and with --records the hits observed against the ones promised."""
    folder = out or settings().config.out
    manifest, facts, artifacts = read_build("report", folder)
    missing = sorted(set(manifest.artifacts) - set(artifacts))
    if missing:
        click.echo(
            f"promptc report: {folder} does not hold the artifacts its manifest lists ({', '.join(missing[:3])}"
            f"{' …' if len(missing) > 3 else ''}): run `promptc build`",
            err=True,
        )
        sys.exit(USAGE_ERROR)
    old_manifest = old_facts = None
    if old is not None:
        old_manifest, old_facts, _ = read_build("report", old)
    traffic = None
    if traffic_path is not None:
        traffic = load_traffic("report", traffic_path, list(facts), list(old_facts or ()))
    diff = diff_manifests(old_manifest, manifest) if old_manifest is not None else None
    cost = tree_cost(facts.values(), traffic)
    echo_warnings(cost.warnings(source_root()))
    money = diff_cost(old_facts, facts, traffic) if old_facts is not None and traffic is not None else None
    observed = None
    if records is not None:
        observed = run_reconcile("report", records, folder)
    page = report_html(artifacts, diff=diff, cost=cost, diff_cost=money, traffic_label=traffic_path, observed=observed)

    # the user's path, anywhere; but never through a link, nor over a file promptc did not write
    refused = refusal(output, "report -o", project=settings().config.project, generated=True)
    if refused is not None:
        click.echo(render_text(refused), err=True)
        sys.exit(1)
    try:
        # atomic: the previous report stays whole until the new one is complete on disk
        write_file(Path(output), page.encode("utf-8"), symlinks="refuse")
    except OSError as exc:
        click.echo(f"promptc report: cannot write {output}: {reason(exc)}; it is unchanged", err=True)
        sys.exit(1)
    count = len(diff.busts) if diff is not None else 0
    busts = f", {count} cache bust{'' if count == 1 else 's'}" if diff is not None else ""
    click.echo(f"report: {len(artifacts)} prompts{busts} → {output}")
