"""The directives pass: directive collection (docs/language.md, "Directives").

Every directive is declared once, as a `Declaration` in `DIRECTIVES` at the end of this module
(the configuration's `option(...)` in `promptc.facts.config` is the model): its key, its scope,
where `promptc fmt` puts it, the reader that takes its value into the header, what the docs say
about it, how an editor colours its value, and whether the completion offers it. The rest is
derived from that table (`Directives`): the reserved keys and the keys only a prompt may set,
W303's "did you mean" (here and in `promptc.passes.comments`), fmt's order
(`promptc.tools.fmt.DIRECTIVE_ORDER`), the language server's completion (`promptc.lsp.features`),
the editor grammar (editors/vscode/gen_grammar.py), and the table in docs/language.md
(`python -m promptc.passes.directives docs/language.md` rewrites it). Adding a directive is its
declaration, the stage that consumes what its reader puts into the `Header`, and its test.

Directives that describe the prompt or the file become the document header wherever they stand;
a reader may leave an item where its directive stood (a section marker, an include, a tool or
schema reference) for the include, resource and role-splitting passes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from ..facts import codes
from ..facts.codes import CODES
from ..facts.diagnostics import Edit, Fix, Span, replace_word
from ..facts.language import BOUNDARIES, BUDGET_LIMITS, CACHE_TTLS, IDENTIFIER_PATTERN, ROLES, TARGETS
from ..facts.records import dataclass
from ..facts.suggest import did_you_mean
from ..runtime.inputtypes import TypeSyntaxError, parse_type
from ..syntax.jsonfile import unrepresentable
from ..syntax.nodes import Directive, Document, Header, Include, Item, ResourceRef, SectionMarker, evolve
from .context import Context

#: What a directive describes, and so where it may stand:
#: - "prompt": the whole prompt, wherever the line stands; a partial may not set it (E804);
#: - "file": the file that holds it, wherever the line stands; a partial's joins its includer's;
#: - "place": acts where it stands (a section opens there, a partial is spliced there).
Scope = Literal["prompt", "file", "place"]
#: What a directive's value is, for the editor grammar (editors/vscode/gen_grammar.py colours
#: each kind): `key=JSON` pairs, a list of names, typed inputs, a section's words, a list of
#: paths, a role, a cache TTL, budget limits, diagnostic codes, or any text.
ValueKind = Literal["params", "names", "inputs", "section", "paths", "role", "ttl", "budget", "allow", "text"]
#: A directive's reader: the header being built and one line of the directive → the items it
#: leaves in the item stream where the line stood (none for most).
Reader = Callable[["HeaderBuilder", Directive], tuple[Item, ...]]


@dataclass(frozen=True, slots=True)
class Declaration:
    """One directive, declared once (see the module docstring)."""

    #: the key: `/// key: value`
    name: str
    scope: Scope
    #: reads one line of it (see `Reader`); E804 for a prompt's directive in a partial comes first
    read: Reader
    #: how the table in docs/language.md writes it (Markdown, `|` escaped), and what it says
    example: str
    doc: str
    #: how an editor colours its value
    value: ValueKind
    #: where `promptc fmt` puts it among the file-level directives at the top of a file, lowest
    #: first; None: after them, with the metadata, in the order written
    rank: int | None = None
    #: the `Header` fields its reader fills: what they hold is what `doc` says
    fills: tuple[str, ...] = ()
    #: a reserved key: the completion offers it, and a metadata key one typo from it, or it
    #: written with capitals (`/// Param:`), warns (W303)
    reserved: bool = True
    #: keys people write for it that a typo distance does not catch (`params`): W303 names it
    aliases: tuple[str, ...] = ()
    #: what the rest of a comment `/// key rest` must look like to be this directive with its
    #: colon forgotten (W303); None: such a comment is never taken for it
    bare: re.Pattern[str] | None = None


class Directives:
    """A table of directives, and what is derived from it. `DIRECTIVES` is promptc's; a test
    passes a table of its own to `collect`, `promptc.tools.fmt.layout`, the completion and the
    editor grammar to see a new directive reach each of them."""

    def __init__(self, declared: Iterable[Declaration]) -> None:
        self.declared = tuple(declared)
        self.by_name = {d.name: d for d in self.declared}
        if len(self.by_name) != len(self.declared):
            raise ValueError("a directive is declared twice")
        ranked = sorted((d for d in self.declared if d.rank is not None), key=lambda d: d.rank or 0)
        if len({d.rank for d in ranked}) != len(ranked):
            raise ValueError("two directives share a rank in fmt's order")
        #: keys with a meaning of their own; anything else is generic metadata (declared order)
        self.reserved_keys = tuple(d.name for d in self.declared if d.reserved)
        #: keys a partial may not hold: they describe a whole prompt, not a piece of one
        self.prompt_only_keys = tuple(d.name for d in self.declared if d.scope == "prompt")
        #: the order `promptc fmt` gives the file-level directives at the top of a file; the
        #: leading comment (the artifact's `doc`) is read in the same order, so formatting never
        #: changes it
        self.order = tuple(d.name for d in ranked)
        self._ranks = {name: i for i, name in enumerate(self.order)}
        self._aliases = {alias: d.name for d in self.declared for alias in d.aliases}
        self._typos: dict[str, str | None] = {}

    def rank(self, key: str) -> int:
        """`key`'s place in `order`; a key not in it (metadata) sorts after them all."""
        return self._ranks.get(key, len(self.order))

    def typo_of(self, key: str) -> str | None:
        """The reserved key a metadata key is a typo of, or another name for, if any (asked for
        every metadata line of every prompt, with a handful of distinct keys in a project: each
        is worked out once, the 1,024 asked for last kept)."""
        if key in self._typos:
            return self._typos[key]
        close = did_you_mean(key, self.reserved_keys) or self._aliases.get(key)
        self._typos[key] = close
        if len(self._typos) > 1024:
            del self._typos[next(iter(self._typos))]
        return close


