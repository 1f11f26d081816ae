"""`promptc gen python`: a typed function per prompt, checked by mypy (strict) for real."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from promptc.bindings.python import function_name, python_module, python_module_of, python_type
from promptc.driver import build
from promptc.runtime import render as runtime
from promptc.runtime.inputtypes import parse_type

from .conftest import ROOT, run_promptc, write

PROMPTS = {
    "support/chat.prompt": "/// input: product: str, question: str, limit: int | None\n"
    "----- system -----\nYou help with ${product}.\n----- user -----\n${question} ${limit}\n",
    "tags.prompt": "/// input: tags: list[str], scores: dict[str, float]\n{{ ', '.join(tags) }} {{ sorted(scores) }}\n",
    "free.prompt": "Anything: ${thing}\n",
    "orders.prompt": "/// input: order\n----- user -----\nOrder ${order.id}\n",
}
#: what an `@schemas/order.json` input puts in `input_schema` (hand-made: the artifact's is untyped)
ORDER = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "description": "The order number."},
        "kind": {"enum": ["rush", "normal"]},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"sku": {"type": "string"}, "qty": {"type": ["integer", "null"]}},
                "required": ["sku"],
            },
        },
        "extra": {"type": "object", "properties": {"note": {"type": "string"}}},
    },
    "required": ["id", "items"],
}

GOOD_APP = """
from bindings import free, orders, support_chat, tags

request = support_chat(product="Acme", question="Why?")
request = support_chat(product="Acme", question="Why?", limit=3)
request = tags(tags=["a"], scores={"x": 1.0})
request = free(thing=object())
request = orders(order={"id": "A-1", "items": [{"sku": "x", "qty": 2}, {"sku": "y"}], "kind": "rush"})
request = orders(order={"id": "A-2", "items": [], "extra": {"note": "n", "anything": 1}})
print(request.messages)
"""
BAD_APP = """
from bindings import orders, support_chat

