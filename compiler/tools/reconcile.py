"""`promptc reconcile`: the hits the build promised against the hits the provider reported.

The build proves, per prompt, how many tokens of every request the provider can serve from its
cache (`cache.cacheable_tokens`: the prediction). The runtimes write one usage record per
response (promptc.runtime.usage). This module reads those records — promptc's JSONL, or an OpenTelemetry
JSON export of spans carrying the `promptc.*` attributes — in one pass, and classifies every
request:

    hit            the provider read the predicted prefix from its cache (Anthropic: it read and
                   wrote nothing; an estimated count needs 90 % of the prediction)
    first-write    the first request of a cache entry wrote it (expected: not a gap)
    not-cached     the build predicts no cached tokens (no stable prefix, `cache_ttl: none`)
    below-minimum  the prefix is under the provider's minimum: by the build's count (W705), or by
                   the provider's own (it neither read nor wrote an entry, or counted fewer input
                   tokens than its minimum)
    model          sent to another provider or model than the artifact's: another cache
    stale          a prefix hash the current build does not have (a deploy of another build)
    bust           the prefix hash of revision REV (`--against REV`): the change since REV busts it
    expired        the entry's last use was longer ago than its TTL (from the timestamps)
    concurrent     started before the first write of its entry had finished
    dynamic        a miss on a warm entry: what was sent differs from the build's prefix (the
                   source line is where the provider's read stopped)

A record that carries the provider's own diagnosis of its miss (`cache_miss_reason`: Anthropic's
cache diagnostics, OpenAI's prompt_cache_diagnostics) is classified by it once promptc's certain
causes (model, stale, bust, below-minimum) and a first write are ruled out: `model_changed` is
`model`, every other change the provider names (`system_changed`, `tools_changed`,
`messages_changed`, OpenAI's `input_changed` …) is `dynamic`, pointing at the part of the request it
names; a reason that diagnoses nothing (`previous_message_not_found`, `unavailable`,
`comparison_response_not_found`, `pending`) leaves the record to the timeline and is named in the
detail of the cause it gets.

Records are read in order of when their requests started (`started_at`, else the timestamp minus
`window` seconds); appending processes write them out of order by at most their latency, so a
reorder buffer of `horizon` seconds puts them back in order. Memory is bounded by that buffer and
a few numbers per prompt and cache entry, whatever the file's size. Money is priced with
promptc's price table and cost model (promptc.tools.cost): what each request cost against what it
would have cost had the prediction held (a hit, or the expected write).

A value that is no record is a W951 diagnostic with `path:line:col`, a record with a bad value in
a field a W953 pointing at the field (both skipped, the others read); a file that cannot be read is
E950. The reader takes any bytes: the records are the same whatever the size of its reads.
"""

from __future__ import annotations

import codecs
import heapq
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from ..backend.meter import meter
from ..compile.pipeline import Compilation
from ..driver.sources import read_tree
from ..facts import codes
from ..facts.config import Config
from ..facts.diagnostics import Diagnostic, Span, file_span, github_escape, make
from ..facts.language import MANIFEST
from ..facts.profiles import MARKER_SHAPES, resolve, resolve_model
from ..facts.records import dataclass
from ..passes.context import SourceTree
from ..runtime import requestmodel
from ..runtime.buildfolder import BuildFolder, BuildFolderError
from ..runtime.model import Artifact
from ..runtime.usage import (
    TTL_WRITES_ATTRIBUTE,
    USAGE_SCHEMA,
    UsageError,
    UsageRecord,
    iso_timestamp,
    parse_timestamp,
    shown,
    whole_number,
)
from .cost import Price, PriceTable, Unpriced, facts_of_build, money, prices
from .divergence import _pieces, first_difference, prompt_in

__all__ = [
    "CAUSES",
    "KINDS",
    "FailOn",
    "PromptResult",
    "Reconciliation",
    "Where",
    "parse_fail_on",
    "read_records",
    "reconcile",
]

RECONCILE_SCHEMA = "promptc.reconcile/1"
#: every classification, healthy ones first
KINDS = (
    "hit",
    "first-write",
    "not-cached",
    "below-minimum",
    "model",
    "stale",
    "bust",
    "expired",
    "concurrent",
    "dynamic",
)
#: the kinds that are gaps against the prediction (or reasons nothing was predicted)
CAUSES = KINDS[3:]
HEALTHY = ("hit", "first-write", "not-cached")
#: a value (one record, one OTLP document) larger than this is refused: a record is a few hundred bytes
MAX_VALUE_CHARS = 64 * 1024 * 1024
_CHUNK = 1 << 20
#: diagnostics shown in full; the rest are counted
MAX_DIAGNOSTICS = 50
_MTOK = Decimal(1_000_000)
#: what a provider's diagnosis of a miss says, and the part of the request it names (where the cause
#: points): Anthropic's cache_miss_reason types (anthropic/types/cache_miss_*.py) and the reasons of
#: OpenAI's prompt_cache_diagnostics (openai/types/responses/response.py PromptCacheDiagnosticsCacheMiss).
#: `model_changed` is a `model` cause, every other a `dynamic` one; a reason not listed (a provider's
#: new one) is `dynamic` too, shown as the provider wrote it.
DIAGNOSES: dict[str, tuple[str, str | None]] = {
    "model_changed": ("the model differs from the previous request's", None),
    "system_changed": ("the system prompt differs from the previous request's", "system"),
    "tools_changed": ("the tools differ from the previous request's", "tools"),
    "messages_changed": ("an earlier message differs from the previous request's", "messages"),
    "input_changed": ("the input differs from the compared response's", None),
    "prompt_cache_key_changed": ("the prompt_cache_key differs from the compared response's", None),
    "text_format_changed": ("the output format differs from the compared response's", None),
    "reasoning_effort_changed": ("the reasoning effort differs from the compared response's", None),
    "verbosity_changed": ("the verbosity differs from the compared response's", None),
    "service_tier_changed": ("the service tier differs from the compared response's", None),
    "context_compacted": ("the conversation was compacted since the compared response", None),
}
#: reasons that diagnose nothing: the record is classified by the timeline, and the detail says so
UNDIAGNOSED = {
    "previous_message_not_found": "the provider has no record of the message `diagnostics.previous_message_id` named",
    "comparison_response_not_found": "the provider has no record of the response `comparison_response_id` named",
    "unavailable": "the provider could not diagnose the request",
    "pending": "the diagnosis was not finished when the response was written",
}
#: distinct reasons kept per cause (records are data: the set they name is bounded here)
MAX_REASONS = 16


# ---------------------------------------------------------------------------------------------
# Reading: a stream of JSON values (JSONL, concatenated pretty-printed objects, one document)


@dataclass(frozen=True, slots=True)
class _Value:
    """A top-level JSON value, or the error in its place, starting at `line`:`column`. Its text is
    `doc[start:end]`: `doc` is the reader's buffer as it was when the value was read (a reference,
    not a copy), `begin` where the value's first line starts in it (negative: before the buffer's
    start, the line is longer than the buffer kept of it)."""

    line: int
    column: int
    value: Any = None
    error: str | None = None
    doc: str = ""
    start: int = 0
    end: int = 0
    begin: int = 0
    #: the error is about the file, not this value: nothing is skipped (bytes that are not UTF-8)
    notice: bool = False

    def text(self) -> str | None:
        """The value's first line, as a diagnostic shows it (None when its start was not kept)."""
        return None if self.begin < 0 else _line_at(self.doc, self.begin)

    def place(self, key: str) -> tuple[int, int, int, str | None]:
        """(line, column, width, line text) of the first `"key"` in the value's text: where a
        diagnostic about that field points (the value's start when the key is not written)."""
        at = self.doc.find(f'"{key}"', self.start, self.end) if self.end else -1
        if at == -1:
            return self.line, self.column, 1, self.text()
        newlines = self.doc.count("\n", self.start, at)
        if not newlines:
            return self.line, self.column + at - self.start, len(key) + 2, self.text()
        begin = self.doc.rfind("\n", self.start, at) + 1
        return self.line + newlines, at - begin + 1, len(key) + 2, _line_at(self.doc, begin)


