"""`promptc build` and `promptc check`."""

from __future__ import annotations

import sys

import click

from .common import Reporter, common_options, project_config


@click.command("build")
@click.argument("src", required=False)
@click.option("-o", "--out", default=None, help="Output folder (config: out; default build).")
@common_options
def build_cmd(src, out, fmt, strict, quiet, defines, tokenizer, provider) -> None:
    """Compile SRC (config: src; default prompts_src) into OUT. All or nothing: on any error OUT is untouched."""
    from ..driver import build, check
    from ..progress import progress_callback

    config, config_diags = project_config(src, out, defines, tokenizer=tokenizer, provider=provider)
    reporter = Reporter(fmt, strict, quiet)
    if reporter.strict:
        # a strict build must not write when a warning would fail it: check first, then write
        preview = check(config.src, config.out, config)
        if any(d.severity == "warning" for d in preview.diagnostics) or not preview.ok:
            sys.exit(reporter.emit([*config_diags, *preview.diagnostics], preview.source_count, summary="build failed"))
    with progress_callback() as on_progress:
        result = build(config.src, config.out, config, on_progress=on_progress)
    diagnostics = [*config_diags, *result.diagnostics]
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
def check_cmd(src, out, locked, fmt, strict, quiet, defines, tokenizer, provider) -> None:
    """Compile SRC without writing anything; with --locked, fail when OUT is stale."""
    from ..driver import check

    config, config_diags = project_config(src, out, defines, tokenizer=tokenizer, provider=provider)
    result = check(config.src, config.out, config, locked=locked)
    reporter = Reporter(fmt, strict, quiet)
    summary = "check"
    if locked and result.stale:
        summary = f"check: {config.out} is stale ({len(result.stale)} file{'s' if len(result.stale) != 1 else ''})"
    extra = {"stale": list(result.stale)}
    sys.exit(reporter.emit([*config_diags, *result.diagnostics], result.source_count, extra=extra, summary=summary))
