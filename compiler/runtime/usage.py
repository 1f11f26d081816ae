"""Usage records: what the provider says it cached, joined to what the build promised.

`Rendered.usage(response)` (promptc.runtime) turns a provider's response into one `UsageRecord`:
the prompt, the artifact and prefix hashes of the build that rendered it, the shape and model it
was sent as, when, and the provider's own token counts, read from the official SDK's response
object or from the plain JSON of the HTTP response:

    anthropic,         usage.input_tokens, usage.cache_read_input_tokens,
    anthropic-vertex   usage.cache_creation_input_tokens (split by TTL in usage.cache_creation:
                       ephemeral_5m_input_tokens, ephemeral_1h_input_tokens), usage.output_tokens;
                       diagnostics.cache_miss_reason (type, cache_missed_input_tokens)
    openai (chat)      usage.prompt_tokens, usage.prompt_tokens_details.cached_tokens
                       (and .cache_write_tokens where reported), usage.completion_tokens
    openai-responses   usage.input_tokens, usage.input_tokens_details.cached_tokens, .cache_write_tokens
                       (split by TTL in .cache_write_tokens_details: ttl_30m_tokens, ttl_12h_tokens),
                       usage.output_tokens; prompt_cache_diagnostics (type, reason, cache_missed_tokens)
    bedrock            usage.inputTokens, usage.cacheReadInputTokens, usage.cacheWriteInputTokens
                       (split by TTL in usage.cacheDetails: [{ttl, inputTokens}]), usage.outputTokens
    gemini             usage_metadata.prompt_token_count, .cached_content_token_count,
                       .candidates_token_count (REST JSON: usageMetadata.promptTokenCount …); the
                       Interactions API's usage.total_input_tokens, .total_cached_tokens,
                       .total_output_tokens

The record's own counts are normalised the way the OpenTelemetry GenAI conventions count:
`input_tokens` is every input token of the request, cached and written ones included (Anthropic and
Bedrock report the three apart; promptc adds them), `cache_read_input_tokens` what was read from
the cache, `cache_creation_input_tokens` what was written to it (None where the provider does not
say), and `cache_creation_by_ttl` the writes the provider splits by lifetime, under the price
table's TTL names (`{"5m": …, "1h": …}`; left out when the provider does not split them) so each is
priced at its own TTL's write price. `usage` keeps the provider's counts under the provider's names,
as reported (nested details flattened with a dot).

The provider's own diagnosis of a cache miss, where the request asked for one, is
`cache_miss_reason`: Anthropic's `diagnostics.cache_miss_reason.type` (`model_changed`,
`system_changed`, `tools_changed`, `messages_changed`, `previous_message_not_found`, `unavailable`),
OpenAI's `prompt_cache_diagnostics` (its `reason` for a `cache_miss`, else its `type`:
`comparison_response_not_found`, `unavailable`; a `cache_hit` is no miss), with the estimate of the
tokens the miss cost as `cache_missed_input_tokens`. A `diagnostics` object whose
`cache_miss_reason` is null means the diagnosis was still pending when the response was written:
the record says `pending`. No diagnostics: no `cache_miss_reason`.

A record goes to a JSONL file (`to="usage.jsonl"`: one line per record, appended with one write),
to a callable (`to=callback`), to several of them (`to=[...]`), and, opt-in (`otel=True`), onto the
current OpenTelemetry span as the GenAI attributes (`gen_ai.provider.name`,
`gen_ai.request.model`, `gen_ai.usage.input_tokens`, `gen_ai.usage.cache_read.input_tokens`,
`gen_ai.usage.cache_creation.input_tokens`, `gen_ai.usage.output_tokens`,
`gen_ai.response.model`) plus `promptc.prompt`, `promptc.artifact_sha256`,
`promptc.prefix_sha256`, `promptc.shape`, `promptc.cache_miss_reason`,
`promptc.cache_missed_input_tokens` and `promptc.usage.cache_creation.<ttl>.input_tokens` (the
conventions define no TTL split nor a miss reason). OpenTelemetry is imported only then.

The schema (`USAGE_SCHEMA`) did not change with the fields added since its first release
(`cache_creation_by_ttl`, `cache_miss_reason`, `cache_missed_input_tokens`): they are optional and
written only when the response has them, so a record of a response without them is the line it
always was, and a reader of the first records reads them all.

`promptc reconcile` (promptc.tools.reconcile) reads these records back. Standard library only: the
runtime that applications ship imports this module (runtime-js/src/usage.js is its port and
writes the same records).
"""

