"""Usage records: what the provider says it cached, joined to what the build promised.

`Rendered.usage(response)` (promptc.runtime) turns a provider's response into one `UsageRecord`:
the prompt, the artifact and prefix hashes of the build that rendered it, the shape and model it
was sent as, when, and the provider's own token counts, read from the official SDK's response
object or from the plain JSON of the HTTP response:

    anthropic          usage.input_tokens, usage.cache_read_input_tokens,
                       usage.cache_creation_input_tokens, usage.output_tokens
    openai (chat)      usage.prompt_tokens, usage.prompt_tokens_details.cached_tokens
                       (and .cache_write_tokens where reported), usage.completion_tokens
    openai-responses   usage.input_tokens, usage.input_tokens_details.cached_tokens
                       (and .cache_write_tokens), usage.output_tokens
    gemini             usage_metadata.prompt_token_count, .cached_content_token_count,
                       .candidates_token_count (REST JSON: usageMetadata.promptTokenCount …)

The record's own counts are normalised the way the OpenTelemetry GenAI conventions count:
`input_tokens` is every input token of the request, cached and written ones included (Anthropic
reports the three apart; promptc adds them), `cache_read_input_tokens` what was read from the
cache, `cache_creation_input_tokens` what was written to it (None where the provider does not
say). `usage` keeps the provider's counts under the provider's names, as reported.

A record goes to a JSONL file (`to="usage.jsonl"`: one line per record, appended with one write),
to a callable (`to=callback`), to several of them (`to=[...]`), and, opt-in (`otel=True`), onto the
current OpenTelemetry span as the GenAI attributes (`gen_ai.provider.name`,
`gen_ai.request.model`, `gen_ai.usage.input_tokens`, `gen_ai.usage.cache_read.input_tokens`,
`gen_ai.usage.cache_creation.input_tokens`, `gen_ai.usage.output_tokens`,
`gen_ai.response.model`) plus `promptc.prompt`, `promptc.artifact_sha256`,
`promptc.prefix_sha256`, `promptc.shape`. OpenTelemetry is imported only then.

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
#: promptc's provider names → the OpenTelemetry GenAI `gen_ai.provider.name` values
OTEL_PROVIDER_NAMES = {"anthropic": "anthropic", "openai": "openai", "gemini": "gcp.gemini"}
_SHAPE_PROVIDERS = {"anthropic": "anthropic", "openai": "openai", "openai-responses": "openai", "gemini": "gemini"}


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
    """One response's token counts, normalised (see the module docstring)."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int | None
    output_tokens: int | None
    #: the provider's own counts, under its names (nested details flattened with a dot)
    usage: dict[str, int] = field(default_factory=dict)
    #: the model the response names (`claude-sonnet-4-5-20250929`, Gemini's `modelVersion`)
    response_model: str | None = None


def detect_shape(response: Any) -> str | None:
    """The shape whose response `response` is, from the fields only that shape's usage has; None
    when it cannot tell (pass `shape=`)."""
    if _get(response, "usage_metadata", "usageMetadata") is not None:
        return "gemini"
    usage = _get(response, "usage")
    if usage is None:
        return None
    if _get(usage, "prompt_tokens") is not None:
        return "openai"
    if _get(usage, "input_tokens_details") is not None or _get(response, "object") == "response":
        return "openai-responses"
    if _get(response, "type") == "message" or any(
        _get(usage, key) is not None for key in ("cache_read_input_tokens", "cache_creation_input_tokens")
    ):
        return "anthropic"
    return None


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
        if meta is None:
            raise UsageError("the gemini response has no usage_metadata (usageMetadata)")
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
    usage = _get(response, "usage")
    if usage is None:
        raise UsageError(f"the {shape} response has no usage")
    if shape == "anthropic":
        uncached = _count(_get(usage, "input_tokens"), "usage.input_tokens")
        if uncached is None:
            raise UsageError("the anthropic response's usage has no input_tokens")
        read = _count(_get(usage, "cache_read_input_tokens"), "usage.cache_read_input_tokens")
        written = _count(_get(usage, "cache_creation_input_tokens"), "usage.cache_creation_input_tokens")
        output = _count(_get(usage, "output_tokens"), "usage.output_tokens")
        own = {
            "input_tokens": uncached,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            "output_tokens": output,
        }
        total = uncached + (read or 0) + (written or 0)
        return Counts(total, read or 0, written or 0, output, _present(own), response_model)
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
    output = _count(_get(usage, output_name), f"usage.{output_name}")
    own = {
        total_name: total,
        f"{details_name}.cached_tokens": cached,
        f"{details_name}.cache_write_tokens": written,
        output_name: output,
    }
    return Counts(total, cached or 0, written, output, _present(own), response_model)


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

    def to_json(self) -> dict[str, Any]:
        return {
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
            "output_tokens": self.output_tokens,
            "usage": dict(self.usage),
        }

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
            "(anthropic, openai, openai-responses, gemini)"
        )
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
    )


# ---------------------------------------------------------------------------------------------
# Where records go


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
    }
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
