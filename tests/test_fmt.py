"""`promptc fmt` and `promptc.format_text`: the rules, the refusals and the command line
(docs/formatter.md). The safety rule itself is proven over generated sources in test_fmt_property."""

from __future__ import annotations

from pathlib import Path

import pytest

import promptc
from promptc.facts.config import Config
from promptc.tools.fmt import DIRECTIVE_ORDER, layout

from .conftest import ROOT, run_promptc, write

APPROX = Config(tokenizer="approx-bytes/4")
PYPROJECT = '[tool.promptc]\ntokenizer = "approx-bytes/4"\n'

MESSY = (
    "/// The description stays first.\n"
    "///   input :  question   /// what the caller passes  \n"
    "\n"
    "\n"
    "/// tag: a\n"
    "/// flow: support\n"
    "---------- SYSTEM ----------   \n"
    "\n"
    "\n"
    "You help with ${question}.   \n"
    "Two spaces here stay:  \n"
    "end of section.  \n"
    "\n"
    "\n"
    "  /// section: rules stable\n"
    "Be brief.\t/// inline note   \n"
    "\n"
    "\n"
    "\n"
)
CANONICAL = (
    "/// The description stays first.\n"
    "/// flow: support\n"
    "\n"
    "/// tag: a\n"
    "/// input: question /// what the caller passes\n"
    "----- system -----\n"
    "\n"
    "You help with ${question}.   \n"
    "Two spaces here stay:  \n"
    "end of section.\n"
    "\n"
    "/// section: rules stable\n"
    "Be brief. /// inline note\n"
)


def test_format_text_applies_every_rule() -> None:
    assert promptc.format_text(MESSY, config=APPROX) == CANONICAL
    assert promptc.format_text(CANONICAL, config=APPROX) == CANONICAL


def test_text_the_model_sees_is_never_touched() -> None:
    body = "Para one.  \n\n\n\nPara two.\n{{ x\n      }}   \n   indented\n"
    assert promptc.format_text(body + "End.\n", config=APPROX) == body + "End.\n"


def test_header_order_is_stable_and_documented() -> None:
    text = (
        "/// output: s.json\n/// owner: b\n/// param: t=1\n/// promptc: allow W502\n/// input: a, unused\n"
        "/// param: t=2\n/// flow: f\n/// owner: c\nHi ${a}\n"
    )
    partials = {"s.json": '{"type": "object"}\n'}
    formatted = promptc.format_text(text, config=APPROX, partials=partials)
    assert formatted == (
        "/// flow: f\n/// param: t=1\n/// param: t=2\n/// promptc: allow W502\n/// input: a, unused\n"
        "/// output: s.json\n/// owner: b\n/// owner: c\nHi ${a}\n"
    )
    docs = (ROOT / "docs" / "formatter.md").read_text(encoding="utf-8")
    assert ", ".join(f"`{key}`" for key in DIRECTIVE_ORDER) in docs


def test_line_map_follows_moved_and_removed_lines() -> None:
    result = layout("\n\n/// tag: t\n/// flow: f\nHi\n")
    assert result.text == "/// flow: f\n/// tag: t\nHi\n"
    assert result.line_map == (None, None, 2, 1, 3)


def test_a_partial_keeps_its_edges() -> None:
    """A partial's first and last lines splice into the includer's text: blank lines there are text."""
    partial = "\n\n  Shared line.  \n\n\n"
    host = {"host.prompt": "Before.\n/// include: _p\nAfter.\n"}
    assert promptc.format_text(partial, name="_p", partials=host, config=APPROX) == partial
    assert layout(partial).text == "  Shared line.\n"  # as a prompt, the same text is a message's edges


def test_refuses_what_does_not_compile() -> None:
    with pytest.raises(promptc.FormatError) as caught:
        promptc.format_text("///  flow: f\nHi ${}\n", config=APPROX)
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code == "E930" and (diagnostic.line, diagnostic.col) == (2, 4)
    assert "E202" in diagnostic.message or "${}" in diagnostic.message


def test_refuses_a_layout_that_would_change_the_artifact() -> None:
    """The safety net under the rules: a transform that trims text (here: every line's trailing
    whitespace) is refused with E931 naming the field, and the text comes back unchanged."""
    from promptc.tools.fmt import Layout

    def trims_text(text: str, partial: bool) -> Layout:
        lines = text.split("\n")
        return Layout("\n".join(line.rstrip() for line in lines), tuple(range(1, len(lines) + 1)))

    with pytest.raises(promptc.FormatError) as caught:
        promptc.format_text("Keep these:  \nspaces.\n", config=APPROX, formatter=trims_text)
    assert [d.code for d in caught.value.diagnostics] == ["E931"]
    assert "`messages[0].content` would change" in caught.value.diagnostics[0].message