support_chat(product="Acme")                      # missing question
support_chat(product="Acme", questoin="Why?")     # misspelt
support_chat(product="Acme", question=3)          # wrong type
orders(order={"items": []})                       # missing key
orders(order={"id": "A", "items": [], "knid": "rush"})   # misspelt key
orders(order={"id": "A", "items": [{"sku": 1}], "kind": "slow"})   # wrong types
"""


@pytest.mark.parametrize(
    ("text", "annotation"),
    [("str", "str"), ("list[int]", "list[int]"), ("dict[str, bool | None]", "dict[str, bool | None]")],
)
def test_types_become_annotations(text: str, annotation: str) -> None:
    assert python_type(parse_type(text)) == annotation


def test_function_names() -> None:
    assert function_name("support/chat") == "support_chat"
    assert function_name("team/2024-plan") == "team_2024_plan"
    assert function_name("class") == "class_"


def test_a_name_collision_is_a_diagnostic(tmp_path: Path) -> None:
    write(tmp_path, "prompts_src/a-b.prompt", "Hi.\n")
    write(tmp_path, "prompts_src/a_b.prompt", "Hi.\n")
    assert build(tmp_path / "prompts_src", tmp_path / "build").ok
    text, diagnostics = python_module(tmp_path / "build")
    assert text == "" and [d.code for d in diagnostics] == ["E920"]
    done = run_promptc("gen", "python", "--build", "build", cwd=tmp_path)
    assert done.returncode == 1 and "`a-b` and `a_b` would both be the function `a_b`" in done.stderr


def test_generated_module_type_checks_and_catches_the_three_mistakes(tmp_path: Path) -> None:
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent))
    if mypy is None:
        pytest.skip("mypy is not installed")
    for rel, text in PROMPTS.items():
        write(tmp_path, f"prompts_src/{rel}", text)
    assert build(tmp_path / "prompts_src", tmp_path / "build").ok
    done = run_promptc("gen", "python", "-o", "app/bindings.py", "--build", "build", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    module = (tmp_path / "app" / "bindings.py").read_text()
    assert "def support_chat(*, product: str, question: str, limit: int | None = None) -> Rendered:" in module
    assert 'BUILD_DIR = Path(__file__).resolve().parent / "../build"' in module
    # the same module over an object-typed `order` (as `@schemas/order.json` types it)
    artifacts = {name: runtime.load(tmp_path / "build").artifact(name) for name in runtime.load(tmp_path / "build")}
    artifacts["orders"] = replace(
        artifacts["orders"], input_schema={**artifacts["orders"].input_schema, "properties": {"order": ORDER}}
    )
    module, diagnostics = python_module_of(artifacts, tmp_path / "build", tmp_path / "app" / "bindings.py")
    assert not diagnostics
    assert "class OrdersOrder(TypedDict):\n    #: The order number.\n    id: str\n" in module
    assert "    kind: NotRequired[Literal['rush', 'normal']]\n    items: list[OrdersOrderItemsItem]\n" in module
    assert "    extra: NotRequired[dict[str, Any]]\n" in module  # an open object: any key may be there
    assert "class OrdersOrderItemsItem(TypedDict):\n    sku: str\n    qty: NotRequired[int | None]\n" in module
    assert module.index("class OrdersOrderItemsItem") < module.index("class OrdersOrder(")
    (tmp_path / "app" / "bindings.py").write_text(module)
    write(tmp_path, "app/good.py", GOOD_APP)
    write(tmp_path, "app/bad.py", BAD_APP)
    # mypy finds promptc in the venv `make build` makes, editable install and all (the Makefile's
    # `promptc-stubs` link; promptc's own modules are not under test here)
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    args = [mypy, "--strict", "--no-incremental", "--follow-imports=silent", "--cache-dir", str(tmp_path / ".mypy")]
    # one mypy run over all three files (mypy's start-up is most of its time): errors in bad.py only
    checked = subprocess.run(
        [*args, "good.py", "bindings.py", "bad.py"], cwd=tmp_path / "app", env=env, capture_output=True, text=True
    )
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert checked.returncode == 1 and errors and all(line.startswith("bad.py:") for line in errors), checked.stdout
    bad = checked
    assert 'Missing named argument "question"' in bad.stdout
    assert 'Unexpected keyword argument "questoin"' in bad.stdout
    assert 'incompatible type "int"; expected "str"' in bad.stdout
    assert 'Missing key "id" for TypedDict "OrdersOrder"' in bad.stdout
    assert 'Extra key "knid" for TypedDict "OrdersOrder"' in bad.stdout
    assert 'Incompatible types (expression has type "int", TypedDict item "sku" has type "str")' in bad.stdout
    assert "TypedDict item \"kind\" has type \"Literal['rush', 'normal']\"" in bad.stdout
    assert [int(line.split(":")[1]) for line in errors] == [4, 5, 6, 7, 8, 9, 9], checked.stdout
    # and the generated functions render, from the build folder BUILD_DIR names
    run = subprocess.run([sys.executable, "-c", "import good"], cwd=tmp_path / "app", capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_the_docs_excerpt_is_the_generated_code() -> None:
    doc = (ROOT / "docs" / "bindings.md").read_text(encoding="utf-8")
    excerpts = [block.split("```", 1)[0] for block in doc.split("```text\n")[1:]]
    text, diagnostics = python_module(ROOT / "build")
    assert not diagnostics and len(excerpts) == 3
    for excerpt in excerpts:  # each piece of an excerpt (split at blank lines) is in the module
        assert all(piece in text for piece in excerpt.split("\n\n")), excerpt


def test_build_writes_the_configured_bindings_and_check_locked_notices_when_stale(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.promptc]\npython_bindings = 'app/prompts.py'\n")
    write(tmp_path, "prompts_src/hello.prompt", "/// input: name: str\nHello ${name}.\n")
    assert run_promptc("build", cwd=tmp_path / "prompts_src").returncode == 0  # from a subfolder, too
    module = (tmp_path / "app" / "prompts.py").read_text()
    assert "def hello(*, name: str) -> Rendered:" in module
    assert 'BUILD_DIR = Path(__file__).resolve().parent / "../build"' in module
    assert run_promptc("check", "--locked", cwd=tmp_path).returncode == 0
    (tmp_path / "app" / "prompts.py").write_text(module.replace("name: str", "name: int"))
    stale = run_promptc("check", "--locked", cwd=tmp_path)
    assert stale.returncode == 1 and "`app/prompts.py` (python_bindings) is stale" in stale.stdout
    assert run_promptc("build", cwd=tmp_path).returncode == 0
    assert (tmp_path / "app" / "prompts.py").read_text() == module


@pytest.mark.parametrize(
    ("schema", "annotation"),
    [
        ({"type": ["string", "null"]}, "str | None"),
        ({"enum": ["a", 1, True, None]}, "Literal['a', 1, True, None]"),
        ({"enum": ["a", 1.5]}, "Literal['a'] | float"),
        ({"enum": [{"a": 1}]}, "Any"),  # an object among the values: not a Literal
        ({"const": "x"}, "Literal['x']"),
        ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, "int | str"),
        ({"anyOf": [{"type": "integer"}, {}]}, "Any"),  # one option admits anything
        ({"$ref": "#/$defs/x"}, "Any"),
        ({"type": "array", "prefixItems": [{"type": "string"}]}, "list[Any]"),
        ({"type": "object"}, "dict[str, Any]"),
        ({"type": "object", "properties": {"a": {}}}, "dict[str, Any]"),  # open: other keys allowed
        (
            {"type": "object", "additionalProperties": False, "patternProperties": {"^x": {}}, "properties": {"a": {}}},
            "dict[str, Any]",
        ),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "dict[str, int]"),
        ({"type": "object", "additionalProperties": False, "properties": {"a": {}}}, "InputX"),
        ({"type": "thing"}, "Any"),
        ({"not": {"type": "string"}}, "Any"),
    ],
)
def test_schemas_become_sound_annotations(schema: dict, annotation: str) -> None:
    assert python_type(schema, ("input", "x")) == annotation


def test_a_deep_schema_falls_back_to_any_instead_of_recursing() -> None:
    schema: dict = {"type": "string"}
    for _ in range(5000):
        schema = {"type": "array", "items": schema}
    annotation = python_type(schema)
    assert annotation.startswith("list[list[") and annotation.count("list[") == 33 and "Any" in annotation


def test_two_object_types_with_one_name_are_a_diagnostic(tmp_path: Path) -> None:
    write(tmp_path, "prompts_src/a/b.prompt", "/// input: c_d\n${c_d}\n")
    write(tmp_path, "prompts_src/a/b_c.prompt", "/// input: d\n${d}\n")
    assert build(tmp_path / "prompts_src", tmp_path / "build").ok
    closed = {"type": "object", "additionalProperties": False, "properties": {"k": {"type": "string"}}}
    loaded = runtime.load(tmp_path / "build")
    artifacts = {n: loaded.artifact(n) for n in loaded}
    artifacts["a/b"] = replace(artifacts["a/b"], input_schema={"type": "object", "properties": {"c_d": closed}})
    artifacts["a/b_c"] = replace(
        artifacts["a/b_c"], input_schema={"type": "object", "properties": {"d": {**closed, "required": ["k"]}}}
    )
    text, diagnostics = python_module_of(artifacts, tmp_path / "build")
    assert text == "" and [d.code for d in diagnostics] == ["E920"]
    assert (
        diagnostics[0].message
        == "prompt `a/b`, input `c_d` and prompt `a/b_c`, input `d` would both be the type `ABCD`"
    )


def test_generated_names_never_shadow_the_modules_own(tmp_path: Path) -> None:
    """An object input `dict` of prompt `typed` would be the type `TypedDict`: it is `TypedDict_`;
    a prompt whose function would be `load` is E920."""
    closed = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    write(tmp_path, "prompts_src/d.json", json.dumps({**closed, "additionalProperties": False}))
    write(tmp_path, "prompts_src/typed.prompt", "/// input: dict: @d.json\nHi ${dict.name}\n")
    assert build(tmp_path / "prompts_src", tmp_path / "build").ok
    text, diagnostics = python_module(tmp_path / "build")
    assert not diagnostics
    assert "class TypedDict_(TypedDict):" in text and "def typed(*, dict: TypedDict_)" in text
    compile(text, "bindings.py", "exec")
    write(tmp_path, "prompts_src/load.prompt", "Hi.\n")
    assert build(tmp_path / "prompts_src", tmp_path / "build").ok
    text, diagnostics = python_module(tmp_path / "build")
    assert text == "" and [d.message for d in diagnostics] == [
        "prompt `load` would be the function `load`, a name the module uses itself"
    ]


@pytest.mark.slow  # a mypy run of its own; the default suite's mypy run is the test above
def test_the_docstring_starts_with_the_leading_comment_and_outputs_get_a_parse_helper(tmp_path: Path) -> None:
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent))
    if mypy is None:
        pytest.skip("mypy is not installed")
    answer = {
        "type": "object",
        "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
        "required": ["answer", "confidence"],
        "additionalProperties": False,
    }
    write(tmp_path, "prompts_src/answer.json", json.dumps(answer))
    write(
        tmp_path,
        "prompts_src/ask.prompt",
        "/// Answers a question in one sentence.\n/// input: q: str\n/// output: answer.json\nQ: ${q}\n",
    )
    assert build(tmp_path / "prompts_src", tmp_path / "build").ok
    done = run_promptc("gen", "python", "-o", "app/bindings.py", "--build", "build", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    module = (tmp_path / "app" / "bindings.py").read_text()
    assert 'def ask(*, q: str) -> Rendered:\n    """Answers a question in one sentence.\n\n    Render prompt' in module
    assert "def parse_ask(response: object) -> AskOutput:" in module
    write(
        tmp_path,
        "app/use.py",
        "from bindings import parse_ask\n\n"
        'value = parse_ask(\'{"answer": "Yes.", "confidence": 0.9}\')\n'
        "confidence: float = value['confidence']\n"
        "print(value['answer'], confidence)\n",
    )
    write(tmp_path, "app/bad.py", "from bindings import parse_ask\n\ncount: int = parse_ask('{}')['answer']\n")
    args = [mypy, "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy")]
    checked = subprocess.run(
        [*args, "use.py", "bindings.py", "bad.py"], cwd=tmp_path / "app", capture_output=True, text=True
    )
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and errors[0].startswith("bad.py:3:"), checked.stdout
    ran = subprocess.run([sys.executable, "use.py"], cwd=tmp_path / "app", capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout == "Yes. 0.9\n", ran.stderr
    refused = subprocess.run(
        [sys.executable, "-c", "from bindings import parse_ask\nparse_ask('{\"answer\": 3}')"],
        cwd=tmp_path / "app",
        capture_output=True,
        text=True,
    )
    assert "OutputError" in refused.stderr and "response.confidence: required, missing" in refused.stderr


@pytest.mark.slow
def test_parse_reads_the_official_sdks_response_objects() -> None:
    """The value where each SDK's response object puts it: OpenAI chat and Responses, Anthropic
    (a text block, or a tool_use block's input), google-genai."""
    from anthropic.types import Message
    from google.genai.types import GenerateContentResponse
    from openai.types.chat import ChatCompletion
    from openai.types.responses import Response

    loaded = runtime.load(ROOT / "build")
    value = {"category": "bug", "priority": "high", "product": "sync", "summary": "S.", "needs_human": False}
    text = json.dumps(value)
    chat = ChatCompletion.model_validate(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        }
    )
    responses = Response.model_validate(
        {
            "id": "r",
            "object": "response",
            "created_at": 0,
            "model": "gpt-4.1-mini",
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
            "output": [
                {
                    "type": "message",
                    "id": "m",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ],
        }
    )
    anthropic_text = Message.model_validate(
        {
            "id": "a",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    anthropic_tool = Message.model_validate(
        {
            "id": "a",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "tool_use", "id": "t", "name": "triage", "input": value}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    gemini = GenerateContentResponse.model_validate(
        {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}]}
    )
    for response in (chat, responses, anthropic_text, anthropic_tool, gemini):
        assert loaded.parse("helpdesk/triage", response) == value, type(response).__name__
