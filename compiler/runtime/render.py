"""Render built artifacts into requests: `load("build").render("name", **inputs)`.

This module is the part of promptc an application ships with, so it is kept light: the standard
library only (no lark, no tiktoken, no compiler passes). It reads `manifest.json` on first use and
each artifact the first time it is asked for.

Rendering rules (docs/language.md, "Artifact text"):

* Every input the artifact requires (`input_schema.required`, and every helper) must be passed; a
  missing one raises `MissingInputsError`, whose message names every missing input at once. A
  value the prompt does not take (`questoin=`) raises `UnknownInputsError`, which names the input
  it was probably meant to be; a caller that passes one set of values to many prompts (say
  `env_inputs() | git_inputs()`) opts out with `load(build, unknown_inputs="ignore")` (or
  `render_artifact(…, unknown_inputs="ignore")`), and the values a prompt does not take are
  ignored.
* Values are inserted literally: `${x}` becomes `str(value)` (with the strings inside a list, tuple,
  dict or set written by `repr` with the printable characters of one Unicode version,
  `promptc.facts.printable`, whatever Python renders; a dotted `${a.b}` reads a mapping key,
  or its schema's `default` when the key is absent, else an attribute of an object that is not a
  JSON value: never a method of a `str` or a `dict`, as runtime-js reads no prototype) and the
  result is never parsed again. A path with a segment the attribute rule refuses (one that starts
  with `_`, or reaches an object's internals: `facts.language.UNSAFE_NAMES`) is a RenderError
  before any value is read, for mappings and objects alike, as in runtime-js; the build never
  writes one (E506). A value holding a separator line,
  `${…}`, `{{ }}` or `///` stays text: it cannot add a message, change a role or run code.
* Each section is rendered on its own and the results are joined exactly as the artifact joins them
  (sections of a block and blocks of a message by one blank line), so whitespace control (`{{- x -}}`)
  can never eat a joiner or a byte of a neighbouring stable block: the cache-stable prefix is
  reproduced byte for byte whatever the inputs are.
* `"renderer": "placeholder"` artifacts only substitute `${…}` and drop the backslash of escaped
  openers. The runtime decides by the artifact's `renderer` field, never by the text: a `{{ }}`,
  `{# #}` or `{% %}` block in a placeholder artifact (which a build never writes: it can only be a
  changed artifact) is refused with a RenderError and never compiled or run, as runtime-js does. Sections of `"renderer": "python"` artifacts that hold promplate blocks are compiled
  (once per distinct section text) into Python code with promplate's semantics and run with the
  inputs as globals.

Trust model: a python-renderer artifact *executes the code written in its `.prompt` source*, with
the full power of Python (builtins included; this is not a sandbox). Render only artifacts built
from your own repository, as you would import your own modules; never render an artifact that came
from an untrusted party. Input *values* are always data and are never executed, so rendering
untrusted user text through a trusted artifact is safe. Placeholder-renderer artifacts run no code,
whatever their text holds, and their paths keep the attribute rule (checked here, at render time),
so they are the artifacts that are safe to render whoever wrote them.

Deliberate difference from promplate: the template runs as module-level code whose globals are the
inputs, so a name assigned on only some paths (`{% if c %}{# x = 1 #}{% endif %}{{ x }}`) falls back
to the input of that name (which the compiler lists as required) instead of raising
`UnboundLocalError`. `${path}` inside a python section always reads the inputs, never template
variables, matching the compiler, for which every placeholder root is an input.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

from ..facts.language import JOINER, PLACEHOLDER_PATH, SHAPES, unsafe_name, unsafe_segment
from ..facts.printable import text_of
from ..facts.records import dataclass
from ..facts.suggest import suggestions
from .buildfolder import BuildFolder, BuildFolderError
from .inputtypes import check_value, predicate
from .model import Artifact, ArtifactError, Manifest, OutputSchema, Tool
from .shapes import NOT_GIVEN, ShapeError
from .shapes import body as body_of_shape
from .shapes import build as build_shape
from .template import NOT_TEXT, CompiledSection, TemplateSyntaxError, compile_section, execute, scan
from .template import OutputError as TemplateOutputError
from .usage import UsageError, make_record
from .usage import emit as emit_usage

__all__ = [
    "load",
    "Runtime",
    "Rendered",
    "RenderedBlock",
    "render_artifact",
    "RenderError",
    "MissingInputsError",
    "UnknownInputsError",
    "InputTypeError",
    "OutputError",
    "parse_output",
    "TemplateError",
    "SHAPES",
]


class RenderError(ValueError):
    """An artifact cannot be rendered: unknown prompt, bad build folder, bad input value…"""


class MissingInputsError(RenderError):
    def __init__(self, prompt: str, missing: list[str]) -> None:
        self.prompt = prompt
        self.missing = tuple(missing)
        names = ", ".join(self.missing)
        plural = "s" if len(self.missing) != 1 else ""
        super().__init__(f"prompt `{prompt}` is missing {len(self.missing)} input{plural}: {names}")


class UnknownInputsError(RenderError):
    """Values for inputs the prompt does not take (often a misspelt one): `unknown` names them,
    `suggestions` maps each to the input it was probably meant to be, `missing` lists the
    required inputs not passed. The message is the JavaScript runtime's, byte for byte."""

    def __init__(self, prompt: str, unknown: list[str], known: list[str], missing: list[str]) -> None:
        self.prompt = prompt
        self.unknown = tuple(sorted(unknown))
        self.missing = tuple(sorted(missing))
        close = {name: suggestions(name, known) for name in self.unknown}
        self.suggestions = {name: found[0] for name, found in close.items() if found}
        shown = [
            f"{name} (did you mean `{self.suggestions[name]}`?)" if name in self.suggestions else name
            for name in self.unknown
        ]
        plural = "s" if len(self.unknown) != 1 else ""
        message = f"prompt `{prompt}` got {len(self.unknown)} unknown input{plural}: {', '.join(shown)}"
        message += f"; it takes: {', '.join(sorted(known)) or 'no inputs'}"
        if self.missing:
            message += f"; missing: {', '.join(self.missing)}"
        super().__init__(message)


