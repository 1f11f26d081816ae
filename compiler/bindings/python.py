"""Generated bindings: a typed function per prompt, so callers reach prompts through names a type
checker sees instead of strings and `**kwargs` (as protoc generates code for messages).

`python_module(build_dir, module_path)` reads a build folder (its manifest and artifacts) and
returns the text of one deterministic Python module:

```python
def support_chat(*, customer_name: str, product: str, question: str) -> Rendered: ...
```

- a prompt's name becomes the function's: `support/chat` → `support_chat` (characters that cannot
  be in a name become `_`; a Python keyword gets a trailing `_`). Two prompts that map to one name
  are E920, never a silent rename;
- every input is a keyword-only parameter typed by its declaration (`str`, `list[str]`, `int |
  None = None` …), `Any` when it is untyped; a helper is `Callable[..., Any]`;
- the docstring names the prompt, its model, its inputs and its cache-stable prefix;
- `BUILD_DIR`, the one place that says which build folder the functions render from, is the
  build folder relative to the generated file (or to the current folder when it is printed).
"""

from __future__ import annotations

import keyword
import os
import re
import unicodedata
from pathlib import Path
from typing import Any

from ..facts import codes
from ..facts.diagnostics import Diagnostic, make
from ..facts.language import MANIFEST
from ..facts.records import dataclass
from ..facts.version import VERSION
from ..runtime.confine import GENERATED_MARK
from ..runtime.model import Artifact
from ..runtime.render import load
from .escape import python_comment, python_docstring, python_literal, python_string

__all__ = ["python_module", "python_module_of", "function_name", "python_type"]

#: every name the generated Python module binds or reads itself: a function of that name would
#: shadow it (E920), a type is renamed (a trailing `_`)
PYTHON_MODULE_NAMES = frozenset(
    "annotations Callable Mapping cache cast Path Any Literal NotRequired TypedDict Rendered Runtime load "
    "BUILD_DIR runtime _promptc_runtime str int float bool list dict bytes object".split()
)
#: the names TypeScript modules define or read (`bindings_ts`), so that one type model fits both
TS_MODULE_TYPE_NAMES = frozenset(
    "Rendered Runtime BUILD_DIR URL JSON Error Object Array String Number Boolean Symbol Promise Record "
    "Readonly Partial ReadonlyArray".split()
)


def function_name(prompt: str) -> str:
    name = re.sub(r"[^0-9A-Za-z_]", "_", prompt)
    if name[:1].isdigit():
        name = f"_{name}"
    return f"{name}_" if keyword.iskeyword(name) else name


# ---------------------------------------------------------------------------------------------
# JSON Schema → a small type model both generators write out (Python here, TypeScript in
# bindings_ts). Every type it gives admits at least the values the schema admits: what it cannot
# express becomes "any" (`Any` / `unknown`), never a narrower type that would reject a valid call.
# Keywords that only narrow (`minLength`, `pattern`, `not` …) are left out for the same reason.

#: deeper schemas become "any" past this many levels (keeps the generators' recursion bounded)
MAX_TYPE_DEPTH = 32


@dataclass(frozen=True, slots=True)
class Field:
    key: str
    type: TypeNode
    required: bool
    description: str | None


@dataclass(frozen=True, slots=True)
class TypeNode:
    """`kind`: any, scalar (`name`: a JSON type), literal (`values`), array / map (`items`),
    union (`options`), record (`name`, `fields`, `open`: keys other than the fields are allowed)."""

    kind: str
    name: str = ""
    values: tuple[Any, ...] = ()
    items: TypeNode | None = None
    options: tuple[TypeNode, ...] = ()
    fields: tuple[Field, ...] = ()
    open: bool = True


ANY = TypeNode("any")
_SCALAR_TYPES = ("string", "integer", "number", "boolean", "null")


def type_name(*parts: str) -> str:
    """`support/chat` + `order` + `items` → `SupportChatOrderItems`: each run of letters and digits
    capitalised (a leading digit gets a `_`)."""
    words = [w for part in parts for w in re.split(r"[^0-9A-Za-z]+", part) if w]
    name = "".join(w[:1].upper() + w[1:] for w in words) or "_"
    return f"_{name}" if name[:1].isdigit() else name


