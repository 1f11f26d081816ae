"""Every command that writes a file writes it atomically (`promptc.runtime.atomic`): fmt, init, report -o,
gen -o and build's own files. The old file or the new one, never a fragment, never an edit lost,
never a traceback; a symlinked source stays a symlink (a generated file is never written through
one: `test_confinement.py`)."""

from __future__ import annotations

import errno
import os
import random
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from promptc.runtime import atomic
from promptc.runtime.atomic import ABSENT, ChangedOnDisk, read_file, write_file

from .conftest import PROFILE, examples, promptc_executable, run_promptc, write


def _temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(f"*{atomic.TEMP_SUFFIX}"))


@pytest.fixture
def full_disk(monkeypatch):
    """`full_disk(path, after=N)`: writes of promptc's writer to the temporary file that will become
    `path` fail with ENOSPC once N bytes are in, as on a full disk (named or unnamed temporaries)."""

    def arm(target: str, after: int = 0) -> None:
        real_write = os.write
        budget = [after]

        def write(fd: int, data) -> int:
            try:
                name = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                return real_write(fd, data)
            base = os.path.basename(name)
            if base.startswith(f".{target}.") or (base.startswith("#") and name.endswith("(deleted)")):
                if budget[0] <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                done = real_write(fd, bytes(data)[: budget[0]])
                budget[0] -= done
                return done
            return real_write(fd, data)

        monkeypatch.setattr(atomic.os, "write", write)

    return arm


# ---------------------------------------------------------------------------------------------
# The writer itself


def test_write_replaces_never_truncates_in_place(tmp_path: Path) -> None:
    path = write(tmp_path, "f.txt", "old")
    os.chmod(path, 0o640)
    os.link(path, tmp_path / "other-name")  # a second name for the old inode
    write_file(path, b"new")
    assert path.read_bytes() == b"new" and (tmp_path / "other-name").read_bytes() == b"old"
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert _temporaries(tmp_path) == []


def test_compare_and_swap(tmp_path: Path) -> None:
    path = write(tmp_path, "f.txt", "what fmt read")
    path.write_text("what the editor saved meanwhile")
    with pytest.raises(ChangedOnDisk):
        write_file(path, b"formatted", expect=b"what fmt read")
    assert path.read_text() == "what the editor saved meanwhile" and _temporaries(tmp_path) == []
    write_file(path, b"formatted", expect=b"what the editor saved meanwhile")
    assert path.read_text() == "formatted"
    with pytest.raises(ChangedOnDisk):
        write_file(path, b"x", expect=ABSENT)
    write_file(tmp_path / "new.txt", b"x", expect=ABSENT)
    assert (tmp_path / "new.txt").read_bytes() == b"x"
    with pytest.raises(ChangedOnDisk):
        write_file(tmp_path / "gone.txt", b"x", expect=b"something")


def test_a_symlink_stays_a_symlink(tmp_path: Path) -> None:
    target = write(tmp_path, "real/a.prompt", "old")
    link = tmp_path / "a.prompt"
    link.symlink_to("real/a.prompt")
    assert write_file(link, b"new") == target
    assert link.is_symlink() and target.read_bytes() == b"new"
    with pytest.raises(OSError) as refused:
        write_file(link, b"x", symlinks="refuse")
    assert refused.value.errno == errno.ELOOP and target.read_bytes() == b"new"
    (tmp_path / "dangling").symlink_to("nowhere/file")
    with pytest.raises(FileNotFoundError):
        write_file(tmp_path / "dangling", b"x")
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("case", ["folder", "under_a_file", "full_disk"])
def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path, full_disk, case: str) -> None:
    old = write(tmp_path, "f.txt", "old contents")
    if case == "folder":
        (tmp_path / "dir").mkdir()
        target, kind = tmp_path / "dir", IsADirectoryError
    elif case == "under_a_file":
        target, kind = tmp_path / "f.txt/inner.txt", NotADirectoryError
    else:
        target, kind = old, OSError
        full_disk("f.txt", after=4)
    with pytest.raises(kind) as failed:
        write_file(target, b"new contents, longer than the room left")
    assert old.read_text() == "old contents" and _temporaries(tmp_path) == []
    assert atomic.reason(failed.value) in {
        "it is a folder",
        "a part of the path is a file, not a folder",
        "no space left on the device",
    }


