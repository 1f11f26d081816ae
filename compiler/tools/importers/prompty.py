"""Prompty (`*.prompty`: YAML front matter, a Jinja2 body with `system:` / `user:` role lines) →
`.prompt` sources. The body goes through `jinja`; this module maps the header (the front matter Prompty's specification defines).

A Prompty 1 header (`model.configuration`, `model.parameters`, `inputs: {q: {type: string}}`, a
root `sample` …), which the pinned engine (prompty 2.1) no longer loads, is first upgraded the way
Prompty's own migration did (`upgrade`), for the import and for `--check`'s engine alike.
"""

from __future__ import annotations

import copy
import posixpath
import re
from collections.abc import Callable, Iterator
from typing import Any

from ...facts import codes
from ...facts.diagnostics import SourceText
from ...facts.language import SOURCE_SUFFIX
from ...facts.profiles import provider_of_model
from .common import (
    DROPPED_HINT,
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
_REFERENCE = re.compile(r"\$\{(env|file):", re.I)
#: a whole value that is a `${file:…}` reference (Prompty resolves it relative to the prompt)
_FILE_REFERENCE = re.compile(r"\$\{file:(.+)\}", re.I)
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


# ---------------------------------------------------------------------------------------------
# Prompty 1 headers


#: the Prompty 1 spellings that make a header one (each is a key Prompty 2 does not read)
_V1_MODEL_KEYS = ("configuration", "parameters", "api")
_V1_ROOT_KEYS = ("inputSchema", "outputSchema", "sample")
#: Prompty 1's `model.parameters` names → Prompty 2's `model.options` names
_V1_OPTIONS = {
    "max_tokens": "maxOutputTokens",
    "top_p": "topP",
    "frequency_penalty": "frequencyPenalty",
    "presence_penalty": "presencePenalty",
    "stop": "stopSequences",
}


def is_prompty1(data: dict[str, Any]) -> bool:
    """Whether a header uses a Prompty 1 spelling (the ones `upgrade` rewrites)."""
    model = data.get("model")
    inputs = data.get("inputs")
    template = data.get("template")
    return (
        any(key in data for key in _V1_ROOT_KEYS)
        or (isinstance(model, dict) and any(key in model for key in _V1_MODEL_KEYS))
        or (isinstance(inputs, dict) and any(not isinstance(v, dict) or "kind" not in v for v in inputs.values()))
        or isinstance(template, str)
        or (isinstance(template, dict) and "type" in template)
    )


def upgrade(data: dict[str, Any]) -> tuple[dict[str, Any], dict[JsonPath, JsonPath]]:
    """A Prompty 1 header as Prompty 2: the rules of Prompty's own migration
    (`prompty/core/migration.py` of microsoft/prompty, which the runtime applied to every file it
    loaded until commit 645fffa3 removed it; prompty 2.1's README still says Prompty 1 files are
    migrated, its loader no longer does). Returns the upgraded header (a copy; a Prompty 2 header
    as it is) and, for each path it moved, the path it came from (for locating diagnostics).

    Two refinements: an `inputs` entry that already has a `kind` keeps it (the migration set every
    dict entry without a `type` to `string`, which would change a Prompty 2 mapping of inputs); and
    `model: gpt-4` (a name) is read as `model: {id: gpt-4}` and the rest of the header upgraded too
    (the migration returned there, leaving a Prompty 1 `inputs` the engine cannot load)."""
    if not is_prompty1(data):
        return data, {}
    data = copy.deepcopy(data)
    moved: dict[JsonPath, JsonPath] = {}
    model = data.get("model", {})
    if isinstance(model, str):  # `model: gpt-4` → `model: {id: gpt-4}`
        model = {"id": model}
        moved[("model", "id")] = ("model",)
    if not isinstance(model, dict):
        model = {}
    if "api" in model and "apiType" not in model:
        model["apiType"] = model.pop("api")
        moved[("model", "apiType")] = ("model", "api")
    if "configuration" in model and "connection" not in model:
        config = model.pop("configuration")
        moved[("model", "connection")] = ("model", "configuration")
        if isinstance(config, dict):
            kind = config.pop("type", None)
            renames: dict[str, str] = {}
            if kind in ("azure_openai", "openai"):
                model["provider"] = "foundry" if kind == "azure_openai" else "openai"
                moved[("model", "provider")] = ("model", "configuration", "type")
                config.setdefault("kind", "key")
                renames = {"api_key": "apiKey"}
                if kind == "azure_openai":
                    renames["azure_endpoint"] = "endpoint"
                deployment = "azure_deployment" if kind == "azure_openai" else "name"
                if deployment in config:
                    model["id"] = config.pop(deployment)
                    moved[("model", "id")] = ("model", "configuration", deployment)
            elif kind:
                config["kind"] = kind
            for old, new in renames.items():
                if old in config:
                    config[new] = config.pop(old)
                    moved[("model", "connection", new)] = ("model", "configuration", old)
        model["connection"] = config
    if "parameters" in model and "options" not in model:
        params = model.pop("parameters")
        moved[("model", "options")] = ("model", "parameters")
        if isinstance(params, dict):
            if "tools" in params:
                data.setdefault("tools", params.pop("tools"))
                moved[("tools",)] = ("model", "parameters", "tools")
            for old, new in _V1_OPTIONS.items():
                if old in params and new not in params:
                    params[new] = params.pop(old)
                    moved[("model", "options", new)] = ("model", "parameters", old)
        model["options"] = params
    raw_inputs = data.get("inputs")
    if isinstance(raw_inputs, dict):  # `inputs: {name: {type: …, sample: …}}` → a list of properties
        properties: list[dict[str, Any]] = []
        for index, (name, spec) in enumerate(raw_inputs.items()):
            moved[("inputs", index)] = ("inputs", name)
            if isinstance(spec, dict):
                prop: dict[str, Any] = {"name": name}
                if "type" in spec:
                    prop["kind"] = spec.pop("type")
                    moved[("inputs", index, "kind")] = ("inputs", name, "type")
                else:
                    prop["kind"] = spec.pop("kind", "string")
                if "sample" in spec:
                    prop["default"] = spec.pop("sample")
                    moved[("inputs", index, "default")] = ("inputs", name, "sample")
                for key, value in spec.items():
                    prop.setdefault(key, value)
                properties.append(prop)
            else:
                properties.append({"name": name, "kind": "string", "default": spec})
        data["inputs"] = properties
    for old, new in (("inputSchema", "inputs"), ("outputSchema", "outputs")):
        if old in data:
            schema = data.pop(old)
            if new not in data:
                has_properties = isinstance(schema, dict) and "properties" in schema
                data[new] = schema["properties"] if has_properties else schema
                moved[(new,)] = (old, "properties") if has_properties else (old,)
    metadata = data.get("metadata", {})
    if not isinstance(metadata, dict):
        metadata = {}
    for key in ("authors", "tags", "version"):
        if key in data and key not in metadata:
            metadata[key] = data.pop(key)
            moved[("metadata", key)] = (key,)
            data["metadata"] = metadata
    template = data.get("template")
    if isinstance(template, str):
        data["template"] = {"format": {"kind": template}, "parser": {"kind": "prompty"}}
    elif isinstance(template, dict):
        if "type" in template and "format" not in template:
            template["format"] = {"kind": template.pop("type")}
        for key in ("format", "parser"):
            if isinstance(template.get(key), str):
                template[key] = {"kind": template[key]}
    data.pop("sample", None)  # Prompty 1's sample block: read by the import as --check's samples
    if model or "model" in data:
        data["model"] = model
    return data, moved


def _located(where: Where, moved: dict[JsonPath, JsonPath]) -> Where:
    """`where` for paths of the upgraded header: a moved path is located where it came from."""

    def at(*path: str | int) -> tuple[int, int]:
        for end in range(len(path), 0, -1):
            old = moved.get(tuple(path[:end]))
            if old is not None:
                return where(*old, *path[end:])
        return where(*path)

    return at


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
    raw, where_raw = front_matter(header_text, header_line)
    data, moved = upgrade(raw)
    where = _located(where_raw, moved)

    def spelled(*path: str | int) -> str:
        """A header path as the file spells it (Prompty 1's name for an upgraded key)."""
        for end in range(len(path), 0, -1):
            old = moved.get(tuple(path[:end]))
            if old is not None:
                path = (*old, *path[end:])
                break
        return ".".join(str(p) for p in path)

    folder = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""
    stem = out.target.rsplit("/", 1)[-1].removesuffix(SOURCE_SUFFIX)
    lines: list[str] = []

    def drop(message: str, *path: str | int, hint: str = DROPPED_HINT) -> None:
        out.diagnostics.append(warning(codes.IMPORT_FIELD_DROPPED, message, src, *where(*path), hint))

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
            skipped = ("connection", "configuration", *(("id",) if ("model", "id") in moved else ()))
            no_reference({k: v for k, v in value.items() if k not in skipped}, key)
        elif key != "sample":  # the sample never reaches the model: it is --check's (below)
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
                if ("model", "id") in moved and isinstance(value, str) and _REFERENCE.search(value):
                    continue  # Prompty 1's deployment from the environment: how it connects (W972 below)
                no_reference(value, "model", "id")
                if value:
                    params["model"] = str(value)
                    out.param_origin["model"] = where("model", key)
            elif key in ("options", "parameters"):  # `parameters`: Prompty 1's name for the options
                if not isinstance(value, dict):
                    raise Refusal(
                        codes.IMPORT_UNSUPPORTED_FIELD,
                        f"`{spelled('model', key)}` is not a mapping",
                        *where("model", key),
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
                        f"`{spelled('model', key)}: {value}` is not a chat request; promptc builds chat requests",
                        *where("model", key),
                    )
                if value == "responses":
                    drop(
                        "`model.apiType: responses` is not imported: render with `--shape openai-responses`",
                        "model",
                        key,
                    )
            elif key == "provider":
                if ("model", "provider") in moved:
                    continue  # Prompty 1's `configuration.type`: dropped with the configuration
                if value != provider_of_model(str(model.get("id") or "")):
                    drop(
                        f"`model.provider: {value}` is not imported: promptc picks the provider profile from the model",
                        "model",
                        key,
                    )
            elif key in ("connection", "configuration"):
                drop(
                    f"`{spelled('model', key)}` is not imported: it says how Prompty connects, not what it sends",
                    "model",
                    key,
                    hint="promptc does not connect: give the endpoint and the key to your client in code",
                )
            else:
                drop(f"`{spelled('model', key)}` is not imported", "model", key)
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
    paths: dict[str, JsonPath] = {}
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
                    out.sample_origin[name] = where(*path, key)
        declared[name] = _schema(prop, name, path, where)
        paths[name] = path
        out.input_origin[name] = where(*path)
        order.append(name)
    sample = raw.get("sample")  # Prompty 1's sample block (which `upgrade` takes out)
    if isinstance(sample, dict):
        for name, value in sample.items():
            if str(name) not in samples:
                samples[str(name)] = value
                out.sample_origin[str(name)] = where_raw("sample", name)
    elif isinstance(sample, str) and (reference := _FILE_REFERENCE.fullmatch(sample.strip())):
        # `sample: ${file:chat.json}`: the file beside the prompt, which `folder.read_samples` reads
        # for --check, inside the imported folder only (as every foreign file)
        out.sample_file = (posixpath.normpath(posixpath.join(folder, reference.group(1).strip())), *where_raw("sample"))
        out.sample_origin["*"] = where_raw("sample")  # every value the file holds
    elif sample is not None:
        drop("`sample` is not imported: it is not a mapping of input values", "sample")

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
    parsed = parse_jinja(body, JinjaOptions(roles="prompty", folder=folder, resolve_include=resolve_include), body_line)
    nodes = parsed.nodes
    first = next((n for n in nodes if not (isinstance(n, Text) and not n.text.strip())), None)
    if not isinstance(first, Role):  # Prompty: text before any role line is a system message
        nodes.insert(0, Role("system", body_line, 1))
    inputs = [*order, *(n for n in parsed.inputs if n not in declared)]
    # a declared input keeps the header's type; one the header does not declare is typed by its use,
    # as a plain Jinja template's inputs are. What --check samples is shaped by the use in both.
    used = {name: shape.schema() for name, shape in parsed.shapes.items()}
    for name, path in paths.items():
        if declared[name] == {"type": "object"} and (used.get(name) or {}).get("type") == "array":
            # Prompty does not check kinds, and Prompty 1 files declare lists `object`: the
            # template's loop says what the value is; promptc's contract must take it
            declared[name] = used[name]
            drop(
                f"the kind `object` of the input `{name}` is not imported: the template loops over it, so it is "
                "a list (Prompty does not check kinds)",
                *path,
                "kind",
                hint="declare it `kind: array` in the source, with the `items` the template reads",
            )
    decls = [input_decl(n, declared[n] if n in declared else used.get(n), stem, out.extra, folder) for n in inputs]
    out.shapes = {name: used.get(name) or declared.get(name) or {} for name in inputs}
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
