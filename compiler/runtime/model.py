"""The artifact model: typed, frozen Python values for the two documents a build writes.

A build writes one *artifact* per prompt (`build/<name>.json`, schema `ARTIFACT_SCHEMA`) and one
*manifest* (`build/manifest.json`, schema `MANIFEST_SCHEMA`). This module is the single
definition of their shape: `emit` builds an `Artifact`, and everything that reads a build — the
runtime, `diff`, `inspect` and the incremental build cache — goes through `Artifact.from_json` and
`Manifest.from_json` rather than indexing raw dicts.

Every class is a frozen, slotted dataclass with two methods:

- `to_json()` returns exactly the dict that the build writes: the same keys in the same order,
  tuples as lists. `orjson.dumps(a.to_json(), option=orjson.OPT_INDENT_2) + b"\\n"` is the
  artifact file's bytes.
- `from_json(data)` checks the document strictly and builds the value. It accepts what the shipped
  JSON Schemas (`promptc/schemas/*.schema.json`) accept, except that unknown keys are ignored (a
  later promptc of the same major schema version may add some), and it raises only
  `ArtifactError`, whose message names the bad field, e.g.
  ``artifact `support/chat`: messages[1].blocks[0].tokens: expected an integer, got 'x'``.
  It checks shape, not consistency: it does not recompute hashes, lengths or token counts.

`from_json` does no copying beyond building the tuples and dataclasses: strings are shared with the
input, and the code is one plain constructor call per object (no reflection over fields).
`params`, `metadata` and the manifest's mappings are plain dicts, copied on the way in and out;
treat them as read-only.

Standard library only: the runtime that applications ship imports this module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import Any, Literal, Self, cast, get_args

from ..facts.language import (
    ARTIFACT_SCHEMA,
    BOUNDARIES,
    CACHE_TTLS,
    IDENTIFIER,
    MANIFEST_SCHEMA,
    ROLES,
    SHAPES,
    TARGETS,
    Boundary,
    Role,
    Target,
)
from ..facts.records import dataclass
from ..facts.version import VERSION

__all__ = [
    "ARTIFACT_SCHEMA",
    "MANIFEST_SCHEMA",
    "ArtifactError",
    "Artifact",
    "Block",
    "Breakpoint",
    "Cache",
    "CacheKey",
    "HeadPart",
    "Manifest",
    "ManifestEntry",
    "Message",
    "OutputSchema",
    "PrefixEnd",
    "Provider",
    "PrefixGroup",
    "Section",
    "Tokenizer",
    "Tool",
    "Totals",
]

#: How an artifact's text renders: placeholders only, or the compiled Python of its blocks.
Renderer = Literal["placeholder", "python"]
RENDERERS: tuple[Renderer, ...] = get_args(Renderer)


class ArtifactError(ValueError):
    """An artifact or manifest document that this promptc cannot read.

    `path` is the offending field (`messages[1].blocks[0].tokens`), or "" for the document itself.
    """

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


# ---------------------------------------------------------------------------------------------
# Checking fields. Each helper reads `data[key]`, checks it, and raises `_Invalid` naming the field
# as `at + key`, where `at` is the object's own path with a trailing dot ("messages[1].").


class _Invalid(Exception):
    """Raised inside the parsers; the public `from_json` turns it into an `ArtifactError`."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(path, problem)
        self.path = path
        self.problem = problem


