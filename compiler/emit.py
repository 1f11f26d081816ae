"""Emit: the compiled document → the artifact (SPEC §8), metered, with its cache-stable prefix.

Artifact text (`content`, block `text`, section `text`) is *template text*: literal text in which
`${path}` placeholders and promplate blocks stand for runtime values, and a backslash before
`${`, `{{`, `{#` or `{%` marks a literal opener. Stable blocks hold no placeholders or blocks, so
their rendered bytes are their text with those escapes removed; the cache prefix is computed over
those rendered bytes.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import orjson

from .meter import Meter
from .nodes import Block, Document, Escape, Placeholder, Section, Text

ARTIFACT_SCHEMA = "promptc.artifact/1"
JOINER = "\n\n"  # between sections of a block, and between blocks of a message
ANTHROPIC_MAX_BREAKPOINTS = 4

_OPENER = re.compile(r"\$\{|\{\{|\{#|\{%")


def escape_literal(text: str) -> str:
    return _OPENER.sub(lambda m: "\\" + m.group(0), text)


def section_text(section: Section) -> tuple[str, str | None]:
    """(template text, rendered text if the section is literal-only else None)."""
    template: list[str] = []
    literal: list[str] = []
    run: list[str] = []
    has_code = False
    for item in section.items:
        if isinstance(item, (Text, Escape)):
            run.append(item.value)
            literal.append(item.value)
            continue
        if run:
            template.append(escape_literal("".join(run)))
            run = []
        has_code = True
        if isinstance(item, Placeholder):
            template.append(f"${{{item.path}}}")
        elif isinstance(item, Block):
            template.append(item.raw)
    if run:
        template.append(escape_literal("".join(run)))
    return "".join(template), (None if has_code else "".join(literal))


def prefix_digest(segments: list[tuple[str, str]]) -> str:
    """Canonical encoding of a request prefix: for each message touched, 0x1E, the role, 0x1F, the
    text (UTF-8). A prefix that ends inside a message simply stops, so two requests that start with
    the same messages and bytes get the same digest whatever follows."""
    digest = hashlib.sha256()
    for role, text in segments:
        digest.update(b"\x1e" + role.encode() + b"\x1f" + text.encode("utf-8"))
    return digest.hexdigest()


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def build_artifact(doc: Document, rel_source: str, source_bytes: bytes, meter: Meter) -> dict[str, Any]:
    header = doc.header
    messages_out: list[dict[str, Any]] = []
    # flattened blocks for the cache analysis: (message index, block index, boundary, rendered, chars, tokens)
    flat: list[tuple[int, int, str, str | None, int, int]] = []
    has_template = False
    for mi, message in enumerate(doc.messages):
        groups: list[tuple[str, list[dict[str, Any]], list[str], list[str | None]]] = []
        for section in message.sections:
            text, rendered = section_text(section)
            has_template = has_template or section.has_template
            entry = {
                "name": section.name,
                "boundary": section.boundary,
                "target": section.target,
                "inputs": list(section.inputs),
                "helpers": list(section.helpers),
                "chars": len(text),
                "tokens": meter.tokens(text),
                "text": text,
            }
            if groups and groups[-1][0] == section.boundary:
                groups[-1][1].append(entry)
                groups[-1][2].append(text)
                groups[-1][3].append(rendered)
            else:
                groups.append((section.boundary, [entry], [text], [rendered]))
        blocks_out = []
        for bi, (boundary, sections, texts, rendered_parts) in enumerate(groups):
            text = JOINER.join(texts)
            tokens = sections[0]["tokens"] if len(sections) == 1 else meter.tokens(text)
            rendered = JOINER.join(r for r in rendered_parts if r is not None) if boundary == "stable" else None
            blocks_out.append(
                {
                    "boundary": boundary,
                    "text": text,
                    "sha256": _sha256(text),
                    "chars": len(text),
                    "tokens": tokens,
                    "sections": sections,
                }
            )
            flat.append((mi, bi, boundary, rendered, len(text), tokens))
        content = JOINER.join(b["text"] for b in blocks_out)
        messages_out.append(
            {
                "role": message.role,
                "content": content,
                "chars": len(content),
                "tokens": blocks_out[0]["tokens"] if len(blocks_out) == 1 else meter.tokens(content),
                "blocks": blocks_out,
            }
        )

    cache = _cache(doc, flat, meter)
    return {
        "schema": ARTIFACT_SCHEMA,
        "name": doc.name,
        "source": rel_source,
        "source_sha256": hashlib.sha256(source_bytes).hexdigest(),
        "flow": header.flow,
        "node": header.node,
        "params": dict(sorted(header.params)),
        "tags": list(header.tags),
        "metadata": dict(sorted(header.metadata)),
        "inputs": list(doc.inputs),
        "helpers": list(doc.helpers),
        "renderer": "python" if has_template else "placeholder",
        "includes": list(doc.includes),
        "messages": messages_out,
        "cache": cache,
        "totals": {
            "chars": sum(m["chars"] for m in messages_out),
            "tokens": sum(m["tokens"] for m in messages_out),
        },
    }


def _cache(doc: Document, flat, meter: Meter) -> dict[str, Any]:
    segments: list[tuple[str, str]] = []
    in_prefix = True
    breakpoints: list[dict[str, Any]] = []
    chars = tokens = 0
    last_message = -1
    prefix_end: tuple[int, int] | None = None
    segment_message = -1
    for index, (mi, bi, boundary, rendered, block_chars, block_tokens) in enumerate(flat):
        if mi == last_message:
            chars += len(JOINER)
        last_message = mi
        chars += block_chars
        tokens += block_tokens
        stable = boundary == "stable"
        if in_prefix and stable:
            role = doc.messages[mi].role
            if segments and segment_message == mi:
                segments[-1] = (role, segments[-1][1] + JOINER + (rendered or ""))
            else:
                segments.append((role, rendered or ""))
                segment_message = mi
            prefix_end = (mi, bi)
        elif not stable:
            in_prefix = False
        run_ends = stable and (index + 1 == len(flat) or flat[index + 1][2] != "stable")
        if run_ends:
            breakpoints.append(
                {
                    "message": mi,
                    "block": bi,
                    "chars": chars,
                    "tokens": tokens,
                    "stable_prefix": prefix_end == (mi, bi) and in_prefix,
                    "anthropic": False,
                }
            )
    _mark_anthropic(breakpoints)
    if segments:
        prefix_text_chars = sum(len(text) for _, text in segments)
        prefix_tokens = sum(meter.tokens(text) for _, text in segments)
        prefix_sha = prefix_digest(segments)
    else:
        prefix_text_chars = prefix_tokens = 0
        prefix_sha = None
    return {
        "prefix_sha256": prefix_sha,
        "prefix_chars": prefix_text_chars,
        "prefix_tokens": prefix_tokens,
        "prefix_end": {"message": prefix_end[0], "block": prefix_end[1]} if prefix_end else None,
        "breakpoints": breakpoints,
    }


def _mark_anthropic(breakpoints: list[dict[str, Any]]) -> None:
    """Anthropic takes at most four cache breakpoints: always the end of the cache-stable prefix
    (the only one that hits across sessions), then the ones that cover the most tokens."""
    chosen = [b for b in breakpoints if b["stable_prefix"]]
    rest = sorted((b for b in breakpoints if not b["stable_prefix"]), key=lambda b: -b["tokens"])
    for b in (chosen + rest)[:ANTHROPIC_MAX_BREAKPOINTS]:
        b["anthropic"] = True


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2) + b"\n"