from __future__ import annotations

import json
import os
import re
import reprlib
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from ..facts.lazy import lazy_import
from ..facts.records import dataclass

#: the OpenTelemetry API, imported only by `to_current_span` (`otel=True`): an optional dependency
opentelemetry_trace = lazy_import("opentelemetry.trace")

__all__ = [
    "USAGE_SCHEMA",
    "OTEL_PROVIDER_NAMES",
    "PENDING",
    "TTL_WRITES_ATTRIBUTE",
    "Counts",
    "UsageError",
    "UsageRecord",
    "counts_of",
    "emit",
    "iso_timestamp",
    "make_record",
    "parse_timestamp",
    "span_attributes",
]

USAGE_SCHEMA = "promptc.usage/1"
#: promptc's provider names → the OpenTelemetry GenAI `gen_ai.provider.name` values (the conventions'
#: well-known values: `aws.bedrock`, and `gcp.vertex_ai` for Claude on Vertex AI)
OTEL_PROVIDER_NAMES = {
    "anthropic": "anthropic",
    "openai": "openai",
    "gemini": "gcp.gemini",
    "bedrock": "aws.bedrock",
    "anthropic-vertex": "gcp.vertex_ai",
}
_SHAPE_PROVIDERS = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openai-responses": "openai",
    "gemini": "gemini",
    "bedrock": "bedrock",
    "anthropic-vertex": "anthropic-vertex",
}
#: shapes whose responses are the same JSON (Claude on Vertex AI answers with Anthropic's Message): a
#: response that reads as the second is the first's when the prompt was built for the first's provider
_SAME_RESPONSE = {"anthropic-vertex": "anthropic"}
#: the TTL-split write counts, the provider's field → the price table's TTL name (sources: the pinned
#: SDKs' anthropic/types/cache_creation.py CacheCreation and openai/types/responses/response_usage.py
#: InputTokensDetailsCacheWriteTokensDetails; Bedrock's TokenUsage.cacheDetails names its TTL itself)
_ANTHROPIC_TTLS = (("ephemeral_5m_input_tokens", "5m"), ("ephemeral_1h_input_tokens", "1h"))
_OPENAI_TTLS = (("ttl_30m_tokens", "30m"), ("ttl_12h_tokens", "12h"))
#: a TTL name as the price table writes it (`5m`, `1h`, `30m`, `12h`, `24h`)
_TTL = re.compile(r"[1-9][0-9]{0,3}[smhd]\Z")
#: `cache_miss_reason` for a diagnosis the provider had not finished when it wrote the response
#: (Anthropic: a `diagnostics` object whose `cache_miss_reason` is null)
PENDING = "pending"


class UsageError(ValueError):
    """A response whose usage cannot be read, or a record that is not a usage record. `field` names
    the field whose value is wrong when one is (the message then starts with it), `reason` is the
    message without it."""

    def __init__(self, reason: str, field: str | None = None) -> None:
        super().__init__(f"{field}: {reason}" if field else reason)
        self.reason = reason
        self.field = field


#: the largest token count: what a signed 64-bit integer holds (OTLP's `intValue`, a database column)
MAX_COUNT = 2**63 - 1
#: the moments a record can name: the years 1 to 9999 in UTC, the four-digit years of ISO 8601's
#: basic form (`2026-12-01T09:30:00.125Z`) that both runtimes write
FIRST_SECOND = -62_135_596_800  # 0001-01-01T00:00:00Z
LAST_SECOND = 253_402_300_799.999  # 9999-12-31T23:59:59.999Z

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 40
_REPR.maxlevel = 2


