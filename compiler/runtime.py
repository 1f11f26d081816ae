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

import ast
import builtins
import hashlib
import json
import linecache
import re
import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import CodeType
from typing import Any

from .model import Artifact, ArtifactError, Manifest
from .suggest import suggestions

__all__ = [
    "load",
    "Runtime",
    "Rendered",
    "RenderedBlock",
    "render_artifact",
    "RenderError",
    "MissingInputsError",
    "TemplateError",
    "SHAPES",
]

JOINER = "\n\n"  # must equal promptc.emit.JOINER (checked by the tests)
MANIFEST = "manifest.json"
SHAPES = ("plain", "openai", "anthropic")
SYSTEM_ROLES = ("system", "developer")

#: One alternation, tried left to right: escaped opener, placeholder, `{{ }}`, `{# #}`, `{% %}`.
_TOKEN = re.compile(
    r"\\(\$\{|\{\{|\{#|\{%)"
    r"|\$\{([^}\n]*)\}"
    r"|(\{\{[\s\S]*?\}\})"
    r"|(\{#[\s\S]*?#\})"
    r"|(\{%[^\n]*?%\})"
)
_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
#: Names the generated code uses; promplate's own, so templates written for promplate keep working.
_APPEND = "__append__"
_PARTS = "__parts__"
_LOOKUP = "__promptc_input__"


class RenderError(ValueError):
    """An artifact cannot be rendered: unknown prompt, bad build folder, bad input value…"""


class MissingInputsError(RenderError):
    def __init__(self, prompt: str, missing: list[str]) -> None:
        self.prompt = prompt
        self.missing = tuple(missing)
        names = ", ".join(self.missing)
        plural = "s" if len(self.missing) != 1 else ""
        super().__init__(f"prompt `{prompt}` is missing {len(self.missing)} input{plural}: {names}")


class TemplateError(RenderError):
    """Template code of a python-renderer section failed to compile or raised while running."""

    def __init__(self, message: str, prompt: str, section: str, line: int | None = None) -> None:
        self.prompt = prompt
        self.section = section
        self.line = line
        where = f"prompt `{prompt}`, section `{section}`" + (f", line {line}" if line else "")
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

    def as_shape(self, shape: str = "plain") -> Any:
        """The request body in a provider's shape: `plain`, `openai` or `anthropic`."""
        if shape == "plain":
            return [dict(m) for m in self.messages]
        if shape == "openai":
            body: dict[str, Any] = {"messages": [dict(m) for m in self.messages]}
            if self.prefix_sha256:
                # Requests that share a cache-stable prefix share the key, which routes them to the
                # same cache shard; requests with different prefixes never collide.
                body["prompt_cache_key"] = self.prefix_sha256
            return body
        if shape == "anthropic":
            return self._anthropic()
        raise RenderError(f"unknown shape `{shape}`; shapes: {', '.join(SHAPES)}")

    def _anthropic(self) -> dict[str, Any]:
        """System and developer messages go to `system` (Anthropic has no other place for them, so a
        system message that follows a user message moves ahead of it). One text block per artifact
        block; empty blocks are skipped (the API refuses empty text), and a message left with no
        block at all is dropped. `cache_control` goes on the blocks that end at a breakpoint marked
        for Anthropic; when that block rendered empty, on the text block before it, which ends at
        the same position of the request."""
        system: list[dict[str, Any]] = []
        messages: list[dict[str, Any]] = []
        for message, blocks in zip(self.messages, self.blocks, strict=True):
            to_system = message["role"] in SYSTEM_ROLES
            content: list[dict[str, Any]] = system if to_system else []
            for block in blocks:
                if block.text:
                    content.append({"type": "text", "text": block.text})
                if block.anthropic and content:
                    content[-1]["cache_control"] = {"type": "ephemeral"}
            if not to_system and content:
                messages.append({"role": message["role"], "content": content})
        return {"system": system, "messages": messages}


# ---------------------------------------------------------------------------------------------
# Template text → tokens


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # "lit" | "ph" | "expr" | "exec" | "stmt"
    text: str  # literal text, placeholder path, or the block's code (delimiters and dashes removed)
    pos: int = 0  # offset of the token in the section text (for line numbers)
    trim_left: bool = False
    trim_right: bool = False