#: what `unknown_inputs=` may be
UNKNOWN_INPUTS = ("error", "ignore")


def _unknown_mode(value: str) -> bool:
    """Whether values for inputs a prompt does not take are an error (`"error"`) or ignored."""
    if value not in UNKNOWN_INPUTS:
        raise ValueError(f"unknown_inputs must be one of {', '.join(map(repr, UNKNOWN_INPUTS))}, got {value!r}")
    return value == "error"


class InputTypeError(RenderError):
    """Input values that do not match the prompt's declared types; `problems` lists every one, by
    path (`history[2]: expected a string, got 3`)."""

    def __init__(self, prompt: str, problems: list[str]) -> None:
        self.prompt = prompt
        self.problems = tuple(problems)
        plural = "s" if len(problems) != 1 else ""
        super().__init__(f"prompt `{prompt}`: {len(problems)} input{plural} of the wrong type: " + "; ".join(problems))


def _checked_fast(
    prompt: str,
    checks: tuple[tuple[str, Any], ...],
    schema: Mapping[str, Any],
    names: tuple[str, ...],
    inputs: Mapping[str, Any],
) -> Mapping[str, Any]:
    """`_checked`, with each declared input first run through its precompiled predicate: the
    messages (every problem, by path) are worked out only when one says no."""
    for input_name, ok in checks:
        if input_name in inputs and not ok(inputs[input_name]):
            return _checked(prompt, schema, names, inputs)
    absent = [n for n in names if n not in inputs]
    return {**inputs, **dict.fromkeys(absent)} if absent else inputs


def _checked(
    prompt: str, schema: Mapping[str, Any], names: tuple[str, ...], inputs: Mapping[str, Any]
) -> Mapping[str, Any]:
    """`inputs` checked against the declared types (every problem reported at once); an optional
    input left out renders as None."""
    properties = schema.get("properties", {})
    problems: list[str] = []
    absent = [n for n in names if n not in inputs]
    for input_name in names:
        declared = properties.get(input_name)
        if declared and input_name in inputs:
            problems += check_value(declared, inputs[input_name], input_name)
    if problems:
        raise InputTypeError(prompt, problems)
    return {**inputs, **dict.fromkeys(absent)} if absent else inputs


class OutputError(RenderError):
    """A provider response that does not match the prompt's output contract (its `/// output:`
    schema): `problems` lists every way it fails, by path (`response.answer: expected a string,
    got 3`); the message is the JavaScript runtime's, byte for byte."""

    def __init__(self, prompt: str, problems: list[str]) -> None:
        self.prompt = prompt
        self.problems = tuple(problems)
        plural = "s" if len(problems) != 1 else ""
        super().__init__(
            f"prompt `{prompt}`: the response does not match its output schema ({len(problems)} problem{plural}): "
            + "; ".join(problems)
        )


def _response_value(response: Any) -> Any:
    """The JSON value a provider response holds: JSON text (str or bytes) decoded; a mapping, a
    list or a scalar as it is; an official SDK's response object read where that SDK puts the
    structured output (openai `responses`: `output_text`; openai chat: the first choice's
    `message.parsed`, else its `content`; anthropic: the first `tool_use` block's `input`, else the
    first text block; google-genai: `parsed`, else `text`)."""
    if isinstance(response, (str, bytes, bytearray)):
        try:
            return json.loads(response)
        except ValueError:
            raise _NotJson from None
    if response is None or isinstance(response, (Mapping, list, tuple, int, float, bool)):
        return response
    text = getattr(response, "output_text", None)
    if isinstance(text, str):
        return _response_value(text)
    choices = getattr(response, "choices", None)
    if isinstance(choices, (list, tuple)) and choices:
        message = getattr(choices[0], "message", None)
        parsed = getattr(message, "parsed", None)
        if parsed is not None:
            return parsed.model_dump() if hasattr(parsed, "model_dump") else parsed
        return _response_value(getattr(message, "content", None))
    content = getattr(response, "content", None)
    if isinstance(content, (list, tuple)):
        for block in content:
            if getattr(block, "type", None) == "tool_use":
                return getattr(block, "input", None)
        for block in content:
            if getattr(block, "type", None) == "text":
                return _response_value(getattr(block, "text", ""))
    parsed = getattr(response, "parsed", None)
    if parsed is not None:
        return parsed.model_dump() if hasattr(parsed, "model_dump") else parsed
    text = getattr(response, "text", None)
    if isinstance(text, str):
        return _response_value(text)
    return response


