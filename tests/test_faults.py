"""Faults and odd file systems: the build reaches the verdict a clean build would, never hangs,
never regresses the output, and cleans up after builds that died."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import promptc.driver as driver
from promptc.driver import build, check
from promptc.facts.config import Config
from promptc.facts.diagnostics import render_text
from promptc.runtime.buildfolder import output_lock, state_path

from .conftest import examples, promptc_executable, snapshot, write

APPROX = Config(tokenizer="approx-bytes/4")


def test_a_named_pipe_is_a_diagnostic_not_a_hang(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/ok.prompt", "Hi\n")
    os.mkfifo(project / "prompts_src/pipe.prompt")
    result = check("prompts_src", "build", APPROX)
    assert [(d.code, d.path) for d in result.diagnostics] == [("E106", "prompts_src/pipe.prompt")]
    assert "not a regular file" in result.diagnostics[0].message


def test_an_edit_that_restores_size_and_mtime_is_seen(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    path = write(project, "prompts_src/a.prompt", "Version one.\n")
    old = 1_600_000_000_000_000_000  # long before the racy window
    os.utime(path, ns=(old, old))
    assert build("prompts_src", "build", APPROX).written
    path.write_text("Version two.\n")  # same size
    os.utime(path, ns=(old, old))  # and the mtime put back, as `cp -p` does
    assert build("prompts_src", "build", APPROX).written
    assert "Version two." in (project / "build/a.json").read_text()


def test_an_unreadable_source_fails_an_incremental_build_like_a_clean_one(project: Path, monkeypatch) -> None:
    import errno

    import promptc.driver.sources as sources

    monkeypatch.chdir(project)
    path = write(project, "prompts_src/a.prompt", "Hi\n")
    old = 1_600_000_000_000_000_000
    os.utime(path, ns=(old, old))
    assert build("prompts_src", "build", APPROX).ok
    # `chmod 000`, as the file system reports it to a non-root user (root reads the file anyway)
    denied = str(path)
    real_open, real_access = open, os.access

    def no_read(file, *args, **kwargs):
        if os.fspath(file).endswith("a.prompt"):
            raise PermissionError(errno.EACCES, "Permission denied", denied)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(sources, "open", no_read, raising=False)
    monkeypatch.setattr(
        sources.os, "access", lambda p, mode: False if os.fspath(p).endswith("a.prompt") else real_access(p, mode)
    )
    clean = check("prompts_src", "build", APPROX)
    incremental = build("prompts_src", "build", APPROX)
    assert [d.code for d in incremental.diagnostics] == [d.code for d in clean.diagnostics] == ["E106"]


def test_a_source_that_vanishes_before_a_worker_reads_it_is_e106(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    old = 1_600_000_000_000_000_000
    for i in range(60):  # enough for the process pool
        path = write(project, f"prompts_src/p{i:02d}.prompt", f"/// include: _shared\nPrompt {i}.\n")
        os.utime(path, ns=(old, old))
    write(project, "prompts_src/_shared.prompt", "Shared v1.\n")
    assert build("prompts_src", "build", APPROX).ok
    before = snapshot(project / "build")
    write(project, "prompts_src/_shared.prompt", "Shared v2.\n")  # every prompt must recompile

    real_read_tree = driver.read_tree

    def read_then_delete(*args, **kwargs):
        tree, diagnostics = real_read_tree(*args, **kwargs)
        (project / "prompts_src/p07.prompt").unlink()  # listed (stat unchanged, read lazily), now gone
        return tree, diagnostics

    monkeypatch.setattr(driver, "read_tree", read_then_delete)
    result = build("prompts_src", "build", APPROX)
    assert [(d.code, d.path) for d in result.diagnostics] == [("E106", "prompts_src/p07.prompt")]
    assert not result.written and snapshot(project / "build") == before


def test_leftovers_of_dead_builds_are_cleaned_up(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/a.prompt", "Hi\n")
    # a build that made a spool folder and sent a folder to the trash, then died before deleting
    # either (os._exit: the trash's background thread never runs)
    dying = (
        "import os, pathlib; from promptc.runtime.buildfolder import make_spool, discard\n"
        "out = pathlib.Path('build'); spool = make_spool(out); (spool / 'a.json').write_text('half an artifact')\n"
        "old = pathlib.Path('old'); old.mkdir(); (old / 'old.json').write_text('x' * 1000)\n"
        "import promptc.runtime.buildfolder as o; o._empty_trash = lambda trash: None; discard(old, out)\n"
        "print(spool.name); os._exit(0)\n"
    )
    dead = subprocess.run([sys.executable, "-c", dying], capture_output=True, text=True, check=True)
    spool = project / ".promptc-cache" / dead.stdout.strip()
    trash = project / ".promptc-cache/trash"
    assert spool.is_dir() and len(list(trash.iterdir())) == 1
    # and folders that only have such names (committed, copied or planted): never promptc's to delete
    pid = dead.stdout.split("-")[1]
    planted_spool = project / f".promptc-cache/build.spool-{pid}-planted"
    write(planted_spool, "a.json", "not promptc's")
    planted_trash = write(project, f".promptc-cache/trash/build-{pid}-1/old.json", "not promptc's").parent
    assert build("prompts_src", "build", APPROX).written
    assert not spool.exists() and list(trash.iterdir()) == [planted_trash]
    assert (planted_spool / "a.json").read_text() == (planted_trash / "old.json").read_text() == "not promptc's"
    assert (project / ".promptc-cache/.gitignore").read_text().strip().endswith("*")


@pytest.mark.parametrize("out", ["prompts_src", "prompts_src/build", "."])
def test_an_output_folder_overlapping_the_sources_moves_nothing(project: Path, out: str) -> None:
    write(project, "prompts_src/a.prompt", "Hi\n")
    before = snapshot(project)
    for command in ("build", "check"):
        done = subprocess.run(
            [promptc_executable(), command, "prompts_src", "-o", out], cwd=project, capture_output=True, text=True
        )
        assert done.returncode == 1 and "error[E910]" in done.stdout, done.stdout + done.stderr
    assert snapshot(project) == before


def test_a_symlinked_output_folder_is_refused_and_left_alone(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/a.prompt", "Hi\n")
    write(project, "elsewhere/keep.txt", "not promptc's")
    (project / "build").symlink_to("elsewhere", target_is_directory=True)
    for _ in range(2):
        assert [d.code for d in build("prompts_src", "build", APPROX).diagnostics] == ["E911"]
    assert (project / "build").is_symlink() and snapshot(project / "elsewhere") == {"keep.txt": b"not promptc's"}


def test_a_build_that_waited_for_the_lock_compiles_what_is_there_when_it_gets_it(project: Path) -> None:
    """Builds never regress the output: the lock covers reading and compiling, so a build that had
    to wait cannot write sources older than what the build before it wrote."""
    write(project, "prompts_src/a.prompt", "Version one.\n")
    with output_lock(project / "build"):
        waiting = subprocess.Popen(
            [promptc_executable(), "build", "prompts_src", "-o", "build", "--tokenizer", "approx-bytes/4"],
            cwd=project,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.0)  # it has started and is waiting for the lock
        write(project, "prompts_src/a.prompt", "Version two.\n")
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, out + err
    assert "Version two." in (project / "build/a.json").read_text()


def test_a_file_name_that_is_not_utf8_is_a_diagnostic(project: Path) -> None:
    write(project, "prompts_src/ok.prompt", "Hi\n")
    (project / "prompts_src").joinpath(os.fsdecode(b"bad\xff.prompt")).write_text("Hi\n")
    for command in ("check", "build"):
        done = subprocess.run(
            [promptc_executable(), command, "prompts_src", "-o", "build", "--tokenizer", "approx-bytes/4"],
            cwd=project,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert "error[E106]: file name cannot be read as UTF-8" in done.stdout
        assert "bad\\xff.prompt" in done.stdout


def test_a_non_ascii_name_without_utf8_mode_is_a_diagnostic_not_a_traceback(project: Path) -> None:
    write(project, "prompts_src/ok.prompt", "Hi\n")
    (project / "prompts_src/日本.prompt").write_text("Hi\n", encoding="utf-8")
    env = {**os.environ, "PYTHONUTF8": "0", "LC_ALL": "C", "LANG": "C", "PYTHONIOENCODING": "ascii:backslashreplace"}
    done = subprocess.run(
        [promptc_executable(), "check", "prompts_src", "--tokenizer", "approx-bytes/4"],
        cwd=project,
        env=env,
        capture_output=True,
    )
    assert b"Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1)  # 0 where the file system encoding is UTF-8 anyway
    if done.returncode == 1:
        assert b"error[E106]: file name cannot be read as UTF-8" in done.stdout


def _tampered(edited: str, data: bytes) -> bytes:
    """The file's bytes with one character changed, same size: the artifact's text, or (the manifest)
    one hex digit of the artifact's sha256, so both stay valid JSON."""
    if edited.endswith("manifest.json"):
        at = data.index(b'"sha256": "') + len(b'"sha256": "')
        digit = b"0" if data[at : at + 1] != b"0" else b"1"
        return data[:at] + digit + data[at + 1 :]
    assert b"Version one." in data
    return data.replace(b"Version one.", b"Version 0ne.")


