"""Dotprompt (`*.prompt`: YAML front matter, a Handlebars body) → `.prompt` sources. The body goes
through `handlebars`; this module maps the header (model, config, Picoschema input and output
schemas) and the partials (`_name.prompt` files beside the prompt)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from typing import Any

from ...facts import codes
from ...facts.diagnostics import SourceText
from ...facts.language import SOURCE_SUFFIX
from .common import (
    DROPPED_HINT,
    Converted,
    assemble,
    front_matter,
    input_decl,
    json_text,
    metadata_line,
    model_and_provider,
    param_lines,
    refusal_diagnostic,
    snake,
    warning,
)
from .handlebars import Inputs, Resolver, Translator, lex
from .ir import Include, Node, Refusal, Role, Text, Where, emit, emit_marked, walk

#: a foreign file's path → its `.prompt` path (`partial`: a partial's)
TargetOf = Callable[[str, bool], str]

_DELIMITER = re.compile(r"---[ \t]*")
_SCALARS = ("any", "boolean", "integer", "null", "number", "string")
_KNOWN = (
    "name",
    "variant",
    "version",
    "description",
    "model",
    "config",
    "input",
    "output",
    "tools",
    "metadata",
    "raw",
    "ext",
)


def split(src: SourceText) -> tuple[str | None, int, str, int]:
    """(header or None, its first line, body, the body's first line), as Dotprompt splits them:
    leading blank and `#` lines may stand before the opening `---`."""
    lines = src.text.split("\n")
    opening = None
    for i, line in enumerate(lines):
        if _DELIMITER.fullmatch(line):
            opening = i
            break
        if line.strip() and not line.startswith("#"):
            return None, 1, src.text, 1
    if opening is None:
        return None, 1, src.text, 1
    for j in range(opening + 1, len(lines)):
        if _DELIMITER.fullmatch(lines[j]):
            return "\n".join(lines[opening + 1 : j]), opening + 2, "\n".join(lines[j + 1 :]), j + 2
    raise Refusal(codes.IMPORT_BAD_HEADER, "the front matter has no closing `---`", opening + 1, 1)


def picoschema(value: Any, where: Where, path: tuple[str | int, ...]) -> dict[str, Any]:
    """Picoschema (or JSON Schema) → JSON Schema, as Dotprompt reads it; iterative."""
    if (
        isinstance(value, dict)
        and isinstance(value.get("type"), str)
        and value["type"] in (*_SCALARS, "object", "array")
    ):
        return _json_schema(value, where, path)
    if isinstance(value, dict) and isinstance(value.get("properties"), dict):
        return {**_json_schema(value, where, path), "type": "object"}
    return _pico(value, where, path)


def _json_schema(value: dict[str, Any], where: Where, path: tuple[str | int, ...]) -> dict[str, Any]:
    """A JSON Schema whose properties may be written in Picoschema (`name: string`)."""
    out = dict(value)
    if isinstance(value.get("properties"), dict):
        out["properties"] = {
            k: (
                picoschema(v, where, (*path, "properties", k))
                if not isinstance(v, dict)
                else _json_schema(v, where, (*path, "properties", k))
            )
            for k, v in value["properties"].items()
        }
    if isinstance(value.get("items"), (str, dict)):
        items = value["items"]
        out["items"] = (
            picoschema(items, where, (*path, "items"))
            if isinstance(items, str)
            else _json_schema(items, where, (*path, "items"))
        )
    return out


def _description(text: str) -> tuple[str, str | None]:
    if "," not in text:
        return text, None
    m = re.match(r"(.*?), *(.*)$", text, re.S)
    return (m.group(1), m.group(2)) if m else (text, None)


def _pico(value: Any, where: Where, path: tuple[str | int, ...]) -> dict[str, Any]:
    if isinstance(value, str):
        name, description = _description(value)
        if name not in _SCALARS:
            raise Refusal(
                codes.IMPORT_UNSUPPORTED_FIELD,
                f"`{name}` is not a Picoschema type (a named schema is resolved by Dotprompt's runtime)",
                *where(*path),
                "write the schema inline, or use one of " + ", ".join(_SCALARS),
            )
        schema: dict[str, Any] = {} if name == "any" else {"type": name}
        if description:
            schema["description"] = description
        return schema
    if not isinstance(value, dict):
        raise Refusal(codes.IMPORT_UNSUPPORTED_FIELD, "Picoschema holds only mappings and strings", *where(*path))
    schema = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    for key, item in value.items():
        at = (*path, key)
        if key == "(*)":
            schema["additionalProperties"] = _pico(item, where, at)
            continue
        name, _, info = key.partition("(")
        info = info[:-1] if info.endswith(")") else info
        optional = name.endswith("?")
        prop = name[:-1] if optional else name
        if not optional:
            schema["required"].append(prop)
        if not info:
            child = _pico(item, where, at)
            if optional and isinstance(child.get("type"), str):
                child["type"] = [child["type"], "null"]
            schema["properties"][prop] = child
            continue
        kind, description = _description(info)
        if kind == "array":
            child = {"type": ["array", "null"] if optional else "array", "items": _pico(item, where, at)}
        elif kind == "object":
            child = _pico(item, where, at)
            if optional:
                child["type"] = [child["type"], "null"]
        elif kind == "enum":
            if not isinstance(item, list):
                raise Refusal(codes.IMPORT_UNSUPPORTED_FIELD, "an enum's values are a list", *where(*at))
            child = {"enum": list(item) + ([None] if optional and None not in item else [])}
        else:
            raise Refusal(
                codes.IMPORT_UNSUPPORTED_FIELD,
                f"`({kind})` is not a Picoschema type (array, object or enum)",
                *where(*at),
            )
        if description:
            child["description"] = description
        schema["properties"][prop] = child
    if not schema["required"]:
        del schema["required"]
    return schema


def convert_all(sources: dict[str, SourceText], target_of: TargetOf) -> list[Converted]:
    """Every prompt and partial of the folder; partials first, so prompts can check against them."""
    partial_rels = {rel for rel in sources if rel.rsplit("/", 1)[-1].startswith("_")}
    partials: dict[str, Converted] = {}
    translated: dict[str, Inputs] = {}
    for rel in sorted(partial_rels):
        partials[rel] = _convert_partial(sources[rel], rel, target_of(rel, True), translated, sources, target_of)
    out = list(partials.values())
    for rel in sorted(set(sources) - partial_rels):
        out.append(_convert_prompt(sources[rel], rel, target_of(rel, False), sources, partials, translated, target_of))
    return out


def _resolver(
    rel: str, sources: dict[str, Any], target_of: TargetOf, partials: dict[str, Converted] | None = None
) -> Resolver:
    folder = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""

    def resolve(name: str) -> tuple[str | None, str] | None:
        for candidate in (f"{folder}_{name}.prompt", f"_{name}.prompt"):
            if candidate in sources:
                target = target_of(candidate, True)
                here = posixpath.dirname(target_of(rel, False)) or "."
                converted = partials.get(candidate) if partials is not None else None
                usable = converted is not None and not converted.refused
                return (posixpath.relpath(target, here) if usable else None), sources[candidate].text
        return None

    return resolve


def _convert_partial(
    src: SourceText,
    rel: str,
    target: str,
    translated: dict[str, Inputs],
    sources: dict[str, SourceText],
    target_of: TargetOf,
) -> Converted:
    out = Converted(rel, target, foreign=src, partial=True)
    try:
        inputs = Inputs(None)
        translator = Translator(inputs, _resolver(rel, sources, target_of, {}), partial=True)
        nodes = translator.translate(lex(src.text))
        if any(isinstance(n, Role) for n in walk(nodes)):
            raise Refusal(
                codes.IMPORT_NO_EQUIVALENT, "a partial with `{{role}}`", 1, 1, "promptc partials cannot start messages"
            )
        body = emit(nodes)
        translated[rel] = inputs
        out.inputs = list(inputs.order)
        out.text = assemble("dotprompt", rel, [], body, partial=True)
    except Refusal as refusal:
        out.refused = True
        out.diagnostics.append(refusal_diagnostic(refusal, src))
    return out


def _convert_prompt(
    src: SourceText,
    rel: str,
    target: str,
    sources: dict[str, SourceText],
    partials: dict[str, Converted],
    translated: dict[str, Inputs],
    target_of: TargetOf,
) -> Converted:
    out = Converted(rel, target, foreign=src)
    try:
        _prompt(src, rel, out, sources, partials, translated, target_of)
    except Refusal as refusal:
        out.refused = True
        out.diagnostics.append(refusal_diagnostic(refusal, src))
    return out


def _prompt(
    src: SourceText,
    rel: str,
    out: Converted,
    sources: dict[str, SourceText],
    partials: dict[str, Converted],
    translated: dict[str, Inputs],
    target_of: TargetOf,
) -> None:
    header_text, header_line, body, body_line = split(src)
    data, where = front_matter(header_text, header_line)

    def drop(message: str, *path: str | int, hint: str = DROPPED_HINT) -> None:
        out.diagnostics.append(warning(codes.IMPORT_FIELD_DROPPED, message, src, *where(*path), hint))

    folder = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""
    stem = out.target.rsplit("/", 1)[-1].removesuffix(SOURCE_SUFFIX)
    lines: list[str] = []
    params: dict[str, Any] = {}
    if "model" in data:
        if not isinstance(data["model"], str):
            raise Refusal(codes.IMPORT_UNSUPPORTED_FIELD, "`model` is not a name", *where("model"))
        model, plugin = model_and_provider(data["model"])
        params["model"] = model
        out.param_origin["model"] = where("model")
        if plugin:
            lines.append(metadata_line("dotprompt.model", data["model"]) or "")
    config = data.get("config")
    if config is not None:
        if not isinstance(config, dict):
            raise Refusal(codes.IMPORT_UNSUPPORTED_FIELD, "`config` is not a mapping", *where("config"))
        for key, value in config.items():
            params[snake(key)] = value
            out.param_origin[snake(key)] = where("config", key)
    lines[:0] = param_lines(params)

    # input: schema and defaults
    declared = None
    samples: list[dict[str, Any]] = []
    inputs_field = data.get("input")
    if inputs_field is not None:
        if not isinstance(inputs_field, dict):
            raise Refusal(codes.IMPORT_UNSUPPORTED_FIELD, "`input` is not a mapping", *where("input"))
        if inputs_field.get("schema") is not None:
            schema = picoschema(inputs_field["schema"], where, ("input", "schema"))
            if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
                raise Refusal(
                    codes.IMPORT_UNSUPPORTED_FIELD,
                    "`input.schema` is not an object schema: promptc's inputs are named",
                    *where("input", "schema"),
                )
            declared = schema
        if isinstance(inputs_field.get("default"), dict):
            samples.append(dict(inputs_field["default"]))
        for key in inputs_field:
            if key not in ("schema", "default"):
                drop(f"`input.{key}` is not imported", "input", key)

    # output
    output = data.get("output")
    if output is not None:
        if not isinstance(output, dict):
            raise Refusal(codes.IMPORT_UNSUPPORTED_FIELD, "`output` is not a mapping", *where("output"))
        if output.get("schema") is not None:
            schema = picoschema(output["schema"], where, ("output", "schema"))
            if schema.get("type") != "object":
                raise Refusal(
                    codes.IMPORT_UNSUPPORTED_FIELD,
                    "`output.schema` is not an object schema: the providers' structured output takes an object",
                    *where("output", "schema"),
                    "wrap the value in an object property",
                )
            file = re.sub(r"[^A-Za-z0-9_-]", "_", stem)[:57] + "_output.json"
            out.extra[f"{folder}{file}"] = json_text(schema)
            lines.append(f"/// output: {file}")
        fmt = output.get("format")
        if fmt not in (None, "json", "text"):
            raise Refusal(
                codes.IMPORT_UNSUPPORTED_FIELD,
                f"`output.format: {fmt}` is not imported: Genkit parses that format from the reply, promptc does not",
                *where("output", "format"),
                "ask for the format in the prompt's text and parse the reply in your code, or use `json` with a schema",
            )
        if fmt == "text" or (fmt == "json" and output.get("schema") is None):
            drop(
                f"`output.format: {fmt}` is not imported: without a schema promptc sends no output format",
                "output",
                "format",
            )
    if data.get("tools"):
        raise Refusal(
            codes.IMPORT_UNSUPPORTED_FIELD,
            "`tools` names tools whose definitions live in your Dotprompt/Genkit code",
            *where("tools"),
            "write each tool as a JSON file ({name, description, input_schema}) and name it with `/// tools:`",
        )
    for key in ("name", "variant", "version", "description"):
        if key in data:
            line = metadata_line(key, data[key])
            if line:
                lines.append(line)
    for key, value in data.items():
        if key in _KNOWN:
            if key in ("metadata", "ext", "raw"):
                drop(f"`{key}` is not imported", key)
            continue
        if "." in key and re.fullmatch(r"[a-z][a-z0-9_.-]*", key.lower()) and metadata_line(key.lower(), value):
            lines.append(metadata_line(key.lower(), value) or "")
        else:
            drop(f"`{key}` is not imported", key)

    # the body
    inputs = Inputs(declared)
    translator = Translator(inputs, _resolver(rel, sources, target_of, partials))
    nodes = translator.translate(lex(body, body_line))
    _check_partials(nodes, translator, rel, sources, partials, translated, inputs, target_of)
    first = next((n for n in nodes if not (isinstance(n, Text) and not n.text.strip())), None)
    if not isinstance(first, Role):  # Dotprompt: text before any role marker is a user message
        nodes.insert(0, Role("user", body_line, 1))
    names = [*[n for n in inputs.schemas if declared is not None and n in (declared.get("properties") or {})]]
    names += [n for n in inputs.order if n not in names]
    decls = []
    for name in names:
        schema = inputs.schemas[name]
        if name not in inputs.required and isinstance(schema.get("type"), str):
            schema = {**schema, "type": [schema["type"], "null"]}
        decls.append(input_decl(name, schema, stem, out.extra, folder))
    if decls:
        lines.append("/// input: " + ", ".join(decls))
    out.inputs = names
    out.samples = samples
    body_text, marks = emit_marked(nodes)
    out.text = assemble("dotprompt", rel, lines, body_text, marks=marks, into=out)


def _check_partials(
    nodes: list[Node],
    translator: Translator,
    rel: str,
    sources: dict[str, SourceText],
    partials: dict[str, Converted],
    translated: dict[str, Inputs],
    inputs: Inputs,
    target_of: TargetOf,
) -> None:
    """A partial is converted once, with the types its own use implies; a prompt may include it only
    when it gives those inputs the same types (else promptc would print them differently)."""
    here = posixpath.dirname(target_of(rel, False))
    for node in walk(nodes):
        if not isinstance(node, Include):
            continue
        target = posixpath.normpath(posixpath.join(here, node.target))
        partial_rel = next((r for r, c in partials.items() if c.target == target), None)
        converted = partials.get(partial_rel) if partial_rel else None
        if partial_rel is None or converted is None or converted.refused:
            raise Refusal(
                codes.IMPORT_PARTIAL_MISSING,
                f"the partial `{node.target}` could not be imported",
                node.line,
                node.column,
            )
        theirs = translated[partial_rel]
        for name in theirs.order:
            mine = inputs.schemas.get(name)
            if mine is None:
                inputs.root(name)
                inputs.schemas[name] = dict(theirs.schemas[name])
                inputs.inferred.discard(name)
            elif mine != theirs.schemas[name] and not (name in inputs.inferred and mine == {}):
                raise Refusal(
                    codes.IMPORT_NO_EQUIVALENT,
                    f"the partial `{node.target}` reads `{name}` as {theirs.schemas[name] or 'any value'}, this prompt as {mine or 'any value'}",
                    node.line,
                    node.column,
                    "a promptc partial is converted once: give the input one type in both",
                )
            elif name in inputs.inferred and mine == {}:
                inputs.schemas[name].update(theirs.schemas[name])