class _NotJson(Exception):
    pass


def parse_output(artifact: Artifact | Mapping[str, Any], response: Any) -> Any:
    """The value of a provider `response` to prompt `artifact`, checked against its output
    contract (every problem at once, as `OutputError`); see `_response_value` for what a response
    may be. A prompt without a checkable output schema (none, or W827) is a RenderError."""
    if not isinstance(artifact, Artifact):
        try:
            artifact = Artifact.from_json(artifact)
        except ArtifactError as exc:
            raise RenderError(str(exc)) from None
    if artifact.output_contract is None:
        why = (
            "no `/// output:` schema"
            if artifact.output_schema is None
            else "an output schema both runtimes cannot check (W827)"
        )
        raise RenderError(f"prompt `{artifact.name}` has {why}: there is no output contract to parse against")
    try:
        value = _response_value(response)
    except _NotJson:
        raise OutputError(artifact.name, ["response: not valid JSON"]) from None
    problems = check_value(artifact.output_contract, value, "response")
    if problems:
        raise OutputError(artifact.name, problems)
    return value


class TemplateError(RenderError):
    """Template code of a python-renderer section failed to compile or raised while running."""

    def __init__(
        self, message: str, prompt: str, section: str, line: int | None = None, source: str | None = None
    ) -> None:
        self.prompt = prompt
        self.section = section
        self.line = line
        #: where the failing code is written: `path:line` under the source folder (None if unknown)
        self.source = source
        where = f"{source}: " if source else ""
        where += f"prompt `{prompt}`, section `{section}`" + (f", line {line}" if line and not source else "")
        super().__init__(f"{where}: {message}")


# ---------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True, slots=True)
class RenderedBlock:
    boundary: str  # "stable" | "dynamic"
    text: str
    #: a cache breakpoint of the artifact ends with this block
    breakpoint: bool = False
    #: the anthropic shape puts `cache_control` on this block (one of the at most four markers the
    #: artifact records; always a non-empty stable block)
    anthropic: bool = False


@dataclass(frozen=True)
class Rendered:
    name: str
    messages: list[dict[str, str]]
    #: per message, its rendered blocks (the message content is their texts joined by a blank line)
    blocks: list[list[RenderedBlock]]
    prefix_sha256: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    #: the artifact's model (`/// param: model=` or config `model`), if it has one
    model: str | None = None
    tools: tuple[Tool, ...] = ()
    output_schema: OutputSchema | None = None
    #: the Anthropic breakpoint TTL (`cache_ttl`), or None for the provider's default
    ttl: str | None = None
    #: the artifact marks a breakpoint for Anthropic on the last tool
    head_breakpoint: bool = False
    #: the provider of the artifact's profile (`anthropic`), None without one
    provider: str | None = None
    #: the model as the provider resolves it, which the prefix hash covers (`cache.key.model`)
    cache_model: str | None = None
    #: (message, block) of the block that ends the cache-stable prefix, where the openai shapes put
    #: `prompt_cache_breakpoint` for a model with explicit breakpoints; None: the prefix ends in the
    #: head (the tools), or there is none
    stable_end: tuple[int, int] | None = None
    #: the sha256 of the artifact file (the manifest's), when rendered from a build folder
    artifact_sha256: str | None = None
    #: when this request was rendered (epoch seconds; not part of equality)
    rendered_at: float | None = field(default=None, compare=False)

    def usage(
        self,
        response: Any,
        *,
        shape: str | None = None,
        model: str | None = None,
        to: Any = None,
        otel: bool = False,
        timestamp: Any = None,
        started: Any = None,
    ) -> Any:
        """The usage record (`promptc.runtime.usage.UsageRecord`) of the provider's `response` to this
        request: an SDK response object or its decoded JSON. `shape` is the shape it was sent as
        (read from the response when left out), `model` the model it went to when not the
        artifact's; `timestamp` when the response came and `started` when the request was sent
        (default: now, and when it was rendered). The record also goes to `to` (a JSONL file
        path, a callable, or a list of them) and, with `otel=True`, onto the current
        OpenTelemetry span (GenAI attributes).
        A response whose usage cannot be read is a RenderError."""
        try:
            record = make_record(self, response, shape=shape, model=model, timestamp=timestamp, started=started)
            return emit_usage(record, to, otel=otel)
        except UsageError as exc:
            raise RenderError(f"prompt `{self.name}`: {exc}") from None

    def as_shape(
        self,
        shape: str = "plain",
        *,
        model: str | None = None,
        caching: str = "blocks",
        previous_message_id: Any = NOT_GIVEN,
    ) -> Any:
        """The request in a provider's shape: the keyword arguments of its official SDK call
        (`plain`, `anthropic`, `openai`, `openai-responses`, `gemini`, `bedrock`,
        `anthropic-vertex`; see `promptc.runtime.shapes`).
        `model`, when given, is sent instead of the artifact's (the artifact's cache numbers were
        computed for its own model) and must be one of the shape's provider; a shape of another
        provider than the artifact's needs it. The anthropic shapes take two options:
        `caching="automatic"` (one top-level `cache_control` the provider moves to the last
        cacheable block, instead of the artifact's block markers: docs/caching.md says when it
        wins) and `previous_message_id` (the `id` of this conversation's previous response, or None
        on its first turn: the response then says why the cache missed, `diagnostics`). A request
        that cannot be sent (no model, no user turn, another provider's model, an option the shape
        does not take) is a RenderError that names the shape."""
        try:
            return build_shape(self, shape, model, caching=caching, previous_message_id=previous_message_id)
        except ShapeError as exc:
            raise RenderError(str(exc)) from None

    def body(
        self,
        shape: str,
        *,
        model: str | None = None,
        caching: str = "blocks",
        previous_message_id: Any = NOT_GIVEN,
    ) -> bytes:
        """The exact bytes of the request body the pinned Python SDK sends for `as_shape(shape)`
        with the same options (its key order and JSON options; Gemini's REST body; Bedrock's
        rest-json body, the model id in the URI): what to POST to send the same bytes from
        anywhere (the JavaScript runtime's `rendered.body(shape)` writes them too)."""
        try:
            return body_of_shape(self, shape, model, caching=caching, previous_message_id=previous_message_id)
        except ShapeError as exc:
            raise RenderError(str(exc)) from None