def shown(value: Any) -> str:
    """A value as a message quotes it: shortened, since a field of a record can hold megabytes (and
    `repr` of an integer of more than 4,300 digits raises)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of {len(str(value)) if value.bit_length() < 14_000 else 'thousands of'} digits"
    if isinstance(value, Decimal) and value.is_finite():  # a JSON integer too long for int(): see tools.reconcile
        return f"a number of {len(value.as_tuple().digits)} digits"
    return _REPR.repr(value)


def _get(value: Any, *names: str) -> Any:
    """The first of `names` that `value` has, as a mapping key or an attribute; None if none."""
    if value is None:
        return None
    for name in names:
        if isinstance(value, Mapping):
            if name in value and value[name] is not None:
                return value[name]
        else:
            found = getattr(value, name, None)
            if found is not None:
                return found
    return None


def whole_number(value: Any, what: str, noun: str = "a token count") -> int:
    """`value` as a whole number from 0 to MAX_COUNT, written as an integer, a float without a
    fraction, or a string of ASCII digits (OTLP JSON writes 64-bit integers as strings; `str.isdigit`
    and `int` would take `²` and `٣`). UsageError naming the field `what` otherwise."""
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():  # NaN and the infinities are not
        number = int(value)
    elif isinstance(value, str) and 0 < len(value) <= 19 and value.isascii() and value.isdigit():
        number = int(value)
    if number is None:
        raise UsageError(f"expected {noun}, got {shown(value)}", what)
    if number < 0:
        raise UsageError(f"expected {noun} ≥ 0, got {shown(value)}", what)
    if number > MAX_COUNT:
        raise UsageError(f"expected {noun} below 2^63, got {shown(value)}", what)
    return number


def _count(value: Any, what: str) -> int | None:
    """A token count (`whole_number`), or None for None."""
    return None if value is None else whole_number(value, what)


@dataclass(frozen=True, slots=True)
class Counts:
    """One response's token counts, normalised (see the module docstring), and the provider's
    diagnosis of its cache miss."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int | None
    output_tokens: int | None
    #: the provider's own counts, under its names (nested details flattened with a dot)
    usage: dict[str, int] = field(default_factory=dict)
    #: the model the response names (`claude-sonnet-4-5-20250929`, Gemini's `modelVersion`)
    response_model: str | None = None
    #: the writes the provider splits by lifetime, by the price table's TTL name (zeros left out)
    cache_creation_by_ttl: dict[str, int] = field(default_factory=dict)
    #: the provider's reason for a cache miss (`system_changed`; `pending`), None without diagnostics
    cache_miss_reason: str | None = None
    #: the provider's estimate of the input tokens the miss did not read from the cache
    cache_missed_input_tokens: int | None = None


def detect_shape(response: Any) -> str | None:
    """The shape whose response `response` is, from the fields only that shape's usage has; None
    when it cannot tell (pass `shape=`). A Claude on Vertex AI response reads as `anthropic`."""
    if _get(response, "usage_metadata", "usageMetadata") is not None:
        return "gemini"
    usage = _get(response, "usage")
    if usage is None:
        return None
    if _get(usage, "prompt_tokens") is not None:
        return "openai"
    if _get(usage, "input_tokens_details") is not None or _get(response, "object") == "response":
        return "openai-responses"
    if _get(usage, "inputTokens") is not None:
        return "bedrock"
    if _get(usage, "total_input_tokens", "totalInputTokens", "total_cached_tokens", "totalCachedTokens") is not None:
        return "gemini"  # the Interactions API
    if _get(response, "type") == "message" or any(
        _get(usage, key) is not None for key in ("cache_read_input_tokens", "cache_creation_input_tokens")
    ):
        return "anthropic"
    return None


def _ttl_counts(holder: Any, fields: tuple[tuple[str, str], ...], what: str) -> list[tuple[str, str, int | None]]:
    """(the provider's field, its TTL name, its count) of each TTL-split write count `holder` has."""
    return [(name, ttl, _count(_get(holder, name), f"{what}.{name}")) for name, ttl in fields]


def _split(counts: Iterable[tuple[str, str, int | None]], written: int | None) -> dict[str, int]:
    """The TTL split of `written` tokens, by TTL name, zeros left out; empty when the parts add up
    to more than the writes the provider reports (an inconsistent split is not priced: the writes
    are priced at the request's TTL instead, and the provider's counts stay in `usage`)."""
    split: dict[str, int] = {}
    for _, ttl, tokens in counts:
        if tokens:
            split[ttl] = split.get(ttl, 0) + tokens
    return split if sum(split.values()) <= (written or 0) else {}


