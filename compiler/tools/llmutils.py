"""llmutils-style helpers (seed 000) built on the compiler's own passes, for text handled at run time.

`process(text)` strips `///` comments and gathers the directives exactly as a build would, so a
prompt assembled in application code follows the same rules as one compiled from `prompts_src/`.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..compile.pipeline import HEADER_PASSES, PartialLoader, run
from ..facts.config import Config
from ..facts.diagnostics import Diagnostic, DiagnosticSink, SourceText
from ..facts.records import dataclass
from ..passes.context import Context, SourceTree
from ..passes.roles import trim
from ..syntax.nodes import (
    Block,
    Comment,
    Directive,
    Document,
    Escape,
    Include,
    Item,
    NearSeparator,
    Placeholder,
    SectionMarker,
    Separator,
    Text,
)
from ..syntax.parse import parse


@dataclass(frozen=True)
class ProcessedPrompt:
    cleaned_prompt: str
    params: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    flow: str | None = None
    node: str | None = None
    tags: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


def _normalise(text: str) -> str:
    text = text.removeprefix("\ufeff")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _raw(item: Item, src: SourceText) -> str:
    if isinstance(item, (Text, NearSeparator, Escape)):
        return item.value
    if isinstance(item, Placeholder):
        return f"${{{item.path}}}"
    if isinstance(item, Block):
        return item.raw
    if isinstance(item, Separator):
        return src.text[item.span.start : item.span.end]
    return ""  # comments, directives, section and include markers leave no text


def process(text: str) -> ProcessedPrompt:
    """Remove `///` comments and collect params, metadata, flow, node and tags (llmutils `Process`)."""
    src = SourceText.of("<text>", _normalise(text))
    sink = DiagnosticSink(src)
    config, tree = Config(), SourceTree()
    ctx = Context(config, src, tree, PartialLoader(config, tree))
    # the compile's own parser and header passes (comments, then directives)
    doc = run(Document(src, "<text>", parse(src, sink)), ctx, HEADER_PASSES)
    kept = [i for i in doc.items if not isinstance(i, (Comment, Directive, SectionMarker, Include))]
    body = [
        i
        for i in trim([Text(_raw(i, src), i.span) if not isinstance(i, Text) else i for i in kept])
        if isinstance(i, Text)
    ]
    header = doc.header
    return ProcessedPrompt(
        cleaned_prompt="".join(i.value for i in body),
        params=dict(header.params),
        metadata=dict(header.metadata),
        flow=header.flow,
        node=header.node,
        tags=list(header.tags),
        diagnostics=sink.items + ctx.diagnostics,
    )


def strip_comments(text: str) -> str:
    """Only remove comments (llmutils `StripComments`)."""
    return process(text).cleaned_prompt


def extract_params(text: str) -> dict[str, Any]:
    """Only the `/// param:` values, typed (llmutils `ExtractParams`)."""
    return process(text).params


def strip_comments_from_messages(messages: list[Any]) -> list[Any]:
    """Strip comments from every message's string `content`; other entries pass through unchanged.

    Returns new message dicts and leaves the caller's list untouched."""
    cleaned: list[Any] = []
    for message in messages:
        if isinstance(message, dict) and isinstance(message.get("content"), str):
            message = {**message, "content": strip_comments(message["content"])}
        cleaned.append(message)
    return cleaned
