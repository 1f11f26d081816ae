"""Bounded work and located diagnostics, rounds 3 and 4: inputs that used to cost quadratic (or
exponential) time, kill the build with a traceback, silently turn into `null`, or make the editor
read a whole home folder."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptc.compile import compile_text
from promptc.driver import build, check
from promptc.facts.config import Config

from .conftest import examples, promptc_executable, run_promptc, write

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


# Round 4: linear on every input family (issue 33). Each input below is large enough that the
# quadratic or exponential work it replaced would run for hours; the command runs in a process of
# its own with a generous bound (minutes), so a regression fails the test instead of hanging it.
# `bench/pathological.py` measures each family at N and 2N.

#: patterns the structural check flags that cannot read a run more than a bounded number of times
ALLOWED_PATTERNS = {
    "promptc.lsp.server._LSP_LINE": "a line, searched for at each line start: the second branch takes a last line "
    "with no newline, so a match never fails after its run",
    "promptc.tools.importers.dotprompt: re.*('(.*?), *(.*)$')": "`(.*)$` under re.S reads to the end: the match "
    "never fails after the spaces",
    "promptc.tools.importers.prompty._FRONT": "`(.+)$` under re.S reads to the end: after the closing fence the "
    "match fails only at the end of the text, once",
}


def test_no_regular_expression_reads_a_run_again_and_again() -> None:
    """Every pattern promptc compiles (module level, literal, and the grammar's terminals) is free
    of the shapes that read one run of characters a quadratic or exponential number of times
    (tests/regexlint.py): TEXT's lookahead at every blank was one, a lazy value before `[ \\t]*$`,
    a repeated `\\S+` that can split a list, a search that restarts inside a run of blanks."""
    import promptc
    from promptc.syntax.parse import parser

    from .regexlint import patterns, problems

    found = {}
    for where, pattern, searched in patterns(promptc):
        flagged = problems(pattern.pattern, pattern.flags, searched=searched)
        if flagged and where not in ALLOWED_PATTERNS:
            found[where] = flagged
    for terminal in parser().terminals:  # the lexer's union is run so that its matches follow each other
        flagged = problems(terminal.pattern.to_regexp())
        if flagged:
            found[f"grammar/prompt.lark {terminal.name}"] = flagged
    assert found == {}


def test_the_structural_check_flags_the_shapes_issue_33_found() -> None:
    """The check is not vacuous: each pattern that was quadratic or exponential before is flagged."""
    from .regexlint import problems

    before = {
        r"(?:[^\\$\{ \t\n]++|[ \t](?![ \t]*\/\/\/))++": False,  # TEXT
        r"[ \t]+///.*\Z": True,  # INLINE_COMMENT, searched
        r"(?:^|[ \t])///[ \t]*promptc[ \t]*:[ \t]*allow[ \t]+([A-Za-z0-9, \t]+?)[ \t]*$": True,
        r"[ \t]*///[ \t]*([a-z][a-z_]*)[ \t]+(\S.*?)[ \t]*\n?\Z": False,
        r"\S+\.json(?:[ \t]*,[ \t]*\S+\.json)*": False,
        r"\(\s*max_tokens\s*=\s*([^)]*?)\s*\)\s*\Z": False,
        r"^\s*#?\s*(system|user)\s*:\s*$": False,
        r"\\*(\$\{|\{\{)": True,
    }
    assert [p for p, searched in before.items() if not problems(p, searched=searched)] == []


def _bounded(code: str, *args: str, stdin: str | None = None, timeout: float = 240) -> str:
    """Run `code` with `args` (and `stdin`) in a fresh interpreter, within `timeout` seconds (a
    bound, not a measure: the work takes well under a second); what it printed."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    return done.stdout


#: one prompt with every kind of blank run: in text (spaces and tabs), before an inline comment,
#: a line of blanks, and in a directive whose value has an inline comment; 1.2 MB
_RUN = " " * 200_000
_MIXED = " \t" * 200_000
_BLANKS_PROMPT = (
    f"/// description: a{_RUN}b /// c\n/// input: name\n"
    f"Hi ${{name}}{_MIXED}there{_RUN}/// gone\n{_RUN}\nEnd // not a comment{_RUN}x\n"
)


def test_blank_runs_of_a_megabyte_build_check_and_fmt(tmp_path: Path) -> None:
    """TEXT's lookahead read the rest of a run of blanks at each blank (80,000 blanks took 14.5 s
    to lex, so one run of 400,000 would take six minutes; this file holds five runs): build,
    check and fmt lex it in well under a second, into the same text."""
    write(tmp_path, "prompts_src/a.prompt", _BLANKS_PROMPT)
    approx = ("--tokenizer", "approx-bytes/4")
    for args in (
        ("build", "prompts_src", "-o", "build", *approx),
        ("check", "prompts_src", *approx),
        ("fmt",),
        ("fmt", "--check"),
    ):
        done = run_promptc(*args, cwd=tmp_path, real=True, timeout=240)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stdout[-2000:], done.stderr[-2000:])
    artifact = json.loads((tmp_path / "build/a.json").read_text())
    assert artifact["metadata"]["description"] == f"a{_RUN}b"
    assert artifact["messages"][0]["content"] == f"Hi ${{name}}{_MIXED}there\n{_RUN}\nEnd // not a comment{_RUN}x"


