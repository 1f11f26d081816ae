"""Trust, round 3: a build never deletes, moves or follows what promptc did not make.

A cloned repository controls every file it commits, `.promptc-cache/` and `build/` included; a
user's `-o` may name a folder that holds their own files. promptc follows no symlink inside its
cache or output folders, trusts no cache folder it did not make, and deletes only what it made."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from promptc.driver import build, check
from promptc.facts.config import Config

from .conftest import promptc_executable, run_promptc, snapshot, write

APPROX = Config(tokenizer="approx-bytes/4")


def _everything(root: Path) -> dict[str, object]:
    """Every entry under `root` (links as their target text, never followed)."""
    found: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = ("link", os.readlink(path))
        elif path.is_file():
            found[rel] = path.read_bytes()
        else:
            found[rel] = "dir"
    return found


def _build(cwd: Path, *args: str, real: bool = False) -> subprocess.CompletedProcess:
    """`promptc build` in `cwd`: in this process (click's runner), or with `real` as a user runs it."""
    return run_promptc(
        "build", "prompts_src", "-o", "build", "--tokenizer", "approx-bytes/4", *args, cwd=cwd, real=real
    )


def _settle() -> None:
    time.sleep(0.3)  # a background deletion, were there one, has had its chance


def test_a_committed_trash_link_deletes_nothing_beside_the_clone(tmp_path: Path) -> None:
    """`.promptc-cache/trash -> ../..` plus a dummy shadow and its dirty flag: the build used to
    move the shadow into the link's target and delete every folder beside the clone."""
    outer = tmp_path / "outer"
    write(outer, "neighbour/data.txt", "someone else's work")
    clone = outer / "clone"
    write(clone, "prompts_src/a.prompt", "Hi\n")
    (clone / ".promptc-cache/build.shadow").mkdir(parents=True)
    (clone / ".promptc-cache/build.shadow.dirty").touch()
    (clone / ".promptc-cache/trash").symlink_to("../..", target_is_directory=True)
    before = _everything(tmp_path)
    done = _build(clone, real=True)
    _settle()
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert "error[E913]" in done.stdout and "`.promptc-cache/trash` is a symlink to `../..`" in done.stdout
    after = _everything(tmp_path)
    created = {rel for rel in after if rel not in before}
    assert {rel for rel in before if rel not in after} == set()  # nothing deleted
    assert all(before[rel] == after[rel] for rel in before)  # nothing changed
    assert created <= {"outer/clone/.promptc-cache/.gitignore", "outer/clone/.promptc-cache/build.lock"}


def test_a_committed_shadow_link_is_never_emptied_nor_swapped_in(tmp_path: Path) -> None:
    """A committed stale `build/` plus `build.shadow -> ../../myproject`: the build used to delete
    every file of myproject and turn build/ into the link."""
    write(tmp_path, "myproject/data.txt", "precious")
    write(tmp_path, "myproject/sub/more.txt", "also precious")
    clone = tmp_path / "clone"
    write(clone, "prompts_src/a.prompt", "Hi\n")
    assert _build(clone).returncode == 0  # what a committer's machine wrote: a real promptc build
    shutil.rmtree(clone / ".promptc-cache")  # a fresh clone has no cache of its own …
    (clone / ".promptc-cache").mkdir()
    write(clone, "prompts_src/a.prompt", "Hi, changed\n")  # … and its build/ is stale
    (clone / ".promptc-cache/build.shadow").symlink_to("../../myproject", target_is_directory=True)
    before = _everything(tmp_path / "myproject")
    old_build = snapshot(clone / "build")
    done = _build(clone)
    _settle()
    assert done.returncode == 1 and "error[E913]" in done.stdout, done.stdout + done.stderr
    assert "`.promptc-cache/build.shadow` is a symlink to `../../myproject`" in done.stdout
    assert _everything(tmp_path / "myproject") == before
    assert not (clone / "build").is_symlink() and snapshot(clone / "build") == old_build
    # deleting the link is all it takes
    (clone / ".promptc-cache/build.shadow").unlink()
    assert _build(clone).returncode == 0
    assert "Hi, changed" in (clone / "build/a.json").read_text()
    assert _everything(tmp_path / "myproject") == before


@pytest.mark.parametrize(
    "plant",
    [
        "cache_link",  # the whole cache folder a link
        "lock_link",
        "owned_link",
        "staging_link",  # named like a staging folder, beside build/
        "parked_link",
        "spool_link",
    ],
)
def test_no_cache_or_staging_name_is_followed(tmp_path: Path, plant: str) -> None:
    victim = tmp_path / "victim"
    write(victim, "data.txt", "precious")
    clone = tmp_path / "clone"
    write(clone, "prompts_src/a.prompt", "Hi\n")
    cache = clone / ".promptc-cache"
    target = os.path.relpath(victim, cache)
    if plant == "cache_link":
        cache.symlink_to(os.path.relpath(victim, clone), target_is_directory=True)
    else:
        cache.mkdir()
        name = {
            "lock_link": "build.lock",
            "owned_link": "build.owned",
            "spool_link": "build.spool-1-x",
        }.get(plant)
        if name is not None:
            (cache / name).symlink_to(target if plant == "spool_link" else os.path.join(target, "data.txt"))
        else:
            suffix = "promptc-tmp-1" if plant == "staging_link" else "promptc-tmp-old"
            (clone / f"build.{suffix}").symlink_to(os.path.relpath(victim, clone), target_is_directory=True)
    done = _build(clone)
    _settle()
    assert "Traceback" not in done.stderr, done.stderr
    assert _everything(victim) == {"data.txt": b"precious"}
    if plant in ("cache_link", "lock_link", "owned_link"):
        assert done.returncode == 1 and "error[E913]" in done.stdout, done.stdout
    else:  # a leftover's name is not enough to be promptc's: left alone, and the build goes on
        assert done.returncode == 0, done.stdout + done.stderr
        assert (clone / "build/a.json").is_file()


def test_a_copied_cache_is_not_trusted(tmp_path: Path) -> None:
    """`cp -r` of a project: the copy's cache names folders by inodes that are not the copy's, so
    its incremental cache is not used and its shadow is vetted like any folder promptc did not make."""
    first = tmp_path / "first"
    write(first, "prompts_src/a.prompt", "Hi\n")
    for text in ("Hi\n", "Hi two\n"):  # a build/ and a shadow set
        write(first, "prompts_src/a.prompt", text)
        assert _build(first).returncode == 0
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(first), str(copy)], check=True)
    write(copy, "prompts_src/b.prompt", "B\n")
    result = build(copy / "prompts_src", copy / "build", APPROX)
    assert result.ok and result.written
    assert {p.name for p in result.prompts if p.reused} == set()  # nothing taken from the copied cache
    again = build(copy / "prompts_src", copy / "build", APPROX)
    assert again.unchanged and {p.name for p in again.prompts if p.reused} == {"a", "b"}


