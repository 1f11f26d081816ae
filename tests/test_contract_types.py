"""The generated types agree with the contract (issue 25): for drawn JSON Schemas (as
tests/test_contract_agreement.py draws them) and drawn values, `mypy --strict` on a call of the
generated Python function with that value as a literal, and `tsc --strict` on the same call of the
TypeScript function, accept every value jsonschema (and so both runtimes) accepts — a type never
refuses a call the runtime renders — and, where the type can say exactly what the schema admits,
refuse every value it refuses.

Exact types: strings, booleans, null, `enum`/`const` of strings, integers, booleans and null,
lists of exact types, closed objects (`additionalProperties: false`) of exact properties, maps,
and `anyOf` of exact scalar options; a number is exact in TypeScript only (mypy takes `True` for
`float`), an integer in neither (mypy takes `True`, TypeScript `1.5`). Everything else — bounds,
`oneOf`, `not`, open objects, unions of objects — is wider in the type than in the schema, never
narrower. One deliberate exception, written into docs/bindings.md: a Python caller who passes a
float holding an integer (`3.0`) where the schema says `integer` is refused by mypy (`int`) while
the runtime, following JSON Schema, accepts it; the calls here write such numbers as integers.

mypy and tsc start slowly, so each example checks one generated module with many calls; the
whole test is `ci_only` (it needs node's `tsc`).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptc import runtime
from promptc.bindings.python import python_module_of
from promptc.bindings.typescript import typescript_module_of
from promptc.driver import build
from promptc.runtime.inputtypes import ANNOTATIONS, normalize

from . import test_contract_agreement as agreement
from .conftest import ROOT, write

TSC = ROOT / "runtime-js" / "node_modules" / ".bin" / "tsc"
#: keys without `__proto__`: a TypeScript object literal would set the prototype, not a key
KEYS = [k for k in agreement.KEYS if k != "__proto__"]


def _no_proto(value: Any) -> Any:
    return json.loads(json.dumps(value).replace('"__proto__"', '"a"'))


def _scalar_literal(value: Any) -> bool:
    return value is None or isinstance(value, (str, bool)) or (isinstance(value, int) and not isinstance(value, bool))


def exact(schema: Any, lang: str) -> bool:
    """Whether the generated type admits exactly the values `schema` admits (see the docstring)."""
    if schema is True or schema == {}:
        return True
    if not isinstance(schema, dict):
        return False
    words = set(schema) - ANNOTATIONS
    if not words <= {"type", "enum", "const", "properties", "required", "additionalProperties", "items", "anyOf"}:
        return False
    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else schema["enum"]
        kinds = schema.get("type")
        return (
            bool(values)
            and all(_scalar_literal(v) for v in values)
            and words <= {"enum", "const", "type"}
            and (kinds is None or all(agreement._valid({"type": kinds}, v) for v in values))
        )
    if "anyOf" in schema:
        options = schema["anyOf"]
        scalar = all(
            isinstance(o, dict)
            and o.get("type") in ("string", "boolean", "null")
            and set(o) - ANNOTATIONS == {"type"}
            or (isinstance(o, dict) and ("enum" in o or "const" in o))
            for o in options
        )
        return words == {"anyOf"} and scalar and all(exact(o, lang) for o in options)
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if kind is None:
        return False
    if len(kinds) > 1:
        return words == {"type"} and all(exact({"type": k}, lang) for k in kinds) and "object" not in kinds
    kind = kinds[0]
    if kind in ("string", "boolean", "null"):
        return words == {"type"}
    if kind == "number":
        return words == {"type"} and lang == "ts"
    if kind == "array":
        return words <= {"type", "items"} and exact(schema.get("items", True), lang)
    if kind == "object":
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties", True)
        if not properties:
            return "required" not in schema and isinstance(extra, dict) and exact(extra, lang)
        required = set(schema.get("required") or ())
        return extra is False and required <= set(properties) and all(exact(s, lang) for s in properties.values())
    return False


def _py(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return repr(int(value))  # see the docstring: a Python caller writes JSON's 3.0 as 3
    if isinstance(value, list):
        return "[" + ", ".join(_py(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_py(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _errors(output: str, pattern: str) -> set[int]:
    return {int(m.group(1)) for m in re.finditer(pattern, output, re.M)}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("types")
    write(root, "prompts_src/p.prompt", "/// input: x\n----- user -----\n${x}\n")
    assert build(root / "prompts_src", root / "build").ok
    return root, runtime.load(root / "build").artifact("p")


@pytest.mark.ci_only
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.data_too_large, HealthCheck.too_slow])
@given(
    batch=st.lists(
        st.tuples(agreement.documents(), st.lists(agreement.json_values(), min_size=3, max_size=8)),
        min_size=40,
        max_size=60,
    )
)
def test_mypy_and_tsc_accept_what_the_contract_admits(
    base: Any, batch: list[tuple[Any, list[Any]]], tmp_path_factory
) -> None:
    assert TSC.exists(), "run `npm ci` in runtime-js (.ci/run does)"
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent))
    assert mypy is not None
    root, artifact = base
    work = tmp_path_factory.mktemp("batch")
    artifacts: dict[str, Any] = {}
    cases: list[tuple[str, Any, Any, bool]] = []  # (function, value, schema, valid)
    closed = {
        "type": "object",
        "properties": {"id": {"type": "string"}, "kind": {"enum": ["a", 1, None]}, "é": {"type": "boolean"}},
        "required": ["id"],
        "additionalProperties": False,
    }
    fixed = [
        (
            closed,
            [{"id": "x"}, {"id": "x", "kind": 1}, {"id": 1}, {"kind": "a"}, {"id": "x", "b": 1}, {"id": "x", "é": 1}],
        ),
        ({"type": "array", "items": {"type": ["string", "null"]}}, [[], ["a", None], [1], "a"]),
        ({"anyOf": [{"const": "a"}, {"type": "boolean"}]}, ["a", True, "b", None]),
        ({"type": "object", "additionalProperties": {"type": "string"}}, [{}, {"a": "b"}, {"a": 1}]),
    ]
    for i, (document, values) in enumerate([*fixed, *batch]):
        document = _no_proto(document)
        normalized = normalize(document)
        if normalized.problems or not agreement.schema_ok(document):
            continue
        name = f"p{i}"
        schema = normalized.schema
        artifacts[name] = replace(
            artifact, name=name, input_schema={"type": "object", "properties": {"x": schema}, "required": ["x"]}
        )
        for value in values:
            value = agreement._json(_no_proto(value))
            cases.append((name, value, schema, agreement._valid(document, value)))
    py, diagnostics = python_module_of(artifacts, root / "build", work / "bindings.py")
    assert not diagnostics, [d.message for d in diagnostics]
    ts, diagnostics = typescript_module_of(artifacts, root / "build", work / "prompts.ts")
    assert not [d for d in diagnostics if d.severity == "error"]
    (work / "bindings.py").write_text(py, encoding="utf-8")
    (work / "prompts.ts").write_text(ts, encoding="utf-8")
    header = 2
    (work / "calls.py").write_text(
        "from bindings import *  # noqa\n\n" + "".join(f"{f}(x={_py(v)})\n" for f, v, _, _ in cases), encoding="utf-8"
    )
    (work / "calls.ts").write_text(
        'import * as p from "./prompts.js";\n\n'
        + "".join(f"p.{f}({{ x: {json.dumps(v, ensure_ascii=False)} }});\n" for f, v, _, _ in cases),
        encoding="utf-8",
    )
    checked = subprocess.run(
        [mypy, "--strict", "--no-incremental", "--cache-dir", str(work / ".mypy"), "calls.py", "bindings.py"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert not [line for line in checked.stdout.splitlines() if line.startswith("bindings.py")], checked.stdout
    mypy_refused = _errors(checked.stdout, r"^calls\.py:(\d+):")
    (work / "package.json").write_text('{"type": "module"}\n')
    (work / "node_modules").mkdir()
    (work / "node_modules" / "promptc-runtime").symlink_to(ROOT / "runtime-js", target_is_directory=True)
    config = {
        "compilerOptions": {"strict": True, "module": "nodenext", "moduleResolution": "nodenext", "noEmit": True},
        "files": ["calls.ts", "prompts.ts"],
    }
    (work / "tsconfig.json").write_text(json.dumps(config))
    compiled = subprocess.run([str(TSC), "-p", "."], cwd=work, capture_output=True, text=True, timeout=900)
    assert not [line for line in compiled.stdout.splitlines() if line.startswith("prompts.ts")], compiled.stdout
    tsc_refused = _errors(compiled.stdout, r"^calls\.ts\((\d+),")
    exact_checked = 0
    for line, (function, value, schema, valid) in enumerate(cases, header + 1):
        where = f"{function}: {json.dumps(schema)} with {json.dumps(value)}"
        assert not (valid and line in mypy_refused), "mypy refuses a valid call: " + where
        assert not (valid and line in tsc_refused), "tsc refuses a valid call: " + where
        if exact(schema, "py"):
            exact_checked += 1
            assert (line not in mypy_refused) == valid, "mypy accepts an invalid call of an exact type: " + where
        if exact(schema, "ts"):
            assert (line not in tsc_refused) == valid, "tsc accepts an invalid call of an exact type: " + where
    assert exact_checked, "the batch held no exactly typed schema"