_MISSING: Any = object()
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _describe(value: Any) -> str:
    """A short rendering of a wrong value for an error message."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        text = repr(value)
        return text if len(text) <= 50 else text[:46] + "...'"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a Python {type(value).__name__}"


def _expected(path: str, what: str, value: Any) -> _Invalid:
    if value is _MISSING:
        return _Invalid(path, "required key is missing")
    return _Invalid(path, f"expected {what}, got {_describe(value)}")


def _quote(key: Any) -> str:
    """A mapping key as it appears in a path: `artifacts["support/chat"]`."""
    return json.dumps(key, ensure_ascii=False) if isinstance(key, str) else repr(key)


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if isinstance(value, dict) or isinstance(value, Mapping):
        return value
    raise _expected(path, "an object", value)


# The readers below look the key up with `data.get(key, _MISSING)` and let `_expected` tell a
# missing key from a wrong value: one call per field on the path that succeeds.


def _get(data: Mapping[str, Any], key: str, at: str) -> Any:
    value = data.get(key, _MISSING)
    if value is _MISSING:
        raise _Invalid(at + key, "required key is missing")
    return value


def _str(data: Mapping[str, Any], key: str, at: str) -> str:
    value = data.get(key, _MISSING)
    if isinstance(value, str):
        return value
    raise _expected(at + key, "a string", value)


def _optional_str(data: Mapping[str, Any], key: str, at: str) -> str | None:
    value = data.get(key, _MISSING)
    if value is None or isinstance(value, str):
        return value
    raise _expected(at + key, "a string or null", value)


def _count(data: Mapping[str, Any], key: str, at: str) -> int:
    value = data.get(key, _MISSING)
    if type(value) is int and value >= 0:  # `type() is`: fast, and refuses bools
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if value >= 0:
            return int(value)
        raise _expected(at + key, "a non-negative integer", value)
    raise _expected(at + key, "an integer", value)


def _optional_count(data: Mapping[str, Any], key: str, at: str) -> int | None:
    value = data.get(key, _MISSING)
    if value is None:
        return None
    if type(value) is int and value >= 0:
        return value
    raise _expected(at + key, "a non-negative integer or null", value)


def _optional_index(value: Any, path: str) -> int | None:
    if value is None or (type(value) is int and value >= 0):
        return value
    raise _expected(path, "a non-negative integer or null", value)


def _origins(data: Mapping[str, Any], key: str, at: str) -> tuple[tuple[str, int], ...]:
    items = _list(data, key, at)
    out = []
    for index, item in enumerate(items):
        if not (
            isinstance(item, (list, tuple))
            and len(item) == 2
            and isinstance(item[0], str)
            and type(item[1]) is int
            and item[1] >= 1
        ):
            raise _expected(f"{at}{key}[{index}]", "a [source, line] pair", item)
        out.append((item[0], item[1]))
    return tuple(out)


def _input_schema(data: Mapping[str, Any], key: str, at: str) -> dict[str, Any]:
    """The artifact's `input_schema`: a JSON object with `type: "object"`, `properties` (an
    object) and `required` (a list of strings)."""
    schema = _json_object(data, key, at)
    where = at + key + "."
    if schema.get("type", _MISSING) != "object":
        raise _expected(where + "type", "'object'", schema.get("type", _MISSING))
    _object(_get(schema, "properties", where), where + "properties")
    _strings(schema, "required", where)
    return schema


def _bool(data: Mapping[str, Any], key: str, at: str) -> bool:
    value = data.get(key, _MISSING)
    if value is True or value is False:
        return value
    raise _expected(at + key, "true or false", value)


def _sha256(data: Mapping[str, Any], key: str, at: str) -> str:
    value = data.get(key, _MISSING)
    if isinstance(value, str) and _SHA256.fullmatch(value):
        return value
    raise _expected(at + key, "a sha256 (64 lowercase hex digits)", value)


def _optional_sha256(data: Mapping[str, Any], key: str, at: str) -> str | None:
    value = data.get(key, _MISSING)
    if value is None or (isinstance(value, str) and _SHA256.fullmatch(value)):
        return value
    raise _expected(at + key, "a sha256 (64 lowercase hex digits) or null", value)


def _optional_choice(data: Mapping[str, Any], key: str, at: str, choices: tuple[str, ...]) -> str | None:
    value = data.get(key, _MISSING)
    if value is None or (isinstance(value, str) and value in choices):
        return value
    raise _expected(at + key, "null or one of " + ", ".join(map(repr, choices)), value)


def _choice(data: Mapping[str, Any], key: str, at: str, choices: tuple[str, ...]) -> str:
    value = data.get(key, _MISSING)
    if isinstance(value, str) and value in choices:
        return value
    raise _expected(at + key, "one of " + ", ".join(map(repr, choices)), value)


def _list(data: Mapping[str, Any], key: str, at: str, non_empty: str | None = None) -> list[Any] | tuple[Any, ...]:
    """`data[key]` as a list; `non_empty` names the items when the list must have at least one."""
    value = data.get(key, _MISSING)
    if isinstance(value, (list, tuple)):
        if non_empty and not value:
            raise _Invalid(at + key, f"expected at least one {non_empty}, got an empty list")
        return value
    raise _expected(at + key, "a list", value)


def _strings(data: Mapping[str, Any], key: str, at: str, non_empty: str | None = None) -> tuple[str, ...]:
    items = _list(data, key, at, non_empty)
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise _expected(f"{at}{key}[{index}]", "a string", item)
    return tuple(items)


def _names(data: Mapping[str, Any], key: str, at: str) -> tuple[str, ...]:
    """A list of distinct identifiers (input and helper names)."""
    items = _list(data, key, at)
    if not items:
        return ()
    for index, item in enumerate(items):
        if not (isinstance(item, str) and IDENTIFIER.fullmatch(item)):
            raise _expected(f"{at}{key}[{index}]", "an identifier", item)
    names = tuple(items)
    if len(set(names)) != len(names):
        seen: set[str] = set()
        for index, name in enumerate(names):
            if name in seen:
                raise _Invalid(f"{at}{key}[{index}]", f"duplicate name {name!r}")
            seen.add(name)
    return names


def _json_object(data: Mapping[str, Any], key: str, at: str) -> dict[str, Any]:
    """A fresh copy of `data[key]`, checked to be a JSON object all the way down."""
    value = _get(data, key, at)
    if not isinstance(value, Mapping):
        raise _expected(at + key, "an object", value)
    return cast(dict[str, Any], _json_copy(value, at + key))


def _json_copy(value: Any, path: str, check: bool = True) -> Any:
    """A copy of a JSON value: objects and lists copied, scalars shared. With `check`, raise `_Invalid`
    on anything JSON cannot hold. Iterative, so a deeply nested value cannot overflow the stack.
    Paths are kept as (parent, key) links and spelled out only for an error: most values are valid."""
    root: list[Any] = [None]
    # (the container the copy goes into, at which index or key, the value, its path link)
    stack: list[tuple[Any, Any, Any, Any]] = [(root, 0, value, path)]
    scalars = (str, int, bool, type(None))  # exact classes: the common case, without ABC checks
    while stack:
        parent, slot, item, where = stack.pop()
        if item.__class__ in scalars:
            parent[slot] = item
            continue
        if isinstance(item, dict) or isinstance(item, Mapping):
            copy: Any = {}
            for k, v in item.items():
                if check and k.__class__ is not str and not isinstance(k, str):
                    raise _Invalid(_spell(where), f"expected string keys, got {_describe(k)}")
                copy[k] = None
                stack.append((copy, k, v, (where, k)))
        elif isinstance(item, (list, tuple)):
            copy = [None] * len(item)
            for i, v in enumerate(item):
                stack.append((copy, i, v, (where, i)))
        else:
            if check and not _is_json_scalar(item):
                raise _expected(_spell(where), "a JSON value", item)
            copy = item
        parent[slot] = copy
    return root[0]


def _spell(where: Any) -> str:
    """A `_json_copy` path link → `at["key"][0]`."""
    keys = []
    while isinstance(where, tuple):
        where, key = where
        keys.append(f"[{key}]" if isinstance(key, int) else f"[{_quote(key)}]")
    return str(where) + "".join(reversed(keys))


def _is_json_scalar(value: Any) -> bool:
    if value is None or isinstance(value, (str, int)):  # bool is an int
        return True
    return isinstance(value, float) and value - value == 0.0  # not NaN or infinite


def _string_map(data: Mapping[str, Any], key: str, at: str) -> dict[str, str]:
    value = _get(data, key, at)
    if not isinstance(value, Mapping):
        raise _expected(at + key, "an object", value)
    for k, v in value.items():
        if not isinstance(k, str):
            raise _Invalid(at + key, f"expected string keys, got {_describe(k)}")
        if not isinstance(v, str):
            raise _expected(f"{at}{key}[{_quote(k)}]", "a string", v)
    return dict(value)


def _check_schema(data: Mapping[str, Any], kind: str, current: str, label: str) -> None:
    """Refuse a document of another kind or another major version, before reading anything else."""
    schema = data.get("schema", _MISSING)
    if schema == current:
        return
    if schema is _MISSING:
        raise ArtifactError(f"{label}: not a promptc {kind} (no `schema` key)", "schema")
    if isinstance(schema, str):
        match = re.fullmatch(rf"promptc\.{kind}/([0-9]{{1,9}})", schema)
        if match and int(match.group(1)) > int(current.rsplit("/", 1)[1]):
            raise ArtifactError(
                f"{label} was written by a newer promptc (schema {schema}); this promptc reads {current}"
                " — rebuild or upgrade",
                "schema",
            )
        if match:
            raise ArtifactError(
                f"{label}: schema {schema} is not one this promptc reads ({current}) — rebuild with this promptc",
                "schema",
            )
    raise ArtifactError(f"{label}: not a promptc {kind} (schema {_describe(schema)})", "schema")


def _error(label: str, problem: _Invalid) -> ArtifactError:
    where = f"{problem.path}: " if problem.path else ""
    return ArtifactError(f"{label}: {where}{problem.problem}", problem.path)


def _document(data: Any, label: str) -> Mapping[str, Any]:
    if isinstance(data, dict) or isinstance(data, Mapping):
        return data
    raise ArtifactError(f"{label}: expected a JSON object, got {_describe(data)}")


# ---------------------------------------------------------------------------------------------
# The artifact


@dataclass(frozen=True, slots=True)
class Section:
    """One section of a message (`/// section:` in the source, or the implicit `body`), as template text."""

    name: str
    boundary: Boundary
    target: Target
    inputs: tuple[str, ...]
    helpers: tuple[str, ...]
    chars: int
    tokens: int
    text: str
    #: for a section with template blocks: where each placeholder and block of `text` is written,
    #: in order, as (source path under the source folder, line) — a partial's path for text that
    #: came from one. The runtime reports a failing block there. Empty otherwise.
    origins: tuple[tuple[str, int], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "boundary": self.boundary,
            "target": self.target,
            "inputs": list(self.inputs),
            "helpers": list(self.helpers),
            "chars": self.chars,
            "tokens": self.tokens,
            "text": self.text,
            "origins": [[source, line] for source, line in self.origins],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        try:
            return cls._parse(_document(data, "section"), "")
        except _Invalid as problem:
            raise _error("section", problem) from None

    @classmethod
    def _parse(cls, data: Mapping[str, Any], at: str) -> Self:
        return cls(
            _str(data, "name", at),
            cast(Boundary, _choice(data, "boundary", at, BOUNDARIES)),
            cast(Target, _choice(data, "target", at, TARGETS)),
            _names(data, "inputs", at),
            _names(data, "helpers", at),
            _count(data, "chars", at),
            _count(data, "tokens", at),
            _str(data, "text", at),
            _origins(data, "origins", at),
        )


@dataclass(frozen=True, slots=True)
class Block:
    """A run of adjacent sections of one message with the same boundary, joined by a blank line."""

    boundary: Boundary
    text: str
    sha256: str
    chars: int
    tokens: int
    sections: tuple[Section, ...]

    @property
    def stable(self) -> bool:
        return self.boundary == "stable"

    def to_json(self) -> dict[str, Any]:
        return {
            "boundary": self.boundary,
            "text": self.text,
            "sha256": self.sha256,
            "chars": self.chars,
            "tokens": self.tokens,
            "sections": [section.to_json() for section in self.sections],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        try:
            return cls._parse(_document(data, "block"), "")
        except _Invalid as problem:
            raise _error("block", problem) from None

    @classmethod
    def _parse(cls, data: Mapping[str, Any], at: str) -> Self:
        parse = Section._parse
        return cls(
            cast(Boundary, _choice(data, "boundary", at, BOUNDARIES)),
            _str(data, "text", at),
            _sha256(data, "sha256", at),
            _count(data, "chars", at),
            _count(data, "tokens", at),
            tuple(
                parse(_object(item, f"{at}sections[{i}]"), f"{at}sections[{i}].")
                for i, item in enumerate(_list(data, "sections", at, "section"))
            ),
        )


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message: its blocks, joined by a blank line, are its `content`."""

    role: Role
    content: str
    chars: int
    tokens: int
    blocks: tuple[Block, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "content": self.content,
            "chars": self.chars,
            "tokens": self.tokens,
            "blocks": [block.to_json() for block in self.blocks],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        try:
            return cls._parse(_document(data, "message"), "")
        except _Invalid as problem:
            raise _error("message", problem) from None

    @classmethod
    def _parse(cls, data: Mapping[str, Any], at: str) -> Self:
        parse = Block._parse
        return cls(
            cast(Role, _choice(data, "role", at, ROLES)),
            _str(data, "content", at),
            _count(data, "chars", at),
            _count(data, "tokens", at),
            tuple(
                parse(_object(item, f"{at}blocks[{i}]"), f"{at}blocks[{i}].")
                for i, item in enumerate(_list(data, "blocks", at, "block"))
            ),
        )


@dataclass(frozen=True, slots=True)
class Breakpoint:
    """Where a run of stable blocks ends: a place a provider can cache the request up to.

    `chars` and `tokens` count the request from its start through this block (the tools and the
    output schema, which lead the request, included). `message` and `block` are both None for the
    breakpoint right after the tools and schema, when they are the whole stable run. `stable_prefix`
    marks the end of the cache-stable prefix; `anthropic` marks the (at most four) breakpoints the
    Anthropic shape sends as `cache_control`.
    """

    message: int | None
    block: int | None
    chars: int
    tokens: int
    stable_prefix: bool
    anthropic: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "message": self.message,
            "block": self.block,
            "chars": self.chars,
            "tokens": self.tokens,
            "stable_prefix": self.stable_prefix,
            "anthropic": self.anthropic,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        try:
            return cls._parse(_document(data, "breakpoint"), "")
        except _Invalid as problem:
            raise _error("breakpoint", problem) from None

    @classmethod
    def _parse(cls, data: Mapping[str, Any], at: str) -> Self:
        return cls(
            _optional_index(_get(data, "message", at), at + "message"),
            _optional_index(_get(data, "block", at), at + "block"),
            _count(data, "chars", at),
            _count(data, "tokens", at),
            _bool(data, "stable_prefix", at),
            _bool(data, "anthropic", at),
        )


@dataclass(frozen=True, slots=True)
class PrefixEnd:
    """Where the cache-stable prefix ends, and why.

    `message`/`block`: the last block (message index, block index) of the prefix; both None when
    the prefix holds no message block (it is the tools and output schema alone, or it is empty:
    `prefix_sha256` null). `source`, `line`, `column` (1-based; columns count code points) and
    `reason`: where the first byte after the prefix comes from and what it is — the first dynamic
    element (`input ${product}`, `a {% for %} block`, `a {{ }} block`, `a {# #} block`), a declared
    dynamic section (`section "request" is dynamic`, at its directive), or `end of request` (just
    after the request's last text). `source` is the path under the source folder, a partial's
    when the element comes from one. The four are written by every build since they were added;
    an artifact of the same schema written before has none of them (all None)."""

    message: int | None
    block: int | None
    source: str | None = None
    line: int | None = None
    column: int | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"message": self.message, "block": self.block}
        if self.source is not None:
            data.update(source=self.source, line=self.line, column=self.column, reason=self.reason)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        try:
            return cls._parse(_document(data, "prefix end"), "")
        except _Invalid as problem:
            raise _error("prefix end", problem) from None

    @classmethod
    def _parse(cls, data: Mapping[str, Any], at: str) -> Self:
        message = _optional_index(_get(data, "message", at), at + "message")
        block = _optional_index(_get(data, "block", at), at + "block")
        if not any(key in data for key in _PREFIX_END_WHERE):
            return cls(message, block)
        return cls(
            message,
            block,
            _str(data, "source", at),
            _position(data, "line", at),
            _position(data, "column", at),
            _str(data, "reason", at),
        )


