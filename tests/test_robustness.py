"""Hardening: nothing lost on a crash, on a full disk or with two builds at once; artifacts that do
not depend on the machine; and a build that never runs template code."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import promptc.driver.sources as sources_module
import promptc.runtime.buildfolder as output_module
from promptc.driver import build
from promptc.facts.config import Config

from .conftest import PROFILE, ROOT, examples, promptc_executable, snapshot, write

APPROX = Config(tokenizer="approx-bytes/4")


def _tree(root: Path, version: str, count: int) -> None:
    for i in range(count):
        write(
            root,
            f"prompts_src/group{i % 7}/p{i:03d}.prompt",
            f"/// flow: f{i}\n----- system -----\n/// section: rules stable\nVersion {version} rules {i}.\n"
            f"/// section: ctx dynamic\n{{% for x in items %}}{{{{ x }}}}{{% endfor %}} ${{name}}\n----- user -----\n${{q}}\n",
        )


def _assert_consistent(out: Path) -> dict[str, bytes]:
    files = snapshot(out)
    manifest = json.loads(files.pop("manifest.json"))
    assert sorted(files) == sorted(entry["path"] for entry in manifest["artifacts"].values())
    for entry in manifest["artifacts"].values():
        assert hashlib.sha256(files[entry["path"]]).hexdigest() == entry["sha256"]
    return snapshot(out)


def test_sigkill_at_random_moments_leaves_old_or_new_set(tmp_path: Path) -> None:
    """50 builds killed with SIGKILL at random moments: build/ is always one complete set."""
    rng = random.Random(7)
    _tree(tmp_path, "A", 80)
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    exe = promptc_executable()
    command = [exe, "build", "prompts_src", "-o", "build", "--tokenizer", "approx-bytes/4"]
    subprocess.run(command, cwd=tmp_path, env=env, check=True, capture_output=True)
    sets = {"A": _assert_consistent(tmp_path / "build")}
    _tree(tmp_path, "B", 80)
    started = time.perf_counter()
    subprocess.run(
        [*command[:-2], "--tokenizer", "approx-bytes/4", "-o", "reference"], cwd=tmp_path, env=env, check=True
    )
    full_build = time.perf_counter() - started
    sets["B"] = snapshot(tmp_path / "reference")
    current = "A"
    kills = 0
    # dev: 6 rounds (make test stays under a minute); the ci profile (.ci/run) 60
    rounds = 6 if PROFILE == "dev" else examples(30)
    for _ in range(rounds):
        target = "B" if current == "A" else "A"
        _tree(tmp_path, target, 80)
        process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, full_build * 1.2))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait()
        state = _assert_consistent(tmp_path / "build")
        if state == sets[target]:
            current = target
        else:
            assert state == sets[current], "build/ is neither the old nor the new set"
    assert kills >= rounds // 2, f"only {kills} of {rounds} builds were killed before finishing; the timing is off"


def test_disk_full_is_a_diagnostic_and_keeps_the_previous_build(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    for i in range(5):
        write(project, f"prompts_src/p{i}.prompt", f"Prompt {i}\n")
    assert build("prompts_src", "build", APPROX).ok
    before = snapshot(project / "build")
    for i in range(5):
        write(project, f"prompts_src/p{i}.prompt", f"Prompt {i}, changed\n")
    written = []

    def full_disk(path: Path, data: bytes) -> None:
        if len(written) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        written.append(path)
        path.write_bytes(data)

    monkeypatch.setattr(output_module, "write_new_file", full_disk)
    result = build("prompts_src", "build", APPROX)
    assert [d.code for d in result.diagnostics] == ["E904"]
    assert "No space left on device" in result.diagnostics[0].message
    assert result.diagnostics[0].hint == "free some disk space"
    assert snapshot(project / "build") == before
    assert sorted(p.name for p in project.iterdir()) == [".promptc-cache", "build", "prompts_src"]  # no debris


def test_permission_denied_is_a_diagnostic(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/p.prompt", "P\n")

    def denied(path: Path, data: bytes) -> None:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))

    monkeypatch.setattr(output_module, "write_new_file", denied)
    result = build("prompts_src", "build", APPROX)
    assert [d.code for d in result.diagnostics] == ["E904"]
    assert "Permission denied" in result.diagnostics[0].message
    assert not (project / "build").exists()


@pytest.mark.slow
def test_concurrent_builds_take_turns(tmp_path: Path) -> None:
    _tree(tmp_path, "A", 40)
    exe = promptc_executable()
    command = [exe, "build", "prompts_src", "-o", "build", "--tokenizer", "approx-bytes/4"]
    processes = [
        subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for _ in range(4)
    ]
    outputs = [p.communicate(timeout=120)[0].decode() for p in processes]
    assert [p.returncode for p in processes] == [0, 0, 0, 0], outputs
    _assert_consistent(tmp_path / "build")
    subprocess.run([*command[:-2], "--tokenizer", "approx-bytes/4", "-o", "clean"], cwd=tmp_path, check=True)
    assert snapshot(tmp_path / "build") == snapshot(tmp_path / "clean")


def test_second_build_waits_for_the_lock(project: Path, monkeypatch) -> None:
    import fcntl
    import threading

    monkeypatch.chdir(project)
    write(project, "prompts_src/p.prompt", "P\n")
    (project / ".promptc-cache").mkdir()
    handle = open(project / ".promptc-cache/build.lock", "a+b")
    fcntl.flock(handle, fcntl.LOCK_EX)
    threading.Timer(0.3, handle.close).start()  # the "other build" finishes after 0.3 s
    started = time.perf_counter()
    result = build("prompts_src", "build", APPROX)
    assert result.ok and result.written
    assert time.perf_counter() - started >= 0.25


def test_build_never_executes_template_code(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    marker = project / "MARKER"
    write(
        project,
        "prompts_src/evil.prompt",
        f"{{{{ __import__('os').system('touch {marker}') }}}}\n"
        f"{{# open('{marker}', 'w').write('x') #}}\n"
        f"{{% for x in __import__('pathlib').Path('{marker}').touch() or [] %}}{{% endfor %}}\n",
    )
    result = build("prompts_src", "build", APPROX)
    assert result.ok, result.diagnostics
    assert not marker.exists()
    assert json.loads((project / "build/evil.json").read_text())["renderer"] == "python"


@pytest.mark.slow
def test_artifacts_do_not_depend_on_the_machine(tmp_path: Path) -> None:
    """Locale, time zone, hash seed, listing order, checkout path and user: none reaches the bytes."""
    results = []
    for index, (locale, tz, seed, user, order) in enumerate(
        [("C", "UTC", "1", "alice", 1), ("C.UTF-8", "Asia/Kolkata", "999", "bob", -1)]
    ):
        root = tmp_path / f"checkout-{index}" / ("deep/er" if index else "x")
        names = ["b.prompt", "a.prompt", "sub/c.prompt", "_p.prompt"][::order]
        for name in names:  # files created in a different order: directory listing order differs
            body = {"_p.prompt": "Shared.\n"}.get(
                name, f"/// include: {'../' if '/' in name else ''}_p\n{name} ${{x}}\n"
            )
            write(root, f"prompts_src/{name}", body)
        env = {**os.environ, "LC_ALL": locale, "TZ": tz, "PYTHONHASHSEED": seed, "USER": user, "HOME": str(root)}
        subprocess.run([promptc_executable(), "build"], cwd=root, env=env, check=True, capture_output=True)
        results.append(snapshot(root / "build"))
        blob = b"".join(results[-1].values())
        assert str(tmp_path).encode() not in blob and user.encode() not in blob
    assert results[0] == results[1]


@pytest.mark.parametrize(("tokenizer", "expected"), [("cl100k_base", 5), ("o200k_base", 5)])
def test_tokenizer_never_loads_from_the_network(project: Path, tokenizer: str, expected: int) -> None:
    """cl100k_base and o200k_base counts come from bundled data even with no network at all."""
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('network disabled in this test')\n"
        "socket.socket.connect = refuse\nsocket.create_connection = refuse\n"
        "from promptc.compile import compile_text\n"
        "from promptc.facts.config import Config\n"
        f"r = compile_text('Hello world, offline.', config=Config(tokenizer={tokenizer!r}))\n"
        "print(r.artifact.totals.tokens)\n"
    )
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(project / "empty-cache"), "HOME": str(project)}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == expected


@pytest.mark.slow
def test_o200k_counts_agree_with_an_independent_encoder() -> None:
    """Our o200k_base (tiktoken on the bundled ranks) against bpe-openai's own Rust encoder."""
    import random

    import bpe_openai

    from promptc.backend.meter import meter

    ours, theirs = meter("o200k_base"), bpe_openai.get_encoding("o200k_base")
    rng = random.Random(7)
    alphabet = [chr(c) for c in (*range(32, 127), 0xE9, 0x4E2D, 0x1F642, 0x200B, 0x0A, 0x09, 0x3000, 0x301)]
    texts = [p.read_text(encoding="utf-8") for p in (ROOT / "prompts_src").rglob("*.prompt")]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 120))) for _ in range(300)]
    assert [ours.tokens(t) for t in texts] == [len(theirs.encode_ordinary(t)) for t in texts]