# ---------------------------------------------------------------------------------------------
# Values


#: a value JSON can hold and a placeholder path reads no attribute of (the JavaScript runtime
#: reads none either: `${s.upper}`, `${d.__proto__}`, `${n.real}` are errors in both)
_JSON_LEAVES = (str, int, float, bool, list, tuple, type(None))
_NO_DEFAULT: Any = object()


def path_defaults(schema: Any, path: str) -> tuple[Any, ...]:
    """For each key of a placeholder path after its root, the `default` the input schema gives
    the property (what renders when a value leaves the key out), or `_NO_DEFAULT`."""
    root, *attrs = path.split(".")
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    node = properties.get(root) if isinstance(properties, Mapping) else None
    out = []
    for attr in attrs:
        properties = node.get("properties") if isinstance(node, Mapping) else None
        node = properties.get(attr) if isinstance(properties, Mapping) else None
        out.append(node.get("default", _NO_DEFAULT) if isinstance(node, Mapping) else _NO_DEFAULT)
    return tuple(out)


def refused_path(path: str, segment: str) -> str:
    """The message both runtimes give for a path the attribute rule refuses (runtime-js says the same)."""
    why = "starts with `_`" if segment.startswith("_") else "reaches an object's internals"
    return (
        f"`${{{path}}}` reads `{segment}`, which {why}: no placeholder path may (the build refuses it, E506); "
        "refused (the artifact was changed after the build, or built by an older promptc: rebuild it)"
    )


def _lookup(inputs: Mapping[str, Any], path: str, defaults: tuple[Any, ...] = ()) -> Any:
    """`${a.b.c}`: a mapping's key (its schema's `default` when the key is absent), else, of an
    object that is not a JSON value, an attribute. A segment the attribute rule refuses is never
    read, whatever the value (the render plan refuses the path first; this is the last guard)."""
    root, *attrs = path.split(".")
    if unsafe_name(root):
        raise RenderError(refused_path(path, root))
    value = inputs[root]  # presence was checked before rendering started
    walked = root
    for i, attr in enumerate(attrs):
        if unsafe_name(attr):
            raise RenderError(refused_path(path, attr))
        if isinstance(value, Mapping):
            if attr in value:
                value = value[attr]
            elif i < len(defaults) and defaults[i] is not _NO_DEFAULT:
                value = defaults[i]
            else:
                raise RenderError(
                    f"`${{{path}}}`: `{walked}` ({type(value).__name__}) has no key or attribute `{attr}`"
                )
        else:
            try:
                if isinstance(value, _JSON_LEAVES):
                    raise AttributeError(attr)
                value = getattr(value, attr)
            except AttributeError:
                raise RenderError(
                    f"`${{{path}}}`: `{walked}` ({type(value).__name__}) has no key or attribute `{attr}`"
                ) from None
        walked += "." + attr
    return value


def _to_text(value: Any, path: str) -> str:
    if isinstance(value, NOT_TEXT):
        kind = "class" if isinstance(value, type) else "function"
        raise RenderError(f"`${{{path}}}` is a {kind} ({value!r}), not text: pass the value instead")
    try:
        return text_of(value)  # str(value), with the printable characters of one Unicode version
    except Exception as exc:  # a user object whose __str__ raises
        raise RenderError(f"`${{{path}}}`: str() of the value failed: {type(exc).__name__}: {exc}") from exc


# ---------------------------------------------------------------------------------------------
# Render plans: an artifact compiled once into literal segments and value slots


