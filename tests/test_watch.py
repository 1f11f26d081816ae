"""`promptc watch`: a real subprocess driven through edits, errors, new and deleted files and Ctrl-C,
plus in-process tests of the loop modelled on mkdocs' livereload_tests.py.

Every wait polls with a generous timeout (a loaded 2-core CI machine can take seconds to notice a
change); nothing sleeps for a fixed time except the short windows that prove a change was ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from promptc.driver import build
from promptc.driver.watch import WatchBuild, Watcher, is_editor_file
from promptc.facts.config import Config

from .conftest import promptc_executable, write

TIMEOUT = 40.0  # generous: under a loaded CI machine a rebuild of 60 prompts can take seconds
GOOD = "/// input: name\nHello ${name}, welcome.\n"


def wait_until(condition: Callable[[], Any], timeout: float = TIMEOUT, message: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message or condition}")
        time.sleep(0.02)


def save(path: Path, text: str) -> None:
    """Save the way many editors do: write a temporary file beside it, then rename it over."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)


def artifact(out: Path, name: str) -> dict[str, Any] | None:
    try:
        return json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def content(out: Path, name: str) -> str | None:
    data = artifact(out, name)
    return None if data is None else "\n".join(m["content"] for m in data["messages"])


# ---------------------------------------------------------------------------------------------
# A real `promptc watch` process