#: where and why the prefix ends: all four or none (an artifact written before they existed)
_PREFIX_END_WHERE = ("source", "line", "column", "reason")


def _position(data: Mapping[str, Any], key: str, at: str) -> int:
    value = data.get(key, _MISSING)
    if type(value) is int and value >= 1:
        return value
    raise _expected(at + key, "a positive integer", value)


def _optional(data: Mapping[str, Any], key: str, parse: Any, at: str = "") -> Any:
    """`data[key]` parsed with `parse`, or None when it is null (the key is required)."""
    value = _get(data, key, at)
    return None if value is None else parse(_object(value, at + key), f"{at}{key}.")


def _prefix_end(value: Any, path: str) -> PrefixEnd | None:
    return None if value is None else PrefixEnd._parse(_object(value, path), path + ".")


@dataclass(frozen=True, slots=True)
class HeadPart:
    """A part of the request before the messages (`tools`, `output_schema`), with its size (its
    canonical JSON) and whether the provider caches it as part of the prefix (`cached`: false for
    an Anthropic or Gemini output schema, which no breakpoint covers)."""

    part: str
    chars: int
    tokens: int
    cached: bool

    def to_json(self) -> dict[str, Any]:
        return {"part": self.part, "chars": self.chars, "tokens": self.tokens, "cached": self.cached}

    @classmethod
    def _parse(cls, data: Mapping[str, Any], at: str) -> Self:
        return cls(
            _choice(data, "part", at, ("tools", "output_schema")),
            _count(data, "chars", at),
            _count(data, "tokens", at),
            _bool(data, "cached", at),
        )


