"""The request around the messages: which model, which provider profile, which tokenizer, and the
checks that only a profile makes possible (docs/caching.md).

`settle(doc, config)` decides, for one compiled document, the model (`/// param: model=`, else
config `model`), the profile (config `provider`, else the model's provider), the tokenizer (config
`tokenizer`, else the profile's, else cl100k_base) and whether its counts are exact, and the
Anthropic breakpoint TTL (`/// cache_ttl:`, else config). `check(artifact, doc, request)` then
reports what the profile says about the artifact: a prefix below the model's minimum (W705, which
names a part of the head the provider does not cache), parameters the provider's request does not
take (W707), breakpoints out of the lookback's reach (W708), a parameter the provider requires
(E709), a cache TTL the model does not offer (E710), a request the provider's API refuses (E711:
no user turn, or Bedrock's first turn the assistant's), and more stable ends than the provider
takes markers (W712, naming the ones left unmarked).
"""

from __future__ import annotations

from ..facts import codes
from ..facts.config import Config
from ..facts.diagnostics import Diagnostic, Span, make
from ..facts.profiles import Profile, shape_params, shape_requires
from ..runtime.model import Artifact
from ..runtime.requestmodel import opening
from ..syntax.nodes import Document, Message, Section
from .emit import Request

#: The tokenizer when neither config nor a profile picks one.
DEFAULT_TOKENIZER = "cl100k_base"
#: Parameters a shape needs whatever the provider (the model travels outside `params`).
_ALWAYS = ("model",)


def settle(doc: Document, config: Config) -> tuple[Request, list[Diagnostic]]:
    diagnostics: list[Diagnostic] = []
    header = doc.header
    params = dict(header.params)
    spans = dict(header.param_spans)
    model: str | None = None
    if "model" in params:
        value = params["model"]
        if isinstance(value, str) and value.strip():
            model = value.strip()
        else:
            diagnostics.append(
                make(
                    codes.INVALID_MODEL,
                    f"`model` must be a model name, got {value!r}",
                    spans.get("model"),
                    "write `/// param: model=claude-sonnet-4-5` (or set `model` in [tool.promptc])",
                    source=doc.source,
                )
            )
    model = model or config.model or None
    profile = config.profile(model)
    tokenizer = config.tokenizer or (profile.tokenizer if profile is not None else DEFAULT_TOKENIZER)
    exact = profile is not None and profile.tokens_exact and tokenizer == profile.tokenizer
    ttl = header.cache_ttl or config.cache_ttl or None
    return Request(model, profile, tokenizer, exact, ttl), diagnostics


def check(artifact: Artifact, doc: Document, request: Request) -> list[Diagnostic]:
    profile = request.profile
    if profile is None:
        return []
    diagnostics: list[Diagnostic] = []
    src = doc.source
    at_start = src.span(0)
    spans = dict(doc.header.param_spans)
    label = f"{artifact.model} ({profile.name})" if artifact.model else profile.name

    tokens = artifact.cache.prefix_tokens
    uncached = [part for part in artifact.cache.head if not part.cached]
    if tokens < profile.min_cacheable_tokens:
        hint = "put more stable text before the first dynamic section, or accept that this prompt is not cached"
        if uncached:
            hint = (
                f"the output schema ({uncached[0].tokens} tokens) is not part of {profile.name}'s cached prefix "
                "(no cache breakpoint covers it); " + hint
            )
        diagnostics.append(
            make(
                codes.PREFIX_BELOW_MINIMUM,
                f"cache-stable prefix is {tokens} tokens ({artifact.cache.prefix_chars} chars); "
                f"{label} caches prefixes of at least {profile.min_cacheable_tokens} tokens",
                at_start,
                hint,
                source=src,
            )
        )
    diagnostics += _sendable(artifact, doc, profile.shape, label)

    accepted = shape_params(profile.shape)
    for name in artifact.params:
        if name not in accepted and name not in _ALWAYS:
            diagnostics.append(
                make(
                    codes.PARAM_NOT_SENT,
                    f"`{name}` is not a parameter of the {profile.shape} request; it is not sent",
                    spans.get(name, at_start),
                    f"{profile.shape} takes: {', '.join(sorted(accepted))}",
                    source=src,
                )
            )

    if profile.shape in ("anthropic", "anthropic-vertex") and "max_tokens" not in artifact.params:
        diagnostics.append(
            make(
                codes.REQUIRED_PARAM_MISSING,
                f"{label} requests need `max_tokens`, and this prompt sets none",
                _params_span(doc) or at_start,
                "add `/// param: max_tokens=1024` (the longest answer you accept)",
                source=src,
            )
        )

    if profile.lookback_blocks:
        diagnostics += _lookback(artifact, doc, profile.lookback_blocks, label)
    diagnostics += _ttl(doc, request, label)
    diagnostics += _unmarked(artifact, doc, profile, label)
    return diagnostics