def _diagnosis(response: Any, shape: str) -> tuple[str | None, int | None]:
    """(`cache_miss_reason`, `cache_missed_input_tokens`) of a response (see the module docstring)."""
    if shape in ("anthropic", "anthropic-vertex"):
        diagnostics = _get(response, "diagnostics")
        if diagnostics is None:
            return None, None
        reason = _get(diagnostics, "cache_miss_reason")
        if reason is None:
            return PENDING, None
        kind = _get(reason, "type")
        what = "diagnostics.cache_miss_reason"
        missed_name = "cache_missed_input_tokens"
    elif shape in ("openai", "openai-responses"):
        reason = _get(response, "prompt_cache_diagnostics")
        if reason is None or _get(reason, "type") == "cache_hit":
            return None, None
        kind = _get(reason, "reason") if _get(reason, "type") == "cache_miss" else _get(reason, "type")
        what = "prompt_cache_diagnostics"
        missed_name = "cache_missed_tokens"
    else:
        return None, None
    if not isinstance(kind, str) or not kind:
        raise UsageError(f"expected a reason (its `type`), got {shown(kind)}", what)
    return kind, _count(_get(reason, missed_name), f"{what}.{missed_name}")


def counts_of(response: Any, shape: str) -> Counts:
    """The token counts of a response of `shape` (an SDK response object, or its decoded JSON)."""
    if shape == "plain":
        raise UsageError("a `plain` render has no provider response: name the shape it was sent as")
    if shape not in _SHAPE_PROVIDERS:
        raise UsageError(f"unknown shape `{shape}`; usage is read for: {', '.join(_SHAPE_PROVIDERS)}")
    response_model = _get(response, "model", "model_version", "modelVersion")
    response_model = response_model if isinstance(response_model, str) else None
    if shape == "gemini":
        meta = _get(response, "usage_metadata", "usageMetadata")
        if meta is not None:
            total = _count(_get(meta, "prompt_token_count", "promptTokenCount"), "usage_metadata.prompt_token_count")
            cached = _count(
                _get(meta, "cached_content_token_count", "cachedContentTokenCount"),
                "usage_metadata.cached_content_token_count",
            )
            output = _count(
                _get(meta, "candidates_token_count", "candidatesTokenCount"), "usage_metadata.candidates_token_count"
            )
            own = {
                "prompt_token_count": total,
                "cached_content_token_count": cached,
                "candidates_token_count": output,
            }
            return Counts(total or 0, cached or 0, None, output, _present(own), response_model)
        # the Interactions API (google.genai.interactions.Interaction): its usage's total_* counts
        usage = _get(response, "usage")
        if _get(usage, "total_input_tokens", "totalInputTokens", "total_cached_tokens", "totalCachedTokens") is None:
            raise UsageError("the gemini response has no usage_metadata (usageMetadata) nor usage.total_input_tokens")
        total = _count(_get(usage, "total_input_tokens", "totalInputTokens"), "usage.total_input_tokens")
        cached = _count(_get(usage, "total_cached_tokens", "totalCachedTokens"), "usage.total_cached_tokens")
        output = _count(_get(usage, "total_output_tokens", "totalOutputTokens"), "usage.total_output_tokens")
        own = {"total_input_tokens": total, "total_cached_tokens": cached, "total_output_tokens": output}
        return Counts(total or 0, cached or 0, None, output, _present(own), response_model)
    usage = _get(response, "usage")
    if usage is None:
        raise UsageError(f"the {shape} response has no usage")
    reason, missed = _diagnosis(response, shape)
    if shape in ("anthropic", "anthropic-vertex"):
        uncached = _count(_get(usage, "input_tokens"), "usage.input_tokens")
        if uncached is None:
            raise UsageError(f"the {shape} response's usage has no input_tokens")
        read = _count(_get(usage, "cache_read_input_tokens"), "usage.cache_read_input_tokens")
        written = _count(_get(usage, "cache_creation_input_tokens"), "usage.cache_creation_input_tokens")
        by_ttl = _ttl_counts(_get(usage, "cache_creation"), _ANTHROPIC_TTLS, "usage.cache_creation")
        output = _count(_get(usage, "output_tokens"), "usage.output_tokens")
        own = {
            "input_tokens": uncached,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            **{f"cache_creation.{name}": tokens for name, _, tokens in by_ttl},
            "output_tokens": output,
        }
        total = uncached + (read or 0) + (written or 0)
        return Counts(
            total,
            read or 0,
            written or 0,
            output,
            _present(own),
            response_model,
            _split(by_ttl, written),
            reason,
            missed,
        )
    if shape == "bedrock":
        # "the inputTokens field represents only the non-cached input tokens … total input tokens =
        # inputTokens + cacheReadInputTokens + cacheWriteInputTokens"
        # (https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html, read 2026-12-06)
        uncached = _count(_get(usage, "inputTokens"), "usage.inputTokens")
        if uncached is None:
            raise UsageError("the bedrock response's usage has no inputTokens")
        read = _count(_get(usage, "cacheReadInputTokens"), "usage.cacheReadInputTokens")
        written = _count(_get(usage, "cacheWriteInputTokens"), "usage.cacheWriteInputTokens")
        details = _get(usage, "cacheDetails") or ()
        if isinstance(details, str | bytes | Mapping) or not isinstance(details, Iterable):
            raise UsageError(f"expected a list of {{ttl, inputTokens}}, got {shown(details)}", "usage.cacheDetails")
        split: list[tuple[str, str, int | None]] = []
        for detail in details:
            ttl = _get(detail, "ttl")
            if not isinstance(ttl, str) or not _TTL.match(ttl):
                raise UsageError(f"expected a TTL such as `5m` or `1h`, got {shown(ttl)}", "usage.cacheDetails")
            name = f"cacheDetails.{ttl}.inputTokens"
            split.append((name, ttl, _count(_get(detail, "inputTokens"), f"usage.{name}")))
        output = _count(_get(usage, "outputTokens"), "usage.outputTokens")
        own = {
            "inputTokens": uncached,
            "cacheReadInputTokens": read,
            "cacheWriteInputTokens": written,
            **{name: tokens for name, _, tokens in split},
            "outputTokens": output,
        }
        total = uncached + (read or 0) + (written or 0)
        return Counts(
            total,
            read or 0,
            written or 0,
            output,
            _present(own),
            response_model,
            _split(split, written),
            reason,
            missed,
        )
    if shape == "openai":
        total_name, details_name, output_name = "prompt_tokens", "prompt_tokens_details", "completion_tokens"
    else:
        total_name, details_name, output_name = "input_tokens", "input_tokens_details", "output_tokens"
    total = _count(_get(usage, total_name), f"usage.{total_name}")
    if total is None:
        raise UsageError(f"the {shape} response's usage has no {total_name}")
    details = _get(usage, details_name)
    cached = _count(_get(details, "cached_tokens"), f"usage.{details_name}.cached_tokens")
    written = _count(_get(details, "cache_write_tokens"), f"usage.{details_name}.cache_write_tokens")
    prefix = f"{details_name}.cache_write_tokens_details"
    by_ttl = _ttl_counts(_get(details, "cache_write_tokens_details"), _OPENAI_TTLS, f"usage.{prefix}")
    output = _count(_get(usage, output_name), f"usage.{output_name}")
    own = {
        total_name: total,
        f"{details_name}.cached_tokens": cached,
        f"{details_name}.cache_write_tokens": written,
        **{f"{prefix}.{name}": tokens for name, _, tokens in by_ttl},
        output_name: output,
    }
    return Counts(
        total, cached or 0, written, output, _present(own), response_model, _split(by_ttl, written), reason, missed
    )


