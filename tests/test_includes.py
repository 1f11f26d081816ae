"""Partials and includes on a real file tree (SPEC §7): resolution, escapes, cycles, the include graph."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from promptc.driver import build, check
from promptc.facts.config import Config

from .conftest import write

APPROX = Config(tokenizer="approx-bytes/4")


def _codes(result) -> list[tuple[str, str]]:
    return [(d.path, d.code) for d in result.diagnostics]


def test_partial_text_inputs_and_tags_join_the_includer(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/shared/_identity.prompt", "/// tag: shared\nYou are ${assistant_name}. /// c\n")
    write(
        project,
        "prompts_src/agents/reviewer.prompt",
        "/// tag: review\n/// include: ../shared/_identity\nReview ${diff}.\n",
    )
    result = build("prompts_src", "build", APPROX)
    assert result.ok, result.diagnostics
    artifact = json.loads((project / "build/agents/reviewer.json").read_text())
    assert artifact["messages"][0]["content"] == "You are ${assistant_name}.\nReview ${diff}."
    assert artifact["inputs"] == ["assistant_name", "diff"]
    assert artifact["tags"] == ["review", "shared"]
    assert artifact["includes"] == ["shared/_identity.prompt"]
    manifest = json.loads((project / "build/manifest.json").read_text())
    assert manifest["artifacts"]["agents/reviewer"]["includes"] == ["shared/_identity.prompt"]
    assert not (project / "build/shared").exists()  # partials emit no artifact


def test_changing_a_partial_rebuilds_its_includers_only(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/_p.prompt", "/// include: _q\n")
    write(project, "prompts_src/_q.prompt", "Deep v1.\n")
    write(project, "prompts_src/a.prompt", "/// include: _p\nA\n")
    write(project, "prompts_src/b.prompt", "B\n")
    build("prompts_src", "build", APPROX)
    write(project, "prompts_src/_q.prompt", "Deep v2.\n")  # a partial of a partial
    result = build("prompts_src", "build", APPROX)
    assert {p.name for p in result.prompts if not p.reused} == {"a"}
    assert "Deep v2." in json.loads((project / "build/a.json").read_text())["messages"][0]["content"]


def test_symlinked_partial_outside_the_source_folder_is_refused(project: Path, monkeypatch, tmp_path_factory) -> None:
    monkeypatch.chdir(project)
    outside = tmp_path_factory.mktemp("elsewhere") / "_secret.prompt"
    outside.write_text("secret\n")
    os.symlink(outside, project / "prompts_src/_secret.prompt")
    write(project, "prompts_src/a.prompt", "/// include: _secret\nA\n")
    result = check("prompts_src", "build", APPROX)
    assert ("prompts_src/a.prompt", "E802") in _codes(result)
    assert "points outside the source folder" in result.diagnostics[0].message


def test_symlink_inside_the_source_folder_is_fine(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/real/_tone.prompt", "Be kind.\n")
    os.symlink(project / "prompts_src/real/_tone.prompt", project / "prompts_src/_tone.prompt")
    write(project, "prompts_src/a.prompt", "/// include: _tone\nA\n")
    assert check("prompts_src", "build", APPROX).ok


def test_symlinked_prompt_outside_is_not_compiled(project: Path, monkeypatch, tmp_path_factory) -> None:
    monkeypatch.chdir(project)
    outside = tmp_path_factory.mktemp("elsewhere") / "x.prompt"
    outside.write_text("outside\n")
    os.symlink(outside, project / "prompts_src/x.prompt")
    assert _codes(check("prompts_src", "build", APPROX)) == [("prompts_src/x.prompt", "E802")]


def test_cycle_shows_the_chain(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/_a.prompt", "/// include: _b\n")
    write(project, "prompts_src/_b.prompt", "/// include: _a\n")
    write(project, "prompts_src/main.prompt", "/// include: _a\nText\n")
    result = check("prompts_src", "build", APPROX)
    (cycle,) = [d for d in result.diagnostics if d.code == "E803"]
    assert cycle.message == "include cycle: main.prompt → _a.prompt → _b.prompt → _a.prompt"
    assert cycle.path == "prompts_src/_b.prompt"


def test_std_partials_are_built_in(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(
        project, "prompts_src/a.prompt", "----- system -----\nBe brief.\n/// include: std/env\n----- user -----\nHi\n"
    )
    result = build("prompts_src", "build", APPROX)
    assert result.ok, result.diagnostics
    artifact = json.loads((project / "build/a.json").read_text())
    assert artifact["includes"] == []  # built-ins are part of the compiler, not the include graph
    assert artifact["inputs"], "std/env declares runtime inputs"


def test_text_after_a_partial_with_sections_goes_back_to_the_includers_section(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/_env.prompt", "/// section: env dynamic\nCwd: ${cwd}\n")
    write(
        project,
        "prompts_src/a.prompt",
        "/// section: identity stable\nYou are X.\n/// include: _env\nMore identity.\n",
    )
    result = build("prompts_src", "build", APPROX)
    assert result.ok, result.diagnostics
    blocks = json.loads((project / "build/a.json").read_text())["messages"][0]["blocks"]
    assert [(s["name"], s["boundary"], s["text"]) for b in blocks for s in b["sections"]] == [
        ("identity", "stable", "You are X.\nMore identity."),
        ("env", "dynamic", "Cwd: ${cwd}"),
    ]


def test_a_partials_input_declaration_does_not_create_one_for_the_includer(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/_p.prompt", "/// input: a\nUses ${a}.\n")
    write(project, "prompts_src/undeclared.prompt", "/// include: _p\nAsk ${question}.\n")
    write(project, "prompts_src/declared.prompt", "/// input: question\n/// include: _p\nAsk ${question}.\n")
    result = build("prompts_src", "build", APPROX)
    assert result.ok, result.diagnostics
    assert json.loads((project / "build/undeclared.json").read_text())["inputs"] == ["a", "question"]
    assert json.loads((project / "build/declared.json").read_text())["inputs"] == ["a", "question"]


# ---------------------------------------------------------------------------------------------
# Whole lines, bounded expansion, first-seen order


def _content(result) -> list[str]:
    assert result.artifact is not None, result.diagnostics
    return [m.content for m in result.artifact.messages]


@pytest.mark.parametrize("ending", ["Hello", "Hello ${name}", "Hello {{ name }}"])
def test_a_partial_without_a_final_newline_splices_as_whole_lines(ending: str) -> None:
    from promptc import compile_text

    result = compile_text("A\n/// include: _p\nB\n", partials={"_p.prompt": ending})
    first, *rest = _content(result)[0].split("\n")
    assert first == "A" and rest[-1] == "B" and len(rest) == 2, _content(result)


def test_a_long_chain_of_partials_is_a_diagnostic_not_a_recursion_error() -> None:
    from promptc import compile_text

    partials = {f"_p{i}.prompt": f"/// include: _p{i + 1}\nLevel {i}.\n" for i in range(500)}
    partials["_p500.prompt"] = "End.\n"
    result = compile_text("/// include: _p0\nHi\n", partials=partials)
    assert [d.code for d in result.diagnostics] == ["E806"]


def test_a_fan_out_that_would_explode_stops_with_a_diagnostic() -> None:
    from promptc import compile_text

    partials = {f"_f{i}.prompt": f"/// include: _f{i + 1}\n" * 10 + f"Line {i}.\n" for i in range(9)}
    partials["_f9.prompt"] = "Leaf text.\n"
    result = compile_text("/// include: _f0\nHi\n", partials=partials)  # 10**9 leaves if expanded
    assert "E806" in {d.code for d in result.diagnostics}


def test_tags_from_partials_keep_first_seen_order() -> None:
    from promptc import compile_text

    result = compile_text(
        "/// tag: own\n/// include: _z\n/// include: _a\nHi\n",
        partials={"_z.prompt": "/// tag: zeta\nZ\n", "_a.prompt": "/// tag: alpha, zeta\nA\n"},
    )
    assert result.artifact is not None and result.artifact.tags == ("own", "zeta", "alpha")


def test_an_include_through_a_symlinked_folder_outside_is_e802(project: Path, monkeypatch, tmp_path_factory) -> None:
    monkeypatch.chdir(project)
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    write(elsewhere, "_secret.prompt", "Secret.\n")
    (project / "prompts_src/linked").symlink_to(elsewhere, target_is_directory=True)
    write(project, "prompts_src/a.prompt", "/// include: linked/_secret\nHi\n")
    result = check("prompts_src", "build", Config(tokenizer="approx-bytes/4"))
    assert [(d.code, d.path) for d in result.diagnostics] == [("E802", "prompts_src/a.prompt")]
    assert "symlink" in result.diagnostics[0].message


def test_a_diagnostic_in_a_partial_names_the_prompts_that_include_it(tmp_path: Path) -> None:
    from promptc.driver import check
    from promptc.facts.diagnostics import render_github, render_text

    write(tmp_path, "prompts_src/_p.prompt", "/// section: id stable\nBuilt 2024-05-06.\n")
    write(tmp_path, "prompts_src/a.prompt", "/// include: _p\nA\n")
    write(tmp_path, "prompts_src/team/b.prompt", "/// include: ../_p\nB\n")
    write(tmp_path, "prompts_src/c.prompt", "C\n")
    (d,) = check(tmp_path / "prompts_src", tmp_path / "build").diagnostics
    assert d.code == "W706" and d.included_by == ("a", "team/b")
    assert "= note: reported while compiling a, team/b, which include this file" in render_text(d)
    assert "(reported while compiling a, team/b" in render_github(d)
    assert d.to_json()["included_by"] == ["a", "team/b"]
