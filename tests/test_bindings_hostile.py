"""Generated bindings treat every string from a source as data (issue 23): hostile prompt names,
file names, model names, descriptions, property names and enum values never make `gen python` or
`gen typescript` write code that runs, or code that does not compile.

The Python side runs in the default suite: every generated module compiles, encodes as UTF-8, and
its syntax tree holds each hostile string as a constant exactly where it belongs (the prompt name
as `render`'s first argument, the model in the docstring, keys in the TypedDict) and no call but
the module's own. The heavy checks run in batches: `mypy --strict` on one module of hundreds of
hostile prompts (`slow`), and `tsc --strict` plus the TypeScript compiler's own syntax tree on the
TypeScript module (`ci_only`). The CI profile draws well over 10,000 hostile strings.
"""

from __future__ import annotations

import ast
import json
import os
import random
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptc import runtime
from promptc.bindings.python import _doc, python_module_of
from promptc.bindings.typescript import typescript_module_of
from promptc.driver import build
from promptc.runtime.inputtypes import normalize
from promptc.runtime.model import OutputSchema

from .conftest import ROOT, examples, write

PAYLOAD = '__import__("os").system("touch PWNED")'
#: pieces that end literals, comments and docstrings in Python or TypeScript, or are not text
FRAGMENTS = [
    '"',
    "'",
    '"""',
    "'''",
    "\\",
    "\\N",
    "\\x",
    "\\u{",
    "\\",
    "\x00",
    "\n",
    "\r",
    "\r\n",
    "\t",
    "\x0b",
    "\x0c",
    "\x1b[31m",
    "\x7f",
    "\x85",
    "\u2028",
    "\u2029",
    "\ufeff",
    "\ud800",
    "\udfff",
    "*/",
    "/*",
    "//",
    "#",
    "${",
    "`",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    ";",
    "+",
    "-->",
    "</script>",
    f'a" if {PAYLOAD} else "a',
    f'""" + {PAYLOAD} + """',
    f"''' + {PAYLOAD} + '''",
    f'" + {PAYLOAD} + "',
    '*/ require("child_process").execSync("touch PWNED"); /*',
    '"); require("child_process").execSync("touch PWNED"); ("',
    "\n# coding: latin-1\n",
    "é",
    "ﬁ",
    "😀",
    "\U000e0001",
    " ",
    "x",
    "class",
    "__init__",
    "_promptc_runtime",
    "TypedDict",
    "Any",
    "str",
]


