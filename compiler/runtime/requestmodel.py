"""One request model: the whole request in the provider's cache order, and the one walk over it.

A provider's prompt cache hits when the leading part of a request is what an earlier request
sent, read in the provider's own order (Anthropic: tools, then system, then messages; OpenAI: tools,
the output schema, then messages), and only when what the cache keys on besides the bytes — the
provider, the model, some request parameters — is the same too. `Request` is that request as a
sequence of `Part`s in cache order, each with its bytes (None: dynamic, known only at render), its
size, what it is, and where it is written:

    provider, model            identity: which cache at all (a change misses everything)
    param:tool_choice, …       a parameter the provider's cache keys on, at the level it invalidates
    tools, output_schema       the head (canonical JSON); the schema is content only where the
                               provider caches it (OpenAI), a key where it changes hidden text
                               (Anthropic), nothing where it is configuration (Gemini)
    blocks                     one per artifact block, labelled with the role the provider sees
                               (an opening system message is Anthropic's and Gemini's system part)

What each provider keys on is data, `promptc/data/providers.json` (`cache_key`, `cache_order`,
`model_aliases`, each with its source), read through `promptc.facts.profiles`; a prompt without a
profile is read in the generic order (tools, output schema, messages) with no identity.

Everything about the cache is read from this model, never computed again elsewhere:

- `Request.prefix()` is *the* walk: the cache-stable prefix (the parts up to the first dynamic
  content part, empty parts skipped as the shapes skip them, key parts only when content after
  them is in the prefix), its hash (`ENCODING`), size, last part and where it stops;
- `Request.markers()` places the block markers (the anthropic shapes' `cache_control`, the bedrock
  shape's `cachePoint`: on the last tool, or on a non-empty stable block, a place the body really
  has), with the tokens each covers;
- `cache(...)` turns both into the artifact's `cache` (emit writes it; the runtimes, diff, cost,
  the report and the language server read it);
- `of_artifact` rebuilds the model from an artifact (with source spans when the compiled document
  is given), for `prefix.py` (W710's hypothetical prefix), `divergence.py` (the first differing
  character of two prefixes), `cost.py` and the report.

Standard library only: the runtime that applications ship imports it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..facts.language import JOINER, SYSTEM_ROLES, unescape
from ..facts.profiles import Profile, resolve, resolve_model
from ..facts.records import dataclass
from .model import Breakpoint, CacheKey, HeadPart, PrefixEnd
from .model import Cache as CacheModel

if TYPE_CHECKING:
    from .model import Artifact, Cache, Message, OutputSchema, Tool

__all__ = [
    "ENCODING",
    "Marker",
    "Part",
    "Piece",
    "Prefix",
    "Request",
    "anthropic_view",
    "cache",
    "canonical_json",
    "digest",
    "of_artifact",
    "of_parts",
    "opening",
]

#: The prefix encoding; it starts every hash, so hashes of two encodings never meet. /3 adds the
#: identity (provider, model), the cache-keyed parameters and one field per block.
ENCODING = "promptc.prefix/3"
#: Anthropic's limit when no profile gives one (the anthropic shape can be rendered for any artifact)
ANTHROPIC_MAX_BREAKPOINTS = 4
#: The order of a request without a profile
GENERIC_ORDER = ("tools", "output_schema", "messages")


def canonical_json(value: Any) -> str:
    """The text promptc hashes and counts for a JSON value: compact, keys in the order written,
    non-ASCII kept (what the anthropic and openai SDKs send: `json.dumps(value, ensure_ascii=False,
    separators=(",", ":"))`)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Piece:
    """Where the characters `offset .. offset+length` of a part's text come from: a source span
    (`diagnostics.Span`), or None for text the compiler wrote (a joiner)."""

    offset: int
    length: int
    span: Any


@dataclass(frozen=True, slots=True)
class Part:
    """One part of the request, in cache order.

    `kind`: provider, model, param, tools, output_schema or block. `label`: the field name the hash
    encodes (`provider`, `model`, `param:tool_choice`, `tools`, `output_schema`, or for a block the
    role the provider receives it under). `text`: its bytes, None when dynamic. `level`: identity,
    tools, output_schema, system or messages. `content`: the provider caches it (its tokens count);
    False for a part that only keys the cache. `chars`/`tokens`: its size (a dynamic block's at its
    template size). `message`/`block`: the artifact block. `span`: where the part is written when it
    is one place (a `/// param:` line); `pieces`: where each run of a block's text comes from."""

    kind: str
    label: str
    text: str | None
    level: str
    content: bool
    chars: int = 0
    tokens: int = 0
    message: int | None = None
    block: int | None = None
    span: Any = None
    pieces: tuple[Piece, ...] = ()

    @property
    def stable(self) -> bool:
        return self.text is not None


