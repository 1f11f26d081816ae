"""Provider profiles: what a provider caches, how it counts, and which request parameters it takes.

The facts live in one data file shipped with the package, `promptc/data/providers.json`; every
number there carries the URL it was read from and the date it was read (`docs/caching.md` prints
them). This module reads that file and answers the questions the build and the runtime ask:

- `resolve(provider, model)`: the profile that applies to a prompt — the configured `provider`, else
  the provider whose model names the model starts with — with the per-model numbers picked by
  the longest model-name prefix that matches;
- `Profile.cacheable(tokens)`: what the provider actually caches of a stable prefix of that many
  tokens (0 below the model's minimum; OpenAI counts in 128-token steps above it);
- `shape_params(shape)`: how each shape spells the request parameters promptc knows (`max_tokens`,
  `stop`, `temperature`…), checked by the tests against the installed official SDKs;
- what each provider's cache keys on (`Profile.cache_order`, `cache_params`, `schema_cached`,
  `schema_level`) and `resolve_model(provider, model)`, the model as the provider resolves it (an
  alias counts as the dated snapshot it points to), which `promptc.runtime.requestmodel` hashes;
- `context_window(provider, model)`: the model's context window, which `promptc.backend.budget` checks;
- `shape_provider(shape)` and `shape_requires(shape)`: the provider a shape's call goes to, and what
  its API requires of the turns;
- platforms: a Bedrock model id is looked up without its cross-Region prefix (`base_model`), a
  Vertex AI id (`claude-…@20250929`) is recognised by its form (`model_pattern`), and a platform that
  serves another provider's models as that provider documents them (`same_as`) takes that
  provider's facts where it states none of its own.

Standard library only: the runtime imports it to render shapes.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from .lazy import lazy_import
from .records import dataclass

if TYPE_CHECKING:
    from importlib import resources
else:  # only for a package imported from a zip (its wheel)
    resources = lazy_import("importlib.resources")

__all__ = [
    "MARKER_SHAPES",
    "Profile",
    "ProfileError",
    "base_model",
    "data",
    "providers",
    "resolve",
    "resolve_model",
    "shape_params",
    "shape_provider",
    "shape_requires",
    "provider_of_model",
    "context_window",
]


#: `promptc/data/`, where the providers' data ships
_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")


class ProfileError(ValueError):
    """An unknown provider name."""


@cache
def data() -> dict[str, Any]:
    """The decoded `providers.json` (read once per process)."""
    # the package's own data file, beside its code (importlib.resources would cost every process
    # that reads it the import of tempfile, shutil and the compression modules), or in its wheel
    if os.path.isdir(_DATA):
        with open(os.path.join(_DATA, "providers.json"), encoding="utf-8") as handle:
            text = handle.read()
    else:
        text = resources.files("promptc.data").joinpath("providers.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    for entry in loaded["providers"].values():
        # a platform that serves another provider's models as that provider documents them (Claude
        # on Vertex AI): the facts it does not state itself are that provider's
        same = (entry.get("same_as") or {}).get("value")
        if same:
            for key, fact in loaded["providers"][same].items():
                entry.setdefault(key, fact)
    return loaded


def providers() -> tuple[str, ...]:
    return tuple(data()["providers"])


def base_model(entry: dict[str, Any], model: str | None) -> str | None:
    """`model` without the cross-Region inference profile in front of it (`us.anthropic.claude-…`
    → `anthropic.claude-…`, providers.json `inference_profiles`): the id the per-model facts of a
    platform are keyed by."""
    if not model:
        return model
    for prefix in (entry.get("inference_profiles") or {}).get("value") or ():
        if model.startswith(prefix):
            return model[len(prefix) :]
    return model


def _for_model(entry: dict[str, Any], key: str, model: str | None) -> tuple[Any, str | None]:
    """A sourced fact (`{"value": …, "by_model": {prefix: …}, "source": …}`) for `model`: the entry
    of the longest model-name prefix that matches, else the fact's value; and that prefix (or None)."""
    fact = entry.get(key)
    if not isinstance(fact, dict):
        return fact, None
    model = base_model(entry, model)
    table = fact.get("by_model") or {}
    best = max((prefix for prefix in table if model and model.startswith(prefix)), key=len, default=None)
    if best is not None:
        return table[best], best
    return fact.get("value"), None


