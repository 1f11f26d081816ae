"""Configuration: `[tool.promptc]` in the project's pyproject.toml, overridden by CLI flags.

Only plain data lives here; reading the file is `load_config`, called by the CLI or `build()`.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from . import codes
from .diagnostics import Diagnostic, SourceText, Span, file_span, make
from .suggest import did_you_mean

DEFAULT_INTRO = "When answering the user's question you may refer to the following context:"
DEFAULT_DISCLAIMER = (
    "Important: this context is not necessarily relevant to the current task. "
    "Do not respond to it unless it is highly relevant."
)
from .language import CACHE_TTLS, ROLES  # noqa: E402 - re-exported: the roles are the language's


@dataclass(frozen=True, slots=True)
class Config:
    src: str = "prompts_src"
    out: str = "build"
    defines: tuple[tuple[str, str], ...] = ()
    #: "" lets each prompt's provider profile pick (cl100k_base when no profile applies)
    tokenizer: str = ""
    #: the provider profile for every prompt: "anthropic", "openai", "gemini", or "" to take it from
    #: each prompt's model. Profiles live in promptc/data/providers.json.
    provider: str = ""
    #: the model of prompts that set no `/// param: model=`
    model: str = ""
    #: Anthropic breakpoint lifetime, "5m" or "1h" ("" leaves the provider's default, 5 minutes)
    cache_ttl: str = ""
    #: where `promptc build` writes the generated Python bindings (`promptc gen python`), "" for nowhere
    python_bindings: str = ""
    #: where `promptc build` writes the generated TypeScript bindings (`promptc gen typescript`)
    typescript_bindings: str = ""
    default_role: str = "system"
    intro: str = DEFAULT_INTRO
    disclaimer: str = DEFAULT_DISCLAIMER
    require_declared_inputs: bool = False
    #: overrides of the minimum cacheable prefix, by provider name or model-name prefix:
    #: {"claude-sonnet-4-5" = 2048}
    provider_minimums: tuple[tuple[str, int], ...] = ()
    #: warning codes not to report, for the whole project (CLI: `--allow CODE`, repeatable); a
    #: `/// promptc: allow CODE` comment allows one on one line
    allow: tuple[str, ...] = ()
    #: W710 fires when moving the element that ends the prefix would make at least this many
    #: more tokens cacheable
    stable_run_tokens: int = 64
    #: where `pyproject.toml` was found (for messages only; never written into artifacts)
    origin: str | None = field(default=None, compare=False)

    @property
    def defines_map(self) -> dict[str, str]:
        return dict(self.defines)

    def with_defines(self, defines: dict[str, str]) -> Config:
        """This config with more build-time constants; a name given again takes the new value."""
        if not defines:
            return self
        return replace(self, defines=tuple(sorted({**self.defines_map, **defines}.items())))

    def profile(self, model: str | None):
        """The provider profile for a prompt of `model` (`promptc.profiles.Profile`), with this
        config's minimum overrides applied; None when neither `provider` nor the model names one."""
        from .profiles import resolve

        profile = resolve(self.provider or None, model or self.model or None)
        if profile is None or not self.provider_minimums:
            return profile
        overrides = dict(self.provider_minimums)
        model = model or self.model
        best = max((key for key in overrides if model and model.startswith(key)), key=len, default=None)
        if best is None and profile.name in overrides:
            best = profile.name
        if best is None:
            return profile
        return replace(profile, min_cacheable_tokens=overrides[best], family=best)

    def fingerprint(self) -> str:
        """What in the config can change artifact bytes (for incremental build caches)."""
        parts = [
            repr(self.defines),
            self.tokenizer,
            self.provider,
            self.model,
            self.cache_ttl,
            self.default_role,
            self.intro,
            self.disclaimer,
            repr(self.require_declared_inputs),
            repr(self.provider_minimums),
            # not artifact bytes, but the warnings the incremental cache keeps with each artifact
            repr(self.allow),
            repr(self.stable_run_tokens),
        ]
        return "\x1f".join(parts)


_KEYS = {f.name for f in fields(Config)} - {"origin"}


def find_pyproject(start: Path) -> Path | None:
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _coerce(key: str, value: Any) -> tuple[Any, str | None]:
    if key == "defines":
        if not isinstance(value, dict) or not all(isinstance(v, (str, int, float, bool)) for v in value.values()):
            return None, "`defines` must be a table of strings"
        return tuple(sorted((str(k), v if isinstance(v, str) else str(v)) for k, v in value.items())), None
    if key == "provider_minimums":
        if not isinstance(value, dict) or not all(isinstance(v, int) for v in value.values()):
            return None, "`provider_minimums` must be a table of integers"
        return tuple(sorted(value.items())), None
    if key == "allow":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return None, '`allow` must be a list of warning codes, e.g. ["W710"]'
        names, problem = allow_codes(value)
        return (names, None) if problem is None else (None, f"`allow`: {problem}")
    if key == "stable_run_tokens":
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            return None, "`stable_run_tokens` must be a positive integer (tokens)"
        return value, None
    if key == "require_declared_inputs":
        if not isinstance(value, bool):
            return None, "`require_declared_inputs` must be true or false"
        return value, None
    if not isinstance(value, str):
        return None, f"`{key}` must be a string"
    if key == "tokenizer" and value:
        unknown = tokenizer_problem(value)
        if unknown is not None:
            return None, unknown[0]
    if key == "cache_ttl" and value not in ("", *CACHE_TTLS):
        return None, f"`cache_ttl` must be one of {', '.join(CACHE_TTLS)}"
    if key == "default_role" and value not in ROLES:
        return None, f"`default_role` must be one of {', '.join(ROLES)}"
    return value, None