_NAME = re.compile(rf"{IDENTIFIER_PATTERN}\Z")
#: `TYPE(max_tokens=N)`: the declared upper bound of an input's text, in tokens (promptc.backend.budget).
#: The bound starts at its first character that is not a space and ends at its last (a greedy repeat
#: that backs off once: a lazy one read the rest of a run of spaces after each of its characters).
_MAX_TOKENS = re.compile(r"\(\s*max_tokens\s*=\s*+((?:[^)]*[^)\s])?)\s*\)\s*\Z")
#: model parameters written as directives of their own (`/// model: gpt-4o`)
_PARAM_KEYS = ("model", "temperature", "max_tokens", "top_p", "top_k", "stop", "seed")
_SECTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")


def split_list(value: str) -> list[str]:
    """Split on commas that are outside quotes and brackets."""
    return [piece for piece, _ in split_list_at(value)]


def split_list_at(value: str) -> list[tuple[str, int]]:
    """`split_list` with each piece's offset in `value` (of its first non-blank character): one
    pass, so a directive with a million items costs a million steps."""
    parts: list[tuple[str, int]] = []
    if not any(opener in value for opener in _NESTING):  # commas only (most lists): split on them
        start = 0
        for raw in value.split(","):
            _piece(parts, raw, 0, len(raw), start)
            start += len(raw) + 1
        return parts
    depth = 0
    quote = ""
    escaped = False
    start = 0
    for index, ch in enumerate(value):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            _piece(parts, value, start, index)
            start = index + 1
    _piece(parts, value, start, len(value))
    return parts


#: what makes a comma not a separator: quotes and brackets (closers alone change nothing)
_NESTING = ("'", '"', "[", "{", "(")


def _piece(parts: list[tuple[str, int]], value: str, start: int, end: int, base: int | None = None) -> None:
    raw = value[start:end]
    text = raw.strip()
    if text:
        parts.append((text, (start if base is None else base) + len(raw) - len(raw.lstrip())))


def _unrepresentable(value: object) -> tuple[list[str | int], str, str] | None:
    """What in a param's JSON value no artifact can carry (a lone surrogate escape, a number out
    of range inside a list or object), as `jsonfile.unrepresentable` says, or None."""
    if isinstance(value, (int, float, bool)) or value is None:
        return None  # a top-level number out of range is kept as its text by `typed_value`
    return unrepresentable(value)


#: `typed_value`s that are not containers, by their text: the same `0.2`s and `512`s come back
#: in prompt after prompt (the 4,096 asked for last)
_TYPED: dict[str, object] = {}


def typed_value(raw: str) -> object:
    """A JSON literal where the text is one (`0.7`, `true`, `null`, `"a, b"`), else the string."""
    found = _TYPED.get(raw, _TYPED)
    if found is not _TYPED:
        return found
    value = _typed_value(raw)
    if len(raw) <= 200 and not isinstance(value, (list, dict)):  # a container is the caller's own to change
        _TYPED[raw] = value
        if len(_TYPED) > 4096:
            del _TYPED[next(iter(_TYPED))]
    return value