def hostile(rng: random.Random) -> str:
    """One hostile string: a few fragments and random characters (any code point, surrogates too)."""
    parts = []
    for _ in range(rng.randint(1, 6)):
        if rng.random() < 0.8:
            parts.append(rng.choice(FRAGMENTS))
        else:
            parts.append("".join(chr(rng.randint(0, 0x10FFFF if rng.random() < 0.3 else 0x2FF)) for _ in range(3)))
    return "".join(parts)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One real artifact, the template every hostile one is made from."""
    root = tmp_path_factory.mktemp("hostile")
    write(root, "prompts_src/p.prompt", "/// input: order\n----- user -----\nOrder ${order.id}\n")
    assert build(root / "prompts_src", root / "build").ok
    return root, runtime.load(root / "build").artifact("p")


def hostile_artifacts(rng: random.Random, count: int, artifact: Any) -> tuple[dict[str, Any], list[str]]:
    """`count` artifacts made of hostile strings (prompt name, source, model, doc comment, keys,
    descriptions and enum values of an input and an output schema), and every string drawn."""
    drawn: list[str] = []

    def text() -> str:
        value = hostile(rng)
        drawn.append(value)
        return value

    artifacts = {}
    for i in range(count):
        name = f"p{i}x_{text()}"  # a unique prefix: the functions and types stay distinct
        keys = [text() for _ in range(3)]
        if rng.random() < 0.3:
            keys[0] = rng.choice(["str", "Any", "class", "ﬁ", "__init__", "TypedDict", "id", "None"])
        enum = [text(), text(), 1, True, None, 2.5]
        fields = {
            keys[0]: {"type": "string", "description": text()},
            keys[1]: {"enum": enum, "description": text()},
            keys[2]: {"type": "array", "items": {"type": "object", "properties": {keys[0]: {"const": text()}}}},
        }
        order = {"type": "object", "additionalProperties": rng.random() < 0.5, "properties": fields}
        order["required"] = [keys[0]]
        schema = {"type": "object", "properties": {"order": order}, "required": ["order"]}
        output = {"type": "object", "additionalProperties": False, "properties": fields, "required": keys[:1]}
        artifacts[name] = replace(
            artifact,
            name=name,
            source=f"{text()}.prompt",
            model=text(),
            input_schema=schema,
            output_schema=OutputSchema("out", output),
            output_contract=normalize(output).schema,
        )
    return artifacts, drawn


# ---------------------------------------------------------------------------------------------
# Python: compile() and the syntax tree, in the default suite


def _string_constants(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def check_python_module(text: str, artifacts: dict[str, Any]) -> None:
    """The module compiles, encodes, calls nothing but its own calls, and holds every prompt's name,
    docstring and keys as constants."""
    text.encode("utf-8")  # no lone surrogate reached the file
    tree = ast.parse(text)
    compile(tree, "bindings.py", "exec")
    assert not any(isinstance(n, ast.Name) and n.id in ("__import__", "eval", "exec", "os") for n in ast.walk(tree))
    calls = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            calls.add(ast.unparse(node.func))
    assert calls <= {
        "load",
        "Path",
        "Path(__file__).resolve",
        "_promptc_runtime().render",
        "_promptc_runtime",
        "TypedDict",
        "_promptc_runtime().parse",
        "cast",
    }
    everything = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name != "runtime"]
    functions = {n.name: n for n in everything if not n.name.startswith("parse_")}
    assert len(functions) == len(artifacts)
    for parser in (n for n in everything if n.name.startswith("parse_")):
        call = next(c for c in ast.walk(parser) if isinstance(c, ast.Call) and ast.unparse(c.func).endswith(".parse"))
        assert call.args[0].value in artifacts  # type: ignore[attr-defined]
    names = set()
    for function in functions.values():
        render = function.body[-1].value  # type: ignore[attr-defined]
        assert isinstance(render, ast.Call) and ast.unparse(render.func) == "_promptc_runtime().render"
        name = render.args[0].value  # type: ignore[attr-defined]
        names.add(name)
        artifact = artifacts[name]
        lines = "\n\n".join(_doc(artifact)).split("\n")
        indented = "".join("\n" + (f"    {line}" if line else "") for line in lines[1:])
        expected = lines[0] + indented + ("\n    " if len(lines) > 1 else "")
        assert ast.get_docstring(function, clean=False) == expected
    assert names == set(artifacts)
    constants = set(_string_constants(tree))
    for artifact in artifacts.values():
        order = artifact.input_schema["properties"]["order"]
        if order.get("additionalProperties") is False:  # a TypedDict: every key is in the module
            for key in order.get("properties", {}):
                assert key in constants or any(
                    isinstance(n, ast.AnnAssign) and getattr(n.target, "id", None) == key for n in ast.walk(tree)
                )


@settings(max_examples=examples(100))
@given(st.randoms(use_true_random=False), st.integers(1, 12))
def test_hostile_strings_make_python_bindings_that_only_hold_data(base: Any, rng: random.Random, count: int) -> None:
    root, artifact = base
    artifacts, _ = hostile_artifacts(rng, count, artifact)
    text, diagnostics = python_module_of(artifacts, root / "build", root / "app" / "bindings.py")
    assert not diagnostics, [d.message for d in diagnostics]
    check_python_module(text, artifacts)


def test_the_cases_of_the_issue(base: Any, tmp_path: Path) -> None:
    """A file named to run a shell command, a model that closes the docstring, a backslash in a
    file name, a NUL in a description: the module compiles, and importing it and calling every
    function runs nothing (no PWNED file) and renders the prompt by its real name."""
    root, artifact = base
    evil_name = f'a" if {PAYLOAD} else "a'
    schema = {
        "type": "object",
        "properties": {
            "order": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"id": {"type": "string", "description": "nul\x00here"}},
            }
        },
        "required": ["order"],
    }
    artifacts = {
        evil_name: replace(artifact, name=evil_name, source=f"{evil_name}.prompt"),
        "model": replace(artifact, name="model", model=f'x"""+{PAYLOAD}+"""'),
        "back\\N": replace(artifact, name="back\\N", source="back\\N.prompt", input_schema=schema),
    }
    text, diagnostics = python_module_of(artifacts, root / "build", tmp_path / "bindings.py")
    assert not diagnostics
    check_python_module(text, artifacts)
    (tmp_path / "bindings.py").write_text(text, encoding="utf-8")
    calls = (
        "import bindings\n"
        "seen = []\n"
        "class Fake:\n"
        "    def render(self, name, values):\n"
        "        seen.append(name)\n"
        "bindings._promptc_runtime = Fake\n"
        "for f in bindings.__all__[2:]:\n"
        "    getattr(bindings, f)(order={'id': 'x'})\n"
        "print(repr(sorted(seen)))\n"
    )
    done = subprocess.run([sys.executable, "-c", calls], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr(sorted(artifacts))
    assert not (tmp_path / "PWNED").exists()


# ---------------------------------------------------------------------------------------------
# Batches: mypy (slow) and tsc (ci_only)

#: hostile prompts per batch module: these tests run only in CI (`slow`, `ci_only`), and draw over
#: 10,000 strings each (mypy's half as many prompts)
BATCH = 1200


@pytest.mark.slow
def test_mypy_strict_passes_a_module_of_hostile_prompts(base: Any, tmp_path: Path) -> None:
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent))
    assert mypy is not None
    root, artifact = base
    artifacts, drawn = hostile_artifacts(random.Random(23), BATCH // 2, artifact)
    text, diagnostics = python_module_of(artifacts, root / "build", tmp_path / "bindings.py")
    assert not diagnostics
    (tmp_path / "bindings.py").write_text(text, encoding="utf-8")
    done = subprocess.run(
        [mypy, "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"), "bindings.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert len(drawn) > BATCH


TSC = ROOT / "runtime-js" / "node_modules" / ".bin" / "tsc"
#: the TypeScript compiler's own parser: every call expression and string literal of a module
TS_WALK = """
import ts from "typescript";
import { readFileSync } from "node:fs";
const file = ts.createSourceFile("m.ts", readFileSync(process.argv[2], "utf8"), ts.ScriptTarget.ES2022, true);
const calls = [];
const strings = [];
(function walk(node) {
  if (ts.isCallExpression(node)) {
    const first = node.arguments[0];
    calls.push([node.expression.getText(file), first && ts.isStringLiteral(first) ? first.text : null]);
  }
  if (ts.isStringLiteral(node)) strings.push(node.text);
  ts.forEachChild(node, walk);
})(file);
process.stdout.write(JSON.stringify({ calls, strings, errors: file.parseDiagnostics.length }));
"""


@pytest.mark.ci_only
def test_tsc_passes_a_module_of_hostile_prompts_and_its_calls_are_the_modules_own(base: Any, tmp_path: Path) -> None:
    assert TSC.exists(), "run `npm ci` in runtime-js (.ci/run does)"
    root, artifact = base
    artifacts, drawn = hostile_artifacts(random.Random(25), BATCH, artifact)
    text, diagnostics = typescript_module_of(artifacts, root / "build", tmp_path / "prompts.ts")
    assert not [d for d in diagnostics if d.severity == "error"], [d.message for d in diagnostics]
    text.encode("utf-8")
    (tmp_path / "prompts.ts").write_text(text, encoding="utf-8")
    (tmp_path / "package.json").write_text('{"type": "module"}\n')
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "promptc-runtime").symlink_to(ROOT / "runtime-js", target_is_directory=True)
    (tmp_path / "node_modules" / "typescript").symlink_to(ROOT / "runtime-js" / "node_modules" / "typescript")
    config = {
        "compilerOptions": {"strict": True, "module": "nodenext", "moduleResolution": "nodenext", "noEmit": True},
        "files": ["prompts.ts"],
    }
    (tmp_path / "tsconfig.json").write_text(json.dumps(config))
    checked = subprocess.run([str(TSC), "-p", "."], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert checked.returncode == 0, checked.stdout[-3000:]
    (tmp_path / "walk.mjs").write_text(TS_WALK)
    walked = subprocess.run(
        ["node", "walk.mjs", "prompts.ts"], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=os.environ
    )
    assert walked.returncode == 0, walked.stderr
    tree = json.loads(walked.stdout)
    assert tree["errors"] == 0
    callees = {callee for callee, _ in tree["calls"]}
    assert callees <= {"runtime().render", "runtime().parse", "runtime", "promptcLoad"}, callees
    parsed = sorted(first for callee, first in tree["calls"] if callee == "runtime().parse")
    assert parsed == sorted(artifacts)
    rendered = sorted(first for callee, first in tree["calls"] if callee == "runtime().render")
    assert rendered == sorted(artifacts)  # each prompt by its exact name, as data
    assert len(drawn) > 10_000
