"""`promptc gen typescript`: interfaces and a typed function per prompt over runtime-js; checked by
the real `tsc --strict` and run by node in `.ci/run` (`ci_only`)."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from promptc.bindings.typescript import ts_function_name, typescript_module, typescript_module_of
from promptc.driver import build
from promptc.runtime import render as runtime

from .conftest import ROOT, run_promptc, write
from .test_bindings import ORDER

TSC = ROOT / "runtime-js" / "node_modules" / ".bin" / "tsc"


def _orders_build(tmp_path: Path) -> dict:
    write(
        tmp_path,
        "prompts_src/support/chat.prompt",
        "/// input: product: str, question: str, limit: int | None\n"
        "----- system -----\nYou help with ${product}.\n----- user -----\n${question} ${limit}\n",
    )
    write(tmp_path, "prompts_src/orders.prompt", "/// input: order\n----- user -----\nOrder ${order.id}\n")
    write(tmp_path, "prompts_src/hello.prompt", "Hello.\n")
    write(tmp_path, "prompts_src/py.prompt", "/// input: n: int\n{{ n + 1 }}\n")
    assert build(tmp_path / "prompts_src", tmp_path / "build").ok
    loaded = runtime.load(tmp_path / "build")
    artifacts = {name: loaded.artifact(name) for name in loaded}
    schema = {**artifacts["orders"].input_schema, "properties": {"order": ORDER}}
    artifacts["orders"] = replace(artifacts["orders"], input_schema=schema)
    return artifacts


def test_function_names() -> None:
    assert ts_function_name("support/chat") == "supportChat"
    assert ts_function_name("checkout/payment_validation") == "checkoutPaymentValidation"
    assert ts_function_name("delete") == "delete_"
    assert ts_function_name("2024-plan") == "_2024Plan"


def test_the_module_has_interfaces_and_functions_and_leaves_python_prompts_out(tmp_path: Path) -> None:
    artifacts = _orders_build(tmp_path)
    text, diagnostics = typescript_module_of(artifacts, tmp_path / "build", tmp_path / "app" / "prompts.ts")
    assert [d.code for d in diagnostics] == ["W921"]
    assert "prompt `py` (py.prompt) is left out: its python renderer runs template code" in diagnostics[0].message
    assert "export function py" not in text
    assert 'export const BUILD_DIR: string | URL = new URL("../build/", import.meta.url);' in text
    assert (
        "export interface SupportChatInputs {\n  product: string;\n  question: string;\n  limit?: number | null;\n}\n"
    ) in text
    assert "export function supportChat(inputs: SupportChatInputs): Rendered {\n" in text
    assert '  return runtime().render("support/chat", inputs);\n' in text
    assert "export function hello(): Rendered {\n" in text
    assert (
        "export interface OrdersOrder {\n  /** The order number. */\n  id: string;\n"
        '  kind?: "rush" | "normal";\n  items: readonly OrdersOrderItemsItem[];\n  extra?: OrdersOrderExtra;\n}\n'
    ) in text
    assert "export interface OrdersOrderExtra {\n  note?: string;\n  [key: string]: unknown;\n}\n" in text
    assert "export interface OrdersOrderItemsItem {\n  sku: string;\n  qty?: number | null;\n}\n" in text
    assert " * Render prompt `support/chat` (support/chat.prompt).\n *\n * Inputs: limit, product, question.\n" in text
    # the same bytes again, and from another working folder (paths are relative to the module)
    again, _ = typescript_module_of(artifacts, tmp_path / "build", tmp_path / "app" / "prompts.ts")
    assert again == text


def test_gen_typescript_on_the_command_line(tmp_path: Path) -> None:
    done = run_promptc("gen", "typescript", "--build", str(ROOT / "build"))
    assert done.returncode == 0, done.stderr
    assert "export function helpdeskAgent(inputs: HelpdeskAgentInputs): Rendered {" in done.stdout
    assert "warning[W921]: prompt `agents/planner` (agents/planner.prompt) is left out" in done.stderr
    write(tmp_path, "prompts_src/a-b.prompt", "Hi.\n")
    write(tmp_path, "prompts_src/a_b.prompt", "Hi.\n")
    write(tmp_path, "prompts_src/runtime.prompt", "Hi.\n")
    assert build(tmp_path / "prompts_src", tmp_path / "build").ok
    text, diagnostics = typescript_module(tmp_path / "build")
    assert text == "" and [d.message for d in diagnostics] == [
        "prompt `a-b` and prompt `a_b` would both be `aB`",
        "prompt `runtime` would be `runtime`, a name the module defines itself",
    ]
    failed = run_promptc("gen", "typescript", "-o", "x.ts", "--build", "build", cwd=tmp_path)
    assert failed.returncode == 1 and "error[E920]" in failed.stderr and not (tmp_path / "x.ts").exists()


def test_build_writes_the_configured_typescript_and_check_locked_notices_when_stale(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.promptc]\ntypescript_bindings = 'web/prompts.ts'\n")
    write(tmp_path, "prompts_src/hello.prompt", "/// input: name: str\nHello ${name}.\n")
    assert run_promptc("build", cwd=tmp_path).returncode == 0
    module = (tmp_path / "web" / "prompts.ts").read_text()
    assert "export interface HelloInputs {\n  name: string;\n}" in module
    assert 'new URL("../build/", import.meta.url)' in module
    assert run_promptc("check", "--locked", cwd=tmp_path).returncode == 0
    (tmp_path / "web" / "prompts.ts").write_text(module.replace("name: string", "name: number"))
    stale = run_promptc("check", "--locked", cwd=tmp_path)
    assert stale.returncode == 1 and "`web/prompts.ts` (typescript_bindings) is stale" in stale.stdout
    (tmp_path / "web" / "prompts.ts").unlink()
    missing = run_promptc("check", "--locked", cwd=tmp_path)
    assert missing.returncode == 1 and "`web/prompts.ts` (typescript_bindings) is missing" in missing.stdout
    assert run_promptc("build", cwd=tmp_path).returncode == 0
    assert (tmp_path / "web" / "prompts.ts").read_text() == module


GOOD_APP = """
import { hello, orders, supportChat, type Rendered } from "./prompts.js";