@dataclass(frozen=True, slots=True)
class Prefix:
    """The cache-stable prefix: `parts` (what the hash covers, keys included), its hash (None when
    no content is in it), the chars and tokens of its content, its last content part, and the
    first dynamic content part (None: the whole request is stable)."""

    parts: tuple[Part, ...]
    sha256: str | None
    chars: int
    tokens: int
    last: Part | None
    stop: Part | None

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(p.label.removeprefix("param:") for p in self.parts if p.kind == "param")


@dataclass(frozen=True, slots=True)
class Marker:
    """A place the anthropic shape can put `cache_control`: the end of a run of stable content, on
    its last non-empty part (`message`/`block` None: the last tool). `chars`/`tokens` count the
    request up to it; `stable_prefix`: it ends the cache-stable prefix; `sent`: it is one of the
    (at most four) markers the shape sends."""

    message: int | None
    block: int | None
    chars: int
    tokens: int
    stable_prefix: bool
    sent: bool


def digest(parts: Sequence[Part]) -> str:
    """SHA-256 of the canonical, injective encoding of a prefix: the tag `ENCODING` and a newline, then
    for each part its label and its text (UTF-8), each as an 8-byte big-endian length followed by
    the bytes. No text can forge a field boundary."""
    h = hashlib.sha256(ENCODING.encode("ascii") + b"\n")
    for part in parts:
        for field in (part.label.encode("utf-8"), (part.text or "").encode("utf-8")):
            h.update(len(field).to_bytes(8, "big"))
            h.update(field)
    return h.hexdigest()


def opening(roles: Sequence[str]) -> int:
    """How many messages open the conversation as system or developer messages: Anthropic's and
    Gemini's system part (a later one stays a turn of its own, W405)."""
    count = 0
    for role in roles:
        if role not in SYSTEM_ROLES:
            break
        count += 1
    return count


@dataclass(frozen=True, slots=True)
class Request:
    """The request of one prompt as one provider's cache reads it (`provider` None: no profile)."""

    provider: str | None
    model: str | None
    parts: tuple[Part, ...]

    def content(self) -> Iterator[Part]:
        return (p for p in self.parts if p.content)

    def stop(self) -> Part | None:
        """Where the walk stops: `prefix().stop`, without hashing the prefix (the first dynamic
        content part; None: the whole request is stable)."""
        for part in self.parts:
            if part.content and part.text is None:
                return part
        return None

    def prefix(self) -> Prefix:
        """The walk in cache order (see the module docstring)."""
        included: list[Part] = []
        pending: list[Part] = []
        chars = tokens = 0
        last: Part | None = None
        stop: Part | None = None
        for part in self.parts:
            if not part.content:
                pending.append(part)
                continue
            if part.text is None:
                stop = part
                break
            if not part.text:
                continue  # an empty block is not sent
            included += pending
            pending.clear()
            included.append(part)
            chars += part.chars
            tokens += part.tokens
            last = part
        if last is None:
            return Prefix((), None, 0, 0, None, stop)
        return Prefix(tuple(included), digest(included), chars, tokens, last, stop)

    def markers(self, limit: int | None = ANTHROPIC_MAX_BREAKPOINTS) -> tuple[Marker, ...]:
        """The end of every run of stable content, with `sent` on the ones the anthropic shape marks:
        the end of the cache-stable prefix first, then the runs that cover the most tokens."""
        ends: list[tuple[Part, int, int, bool]] = []
        chars = tokens = 0
        run: tuple[Part, int, int, bool] | None = None
        dynamic_seen = False
        previous_message: int | None = None
        for part in self.content():
            if part.kind == "block" and part.message == previous_message:
                chars += len(JOINER)
            previous_message = part.message if part.kind == "block" else None
            chars += part.chars
            tokens += part.tokens
            if part.text is None:
                if run is not None:
                    ends.append(run)
                    run = None
                dynamic_seen = True
            elif part.text:
                run = (part, chars, tokens, not dynamic_seen)
        if run is not None:
            ends.append(run)
        limit = ANTHROPIC_MAX_BREAKPOINTS if limit is None else limit
        first = [i for i, end in enumerate(ends) if end[3]]
        rest = sorted((i for i, end in enumerate(ends) if not end[3]), key=lambda i: -ends[i][2])
        chosen = set((first + rest)[:limit])
        return tuple(
            Marker(part.message, part.block, at_chars, at_tokens, stable_prefix, i in chosen)
            for i, (part, at_chars, at_tokens, stable_prefix) in enumerate(ends)
        )


# ---------------------------------------------------------------------------------------------
# Building the model