def _present(counts: Mapping[str, int | None]) -> dict[str, int]:
    return {name: value for name, value in counts.items() if value is not None}


# ---------------------------------------------------------------------------------------------
# Timestamps: ISO 8601 in UTC with milliseconds, as JavaScript's Date.toISOString writes them


def iso_timestamp(when: float | datetime | str | None = None) -> str:
    """`when` (epoch seconds, an aware datetime, an ISO string, or None: now) as
    `2026-12-01T09:30:00.125Z`."""
    if when is None:
        when = time.time()
    if isinstance(when, str):
        return iso_timestamp(parse_timestamp(when))
    if isinstance(when, datetime):
        if when.tzinfo is None:
            raise UsageError(f"timestamp {when.isoformat()} has no time zone")
        when = when.timestamp()
    if isinstance(when, bool) or not isinstance(when, int | float):
        raise UsageError(f"a timestamp is epoch seconds, a datetime or an ISO 8601 string, not {shown(when)}")
    milliseconds = int(_in_range(when, when, "timestamp") * 1000 // 1)
    m = datetime.fromtimestamp(milliseconds / 1000, UTC)
    # by hand: strftime's %Y writes the year 1 as `1`, which no reader takes for a year
    return (
        f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}.{milliseconds % 1000:03d}Z"
    )


def _in_range(seconds: float, value: Any, what: str) -> float:
    if not FIRST_SECOND <= seconds <= LAST_SECOND:  # NaN is not either
        raise UsageError(f"{shown(value)} is not a moment between the years 1 and 9999 (UTC)", what)
    return float(seconds)