def type_model(schema: Any, path: tuple[str, ...], depth: int = 0) -> TypeNode:
    """The type of the values `schema` admits; records are named from `path` (prompt, input, keys)."""
    if not isinstance(schema, dict) or depth > MAX_TYPE_DEPTH or "$ref" in schema:
        return ANY
    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else schema["enum"]
        if not isinstance(values, list) or not values:
            return ANY
        literals = [v for v in values if v is None or isinstance(v, (str, bool, int)) and not isinstance(v, float)]
        if len(literals) + sum(isinstance(v, float) for v in values) != len(values):
            return ANY  # an object or array among the values
        options = [TypeNode("literal", values=tuple(literals))] if literals else []
        if any(isinstance(v, float) for v in values):
            options.append(TypeNode("scalar", "number"))
        return options[0] if len(options) == 1 else TypeNode("union", options=tuple(options))
    for word in ("anyOf", "oneOf"):  # oneOf: its options' union admits at least what it admits
        if isinstance(schema.get(word), list) and schema[word]:
            choices = schema[word]
            objects = sum(
                1 for c in choices if isinstance(c, dict) and (c.get("type") == "object" or "properties" in c)
            )
            return _union(
                type_model(c, path + ((str(i + 1),) if objects > 1 else ()), depth + 1) for i, c in enumerate(choices)
            )
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union(type_model({**schema, "type": k}, path, depth + 1) for k in kind)
    if kind in _SCALAR_TYPES:
        return TypeNode("scalar", kind)
    if kind == "array":
        items = schema.get("items")
        if "prefixItems" in schema or not isinstance(items, dict):
            return TypeNode("array", items=ANY)
        return TypeNode("array", items=type_model(items, (*path, "item"), depth + 1))
    if kind == "object":
        return _record(schema, path, depth)
    return ANY  # without a `type`, `properties` constrain objects only: any other value passes too


def _union(nodes: Any) -> TypeNode:
    options: list[TypeNode] = []
    for node in nodes:
        for option in node.options if node.kind == "union" else (node,):
            if option.kind == "any":
                return ANY
            if option not in options:
                options.append(option)
    return options[0] if len(options) == 1 else TypeNode("union", options=tuple(options))


def _record(schema: dict[str, Any], path: tuple[str, ...], depth: int) -> TypeNode:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    extra = schema.get("additionalProperties", True)
    closed = extra is False and not any(k in schema for k in ("patternProperties", "unevaluatedProperties"))
    if not properties:
        value = type_model(extra, (*path, "value"), depth + 1) if isinstance(extra, dict) and not closed else ANY
        return TypeNode("map", items=value)
    required = schema.get("required")
    required = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    fields = [
        Field(
            key,
            type_model(sub, (*path, key), depth + 1),
            key in required,
            sub.get("description") if isinstance(sub, dict) and isinstance(sub.get("description"), str) else None,
        )
        for key, sub in properties.items()
    ]
    fields += [Field(key, ANY, True, None) for key in sorted(required - set(properties))]
    return TypeNode("record", name=record_name(*path), fields=tuple(fields), open=not closed)


def record_name(*parts: str) -> str:
    """`type_name`, with a trailing `_` when the name is one the generated modules use themselves
    (a prompt `typed` with an object input `dict` is `TypedDict_`, never `class TypedDict(TypedDict)`)."""
    name = type_name(*parts)
    return f"{name}_" if name in PYTHON_MODULE_NAMES or name in TS_MODULE_TYPE_NAMES else name


def records(node: TypeNode) -> list[TypeNode]:
    """The records `node` holds, each after those it holds (definitions in an order that works)."""
    out: list[TypeNode] = []
    stack: list[tuple[TypeNode, bool]] = [(node, False)]
    while stack:
        item, done = stack.pop()
        if done:
            out.append(item)
            continue
        if item.kind == "record":
            stack.append((item, True))
        children = [f.type for f in item.fields] + list(item.options) + ([item.items] if item.items else [])
        stack.extend((child, False) for child in reversed(children))
    return out


class _PythonTypes:
    """Writes type models as Python annotations, collecting the TypedDicts they name."""

    def __init__(self) -> None:
        self.definitions: dict[str, str] = {}
        self.used: set[str] = set()
        #: the records written, by name, and where each came from (for E920)
        self.owners: dict[str, tuple[TypeNode, str]] = {}
        self.collisions: list[str] = []
        #: where the annotation being written comes from: prompt `x`, input `y`
        self.context = ""

    def annotation(self, node: TypeNode) -> str:
        if node.kind == "scalar":
            return {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}[node.name]
        if node.kind == "literal":
            self.used.add("Literal")
            return f"Literal[{', '.join(python_literal(v) for v in node.values)}]"
        if node.kind == "array" and node.items is not None:
            return f"list[{self.annotation(node.items)}]"
        if node.kind == "map" and node.items is not None:
            return f"dict[str, {self.annotation(node.items)}]"
        if node.kind == "union":
            return " | ".join(dict.fromkeys(self.annotation(o) for o in node.options))
        if node.kind == "record" and not node.open:
            self._typed_dict(node)
            return node.name
        return "dict[str, Any]" if node.kind == "record" else "Any"

    def _typed_dict(self, node: TypeNode) -> None:
        if node.name in self.owners:
            first, where = self.owners[node.name]
            if first != node:
                self.collisions.append(f"{where} and {self.context} would both be the type `{node.name}`")
            return
        self.owners[node.name] = (node, self.context)
        self.used.update(("TypedDict", *(("NotRequired",) if any(not f.required for f in node.fields) else ())))
        entries = []
        for f in node.fields:
            annotation = self.annotation(f.type)
            entries.append((f, annotation if f.required else f"NotRequired[{annotation}]"))
        if all(_attribute_name(f.key) for f, _ in entries):
            body = []
            for f, annotation in entries:
                if f.description:
                    body += python_comment(f.description, "    ", "#:")
                body.append(f"    {f.key}: {annotation}")
            text = f"class {node.name}(TypedDict):\n" + "\n".join(body) + "\n"
        else:  # keys that cannot be names: the functional form
            items = ", ".join(f"{python_string(f.key)}: {annotation}" for f, annotation in entries)
            text = f"{node.name} = TypedDict({python_string(node.name)}, {{{items}}})\n"
        self.definitions[node.name] = text  # after the records it holds, which it names


