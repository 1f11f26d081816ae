"""`promptc build` and `promptc check`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .common import Reporter, common_options, interrupted, project_config


@click.command("build")
@click.argument("src", required=False)
@click.option("-o", "--out", default=None, help="Output folder (config: out; default build).")
@common_options
def build_cmd(src, out, fmt, strict, allow, quiet, defines, tokenizer, provider) -> None:
    """Compile SRC (config: src; default prompts_src) into OUT. All or nothing: on any error OUT is untouched."""
    from ..driver import build, check
    from ..progress import progress_callback

    config, config_diags = project_config(src, out, defines, tokenizer=tokenizer, provider=provider, allow=allow)
    reporter = Reporter(fmt, strict, quiet, config.allow)
    if reporter.strict:
        # a strict build must not write when a warning would fail it: check first, then write
        with interrupted("build", config.out):
            preview = check(config.src, config.out, config)
        if any(d.severity == "warning" for d in preview.diagnostics) or not preview.ok:
            sys.exit(reporter.emit([*config_diags, *preview.diagnostics], preview.source_count, summary="build failed"))
    with interrupted("build", config.out), progress_callback() as on_progress:
        result = build(config.src, config.out, config, on_progress=on_progress)
    diagnostics = [*config_diags, *result.diagnostics]
    if result.ok:
        diagnostics += _write_bindings(config)
    state = "unchanged" if result.unchanged else ("written" if result.written else "not written")
    summary = f"build {state}: {len(result.prompts)} prompt{'s' if len(result.prompts) != 1 else ''} → {config.out}"
    if not result.ok:
        summary = "build failed, nothing written"
    extra = {"written": result.written, "prompts": len(result.prompts), "out": config.out}
    sys.exit(reporter.emit(diagnostics, result.source_count, extra=extra, summary=summary))


@click.command("check")
@click.argument("src", required=False)
@click.option("-o", "--out", default=None, help="Output folder to compare with --locked.")
@click.option("--locked", is_flag=True, help="Also fail when OUT differs from what build would write.")
@common_options
def check_cmd(src, out, locked, fmt, strict, allow, quiet, defines, tokenizer, provider) -> None:
    """Compile SRC without writing anything; with --locked, fail when OUT is stale."""
    from ..driver import check

    config, config_diags = project_config(src, out, defines, tokenizer=tokenizer, provider=provider, allow=allow)
    with interrupted("check", config.out):
        result = check(config.src, config.out, config, locked=locked)
    reporter = Reporter(fmt, strict, quiet, config.allow)
    summary = "check"
    if locked and result.stale:
        summary = f"check: {config.out} is stale ({len(result.stale)} file{'s' if len(result.stale) != 1 else ''})"
    # paths as the diagnostics spell them, relative to the current folder (`build/stray.json`), not
    # to the output folder as `BuildResult.stale` has them
    stale = [(Path(config.out) / rel).as_posix() for rel in result.stale]
    diagnostics = [*config_diags, *result.diagnostics]
    if locked and result.ok:
        for key, problem in _stale_bindings(config, result):
            diagnostics.append(problem)
            if problem.code == "E905":
                stale.append(getattr(config, key))
                summary = f"check: {config.out} is stale ({len(stale)} file{'s' if len(stale) != 1 else ''})"
    sys.exit(reporter.emit(diagnostics, result.source_count, extra={"stale": stale}, summary=summary))


#: `[tool.promptc]` keys naming generated bindings → what generates them: (module, function)
BINDINGS = {
    "python_bindings": ("bindings", "python_module"),
    "typescript_bindings": ("bindings_ts", "typescript_module"),
}


def _generator(key: str, in_hand: bool = False):
    from importlib import import_module

    module, function = BINDINGS[key]
    return getattr(import_module(f"..{module}", __package__), function + ("_of" if in_hand else ""))


def _write_bindings(config) -> list:
    """Write the configured bindings of the build just written; a file only when its bytes change
    (like the artifacts). Their diagnostics: E920 stops a file, W921 is reported."""
    from pathlib import Path

    from .. import codes
    from ..atomic import reason, write_file
    from ..diagnostics import make

    diagnostics: list = []
    for key in BINDINGS:
        target = getattr(config, key)
        if not target:
            continue
        text, found = _generator(key)(config.out, target)
        diagnostics += found
        if not text:
            continue
        path = Path(target)
        data = text.encode("utf-8")
        try:
            if not path.is_file() or path.read_bytes() != data:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_file(path, data)  # atomic: the old module or the new, never a fragment
        except OSError as exc:
            diagnostics.append(
                make(
                    codes.OUTPUT_UNWRITABLE,
                    f"cannot write `{path.as_posix()}` ({key}): {reason(exc)}; it is unchanged",
                    None,
                    "free some disk space, or check that the path names a file in a folder",
                    path=path.as_posix(),
                )
            )
    return diagnostics


def _stale_bindings(config, result) -> list:
    """(key, diagnostic) for each configured bindings file that is not what `promptc build` would
    write (E905), or that cannot be generated (E920). Compiled in memory: a check compiles every
    prompt."""
    from pathlib import Path

    from .. import codes
    from ..diagnostics import make

    artifacts = {p.name: p.load_artifact() for p in result.prompts}
    artifacts = {name: a for name, a in artifacts.items() if a is not None}
    problems = []
    for key in BINDINGS:
        target = getattr(config, key)
        if not target:
            continue
        text, diagnostics = _generator(key, in_hand=True)(artifacts, config.out, target)
        errors = [d for d in diagnostics if d.severity == "error"]
        if errors:
            problems.append((key, errors[0]))
            continue
        path = Path(target)
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        what = "is missing" if not path.is_file() else "is stale: it is not what `promptc build` would generate"
        problems.append(
            (
                key,
                make(
                    codes.BUILD_STALE,
                    f"`{path.as_posix()}` ({key}) {what}",
                    None,
                    "run `promptc build` and commit the result",
                    path=path.as_posix(),
                ),
            )
        )
    return problems
