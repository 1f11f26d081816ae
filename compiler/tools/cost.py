"""What a prompt costs with and without its cache, per request and per day, and what a change costs.

The prices live in one data file shipped with the package, `promptc/data/prices.json`: per model
(a model-name prefix, the longest that matches wins, as in `profiles`), base input, cache write
per TTL and cache read, in US dollars per million tokens, each entry with the page it was read
from and the date. Money is `decimal.Decimal` from end to end and leaves this module as a decimal
string of whole micro-dollars (`"0.001234"`): never a float. Every figure carries the price table
it came from (`PriceTable.label`).

The model (docs/cost.md has the reasoning):

- a request's input is `T` tokens (the artifact's `totals.tokens`: dynamic parts at their template
  size), of which the provider caches `C` (`cache.cacheable_tokens`);
- one cache per prefix: prompts with the same model and the same prefix hash share one entry, and
  their traffic adds up;
- steady traffic: `R` requests a day, evenly spaced; an entry lives for its TTL and each hit
  refreshes it. If requests come at least once per TTL (86400 / R <= TTL) the entry stays warm: it
  is written once a day and read by every other request. Otherwise every request writes it;
- a deploy that changes a prefix needs each new cache entry written once: the first request after
  the deploy pays the write instead of a read. That extra, over the new steady state, is the
  deploy cost.

Pure data in, data out; reading files is the caller's (`read_traffic` is the one exception: it
reads the traffic file and returns located diagnostics, never raises).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import field, replace
from dataclasses import replace as copy
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..backend.meter import meter
from ..facts import codes
from ..facts.diagnostics import Diagnostic, make
from ..facts.profiles import provider_of_model, resolve, resolve_model
from ..facts.records import dataclass
from ..facts.suggest import did_you_mean
from ..runtime.buildfolder import BuildFolder
from ..runtime.model import Artifact, Manifest
from ..runtime.requestmodel import of_artifact
from ..runtime.template import scan
from ..syntax.jsonfile import locate, read_json, token_length
from ..syntax.source import decode
from .divergence import prompt_in
from .fmt import DIRECTIVE_ORDER, _classify, _directive

__all__ = [
    "COST_SCHEMA",
    "FailOnCost",
    "Price",
    "PriceTable",
    "PromptCost",
    "PromptFacts",
    "TreeCost",
    "DiffCost",
    "diff_cost",
    "facts_from_artifact",
    "facts_of_build",
    "money",
    "parse_fail_on_cost",
    "prices",
    "read_traffic",
    "tree_cost",
]

COST_SCHEMA = "promptc.cost/1"
SECONDS_PER_DAY = Decimal(86400)
MTOK = Decimal(1_000_000)
_MICRO = Decimal("0.000001")


def money(value: Decimal) -> str:
    """Dollars as a decimal string of whole micro-dollars: `"0.001234"`, `"-0.500000"`."""
    quantized = value.quantize(_MICRO, rounding=ROUND_HALF_EVEN)
    if quantized == 0:
        quantized = abs(quantized)  # no "-0.000000"
    return f"{quantized:f}"


# ---------------------------------------------------------------------------------------------
# The price table


@dataclass(frozen=True, slots=True)
class Price:
    """One price row: a model's input-side prices, in dollars per million tokens, in force from
    `effective_from` until `effective_until` for requests in its size band."""

    provider: str
    #: the model name of prices.json that matched (`claude-sonnet-4-5` for `claude-sonnet-4-5-20250929`)
    key: str
    input: Decimal
    #: TTL name (`5m`, `1h`, `30m`, `24h`) → write price; the first is the model's default lifetime
    cache_write: tuple[tuple[str, Decimal], ...]
    #: None: the model has no cached-input rate (reads cost the input rate)
    cache_read: Decimal | None
    source: str
    read: str
    #: the row prices requests of at most this many prompt tokens (None: no upper bound) …
    max_prompt_tokens: int | None = None
    #: … and of more than this many (None: no lower bound)
    over_prompt_tokens: int | None = None
    #: the first day the row is in force (None: since the model's release) and the first day it no longer is
    effective_from: date | None = None
    effective_until: date | None = None

    def ttl(self, wanted: str | None) -> str:
        """The TTL the cost uses: the artifact's `cache.ttl` if this model has a price for it,
        else the model's default."""
        names = [name for name, _ in self.cache_write]
        return wanted if wanted in names else names[0]

    def write(self, ttl: str) -> Decimal:
        return dict(self.cache_write)[ttl]

    @property
    def read_rate(self) -> Decimal:
        return self.input if self.cache_read is None else self.cache_read


@dataclass(frozen=True, slots=True)
class Unpriced:
    """Why a prompt has no price: no model, or a model the table cannot price (`model` is then the
    model, and W948 names it)."""

    reason: str
    model: str | None = None


#: what may follow a price row's model name in a model id and still be that model: a snapshot date
#: (`-20250929`, `-2025-04-14`, Vertex's `@20250929`) and Bedrock's version (`-v1:0`), in that order
_SNAPSHOT = re.compile(r"(?:-\d{8}|-\d{4}-\d\d-\d\d|@\d{8})?(?:-v\d+(?::\d+)?)?")
#: a Bedrock cross-region inference prefix before a model id (`us.`, `eu.`, `global.` before `anthropic.…`)
_REGION = re.compile(r"[a-z][a-z-]*\.(?=[a-z][a-z0-9-]*\.)")


def _day(value: Any) -> date | None:
    return None if value in (None, "release") else date.fromisoformat(str(value))


_EPOCH_DAY = date(1970, 1, 1)


