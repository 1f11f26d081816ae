"""`promptc import --check`: render each imported prompt with the original engine and with promptc
on the same sample inputs, and compare the messages.

The engines are imported here only, and only when `--check` asks: dotpromptz (Dotprompt), prompty
(Prompty), jinja2 (Jinja). Sample inputs come from `--inputs FILE` (a JSON object: prompt name →
an input object or a list of them), else from the source's own defaults and examples, completed by
values made from the input types (`sample_inputs`): a full set (every string non-empty, every list
two items long, every flag true) and an empty one ("" , 0, false, [], None where allowed), so both
sides of a condition render.

Messages are compared after the trimming promptc applies to every message (leading blank lines,
trailing whitespace): Dotprompt and Prompty keep a message's final newline, promptc never sends it.
Every other byte counts.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ...compile.prompt import CompiledPrompt
from ...facts import codes
from ...facts.diagnostics import Diagnostic, file_span, make
from ...facts.language import IDENTIFIER_PATTERN, SOURCE_SUFFIX
from ...facts.lazy import lazy_import
from ...facts.suggest import did_you_mean
from ...runtime.model import Artifact
from ...runtime.render import RenderError, render_artifact
from ...syntax.jsonfile import read_json
from .common import Converted
from .folder import read_foreign

#: an engine renders one converted file's original with input values: [(role, text)]
Engine = Callable[[Converted, dict[str, Any]], list[tuple[str, str]]]

# The original engines, imported only when `--check` runs one (each is an optional extra).
jinja2 = lazy_import("jinja2")
prompty = lazy_import("prompty")
dotpromptz = lazy_import("dotpromptz")
dotpromptz_typing = lazy_import("dotpromptz.typing")

ENGINES = {"dotprompt": "dotpromptz", "prompty": "prompty", "jinja": "jinja2"}


def normalise(text: str) -> str:
    """What promptc does to every message's text: leading blank lines and trailing whitespace go."""
    return re.sub(r"\A(?:[ \t]*\n)+", "", text).rstrip()


def sample_inputs(schema: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Two input sets made from an artifact's `input_schema`: full, and empty."""
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    sets = []
    for variant in (0, 1):
        values: dict[str, Any] = {}
        for name, sub in props.items():
            if variant == 1 and name not in required:
                values[name] = None
                continue
            values[name] = _sample(sub, name, variant)
        sets.append(values)
    return sets


def _sample(schema: Any, name: str, variant: int, depth: int = 0) -> Any:
    if not isinstance(schema, Mapping) or depth > 16:
        return f"{name} sample" if variant == 0 else ""
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0 if variant == 0 else -1]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else list(kind or [])
    real = [k for k in kinds if k != "null"]
    first = real[0] if real else None
    if first is None:
        return None if kinds == ["null"] else (f"{name} sample" if variant == 0 else "")
    if first == "string":
        return f"{name} sample" if variant == 0 else ""
    if first == "integer":
        return 3 if variant == 0 else 0
    if first == "number":
        return 2.5 if variant == 0 else 0
    if first == "boolean":
        return variant == 0
    if first == "array":
        item = schema.get("items") or {"type": "string"}
        return [_sample(item, f"{name} {i}", 0, depth + 1) for i in (1, 2)] if variant == 0 else []
    if first == "object":
        props = schema.get("properties") or {}
        return {k: _sample(v, k, variant, depth + 1) for k, v in props.items()}
    return None