@pytest.mark.parametrize("edited", ["build/a.json", "build/manifest.json"])
def test_an_output_edited_in_place_keeping_its_size_and_mtime_is_restored(project: Path, edited: str) -> None:
    """An artifact or `manifest.json` rewritten in place, its size, mtime and inode kept (only the
    change time moves), is not the file the build wrote: the next build puts a clean build's bytes
    back (it used to keep them, exit 0, and the runtime then refused the prompt)."""
    from promptc.runtime.buildfolder import BuildFolder

    write(project, "prompts_src/a.prompt", "Version one.\n")
    write(project, "prompts_src/b.prompt", "Another prompt.\n")
    old = 1_600_000_000_000_000_000  # sources long before the racy window: proven unchanged by their stat
    for source in (project / "prompts_src").iterdir():
        os.utime(source, ns=(old, old))
    command = [promptc_executable(), "build", "prompts_src", "-o", "build", "--tokenizer", "approx-bytes/4"]
    done = subprocess.run(command, cwd=project, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    clean = snapshot(project / "build")
    path = project / edited
    before = os.stat(path)
    with open(path, "r+b") as handle:  # in place: the same inode
        handle.write(_tampered(edited, path.read_bytes()))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the mtime put back
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert snapshot(project / "build") != clean
    done = subprocess.run(command, cwd=project, capture_output=True, text=True)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert snapshot(project / "build") == clean
    assert BuildFolder(project / "build").artifact("a").messages[0].content == "Version one."


# ---------------------------------------------------------------------------------------------
# The incremental state, damaged: any bytes at `.promptc-cache/<out>.state.json` mean at worst a
# full build, never a traceback and never an output that differs from a clean build's


def _state_project(root: Path) -> tuple[Path, Path]:
    """Sources whose state has every kind of record: a partial and the prompt that includes it, a
    tool file, warnings with a fix and the source line they echo, folders, and a journal line
    after the base (a build after an edit)."""
    src, out = root / "prompts_src", root / "build"
    write(src, "_shared.prompt", "Shared ${topic}.\n")
    write(src, "inc.prompt", "/// include: _shared\nAsk about ${topic}.\n")
    write(src, "tools.json", '[{"name": "t", "description": "Search.", "input_schema": {"type": "object"}}]')
    write(src, "tooled.prompt", "/// tools: tools.json\n----- user -----\nUse ${q}\n")
    write(src, "team/warned.prompt", "/// input: name, unused\n\tHello ${name}.\n")
    write(src, "plain.prompt", "Plain text.\n")
    for i in range(30):  # a base that a journal line weighs little against
        write(src, f"more/m{i:02d}.prompt", f"Prompt number {i}, written out at some length.\n")
    old = 1_600_000_000_000_000_000
    for path in src.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(old, old))
    assert build(src, out, APPROX).ok
    write(src, "plain.prompt", "Plain text, edited.\n")
    os.utime(src / "plain.prompt", ns=(old, old + 1))
    assert build(src, out, APPROX).ok
    return src, out