def _project(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    write(tmp_path, "pyproject.toml", PYPROJECT)
    for rel, body in files.items():
        write(tmp_path, rel, body)
    return tmp_path


def test_cli_check_diff_and_write(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {
            "prompts_src/a.prompt": MESSY,
            "prompts_src/clean.prompt": CANONICAL,
            "prompts_src/_part.prompt": "///tag:  shared\nShared.\n",
            "prompts_src/b.prompt": "----- system -----\n/// include: _part\n-----  user  -----\n${q}\n",
        },
    )
    before = (root / "prompts_src/a.prompt").read_bytes()
    checked = run_promptc("fmt", "--check", cwd=root)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "would reformat prompts_src/a.prompt" in checked.stdout
    assert "would reformat prompts_src/_part.prompt" in checked.stdout
    assert "would reformat prompts_src/b.prompt" in checked.stdout
    assert "clean.prompt" not in checked.stdout.split("fmt:")[0]
    assert "fmt: 3 files would be reformatted, 1 already formatted" in checked.stdout
    diffed = run_promptc("fmt", "--diff", "prompts_src/a.prompt", cwd=root)
    assert diffed.returncode == 1
    assert "-///   input :  question" in diffed.stdout and "+/// input: question" in diffed.stdout
    assert (root / "prompts_src/a.prompt").read_bytes() == before  # --check and --diff write nothing
    built = run_promptc("check", cwd=root)
    assert built.returncode == 0, built.stdout
    written = run_promptc("fmt", cwd=root)
    assert written.returncode == 0, written.stdout + written.stderr
    assert (root / "prompts_src/a.prompt").read_text(encoding="utf-8") == CANONICAL
    assert not list((root / "prompts_src").glob(".*.fmt"))  # no temporary file left behind
    assert not (root / "build").exists()  # fmt compiles in memory only
    again = run_promptc("fmt", "--check", cwd=root)
    assert again.returncode == 0 and "0 files would be reformatted, 4 already formatted" in again.stdout


def test_cli_refuses_a_broken_file_and_formats_the_rest(tmp_path: Path) -> None:
    root = _project(
        tmp_path, {"prompts_src/bad.prompt": "///flow: f\n{% if x %}\n", "prompts_src/ok.prompt": "///flow:f\nHi\n"}
    )
    result = run_promptc("fmt", cwd=root)
    assert result.returncode == 1
    assert "prompts_src/bad.prompt:2:1: error[E930]: not formatted: it does not compile" in result.stdout
    assert (root / "prompts_src/bad.prompt").read_text() == "///flow: f\n{% if x %}\n"
    assert (root / "prompts_src/ok.prompt").read_text() == "/// flow: f\nHi\n"
    assert "Traceback" not in result.stderr


def test_cli_json_and_paths(tmp_path: Path) -> None:
    import json

    root = _project(tmp_path, {"prompts_src/a.prompt": "///flow:f\nHi\n", "elsewhere/x.prompt": "Hi\n\n\n"})
    result = run_promptc("fmt", "--check", "--format", "json", "prompts_src/a.prompt", "elsewhere", "nope", cwd=root)
    data = json.loads(result.stdout)
    assert result.returncode == 1
    assert data["command"] == "fmt" and data["check"] is True
    assert data["changed"] == ["prompts_src/a.prompt", "elsewhere/x.prompt"]
    assert [d["code"] for d in data["diagnostics"]] == ["E934"]


def test_cli_line_endings_and_bom_are_normalised(tmp_path: Path) -> None:
    root = _project(tmp_path, {"prompts_src/a.prompt": b"\xef\xbb\xbf----- system -----\r\nHi\r\n"})
    assert run_promptc("fmt", cwd=root).returncode == 0
    assert (root / "prompts_src/a.prompt").read_bytes() == b"----- system -----\nHi\n"


def test_pre_commit_hooks_name_real_commands() -> None:
    """The hooks file is what pre-commit's own manifest loader accepts, and each hook runs a real
    `promptc` command with options that command has."""
    import shlex

    from pre_commit.clientlib import load_manifest

    from promptc.cli import main

    hooks = load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))
    by_id = {hook["id"]: hook for hook in hooks}
    assert set(by_id) == {"promptc-check", "promptc-fmt"}
    for hook in hooks:
        argv = shlex.split(hook["entry"]) + list(hook["args"])
        assert argv[0] == "promptc" and hook["language"] == "python" and hook["files"] == r"\.prompt$"
        command = main.get_command(None, argv[1])
        assert command is not None, argv[1]
        options = {opt for param in command.params for opt in param.opts}
        assert all(arg in options for arg in argv[2:] if arg.startswith("-")), hook["id"]
    assert shlex.split(by_id["promptc-fmt"]["entry"]) == ["promptc", "fmt", "--check"]
    assert by_id["promptc-check"]["pass_filenames"] is False  # check takes one folder, not files


def test_sorting_the_header_keeps_the_leading_comment() -> None:
    """A comment between directives travels with the directive below it when fmt sorts the header;
    the leading comment (the bindings' docstring, the artifact's `doc`) is what stands above the
    first directive, so formatting never changes it (found by the CI profile of the fmt property)."""
    text = "/// What it does.\n///flow:support\n/// a note\n///owner:team-a\n  /// an indented note  \n///input:x, y\n"
    formatted = promptc.format_text(text, config=Config(tokenizer="approx-bytes/4"))
    assert formatted.index("/// input:") < formatted.index("/// a note")  # the header was sorted
    for source in (text, formatted):
        artifact = promptc.compile_text(source, config=Config(tokenizer="approx-bytes/4")).artifact
        assert artifact is not None and artifact.doc == "What it does."