def _read_inputs(path: Path | str, names: set[str]) -> tuple[dict[str, list[dict[str, Any]]], list[Diagnostic]]:
    """The `--inputs` file, read like the foreign sources (`folder.read_foreign`: a regular file
    of at most 8 MiB) and parsed like a tool file (`read_json`: its nesting bounded before the
    recursive parser sees it, every error located in the file), each problem E970."""
    shown = str(path)
    raw = read_foreign(path, shown, code=codes.IMPORT_BAD_INPUTS)
    if isinstance(raw, Diagnostic):
        return {}, [raw]
    _src, data, found = read_json(shown, raw, deep_hint="give shallower values, or let --check make them")
    errors = [d for d in found if d.severity == "error"]
    if errors:
        first = errors[0]
        again = make(
            codes.IMPORT_BAD_INPUTS,
            first.message,
            first.span,
            first.hint,
            path=first.path,
            source_line=first.source_line,
        )
        return {}, [again]
    if not isinstance(data, dict):
        return {}, [
            make(
                codes.IMPORT_BAD_INPUTS,
                f"`{shown}` is not a JSON object of prompt name → inputs",
                None,
                None,
                path=shown,
            )
        ]
    out: dict[str, list[dict[str, Any]]] = {}
    problems = []
    for name, value in data.items():
        sets = value if isinstance(value, list) else [value]
        if name not in names:
            close = did_you_mean(name, sorted(names))
            hint = (
                f"did you mean `{close}`?"
                if close
                else "the names are the prompts' paths under the output folder, without `.prompt`"
            )
            problems.append(
                make(
                    codes.IMPORT_BAD_INPUTS,
                    f"`{shown}` names `{name}`, which the import does not produce",
                    None,
                    hint,
                    path=shown,
                )
            )
            continue
        if not all(isinstance(s, dict) for s in sets):
            problems.append(
                make(
                    codes.IMPORT_BAD_INPUTS,
                    f"`{shown}`: the inputs of `{name}` are not objects",
                    None,
                    None,
                    path=shown,
                )
            )
            continue
        out[name] = sets
    return out, problems


def _engine_missing(kind: str, src: Path) -> Diagnostic:
    module = ENGINES[kind]
    return make(
        codes.IMPORT_ENGINE_MISSING,
        f"--check renders with {module}, which is not installed",
        None,
        "pip install 'promptc-compiler[check]'",
        path=str(src),
    )


def run_checks(
    kind: str,
    src: Path,
    converted: list[Converted],
    compiled: dict[str, CompiledPrompt],
    inputs: Path | str | None,
    checked: dict[str, int],
) -> list[Diagnostic]:
    try:
        found = importlib.util.find_spec(ENGINES[kind]) is not None
    except (ImportError, ValueError):  # a module that is there but cannot be imported
        found = False
    if not found:
        return [_engine_missing(kind, src)]
    root = src if src.is_dir() else src.parent
    prompts = [c for c in converted if not c.refused and not c.partial and c.target in compiled]
    names = {c.target.removesuffix(SOURCE_SUFFIX) for c in converted if not c.partial}
    given, diagnostics = _read_inputs(inputs, names) if inputs is not None else ({}, [])
    engine = _engine(kind, root, converted)
    for c in prompts:
        if c.refused:
            continue
        artifact = compiled[c.target].load_artifact()
        if artifact is None:  # compile_converted keeps only what compiled
            continue
        name = c.target.removesuffix(SOURCE_SUFFIX)
        schema = artifact.input_schema or {}
        made = sample_inputs(schema)
        if name in given:
            sets = [(f"--inputs set {i + 1}", s) for i, s in enumerate(given[name])]
        elif c.samples:
            sets = [
                (f"the source's defaults{' ' + str(i + 1) if len(c.samples) > 1 else ''}", {**made[0], **s})
                for i, s in enumerate(c.samples)
            ]
            sets.append(("made from the input types (empty values)", {**made[1], **c.samples[0]}))
        else:
            sets = [
                ("made from the input types (full values)", made[0]),
                ("made from the input types (empty values)", made[1]),
            ]
        count = 0
        for label, values in sets:
            problem = _compare(c, artifact, engine, label, values)
            count += 1
            if problem is not None:
                diagnostics.append(problem)
                c.refused = True
                break
        checked[name] = count
    return diagnostics


def _compare(c: Converted, artifact: Artifact, engine: Engine, label: str, values: dict[str, Any]) -> Diagnostic | None:
    assert c.foreign is not None
    try:
        theirs = engine(c, values)
    except Exception as exc:  # the engine's own error: there is nothing to compare with
        return make(
            codes.IMPORT_ENGINE_FAILED,
            f"the original engine failed on the sample ({label}): {type(exc).__name__}: {exc}",
            file_span(),
            "give inputs it accepts with --inputs FILE",
            source=c.foreign,
        )
    mine_inputs = {k: v for k, v in values.items() if k in set(artifact.inputs)}
    try:
        rendered = render_artifact(artifact, mine_inputs)
        mine = [(m["role"], m["content"]) for m in rendered.messages]
    except (RenderError, Exception) as exc:
        return make(
            codes.IMPORT_CHECK_DIFFERS,
            f"with the sample ({label}) the original engine renders, promptc fails: {type(exc).__name__}: {exc}",
            file_span(),
            "give other inputs with --inputs FILE, or fix the source",
            source=c.foreign,
        )
    a = [(role, normalise(text)) for role, text in theirs]
    b = [(role, normalise(text)) for role, text in mine]
    if a == b:
        return None
    return make(
        codes.IMPORT_CHECK_DIFFERS,
        f"with the sample ({label}): {_first_difference(a, b)}",
        file_span(),
        "this file is not written; report it if the source is valid",
        source=c.foreign,
    )