def _labels(profile: Profile | None) -> tuple[bool, dict[str, str]]:
    """Whether the provider has a system part of its own, and the label of a turn by its role."""
    shape = profile.shape if profile is not None else None
    if profile is not None and profile.marks_blocks:  # Claude, on its API, Bedrock or Vertex AI
        return True, {"assistant": "assistant"}
    if shape == "gemini":
        return True, {"assistant": "model"}
    return False, {}


def of_parts(
    profile: Profile | None,
    model: str | None,
    params: Mapping[str, Any],
    tools: Sequence[Tool],
    output_schema: OutputSchema | None,
    messages: Sequence[Message],
    *,
    count: Callable[[str], int] | None = None,
    head: Mapping[str, tuple[int, int]] | None = None,
    param_spans: Mapping[str, Any] | None = None,
    pieces: Callable[[int, int], tuple[Piece, ...]] | None = None,
    blocks: Mapping[tuple[int, int], Sequence[Part]] | None = None,
) -> Request:
    """The request of a prompt for `profile` (None: the generic order, no identity).

    `count` counts tokens (the build's meter: stable texts are counted as sent); without it the
    artifact's own counts are used (`head`: part → (chars, tokens), from `cache.head`).
    `param_spans` and `pieces` give source positions. `blocks` replaces the part of a block
    (message, block) by others (W710's hypothetical prefix); they take the block's label and level."""
    order = profile.cache_order if profile is not None else GENERIC_ORDER
    system_part, labels = _labels(profile)
    spans = param_spans or {}
    parts: list[Part] = []
    if profile is not None:
        parts.append(Part("provider", "provider", profile.name, "identity", False))
        resolved = resolve_model(profile.name, model)
        if resolved:
            parts.append(Part("model", "model", resolved, "identity", False, span=spans.get("model")))

    def sized(text: str, kind: str) -> tuple[int, int]:
        if count is not None:
            return len(text), count(text)
        if head and kind in head:
            return head[kind]
        return len(text), 0

    schema_cached = profile.schema_cached if profile is not None else True
    schema_level = profile.schema_level if profile is not None else "output_schema"
    cache_params = profile.cache_params if profile is not None else ()
    first_turn = opening([m.role for m in messages]) if system_part else 0
    for level in order:
        if output_schema is not None and not schema_cached and schema_level == level:
            text = canonical_json(output_schema.to_json())
            chars, tokens = sized(text, "output_schema")
            parts.append(Part("output_schema", "output_schema", text, level, False, chars, tokens))
        for name, param_level in cache_params:
            if param_level == level and name in params:
                parts.append(
                    Part("param", f"param:{name}", canonical_json(params[name]), level, False, span=spans.get(name))
                )
        if level == "tools" and tools:
            text = canonical_json([tool.to_json() for tool in tools])
            parts.append(Part("tools", "tools", text, level, True, *sized(text, "tools")))
        elif level == "output_schema" and output_schema is not None and schema_cached:
            text = canonical_json(output_schema.to_json())
            parts.append(Part("output_schema", "output_schema", text, level, True, *sized(text, "output_schema")))
        elif level in ("system", "messages"):
            for mi, message in enumerate(messages):
                in_system = mi < first_turn
                if (level == "system") != in_system:
                    continue
                if in_system:
                    label = "system"
                elif system_part:
                    label = labels.get(message.role, "user")
                else:
                    label = message.role
                for bi, block in enumerate(message.blocks):
                    replaced = blocks.get((mi, bi)) if blocks else None
                    if replaced is not None:
                        parts.extend(replace(part, label=label, level=level) for part in replaced)
                        continue
                    where = pieces(mi, bi) if pieces is not None else ()
                    if block.stable:
                        text = unescape(block.text)
                        tokens = count(text) if count is not None else block.tokens
                        parts.append(Part("block", label, text, level, True, len(text), tokens, mi, bi, pieces=where))
                    else:
                        parts.append(
                            Part("block", label, None, level, True, block.chars, block.tokens, mi, bi, pieces=where)
                        )
    return Request(
        profile.name if profile is not None else None,
        resolve_model(profile.name, model) if profile else None,
        tuple(parts),
    )


def _profile_of(artifact: Artifact) -> Profile | None:
    if artifact.provider is None:
        return None
    profile = resolve(artifact.provider.name, artifact.model)
    return profile