def parse_timestamp(value: Any, what: str = "timestamp") -> float:
    """Epoch seconds of an ISO 8601 timestamp (with a zone: `Z` or `+02:00`) or of a number of
    epoch seconds, between the years 1 and 9999 in UTC. Raises UsageError (naming the field
    `what`) otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise UsageError(f"expected an ISO 8601 string or epoch seconds, got {shown(value)}", what)
    if not isinstance(value, str):
        return _in_range(value, value, what)
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise UsageError(f"{shown(value)} is not an ISO 8601 date and time", what) from None
    if moment.tzinfo is None:
        raise UsageError(f"{shown(value)} has no time zone (write `Z` for UTC)", what)
    try:
        seconds = moment.timestamp()
    except (OverflowError, ValueError):  # a zone that moves the year 1 or 9999 out of the calendar
        seconds = float("nan")
    return _in_range(seconds, value, what)


# ---------------------------------------------------------------------------------------------
# Records


_CANONICAL = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\Z", re.ASCII)


def _canonical(value: Any, what: str) -> str:
    """A timestamp as records write it (`iso_timestamp`): kept when it already is one."""
    if isinstance(value, str) and _CANONICAL.match(value):
        parse_timestamp(value, what)  # a well-formed string can still name no date (month 13)
        return value
    return iso_timestamp(parse_timestamp(value, what))


_TEXT_FIELDS = ("prompt", "artifact_sha256", "prefix_sha256", "shape", "provider", "model", "response_model")


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """One request's usage, as the runtime writes it and `promptc reconcile` reads it."""

    prompt: str
    #: the sha256 of the artifact file that rendered the request (the manifest's), if known
    artifact_sha256: str | None
    #: the artifact's `cache.prefix_sha256`: which cache entry the request should have used
    prefix_sha256: str | None
    shape: str
    provider: str | None
    #: the model the request was sent to
    model: str | None
    #: when the response was read (ISO 8601, UTC)
    timestamp: str
    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int | None
    output_tokens: int | None
    #: the provider's own counts, under its names
    usage: dict[str, int] = field(default_factory=dict)
    #: the model the response names, when it names one
    response_model: str | None = None
    #: when the request was sent (ISO 8601, UTC): when it was rendered, unless `started=` said
    started_at: str | None = None
    #: the writes the provider splits by lifetime, by the price table's TTL name (`{"1h": 3000}`);
    #: empty when it does not split them. Part of `cache_creation_input_tokens`.
    cache_creation_by_ttl: dict[str, int] = field(default_factory=dict)
    #: the provider's diagnosis of a cache miss (`system_changed`, …; `pending`), None without one
    cache_miss_reason: str | None = None
    #: the provider's estimate of the input tokens that miss did not read from the cache
    cache_missed_input_tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The record's JSON, in the key order of its JSONL line. The fields added to the schema
        after its first release are written only when the record has them."""
        data: dict[str, Any] = {
            "schema": USAGE_SCHEMA,
            "prompt": self.prompt,
            "artifact_sha256": self.artifact_sha256,
            "prefix_sha256": self.prefix_sha256,
            "shape": self.shape,
            "provider": self.provider,
            "model": self.model,
            "response_model": self.response_model,
            "started_at": self.started_at,
            "timestamp": self.timestamp,
            "input_tokens": self.input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }
        if self.cache_creation_by_ttl:
            data["cache_creation_by_ttl"] = dict(self.cache_creation_by_ttl)
        data["output_tokens"] = self.output_tokens
        if self.cache_miss_reason is not None:
            data["cache_miss_reason"] = self.cache_miss_reason
        if self.cache_missed_input_tokens is not None:
            data["cache_missed_input_tokens"] = self.cache_missed_input_tokens
        data["usage"] = dict(self.usage)
        return data

    def line(self) -> str:
        """The record as one JSONL line (no newline): compact, keys in `to_json` order."""
        return json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, data: Any) -> UsageRecord:
        """A record from its decoded JSON; UsageError names the first bad field."""
        if not isinstance(data, Mapping):
            raise UsageError(f"a usage record is a JSON object, not {type(data).__name__}")
        if data.get("schema") != USAGE_SCHEMA:
            raise UsageError(f"expected {USAGE_SCHEMA!r}, got {shown(data.get('schema'))}", "schema")
        texts: dict[str, str | None] = {}
        for name in _TEXT_FIELDS:
            value = data.get(name)
            if value is not None and not isinstance(value, str):
                raise UsageError(f"expected a string or null, got {shown(value)}", name)
            texts[name] = value
        if not texts["prompt"]:
            raise UsageError("every record names its prompt", "prompt")
        if texts["shape"] not in _SHAPE_PROVIDERS:
            raise UsageError(f"expected one of {', '.join(_SHAPE_PROVIDERS)}, got {shown(texts['shape'])}", "shape")
        when = _canonical(data.get("timestamp"), "timestamp")
        started = data.get("started_at")
        started_at = None if started is None else _canonical(started, "started_at")
        total = _count(data.get("input_tokens"), "input_tokens")
        if total is None:
            raise UsageError("every record counts its input tokens", "input_tokens")
        read = _count(data.get("cache_read_input_tokens"), "cache_read_input_tokens") or 0
        written = _count(data.get("cache_creation_input_tokens"), "cache_creation_input_tokens")
        output = _count(data.get("output_tokens"), "output_tokens")
        if read + (written or 0) > total:
            raise UsageError(
                f"{total} is fewer than the cached ({read}) and written ({written or 0}) tokens it includes",
                "input_tokens",
            )
        own = data.get("usage")
        if own is None:
            own = {}
        elif not isinstance(own, Mapping):
            raise UsageError(f"expected an object of counts, got {shown(own)}", "usage")
        by_ttl = data.get("cache_creation_by_ttl")
        if by_ttl is None:
            by_ttl = {}
        elif not isinstance(by_ttl, Mapping):
            raise UsageError(f"expected an object of counts by TTL, got {shown(by_ttl)}", "cache_creation_by_ttl")
        split: dict[str, int] = {}
        for ttl, tokens in by_ttl.items():
            if not isinstance(ttl, str) or not _TTL.match(ttl):
                raise UsageError(f"expected TTLs such as `5m` or `1h`, got {shown(ttl)}", "cache_creation_by_ttl")
            try:
                split[ttl] = whole_number(tokens, "cache_creation_by_ttl")
            except UsageError as exc:
                raise UsageError(f"{ttl}: {exc.reason}", "cache_creation_by_ttl") from None
        if sum(split.values()) > (written or 0):
            raise UsageError(
                f"{sum(split.values())} tokens, more than the {written or 0} written", "cache_creation_by_ttl"
            )
        reason = data.get("cache_miss_reason")
        if reason is not None and (not isinstance(reason, str) or not reason):
            raise UsageError(f"expected the provider's reason or null, got {shown(reason)}", "cache_miss_reason")
        return cls(
            texts["prompt"],
            texts["artifact_sha256"],
            texts["prefix_sha256"],
            texts["shape"],
            texts["provider"],
            texts["model"],
            when,
            total,
            read,
            written,
            output,
            # the provider's own names and counts, as reported: what is no count is left out
            {
                str(k): v
                for k, v in own.items()
                if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_COUNT
            },
            texts["response_model"],
            started_at,
            {ttl: tokens for ttl, tokens in split.items() if tokens},
            reason,
            _count(data.get("cache_missed_input_tokens"), "cache_missed_input_tokens"),
        )


def make_record(
    rendered: Any,
    response: Any,
    *,
    shape: str | None = None,
    model: str | None = None,
    timestamp: float | datetime | str | None = None,
    started: float | datetime | str | None = None,
) -> UsageRecord:
    """The usage record of `response`, the provider's answer to a request of `rendered` (a
    `promptc.runtime.Rendered`). `shape` is the shape it was sent as (read from the response when
    left out), `model` the model it was sent to when not the artifact's (`as_shape(…, model=)`),
    `timestamp` when the response came (default: now), `started` when the request was sent
    (default: when it was rendered)."""
    chosen = shape or detect_shape(response)
    if chosen is None:
        raise UsageError(
            f"prompt `{rendered.name}`: cannot tell which provider's response this is; pass shape= "
            f"({', '.join(_SHAPE_PROVIDERS)})"
        )
    own = getattr(rendered, "provider", None)
    if shape is None and _SAME_RESPONSE.get(own or "") == chosen:
        chosen = str(own)
    counts = counts_of(response, chosen)
    if started is None:
        started = getattr(rendered, "rendered_at", None)
    return UsageRecord(
        rendered.name,
        getattr(rendered, "artifact_sha256", None),
        rendered.prefix_sha256,
        chosen,
        _SHAPE_PROVIDERS[chosen],
        model or rendered.model,
        iso_timestamp(timestamp),
        counts.input_tokens,
        counts.cache_read_input_tokens,
        counts.cache_creation_input_tokens,
        counts.output_tokens,
        counts.usage,
        counts.response_model,
        None if started is None else iso_timestamp(started),
        counts.cache_creation_by_ttl,
        counts.cache_miss_reason,
        counts.cache_missed_input_tokens,
    )


# ---------------------------------------------------------------------------------------------
# Where records go


#: the span attribute of the writes of one TTL: the GenAI conventions count writes in
#: `gen_ai.usage.cache_creation.input_tokens` and define no split by lifetime, so the split is promptc's,
#: named as that attribute with the TTL one namespace further (`promptc.usage.cache_creation.1h.input_tokens`)
TTL_WRITES_ATTRIBUTE = "promptc.usage.cache_creation.{ttl}.input_tokens"


def span_attributes(record: UsageRecord) -> dict[str, str | int]:
    """The OpenTelemetry attributes of a record: the GenAI semantic conventions' names, plus
    promptc's own (`promptc.*`). Attributes without a value are left out."""
    attributes: dict[str, str | int | None] = {
        "gen_ai.provider.name": OTEL_PROVIDER_NAMES.get(record.provider or "", record.provider),
        "gen_ai.request.model": record.model,
        "gen_ai.response.model": record.response_model,
        "gen_ai.usage.input_tokens": record.input_tokens,
        "gen_ai.usage.cache_read.input_tokens": record.cache_read_input_tokens,
        "gen_ai.usage.cache_creation.input_tokens": record.cache_creation_input_tokens,
        "gen_ai.usage.output_tokens": record.output_tokens,
        "promptc.prompt": record.prompt,
        "promptc.artifact_sha256": record.artifact_sha256,
        "promptc.prefix_sha256": record.prefix_sha256,
        "promptc.shape": record.shape,
        "promptc.cache_miss_reason": record.cache_miss_reason,
        "promptc.cache_missed_input_tokens": record.cache_missed_input_tokens,
    }
    for ttl, tokens in record.cache_creation_by_ttl.items():
        attributes[TTL_WRITES_ATTRIBUTE.format(ttl=ttl)] = tokens
    return {key: value for key, value in attributes.items() if value is not None}


