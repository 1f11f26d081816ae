"""`promptc reconcile RECORDS`: the hits the build promised against the hits the provider reported.

The classification lives in `promptc.tools.reconcile`; this module reads the build, the records and (with
`--against REV`) the revision's prefixes, prints, and picks the exit code: 0, 1 when a `--fail-on`
limit is crossed, 2 when the records or the build cannot be read.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import orjson

from ..driver import compile_tree
from ..driver.sources import read_tree
from ..facts import codes, diagnostics
from ..facts.diagnostics import file_span, make, use_color
from ..runtime.model import ArtifactError, Manifest
from ..tools.cost import PromptFacts, Unpriced, unpriced_warnings
from ..tools.reconcile import (
    FailOn,
    Locator,
    ReadStats,
    SourceLocator,
    parse_fail_on,
    read_records,
    reconcile,
    records_problem,
    render_github,
    render_text,
)
from .common import USAGE_ERROR, envelope, settings
from .cost import read_build
from .oldtree import OldTreeError, from_revision

if TYPE_CHECKING:
    FailOnParam = click.ParamType[FailOn]
    SecondsParam = click.ParamType[float]
else:  # click's ParamType is generic from 8.2 on only
    FailOnParam = SecondsParam = click.ParamType


class FailOnRule(FailOnParam):
    name = "hit<RATIO|lost>DOLLARS"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> FailOn:
        if isinstance(value, FailOn):
            return value
        try:
            return parse_fail_on(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class Seconds(SecondsParam):
    """A duration in seconds: a finite number ≥ 0 (`nan`, `inf` and `-1` are usage errors, never
    a reorder buffer that holds everything or nothing)."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(number) or number < 0:
            self.fail(f"{value!r} is not a finite number of seconds ≥ 0", param, ctx)
        return number


def run_reconcile(
    command: str,
    records: str,
    folder: str,
    *,
    against: str | None = None,
    window: float = 5.0,
    horizon: float = 600.0,
    fmt: str = "text",
) -> Any:
    """The reconciliation of `records` against the build in `folder` (exit 2 when either cannot
    be read); W951 and W953 diagnostics are printed to stderr in text and github formats."""
    config = settings().config
    manifest, _facts, artifacts = read_build(command, folder)
    missing = sorted(set(manifest.artifacts) - set(artifacts))
    if missing:
        click.echo(
            f"promptc {command}: {folder} does not hold the artifacts its manifest lists ({', '.join(missing[:3])}"
            f"{' …' if len(missing) > 3 else ''}): run `promptc build`",
            err=True,
        )
        sys.exit(USAGE_ERROR)
    path = Path(records)
    problem = records_problem(records)
    if problem is not None:
        click.echo(
            diagnostics.render_github(problem) if fmt == "github" else diagnostics.render_text(problem),
            err=fmt != "github",
        )
        sys.exit(USAGE_ERROR)
    old_prefixes = None
    old_tree = None
    if against is not None:
        old_prefixes, old_tree = _revision(command, against, config, fmt)
    locator: Locator
    src = Path(config.src)
    if src.is_dir():
        tree, _ = read_tree(src, Path(config.out))
        locator = SourceLocator(tree, config, old_tree)
    else:
        locator = Locator()
    stats = ReadStats()
    try:
        result = reconcile(
            read_records(path, stats, display=records),
            artifacts,
            stats,
            old_prefixes=old_prefixes,
            against=against,
            locator=locator,
            window=window,
            horizon=horizon,
            records_path=records,
        )
    except OSError as exc:
        diagnostic = make(
            codes.RECORDS_UNREADABLE,
            f"cannot read the usage records: {exc.strerror or exc}",
            file_span(),
            None,
            path=records,
        )
        click.echo(diagnostics.render_text(diagnostic), err=True)
        sys.exit(USAGE_ERROR)
    if fmt != "json":
        color = use_color(settings().color, sys.stderr)
        for d in stats.diagnostics:
            if fmt == "github":
                click.echo(diagnostics.render_github(d))
            else:
                click.echo(diagnostics.render_text(d, color=color) + "\n", err=True, color=color)
        hidden = stats.hidden()
        if hidden is not None:
            click.echo(f"promptc {command}: {hidden}", err=True)
        for d in unpriced_diagnostics(result, str(src)):
            if fmt == "github":
                click.echo(diagnostics.render_github(d))
            else:
                click.echo(diagnostics.render_text(d, color=color) + "\n", err=True, color=color)
    return result


