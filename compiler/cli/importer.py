"""`promptc import` and `promptc audit`: foreign prompt sources (Dotprompt, Prompty, Jinja2).

The work is `promptc.tools.importers`; this module prints and picks exit codes: 0 when every file was
imported (or audited), 1 when a file was refused or a check differs, 2 for a usage error.
"""

from __future__ import annotations

import sys

import click
import orjson

from ..facts.diagnostics import render_text, summary_line, use_color
from ..facts.language import ROLES
from ..tools.importers import KINDS, AuditReport, audit, import_tree
from .common import FORMATS, Reporter, envelope, settings


@click.command("import")
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("src", type=click.Path(exists=True))
@click.option(
    "-o", "--out", default=None, help="The folder to write `.prompt` sources into (config: src; default prompts_src)."
)
@click.option(
    "--check", is_flag=True, help="Render with the original engine and with promptc, and compare the messages."
)
@click.option(
    "--inputs", "inputs", type=click.Path(), default=None, help="JSON: prompt name → inputs (or a list) for --check."
)
@click.option("--force", is_flag=True, help="Replace files at the target paths that promptc import did not write.")
@click.option("--dry-run", is_flag=True, help="Convert and check, but write nothing.")
@click.option(
    "--role",
    type=click.Choice(ROLES),
    default="system",
    show_default=True,
    help="The role of a plain Jinja template's message.",
)
@click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="Diagnostics format."
)
@click.option("--quiet", "-q", is_flag=True, help="Print errors only.")
def import_cmd(
    kind: str,
    src: str,
    out: str | None,
    check: bool,
    inputs: str | None,
    force: bool,
    dry_run: bool,
    role: str,
    fmt: str,
    quiet: bool,
) -> None:
    """Convert KIND sources under SRC (a folder or one file) into `.prompt` sources in OUT.

    Each file is either written — it compiles, and with --check renders the same messages as its
    own engine — or refused with a located diagnostic and not written. Existing files are replaced
    only when promptc import wrote them and nobody edited them since (or with --force)."""
    config = settings().config
    out = out or config.src
    result = import_tree(
        kind, src, out, write=not dry_run, force=force, check=check, inputs=inputs, config=config, role=role
    )
    written = sum(1 for f in result.files if f.status == "written")
    unchanged = sum(1 for f in result.files if f.status == "unchanged")
    partials = sum(1 for f in result.files if f.partial and f.status != "refused")
    summary = f"import {kind}: {result.imported} imported ({partials} partial{'s' if partials != 1 else ''}), {result.refused} refused"
    if not dry_run:
        summary += f"; {written} written, {unchanged} unchanged in {out}"
    if check:
        renders, prompts = sum(result.checked.values()), len(result.checked)
        summary += f"; --check compared {renders} render{'s' if renders != 1 else ''} of {prompts} prompt{'s' if prompts != 1 else ''}"
    extra = {
        "kind": kind,
        "out": out,
        "imported": result.imported,
        "refused": result.refused,
        "files": [
            {"source": f.source, "target": f.target, "status": f.status, "partial": f.partial, "extra": list(f.extra)}
            for f in result.files
        ],
        "checked": dict(result.checked),
    }
    reporter = Reporter(fmt, False, quiet)
    sys.exit(reporter.emit(list(result.diagnostics), len(result.files), extra=extra, summary=summary))


@click.command("audit")
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("src", type=click.Path(exists=True))
@click.option(
    "--role",
    type=click.Choice(ROLES),
    default="system",
    show_default=True,
    help="The role of a plain Jinja template's message.",
)
@click.option(
    "--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True, help="Output format."
)
def audit_cmd(kind: str, src: str, role: str, fmt: str) -> None:
    """promptc's cache analysis of KIND sources under SRC, imported in memory: nothing is written.

    For each prompt: its cache-stable prefix, where and why it ends (in the foreign file), what
    each provider would cache of it; the prefixes prompts share; W705/W710."""
    report = audit(kind, src, settings().config, role=role)
    if fmt == "json":
        payload = envelope("audit", **report.to_json(), diagnostics=[d.to_json() for d in report.diagnostics])
        click.echo(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())
        sys.exit(1 if report.refused else 0)
    color = use_color(settings().color)
    for d in report.diagnostics:
        click.echo(render_text(d, color=color) + "\n", color=color)
    for line in audit_lines(report):
        click.echo(line)
    prompts = f"{report.imported} prompt{'s' if report.imported != 1 else ''}"
    click.echo(f"audit {kind}: {prompts}, {report.refused} refused: {summary_line(report.diagnostics)}")
    sys.exit(1 if report.refused else 0)


def audit_lines(report: AuditReport) -> list[str]:
    """The prefix analysis `promptc audit` prints (a function so tests can compare it with a build's)."""
    lines = []
    for name, p in report.analysis.get("prompts", {}).items():
        model = f"{p['model']} ({p['provider']})" if p.get("provider") else (p.get("model") or "no model")
        lines.append(f"{name}  [{p.get('source', name)}]  {model}")
        minimum = f", minimum {p['min_cacheable_tokens']}" if p.get("min_cacheable_tokens") else ""
        lines.append(
            f"  prefix: {p['prefix_tokens']} of {p['total_tokens']} tokens ({p['prefix_chars']} chars), "
            f"{p['breakpoints']} breakpoint{'s' if p['breakpoints'] != 1 else ''}{minimum}"
        )
        end = p.get("prefix_end")
        if end:
            foreign = p.get("foreign_end")
            where = (
                f"{p.get('source')}:{foreign['line']}:{foreign['column']}"
                if foreign
                else f"{end['source']}:{end['line']}:{end['column']}"
            )
            lines.append(f"  prefix ends: {where}: {end['reason']}")
        by = p.get("by_provider") or {}
        if by:
            cells = []
            for provider, value in by.items():
                cells.append(
                    f"{provider} {value}"
                    if isinstance(value, int)
                    else f"{provider} — ({value})"
                    if value
                    else f"{provider} —"
                )
            lines.append("  cacheable tokens: " + ", ".join(cells))
    shared = report.analysis.get("shared_prefixes") or []
    if shared:
        lines.append("shared prefixes:")
        for group in shared:
            lines.append(f"  {group['prefix_sha256'][:12]}  {group['tokens']} tokens: {', '.join(group['prompts'])}")
    return lines


__all__ = ["import_cmd", "audit_cmd", "audit_lines"]