def _typed_value(raw: str) -> object:
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    if isinstance(value, float) and not math.isfinite(value):
        return raw
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
        return raw  # outside the 64-bit range JSON consumers can hold exactly
    return value


def parse_section(value: str) -> tuple[str, str | None, str] | str:
    """`NAME [stable|dynamic] [system|user_context]` → (name, boundary, target), or an error text."""
    words = value.split()
    if not words:
        return "a section needs a name: `/// section: NAME [stable|dynamic] [system|user_context]`"
    name, *rest = words
    if not _SECTION_NAME.match(name):
        return f"invalid section name `{name}`"
    boundary: str | None = None
    target = "system"
    seen_target = False
    for word in rest:
        lowered = word.lower()
        if lowered in BOUNDARIES and boundary is not None:
            return f"section `{name}` is given both `{boundary}` and `{lowered}`: a section is one or the other"
        if lowered in TARGETS and seen_target:
            return f"section `{name}` is given two targets, `{target}` and `{lowered}`: choose one"
        if lowered in BOUNDARIES and boundary is None:
            boundary = lowered
        elif lowered in TARGETS and not seen_target:
            target, seen_target = lowered, True
        else:
            options = [*BOUNDARIES, *TARGETS]
            close = did_you_mean(lowered, options, limit=3)
            extra = f"; did you mean `{close}`?" if close else ""
            return f"unexpected `{word}` in section `{name}`: expected stable, dynamic, system or user_context{extra}"
    return name, boundary, target


def _value_span(d: Directive, offset: int, length: int) -> Span:
    """The span of `length` characters at `offset` in a directive's value."""
    src = d.value_span.src
    if src is None:
        return d.value_span
    start = d.value_span.start + offset
    return src.span(start, start + length)


def _name_span(d: Directive, name: str) -> Span:
    """The span of one name inside a directive's value (falls back to the whole value)."""
    match = re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", d.value)
    src = d.value_span.src
    if match is None or src is None:
        return d.value_span
    start = d.value_span.start + match.start()
    return src.span(start, start + len(name))