@dataclass(frozen=True, slots=True)
class CacheKey:
    """What `prefix_sha256` covers besides the prefix bytes: the encoding, the provider, the model
    as the provider resolves it (an alias counts as its dated snapshot), and the request parameters
    the provider's cache keys on that the prefix reaches (`promptc.runtime.requestmodel`)."""

    encoding: str
    provider: str | None
    model: str | None
    params: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"encoding": self.encoding, "provider": self.provider, "model": self.model, "params": list(self.params)}

    @classmethod
    def _parse(cls, data: Mapping[str, Any], at: str) -> Self:
        return cls(
            _str(data, "encoding", at),
            _optional_str(data, "provider", at),
            _optional_str(data, "model", at),
            _strings(data, "params", at),
        )


@dataclass(frozen=True, slots=True)
class Cache:
    """The cache analysis: the cache-stable prefix (None/0 when the prompt has none) and breakpoints.

    The prefix covers the request in the provider's cache order (`promptc.runtime.requestmodel`): the head
    (`head`: the tools, and the output schema where the provider caches it; `head_chars`/
    `head_tokens` count the cached ones), then the messages. `cacheable_tokens` is what the
    provider profile caches of it (None without a profile); `ttl` the Anthropic breakpoint
    lifetime (None: the provider's default); `key` what the hash covers besides the bytes.
    `breakpoints` are the anthropic shape's `cache_control` places (`anthropic: true` for the ones
    it sends). `key` and `head` are written by every build since they were added (None and empty
    in an artifact of the same schema written before)."""

    prefix_sha256: str | None
    prefix_chars: int
    prefix_tokens: int
    cacheable_tokens: int | None
    head_chars: int
    head_tokens: int
    ttl: str | None
    prefix_end: PrefixEnd | None
    breakpoints: tuple[Breakpoint, ...]
    key: CacheKey | None = None
    head: tuple[HeadPart, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "prefix_sha256": self.prefix_sha256,
            "prefix_chars": self.prefix_chars,
            "prefix_tokens": self.prefix_tokens,
            "cacheable_tokens": self.cacheable_tokens,
            "head_chars": self.head_chars,
            "head_tokens": self.head_tokens,
            "ttl": self.ttl,
            "prefix_end": None if self.prefix_end is None else self.prefix_end.to_json(),
            "breakpoints": [breakpoint.to_json() for breakpoint in self.breakpoints],
        }
        if self.key is not None:
            data["key"] = self.key.to_json()
            data["head"] = [part.to_json() for part in self.head]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        try:
            return cls._parse(_document(data, "cache"), "")
        except _Invalid as problem:
            raise _error("cache", problem) from None

    @classmethod
    def _parse(cls, data: Mapping[str, Any], at: str) -> Self:
        parse = Breakpoint._parse
        key = data.get("key")
        return cls(
            _optional_sha256(data, "prefix_sha256", at),
            _count(data, "prefix_chars", at),
            _count(data, "prefix_tokens", at),
            _optional_count(data, "cacheable_tokens", at),
            _count(data, "head_chars", at),
            _count(data, "head_tokens", at),
            _optional_choice(data, "ttl", at, CACHE_TTLS),
            _prefix_end(_get(data, "prefix_end", at), at + "prefix_end"),
            tuple(
                parse(_object(item, f"{at}breakpoints[{i}]"), f"{at}breakpoints[{i}].")
                for i, item in enumerate(_list(data, "breakpoints", at))
            ),
            None if key is None else CacheKey._parse(_object(key, at + "key"), at + "key."),
            ()
            if "head" not in data
            else tuple(
                HeadPart._parse(_object(item, f"{at}head[{i}]"), f"{at}head[{i}].")
                for i, item in enumerate(_list(data, "head", at))
            ),
        )