const chat: Rendered = supportChat({ product: "Acme", question: "Why?" });
const limited = supportChat({ product: "Acme", question: "Why?", limit: 3 });
const order = orders({ order: { id: "A-1", items: [{ sku: "x", qty: 2 }, { sku: "y" }], kind: "rush" } });
const open = orders({ order: { id: "A-2", items: [], extra: { note: "n", anything: 1 } } });
console.log(JSON.stringify([chat, limited, order, open, hello()].map((r) => r.asShape("plain"))));
"""
BAD_APP = """
import { orders, supportChat } from "./prompts.js";

supportChat({ product: "Acme" });
supportChat({ product: "Acme", questoin: "Why?" });
supportChat({ product: "Acme", question: 3 });
orders({ order: { items: [] } });
orders({ order: { id: "A", items: [], knid: "rush" } });
orders({ order: { id: "A", items: [{ sku: 1 }], kind: "slow" } });
"""
TSCONFIG = {
    "compilerOptions": {
        "strict": True,
        "module": "nodenext",
        "moduleResolution": "nodenext",
        "target": "es2022",
        "skipLibCheck": False,
    },
}


@pytest.mark.ci_only
def test_tsc_passes_the_bindings_and_catches_the_three_mistakes_and_node_renders_as_python(tmp_path: Path) -> None:
    assert TSC.exists(), "run `npm ci` in runtime-js (.ci/run does)"
    node = shutil.which("node")
    assert node
    artifacts = _orders_build(tmp_path)
    app = tmp_path / "app"
    text, _ = typescript_module_of(artifacts, tmp_path / "build", app / "prompts.ts")
    write(tmp_path, "app/prompts.ts", text)
    write(tmp_path, "app/good.ts", GOOD_APP)
    write(tmp_path, "app/package.json", '{"type": "module"}\n')
    write(tmp_path, "app/tsconfig.json", json.dumps({**TSCONFIG, "files": ["good.ts", "prompts.ts"]}))
    (app / "node_modules").mkdir()
    (app / "node_modules" / "promptc-runtime").symlink_to(ROOT / "runtime-js", target_is_directory=True)
    good = subprocess.run([str(TSC), "-p", "."], cwd=app, capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stdout
    # the compiled app renders from BUILD_DIR, as the Python runtime renders the same calls
    ran = subprocess.run([node, "good.js"], cwd=app, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    python = runtime.load(tmp_path / "build")
    expected = [
        python.render("support/chat", product="Acme", question="Why?"),
        python.render("support/chat", product="Acme", question="Why?", limit=3),
        python.render("orders", order={"id": "A-1"}),
        python.render("orders", order={"id": "A-2"}),
        python.render("hello"),
    ]
    assert ran.stdout.strip() == json.dumps([r.as_shape("plain") for r in expected], separators=(",", ":"))
    # the generated module for this repository's prompts passes too
    write(tmp_path, "app/repo.ts", typescript_module(ROOT / "build", app / "repo.ts")[0])
    write(tmp_path, "app/bad.ts", BAD_APP)
    write(tmp_path, "app/tsconfig.json", json.dumps({**TSCONFIG, "files": ["bad.ts", "prompts.ts", "repo.ts"]}))
    bad = subprocess.run([str(TSC), "-p", ".", "--noEmit"], cwd=app, capture_output=True, text=True, timeout=300)
    errors = [line for line in bad.stdout.splitlines() if ": error TS" in line]
    assert bad.returncode != 0 and errors and all(line.startswith("bad.ts(") for line in errors), bad.stdout
    found = [(int(line.split("(")[1].split(",")[0]), line.split("error ")[1].split(":")[0]) for line in errors]
    assert found == [
        (4, "TS2345"),  # missing `question`
        (5, "TS2561"),  # `questoin`: did you mean `question`?
        (6, "TS2322"),  # a number for a string
        (7, "TS2741"),  # missing key `id`
        (8, "TS2353"),  # `knid` is not a key
        (9, "TS2322"),  # `sku` a number
        (9, "TS2322"),  # `kind` not one of the literals
    ], bad.stdout


def test_the_docs_excerpts_are_the_generated_code() -> None:
    doc = (ROOT / "docs" / "bindings.md").read_text(encoding="utf-8")
    blocks = [block.split("```", 1)[0] for block in doc.split("```ts\n")[1:]]
    excerpts = [block for block in blocks if "import " not in block]  # the others are apps using it
    text, _ = typescript_module(ROOT / "build")
    assert len(excerpts) == 3 and all(excerpt in text for excerpt in excerpts)