def _attribute_name(key: str) -> bool:
    """Whether `key` can be written as a TypedDict class attribute and stays itself: a name, no
    keyword, and unchanged by the NFKC normalisation Python applies to names (`ﬁ` would be `fi`)."""
    return key.isidentifier() and not keyword.iskeyword(key) and unicodedata.normalize("NFKC", key) == key


def python_type(schema: dict[str, Any], path: tuple[str, ...] = ("input",), types: _PythonTypes | None = None) -> str:
    """A JSON Schema as a Python annotation (`Any` for what it cannot express); a closed object
    becomes a TypedDict named from `path`, collected in `types`."""
    return (types or _PythonTypes()).annotation(type_model(schema, path))


def _signature(artifact: Artifact, types: _PythonTypes) -> tuple[list[str], list[str]]:
    """(parameters, problems): keyword-only parameters, required ones first, each sorted by name."""
    schema = artifact.input_schema
    properties = schema.get("properties", {})
    required = set(schema.get("required", artifact.inputs))
    problems = [
        f"input `{n}` is a Python keyword" if keyword.iskeyword(n) else f"input `{n}` is a name the module uses itself"
        for n in (*artifact.inputs, *artifact.helpers)
        if keyword.iskeyword(n) or n == "_promptc_runtime"
    ]
    annotations = {}
    for n in artifact.inputs:
        types.context = f"prompt `{artifact.name}`, input `{n}`"
        annotations[n] = python_type(properties.get(n, {}), (artifact.name, n), types)
    first = [f"{n}: {annotations[n]}" for n in artifact.inputs if n in required]
    first += [f"{n}: Callable[..., Any]" for n in artifact.helpers]
    rest = [f"{n}: {annotations[n]} = None" for n in artifact.inputs if n not in required]
    return first + rest, problems


def _doc(artifact: Artifact) -> list[str]:
    """The docstring's paragraphs: the prompt's leading `///` comment first, then what it is."""
    lines = [artifact.doc] if artifact.doc else []
    lines.append(f"Render prompt `{artifact.name}` ({artifact.source}).")
    if artifact.model:
        lines.append(f"Model: {artifact.model}.")
    if artifact.inputs or artifact.helpers:
        lines.append("Inputs: " + ", ".join([*artifact.inputs, *artifact.helpers]) + ".")
    cache = artifact.cache
    if cache.prefix_sha256:
        cached = "" if cache.cacheable_tokens is None else f", {cache.cacheable_tokens} cacheable"
        lines.append(f"Cache-stable prefix: {cache.prefix_tokens} tokens{cached} ({cache.prefix_sha256[:12]}).")
    else:
        lines.append("No cache-stable prefix.")
    return lines


def _docstring(paragraphs: list[str], indent: str = "    ") -> str:
    """A docstring of `paragraphs` (text from the build, escaped: nothing in it can end the
    docstring or be read as code), each line indented."""
    lines = [python_docstring(line) for line in "\n\n".join(paragraphs).split("\n")]
    if len(lines) == 1:
        return f'{indent}"""{lines[0]}"""'
    body = [f"{indent}{line}" if line else "" for line in lines[1:]]
    return f'{indent}"""{lines[0]}\n' + "\n".join(body) + f'\n{indent}"""'


def python_module(build_dir: str | Path, module_path: str | Path | None = None) -> tuple[str, list[Diagnostic]]:
    """The generated module for the build in `build_dir` (as `promptc gen python` writes it to
    `module_path`), and the diagnostics that stop it (E920); the text is "" when there are any."""
    runtime = load(build_dir)
    return python_module_of({name: runtime.artifact(name) for name in runtime.names()}, build_dir, module_path)


