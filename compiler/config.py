"""Configuration: `[tool.promptc]` in the project's pyproject.toml, overridden by CLI flags.

Only plain data lives here; reading the file is `load_config`, called by the CLI or `build()`.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .diagnostics import Diagnostic, Span

DEFAULT_INTRO = "When answering the user's question you may refer to the following context:"
DEFAULT_DISCLAIMER = (
    "Important: this context is not necessarily relevant to the current task. "
    "Do not respond to it unless it is highly relevant."
)
ROLES = ("system", "developer", "user", "assistant")


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


_KEYS = {f.name for f in fields(Config)} - {"origin"}


def find_pyproject(start: Path) -> Path | None:
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _coerce(key: str, value: Any, path: str) -> tuple[Any, str | None]:
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


def load_config(pyproject: Path | None) -> tuple[Config, list[Diagnostic]]:
    """Read `[tool.promptc]`; unknown keys are warnings, bad values errors."""
    if pyproject is None or not pyproject.is_file():
        return Config(), []
    path = str(pyproject)
    diagnostics: list[Diagnostic] = []
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return Config(origin=path), [Diagnostic("E902", "error", f"cannot read {pyproject.name}: {exc}", path, Span(0, 0, 1, 1))]
    table = data.get("tool", {}).get("promptc", {})
    if not isinstance(table, dict):
        return Config(origin=path), [Diagnostic("E902", "error", "[tool.promptc] must be a table", path, Span(0, 0, 1, 1))]
    values: dict[str, Any] = {}
    text = pyproject.read_text(encoding="utf-8")
    for key, value in table.items():
        span = _key_span(text, key)
        if key not in _KEYS:
            close = difflib.get_close_matches(key, sorted(_KEYS), n=1)
            diagnostics.append(
                Diagnostic(
                    "W903",
                    "warning",
                    f"unknown key `{key}` in [tool.promptc]",
                    path,
                    span,
                    f"did you mean `{close[0]}`?" if close else f"known keys: {', '.join(sorted(_KEYS))}",
                )
            )
            continue
        coerced, problem = _coerce(key, value, path)
        if problem:
            diagnostics.append(Diagnostic("E902", "error", problem, path, span))
            continue
        values[key] = coerced
    return replace(Config(origin=path), **values), diagnostics


def _key_span(text: str, key: str) -> Span:
    """Best-effort location of a key inside [tool.promptc] for diagnostics."""
    section = text.find("[tool.promptc]")
    start = 0 if section == -1 else section
    offset = text.find(f"\n{key}", start)
    offset = offset + 1 if offset != -1 else max(section, 0)
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Span(offset, offset + len(key), line, col)
