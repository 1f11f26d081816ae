"""`promptc render` and `promptc inspect`: the runtime side of the command line.

Registered on the main group by `promptc.cli` (`main.add_command(render_cmd)`, `main.add_command(inspect_cmd)`).
Errors are one line
on stderr and exit 1; bad usage (a malformed `--var`, an unreadable `--vars` file) exits 2.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import click

from ..facts.language import PLACEHOLDER_PATH
from ..facts.language import SHAPES as SHAPE_CHOICES
from ..runtime.envinfo import DATE_KEYS, ENV_KEYS, GIT_KEYS, date_inputs, env_inputs, git_inputs
from ..runtime.inputtypes import from_text
from ..runtime.model import Artifact
from ..runtime.render import MissingInputsError, RenderError, load
from ..runtime.shapes import CACHING
from .common import Settings, config_options, envelope, settings


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {' '.join(str(message).split())}", err=True)
    sys.exit(1)


@contextmanager
def _one_line_errors() -> Iterator[None]:
    """Render errors (and anything unexpected) become one line on stderr and exit 1, never a traceback."""
    try:
        yield
    except RenderError as exc:
        _fail(str(exc))
    except click.ClickException:
        raise  # a usage error (exit 2) stays one
    except Exception as exc:  # noqa: BLE001 - the command line never shows a traceback
        _fail(f"{type(exc).__name__}: {exc}")


def _build_dir(out: str | None) -> str:
    """The build folder: `--out`, else `out` from [tool.promptc], else `build`."""
    if out is not None:
        return out

    return settings().config.out or "build"


def _parse_var(raw: str, into: dict[str, Any]) -> None:
    """`k=v` sets a string input; `a.b=v` sets key `b` of the mapping input `a` (for `${a.b}`)."""
    key, eq, value = raw.partition("=")
    if not eq or not PLACEHOLDER_PATH.match(key):
        raise click.BadParameter(f"expected NAME=VALUE, got {raw!r}", param_hint="--var")
    *parents, leaf = key.split(".")
    target = into
    walked = []
    for part in parents:
        walked.append(part)
        existing = target.get(part)
        if existing is None:
            existing = target[part] = {}
        elif not isinstance(existing, dict):
            raise click.BadParameter(f"`{'.'.join(walked)}` is already a plain value", param_hint="--var")
        target = existing
    target[leaf] = value


def _typed(texts: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """`--var` values parsed by the input's declared type (`true`, `3`, JSON for lists and
    objects); untyped inputs, and strings, stay as written. A mismatch is a usage error."""
    properties = schema.get("properties", {})
    typed: dict[str, Any] = {}
    for key, value in texts.items():
        declared = properties.get(key)
        if declared and isinstance(value, str):
            try:
                value = from_text(declared, value, key)
            except ValueError as exc:
                raise click.BadParameter(f"`{key}`: {exc}", param_hint="--var") from None
        typed[key] = value
    return typed


def _read_vars(path: str) -> dict[str, Any]:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(
            f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}", param_hint="--vars"
        ) from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"{path} is not valid JSON: {exc}", param_hint="--vars") from None
    if not isinstance(data, dict):
        raise click.BadParameter(f"{path} must hold a JSON object", param_hint="--vars")
    return data


def complete_prompt_names(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion for NAME: the prompts of the build folder (`-o`, else config `out`)."""
    try:
        out = ctx.params.get("out") or Settings().config.out
        return [name for name in load(out).names() if name.startswith(incomplete)]
    except (RenderError, OSError, RuntimeError):
        return []