def python_module_of(
    artifacts: dict[str, Artifact], build_dir: str | Path, module_path: str | Path | None = None
) -> tuple[str, list[Diagnostic]]:
    """`python_module` for artifacts already in hand (a build that has not been written yet)."""
    manifest_path = os.path.join(str(build_dir), MANIFEST)
    seen: dict[str, str] = {}
    diagnostics: list[Diagnostic] = []
    functions: list[str] = []
    types = _PythonTypes()
    for name in sorted(artifacts):
        function = function_name(name)
        if function in PYTHON_MODULE_NAMES or (function.startswith("__") and function.endswith("__")):
            diagnostics.append(
                make(
                    codes.BINDING_COLLISION,
                    f"prompt `{name}` would be the function `{function}`, a name the module uses itself",
                    None,
                    "rename the prompt file",
                    path=manifest_path,
                )
            )
            continue
        if function in seen:
            diagnostics.append(
                make(
                    codes.BINDING_COLLISION,
                    f"prompts `{seen[function]}` and `{name}` would both be the function `{function}`",
                    None,
                    "rename one of the two prompt files",
                    path=manifest_path,
                )
            )
            continue
        seen[function] = name
        artifact = artifacts[name]
        parameters, problems = _signature(artifact, types)
        for problem in problems:
            diagnostics.append(
                make(
                    codes.BINDING_COLLISION, f"prompt `{name}`: {problem}", None, "rename the input", path=manifest_path
                )
            )
        mapping = ", ".join(f"{python_string(n)}: {n}" for n in (*artifact.inputs, *artifact.helpers))
        signature = f"*, {', '.join(parameters)}" if parameters else ""
        functions.append(
            f"def {function}({signature}) -> Rendered:\n{_docstring(_doc(artifact))}\n"
            f"    return _promptc_runtime().render({python_string(name)}, {{{mapping}}})\n"
        )
        if artifact.output_contract is not None:
            parser = f"parse_{function}"
            if parser in seen or parser in PYTHON_MODULE_NAMES:
                diagnostics.append(
                    make(
                        codes.BINDING_COLLISION,
                        f"the parse helper of prompt `{name}` would be `{parser}`, "
                        + (f"the function of prompt `{seen[parser]}`" if parser in seen else "a name the module uses"),
                        None,
                        "rename one of the prompt files",
                        path=manifest_path,
                    )
                )
                continue
            seen[parser] = name
            types.context = f"the output of prompt `{name}`"
            returned = python_type(artifact.output_contract, (name, "output"), types)
            if returned != "Any":
                types.used.add("cast")
            doc = [
                f"The response to prompt `{name}`, checked against its `/// output:` schema "
                "(`OutputError` names every problem).",
                "`response` is the JSON text, the decoded value, or the provider SDK's response object.",
            ]
            value = f"_promptc_runtime().parse({python_string(name)}, response)"
            functions.append(
                f"def {parser}(response: object) -> {returned}:\n{_docstring(doc)}\n"
                f"    return {f'cast({returned}, {value})' if returned != 'Any' else value}\n"
            )
    clashes = [f"{types.owners[t][1]} and prompt `{seen[t]}` would both be `{t}`" for t in types.owners if t in seen]
    for problem in types.collisions + clashes:
        diagnostics.append(
            make(codes.BINDING_COLLISION, problem, None, "rename a prompt, an input or a key", path=manifest_path)
        )
    if diagnostics:
        return "", diagnostics
    typing_names = ", ".join(sorted({"Any", *types.used}))
    definitions = "".join(f"\n\n{text}" for text in types.definitions.values())
    if module_path is None:
        label = Path(build_dir).as_posix()
        where = f"Path({python_string(label)})"
    else:  # the same bytes wherever promptc runs from: everything relative to the module
        label = Path(
            os.path.relpath(os.path.abspath(build_dir), os.path.dirname(os.path.abspath(module_path)))
        ).as_posix()
        where = f"Path(__file__).resolve().parent / {python_string(label)}"
    # the mark in the first line: the file is promptc's to replace (`promptc.runtime.confine`)
    header = f'''"""Typed functions for the prompts of `{python_docstring(label)}`, {GENERATED_MARK} {VERSION}.

Do not edit: run `promptc gen python` again after `promptc build`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import {typing_names}

from promptc.runtime import Rendered, Runtime, load

#: The build folder these functions render from.
BUILD_DIR = {where}

__all__ = ["BUILD_DIR", "runtime", {", ".join(python_string(f) for f in seen)}]


@cache
def runtime() -> Runtime:
    """The build folder's runtime, opened on first use."""
    return load(BUILD_DIR)


_promptc_runtime = runtime  # what the functions call: an input may be named `runtime`
'''
    return header + definitions + "\n\n" + "\n\n".join(functions), []