@pytest.mark.parametrize(
    "source",
    [
        "${",
        "${name",
        "{{",
        "{{ x",
        "{#",
        "{# x",
        "{%",
        "{% if x",
        "{% if x %}",
        "\\",
        "///",
        "/// key:",
        "-----",
        "----- user",
        "----- user -----",
    ],
)
def test_every_construct_unterminated_at_end_of_file(source: str) -> None:
    from promptc.compile import compile_text

    result = compile_text(source, config=APPROX)
    for d in result.diagnostics:
        assert d.line == 1 and 1 <= d.col <= len(source) + 1


@pytest.mark.slow
def test_watch_under_churn_ends_identical_to_a_clean_build(tmp_path: Path) -> None:
    """Hundreds of rapid edits, renames, deletions and broken saves across many files: once the
    watcher is idle, its output is byte-identical to a clean build of the final sources."""
    from promptc.driver.watch import Watcher

    rng = random.Random(11)
    src, out = tmp_path / "prompts_src", tmp_path / "build"
    names = [f"d{i % 4}/p{i:02d}.prompt" for i in range(24)]
    for name in names:
        write(src.parent, f"prompts_src/{name}", f"Prompt {name} v0 ${{x}}\n")
    watcher = Watcher(src, out, APPROX, debounce=0.02).start()
    try:
        assert watcher.wait_for_build(timeout=30, after=0) is not None
        for step in range(400):
            name = rng.choice(names)
            path = src / name
            action = rng.random()
            if action < 0.7:
                text = f"Prompt {name} v{step} ${{x}} {{% if a %}}{{{{ a }}}}{{% endif %}}\n"
                if rng.random() < 0.1:
                    text = "broken {{ oops\n"  # a save in the middle of typing
                temp = path.with_name(path.name + ".tmp")
                temp.parent.mkdir(parents=True, exist_ok=True)
                temp.write_text(text)
                os.replace(temp, path)  # editors save by rename
            elif action < 0.85 and path.exists():
                path.unlink()
            else:
                write(src.parent, f"prompts_src/{name}", f"Recreated {name} {step}\n")
            if step % 50 == 0:
                time.sleep(0.05)
        for name in names:  # end in a state where every source compiles
            path = src / name
            if path.exists() and "broken" in path.read_text():
                write(src.parent, f"prompts_src/{name}", f"Fixed {name}\n")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.5)  # let the kernel deliver the last events
            if watcher.wait_idle(timeout=30) and not watcher.pending:
                break
    finally:
        watcher.stop()
    clean = build(src, tmp_path / "clean", APPROX, incremental=False)
    assert clean.ok, clean.diagnostics
    assert snapshot(out) == snapshot(tmp_path / "clean")