#: a read may be cut after any of these and never inside a token: JSON's whitespace and punctuation.
#: A number, a literal (`null`) or an escape holds none of them; a string cut after one is
#: "unterminated", which the decoder says, as it says when the text ends before the value does.
_SAFE_ENDS = "\n\r\t ,:[]{}"


def _safe_end(text: str) -> int:
    """The length of the longest prefix of `text` that ends with one of _SAFE_ENDS (0: none)."""
    at = text.rfind("\n")
    if at == -1:  # a chunk inside one line (a long one, or a tiny chunk)
        at = max(text.rfind(c) for c in _SAFE_ENDS)
    return at + 1


def _wide_int(text: str) -> int | Decimal:
    """A JSON integer: an int, or, longer than `int()` converts (4,300 digits), a Decimal, which
    every field refuses (a count below 2^63, a timestamp) while the rest of the record is read."""
    try:
        return int(text)
    except ValueError:
        return Decimal(text)


_DECODER = json.JSONDecoder()
_WIDE_DECODER = json.JSONDecoder(parse_int=_wide_int)


def _decode(buffer: str, pos: int) -> tuple[Any, int]:
    """The JSON value at `buffer[pos]` and where it ends; JSONDecodeError when there is none."""
    try:
        try:
            return _DECODER.raw_decode(buffer, pos)
        except json.JSONDecodeError:
            raise
        except ValueError:  # an integer longer than int() converts: read it again as a Decimal
            return _WIDE_DECODER.raw_decode(buffer, pos)
    except RecursionError:  # nested deeper than the interpreter's stack: no record is
        raise json.JSONDecodeError("nested too deeply", buffer, pos) from None


_NOT_UTF8 = "the file is not UTF-8 text here (the bad bytes were read as U+FFFD)"


def _values(data: Iterable[bytes]) -> Iterator[_Value]:
    """Every top-level JSON value of the byte chunks, with the line and column it starts at; a
    value that does not parse is reported (as an error value) and reading resumes at the next
    line that starts with `{` or `[`. Memory: the largest single value, not the file.

    The values are the same whatever the chunks: the decoder is given the text only up to the
    last place a read may be cut (after a newline, else other whitespace or punctuation:
    _SAFE_ENDS), the rest waits for the next chunk. So a value is never seen cut inside a token,
    and one that runs on past the text read so far is one the decoder could not finish (it
    stopped at the end of the text, or in an unterminated string): read on, then decode again."""
    utf8 = codecs.getincrementaldecoder("utf-8")("replace")
    strict = codecs.getincrementaldecoder("utf-8")("strict")  # only to find where bad bytes are
    buffer = ""  # decoded text, ending where a read may be cut (or at the end of the file)
    pending: list[str] = []  # decoded text after that place: no newline in it
    held = 0  # its length
    pos = 0  # where unread text starts in buffer
    line = 1  # the line of buffer[pos]
    line_start = 0  # buffer offset of the start of that line (may be negative after a trim)
    chunks = iter(data)
    eof = False
    bad_line: int | None = None  # where the first bytes that are not UTF-8 are
    need = 0  # read until the unread text is at least this long (grows for a large value)

    def fill() -> None:
        nonlocal buffer, eof, pos, line_start, bad_line, held
        chunk = next(chunks, None)
        if chunk is None:
            eof = True
            text = "".join(pending) + utf8.decode(b"", final=True)
            if bad_line is None:
                try:
                    strict.decode(b"", final=True)
                except UnicodeDecodeError:  # the file ends inside a character
                    bad_line = line + buffer.count("\n", pos)
            pending.clear()
            held = 0
        else:
            decoded = utf8.decode(chunk)
            if bad_line is None:
                try:
                    strict.decode(chunk)
                except UnicodeDecodeError:  # the first U+FFFD of this chunk's text is the bad byte
                    at = decoded.find("\ufffd")
                    bad_line = line + buffer.count("\n", pos) + decoded.count("\n", 0, max(at, 0))
            cut = _safe_end(decoded)
            if cut == 0 and held + len(decoded) <= MAX_VALUE_CHARS:
                pending.append(decoded)
                held += len(decoded)
                return
            if cut == 0:  # a token longer than any value may be: given to the decoder as it is, to refuse
                cut = len(decoded)
            text = "".join(pending) + decoded[:cut]
            pending[:] = [decoded[cut:]]
            held = len(decoded) - cut
        if pos > len(buffer) // 2:  # drop what is read: the buffer holds the unread text only
            buffer = buffer[pos:]
            line_start -= pos
            pos = 0
        buffer += text

    while True:
        # skip whitespace, counting lines
        while True:
            while pos < len(buffer) and buffer[pos] in " \t\r\n":
                if buffer[pos] == "\n":
                    line += 1
                    line_start = pos + 1
                pos += 1
            if pos < len(buffer) or eof:
                break
            fill()
        if pos >= len(buffer):
            if bad_line is not None:
                yield _Value(bad_line, 1, error=_NOT_UTF8, notice=True)
            return
        if len(buffer) - pos < need and not eof:
            fill()
            continue
        start_line, start_col = line, pos - line_start + 1
        error: str | None = None
        try:
            value, end = _decode(buffer, pos)
            reach = end  # how far the value's text goes: the same whatever the reads (as below)
        except json.JSONDecodeError as exc:
            runs_on = exc.pos >= len(buffer) or exc.msg.startswith("Unterminated string")
            if runs_on and not eof and len(buffer) - pos <= MAX_VALUE_CHARS:
                need = max(need, 2 * (len(buffer) - pos))  # doubling: each value is decoded O(1) times
                fill()
                continue
            reach = len(buffer) + 1 if runs_on else exc.pos + 1
            error = f"{exc.msg} (line {start_line + buffer.count(chr(10), pos, exc.pos)})"
        if reach - pos > MAX_VALUE_CHARS:  # refused by its size whether or not it was read to its end
            error = f"a value larger than {MAX_VALUE_CHARS} characters"
        if error is None:
            yield _Value(start_line, start_col, value, doc=buffer, start=pos, end=end, begin=line_start)
            newlines = buffer.count("\n", pos, end)
            if newlines:
                line += newlines
                line_start = buffer.rfind("\n", pos, end) + 1
            pos = end
            need = 0
            continue
        yield _Value(start_line, start_col, error=error, doc=buffer, start=pos, begin=line_start)
        need = 0
        # resume at the next line that starts a value
        while True:
            newline = buffer.find("\n", pos)
            if newline == -1:
                pos = len(buffer)  # the rest of the line is skipped: not kept
                if eof:
                    break
                fill()
                continue
            line += 1
            pos = line_start = newline + 1
            while pos >= len(buffer) and not eof:
                fill()
            if pos >= len(buffer) or buffer[pos] in "{[":
                break


def _line_at(buffer: str, pos: int, width: int = 4096) -> str:
    end = buffer.find("\n", pos, pos + width)
    return buffer[pos : end if end != -1 else pos + width].rstrip("\r")


