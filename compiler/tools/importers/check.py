"""`promptc import --check`: render each imported prompt with the original engine and with promptc
on the same sample inputs, and compare the messages.

The engines are imported here only, and only when `--check` asks: dotpromptz (Dotprompt), prompty
(Prompty; a Prompty 1 header upgraded as its own migration did, `prompty.upgrade`), jinja2 (Jinja;
a Prompt flow chat template's text split into messages as Prompt flow's chat parser splits it,
`promptflow_messages`). Sample inputs come from `--inputs FILE` (a JSON object: prompt name → an
input object or a list of them), else from the source's own defaults and examples (Prompty's
`sample: ${file:…}` read by `folder.read_samples`), completed by values made from the input types
(`sample_inputs`): a full set (every string non-empty, every list two items long, every flag true)
and an empty one ("" , 0, false, [], None where allowed), so both sides of a condition render. The
types are the artifact's, refined by how the template uses each input (`Converted.shapes`: a
Prompty `object` whose properties the body reads gets them), so the samples are values the
template can take.

An empty sample is not a verdict. Dotprompt and Prompty leave out a message that renders empty
(and so do promptc's Anthropic, Gemini and Bedrock shapes); so in the empty set, an input whose
emptiness leaves a whole message empty gets its full value (`_not_emptied`), and messages that
render empty are left out on both sides before comparing.

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
from ...runtime.render import InputTypeError, RenderError, render_artifact
from ...syntax.jsonfile import read_json
from .common import Converted, warning
from .folder import read_foreign
from .jinja import PROMPTFLOW_ROLE, promptflow_chat
from .prompty import upgrade

#: an engine renders one converted file's original with input values: [(role, text)]
Engine = Callable[[Converted, dict[str, Any]], list[tuple[str, str]]]

# The original engines, imported only when `--check` runs one (each is an optional extra).
jinja2 = lazy_import("jinja2")
prompty = lazy_import("prompty")
prompty_utils = lazy_import("prompty.core.utils")
prompty_loader = lazy_import("prompty.core.loader")
dotpromptz = lazy_import("dotpromptz")
dotpromptz_typing = lazy_import("dotpromptz.typing")

ENGINES = {"dotprompt": "dotpromptz", "prompty": "prompty", "jinja": "jinja2"}


def normalise(text: str) -> str:
    """What promptc does to every message's text: leading blank lines and trailing whitespace go."""
    return re.sub(r"\A(?:[ \t]*\n)+", "", text).rstrip()


class CannotLoad(Exception):
    """The original engine (`engine`, its module's name) cannot load the file at all: no sample
    input would help."""

    def __init__(self, engine: str, reason: str) -> None:
        super().__init__(reason)
        self.engine = engine