def test_check_locked_with_a_symlinked_folder_inside_build_is_e905(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/a.prompt", "A\n")
    write(project, "prompts_src/sub/b.prompt", "B\n")
    assert build("prompts_src", "build", APPROX).ok
    write(project, "elsewhere/b.json", "x")
    os.rename(project / "build/sub", project / "moved")
    (project / "build/sub").symlink_to("../moved", target_is_directory=True)  # the same bytes, through a link
    (project / "build/link.json").symlink_to("/dev/zero")  # never opened
    result = check("prompts_src", "build", APPROX, locked=True)
    assert {d.code for d in result.diagnostics} == {"E905"}
    assert set(result.stale) == {"sub", "sub/b.json", "link.json"}
    messages = {d.path: d.message for d in result.diagnostics}
    assert "`build/sub` is a symlink" in messages["build/sub/b.json"]
    done = run_promptc("check", "prompts_src", "-o", "build", "--locked", "--tokenizer", "approx-bytes/4", cwd=project)
    assert done.returncode == 1 and "Traceback" not in done.stderr and "error[E905]" in done.stdout, done.stderr


def test_build_refuses_links_inside_the_output_folder(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/a.prompt", "A\n")
    write(project, "mine/keep.txt", "mine")
    assert build("prompts_src", "build", APPROX).ok
    (project / "build/mine").symlink_to("../mine", target_is_directory=True)
    (project / "build/zero.json").symlink_to("/dev/zero")
    before = _everything(project)
    write(project, "prompts_src/a.prompt", "A changed\n")
    result = build("prompts_src", "build", APPROX)
    assert [d.code for d in result.diagnostics] == ["E912"]
    assert "`build/mine (a symlink)`" in result.diagnostics[0].message
    after = _everything(project)
    assert {k: v for k, v in after.items() if not k.startswith(("prompts_src", ".promptc-cache"))} == {
        k: v for k, v in before.items() if not k.startswith(("prompts_src", ".promptc-cache"))
    }


# ---------------------------------------------------------------------------------------------
# -o at a folder that holds other files


def test_o_at_a_folder_with_other_files_is_refused_and_moves_nothing(project: Path) -> None:
    write(project, "prompts_src/a.prompt", "Hi\n")
    write(project, "docs/notes.md", "my notes")
    write(project, "docs/img/logo.png", "png")
    before = _everything(project / "docs")
    for _ in range(2):  # the second build is where files used to be unlinked
        done = run_promptc("build", "prompts_src", "-o", "docs", "--tokenizer", "approx-bytes/4", cwd=project)
        assert done.returncode == 1, done.stdout + done.stderr
        assert (
            "error[E912]" in done.stdout and "`docs/notes.md`" in done.stdout and "`docs/img/logo.png`" in done.stdout
        )
    assert _everything(project / "docs") == before
    cache = project / ".promptc-cache"
    assert not any(p.name.startswith("docs.shadow") for p in cache.iterdir())


def test_an_empty_folder_or_a_promptc_build_is_taken_over(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/a.prompt", "Hi\n")
    (project / "empty").mkdir()
    assert build("prompts_src", "empty", APPROX).written  # empty: fine
    # a build folder some other machine wrote (a fresh clone's committed build/): fine too
    subprocess.run(["cp", "-a", str(project / "empty"), str(project / "committed")], check=True)
    write(project, "prompts_src/a.prompt", "Hi, changed\n")
    result = build("prompts_src", "committed", APPROX)
    assert result.written and "changed" in (project / "committed/a.json").read_text()
    # but one file of someone else's in it, and it is refused
    write(project, "committed/README.md", "mine")
    write(project, "prompts_src/a.prompt", "Hi, again\n")
    assert [d.code for d in build("prompts_src", "committed", APPROX).diagnostics] == ["E912"]
    assert (project / "committed/README.md").read_text() == "mine"


def test_a_foreign_manifest_does_not_make_a_folder_promptcs(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/a.prompt", "Hi\n")
    write(project, "site/manifest.json", '{"name": "my web app", "artifacts": {"x": {"path": "app.js"}}}')
    write(project, "site/app.js", "code")
    result = build("prompts_src", "site", APPROX)
    assert [d.code for d in result.diagnostics] == ["E912"]
    assert "`site/app.js`" in result.diagnostics[0].message and "`site/manifest.json`" in result.diagnostics[0].message


# ---------------------------------------------------------------------------------------------
# A full disk gives its space back


def _cache_leftovers(project: Path) -> list[str]:
    cache = project / ".promptc-cache"
    found = [p.relative_to(cache).as_posix() for p in cache.rglob("*")]
    return sorted(p for p in found if p not in {".gitignore", "build.lock", "build.owned", "build.state.json", "trash"})


@pytest.mark.parametrize("count", [5, 60])  # in memory, and spooled by the process pool
def test_a_full_disk_leaves_no_second_copy(project: Path, monkeypatch, count: int) -> None:
    import errno

    import promptc.driver.pool as pool_module
    import promptc.runtime.buildfolder as output_module

    monkeypatch.chdir(project)
    for version in ("one", "two"):  # a build/ and a shadow set, as any project has after two builds
        for i in range(count):
            write(project, f"prompts_src/p{i:02d}.prompt", f"Prompt {i}, version {version}\n")
        assert build("prompts_src", "build", APPROX).written
    assert (project / ".promptc-cache/build.shadow").is_dir()
    before = snapshot(project / "build")
    for i in range(count):
        write(project, f"prompts_src/p{i:02d}.prompt", f"Prompt {i}, version three, which is longer\n")
    real = output_module.write_new_file
    written: list[Path] = []

    def full_disk(path: Path, data: bytes) -> None:
        if len(written) >= 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        written.append(path)
        real(path, data)

    monkeypatch.setattr(output_module, "write_new_file", full_disk)
    monkeypatch.setattr(pool_module, "write_new_file", full_disk)
    result = build("prompts_src", "build", APPROX)
    assert [d.code for d in result.diagnostics] == ["E904"] and "No space left" in result.diagnostics[0].message
    assert snapshot(project / "build") == before
    # neither the half-updated shadow, nor a `.promptc-new` file, nor a spool, nor trash
    assert _cache_leftovers(project) == []
    assert sorted(p.name for p in project.iterdir()) == [".promptc-cache", "build", "prompts_src"]
    monkeypatch.setattr(output_module, "write_new_file", real)
    monkeypatch.setattr(pool_module, "write_new_file", real)
    assert build("prompts_src", "build", APPROX).written  # and the next build, with room, succeeds
    assert "version three" in (project / "build/p00.json").read_text()


# ---------------------------------------------------------------------------------------------
# Ctrl-C and SIGTERM during a parallel build


def _pool_tree(root: Path, version: str, count: int = 160) -> None:
    for i in range(count):
        write(
            root,
            f"prompts_src/p{i:03d}.prompt",
            f"----- system -----\nRules {i} {version} {{% for x in range(3) %}}{{{{ x }}}}{{% endfor %}}\n"
            "----- user -----\n${q}\n",
        )


def _interrupt(root: Path, signum: int, group: bool) -> tuple[subprocess.CompletedProcess, float]:
    """Start a build, wait until its process pool is compiling (its spool folder exists), signal it."""
    process = subprocess.Popen(
        [promptc_executable(), "build", "prompts_src", "-o", "build", "--tokenizer", "approx-bytes/4"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    # Signal as soon as the workers have spooled a first artifact: the pool is compiling then, with
    # most of the tree still to go (a fixed sleep after the spool folder appeared let a fast machine
    # finish the whole build first).
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        spools = [p for p in (root / ".promptc-cache").glob("build.spool-*") if p.is_dir()]
        if any(any(f.suffix == ".json" for f in spool.iterdir()) for spool in spools):
            break
        time.sleep(0.002)
    landed = process.poll() is None
    if landed:
        (os.killpg if group else os.kill)(process.pid, signum)
    out, err = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err), landed


@pytest.mark.parametrize(
    ("name", "group"),
    [
        ("SIGINT", True),  # Ctrl-C in a terminal: the whole process group
        pytest.param("SIGTERM", True, marks=pytest.mark.slow),  # CI cancelling a job
        pytest.param("SIGTERM", False, marks=pytest.mark.slow),  # `kill PID`: the parent alone
        pytest.param("SIGKILL", False, marks=pytest.mark.slow),  # the parent killed outright
    ],
)
def test_a_signal_during_a_parallel_build_ends_quietly(tmp_path: Path, name: str, group: bool) -> None:
    import signal

    signum = getattr(signal, name)
    _pool_tree(tmp_path, "old")
    assert _build(tmp_path).returncode == 0
    old = snapshot(tmp_path / "build")
    # A signal that reaches the process in its last instants (the build written, the interpreter
    # exiting) is never handled: exit 0 and the new build. That is a race of the test, not a build
    # that ignored the signal, so it tries again on a bigger tree before judging.
    for count in (160, 320, 640):
        _pool_tree(tmp_path, "new", count)
        done, landed = _interrupt(tmp_path, signum, group)
        if not (landed and done.returncode == 0 and done.stdout.startswith("build written")):
            break
        _pool_tree(tmp_path, "old", count)
        assert _build(tmp_path).returncode == 0
        old = snapshot(tmp_path / "build")
    assert landed, "the build finished before the signal; make the tree bigger"
    assert "Traceback" not in done.stderr and "ForkPoolWorker" not in done.stderr, done.stderr
    expected = -signum if name == "SIGKILL" else 128 + signum
    assert done.returncode == expected, done.stderr
    if name != "SIGKILL":
        assert done.stderr.strip() == f"promptc build: interrupted ({name}); `build` holds the last complete build"
    assert snapshot(tmp_path / "build") == old
    time.sleep(0.3)
    # no worker outlives the build (they die with their parent), and the next build is whole
    survivors = subprocess.run(["pgrep", "-f", f"promptc build prompts_src -o build.*{tmp_path}"], capture_output=True)
    assert survivors.stdout == b""
    assert _build(tmp_path).returncode == 0 and "new" in (tmp_path / "build/p000.json").read_text()


# ---------------------------------------------------------------------------------------------
# The Python runtime decides by the artifact's renderer, as runtime-js does


def test_a_placeholder_artifact_never_runs_its_text(tmp_path: Path, monkeypatch) -> None:
    """A build folder from a cache, an artifact store or a pull request that edits build/ and the
    manifest digest together: its placeholder artifact holds `{{ }}` now. Nothing runs."""
    import hashlib
    import json

    import promptc
    from promptc.runtime import template
    from promptc.runtime.render import RenderError, render_artifact

    monkeypatch.chdir(tmp_path)
    write(tmp_path, "prompts_src/a.prompt", "----- system -----\nStable.\n----- user -----\nHello ${name}.\n")
    assert build("prompts_src", "build", APPROX).ok
    path = tmp_path / "build/a.json"
    artifact = json.loads(path.read_text())
    assert artifact["renderer"] == "placeholder"
    marker = tmp_path / "PWNED"
    code = f"{{{{ __import__('pathlib').Path({str(marker)!r}).touch() }}}}{{% for i in [1] %}}x{{% endfor %}}"
    section = artifact["messages"][1]["blocks"][0]["sections"][0]
    section["text"] += code
    artifact["messages"][1]["content"] = section["text"]
    data = json.dumps(artifact, ensure_ascii=False, indent=1).encode() + b"\n"
    path.write_bytes(data)
    manifest = json.loads((tmp_path / "build/manifest.json").read_text())
    manifest["artifacts"]["a"]["sha256"] = hashlib.sha256(data).hexdigest()
    (tmp_path / "build/manifest.json").write_text(json.dumps(manifest))
    compiled = []
    real_compile = template.compile_section
    monkeypatch.setattr(template, "compile_section", lambda text: compiled.append(text) or real_compile(text))
    with pytest.raises(RenderError) as refused:
        promptc.load("build").render("a", name="Ann")
    assert "renderer is `placeholder`, which runs no code" in str(refused.value)
    with pytest.raises(RenderError):
        render_artifact(artifact, {"name": "Ann"})
    done = subprocess.run(
        [promptc_executable(), "render", "a", "--var", "name=Ann"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert not marker.exists() and compiled == []  # not run, not even compiled
    # the same text in a python-renderer artifact is the source's own code, and runs
    artifact["renderer"] = "python"
    render_artifact(artifact, {"name": "Ann"})
    assert marker.exists()


# ---------------------------------------------------------------------------------------------
# Tampered cache and output folders, drawn at random


_NAMES = [
    ".promptc-cache/trash",
    ".promptc-cache/build.shadow",
    ".promptc-cache/build.shadow.dirty",
    ".promptc-cache/build.owned",
    ".promptc-cache/build.lock",
    ".promptc-cache/build.state.json",
    ".promptc-cache/build.spool-1-x",
    ".promptc-cache/.gitignore",
    "build.promptc-tmp-1",
    "build.promptc-tmp-old",
    "build/sub",
    "build/a.json",
    "build/notes.md",
]
_KINDS = ["link_dir", "link_file", "dangling", "dir", "file", "fifo"]


def _plant(root: Path, rel: str, kind: str, victim: Path) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if os.path.lexists(path):
        return
    if kind == "link_dir":
        path.symlink_to(victim, target_is_directory=True)
    elif kind == "link_file":
        path.symlink_to(victim / "data.txt")
    elif kind == "dangling":
        path.symlink_to(victim / "not-yet")
    elif kind == "dir":
        write(path, "junk.json", "{}")
    elif kind == "file":
        path.write_text("junk")
    else:
        os.mkfifo(path)


def tampered_layouts(tmp_path: Path, count: int, seed: int = 23) -> dict[str, int]:
    """Build in `count` project folders whose cache and output are tampered at random (links to a
    victim folder, junk, pipes, under promptc's own names); the victim must never change, the
    build must end with a result (never an exception), and what it reports must be E904, E912 or
    E913 when it refuses."""
    import random

    rng = random.Random(seed)
    victim = tmp_path / "victim"
    write(victim, "data.txt", "precious")
    write(victim, "sub/more.json", "{}")
    before = _everything(victim)
    seen: dict[str, int] = {"layouts": 0, "built": 0, "refused": 0}
    for i in range(count):
        root = tmp_path / f"p{i}"
        write(root, "prompts_src/a.prompt", "Hi\n")
        write(root, "prompts_src/sub/b.prompt", "B\n")
        if rng.random() < 0.5:  # a real earlier build, sometimes stale
            assert build(root / "prompts_src", root / "build", APPROX).ok
            write(root, "prompts_src/a.prompt", "Hi, changed\n")
        for rel in rng.sample(_NAMES, rng.randint(1, 4)):
            _plant(root, rel, rng.choice(_KINDS), victim)
        result = build(root / "prompts_src", root / "build", APPROX)
        _settle() if i == count - 1 else None
        assert _everything(victim) == before, f"layout {i} changed the victim"
        codes_found = {d.code for d in result.diagnostics if d.severity == "error"}
        assert codes_found <= {"E904", "E912", "E913"}, result.diagnostics
        seen["layouts"] += 1
        seen["built" if result.ok else "refused"] += 1
        if result.ok:
            assert (root / "build").is_dir() and not (root / "build").is_symlink()
    return seen


def test_tampered_cache_and_output_folders_never_reach_outside(tmp_path: Path) -> None:
    from .conftest import PROFILE

    seen = tampered_layouts(tmp_path, 60 if PROFILE == "dev" else 600)
    assert seen["built"] and seen["refused"], seen
