"""`promptc diff`: which prompts' cache prefix or input contract changed between two manifests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from ..diff import FAIL_KINDS
from .common import USAGE_ERROR, settings
from .cost import FailOnType


def _usage_error(message: str) -> NoReturn:
    click.echo(f"promptc diff: {message}", err=True)
    sys.exit(USAGE_ERROR)


def _read_manifest(arg: str) -> dict[str, Any]:
    """A manifest from a file, a build folder (its manifest.json), or `-` for stdin."""
    import orjson

    label = "stdin" if arg == "-" else arg
    try:
        if arg == "-":
            data = sys.stdin.buffer.read()
        else:
            path = Path(arg)
            if path.is_dir():
                path = path / "manifest.json"
                label = str(path)
            data = path.read_bytes()
    except OSError as exc:
        _usage_error(f"cannot read {label}: {exc.strerror or exc}")
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        _usage_error(f"{label} is not valid JSON: {exc}")
    if not isinstance(document, dict):
        _usage_error(f"{label} is not a promptc manifest (expected a JSON object)")
    return document


@click.command("diff")
@click.argument("old_manifest")
@click.argument("new_manifest", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("text", "json", "github")),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    type=FailOnType(FAIL_KINDS),
    help="Exit 1 when a change of this kind exists (repeatable): bust, contract, breaking (added inputs only), removed; "
    "cost>AMOUNT: when the first day's extra cost (deploy + change per day, in dollars) exceeds AMOUNT (needs --traffic).",
)
@click.option(
    "--traffic",
    "traffic_path",
    default=None,
    metavar="FILE",
    help="JSON object: prompt name → requests per day; adds the cost per day before and after, and the deploy cost.",
)
def diff_cmd(
    old_manifest: str, new_manifest: str | None, fmt: str, fail_on: tuple[str, ...], traffic_path: str | None = None
) -> None:
    """Compare OLD_MANIFEST with NEW_MANIFEST (default: OUT/manifest.json from the config).

    Reports prompts whose cache-stable prefix changed (cache busts, with the prefix tokens at stake),
    whose inputs changed (an added input is breaking), and prompts added or removed. Either manifest
    may be a build folder, and OLD_MANIFEST may be `-` for stdin:

    \b
        git show origin/main:build/manifest.json | promptc diff - --fail-on contract

    Exit codes: 0 no change named by --fail-on, 1 such a change exists, 2 a manifest cannot be read.
    """
    from ..diff import ManifestError, diff_manifests, render_github, render_text

    config = settings().config
    if new_manifest is None:
        new_manifest = str(Path(config.out) / "manifest.json")
    old = _read_manifest(old_manifest)
    new = _read_manifest(new_manifest)
    try:
        diff = diff_manifests(old, new)
    except ManifestError as exc:
        _usage_error(str(exc))
    failing = diff.failing(fail_on)
    from .cost import diff_money

    money = diff_money(old, old_manifest, new, new_manifest, traffic_path, fail_on)
    if money is not None:
        failing += money.failing
    if fmt == "json":
        import orjson

        from .common import envelope

        data = diff.to_json()
        data.pop("schema", None)  # the envelope's schema names the document; the diff's fields follow
        if money is not None:
            data["cost"] = money.to_json()
        payload = envelope("diff", **data, fail_on=sorted(set(fail_on)), failed=failing)
        click.echo(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())
    elif fmt == "github":
        for line in render_github(diff, fail_on, source_root=Path(config.src).as_posix()):
            click.echo(line)
        for line in money.github_lines() if money is not None else ():
            click.echo(line)
        from ..diff import summary_line

        click.echo(f"diff: {summary_line(diff)}")
    else:
        click.echo(render_text(diff))
        for line in money.text_lines() if money is not None else ():
            click.echo(line)
    if failing:
        if fmt != "json":
            click.echo(f"diff failed: {', '.join(failing)} (--fail-on)", err=True)
        sys.exit(1)