def _ttl(doc: Document, request: Request, label: str) -> list[Diagnostic]:
    """E710: the prompt's `cache_ttl` is not a lifetime its model offers (`cache_ttls`: Claude 5m
    and 1h, some Claude models on Bedrock 5m only, OpenAI GPT-5.6 and later 30m and 12h), so the
    request would carry a TTL the API refuses. A `[tool.promptc]` default is a project's: it is
    checked only for a model that offers TTLs (an automatic cache takes none, whatever the project
    says), and reported at the prompt's model."""
    profile, ttl = request.profile, request.ttl
    if profile is None or not ttl or ttl == "none" or ttl in profile.cache_ttls:
        return []
    offered = profile.cache_ttls
    header = doc.header
    choices = ", ".join(f"`/// cache_ttl: {choice}`" for choice in (*offered, "none"))
    if header.cache_ttl:
        span = header.cache_ttl_span
        if offered:
            message = f"{label} offers no `{ttl}` cache TTL: its breakpoints live {' or '.join(offered)}"
            hint = f"write {choices} (`none`: send no breakpoint)"
        else:
            message = f"{label} takes no cache TTL: its prompt cache is automatic, with no lifetime to choose"
            hint = "remove the `/// cache_ttl:` line"
    elif offered:
        span = dict(header.param_spans).get("model")
        message = f"{label} offers no `{ttl}` cache TTL ([tool.promptc] `cache_ttl`): its breakpoints live {' or '.join(offered)}"
        hint = f"give this prompt its own: {choices} (`none`: send no breakpoint)"
    else:
        return []
    return [make(codes.INVALID_MODEL, message, span or doc.source.span(0), hint, source=doc.source)]


def _unmarked(artifact: Artifact, doc: Document, profile: Profile, label: str) -> list[Diagnostic]:
    """W712: the prompt has more runs of stable text than the provider takes markers (Claude: four
    `cache_control` or `cachePoint`), so the ends the build could not mark write no cache entry: a
    request whose text changed before one of them re-sends it uncached. The end of the stable
    prefix is always marked; the others are the ones that cover the most tokens. Named by where
    each unmarked stable block starts."""
    if not profile.marks_blocks or artifact.cache.ttl == "none":
        return []
    left = [b for b in artifact.cache.breakpoints if not b.anthropic]
    if not left:
        return []
    places = []
    spans = []
    for b in left:
        span = _block_span(doc, b.message, b.block)
        spans.append(span)
        if b.message is None:
            places.append("after the tools")
        else:
            src = span.src if span.src is not None else doc.source
            where = f"line {span.line}" if src is doc.source else f"{src.path}:{span.line}"
            places.append(f"{where} (covering {b.tokens:,} tokens)")
    plural = "s" if len(left) != 1 else ""
    return [
        make(
            codes.STABLE_ENDS_UNMARKED,
            f"{len(left)} stable end{plural} left without a cache marker: {', '.join(places)}; "
            f"{label} takes {profile.max_breakpoints} per request, and the ones sent cover more tokens",
            spans[0],
            "merge stable sections so that fewer runs of stable text sit between dynamic ones, or move the dynamic "
            "text after them; a request whose text changed before an unmarked end re-sends what follows it uncached",
            source=doc.source,
        )
    ]