def test_the_language_server_answers_at_once_on_a_long_blank_run(tmp_path: Path) -> None:
    """A 150 KB run of blanks blocked every request of the language server for 32 s: its
    diagnostics come from the same lexer."""
    write(tmp_path, "prompts_src/a.prompt", _BLANKS_PROMPT)
    out = _bounded(
        "import pathlib, sys\n"
        "from promptc.lsp.workspace import Project\n"
        "print(sorted(d.severity for d in Project(pathlib.Path(sys.argv[1])).diagnostics_for('a.prompt')))\n",
        str(tmp_path),
    )
    assert out.strip() == "['warning']"  # W710, as the build says: the same compile, no error


#: the patterns issue 33 rewrote, as they were: (old pattern, old flags, the new one, how it is used)
_REWRITTEN = {
    "INLINE_COMMENT": (r"[ \t]+///.*\Z", re.S, "promptc.facts.language:INLINE_COMMENT", "sub"),
    "ALLOW_COMMENT": (
        r"(?:^|[ \t])///[ \t]*promptc[ \t]*:[ \t]*allow[ \t]+([A-Za-z0-9, \t]+?)[ \t]*$",
        0,
        "promptc.facts.language:ALLOW_COMMENT",
        "names",
    ),
    "_NO_COLON": (
        r"[ \t]*///[ \t]*([a-z][a-z_]*)[ \t]+(\S.*?)[ \t]*\n?\Z",
        re.S,
        "promptc.passes.comments:_NO_COLON",
        "match",
    ),
    "_MAX_TOKENS": (r"\(\s*max_tokens\s*=\s*([^)]*?)\s*\)\s*\Z", 0, "promptc.passes.directives:_MAX_TOKENS", "match"),
    "_LIMIT": (
        r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|≤|<|=|>=|>)?\s*(.*?)\s*\Z",
        re.S,
        "promptc.passes.directives:_LIMIT",
        "match",
    ),
    "PROMPTY_ROLE": (
        r"^\s*#?\s*(system|user|assistant|developer)(\[[^\]]*\])?\s*:\s*$",
        re.I,
        "promptc.tools.importers.jinja:PROMPTY_ROLE",
        "match",
    ),
    "_OPENERS": (r"\\*(\$\{|\{\{|\{#|\{%|///)", 0, "promptc.tools.importers.ir:_OPENERS", "sub"),
}
_LINE_PIECES = [
    " ",
    "\t",
    "   ",
    "\n",
    "///",
    "//",
    "/",
    "promptc",
    "allow",
    ":",
    ",",
    "W710",
    "e1",
    "-",
    "max_tokens",
    "=",
    "(",
    ")",
    "<=",
    "≤",
    "total",
    "8000",
    "#",
    "user",
    "System",
    "[x]",
    "\\",
    "${",
    "{{",
    "{%",
    "a",
    "é",
    "\u00a0",
]


def _use(pattern: re.Pattern[str], how: str, text: str) -> object:
    if how == "sub":
        return pattern.sub(lambda m: f"<{m.group()}>", text)
    if how == "names":  # what `suppress.allowed_lines` reads of a match
        match = pattern.search(text)
        return set() if match is None else {n.strip().upper() for n in match.group(1).split(",") if n.strip()}
    match = pattern.match(text)
    return None if match is None else (match.groups(), match.regs)


