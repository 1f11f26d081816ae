"""Trust, round 4: one confinement rule for every path promptc writes (`promptc.runtime.confine`).

A cloned repository commits its pyproject.toml, its symlinks and its files. A plain `promptc build`
in it used to replace any file its `[tool.promptc]` named (`python_bindings = "../victim/notes.txt"`,
an absolute path, a committed link at the bindings path), and a hand-written file at the bindings
path. Now a path the file sets stays inside the project (E914), nothing is written through a link
promptc did not make (E915), and no file promptc did not generate is replaced (E916): each a
located error, exit 1, nothing written, the victim byte for byte as it was."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from promptc.driver import build
from promptc.facts.config import load_config

from .conftest import ROOT, run_promptc, snapshot, write

VICTIM = b"precious, hand-written notes\n"
HEADER = (
    '[project]\nname = "clone"\n\n[tool.promptc]\nsrc = "prompts_src"\nout = "build"\ntokenizer = "approx-bytes/4"\n'
)
#: the line of pyproject.toml the hostile option is on (after HEADER)
LINE = HEADER.count("\n") + 1


def _clone(tmp_path: Path, option: str = "") -> Path:
    """tmp/victim/notes.txt beside tmp/clone, a project whose [tool.promptc] ends with `option`."""
    write(tmp_path, "victim/notes.txt", VICTIM)
    clone = tmp_path / "clone"
    write(clone, "prompts_src/a.prompt", "/// input: q\nHello ${q}\n")
    write(clone, "pyproject.toml", HEADER + option + ("\n" if option else ""))
    return clone


def _outside(tmp_path: Path) -> dict[str, object]:
    """Everything beside the clone (links as their text, never followed)."""
    found: dict[str, object] = {}
    for path in sorted(tmp_path.rglob("*")):
        rel = path.relative_to(tmp_path).as_posix()
        if rel == "clone" or rel.startswith("clone/"):
            continue
        found[rel] = (
            ("link", os.readlink(path)) if path.is_symlink() else (path.read_bytes() if path.is_file() else "dir")
        )
    return found


def _refused(done, code: str, where: str) -> None:
    output = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in output, output
    assert f"{where}: error[{code}]" in output, output
    assert "= hint: " in output, output


# ---------------------------------------------------------------------------------------------
# The bindings path: every vector of the report


BINDINGS = ["python_bindings", "typescript_bindings"]


@pytest.mark.parametrize("key", BINDINGS)
def test_a_bindings_path_leaving_the_project_is_refused(tmp_path: Path, key: str) -> None:
    clone = _clone(tmp_path, f'{key} = "../victim/notes.txt"')
    before = _outside(tmp_path)
    done = run_promptc("build", cwd=clone, real=key == "python_bindings")
    _refused(done, "E914", f"pyproject.toml:{LINE}:1")
    assert f'`{key}` = "../victim/notes.txt" is outside the project' in done.stdout
    assert (tmp_path / "victim/notes.txt").read_bytes() == VICTIM and _outside(tmp_path) == before
    assert not (clone / "build").exists()  # nothing written: refused before the output folder


@pytest.mark.parametrize("key", BINDINGS)
def test_an_absolute_bindings_path_is_refused(tmp_path: Path, key: str) -> None:
    victim = (tmp_path / "victim/notes.txt").as_posix()
    clone = _clone(tmp_path, f"{key} = {json.dumps(victim)}")
    done = run_promptc("build", cwd=clone)
    _refused(done, "E914", f"pyproject.toml:{LINE}:1")
    assert f'`{key}` = "{victim}" is an absolute path' in done.stdout
    assert (tmp_path / "victim/notes.txt").read_bytes() == VICTIM


@pytest.mark.parametrize("key", BINDINGS)
def test_a_committed_link_at_the_bindings_path_is_refused(tmp_path: Path, key: str) -> None:
    clone = _clone(tmp_path, f'{key} = "app/prompts.py"')
    (clone / "app").mkdir()
    (clone / "app/prompts.py").symlink_to("../../victim/notes.txt")
    done = run_promptc("build", cwd=clone)
    _refused(done, "E915", f"pyproject.toml:{LINE}:1")
    assert "is a symlink to `../../victim/notes.txt`" in done.stdout
    assert (tmp_path / "victim/notes.txt").read_bytes() == VICTIM
    assert os.readlink(clone / "app/prompts.py") == "../../victim/notes.txt"


@pytest.mark.parametrize("key", BINDINGS)
def test_a_link_in_a_folder_on_the_bindings_path_is_refused(tmp_path: Path, key: str) -> None:
    clone = _clone(tmp_path, f'{key} = "app/notes.txt"')
    (clone / "app").symlink_to("../victim", target_is_directory=True)
    before = _outside(tmp_path)
    done = run_promptc("build", cwd=clone)
    _refused(done, "E915", f"pyproject.toml:{LINE}:1")
    assert "goes through `app`, a symlink to `../victim`" in done.stdout
    assert _outside(tmp_path) == before


@pytest.mark.parametrize("key", BINDINGS)
def test_a_hand_written_file_at_the_bindings_path_is_kept(tmp_path: Path, key: str) -> None:
    clone = _clone(tmp_path, f'{key} = "app/prompts.py"')
    mine = write(clone, "app/prompts.py", "def my_own_code() -> None: ...\n")
    done = run_promptc("build", cwd=clone)
    _refused(done, "E916", f"pyproject.toml:{LINE}:1")
    assert "names a file promptc did not generate" in done.stdout
    assert mine.read_text() == "def my_own_code() -> None: ...\n"


def test_a_refused_build_leaves_the_previous_build_as_it_was(tmp_path: Path) -> None:
    clone = _clone(tmp_path, 'python_bindings = "app/prompts.py"')
    assert run_promptc("build", cwd=clone).returncode == 0
    previous, bindings = snapshot(clone / "build"), (clone / "app/prompts.py").read_bytes()
    write(clone, "prompts_src/a.prompt", "/// input: q\nHello again ${q}\n")
    write(clone, "pyproject.toml", HEADER + 'python_bindings = "../victim/notes.txt"\n')
    done = run_promptc("build", cwd=clone)
    _refused(done, "E914", f"pyproject.toml:{LINE}:1")
    assert snapshot(clone / "build") == previous and (clone / "app/prompts.py").read_bytes() == bindings
    assert (tmp_path / "victim/notes.txt").read_bytes() == VICTIM


@pytest.mark.parametrize(
    ("option", "code", "prepare"),
    [
        ('python_bindings = "../victim/notes.txt"', "E914", None),
        ('typescript_bindings = "app/prompts.ts"', "E915", "link"),
        ('python_bindings = "app/prompts.py"', "E916", "hand-written"),
    ],
)
def test_check_locked_reports_the_same_refusal(tmp_path: Path, option: str, code: str, prepare: str | None) -> None:
    clone = _clone(tmp_path, option)
    if prepare == "link":
        (clone / "app").mkdir()
        (clone / "app/prompts.ts").symlink_to("../../victim/notes.txt")
    elif prepare == "hand-written":
        write(clone, "app/prompts.py", "# mine\n")
    done = run_promptc("check", "--locked", cwd=clone)
    _refused(done, code, f"pyproject.toml:{LINE}:1")
    assert (tmp_path / "victim/notes.txt").read_bytes() == VICTIM


def test_the_library_build_refuses_too(tmp_path: Path, monkeypatch) -> None:
    clone = _clone(tmp_path, 'python_bindings = "../victim/notes.txt"')
    monkeypatch.chdir(clone)
    config, diagnostics = load_config(clone / "pyproject.toml")
    result = build(config=config, config_diagnostics=diagnostics)
    (refusal,) = [d for d in result.diagnostics if d.severity == "error"]
    assert (refusal.code, refusal.path, refusal.span and refusal.span.line) == ("E914", "pyproject.toml", LINE)
    assert (tmp_path / "victim/notes.txt").read_bytes() == VICTIM


# ---------------------------------------------------------------------------------------------
# What still works: bindings inside the project, and files promptc generated


@pytest.mark.parametrize("key", BINDINGS)
def test_bindings_inside_the_project_are_written_and_kept_current(tmp_path: Path, key: str) -> None:
    name = "app/prompts.py" if key == "python_bindings" else "app/prompts.ts"
    clone = _clone(tmp_path, f'{key} = "{name}"')
    assert run_promptc("build", cwd=clone).returncode == 0
    first = (clone / name).read_text()
    assert "generated by promptc" in first.splitlines()[0]
    write(clone, "prompts_src/b.prompt", "/// input: who\nBye ${who}\n")
    done = run_promptc("build", cwd=clone)
    assert done.returncode == 0, done.stdout
    assert (clone / name).read_text() != first and "b" in (clone / name).read_text()
    # one an older promptc generated is promptc's too: replaced
    write(clone, name, first.replace("generated by promptc ", "generated by promptc 0.0.1 and ", 1))
    assert run_promptc("build", cwd=clone).returncode == 0 and "0.0.1" not in (clone / name).read_text()
    assert run_promptc("check", "--locked", cwd=clone).returncode == 0


# ---------------------------------------------------------------------------------------------
# The output folder (and the cache beside it)


def test_an_output_folder_outside_the_project_is_refused(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    write(clone, "pyproject.toml", HEADER.replace('out = "build"', 'out = "../victim/build"'))
    before = _outside(tmp_path)
    done = run_promptc("build", cwd=clone, real=True)
    _refused(done, "E914", "pyproject.toml:6:1")
    assert '`out` = "../victim/build" is outside the project' in done.stdout
    assert _outside(tmp_path) == before  # no build/, no .promptc-cache beside the victim


def test_the_project_folder_itself_is_no_output_folder(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    write(clone, "pyproject.toml", HEADER.replace('src = "prompts_src"', 'src = "../victim"').replace('"build"', '"."'))
    before = _outside(tmp_path)
    done = run_promptc("build", cwd=clone)
    _refused(done, "E914", "pyproject.toml:6:1")
    assert "is the project folder itself" in done.stdout
    assert _outside(tmp_path) == before


def test_an_output_folder_under_a_committed_link_is_refused(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    write(clone, "pyproject.toml", HEADER.replace('out = "build"', 'out = "gen/build"'))
    (clone / "gen").symlink_to("../victim", target_is_directory=True)
    before = _outside(tmp_path)
    done = run_promptc("build", cwd=clone)
    _refused(done, "E915", "pyproject.toml:6:1")
    assert _outside(tmp_path) == before


def test_o_on_the_command_line_may_point_anywhere_but_not_through_a_link(tmp_path: Path) -> None:
    """`-o` is the user's own choice (as ruff's and tsc's): outside the project it builds; through a
    link inside the project it does not."""
    clone = _clone(tmp_path)
    assert run_promptc("build", "-o", "../elsewhere/build", cwd=clone).returncode == 0
    assert (tmp_path / "elsewhere/build/a.json").is_file()
    (clone / "gen").symlink_to("../victim", target_is_directory=True)
    before = _outside(tmp_path)
    done = run_promptc("build", "-o", "gen/build", cwd=clone)
    _refused(done, "E915", "gen/build:1:1")
    assert "(out) goes through `gen`, a symlink to `../victim`" in done.stdout
    assert _outside(tmp_path) == before


# ---------------------------------------------------------------------------------------------
# report -o, gen -o


def _built(tmp_path: Path) -> Path:
    clone = _clone(tmp_path)
    assert run_promptc("build", cwd=clone).returncode == 0
    return clone


COMMANDS = {
    "report": ["report", "-o"],
    "gen python": ["gen", "python", "-o"],
    "gen typescript": ["gen", "typescript", "-o"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_generated_output_never_replaces_a_hand_written_file(tmp_path: Path, command: str) -> None:
    clone = _built(tmp_path)
    mine = write(clone, "notes.html", "my own page\n")
    done = run_promptc(*COMMANDS[command], "notes.html", cwd=clone)
    _refused(done, "E916", "notes.html:1:1")
    assert f"`notes.html` ({command} -o) names a file promptc did not generate" in done.stderr
    assert mine.read_text() == "my own page\n"


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("link", ["file", "folder"])
def test_a_generated_output_never_goes_through_a_link(tmp_path: Path, command: str, link: str) -> None:
    clone = _built(tmp_path)
    if link == "file":
        (clone / "out.txt").symlink_to("../victim/notes.txt")
        target, shown = "out.txt", "out.txt"
    else:
        (clone / "reports").symlink_to("../victim", target_is_directory=True)
        target, shown = "reports/notes.txt", "reports/notes.txt"
    before = _outside(tmp_path)
    done = run_promptc(*COMMANDS[command], target, cwd=clone)
    _refused(done, "E915", f"{shown}:1:1")
    assert _outside(tmp_path) == before


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_generated_output_replaces_its_own_earlier_file_and_may_go_anywhere(tmp_path: Path, command: str) -> None:
    clone = _built(tmp_path)
    target = tmp_path / "elsewhere/out.txt"  # outside the project: the command line's own choice
    target.parent.mkdir()
    assert run_promptc(*COMMANDS[command], str(target), cwd=clone).returncode == 0
    first = target.read_bytes()
    assert b"generated by promptc" in b"\n".join(first.splitlines()[:3])
    target.write_bytes(first.replace(b"Hello", b"Hullo"))  # an earlier run's output, say
    assert run_promptc(*COMMANDS[command], str(target), cwd=clone).returncode == 0
    assert target.read_bytes() == first


def test_a_report_an_older_promptc_wrote_is_replaced(tmp_path: Path) -> None:
    """Pages from before the mark begin as every report page began: promptc's, so replaced."""
    clone = _built(tmp_path)
    old = write(
        clone,
        "report.html",
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<title>promptc cache report</title>\n<style></style></head><body>an old report</body></html>\n",
    )
    assert run_promptc("report", "-o", "report.html", cwd=clone).returncode == 0
    assert "an old report" not in old.read_text() and "generated by promptc" in old.read_text()


