"""`promptc explain CODE` and `promptc list`: what a diagnostic means, and what the build holds."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import click

from ..bindings.python import python_module
from ..bindings.typescript import typescript_module
from ..facts.codes import CODES
from ..facts.diagnostics import Diagnostic, render_text
from ..facts.suggest import did_you_mean
from ..runtime.atomic import ABSENT, read_file, reason, write_file
from ..runtime.confine import edit_refusal, refusal
from ..runtime.render import RenderError, load
from .common import config_options, envelope, settings


@click.command("explain")
@click.argument("code")
def explain_cmd(code: str) -> None:
    """Print what diagnostic CODE means, why it fires, and an example (as docs/diagnostics.md has it)."""
    entry = CODES.get(code.upper())
    if entry is None:
        close = did_you_mean(code.upper(), list(CODES), limit=2)
        hint = f"; did you mean {close}?" if close else ""
        by_number = sorted(CODES, key=lambda c: c[1:])
        known = f"{len(CODES)} codes, {by_number[0]} … {by_number[-1]}"
        raise click.BadParameter(f"no diagnostic code {code!r}{hint} ({known})", param_hint="CODE")
    severity = "error" if entry.severity == "error" else "warning (`--strict` makes it an error)"
    click.echo(f"{entry.code}: {entry.heading}\n\n{entry.explain}\n\nseverity: {severity}")
    example = _example(entry.code)
    if example:
        click.echo(f"\nexample:\n\n{example.rstrip()}")


def _example(code: str) -> str | None:
    """The real output kept for the docs (shipped with the package as part of codes' documentation)."""
    try:
        return resources.files("promptc.data").joinpath("diagnostics", f"{code}.txt").read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError, OSError):
        return None


def _inputs(names: list[str], shown: int = 3) -> str:
    if not names:
        return "-"
    rest = len(names) - shown
    return ", ".join(names[:shown]) + (f" +{rest} more" if rest > 0 else "")


@click.command("list")
@config_options("list")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
def list_cmd(out: str | None, fmt: str) -> None:
    """List the prompts of the build folder: inputs, model, prefix tokens, and whether the provider caches it."""
    folder = out or settings().config.out
    runtime = load(folder)
    try:
        entries = runtime.manifest.artifacts
    except RenderError as exc:
        click.echo(f"promptc list: {exc}", err=True)
        sys.exit(1)
    rows: list[dict[str, Any]] = []
    for name, entry in sorted(entries.items()):
        cached = None if entry.cacheable_tokens is None else entry.cacheable_tokens > 0
        rows.append(
            {
                "name": name,
                "inputs": list(entry.inputs),
                "model": entry.model,
                "provider": entry.provider,
                "prefix_tokens": entry.prefix_tokens,
                "cacheable_tokens": entry.cacheable_tokens,
                "cached": cached,
            }
        )
    if fmt == "json":
        click.echo(json.dumps(envelope("list", out=folder, prompts=rows), indent=2))
        return
    table = [["prompt", "inputs", "model", "prefix", "cached"]]
    for row in rows:
        shown = "-" if row["cached"] is None else ("yes" if row["cached"] else "no (below minimum)")
        table.append([row["name"], _inputs(row["inputs"]), row["model"] or "-", str(row["prefix_tokens"]), shown])
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for r in table:
        click.echo(
            "  ".join(
                cell.rjust(w) if i == 3 else cell.ljust(w) for i, (cell, w) in enumerate(zip(r, widths, strict=True))
            ).rstrip()
        )


STARTER_PROMPT = """\
/// A starter prompt: a stable system message (the cache-stable prefix), then the user's question.
/// param: temperature=0.2
/// input: question
----- system -----
/// section: identity stable
You are a helpful assistant. Answer briefly and say so when you are unsure.
----- user -----
${question}
"""


