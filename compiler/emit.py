"""Emit: the compiled document → the artifact (SPEC §8), metered, with its cache-stable prefix.

Artifact text (`content`, block `text`, section `text`) is *template text*: literal text in which
`${path}` placeholders and promplate blocks stand for runtime values, and a backslash before
`${`, `{{`, `{#` or `{%` marks a literal opener. Stable blocks hold no placeholders or blocks, so
their rendered bytes are their text with those escapes removed; the cache prefix is computed over
those rendered bytes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from .language import JOINER, escape_literal
from .meter import Meter
from .model import (
    ARTIFACT_SCHEMA,
    Artifact,
    Block,
    Breakpoint,
    Cache,
    Message,
    OutputSchema,
    PrefixEnd,
    Provider,
    Section,
    Tokenizer,
    Tool,
    Totals,
    head_segments,
)
from .nodes import Block as BlockNode
from .nodes import Document, Escape, Placeholder, Text
from .nodes import Section as SectionNode
from .prefix import Cut, locate, relative

ANTHROPIC_MAX_BREAKPOINTS = 4

if TYPE_CHECKING:
    from .profiles import Profile


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


@dataclass(frozen=True, slots=True)
class Request:
    """What the build settled about the request around the messages: the model, the provider
    profile that applies (None: none), the tokenizer of the counts and the breakpoint TTL."""

    model: str | None = None
    profile: Profile | None = None
    tokenizer: str = "cl100k_base"
    tokens_exact: bool = False
    ttl: str | None = None


def _origins(section: SectionNode, root: str) -> tuple[tuple[str, int], ...]:
    """Where each placeholder and block of a section with template code is written (the k-th token
    of its text is its k-th placeholder or block item), as source-relative path and line."""
    if not section.has_template:
        return ()
    out = []
    for item in section.items:
        if isinstance(item, (Placeholder, BlockNode)):
            path = item.span.src.path if item.span.src is not None else ""
            out.append((relative(path, root), item.span.line))
    return tuple(out)


def input_schema(doc: Document) -> dict[str, Any]:
    """The inputs as one JSON Schema object, for validating values in any language: the declared
    types, and for inputs without one what their uses imply."""
    from .inputtypes import optional

    typed = dict(doc.header.input_types)
    declared = {**dict(doc.inferred_types), **typed}
    properties = {name: declared.get(name, {}) for name in doc.inputs}
    # a declared type decides (`T | None` may be left out); an untyped input may be left out when
    # inference proves every use guarded (`{% if x %}…`)
    maybe = set(doc.optional_inputs)
    return {
        "type": "object",
        "properties": properties,
        "required": [
            name for name in doc.inputs if not optional(properties[name]) and (name in typed or name not in maybe)
        ],
    }


def build_artifact(
    doc: Document,
    rel_source: str,
    source_bytes: bytes,
    meter: Meter,
    request: Request | None = None,
    root: str = "",
) -> Artifact:
    """`root` is how diagnostics name the source folder (`prompts_src/`): stripped from the paths
    the artifact records."""
    request = request or Request(tokenizer=meter.name)
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
                _origins(section, root),
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
    tools = tuple(Tool(t["name"], t["description"], t["input_schema"]) for t in doc.tools)
    output = doc.output_schema
    output_schema = OutputSchema(output["name"], output["schema"]) if output is not None else None
    head = head_segments(tools, output_schema)
    head_chars = sum(len(text) for _, text in head)
    head_tokens = sum(meter.tokens(text) for _, text in head)
    profile = request.profile
    provider = None
    if profile is not None:
        provider = Provider(
            profile.name,
            profile.shape,
            profile.family,
            profile.min_cacheable_tokens,
            profile.cache_step_tokens,
            profile.max_breakpoints,
            profile.lookback_blocks,
        )
    return Artifact(
        ARTIFACT_SCHEMA,
        doc.name,
        rel_source,
        hashlib.sha256(source_bytes).hexdigest(),
        header.flow,
        header.node,
        request.model,
        provider,
        Tokenizer(request.tokenizer, request.tokens_exact),
        dict(sorted((k, v) for k, v in header.params if k != "model")),
        tuple(header.tags),
        dict(sorted(header.metadata)),
        tuple(doc.inputs),
        tuple(doc.helpers),
        input_schema(doc),
        "python" if has_template else "placeholder",
        tuple(doc.includes),
        tuple(doc.resources),
        tools,
        output_schema,
        tuple(messages_out),
        _cache(doc, flat, meter, head, head_chars, head_tokens, request, locate(doc, rel_source, root)),
        Totals(head_chars + sum(m.chars for m in messages_out), head_tokens + sum(m.tokens for m in messages_out)),
        doc.doc_comment,
        doc.output_contract,
    )


def _cache(
    doc: Document,
    flat,
    meter: Meter,
    head: list[tuple[str, str]],
    head_chars: int,
    head_tokens: int,
    request: Request,
    cut: Cut,
) -> Cache:
    """The cache-stable prefix and the breakpoints. The request is read in the providers' cache
    order: the head (tools, output schema), then each message's blocks."""
    segments: list[tuple[str, str]] = list(head)
    in_prefix = True
    # (message, block, chars, tokens, stable prefix); message and block None: after the head
    ends: list[tuple[int | None, int | None, int, int, bool]] = []
    chars, tokens = head_chars, head_tokens
    last_message = -1
    prefix_end: tuple[int | None, int | None] | None = (None, None) if head else None
    if head and (not flat or flat[0][2] != "stable"):
        ends.append((None, None, chars, tokens, True))  # the head is the whole stable run
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
    profile = request.profile
    limit = profile.max_breakpoints if profile is not None and profile.max_breakpoints else ANTHROPIC_MAX_BREAKPOINTS
    marked = _anthropic_breakpoints(ends, limit)
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
        profile.cacheable(prefix_tokens) if profile is not None else None,
        head_chars,
        head_tokens,
        request.ttl,
        PrefixEnd(
            *(prefix_end or (None, None)),
            cut.source,
            cut.line,
            cut.column,
            cut.reason,
        ),
        breakpoints,
    )


def _anthropic_breakpoints(ends: list[tuple[int | None, int | None, int, int, bool]], limit: int) -> set[int]:
    """Anthropic takes at most four cache breakpoints: always the end of the cache-stable prefix
    (the only one that hits across sessions), then the ones that cover the most tokens."""
    chosen = [i for i, end in enumerate(ends) if end[4]]
    rest = sorted((i for i, end in enumerate(ends) if not end[4]), key=lambda i: -ends[i][3])
    return set((chosen + rest)[:limit])


def dumps(obj: Any) -> bytes:
    """Deterministic JSON bytes of an artifact or manifest (a model object or plain data)."""
    data = obj.to_json() if hasattr(obj, "to_json") else obj
    return orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"