# OpenTelemetry: OTLP/JSON (`resourceSpans`, as the collector's file exporter writes it, one
# document per line) and the Python SDK's `span.to_json()` (ConsoleSpanExporter).


def _otlp_value(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "intValue", "doubleValue", "boolValue"):
        if key in value:
            return value[key]
    return None


def _span_attributes(span: Mapping[str, Any]) -> dict[str, Any]:
    attributes = span.get("attributes")
    if isinstance(attributes, list):  # OTLP: [{"key": …, "value": {"intValue": "12"}}]
        return {str(a.get("key")): _otlp_value(a.get("value")) for a in attributes if isinstance(a, dict)}
    return dict(attributes) if isinstance(attributes, dict) else {}


def _span_time(span: Mapping[str, Any], nano: str, iso: str) -> Any:
    if nano in span:
        return whole_number(span[nano], nano, "nanoseconds since the epoch") / 1e9
    return span.get(iso)


_OTEL_PROVIDERS = {
    "anthropic": "anthropic",
    "openai": "openai",
    "gcp.gemini": "gemini",
    "gemini": "gemini",
    "aws.bedrock": "bedrock",
    "gcp.vertex_ai": "anthropic-vertex",
}
_PROVIDER_SHAPES = {
    "anthropic": "anthropic",
    "openai": "openai",
    "gemini": "gemini",
    "bedrock": "bedrock",
    "anthropic-vertex": "anthropic-vertex",
}
#: `promptc.usage.cache_creation.<ttl>.input_tokens`: the writes of one TTL
_TTL_WRITES = TTL_WRITES_ATTRIBUTE.split("{ttl}")
#: a record's fields → the span attribute each is read from (a bad value is named as the span writes it)
_SPAN_FIELDS = {
    "prompt": "promptc.prompt",
    "artifact_sha256": "promptc.artifact_sha256",
    "prefix_sha256": "promptc.prefix_sha256",
    "shape": "promptc.shape",
    "provider": "gen_ai.provider.name",
    "model": "gen_ai.request.model",
    "response_model": "gen_ai.response.model",
    "input_tokens": "gen_ai.usage.input_tokens",
    "cache_read_input_tokens": "gen_ai.usage.cache_read.input_tokens",
    "cache_creation_input_tokens": "gen_ai.usage.cache_creation.input_tokens",
    "cache_creation_by_ttl": TTL_WRITES_ATTRIBUTE,
    "output_tokens": "gen_ai.usage.output_tokens",
    "cache_miss_reason": "promptc.cache_miss_reason",
    "cache_missed_input_tokens": "promptc.cache_missed_input_tokens",
}


def record_of_span(span: Mapping[str, Any]) -> UsageRecord | None:
    """The usage record an OpenTelemetry span carries (the attributes `Rendered.usage(otel=True)`
    sets), or None for a span without `promptc.prompt`. UsageError names a bad value's field as
    the span writes it (`endTimeUnixNano`, `gen_ai.usage.input_tokens`)."""
    attributes = _span_attributes(span)
    prompt = attributes.get("promptc.prompt")
    if prompt is None:
        return None
    name = attributes.get("gen_ai.provider.name")
    provider = _OTEL_PROVIDERS.get(name) if isinstance(name, str) else None
    shape = attributes.get("promptc.shape") or _PROVIDER_SHAPES.get(provider or "")
    end = _span_time(span, "endTimeUnixNano", "end_time")
    start = _span_time(span, "startTimeUnixNano", "start_time")
    if end is None:
        raise UsageError("a span without an end time", "endTimeUnixNano")
    try:
        return UsageRecord.from_json(
            {
                "schema": USAGE_SCHEMA,
                "prompt": prompt,
                "artifact_sha256": attributes.get("promptc.artifact_sha256"),
                "prefix_sha256": attributes.get("promptc.prefix_sha256"),
                "shape": shape,
                "provider": provider,
                "model": attributes.get("gen_ai.request.model"),
                "response_model": attributes.get("gen_ai.response.model"),
                "started_at": start,
                "timestamp": end,
                "input_tokens": attributes.get("gen_ai.usage.input_tokens"),
                "cache_read_input_tokens": attributes.get("gen_ai.usage.cache_read.input_tokens") or 0,
                "cache_creation_input_tokens": attributes.get("gen_ai.usage.cache_creation.input_tokens"),
                "cache_creation_by_ttl": {
                    key[len(_TTL_WRITES[0]) : -len(_TTL_WRITES[1])]: value
                    for key, value in attributes.items()
                    if key.startswith(_TTL_WRITES[0]) and key.endswith(_TTL_WRITES[1])
                },
                "output_tokens": attributes.get("gen_ai.usage.output_tokens"),
                "cache_miss_reason": attributes.get("promptc.cache_miss_reason"),
                "cache_missed_input_tokens": attributes.get("promptc.cache_missed_input_tokens"),
            }
        )
    except UsageError as exc:
        times = {"started_at": ("startTimeUnixNano", "start_time"), "timestamp": ("endTimeUnixNano", "end_time")}
        if exc.field in times:
            nano, iso = times[exc.field]
            raise UsageError(exc.reason, nano if nano in span else iso) from None
        raise UsageError(exc.reason, _SPAN_FIELDS.get(exc.field or "", exc.field)) from None


def _listed(value: Any, what: str) -> list[Any]:
    """The list an OTLP export holds under `what` (none: empty); UsageError for anything else."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise UsageError(f"{what}: expected a list, got {shown(value)}")
    return value


def _spans(document: Mapping[str, Any]) -> Iterator[Any]:
    for resource in _listed(document.get("resourceSpans"), "resourceSpans"):
        if not isinstance(resource, dict):
            raise UsageError(f"resourceSpans: expected objects, got {shown(resource)}")
        for scope in _listed(resource.get("scopeSpans"), "scopeSpans"):
            if not isinstance(scope, dict):
                raise UsageError(f"scopeSpans: expected objects, got {shown(scope)}")
            yield from _listed(scope.get("spans"), "spans")


def _records_in(value: Any) -> Iterator[UsageRecord | UsageError | None]:
    """What a decoded value holds, in order: a record, a UsageError for a record or span that is
    none (it is skipped, the others are read), None for a span without promptc's attributes."""
    items = value if isinstance(value, list) else [value]  # a document of records or spans (one level)
    odd = next((i for i, item in enumerate(items) if not isinstance(item, dict)), -1)
    if odd != -1:  # no document of records: one warning for it, not one per item
        inside = " in a list" if isinstance(value, list) else ""
        yield UsageError(f"expected a usage record or an OpenTelemetry span, got {_kind(items[odd])}{inside}")
        return
    for item in items:
        try:
            if item.get("schema") == USAGE_SCHEMA:
                yield UsageRecord.from_json(item)
            elif "resourceSpans" in item:
                for span in _spans(item):  # one bad span is skipped, not its document
                    try:
                        yield record_of_span(span) if isinstance(span, dict) else None
                    except UsageError as exc:
                        yield exc
            elif "attributes" in item and ("name" in item or "context" in item or "traceId" in item):
                yield record_of_span(item)
            elif "schema" in item:
                raise UsageError(f"schema: expected {USAGE_SCHEMA!r}, got {shown(item.get('schema'))}")
            else:
                raise UsageError("expected a usage record (`schema`: promptc.usage/1) or an OpenTelemetry span export")
        except UsageError as exc:
            yield exc


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float | Decimal):
        return "a number"
    return "a string" if isinstance(value, str) else type(value).__name__