def _json_garbage() -> st.SearchStrategy[Any]:
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.integers(min_value=2**62, max_value=2**70)  # past 64 bits: not JSON orjson reads
        | st.integers(max_value=-(2**62), min_value=-(2**70))
        | st.floats(allow_nan=True, allow_infinity=True)
        | st.text(max_size=80)
        | st.sampled_from(["", "a.prompt", "../x.json", "/etc/passwd", "a\x00b.json", "0" * 64, "warning", "W502"])
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=12,
    )


def _places(value: Any) -> list[tuple[Any, ...]]:
    """Every place in a decoded JSON value, as the keys and indexes that lead there."""
    found: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        found.append(path)
        if isinstance(node, dict):
            stack.extend((child, (*path, key)) for key, child in node.items())
        elif isinstance(node, list):
            stack.extend((child, (*path, index)) for index, child in enumerate(node))
    return sorted(found, key=lambda path: (len(path), [str(part) for part in path]))


def _mutate_json(data: st.DataObject, value: Any) -> Any:
    """`value` with one place in it, any depth, replaced by garbage, deleted, or given a sibling."""
    path = data.draw(st.sampled_from(_places(value)), label="place")
    if not path:
        return data.draw(_json_garbage(), label="replacement")
    parent = value
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    action = data.draw(st.sampled_from(["replace", "replace", "delete", "add"]), label="action")
    if action == "replace":
        parent[last] = data.draw(_json_garbage(), label="replacement")
    elif action == "delete":
        del parent[last]
    elif isinstance(parent, dict):
        parent[data.draw(st.text(max_size=8), label="new key")] = data.draw(_json_garbage(), label="added")
    else:
        parent.insert(last, data.draw(_json_garbage(), label="added"))
    return value