@dataclass(frozen=True, slots=True)
class Totals:
    """Sums over the messages."""

    chars: int
    tokens: int

    def to_json(self) -> dict[str, Any]:
        return {"chars": self.chars, "tokens": self.tokens}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        try:
            return cls._parse(_document(data, "totals"), "")
        except _Invalid as problem:
            raise _error("totals", problem) from None

    @classmethod
    def _parse(cls, data: Mapping[str, Any], at: str) -> Self:
        return cls(_count(data, "chars", at), _count(data, "tokens", at))


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool definition (`/// tools:`), as the file gave it: `input_schema` is a JSON Schema."""

    name: str
    description: str
    input_schema: dict[str, Any] = field(hash=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": _json_copy(self.input_schema, "input_schema", check=False),
        }

    @classmethod
    def _parse(cls, data: Mapping[str, Any], at: str) -> Self:
        return cls(_str(data, "name", at), _str(data, "description", at), _json_object(data, "input_schema", at))


def _contract(value: Any) -> Any:
    """An artifact's `output_contract`: a JSON Schema (an object or a boolean), or None."""
    if value is None or isinstance(value, bool):
        return value
    if not isinstance(value, dict):
        raise _Invalid("output_contract", "a JSON Schema (an object or a boolean) or null")
    return value


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """The structured-output schema (`/// output:`): its name and the JSON Schema."""

    name: str
    schema: dict[str, Any] = field(hash=False)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "schema": _json_copy(self.schema, "schema", check=False)}

    @classmethod
    def _parse(cls, data: Mapping[str, Any], at: str) -> Self:
        return cls(_str(data, "name", at), _json_object(data, "schema", at))


