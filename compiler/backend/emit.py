"""Emit: the compiled document → the artifact (`promptc.runtime.model`), metered, with its cache-stable prefix.

Artifact text (`content`, block `text`, section `text`) is *template text*: literal text in which
`${path}` placeholders and promplate blocks stand for runtime values, and a backslash before
`${`, `{{`, `{#` or `{%` marks a literal opener. Stable blocks hold no placeholders or blocks, so
their rendered bytes are their text with those escapes removed. The artifact's `cache` (the
prefix, its hash, the breakpoints) is the request model's (`promptc.runtime.requestmodel`), computed over
those rendered bytes in the provider's cache order.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import orjson

from ..facts.language import JOINER
from ..facts.records import dataclass
from ..runtime import requestmodel
from ..runtime.inputtypes import optional
from ..runtime.model import (
    ARTIFACT_SCHEMA,
    Artifact,
    Block,
    Message,
    OutputSchema,
    Provider,
    Section,
    Tokenizer,
    Tool,
    Totals,
)
from ..syntax.nodes import Block as BlockNode
from ..syntax.nodes import Document, Placeholder, section_text
from ..syntax.nodes import Section as SectionNode
from .meter import Meter
from .prefix import Cut, locate, relative

if TYPE_CHECKING:
    from ..facts.profiles import Profile


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
    cuts: list[Cut] | None = None,
) -> Artifact:
    """`root` is how diagnostics name the source folder (`prompts_src/`): stripped from the paths
    the artifact records. `cuts`, when given, receives the cut of the prefix: where the request
    model's walk stops, located in the sources (`prefix.locate`), which `cache.prefix_end` records."""
    request = request or Request(tokenizer=meter.name)
    messages_out: list[Message] = []
    has_template = False
    for message in doc.messages:
        groups: list[tuple[str, list[Section]]] = []
        for section in message.sections:
            text, _ = section_text(section)
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
            else:
                groups.append((section.boundary, [entry]))
        blocks_out: list[Block] = []
        for boundary, sections in groups:
            text = JOINER.join(s.text for s in sections)
            tokens = (
                sections[0].tokens
                if len(sections) == 1
                else meter.joined([s.text for s in sections], [s.tokens for s in sections])
            )
            blocks_out.append(Block(boundary, text, _sha256(text), len(text), tokens, tuple(sections)))  # type: ignore[arg-type]
        content = JOINER.join(b.text for b in blocks_out)
        tokens = (
            blocks_out[0].tokens
            if len(blocks_out) == 1
            else meter.joined([b.text for b in blocks_out], [b.tokens for b in blocks_out])
        )
        messages_out.append(Message(message.role, content, len(content), tokens, tuple(blocks_out)))  # type: ignore[arg-type]

    header = doc.header
    tools = tuple(Tool(t["name"], t["description"], t["input_schema"]) for t in doc.tools)
    output = doc.output_schema
    output_schema = OutputSchema(output["name"], output["schema"]) if output is not None else None
    profile = request.profile
    params = dict(sorted((k, v) for k, v in header.params if k != "model"))
    messages = tuple(messages_out)

    def where(stop: requestmodel.Part | None) -> tuple[str, int, int, str]:
        cut = locate(doc, rel_source, root, None if stop is None else (stop.message, stop.block))
        if cuts is not None:
            cuts.append(cut)
        return cut.source, cut.line, cut.column, cut.reason

    cache = requestmodel.cache(
        profile, request.model, params, tools, output_schema, messages, meter.tokens, request.ttl, where
    )
    head_chars = sum(part.chars for part in cache.head)
    head_tokens = sum(part.tokens for part in cache.head)
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
        params,
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
        messages,
        cache,
        Totals(head_chars + sum(m.chars for m in messages_out), head_tokens + sum(m.tokens for m in messages_out)),
        doc.doc_comment,
        doc.output_contract,
    )


def dumps(obj: Any) -> bytes:
    """Deterministic JSON bytes of an artifact or manifest (a model object or plain data)."""
    data = obj.to_json() if hasattr(obj, "to_json") else obj
    return orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"