@dataclass
class ReadStats:
    records: int = 0
    #: spans without promptc attributes (other instrumentation's)
    other_spans: int = 0
    skipped: int = 0
    #: the first MAX_DIAGNOSTICS diagnostics
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: every diagnostic counted by its code, the ones not kept too
    warnings: dict[str, int] = field(default_factory=dict)

    def report(self, diagnostic: Diagnostic, *, skipped: bool = True) -> None:
        self.skipped += skipped
        self.warnings[diagnostic.code] = self.warnings.get(diagnostic.code, 0) + 1
        if len(self.diagnostics) < MAX_DIAGNOSTICS:
            self.diagnostics.append(diagnostic)

    def hidden(self) -> str | None:
        """`15 more warnings not shown (W951: 5, W953: 10)` when there are diagnostics not kept."""
        more = sum(self.warnings.values()) - len(self.diagnostics)
        if more <= 0:
            return None
        shown_codes = dict.fromkeys(self.warnings, 0)
        for d in self.diagnostics:
            shown_codes[d.code] += 1
        by_code = ", ".join(
            f"{code}: {self.warnings[code] - shown_codes[code]}"
            for code in sorted(self.warnings)
            if self.warnings[code] > shown_codes[code]
        )
        return f"{more} more warnings not shown ({by_code})"


def records_problem(path: str) -> Diagnostic | None:
    """E950 when `path` is no readable file of records (the caller exits 2), else None."""
    target = Path(path)
    if target.is_file():
        try:
            with target.open("rb"):
                return None
        except OSError as exc:
            reason = exc.strerror or str(exc)
    else:
        reason = "no such file" if not target.exists() else "not a file"

    return make(
        codes.RECORDS_UNREADABLE,
        f"cannot read the usage records: {reason}",
        file_span(),
        "write records with `rendered.usage(response, to='usage.jsonl')`, or export spans as OTLP JSON",
        path=path,
    )


def _chunks(path: Path, size: int) -> Iterator[bytes]:
    with path.open("rb") as handle:
        while chunk := handle.read(size):
            yield chunk


def read_records(
    path: str | Path, stats: ReadStats, *, display: str | None = None, chunk_size: int = _CHUNK
) -> Iterator[tuple[int, UsageRecord]]:
    """(line, record) for every usage record of the file, streamed in reads of `chunk_size` bytes
    (the records are the same whatever the size). A value that is no record is a W951 diagnostic
    on `stats`, a record with a bad field a W953 (both skipped); a file that cannot be opened
    raises OSError (the caller's E950)."""
    shown_path = display or str(path)
    for item in _values(_chunks(Path(path), chunk_size)):
        if item.error is not None:
            text = item.text()
            stats.report(
                make(
                    codes.MALFORMED_RECORD,
                    f"not a JSON value: {item.error}",
                    Span(0, max(1, min(len(text or ""), 80)), item.line, item.column),
                    "each line of a usage log is one JSON record; the line is skipped",
                    path=shown_path,
                    source_line=text,
                ),
                skipped=not item.notice,
            )
            continue
        for found in _records_in(item.value):
            if isinstance(found, UsageRecord):
                stats.records += 1
                yield item.line, found
            elif found is None:
                stats.other_spans += 1
            elif found.field is None:
                text = item.text()
                stats.report(
                    make(
                        codes.MALFORMED_RECORD,
                        f"not a usage record: {found}",
                        Span(0, max(1, min(len(text or ""), 80)), item.line, item.column),
                        "records are what `Rendered.usage(...)` writes (promptc.usage/1), or OpenTelemetry spans",
                        path=shown_path,
                        source_line=text,
                    )
                )
            else:
                # a plain record: point at its field (in a document of spans or records, the first
                # occurrence of a name may be another item's, so the document's start it is)
                plain = isinstance(item.value, dict) and item.value.get("schema") == USAGE_SCHEMA
                line, column, width, text = (
                    item.place(found.field) if plain else (item.line, item.column, 1, item.text())
                )
                stats.report(
                    make(
                        codes.BAD_RECORD_VALUE,
                        f"usage record skipped: `{found.field}`: {found.reason}",
                        Span(0, width, line, column),
                        _VALUE_HINT,
                        path=shown_path,
                        source_line=text,
                    )
                )


_VALUE_HINT = (
    "a count is a whole number from 0 to 2^63-1 (OTLP JSON: a string of ASCII digits), a timestamp an ISO 8601 "
    "date and time with a zone or epoch seconds, in the years 1 to 9999; the record is skipped, the others are read"
)


# ---------------------------------------------------------------------------------------------
# The build's side


@dataclass(frozen=True, slots=True)
class Where:
    """A place in the sources: `source` as diagnostics show it (`prompts_src/helpdesk/agent.prompt`)."""

    source: str
    line: int
    column: int = 1
    text: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "line": self.line, "column": self.column, "text": self.text}

    def label(self) -> str:
        return f"{self.source}:{self.line}"


class Locator:
    """Where a cause is written. The base class knows only what the artifacts say (where the
    prefix ends); `SourceLocator` compiles the sources for parameter lines, token offsets and
    the first difference since a revision."""

    def __init__(self, root: str = "") -> None:
        #: how the source folder is shown (`prompts_src/`)
        self.root = root

    def prefix_end(self, artifact: Artifact) -> Where | None:
        end = artifact.cache.prefix_end
        if end is None or end.source is None or end.line is None:
            return None
        source = end.source if end.source.startswith("<") else self.root + end.source
        return Where(source, end.line, end.column or 1)

    def param(self, artifact: Artifact, key: str) -> Where | None:
        return None

    def ttl(self, artifact: Artifact) -> Where | None:
        return None

    def tokens(self, artifact: Artifact, offset: int) -> Where | None:
        return None

    def level(self, artifact: Artifact, level: str) -> Where | None:
        """Where the request's first part at `level` (`system`, `messages`, `tools`) is written."""
        return None

    def bust(self, artifact: Artifact) -> Where | None:
        return None


@dataclass
class _Entry:
    """One cache entry's timeline: when it was last used, when its current warm period's first
    write finished."""

    last_end: float = float("-inf")
    warm_end: float = float("-inf")
    seen: bool = False


@dataclass
class _Cause:
    requests: int = 0
    missed: int = 0
    lost: Decimal = Decimal(0)
    first_line: int | None = None
    #: the largest gap (expired), the most at once (concurrent), the smallest read (dynamic)
    extreme: float | None = None
    models: set[str] = field(default_factory=set)
    prefixes: set[str] = field(default_factory=set)
    #: the providers' reasons its records carry (`cache_miss_reason`), and how many of them
    reasons: dict[str, int] = field(default_factory=dict)
    #: the records classified by the provider's diagnosis rather than by the timeline
    diagnosed: int = 0


@dataclass
class PromptResult:
    name: str
    artifact: Artifact | None
    requests: int = 0
    predicted: int = 0
    cached: int = 0
    input_tokens: int = 0
    cache_written: int = 0
    output_tokens: int = 0
    lost: Decimal = Decimal(0)
    kinds: dict[str, int] = field(default_factory=dict)
    causes: dict[str, _Cause] = field(default_factory=dict)
    #: where each cause is written, filled after the pass
    where: dict[str, Where | None] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)

    @property
    def hit_ratio(self) -> Decimal | None:
        if self.predicted <= 0:
            return None
        return Decimal(self.cached) / Decimal(self.predicted)

    @property
    def source(self) -> str | None:
        return None if self.artifact is None else self.artifact.source


def _ratio_text(value: Decimal | None) -> str | None:
    return None if value is None else f"{value.quantize(Decimal('0.0001')):f}"


