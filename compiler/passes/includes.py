"""The includes pass (docs/language.md, "Partials and includes"): resolve, check and splice partials in place.

The pass reads nothing itself: `ctx.partials` (the build's `PartialLoader`) hands it each partial
already parsed, comments removed and directives collected, once per build. The pass resolves the
path, checks it (inside the source folder, a partial, no cycle, no separators) and splices the
partial's items where `/// include:` stood. Its items keep
spans into the partial's own text, so diagnostics point at the partial. Paths resolve relative to
the including file and may not leave the source folder; `std/...` names the built-in partials.
"""

from __future__ import annotations

import posixpath
from typing import Any

from ..facts import codes
from ..facts.codes import Code
from ..facts.diagnostics import Diagnostic, Fix, replace_word
from ..facts.language import PARTIAL_PREFIX, SOURCE_SUFFIX, STD_PREFIX
from ..facts.suggest import did_you_mean
from ..std import std_partials
from ..syntax.nodes import (
    IMPLICIT_SECTION,
    Block,
    Document,
    Escape,
    Include,
    Item,
    Placeholder,
    ResourceRef,
    SectionMarker,
    Separator,
    Text,
    evolve,
)
from .context import Context


def resolve(ctx: Context, includer: str, target: str) -> tuple[str | None, Code | None, str | None]:
    """(key, error code, message). `key` is a source-relative path or `std/NAME`."""
    if target.startswith(STD_PREFIX) and not target.endswith(SOURCE_SUFFIX):
        return (
            (target, None, None)
            if target in std_partials()
            else (
                None,
                codes.INCLUDE_NOT_FOUND,
                f"no built-in partial `{target}`; built-ins: {', '.join(std_partials())}",
            )
        )
    if target.startswith(("/", "\\")) or (len(target) > 1 and target[1] == ":"):
        return None, codes.INCLUDE_OUTSIDE, f"include path `{target}` is absolute"
    base = "" if includer.startswith(STD_PREFIX) else posixpath.dirname(includer)
    joined = posixpath.normpath(posixpath.join(base, target.replace("\\", "/")))
    if joined == ".." or joined.startswith("../"):
        return None, codes.INCLUDE_OUTSIDE, f"include path `{target}` leaves the source folder"
    if not joined.endswith(SOURCE_SUFFIX):
        joined += SOURCE_SUFFIX
    if joined in ctx.tree.outside or any(
        folder.endswith("/") and joined.startswith(folder) for folder in ctx.tree.outside
    ):
        return None, codes.INCLUDE_OUTSIDE, f"`{target}` is a symlink that points outside the source folder"
    if joined not in ctx.tree.files:
        return None, codes.INCLUDE_NOT_FOUND, f"included file `{target}` not found (looked for {joined})"
    if not posixpath.basename(joined).startswith(PARTIAL_PREFIX):
        return None, codes.INCLUDE_NOT_PARTIAL, f"`{target}` is a prompt, not a partial"
    return joined, None, None


#: Deepest chain of partials including partials. Expansion recurses once per level, and a real
#: project needs a handful; past this it is E806, never a RecursionError.
MAX_INCLUDE_DEPTH = 64
#: What one prompt's includes may expand to: characters of text, and items (a fan-out of partials
#: that each include others ten times would otherwise grow without bound). Past either, E806.
MAX_EXPANDED_CHARS = 16 * 1024 * 1024
MAX_EXPANDED_ITEMS = 200_000


class _Expanded:
    """A partial with its own includes spliced in, as the includer receives it."""

    __slots__ = ("items", "tags", "inputs", "types", "diagnostics", "includes", "chars")

    def __init__(
        self,
        items: tuple[Item, ...],
        tags: tuple[str, ...],
        inputs: tuple[str, ...],
        diagnostics: tuple[Diagnostic, ...],
        includes: dict[str, None],
        types: tuple[tuple[str, dict[str, Any]], ...] = (),
    ) -> None:
        self.items = items
        self.tags = tags
        self.inputs = inputs
        self.types = types
        self.diagnostics = diagnostics
        #: partials spliced in, first-seen order (dict keys)
        self.includes = includes
        self.chars = sum(len(i.value) for i in items if isinstance(i, Text))


def _splice(ctx: Context, key: str, chain: tuple[str, ...]) -> _Expanded:
    """The partial `key`, checked and with its includes expanded (once per build)."""
    done = ctx.partials.expanded.get(key)
    if isinstance(done, _Expanded):
        return done
    partial = ctx.partials.load(key)
    if partial.source is None:
        expanded = _Expanded((), (), (), partial.diagnostics, {})
    else:
        sub = Context(ctx.config, partial.source, ctx.tree, ctx.partials)
        for item in partial.items:
            if isinstance(item, Separator):
                sub.report(
                    codes.PARTIAL_NOT_ALLOWED,
                    "a partial may not contain role separators",
                    item.span,
                    "a partial is spliced into one message; put separators in the including prompt",
                )
        items, includes = _expand(partial.items, key, sub, chain)
        header = partial.header
        expanded = _Expanded(
            items,
            header.tags,
            header.declared_inputs or (),
            (*partial.diagnostics, *sub.diagnostics),
            includes,
            header.input_types,
        )
    ctx.partials.expanded[key] = expanded
    return expanded