class HeaderBuilder:
    """The header of one file as its directives are read: each declaration's reader fills its
    part (the `Header` fields its declaration `fills`), `header()` the result."""

    def __init__(self, ctx: Context, directives: Directives, *, partial: bool) -> None:
        self.ctx = ctx
        self.directives = directives
        self.partial = partial
        self.params: dict[str, object] = {}
        self.metadata: dict[str, str] = {}
        self.flow: tuple[str, Span] | None = None
        self.node: tuple[str, Span] | None = None
        self.tags: list[str] = []
        self.inputs: list[str] | None = None
        self.inputs_span: Span | None = None
        self.input_spans: dict[str, Span] = {}
        self.role: tuple[str, Span] | None = None
        self.param_spans: dict[str, Span] = {}
        self.cache_ttl: tuple[str, Span] | None = None
        #: declared input types, as JSON Schema
        self.types: dict[str, dict[str, Any]] = {}
        #: `name: @schema.json` types, resolved by the resources pass (kept where they stood)
        self.refs: list[ResourceRef] = []
        #: `name: TYPE(max_tokens=N)`: input name → (N, where it is written)
        self.bounds: dict[str, tuple[int, Span]] = {}
        #: `/// budget: total<=8000, uncached<=2000`: (name, limit, where) and the directive's span
        self.budget: list[tuple[str, int, Span]] = []
        self.budget_span: Span | None = None

    def _input_type(self, d: Directive, name: str, written: str, at: int | None = None) -> None:
        """`name: TYPE` of an `/// input:` directive → the input's JSON Schema (E304 when it does
        not parse, located at the offending part of the type). `at`: the offset of `written` in
        the directive's value (else the type is looked for by its text)."""
        text = written.strip()
        # `TYPE(max_tokens=N)`: the value's bound, for `/// budget:` (matched at the last `(` only:
        # linear on any text)
        bound = _MAX_TOKENS.match(text, text.rfind("(")) if text.endswith(")") else None
        if bound is not None:
            text = self._bound(d, name, written, at, text, bound)
        if not text:
            where = d.value_span
        elif at is not None:
            where = _value_span(d, at + len(written) - len(written.lstrip()), len(text))
        else:
            where = _name_span(d, text)
        if text.startswith("@"):
            path = text[1:].strip()
            if not path:
                self.ctx.report(
                    codes.MALFORMED_DIRECTIVE,
                    f"input `{name}`: `@` needs a schema file",
                    where,
                    f"write `/// input: {name}: @schemas/{name}.json`",
                )
                return
            src = where.src
            written_at = src.span(where.end - len(path), where.end) if src is not None else where
            self.refs.append(ResourceRef("input", ((path, written_at),), d.span, input_name=name))
            return
        try:
            schema = parse_type(text)
        except TypeSyntaxError as exc:
            src = where.src
            span = src.span(where.start + exc.offset, where.start + exc.offset + 1) if src is not None else where
            self.ctx.report(
                codes.MALFORMED_DIRECTIVE,
                f"input `{name}`: {exc}",
                span,
                "types: str, int, float, bool, list[T], dict[str, T], T | None",
            )
            return
        self.types[name] = schema

    def _bound(self, d: Directive, name: str, written: str, at: int | None, text: str, bound: re.Match[str]) -> str:
        """Record `(max_tokens=N)` of an input's type (E304 for a count that is no whole number);
        the type without it."""
        lead = len(written) - len(written.lstrip())
        where = (
            _value_span(d, at + lead + bound.start(), len(text) - bound.start())
            if at is not None
            else _name_span(d, text[bound.start() :])
        )
        tokens = parse_count(bound.group(1))
        if tokens is None:
            self.ctx.report(
                codes.MALFORMED_DIRECTIVE,
                f"input `{name}`: `max_tokens` needs a whole number of tokens, not `{bound.group(1)}`",
                where,
                f"write `/// input: {name}: str(max_tokens=4000)`",
            )
        else:
            self.bounds[name] = (tokens, where)
        return text[: bound.start()].rstrip()

    def once(self, current: tuple[str, Span] | None, d: Directive) -> tuple[str, Span]:
        if current is not None:
            first = current[1]
            self.ctx.report(
                codes.DIRECTIVE_TWICE,
                f"`{d.key}` given twice (first at line {first.line})",
                d.span,
                f"a prompt has one {d.key}; remove one of them",
            )
            return current
        if not d.value:
            self.ctx.report(codes.MALFORMED_DIRECTIVE, f"`{d.key}` needs a value", d.span, f"write `/// {d.key}: name`")
        return d.value, d.value_span

    # -- the readers, one for each declaration (`DIRECTIVES`) ---------------------------------

    def read_param(self, d: Directive) -> tuple[Item, ...]:
        ctx = self.ctx
        pieces = split_list(d.value)
        if not pieces:
            ctx.report(
                codes.MALFORMED_DIRECTIVE,
                "`param` needs `key=value` pairs",
                d.span,
                "write `/// param: temperature=0.7`",
            )
        for piece in pieces:
            name, eq, raw = piece.partition("=")
            name = name.strip()
            if not eq or not name:
                ctx.report(
                    codes.MALFORMED_DIRECTIVE,
                    f"malformed param `{piece}`",
                    d.value_span,
                    'write `key=value`; quote values that contain commas: `stop="a, b"`',
                )
                continue
            if name in self.params:
                ctx.report(
                    codes.KEY_TWICE,
                    f"param `{name}` given twice; the later value wins",
                    d.value_span,
                    f"first given at line {self.param_spans[name].line}",
                )
            value = typed_value(raw.strip())
            unfit = _unrepresentable(value)
            if unfit is not None:
                ctx.report(codes.MALFORMED_DIRECTIVE, f"param `{name}`: {unfit[1]}", d.value_span, unfit[2])
                continue
            self.params[name] = value
            self.param_spans[name] = d.value_span
        return ()

    def read_flow(self, d: Directive) -> tuple[Item, ...]:
        self.flow = self.once(self.flow, d)
        return ()

    def read_node(self, d: Directive) -> tuple[Item, ...]:
        self.node = self.once(self.node, d)
        return ()

    def read_tag(self, d: Directive) -> tuple[Item, ...]:
        for tag in split_list(d.value):
            if tag not in self.tags:
                self.tags.append(tag)
        return ()

    def read_input(self, d: Directive) -> tuple[Item, ...]:
        """The names (and types) of `/// input:`; an `@schema.json` type stays where it stood, for
        the resources pass."""
        # linear in the number of names: each name's span comes from its offset, and the
        # declared names are a set as well as a list
        names = []
        for piece, offset in split_list_at(d.value):
            head, colon, written = piece.partition(":")
            name = head.strip()
            if colon:
                self._input_type(d, name, written, offset + len(head) + 1)
            names.append((name, offset))
        if self.inputs is None:
            self.inputs, self.inputs_span = [], d.value_span
        for name, offset in names:
            if not _NAME.match(name):
                self.ctx.report(
                    codes.MALFORMED_DIRECTIVE,
                    f"invalid input name `{name}`",
                    d.value_span,
                    "input names are Python identifiers",
                )
            elif name not in self.input_spans:
                self.inputs.append(name)
                self.input_spans[name] = _value_span(d, offset, len(name))
        if not self.refs:
            return ()
        refs = tuple(self.refs)
        self.refs.clear()
        return refs

    def read_cache_ttl(self, d: Directive) -> tuple[Item, ...]:
        if d.value not in CACHE_TTLS:
            self.ctx.report(
                codes.INVALID_MODEL,
                f"unknown cache TTL `{d.value}`",
                d.value_span if d.value else d.span,
                f"write one of: {', '.join(CACHE_TTLS)} (a breakpoint lifetime the model offers: Claude 5m or 1h, "
                "OpenAI GPT-5.6 and later 30m or 12h; or none, no breakpoints)",
            )
        else:
            self.cache_ttl = self.once(self.cache_ttl, d)
        return ()

    def read_budget(self, d: Directive) -> tuple[Item, ...]:
        if self.budget_span is not None:
            self.once((d.value, self.budget_span), d)
            return ()
        limits, problem = parse_budget(d.value)
        if problem is not None:
            self.ctx.report(
                codes.MALFORMED_DIRECTIVE,
                problem,
                d.value_span if d.value else d.span,
                "write `/// budget: total<=8000, uncached<=2000` (tokens: the whole request, and what is not cached)",
            )
            return ()
        self.budget = [(limit, count, _name_span(d, piece)) for limit, count, piece in limits]
        self.budget_span = d.value_span
        return ()

    def read_allow(self, d: Directive) -> tuple[Item, ...]:
        """`/// promptc: allow W706`: checked here, applied by promptc.backend.suppress, never metadata."""
        _, problem = parse_allow(d.value)
        if problem:
            self.ctx.report(codes.MALFORMED_DIRECTIVE, problem, d.value_span if d.value else d.span, None)
        return ()

    def read_role(self, d: Directive) -> tuple[Item, ...]:
        ctx = self.ctx
        role = d.value.lower()
        if role not in ROLES:
            close = did_you_mean(role, ROLES, limit=2)
            ctx.report(
                codes.INVALID_ROLE,
                f"unknown role `{d.value}`",
                d.value_span,
                (f"did you mean `{close}`? " if close else "") + f"valid roles: {', '.join(ROLES)}",
                [replace_word(ctx.source_of(d.value_span), d.value_span, d.value, close)] if close else (),
            )
        elif self.role is not None:
            self.once(self.role, d)
        else:
            self.role = (role, d.value_span)
        return ()

    def read_section(self, d: Directive) -> tuple[Item, ...]:
        parsed = parse_section(d.value)
        if isinstance(parsed, str):
            self.ctx.report(
                codes.MALFORMED_SECTION,
                parsed,
                d.value_span if d.value else d.span,
                "write `/// section: NAME [stable|dynamic] [system|user_context]`",
            )
            return ()
        name, boundary, target = parsed
        return (SectionMarker(name, boundary, target, d.span),)

    def read_include(self, d: Directive) -> tuple[Item, ...]:
        if not d.value:
            self.ctx.report(
                codes.MALFORMED_DIRECTIVE,
                "`include` needs a path",
                d.span,
                "write `/// include: _partial.prompt`",
            )
            return ()
        return (Include(d.value, d.value_span),)

    def read_resource(self, d: Directive) -> tuple[Item, ...]:
        """`/// tools: a.json, b.json` / `/// output: schema.json` → a reference, where it stood."""
        paths = tuple((path, _name_span(d, path)) for path in split_list(d.value))
        example = "tools/search.json, tools/fetch.json" if d.key == "tools" else "schemas/answer.json"
        if not paths:
            self.ctx.report(
                codes.MALFORMED_DIRECTIVE, f"`{d.key}` needs a path", d.span, f"write `/// {d.key}: {example}`"
            )
            return ()
        if d.key == "output" and len(paths) > 1:
            self.ctx.report(
                codes.MALFORMED_DIRECTIVE,
                "`output` takes one schema file",
                d.value_span,
                "a prompt has one structured-output schema; combine them into one file",
            )
            return ()
        return (ResourceRef(d.key, paths, d.span),)

    def read_metadata(self, d: Directive) -> None:
        """A key no declaration has: generic metadata (W303 when it looks like a reserved key)."""
        key = d.key
        ctx = self.ctx
        close = self.directives.typo_of(key)
        if key in _PARAM_KEYS:
            ctx.report(
                codes.DIRECTIVE_TYPO,
                f"unknown directive `{key}`, kept as metadata",
                d.span,
                f"model parameters are params: did you mean `/// param: {key}={d.value}`?",
                [_as_param(ctx, d)],
            )
        elif close:
            ctx.report(
                codes.DIRECTIVE_TYPO,
                f"unknown directive `{key}`, kept as metadata",
                d.span,
                f"did you mean `{close}`?",
                [replace_word(ctx.source_of(d.span), d.span, key, close)],
            )
        if self.partial:
            ctx.report(
                codes.IGNORED_IN_PARTIAL,
                f"metadata `{key}` in a partial is ignored",
                d.span,
                "set it in the including prompt",
            )
            return
        if key in self.metadata:
            ctx.report(codes.KEY_TWICE, f"metadata `{key}` given twice; the later value wins", d.span, None)
        self.metadata[key] = d.value

    def header(self) -> Header:
        return Header(
            params=tuple(self.params.items()),
            metadata=tuple(self.metadata.items()),
            flow=self.flow[0] if self.flow else None,
            node=self.node[0] if self.node else None,
            tags=tuple(self.tags),
            declared_inputs=tuple(self.inputs) if self.inputs is not None else None,
            declared_inputs_span=self.inputs_span,
            declared_input_spans=tuple(self.input_spans.items()),
            role=self.role[0] if self.role else None,
            role_span=self.role[1] if self.role else None,
            param_spans=tuple(self.param_spans.items()),
            input_types=tuple(self.types.items()),
            cache_ttl=self.cache_ttl[0] if self.cache_ttl else None,
            cache_ttl_span=self.cache_ttl[1] if self.cache_ttl else None,
            input_bounds=tuple((name, tokens, at) for name, (tokens, at) in self.bounds.items()),
            budget=tuple(self.budget),
            budget_span=self.budget_span,
        )


