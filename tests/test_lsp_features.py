"""The language server's answers, in process, on awkward sources: every request at every position
of each file answers (possibly with nothing) and never raises."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from promptc.lsp import features
from promptc.lsp.workspace import Project

AWKWARD = {
    "empty.prompt": "",
    "slashes.prompt": "///\n/// \n/// :\n-----\n----- tool -----\n",
    "open.prompt": "/// input: a\n----- user -----\n${a} ${\n{% if a %}\n{{ b",
    "missing.prompt": "/// include: _nope\n/// include: ../x\n/// tools: a.json, , b.txt\n/// output: \n${x}",
    "cycle.prompt": "/// include: _c1\nhi",
    "_c1.prompt": "/// include: _c2\n",
    "_c2.prompt": "/// include: _c1\n",
    "typed.prompt": "/// input: a: @schema.json, b: list[int] | None\n${a} ${b} 😀 ${a.b}\n",
    "emoji.prompt": "/// section: s😀 dynamic user_context\n😀😀 ${q} {{ q + z }}\n----- user -----\n${q}",
}


def test_every_request_at_every_position_answers(tmp_path: Path) -> None:
    src = tmp_path / "prompts_src"
    src.mkdir()
    for rel, text in AWKWARD.items():
        (src / rel).write_text(text, encoding="utf-8")
    (src / "crlf.prompt").write_bytes(b"\xef\xbb\xbf/// input: q\r\n----- user -----\r\n${q}\r\n")
    (src / "binary.prompt").write_bytes(b"a\x00b")
    project = Project(tmp_path)
    codec = PositionCodec()
    for rel in sorted([*AWKWARD, "crlf.prompt", "binary.prompt"]):
        project.diagnostics_for(rel)
        view = features.view_of(project, rel, codec)
        if view is None:
            assert rel == "binary.prompt"
            continue
        uri = (src / rel).as_uri()
        published = [features.lsp_diagnostic(uri, d, view.lines, codec) for d in project.diagnostics_for(rel)]
        features.code_actions(view, uri, published)
        features.code_lens(view)
        for line, text in enumerate([*view.lines, ""]):
            for character in range(len(text) + 2):
                position = types.Position(line=line, character=character)
                features.hover(view, position)
                features.definition(view, position)
                features.references(view, uri, position, True)
                features.completion(view, position)


def test_the_server_and_the_extension_read_the_same_front_matter() -> None:
    """A `.prompt` that starts with a YAML `---` line is a Dotprompt or Humanloop file: the server
    leaves it alone, on the same cases the VS Code extension's test reads (one shared file)."""
    import json

    from promptc.lsp.workspace import is_foreign

    cases = json.loads((Path(__file__).parent.parent / "editors/vscode/test/front-matter.json").read_text("utf-8"))
    assert [text for text in cases["foreign"] if not is_foreign(text)] == []
    assert [text for text in cases["promptc"] if is_foreign(text)] == []


def test_a_project_owns_its_source_folder_and_what_a_promptc_pyproject_covers(tmp_path: Path) -> None:
    (tmp_path / "prompts_src").mkdir()
    (tmp_path / "genkit").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "app"\n')
    project = Project(tmp_path)
    assert project.owns(tmp_path / "prompts_src" / "a.prompt")
    assert not project.owns(tmp_path / "genkit" / "hello.prompt")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "app"\n\n[tool.promptc]\n')
    project.load_config()
    assert project.owns(tmp_path / "genkit" / "hello.prompt")


def test_a_workspace_wide_answer_keeps_only_summaries_of_the_prompts_not_open(tmp_path: Path) -> None:
    """The cache lens compiles every prompt once to say which share the prefix; what the server
    keeps of a prompt that is not open is its diagnostics, dependencies and manifest entry, not
    the whole compile (on 2,000 files that was 110 MB), and the answers are the same."""
    src = tmp_path / "prompts_src"
    src.mkdir()
    shared = "/// section: rules stable\n" + "Follow the rules of the house, all of them, always.\n" * 40
    for i in range(6):
        (src / f"p{i}.prompt").write_text(f"/// input: q\n{shared}/// section: ask dynamic\n${{q}} {i}\n")
    (src / "_part.prompt").write_text("A partial.\n")
    (src / "inc.prompt").write_text("/// include: _part\nHi\n")
    project = Project(tmp_path)
    project.open("p0.prompt", (src / "p0.prompt").read_text())
    view = features.view_of(project, "p0.prompt", PositionCodec())
    assert view is not None
    (lens,) = features.code_lens(view)
    assert lens.data == {"shared_by": [f"p{i}" for i in range(6)]}
    kept = {rel: (cached.full, cached.analysis.compiled.artifact is not None) for rel, cached in project._cache.items()}
    assert kept["p0.prompt"] == (True, True)
    assert {rel: value for rel, value in kept.items() if rel != "p0.prompt"} == {
        **{f"p{i}.prompt": (False, False) for i in range(1, 6)},
        "inc.prompt": (False, False),
    }
    assert project.includers("_part.prompt") == ["inc.prompt"]
    # a summary is never handed out where the whole compile is asked for
    assert project.analyse("p3.prompt").compiled.artifact is not None
    assert project._cache["p3.prompt"].full
