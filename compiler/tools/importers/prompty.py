"""Prompty (`*.prompty`: YAML front matter, a Jinja2 body with `system:` / `user:` role lines) →
`.prompt` sources. The body goes through `jinja`; this module maps the header (the front matter Prompty's specification defines)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from ...facts import codes
from ...facts.diagnostics import SourceText
from ...facts.language import SOURCE_SUFFIX
from ...facts.profiles import provider_of_model
from .common import (
    Converted,
    assemble,
    front_matter,
    input_decl,
    json_text,
    metadata_line,
    param_lines,
    refusal_diagnostic,
    snake,
    warning,
)
from .ir import JsonPath, Refusal, Role, Text, Where, emit_marked
from .jinja import Options as JinjaOptions
from .jinja import parse as parse_jinja

SUFFIXES = (".prompty",)
_FRONT = re.compile(r"\s*(?:---|\+\+\+)(.*?)(?:---|\+\+\+)\s*(.+)$", re.S | re.M)
_REFERENCE = re.compile(r"\$\{(env|file):")
RICH_KINDS = ("thread", "image", "file", "audio")
_KINDS = {"string": "string", "integer": "integer", "float": "number", "number": "number", "boolean": "boolean"}


def split(src: SourceText) -> tuple[str | None, int, str, int]:
    """(header text or None, its first line, body, the body's first line), as Prompty splits them."""
    text = src.text
    if re.match(r"\s*---", text) is None:
        return None, 1, text, 1
    m = _FRONT.match(text)
    if m is None:
        raise Refusal(
            codes.IMPORT_BAD_HEADER,
            "the front matter has no closing `---`",
            1,
            1,
            "close the header with a `---` line, followed by the body",
        )
    header_line = text.count("\n", 0, m.start(1)) + 1
    body_line = text.count("\n", 0, m.start(2)) + 1
    return m.group(1), header_line, m.group(2), body_line


def convert(src: SourceText, rel: str, target: str, resolve_include: Callable[[str], str | None]) -> Converted:
    out = Converted(rel, target, foreign=src)
    try:
        _convert(src, rel, out, resolve_include)
    except Refusal as refusal:
        out.refused = True
        out.diagnostics.append(refusal_diagnostic(refusal, src))
    return out


def _convert(src: SourceText, rel: str, out: Converted, resolve_include: Callable[[str], str | None]) -> None:
    header_text, header_line, body, body_line = split(src)
    data, where = front_matter(header_text, header_line)

    folder = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""
    stem = out.target.rsplit("/", 1)[-1].removesuffix(SOURCE_SUFFIX)
    lines: list[str] = []

    def drop(message: str, *path: str | int) -> None:
        out.diagnostics.append(warning(codes.IMPORT_FIELD_DROPPED, message, src, *where(*path)))

    def no_reference(value: Any, *path: str | int) -> None:
        stack: list[tuple[Any, JsonPath]] = [(value, path)]
        while stack:
            item, at = stack.pop()
            if isinstance(item, str) and _REFERENCE.search(item):
                raise Refusal(
                    codes.IMPORT_UNSUPPORTED_FIELD,
                    f"`{item}` is resolved by Prompty when it loads the file; promptc's sources are fixed",
                    *where(*at),
                    "write the value itself, or pass it as an input",
                )
            if isinstance(item, dict):
                stack.extend((v, (*at, k)) for k, v in item.items())
            elif isinstance(item, list):
                stack.extend((v, (*at, i)) for i, v in enumerate(item))

    for key, value in data.items():  # references anywhere but in how Prompty connects
        if key == "model" and isinstance(value, dict):
            no_reference({k: v for k, v in value.items() if k not in ("connection", "configuration")}, key)
        else:
            no_reference(value, key)

    # template format and parser
    template = data.get("template")
    fmt, parser = "jinja2", "prompty"
    if isinstance(template, str):
        fmt = template
    elif isinstance(template, dict):
        f, p = template.get("format"), template.get("parser")
        fmt = (f.get("kind") if isinstance(f, dict) else f) or "jinja2"
        parser = (p.get("kind") if isinstance(p, dict) else p) or "prompty"
    if fmt != "jinja2":
        raise Refusal(
            codes.IMPORT_UNSUPPORTED_FIELD,
            f"the template format `{fmt}` is not imported (only jinja2)",
            *where("template"),
            "convert the template to jinja2 (Prompty's default)",
        )
    if parser != "prompty":
        raise Refusal(
            codes.IMPORT_UNSUPPORTED_FIELD, f"the parser `{parser}` is not imported (only prompty)", *where("template")
        )

    # model
    params: dict[str, Any] = {}
    model = data.get("model")
    if isinstance(model, str):
        model = {"id": model}
    if isinstance(model, dict):
        for key, value in model.items():
            if key == "id":
                no_reference(value, "model", "id")
                if value:
                    params["model"] = str(value)
                    out.param_origin["model"] = where("model", key)
            elif key in ("options", "parameters"):  # `parameters`: Prompty 1's name for the options
                if not isinstance(value, dict):
                    raise Refusal(
                        codes.IMPORT_UNSUPPORTED_FIELD, f"`model.{key}` is not a mapping", *where("model", key)
                    )
                for name, option in value.items():
                    no_reference(option, "model", key, name)
                    if name == "additionalProperties" and isinstance(option, dict):
                        for extra, v in option.items():
                            params[snake(extra)] = v
                            out.param_origin[snake(extra)] = where("model", key, name, extra)
                    else:
                        params[snake(name)] = option
                        out.param_origin[snake(name)] = where("model", key, name)
            elif key == "apiType" or key == "api":
                if value not in ("chat", "responses"):
                    raise Refusal(
                        codes.IMPORT_UNSUPPORTED_FIELD,
                        f"`model.{key}: {value}` is not a chat request; promptc builds chat requests",
                        *where("model", key),
                    )
                if value == "responses":
                    drop(
                        "`model.apiType: responses` is not imported: render with `--shape openai-responses`",
                        "model",
                        key,
                    )
            elif key == "provider":
                if value != provider_of_model(str(model.get("id") or "")):
                    drop(
                        f"`model.provider: {value}` is not imported: promptc picks the provider profile from the model",
                        "model",
                        key,
                    )
            elif key in ("connection", "configuration"):
                drop(f"`model.{key}` is not imported: it says how Prompty connects, not what it sends", "model", key)
            else:
                drop(f"`model.{key}` is not imported", "model", key)
    elif model is not None:
        raise Refusal(codes.IMPORT_UNSUPPORTED_FIELD, "`model` is neither a name nor a mapping", *where("model"))
    lines += param_lines(params)  # `model` first: it was set first

    # description and metadata
    for key in ("name", "displayName", "description"):
        if key in data:
            line = metadata_line(key.lower(), data[key])
            if line:
                lines.append(line)
    meta = data.get("metadata")
    authors = data.get("authors") if "authors" in data else (meta.get("authors") if isinstance(meta, dict) else None)
    if isinstance(meta, dict):
        for key, value in meta.items():
            if key in ("authors",):
                continue
            if key == "tags" and isinstance(value, list) and all(isinstance(t, str) for t in value):
                tags = [t for t in value if re.fullmatch(r"[^,\n]+", t)]
                if tags:
                    lines.append("/// tag: " + ", ".join(tags))
                continue
            line = metadata_line(
                f"metadata.{key}" if re.fullmatch(r"[a-z][a-z0-9_.-]*", f"metadata.{key}") else "", value
            )
            if line and not line.startswith("/// :"):
                lines.append(line)
            else:
                drop(f"`metadata.{key}` is not imported", "metadata", key)
    if isinstance(authors, list) and all(isinstance(a, str) for a in authors):
        lines.append("/// authors: " + ", ".join(authors))

    # inputs
    declared: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    raw_inputs = data.get("inputs")
    samples: dict[str, Any] = {}
    for name, prop, path in _properties(raw_inputs, "inputs", where):
        kind = prop.get("kind", prop.get("type"))
        if kind in RICH_KINDS:
            raise Refusal(
                codes.IMPORT_UNSUPPORTED_FIELD,
                f"the input `{name}` is of kind `{kind}`: Prompty splices it into the messages as structured data",
                *where(*path),
                "promptc messages hold text: pass the conversation as separate messages at call time",
            )
        for key in ("default", "example", "sample"):
            if key in prop:
                no_reference(prop[key], *path, key)
                if key == "default" or name not in samples:
                    samples[name] = prop[key]
        declared[name] = _schema(prop, name, path, where)
        order.append(name)
    if isinstance(data.get("sample"), dict):  # Prompty 1's sample block
        for name, value in data["sample"].items():
            samples.setdefault(name, value)

    # tools and outputs
    tools = data.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise Refusal(codes.IMPORT_UNSUPPORTED_FIELD, "`tools` is not a list", *where("tools"))
        wire = [_tool(tool, i, where) for i, tool in enumerate(tools)]
        if wire:
            file = f"{stem}.tools.json"
            out.extra[f"{folder}{file}"] = json_text(wire)
            lines.append(f"/// tools: {file}")
    outputs = data.get("outputs")
    if outputs:
        properties: dict[str, Any] = {}
        for name, prop, path in _properties(outputs, "outputs", where):
            schema = _wire_property(prop, path, where, strict=True)
            if not prop.get("required"):
                _nullable(schema)
            properties[name] = schema
        schema = {
            "title": "structured_output",
            "type": "object",
            "properties": properties,
            "additionalProperties": False,
            "required": list(properties),
        }
        file = f"{stem}.output.json"
        out.extra[f"{folder}{file}"] = json_text(schema)
        lines.append(f"/// output: {file}")

    for key in data:
        if key not in (
            "name",
            "displayName",
            "description",
            "metadata",
            "authors",
            "model",
            "inputs",
            "outputs",
            "tools",
            "template",
            "sample",
            "version",
        ):
            drop(f"`{key}` is not imported", key)
    if "version" in data:
        line = metadata_line("version", data["version"])
        if line:
            lines.append(line)

    # the body
    parsed = parse_jinja(body, JinjaOptions(roles=True, folder=folder, resolve_include=resolve_include), body_line)
    nodes = parsed.nodes
    first = next((n for n in nodes if not (isinstance(n, Text) and not n.text.strip())), None)
    if not isinstance(first, Role):  # Prompty: text before any role line is a system message
        nodes.insert(0, Role("system", body_line, 1))
    inputs = [*order, *(n for n in parsed.inputs if n not in declared)]
    decls = [input_decl(n, declared.get(n), stem, out.extra, folder) for n in inputs]
    if decls:
        lines.append("/// input: " + ", ".join(decls))
    out.inputs = inputs
    out.samples = [samples] if samples else []
    body_text, marks = emit_marked(nodes)
    out.text = assemble("prompty", rel, lines, body_text, marks=marks, into=out)


def _properties(raw: Any, field: str, where: Where) -> Iterator[tuple[str, dict[str, Any], JsonPath]]:
    """(name, property mapping, header path) of Prompty's `inputs`/`outputs`: a list of properties
    with `name`, a mapping name → property, or a mapping name → a scalar (its default)."""
    if raw is None:
        return
    if isinstance(raw, list):
        for i, prop in enumerate(raw):
            if not isinstance(prop, dict) or not isinstance(prop.get("name"), str):
                raise Refusal(codes.IMPORT_UNSUPPORTED_FIELD, f"`{field}[{i}]` has no `name`", *where(field, i))
            yield prop["name"], prop, (field, i)
    elif isinstance(raw, dict):
        for name, prop in raw.items():
            if not isinstance(prop, dict):
                prop = {"kind": _inferred_kind(prop), "default": prop}
            yield str(name), prop, (field, name)
    else:
        raise Refusal(codes.IMPORT_UNSUPPORTED_FIELD, f"`{field}` is neither a list nor a mapping", *where(field))


def _inferred_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"


def _schema(prop: dict[str, Any], name: str, path: JsonPath, where: Where) -> dict[str, Any]:
    """The promptc input contract of one Prompty input: its type only (Prompty does not check
    values against enums or descriptions when it renders, so neither does the import)."""
    kind = prop.get("kind", prop.get("type"))
    if kind is None:
        return {}
    if kind in _KINDS:
        return {"type": _KINDS[kind]}
    if kind == "array":
        items = prop.get("items")
        inner = _schema(items, name, (*path, "items"), where) if isinstance(items, dict) else {}
        return {"type": "array", "items": inner} if inner else {"type": "array"}
    if kind == "object":
        return {"type": "object"}
    raise Refusal(codes.IMPORT_UNSUPPORTED_FIELD, f"the input `{name}` has the unknown kind `{kind}`", *where(*path))


def _wire_property(prop: dict[str, Any], path: JsonPath, where: Where, *, strict: bool = False) -> dict[str, Any]:
    """A Prompty property as Prompty's OpenAI executor sends it (`_property_to_json_schema`)."""
    kind = prop.get("kind", prop.get("type"))
    types = {**_KINDS, "array": "array", "object": "object"}
    if kind is not None and kind not in types:
        raise Refusal(codes.IMPORT_UNSUPPORTED_FIELD, f"the property kind `{kind}` is not imported", *where(*path))
    schema: dict[str, Any] = {"type": types[kind]} if kind else {}
    if prop.get("description"):
        schema["description"] = prop["description"]
    if prop.get("enumValues"):
        schema["enum"] = list(prop["enumValues"])
    if kind == "array":
        items = prop.get("items")
        schema["items"] = (
            _wire_property(items, (*path, "items"), where, strict=strict)
            if isinstance(items, dict)
            else {"type": "string"}
        )
    if kind == "object":
        nested = prop.get("properties") or []
        props: dict[str, Any] = {}
        required: list[str] = []
        for name, sub, subpath in _properties(nested, "properties", lambda *p: where(*path, *p)):
            child = _wire_property(sub, (*path, *subpath), where, strict=strict)
            if strict and not sub.get("required"):
                _nullable(child)
            props[name] = child
            if strict or sub.get("required"):
                required.append(name)
        schema["properties"] = props
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
    if prop.get("nullable"):
        _nullable(schema)
    return schema


def _nullable(schema: dict[str, Any]) -> None:
    if isinstance(schema.get("type"), str):
        schema["type"] = [schema["type"], "null"]
    if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
        schema["enum"].append(None)


def _tool(tool: Any, index: int, where: Where) -> dict[str, Any]:
    path = ("tools", index)
    if not isinstance(tool, dict):
        raise Refusal(codes.IMPORT_UNSUPPORTED_FIELD, f"`tools[{index}]` is not a mapping", *where(*path))
    kind = tool.get("kind", "function")
    if kind != "function":
        raise Refusal(
            codes.IMPORT_UNSUPPORTED_FIELD,
            f"the tool `{tool.get('name')}` is of kind `{kind}`: Prompty resolves it at run time",
            *where(*path, "kind"),
            "promptc tools are function definitions: write the function's JSON Schema",
        )
    if tool.get("bindings"):
        raise Refusal(
            codes.IMPORT_UNSUPPORTED_FIELD,
            f"the tool `{tool.get('name')}` binds parameters to inputs: Prompty strips them from the definition it sends",
            *where(*path, "bindings"),
            "leave the bound parameter out of the tool and pass its value in your tool code",
        )
    if tool.get("strict"):
        raise Refusal(
            codes.IMPORT_UNSUPPORTED_FIELD,
            f"the tool `{tool.get('name')}` is `strict`: promptc's tool files have no strict flag",
            *where(*path, "strict"),
        )
    for key in tool:
        if key not in ("name", "kind", "description", "parameters"):
            raise Refusal(codes.IMPORT_UNSUPPORTED_FIELD, f"the tool field `{key}` is not imported", *where(*path, key))
    params = tool.get("parameters") or []
    if isinstance(params, dict) and "properties" in params:
        params = params["properties"]
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, prop, subpath in _properties(params, "parameters", lambda *p: where(*path, *p)):
        properties[name] = _wire_property(prop, (*path, *subpath), where)
        if prop.get("required"):
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    wire: dict[str, Any] = {"name": tool.get("name")}
    if tool.get("description"):
        wire["description"] = tool["description"]
    wire["input_schema"] = schema
    return wire
