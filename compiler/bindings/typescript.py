"""Generated TypeScript bindings: `promptc gen typescript`, a typed function per prompt over the
JavaScript runtime (`runtime-js/`, the npm package `promptc-runtime`).

```ts
export interface SupportChatInputs { customer_name: string; product: string; question: string }
export function supportChat(inputs: SupportChatInputs): Rendered { ... }
```

- a prompt's name becomes the function's in camelCase (`support/chat` → `supportChat`) and its
  inputs an interface in PascalCase (`SupportChatInputs`); an object input's type is an interface
  named from the prompt and the input's path (`SupportChatOrderItemsItem` for
  `order.items[]`). Two things that would share a name are E920, never a silent rename;
- types come from each artifact's `input_schema` through the same type model as the Python
  bindings (`promptc.bindings.type_model`): what TypeScript cannot say exactly is `unknown`, an
  object that allows other keys gets `[key: string]: unknown`, so no valid call is rejected;
- `python`-renderer prompts run template code only the Python runtime runs: they are left out,
  each named in a W921 warning;
- `BUILD_DIR` is the one place that names the build folder: a `file:` URL relative to the module
  when it is written with `-o`, the folder as given (relative to the process's working folder)
  when printed.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ..facts import codes
from ..facts.diagnostics import Diagnostic, make
from ..facts.language import MANIFEST
from ..facts.version import VERSION
from ..runtime.confine import GENERATED_MARK
from ..runtime.model import Artifact
from ..runtime.render import load
from .escape import ts_comment, ts_string
from .python import TypeNode, _doc, records, type_model, type_name

__all__ = ["typescript_module", "typescript_module_of", "ts_function_name", "ts_type"]

#: words a function may not be named (reserved words, and the names the module defines itself)
_RESERVED = frozenset(
    "break case catch class const continue debugger default delete do else enum export extends false finally for "
    "function if import in instanceof new null return super switch this throw true try typeof var void while with "
    "yield let static implements interface package private protected public await arguments eval".split()
)
_MODULE_NAMES = frozenset(("BUILD_DIR", "runtime", "opened", "Rendered", "Runtime", "promptcLoad"))
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


def ts_function_name(prompt: str) -> str:
    """`support/chat` → `supportChat`, `checkout/payment_validation` → `checkoutPaymentValidation`."""
    name = type_name(prompt)
    name = name[:1].lower() + name[1:] if not name.startswith("_") else name
    return f"{name}_" if name in _RESERVED else name


def _key(name: str) -> str:
    return name if _IDENTIFIER.match(name) else ts_string(name)


def _comment(text: str, indent: str) -> list[str]:
    return ts_comment(text, indent)


def _literal(value: object) -> str:
    if isinstance(value, str):
        return ts_string(value)
    return json.dumps(value)  # true, false, null, an integer


def ts_type(node: TypeNode) -> str:
    """A type model as a TypeScript type (records by their name)."""
    if node.kind == "scalar":
        return {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}[
            node.name
        ]
    if node.kind == "literal":
        return " | ".join(_literal(v) for v in node.values)
    if node.kind == "array" and node.items is not None:
        inner = ts_type(node.items)
        return f"readonly {f'({inner})' if ' ' in inner else inner}[]"
    if node.kind == "map" and node.items is not None:
        return f"{{ [key: string]: {ts_type(node.items)} }}"
    if node.kind == "union":
        return " | ".join(dict.fromkeys(ts_type(o) for o in node.options))
    if node.kind == "record":
        return node.name
    return "unknown"


def _interface(name: str, fields: list[tuple[str, str, bool, str | None]], open_: bool) -> str:
    lines = [f"export interface {name} {{"]
    for key, annotation, required, description in fields:
        if description:
            lines += _comment(description, "  ")
        lines.append(f"  {_key(key)}{'' if required else '?'}: {annotation};")
    if open_:
        lines.append("  [key: string]: unknown;")
    return "\n".join([*lines, "}"]) + "\n"


def typescript_module(
    build_dir: str | Path, module_path: str | Path | None = None, runtime_module: str = "promptc-runtime"
) -> tuple[str, list[Diagnostic]]:
    """The generated module for the build in `build_dir` (as `promptc gen typescript` writes it to
    `module_path`), and its diagnostics: E920 stops it (the text is ""), W921 names a left-out prompt."""
    runtime = load(build_dir)
    artifacts = {name: runtime.artifact(name) for name in runtime.names()}
    return typescript_module_of(artifacts, build_dir, module_path, runtime_module)


def typescript_module_of(
    artifacts: dict[str, Artifact],
    build_dir: str | Path,
    module_path: str | Path | None = None,
    runtime_module: str = "promptc-runtime",
) -> tuple[str, list[Diagnostic]]:
    """`typescript_module` for artifacts already in hand (a build that has not been written yet)."""
    manifest_path = os.path.join(str(build_dir), MANIFEST)
    diagnostics: list[Diagnostic] = []
    owners: dict[str, tuple[str, object]] = {}  # every name the module defines → (what, identity)
    definitions: list[str] = []
    functions: list[str] = []

    def claim(name: str, what: str, identity: object) -> bool:
        if name in _MODULE_NAMES:
            problem = f"{what} would be `{name}`, a name the module defines itself"
        elif name in owners and owners[name][1] != identity:
            problem = f"{owners[name][0]} and {what} would both be `{name}`"
        else:
            fresh = name not in owners
            owners.setdefault(name, (what, identity))
            return fresh
        diagnostics.append(
            make(codes.BINDING_COLLISION, problem, None, "rename a prompt, an input or a key", path=manifest_path)
        )
        return False

    for name in sorted(artifacts):
        artifact = artifacts[name]
        if artifact.renderer != "placeholder":
            diagnostics.append(
                make(
                    codes.PYTHON_ONLY_PROMPT,
                    f"prompt `{name}` ({artifact.source}) is left out: its python renderer runs template code, "
                    "which only the Python runtime does",
                    None,
                    "render it from Python (`promptc gen python`), or write it with `${…}` placeholders only",
                    path=manifest_path,
                )
            )
            continue
        function = ts_function_name(name)
        if not claim(function, f"prompt `{name}`", ("prompt", name)):
            continue
        schema = artifact.input_schema
        properties = schema.get("properties", {})
        required = set(schema.get("required", artifact.inputs))
        fields: list[tuple[str, str, bool, str | None]] = []
        for input_name in artifact.inputs:
            node = type_model(properties.get(input_name, {}), (name, input_name))
            for record in records(node):
                what = f"the type of prompt `{name}`, input `{input_name}`"
                if claim(record.name, what, record):
                    record_fields = [(f.key, ts_type(f.type), f.required, f.description) for f in record.fields]
                    definitions.append(_interface(record.name, record_fields, record.open))
            fields.append((input_name, ts_type(node), input_name in required, None))
        fields += [(h, "(...args: never[]) => unknown", True, None) for h in artifact.helpers]
        fields.sort(key=lambda f: not f[2])  # required first, as the Python bindings have them
        doc = "\n\n".join(_doc(artifact))
        signature = ""
        if fields:
            interface = type_name(name, "inputs")
            if claim(interface, f"the inputs of prompt `{name}`", ("inputs", name)):
                definitions.append(_interface(interface, fields, False))
            default = "" if any(required for _, _, required, _ in fields) else " = {}"
            signature = f"inputs: {interface}{default}"
        call = f"runtime().render({ts_string(name)}, {'inputs' if fields else '{}'})"
        functions.append(
            "\n".join(_comment(doc, ""))
            + f"\nexport function {function}({signature}): Rendered {{\n  return {call};\n}}\n"
        )
        if artifact.output_contract is not None:
            parser = "parse" + function[:1].upper() + function[1:]
            if not claim(parser, f"the parse helper of prompt `{name}`", ("parse", name)):
                continue
            node = type_model(artifact.output_contract, (name, "output"))
            for record in records(node):
                what = f"the output type of prompt `{name}`"
                if claim(record.name, what, record):
                    record_fields = [(f.key, ts_type(f.type), f.required, f.description) for f in record.fields]
                    definitions.append(_interface(record.name, record_fields, record.open))
            returned = ts_type(node)
            about = (
                f"The response to prompt `{name}`, checked against its `/// output:` schema (`OutputError` names "
                "every problem).\n\n`response` is the JSON text or the decoded value (`message.content`, "
                "`response.output_text`, a text block's `text`)."
            )
            value = f"runtime().parse({ts_string(name)}, response)"
            functions.append(
                "\n".join(_comment(about, ""))
                + f"\nexport function {parser}(response: unknown): {returned} {{\n"
                + f"  return {value}{'' if returned == 'unknown' else f' as {returned}'};\n}}\n"
            )
    if any(d.code == codes.BINDING_COLLISION for d in diagnostics):
        return "", diagnostics
    if module_path is None:
        label = Path(build_dir).as_posix()
        where = ts_string(label)
    else:  # the same bytes wherever promptc runs from: relative to the module
        label = Path(
            os.path.relpath(os.path.abspath(build_dir), os.path.dirname(os.path.abspath(module_path)))
        ).as_posix()
        where = f"new URL({ts_string(label.rstrip('/') + '/')}, import.meta.url)"
    # the mark in the first line: the file is promptc's to replace (`promptc.runtime.confine`)
    header = f"""// Typed functions for the prompts of {ts_string(label)}, {GENERATED_MARK} {VERSION}.
// Do not edit: run `promptc gen typescript` again after `promptc build`.

import {{ load as promptcLoad, type Rendered, type Runtime }} from {ts_string(runtime_module)};

export type {{ Rendered }};

/** The build folder these functions render from. */
export const BUILD_DIR: string | URL = {where};

let opened: Runtime | undefined;

/** The build folder's runtime, opened on first use. */
export function runtime(): Runtime {{
  opened ??= promptcLoad(BUILD_DIR);
  return opened;
}}
"""
    body = "".join(f"\n{text}" for text in definitions) + "".join(f"\n{text}" for text in functions)
    return header + body, diagnostics