@dataclass
class Reconciliation:
    prompts: dict[str, PromptResult]
    stats: ReadStats
    table_label: str
    records_path: str = ""
    against: str | None = None
    #: model → (why the price table does not price it, a prompt sent to it): W948
    unpriced: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def requests(self) -> int:
        return sum(p.requests for p in self.prompts.values())

    def total(self, name: str) -> int:
        return sum(getattr(p, name) for p in self.prompts.values())

    @property
    def lost(self) -> Decimal:
        return sum((p.lost for p in self.prompts.values()), Decimal(0))

    @property
    def hit_ratio(self) -> Decimal | None:
        predicted = self.total("predicted")
        return None if predicted <= 0 else Decimal(self.total("cached")) / predicted

    def failing(self, fail_on: Iterable[FailOn]) -> list[str]:
        out = []
        for rule in fail_on:
            if rule.kind == "hit":
                low = [p.name for p in self.prompts.values() if p.hit_ratio is not None and p.hit_ratio < rule.value]
                if low:
                    out.append(f"{rule} ({', '.join(sorted(low))})")
            elif self.lost > rule.value:
                out.append(str(rule))
        return out

    def to_json(self) -> dict[str, Any]:
        prompts = []
        for p in sorted(self.prompts.values(), key=lambda r: r.name):
            causes = []
            for kind in CAUSES:
                cause = p.causes.get(kind)
                if cause is None:
                    continue
                where = p.where.get(kind)
                causes.append(
                    {
                        "cause": kind,
                        "requests": cause.requests,
                        "missed_tokens": cause.missed,
                        "lost": money(cause.lost),
                        "detail": p.details.get(kind),
                        "where": None if where is None else where.to_json(),
                        "first_record_line": cause.first_line,
                        "provider_reasons": dict(sorted(cause.reasons.items())),
                    }
                )
            prompts.append(
                {
                    "name": p.name,
                    "source": p.source,
                    "in_build": p.artifact is not None,
                    "model": None if p.artifact is None else p.artifact.model,
                    "requests": p.requests,
                    "predicted_cacheable_tokens": p.predicted,
                    "observed_cached_tokens": p.cached,
                    "hit_ratio": _ratio_text(p.hit_ratio),
                    "input_tokens": p.input_tokens,
                    "cache_creation_input_tokens": p.cache_written,
                    "output_tokens": p.output_tokens,
                    "lost": money(p.lost),
                    "kinds": {kind: p.kinds[kind] for kind in KINDS if kind in p.kinds},
                    "causes": causes,
                }
            )
        return {
            "records": self.records_path,
            "against": self.against,
            "prices": self.table_label,
            "summary": {
                "records": self.stats.records,
                "skipped": self.stats.skipped,
                "warnings": dict(sorted(self.stats.warnings.items())),
                "other_spans": self.stats.other_spans,
                "requests": self.requests,
                "predicted_cacheable_tokens": self.total("predicted"),
                "observed_cached_tokens": self.total("cached"),
                "hit_ratio": _ratio_text(self.hit_ratio),
                "input_tokens": self.total("input_tokens"),
                "cache_creation_input_tokens": self.total("cache_written"),
                "output_tokens": self.total("output_tokens"),
                "lost": money(self.lost),
            },
            "prompts": prompts,
        }


# ---------------------------------------------------------------------------------------------
# `--fail-on hit<0.6`, `--fail-on lost>5`


@dataclass(frozen=True, slots=True)
class FailOn:
    kind: str  # "hit" | "lost"
    value: Decimal

    def __str__(self) -> str:
        if self.kind == "hit":
            return f"hit<{self.value.normalize():f}"

        return f"lost>{money(self.value)}"


def parse_fail_on(text: str) -> FailOn:
    """`hit<0.6` (or `hit<60%`): a prompt's hit ratio below it; `lost>5` (dollars, `$` allowed):
    the money lost against the prediction above it. Raises ValueError otherwise."""
    value = text.strip().replace(" ", "")
    for kind, op in (("hit", "<"), ("lost", ">")):
        if value.startswith(kind):
            rest = value[len(kind) :]
            if not rest.startswith(op):
                raise ValueError(f"expected {kind}{op}NUMBER, got {text!r}")
            number = rest[1:].removeprefix("$")
            percent = kind == "hit" and number.endswith("%")
            try:
                amount = Decimal(number.removesuffix("%"))
            except InvalidOperation:
                raise ValueError(f"{number!r} is not a number (e.g. hit<0.6, hit<60%, lost>5)") from None
            if not amount.is_finite() or amount < 0:
                raise ValueError(f"the number in {text!r} must be ≥ 0")
            if percent:
                amount /= 100
            if kind == "hit" and amount > 1:
                raise ValueError(f"a hit ratio is between 0 and 1 (or 0% and 100%), got {text!r}")
            return FailOn(kind, amount)
    raise ValueError(f"expected hit<RATIO or lost>DOLLARS, got {text!r}")


# ---------------------------------------------------------------------------------------------
# The pass


@dataclass(frozen=True, slots=True)
class _Facts:
    """What the classification needs of one prompt of the build."""

    artifact: Artifact
    predicted: int
    prefix: str | None
    provider: str | None
    model: str | None  # as the provider resolves it (cache.key.model)
    minimum: int | None
    #: how long an entry lives unused (`expired` past it), and its name (`5m`, `1h`, `24h`)
    ttl_seconds: float
    price: Price | None
    #: the TTL whose write price a write pays
    ttl_name: str | None
    lifetime: str = "5m"


def _facts(artifact: Artifact, table: PriceTable) -> _Facts:
    provider = None if artifact.provider is None else artifact.provider.name
    # the TTL the build asked for, named as today's price row names it (each record is priced at its own moment)
    found = table.lookup(provider, artifact.model, None, artifact.totals.tokens)
    price = found if isinstance(found, Price) else None
    wanted = artifact.cache.ttl if artifact.cache.ttl not in (None, "none") else None
    ttl_name = price.ttl(wanted) if price is not None else (wanted or "5m")
    seconds, lifetime = _lifetime(artifact, wanted, ttl_name, table)
    key_model = artifact.cache.key.model if artifact.cache.key is not None else artifact.model
    return _Facts(
        artifact,
        artifact.cache.cacheable_tokens or 0,
        artifact.cache.prefix_sha256,
        provider,
        key_model,
        None if artifact.provider is None else artifact.provider.min_cacheable_tokens,
        seconds,
        price,
        ttl_name,
        lifetime,
    )


def _lifetime(artifact: Artifact, wanted: str | None, priced: str, table: PriceTable) -> tuple[float, str]:
    """How long a cache entry of the artifact's requests lives unused, in seconds, and its name: the
    lifetime the requests carry, as the request side's facts (providers.json) say the shape sends
    it — the TTL the build asked for (its model offers it: E710), else the model's default marker
    TTL (Claude `5m`, OpenAI GPT-5.6 `30m`: the lifetime a breakpoint is kept at least), else the
    retention the model requires (`prompt_cache_retention: "24h"` for gpt-5.5) — and for a model
    without any, its price row's first TTL (`5m` before GPT-5.6). Not the TTL its writes are priced
    at: a row without a price for the TTL asked for prices them at its default."""
    profile = resolve(artifact.provider.name, artifact.model) if artifact.provider is not None else None
    carried = [wanted, *(profile.cache_ttls[:1] if profile else ()), profile.cache_retention if profile else None]
    name = next((ttl for ttl in carried if ttl in table.ttl_seconds), priced)
    return float(table.ttl_seconds.get(name, 300)), name