def _expand(
    items: tuple[Item, ...], rel: str, ctx: Context, chain: tuple[str, ...]
) -> tuple[tuple[Item, ...], dict[str, None]]:
    out: list[Item] = []
    includes: dict[str, None] = {}  # first-seen order
    chars = 0
    section: SectionMarker | None = None  # the includer's open section (None: the implicit body)
    for item in items:  # node classes have no subclasses: compared by identity, the cheaper test
        if item.__class__ is not Include:
            if item.__class__ is SectionMarker:
                section = item if not item.resume else section
            elif item.__class__ is Separator:
                section = None
            elif item.__class__ is ResourceRef and not item.base:
                item = evolve(item, base=rel)  # its paths resolve against the file that holds it
            out.append(item)
            continue
        key, code, message = resolve(ctx, rel, item.path)
        if key is None:
            hint = None
            fixes: list[Fix | None] = []
            if code == codes.INCLUDE_NOT_FOUND:
                partials = [p for p in ctx.tree.files if posixpath.basename(p).startswith(PARTIAL_PREFIX)]
                close = did_you_mean(item.path, partials, limit=3)
                hint = f"did you mean `{close}`?" if close else "partials are files named `_name.prompt`"
                if close and resolve(ctx, rel, close)[0] == close:  # as written here, it names that partial
                    fixes.append(replace_word(ctx.source_of(item.span), item.span, item.path, close))
            elif code == codes.INCLUDE_OUTSIDE:
                hint = "partials must live inside the source folder"
            elif code == codes.INCLUDE_NOT_PARTIAL:
                hint = "rename it to start with `_` to make it a partial"
            ctx.report(code or codes.INCLUDE_NOT_FOUND, message or "", item.span, hint, fixes)
            continue
        if key in chain or key == rel:
            cycle = " → ".join((*chain, key)) if key in chain else f"{rel} → {key}"
            ctx.report(
                codes.INCLUDE_CYCLE, f"include cycle: {cycle}", item.span, "remove one of the includes in the chain"
            )
            continue
        if len(chain) >= MAX_INCLUDE_DEPTH:
            ctx.report(
                codes.INCLUDE_LIMIT,
                f"includes nested more than {MAX_INCLUDE_DEPTH} deep ({' → '.join(chain[:3])} → …)",
                item.span,
                "flatten the chain of partials",
            )
            continue
        partial = _splice(ctx, key, (*chain, key))
        ctx.extend(partial.diagnostics)
        chars += partial.chars
        if chars > MAX_EXPANDED_CHARS or len(out) + len(partial.items) > MAX_EXPANDED_ITEMS:
            ctx.report(
                codes.INCLUDE_LIMIT,
                f"`{item.path}` would make this file expand to more than {MAX_EXPANDED_CHARS:,} characters "
                f"or {MAX_EXPANDED_ITEMS:,} pieces",
                item.span,
                "include each partial once, or split the prompt",
            )
            break
        includes[key] = None
        includes.update(partial.includes)
        out.extend(partial.items)
        if partial.items and not _ends_a_line(partial.items[-1]):
            # A partial splices as whole lines: one saved without a final newline must not glue
            # its last line onto the includer's next one.
            out.append(Text("\n", item.span))
        if any(isinstance(i, SectionMarker) for i in partial.items):
            # A partial's sections end where the partial ends; the includer's section goes on.
            name = section.name if section is not None else IMPLICIT_SECTION
            boundary = section.boundary if section is not None else None
            target = section.target if section is not None else "system"
            out.append(SectionMarker(name, boundary, target, item.span, resume=True))
    return tuple(out), includes


def _ends_a_line(item: Item) -> bool:
    return not isinstance(item, (Text, Escape, Placeholder, Block)) or (
        isinstance(item, Text) and item.value.endswith("\n")
    )


def expand_includes(doc: Document, ctx: Context) -> Document:
    rel = ctx.tree.rel_of(doc.name)
    items, includes = _expand(doc.items, rel, ctx, (rel,))
    header = doc.header
    merged_tags = list(header.tags)
    merged_inputs = list(header.declared_inputs or ())
    merged_types = dict(header.input_types)
    # what is merged so far, as sets: `in` on the growing lists made N partials' names cost N²
    tags_seen, inputs_seen = set(merged_tags), set(merged_inputs)
    for key in includes:  # tags and inputs from partials keep first-seen order
        partial = _splice(ctx, key, (key,))
        new_tags = [t for t in partial.tags if t not in tags_seen]
        new_inputs = [i for i in partial.inputs if i not in inputs_seen]
        merged_tags += new_tags
        merged_inputs += new_inputs
        tags_seen.update(new_tags)
        inputs_seen.update(new_inputs)
        for name, schema in partial.types:  # the prompt's own declaration wins
            merged_types.setdefault(name, schema)
    # A partial's `/// input:` adds to the includer's declaration; it does not create one, or a
    # prompt that declares nothing would suddenly have its own inputs checked against the partial's.
    if header.declared_inputs is not None:
        header = evolve(header, declared_inputs=tuple(merged_inputs))
    header = evolve(header, tags=tuple(merged_tags), input_types=tuple(merged_types.items()))
    return evolve(
        doc, items=items, header=header, includes=tuple(sorted(k for k in includes if not k.startswith(STD_PREFIX)))
    )