def test_file_deleted_while_the_build_reads_the_tree(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/a.prompt", "A\n")
    write(project, "prompts_src/b.prompt", "B\n")
    real_open = open

    def deleting_open(path, *args, **kwargs):
        if str(path).endswith("b.prompt"):
            os.unlink(path)  # another process removes it between the listing and the read
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(sources_module, "open", deleting_open, raising=False)
    result = build("prompts_src", "build", APPROX)
    assert [(d.path, d.code) for d in result.diagnostics] == [("prompts_src/b.prompt", "E106")]
    assert not (project / "build").exists()


@pytest.mark.parametrize("text", ["", "/// only a comment\n/// and a directive-looking: line\n", "\n\n  \n"])
def test_empty_or_comment_only_file_warns_and_builds(project: Path, monkeypatch, text: str) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/empty.prompt", text)
    result = build("prompts_src", "build", APPROX)
    assert result.ok and [d.code for d in result.diagnostics] == ["W403"]
    assert json.loads((project / "build/empty.json").read_text())["messages"] == []


@pytest.mark.slow
def test_a_1mb_line_and_a_100000_line_file_compile() -> None:
    from promptc.compile import compile_source

    one_line = ("word " * 200_000 + "${x}\n").encode()
    lines = "".join(f"line {i} /// note\n" if i % 10 else f"line {i} ${{v{i % 7}}}\n" for i in range(100_000)).encode()
    for data in (one_line, lines):
        assert len(data) > 1_000_000
        result = compile_source("big.prompt", data, APPROX)
        assert result.ok, result.diagnostics[:3]