def _cost(
    price: Price | None, ttl: str | None, total: int, read: int, written: int, by_ttl: Mapping[str, int] | None = None
) -> Decimal:
    """What a request of `total` input tokens costs with `read` of them read from the cache and
    `written` written to it (promptc.tools.cost's rates): the writes the provider splits by TTL
    (`by_ttl`, a record's `cache_creation_by_ttl`) each at its TTL's write price, the rest at `ttl`'s
    (a TTL the price row has no price for: the row's default)."""
    if price is None:
        return Decimal(0)
    rate_in = price.input
    rate_read = price.read_rate
    plain = max(0, total - read - written)
    if price.cache_read is None:
        writes = written * rate_in
    else:
        split = by_ttl or {}
        rest = max(0, written - sum(split.values()))
        writes = sum(
            (tokens * price.write(price.ttl(name)) for name, tokens in split.items()),
            rest * price.write(price.ttl(ttl)),
        )
    return (plain * rate_in + read * rate_read + writes) / _MTOK


def reconcile(
    records: Iterable[tuple[int, UsageRecord]],
    artifacts: Mapping[str, Artifact],
    stats: ReadStats,
    *,
    old_prefixes: Mapping[str, str | None] | None = None,
    against: str | None = None,
    locator: Locator | None = None,
    table: PriceTable | None = None,
    window: float = 5.0,
    horizon: float = 600.0,
    records_path: str = "",
    observe: Callable[[int, str, str], Any] | None = None,
) -> Reconciliation:
    """Classify every record against `artifacts` (the current build's, by prompt name). See the
    module docstring; `old_prefixes` are the prefix hashes of revision `against`, by prompt.
    `observe(line, prompt, kind)` is called with each record's classification."""
    table = table or prices()
    locator = locator or Locator()
    facts = {name: _facts(artifact, table) for name, artifact in artifacts.items()}
    results: dict[str, PromptResult] = {}
    entries: dict[tuple[str | None, str | None, str | None], _Entry] = {}
    #: model → (why the table does not price it, a prompt sent to it): W948
    unpriced: dict[str, tuple[str, str]] = {}

    def classify(line: int, record: UsageRecord, start: float, end: float) -> None:
        if observe is None:
            _classify(line, record, start, end)
            return
        result = results.get(record.prompt)
        before = dict(result.kinds) if result is not None else {}
        _classify(line, record, start, end)
        after = results[record.prompt].kinds
        kind = next(k for k in after if after[k] != before.get(k, 0))
        observe(line, record.prompt, kind)

    def _classify(line: int, record: UsageRecord, start: float, end: float) -> None:
        fact = facts.get(record.prompt)
        result = results.get(record.prompt)
        if result is None:
            result = results[record.prompt] = PromptResult(record.prompt, None if fact is None else fact.artifact)
        total, read = record.input_tokens, record.cache_read_input_tokens
        written = record.cache_creation_input_tokens or 0
        result.requests += 1
        result.input_tokens += total
        result.cached += read
        result.cache_written += record.cache_creation_input_tokens or 0
        result.output_tokens += record.output_tokens or 0
        why = record.cache_miss_reason  # the provider's diagnosis of a miss, when the request asked for one
        if fact is None:
            _add(result, "stale", line, 0, Decimal(0), prefix=record.prefix_sha256 or "", reason=why)
            return
        predicted = min(fact.predicted, total)
        result.predicted += predicted
        model = resolve_model(record.provider, record.model)
        key = (record.provider, model, record.prefix_sha256)
        entry = entries.setdefault(key, _Entry())
        # each record at the price in force at its own moment, in the size band of its prompt
        found = table.lookup(fact.provider, fact.artifact.model, end, total)
        price = found if isinstance(found, Price) else None
        if isinstance(found, Unpriced) and found.model is not None:
            unpriced.setdefault(found.model, (found.reason, record.prompt))
        observed = _cost(price, fact.ttl_name, total, read, written, record.cache_creation_by_ttl)

        def lost(expected_write: bool) -> Decimal:
            if expected_write:
                expected = _cost(price, fact.ttl_name, total, 0, predicted)
            else:
                expected = _cost(price, fact.ttl_name, total, predicted, 0)
            return max(Decimal(0), observed - expected)

        def refresh(new_period: bool) -> None:
            if new_period:
                entry.warm_end = end
            entry.last_end = max(entry.last_end, end)
            entry.seen = True

        missed = max(0, predicted - read)
        if record.provider != fact.provider or (fact.model is not None and model != fact.model):
            _add(result, "model", line, missed, lost(False), model=f"{record.model} ({record.provider})", reason=why)
            refresh(not entry.seen or start - entry.last_end > fact.ttl_seconds)
            return
        if record.prefix_sha256 != fact.prefix:
            old = (old_prefixes or {}).get(record.prompt)
            kind = "bust" if old is not None and record.prefix_sha256 == old else "stale"
            _add(result, kind, line, missed, lost(False), prefix=record.prefix_sha256 or "", reason=why)
            refresh(not entry.seen or start - entry.last_end > fact.ttl_seconds)
            return
        if fact.predicted <= 0:
            minimum = fact.minimum
            below = minimum is not None and fact.artifact.cache.prefix_tokens < minimum
            _add(result, "below-minimum" if below else "not-cached", line, 0, Decimal(0), reason=why)
            return
        if _full_hit(record, read, written, predicted, fact.artifact.tokenizer.exact):
            result.kinds["hit"] = result.kinds.get("hit", 0) + 1
            refresh(not entry.seen or start - entry.last_end > fact.ttl_seconds)
            return
        provider_below = (record.shape in MARKER_SHAPES and read == 0 and written == 0) or (
            fact.minimum is not None and total < fact.minimum
        )
        if provider_below:
            _add(result, "below-minimum", line, missed, lost(False), reason=why)
            return
        if not entry.seen:
            result.kinds["first-write"] = result.kinds.get("first-write", 0) + 1
            result.lost += lost(True)
            refresh(True)
            return
        if why is not None and why not in UNDIAGNOSED:  # the provider names what changed: that is the cause
            kind = "model" if why == "model_changed" else "dynamic"
            extreme = float(read) if kind == "dynamic" else None
            _add(result, kind, line, missed, lost(False), extreme=extreme, reason=why, diagnosed=True)
            entry.last_end = max(entry.last_end, end)
            return
        gap = start - entry.last_end
        if gap > fact.ttl_seconds:
            _add(result, "expired", line, missed, lost(False), extreme=gap, reason=why)
            refresh(True)
            return
        if start < entry.warm_end:
            _add(result, "concurrent", line, missed, lost(False), extreme=entry.warm_end - start, reason=why)
            entry.last_end = max(entry.last_end, end)
            return
        _add(result, "dynamic", line, missed, lost(False), extreme=float(read), reason=why)
        entry.last_end = max(entry.last_end, end)

    # the reorder buffer: records come out by start time once no earlier one can still arrive
    heap: list[tuple[float, int, int, UsageRecord, float]] = []
    latest = float("-inf")
    order = 0
    for line, record in records:
        end = parse_timestamp(record.timestamp)
        start = parse_timestamp(record.started_at) if record.started_at is not None else end - window
        start = min(start, end)
        heapq.heappush(heap, (start, order, line, record, end))
        order += 1
        latest = max(latest, start)
        while heap and heap[0][0] < latest - horizon:
            s, _, ln, rec, e = heapq.heappop(heap)
            classify(ln, rec, s, e)
    while heap:
        s, _, ln, rec, e = heapq.heappop(heap)
        classify(ln, rec, s, e)

    for result in results.values():
        _explain(result, facts.get(result.name), locator, against)
    return Reconciliation(results, stats, table.label, records_path, against, unpriced)