@pytest.mark.parametrize("name", sorted(_REWRITTEN))
@settings(max_examples=examples(300), deadline=None)
@given(text=st.lists(st.sampled_from(_LINE_PIECES), max_size=14).map("".join))
def test_a_pattern_rewritten_to_read_runs_once_reads_what_it_read(name: str, text: str) -> None:
    """Each pattern made linear (possessive runs, a lookbehind, a greedy repeat that backs off once
    instead of a lazy one) gives the same matches, groups and replacements as before."""
    old, flags, where, how = _REWRITTEN[name]
    module, attribute = where.split(":")
    new = getattr(importlib.import_module(module), attribute)
    for line in (text, text.split("\n")[0]):
        assert _use(new, how, line) == _use(re.compile(old, flags), how, line), line


def test_a_list_of_json_names_with_a_stray_character_is_read_once() -> None:
    """`/// tools a.json, …` without its colon: the shape of the value had `\\S+` inside a repeated
    group, and 40 names with a character after them took 2^40 steps to be found not to match."""
    value = ",".join(["a.json"] * 200_000) + "!"
    out = _bounded(
        "import sys\n"
        "from promptc.passes.comments import _VALUE_SHAPES, _near_miss\n"
        "value = sys.stdin.read()\n"
        "shape = _VALUE_SHAPES['tools']\n"
        "print(shape.fullmatch(value), bool(shape.fullmatch(value[:-1])), _near_miss(f'/// tools {value[:-1]}')[2])\n",
        stdin=value,
    )
    assert out.strip() == "None True (9, 10, ': ')"


def test_escaped_quotes_in_an_unterminated_json_string_are_read_once() -> None:
    """A tool or output schema file with an unterminated string full of escaped quotes: the
    nesting pre-check restarted its scan at each `\\"` and read the rest of the file again
    (40,000 took a minute); the file is now read once and refused as JSON."""
    text = '{"name": "t", "description": "' + '\\"' * 400_000
    out = _bounded(
        "import sys\n"
        "from promptc.syntax.jsonfile import read_json, too_deep\n"
        "text = sys.stdin.read()\n"
        "print(too_deep(text), [d.code for d in read_json('t.json', text.encode())[2]])\n",
        stdin=text,
    )
    assert out.strip() == "None ['E821']"


@settings(max_examples=examples(300), deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(alphabet='"\\{}[]a ', max_size=6),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='"\\[a', max_size=3), inner, max_size=3)
        ),
        max_leaves=12,
    )
)
def test_the_nesting_pre_check_reads_json_as_before(value: object) -> None:
    """On JSON text (strings closed), the nesting depth is found where it was: brackets inside
    strings, escaped quotes included, are not structure."""
    from promptc.syntax.jsonfile import too_deep

    old = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]]', re.S)

    def old_too_deep(text: str, limit: int) -> int | None:
        depth = 0
        for match in old.finditer(text):
            if match.group() in "{[":
                depth += 1
                if depth > limit:
                    return match.start()
            elif match.group() in "}]":
                depth -= 1
        return None

    text = json.dumps(value)
    for limit in (0, 1, 2, 32):
        assert too_deep(text, limit) == old_too_deep(text, limit)


def test_backslashes_before_no_opener_are_read_once_by_the_importers() -> None:
    """The importers escape openers in literal text; a run of backslashes that no opener follows
    was searched again from each of its backslashes (40,000 took 30 s)."""
    text = "a" + "\\" * 1_000_000 + "b ${x"
    out = _bounded(
        "import sys\n"
        "from promptc.tools.importers.ir import escape\n"
        "text = sys.stdin.read()\n"
        "print(escape(text) == text.replace('${', '\\\\${'))\n",
        stdin=text,
    )
    assert out.strip() == "True"


# ---------------------------------------------------------------------------------------------
# N distinct names: every lookup by hash (issue 33: `in` on tuples and lists, 40,000 names 52 s)


def test_twenty_thousand_misspelt_inputs_are_each_reported_once() -> None:
    """20,000 names used and 20,000 others declared: each used name is E501 and each declared one
    W502. Each E501 scanned every section, the declared names and the whole `/// input:` line, and
    compared itself with every declared name (2,000 of each took 43 s): past a budget of
    comparisons a hint has no "did you mean", and it lists 20 declared names, not 20,000."""
    out = _bounded(
        "from collections import Counter\n"
        "from promptc import compile_text\n"
        "from promptc.facts.config import Config\n"
        "n = 20_000\n"
        "text = '/// input: ' + ', '.join(f'q{i}' for i in range(n)) + '\\n' + ' '.join(f'${{p{i}}}' for i in range(n))\n"
        "result = compile_text(text + '\\n', config=Config(tokenizer='approx-bytes/4'))\n"
        "found = Counter(d.code for d in result.diagnostics)\n"
        "hints = [d.hint for d in result.diagnostics if d.code == 'E501']\n"
        "print(found['E501'], found['W502'], max(map(len, hints)) < 300, hints[0])\n"
    )
    assert out.split(" ", 3)[:3] == ["20000", "20000", "True"]
    assert "`q0`" in out.split(" ", 3)[3]  # the first names still get their suggestion: `p0` → `q0`


