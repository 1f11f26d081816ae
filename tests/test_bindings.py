"""`promptc gen python`: a typed function per prompt, checked by mypy (strict) for real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from promptc.bindings import function_name, python_module, python_type
from promptc.driver import build
from promptc.inputtypes import parse_type

from .conftest import ROOT, run_promptc, write

PROMPTS = {
    "support/chat.prompt": "/// input: product: str, question: str, limit: int | None\n"
    "----- system -----\nYou help with ${product}.\n----- user -----\n${question} ${limit}\n",
    "tags.prompt": "/// input: tags: list[str], scores: dict[str, float]\n{{ ', '.join(tags) }} {{ sorted(scores) }}\n",
    "free.prompt": "Anything: ${thing}\n",
}

GOOD_APP = """
from bindings import free, support_chat, tags

request = support_chat(product="Acme", question="Why?")
request = support_chat(product="Acme", question="Why?", limit=3)
request = tags(tags=["a"], scores={"x": 1.0})
request = free(thing=object())
print(request.messages)
"""
BAD_APP = """
from bindings import support_chat

support_chat(product="Acme")                      # missing question
support_chat(product="Acme", questoin="Why?")     # misspelt
support_chat(product="Acme", question=3)          # wrong type
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
    assert "BUILD_DIR = Path(__file__).resolve().parent / '../build'" in module
    write(tmp_path, "app/good.py", GOOD_APP)
    write(tmp_path, "app/bad.py", BAD_APP)
    # the editable install imports through a finder hook mypy cannot follow: show it the package
    # under its import name, as a wheel lays it out (promptc's own modules are not under test here)
    (tmp_path / "stubs").mkdir()
    (tmp_path / "stubs" / "promptc").symlink_to(ROOT / "compiler", target_is_directory=True)
    env = {**os.environ, "MYPYPATH": str(tmp_path / "stubs")}
    args = [mypy, "--strict", "--no-incremental", "--follow-imports=silent", "--cache-dir", str(tmp_path / ".mypy")]
    # one mypy run over all three files (mypy's start-up is most of its time): errors in bad.py only
    checked = subprocess.run(
        [*args, "good.py", "bindings.py", "bad.py"], cwd=tmp_path / "app", env=env, capture_output=True, text=True
    )
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert checked.returncode == 1 and errors and all(line.startswith("bad.py:") for line in errors), checked.stdout
    assert len(errors) == 3, checked.stdout
    bad = checked
    assert 'Missing named argument "question"' in bad.stdout
    assert 'Unexpected keyword argument "questoin"' in bad.stdout
    assert 'incompatible type "int"; expected "str"' in bad.stdout
    # and the generated functions render, from the build folder BUILD_DIR names
    run = subprocess.run([sys.executable, "-c", "import good"], cwd=tmp_path / "app", capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_the_docs_excerpt_is_the_generated_code() -> None:
    doc = (ROOT / "docs" / "bindings.md").read_text(encoding="utf-8")
    excerpt = doc.split("```text\n", 1)[1].split("```", 1)[0]
    text, diagnostics = python_module(ROOT / "build")
    assert not diagnostics and excerpt in text


def test_build_writes_the_configured_bindings_and_check_locked_notices_when_stale(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.promptc]\npython_bindings = 'app/prompts.py'\n")
    write(tmp_path, "prompts_src/hello.prompt", "/// input: name: str\nHello ${name}.\n")
    assert run_promptc("build", cwd=tmp_path / "prompts_src").returncode == 0  # from a subfolder, too
    module = (tmp_path / "app" / "prompts.py").read_text()
    assert "def hello(*, name: str) -> Rendered:" in module
    assert "BUILD_DIR = Path(__file__).resolve().parent / '../build'" in module
    assert run_promptc("check", "--locked", cwd=tmp_path).returncode == 0
    (tmp_path / "app" / "prompts.py").write_text(module.replace("name: str", "name: int"))
    stale = run_promptc("check", "--locked", cwd=tmp_path)
    assert stale.returncode == 1 and "`app/prompts.py` (python_bindings) is stale" in stale.stdout
    assert run_promptc("build", cwd=tmp_path).returncode == 0
    assert (tmp_path / "app" / "prompts.py").read_text() == module