def sample_inputs(schema: Mapping[str, Any], shapes: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Two input sets made from an artifact's `input_schema`, each input's type refined by how
    the template uses it (`shapes`, see `shaped`): full, and empty."""
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    sets = []
    for variant in (0, 1):
        values: dict[str, Any] = {}
        for name, sub in props.items():
            if variant == 1 and name not in required:
                values[name] = None
                continue
            values[name] = _sample(shaped(sub, (shapes or {}).get(name)), name, variant)
        sets.append(values)
    return sets


def shaped(declared: Any, used: Any) -> Any:
    """A declared JSON Schema, completed by the schema of how the template uses the value: an
    object's properties and a list's items the declaration leaves open (Prompty's `kind: object`)
    are the ones the template reads. Where the declaration says something, it stands (the
    engines then show whether the template takes such values). Bounded by the depth of `used`
    (`jinja.MAX_SHAPE_DEPTH`)."""
    if not isinstance(used, Mapping) or not used:
        return declared
    if not isinstance(declared, Mapping) or not declared:
        return used
    kinds = declared.get("type")
    kinds = {kinds} if isinstance(kinds, str) else set(kinds or [])
    want = used.get("type")
    want = want if isinstance(want, str) else next((k for k in want or [] if k != "null"), None)
    if want == "object" and "object" in kinds and isinstance(used.get("properties"), Mapping):
        props = dict(declared.get("properties") or {})
        for name, sub in used["properties"].items():
            props[name] = shaped(props.get(name) or {}, sub)
        required = list(dict.fromkeys([*(declared.get("required") or []), *(used.get("required") or [])]))
        return {**declared, "properties": props, "required": required}
    if want == "array" and "array" in kinds and isinstance(used.get("items"), Mapping):
        return {**declared, "items": shaped(declared.get("items") or {}, used["items"])}
    return declared


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
        made = sample_inputs(schema, c.shapes)
        empty = "made from the input types (empty values)"
        if name in given:
            sets = [(f"--inputs set {i + 1}", s) for i, s in enumerate(given[name])]
        elif c.samples:
            samples = [_fitted(c, s, made[0], diagnostics) for s in c.samples]
            sets = [
                (f"the source's defaults{' ' + str(i + 1) if len(samples) > 1 else ''}", {**made[0], **s})
                for i, s in enumerate(samples)
            ]
            sets.append(_not_emptied(artifact, empty, {**made[1], **samples[0]}, made[0]))
        else:
            sets = [
                ("made from the input types (full values)", made[0]),
                _not_emptied(artifact, empty, made[1], made[0]),
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


def _fits(value: Any, used: Any) -> bool:
    """Whether a value is one the template can read the way it does: a list where it loops, an
    object where it reads properties (scalars: the engines show)."""
    if not isinstance(used, Mapping):
        return True
    kind = used.get("type")
    kinds = {kind} if isinstance(kind, str) else set(kind or [])
    if value is None:
        return not kinds or "null" in kinds
    if "array" in kinds:
        return isinstance(value, list)
    if "object" in kinds:
        return isinstance(value, dict)
    return True


def _fitted(
    c: Converted, values: dict[str, Any], made: dict[str, Any], diagnostics: list[Diagnostic]
) -> dict[str, Any]:
    """The source's own sample, each value checked against how the template uses it: one the
    template cannot read as it does (an object it loops over, a string it reads properties of)
    is no verdict on the import; it is replaced by a value made from the type, with a warning
    (W972) where the source writes it."""
    assert c.foreign is not None
    out = dict(values)
    for name, value in values.items():
        used = c.shapes.get(name)
        if name not in made or _fits(value, used):
            continue
        out[name] = made[name]
        kinds = used.get("type") if isinstance(used, Mapping) else None
        reads = "loops over it" if "array" in (kinds or ()) else "reads its properties"
        line, column = c.sample_origin.get(name) or c.sample_origin.get("*") or (1, 1)
        diagnostics.append(
            warning(
                codes.IMPORT_FIELD_DROPPED,
                f"the sample value of `{name}` is not imported: it is {_json_kind(value)}, and the template {reads}",
                c.foreign,
                line,
                column,
                "--check renders a value made from the input's type instead; correct the sample, or give "
                "inputs with --inputs FILE",
            )
        )
    return out


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _not_emptied(
    artifact: Artifact, label: str, values: dict[str, Any], full: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """The empty input set, with the full value for an input whose emptiness leaves a whole
    message empty (Dotprompt and Prompty leave such a message out, so nothing of it would be
    compared): per message that renders empty, its inputs get their full value one at a time,
    strings first, until it does not. Returns (the set's label, naming those inputs; the set)."""
    values = dict(values)
    props = (artifact.input_schema or {}).get("properties") or {}
    given: list[str] = []
    for index, message in enumerate(artifact.messages):
        reads = list(dict.fromkeys(n for block in message.blocks for section in block.sections for n in section.inputs))
        reads.sort(key=lambda n: 0 if (props.get(n) or {}).get("type") == "string" else 1)
        for name in reads:
            if not _renders_empty(artifact, values, index):
                break
            if name in full and values.get(name) != full[name]:
                values[name] = full[name]
                given.append(name)
    if given:
        names = ", ".join(f"`{n}`" for n in given)
        label += f", but {names} full: empty, a message would be empty, which the original leaves out"
    return label, values


def _renders_empty(artifact: Artifact, values: dict[str, Any], index: int) -> bool:
    try:
        messages = render_artifact(artifact, {k: v for k, v in values.items() if k in set(artifact.inputs)}).messages
    except Exception:  # the comparison reports it
        return False
    return index < len(messages) and not normalise(messages[index]["content"])


def _compare(c: Converted, artifact: Artifact, engine: Engine, label: str, values: dict[str, Any]) -> Diagnostic | None:
    assert c.foreign is not None
    try:
        theirs = engine(c, values)
    except CannotLoad as exc:  # no sample would help: say what the engine refuses
        return make(
            codes.IMPORT_ENGINE_FAILED,
            f"the original engine cannot load the file: {exc}",
            file_span(),
            f"{exc.engine} refuses the file itself, whatever the inputs: correct what it names",
            source=c.foreign,
        )
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
    except InputTypeError as exc:  # the values do not fit the contract the import declared
        first = re.match(rf"{IDENTIFIER_PATTERN}", exc.problems[0]) if exc.problems else None
        line, column = c.input_origin.get(first.group(0) if first else "", (1, 1))
        return warning(
            codes.IMPORT_CHECK_DIFFERS,
            f"the sample ({label}) does not fit the input types the import declares: {'; '.join(exc.problems)}",
            c.foreign,
            line,
            column,
            "declare the kinds the values have, or give other inputs with --inputs FILE",
        )
    except (RenderError, Exception) as exc:
        return make(
            codes.IMPORT_CHECK_DIFFERS,
            f"with the sample ({label}) the original engine renders, promptc fails: {type(exc).__name__}: {exc}",
            file_span(),
            "give other inputs with --inputs FILE, or fix the source",
            source=c.foreign,
        )
    # a message that renders empty is left out on both sides: the original engines leave it out
    a = [(role, normalise(text)) for role, text in theirs if normalise(text)]
    b = [(role, normalise(text)) for role, text in mine if normalise(text)]
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


def promptflow_messages(text: str) -> list[tuple[str, str]]:
    """A Prompt flow chat template's rendered text as Prompt flow's chat parser (promptflow-tools
    `promptflow/tools/common.py`, `parse_chat`) makes messages of it: split at each role line
    (`jinja.PROMPTFLOW_ROLE`, its separator read line by line, which ends with a newline), each
    message's text stripped. Text before the first role line is Prompt flow's error too. Its
    separator's pattern, searched over the whole text, re-reads runs of blank lines (quadratic):
    this reads each line once. Named messages (`name:` / `content:` lines) are refused by the
    import, images and tool calls too (`function`, `tool`): neither is ported."""
    lines = text.split("\n")
    before: list[str] = []
    messages: list[tuple[str, list[str]]] = []
    for index, line in enumerate(lines):
        role = PROMPTFLOW_ROLE.match(line) if index < len(lines) - 1 else None
        if role is not None:
            messages.append((role.group(1).lower(), []))
        else:
            (messages[-1][1] if messages else before).append(line)
    if "\n".join(before).strip():
        raise ValueError(
            f"Prompt flow's chat parser refuses text before the first role line: {before[0].strip()[:40]!r}"
        )
    return [(role, "\n".join(body).strip()) for role, body in messages]


def _jinja_engine(converted: list[Converted]) -> Engine:
    # the templates as the import read them (never read again from the folder, which may have
    # changed since, or hold what the import refused to read)
    templates = {c.source: c.foreign.text for c in converted if c.foreign is not None}
    chats = {source for source, text in templates.items() if promptflow_chat(text)}

    def load(name: str) -> str | None:  # a name as FileSystemLoader reads it (`./a.j2` is `a.j2`)
        return templates.get("/".join(jinja2.loaders.split_template_path(name)))

    env = jinja2.Environment(loader=jinja2.FunctionLoader(load))

    def render(c: Converted, values: dict[str, Any]) -> list[tuple[str, str]]:
        text = env.get_template(c.source).render(**values)
        if c.source in chats:
            return promptflow_messages(text)
        role = re.search(r"^----- ([a-z]+) -----$", c.text, re.M)
        return [(role.group(1) if role else "system", text)]

    return render


def _prompty_agent(root: Path, c: Converted) -> Any:
    """The file the import read, loaded by Prompty's own loader: split by Prompty, a Prompty 1
    header upgraded as Prompty's migration did (`prompty.upgrade`, the one place that knows it),
    without its connection, references resolved relative to the file as Prompty does."""
    assert c.foreign is not None
    data = prompty_utils.parse(c.foreign.text)
    if isinstance(data, dict):
        data = upgrade(data)[0]
        if isinstance(data.get("model"), dict):
            # how Prompty connects is not imported (W972) and renders nothing: loaded without it,
            # a file needs no endpoint Prompty trusts to be compared
            data["model"].pop("connection", None)
        data.pop("sample", None)  # never sent: the import read it for the check (`read_samples`)
    # `${env:NAME}` without a default fails Prompty's load; those values only say how it
    # connects, so a placeholder stands in while the file is loaded
    names = set(re.findall(rf"(?i)\$\{{env:({IDENTIFIER_PATTERN})\}}", c.foreign.text))
    missing = [n for n in names if n not in os.environ]
    for n in missing:
        os.environ[n] = "https://promptc-check.invalid"
    try:
        return prompty_loader._build_agent(data, (root / c.source).resolve())
    finally:
        for n in missing:
            os.environ.pop(n, None)


def _prompty_engine(root: Path) -> Engine:
    agents: dict[str, Any] = {}  # each file loaded once, or the reason it cannot be

    def render(c: Converted, values: dict[str, Any]) -> list[tuple[str, str]]:
        if c.source not in agents:
            try:
                agents[c.source] = _prompty_agent(root, c)
            except Exception as exc:  # the engine's own error, whatever it is
                agents[c.source] = CannotLoad("prompty", f"{type(exc).__name__}: {exc}")
        agent = agents[c.source]
        if isinstance(agent, CannotLoad):
            raise agent
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
