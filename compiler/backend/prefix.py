"""Where and why the cache-stable prefix ends (`cache.prefix_end`), and W710: a prefix cut short by
something that could move.

The prefix ends where the request model's walk stops (`promptc.runtime.requestmodel`: the first dynamic
block in the provider's cache order, which reads the blocks in the document's order). `locate`
maps that block back to its sections, names the cause and points at it in the source:

- a section declared `/// section: NAME dynamic` → `section "NAME" is dynamic`, at its directive;
- otherwise the section's first runtime-dependent element → `input ${product}`, `a {% for %} block`,
  `a {{ }} block`, `a {# #} block`, at the element (in the partial, for a partial's text);
- no dynamic section at all → `end of request`, just after the last text of the request.

`lint` is W710. It fires when the section that ends the prefix would be stable but for one
*movable* element — one input's placeholders, one `{{ }}`/`{# #}` block, or one `{% %}` block with
everything up to its matching end — and fixing that element would make at least
`stable_run_tokens` (config, default 64) more tokens cacheable. The figure is exact for the case it
names: it is the prefix the request model walks when that element renders as empty text (as
`-D product=` makes it), tokens counted like `cache.prefix_tokens`, minus the prefix it has.
Pure: no I/O.
"""

from __future__ import annotations

from ..facts import codes
from ..facts.diagnostics import Diagnostic, Span, make
from ..facts.language import CLOSERS, JOINER, OPENERS, unescape
from ..facts.records import dataclass
from ..runtime import requestmodel
from ..runtime.model import Artifact
from ..syntax.nodes import Block, Document, Escape, Item, Placeholder, Section, Text
from .meter import Meter

#: the sections the compiler writes itself (the user_context frame): no source position of their own
_FRAME_SECTIONS = ("user_context.intro", "user_context.disclaimer")


@dataclass(frozen=True, slots=True)
class Cut:
    """Where the prefix ends: the source position and reason `cache.prefix_end` records, and the
    section and element (index into the section's items) that cause it; both None at the end."""

    source: str
    line: int
    column: int
    reason: str
    section: Section | None = None
    element: int | None = None


def relative(path: str, root: str) -> str:
    """`path` without the `root` prefix diagnostics name the source folder by."""
    return path[len(root) :] if root and path.startswith(root) else path


def describe(item: Item) -> str:
    """How a reason names a dynamic element: `input ${user.name}`, `a {% for %} block`."""
    if isinstance(item, Placeholder):
        return f"input ${{{item.path}}}"
    if isinstance(item, Block):
        if item.kind == "expr":
            return "a {{ }} block"
        if item.kind == "exec":
            return "a {# #} block"
        return f"a {{% {item.keyword or 'statement'} %}} block"
    return "template text"


def _at(span: Span | None, fallback: str, root: str) -> tuple[str, int, int]:
    if span is None or span.src is None:
        return fallback, span.line if span else 1, span.col if span else 1
    return relative(span.src.path, root), span.line, span.col


def block_sections(doc: Document, message: int, block: int) -> list[Section]:
    """The sections of the document that block `block` of message `message` is made of (a block is
    a run of adjacent sections of one boundary)."""
    groups: list[list[Section]] = []
    for section in doc.messages[message].sections:
        if groups and groups[-1][0].boundary == section.boundary:
            groups[-1].append(section)
        else:
            groups.append([section])
    return groups[block] if block < len(groups) else []


def locate(
    doc: Document,
    rel_source: str,
    root: str = "",
    stop: tuple[int | None, int | None] | None | Artifact = None,
) -> Cut:
    """The cut of `doc` (after section partitioning): at `stop`, the block where the request model's
    walk stops (message, block), or read from `stop`'s request model when it is the artifact;
    None: the whole request is stable. `root` is stripped from source paths."""
    if isinstance(stop, Artifact):
        part = requestmodel.of_artifact(stop).stop()
        stop = None if part is None else (part.message, part.block)
    if stop is None or stop[0] is None or stop[1] is None:
        return _end(doc, rel_source, root)
    for section in block_sections(doc, stop[0], stop[1]):
        if section.declared_boundary == "dynamic" and section.span is not None:
            source, line, column = _at(section.span, rel_source, root)
            return Cut(source, line, column, f'section "{section.name}" is dynamic', section)
        for index, item in enumerate(section.items):
            if isinstance(item, (Placeholder, Block)):
                source, line, column = _at(item.span, rel_source, root)
                return Cut(source, line, column, describe(item), section, index)
        source, line, column = _at(section.span, rel_source, root)
        return Cut(source, line, column, f'section "{section.name}" is dynamic', section)
    return _end(doc, rel_source, root)


def _end(doc: Document, rel_source: str, root: str) -> Cut:
    """`end of request`: just after the last text the author wrote (the request's last section
    that has a position, its last item's end)."""
    for message in reversed(doc.messages):
        for section in reversed(message.sections):
            if section.name in _FRAME_SECTIONS and section.span is None:
                continue
            for item in reversed(section.items):
                span = item.span
                if span.src is not None:
                    end = span.src.span(span.end)
                    return Cut(relative(span.src.path, root), end.line, end.col, "end of request")
    return Cut(rel_source, 1, 1, "end of request")


# ---------------------------------------------------------------------------------------------
# W710