class _Python:
    """A section with promplate blocks: its compiled code (or the error compiling it raised)."""

    __slots__ = ("text", "section", "origins", "compiled", "error", "schema")

    def __init__(self, text: str, section: str, origins: tuple[tuple[str, int], ...], schema: Any = None) -> None:
        self.text, self.section, self.origins = text, section, origins
        self.schema = schema  # the input schema, for the defaults of `${a.b}` paths
        self.compiled: CompiledSection | None = None
        self.error: TemplateSyntaxError | None = None
        try:
            self.compiled = compile_section(text)
        except TemplateSyntaxError as exc:  # only a hand-edited artifact gets here
            self.error = exc

    def render(self, inputs: Mapping[str, Any], prompt: str) -> str:
        compiled = self.compiled
        if compiled is None:
            exc = self.error
            raise TemplateError(exc.message, prompt, self.section, exc.line)  # type: ignore[union-attr]
        text, section, origins, schema = self.text, self.section, self.origins, self.schema

        def lookup(path: str) -> str:
            return _to_text(_lookup(inputs, path, path_defaults(schema, path) if "." in path else ()), path)

        try:
            parts = execute(compiled.code, inputs, lookup)
        except RenderError:
            raise
        except TemplateOutputError as exc:
            raw = next((o.raw for o in compiled.program.origins if o.index == exc.token), "{{ }}")
            raise TemplateError(f"`{raw}` outputs {exc}; call it, or output a value", prompt, section) from None
        except Exception as exc:
            where = compiled.error_token(exc)
            source = None
            if where is not None and origins:
                k = sum(1 for token in scan(text)[: where[0]] if token.kind != "lit")
                k = min(k, len(origins) - 1)
                path, line = origins[k]
                source = f"{path}:{line + where[1]}"
            raise TemplateError(
                f"{type(exc).__name__}: {exc}", prompt, section, compiled.error_line(exc), source
            ) from exc
        try:
            return "".join(map(text_of, parts))
        except Exception as exc:
            raise TemplateError(
                f"str() of an output value failed: {type(exc).__name__}: {exc}", prompt, section
            ) from exc


#: A section's plan: its text when it is literal; else (checks, segments, slots, python). `checks`
#: are the placeholder problems to look for at render time, in text order (an invalid path, a root
#: that is not a declared input, a path the attribute rule refuses); `segments` the literal pieces with a None where a value goes and
#: `slots` (index in segments, path, dotted) for each value; `python` the compiled code instead.
_SectionPlan = str | tuple[Any, ...]


class _Refused:
    """A block in a placeholder-renderer artifact: never compiled, never run (see `render`)."""

    __slots__ = ("section",)

    def __init__(self, section: str) -> None:
        self.section = section

    def render(self, inputs: Mapping[str, Any], prompt: str) -> str:
        raise RenderError(refused_block(prompt, self.section))


def refused_block(prompt: str, section: str) -> str:
    """The message both runtimes give for a block in a placeholder artifact (runtime-js says the same)."""
    return (
        f"prompt `{prompt}`, section `{section}`: the artifact's renderer is `placeholder`, which runs no code, "
        "but the section holds a `{{ }}`, `{# #}` or `{% %}` block; refused (the artifact was changed after "
        "the build: rebuild it)"
    )


def _section_plan(
    text: str,
    section: str,
    origins: tuple[tuple[str, int], ...],
    known: frozenset[str],
    renderer: str = "python",
    schema: Any = None,
) -> Any:
    """`renderer` is the artifact's: only a `python` artifact's blocks are compiled and run; in any
    other (a `placeholder` artifact promises it holds no code) a block is refused at render time,
    after the placeholder checks, exactly as runtime-js refuses it. `schema` is the artifact's
    input schema, for the defaults of `${a.b}` paths."""
    if "$" not in text and "{" not in text and "\\" not in text:
        return text  # nothing to substitute or unescape: most stable sections
    tokens = scan(text)
    checks: list[tuple[str, ...]] = []
    for tok in tokens:
        if tok.kind != "ph":
            continue
        if not PLACEHOLDER_PATH.match(tok.text):
            checks.append(("invalid", tok.text))
            continue
        if tok.text.split(".", 1)[0] not in known:
            checks.append(("root", tok.text.split(".", 1)[0]))
        unsafe = unsafe_segment(tok.text)
        if unsafe is not None:
            checks.append(("unsafe", tok.text, unsafe[1]))
    if any(tok.kind not in ("lit", "ph") for tok in tokens):
        code = _Python(text, section, origins, schema) if renderer == "python" else _Refused(section)
        return (tuple(checks), (), (), code)
    segments: list[str | None] = []
    slots: list[tuple[int, str, bool, tuple[Any, ...]]] = []
    for tok in tokens:
        if tok.kind == "lit":
            if segments and segments[-1] is not None:
                segments[-1] += tok.text
            else:
                segments.append(tok.text)
        else:
            dotted = "." in tok.text
            slots.append((len(segments), tok.text, dotted, path_defaults(schema, tok.text) if dotted else ()))
            segments.append(None)
    if not slots:
        return "".join(segments)  # type: ignore[arg-type]
    return (tuple(checks), tuple(segments), tuple(slots), None)