def parse_allow(value: str) -> tuple[list[str], str | None]:
    """The codes of a `promptc: allow …` directive value, or the problem with it."""
    words = value.split(None, 1)
    if not words or words[0] != "allow" or len(words) < 2:
        return [], "write `/// promptc: allow CODE[, CODE]` (the only `promptc:` directive)"
    names = [name.strip().upper() for name in words[1].split(",") if name.strip()]
    for name in names:
        if name not in CODES:
            return names, f"`{name}` is not a diagnostic code (`promptc explain CODE` lists what one means)"
        if CODES[name].severity == "error":
            return names, f"`{name}` is an error: errors cannot be allowed, only warnings"
    return names, None


def _as_param(ctx: Context, d: Directive) -> Fix | None:
    """`/// max_tokens: 100` written as the param it is: `/// param: max_tokens=100`."""
    src = ctx.source_of(d.span)
    written = src.text[d.span.start : d.span.end]
    at = written.find(d.key)
    if at == -1:
        return None
    start = d.span.start + at
    return Fix(
        f"Write `/// param: {d.key}={d.value}`",
        (Edit.of(src, start, d.value_span.end, f"param: {d.key}={d.value}"),),
    )


#: one limit of a `/// budget:` line: `total<=8000` (the value ends at its last character that is not
#: whitespace, found as `_MAX_TOKENS` finds its own; the name and the spaces are taken whole)
_LIMIT = re.compile(rf"\s*+((?>{IDENTIFIER_PATTERN}))\s*+(<=|≤|<|=|>=|>)?\s*+((?:.*\S)?)\s*\Z", re.S)