@click.command("render")
@click.argument("name", shell_complete=complete_prompt_names)
@click.option(
    "--var", "variables", multiple=True, metavar="NAME=VALUE", help="An input value (repeatable; wins over --vars)."
)
@click.option(
    "--vars", "vars_file", default=None, metavar="FILE", help="A JSON object of input values ('-' reads stdin)."
)
@click.option("--shape", type=click.Choice(SHAPE_CHOICES), default="plain", show_default=True, help="Request shape.")
@click.option(
    "--std-inputs",
    is_flag=True,
    help="Fill the inputs of std/env, std/git and std/date from this machine (explicit values win).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("request", "json", "body")),
    default="request",
    show_default=True,
    help="request: the request itself, to pass on; json: the request in the CLI's JSON envelope; body: the exact "
    "bytes the shape's pinned Python SDK sends (no newline after), to POST as they are.",
)
@click.option(
    "--caching",
    type=click.Choice(CACHING),
    default="blocks",
    show_default=True,
    help="anthropic and anthropic-vertex shapes: the artifact's block markers, or one top-level cache_control "
    "the provider moves to the last cacheable block (automatic; docs/caching.md says when it wins).",
)
@click.option(
    "--previous-message-id",
    default=None,
    metavar="ID",
    help="anthropic and anthropic-vertex shapes: ask for cache diagnostics against the previous response of the "
    "conversation (its msg_… id); an empty ID opts in on the first turn.",
)
@config_options("render")
@click.option(
    "--unknown-inputs",
    type=click.Choice(("error", "ignore")),
    default="error",
    show_default=True,
    help="A value for an input the prompt does not take (a misspelt --var): an error that names the input it was "
    "probably meant to be, or ignored (a --vars file shared by many prompts).",
)
def render_cmd(
    name: str,
    variables: tuple[str, ...],
    vars_file: str | None,
    shape: str,
    std_inputs: bool,
    fmt: str,
    caching: str,
    previous_message_id: str | None,
    model: str | None,
    unknown_inputs: str,
    out: str | None,
) -> None:
    """Render prompt NAME from the build folder and print the request as JSON."""
    options: dict[str, Any] = {"caching": caching}
    if previous_message_id is not None:
        options["previous_message_id"] = previous_message_id or None
    inputs: dict[str, Any] = _read_vars(vars_file) if vars_file else {}
    texts: dict[str, Any] = {}
    for raw in variables:
        _parse_var(raw, texts)

    with _one_line_errors():
        runtime = load(_build_dir(out), unknown_inputs=unknown_inputs)
        inputs = {**inputs, **_typed(texts, runtime.artifact(name).input_schema)} if texts else inputs
        if std_inputs:
            wanted = set(runtime.artifact(name).inputs)
            for keys, collect in ((ENV_KEYS, env_inputs), (GIT_KEYS, git_inputs), (DATE_KEYS, date_inputs)):
                if wanted & set(keys):  # git is slow-ish: only ask for what the prompt uses
                    inputs = {**{k: v for k, v in collect().items() if k in wanted}, **inputs}
        try:
            rendered = runtime.render(name, inputs)
        except MissingInputsError as exc:
            _fail(_with_std_hint(exc, std_inputs))
        if fmt == "body":
            sys.stdout.flush()
            sys.stdout.buffer.write(rendered.body(shape, model=model, **options))
            sys.stdout.buffer.flush()
            return
        payload = rendered.as_shape(shape, model=model, **options)
    if fmt == "json":
        payload = envelope("render", prompt=name, shape=shape, request=payload)
    click.echo(json.dumps(payload, ensure_ascii=False, indent=2))


def _with_std_hint(exc: Exception, std_inputs: bool) -> str:
    """A missing-inputs error that names `--std-inputs` when the missing inputs are the std
    partials' (`env_cwd`, `git_branch`, `today` …), which that flag fills from this machine."""
    std = [m for m in getattr(exc, "missing", ()) if m in (*ENV_KEYS, *GIT_KEYS, *DATE_KEYS)]
    if not std or std_inputs:
        return str(exc)
    which = sorted({"std/env" if m in ENV_KEYS else "std/git" if m in GIT_KEYS else "std/date" for m in std})
    every = len(std) == len(getattr(exc, "missing", ()))
    return (
        f"{exc}; {'they are' if every else f'{len(std)} of them are'} the inputs of {', '.join(which)}: "
        "pass --std-inputs to fill them from this machine (values you give still win)"
    )


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return lines


def prefix_end_line(artifact: Artifact, src: str | None = None) -> str | None:
    """`prefix ends: prompts_src/support/chat.prompt:8:35: input ${product}` (None for an artifact
    written before promptc recorded it). `src`, the source folder, makes the path one to click."""
    end = artifact.cache.prefix_end
    if end is None or end.source is None:
        return None
    path = end.source
    if src and src not in (".", "") and not path.startswith("<"):
        path = f"{src.rstrip('/')}/{path}"
    return f"prefix ends: {path}:{end.line}:{end.column}: {end.reason}"