def _render_planned(plan: Any, inputs: Mapping[str, Any], prompt: str, section: str) -> str:
    if plan.__class__ is str:
        return str(plan)
    checks, segments, slots, python = plan
    for kind, what, *segment in checks:
        if kind == "invalid":
            raise RenderError(f"prompt `{prompt}`, section `{section}`: invalid placeholder `${{{what}}}`")
        if kind == "unsafe":
            raise RenderError(f"prompt `{prompt}`, section `{section}`: {refused_path(what, segment[0])}")
        if what not in inputs:
            raise MissingInputsError(prompt, [what])
    if python is not None:
        return python.render(inputs, prompt)  # type: ignore[no-any-return]
    out = list(segments)
    for index, path, dotted, defaults in slots:
        value = _lookup(inputs, path, defaults) if dotted else inputs[path]
        out[index] = value if value.__class__ is str else _to_text(value, path)
    return "".join(out)


def _render_section(
    text: str,
    inputs: Mapping[str, Any],
    prompt: str,
    section: str,
    origins: tuple[tuple[str, int], ...] = (),
    renderer: str = "python",
) -> str:
    """One section's text rendered on its own (what `render_artifact` does for each section)."""
    return _render_planned(_section_plan(text, section, origins, frozenset(), renderer), inputs, prompt, section)


_new = object.__new__
# the slots' own setters: how the generated code fills a frozen block it made with _new
_set_boundary = RenderedBlock.__dict__["boundary"].__set__
_set_text = RenderedBlock.__dict__["text"].__set__
_set_breakpoint = RenderedBlock.__dict__["breakpoint"].__set__
_set_anthropic = RenderedBlock.__dict__["anthropic"].__set__


class RenderPlan:
    """An artifact compiled for rendering (once, at its first render).

    The plan is one generated Python function per artifact, `render(inputs) -> Rendered`: it checks
    that the required inputs are present, looks each placeholder's value up once, in text order, and
    concatenates literal segments and values into each block's text; a block with nothing to
    substitute is a finished `RenderedBlock`, shared by every render (it is immutable). Every
    literal, path and role reaches the function as a constant of its namespace, never as source
    text, so nothing from the artifact is parsed as code; a section with promplate blocks, or with a
    placeholder problem to report, is rendered by `_render_planned` from the function. The output
    is the same as rendering the artifact section by section (`_render_section`), which is what the
    tests compare it with."""

    __slots__ = ("artifact", "name", "must", "known", "render", "sha256")

    def __init__(self, artifact: Artifact, sha256: str | None = None) -> None:
        self.artifact = artifact
        self.name = artifact.name
        #: the artifact file's sha256 (the manifest's), which usage records carry
        self.sha256 = sha256
        schema = artifact.input_schema
        required = set(schema.get("required", artifact.inputs))
        #: present in every call (a missing one is reported with all the others at once)
        self.must = tuple(n for n in (*artifact.inputs, *artifact.helpers) if n in {*required, *artifact.helpers})
        #: every name the prompt takes
        self.known = frozenset((*artifact.inputs, *artifact.helpers))
        #: `render(inputs, strict=True)`: `strict` refuses values for inputs the prompt does not take
        self.render: Callable[..., Rendered] = _generate(self, artifact, required)

    def _missing(self, inputs: Mapping[str, Any]) -> MissingInputsError:
        artifact, must = self.artifact, set(self.must)
        names = {n for n in (*artifact.inputs, *artifact.helpers) if n not in inputs and n in must}
        return MissingInputsError(self.name, sorted(names))

    def _unknown(self, inputs: Mapping[str, Any]) -> UnknownInputsError:
        unknown = [str(n) for n in inputs if n not in self.known]
        missing = [n for n in self.must if n not in inputs]
        return UnknownInputsError(self.name, unknown, sorted(self.known), missing)