@lru_cache(maxsize=1024)  # asked on every render for another model: the answer never changes
def provider_of_model(model: str | None) -> str | None:
    """The provider whose model names `model` starts with (`claude-…` → anthropic), or whose model
    ids it has the form of (`claude-sonnet-4-5@20250929` → anthropic-vertex: `model_pattern`)."""
    if not model:
        return None
    for name, pattern in _model_patterns():
        if pattern.fullmatch(model):
            return name
    matches = [
        (len(prefix), name)
        for name, entry in data()["providers"].items()
        for prefix in entry["model_prefixes"]
        if model.startswith(prefix)
    ]
    return max(matches)[1] if matches else None


@cache
def _model_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple(
        (name, re.compile(entry["model_pattern"]["value"]))
        for name, entry in data()["providers"].items()
        if entry.get("model_pattern")
    )


#: The request shapes whose cache is written only where the request marks it, at most
#: `max_breakpoints` markers (`cache_control`, `cachePoint`): the artifact's breakpoints are theirs.
MARKER_SHAPES = ("anthropic", "anthropic-vertex", "bedrock")


@dataclass(frozen=True, slots=True)
class Profile:
    """One provider's numbers for one model (or for the provider's models in general)."""

    name: str
    shape: str
    #: the model-name prefix whose numbers apply (`claude-opus-4-5`), or None for the provider's default
    family: str | None
    tokenizer: str
    #: counts with `tokenizer` are the provider's own (True) or an estimate (False)
    tokens_exact: bool
    min_cacheable_tokens: int
    #: cached prefixes grow in steps of this many tokens past the minimum (OpenAI: 128), or None
    cache_step_tokens: int | None
    max_breakpoints: int | None
    lookback_blocks: int | None
    cache_ttls: tuple[str, ...]
    #: the levels of the request in the order the provider's cache reads them
    #: (`("tools", "system", "messages")`; OpenAI puts the output schema between tools and messages)
    cache_order: tuple[str, ...] = ("tools", "output_schema", "messages")
    #: the request parameters the cache keys on, each with the level whose entries a change of it
    #: invalidates (`(("tool_choice", "messages"), ("thinking", "messages"))` for Anthropic)
    cache_params: tuple[tuple[str, str], ...] = ()
    #: the output schema is content the cache covers (OpenAI) or not (Anthropic, Gemini) …
    schema_cached: bool = True
    #: … and, when not, the level it keys (Anthropic: "system"), or None: it keys nothing
    schema_level: str | None = "output_schema"
    #: the request marks the end of the stable prefix with an explicit breakpoint, and the
    #: provider matches a cached prefix only there (OpenAI GPT-5.6 and later)
    explicit_breakpoints: bool = False
    #: the `prompt_cache_retention` the model requires (`24h`: OpenAI GPT-5.5 and later), or None
    cache_retention: str | None = None

    @property
    def marks_blocks(self) -> bool:
        """The provider caches only where the request puts a marker, at most `max_breakpoints`
        (Claude, on its API, on Bedrock, on Vertex AI): `MARKER_SHAPES`."""
        return self.shape in MARKER_SHAPES

    def cacheable(self, tokens: int) -> int:
        """What the provider caches of a stable prefix of `tokens` tokens."""
        if tokens < self.min_cacheable_tokens:
            return 0
        if self.cache_step_tokens:
            steps = (tokens - self.min_cacheable_tokens) // self.cache_step_tokens
            return self.min_cacheable_tokens + steps * self.cache_step_tokens
        return tokens