def unpriced_diagnostics(result: Any, root: str) -> list[diagnostics.Diagnostic]:
    """W948 for each model the records were sent to that the price table does not price at the
    records' moments: their money figures leave those records out."""
    missing = []
    for model, (why, prompt) in sorted(result.unpriced.items()):
        found = result.prompts.get(prompt)
        source = None if found is None else found.source
        missing.append(
            (PromptFacts(prompt, model, None, None, None, 0, None, None, source=source), Unpriced(why, model))
        )
    return unpriced_warnings(missing, root)


def _revision(command: str, against: str, config: Any, fmt: str) -> tuple[dict[str, str | None], Any]:
    """The prefix hashes of the build at `against` (its committed manifest, or its sources compiled
    in memory) and its source tree."""
    try:
        old = from_revision(against, config.src, config.out)
    except OldTreeError as exc:
        click.echo(
            diagnostics.render_github(exc.diagnostic) if fmt == "github" else diagnostics.render_text(exc.diagnostic),
            err=True,
        )
        sys.exit(USAGE_ERROR)
    document: Any = None
    if old.manifest is not None:
        try:
            document = orjson.loads(old.manifest)
        except orjson.JSONDecodeError:
            document = None
    try:
        manifest = compile_tree(old.sources, config)[1] if document is None else Manifest.from_json(document)
    except ArtifactError as exc:
        click.echo(f"promptc {command}: the manifest at {against}: {exc}", err=True)
        sys.exit(USAGE_ERROR)
    return {name: entry.prefix_sha256 for name, entry in manifest.artifacts.items()}, old.sources


@click.command("reconcile")
@click.argument("records", metavar="RECORDS")
@click.option("-o", "--out", default=None, help="Build folder (default from config: build).")
@click.option(
    "--against",
    default=None,
    metavar="REV",
    help="A git revision whose prefixes the records may carry: name the change since REV that busts them.",
)
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    type=FailOnRule(),
    help="Exit 1 when a prompt's hit ratio is below RATIO (`hit<0.6`, `hit<60%`) or the money lost against the "
    "prediction is above DOLLARS (`lost>5`). Repeatable.",
)
@click.option("--format", "fmt", type=click.Choice(("text", "json", "github")), default="text", show_default=True)
@click.option(
    "--window",
    type=Seconds(),
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="How long before its timestamp a request without `started_at` is taken to have started.",
)
@click.option(
    "--horizon",
    type=Seconds(),
    default=600.0,
    show_default=True,
    metavar="SECONDS",
    help="How far out of time order records may be written (the reorder buffer).",
)
def reconcile_cmd(
    records: str,
    out: str | None,
    against: str | None,
    fail_on: tuple[Any, ...],
    fmt: str,
    window: float,
    horizon: float,
) -> None:
    """Reconcile usage RECORDS (the JSONL `Rendered.usage(...)` writes, or an OpenTelemetry JSON
    export of spans) with the build: per prompt, requests, predicted cacheable tokens, observed
    cached tokens and hit ratio, money lost against the prediction, and the cause of each gap —
    below the provider minimum, expired TTL, concurrent first writes, another model or provider,
    a stale deploy or a bust since --against REV, dynamic text inside the prefix — with its
    source line. docs/observability.md walks through a day of records."""
    folder = out or settings().config.out
    result = run_reconcile("reconcile", records, folder, against=against, window=window, horizon=horizon, fmt=fmt)
    failing = result.failing(fail_on)
    if fmt == "json":
        payload = envelope(
            "reconcile",
            out=folder,
            **result.to_json(),
            diagnostics=[d.to_json() for d in result.stats.diagnostics]
            + [d.to_json() for d in unpriced_diagnostics(result, str(settings().config.src))],
            fail_on=[str(rule) for rule in fail_on],
            failed=failing,
        )
        click.echo(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())
    elif fmt == "github":
        for line in render_github(result, failing):
            click.echo(line)
    else:
        click.echo(render_text(result))
    if failing:
        if fmt != "json":
            click.echo(f"reconcile failed: {', '.join(failing)} (--fail-on)", err=True)
        sys.exit(1)