def _sendable(artifact: Artifact, doc: Document, shape: str, label: str) -> list[Diagnostic]:
    """E711: the request of the profile's shape would have no user turn (Anthropic, Gemini,
    Bedrock), no message at all, or (Bedrock's Converse) an assistant turn first, whatever the
    inputs (a message that may render non-empty counts)."""
    needs = shape_requires(shape)
    if needs is None:
        return []
    roles = [m.role for m in artifact.messages]
    first = opening(roles) if needs in ("user_turn", "user_first") else 0

    def may_have_text(index: int) -> bool:
        return any(not b.stable or b.text for b in artifact.messages[index].blocks)

    candidates = [i for i in range(first, len(roles)) if needs == "message" or roles[i] != "assistant"]
    if needs == "user_first":
        # the first turn that may have text must be a user's: refused whatever the inputs when it
        # is an assistant turn with stable text (one that may render empty can leave a user first)
        turn = next((i for i in range(first, len(roles)) if may_have_text(i)), None)
        if (
            turn is not None
            and roles[turn] == "assistant"
            and any(b.stable and b.text for b in artifact.messages[turn].blocks)
        ):
            span = _message_span(doc.messages[turn]) if turn < len(doc.messages) else None
            return [
                make(
                    codes.REQUEST_NOT_SENDABLE,
                    f"the {shape} request for {label} would start with the assistant's turn; its API refuses it",
                    span or doc.source.span(0),
                    "put the `----- user -----` message it answers before it",
                    source=doc.source,
                )
            ]
    if any(may_have_text(i) for i in candidates):
        return []
    if needs == "message":
        what = "no message"
    elif first == len(roles):
        what = "no user turn: every message is part of the system prompt"
    elif not candidates:
        what = "no user turn: the turns after the system prompt are the assistant's"
    else:
        what = "no user turn: its user messages are empty"
    span = _message_span(doc.messages[-1]) if doc.messages else None
    span = span or doc.source.span(0)
    return [
        make(
            codes.REQUEST_NOT_SENDABLE,
            f"the {shape} request for {label} would have {what}; its API refuses it",
            span,
            "add a `----- user -----` message with the request (a file without a separator line is one system message)",
            source=doc.source,
        )
    ]


def _message_span(message: Message) -> Span | None:
    """Where a message starts: its separator, else (the implicit system message) its first text."""
    if message.span is not None:
        return message.span
    for section in message.sections:
        for item in section.items:
            if item.span is not None and item.span.src is not None:
                return item.span
    return None


def _params_span(doc: Document) -> Span | None:
    spans = [span for _, span in doc.header.param_spans]
    return spans[0] if spans else None


def _block_span(doc: Document, message: int | None, block: int | None) -> Span:
    """Where block `block` of message `message` starts in the source: its first section's directive,
    else its message's separator, else the top of the file."""
    if message is None or block is None or message >= len(doc.messages):
        return doc.source.span(0)
    msg = doc.messages[message]
    groups: list[list[Section]] = []
    for section in msg.sections:
        if groups and groups[-1][0].boundary == section.boundary:
            groups[-1].append(section)
        else:
            groups.append([section])
    first = groups[block][0] if block < len(groups) else None
    return (first.span if first is not None and first.span is not None else None) or msg.span or doc.source.span(0)


def _lookback(artifact: Artifact, doc: Document, lookback: int, label: str) -> list[Diagnostic]:
    """W708: a marked breakpoint more than `lookback` content blocks after the previous marked one,
    with dynamic blocks between them. Each tool is one block; so is each artifact block. A request
    whose dynamic text differs misses the later entry, and the provider's lookback from it cannot
    reach the earlier one (entries are written only at breakpoints)."""
    position = len(artifact.tools)  # the output schema is no content block of the anthropic request
    # block → (its position in the request, dynamic blocks up to it)
    blocks_at: dict[tuple[int | None, int | None], tuple[int, int]] = {(None, None): (position, 0)}
    dynamic = 0
    for mi, message in enumerate(artifact.messages):
        for bi, block in enumerate(message.blocks):
            position += 1
            dynamic += 0 if block.stable else 1
            blocks_at[(mi, bi)] = (position, dynamic)
    diagnostics = []
    previous, previous_dynamic = 0, 0
    for breakpoint in artifact.cache.breakpoints:
        if not breakpoint.anthropic:
            continue
        here, dynamic = blocks_at.get((breakpoint.message, breakpoint.block), (previous, previous_dynamic))
        if here - previous > lookback and dynamic > previous_dynamic:
            where = "after the tools" if breakpoint.message is None else f"in message {breakpoint.message + 1}"
            diagnostics.append(
                make(
                    codes.BREAKPOINT_OUT_OF_REACH,
                    f"the cache breakpoint {where} is {here - previous} content blocks after the previous one, "
                    f"with dynamic text between them; {label} looks back {lookback} blocks for an earlier entry",
                    _block_span(doc, breakpoint.message, breakpoint.block),
                    "merge small sections into fewer blocks, or move the dynamic text after the stable text",
                    source=doc.source,
                )
            )
        previous, previous_dynamic = here, dynamic
    return diagnostics