def resolve(provider: str | None, model: str | None) -> Profile | None:
    """The profile for a prompt: `provider` (from config) if given, else the model's provider; None
    when neither names one. Raises `ProfileError` for an unknown provider name."""
    table = data()["providers"]
    name = provider or provider_of_model(model)
    if not name:
        return None
    entry = table.get(name)
    if entry is None:
        raise ProfileError(f"unknown provider `{name}`; known: {', '.join(table)}")
    minimum, family = _for_model(entry, "min_cacheable_tokens", model)
    step, step_family = _for_model(entry, "cache_step_tokens", model)
    tokenizer, _ = _for_model(entry, "tokenizer", model)
    return Profile(
        name,
        entry["shape"],
        family or step_family,
        str(tokenizer),
        bool(entry["tokenizer"]["exact"]),
        int(minimum),
        step,
        _for_model(entry, "max_breakpoints", model)[0],
        _for_model(entry, "lookback_blocks", model)[0],
        tuple(_for_model(entry, "cache_ttls", model)[0] or ()),
        *_cache_key(entry),
        explicit_breakpoints=bool(_for_model(entry, "explicit_breakpoints", model)[0]),
        cache_retention=_for_model(entry, "cache_retention", model)[0],
    )


def _cache_key(entry: dict[str, Any]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...], bool, str | None]:
    key = entry.get("cache_key") or {}
    schema = key.get("output_schema") or {}
    order = tuple((entry.get("cache_order") or {}).get("value") or ("tools", "output_schema", "messages"))
    params = tuple((name, fact["level"]) for name, fact in (key.get("params") or {}).items())
    cached = bool(schema.get("cached", True))
    return order, params, cached, schema.get("level", "output_schema" if cached else None)


def resolve_model(provider: str | None, model: str | None) -> str | None:
    """`model` as `provider` resolves it: an alias listed in the provider's `model_aliases` is the
    dated snapshot it points to (`claude-sonnet-4-5` → `claude-sonnet-4-5-20250929`); any other
    name is itself."""
    if not model or not provider:
        return model
    entry = data()["providers"].get(provider) or {}
    aliases = (entry.get("model_aliases") or {}).get("value") or {}
    resolved: str | None = aliases.get(model, model)
    return resolved


def context_window(provider: str | None, model: str | None) -> tuple[int, str] | None:
    """(the model's context window in tokens, the page it was read from), or None when the
    profile does not know it (providers.json `context_window`; whether it must hold the output
    too: `window_includes_output`)."""
    entry = data()["providers"].get(provider or "")
    if entry is None or "context_window" not in entry:
        return None
    value, family = _for_model(entry, "context_window", model)
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    fact = entry["context_window"]
    source = (fact.get("sources_by_model") or {}).get(family or "", fact.get("source", ""))
    return value, source


def window_includes_output(provider: str | None) -> bool:
    """Whether the provider's context window must hold the output (`max_tokens`) too."""
    entry = data()["providers"].get(provider or "") or {}
    return bool((entry.get("context_window") or {}).get("includes_output", True))


def shape_provider(shape: str) -> str | None:
    """The provider whose API a shape's call goes to (`openai-responses` → openai); None for `plain`."""
    entry = data()["shapes"].get(shape) or {}
    return entry.get("provider")


def shape_requires(shape: str) -> str | None:
    """What the shape's API requires of the turns: `user_turn` (a turn after the opening system
    part), `user_first` (that, and the first turn a user's: Bedrock's Converse), `message` (any
    message), or None."""
    entry = data()["shapes"].get(shape) or {}
    return (entry.get("requires") or {}).get("needs")


def shape_params(shape: str) -> dict[str, str]:
    """promptc's parameter names → the names the shape's SDK call takes (`stop` → `stop_sequences`).
    A shape's own spelling is accepted as well (`max_completion_tokens` in the openai shape)."""
    entry = data()["shapes"].get(shape)
    if entry is None:
        return {}
    names = dict(entry["params"])
    for native in list(names.values()):
        names.setdefault(native, native)
    return names