def tokenizer_problem(name: str) -> tuple[str, str] | None:
    """(message, hint) for a tokenizer name promptc does not have, else None: the names `meter`
    serves offline, and "did you mean" (`cl100k` → `cl100k_base`)."""
    from .meter import APPROX, OFFLINE_ENCODINGS

    known = sorted([*OFFLINE_ENCODINGS, APPROX])
    if name in known:
        return None
    close = next((k for k in known if k.startswith(name.lower())), None) or did_you_mean(name, known)
    message = f"unknown tokenizer `{name}` (available offline: {', '.join(known)})"
    hint = f"did you mean `{close}`?" if close else "leave it empty to let each prompt's provider profile pick one"
    return message, hint


def allow_codes(values) -> tuple[tuple[str, ...], str | None]:
    """The warning codes of `allow` (config) or `--allow` (CLI), upper-cased, sorted, without
    repeats; or the problem: a name that is no code, or an error's code (errors cannot be allowed)."""
    from .codes import CODES

    names = sorted({str(value).strip().upper() for value in values if str(value).strip()})
    for name in names:
        if name not in CODES:
            close = did_you_mean(name, list(CODES), limit=2)
            return (), f"`{name}` is not a diagnostic code" + (f" (did you mean {close}?)" if close else "")
        if CODES[name].severity == "error":
            return (), f"`{name}` is an error; only warnings can be allowed"
    return tuple(names), None


def validate(config: Config) -> str | None:
    """Cross-field checks, after file values and CLI flags are merged."""
    from .profiles import providers

    if config.provider and config.provider not in providers():
        close = did_you_mean(config.provider.split(":")[0], providers())
        extra = f"; did you mean `{close}`?" if close else ""
        return f"unknown provider `{config.provider}`{extra} (known: {', '.join(providers())})"
    return None


#: `load_config()`'s default: find the pyproject.toml as the CLI does
FIND: Any = object()


def load_config(pyproject: Path | None = FIND) -> tuple[Config, list[Diagnostic]]:
    """Read `[tool.promptc]` of `pyproject` — by default of the nearest pyproject.toml from the
    current folder up, as the CLI finds it; None means no file (the defaults). Unknown keys are
    warnings, bad values errors; paths in the file resolve against the file's folder."""
    if pyproject is FIND:
        pyproject = find_pyproject(Path.cwd())
    if pyproject is None or not pyproject.is_file():
        return Config(), []
    try:
        path = os.path.relpath(pyproject)
    except ValueError:
        path = str(pyproject)
    diagnostics: list[Diagnostic] = []
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return Config(origin=path), [
            make(codes.INVALID_CONFIG, f"cannot read {pyproject.name}: {exc}", file_span(), path=path)
        ]
    table = data.get("tool", {}).get("promptc", {})
    if not isinstance(table, dict):
        return Config(origin=path), [
            make(codes.INVALID_CONFIG, "[tool.promptc] must be a table", file_span(), path=path)
        ]
    values: dict[str, Any] = {}
    source = SourceText.of(path, pyproject.read_text(encoding="utf-8"))
    for key, value in table.items():
        span = _key_span(source, key)
        if key not in _KEYS:
            close = did_you_mean(key, _KEYS, limit=3)
            diagnostics.append(
                make(
                    codes.UNKNOWN_CONFIG_KEY,
                    f"unknown key `{key}` in [tool.promptc]",
                    span,
                    f"did you mean `{close}`?" if close else f"known keys: {', '.join(sorted(_KEYS))}",
                )
            )
            continue
        coerced, problem = _coerce(key, value)
        if problem:
            hint = "see `promptc explain E902`"
            if key == "tokenizer" and isinstance(value, str):
                hint = (tokenizer_problem(value) or (problem, hint))[1]
            diagnostics.append(make(codes.INVALID_CONFIG, problem, span, hint))
            continue
        values[key] = coerced
    for key in ("src", "out", "python_bindings", "typescript_bindings"):
        # Paths in the file are relative to the file, wherever promptc runs from (as tsc's
        # tsconfig.json and ruff's pyproject.toml have it); shown relative to the current folder.
        if key in values and values[key] and not os.path.isabs(values[key]):
            values[key] = _relative(os.path.join(os.path.dirname(os.path.abspath(pyproject)), values[key]))
    if "promptc" in data.get("tool", {}) and pyproject.parent.resolve() != Path.cwd().resolve():
        for key in ("src", "out"):  # the defaults too: they are the file's folder's `prompts_src`, `build`
            values.setdefault(
                key, _relative(os.path.join(os.path.dirname(os.path.abspath(pyproject)), getattr(Config(), key)))
            )
    config = replace(Config(origin=path), **values)
    problem = validate(config)
    if problem:
        diagnostics.append(
            make(codes.INVALID_CONFIG, problem, _key_span(source, "provider"), "see `promptc explain E902`")
        )
        config = replace(config, provider="")
    return config, diagnostics


def _relative(path: str) -> str:
    """`path` relative to the current folder when that is shorter to read, else absolute."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return rel if not rel.startswith(os.pardir + os.sep + os.pardir + os.sep + os.pardir) else os.path.abspath(path)


def _key_span(source: SourceText, key: str) -> Span:
    """Where a key of [tool.promptc] is written, for diagnostics (the table header if not found)."""
    text = source.text
    section = max(text.find("[tool.promptc]"), 0)
    match = re.compile(rf"^[ \t]*{re.escape(key)}[ \t]*=", re.M).search(text, section)
    offset = match.start() + (len(match.group(0)) - len(match.group(0).lstrip())) if match else section
    return source.span(offset, offset + (len(key) if match else len("[tool.promptc]")))