_BLOCK_KIND = {"{{": "expr", "{#": "exec", "{%": "stmt"}


@lru_cache(maxsize=4096)
def _tokenize(text: str) -> tuple[_Tok, ...]:
    tokens: list[_Tok] = []
    literal: list[str] = []
    literal_at = 0

    def flush() -> None:
        if literal:
            tokens.append(_Tok("lit", "".join(literal), literal_at))
            literal.clear()

    last = 0
    for match in _TOKEN.finditer(text):
        if match.start() > last:
            if not literal:
                literal_at = last
            literal.append(text[last : match.start()])
        last = match.end()
        escape, path, *blocks = match.groups()
        if escape is not None:
            if not literal:
                literal_at = match.start()
            literal.append(escape)
            continue
        flush()
        if path is not None:
            tokens.append(_Tok("ph", path, match.start()))
            continue
        raw = match.group(0)
        inner = raw[2:-2]
        # Same reading of the dashes as the compiler's parser: one each side at most.
        trim_left = inner.startswith("-")
        trim_right = inner.endswith("-") and len(inner) > (1 if trim_left else 0)
        code = inner[(1 if trim_left else 0) : len(inner) - (1 if trim_right else 0)]
        tokens.append(_Tok(_BLOCK_KIND[raw[:2]], code, match.start(), trim_left, trim_right))
    if last < len(text):
        if not literal:
            literal_at = last
        literal.append(text[last:])
    flush()
    return _apply_trims(tokens)


def _apply_trims(tokens: list[_Tok]) -> tuple[_Tok, ...]:
    """`{{-` removes one whitespace character right before the block, `-}}` one right after, and
    only inside this section (promplate's `\\s{{-` / `-}}\\s`). Left to right, like promplate's
    tokenizer: `a -}} {{- b` removes the one space once."""
    out = list(tokens)
    for i, tok in enumerate(out):
        if tok.kind in ("lit", "ph"):
            continue
        if tok.trim_left and i > 0 and out[i - 1].kind == "lit" and out[i - 1].text[-1:].isspace():
            prev = out[i - 1]
            out[i - 1] = _Tok("lit", prev.text[:-1], prev.pos)
        if tok.trim_right and i + 1 < len(out) and out[i + 1].kind == "lit" and out[i + 1].text[:1].isspace():
            nxt = out[i + 1]
            out[i + 1] = _Tok("lit", nxt.text[1:], nxt.pos + 1)
    return tuple(t for t in out if t.kind != "lit" or t.text)


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
    try:
        return value if isinstance(value, str) else str(value)
    except Exception as exc:  # a user object whose __str__ raises
        raise RenderError(f"`${{{path}}}`: str() of the value failed: {type(exc).__name__}: {exc}") from exc


# ---------------------------------------------------------------------------------------------
# Python sections: template → code object


class _CompileProblem(Exception):
    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.pos = pos


def _call(func: str, arg: ast.expr) -> ast.stmt:
    return ast.Expr(ast.Call(ast.Name(func, ast.Load()), [arg], []))


def _parse(code: str, pos: int, line: int) -> list[ast.stmt]:
    try:
        module = ast.parse(code, mode="exec")
    except SyntaxError as exc:
        raise _CompileProblem(f"SyntaxError: {exc.msg}", pos) from None
    except ValueError as exc:  # NUL bytes
        raise _CompileProblem(f"SyntaxError: {exc}", pos) from None
    for node in module.body:
        ast.increment_lineno(node, line - 1)
    return module.body


@dataclass
class _Frame:
    construct: str  # "", "if", "for", "while"
    node: Any  # the statement whose body/orelse receives the following code
    body: list[ast.stmt]
    in_else: bool = False


