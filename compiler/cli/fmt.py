"""`promptc fmt`: rewrite sources in the canonical layout, never changing what is sent."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..driver.sources import loose_tree, read_tree
from ..facts import codes
from ..facts.diagnostics import Diagnostic, make
from ..facts.language import SOURCE_SUFFIX
from ..runtime.confine import edit_refusal, source_folder_refusal
from ..tools.fmt import FileResult, format_tree, unified_diff, write_results
from .common import FORMATS, Reporter, project_config


def _plural(count: int, word: str = "file") -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def _targets(paths: tuple[str, ...], src: Path) -> tuple[dict[Path, list[tuple[str, bool]]], list[Diagnostic]]:
    """(root, prefix or file under it) for every PATH, and E934 for those that are not sources.
    A path inside the configured source folder is formatted as part of it (so its includes
    resolve); any other folder is a source folder of its own, any other file is read in its own."""
    wanted: dict[Path, list[tuple[str, bool]]] = {}
    problems: list[Diagnostic] = []
    for given in paths or (str(src),):
        path = Path(given)
        is_file = path.is_file() and path.name.endswith(SOURCE_SUFFIX)
        if not (path.is_dir() or is_file):
            what = "does not exist" if not path.exists() else "is not a folder or a `.prompt` file"
            problems.append(
                make(
                    codes.FMT_NOT_A_SOURCE,
                    f"`{given}` {what}",
                    None,
                    "pass source folders or `.prompt` files",
                    path=given,
                )
            )
            continue
        if _inside(path, src) and src.is_dir():
            root = src
            rel = path.resolve().relative_to(src.resolve()).as_posix()
        else:  # named as given: a file that is a link out of its folder is its folder's (and refused)
            root, rel = (path, ".") if path.is_dir() else (path.parent, path.name)
        wanted.setdefault(root, []).append(("" if rel == "." else rel, is_file))
    return wanted, problems


@click.command("fmt")
@click.argument("paths", nargs=-1)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 listing the files that would change.")
@click.option("--diff", is_flag=True, help="Write nothing; print the changes as a unified diff (exit 1 if any).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="Output format.")
@click.option("--quiet", "-q", is_flag=True, help="Print errors only.")
def fmt_cmd(paths: tuple[str, ...], check: bool, diff: bool, fmt: str, quiet: bool) -> None:
    """Format PATHS (folders or .prompt files; default: the source folder) in the canonical layout.

    The compiled artifact of every file stays byte-identical: fmt compiles each file before and
    after (in memory) and refuses, exit 1, any file that does not compile or whose artifact would
    change. See docs/formatter.md."""
    config, config_diags = project_config({})
    targets, diagnostics = _targets(paths, Path(config.src))
    diagnostics = [*config_diags, *diagnostics]
    results: list[FileResult] = []
    failed: set[str] = set()
    for root, picks in targets.items():
        if not (check or diff):
            # the source folder [tool.promptc] names is written only inside the project
            outside = source_folder_refusal(
                root, "src", project=config.project, setting=config.setting("src", root) if paths == () else None
            )
            if outside is not None:
                diagnostics.append(outside)
                continue
        if root != Path(config.src) and all(is_file for _, is_file in picks):
            # files outside the source folder, each on its own: their folder (`~`, say) is read
            # only as far as they need, never walked
            tree, read_diags = loose_tree(root), list[Diagnostic]()
        else:
            tree, read_diags = read_tree(root, Path(config.out))
        diagnostics += read_diags
        rels = []
        for rel, is_file in picks:
            if is_file:
                chosen = [rel] if rel in tree.files else []
                # a file named that is a link out of its folder is not read, nor written: say so
                outside = None if chosen else edit_refusal(root / rel, root, "fmt", (root / rel).as_posix())
                if outside is not None:
                    diagnostics.append(outside)
            else:
                prefix = f"{rel}/" if rel else ""
                chosen = [r for r in tree.files if r.endswith(SOURCE_SUFFIX) and r.startswith(prefix)]
            rels += [r for r in chosen if r not in rels]
        result = format_tree(root, sorted(rels), config, tree=tree)
        if not (check or diff):
            problems = write_results(result, root)
            failed |= {d.path for d in problems}  # not written: neither reported nor counted as reformatted
            diagnostics += problems
        diagnostics += result.diagnostics
        results += result.files
    changed = [r for r in results if r.status == "changed" and r.display not in failed]
    unwritten = [r for r in results if r.status == "changed" and r.display in failed]
    unchanged = [r for r in results if r.status == "unchanged"]
    refused = [r for r in results if r.status == "refused"]
    if fmt != "json":
        for item in changed:
            if diff:
                click.echo(unified_diff(item), nl=False)
            elif not quiet:
                click.echo(f"{'would reformat' if check else 'reformatted'} {item.display}")
    if check or diff:
        summary = f"fmt: {_plural(len(changed))} would be reformatted, {len(unchanged)} already formatted"
    else:
        summary = f"fmt: {_plural(len(changed))} reformatted, {len(unchanged)} unchanged"
    if refused:
        summary += f", {len(refused)} refused"
    if unwritten:
        summary += f", {len(unwritten)} not written"
    extra = {
        "check": check or diff,
        "changed": [r.display for r in changed],
        "unchanged": [r.display for r in unchanged],
        "refused": [r.display for r in refused],
        "not_written": [r.display for r in unwritten],
    }
    if diff:
        extra["diffs"] = {r.display: unified_diff(r) for r in changed}
    status = Reporter(fmt, False, quiet).emit(diagnostics, len(results), extra=extra, summary=summary)
    if status == 0 and (check or diff) and changed:
        status = 1
    sys.exit(status)