def _generate(plan: RenderPlan, artifact: Artifact, required: set[str]) -> Callable[[Mapping[str, Any]], Rendered]:
    """The source of `plan.render` (see RenderPlan), compiled."""
    namespace: dict[str, Any] = {
        "_new": _new,
        "_Rendered": Rendered,
        "_RenderedBlock": RenderedBlock,
        "_set_boundary": _set_boundary,
        "_set_text": _set_text,
        "_set_breakpoint": _set_breakpoint,
        "_set_anthropic": _set_anthropic,
        "_to_text": _to_text,
        "_lookup": _lookup,
        "_render_planned": _render_planned,
        "_checked": _checked,
        "_checked_fast": _checked_fast,
        "_plan": plan,
        "_str": str,
        "_dict": dict,
        "_time": time.time,
    }
    index: dict[int, str] = {}

    def const(value: Any) -> str:
        key = id(value)
        name = index.get(key)
        if name is None:
            name = index[key] = f"_k{len(index)}"
            namespace[name] = value
        return name

    keep = []  # the constants' ids stay valid while the generation runs

    def constant(value: Any) -> str:
        keep.append(value)
        return const(value)

    lines = ["def render(inputs, strict=True):"]
    lines.append(f"    if strict and not {constant(plan.known)}.issuperset(inputs):")
    lines.append("        raise _plan._unknown(inputs)")
    if plan.must:
        present = " and ".join(f"{constant(n)} in inputs" for n in plan.must)
        lines.append(f"    if not ({present}):")
        lines.append("        raise _plan._missing(inputs)")
    schema = artifact.input_schema
    properties = schema.get("properties", {})
    optional = tuple(n for n in artifact.inputs if n not in required)
    if any(properties.get(n) for n in artifact.inputs):
        checks = tuple((n, predicate(properties[n])) for n in artifact.inputs if properties.get(n))
        lines.append(
            f"    inputs = _checked_fast({constant(artifact.name)}, {constant(checks)}, {constant(schema)},"
            f" {constant(artifact.inputs)}, inputs)"
        )
    elif optional:
        lines.append(f"    absent = [n for n in {constant(optional)} if n not in inputs]")
        lines.append("    if absent:")
        lines.append("        inputs = {**inputs, **_dict.fromkeys(absent)}")
    known = frozenset((*artifact.inputs, *artifact.helpers))
    marks = {(b.message, b.block): b.anthropic for b in artifact.cache.breakpoints}
    name = constant(artifact.name)
    counter = 0
    message_exprs: list[str] = []
    block_exprs: list[str] = []
    for mi, message in enumerate(artifact.messages):
        texts: list[str] = []
        blocks: list[str] = []
        for bi, block in enumerate(message.blocks):
            marked = (mi, bi) in marks
            anthropic = marked and marks[(mi, bi)]
            plans = [
                (_section_plan(s.text, s.name, s.origins, known, artifact.renderer, artifact.input_schema), s.name)
                for s in block.sections
            ]
            if all(section_plan.__class__ is str for section_plan, _ in plans):
                text = JOINER.join(section_plan for section_plan, _ in plans)
                finished = RenderedBlock(block.boundary, text, marked, anthropic)
                blocks.append(constant(finished))
                texts.append(constant(text))
                continue
            pieces: list[str] = []
            for si, (section_plan, section) in enumerate(plans):
                if si:
                    pieces.append(constant(JOINER))
                if section_plan.__class__ is str:
                    if section_plan:
                        pieces.append(constant(section_plan))
                    continue
                checks, segments, slots, python = section_plan
                if checks or python is not None:
                    counter += 1
                    var = f"_s{counter}"
                    lines.append(
                        f"    {var} = _render_planned({constant(section_plan)}, inputs, {name}, {constant(section)})"
                    )
                    pieces.append(var)
                    continue
                values = {slot_index: (path, dotted, defaults) for slot_index, path, dotted, defaults in slots}
                for position, segment in enumerate(segments):
                    if segment is not None:
                        if segment:
                            pieces.append(constant(segment))
                        continue
                    path, dotted, defaults = values[position]
                    counter += 1
                    var = f"_v{counter}"
                    path_name = constant(path)
                    if dotted:
                        lines.append(f"    {var} = _lookup(inputs, {path_name}, {constant(defaults)})")
                    else:
                        lines.append(f"    {var} = inputs[{path_name}]")
                    lines.append(f"    if {var}.__class__ is not _str:")
                    lines.append(f"        {var} = _to_text({var}, {path_name})")
                    pieces.append(var)
            counter += 1
            text_var, block_var = f"_t{counter}", f"_b{counter}"
            if not pieces:
                lines.append(f"    {text_var} = ''")
            elif len(pieces) <= 8:
                lines.append(f"    {text_var} = {' + '.join(pieces)}" + (" + ''" if len(pieces) == 1 else ""))
            else:
                lines.append(f"    {text_var} = ''.join(({', '.join(pieces)},))")
            lines.append(f"    {block_var} = _new(_RenderedBlock)")
            lines.append(f"    _set_boundary({block_var}, {constant(block.boundary)})")
            lines.append(f"    _set_text({block_var}, {text_var})")
            lines.append(f"    _set_breakpoint({block_var}, {marked})")
            lines.append(f"    _set_anthropic({block_var}, {anthropic})")
            blocks.append(block_var)
            texts.append(text_var)
        if not texts:
            content = constant("")
        elif len(texts) == 1:
            content = texts[0]
        else:
            content = f" + {constant(JOINER)} + ".join(texts)
        message_exprs.append(f"{{'role': {constant(message.role)}, 'content': {content}}}")
        block_exprs.append(f"[{', '.join(blocks)}]")
    constant_fields = {
        "name": artifact.name,
        "prefix_sha256": artifact.cache.prefix_sha256,
        "model": artifact.model,
        "tools": artifact.tools,
        "output_schema": artifact.output_schema,
        "ttl": artifact.cache.ttl,
        "head_breakpoint": any(b.message is None and b.anthropic for b in artifact.cache.breakpoints),
        "provider": None if artifact.provider is None else artifact.provider.name,
        "cache_model": None if artifact.cache.key is None else artifact.cache.key.model,
        "stable_end": next(
            ((b.message, b.block) for b in artifact.cache.breakpoints if b.stable_prefix and b.message is not None),
            None,
        ),
        "artifact_sha256": plan.sha256,
    }
    lines.append("    rendered = _new(_Rendered)")
    lines.append("    fields = rendered.__dict__")
    lines.append(f"    fields.update({constant(constant_fields)})")
    lines.append(f"    fields['messages'] = [{', '.join(message_exprs)}]")
    lines.append(f"    fields['blocks'] = [{', '.join(block_exprs)}]")
    lines.append(f"    fields['params'] = _dict({constant(artifact.params)})")
    lines.append("    fields['rendered_at'] = _time()")
    lines.append("    return rendered")
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<promptc-render-plan {artifact.name}>", "exec"), namespace)  # noqa: S102
    render: Callable[[Mapping[str, Any]], Rendered] = namespace["render"]
    return render