def of_artifact(
    artifact: Artifact,
    *,
    profile: Profile | None | bool = True,
    count: Callable[[str], int] | None = None,
    param_spans: Mapping[str, Any] | None = None,
    pieces: Callable[[int, int], tuple[Piece, ...]] | None = None,
    blocks: Mapping[tuple[int, int], Sequence[Part]] | None = None,
) -> Request:
    """The request of a built artifact, as its own provider's cache reads it (`profile=True`), or as
    `profile` reads it (None: the generic order)."""
    chosen = _profile_of(artifact) if profile is True else profile
    head = {part.part: (part.chars, part.tokens) for part in artifact.cache.head} or None
    return of_parts(
        chosen,  # type: ignore[arg-type]
        artifact.model,
        artifact.params,
        artifact.tools,
        artifact.output_schema,
        artifact.messages,
        count=count,
        head=head,
        param_spans=param_spans,
        pieces=pieces,
        blocks=blocks,
    )


def anthropic_view(profile: Profile | None) -> Profile:
    """The profile the block markers (the anthropic and anthropic-vertex shapes' `cache_control`,
    the bedrock shape's `cachePoint`) are placed with: the prompt's own when its provider caches
    only where the request marks it (`Profile.marks_blocks`), else Anthropic's defaults (any
    artifact can be rendered in those shapes)."""
    if profile is not None and profile.marks_blocks:
        return profile
    return _anthropic_defaults()


@lru_cache(maxsize=1)
def _anthropic_defaults() -> Profile:
    fallback = resolve("anthropic", None)
    assert fallback is not None
    return fallback


# ---------------------------------------------------------------------------------------------
# The artifact's `cache`


def cache(
    profile: Profile | None,
    model: str | None,
    params: Mapping[str, Any],
    tools: Sequence[Tool],
    output_schema: OutputSchema | None,
    messages: Sequence[Message],
    count: Callable[[str], int],
    ttl: str | None,
    where: Callable[[Part | None], tuple[str, int, int, str]],
) -> Cache:
    """The artifact's `cache`, from the model: the prefix of the prompt's own provider, the
    anthropic shape's markers, the head and the key. `where(stop)` locates the first dynamic part
    (or the end of the request, for None) in the source: (source, line, column, reason)."""
    counted: dict[str, int] = {}
    measure = count

    def tokens(text: str) -> int:  # both views count the same texts: once each
        found = counted.get(text)
        if found is None:
            found = counted[text] = measure(text)
        return found

    count = tokens
    own = of_parts(profile, model, params, tools, output_schema, messages, count=count)
    prefix = own.prefix()
    view = anthropic_view(profile)
    marks = (
        own
        if profile is not None and profile.marks_blocks
        else of_parts(view, model, params, tools, output_schema, messages, count=count)
    )
    # `cache_ttl: none`: no shape sends a marker at all (caching costs more than it saves at the
    # prompt's traffic: `promptc cost --advise`)
    markers = marks.markers(0 if ttl == "none" else view.max_breakpoints)
    breakpoints = tuple(Breakpoint(m.message, m.block, m.chars, m.tokens, m.stable_prefix, m.sent) for m in markers)
    head: list[HeadPart] = []
    for part in own.parts:
        if part.kind in ("tools", "output_schema"):
            head.append(HeadPart(part.kind, part.chars, part.tokens, part.content))
    if output_schema is not None and not any(p.part == "output_schema" for p in head):
        text = canonical_json(output_schema.to_json())  # keys nothing and is not cached (Gemini)
        head.append(HeadPart("output_schema", len(text), count(text), False))
    head.sort(key=lambda p: p.part != "tools")
    head_chars = sum(p.chars for p in head if p.cached)
    head_tokens = sum(p.tokens for p in head if p.cached)
    if profile is None:
        cacheable = None
    elif profile.marks_blocks:
        # only what a sent marker covers: the one at the end of the stable prefix
        covered = next((m.tokens for m in markers if m.stable_prefix and m.sent), 0)
        cacheable = profile.cacheable(covered)
    elif profile.explicit_breakpoints:
        # OpenAI GPT-5.6 and later match a cached prefix only at a breakpoint: what the one the
        # openai shapes put on the last block of the stable prefix covers (its tools and output
        # schema included); none when the prefix ends in the head, where no text part can carry it
        marked = prefix.last is not None and prefix.last.kind == "block" and ttl != "none"
        cacheable = profile.cacheable(prefix.tokens) if marked else 0
    else:  # automatic caching of the whole prefix (OpenAI before GPT-5.6, Gemini)
        cacheable = profile.cacheable(prefix.tokens)
    last = prefix.last
    end_message = last.message if last is not None and last.kind == "block" else None
    end_block = last.block if last is not None and last.kind == "block" else None
    source, line, column, reason = where(prefix.stop)
    return CacheModel(
        prefix.sha256,
        prefix.chars,
        prefix.tokens,
        cacheable,
        head_chars,
        head_tokens,
        ttl,
        PrefixEnd(end_message, end_block, source, line, column, reason),
        breakpoints,
        CacheKey(ENCODING, own.provider, own.model, prefix.params if prefix.sha256 else ()),
        tuple(head),
    )
