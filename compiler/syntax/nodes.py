"""The AST: frozen nodes, every one with the span it came from.

The parser produces a flat tuple of *items* (text, comments, directives, separators, placeholders,
template blocks). Passes turn that into a `Document` with header fields, then messages made of
sections. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field, fields
from operator import attrgetter
from typing import Any, Literal, TypeVar

from ..facts import language as _language
from ..facts.diagnostics import SourceText, Span
from ..facts.records import dataclass

_Node = TypeVar("_Node")
#: each node class's fields: a getter of all their values (in order) and each one's position
_FIELDS: dict[type, tuple[Callable[[Any], tuple[Any, ...]], dict[str, int]]] = {}


def evolve(node: _Node, **changes: Any) -> _Node:
    """`dataclasses.replace` for the nodes of this module, twice as fast: the values are read in
    one `attrgetter` call and handed to the class positionally (a compile copies its document and
    sections about twenty-five times; `replace`, which checks each field, was 6% of it). Every
    field of a node is an `__init__` field, so this is what `replace` does; an unknown field name
    is a TypeError, as there."""
    cls = type(node)
    known = _FIELDS.get(cls)
    if known is None:
        names = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]
        known = _FIELDS[cls] = (attrgetter(*names), {name: i for i, name in enumerate(names)})
    get, index = known
    values = list(get(node))
    for name, value in changes.items():
        where = index.get(name)
        if where is None:
            raise TypeError(f"{cls.__name__} has no field {name!r}")
        values[where] = value
    return cls(*values)


# --------------------------------------------------------------------------------------------
# Items: what the grammar recognises


@dataclass(frozen=True, slots=True)
class Text:
    value: str
    span: Span


@dataclass(frozen=True, slots=True)
class Escape:
    """`\\///`, `\\${`, `\\{{`, `\\{#`, `\\{%`: a literal opener."""

    value: str
    span: Span


@dataclass(frozen=True, slots=True)
class NearSeparator:
    """A line shaped almost like a role separator; kept as text, linted by the roles pass."""

    value: str
    span: Span


@dataclass(frozen=True, slots=True)
class Comment:
    full_line: bool
    span: Span


@dataclass(frozen=True, slots=True)
class Directive:
    key: str
    value: str
    span: Span
    value_span: Span


@dataclass(frozen=True, slots=True)
class Separator:
    role: str  # as written; the roles pass validates and lowercases it
    span: Span
    role_span: Span


@dataclass(frozen=True, slots=True)
class Placeholder:
    path: str  # dotted: "user.name"
    span: Span

    @property
    def root(self) -> str:
        return self.path.split(".", 1)[0]


BlockKind = Literal["expr", "exec", "stmt"]


@dataclass(frozen=True, slots=True)
class Block:
    """A promplate block. `code` is the inner text without delimiters and `-` markers;
    `code_span` locates its first character in the .prompt file (for Python error mapping)."""

    kind: BlockKind
    code: str
    span: Span
    code_span: Span
    trim_left: bool = False
    trim_right: bool = False
    keyword: str = ""  # stmt blocks: if / elif / else / for / while / endif / endfor / endwhile
    raw: str = ""  # the block exactly as written, delimiters included


@dataclass(frozen=True, slots=True)
class SectionMarker:
    """`/// section: NAME [stable|dynamic] [system|user_context]`, positioned where it stood."""

    name: str
    boundary: str | None
    target: str
    span: Span
    #: set on the marker the include pass puts after a partial that opened sections: the
    #: includer's section (`name`, or the implicit body) continues there
    resume: bool = False


@dataclass(frozen=True, slots=True)
class Include:
    path: str
    span: Span


@dataclass(frozen=True, slots=True)
class ResourceRef:
    """`/// tools: a.json, b.json` or `/// output: schema.json`, kept where it stood so that tools
    keep the order they are written in, across partials. `paths` are as written, each with its
    span; `base` is the source-relative file the paths resolve against (set by the include pass:
    the partial's path for a partial's directive)."""

    kind: str  # "tools" | "output" | "input" (an `/// input: name: @schema.json` type)
    paths: tuple[tuple[str, Span], ...]
    span: Span
    base: str = ""
    input_name: str = ""  # kind "input": the input the schema types


Item = (
    Text
    | Escape
    | NearSeparator
    | Comment
    | Directive
    | Separator
    | Placeholder
    | Block
    | SectionMarker
    | Include
    | ResourceRef
)


@dataclass(frozen=True, slots=True)
class Spliced:
    """Items of an included partial, with the partial's own source, for analysing a section's
    items with its partials' kept apart (`analysis.inference.analyse`); the include pass itself
    splices the items in place."""

    source: SourceText
    items: tuple[Item | Spliced, ...]
    chain: tuple[str, ...]


# --------------------------------------------------------------------------------------------
# Structure built by the passes

#: The section that holds a message's text before any `/// section:` directive.
IMPLICIT_SECTION = _language.IMPLICIT_SECTION


@dataclass(frozen=True, slots=True)
class Header:
    """File-scoped facts gathered by directive collection. Every field but `metadata` (the keys no
    directive declares) is filled by one directive's reader: what it means is that directive's
    declaration (`promptc.passes.directives.DIRECTIVES`, whose `fills` names the fields; the
    docs/language.md table is made from the same `doc`). The comments here say only how a value
    is held."""

    #: `/// param:`: (name, typed value), and where each is written (its line's value)
    params: tuple[tuple[str, object], ...] = ()
    metadata: tuple[tuple[str, str], ...] = ()
    flow: str | None = None
    node: str | None = None
    tags: tuple[str, ...] = ()
    #: `/// input:`: the names (None: no such line), the first line's value, where each name is
    #: written (for "never used" warnings), each type as JSON Schema, each `(max_tokens=N)` as
    #: (name, N, where the bound is written)
    declared_inputs: tuple[str, ...] | None = None
    declared_inputs_span: Span | None = None
    declared_input_spans: tuple[tuple[str, Span], ...] = ()
    role: str | None = None
    role_span: Span | None = None
    input_types: tuple[tuple[str, dict[str, Any]], ...] = ()
    param_spans: tuple[tuple[str, Span], ...] = ()
    cache_ttl: str | None = None
    cache_ttl_span: Span | None = None
    input_bounds: tuple[tuple[str, int, Span], ...] = ()
    #: `/// budget:`: (limit name, tokens, where), and the line's value
    budget: tuple[tuple[str, int, Span], ...] = ()
    budget_span: Span | None = None


@dataclass(frozen=True, slots=True)
class Section:
    name: str
    declared_boundary: str | None
    target: str
    span: Span | None
    source: SourceText  # the file whose directive opened it (a partial's, for included sections)
    items: tuple[Item, ...] = ()
    #: filled by placeholder binding and inference
    inputs: tuple[str, ...] = ()
    helpers: tuple[str, ...] = ()
    has_template: bool = False
    #: where each input is first used (filled by inference)
    uses: tuple[tuple[str, Span], ...] = ()
    #: every read of an input or helper, in source order (filled by inference; for editors)
    references: tuple[tuple[str, Span], ...] = ()
    #: filled by partitioning
    boundary: str = "stable"


def section_text(section: Section) -> tuple[str, str | None]:
    """A section as artifact template text, and the text it renders to when it holds only literal
    text (None when it holds a placeholder or a block): what emit writes and what the inference
    pass hands CPython to compile, from one definition."""
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
            template.append(_language.escape_literal("".join(run)))
            run = []
        has_code = True
        if isinstance(item, Placeholder):
            template.append(f"${{{item.path}}}")
        elif isinstance(item, Block):
            template.append(item.raw)
    if run:
        template.append(_language.escape_literal("".join(run)))
    return "".join(template), (None if has_code else "".join(literal))


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    span: Span | None
    sections: tuple[Section, ...] = ()


@dataclass(frozen=True, slots=True)
class Document:
    source: SourceText
    name: str
    items: tuple[Item, ...] = ()
    header: Header = field(default_factory=Header)
    messages: tuple[Message, ...] = ()
    inputs: tuple[str, ...] = ()
    #: inputs inference leaves optional: every use is guarded by a test that proves it is not None
    #: (`{% if user %}${user.name}{% endif %}`), so left out it renders as None and nothing fails
    optional_inputs: tuple[str, ...] = ()
    helpers: tuple[str, ...] = ()
    includes: tuple[str, ...] = ()  # source-relative paths of every partial spliced in, sorted
    #: the prompt's leading comment: the `///` lines that open the file, their text without `/// `
    doc_comment: str | None = None
    #: filled by the resources pass: the tool definitions in first-seen order, the output schema
    #: (`{"name", "schema"}`), and the source-relative files they came from (sorted)
    tools: tuple[dict[str, Any], ...] = ()
    output_schema: dict[str, Any] | None = None
    #: the output schema as a contract (`inputtypes.normalize`), None when it has none or both
    #: runtimes cannot check all of it (W827)
    output_contract: object = None
    resources: tuple[str, ...] = ()
    #: filled by the inference pass: what uses imply for inputs without a declared type
    #: (`${user.name}` → an object with `name`), as JSON Schema
    inferred_types: tuple[tuple[str, dict[str, Any]], ...] = ()
