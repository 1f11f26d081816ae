"""The edit loop in what changed: the manifest patched piece by piece, the state as a journal,
session builds handed the changed paths, the output folder checked by its folders' stats, and
through all of it the rule that an incremental build equals a clean one, byte for byte."""

from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

import promptc.driver as driver
from promptc.backend.emit import dumps
from promptc.driver import Session, build
from promptc.driver.manifest import ManifestDoc, piece_of
from promptc.driver.sources import RACY_WINDOW_NS, read_tree
from promptc.facts.config import Config
from promptc.runtime.buildfolder import state_path
from promptc.runtime.model import Manifest, ManifestEntry

from .conftest import snapshot, write

APPROX = Config(tokenizer="approx-bytes/4")


# ---------------------------------------------------------------------------------------------
# The manifest, in pieces


def _entry(name: str, prefix: str | None, tokens: int, inputs: tuple[str, ...] = ("x",)) -> ManifestEntry:
    return ManifestEntry(
        f"{name}.json",
        "a" * 64,
        f"{name}.prompt",
        "b" * 64,
        inputs,
        (),
        None,
        None,
        "cl100k_base",
        False,
        prefix,
        tokens,
        None,
        {"type": "object", "properties": {name: {}}},
        None,
    )


def test_the_manifest_patched_piece_by_piece_is_the_one_a_clean_build_serialises() -> None:
    """Entries set and removed at random (names with quotes, colons, braces, newlines and
    non-ASCII letters; prefix groups whose members disagree on the length): after every step
    the pieces join to exactly `dumps(Manifest.of(...))`, read back out of those bytes (as a fresh
    build does) they are the same pieces, and they type to the same `Manifest`."""
    rng = random.Random(3)
    names = ["a", "b", 'c"d', "e: {f", "é/ü", "z/y", "m\nn", "q", "q/r", "q-r", "{", 'x\\": {y', "\\", "1" * 64]
    prefixes = [None, "1" * 64, "2" * 64, "f" * 64]
    current: dict[str, ManifestEntry] = {}
    doc = ManifestDoc.of({}, APPROX)
    for step in range(400):
        name = rng.choice(names)
        if rng.random() < 0.3 and name in current:
            doc.remove(name, current.pop(name))
        else:
            entry = _entry(name, rng.choice(prefixes), rng.randint(1, 4), tuple(rng.sample("xyz", rng.randint(0, 3))))
            if rng.random() < 0.5:
                doc.put(name, entry, current.get(name))
            else:  # as a large build's workers send it back: the piece alone
                doc.put_piece(name, piece_of(name, entry))
            current[name] = entry
        expected = dumps(Manifest.of(current, tokenizer=APPROX.tokenizer, provider=None))
        assert doc.bytes() == expected, f"step {step}"
        half = {name: piece_of(name, entry) for name, entry in current.items() if rng.random() < 0.5}
        typed = {name: entry for name, entry in current.items() if name not in half}
        assert ManifestDoc.of(typed, APPROX, half).bytes() == expected
        assert doc.manifest(current) == Manifest.of(current, tokenizer=APPROX.tokenizer, provider=None)
        read = ManifestDoc.read(expected, APPROX)  # read back out of the file, as a fresh build does
        assert read is not None and read.bytes() == expected and len(read) == len(current)
        if rng.random() < 0.5:  # its pieces split out ...
            assert (read.entries, read.groups) == (doc.entries, doc.groups)
        elif current:  # ... or found in its bytes one by one
            name = rng.choice(sorted(current))
            assert read.entry(name) == current[name] and name in read
        if rng.random() < 0.3:
            doc = read  # go on patching the document read back
    # anything but a manifest this promptc writes with this configuration is not read
    assert ManifestDoc.read(expected.replace(b"approx-bytes/4", b"cl100k_base"), APPROX) is None
    assert ManifestDoc.read(expected[:-3], APPROX) is None
    assert ManifestDoc.read(b"\xff" + expected, APPROX) is None


# ---------------------------------------------------------------------------------------------
# Session builds handed the changed paths