def parse_count(text: str) -> int | None:
    """A whole number of tokens: `8000`, `8_000`; None otherwise."""
    cleaned = text.strip()
    if not re.fullmatch(r"[0-9](?:_?[0-9])*", cleaned):
        return None
    return int(cleaned.replace("_", ""))


def parse_budget(value: str) -> tuple[list[tuple[str, int, str]], str | None]:
    """`total<=8000, uncached<=2000` → [(limit, tokens, the piece as written)], or a problem."""
    pieces = split_list(value)
    if not pieces:
        return [], "`budget` needs a limit, e.g. `total<=8000`"
    out: list[tuple[str, int, str]] = []
    for piece in pieces:
        match = _LIMIT.match(piece)
        assert match is not None  # the pattern matches any text
        name, op, number = match.groups()
        if name not in BUDGET_LIMITS:
            close = did_you_mean(name, BUDGET_LIMITS)
            hint = f"; did you mean `{close}`?" if close else ""
            return [], f"unknown budget `{name}`: a budget limits {' or '.join(BUDGET_LIMITS)}{hint}"
        if op not in ("<=", "≤"):
            return [], f"budget `{piece}`: write `{name}<=TOKENS` (an upper bound, inclusive)"
        count = parse_count(number)
        if count is None:
            return [], f"budget `{piece}`: `{number}` is not a whole number of tokens"
        if any(name == seen for seen, _, _ in out):
            return [], f"budget `{name}` given twice"
        out.append((name, count, piece))
    return out, None


