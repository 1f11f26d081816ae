"""Bounded work and located diagnostics, round 3: inputs that used to cost quadratic time, kill the
build with a traceback, silently turn into `null`, or make the editor read a whole home folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from promptc.compile import compile_text
from promptc.driver import build, check
from promptc.facts.config import Config

from .conftest import promptc_executable, run_promptc, write

APPROX = Config(tokenizer="approx-bytes/4")


# ---------------------------------------------------------------------------------------------
# One `/// input:` line with many names


def test_each_input_name_is_located_where_it_stands() -> None:
    """Names are located by their offset in the list (one pass), not by searching the value for
    the first whole-word match (which pointed `str` at the type of `x`, and cost N² on N names)."""
    result = compile_text("/// input: x: str, str, y\nHi ${x}\n", config=APPROX)
    unused = {d.message.split("`")[1]: d.col for d in result.diagnostics if d.code == "W502"}
    assert unused == {"str": 20, "y": 25}


@pytest.mark.slow
def test_an_input_line_with_200000_names_compiles_in_bounded_time_and_memory(tmp_path: Path) -> None:
    """200,000 names on one line (a 2 MB file): before, 20,000 names took a minute and 5 GB. The
    benchmark (`bench/pathological.py`) measures it; here it only has to finish within a bound."""
    names = ", ".join(f"name{i}" for i in range(200_000))
    write(tmp_path, "prompts_src/a.prompt", f"/// input: {names}\nHi ${{name0}}\n")
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            limit + "import sys; from promptc.cli import main; sys.argv[0] = 'promptc'; main()",
            "build",
            "prompts_src",
            "-o",
            "build",
            "--tokenizer",
            "approx-bytes/4",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stdout.count("warning[W502]") == 199_999
    state = (tmp_path / ".promptc-cache/build.state.json").stat().st_size
    assert state < 60_000_000  # the 2 MB line is stored once, not once per warning (460 GB)


# ---------------------------------------------------------------------------------------------
# JSON that no artifact can carry


TOOL = '{{"name": "search", "description": {description}, "input_schema": {{"type": "object", "properties": {{"q": {q}}}}}}}'


@pytest.mark.parametrize(
    ("description", "q", "message", "token"),
    [
        ('"Search."', '{"type": "string", "maxLength": 123456789012345678901234567890}', "64-bit range", "1234"),
        ('"Se\\ud800arch."', '{"type": "string"}', "lone UTF-16 surrogate", '"Se\\ud800'),
        ('"Search."', '{"type": "number", "maximum": 1e400}', "overflows to infinity", "1e400"),
        ('"Search."', '{"type": "number", "enum": [1, -9223372036854775809]}', "64-bit range", "-9223"),
    ],
)
def test_tool_json_no_artifact_can_carry_is_a_located_e821(
    project: Path, monkeypatch, description: str, q: str, message: str, token: str
) -> None:
    monkeypatch.chdir(project)
    text = TOOL.format(description=description, q=q)
    write(project, "prompts_src/search.json", text)
    write(project, "prompts_src/a.prompt", "/// tools: search.json\nHi\n")
    for result in (check("prompts_src", "build", APPROX), build("prompts_src", "build", APPROX)):
        problems = [d for d in result.diagnostics if d.code == "E821"]
        assert len(problems) == 1 and message in problems[0].message, result.diagnostics
        assert problems[0].path == "prompts_src/search.json"
        assert text[problems[0].span.start :].startswith(token)
    assert not (project / "build").exists()
    done = run_promptc("build", "prompts_src", "-o", "build", "--tokenizer", "approx-bytes/4", cwd=project)
    assert done.returncode == 1 and "Traceback" not in done.stderr and "error[E821]" in done.stdout


def test_an_output_schema_with_a_lone_surrogate_key_is_e821(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/answer.json", '{"type": "object", "properties": {"\\udfff": {"type": "string"}}}')
    write(project, "prompts_src/a.prompt", "/// output: answer.json\nHi\n")
    assert [d.code for d in check("prompts_src", "build", APPROX).diagnostics] == ["E821"]


@pytest.mark.parametrize(
    ("param", "message"),
    [
        ('stop="a\\ud800"', "lone UTF-16 surrogate"),
        ('stop=["x", "\\udc00"]', "lone UTF-16 surrogate"),
        ("stop=[1e400]", "overflows to infinity"),
        ('meta={"n": 123456789012345678901234567890}', "64-bit range"),
    ],
)
def test_a_param_value_no_artifact_can_carry_is_e304(param: str, message: str) -> None:
    result = compile_text(f"/// param: {param}\nHi\n", config=APPROX)
    problems = [d for d in result.diagnostics if d.code == "E304"]
    assert len(problems) == 1 and message in problems[0].message and problems[0].line == 1
    assert result.artifact is None


def test_a_non_utf8_define_is_a_usage_error(project: Path) -> None:
    write(project, "prompts_src/a.prompt", "Hi ${x}\n")
    for command in ("build", "check"):
        done = subprocess.run(
            [os.fsencode(promptc_executable()), command.encode(), b"prompts_src", b"-D", b"x=caf\xe9"],
            cwd=project,
            capture_output=True,
        )
        assert done.returncode == 2 and b"Traceback" not in done.stderr, done.stderr
        assert b"the value of x is not valid UTF-8" in done.stderr


def test_the_language_server_reports_what_used_to_crash_the_compile(tmp_path: Path) -> None:
    from promptc.lsp.workspace import Project

    write(tmp_path, "prompts_src/t.json", TOOL.format(description='"S\\ud800"', q='{"type": "string"}'))
    write(tmp_path, "prompts_src/a.prompt", "/// tools: t.json\n/// param: stop=[1e400]\nHi\n")
    project = Project(tmp_path)
    assert [d.code for d in project.diagnostics_for("a.prompt")] == ["E304"]
    assert [d.code for d in project.diagnostics_for("t.json")] == ["E821"]


# ---------------------------------------------------------------------------------------------
# A loose file: only what it needs is read


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    write(home, "notes.prompt", "/// include: _sig\n/// tools: tool.json\nHi ${name}\n")
    write(home, "_sig.prompt", "Regards.\n")
    write(home, "tool.json", '{"name": "t", "description": "T.", "input_schema": {"type": "object"}}')
    with open(home / "dump.json", "wb") as handle:  # 600 MB, sparse: reading it would cost 600 MB
        handle.truncate(600 << 20)
    for i in range(50):
        write(home, f"projects/p{i}/x.prompt", "not needed\n")
        write(home, f"projects/p{i}/data.json", "[1, 2, 3]")
    return home


def _spy_reads(monkeypatch) -> list[str]:
    import promptc.driver.sources as sources
    import promptc.lsp.workspace as workspace
    import promptc.runtime.atomic as atomic

    reads: list[str] = []
    real = atomic.read_file

    def read_file(path, **kwargs):
        reads.append(os.path.basename(os.fspath(path)))
        return real(path, **kwargs)

    def no_walk(*args, **kwargs):
        raise AssertionError("the folder of a loose file was walked")

    monkeypatch.setattr(sources, "read_file", read_file)  # where a loose file is read
    monkeypatch.setattr(workspace, "read_tree", no_walk)
    return reads


def test_the_language_server_reads_only_what_a_loose_file_needs(tmp_path: Path, monkeypatch) -> None:
    from promptc.lsp.server import _LooseProject
    from promptc.lsp.workspace import Project

    home = _home(tmp_path)
    workspace = tmp_path / "work"
    write(workspace, "prompts_src/a.prompt", "Hi\n")
    reads = _spy_reads(monkeypatch)
    loose = _LooseProject(home / "notes.prompt", Project(workspace))
    loose.open("notes.prompt", (home / "notes.prompt").read_text())
    assert [d.code for d in loose.diagnostics_for("notes.prompt")] == []
    assert sorted(set(reads)) == ["_sig.prompt", "tool.json"]


def test_fmt_of_a_loose_file_reads_only_what_it_needs(tmp_path: Path, monkeypatch) -> None:
    home = _home(tmp_path)
    write(home, "notes.prompt", "///include:_sig\n/// tools: tool.json\nHi ${name}\n")
    reads = _spy_reads(monkeypatch)
    done = run_promptc("fmt", str(home / "notes.prompt"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (home / "notes.prompt").read_text().startswith("/// include: _sig\n")
    assert set(reads) <= {"notes.prompt", "_sig.prompt", "tool.json"}


def test_a_loose_file_too_large_to_read_is_a_diagnostic(tmp_path: Path) -> None:
    from promptc.driver.sources import LooseFiles

    home = _home(tmp_path)
    write(home, "big.prompt", "/// tools: dump.json\nHi\n")
    files = LooseFiles(home)
    assert "dump.json" in files and "projects/p1/x.prompt" in files and "../x.json" not in files
    with pytest.raises(OSError, match="more than"):
        files["dump.json"]
    done = run_promptc("fmt", str(home / "big.prompt"), cwd=tmp_path)
    assert "Traceback" not in done.stderr and "dump.json" in done.stdout
    assert json.loads(run_promptc("fmt", "--check", "--format", "json", str(home / "big.prompt"), cwd=tmp_path).stdout)


# ---------------------------------------------------------------------------------------------
# The first line keeps its indentation, whatever it starts with


@pytest.mark.parametrize("start", ["${y}", "{{ y }}", "\\${y}", "Hi ${y}"])
def test_an_indented_first_line_after_a_blank_line_keeps_its_indentation(start: str, tmp_path: Path) -> None:
    text = f"/// input: y\n----- system -----\nRules.\n----- user -----\n\n   {start} and more\n"
    result = compile_text(text, config=APPROX)
    assert result.artifact.messages[1].content == f"   {start} and more"
    # and fmt, which checks that the artifact does not change, formats such a file (it was E931)
    write(tmp_path, "prompts_src/a.prompt", "///input:y\n" + text.split("\n", 1)[1])
    done = run_promptc("fmt", "prompts_src", cwd=tmp_path)
    assert done.returncode == 0 and "E931" not in done.stdout, done.stdout
    assert (tmp_path / "prompts_src/a.prompt").read_text() == text


# ---------------------------------------------------------------------------------------------
# The cyclic garbage collector during a compile


def test_a_compile_runs_with_the_cyclic_collector_off_and_turns_it_back_on() -> None:
    """A compile keeps nearly everything it makes (items, ASTs, the document) until it ends, so a
    collection during it walks all of that and frees nothing; on one section of thousands of
    blocks that was a third of the compile. No collection runs inside it, and the collector is on
    again after it (also after a compile that failed)."""
    import gc

    inside: list[int] = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            inside.append(info["generation"])

    text = "".join(f"{{{{ user.name.upper() if flag else items[{i}] }}}} " for i in range(3000))
    assert gc.isenabled()
    gc.callbacks.append(count)
    try:
        result = compile_text(text, config=APPROX)
        during = len(inside)
        broken = compile_text("{{ (\n", config=APPROX)
    finally:
        gc.callbacks.remove(count)
    assert result.ok and not broken.ok
    assert gc.isenabled()
    # the collections that do run come after each compile, when the collector is on again: at most
    # a couple while `compiled` is made, never the dozens of the 3,000 blocks' allocations
    assert during <= 2, inside


# ---------------------------------------------------------------------------------------------
# Depth: a long placeholder path, a deep `--inputs` file (no recursion on the input's depth)


def test_a_placeholder_path_longer_than_the_limit_is_e203() -> None:
    """`${a.a.…}` with 2,000 segments was a RecursionError in the inference of its type (one
    nested object schema per segment); 200 segments a TypeError from the artifact writer."""
    from promptc.facts.language import MAX_PATH_SEGMENTS

    at_limit = compile_text("Hi ${" + ".".join(["a"] * MAX_PATH_SEGMENTS) + "}\n", config=APPROX)
    assert not at_limit.diagnostics and at_limit.ok
    for count in (MAX_PATH_SEGMENTS + 1, 2_000, 200_000):
        result = compile_text("Hi ${" + ".".join(["a"] * count) + "}\n", config=APPROX)
        (problem,) = result.diagnostics
        assert (problem.code, problem.line, problem.col) == ("E203", 1, 4)
        assert f"{count:,} segments" in problem.message and f"at most {MAX_PATH_SEGMENTS}" in problem.message


DEEP_PATH = ".".join(["a"] * 2_000)


@pytest.mark.parametrize(
    ("kind", "name", "text", "where"),
    [
        ("jinja", "t.j2", "Hi\n{{ " + DEEP_PATH + " }}\n", (2, 4)),
        ("prompty", "t.prompty", "---\nname: t\n---\nuser:\n{{ " + DEEP_PATH + " }}\n", (5, 4)),
        ("dotprompt", "t.prompt", "Hi\n{{" + DEEP_PATH + "}}\n", (2, 1)),
        # the depth a path reaches through nested loops counts too
        (
            "dotprompt",
            "t.prompt",
            "".join(f"{{{{#each {'this.' if i else ''}{DEEP_PATH[:59]}}}}}" for i in range(40))
            + "x"
            + "{{/each}}" * 40
            + "\n",
            (1, 1 + len("{{#each " + DEEP_PATH[:59] + "}}")),
        ),
    ],
)
def test_a_long_path_in_a_foreign_template_is_refused_where_it_stands(
    tmp_path: Path, kind: str, name: str, text: str, where: tuple[int, int]
) -> None:
    from promptc.tools.importers import audit, import_tree

    write(tmp_path, f"src/{name}", text)
    result = import_tree(kind, tmp_path / "src", tmp_path / "out", config=APPROX)
    report = audit(kind, tmp_path / "src", APPROX)
    for diagnostics in (result.diagnostics, report.diagnostics):
        (problem,) = diagnostics
        assert (problem.code, (problem.line, problem.col)) == ("E962", where), problem
        assert "more than 32" in problem.message
    assert result.refused == report.refused == 1


def test_a_deep_inputs_file_is_a_located_e970(tmp_path: Path) -> None:
    """`--inputs` 100,000 levels deep was a RecursionError in the standard library's JSON parser;
    the file is now read like a tool file (`syntax.jsonfile.read_json`: depth checked first)."""
    write(tmp_path, "src/greet.j2", "Hello {{ name }}.\n")
    write(tmp_path, "inputs.json", '{"greet": {"name": ' + "[" * 100_000 + "]" * 100_000 + "}}\n")
    done = run_promptc(
        "import", "jinja", "src", "-o", "out", "--check", "--inputs", "inputs.json", "--dry-run", cwd=tmp_path
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert "inputs.json:1:" in done.stdout and "error[E970]: JSON nests deeper than 32 levels" in done.stdout
    # and the inputs file is read like the sources: a named pipe is refused, never waited for
    os.unlink(tmp_path / "inputs.json")
    os.mkfifo(tmp_path / "inputs.json")
    done = run_promptc(
        "import",
        "jinja",
        "src",
        "-o",
        "out",
        "--check",
        "--inputs",
        "inputs.json",
        "--dry-run",
        cwd=tmp_path,
        real=True,
        timeout=90,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert "error[E970]: not a regular file" in done.stdout