class WatchProcess:
    """Runs `promptc watch` and collects its output lines on a reader thread."""

    def __init__(self, cwd: Path, *args: str) -> None:
        env = {k: v for k, v in os.environ.items() if k != "CI"}
        self.proc = subprocess.Popen(
            [promptc_executable(), "watch", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            start_new_session=True,  # its own process group, so a test can Ctrl-C it like a terminal does
        )
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        with self._lock:
            return "\n".join(self.lines)

    def mark(self) -> int:
        with self._lock:
            return len(self.lines)

    def since(self, mark: int) -> str:
        with self._lock:
            return "\n".join(self.lines[mark:])

    def summaries(self, mark: int = 0) -> list[str]:
        return [line for line in self.since(mark).splitlines() if " built " in line or " rebuilt " in line]

    def wait_for_output(self, text: str, mark: int = 0, timeout: float = TIMEOUT) -> None:
        def seen() -> bool:
            if self.proc.poll() is not None and text not in self.since(mark):
                raise AssertionError(f"promptc watch exited ({self.proc.returncode}):\n{self.output}")
            return text in self.since(mark)

        try:
            wait_until(seen, timeout, f"{text!r} in the output")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- output ---\n{self.output}") from None

    def stop(self, signum: int = signal.SIGINT) -> int:
        self.proc.send_signal(signum)
        try:
            return self.proc.wait(TIMEOUT)
        finally:
            self._reader.join(TIMEOUT)

    def interrupt_group(self) -> int:
        """Ctrl-C as a terminal sends it: to the whole process group, build workers included."""
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            return self.proc.wait(TIMEOUT)
        finally:
            self._reader.join(TIMEOUT)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the group: forked build workers too
            self.proc.wait(TIMEOUT)


@pytest.fixture
def start_watch(project: Path):
    started: list[WatchProcess] = []

    def start(*args: str) -> WatchProcess:
        process = WatchProcess(project, *args)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()


def test_watch_end_to_end(project: Path, start_watch) -> None:
    src, out = project / "prompts_src", project / "build"
    write(project, "prompts_src/greet.prompt", GOOD)
    write(project, "prompts_src/other.prompt", "You are terse.\n")
    watch = start_watch("prompts_src", "-o", "build")

    # the initial build
    watch.wait_for_output("built 2 prompts in ")
    assert watch.summaries()[0].endswith("0 errors, 0 warnings")
    assert "welcome" in content(out, "greet")
    assert set(json.loads((out / "manifest.json").read_text())["artifacts"]) == {"greet", "other"}

    # an edit updates the artifact and the manifest
    save(src / "greet.prompt", GOOD.replace("welcome", "welcome back"))
    wait_until(lambda: "welcome back" in (content(out, "greet") or ""), message="the edited artifact")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["artifacts"]["greet"]["sha256"] == hashlib.sha256((out / "greet.json").read_bytes()).hexdigest()

    # a broken edit: the error is printed, the last good artifact stays, the loop goes on
    mark = watch.mark()
    (src / "greet.prompt").write_text("/// input: name\nHello ${name, welcome.\n", encoding="utf-8")
    watch.wait_for_output("error[E201]", mark)
    watch.wait_for_output("1 error", mark)
    assert "prompts_src/greet.prompt:2:7" in watch.since(mark)
    assert "welcome back" in content(out, "greet")
    assert watch.proc.poll() is None

    # the fix is picked up
    save(src / "greet.prompt", GOOD.replace("welcome", "welcome again"))
    wait_until(lambda: "welcome again" in (content(out, "greet") or ""), message="the fixed artifact")

    # a new file gets an artifact
    save(src / "fresh.prompt", "Fresh prompt.\n")
    wait_until(lambda: artifact(out, "fresh"), message="build/fresh.json")

    # a deleted file loses its artifact and its manifest entry
    (src / "other.prompt").unlink()
    wait_until(lambda: not (out / "other.json").exists(), message="build/other.json to go")
    assert "other" not in json.loads((out / "manifest.json").read_text())["artifacts"]

    # a new folder with a file in it
    (src / "team").mkdir()
    (src / "team" / "lead.prompt").write_text("You lead the team.\n", encoding="utf-8")
    wait_until(lambda: artifact(out, "team/lead"), message="build/team/lead.json")
    wait_until(lambda: "team/lead" in json.loads((out / "manifest.json").read_text())["artifacts"])

    # Ctrl-C: a clean exit
    assert watch.stop(signal.SIGINT) == 0
    assert "Traceback" not in watch.output
    assert "build crashed" not in watch.output


def _unused(name: str, body: str = "Q: ${q}") -> str:
    """A prompt with one warning: W502, its declared input `unused_NAME` is never used."""
    return f"/// input: q, unused_{name}\n----- user -----\n{body}\n"


def test_a_rebuild_prints_what_changed_not_every_warning_of_the_tree(project: Path, start_watch) -> None:
    """Five prompts with a warning each. The first build prints all five; then over three edits a
    rebuild prints only what changed: new diagnostics in full, fixed ones and the ones still in the
    edited file one line each, and a summary line counting the whole tree."""
    for name in "abcde":
        write(project, f"prompts_src/{name}.prompt", _unused(name))
    watch = start_watch("prompts_src", "-o", "build")
    watch.wait_for_output("built 5 prompts in ")
    assert watch.output.count("warning[W502]") == 5

    def rebuild(path: str, text: str) -> list[str]:
        mark = watch.mark()
        save(project / path, text)
        watch.wait_for_output(" rebuilt ", mark)
        lines = watch.since(mark).splitlines()
        assert not any(f"{other}.prompt" in line for other in "cde" for line in lines), lines
        return lines

    # 1: a typo in a.prompt: the new error (and the warning it brings) in full, a's old warning one line
    lines = rebuild("prompts_src/a.prompt", _unused("a", "Q: ${qq}"))
    text = "\n".join(lines)
    assert "prompts_src/a.prompt:3:4: error[E501]" in text and " 3 | Q: ${qq}" in text
    assert "prompts_src/a.prompt:1:12: warning[W502]: declared input `q` is never used" in text
    assert [line for line in lines if line.startswith("still: ")] == [
        "still: prompts_src/a.prompt:1:15: warning[W502]: declared input `unused_a` is never used"
    ]
    assert "b.prompt" not in text
    assert lines[-1].endswith(": 1 error, 6 warnings (2 new, 5 unchanged)"), lines[-1]

    # 2: a.prompt fixed for good: three `fixed:` lines and the summary, nothing else
    lines = rebuild("prompts_src/a.prompt", "/// input: q\n----- user -----\nQ: ${q}\n")
    assert [line.split(": ", 2)[:2] for line in lines[:-1]] == [
        ["fixed", "prompts_src/a.prompt:1:12"],
        ["fixed", "prompts_src/a.prompt:1:15"],
        ["fixed", "prompts_src/a.prompt:3:4"],
    ], lines
    assert lines[-1].endswith(": 0 errors, 4 warnings (3 fixed, 4 unchanged)"), lines[-1]

    # 3: b.prompt reworded, its warning stays: one `still:` line and the summary
    lines = rebuild("prompts_src/b.prompt", _unused("b", "Question: ${q}"))
    assert lines[:-1] == ["still: prompts_src/b.prompt:1:15: warning[W502]: declared input `unused_b` is never used"]
    assert lines[-1].endswith(": 0 errors, 4 warnings (4 unchanged)"), lines[-1]
    assert watch.stop() == 0


def test_watch_exits_cleanly_on_sigterm(project: Path, start_watch) -> None:
    write(project, "prompts_src/a.prompt", "Hi.\n")
    watch = start_watch("prompts_src", "-o", "build")
    watch.wait_for_output("built 1 prompt in ")
    assert watch.stop(signal.SIGTERM) == 0
    assert "Traceback" not in watch.output


@pytest.mark.slow
def test_watch_with_a_process_pool(project: Path, start_watch) -> None:
    # Enough prompts for the build to compile them in forked workers. The workers inherit watch's
    # signal handlers: SIGTERM must still stop them (multiprocessing.Pool ends its workers with it,
    # and waits), and Ctrl-C sent to the whole group must not leave tracebacks behind.
    from promptc.driver import PARALLEL_THRESHOLD

    count = PARALLEL_THRESHOLD + 12
    for i in range(count):
        write(project, f"prompts_src/p{i:03}.prompt", f"You are assistant {i}. Be kind.\n")
    watch = start_watch("prompts_src")
    watch.wait_for_output(f"built {count} prompts in ")
    for word in ("gentle", "patient"):
        mark = watch.mark()
        for i in range(count):
            save(project / f"prompts_src/p{i:03}.prompt", f"You are assistant {i}. Be {word}.\n")
        expected = f"Be {word}."
        try:
            wait_until(
                lambda e=expected: all(e in (content(project / "build", f"p{i:03}") or "") for i in range(count))
            )
        except AssertionError as exc:  # say what the watcher did, for a failure seen only on a loaded machine
            stale = [i for i in range(count) if expected not in (content(project / "build", f"p{i:03}") or "")]
            raise AssertionError(f"{exc}; stale: {stale[:10]}\n--- output ---\n{watch.output}") from None
        watch.wait_for_output(" 0 errors", mark)
    for i in range(count):
        (project / f"prompts_src/p{i:03}.prompt").write_text(f"You are assistant {i}. Be brief.\n")
    assert watch.interrupt_group() == 0
    assert "Traceback" not in watch.output


def test_watch_reloads_the_config(project: Path, start_watch) -> None:
    (project / "pyproject.toml").write_text('[tool.promptc]\nsrc = "prompts_src"\nout = "dist"\n', encoding="utf-8")
    write(project, "prompts_src/p.prompt", "Welcome to ${product}.\n")
    watch = start_watch()
    watch.wait_for_output("built 1 prompt in ")
    assert "${product}" in content(project / "dist", "p")

    mark = watch.mark()
    (project / "pyproject.toml").write_text(
        '[tool.promptc]\nsrc = "prompts_src"\nout = "dist"\ndefines = { product = "Acme" }\n', encoding="utf-8"
    )
    watch.wait_for_output("configuration reloaded", mark)
    wait_until(lambda: "Welcome to Acme." in (content(project / "dist", "p") or ""), message="the define applied")
    assert artifact(project / "dist", "p")["inputs"] == []
    assert watch.stop() == 0


def test_watch_json_format_is_one_object_per_line(project: Path, start_watch) -> None:
    write(project, "prompts_src/a.prompt", "/// input: x\nHi.\n")
    watch = start_watch("prompts_src", "--format", "json")
    watch.wait_for_output('"event":"build"')
    line = next(line for line in watch.output.splitlines() if line.startswith("{"))
    record = json.loads(line)
    assert (record["initial"], record["compiled"], record["warnings"]) == (True, 1, 1)
    assert record["diagnostics"][0]["code"] == "W502"
    assert watch.stop() == 0


# ---------------------------------------------------------------------------------------------
# The loop, in process (the library API)


class Recorder:
    """A builder that wraps the real one: counts calls and can hold a build until released."""

    def __init__(self) -> None:
        self.calls = 0
        self.hold_call: int | None = None
        self.entered = threading.Event()
        self.release = threading.Event()
        self.fail_call: int | None = None

    def __call__(self, *args: Any, **kwargs: Any):
        self.calls += 1
        if self.calls == self.fail_call:
            raise RuntimeError("boom\nsecond line")
        result = build(*args, **kwargs)
        if self.calls == self.hold_call:
            self.entered.set()
            assert self.release.wait(TIMEOUT), "the test never released the build"
        return result


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    src = tmp_path / "src"
    write(src, "a.prompt", "Version 1.\n")
    return src, tmp_path / "out"


def started(src: Path, out: Path, **kwargs: Any) -> Watcher:
    watcher = Watcher(src, out, Config(), **kwargs).start()
    first = watcher.wait_for_build(TIMEOUT, after=0)
    assert first is not None and first.initial and first.error is None, first
    return watcher


def next_build(watcher: Watcher, after: int) -> WatchBuild:
    record = watcher.wait_for_build(TIMEOUT, after=after)
    assert record is not None, "no build after the change"
    return record


def test_editing_a_tool_file_rebuilds_the_prompt_that_names_it(tree: tuple[Path, Path]) -> None:
    src, out = tree
    tool = {"name": "search", "description": "Search v1.", "input_schema": {"type": "object"}}
    write(src, "agent.prompt", "/// tools: tools.json\nAgent.\n")
    write(src, "tools.json", json.dumps(tool))
    watcher = started(src, out)
    try:
        n = watcher.builds
        save(src / "tools.json", json.dumps({**tool, "description": "Search v2."}))
        record = next_build(watcher, n)
        assert record.ok and record.compiled == 1, record
        assert json.loads((out / "agent.json").read_text())["tools"][0]["description"] == "Search v2."
    finally:
        watcher.stop()


def test_library_initial_build_and_rebuild(tree: tuple[Path, Path]) -> None:
    src, out = tree
    results: list[WatchBuild] = []
    watcher = started(src, out, on_result=results.append)
    try:
        assert content(out, "a") == "Version 1."
        n = watcher.builds
        save(src / "a.prompt", "Version 2.\n")
        record = next_build(watcher, n)
        assert (record.initial, record.changes, record.compiled, record.ok) == (
            False,
            (str(src / "a.prompt"),),
            1,
            True,
        )
        assert content(out, "a") == "Version 2."
    finally:
        watcher.stop()
    assert [r.seq for r in results] == list(range(1, len(results) + 1))
    assert not watcher.running


@pytest.mark.slow  # a real watcher over a burst of writes; CI runs it
def test_burst_of_changes_builds_once(tree: tuple[Path, Path]) -> None:
    src, out = tree
    builder = Recorder()
    # a wide quiet window so that even a slow machine writes the whole burst inside it
    watcher = started(src, out, builder=builder, debounce=1.5, max_wait=10)
    try:
        n = watcher.builds
        for i in range(10):
            (src / f"p{i}.prompt").write_text(f"Prompt {i}.\n")
            save(src / "a.prompt", f"Version {i}.\n")
        record = next_build(watcher, n)
        assert record.seq == n + 1, "the burst was split over several builds"
        assert builder.calls == 2
        assert set(record.changes) == {str(src / f"p{i}.prompt") for i in range(10)} | {str(src / "a.prompt")}
        assert content(out, "a") == "Version 9." and artifact(out, "p9")
    finally:
        watcher.stop()


def test_change_during_a_build_is_not_lost(tree: tuple[Path, Path]) -> None:
    src, out = tree
    builder = Recorder()
    builder.hold_call = 2  # the first rebuild waits for the test
    watcher = started(src, out, builder=builder)
    try:
        n = watcher.builds
        save(src / "a.prompt", "Version 2.\n")
        assert builder.entered.wait(TIMEOUT)
        save(src / "a.prompt", "Version 3.\n")  # while build 2 is running (it read version 2)
        wait_until(lambda: watcher.pending == (str(src / "a.prompt"),), message="the change to be recorded")
        assert watcher.builds == n  # build 2 is still held
        builder.release.set()
        record = wait_until(lambda: (r := watcher.last) and r.seq >= n + 2 and r, message="a build after the held one")
        assert record.changes == (str(src / "a.prompt"),)
        assert content(out, "a") == "Version 3."
        assert watcher.wait_for_build(0.3, after=record.seq) is None
        assert builder.calls == 3
    finally:
        builder.release.set()
        watcher.stop()


def test_editor_swap_and_backup_files_are_ignored(tree: tuple[Path, Path]) -> None:
    src, out = tree
    watcher = started(src, out)
    try:
        n = watcher.builds
        for name in [".a.prompt.swp", ".a.prompt.swx", "a.prompt~", "#a.prompt#", ".#a.prompt", "4913", "a.prompt.tmp"]:
            (src / name).write_text("junk")
        (src / "notes.txt").write_text("not a prompt")
        write(src, ".hidden/secret.prompt", "hidden")
        write(src, ".promptc-cache/x.prompt", "cache")
        # a sentinel: the build it starts must be the next one, and carry only the sentinel
        save(src / "a.prompt", "Version 2.\n")
        record = next_build(watcher, n)
        assert record.seq == n + 1
        assert record.changes == (str(src / "a.prompt"),)
        assert not artifact(out, ".hidden/secret")
    finally:
        watcher.stop()


def test_the_builds_own_writes_start_no_build(tmp_path: Path) -> None:
    # the build's own writes (the output set and its shadow swapped, the shadow patched, staging
    # folders beside the output folder, in the folder the watcher also watches) start no build
    src, out = tmp_path / "src", tmp_path / "build"
    write(src, "a.prompt", "Version 1.\n")
    builder = Recorder()
    watcher = started(src, out, builder=builder)
    try:
        for step in range(3):  # each rebuild swaps the output folder with the shadow set
            n = watcher.builds
            (tmp_path / f"build.promptc-tmp-9999{step}").mkdir()  # a staging folder beside the output
            save(src / "a.prompt", f"Version {step + 2}.\n")
            record = next_build(watcher, n)
            assert record.seq == n + 1 and record.ok
            assert record.changes == (str(src / "a.prompt"),)
            # and the build that wrote the output did not start another one
            assert watcher.wait_for_build(0.5, after=record.seq) is None
        assert builder.calls == 4
    finally:
        watcher.stop()


def test_a_file_dropped_into_the_output_folder_is_reported_at_once(tmp_path: Path) -> None:
    """What changes under the output folder starts a build, which refuses a file promptc did not
    write (E912) then and there, not at the next save."""
    src, out = tmp_path / "src", tmp_path / "build"
    write(src, "a.prompt", "Version 1.\n")
    watcher = started(src, out)
    try:
        n = watcher.builds
        write(out, "nested/notes.md", "mine")
        record = next_build(watcher, n)
        assert [d.code for d in record.diagnostics] == ["E912"], record.diagnostics
        assert (out / "nested/notes.md").read_text() == "mine"
    finally:
        watcher.stop()


def test_an_artifact_replaced_under_a_running_watch_is_restored(tree: tuple[Path, Path]) -> None:
    """`git checkout -- build/` while `promptc watch` runs (a file replaced by other bytes), and an
    artifact rewritten in place with its size and mtime kept: the watcher notices what changed
    under the output folder and rebuilds it, and once it is idle the output is a clean build's."""
    from .conftest import snapshot

    src, out = tree
    write(src, "b.prompt", "Other 1.\n")
    write(src, "sub/c.prompt", "Third 1.\n")
    watcher = started(src, out)
    try:
        n = watcher.builds
        save(src / "a.prompt", "Version 2.\n")  # a rebuild: the output folder is now a swapped-in set
        next_build(watcher, n)
        assert watcher.wait_idle(TIMEOUT)
        clean = snapshot(out)
        n = watcher.builds
        stale = (out / "a.json").read_bytes().replace(b"Version 2.", b"Version 1.")
        (out / "a.json").unlink()  # as git checks a file out: a new file at the path
        (out / "a.json").write_bytes(stale)
        edited = out / "sub/c.json"
        before = edited.stat()
        with open(edited, "r+b") as handle:
            handle.write(edited.read_bytes().replace(b"Third 1.", b"Third 0."))
        os.utime(edited, ns=(before.st_atime_ns, before.st_mtime_ns))
        record = next_build(watcher, n)
        assert record.error is None, record
        wait_until(lambda: snapshot(out) == clean and watcher.wait_idle(0.1), message="the output restored")
        assert watcher.wait_for_build(0.5, after=watcher.builds) is None  # and restoring it started no build
    finally:
        watcher.stop()
    clean_build = build(src, out.with_name("clean"), Config(), incremental=False)
    assert clean_build.ok and snapshot(out) == snapshot(out.with_name("clean"))


def test_a_build_that_raises_is_reported_and_the_loop_goes_on(tree: tuple[Path, Path]) -> None:
    src, out = tree
    builder = Recorder()
    builder.fail_call = 2
    watcher = started(src, out, builder=builder)
    try:
        n = watcher.builds
        save(src / "a.prompt", "Version 2.\n")
        failed = next_build(watcher, n)
        assert failed.result is None and failed.error == "RuntimeError: boom second line"
        assert isinstance(failed.exception, RuntimeError)
        save(src / "a.prompt", "Version 3.\n")
        record = next_build(watcher, failed.seq)
        assert record.ok and content(out, "a") == "Version 3."
    finally:
        watcher.stop()


def test_errors_keep_the_last_good_artifact(tree: tuple[Path, Path]) -> None:
    src, out = tree
    write(src, "b.prompt", "Other.\n")
    watcher = started(src, out)
    try:
        n = watcher.builds
        save(src / "a.prompt", "Broken ${\n")
        save(src / "b.prompt", "Other, edited.\n")
        record = wait_until(
            lambda: (r := watcher.wait_for_build(TIMEOUT, after=n)) and "b.prompt" in " ".join(r.changes) and r,
            message="the build with both changes",
        )
        assert record.result is not None and record.result.errors == 1
        assert [d.code for d in record.diagnostics if d.severity == "error"] == ["E201"]
        assert content(out, "a") == "Version 1."  # the last good artifact
        assert content(out, "b") == "Other, edited."  # the rest is still written
    finally:
        watcher.stop()


def test_deleted_and_recreated_source_folder(tree: tuple[Path, Path]) -> None:
    import shutil

    src, out = tree
    watcher = started(src, out)
    try:
        n = watcher.builds
        shutil.rmtree(src)
        gone = wait_until(
            lambda: (r := watcher.wait_for_build(TIMEOUT, after=n)) and r.result and not r.result.ok and r,
            message="a build reporting the missing folder",
        )
        assert "E906" in [d.code for d in gone.diagnostics]
        assert content(out, "a") == "Version 1."  # nothing written
        write(src, "b.prompt", "Back again.\n")
        wait_until(lambda: content(out, "b") == "Back again.", message="the recreated folder to be watched")
        save(src / "b.prompt", "Edited after the folder came back.\n")
        wait_until(lambda: content(out, "b") == "Edited after the folder came back.", message="the new watch")
    finally:
        watcher.stop()


def test_config_change_reloads_and_rebuilds_fully(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    write(src, "p.prompt", "Welcome to ${product}.\n")
    loads: list[int] = []

    def loader() -> tuple[Config, list]:
        loads.append(1)
        return Config(src=str(src), out=str(out), defines=(("product", "Acme"),)), []

    builder = Recorder()
    calls: list[dict[str, Any]] = []

    def spying_builder(*args: Any, **kwargs: Any):
        calls.append(kwargs)
        return builder(*args, **kwargs)

    watcher = started(src, out, builder=spying_builder, config_loader=loader, config_dirs=[tmp_path])
    try:
        n = watcher.builds
        (tmp_path / "pyproject.toml").write_text("[tool.promptc]\n")
        (tmp_path / "unrelated.toml").write_text("")  # only pyproject.toml is configuration
        record = next_build(watcher, n)
        assert record.config_reloaded and loads
        called = dict(calls[-1])
        assert called.pop("session") is not None  # kept, but not handed the changed paths: a full build
        assert called == {"keep_last_good": True, "incremental": False, "strict": False, "config_diagnostics": ()}
        assert content(out, "p") == "Welcome to Acme."
    finally:
        watcher.stop()


def test_stop_returns_promptly_and_wait_for_build_gives_up(tree: tuple[Path, Path]) -> None:
    src, out = tree
    watcher = started(src, out)
    began = time.monotonic()
    watcher.stop()
    assert time.monotonic() - began < 5
    assert not watcher.running
    assert watcher.wait_for_build(0.1) is None


@pytest.mark.parametrize(
    ("name", "ignored"),
    [
        ("a.prompt.swp", True),
        ("a.prompt.swx", True),
        (".a.prompt.swo", True),
        ("a.prompt~", True),
        ("#a.prompt#", True),
        (".#a.prompt", True),
        ("4913", True),
        ("a.prompt.tmp", True),
        ("a.prompt___jb_tmp___", True),
        ("a.prompt", False),
        ("_partial.prompt", False),
        ("4913.prompt", False),
        ("#", False),
    ],
)
def test_editor_file_names(name: str, ignored: bool) -> None:
    assert is_editor_file(name) is ignored


def test_classify(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "src" / "build"
    watcher = Watcher(src, out, Config(), config_dirs=[tmp_path])
    assert watcher.classify(str(src / "a.prompt"), False) == "source"
    assert watcher.classify(str(src / "team"), True) == "source"
    assert watcher.classify(str(src), True) == "source"
    assert watcher.classify(str(src / "_part.prompt"), False) == "source"
    assert watcher.classify(str(src / "tools" / "search.json"), False) == "source"  # tools and schemas
    assert watcher.classify(str(src / "notes.txt"), False) is None
    assert watcher.classify(str(tmp_path / "pyproject.toml"), False) == "config"
    assert watcher.classify(str(src / "pyproject.toml"), False) is None
    for ignored in ["a.txt", "a.prompt.swp", ".git/x.prompt", "build", "build.promptc-tmp-1"]:
        assert watcher.classify(str(src / ignored), ignored == "build") is None, ignored
    # inside the output folder: what the watcher checks (the folder itself is what a build swaps)
    assert watcher.classify(str(out / "a.json"), False) == "output"
    assert watcher.classify(str(out / "team"), True) == "output"
    assert watcher.classify(str(out / "notes.md"), False) == "output"
    assert watcher.classify(str(tmp_path / "elsewhere.prompt"), False) is None


def test_wait_for_build_returns_after_the_result_callback_ran(tree: tuple[Path, Path]) -> None:
    src, out = tree
    seen: list[int] = []

    def slow(record: WatchBuild) -> None:
        time.sleep(0.2)
        seen.append(record.seq)

    watcher = started(src, out, on_result=slow)
    try:
        assert seen == [1]  # the initial build's callback ran before wait_for_build returned
        n = watcher.builds
        save(src / "a.prompt", "Version 2.\n")
        record = next_build(watcher, n)
        assert seen[-1] == record.seq
    finally:
        watcher.stop()


def test_watch_regenerates_the_configured_bindings(tmp_path: Path) -> None:
    """The driver owns the bindings stage, so the watch loop keeps `python_bindings` and
    `typescript_bindings` in step with every build (they went stale under watch before)."""
    src, out = tmp_path / "src", tmp_path / "out"
    py, ts = tmp_path / "app" / "prompts.py", tmp_path / "app" / "prompts.ts"
    write(src, "greet.prompt", "Hello ${name}.\n")
    config = Config(
        src=str(src), out=str(out), tokenizer="approx-bytes/4", python_bindings=str(py), typescript_bindings=str(ts)
    )
    watcher = Watcher(src, out, config, debounce=0.02).start()
    try:
        first = watcher.wait_for_build(TIMEOUT, after=0)
        assert first is not None and first.ok, first
        assert "def greet(*, name: Any) -> Rendered:" in py.read_text()
        assert "export function greet(" in ts.read_text()
        n = watcher.builds
        save(src / "farewell.prompt", "Goodbye ${who}.\n")
        record = next_build(watcher, n)
        assert record.ok and "farewell.prompt" in record.changes[0]
        assert "def farewell(*, who: Any) -> Rendered:" in py.read_text()
        assert "export function farewell(" in ts.read_text()
    finally:
        watcher.stop()


def test_a_watch_rebuild_reads_what_changed_and_its_manifest_is_a_clean_builds(tmp_path: Path, monkeypatch) -> None:
    """Each rebuild is handed the paths the watcher saw change and reads only those (no walk of
    the tree); the manifest it patches is, byte for byte, the one a clean build writes."""
    import promptc.driver as driver

    from .conftest import snapshot

    src, out = tmp_path / "src", tmp_path / "out"
    write(src, "d0/_part.prompt", "Shared.\n")
    for i in range(6):
        write(src, f"d{i % 2}/p{i}.prompt", f"/// include: _part\nPrompt {i} ${{x}}\n" if i % 2 == 0 else f"P {i}\n")
    handed: list[Any] = []
    walks: list[int] = []
    real_read_tree = driver.read_tree

    def spying(*args: Any, **kwargs: Any):
        handed.append(kwargs.get("changes"))
        return build(*args, **kwargs)

    def walk(*args: Any, **kwargs: Any):
        walks.append(1)
        return real_read_tree(*args, **kwargs)

    monkeypatch.setattr(driver, "read_tree", walk)
    watcher = started(src, out, builder=spying)
    try:
        for step, (path, text) in enumerate(
            [
                ("d0/p0.prompt", "/// include: _part\nPrompt 0 v2 ${x}\n"),
                ("d0/_part.prompt", "Shared v2.\n"),
                ("d1/p5.prompt", "P5 ${y}\n"),
            ]
        ):
            n = watcher.builds
            save(src / path, text)
            record = next_build(watcher, n)
            assert record.ok and str(src / path) in handed[-1], (step, handed[-1], record.diagnostics)
            assert record.compiled == (3 if path == "d0/_part.prompt" else 1)  # a partial: its includers
        n = watcher.builds
        (src / "d1/p3.prompt").unlink()
        assert next_build(watcher, n).removed == ("d1/p3",)
        assert watcher.wait_idle(TIMEOUT)
    finally:
        watcher.stop()
    assert len(walks) == 1, "a rebuild walked the whole tree"  # the initial build's walk only
    clean = build(src, tmp_path / "clean", Config(), incremental=False)
    assert clean.ok and snapshot(out) == snapshot(tmp_path / "clean")