def _not_in_partial(ctx: Context, d: Directive) -> None:
    ctx.report(
        codes.PARTIAL_NOT_ALLOWED,
        f"a partial may not set `{d.key}`",
        d.span,
        f"move `/// {d.key}:` into the prompts that include this partial",
    )


# -- the table ----------------------------------------------------------------------------------

_IDENT = IDENTIFIER_PATTERN
_B = HeaderBuilder

#: Every directive, declared once. The order is the reserved keys' (the completion's, the editor
#: grammar's); fmt's order is the ranks'.
DIRECTIVES = Directives(
    (
        Declaration(
            "param",
            "prompt",
            _B.read_param,
            example='`/// param: temperature=0.7, stop="a, b"`',
            doc="model parameters, typed as JSON literals where they parse (`0.7`, `1000`, `true`, `null`, "
            '`"a, b"`, `[1, 2]`), else strings, and checked against the provider\'s type and range for them '
            "(E730, see below). Lines merge; a repeated key warns (W302) and the later wins",
            value="params",
            rank=50,
            fills=("params", "param_spans"),
            aliases=("params", "parms", "prams", "parameter", "parameters"),
            bare=re.compile(rf"{_IDENT}[ \t]*=.*"),
        ),
        Declaration(
            "flow",
            "prompt",
            _B.read_flow,
            example="`/// flow: name`",
            doc="the flow the prompt belongs to (the artifact's `flow`); at most one (E301)",
            value="names",
            rank=10,
            fills=("flow",),
        ),
        Declaration(
            "node",
            "prompt",
            _B.read_node,
            example="`/// node: name`",
            doc="the prompt's node in its flow (the artifact's `node`); at most one (E301)",
            value="names",
            rank=20,
            fills=("node",),
        ),
        Declaration(
            "tag",
            "file",
            _B.read_tag,
            example="`/// tag: a, b`",
            doc="tags in first-seen order, duplicates dropped",
            value="names",
            rank=40,
            fills=("tags",),
            aliases=("tags",),
        ),
        Declaration(
            "input",
            "file",
            _B.read_input,
            example="`/// input: a, b` or `/// input: q: str, limit: int \\| None`",
            doc="the declared runtime inputs, optionally typed (see Inputs), and bounded in tokens "
            "(`str(max_tokens=4000)`, see Token budgets)",
            value="inputs",
            rank=70,
            fills=("declared_inputs", "declared_inputs_span", "declared_input_spans", "input_types", "input_bounds"),
            aliases=("inputs",),
            bare=re.compile(rf"{_IDENT}(?:[ \t]*,[ \t]*{_IDENT})+"),
        ),
        Declaration(
            "section",
            "place",
            _B.read_section,
            example="`/// section: NAME [stable\\|dynamic] [system\\|user_context]`",
            doc="opens a section",
            value="section",
            aliases=("sections",),
            bare=re.compile(rf"[A-Za-z_][A-Za-z0-9_.\-]*(?:[ \t]+(?:{'|'.join((*BOUNDARIES, *TARGETS))}))+", re.I),
        ),
        Declaration(
            "include",
            "place",
            _B.read_include,
            example="`/// include: path`",
            doc="splices a partial",
            value="paths",
            aliases=("includes",),
            bare=re.compile(r"(?:_\S+|std/\S+|\S+\.prompt)"),
        ),
        Declaration(
            "role",
            "prompt",
            _B.read_role,
            example="`/// role: user`",
            doc="the role of a file without separators (default `system`, or config `default_role`)",
            value="role",
            rank=30,
            fills=("role", "role_span"),
        ),
        Declaration(
            "tools",
            "file",
            _B.read_resource,
            example="`/// tools: tools/search.json, tools/fetch.json`",
            doc="tool definitions (see Tools and output schema); a line keeps its place only for the order "
            "of the tools",
            value="paths",
            rank=80,
            aliases=("tool",),
            # a file name holds no comma: `\S+` did, and a list of 40 names with a stray character
            # after it had 2^40 ways to be split before the match failed
            bare=re.compile(r"[^\s,]+\.json(?:[ \t]*,[ \t]*[^\s,]+\.json)*"),
        ),
        Declaration(
            "output",
            "prompt",
            _B.read_resource,
            example="`/// output: schemas/answer.json`",
            doc="the structured-output JSON Schema; one per prompt",
            value="paths",
            rank=90,
            aliases=("outputs", "output_schema"),
            bare=re.compile(r"\S+\.json"),
        ),
        Declaration(
            "cache_ttl",
            "prompt",
            _B.read_cache_ttl,
            example="`/// cache_ttl: 5m`, `1h` or `none`",
            doc="the lifetime of the Anthropic shape's cache breakpoints (else config `cache_ttl`, else the "
            "provider's 5 minutes); `none` sends no breakpoint at all (nothing is counted as cached: for "
            "traffic that makes caching cost more than it saves, `promptc cost --advise`); other values are E710",
            value="ttl",
            rank=60,
            fills=("cache_ttl", "cache_ttl_span"),
            aliases=("ttl",),
            bare=re.compile("|".join(map(re.escape, CACHE_TTLS))),
        ),
        Declaration(
            "budget",
            "prompt",
            _B.read_budget,
            example="`/// budget: total<=8000, uncached<=2000`",
            doc="token limits on the request's worst case, checked at build (see Token budgets); one per prompt",
            value="budget",
            fills=("budget", "budget_span"),
            aliases=("budgets",),
        ),
        Declaration(
            "promptc",
            "place",
            _B.read_allow,
            example="`/// promptc: allow W706, W303`",
            doc="allows those warnings on the next line; at the end of a line (an inline comment), on that "
            "line. Errors cannot be allowed (E304)",
            value="allow",
            # an annotation of a line rather than of the prompt: no typo of it warns
            reserved=False,
        ),
    )
)
#: the reserved keys and the keys only a prompt may set, as `DIRECTIVES` declares them
RESERVED_KEYS = DIRECTIVES.reserved_keys
PROMPT_ONLY_KEYS = DIRECTIVES.prompt_only_keys

