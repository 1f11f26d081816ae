"""Render built artifacts into requests: `load("build").render("name", **inputs)`.

This module is the part of promptc an application ships with, so it is kept light: the standard
library only (no lark, no tiktoken, no compiler passes). It reads `manifest.json` on first use and
each artifact the first time it is asked for.

Rendering rules (SPEC §4, §6, §9):

* Every input the artifact lists (`inputs` and `helpers`) is required; a missing one raises
  `MissingInputsError`, whose message names every missing input at once. Extra inputs are ignored,
  so one dict (say `env_inputs() | git_inputs()`) can serve many prompts.
* Values are inserted literally: `${x}` becomes `str(value)` (a dotted `${a.b}` reads a mapping key,
  else an attribute) and the result is never parsed again. A value holding a separator line,
  `${…}`, `{{ }}` or `///` stays text: it cannot add a message, change a role or run code.
* Each section is rendered on its own and the results are joined exactly as the artifact joins them
  (sections of a block and blocks of a message by one blank line), so whitespace control (`{{- x -}}`)
  can never eat a joiner or a byte of a neighbouring stable block: the cache-stable prefix is
  reproduced byte for byte whatever the inputs are.
* `"renderer": "placeholder"` artifacts only substitute `${…}` and drop the backslash of escaped
  openers. Sections of `"renderer": "python"` artifacts that hold promplate blocks are compiled
  (once per distinct section text) into Python code with promplate's semantics and run with the
  inputs as globals.

Trust model: a python-renderer artifact *executes the code written in its `.prompt` source*, with
the full power of Python (builtins included; this is not a sandbox). Render only artifacts built
from your own repository, as you would import your own modules; never render an artifact that came
from an untrusted party. Input *values* are always data and are never executed, so rendering
untrusted user text through a trusted artifact is safe. Placeholder-renderer artifacts run no code.

Deliberate difference from promplate: the template runs as module-level code whose globals are the
inputs, so a name assigned on only some paths (`{% if c %}{# x = 1 #}{% endif %}{{ x }}`) falls back
to the input of that name (which the compiler lists as required) instead of raising
`UnboundLocalError`. `${path}` inside a python section always reads the inputs, never template
variables, matching the compiler, for which every placeholder root is an input.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import template
from .language import JOINER, MANIFEST, PLACEHOLDER_PATH, SHAPES
from .model import Artifact, ArtifactError, Manifest, OutputSchema, Tool
from .suggest import suggestions

__all__ = [
    "load",
    "Runtime",
    "Rendered",
    "RenderedBlock",
    "render_artifact",
    "RenderError",
    "MissingInputsError",
    "InputTypeError",
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


class InputTypeError(RenderError):
    """Input values that do not match the prompt's declared types; `problems` lists every one, by
    path (`history[2]: expected a string, got 3`)."""

    def __init__(self, prompt: str, problems: list[str]) -> None:
        self.prompt = prompt
        self.problems = tuple(problems)
        plural = "s" if len(problems) != 1 else ""
        super().__init__(f"prompt `{prompt}`: {len(problems)} input{plural} of the wrong type: " + "; ".join(problems))


def _checked(
    prompt: str, schema: Mapping[str, Any], names: tuple[str, ...], inputs: Mapping[str, Any]
) -> Mapping[str, Any]:
    """`inputs` checked against the declared types (every problem reported at once); an optional
    input left out renders as None."""
    from .inputtypes import check_value

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
    #: that breakpoint is one of the (at most four) the artifact marks for Anthropic
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
    #: the artifact marks a breakpoint for Anthropic right after the tools and schema
    head_breakpoint: bool = False

    def as_shape(self, shape: str = "plain", *, model: str | None = None) -> Any:
        """The request in a provider's shape: the keyword arguments of its official SDK call
        (`plain`, `anthropic`, `openai`, `openai-responses`, `gemini`; see `promptc.shapes`).
        `model`, when given, is sent instead of the artifact's (the artifact's cache numbers were
        computed for its own model); a shape that needs a model and has none is a RenderError."""
        from . import shapes

        try:
            return shapes.build(self, shape, model)
        except shapes.ShapeError as exc:
            raise RenderError(str(exc)) from None


# ---------------------------------------------------------------------------------------------
# Values


def _lookup(inputs: Mapping[str, Any], path: str) -> Any:
    root, *attrs = path.split(".")
    value = inputs[root]  # presence was checked before rendering started
    walked = root
    for attr in attrs:
        if isinstance(value, Mapping) and attr in value:
            value = value[attr]
        else:
            try:
                value = getattr(value, attr)
            except AttributeError:
                raise RenderError(
                    f"`${{{path}}}`: `{walked}` ({type(value).__name__}) has no key or attribute `{attr}`"
                ) from None
        walked += "." + attr
    return value


def _to_text(value: Any, path: str) -> str:
    if isinstance(value, template.NOT_TEXT):
        kind = "class" if isinstance(value, type) else "function"
        raise RenderError(f"`${{{path}}}` is a {kind} ({value!r}), not text: pass the value instead")
    try:
        return value if isinstance(value, str) else str(value)
    except Exception as exc:  # a user object whose __str__ raises
        raise RenderError(f"`${{{path}}}`: str() of the value failed: {type(exc).__name__}: {exc}") from exc


# ---------------------------------------------------------------------------------------------
# Render plans: an artifact compiled once into literal segments and value slots


class _Python:
    """A section with promplate blocks: its compiled code (or the error compiling it raised)."""

    __slots__ = ("text", "section", "origins", "compiled", "error")

    def __init__(self, text: str, section: str, origins: tuple[tuple[str, int], ...]) -> None:
        self.text, self.section, self.origins = text, section, origins
        self.compiled: template.CompiledSection | None = None
        self.error: template.TemplateSyntaxError | None = None
        try:
            self.compiled = template.compile_section(text)
        except template.TemplateSyntaxError as exc:  # only a hand-edited artifact gets here
            self.error = exc

    def render(self, inputs: Mapping[str, Any], prompt: str) -> str:
        compiled = self.compiled
        if compiled is None:
            exc = self.error
            raise TemplateError(exc.message, prompt, self.section, exc.line)  # type: ignore[union-attr]
        text, section, origins = self.text, self.section, self.origins

        def lookup(path: str) -> str:
            return _to_text(_lookup(inputs, path), path)

        try:
            parts = template.execute(compiled.code, inputs, lookup)
        except RenderError:
            raise
        except template.OutputError as exc:
            raw = next((o.raw for o in compiled.program.origins if o.index == exc.token), "{{ }}")
            raise TemplateError(f"`{raw}` outputs {exc}; call it, or output a value", prompt, section) from None
        except Exception as exc:
            where = compiled.error_token(exc)
            source = None
            if where is not None and origins:
                k = sum(1 for token in template.scan(text)[: where[0]] if token.kind != "lit")
                k = min(k, len(origins) - 1)
                path, line = origins[k]
                source = f"{path}:{line + where[1]}"
            raise TemplateError(
                f"{type(exc).__name__}: {exc}", prompt, section, compiled.error_line(exc), source
            ) from exc
        try:
            return "".join(map(str, parts))
        except Exception as exc:
            raise TemplateError(
                f"str() of an output value failed: {type(exc).__name__}: {exc}", prompt, section
            ) from exc


#: A section's plan: its text when it is literal; else (checks, segments, slots, python). `checks`
#: are the placeholder problems to look for at render time, in text order (an invalid path, a root
#: that is not a declared input); `segments` the literal pieces with a None where a value goes and
#: `slots` (index in segments, path, dotted) for each value; `python` the compiled code instead.
_SectionPlan = str | tuple


def _section_plan(text: str, section: str, origins: tuple[tuple[str, int], ...], known: frozenset[str]) -> Any:
    if "$" not in text and "{" not in text and "\\" not in text:
        return text  # nothing to substitute or unescape: most stable sections
    tokens = template.scan(text)
    checks: list[tuple[str, str]] = []
    for tok in tokens:
        if tok.kind == "ph" and not PLACEHOLDER_PATH.match(tok.text):
            checks.append(("invalid", tok.text))
        elif tok.kind == "ph" and tok.text.split(".", 1)[0] not in known:
            checks.append(("root", tok.text.split(".", 1)[0]))
    if any(tok.kind not in ("lit", "ph") for tok in tokens):
        return (tuple(checks), (), (), _Python(text, section, origins))
    segments: list[str | None] = []
    slots: list[tuple[int, str, bool]] = []
    for tok in tokens:
        if tok.kind == "lit":
            if segments and segments[-1] is not None:
                segments[-1] += tok.text  # type: ignore[operator]
            else:
                segments.append(tok.text)
        else:
            slots.append((len(segments), tok.text, "." in tok.text))
            segments.append(None)
    if not slots:
        return "".join(segments)  # type: ignore[arg-type]
    return (tuple(checks), tuple(segments), tuple(slots), None)


def _render_planned(plan: Any, inputs: Mapping[str, Any], prompt: str, section: str) -> str:
    if plan.__class__ is str:
        return plan  # type: ignore[no-any-return]
    checks, segments, slots, python = plan
    for kind, what in checks:
        if kind == "invalid":
            raise RenderError(f"prompt `{prompt}`, section `{section}`: invalid placeholder `${{{what}}}`")
        if what not in inputs:
            raise MissingInputsError(prompt, [what])
    if python is not None:
        return python.render(inputs, prompt)  # type: ignore[no-any-return]
    out = list(segments)
    for index, path, dotted in slots:
        value = _lookup(inputs, path) if dotted else inputs[path]
        out[index] = value if value.__class__ is str else _to_text(value, path)
    return "".join(out)


def _render_section(
    text: str, inputs: Mapping[str, Any], prompt: str, section: str, origins: tuple[tuple[str, int], ...] = ()
) -> str:
    """One section's text rendered on its own (what `render_artifact` does for each section)."""
    return _render_planned(_section_plan(text, section, origins, frozenset()), inputs, prompt, section)