def _movable(section: Section, index: int) -> tuple[int, int] | None:
    """The items [start, stop) that fixing the element at `index` takes out of `section`, when
    nothing else in the section is dynamic; None when the section would stay dynamic anyway."""
    items = section.items
    element = items[index]
    if isinstance(element, Placeholder):
        root = element.root
        for item in items:
            if isinstance(item, Block) or (isinstance(item, Placeholder) and item.root != root):
                return None
        return index, index + 1  # every other placeholder of the section names the same input
    assert isinstance(element, Block)
    stop = index + 1
    if element.kind == "stmt" and element.keyword in OPENERS:
        depth = 0
        for stop in range(index, len(items)):
            item = items[stop]
            if isinstance(item, Block) and item.kind == "stmt":
                depth += item.keyword in OPENERS
                depth -= item.keyword in CLOSERS
                if depth == 0:
                    break
        stop += 1
    for position, item in enumerate(items):
        if (position < index or position >= stop) and isinstance(item, (Placeholder, Block)):
            return None
    return index, stop


def _without(section: Section, cut: tuple[int, int], index: int) -> str:
    """The section's rendered text with the element taken out (as an empty define renders it)."""
    items = section.items
    element = items[index]
    parts = []
    for position, item in enumerate(items):
        if cut[0] <= position < cut[1]:
            continue
        if isinstance(item, (Text, Escape)):
            parts.append(item.value)
        elif isinstance(element, Placeholder) and isinstance(item, Placeholder):
            continue  # the same input's other uses
    return "".join(parts)


def gain(artifact: Artifact, doc: Document, cut: Cut, meter: Meter, at_least: int = 0) -> int | None:
    """How many tokens the prefix would gain if the element of `cut` were fixed (None: fixing it
    alone would not make its section stable, or the gain is surely below `at_least`, which the
    counts the artifact already holds tell without loading the tokenizer)."""
    section, index = cut.section, cut.element
    if section is None or index is None or section.declared_boundary == "dynamic":
        return None
    taken = _movable(section, index)
    if taken is None:
        return None
    if at_least and _estimate(artifact, section, doc) + _SEAM_SLACK < at_least:
        return None
    blocks = _fixed_blocks(artifact, doc, section, _without(section, taken, index), meter)
    if blocks is None:
        return None
    fixed = requestmodel.of_artifact(artifact, count=meter.tokens, blocks=blocks)
    return max(0, fixed.prefix().tokens - artifact.cache.prefix_tokens)


def _fixed_blocks(
    artifact: Artifact, doc: Document, section: Section, fixed: str, meter: Meter
) -> dict[tuple[int, int], tuple[requestmodel.Part, ...]] | None:
    """The block parts of the request model as they would be with `section` rendering `fixed`: the
    section joins its message's stable block (stable sections come first in a message), and the
    rest of its block stays dynamic."""
    for mi, (message, node) in enumerate(zip(artifact.messages, doc.messages, strict=False)):
        position = 0
        for bi, block in enumerate(message.blocks):
            nodes = node.sections[position : position + len(block.sections)]
            position += len(block.sections)
            if block.stable or not any(s is section for s in nodes):
                continue
            out: dict[tuple[int, int], tuple[requestmodel.Part, ...]] = {}
            text = fixed
            stable_before = bi > 0 and message.blocks[bi - 1].stable
            if stable_before:
                text = unescape(message.blocks[bi - 1].text) + JOINER + fixed
                out[(mi, bi - 1)] = ()
            parts = [requestmodel.Part("block", "", text, "", True, len(text), meter.tokens(text), mi, bi)]
            if len(nodes) > 1:
                parts.append(requestmodel.Part("block", "", None, "", True, block.chars, block.tokens, mi, bi))
            out[(mi, bi)] = tuple(parts)
            return out
    return None


#: how far the exact gain may exceed the estimate from the counts the artifact already holds
#: (joining texts can merge or add a token or two at each seam)
_SEAM_SLACK = 8


def _estimate(artifact: Artifact, section: Section, doc: Document) -> int:
    """The gain from the counts the artifact holds (no tokenizer): the fixed section's tokens
    with the element still in, plus the stable blocks that would join the prefix after it."""
    total, counting, found = 0, False, False
    for message, node in zip(artifact.messages, doc.messages, strict=False):
        position = 0
        for block in message.blocks:
            nodes = node.sections[position : position + len(block.sections)]
            position += len(block.sections)
            if counting:
                if not block.stable:
                    return total
                total += block.tokens
            elif not found and not block.stable and any(s is section for s in nodes):
                found = True
                index = next(i for i, s in enumerate(nodes) if s is section)
                total += block.sections[index].tokens
                if len(nodes) > 1:
                    return total
                counting = True
    return total


def lint(artifact: Artifact, doc: Document, cut: Cut, meter: Meter, threshold: int) -> list[Diagnostic]:
    """W710 for `artifact` (compiled from `doc`, whose prefix ends at `cut`)."""
    if cut.section is None or cut.element is None:
        return []
    threshold = max(1, threshold)
    tokens = gain(artifact, doc, cut, meter, threshold)
    if tokens is None or tokens < threshold:
        return []
    element = cut.section.items[cut.element]
    if isinstance(element, Placeholder):
        what = f"`${{{element.path}}}`"
        fix = f"move {what} below the stable text (into a dynamic section, or a later message)"
        if "." not in element.path:
            fix += f", or fix it at build time with `-D {element.path}=…`"
    else:
        what = describe(element)
        fix = f"move {what} below the stable text (into a dynamic section, or a later message)"
    prefix = artifact.cache.prefix_tokens
    return [
        make(
            codes.PREFIX_CUT_SHORT,
            f"the cache-stable prefix ends at {what} ({prefix} tokens), cutting off {tokens} stable tokens "
            "around and after it",
            element.span,
            f"{fix}: the prefix would grow from {prefix} to {prefix + tokens} tokens; see `promptc explain W710`",
            source=doc.source,
        )
    ]


__all__ = ["Cut", "describe", "gain", "lint", "locate"]
