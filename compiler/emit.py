"""Emit: the compiled document → the artifact (SPEC §8), metered, with its cache-stable prefix.

Artifact text (`content`, block `text`, section `text`) is *template text*: literal text in which
`${path}` placeholders and promplate blocks stand for runtime values, and a backslash before
`${`, `{{`, `{#` or `{%` marks a literal opener. Stable blocks hold no placeholders or blocks, so
their rendered bytes are their text with those escapes removed; the cache prefix is computed over
those rendered bytes.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from .language import JOINER, escape_literal
from .meter import Meter
from .model import ARTIFACT_SCHEMA, Artifact, Block, Breakpoint, Cache, Message, PrefixEnd, Section, Totals
from .nodes import Block as BlockNode
from .nodes import Document, Escape, Placeholder, Text
from .nodes import Section as SectionNode

ANTHROPIC_MAX_BREAKPOINTS = 4


def section_text(section: SectionNode) -> tuple[str, str | None]:
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
        elif isinstance(item, BlockNode):
            template.append(item.raw)
    if run:
        template.append(escape_literal("".join(run)))
    return "".join(template), (None if has_code else "".join(literal))


#: Starts every prefix encoding; a new encoding gets a new tag, so hashes of two encodings never meet.
PREFIX_ENCODING = b"promptc.prefix/2\n"


def prefix_digest(segments: list[tuple[str, str]]) -> str:
    """SHA-256 of a canonical, injective encoding of a request prefix: the tag `promptc.prefix/2\n`,
    then for each message the prefix touches its role and its part of the prefix (UTF-8), each as
    an 8-byte big-endian length followed by the bytes. No text can forge a field boundary (text may
    hold any character, U+001E and U+001F included), so two different prefixes never share a hash;
    a prefix that ends inside a message simply stops, so requests that start with the same
    messages and bytes get the same hash whatever follows."""
    digest = hashlib.sha256(PREFIX_ENCODING)
    for role, text in segments:
        for field in (role.encode("utf-8"), text.encode("utf-8")):
            digest.update(len(field).to_bytes(8, "big"))
            digest.update(field)
    return digest.hexdigest()


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def build_artifact(doc: Document, rel_source: str, source_bytes: bytes, meter: Meter) -> Artifact:
    messages_out: list[Message] = []
    # flattened blocks for the cache analysis: (message index, block index, boundary, rendered, chars, tokens)
    flat: list[tuple[int, int, str, str | None, int, int]] = []
    has_template = False
    for mi, message in enumerate(doc.messages):
        groups: list[tuple[str, list[Section], list[str | None]]] = []
        for section in message.sections:
            text, rendered = section_text(section)
            has_template = has_template or section.has_template
            entry = Section(
                section.name,
                section.boundary,  # type: ignore[arg-type]
                section.target,  # type: ignore[arg-type]
                tuple(section.inputs),
                tuple(section.helpers),
                len(text),
                meter.tokens(text),
                text,
            )
            if groups and groups[-1][0] == section.boundary:
                groups[-1][1].append(entry)
                groups[-1][2].append(rendered)
            else:
                groups.append((section.boundary, [entry], [rendered]))
        blocks_out: list[Block] = []
        for bi, (boundary, sections, rendered_parts) in enumerate(groups):
            text = JOINER.join(s.text for s in sections)
            tokens = sections[0].tokens if len(sections) == 1 else meter.tokens(text)
            rendered = JOINER.join(r for r in rendered_parts if r is not None) if boundary == "stable" else None
            blocks_out.append(Block(boundary, text, _sha256(text), len(text), tokens, tuple(sections)))  # type: ignore[arg-type]
            flat.append((mi, bi, boundary, rendered, len(text), tokens))
        content = JOINER.join(b.text for b in blocks_out)
        tokens = blocks_out[0].tokens if len(blocks_out) == 1 else meter.tokens(content)
        messages_out.append(Message(message.role, content, len(content), tokens, tuple(blocks_out)))  # type: ignore[arg-type]

    header = doc.header
    return Artifact(
        ARTIFACT_SCHEMA,
        doc.name,
        rel_source,
        hashlib.sha256(source_bytes).hexdigest(),
        header.flow,
        header.node,
        dict(sorted(header.params)),
        tuple(header.tags),
        dict(sorted(header.metadata)),
        tuple(doc.inputs),
        tuple(doc.helpers),
        "python" if has_template else "placeholder",
        tuple(doc.includes),
        tuple(messages_out),
        _cache(doc, flat, meter),
        Totals(sum(m.chars for m in messages_out), sum(m.tokens for m in messages_out)),
    )


def _cache(doc: Document, flat, meter: Meter) -> Cache:
    segments: list[tuple[str, str]] = []
    in_prefix = True
    ends: list[tuple[int, int, int, int, bool]] = []  # (message, block, chars, tokens, stable prefix)
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
            ends.append((mi, bi, chars, tokens, prefix_end == (mi, bi) and in_prefix))
    marked = _anthropic_breakpoints(ends)
    breakpoints = tuple(
        Breakpoint(mi, bi, at_chars, at_tokens, prefix, i in marked)
        for i, (mi, bi, at_chars, at_tokens, prefix) in enumerate(ends)
    )
    if segments:
        prefix_text_chars = sum(len(text) for _, text in segments)
        prefix_tokens = sum(meter.tokens(text) for _, text in segments)
        prefix_sha: str | None = prefix_digest(segments)
    else:
        prefix_text_chars = prefix_tokens = 0
        prefix_sha = None
    return Cache(
        prefix_sha,
        prefix_text_chars,
        prefix_tokens,
        PrefixEnd(prefix_end[0], prefix_end[1]) if prefix_end else None,
        breakpoints,
    )


def _anthropic_breakpoints(ends: list[tuple[int, int, int, int, bool]]) -> set[int]:
    """Anthropic takes at most four cache breakpoints: always the end of the cache-stable prefix
    (the only one that hits across sessions), then the ones that cover the most tokens."""
    chosen = [i for i, end in enumerate(ends) if end[4]]
    rest = sorted((i for i, end in enumerate(ends) if not end[4]), key=lambda i: -ends[i][3])
    return set((chosen + rest)[:ANTHROPIC_MAX_BREAKPOINTS])


def dumps(obj: Any) -> bytes:
    """Deterministic JSON bytes of an artifact or manifest (a model object or plain data)."""
    data = obj.to_json() if hasattr(obj, "to_json") else obj
    return orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"
