"""`promptc diff`: which prompts' cache prefix or input contract changed between two manifests."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

import click
import orjson

from ..driver import compile_tree
from ..driver.sources import read_tree
from ..facts import diagnostics
from ..facts.language import FAIL_KINDS, MANIFEST
from ..runtime.buildfolder import BuildFolderError, manifest_path, parse_document, read_document
from ..runtime.model import Manifest
from ..tools.diff import (
    ManifestError,
    diff_manifests,
    locate_busts,
    manifest_of,
    render_github,
    render_markdown,
    render_text,
    summary_line,
)
from .common import USAGE_ERROR, envelope, settings
from .cost import FailOnType, diff_money
from .oldtree import OldTreeError, from_folder, from_revision


def _usage_error(message: str) -> NoReturn:
    click.echo(f"promptc diff: {message}", err=True)
    sys.exit(USAGE_ERROR)


def _read_manifest(arg: str) -> dict[str, Any]:
    """A manifest from a file, a build folder (its manifest.json), or `-` for stdin."""
    try:
        if arg == "-":
            return parse_document(sys.stdin.buffer.read(), "stdin")
        path = manifest_path(arg)
        return read_document(path, arg if path == Path(arg) else str(path))
    except BuildFolderError as exc:
        _usage_error(str(exc))


def _fail_with(diagnostic: diagnostics.Diagnostic, fmt: str) -> NoReturn:
    """An old tree that cannot be read (E940–E943): the diagnostic, exit 2."""
    if fmt == "json":
        payload = envelope("diff", diagnostics=[diagnostic.to_json()], errors=1, warnings=0)
        click.echo(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())
    elif fmt == "github":
        click.echo(diagnostics.render_github(diagnostic))
    elif fmt == "markdown":
        click.echo(diagnostics.render_markdown([diagnostic], "promptc diff: the old tree cannot be read"))
        click.echo(diagnostics.render_text(diagnostic), err=True)
    else:
        click.echo(diagnostics.render_text(diagnostic), err=True)
    sys.exit(USAGE_ERROR)


@click.command("diff")
@click.argument("old_manifest", required=False)
@click.argument("new_manifest", required=False)
@click.option(
    "--against",
    "against",
    default=None,
    metavar="REV",
    help="Compare with git revision REV (`origin/main`): its sources and build, read with git, no checkout.",
)
@click.option(
    "--old-src",
    "old_src",
    default=None,
    metavar="DIR",
    help="The old source folder, to point each cache bust at its first differing line.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("text", "json", "github", "markdown")),
    default="text",
    show_default=True,
    help="Output format (markdown: a report for a pull request, e.g. GitHub's $GITHUB_STEP_SUMMARY).",
)
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    type=FailOnType(FAIL_KINDS),
    help="Exit 1 when a change of this kind exists (repeatable): bust, contract, breaking (added inputs only), "
    "output (any change of an output schema), output-breaking (one that can break the code that parses responses), removed; "
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
    old_manifest: str | None,
    new_manifest: str | None,
    against: str | None,
    old_src: str | None,
    fmt: str,
    fail_on: tuple[str, ...],
    traffic_path: str | None = None,
) -> None:
    """Compare OLD_MANIFEST (or the build of git revision --against REV) with NEW_MANIFEST
    (default: OUT/manifest.json from the config).

    Reports prompts whose cache-stable prefix changed (cache busts, with the prefix tokens at stake
    and what the provider profile cached of them), whose inputs changed (an added input is
    breaking), and prompts added or removed. With the old sources (--old-src DIR, or --against),
    each cache bust names the first character that differs, as a line in the new and the old
    source. Either manifest may be a build folder, and OLD_MANIFEST may be `-` for stdin:

    \b
        promptc diff --against origin/main --fail-on contract
        git show origin/main:build/manifest.json | promptc diff - --fail-on contract

    Exit codes: 0 no change named by --fail-on, 1 such a change exists, 2 a manifest or the old
    tree cannot be read.
    """
    config = settings().config
    if against is not None and old_manifest is not None and new_manifest is not None:
        _usage_error("give OLD_MANIFEST or --against REV, not both")
    if against is not None and old_manifest is not None:
        new_manifest, old_manifest = old_manifest, None  # `diff --against REV NEW`
    if against is None and old_manifest is None:
        _usage_error("give OLD_MANIFEST (a manifest or a build folder), or --against REV")
    if new_manifest is None:
        new_manifest = str(Path(config.out) / MANIFEST)
    old_tree = None
    try:
        if against is not None:
            old_tree = from_revision(against, config.src, config.out)
        if old_src is not None:
            folder = from_folder(old_src)
            old_tree = folder if old_tree is None else replace(old_tree, sources=folder.sources)
    except OldTreeError as exc:
        _fail_with(exc.diagnostic, fmt)
    old: Manifest | dict[str, Any]
    if old_tree is not None and old_manifest is None:
        if old_tree.manifest is not None:
            try:
                old = parse_document(old_tree.manifest, f"{against}:{config.out}/{MANIFEST}")
            except BuildFolderError as exc:
                _usage_error(str(exc))
        else:
            old = compile_tree(old_tree.sources, config)[1]
    else:
        assert old_manifest is not None
        old = _read_manifest(old_manifest)
    try:
        # typed once, here; the diff and its cost read the same two manifests
        old_typed, new_typed = manifest_of(old, "old"), manifest_of(_read_manifest(new_manifest), "new")
        diff = diff_manifests(old_typed, new_typed)
    except ManifestError as exc:
        _usage_error(str(exc))
    if old_tree is not None and diff.busts:
        src = Path(config.src)
        if src.is_dir():
            new_tree, _ = read_tree(src, Path(config.out))
            diff = locate_busts(diff, old_tree.sources, new_tree, config)
    failing = diff.failing(fail_on)

    # with --against the old artifacts stay in git: the old sizes are estimated (the output says so)
    money = diff_money(old_typed, old_manifest or "-", new_typed, new_manifest, traffic_path, fail_on)
    if money is not None:
        failing += money.failing
    if fmt == "json":
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

        click.echo(f"diff: {summary_line(diff)}")
    elif fmt == "markdown":
        lines = money.text_lines() if money is not None else ()
        click.echo(render_markdown(diff, failing, lines, title=f"promptc diff against {against or old_manifest}"))
    else:
        click.echo(render_text(diff))
        for line in money.text_lines() if money is not None else ():
            click.echo(line)
    if failing:
        if fmt != "json":
            click.echo(f"diff failed: {', '.join(failing)} (--fail-on)", err=True)
        sys.exit(1)