#: with an estimated tokenizer, a read this close to the prediction is the whole prefix
ESTIMATE_TOLERANCE = Decimal("0.9")


def _full_hit(record: UsageRecord, read: int, written: int, predicted: int, exact: bool) -> bool:
    """The provider served the whole predicted prefix from its cache. Anthropic reports reads up
    to a breakpoint: something read and nothing written is a hit of every marker, whatever its own
    count of the tokens (promptc's count for Claude is an estimate). Elsewhere the read must reach
    the prediction; with an estimated count (Gemini), 90 % of it."""
    if record.shape in MARKER_SHAPES:
        return read > 0 and written == 0 or read >= predicted
    if exact:
        return read >= predicted
    return read >= predicted * ESTIMATE_TOLERANCE


def _add(
    result: PromptResult,
    kind: str,
    line: int,
    missed: int,
    lost: Decimal,
    *,
    extreme: float | None = None,
    model: str | None = None,
    prefix: str | None = None,
    reason: str | None = None,
    diagnosed: bool = False,
) -> None:
    result.kinds[kind] = result.kinds.get(kind, 0) + 1
    cause = result.causes.get(kind)
    if cause is None:
        cause = result.causes[kind] = _Cause(first_line=line)
    cause.requests += 1
    cause.diagnosed += diagnosed
    if reason is not None and (reason in cause.reasons or len(cause.reasons) < MAX_REASONS):
        cause.reasons[reason] = cause.reasons.get(reason, 0) + 1
    cause.missed += missed
    cause.lost += lost
    result.lost += lost
    if extreme is not None:
        if kind == "dynamic":
            cause.extreme = extreme if cause.extreme is None else min(cause.extreme, extreme)
        else:
            cause.extreme = extreme if cause.extreme is None else max(cause.extreme, extreme)
    if model is not None and len(cause.models) < 5:
        cause.models.add(model)
    if prefix is not None and len(cause.prefixes) < 5:
        cause.prefixes.add(prefix)


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _explain(result: PromptResult, fact: _Facts | None, locator: Locator, against: str | None) -> None:
    """The detail and the source place of each of a prompt's causes."""
    if fact is None:  # a prompt the build does not have: its records are all `stale`
        for kind, cause in result.causes.items():
            result.details[kind] = (
                "the build has no prompt of this name (removed or renamed since the deploy that sent these)"
                + _diagnosis(cause)
            )
            result.where[kind] = None
        return
    artifact = fact.artifact
    for kind, cause in result.causes.items():
        where: Where | None = None
        if kind == "stale":
            shown = ", ".join(sorted(p[:12] + "…" for p in cause.prefixes if p)) or "none"
            detail = (
                f"prefix {shown} is not this build's ({(fact.prefix or 'none')[:12]}…): "
                "a deploy of another build sent these"
            )
        elif kind == "bust":
            detail = f"the prefix hash is the one at {against}: the change since {against} busts the cache"
            where = locator.bust(artifact)
        elif kind == "model":
            sent = ", ".join(sorted(cause.models))
            if cause.models:
                detail = f"sent to {sent}; the build's prefix is for {artifact.model} ({fact.provider}): another cache"
            else:  # every one diagnosed by the provider: the request before it went to another model
                detail = "the provider's diagnosis: the previous request went to another model, another cache"
            where = locator.param(artifact, "model")
        elif kind == "below-minimum":
            minimum = fact.minimum or 0
            tokens = artifact.cache.prefix_tokens
            if fact.predicted <= 0:
                detail = (
                    f"the prefix is {tokens} tokens, {max(0, minimum - tokens)} short of the minimum of {minimum} "
                    f"for {artifact.model} (W705): nothing is cached"
                )
            else:
                detail = (
                    f"the provider cached nothing although promptc counts {tokens} prefix tokens "
                    f"({artifact.tokenizer.name}{'' if artifact.tokenizer.exact else ', an estimate'}): by its own "
                    f"count the prefix is under its minimum of {minimum}"
                )
            where = locator.prefix_end(artifact)
        elif kind == "not-cached":
            detail = "the build predicts no cached tokens for this prompt (no stable prefix, or `cache_ttl: none`)"
            where = locator.prefix_end(artifact)
        elif kind == "expired":
            detail = (
                f"the entry's last use was up to {_duration(cause.extreme or 0)} before, longer than its "
                f"{fact.lifetime} TTL: the cache entry had expired (see `promptc cost --advise`)"
            )
            where = locator.ttl(artifact)
        elif kind == "concurrent":
            detail = (
                "started before the first write of the cache entry had finished (up to "
                f"{(cause.extreme or 0):.1f} s before): each wrote the entry again"
            )
        else:  # dynamic
            smallest = int(cause.extreme or 0)
            warm = " while the entry was warm" if cause.diagnosed < cause.requests else ""
            detail = (
                f"the provider read {smallest} of the {fact.predicted} predicted tokens{warm}: "
                "what was sent differs from the build's prefix there (text added or changed after rendering?)"
            )
            # the part of the request the provider's most frequent diagnosis names, else the token
            # where its read stopped
            levels = [DIAGNOSES[r][1] for r, _ in _reasons(cause) if r in DIAGNOSES and DIAGNOSES[r][1]]
            where = locator.level(artifact, str(levels[0])) if levels else None
            where = where or locator.tokens(artifact, smallest)
        result.details[kind] = detail + _diagnosis(cause)
        result.where[kind] = where


def _reasons(cause: _Cause) -> list[tuple[str, int]]:
    """A cause's provider reasons with their counts, the most frequent first."""
    return sorted(cause.reasons.items(), key=lambda item: (-item[1], item[0]))


def _diagnosis(cause: _Cause) -> str:
    """What the providers said of a cause's misses (its records' `cache_miss_reason`), to follow its
    detail: the diagnoses, most frequent first, then the reasons that diagnose nothing."""
    ordered = _reasons(cause)
    named = [
        f"{reason} ×{count}" + (f" ({DIAGNOSES[reason][0]})" if reason in DIAGNOSES else "")
        for reason, count in ordered
        if reason not in UNDIAGNOSED
    ]
    unnamed = [f"{reason} ×{count} ({UNDIAGNOSED[reason]})" for reason, count in ordered if reason in UNDIAGNOSED]
    text = ""
    if named:
        text += "; the provider's diagnosis: " + ", ".join(named)
    if unnamed:
        text += "; not diagnosed: " + ", ".join(unnamed)
    return text


# ---------------------------------------------------------------------------------------------
# Output