def _first_difference(a: list[tuple[str, str]], b: list[tuple[str, str]]) -> str:
    for i, ((ra, ta), (rb, tb)) in enumerate(zip(a, b, strict=False)):
        if ra != rb:
            return f"message {i + 1} is `{ra}` in the original, `{rb}` in promptc"
        if ta != tb:
            la, lb = ta.split("\n"), tb.split("\n")
            for k in range(max(len(la), len(lb))):
                x = la[k] if k < len(la) else "<no line>"
                y = lb[k] if k < len(lb) else "<no line>"
                if x != y:
                    return f"message {i + 1} ({ra}), line {k + 1}: original {x!r}, promptc {y!r}"
    return f"the original has {len(a)} messages, promptc {len(b)}"


# ---------------------------------------------------------------------------------------------
# The engines: each returns [(role, text)] for one converted file and one input set


def _engine(kind: str, root: Path, converted: list[Converted]) -> Engine:
    if kind == "jinja":
        return _jinja_engine(converted)
    if kind == "prompty":
        return _prompty_engine(root)
    return _dotprompt_engine(converted)


def _jinja_engine(converted: list[Converted]) -> Engine:
    # the templates as the import read them (never read again from the folder, which may have
    # changed since, or hold what the import refused to read)
    templates = {c.source: c.foreign.text for c in converted if c.foreign is not None}

    def load(name: str) -> str | None:  # a name as FileSystemLoader reads it (`./a.j2` is `a.j2`)
        return templates.get("/".join(jinja2.loaders.split_template_path(name)))

    env = jinja2.Environment(loader=jinja2.FunctionLoader(load))

    def render(c: Converted, values: dict[str, Any]) -> list[tuple[str, str]]:
        text = env.get_template(c.source).render(**values)
        role = re.search(r"^----- ([a-z]+) -----$", c.text, re.M)
        return [(role.group(1) if role else "system", text)]

    return render


def _prompty_engine(root: Path) -> Engine:
    def render(c: Converted, values: dict[str, Any]) -> list[tuple[str, str]]:
        assert c.foreign is not None
        # `${env:NAME}` without a default fails Prompty's load; those values only say how it
        # connects, so a placeholder stands in while the file is loaded
        names = set(re.findall(rf"\$\{{env:({IDENTIFIER_PATTERN})\}}", c.foreign.text))
        missing = [n for n in names if n not in os.environ]
        for n in missing:
            os.environ[n] = "https://promptc-check.invalid"
        try:
            agent = prompty.load(str(root / c.source))
        finally:
            for n in missing:
                os.environ.pop(n, None)
        messages = prompty.prepare(agent, values)
        out = []
        for m in messages:
            parts = [getattr(p, "value", None) for p in getattr(m, "parts", [])]
            texts = [p for p in parts if isinstance(p, str)]
            if len(texts) != len(parts):
                raise ValueError("a message part that is not text")
            out.append((str(m.role), "".join(texts)))
        return out

    return render


def _dotprompt_engine(converted: list[Converted]) -> Engine:
    Dotprompt, DataArgument = dotpromptz.Dotprompt, dotpromptz_typing.DataArgument
    partials = {}
    for c in converted:
        if c.partial and c.foreign is not None:
            name = c.source.rsplit("/", 1)[-1].removeprefix("_").removesuffix(SOURCE_SUFFIX)
            partials[name] = c.foreign.text

    def render(c: Converted, values: dict[str, Any]) -> list[tuple[str, str]]:
        assert c.foreign is not None
        dp = Dotprompt(partials=dict(partials))
        result = asyncio.run(dp.render(c.foreign.text, DataArgument(input=values)))
        out = []
        for m in result.messages:
            role = getattr(m.role, "value", m.role)
            texts = []
            for part in m.content:
                text = getattr(part, "text", None)
                if not isinstance(text, str):
                    raise ValueError("a message part that is not text")
                texts.append(text)
            out.append(({"model": "assistant"}.get(str(role), str(role)), "".join(texts)))
        return out

    return render