# ---------------------------------------------------------------------------------------------
# import, cost --advise --write, fmt, init: the other writers


def _foreign(tmp_path: Path) -> None:
    write(tmp_path, "foreign/greet.j2", "Hello {{ name }}.\n")


def test_import_into_a_source_folder_outside_the_project_is_refused(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    write(clone, "pyproject.toml", HEADER.replace('src = "prompts_src"', 'src = "../victim"'))
    _foreign(clone)
    before = _outside(tmp_path)
    done = run_promptc("import", "jinja", "foreign", cwd=clone)
    _refused(done, "E914", "pyproject.toml:5:1")
    assert _outside(tmp_path) == before


def test_import_never_writes_through_a_linked_folder(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    _foreign(clone)
    (clone / "imported").symlink_to("../victim", target_is_directory=True)
    before = _outside(tmp_path)
    done = run_promptc("import", "jinja", "foreign", "-o", "imported/more", cwd=clone)
    _refused(done, "E915", "imported/more/greet.prompt:1:1")
    assert _outside(tmp_path) == before
    assert run_promptc("import", "jinja", "foreign", "-o", "fine", cwd=clone).returncode == 0
    assert (clone / "fine/greet.prompt").is_file()


def test_cost_write_never_edits_sources_outside_the_project(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    shutil.copytree(ROOT / "prompts_src", tmp_path / "victim/prompts_src")
    write(clone, "pyproject.toml", HEADER.replace('src = "prompts_src"', 'src = "../victim/prompts_src"'))
    write(clone, "traffic.json", json.dumps({"helpdesk/agent": 12, "helpdesk/escalate": 12}))
    assert run_promptc("build", cwd=clone).returncode == 0  # reading sources elsewhere is fine
    before = _outside(tmp_path)
    done = run_promptc("cost", "--advise", "--traffic", "traffic.json", "--write", cwd=clone)
    _refused(done, "E914", "pyproject.toml:5:1")
    assert _outside(tmp_path) == before


def test_fmt_never_edits_outside_the_project_or_the_source_folder(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    write(tmp_path, "victim/prompts/a.prompt", "///flow:f\nHi\n")
    write(clone, "pyproject.toml", HEADER.replace('src = "prompts_src"', 'src = "../victim/prompts"'))
    before = _outside(tmp_path)
    done = run_promptc("fmt", cwd=clone)
    _refused(done, "E914", "pyproject.toml:5:1")
    assert _outside(tmp_path) == before
    # a file named on the command line that is a link out of its folder
    write(clone, "pyproject.toml", HEADER)
    (clone / "loose").mkdir()
    (clone / "loose/a.prompt").symlink_to("../../victim/prompts/a.prompt")
    done = run_promptc("fmt", "loose/a.prompt", cwd=clone)
    _refused(done, "E915", "loose/a.prompt:1:1")
    assert _outside(tmp_path) == before


def test_init_never_writes_through_a_committed_link(tmp_path: Path) -> None:
    write(tmp_path, "victim/pyproject.toml", '[project]\nname = "victim"\n')
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "pyproject.toml").symlink_to("../victim/pyproject.toml")
    before = _outside(tmp_path)
    done = run_promptc("init", cwd=clone)
    _refused(done, "E915", "pyproject.toml:1:1")
    assert _outside(tmp_path) == before
    (clone / "pyproject.toml").unlink()
    (clone / "prompts_src").symlink_to("../victim", target_is_directory=True)
    done = run_promptc("init", cwd=clone)
    _refused(done, "E915", "prompts_src/hello.prompt:1:1")
    assert _outside(tmp_path) == before and not (clone / "pyproject.toml").exists()