@dataclass(frozen=True, slots=True)
class Provider:
    """The provider profile the build applied (`promptc/data/providers.json`): the request shape,
    and the numbers of the model family (`family`, a model-name prefix; None for the default)."""

    name: str
    shape: str
    family: str | None
    min_cacheable_tokens: int
    cache_step_tokens: int | None
    max_breakpoints: int | None
    lookback_blocks: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "shape": self.shape,
            "family": self.family,
            "min_cacheable_tokens": self.min_cacheable_tokens,
            "cache_step_tokens": self.cache_step_tokens,
            "max_breakpoints": self.max_breakpoints,
            "lookback_blocks": self.lookback_blocks,
        }

    @classmethod
    def _parse(cls, data: Mapping[str, Any], at: str) -> Self:
        return cls(
            _str(data, "name", at),
            _choice(data, "shape", at, SHAPES),
            _optional_str(data, "family", at),
            _count(data, "min_cacheable_tokens", at),
            _optional_count(data, "cache_step_tokens", at),
            _optional_count(data, "max_breakpoints", at),
            _optional_count(data, "lookback_blocks", at),
        )


@dataclass(frozen=True, slots=True)
class Tokenizer:
    """The tokenizer every count of the artifact was made with, and whether the counts are the
    provider's own (`exact`) or an estimate."""

    name: str
    exact: bool

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "exact": self.exact}

    @classmethod
    def _parse(cls, data: Mapping[str, Any], at: str) -> Self:
        return cls(_str(data, "name", at), _bool(data, "exact", at))