def toml_string(value: str) -> str:
    """`value` as a TOML basic string: every character is data (a quote, a backslash, a newline or
    a control character cannot end the string or add a key)."""
    short = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
    out = []
    for char in value:
        if char in short:
            out.append(short[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


@click.command("init")
@click.option("--src", default="prompts_src", show_default=True, help="Source folder to create.")
@click.option("--out", default="build", show_default=True, help="Output folder the config names.")
def init_cmd(src: str, out: str) -> None:
    """Start a prompt project here: a SRC folder with a first prompt and [tool.promptc] in pyproject.toml."""
    pyproject = Path("pyproject.toml")
    try:
        old = read_file(pyproject, limit=16 << 20) if pyproject.exists() else None
        text = old.decode("utf-8") if old is not None else ""
    except (OSError, UnicodeDecodeError) as exc:
        why = reason(exc) if isinstance(exc, OSError) else "it is not UTF-8"
        raise click.UsageError(f"cannot read pyproject.toml: {why}; nothing was changed") from None
    # not usage errors (exit 2 is a wrong command line): a project set up already is done (exit 0,
    # as `git init` run twice), a file in the way is a failure to write (exit 1)
    if "[tool.promptc]" in text:
        click.echo("pyproject.toml already has [tool.promptc]: the project is set up, nothing to do", err=True)
        return
    folder = Path(src)
    first = folder / "hello.prompt"
    if first.exists():
        click.echo(f"promptc init: {first.as_posix()} already exists; nothing was changed", err=True)
        sys.exit(1)
    newline = "\r\n" if "\r\n" in text else "\n"
    table = newline.join(["[tool.promptc]", f"src = {toml_string(src)}", f"out = {toml_string(out)}", ""])
    body = (text.rstrip("\r\n") + newline * 2 if text.strip() else "") + table
    try:
        prompt_bytes, config_bytes = STARTER_PROMPT.encode("utf-8"), body.encode("utf-8")
    except UnicodeEncodeError:
        raise click.UsageError("--src and --out must be valid UTF-8; nothing was changed") from None
    # the project is the folder init sets up: nothing is written through a link in it, and the
    # pyproject.toml it edits is the one here (a link to another folder's is refused)
    for refused in (
        edit_refusal(pyproject, ".", "init", "pyproject.toml") if pyproject.is_symlink() else None,
        refusal(first, "init --src", project="."),
    ):
        if refused is not None:
            click.echo(render_text(refused), err=True)
            sys.exit(1)
    made = [p for p in (folder, *folder.parents) if not p.exists()]
    target = first
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_file(first, prompt_bytes, expect=ABSENT)
        target = pyproject
        # compare-and-swap: an edit to pyproject.toml saved meanwhile is kept, not overwritten
        write_file(pyproject, config_bytes, expect=old if old is not None else ABSENT)
    except OSError as exc:
        if target == pyproject:  # what init wrote goes again: all or nothing
            first.unlink(missing_ok=True)
        for path in made:
            try:
                path.rmdir()
            except OSError:
                break
        click.echo(f"promptc init: cannot write {target.as_posix()}: {reason(exc)}; nothing was changed", err=True)
        sys.exit(1)
    click.echo(f"created {first.as_posix()} and [tool.promptc] in pyproject.toml")
    click.echo("next: promptc build, then promptc render hello --var question='What is promptc?'")


@click.group("gen")
def gen_cmd() -> None:
    """Generate typed bindings for the prompts of the build folder."""


@gen_cmd.command("python")
@click.option("-o", "--output", "output", default=None, metavar="FILE", help="Write the module here (default: stdout).")
@click.option("--build", "build_dir", default=None, help="Build folder (default from config: out).")
def gen_python_cmd(output: str | None, build_dir: str | None) -> None:
    """A Python module with a typed function per prompt (`support/chat` → `support_chat(*, ...)`)."""
    _generate("python", python_module, output, build_dir)


@gen_cmd.command("typescript")
@click.option("-o", "--output", "output", default=None, metavar="FILE", help="Write the module here (default: stdout).")
@click.option("--build", "build_dir", default=None, help="Build folder (default from config: out).")
def gen_typescript_cmd(output: str | None, build_dir: str | None) -> None:
    """A TypeScript module with an interface and a typed function per prompt (`support/chat` →
    `supportChat({...})`) over the JavaScript runtime (runtime-js/, the npm package promptc-runtime)."""
    _generate("typescript", typescript_module, output, build_dir)


def _generate(
    language: str,
    generator: Callable[[str, str | None], tuple[str, list[Diagnostic]]],
    output: str | None,
    build_dir: str | None,
) -> None:
    """Run a bindings generator: errors (E920) stop it with exit 1; warnings (W921) are printed."""
    folder = build_dir or settings().config.out
    try:
        text, diagnostics = generator(folder, output)
    except RenderError as exc:
        click.echo(f"promptc gen: {exc}", err=True)
        sys.exit(1)
    for d in diagnostics:
        click.echo(render_text(d) + "\n", err=True)
    if any(d.severity == "error" for d in diagnostics):
        sys.exit(1)
    if output is None:
        click.echo(text, nl=False)
        return

    path = Path(output)
    # the user's path, anywhere; but never through a link, nor over a file promptc did not write
    refused = refusal(path, f"gen {language} -o", project=settings().config.project, generated=True)
    if refused is not None:
        click.echo(render_text(refused), err=True)
        sys.exit(1)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, text.encode("utf-8"), symlinks="refuse")  # atomic: the old module or the new
    except OSError as exc:
        click.echo(f"promptc gen: cannot write {path.as_posix()}: {reason(exc)}; it is unchanged", err=True)
        sys.exit(1)
    click.echo(f"wrote {path.as_posix()}", err=True)