def _epoch_day(at: datetime | date | float | None) -> int:
    """The UTC day of a moment (epoch seconds, an aware datetime, a date) as days since 1970-01-01;
    today when None. Records are priced one lookup each, so this stays arithmetic."""
    if at is None:
        at = datetime.now(UTC)
    if isinstance(at, datetime):
        return int((at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp() // 86400)
    if isinstance(at, date):
        return (at - _EPOCH_DAY).days
    return int(float(at) // 86400)


@dataclass(frozen=True, slots=True)
class _Row:
    """A price row of one model, its conditions decoded once: the days it is in force (days since
    1970-01-01, `end` exclusive) and its size band."""

    name: str
    item: Mapping[str, Any]
    start: int
    end: int
    over: int | None
    most: int | None

    def holds(self, day: int, size: int | None) -> bool:
        if not self.start <= day < self.end:
            return False
        if size is None:  # an unknown size: the smallest band
            return self.over is None
        return (self.over is None or size > self.over) and (self.most is None or size <= self.most)


class PriceTable:
    """The decoded prices.json, with lookup by (provider, model, moment, prompt size)."""

    def __init__(self, document: Mapping[str, Any], path: str = "promptc/data/prices.json") -> None:
        self.document = document
        self.path = path
        self.read_date: str = str(document.get("read", "?"))
        self.ttl_seconds: dict[str, int] = {k: int(v) for k, v in document.get("ttl_seconds", {}).items()}
        self.sha256 = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()
        #: (provider, model) → the rows that price the model (memo: reconcile looks up every record)
        self._rows: dict[tuple[str, str], list[_Row]] = {}
        #: (provider, id of a row, its name that matched) → its Price (memo)
        self._prices: dict[tuple[str, int, str], Price] = {}
        #: (provider, model, day, prompt tokens) → the last answers (a bounded memo)
        self._recent: dict[tuple[str | None, str, int, int | None], Price | Unpriced] = {}

    @property
    def label(self) -> str:
        """What every money figure names: the table's file and the date its prices were read."""
        return f"{self.path} (read {self.read_date})"

    def to_json(self) -> dict[str, str]:
        return {"table": self.path, "read": self.read_date}

    def rows_for(self, provider: str, model: str) -> list[_Row]:
        """Every row of `provider` that prices `model`, with the row's name that matched: the
        model itself, or that name plus a snapshot suffix (`-20250929`, `@20250929`, `-v1:0`)
        after an optional region prefix (`us.`), or an alias providers.json resolves to one."""
        memo = self._rows.get((provider, model))
        if memo is not None:
            return memo
        bare = _REGION.sub("", model, count=1) if _REGION.match(model) else model
        names = {bare, resolve_model(provider, bare) or bare}
        found: list[_Row] = []
        entry = self.document.get("providers", {}).get(provider) or {}
        for item in entry.get("prices", []):
            for name in item["models"]:
                if any(candidate.startswith(name) and _SNAPSHOT.fullmatch(candidate, len(name)) for candidate in names):
                    start, end = _day(item.get("effective_from")), _day(item.get("effective_until"))
                    found.append(
                        _Row(
                            name,
                            item,
                            -(10**9) if start is None else (start - _EPOCH_DAY).days,
                            10**9 if end is None else (end - _EPOCH_DAY).days,
                            item.get("over_prompt_tokens"),
                            item.get("max_prompt_tokens"),
                        )
                    )
                    break
        self._rows[(provider, model)] = found
        return found

    def lookup(
        self,
        provider: str | None,
        model: str | None,
        at: datetime | date | float | None = None,
        prompt_tokens: int | None = None,
    ) -> Price | Unpriced:
        """The price of a request to `model` at the moment `at` (epoch seconds, a datetime or a
        date; now when None) with `prompt_tokens` tokens of input (None: the smallest band): the
        row in force that day, in the size band the request falls in. A model no row names is
        unpriced, never priced as a neighbour."""
        if not model:
            return Unpriced("no model")
        day = _epoch_day(at)
        recent = (provider, model, day, prompt_tokens)
        found = self._recent.get(recent)
        if found is None:
            if len(self._recent) >= 4096:  # bounded: records of one day and size repeat, the rest need not
                self._recent.clear()
            found = self._recent[recent] = self._lookup(provider, model, day, prompt_tokens)
        return found

    def _lookup(self, provider: str | None, model: str, day: int, prompt_tokens: int | None) -> Price | Unpriced:
        if not provider:
            provider = provider_of_model(model)
        entry = self.document.get("providers", {}).get(provider or "")
        if entry is None:
            why = f"no prices for provider {provider}" if provider else f"no provider for model {model}"
            return Unpriced(why, model)
        assert provider is not None
        rows = self.rows_for(provider, model)
        if not rows:
            return Unpriced(entry.get("why") or f"{model} is not in the price table", model)
        row = next((row for row in rows if row.holds(day, prompt_tokens)), None)
        if row is None:
            if not any(row.start <= day < row.end for row in rows):
                when = (_EPOCH_DAY + timedelta(days=day)).isoformat()
                return Unpriced(f"{rows[0].name}: the table has no price in force on {when}", model)
            limit = max(int(row.most or 0) for row in rows if row.start <= day < row.end)
            return Unpriced(f"{rows[0].name}: the table has no price for prompts over {limit} tokens", model)
        if row.item.get("price", True) is None:
            return Unpriced(f"{row.name}: {row.item.get('why', 'no verified price')}", model)
        key = (provider, id(row.item), row.name)
        price = self._prices.get(key)
        if price is None:
            price = self._prices[key] = self._price(provider, row)
        return price

    @staticmethod
    def _price(provider: str, row: _Row) -> Price:
        item = row.item
        read = item.get("cache_read")
        sources = item.get("sources") or [item.get("source", "")]
        return Price(
            provider,
            row.name,
            Decimal(item["input"]),
            tuple((ttl, Decimal(value)) for ttl, value in item["cache_write"].items()),
            None if read is None else Decimal(read),
            str(sources[0]),
            item["read"],
            item.get("max_prompt_tokens"),
            item.get("over_prompt_tokens"),
            _day(item.get("effective_from")),
            _day(item.get("effective_until")),
        )


@cache
def prices() -> PriceTable:
    """The shipped price table (read once per process)."""
    text = resources.files("promptc.data").joinpath("prices.json").read_text(encoding="utf-8")
    return PriceTable(json.loads(text))


# ---------------------------------------------------------------------------------------------
# What the cost model needs of a prompt


@dataclass(frozen=True, slots=True)
class PromptFacts:
    name: str
    model: str | None
    provider: str | None
    #: the whole request's tokens; None when only a manifest entry was available
    total_tokens: int | None
    prefix_sha256: str | None
    prefix_tokens: int
    #: what the provider caches of the prefix (None: no profile)
    cacheable_tokens: int | None
    ttl: str | None
    #: tokens of stable blocks after the prefix end: text that could be cached but is not
    stable_after_prefix: int | None = None
    #: the source path, for links and annotations
    source: str | None = None
    #: the profile's minimum cacheable prefix and cache step (None: no profile)
    min_cacheable: int | None = None
    cache_step: int | None = None
    #: stable text held in the first dynamic section by one placeholder (`${customer_name}` in the
    #: first line of 7,726 stable tokens, what W710 sees): its tokens, and the placeholder
    stable_behind: int = 0
    behind: str | None = None

    def _cacheable(self, tokens: int) -> int:
        if self.min_cacheable is None or tokens < self.min_cacheable:
            return 0
        if self.cache_step:
            return self.min_cacheable + (tokens - self.min_cacheable) // self.cache_step * self.cache_step
        return tokens

    @property
    def uncached_stable(self) -> int:
        """Stable tokens the layout leaves out of the prefix: the stable blocks after its end, and
        the stable text a placeholder holds in the dynamic section that ends it."""
        return (self.stable_after_prefix or 0) + self.stable_behind

    @property
    def movable_gain(self) -> int:
        """The tokens the provider would cache on top of today's if the stable text after the
        prefix end came before it (0 when even then the prefix stays under the minimum)."""
        if not self.uncached_stable:
            return 0
        return max(0, self._cacheable(self.prefix_tokens + self.uncached_stable) - (self.cacheable_tokens or 0))


def stable_behind_placeholder(artifact: Any) -> tuple[int, str | None]:
    """(tokens, placeholder path) of the stable text in the first dynamic section after the prefix
    end when one placeholder alone makes it dynamic (no template block; one input): the layout W710
    warns about, whose stable text moving the placeholder would cache. (0, None) otherwise."""
    end = artifact.cache.prefix_end
    after = (-1, -1) if end is None or end.message is None else (end.message, end.block)
    block = next(
        (
            b
            for mi, message in enumerate(artifact.messages)
            for bi, b in enumerate(message.blocks)
            if (mi, bi) > after and not b.stable
        ),
        None,
    )
    if block is None or not block.sections or block.sections[0].boundary != "dynamic":
        return 0, None
    section = block.sections[0]
    tokens = scan(section.text)
    if any(t.kind not in ("lit", "ph") for t in tokens):
        return 0, None
    paths = {t.text for t in tokens if t.kind == "ph"}
    if len(paths) != 1:
        return 0, None
    literal = "".join(t.text for t in tokens if t.kind == "lit")
    if not literal.strip():
        return 0, None
    try:
        count = meter(artifact.tokenizer.name).tokens(literal)
    except Exception:  # noqa: BLE001 - an unavailable tokenizer: the section's count, by characters
        count = section.tokens * len(literal) // max(1, len(section.text))
    return count, paths.pop()


def facts_from_artifact(artifact: Any) -> PromptFacts:
    """The facts of a `model.Artifact`; what is stable after the prefix is read from its request
    model (`promptc.runtime.requestmodel`): the stable blocks after the part where the walk stops."""
    request = of_artifact(artifact)
    stop = request.prefix().stop
    after, past = 0, False
    for part in request.content() if stop is not None else ():
        past = past or part is stop
        if past and part.kind == "block" and part.stable:
            after += artifact.messages[part.message].blocks[part.block].tokens
    return PromptFacts(
        artifact.name,
        artifact.model,
        None if artifact.provider is None else artifact.provider.name,
        artifact.totals.tokens,
        artifact.cache.prefix_sha256,
        artifact.cache.prefix_tokens,
        artifact.cache.cacheable_tokens,
        artifact.cache.ttl,
        after,
        artifact.source,
        None if artifact.provider is None else artifact.provider.min_cacheable_tokens,
        None if artifact.provider is None else artifact.provider.cache_step_tokens,
        *stable_behind_placeholder(artifact),
    )


def _facts_from_entry(name: str, entry: Any) -> PromptFacts:
    return PromptFacts(
        name,
        entry.model,
        entry.provider,
        None,
        entry.prefix_sha256,
        entry.prefix_tokens,
        entry.cacheable_tokens,
        None,
        None,
        entry.source,
    )


def facts_of_build(manifest: Manifest, folder: Path | None) -> tuple[dict[str, PromptFacts], dict[str, Artifact]]:
    """Facts for every prompt of a manifest, from the artifacts in `folder` when they are there
    and are the ones the manifest lists (same sha256), else from the manifest entry alone (no
    request size, no TTL). Also returns the artifacts that were read, by name."""
    facts: dict[str, PromptFacts] = {}
    artifacts: dict[str, Artifact] = {}
    build = None if folder is None else BuildFolder(folder, manifest)
    for name, entry in sorted(manifest.artifacts.items()):
        artifact = None if build is None else build.artifact_or_none(name)
        if artifact is not None:
            artifacts[name] = artifact
            facts[name] = facts_from_artifact(artifact)
        else:
            facts[name] = _facts_from_entry(name, entry)
    return facts, artifacts


# ---------------------------------------------------------------------------------------------
# The traffic file


def read_traffic(path: str | Path) -> tuple[dict[str, Decimal] | None, list[Diagnostic]]:
    """`{"prompt name": requests per day, …}` from a JSON file: (traffic, diagnostics). Traffic is
    None when the file cannot be used (an E945 or E946 error says where and why)."""
    display = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return None, [
            make(
                codes.TRAFFIC_UNREADABLE,
                f"cannot read the traffic file: {reason}",
                None,
                'write a JSON object of prompt name → requests per day, e.g. {"support/chat": 12000}',
                path=display,
            )
        ]
    src, value, diagnostics = read_json(display, data)
    problems = [d for d in diagnostics if d.severity == "error"]
    if src is None or problems:
        first = problems[0] if problems else None
        message = first.message if first else "the traffic file is not UTF-8 text"
        return None, [
            Diagnostic(
                str(codes.TRAFFIC_UNREADABLE),
                codes.TRAFFIC_UNREADABLE.severity,
                f"traffic file is not valid JSON: {message.removeprefix('invalid JSON: ')}",
                display,
                first.span if first else None,
                'write a JSON object of prompt name → requests per day, e.g. {"support/chat": 12000}',
                first.source_line if first else None,
            )
        ]
    text = src.text
    if not isinstance(value, dict):
        kind = type(value).__name__ if value is not None else "null"
        offset = locate(text, [])
        return None, [
            make(
                codes.INVALID_TRAFFIC,
                f"the traffic file must be a JSON object of prompt name → requests per day, not {_json_kind(kind)}",
                src.span(offset, offset + token_length(text, offset)),
                'e.g. {"support/chat": 12000, "helpdesk/agent": 800}',
                source=src,
            )
        ]
    traffic: dict[str, Decimal] = {}
    errors: list[Diagnostic] = []
    for name, count in value.items():
        amount = _requests(count)
        if amount is None:
            offset = locate(text, [name])
            errors.append(
                make(
                    codes.INVALID_TRAFFIC,
                    f"requests per day of `{name}` must be a number ≥ 0, not {json.dumps(count)}",
                    src.span(offset, offset + token_length(text, offset)),
                    "give the average number of requests a day, e.g. 12000 or 0.5",
                    source=src,
                )
            )
            continue
        traffic[name] = amount
    if errors:
        return None, errors
    return traffic, []


def _json_kind(kind: str) -> str:
    return {"list": "a list", "str": "a string", "int": "a number", "float": "a number", "bool": "a boolean"}.get(
        kind, kind
    )


def _requests(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        return None
    if not amount.is_finite() or amount < 0:
        return None
    return amount


def check_traffic(
    traffic: Mapping[str, Decimal], names: Iterable[str], path: str, *, other_names: Iterable[str] = ()
) -> list[Diagnostic]:
    """W947 for each traffic entry that names no prompt of the build (with "did you mean"). Names
    in `other_names` (the old build's, for diff) count as known."""
    known = set(names) | set(other_names)
    unknown = [name for name in traffic if name not in known]
    if not unknown:
        return []
    try:
        src, _ = decode(path, Path(path).read_bytes())
    except OSError:
        src = None
    found: list[Diagnostic] = []
    for name in unknown:
        close = did_you_mean(name, sorted(known))
        hint = f"did you mean `{close}`?" if close else "the names are the build's prompt names (`promptc list`)"
        span = None
        if src is not None:
            # the key's own position: the member's value is located, the key sits before it
            offset = src.text.rfind(json.dumps(name), 0, locate(src.text, [name]) + 1)
            offset = max(offset, 0)
            span = src.span(offset, offset + token_length(src.text, offset))
        found.append(
            make(
                codes.UNKNOWN_TRAFFIC_PROMPT,
                f"the traffic file names `{name}`, which is not a prompt of this build",
                span,
                hint,
                source=src,
                path=path,
            )
        )
    return found


# ---------------------------------------------------------------------------------------------
# W948: a model the price table does not price

#: `model=…` in a `/// param:` line, where a prompt names its model
_MODEL_PARAM = re.compile(r"^[ \t]*///[ \t]*param[ \t]*:[^\n]*?\b(model[ \t]*=[ \t]*[^,\s]+)", re.M)


def unpriced_warnings(
    missing: Iterable[tuple[PromptFacts, Unpriced]], root: str | Path | None = None
) -> list[Diagnostic]:
    """One W948 per model the table does not price, naming the model, why, and its prompts; at
    the first prompt's `model=` in its `/// param:` line when `root` (the source folder) holds its
    source, else at the source file (the model may come from the configuration)."""
    by_model: dict[tuple[str, str], list[PromptFacts]] = {}
    for f, found in missing:
        by_model.setdefault((found.model or "", found.reason), []).append(f)
    out: list[Diagnostic] = []
    for (model, reason), prompts in sorted(by_model.items()):
        names = ", ".join(sorted(f.name for f in prompts))
        first = min(prompts, key=lambda f: f.name)
        span, src, path = None, None, first.source
        if root is not None and first.source:
            path = str(Path(root) / first.source)
            try:
                data = Path(path).read_bytes()
            except OSError:
                data = None
            if data is not None and len(data) <= 4 << 20:
                src, _ = decode(path, data)
                named = None if src is None else _MODEL_PARAM.search(src.text)
                if src is not None and named is not None:
                    span = src.span(named.start(1), named.end(1))
        out.append(
            make(
                codes.UNPRICED_MODEL,
                f"`{model}` is not priced: {reason}; its prompts ({names}) count in no money figure",
                span,
                "add a row for the model to promptc/data/prices.json with its source and the date it was read "
                "(docs/cost.md), or use a model the table prices",
                source=src,
                path=path,
            )
        )
    return out


# ---------------------------------------------------------------------------------------------
# The cost of a tree


@dataclass(frozen=True, slots=True)
class PromptCost:
    facts: PromptFacts
    price: Price | None
    #: why the prompt has no price (no model, model not in the table, over the table's size limit)
    unpriced: str | None
    requests_per_day: Decimal | None
    ttl: str | None = None
    #: whether the cache entry stays warm at this traffic (None without traffic or caching)
    warm: bool | None = None
    #: per request: every token at the input rate; a cache hit; a cache write
    request_uncached: Decimal | None = None
    request_hit: Decimal | None = None
    request_write: Decimal | None = None
    #: per day (with traffic)
    day_with_cache: Decimal | None = None
    day_without_cache: Decimal | None = None
    #: what caching the stable tokens after the prefix end would save per day (warm, with traffic)
    day_waste: Decimal | None = None

    @property
    def cached_tokens(self) -> int:
        return self.facts.cacheable_tokens or 0

    def to_json(self, table: PriceTable) -> dict[str, Any]:
        f = self.facts

        def m(value: Decimal | None) -> str | None:
            return None if value is None else money(value)

        data: dict[str, Any] = {
            "name": f.name,
            "model": f.model,
            "provider": f.provider,
            "tokens": f.total_tokens,
            "prefix_tokens": f.prefix_tokens,
            "cacheable_tokens": f.cacheable_tokens,
            "stable_after_prefix_tokens": f.stable_after_prefix,
            "priced_as": None if self.price is None else self.price.key,
            "not_priced": self.unpriced,
            "ttl": self.ttl,
            "requests_per_day": None if self.requests_per_day is None else _number(self.requests_per_day),
            "warm": self.warm,
        }
        if self.price is not None:
            data["per_request"] = {
                "without_cache": m(self.request_uncached),
                "cache_hit": m(self.request_hit),
                "cache_write": m(self.request_write),
                "prices": table.label,
            }
        if self.day_with_cache is not None:
            data["per_day"] = {
                "with_cache": m(self.day_with_cache),
                "without_cache": m(self.day_without_cache),
                "saving": m((self.day_without_cache or Decimal(0)) - self.day_with_cache),
                "stable_uncached": m(self.day_waste),
                "prices": table.label,
            }
        return data


def _number(value: Decimal) -> int | str:
    return int(value) if value == value.to_integral_value() else f"{value.normalize():f}"


@dataclass(frozen=True, slots=True)
class TreeCost:
    table: PriceTable
    prompts: tuple[PromptCost, ...]
    traffic: bool
    #: the prompts whose model the table does not price (W948), with why
    missing: tuple[tuple[PromptFacts, Unpriced], ...] = ()

    def warnings(self, root: str | Path | None = None) -> list[Diagnostic]:
        """W948 for each model the table does not price (`root`: the source folder, to point at
        the prompts' `model=` parameters)."""
        return unpriced_warnings(self.missing, root)

    @property
    def priced(self) -> tuple[PromptCost, ...]:
        return tuple(p for p in self.prompts if p.price is not None)

    def cacheable_share(self) -> Decimal | None:
        """Cacheable tokens over all tokens: of one request of each prompt, or weighted by traffic."""
        total = cached = Decimal(0)
        for p in self.prompts:
            if p.facts.total_tokens is None:
                continue
            weight = p.requests_per_day if self.traffic else Decimal(1)
            if weight is None:
                continue
            total += weight * p.facts.total_tokens
            cached += weight * p.cached_tokens
        return None if total == 0 else cached / total

    def day_with(self) -> Decimal:
        return sum((p.day_with_cache or Decimal(0) for p in self.prompts), Decimal(0))

    def day_without(self) -> Decimal:
        return sum((p.day_without_cache or Decimal(0) for p in self.prompts), Decimal(0))

    def waste(self, limit: int = 5) -> list[PromptCost]:
        """The prompts whose layout leaves the most stable tokens uncached, most first (by money
        per day when there is traffic and a price, else by tokens)."""
        rows = [p for p in self.prompts if p.facts.uncached_stable]
        rows.sort(
            key=lambda p: (
                -(p.day_waste or Decimal(0)),
                -p.facts.movable_gain,
                -p.facts.uncached_stable,
                p.facts.name,
            )
        )
        return rows[:limit]

    def to_json(self) -> dict[str, Any]:
        share = self.cacheable_share()
        summary: dict[str, Any] = {
            "prompts": len(self.prompts),
            "priced": len(self.priced),
            "cacheable_share": None if share is None else f"{share.quantize(Decimal('0.0001')):f}",
        }
        if self.traffic:
            summary["per_day"] = {
                "with_cache": money(self.day_with()),
                "without_cache": money(self.day_without()),
                "saving": money(self.day_without() - self.day_with()),
                "prices": self.table.label,
            }
        return {
            "prices": self.table.to_json(),
            "summary": summary,
            "prompts": [p.to_json(self.table) for p in self.prompts],
            "waste": [
                {
                    "name": p.facts.name,
                    "stable_after_prefix_tokens": p.facts.stable_after_prefix,
                    "stable_behind_placeholder_tokens": p.facts.stable_behind,
                    "placeholder": p.facts.behind,
                    "cacheable_if_moved": p.facts.movable_gain,
                    "per_day": None if p.day_waste is None else money(p.day_waste),
                }
                for p in self.waste()
            ],
        }


_GroupKey = tuple[str, str | None, str, int, str | None]


def _group_key(f: PromptFacts, price: Price | None, ttl: str | None) -> _GroupKey | None:
    if price is None or not f.prefix_sha256 or not f.cacheable_tokens:
        return None
    return (price.provider, f.model, f.prefix_sha256, f.cacheable_tokens, ttl)


def tree_cost(
    facts: Iterable[PromptFacts],
    traffic: Mapping[str, Decimal] | None = None,
    table: PriceTable | None = None,
    at: datetime | date | None = None,
) -> TreeCost:
    """The cost of every prompt, per request and (with `traffic`) per day, at the prices in force
    on `at` (now when None), each request in the size band of its tokens. Prompts the traffic
    does not name get no requests."""
    table = table or prices()
    if traffic is not None:  # library callers may pass ints or floats
        traffic = {
            name: count if isinstance(count, Decimal) else Decimal(str(count)) for name, count in traffic.items()
        }
    rows = sorted(facts, key=lambda f: f.name)
    looked: list[tuple[PromptFacts, Price | None, str | None, str | None]] = []
    missing: list[tuple[PromptFacts, Unpriced]] = []
    for f in rows:
        found = table.lookup(f.provider, f.model, at, f.total_tokens)
        if isinstance(found, Unpriced):
            looked.append((f, None, found.reason, None))
            if found.model is not None:
                missing.append((f, found))
            continue
        if f.total_tokens is None:
            looked.append((f, None, "request size unknown (the build's artifacts are not available)", None))
            continue
        looked.append((f, found, None, found.ttl(f.ttl)))
    # one cache per prefix: the traffic of prompts sharing an entry adds up
    group_requests: dict[_GroupKey, Decimal] = {}
    if traffic is not None:
        for f, price, _, ttl in looked:
            key = _group_key(f, price, ttl)
            if key is not None:
                group_requests[key] = group_requests.get(key, Decimal(0)) + traffic.get(f.name, Decimal(0))
    out: list[PromptCost] = []
    for f, price, unpriced, ttl in looked:
        requests = None if traffic is None else traffic.get(f.name, Decimal(0))
        if price is None or ttl is None:
            out.append(PromptCost(f, None, unpriced, requests))
            continue
        total = Decimal(f.total_tokens or 0)
        cached = Decimal(f.cacheable_tokens or 0)
        rate_in, rate_read, rate_write = price.input / MTOK, price.read_rate / MTOK, price.write(ttl) / MTOK
        if price.cache_read is None:
            rate_write = rate_in
        uncached = total * rate_in
        hit = cached * rate_read + (total - cached) * rate_in
        write = cached * rate_write + (total - cached) * rate_in
        cost = PromptCost(f, price, None, requests, ttl, None, uncached, hit, write)
        if requests is not None:
            key = _group_key(f, price, ttl)
            warm, writes = _writes(group_requests.get(key, Decimal(0)) if key else Decimal(0), table, ttl)
            share = writes * requests / group_requests[key] if key and group_requests.get(key) else requests
            reads = requests - share
            with_cache = share * write + reads * hit if key else requests * uncached
            # what the stable tokens after the prefix end would save if they led the request
            own_warm, _ = _writes(requests, table, ttl)
            waste = requests * Decimal(f.movable_gain) * (rate_in - rate_read) if own_warm else Decimal(0)
            cost = PromptCost(
                f,
                price,
                None,
                requests,
                ttl,
                warm if key else None,
                uncached,
                hit,
                write,
                with_cache,
                requests * uncached,
                waste,
            )
        out.append(cost)
    return TreeCost(table, tuple(out), traffic is not None, tuple(missing))


def _writes(requests: Decimal, table: PriceTable, ttl: str) -> tuple[bool, Decimal]:
    """(warm, cache writes a day) of one cache entry with `requests` a day, evenly spaced."""
    if requests <= 0:
        return False, Decimal(0)
    seconds = Decimal(table.ttl_seconds.get(ttl, 300))
    warm = SECONDS_PER_DAY / requests <= seconds
    return warm, (Decimal(1) if warm else requests)


# ---------------------------------------------------------------------------------------------
# What a change costs


@dataclass(frozen=True, slots=True)
class DeployMiss:
    """A cache entry the new build needs and the old one did not have: written once after the deploy."""

    name: str
    tokens: int
    cost: Decimal

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "tokens": self.tokens, "cost": money(self.cost)}


@dataclass(frozen=True, slots=True)
class DiffCost:
    before: TreeCost
    after: TreeCost
    misses: tuple[DeployMiss, ...]
    #: prompts whose old request size was estimated (the old build's artifacts were not available)
    estimated: tuple[str, ...] = field(default=())

    @property
    def day_before(self) -> Decimal:
        return self.before.day_with()

    @property
    def day_after(self) -> Decimal:
        return self.after.day_with()

    @property
    def deploy(self) -> Decimal:
        return sum((m.cost for m in self.misses), Decimal(0))

    @property
    def first_day(self) -> Decimal:
        """What `--fail-on cost>AMOUNT` compares: the deploy's cache misses plus the change in the
        cost per day (negative when the change saves more than the deploy costs)."""
        return self.deploy + self.day_after - self.day_before

    def to_json(self) -> dict[str, Any]:
        label = self.after.table.label
        return {
            "prices": self.after.table.to_json(),
            "per_day_before": money(self.day_before),
            "per_day_after": money(self.day_after),
            "per_day_change": money(self.day_after - self.day_before),
            "deploy": money(self.deploy),
            "first_day": money(self.first_day),
            "deploy_misses": [m.to_json() for m in self.misses],
            "estimated_before": list(self.estimated),
            "unpriced": sorted(p.facts.name for p in self.after.prompts if p.price is None),
            "label": label,
        }


def diff_cost(
    old: Mapping[str, PromptFacts],
    new: Mapping[str, PromptFacts],
    traffic: Mapping[str, Decimal],
    table: PriceTable | None = None,
    at: datetime | date | None = None,
) -> DiffCost:
    """Cost per day before and after a change, and the deploy's cache misses. An old prompt whose
    request size is unknown (only its manifest entry was available) is estimated as the new
    request's tokens outside the prefix plus the old prefix."""
    table = table or prices()
    estimated: list[str] = []
    before: list[PromptFacts] = []
    for name, f in sorted(old.items()):
        if f.total_tokens is None:
            counterpart = new.get(name)
            outside = 0
            if counterpart is not None and counterpart.total_tokens is not None:
                outside = max(0, counterpart.total_tokens - counterpart.prefix_tokens)
            ttl = counterpart.ttl if counterpart is not None else None
            f = replace(f, total_tokens=outside + f.prefix_tokens, ttl=ttl)
            estimated.append(name)
        before.append(f)
    before_cost = tree_cost(before, traffic, table, at)
    priced_before = {p.facts.name for p in before_cost.prompts if p.price is not None}
    estimated = [name for name in estimated if name in priced_before]  # only where it changes a figure
    after_cost = tree_cost(new.values(), traffic, table, at)
    old_entries = {(f.model, f.prefix_sha256) for f in old.values() if f.prefix_sha256 and f.cacheable_tokens}
    misses: list[DeployMiss] = []
    seen: set[tuple[str | None, str | None]] = set()
    for p in after_cost.prompts:
        f = p.facts
        key = (f.model, f.prefix_sha256)
        if p.price is None or not p.warm or not f.prefix_sha256 or key in old_entries or key in seen:
            continue
        seen.add(key)
        cached = Decimal(f.cacheable_tokens or 0)
        rate_write = p.price.write(p.ttl or p.price.ttl(None)) if p.price.cache_read is not None else p.price.input
        extra = cached * (rate_write - p.price.read_rate) / MTOK
        misses.append(DeployMiss(f.name, f.cacheable_tokens or 0, extra))
    return DiffCost(before_cost, after_cost, tuple(misses), tuple(estimated))


# ---------------------------------------------------------------------------------------------
# `--fail-on cost>AMOUNT`


@dataclass(frozen=True, slots=True)
class FailOnCost:
    amount: Decimal

    def __str__(self) -> str:
        return f"cost>{money(self.amount)}"


def parse_fail_on_cost(value: str) -> FailOnCost | None:
    """`cost>AMOUNT` (dollars, `$` allowed) → FailOnCost; None for another kind of change. Raises
    ValueError for a malformed amount."""
    if not value.startswith("cost"):
        return None
    rest = value[4:].strip()
    if not rest.startswith(">"):
        raise ValueError(f"expected cost>AMOUNT (dollars, e.g. cost>5 or cost>0.50), got {value!r}")
    text = rest[1:].strip().removeprefix("$")
    try:
        amount = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"{text!r} is not an amount of dollars (e.g. cost>5 or cost>0.50)") from None
    if not amount.is_finite() or amount < 0:
        raise ValueError(f"the amount in {value!r} must be a number of dollars ≥ 0")
    return FailOnCost(amount)


# ---------------------------------------------------------------------------------------------
# `promptc cost --advise`: the TTL that costs least at the prompt's traffic

#: the option that sends no cache breakpoint (`cache_ttl: none`)
NO_CACHE = "none"


@dataclass(frozen=True, slots=True)
class TtlOption:
    """One TTL's cost for a cache entry's traffic: over a day (counts) or over the records."""

    ttl: str
    cost: Decimal
    writes: Decimal
    reads: Decimal

    def to_json(self) -> dict[str, Any]:
        return {"ttl": self.ttl, "cost": money(self.cost), "writes": _number(self.writes), "reads": _number(self.reads)}


@dataclass(frozen=True, slots=True)
class Advice:
    """The advice for one cache entry: the prompts that share it (one prompt, when it shares
    nothing), what each TTL the provider lets the prompt choose would cost, the cheapest, and what
    caching costs against sending no breakpoint at all."""

    names: tuple[str, ...]
    facts: tuple[PromptFacts, ...]
    price: Price | None
    unpriced: str | None
    requests: Decimal
    #: the TTLs the prompt can choose (Anthropic: none, 5m, 1h; OpenAI caches automatically: its one)
    options: tuple[TtlOption, ...]
    #: the entry's TTL today (`none`, `5m`, `1h`, the provider's one), or `mixed` when its prompts differ
    current: str
    best: str | None
    #: what no caching at all would cost (also where the provider gives no choice)
    uncached: Decimal | None
    #: what the entry costs today (its prompts' own TTLs; a mixed entry is one entry per TTL)
    current_cost: Decimal | None
    #: the tokens the prefix is short of the provider's minimum (None: it is not short)
    short_by: int | None
    #: "day" (requests per day) or "records" (the timestamps of a records file)
    basis: str = "day"

    @property
    def choosable(self) -> bool:
        return any(o.ttl == NO_CACHE for o in self.options)

    def cost_of(self, ttl: str) -> Decimal | None:
        return next((o.cost for o in self.options if o.ttl == ttl), None)

    @property
    def saving(self) -> Decimal:
        """What the best TTL saves over today's (0 when today's is the best, or mixed)."""
        now, best = self.current_cost, self.cost_of(self.best or "")
        return Decimal(0) if now is None or best is None else now - best

    @property
    def loses_money(self) -> bool:
        """Caching, at today's TTL, costs more than no caching at all."""
        now = self.current_cost
        return now is not None and self.uncached is not None and self.current != NO_CACHE and now > self.uncached

    def to_json(self) -> dict[str, Any]:
        return {
            "prompts": list(self.names),
            "model": self.facts[0].model,
            "provider": self.facts[0].provider,
            "priced_as": None if self.price is None else self.price.key,
            "not_priced": self.unpriced,
            "basis": self.basis,
            "requests": _number(self.requests),
            "cached_tokens": self.facts[0].cacheable_tokens,
            "current": self.current,
            "best": self.best,
            "choosable": self.choosable,
            "options": [o.to_json() for o in self.options],
            "uncached": None if self.uncached is None else money(self.uncached),
            "current_cost": None if self.current_cost is None else money(self.current_cost),
            "saving": money(self.saving),
            "loses_money": self.loses_money,
            "short_by": self.short_by,
        }


def potential(f: PromptFacts) -> int:
    """The tokens the provider would cache of `f` with a TTL: its `cacheable_tokens`, or for a
    prompt built with `cache_ttl: none` (which counts none) its prefix when that reaches the
    minimum (the breakpoint at the prefix end covers it)."""
    if f.ttl != NO_CACHE:
        return f.cacheable_tokens or 0
    if f.min_cacheable is None or f.prefix_tokens < f.min_cacheable:
        return 0
    return f._cacheable(f.prefix_tokens)


def _rates(price: Price, ttl: str, f: PromptFacts) -> tuple[Decimal, Decimal, Decimal]:
    """(no cache, a hit, a write) of one request of `f` at `ttl`, in dollars."""
    total = Decimal(f.total_tokens or 0)
    cached = Decimal(potential(f))
    rate_in = price.input / MTOK
    rate_read = price.read_rate / MTOK
    rate_write = rate_in if price.cache_read is None else price.write(ttl) / MTOK
    plain = total * rate_in
    return plain, cached * rate_read + (total - cached) * rate_in, cached * rate_write + (total - cached) * rate_in


def _short_by(f: PromptFacts) -> int | None:
    if f.min_cacheable is None or potential(f) or f.prefix_tokens >= f.min_cacheable or not f.prefix_sha256:
        return None
    return f.min_cacheable - f.prefix_tokens


def _choices(f: PromptFacts, price: Price) -> tuple[list[str], bool]:
    """The TTLs a prompt can choose and whether `none` is one: where the provider caches only at
    the request's markers (Claude on its API, Bedrock or Vertex AI), `cache_ttl: none` sends none;
    OpenAI (whose implicit breakpoint writes even without promptc's) and Gemini cannot be told."""
    ttls = [name for name, _ in price.cache_write]

    profile = resolve(f.provider, f.model) if f.provider or f.model else None
    breakpoints = profile is not None and profile.marks_blocks
    return ([NO_CACHE, *ttls] if breakpoints else ttls), breakpoints


def _pick(options: list[TtlOption], current: str, order: list[str]) -> str | None:
    """The cheapest option; on a tie today's TTL, else the earlier in `order` (none, 5m, 1h)."""
    if not options:
        return None
    return min(options, key=lambda o: (o.cost, o.ttl != current, order.index(o.ttl))).ttl


def advise(
    facts: Iterable[PromptFacts],
    traffic: Mapping[str, Decimal] | None = None,
    *,
    times: Mapping[str, Iterable[float]] | None = None,
    table: PriceTable | None = None,
    at: datetime | date | None = None,
) -> list[Advice]:
    """The advice for every cache entry of the build, from requests per day (`traffic`, evenly
    spaced as the cost model assumes) or from the start times of the requests (`times`, by prompt:
    a request reads the entry when the previous request to it, of any prompt sharing it, is at most
    the TTL before it; each use refreshes the entry). Prompts without traffic are left out."""
    table = table or prices()
    if (traffic is None) == (times is None):
        raise ValueError("advise needs either traffic (requests per day) or times (request start times)")
    groups: dict[tuple[object, ...], list[tuple[PromptFacts, Price]]] = {}
    out: list[Advice] = []
    for f in sorted(facts, key=lambda f: f.name):
        found = table.lookup(f.provider, f.model, at, f.total_tokens)
        count = (traffic or {}).get(f.name) if traffic is not None else None
        if traffic is not None and not count:
            continue
        if times is not None and f.name not in times:
            continue
        unpriced = None
        if isinstance(found, Unpriced):
            unpriced = found.reason
        elif f.total_tokens is None:
            unpriced = "request size unknown (the build's artifacts are not available)"
        if unpriced is not None or isinstance(found, Unpriced):
            requests = Decimal(str(count)) if count is not None else Decimal(len(list(times[f.name])))  # type: ignore[index]
            out.append(
                Advice((f.name,), (f,), None, unpriced, requests, (), f.ttl or "-", None, None, None, _short_by(f))
            )
            continue
        key = (found.provider, f.model, f.prefix_sha256, potential(f)) if potential(f) else (f.name,)
        groups.setdefault(key, []).append((f, found))
    for members in groups.values():
        out.append(_advise_group(members, traffic, times, table, at))
    out.sort(key=lambda a: a.names)
    return out


def _advise_group(
    members: list[tuple[PromptFacts, Price]],
    traffic: Mapping[str, Decimal] | None,
    times: Mapping[str, Iterable[float]] | None,
    table: PriceTable,
    at: datetime | date | None = None,
) -> Advice:
    first, price = members[0]
    choices, breakpoints = _choices(first, price)
    names = tuple(f.name for f, _ in members)
    owned = [f.ttl if f.ttl == NO_CACHE else price.ttl(f.ttl) for f, _ in members]
    current = owned[0] if len(set(owned)) == 1 else "mixed"
    cached = bool(potential(first))
    options: list[TtlOption] = []
    uncached: Decimal
    if traffic is not None:
        counts = [Decimal(str(traffic.get(f.name, 0))) for f, _ in members]
        total = sum(counts, Decimal(0))
        uncached = sum(
            (c * _rates(price, choices[-1], f)[0] for (f, _), c in zip(members, counts, strict=True)), Decimal(0)
        )
        for ttl in choices:
            if ttl == NO_CACHE or not cached:
                options.append(TtlOption(ttl, uncached, Decimal(0), Decimal(0)))
                continue
            # evenly spaced: warm when a request comes at least once per TTL; then one write a day
            seconds = Decimal(table.ttl_seconds.get(ttl, 300))
            writes = Decimal(1) if total > 0 and SECONDS_PER_DAY / total <= seconds else total
            cost = Decimal(0)
            for (f, _), c in zip(members, counts, strict=True):
                _, hit, write = _rates(price, ttl, f)
                share = writes * c / total if total else Decimal(0)
                cost += share * write + (c - share) * hit
            options.append(TtlOption(ttl, cost, writes, total - writes))
        requests = total
    else:
        assert times is not None
        merged = sorted((t, i) for i, (f, _) in enumerate(members) for t in times[f.name])
        uncached = sum((_rates(price, choices[-1], members[i][0])[0] for _, i in merged), Decimal(0))
        for ttl in choices:
            if ttl == NO_CACHE or not cached:
                options.append(TtlOption(ttl, uncached, Decimal(0), Decimal(0)))
                continue
            lifetime = float(table.ttl_seconds.get(ttl, 300))
            rates = [_rates(price, ttl, f) for f, _ in members]
            spent, written = Decimal(0), 0
            previous: float | None = None
            for t, i in merged:
                if previous is None or t - previous > lifetime:
                    spent += rates[i][2]
                    written += 1
                else:
                    spent += rates[i][1]
                previous = t
            options.append(TtlOption(ttl, spent, Decimal(written), Decimal(len(merged) - written)))
        requests = Decimal(len(merged))
    best = _pick(options, current, choices)
    if current != "mixed":
        current_cost = next((o.cost for o in options if o.ttl == current), None)
    elif traffic is not None:  # what the tree costs as it is: the cost model's own sum, prompt by prompt
        current_cost = tree_cost([f for f, _ in members], traffic, table, at).day_with()
    else:  # the cost model keeps one entry per TTL: each TTL's prompts on their own
        current_cost = Decimal(0)
        for ttl in sorted(set(owned)):
            part = [(f, p) for (f, p), own in zip(members, owned, strict=True) if own == ttl]
            one = _advise_group([(replace(f, ttl=ttl), p) for f, p in part], traffic, times, table, at)
            current_cost += one.cost_of(ttl) or Decimal(0)
    return Advice(
        names,
        tuple(f for f, _ in members),
        price,
        None,
        requests,
        tuple(options),
        current,
        best,
        uncached,
        current_cost,
        _short_by(first),
        "day" if traffic is not None else "records",
    )


# ---------------------------------------------------------------------------------------------
# `--advise --write`: the `/// cache_ttl:` line, added or changed where the formatter puts it


def with_cache_ttl(text: str, ttl: str) -> str:
    """`text` (a prompt source) with its `/// cache_ttl:` line set to `ttl`: the value of an
    existing line changed (its inline comment kept), or a new line added among the file-level
    directives at the top where `promptc fmt` orders it (after `param`, before `input`). Nothing
    else of the file changes."""
    lines, _ = _classify(text)
    raw = text.split("\n")
    existing = [line for line in lines if line.kind == "directive" and line.key == "cache_ttl"]
    if existing:
        for line in existing:
            raw[line.old] = _directive(line, ttl)
        return "\n".join(raw)
    rank = DIRECTIVE_ORDER.index("cache_ttl")
    header = 0
    while header < len(lines) and lines[header].kind in ("blank", "directive", "comment"):
        header += 1
    directives = [line for line in lines[:header] if line.kind == "directive" and line.key != "promptc"]
    before = [line for line in directives if line.key in DIRECTIVE_ORDER and DIRECTIVE_ORDER.index(line.key) < rank]
    if before:
        at = before[-1].old + 1
    elif directives:
        at = directives[0].old
        while at > 0 and lines[at - 1].kind == "directive" and lines[at - 1].key == "promptc":
            at -= 1  # an allow comment stays with the line it is about
    else:
        at = 0
        while at < header and lines[at].kind == "comment":
            at += 1  # after the file's description
    raw.insert(at, f"/// cache_ttl: {ttl}")
    return "\n".join(raw)


def _masked(artifact: Artifact) -> dict[str, Any]:
    """An artifact's JSON without what a TTL change may change: the TTL, what is counted as cached
    and which breakpoints the anthropic shape sends, the source's hash and line numbers."""
    data = artifact.to_json()
    data.pop("source_sha256", None)
    cache = data["cache"]
    cache["ttl"] = cache["cacheable_tokens"] = None
    for breakpoint in cache["breakpoints"]:
        breakpoint["anthropic"] = None
    end = cache.get("prefix_end") or {}
    end.pop("line", None)
    for message in data["messages"]:
        for block in message["blocks"]:
            for section in block["sections"]:
                section["origins"] = [path for path, _ in section["origins"]]
    return data


@dataclass(frozen=True, slots=True)
class AdviceWrite:
    name: str
    path: str
    ttl: str
    #: the new text when it can be written, else None and the diagnostic says why
    text: str | None
    original: bytes
    diagnostic: Diagnostic | None = None


def plan_writes(advice: Iterable[Advice], tree: Any, config: Any) -> list[AdviceWrite]:
    """For every prompt whose entry's best TTL differs from its own (and whose provider takes
    one): its source with the new `/// cache_ttl:` line, checked by compiling both texts: the
    artifacts must be the same but for the TTL. Nothing is written here."""
    out: list[AdviceWrite] = []
    for item in advice:
        if not item.choosable or item.best is None or item.short_by is not None or item.saving <= 0:
            continue
        for f in item.facts:
            own = f.ttl if f.ttl == NO_CACHE else (item.price.ttl(f.ttl) if item.price else f.ttl)
            if own == item.best or f.source is None:
                continue
            display = tree.display(f.source)
            original = tree.files.get(f.source)

            def refuse(
                message: str,
                display: str = display,
                f: PromptFacts = f,
                original: bytes | None = original,
                ttl: str = item.best or "",
            ) -> AdviceWrite:
                return AdviceWrite(
                    f.name,
                    display,
                    ttl,
                    None,
                    original or b"",
                    make(codes.ADVICE_NOT_WRITTEN, message, None, None, path=display),
                )

            if original is None:
                out.append(refuse(f"`{f.source}` is not in the source folder"))
                continue
            try:
                text = original.decode("utf-8")
            except UnicodeDecodeError:
                out.append(refuse("the source is not UTF-8 text"))
                continue
            new_text = with_cache_ttl(text, item.best or "")
            before = prompt_in(tree, f.source, config)
            changed = copy(tree, files={**tree.files, f.source: new_text.encode("utf-8")})
            after = prompt_in(changed, f.source, config)
            if before is None or after is None:
                out.append(refuse("the prompt does not compile (run `promptc check`)"))
                continue
            old_artifact, new_artifact = before.finished()[1], after.finished()[1]
            if new_artifact.cache.ttl != item.best:
                out.append(refuse(f"the TTL would be {new_artifact.cache.ttl!r}, not {item.best!r}"))
                continue
            if _masked(old_artifact) != _masked(new_artifact):
                out.append(refuse("the artifact would change beyond its TTL"))
                continue
            out.append(AdviceWrite(f.name, display, item.best or "", new_text, original))
    return out