def render_text(rec: Reconciliation, *, color: bool = False) -> str:
    def dollars(value: Decimal) -> str:
        return "$" + money(value)

    def pct(value: Decimal | None) -> str:
        return "-" if value is None else f"{value * 100:.1f}%"

    lines = [
        f"reconcile: {rec.stats.records} records from {rec.records_path or 'the records'}"
        + (f" ({rec.stats.skipped} skipped)" if rec.stats.skipped else "")
        + f"; prices: {rec.table_label}"
    ]
    header = ["prompt", "requests", "predicted", "cached", "hit", "lost"]
    rows = [header]
    ordered = sorted(rec.prompts.values(), key=lambda p: p.name)
    for p in ordered:
        rows.append([p.name, str(p.requests), str(p.predicted), str(p.cached), pct(p.hit_ratio), dollars(p.lost)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for row in rows:
        lines.append(
            "  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row)).rstrip()
        )
    for p in ordered:
        for kind in CAUSES:
            cause = p.causes.get(kind)
            if cause is None:
                continue
            where = p.where.get(kind)
            head = f"  {p.name}: {kind}, {cause.requests} request{'s' if cause.requests != 1 else ''}"
            if cause.missed:
                head += f", {cause.missed} tokens missed"
            if cause.lost:
                head += f", {dollars(cause.lost)} lost"
            lines.append(head + (f" — {where.label()}" if where is not None else ""))
            lines.append(f"    {p.details.get(kind, '')}")
    lines.append(
        f"total: {rec.requests} requests, {rec.total('predicted')} tokens predicted cached, "
        f"{rec.total('cached')} cached ({pct(rec.hit_ratio)}), {dollars(rec.lost)} lost against the prediction"
    )
    return "\n".join(lines)


def render_github(rec: Reconciliation, failing: Iterable[str] = ()) -> list[str]:
    out = []
    for p in sorted(rec.prompts.values(), key=lambda r: r.name):
        for kind in CAUSES:
            cause = p.causes.get(kind)
            if cause is None:
                continue
            where = p.where.get(kind)
            level = "notice" if kind in ("not-cached",) else "warning"
            message = (
                f"{p.name}: {kind}, {cause.requests} request{'s' if cause.requests != 1 else ''}, "
                f"{cause.missed} tokens missed, "
                f"${money(cause.lost)} lost: {p.details.get(kind, '')}"
            )
            title = github_escape(f"promptc reconcile: {kind}", prop=True)
            if where is not None and not where.source.startswith("<"):
                props = (
                    f"file={github_escape(where.source, prop=True)},line={where.line},col={where.column},title={title}"
                )
            else:
                props = f"title={title}"
            out.append(f"::{level} {props}::{github_escape(message)}")
    for rule in failing:
        out.append(
            f"::error title={github_escape('promptc reconcile', prop=True)}::{github_escape(f'--fail-on {rule}')}"
        )
    return out


def location_of_tokens(
    compiled: Compilation, offset: int, count: Callable[[str], int]
) -> tuple[Span | None, int] | None:
    """The source span (and its character offset) of the `offset`-th token of a compiled prompt's
    request, in its provider's cache order: where a provider's cache read of `offset` tokens
    stopped. None when the offset is past the prefix."""
    doc, artifact = compiled.finished()
    request = requestmodel.of_artifact(artifact, param_spans=dict(doc.header.param_spans), pieces=_pieces(doc))
    before = 0
    for part in request.prefix().parts:
        if not part.content or not part.text:
            continue
        if before + part.tokens <= offset:
            before += part.tokens
            continue
        if part.kind != "block" or not part.pieces:
            return (None, 0)
        want = offset - before
        low, high = 0, len(part.text)
        while low < high:  # the shortest text holding more than `want` tokens
            mid = (low + high) // 2
            if count(part.text[:mid]) > want:
                high = mid
            else:
                low = mid + 1
        char = max(0, low - 1)
        for piece in part.pieces:
            if piece.span is not None and piece.offset <= char < piece.offset + piece.length:
                return (piece.span, char - piece.offset)
        first = next((p for p in part.pieces if p.span is not None), None)
        return None if first is None else (first.span, 0)
    return None


def iso(when: float) -> str:
    return iso_timestamp(when)


class SourceLocator(Locator):
    """A `Locator` that compiles the prompts it is asked about (in memory, from `tree`, a
    `SourceTree` of the source folder) and, for `bust`, the same prompt in `old_tree` (the
    revision's sources)."""

    def __init__(self, tree: SourceTree, config: Config, old_tree: SourceTree | None = None) -> None:
        root = tree.root_display.rstrip("/")
        super().__init__(root + "/" if root else "")
        self.tree, self.config, self.old_tree = tree, config, old_tree
        self._compiled: dict[tuple[str, bool], Compilation | None] = {}

    def _compile(self, artifact: Artifact, old: bool = False) -> Compilation | None:
        key = (artifact.source, old)
        if key not in self._compiled:
            tree = self.old_tree if old else self.tree
            self._compiled[key] = None if tree is None else prompt_in(tree, artifact.source, self.config)
        return self._compiled[key]

    @staticmethod
    def _where(span: Span | None, offset: int = 0) -> Where | None:
        if span is None or span.src is None:
            return None
        place = span.src.span(span.start + offset)
        return Where(span.src.path, place.line, place.col, span.src.line_text(place.line))

    def param(self, artifact: Artifact, key: str) -> Where | None:
        compiled = self._compile(artifact)
        if compiled is None:
            return None
        return self._where(dict(compiled.finished()[0].header.param_spans).get(key))

    def ttl(self, artifact: Artifact) -> Where | None:
        compiled = self._compile(artifact)
        return None if compiled is None else self._where(compiled.finished()[0].header.cache_ttl_span)

    def tokens(self, artifact: Artifact, offset: int) -> Where | None:
        compiled = self._compile(artifact)
        if compiled is None:
            return None
        built = compiled.finished()[1]
        found = location_of_tokens(compiled, offset, meter(built.tokenizer.name).tokens)
        if found is None:
            return None
        if found[0] is None:  # inside the tools or the output schema: their first file
            files = built.resources
            return Where(compiled.root + files[0], 1) if files else None
        return self._where(*found)

    def level(self, artifact: Artifact, level: str) -> Where | None:
        compiled = self._compile(artifact)
        if compiled is None:
            return None
        doc, built = compiled.finished()
        for part in requestmodel.of_artifact(built, pieces=_pieces(doc)).parts:
            if part.level != level or not part.content:
                continue
            if part.kind != "block":  # the tools: their first file
                return Where(compiled.root + built.resources[0], 1) if built.resources else None
            first = next((p for p in part.pieces if p.span is not None), None)
            if first is not None:
                return self._where(first.span)
        return None

    def bust(self, artifact: Artifact) -> Where | None:
        new, old = self._compile(artifact), self._compile(artifact, old=True)
        difference = first_difference(old, new)
        if difference is None or difference.new is None:
            return None
        point = difference.new
        return Where(point.source, point.line, point.column, point.text)


def reconcile_file(
    records: str | Path,
    build_dir: str | Path = "build",
    *,
    src: str | Path | None = None,
    config: Config | None = None,
    old_prefixes: Mapping[str, str | None] | None = None,
    against: str | None = None,
    old_tree: SourceTree | None = None,
    window: float = 5.0,
    horizon: float = 600.0,
) -> Reconciliation:
    """The library's `promptc reconcile`: the records file against the build folder `build_dir`,
    with causes located in the source folder `src` when given (and, with `old_tree`, a
    `SourceTree` of revision `against`, the line a bust changed). Raises OSError when the
    records cannot be read and `ValueError` for a build folder without a readable manifest;
    malformed records are diagnostics on the result's `stats`."""
    folder = Path(build_dir)
    try:
        manifest = BuildFolder(folder).manifest
    except BuildFolderError as exc:
        raise ValueError(f"{folder}: no readable {MANIFEST} ({exc})") from None
    _, artifacts = facts_of_build(manifest, folder)
    locator: Locator = Locator()
    if src is not None and Path(src).is_dir():
        tree, _ = read_tree(Path(src), folder)
        locator = SourceLocator(tree, config or Config(src=str(src)), old_tree)
    stats = ReadStats()
    problem = records_problem(str(records))
    if problem is not None:
        raise OSError(problem.message)
    return reconcile(
        read_records(records, stats),
        artifacts,
        stats,
        old_prefixes=old_prefixes,
        against=against,
        locator=locator,
        window=window,
        horizon=horizon,
        records_path=str(records),
    )