@dataclass(frozen=True, slots=True)
class Artifact:
    """One compiled prompt, `build/<name>.json`.

    `params` and `metadata` are excluded from hashing (dicts are not hashable); equal artifacts
    still hash equal.
    """

    schema: str
    name: str
    source: str
    source_sha256: str
    flow: str | None
    node: str | None
    model: str | None
    provider: Provider | None
    tokenizer: Tokenizer
    params: dict[str, Any] = field(hash=False)
    tags: tuple[str, ...]
    metadata: dict[str, str] = field(hash=False)
    inputs: tuple[str, ...]
    helpers: tuple[str, ...]
    #: the inputs as a JSON Schema object: declared types (`/// input: name: TYPE`), `{}` for an
    #: untyped input; `required` leaves out the inputs that may be None
    input_schema: dict[str, Any] = field(hash=False)
    renderer: Renderer
    includes: tuple[str, ...]
    resources: tuple[str, ...]
    tools: tuple[Tool, ...]
    output_schema: OutputSchema | None
    messages: tuple[Message, ...]
    cache: Cache
    totals: Totals
    #: the prompt's leading `///` comment (the bindings' docstring starts with it), or None
    doc: str | None = None
    #: the output schema as a contract both runtimes check (`inputtypes.normalize`: references
    #: resolved, one dialect): what `parse` validates a response against; None without one
    output_contract: Any = field(default=None, hash=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "name": self.name,
            "source": self.source,
            "source_sha256": self.source_sha256,
            "flow": self.flow,
            "node": self.node,
            "model": self.model,
            "provider": None if self.provider is None else self.provider.to_json(),
            "tokenizer": self.tokenizer.to_json(),
            "params": _json_copy(self.params, "params", check=False),
            "tags": list(self.tags),
            "metadata": dict(self.metadata),
            "inputs": list(self.inputs),
            "helpers": list(self.helpers),
            "input_schema": _json_copy(self.input_schema, "input_schema", check=False),
            "renderer": self.renderer,
            "includes": list(self.includes),
            "resources": list(self.resources),
            "tools": [tool.to_json() for tool in self.tools],
            "output_schema": None if self.output_schema is None else self.output_schema.to_json(),
            "messages": [message.to_json() for message in self.messages],
            "cache": self.cache.to_json(),
            "totals": self.totals.to_json(),
            "doc": self.doc,
            "output_contract": _json_copy(self.output_contract, "output_contract", check=False),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """Read an artifact document (the decoded JSON of `build/<name>.json`)."""
        data = _document(data, "artifact")
        name = data.get("name")
        label = f"artifact `{name}`" if isinstance(name, str) else "artifact"
        _check_schema(data, "artifact", ARTIFACT_SCHEMA, label)
        parse = Message._parse
        try:
            return cls(
                ARTIFACT_SCHEMA,
                _str(data, "name", ""),
                _str(data, "source", ""),
                _sha256(data, "source_sha256", ""),
                _optional_str(data, "flow", ""),
                _optional_str(data, "node", ""),
                _optional_str(data, "model", ""),
                _optional(data, "provider", Provider._parse),
                Tokenizer._parse(_object(_get(data, "tokenizer", ""), "tokenizer"), "tokenizer."),
                _json_object(data, "params", ""),
                _strings(data, "tags", ""),
                _string_map(data, "metadata", ""),
                _names(data, "inputs", ""),
                _names(data, "helpers", ""),
                _input_schema(data, "input_schema", ""),
                cast(Renderer, _choice(data, "renderer", "", RENDERERS)),
                _strings(data, "includes", ""),
                _strings(data, "resources", ""),
                tuple(
                    Tool._parse(_object(item, f"tools[{i}]"), f"tools[{i}].")
                    for i, item in enumerate(_list(data, "tools", ""))
                ),
                _optional(data, "output_schema", OutputSchema._parse),
                tuple(
                    parse(_object(item, f"messages[{i}]"), f"messages[{i}].")
                    for i, item in enumerate(_list(data, "messages", ""))
                ),
                Cache._parse(_object(_get(data, "cache", ""), "cache"), "cache."),
                Totals._parse(_object(_get(data, "totals", ""), "totals"), "totals."),
                _optional_str(data, "doc", "") if "doc" in data else None,
                _contract(data.get("output_contract")),
            )
        except _Invalid as problem:
            raise _error(label, problem) from None

    def summary(self) -> dict[str, Any]:
        """What the manifest records about this artifact (besides its path and file hash)."""
        return {
            "source": self.source,
            "source_sha256": self.source_sha256,
            "inputs": list(self.inputs),
            "includes": list(self.includes),
            "model": self.model,
            "provider": None if self.provider is None else self.provider.name,
            "tokenizer": self.tokenizer.name,
            "tokens_exact": self.tokenizer.exact,
            "prefix_sha256": self.cache.prefix_sha256,
            "prefix_tokens": self.cache.prefix_tokens,
            "cacheable_tokens": self.cache.cacheable_tokens,
            "input_schema": _json_copy(self.input_schema, "input_schema", check=False),
            "output_schema": None if self.output_schema is None else self.output_schema.to_json()["schema"],
        }

    def breakpoint_at(self, message_index: int, block_index: int) -> Breakpoint | None:
        """The breakpoint after block `block_index` of message `message_index`, if there is one."""
        for breakpoint in self.cache.breakpoints:
            if breakpoint.message == message_index and breakpoint.block == block_index:
                return breakpoint
        return None


# ---------------------------------------------------------------------------------------------
# The manifest


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """What the manifest records about one artifact; `path` is relative to the manifest's folder and
    `sha256` is the hash of the artifact file's bytes."""

    path: str
    sha256: str
    source: str
    source_sha256: str
    inputs: tuple[str, ...]
    includes: tuple[str, ...]
    model: str | None
    provider: str | None
    #: the tokenizer of this artifact's counts, and whether they are the provider's own
    tokenizer: str
    tokens_exact: bool
    prefix_sha256: str | None
    prefix_tokens: int
    cacheable_tokens: int | None
    #: the artifact's `input_schema` (declared types), for `promptc diff`'s contract changes
    input_schema: dict[str, Any] = field(hash=False)
    #: the `/// output:` JSON Schema as written (None without one), for `diff`'s output contract
    output_schema: dict[str, Any] | None = field(default=None, hash=False)

    @classmethod
    def of(cls, artifact: Artifact, path: str, sha256: str) -> Self:
        """The entry for `artifact`, written to `path` with file hash `sha256`."""
        return cls(
            path,
            sha256,
            artifact.source,
            artifact.source_sha256,
            artifact.inputs,
            artifact.includes,
            artifact.model,
            None if artifact.provider is None else artifact.provider.name,
            artifact.tokenizer.name,
            artifact.tokenizer.exact,
            artifact.cache.prefix_sha256,
            artifact.cache.prefix_tokens,
            artifact.cache.cacheable_tokens,
            artifact.input_schema,
            None if artifact.output_schema is None else artifact.output_schema.schema,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "sha256": self.sha256,
            "source": self.source,
            "source_sha256": self.source_sha256,
            "inputs": list(self.inputs),
            "includes": list(self.includes),
            "model": self.model,
            "provider": self.provider,
            "tokenizer": self.tokenizer,
            "tokens_exact": self.tokens_exact,
            "prefix_sha256": self.prefix_sha256,
            "prefix_tokens": self.prefix_tokens,
            "cacheable_tokens": self.cacheable_tokens,
            # shared, not copied: the manifest is serialised as it is built (2,000 entries a build)
            "input_schema": self.input_schema,
            "output_schema": self.output_schema,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, own: bool = False) -> Self:
        """`own=True`: `data` is promptc's own summary of an artifact it compiled (this build's, or
        the incremental cache's, which the cache's fingerprint ties to this very promptc): taken
        as it is, and checked field by field only if it is not shaped as promptc writes it."""
        if own:
            try:  # promptc wrote these fields itself a moment (or a build) ago: no checking
                return cls(
                    data["path"],
                    data["sha256"],
                    data["source"],
                    data["source_sha256"],
                    tuple(data["inputs"]),
                    tuple(data["includes"]),
                    data["model"],
                    data["provider"],
                    data["tokenizer"],
                    data["tokens_exact"],
                    data["prefix_sha256"],
                    data["prefix_tokens"],
                    data["cacheable_tokens"],
                    data["input_schema"],
                    data["output_schema"],
                )
            except (KeyError, TypeError):
                pass  # not what promptc writes after all: check it field by field
        try:
            return cls._parse(_document(data, "manifest entry"), "")
        except _Invalid as problem:
            raise _error("manifest entry", problem) from None

    @classmethod
    def _parse(cls, data: Mapping[str, Any], at: str) -> Self:
        return cls(
            _str(data, "path", at),
            _sha256(data, "sha256", at),
            _str(data, "source", at),
            _sha256(data, "source_sha256", at),
            _strings(data, "inputs", at),
            _strings(data, "includes", at),
            _optional_str(data, "model", at),
            _optional_str(data, "provider", at),
            _str(data, "tokenizer", at),
            _bool(data, "tokens_exact", at),
            _optional_sha256(data, "prefix_sha256", at),
            _count(data, "prefix_tokens", at),
            _optional_count(data, "cacheable_tokens", at),
            _input_schema(data, "input_schema", at),
            # written since output contracts: absent in an older manifest (nothing to compare)
            _json_object(data, "output_schema", at) if data.get("output_schema") is not None else None,
        )


@dataclass(frozen=True, slots=True)
class PrefixGroup:
    """The artifacts that share one cache-stable prefix, and its length in tokens."""

    tokens: int
    artifacts: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "artifacts": list(self.artifacts)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        try:
            return cls._parse(_document(data, "prefix group"), "")
        except _Invalid as problem:
            raise _error("prefix group", problem) from None

    @classmethod
    def _parse(cls, data: Mapping[str, Any], at: str) -> Self:
        return cls(_count(data, "tokens", at), _strings(data, "artifacts", at, "artifact"))


@dataclass(frozen=True, slots=True)
class Manifest:
    """`build/manifest.json`: every artifact of a build (by name) and the prefixes they share (by
    prefix sha256).

    `artifacts` and `prefixes` are excluded from hashing (mappings are not hashable).
    """

    schema: str
    compiler_name: str
    compiler_version: str
    #: the configured tokenizer, or None when each prompt's profile picks (entries name their own)
    tokenizer: str | None
    provider: str | None
    #: read-only (a build's manifest decodes each entry and group when first read)
    artifacts: Mapping[str, ManifestEntry] = field(hash=False)
    prefixes: Mapping[str, PrefixGroup] = field(hash=False)

    @classmethod
    def of(
        cls,
        entries: Mapping[str, ManifestEntry] | Iterable[tuple[str, ManifestEntry]],
        *,
        tokenizer: str | None,
        provider: str | None,
        compiler_version: str | None = None,
    ) -> Self:
        """The manifest of a build: entries sorted by name, grouped by prefix (groups sorted by
        sha256, names sorted within), as `promptc build` writes it."""
        if compiler_version is None:
            compiler_version = VERSION
        items = entries.items() if isinstance(entries, Mapping) else entries
        artifacts = dict(sorted(items, key=lambda item: item[0]))
        groups: dict[str, tuple[int, list[str]]] = {}
        for name, entry in artifacts.items():
            if entry.prefix_sha256:
                groups.setdefault(entry.prefix_sha256, (entry.prefix_tokens, []))[1].append(name)
        prefixes = {sha: PrefixGroup(tokens, tuple(names)) for sha, (tokens, names) in sorted(groups.items())}
        return cls(
            MANIFEST_SCHEMA, "promptc", compiler_version, tokenizer or None, provider or None, artifacts, prefixes
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "compiler": {"name": self.compiler_name, "version": self.compiler_version},
            "tokenizer": self.tokenizer,
            "provider": self.provider,
            "artifacts": {name: entry.to_json() for name, entry in self.artifacts.items()},
            "prefixes": {sha: group.to_json() for sha, group in self.prefixes.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """Read a manifest document (the decoded JSON of `build/manifest.json`)."""
        data = _document(data, "manifest")
        _check_schema(data, "manifest", MANIFEST_SCHEMA, "manifest")
        try:
            compiler = _object(_get(data, "compiler", ""), "compiler")
            compiler_name = _str(compiler, "name", "compiler.")
            if compiler_name != "promptc":
                raise _expected("compiler.name", "'promptc'", compiler_name)
            artifacts: dict[str, ManifestEntry] = {}
            parse_entry = ManifestEntry._parse
            for name, item in _object(_get(data, "artifacts", ""), "artifacts").items():
                at = f"artifacts[{_quote(name)}]"
                if not isinstance(name, str):
                    raise _Invalid(at, "expected a string key")
                artifacts[name] = parse_entry(_object(item, at), at + ".")
            prefixes: dict[str, PrefixGroup] = {}
            parse_group = PrefixGroup._parse
            for sha, item in _object(_get(data, "prefixes", ""), "prefixes").items():
                at = f"prefixes[{_quote(sha)}]"
                if not (isinstance(sha, str) and _SHA256.fullmatch(sha)):
                    raise _Invalid(at, "expected a sha256 key (64 lowercase hex digits)")
                prefixes[sha] = parse_group(_object(item, at), at + ".")
            return cls(
                MANIFEST_SCHEMA,
                compiler_name,
                _str(compiler, "version", "compiler."),
                _optional_str(data, "tokenizer", ""),
                _optional_str(data, "provider", ""),
                artifacts,
                prefixes,
            )
        except _Invalid as problem:
            raise _error("manifest", problem) from None