def to_current_span(record: UsageRecord) -> bool:
    """Set the record's attributes on the current OpenTelemetry span. Imports opentelemetry (only
    here); raises UsageError when it is not installed. False when no span is recording."""
    try:
        span = opentelemetry_trace.get_current_span()
    except ImportError:
        raise UsageError(
            "otel=True needs the OpenTelemetry API (`pip install opentelemetry-api`, and an SDK to export spans)"
        ) from None
    if not span.is_recording():
        return False
    span.set_attributes(span_attributes(record))
    return True


_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def append_jsonl(path: str | os.PathLike[str], record: UsageRecord) -> None:
    """Append the record to a JSONL file as one line, in one write on a file opened for appending
    (O_APPEND: concurrent writers never interleave within a line); created when missing."""
    key = os.fspath(path)
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(key, threading.Lock())
    data = (record.line() + "\n").encode("utf-8")
    with lock:
        fd = os.open(key, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            written = os.write(fd, data)
            while written < len(data):  # a short write (a full disk, a signal): finish the line
                written += os.write(fd, data[written:])
        finally:
            os.close(fd)


Sink = str | os.PathLike[str] | Callable[[UsageRecord], Any]


def emit(record: UsageRecord, to: Sink | Iterable[Sink] | None = None, *, otel: bool = False) -> UsageRecord:
    """Send `record` where `to` says (a path: a JSONL file; a callable: called with the record; a
    list of either) and, with `otel`, onto the current OpenTelemetry span. Returns the record."""
    sinks: list[Any]
    if to is None:
        sinks = []
    elif isinstance(to, str | os.PathLike) or callable(to):
        sinks = [to]
    else:
        sinks = list(to)
    for sink in sinks:
        if isinstance(sink, str | os.PathLike):
            append_jsonl(sink, record)
        elif callable(sink):
            sink(record)
        else:
            raise UsageError(f"usage records go to a path or a callable, not {type(sink).__name__}")
    if otel:
        to_current_span(record)
    return record