def test_read_file_refuses_what_would_hang_or_flood(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(OSError):
        read_file(tmp_path / "pipe")
    big = write(tmp_path, "big.json", "x" * 5000)
    with pytest.raises(atomic.TooLarge):
        read_file(big, limit=4096)
    (tmp_path / "link").symlink_to("big.json")
    with pytest.raises(OSError):
        read_file(tmp_path / "link", follow=False)
    assert read_file(tmp_path / "link", limit=5000) == b"x" * 5000


# ---------------------------------------------------------------------------------------------
# fmt

UNFORMATTED = "///flow:f\nHello.\n"
FORMATTED = "/// flow: f\nHello.\n"


def test_fmt_keeps_a_save_that_lands_while_it_runs(tmp_path: Path, monkeypatch) -> None:
    import promptc.cli.fmt as fmt_module  # what `promptc fmt` calls

    path = write(tmp_path, "prompts_src/a.prompt", UNFORMATTED)
    real = fmt_module.format_tree

    def then_the_user_saves(*args, **kwargs):
        result = real(*args, **kwargs)
        path.write_text("///flow:f\nHello, edited while fmt ran.\n")
        return result

    monkeypatch.setattr(fmt_module, "format_tree", then_the_user_saves)
    done = run_promptc("fmt", "prompts_src", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert path.read_text() == "///flow:f\nHello, edited while fmt ran.\n"  # the edit is kept
    assert "reformatted prompts_src/a.prompt" not in done.stdout
    assert "error[E933]: not written: the file changed on disk while fmt ran" in done.stdout
    assert "0 files reformatted" in done.stdout and "1 not written" in done.stdout


def test_fmt_writes_through_a_symlinked_source(tmp_path: Path) -> None:
    target = write(tmp_path, "prompts_src/real/a.prompt", UNFORMATTED)
    (tmp_path / "prompts_src/a.prompt").symlink_to("real/a.prompt")
    done = run_promptc("fmt", "prompts_src", cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    assert (tmp_path / "prompts_src/a.prompt").is_symlink() and target.read_text() == FORMATTED


def test_fmt_on_a_full_disk_says_so_and_does_not_count_the_file(tmp_path: Path, full_disk) -> None:
    path = write(tmp_path, "prompts_src/a.prompt", UNFORMATTED)
    full_disk("a.prompt")
    done = run_promptc("fmt", "prompts_src", "--format", "json", cwd=tmp_path)
    import json

    report = json.loads(done.stdout)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert report["changed"] == [] and report["not_written"] == ["prompts_src/a.prompt"]
    assert "no space left on the device" in str(report["diagnostics"])
    assert path.read_text() == UNFORMATTED and _temporaries(tmp_path) == []


# ---------------------------------------------------------------------------------------------
# init


@pytest.mark.parametrize("src", ["prompts\\src", 'my"src', "a'b", "tab\there", "x\u00e9\u2603"])
def test_init_writes_the_folder_names_as_toml_strings(tmp_path: Path, src: str) -> None:
    write(tmp_path, "pyproject.toml", '[project]\nname = "demo"\n')
    done = run_promptc("init", "--src", src, "--out", 'out"put\\', cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    config = tomllib.loads((tmp_path / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["project"] == {"name": "demo"}
    assert config["tool"]["promptc"] == {"src": src, "out": 'out"put\\'}
    assert (tmp_path / src / "hello.prompt").is_file()


def test_init_replaces_pyproject_atomically_and_a_full_disk_changes_nothing(tmp_path: Path, full_disk) -> None:
    old = '[project]\nname = "demo"\n' + "# padding\n" * 200
    path = write(tmp_path, "pyproject.toml", old)
    os.link(path, tmp_path / "second-name")
    full_disk("pyproject.toml", after=100)
    done = run_promptc("init", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "cannot write pyproject.toml: no space left on the device; nothing was changed" in done.stderr
    assert path.read_text() == old and not (tmp_path / "prompts_src").exists()
    assert _temporaries(tmp_path) == []


def test_init_never_truncates_pyproject_in_place(tmp_path: Path) -> None:
    old = '[project]\nname = "demo"\n'
    path = write(tmp_path, "pyproject.toml", old)
    os.link(path, tmp_path / "second-name")
    assert run_promptc("init", cwd=tmp_path).returncode == 0
    assert (tmp_path / "second-name").read_text() == old  # the old inode was never written
    assert "[tool.promptc]" in path.read_text()


# ---------------------------------------------------------------------------------------------
# report -o and gen -o


def _built(tmp_path: Path) -> Path:
    write(tmp_path, "prompts_src/a.prompt", "/// input: q\nHello ${q}\n")
    assert (
        run_promptc("build", "prompts_src", "-o", "build", "--tokenizer", "approx-bytes/4", cwd=tmp_path).returncode
        == 0
    )
    return tmp_path


#: what an earlier `report -o` and `gen python -o` left (promptc replaces only files it generated)
PREVIOUS_REPORT = "<!DOCTYPE html>\n<!-- generated by promptc 0.1 (`promptc report`) -->\n<p>the previous report</p>\n"
PREVIOUS_BINDINGS = '"""Typed functions for the prompts of `build`, generated by promptc 0.1.\n"""\n'


def test_report_on_a_full_disk_keeps_the_previous_report(tmp_path: Path, full_disk) -> None:
    _built(tmp_path)
    path = write(tmp_path, "report.html", PREVIOUS_REPORT)
    full_disk("report.html", after=1000)
    done = run_promptc("report", "-o", "report.html", "--out", "build", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "cannot write report.html: no space left on the device; it is unchanged" in done.stderr
    assert path.read_text() == PREVIOUS_REPORT and _temporaries(tmp_path) == []


@pytest.mark.parametrize("case", ["folder", "under_a_file", "full_disk"])
@pytest.mark.parametrize("language", ["python", "typescript"])
def test_gen_o_failures_are_messages_and_leave_nothing(tmp_path: Path, full_disk, case: str, language: str) -> None:
    _built(tmp_path)
    write(tmp_path, "notes.txt", "a file")
    output = {"folder": "app", "under_a_file": "notes.txt/bindings.py", "full_disk": "bindings.py"}[case]
    (tmp_path / "app").mkdir()
    if case == "full_disk":
        write(tmp_path, "bindings.py", PREVIOUS_BINDINGS)
        full_disk("bindings.py", after=10)
    done = run_promptc("gen", language, "-o", output, "--build", "build", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    why = {
        "folder": "it is a folder",
        "under_a_file": "a part of the path is a file, not a folder",
        "full_disk": "no space left on the device",
    }
    assert f"promptc gen: cannot write {output}: {why[case]}; it is unchanged" in done.stderr
    assert _temporaries(tmp_path) == [] and not list(tmp_path.glob("**/.*.tmp"))
    assert (tmp_path / "notes.txt").read_text() == "a file"
    if case == "full_disk":
        assert (tmp_path / "bindings.py").read_text() == PREVIOUS_BINDINGS


# ---------------------------------------------------------------------------------------------
# SIGKILL at random moments: every file is the old one or the new one


def _kill_rounds(command: list[str], cwd: Path, files: dict[Path, tuple[bytes, bytes]], rounds: int, reset) -> dict:
    """Run `command` `rounds` times, SIGKILLed at a random moment of its run; after each, every
    file in `files` must hold its old or its new bytes (or not exist yet, when old is None)."""
    rng = random.Random(23)
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=False, capture_output=True)
    full = time.perf_counter() - started
    seen = {"killed": 0, "old": 0, "new": 0, "temporaries": 0}
    for round_ in range(rounds):
        reset()
        process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # any moment of the run, and every other round the last third, where the writing happens
        time.sleep(rng.uniform(0, full) if round_ % 2 else rng.uniform(full * 0.65, full * 1.05))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            seen["killed"] += 1
        process.wait()
        for path, (old, new) in files.items():
            now = path.read_bytes() if path.exists() else None
            assert now in (old, new), f"{path.name} is neither old nor new: {now[:80]!r}"
            seen["old" if now == old else "new"] += 1
        seen["temporaries"] += len(_temporaries(cwd))
        for leftover in cwd.rglob(f"*{atomic.TEMP_SUFFIX}"):
            leftover.unlink()
    return seen


def _kill_cases(tmp_path: Path) -> list[tuple[str, list[str], dict, object]]:
    exe = promptc_executable()
    _built(tmp_path)
    source = tmp_path / "prompts_src/big.prompt"
    unformatted = ("///flow:f\n" + "Line of text.\n" * 20000).encode()
    formatted = ("/// flow: f\n" + "Line of text.\n" * 20000).encode()
    pyproject = tmp_path / "pyproject.toml"
    old_toml = b'[project]\nname = "demo"\n' + b"# padding\n" * 50000
    report = tmp_path / "report.html"
    bindings = tmp_path / "bindings.py"
    old_report, old_bindings = PREVIOUS_REPORT.encode(), PREVIOUS_BINDINGS.encode()
    for path, data in ((source, unformatted), (report, old_report), (bindings, old_bindings)):
        path.write_bytes(data)

    def reset_init() -> None:
        pyproject.write_bytes(old_toml)
        subprocess.run(["rm", "-rf", str(tmp_path / "init_src")], check=True)

    new_toml = old_toml + b'\n[tool.promptc]\nsrc = "init_src"\nout = "build"\n'
    return [
        ("fmt", [exe, "fmt", str(source)], {source: (unformatted, formatted)}, lambda: source.write_bytes(unformatted)),
        ("init", [exe, "init", "--src", "init_src"], {pyproject: (old_toml, new_toml)}, reset_init),
        ("report", [exe, "report", "-o", "report.html", "--out", "build"], {report: (old_report, None)}, None),
        (
            "gen",
            [exe, "gen", "python", "-o", "bindings.py", "--build", "build"],
            {bindings: (old_bindings, None)},
            None,
        ),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("command", ["fmt", "init", "report", "gen"])
def test_sigkill_at_random_moments_leaves_every_file_old_or_new(tmp_path: Path, command: str) -> None:
    case = {name: rest for name, *rest in _kill_cases(tmp_path)}[command]
    argv, files, reset = case
    path, (old, new) = next(iter(files.items()))
    if new is None:  # the report, the generated module: whatever a finished run writes
        subprocess.run(argv, cwd=tmp_path, check=True, capture_output=True)
        new = path.read_bytes()
        files = {path: (old, new)}
    reset = reset or (lambda: path.write_bytes(old))
    seen = _kill_rounds(argv, tmp_path, files, 10 if PROFILE == "dev" else examples(20), reset)
    assert seen["killed"] >= 2, seen
    print(f"{command}: {seen}", file=sys.stderr)
