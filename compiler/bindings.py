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
from pathlib import Path
from typing import Any

from . import codes
from .diagnostics import Diagnostic, make
from .model import Artifact

__all__ = ["python_module", "python_module_of", "function_name", "python_type"]


def function_name(prompt: str) -> str:
    name = re.sub(r"[^0-9A-Za-z_]", "_", prompt)
    if name[:1].isdigit():
        name = f"_{name}"
    return f"{name}_" if keyword.iskeyword(name) else name


def python_type(schema: dict[str, Any]) -> str:
    """A JSON Schema written by `promptc.inputtypes` as a Python annotation (`Any` for anything else)."""
    if "anyOf" in schema:
        return " | ".join(python_type(option) for option in schema["anyOf"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(python_type({**schema, "type": k}) for k in kind) or "Any"
    if "enum" in schema or "const" in schema or not isinstance(kind, (str, type(None))):
        return "Any"
    scalars = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
    if kind in scalars:
        return scalars[kind]
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"list[{python_type(schema['items'])}]"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"dict[str, {python_type(schema['additionalProperties'])}]"
    return "Any"


def _signature(artifact: Artifact) -> tuple[list[str], list[str]]:
    """(parameters, problems): keyword-only parameters, required ones first, each sorted by name."""
    schema = artifact.input_schema
    properties = schema.get("properties", {})
    required = set(schema.get("required", artifact.inputs))
    problems = [
        f"input `{n}` is a Python keyword" if keyword.iskeyword(n) else f"input `{n}` is a name the module uses itself"
        for n in (*artifact.inputs, *artifact.helpers)
        if keyword.iskeyword(n) or n == "_promptc_runtime"
    ]
    first = [f"{n}: {python_type(properties.get(n, {}))}" for n in artifact.inputs if n in required]
    first += [f"{n}: Callable[..., Any]" for n in artifact.helpers]
    rest = [f"{n}: {python_type(properties.get(n, {}))} = None" for n in artifact.inputs if n not in required]
    return first + rest, problems


def _doc(artifact: Artifact) -> list[str]:
    lines = [f"Render prompt `{artifact.name}` ({artifact.source})."]
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


def python_module(build_dir: str | Path, module_path: str | Path | None = None) -> tuple[str, list[Diagnostic]]:
    """The generated module for the build in `build_dir` (as `promptc gen python` writes it to
    `module_path`), and the diagnostics that stop it (E920); the text is "" when there are any."""
    from .runtime import load

    runtime = load(build_dir)
    return python_module_of({name: runtime.artifact(name) for name in runtime.names()}, build_dir, module_path)


def python_module_of(
    artifacts: dict[str, Artifact], build_dir: str | Path, module_path: str | Path | None = None
) -> tuple[str, list[Diagnostic]]:
    """`python_module` for artifacts already in hand (a build that has not been written yet)."""
    from . import __version__

    manifest_path = os.path.join(str(build_dir), "manifest.json")
    seen: dict[str, str] = {}
    diagnostics: list[Diagnostic] = []
    functions: list[str] = []
    for name in sorted(artifacts):
        function = function_name(name)
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
        parameters, problems = _signature(artifact)
        for problem in problems:
            diagnostics.append(
                make(
                    codes.BINDING_COLLISION, f"prompt `{name}`: {problem}", None, "rename the input", path=manifest_path
                )
            )
        mapping = ", ".join(f'"{n}": {n}' for n in (*artifact.inputs, *artifact.helpers))
        signature = f"*, {', '.join(parameters)}" if parameters else ""
        doc = _doc(artifact)
        docstring = '    """' + "\n\n    ".join(doc) + '\n    """' if len(doc) > 1 else f'    """{doc[0]}"""'
        functions.append(
            f"def {function}({signature}) -> Rendered:\n{docstring}\n"
            f'    return _promptc_runtime().render("{name}", {{{mapping}}})\n'
        )
    if diagnostics:
        return "", diagnostics
    if module_path is None:
        label = Path(build_dir).as_posix()
        where = f"Path({label!r})"
    else:  # the same bytes wherever promptc runs from: everything relative to the module
        label = Path(
            os.path.relpath(os.path.abspath(build_dir), os.path.dirname(os.path.abspath(module_path)))
        ).as_posix()
        where = f"Path(__file__).resolve().parent / {label!r}"
    header = f'''"""Typed functions for the prompts of {label!r}, generated by promptc {__version__}.

Do not edit: run `promptc gen python` again after `promptc build`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from promptc.runtime import Rendered, Runtime, load

#: The build folder these functions render from.
BUILD_DIR = {where}

__all__ = ["BUILD_DIR", "runtime", {", ".join(f'"{f}"' for f in seen)}]


@cache
def runtime() -> Runtime:
    """The build folder's runtime, opened on first use."""
    return load(BUILD_DIR)


_promptc_runtime = runtime  # what the functions call: an input may be named `runtime`
'''
    return header + "\n\n" + "\n\n".join(functions), []