def _lineno(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _unwrap(code: str) -> str:
    return textwrap.dedent(code).strip()  # what promplate does to a block's code


@lru_cache(maxsize=1024)
def _compile(text: str) -> CodeType:
    """Compile one section's template into module code that appends its output to `__parts__`."""
    root = _Frame("", None, [])
    stack = [root]
    for tok in _tokenize(text):
        body = stack[-1].body
        line = _lineno(text, tok.pos)
        if tok.kind == "lit":
            body.append(_call(_APPEND, ast.Constant(tok.text)))
        elif tok.kind == "ph":
            body.append(_call(_APPEND, ast.Call(ast.Name(_LOOKUP, ast.Load()), [ast.Constant(tok.text)], [])))
        elif tok.kind == "expr":
            code = _unwrap(tok.text)
            statements = _parse(code, tok.pos, line)
            if not statements or not isinstance(statements[-1], ast.Expr):
                raise _CompileProblem("a `{{ }}` block must end with an expression", tok.pos)
            last = statements.pop()
            body.extend(statements)
            body.append(ast.copy_location(_call(_APPEND, last.value), last))  # type: ignore[union-attr]
        elif tok.kind == "exec":
            body.extend(_parse(_unwrap(tok.text), tok.pos, line))
        else:
            _statement(stack, _unwrap(tok.text), tok.pos, line)
    if len(stack) > 1:
        raise _CompileProblem(f"`{{% {stack[-1].construct} %}}` is never closed", len(text))
    _fill_empty(root.body)
    module = ast.Module(root.body, [])
    ast.fix_missing_locations(module)
    filename = f"<promptc-section-{hashlib.sha256(text.encode()).hexdigest()[:12]}>"
    # Tracebacks through template code then show the section's own lines.
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    try:
        return compile(module, filename, "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:  # `break` outside a loop, deep nesting
        raise _CompileProblem(f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}", 0) from None


def _statement(stack: list[_Frame], code: str, pos: int, line: int) -> None:
    keyword = re.split(r"[\s(:]", code, maxsplit=1)[0] if code else ""
    top = stack[-1]
    if keyword in ("if", "for", "while"):
        node = _parse(f"{code}:\n pass\n", pos, line)
        if len(node) != 1 or not isinstance(node[0], (ast.If, ast.For, ast.While)):
            raise _CompileProblem(f"malformed `{{% {keyword} %}}` header", pos)
        header = node[0]
        header.body = []
        top.body.append(header)
        stack.append(_Frame(keyword, header, header.body))
    elif keyword == "elif":
        if top.construct != "if" or top.in_else:
            raise _CompileProblem("`{% elif %}` outside `{% if %}`", pos)
        parsed = _parse(f"if 1: pass\n{code}:\n pass\n", pos, line - 1)
        branch = parsed[0].orelse[0] if parsed and isinstance(parsed[0], ast.If) and parsed[0].orelse else None
        if not isinstance(branch, ast.If):
            raise _CompileProblem("malformed `{% elif %}` header", pos)
        branch.body = []
        top.node.orelse = [branch]
        top.node, top.body = branch, branch.body
    elif keyword == "else":
        if not top.construct or top.in_else or code != "else":
            raise _CompileProblem("misplaced `{% else %}`", pos)
        top.node.orelse = []
        top.body = top.node.orelse
        top.in_else = True
    elif keyword in ("endif", "endfor", "endwhile"):
        if top.construct != keyword[3:]:
            raise _CompileProblem(f"`{{% {keyword} %}}` does not close `{{% {top.construct or 'nothing'} %}}`", pos)
        stack.pop()
    else:
        raise _CompileProblem(f"unknown statement tag `{{% {keyword or code} %}}`", pos)


def _fill_empty(body: list[ast.stmt]) -> None:
    """Python refuses an empty suite: `{% if x %}{% endif %}` gets a `pass`. Iterative, no recursion."""
    work = [body]
    while work:
        suite = work.pop()
        for node in suite:
            if isinstance(node, (ast.If, ast.For, ast.While)):
                if not node.body:
                    node.body.append(ast.Pass())
                work.append(node.body)
                work.append(node.orelse)


def _render_python(text: str, inputs: Mapping[str, Any], prompt: str, section: str) -> str:
    try:
        code = _compile(text)
    except _CompileProblem as exc:
        raise TemplateError(str(exc), prompt, section, _lineno(text, exc.pos)) from None
    parts: list[Any] = []
    scope: dict[str, Any] = dict(inputs)
    # Set after the inputs: an input named `__builtins__` or `__append__` must not replace them.
    scope["__builtins__"] = builtins
    scope[_PARTS] = parts
    scope[_APPEND] = parts.append

    def lookup(path: str) -> str:
        return _to_text(_lookup(inputs, path), path)

    scope[_LOOKUP] = lookup
    try:
        exec(code, scope)
    except RenderError:
        raise
    except Exception as exc:
        line = None
        tb = exc.__traceback__
        while tb is not None:  # the innermost frame that is template code
            if tb.tb_frame.f_code.co_filename == code.co_filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        raise TemplateError(f"{type(exc).__name__}: {exc}", prompt, section, line) from exc
    try:
        return "".join(map(str, parts))
    except Exception as exc:
        raise TemplateError(f"str() of an output value failed: {type(exc).__name__}: {exc}", prompt, section) from exc


def _render_placeholders(tokens: tuple[_Tok, ...], inputs: Mapping[str, Any]) -> str:
    out: list[str] = []
    for tok in tokens:
        if tok.kind == "lit":
            out.append(tok.text)
        else:
            out.append(_to_text(_lookup(inputs, tok.text), tok.text))
    return "".join(out)


def _render_section(text: str, inputs: Mapping[str, Any], prompt: str, section: str) -> str:
    if "$" not in text and "{" not in text and "\\" not in text:
        return text  # nothing to substitute or unescape: most stable sections
    tokens = _tokenize(text)
    for tok in tokens:
        if tok.kind == "ph" and not _PATH.match(tok.text):
            raise RenderError(f"prompt `{prompt}`, section `{section}`: invalid placeholder `${{{tok.text}}}`")
        if tok.kind == "ph" and tok.text.split(".", 1)[0] not in inputs:
            raise MissingInputsError(prompt, [tok.text.split(".", 1)[0]])
    if any(tok.kind not in ("lit", "ph") for tok in tokens):
        return _render_python(text, inputs, prompt, section)
    return _render_placeholders(tokens, inputs)


# ---------------------------------------------------------------------------------------------
# Artifacts


def render_artifact(artifact: Artifact | Mapping[str, Any], inputs: Mapping[str, Any] | None = None) -> Rendered:
    """Render one artifact (the model, or the decoded JSON of `build/<name>.json`) with `inputs`."""
    if not isinstance(artifact, Artifact):
        try:
            artifact = Artifact.from_json(artifact)
        except ArtifactError as exc:
            raise RenderError(str(exc)) from None
    inputs = {} if inputs is None else inputs
    name = artifact.name
    missing = sorted({n for n in (*artifact.inputs, *artifact.helpers) if n not in inputs})
    if missing:
        raise MissingInputsError(name, missing)
    marks = {(b.message, b.block): b.anthropic for b in artifact.cache.breakpoints}
    messages: list[dict[str, str]] = []
    all_blocks: list[list[RenderedBlock]] = []
    for mi, message in enumerate(artifact.messages):
        blocks: list[RenderedBlock] = []
        for bi, block in enumerate(message.blocks):
            text = JOINER.join(_render_section(s.text, inputs, name, s.name) for s in block.sections)
            marked = (mi, bi) in marks
            blocks.append(RenderedBlock(block.boundary, text, marked, marked and marks[(mi, bi)]))
        messages.append({"role": message.role, "content": JOINER.join(b.text for b in blocks)})
        all_blocks.append(blocks)
    return Rendered(name, messages, all_blocks, artifact.cache.prefix_sha256, dict(artifact.params))


class Runtime:
    """A build folder: `manifest.json` plus one JSON artifact per prompt, read lazily."""

    def __init__(self, build_dir: str | Path) -> None:
        self.build_dir = Path(build_dir)
        self._manifest: Manifest | None = None
        self._artifacts: dict[str, Artifact] = {}

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
        values: Mapping[str, Any] = {**mapping, **inputs} if mapping else inputs
        return render_artifact(self.artifact(name), values)


def load(build_dir: str | Path = "build") -> Runtime:
    """Open a build folder. Nothing is read until a prompt is asked for."""
    return Runtime(build_dir)