def inspect_lines(artifact: Artifact, src: str | None = None) -> list[str]:
    """The human-readable report `promptc inspect` prints (a function so tests and tools can reuse it)."""
    totals, messages, cache = artifact.totals, artifact.messages, artifact.cache
    lines = [
        f"{artifact.name}  (source {artifact.source}, renderer {artifact.renderer}, "
        f"{len(messages)} message{'s' if len(messages) != 1 else ''}, "
        f"{totals.chars} chars, {totals.tokens} tokens)",
        f"inputs:  {', '.join(artifact.inputs) or '-'}",
        f"helpers: {', '.join(artifact.helpers) or '-'}",
    ]
    if artifact.params:
        lines.append("params:  " + ", ".join(f"{k}={v!r}" for k, v in artifact.params.items()))
    provider = artifact.provider
    profile = (
        f"{provider.name} (minimum {provider.min_cacheable_tokens} tokens"
        + (f", {provider.family}" if provider.family else "")
        + ")"
        if provider is not None
        else "none"
    )
    lines.append(f"model:   {artifact.model or '-'}  profile: {profile}")
    exact = "exact" if artifact.tokenizer.exact else "estimate"
    lines.append(f"tokens:  {artifact.tokenizer.name} ({exact})")
    if artifact.tools:
        lines.append("tools:   " + ", ".join(tool.name for tool in artifact.tools))
    if artifact.output_schema is not None:
        lines.append(f"output:  {artifact.output_schema.name}")
    lines.append("")
    rows = [["msg", "role", "block", "boundary", "section", "target", "chars", "tokens"]]
    for mi, message in enumerate(messages):
        for bi, block in enumerate(message.blocks):
            for section in block.sections:
                rows.append(
                    [
                        str(mi),
                        message.role,
                        str(bi),
                        section.boundary,
                        section.name,
                        section.target,
                        str(section.chars),
                        str(section.tokens),
                    ]
                )
            if len(block.sections) > 1:
                rows.append(["", "", "", "", "(block total)", "", str(block.chars), str(block.tokens)])
        rows.append(["", "", "", "", "(message total)", "", str(message.chars), str(message.tokens)])
    lines += _table(rows, right={6, 7})
    lines.append("")
    if cache.prefix_sha256:
        end = cache.prefix_end
        if end is None or end.message is None:
            where = "the tools and output schema"
        else:
            where = f"message {end.message} block {end.block}"
        cacheable = "" if cache.cacheable_tokens is None else f"  cacheable {cache.cacheable_tokens}"
        head = f" (tools and schema {cache.head_tokens})" if cache.head_chars else ""
        lines.append(
            f"cache prefix: sha256 {cache.prefix_sha256}  chars {cache.prefix_chars}  "
            f"tokens {cache.prefix_tokens}{head}{cacheable}  ends at {where}"
        )
    else:
        lines.append("cache prefix: none (the request starts with dynamic content)")
    key = cache.key
    if key is not None and key.provider is not None:
        keyed = " · ".join([key.provider, *([key.model] if key.model else []), *key.params])
        lines.append(f"cache key: {keyed} ({key.encoding})")
    for part in cache.head:
        if not part.cached:
            what = "output schema" if part.part == "output_schema" else part.part
            lines.append(f"not cached: the {what} ({part.tokens} tokens): no breakpoint of this provider covers it")
    ends = prefix_end_line(artifact, src)
    if ends is not None:
        lines.append(ends)
    if cache.breakpoints:
        lines.append("breakpoints:")
        rows = [["msg", "block", "chars", "tokens", "stable prefix", "anthropic"]]
        for b in cache.breakpoints:
            rows.append(
                [
                    "-" if b.message is None else str(b.message),
                    "-" if b.block is None else str(b.block),
                    str(b.chars),
                    str(b.tokens),
                    "yes" if b.stable_prefix else "no",
                    "yes" if b.anthropic else "no",
                ]
            )
        lines += ["  " + line for line in _table(rows, right={2, 3})]
    else:
        lines.append("breakpoints: none")
    return lines


@click.command("inspect")
@click.argument("name", shell_complete=complete_prompt_names)
@config_options("inspect")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
def inspect_cmd(name: str, out: str | None, fmt: str) -> None:
    """Show prompt NAME's messages, blocks, sections, metering and cache prefix."""
    with _one_line_errors():
        artifact = load(_build_dir(out)).artifact(name)
    if fmt == "json":
        click.echo(json.dumps(envelope("inspect", out=_build_dir(out), artifact=artifact.to_json()), indent=2))
        return

    click.echo("\n".join(inspect_lines(artifact, settings().config.src)))


__all__ = ["render_cmd", "inspect_cmd", "inspect_lines"]