_new = object.__new__
_set_boundary = RenderedBlock.boundary.__set__  # type: ignore[attr-defined]
_set_text = RenderedBlock.text.__set__  # type: ignore[attr-defined]
_set_breakpoint = RenderedBlock.breakpoint.__set__  # type: ignore[attr-defined]
_set_anthropic = RenderedBlock.anthropic.__set__  # type: ignore[attr-defined]


class RenderPlan:
    """An artifact compiled for rendering (once, at its first render): the inputs to check, per
    message its role and per block either the finished `RenderedBlock` (a block with nothing to
    substitute) or its boundary, breakpoint marks and section plans. Rendering then only looks up
    values and joins strings; the output is the same as rendering the artifact section by section."""

    __slots__ = ("artifact", "name", "must", "optional", "typed", "schema", "messages", "constant")

    def __init__(self, artifact: Artifact) -> None:
        self.artifact = artifact
        self.name = name = artifact.name
        schema = artifact.input_schema
        required = set(schema.get("required", artifact.inputs))
        #: present in every call (a missing one is reported with all the others at once)
        self.must = tuple(n for n in (*artifact.inputs, *artifact.helpers) if n in {*required, *artifact.helpers})
        self.optional = tuple(n for n in artifact.inputs if n not in required)
        properties = schema.get("properties", {})
        self.typed = any(properties.get(n) for n in artifact.inputs)
        self.schema = schema
        known = frozenset((*artifact.inputs, *artifact.helpers))
        marks = {(b.message, b.block): b.anthropic for b in artifact.cache.breakpoints}
        messages = []
        for mi, message in enumerate(artifact.messages):
            blocks: list[Any] = []
            for bi, block in enumerate(message.blocks):
                marked = (mi, bi) in marks
                anthropic = marked and marks[(mi, bi)]
                sections = tuple((_section_plan(s.text, s.name, s.origins, known), s.name) for s in block.sections)
                if all(plan.__class__ is str for plan, _ in sections):
                    text = JOINER.join(plan for plan, _ in sections)
                    blocks.append(RenderedBlock(block.boundary, text, marked, anthropic))
                else:
                    blocks.append((block.boundary, marked, anthropic, sections))
            messages.append((message.role, tuple(blocks)))
        self.messages = tuple(messages)
        self.constant = {
            "name": name,
            "prefix_sha256": artifact.cache.prefix_sha256,
            "model": artifact.model,
            "tools": artifact.tools,
            "output_schema": artifact.output_schema,
            "ttl": artifact.cache.ttl,
            "head_breakpoint": any(b.message is None and b.anthropic for b in artifact.cache.breakpoints),
        }

    def render(self, inputs: Mapping[str, Any]) -> Rendered:
        name = self.name
        for input_name in self.must:
            if input_name not in inputs:
                artifact = self.artifact
                must = set(self.must)
                raise MissingInputsError(
                    name, sorted({n for n in (*artifact.inputs, *artifact.helpers) if n not in inputs and n in must})
                )
        if self.typed:
            inputs = _checked(name, self.schema, self.artifact.inputs, inputs)
        elif self.optional:
            absent = [n for n in self.optional if n not in inputs]
            if absent:
                inputs = {**inputs, **dict.fromkeys(absent)}
        messages: list[dict[str, str]] = []
        all_blocks: list[list[RenderedBlock]] = []
        for role, block_plans in self.messages:
            blocks: list[RenderedBlock] = []
            for plan in block_plans:
                if plan.__class__ is RenderedBlock:
                    blocks.append(plan)
                    continue
                boundary, marked, anthropic, sections = plan
                if len(sections) == 1:
                    text = _render_planned(sections[0][0], inputs, name, sections[0][1])
                else:
                    text = JOINER.join([_render_planned(s, inputs, name, section) for s, section in sections])
                block = _new(RenderedBlock)
                _set_boundary(block, boundary)
                _set_text(block, text)
                _set_breakpoint(block, marked)
                _set_anthropic(block, anthropic)
                blocks.append(block)
            if len(blocks) == 1:
                messages.append({"role": role, "content": blocks[0].text})
            else:
                messages.append({"role": role, "content": JOINER.join([b.text for b in blocks])})
            all_blocks.append(blocks)
        rendered = _new(Rendered)
        fields = rendered.__dict__
        fields.update(self.constant)
        fields["messages"] = messages
        fields["blocks"] = all_blocks
        fields["params"] = dict(self.artifact.params)
        return rendered  # type: ignore[no-any-return]


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