# Plans of artifacts rendered through `render_artifact` (a Runtime keeps its own): keyed by the
# artifact object's id, holding the artifact so that the id is not reused while cached.
_PLANS: dict[int, RenderPlan] = {}
_PLANS_MAX = 256


def plan_for(artifact: Artifact) -> RenderPlan:
    """The render plan of `artifact`, compiled at its first render and then reused."""
    plan = _PLANS.get(id(artifact))
    if plan is not None and plan.artifact is artifact:
        return plan
    plan = RenderPlan(artifact)
    if len(_PLANS) >= _PLANS_MAX:
        _PLANS.pop(next(iter(_PLANS)))
    _PLANS[id(artifact)] = plan
    return plan


# ---------------------------------------------------------------------------------------------
# Artifacts


def render_artifact(
    artifact: Artifact | Mapping[str, Any], inputs: Mapping[str, Any] | None = None, *, unknown_inputs: str = "error"
) -> Rendered:
    """Render one artifact (the model, or the decoded JSON of `build/<name>.json`) with `inputs`.
    `unknown_inputs="ignore"` lets `inputs` hold values the prompt does not take."""
    strict = _unknown_mode(unknown_inputs)
    if not isinstance(artifact, Artifact):
        try:
            artifact = Artifact.from_json(artifact)
        except ArtifactError as exc:
            raise RenderError(str(exc)) from None
        return RenderPlan(artifact).render({} if inputs is None else inputs, strict)
    return plan_for(artifact).render({} if inputs is None else inputs, strict)


class Runtime:
    """A build folder: `manifest.json` plus one JSON artifact per prompt, read lazily (through
    `promptc.runtime.buildfolder`, which checks each artifact against the manifest's sha256)."""

    def __init__(self, build_dir: str | Path, *, unknown_inputs: str = "error") -> None:
        self.build_dir = Path(build_dir)
        self._folder = BuildFolder(self.build_dir)
        #: values for inputs a prompt does not take: an error (`UnknownInputsError`), or ignored
        self.unknown_inputs = unknown_inputs
        self._strict = _unknown_mode(unknown_inputs)
        self._artifacts: dict[str, Artifact] = {}
        self._plans: dict[str, RenderPlan] = {}

    def __repr__(self) -> str:
        return f"Runtime({str(self.build_dir)!r})"

    @property
    def manifest(self) -> Manifest:
        try:
            return self._folder.manifest
        except BuildFolderError as exc:
            raise RenderError(str(exc)) from None

    def names(self) -> list[str]:
        return sorted(self.manifest.artifacts)

    def __contains__(self, name: object) -> bool:
        return name in self.manifest.artifacts

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def artifact(self, name: str) -> Artifact:
        """The artifact of prompt `name`, checked against the manifest's sha256."""
        cached = self._artifacts.get(name)
        if cached is not None:
            return cached
        if name not in self.manifest.artifacts:
            close = suggestions(name, self.names(), limit=max(2, len(name) // 3))
            hint = f"; did you mean {' or '.join(f'`{c}`' for c in close)}?" if close else ""
            known = "" if close else f"; prompts: {', '.join(self.names()) or '(none)'}"
            raise RenderError(f"no prompt `{name}` in `{self.build_dir}`{hint}{known}")
        try:
            artifact = self._folder.artifact(name)
        except BuildFolderError as exc:
            raise RenderError(str(exc)) from None
        self._artifacts[name] = artifact
        return artifact

    def render(self, name: str, mapping: Mapping[str, Any] | None = None, /, **inputs: Any) -> Rendered:
        """Render prompt `name`. Inputs come as keywords, as a mapping, or both (keywords win); both
        positional parameters are positional-only so that any input name, `name` included, works."""
        plan = self._plans.get(name)
        if plan is None:
            artifact = self.artifact(name)
            plan = self._plans[name] = RenderPlan(artifact, self.manifest.artifacts[name].sha256)
        return plan.render({**mapping, **inputs} if mapping else inputs, self._strict)

    def parse(self, name: str, response: Any) -> Any:
        """The value of a provider `response` to prompt `name`, checked against its output
        contract (`OutputError` lists every problem); see `parse_output`."""
        return parse_output(self.artifact(name), response)


def load(build_dir: str | Path = "build", *, unknown_inputs: str = "error") -> Runtime:
    """Open a build folder. Nothing is read until a prompt is asked for. `unknown_inputs="ignore"`:
    `render` ignores values for inputs a prompt does not take (one set of values for many prompts)
    instead of raising `UnknownInputsError`."""
    return Runtime(build_dir, unknown_inputs=unknown_inputs)