def test_an_input_with_two_hundred_thousand_attributes_is_inferred_once_each() -> None:
    """`${a.x0} … ${a.x199999}`: the inferred object requires each attribute once (a list was
    searched for each, 20,000 took 7 s)."""
    out = _bounded(
        "from promptc import compile_text\n"
        "from promptc.facts.config import Config\n"
        "n = 200_000\n"
        "result = compile_text(' '.join(f'${{a.x{i}}}' for i in range(n)) + ' ${a.x0}\\n',"
        " config=Config(tokenizer='approx-bytes/4'))\n"
        "schema = result.artifact.input_schema['properties']['a']\n"
        "print(result.ok, len(schema['required']), schema['required'][:2])\n"
    )
    assert out.strip() == "True 200000 ['x0', 'x1']"


def test_the_inputs_and_tags_of_many_partials_are_merged_by_hash(monkeypatch) -> None:
    """A prompt including N partials, each with its own input and tag, declares them all in
    first-seen order; merging compared each new name with every merged one (N² string
    comparisons: counted here, so the test does not depend on time)."""
    from promptc.passes import includes

    class Counted(str):
        compared = 0

        def __eq__(self, other: object) -> bool:
            Counted.compared += 1
            return str.__eq__(self, other)

        __hash__ = str.__hash__

    real = includes._splice

    def splice(ctx, key, chain):
        found = real(ctx, key, chain)
        found.inputs = tuple(map(Counted, found.inputs))
        found.tags = tuple(map(Counted, found.tags))
        return found

    monkeypatch.setattr(includes, "_splice", splice)
    n = 2_000
    partials = {f"_p{i}.prompt": f"/// input: p{i}\n/// tag: t{i}\nLine ${{p{i}}}\n" for i in range(n)}
    text = "/// input: p0\n" + "".join(f"/// include: _p{i}\n" for i in range(n))
    result = compile_text(text, config=APPROX, partials=partials)
    assert result.ok, [d.message for d in result.diagnostics if d.severity == "error"][:3]
    assert set(result.artifact.inputs) == {f"p{i}" for i in range(n)}
    assert list(result.artifact.tags) == [f"t{i}" for i in range(n)]
    assert Counted.compared < 10 * n  # by hash: about one comparison per name, not n² / 2


def test_the_kept_block_trees_forget_the_oldest_in_one_step_each() -> None:
    """The process keeps the trees of 4,096 blocks; a section of 40,000 distinct blocks evicted the
    oldest 36,000 by `next(iter(dict))`, which steps over every entry deleted before it (the
    square of the evictions: 0.4 s there, hours for 500,000). Forgetting the oldest is one step."""
    out = _bounded(
        "from types import SimpleNamespace as N\n"
        "from promptc.analysis import inference\n"
        "inference._TREES_MAX = 10\n"
        "trees = lambda: inference._Trees([], None, [], None, True)\n"
        "inference._keep(N(key=('expr', '', f'x{i}'), shared=False, trees=trees()) for i in range(500_000))\n"
        "print(list(inference._TREES)[0][2], len(inference._TREES), inference._kept_nodes)\n",
        timeout=60,  # about 4 s; the steps over deleted entries took 3 minutes here
    )
    assert out.split() == ["x499990", "10", "10"]


# ---------------------------------------------------------------------------------------------
# `promptc import`: a long Jinja filter chain, Handlebars partials fanning out


def test_a_jinja_filter_chain_of_half_a_million_is_converted_once_and_refused(tmp_path: Path) -> None:
    """Each filter rebuilt the whole code of the chain (100,000 filters took 27 s before the chain
    was refused; 500,000 would take ten minutes): the chain is built once, and Python's own limit
    on nesting refuses it as before."""
    write(tmp_path, "src/a.j2", "Hi {{ x" + "|upper" * 500_000 + " }}\n")
    done = run_promptc("import", "jinja", "src", "-o", "out", cwd=tmp_path, real=True, timeout=240)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "src/a.j2:1:1: error[E971]" in done.stdout and "E210" in done.stdout, done.stdout[:2000]