class _Walks:
    """Counts the walks of the whole tree a build makes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = 0
        real = driver.read_tree

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.full += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(driver, "read_tree", counted)


def _same_as_clean(src: Path, out: Path, result: driver.BuildResult, root: Path) -> None:
    clean_out = root / "clean"
    clean = build(src, clean_out, APPROX, incremental=False)
    assert clean.ok, clean.diagnostics
    assert snapshot(out) == snapshot(clean_out)
    assert result.manifest == clean.manifest
    assert [str(d) for d in result.diagnostics] == [str(d) for d in clean.diagnostics]
    assert [p.name for p in result.prompts] == [p.name for p in clean.prompts]
    shutil.rmtree(clean_out)


def test_session_builds_handed_the_changed_paths_equal_clean_builds(tmp_path: Path, monkeypatch) -> None:
    """Edits, deletions, new files and folders, a folder renamed, a partial and a tool file
    edited, a save that does not compile: each build of one session reads only the paths it is
    handed, and its output, manifest and diagnostics are a clean build's."""
    rng = random.Random(11)
    src, out = tmp_path / "src", tmp_path / "build"
    write(src, "_shared.prompt", "Shared v0.\n")
    write(src, "tools.json", '[{"name": "t", "description": "v0", "input_schema": {"type": "object"}}]')
    names = [f"d{i % 3}/p{i}.prompt" for i in range(9)]
    for name in names:
        write(src, name, f"{name} v0 ${{x}}\n")
    write(src, "inc.prompt", "/// include: _shared\nI ${y}\n")
    write(src, "tooled.prompt", "/// tools: tools.json\n----- user -----\nUse ${q}\n")
    session = Session()
    assert build(src, out, APPROX, keep_last_good=True, session=session).ok
    walks = _Walks(monkeypatch)
    for step in range(30):
        changed: list[Path] = []
        roll = rng.random()
        name = rng.choice(names)
        path = src / name
        if roll < 0.35:
            changed.append(write(src, name, f"{name} v{step} ${{x}}\n"))
        elif roll < 0.45 and path.exists():
            path.unlink()
            changed.append(path)
        elif roll < 0.55:
            changed.append(write(src, f"new{step}/q.prompt", f"new {step}\n").parent)
        elif roll < 0.62:
            changed.append(write(src, "_shared.prompt", f"Shared v{step}.\n"))
        elif roll < 0.69:
            tools = f'[{{"name": "t", "description": "v{step}", "input_schema": {{"type": "object"}}}}]'
            changed.append(write(src, "tools.json", tools))
        elif roll < 0.76:
            folder = rng.choice([p for p in src.iterdir() if p.is_dir()])
            target = src / f"moved{step}"
            folder.rename(target)
            changed += [folder, target]  # the watcher reports a move with both paths
        else:
            broken = write(src, name, "broken {{ oops\n")
            result = build(src, out, APPROX, keep_last_good=True, session=session, changes=[str(broken)])
            assert not result.ok and {d.code for d in result.diagnostics} == {"E201"}
            assert not result.written  # the failing prompt keeps its last good artifact: nothing else changed
            changed.append(write(src, name, f"{name} fixed {step} ${{x}}\n"))
        walked = walks.full
        result = build(src, out, APPROX, keep_last_good=True, session=session, changes=[str(p) for p in changed])
        assert walks.full == walked, f"step {step}: a session build walked the whole tree"
        assert result.ok, result.diagnostics
        _same_as_clean(src, out, result, tmp_path)