#: the last row of the docs table: every key no declaration has
_METADATA_ROW = (
    "| `/// anything: value` | prompt | generic metadata (a string); a key one typo from a reserved key warns "
    "(W303); in a partial it is ignored (W306) |"
)


def docs_table(directives: Directives = DIRECTIVES) -> str:
    """The directives table of docs/language.md, from the declarations."""
    rows = ["| directive | scope | meaning |", "| --- | --- | --- |"]
    rows += [f"| {d.example} | {d.scope} | {d.doc} |" for d in directives.declared]
    return "\n".join([*rows, _METADATA_ROW]) + "\n"


#: The markers around the directives table in docs/language.md.
DOCS_START = (
    "<!-- the directives: generated from promptc.passes.directives "
    "(`python -m promptc.passes.directives docs/language.md`) -->"
)
DOCS_END = "<!-- end of the directives -->"


def with_docs_table(text: str) -> str:
    """`text` (docs/language.md) with the directives table between its markers made anew."""
    start, end = text.index(DOCS_START) + len(DOCS_START), text.index(DOCS_END)
    return f"{text[:start]}\n{docs_table()}{text[end:]}"


# -- the pass -----------------------------------------------------------------------------------


def collect(
    items: tuple[Item, ...], ctx: Context, *, partial: bool = False, directives: Directives = DIRECTIVES
) -> tuple[tuple[Item, ...], Header]:
    """The items without the directives (but what their readers leave where they stood), and the
    header they make: each directive read by its declaration's reader, a prompt's directive in a
    partial refused (E804), a key no declaration has kept as metadata."""
    builder = HeaderBuilder(ctx, directives, partial=partial)
    declared = directives.by_name
    kept: list[Item] = []
    for item in items:
        if not isinstance(item, Directive):
            kept.append(item)
            continue
        declaration = declared.get(item.key)
        if declaration is None:
            builder.read_metadata(item)
        elif partial and declaration.scope == "prompt":
            _not_in_partial(ctx, item)
        else:
            left = declaration.read(builder, item)
            if left:
                kept.extend(left)
    return tuple(kept), builder.header()


def collect_directives(doc: Document, ctx: Context) -> Document:
    items, header = collect(doc.items, ctx)
    return evolve(doc, items=items, header=header)


if __name__ == "__main__":  # pragma: no cover - documentation generator
    import sys

    page = Path(sys.argv[1])
    page.write_text(with_docs_table(page.read_text(encoding="utf-8")), encoding="utf-8")