def test_a_filter_chain_converts_to_the_same_code_as_filter_by_filter() -> None:
    """The pieces each filter and test puts around the value, joined once, are the code nesting
    them one by one gave."""
    from promptc.tools.importers import convert

    source = (
        b'{{ (x|trim|replace("a", "b")|upper|safe) is not none }} {{ y|join(", ")|format(1)|string is string }} '
        b"{{ -z|abs|string|length }} {{ not w|lower is none }}\n"
    )
    text = convert("jinja", {"a.j2": source})[0].text
    assert text.endswith(
        '{{ ((str(str(str(x).strip()).replace("a", "b")).upper()) is not None) }} '
        '{{ (isinstance(str((str(", ".join(map(str, y))) % (1,))), str)) }} '
        "{{ (-len(str(abs(z)))) }} {{ (not (str(w).lower() is None)) }}\n"
    )


def _fan_out(root: Path, depth: int) -> None:
    """Partials each printing the next one twice, inline: the prompt would print 2^depth `x`."""
    for i in range(depth):
        write(root, f"src/_p{i}.prompt", f"{{{{> p{i + 1}}}}}{{{{> p{i + 1}}}}}")
    write(root, f"src/_p{depth}.prompt", "x")
    write(root, "src/a.prompt", "---\n---\n{{> p0}} end\n")


def test_handlebars_partials_fanning_out_forty_levels_are_refused_before_they_expand(tmp_path: Path) -> None:
    """Forty levels of a partial printed twice is 2^40 copies: the import expanded them until the
    machine gave out (15 levels took 13 s). It counts what each partial expands to first, each
    (partial, depth) once, and refuses every file that would pass the build's own bound (E806's
    16 MiB or 200,000 pieces) with E974 at the `{{> name}}` that passes it."""
    _fan_out(tmp_path, 40)
    done = run_promptc("import", "dotprompt", "src", "-o", "out", cwd=tmp_path, real=True, timeout=240)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    refused = {line.split(":")[0] for line in done.stdout.splitlines() if "error[E974]" in line}
    # a partial that prints 2^k leaves counts 3 × 2^k - 2 tags (leaves and partials): from _p24 (2^16
    # leaves, 196,606 tags) on they fit; _p0 to _p23 and the prompt do not
    assert refused == {"src/a.prompt", *(f"src/_p{i}.prompt" for i in range(24))}, done.stdout[-3000:]
    assert "src/a.prompt:3:1: error[E974]: `{{> p0}}` would make this file expand" in done.stdout
    assert not (tmp_path / "out/a.prompt").exists() and (tmp_path / "out/_p24.prompt").exists()


def test_partials_fanning_out_under_the_bound_are_inlined_as_before(tmp_path: Path) -> None:
    """Ten levels (1,024 copies) stay far under the bound: the prompt holds every copy, and a
    cycle among inlined partials is still E964."""
    _fan_out(tmp_path, 10)
    write(tmp_path, "src/loop.prompt", "Hi {{> ping}}\n")
    write(tmp_path, "src/_ping.prompt", "{{> pong}}")
    write(tmp_path, "src/_pong.prompt", "{{> ping}}")
    done = run_promptc("import", "dotprompt", "src", "-o", "out", cwd=tmp_path)
    assert "src/loop.prompt:1:4: error[E964]: the partials include each other: ping > pong > ping" in done.stdout
    assert (tmp_path / "out/a.prompt").read_text().endswith("\n" + "x" * 1024 + " end\n")


@pytest.mark.parametrize(
    "block",
    ["{{{{ (v{i} := 1) }}}}\n", "{{# v{i} = {i} #}}\n", "{{% for v{i} in [1] %}}{{{{ v{i} }}}}{{% endfor %}}\n"],
)
def test_names_bound_block_after_block_are_not_copied_once_per_block(monkeypatch, block: str) -> None:
    """N blocks that each bind a new name: the flow state took each name in a fresh copy of every
    name before it (10,000 walrus blocks 1.6 s, 20,000 5.6 s). The names copied into states over
    the whole compile stay within a few times N."""
    from promptc.analysis import inference

    copied = 0
    original = inference._State.__new__

    def counting(cls, names, live):
        nonlocal copied
        copied += len(names)
        return original(cls, names, live)

    monkeypatch.setattr(inference._State, "__new__", counting)
    count = 2_000
    text = "----- user -----\n" + "".join(block.format(i=i) for i in range(count))
    result = compile_text(text, config=APPROX)
    assert result.ok, [d.message for d in result.diagnostics]
    assert copied < 20 * count, copied
