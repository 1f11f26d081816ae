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
from .language import ROLES  # noqa: E402 - re-exported: the roles are the language's


@dataclass(frozen=True, slots=True)
class Config:
    src: str = "prompts_src"
    out: str = "build"
    defines: tuple[tuple[str, str], ...] = ()
    tokenizer: str = "cl100k_base"
    #: provider whose prompt-cache minimum prefix size is checked: "anthropic", "anthropic:opus", "openai",
    #: "gemini:flash"…, or "" for no check. Minimums live in compiler/data/providers.json.
    provider: str = ""
    default_role: str = "system"
    intro: str = DEFAULT_INTRO
    disclaimer: str = DEFAULT_DISCLAIMER
    require_declared_inputs: bool = False
    #: overrides or additions to the provider minimums table: {"myproxy": 512}
    provider_minimums: tuple[tuple[str, int], ...] = ()
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

    def provider_minimum(self) -> int | None:
        """The chosen provider's minimum cacheable prefix (tokens), or None when no provider is set."""
        if not self.provider:
            return None
        return {**provider_minimums(), **dict(self.provider_minimums)}.get(self.provider)

    def fingerprint(self) -> str:
        """What in the config can change artifact bytes (for incremental build caches)."""
        parts = [
            repr(self.defines),
            self.tokenizer,
            self.provider,
            self.default_role,
            self.intro,
            self.disclaimer,
            repr(self.require_declared_inputs),
            repr(self.provider_minimums),
        ]
        return "\x1f".join(parts)


def provider_minimums() -> dict[str, int]:
    import json
    from importlib import resources

    data = json.loads(resources.files("promptc.data").joinpath("providers.json").read_text(encoding="utf-8"))
    return dict(data["minimums"])


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
    if key == "require_declared_inputs":
        if not isinstance(value, bool):
            return None, "`require_declared_inputs` must be true or false"
        return value, None
    if not isinstance(value, str):
        return None, f"`{key}` must be a string"
    if key == "default_role" and value not in ROLES:
        return None, f"`default_role` must be one of {', '.join(ROLES)}"
    return value, None


def validate(config: Config) -> str | None:
    """Cross-field checks, after file values and CLI flags are merged."""
    if config.provider and config.provider_minimum() is None:
        known = sorted({**provider_minimums(), **dict(config.provider_minimums)})
        return f"unknown provider `{config.provider}`; known: {', '.join(known)}"
    return None


def load_config(pyproject: Path | None) -> tuple[Config, list[Diagnostic]]:
    """Read `[tool.promptc]`; unknown keys are warnings, bad values errors."""
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
            diagnostics.append(make(codes.INVALID_CONFIG, problem, span, "see docs/configuration.md"))
            continue
        values[key] = coerced
    config = replace(Config(origin=path), **values)
    problem = validate(config)
    if problem:
        diagnostics.append(
            make(codes.INVALID_CONFIG, problem, _key_span(source, "provider"), "see docs/configuration.md")
        )
        config = replace(config, provider="")
    return config, diagnostics


def _key_span(source: SourceText, key: str) -> Span:
    """Where a key of [tool.promptc] is written, for diagnostics (the table header if not found)."""
    text = source.text
    section = max(text.find("[tool.promptc]"), 0)
    match = re.compile(rf"^[ \t]*{re.escape(key)}[ \t]*=", re.M).search(text, section)
    offset = match.start() + (len(match.group(0)) - len(match.group(0).lstrip())) if match else section
    return source.span(offset, offset + (len(key) if match else len("[tool.promptc]")))