def test_a_fresh_build_after_one_edit_reads_and_hashes_only_that_file(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    for i in range(20):
        write(project, f"prompts_src/g{i % 4}/p{i}.prompt", f"P {i} ${{x}}\n")
    _backdate(project / "prompts_src")
    assert build("prompts_src", "build", APPROX).ok
    seen: list[frozenset[str]] = []
    real = driver.changes_of

    def spy(plan: Any, compiled: Any, reused: Any, tree: Any, fresh: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(frozenset(fresh))
        return real(plan, compiled, reused, tree, fresh, *args, **kwargs)

    monkeypatch.setattr(driver, "changes_of", spy)
    write(project, "prompts_src/g1/p5.prompt", "P 5 edited ${x}\n")
    result = build("prompts_src", "build", APPROX)
    assert result.written and seen == [frozenset({"g1/p5.prompt"})]
    assert [p.name for p in result.prompts if not p.reused] == ["g1/p5"]


def test_a_record_made_within_the_racy_window_is_not_trusted(tmp_path: Path) -> None:
    """git's rule for racily clean entries: a file whose mtime is within the window of the moment
    its record was made may have changed again in the same timestamp tick, so it is read again;
    an older one is proven unchanged by its stat alone (the record's sha256 is taken unread)."""
    path = write(tmp_path, "src/a.prompt", "A\n")
    st = os.stat(path)
    stat = [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]
    made_late = {"a.prompt": [*stat, "0" * 64, st.st_mtime_ns + RACY_WINDOW_NS // 2]}
    tree, _ = read_tree(tmp_path / "src", None, made_late)
    assert tree.shas["a.prompt"] != "0" * 64 and "a.prompt" in tree.files.fresh  # type: ignore[attr-defined]
    made_later = {"a.prompt": [*stat, "0" * 64, st.st_mtime_ns + 2 * RACY_WINDOW_NS]}
    tree, _ = read_tree(tmp_path / "src", None, made_later)
    assert tree.shas["a.prompt"] == "0" * 64 and not tree.files.fresh  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------
# The state, a journal


def _lines(out: Path) -> list[bytes]:
    return state_path(out).read_bytes().split(b"\n")[:-1]


def _backdate(folder: Path) -> None:
    """Files older than the racy window, whose stat then proves them unchanged (files written
    just now are read again by every build for two seconds)."""
    old = time.time() - 60
    for path in folder.rglob("*.prompt"):
        os.utime(path, (old, old))


def test_the_state_is_a_journal_and_a_torn_line_costs_only_reuse(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    for i in range(40):
        write(project, f"prompts_src/g{i % 5}/p{i}.prompt", f"Prompt {i} with a longer text ${{x}}\n")
    _backdate(project / "prompts_src")
    out = project / "build"
    assert build("prompts_src", "build", APPROX).ok
    base = len(_lines(out))
    assert base == 2  # the header and the base
    for step in range(3):
        write(project, f"prompts_src/g0/p{5 * step}.prompt", f"Prompt edited {step} ${{x}}\n")
        assert build("prompts_src", "build", APPROX).ok
    assert len(_lines(out)) == base + 3  # one line appended per build, not the state rewritten
    # a build killed while appending leaves a torn last line: a state that is not what promptc
    # writes is no state, so this build reuses nothing (it costs reuse, never correctness; the
    # state would describe the manifest before that build anyway) and the next one reuses again
    data = state_path(out).read_bytes()
    state_path(out).write_bytes(data[: len(data) - 40])
    assert len(_lines(out)) == base + 2
    write(project, "prompts_src/g1/p1.prompt", "Prompt 1 edited ${x}\n")
    result = build("prompts_src", "build", APPROX)
    assert "g1/p1" in [p.name for p in result.compiled]
    _same_as_clean(project / "prompts_src", out, result, project)
    write(project, "prompts_src/g1/p6.prompt", "Prompt 6 edited ${x}\n")
    result = build("prompts_src", "build", APPROX)
    assert [p.name for p in result.compiled] == ["g1/p6"]
    # a journal that grows is merged into the base
    for step in range(40):
        write(project, f"prompts_src/g2/p{2 + 5 * (step % 8)}.prompt", f"Prompt again {step} ${{x}}\n")
        assert build("prompts_src", "build", APPROX).ok
    assert len(_lines(out)) < 2 + 40
    # anything but a state (a foreign file, junk) is no state: a full build, then a new state
    state_path(out).write_bytes(b"not a state\n")
    result = build("prompts_src", "build", APPROX)
    assert result.ok and not any(p.reused for p in result.prompts)
    assert _lines(out)[0].startswith(b'{"format":"promptc-state/4"')


# ---------------------------------------------------------------------------------------------
# The output folder, checked by its folders' stats


def test_a_file_dropped_into_the_output_between_session_builds_is_refused(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "build"
    write(src, "a.prompt", "A\n")
    write(src, "sub/b.prompt", "B\n")
    session = Session()
    assert build(src, out, APPROX, session=session).ok
    for planted in ("notes.md", "sub/notes.md", "new/deep/notes.md"):
        before = snapshot(out)
        write(out, planted, "mine")
        edited = write(src, "a.prompt", f"A {planted}\n")
        result = build(src, out, APPROX, session=session, changes=[str(edited)])
        assert [d.code for d in result.diagnostics] == ["E912"], result.diagnostics
        assert snapshot(out) == {**before, planted: b"mine"}
        (out / planted).unlink()
    result = build(src, out, APPROX, session=session, changes=[str(src / "a.prompt")])
    assert result.ok and result.written


def test_an_artifact_deleted_from_the_output_comes_back(tmp_path: Path) -> None:
    """The shadow set still links an artifact the user deleted from the output folder; one the
    last build wrote (the shadow needs the live file to link) is compiled again."""
    src, out = tmp_path / "src", tmp_path / "build"
    for name in ("a", "b", "c"):
        write(src, f"{name}.prompt", f"{name.upper()} ${{x}}\n")
    session = Session()
    assert build(src, out, APPROX, session=session).ok
    assert build(src, out, APPROX, session=session, changes=[str(write(src, "a.prompt", "A2 ${x}\n"))]).ok
    (out / "a.json").unlink()  # written by the last build
    (out / "b.json").unlink()  # not
    result = build(src, out, APPROX, session=session, changes=[str(write(src, "c.prompt", "C2 ${x}\n"))])
    assert result.ok
    _same_as_clean(src, out, result, tmp_path)
