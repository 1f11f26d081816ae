"""The directives pass: directive collection (docs/language.md, "Directives").

File-scoped directives (`param`, `flow`, `node`, `tag`, `input`, `role`, generic keys) become the
document header wherever they stand. Positional ones (`section`, `include`) stay in the item stream
as markers for the include and role-splitting passes.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from typing import Any

from ..facts import codes
from ..facts.codes import CODES
from ..facts.diagnostics import Edit, Fix, Span, replace_word
from ..facts.language import BOUNDARIES, BUDGET_LIMITS, CACHE_TTLS, IDENTIFIER_PATTERN, ROLES, TARGETS
from ..facts.suggest import did_you_mean
from ..runtime.inputtypes import TypeSyntaxError, parse_type
from ..syntax.jsonfile import unrepresentable
from ..syntax.nodes import Directive, Document, Header, Include, Item, ResourceRef, SectionMarker, evolve
from .context import Context

#: Keys with a meaning of their own; anything else is generic metadata.
RESERVED_KEYS = (
    "param",
    "flow",
    "node",
    "tag",
    "input",
    "section",
    "include",
    "role",
    "tools",
    "output",
    "cache_ttl",
    "budget",
)
#: Directives a partial may not hold: they describe a whole prompt, not a piece of one.
#: (`tools` is allowed: a shared identity often comes with its tools.)
PROMPT_ONLY_KEYS = ("param", "flow", "node", "role", "output", "cache_ttl", "budget")

_NAME = re.compile(rf"{IDENTIFIER_PATTERN}\Z")
#: keys people write for a reserved one that a typo distance does not catch
_ALIASES = {
    "params": "param",
    "parms": "param",
    "prams": "param",
    "parameter": "param",
    "parameters": "param",
    "inputs": "input",
    "tags": "tag",
    "includes": "include",
    "sections": "section",
    "tool": "tools",
    "outputs": "output",
    "output_schema": "output",
    "ttl": "cache_ttl",
    "budgets": "budget",
}


@lru_cache(maxsize=1024)
def _reserved_key_like(key: str) -> str | None:
    """The reserved key a metadata key is a typo of, if any (asked for every metadata line of
    every prompt, with a handful of distinct keys in a project: each is worked out once)."""
    return did_you_mean(key, RESERVED_KEYS)


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


class _HeaderBuilder:
    def __init__(self, ctx: Context, *, partial: bool) -> None:
        self.ctx = ctx
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

    def add(self, d: Directive) -> None:
        key = d.key
        ctx = self.ctx
        if self.partial and key in PROMPT_ONLY_KEYS:
            _not_in_partial(ctx, d)
            return
        if key == "param":
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
        elif key == "flow":
            self.flow = self.once(self.flow, d)
        elif key == "node":
            self.node = self.once(self.node, d)
        elif key == "tag":
            for tag in split_list(d.value):
                if tag not in self.tags:
                    self.tags.append(tag)
        elif key == "input":
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
                    ctx.report(
                        codes.MALFORMED_DIRECTIVE,
                        f"invalid input name `{name}`",
                        d.value_span,
                        "input names are Python identifiers",
                    )
                elif name not in self.input_spans:
                    self.inputs.append(name)
                    self.input_spans[name] = _value_span(d, offset, len(name))
        elif key == "cache_ttl":
            if d.value not in CACHE_TTLS:
                ctx.report(
                    codes.INVALID_MODEL,
                    f"unknown cache TTL `{d.value}`",
                    d.value_span if d.value else d.span,
                    f"write one of: {', '.join(CACHE_TTLS)} (Anthropic's two breakpoint lifetimes, or no breakpoints)",
                )
            else:
                self.cache_ttl = self.once(self.cache_ttl, d)
        elif key == "budget":
            if self.budget_span is not None:
                self.once((d.value, self.budget_span), d)
                return
            limits, problem = parse_budget(d.value)
            if problem is not None:
                ctx.report(
                    codes.MALFORMED_DIRECTIVE,
                    problem,
                    d.value_span if d.value else d.span,
                    "write `/// budget: total<=8000, uncached<=2000` (tokens: the whole request, and what is not cached)",
                )
                return
            self.budget = [(limit, count, _name_span(d, piece)) for limit, count, piece in limits]
            self.budget_span = d.value_span
        elif key == "promptc":  # `/// promptc: allow W706`: applied by promptc.backend.suppress, never metadata
            _, problem = parse_allow(d.value)
            if problem:
                ctx.report(codes.MALFORMED_DIRECTIVE, problem, d.value_span if d.value else d.span, None)
        elif key == "role":
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
        else:
            close = _reserved_key_like(key) or _ALIASES.get(key)
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


def _resource_ref(d: Directive, ctx: Context, *, partial: bool) -> ResourceRef | None:
    """`/// tools: a.json, b.json` / `/// output: schema.json` → a positional reference."""
    if partial and d.key in PROMPT_ONLY_KEYS:
        _not_in_partial(ctx, d)
        return None
    paths = tuple((path, _name_span(d, path)) for path in split_list(d.value))
    example = "tools/search.json, tools/fetch.json" if d.key == "tools" else "schemas/answer.json"
    if not paths:
        ctx.report(codes.MALFORMED_DIRECTIVE, f"`{d.key}` needs a path", d.span, f"write `/// {d.key}: {example}`")
        return None
    if d.key == "output" and len(paths) > 1:
        ctx.report(
            codes.MALFORMED_DIRECTIVE,
            "`output` takes one schema file",
            d.value_span,
            "a prompt has one structured-output schema; combine them into one file",
        )
        return None
    return ResourceRef(d.key, paths, d.span)


def collect(items: tuple[Item, ...], ctx: Context, *, partial: bool = False) -> tuple[tuple[Item, ...], Header]:
    builder = _HeaderBuilder(ctx, partial=partial)
    kept: list[Item] = []
    for item in items:
        if not isinstance(item, Directive):
            kept.append(item)
            continue
        if item.key == "section":
            parsed = parse_section(item.value)
            if isinstance(parsed, str):
                ctx.report(
                    codes.MALFORMED_SECTION,
                    parsed,
                    item.value_span if item.value else item.span,
                    "write `/// section: NAME [stable|dynamic] [system|user_context]`",
                )
                continue
            name, boundary, target = parsed
            kept.append(SectionMarker(name, boundary, target, item.span))
        elif item.key == "include":
            if not item.value:
                ctx.report(
                    codes.MALFORMED_DIRECTIVE,
                    "`include` needs a path",
                    item.span,
                    "write `/// include: _partial.prompt`",
                )
                continue
            kept.append(Include(item.value, item.value_span))
        elif item.key in ("tools", "output"):
            ref = _resource_ref(item, ctx, partial=partial)
            if ref is not None:
                kept.append(ref)
        else:
            builder.add(item)
            if builder.refs:
                kept.extend(builder.refs)
                builder.refs.clear()
    return tuple(kept), builder.header()


def collect_directives(doc: Document, ctx: Context) -> Document:
    items, header = collect(doc.items, ctx)
    return evolve(doc, items=items, header=header)