def render_artifact(artifact: Artifact | Mapping[str, Any], inputs: Mapping[str, Any] | None = None) -> Rendered:
    """Render one artifact (the model, or the decoded JSON of `build/<name>.json`) with `inputs`."""
    if not isinstance(artifact, Artifact):
        try:
            artifact = Artifact.from_json(artifact)
        except ArtifactError as exc:
            raise RenderError(str(exc)) from None
        return RenderPlan(artifact).render({} if inputs is None else inputs)
    return plan_for(artifact).render({} if inputs is None else inputs)


class Runtime:
    """A build folder: `manifest.json` plus one JSON artifact per prompt, read lazily."""

    def __init__(self, build_dir: str | Path) -> None:
        self.build_dir = Path(build_dir)
        self._manifest: Manifest | None = None
        self._artifacts: dict[str, Artifact] = {}
        self._plans: dict[str, RenderPlan] = {}

    def __repr__(self) -> str:
        return f"Runtime({str(self.build_dir)!r})"

    @property
    def manifest(self) -> Manifest:
        if self._manifest is None:
            path = self.build_dir / MANIFEST
            try:
                data = json.loads(path.read_bytes())
            except FileNotFoundError:
                raise RenderError(f"no {MANIFEST} in `{self.build_dir}`: run `promptc build` first") from None
            except (OSError, ValueError) as exc:
                raise RenderError(f"cannot read `{path}`: {exc}") from None
            try:
                self._manifest = Manifest.from_json(data)
            except ArtifactError as exc:
                raise RenderError(f"`{path}`: {exc}") from None
        return self._manifest

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
        entry = self.manifest.artifacts.get(name)
        if entry is None:
            close = suggestions(name, self.names(), limit=max(2, len(name) // 3))
            hint = f"; did you mean {' or '.join(f'`{c}`' for c in close)}?" if close else ""
            known = "" if close else f"; prompts: {', '.join(self.names()) or '(none)'}"
            raise RenderError(f"no prompt `{name}` in `{self.build_dir}`{hint}{known}")
        root = self.build_dir.resolve()
        path = (self.build_dir / entry.path).resolve()
        if root != path and root not in path.parents:
            raise RenderError(f"manifest entry `{name}` points outside `{self.build_dir}`")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise RenderError(f"cannot read the artifact of `{name}`: {exc}") from None
        if hashlib.sha256(data).hexdigest() != entry.sha256:
            # A hand-edited or half-copied build would render something nobody compiled or checked.
            raise RenderError(f"`{path.name}` does not match {MANIFEST} (changed after the build); run `promptc build`")
        try:
            artifact = Artifact.from_json(json.loads(data))
        except ValueError as exc:  # ArtifactError is a ValueError too: both name the file
            raise RenderError(f"`{path}`: {exc}") from None
        self._artifacts[name] = artifact
        return artifact

    def render(self, name: str, mapping: Mapping[str, Any] | None = None, /, **inputs: Any) -> Rendered:
        """Render prompt `name`. Inputs come as keywords, as a mapping, or both (keywords win); both
        positional parameters are positional-only so that any input name, `name` included, works."""
        plan = self._plans.get(name)
        if plan is None:
            plan = self._plans[name] = RenderPlan(self.artifact(name))
        return plan.render({**mapping, **inputs} if mapping else inputs)


def load(build_dir: str | Path = "build") -> Runtime:
    """Open a build folder. Nothing is read until a prompt is asked for."""
    return Runtime(build_dir)