class _StateProject:
    """A built project, its output and its state (shown by its folder alone in a failure report)."""

    def __init__(self, root: Path) -> None:
        self.src, self.out = _state_project(root)
        assert state_path(self.out).read_bytes().count(b"\n") == 3  # the header, the base, one journal line
        result = build(self.src, self.out, APPROX)  # the state as written is read back whole: all reused
        assert result.ok and not result.compiled, result.compiled
        self.clean = snapshot(self.out)
        self.state = state_path(self.out).read_bytes()

    def __repr__(self) -> str:
        return f"_StateProject({str(self.src)!r})"


@pytest.fixture(scope="module")
def damaged_state_project(tmp_path_factory: pytest.TempPathFactory) -> _StateProject:
    return _StateProject(tmp_path_factory.mktemp("state"))


@settings(max_examples=examples(300), deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_damaged_state_means_a_full_build_never_a_traceback(damaged_state_project, data: st.DataObject) -> None:
    """Wrong types at any field, truncated lines, numbers past 64 bits, NaN, nested garbage, a
    line of junk: the build succeeds and its output is a clean build's, byte for byte."""
    project: _StateProject = damaged_state_project
    src, out, clean, state = project.src, project.out, project.clean, project.state
    lines = state.split(b"\n")[:-1]
    how = data.draw(st.sampled_from(["field", "field", "field", "truncate", "junk line"]), label="how")
    if how == "truncate":
        damaged = state[: data.draw(st.integers(0, len(state) - 1), label="cut")]
    elif how == "junk line":
        at = data.draw(st.integers(0, len(lines) - 1), label="line")
        junk = data.draw(st.binary(max_size=40) | st.integers(1, 3000).map(lambda d: b"[" * d + b"]" * d), label="junk")
        damaged = b"".join(line + b"\n" for line in [*lines[:at], junk, *lines[at + 1 :]])
    else:
        at = data.draw(st.integers(0, len(lines) - 1).filter(lambda i: i > 0 or data.draw(st.booleans())), label="line")
        value = _mutate_json(data, json.loads(lines[at]))
        mutated = json.dumps(value, allow_nan=True).encode()
        damaged = b"".join(line + b"\n" for line in [*lines[:at], mutated, *lines[at + 1 :]])
    state_path(out).write_bytes(damaged)
    result = build(src, out, APPROX)
    assert result.ok, [str(d) for d in result.diagnostics]
    assert snapshot(out) == clean
    for diagnostic in result.diagnostics:  # every warning a reused prompt reports renders
        render_text(diagnostic)
