"""Build semantics: deterministic bytes, all-or-nothing writes, incremental == clean, --locked."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from promptc.driver import build, check
from promptc.facts.config import Config
from promptc.runtime.buildfolder import BuildFolder

from .conftest import ROOT, snapshot, write

APPROX = Config(tokenizer="approx-bytes/4")

CHAT = """/// flow: support
/// param: temperature=0.2
----- system -----
You help with ${product}.
----- user -----
${question}
"""


def test_build_writes_artifacts_and_manifest(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/chat.prompt", CHAT)
    write(project, "prompts_src/sub/one.prompt", "Just text.\n")
    write(project, "prompts_src/sub/_part.prompt", "Partial text.\n")
    result = build("prompts_src", "build", APPROX)
    assert result.ok and result.written
    files = snapshot(project / "build")
    assert sorted(files) == ["chat.json", "manifest.json", "sub/one.json"]  # partials emit nothing
    manifest = json.loads(files["manifest.json"])
    for name, entry in manifest["artifacts"].items():
        data = files[entry["path"]]
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        artifact = json.loads(data)
        assert artifact["name"] == name
        source = (project / "prompts_src" / artifact["source"]).read_bytes()
        assert artifact["source_sha256"] == hashlib.sha256(source).hexdigest()
    assert json.loads(files["chat.json"])["inputs"] == ["product", "question"]


def test_failed_build_leaves_previous_build_byte_identical(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/a.prompt", "Hello ${name}.\n")
    write(project, "prompts_src/b.prompt", "Stable.\n")
    assert build("prompts_src", "build", APPROX).ok
    before = snapshot(project / "build")
    write(project, "prompts_src/a.prompt", "Changed ${name}.\n")  # a valid change…
    write(project, "prompts_src/b.prompt", "Broken {{ oops\n")  # …and an error elsewhere
    write(project, "prompts_src/c.prompt", "New file.\n")
    result = build("prompts_src", "build", APPROX)
    assert not result.ok and not result.written
    assert snapshot(project / "build") == before


def test_one_run_reports_every_bad_file(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/a.prompt", b"bad \xff utf8\n")
    write(project, "prompts_src/b.prompt", b"nul \x00 byte\n")
    write(project, "prompts_src/c.prompt", "unterminated ${name\n")
    write(project, "prompts_src/d.prompt", "{% if x %}never closed\n")
    write(project, "prompts_src/e.prompt", "fine\n")
    result = check("prompts_src", "build", APPROX)
    by_file = {(d.path, d.code) for d in result.diagnostics}
    assert by_file >= {
        ("prompts_src/a.prompt", "E101"),
        ("prompts_src/b.prompt", "E102"),
        ("prompts_src/c.prompt", "E201"),
        ("prompts_src/d.prompt", "E204"),
    }


def test_deleted_source_removes_its_artifact(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/a.prompt", "A\n")
    write(project, "prompts_src/b.prompt", "B\n")
    build("prompts_src", "build", APPROX)
    (project / "prompts_src/b.prompt").unlink()
    assert build("prompts_src", "build", APPROX).written
    assert sorted(snapshot(project / "build")) == ["a.json", "manifest.json"]
    assert "b" not in json.loads((project / "build/manifest.json").read_text())["artifacts"]


def test_noop_build_does_not_touch_the_output(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/a.prompt", "A\n")
    build("prompts_src", "build", APPROX)
    inode = os.stat(project / "build").st_ino
    result = build("prompts_src", "build", APPROX)
    assert result.unchanged and not result.written
    assert os.stat(project / "build").st_ino == inode


def test_incremental_build_equals_clean_build(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/_shared.prompt", "Shared v1.\n")
    write(project, "prompts_src/a.prompt", "/// include: _shared\nA ${x}\n")
    write(project, "prompts_src/b.prompt", "B\n")
    write(project, "prompts_src/c.prompt", "C\n")
    build("prompts_src", "build", APPROX)
    write(project, "prompts_src/_shared.prompt", "Shared v2.\n")  # must rebuild a (includes it)
    write(project, "prompts_src/b.prompt", "B changed\n")
    (project / "prompts_src/c.prompt").unlink()
    write(project, "prompts_src/d.prompt", "D\n")
    incremental = build("prompts_src", "build", APPROX)
    compiled = {p.name for p in incremental.prompts if not p.reused}
    assert compiled == {"a", "b", "d"}  # c is gone; nothing else was recompiled
    clean = build("prompts_src", "clean", APPROX, incremental=False)
    assert clean.ok
    assert snapshot(project / "build") == snapshot(project / "clean")


def test_incremental_cache_ignores_a_hand_edited_artifact(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/a.prompt", "A\n")
    build("prompts_src", "build", APPROX)
    good = (project / "build/a.json").read_bytes()
    (project / "build/a.json").write_bytes(b"{}")
    assert build("prompts_src", "build", APPROX).written
    assert (project / "build/a.json").read_bytes() == good


def test_check_locked_lists_stale_missing_and_extra_files(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/a.prompt", "A\n")
    write(project, "prompts_src/b.prompt", "B\n")
    build("prompts_src", "build", APPROX)
    assert check("prompts_src", "build", APPROX, locked=True).stale == ()
    write(project, "prompts_src/a.prompt", "A changed\n")
    (project / "build/b.json").unlink()
    write(project, "build/extra.json", "{}")
    result = check("prompts_src", "build", APPROX, locked=True)
    assert result.stale == ("a.json", "b.json", "extra.json", "manifest.json")
    assert {d.code for d in result.diagnostics} == {"E905"}


def _build_with_hashseed(seed: str, project: Path, out: str) -> dict[str, bytes]:
    env = {**os.environ, "PYTHONHASHSEED": seed, "LC_ALL": "C", "TZ": "Pacific/Kiritimati"}
    subprocess.run(
        [sys.executable, "-m", "promptc", "build", "prompts_src", "-o", out],
        cwd=project,
        env=env,
        check=True,
        capture_output=True,
    )
    return snapshot(project / out)


@pytest.mark.slow
def test_output_is_deterministic_across_hash_seeds(project: Path) -> None:
    for rel in ("checkout/payment_validation.prompt", "composum/translate.prompt", "support/chat.prompt"):
        write(project, f"prompts_src/{rel}", (ROOT / "prompts_src" / rel).read_bytes())
    write(project, "prompts_src/tpl.prompt", "{% for x in items %}{{ x }} {{ a or b }}{% endfor %} ${z}\n")
    first = _build_with_hashseed("1", project, "out1")
    second = _build_with_hashseed("4242", project, "out2")
    assert first and first == second


def test_parallel_compile_matches_serial(project: Path, monkeypatch) -> None:
    import promptc.driver.pool as pool_module

    monkeypatch.chdir(project)
    for i in range(60):
        write(
            project,
            f"prompts_src/p{i:02d}.prompt",
            f"/// section: s{i} stable\nPrompt {i}.\n/// section: d\n${{x{i}}}\n",
        )
    write(project, "prompts_src/p07.prompt", "/// sectoin: x\nPrompt 7 ${x7}.\n")  # a warning (W303)
    monkeypatch.setattr(pool_module, "_workers", lambda: 2)
    parallel = build("prompts_src", "par", APPROX, incremental=False)
    monkeypatch.setattr(pool_module, "_workers", lambda: 1)
    serial = build("prompts_src", "ser", APPROX, incremental=False)
    assert parallel.ok and serial.ok
    assert snapshot(project / "par") == snapshot(project / "ser")
    # a large build gets each entry back as its manifest piece: the prompts and the manifest it
    # hands out are still the ones on disk, and the warning is reported
    on_disk = BuildFolder(project / "par").manifest_or_none()
    assert on_disk is not None and parallel.manifest == on_disk == serial.manifest
    assert [p.entry for p in parallel.prompts] == [on_disk.artifacts[p.name] for p in parallel.prompts]
    assert [d.code for d in parallel.diagnostics] == [d.code for d in serial.diagnostics] == ["W303"]
    assert len(parallel.compiled) == 60 and all(p.ok and not p.reused for p in parallel.compiled)


def test_unwritable_output_is_a_diagnostic_and_keeps_the_old_build(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/a.prompt", "A\n")
    (project / "build").write_text("a file, not a folder")
    result = build("prompts_src", "build", APPROX)
    assert [d.code for d in result.diagnostics] == ["E904"]
    assert (project / "build").read_text() == "a file, not a folder"


@pytest.mark.parametrize("bad", ["prompts_src/missing"])
def test_missing_source_folder(project: Path, monkeypatch, bad: str) -> None:
    monkeypatch.chdir(project)
    result = build(bad, "build", APPROX)
    assert [d.code for d in result.diagnostics] == ["E906"]
    assert not (project / "build").exists()


def test_comment_only_edit_rebuilds_without_loading_the_tokenizer(project: Path) -> None:
    """Counts of unchanged texts come from the previous artifact; tiktoken is not even imported."""
    write(project, "prompts_src/a.prompt", "/// section: s stable\nStable text.\n/// section: d\nHello ${x}.\n")
    write(project, "prompts_src/b.prompt", "B\n")
    code = (
        "import sys\n"
        "if sys.argv[1] == 'blocked': sys.modules['tiktoken'] = None  # any import of it now fails\n"
        "from promptc.driver import build\n"
        "r = build('prompts_src', 'build')\n"
        "print(r.ok, [d.code for d in r.diagnostics], [p.name for p in r.prompts if not p.reused])\n"
    )

    def run(mode: str) -> str:
        result = subprocess.run([sys.executable, "-c", code, mode], cwd=project, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    assert run("normal") == "True [] ['a', 'b']"
    time.sleep(0.01)
    write(
        project,
        "prompts_src/a.prompt",
        "/// a new comment\n/// section: s stable\nStable text.\n/// section: d\nHello ${x}.\n",
    )
    assert run("blocked") == "True [] ['a']"
    write(project, "prompts_src/a.prompt", "/// section: s stable\nChanged text.\n/// section: d\nHello ${x}.\n")
    assert "E901" in run("blocked")  # a new text does need the tokenizer: proof the block works


def test_a_hand_edited_artifact_teaches_the_next_build_no_token_count(project: Path, monkeypatch) -> None:
    """The counts preloaded from the previous artifact come only from the bytes the build wrote:
    a count edited by hand in `build/` does not make its way into the rebuilt artifact."""
    monkeypatch.chdir(project)
    write(project, "prompts_src/a.prompt", "/// section: s stable\nStable text here.\n/// section: d\nHi ${x}.\n")
    assert build("prompts_src", "build").ok
    artifact = project / "build/a.json"
    data = json.loads(artifact.read_text())
    true_count = data["messages"][0]["blocks"][0]["sections"][0]["tokens"]
    data["messages"][0]["blocks"][0]["sections"][0]["tokens"] = true_count + 1000
    artifact.write_text(json.dumps(data, indent=2))
    write(
        project, "prompts_src/a.prompt", "/// c\n/// section: s stable\nStable text here.\n/// section: d\nHi ${x}.\n"
    )
    # a fresh process: this one's meter already knows the true count
    done = subprocess.run(
        [sys.executable, "-c", "from promptc.driver import build; assert build('prompts_src', 'build').ok"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    rebuilt = json.loads(artifact.read_text())
    assert rebuilt["messages"][0]["blocks"][0]["sections"][0]["tokens"] == true_count


def test_successive_incremental_builds_stay_identical_to_clean_builds(project: Path, monkeypatch) -> None:
    """The output is assembled from the previous build's shadow; after every kind of change
    (edit, delete, add, new folder, a hand-edited artifact) it must equal a clean build."""
    import random

    monkeypatch.chdir(project)
    rng = random.Random(5)
    names = [f"f{i % 3}/sub{i % 2}/p{i}.prompt" for i in range(12)]
    for name in names:
        write(project, f"prompts_src/{name}", f"{name} v0 ${{x}}\n")
    for step in range(25):
        for _ in range(rng.randint(1, 3)):
            name = rng.choice(names)
            path = project / "prompts_src" / name
            roll = rng.random()
            if roll < 0.5:
                write(project, f"prompts_src/{name}", f"{name} v{step} ${{x}}\n")
            elif roll < 0.75 and path.exists():
                path.unlink()
            else:
                write(project, f"prompts_src/new{step}/{name}", f"new {step}\n")
        if step % 7 == 3 and (project / "build").exists():
            victim = next((project / "build").rglob("p*.json"), None)
            if victim is not None:
                with open(victim, "r+b") as handle:  # an in-place edit: shared inodes must not leak it
                    handle.write(b"{}")
        result = build("prompts_src", "build", APPROX)
        assert result.ok
        assert build("prompts_src", "clean", APPROX, incremental=False).ok
        assert snapshot(project / "build") == snapshot(project / "clean"), f"step {step}"
        shutil.rmtree(project / "clean")


def test_a_reused_artifact_stays_reusable_when_the_output_holds_a_copy_of_it(project: Path, monkeypatch) -> None:
    """The output's shadow set may keep its own copy of an unchanged artifact (the same bytes,
    another inode) instead of a link of the live one. The cache must record the file that is
    there, or the next build recompiles every prompt (a 2,000-file tree then rebuilt in full on
    every other edit)."""
    import promptc.driver as driver

    monkeypatch.chdir(project)
    for i in range(3):
        write(project, f"prompts_src/p{i}.prompt", f"Prompt {i} ${{x}}\n")
    assert build("prompts_src", "build", APPROX).ok
    real_write = driver.write_output

    def write_then_copy(out, files, keep, shas, **known):
        written = real_write(out, files, keep, shas, **known)
        for rel in keep:  # what the shadow set can leave: same bytes, a file of its own
            target = out / rel
            shutil.copyfile(target, target.with_suffix(".copy"))
            os.replace(target.with_suffix(".copy"), target)
        return written

    monkeypatch.setattr(driver, "write_output", write_then_copy)
    write(project, "prompts_src/p0.prompt", "Prompt 0, edited ${x}\n")
    assert build("prompts_src", "build", APPROX).ok
    monkeypatch.setattr(driver, "write_output", real_write)
    write(project, "prompts_src/p0.prompt", "Prompt 0, edited again ${x}\n")
    result = build("prompts_src", "build", APPROX)
    assert result.ok and [p.source for p in result.prompts if not p.reused] == ["p0.prompt"]


def test_strict_build_compiles_each_prompt_once(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`build --strict` is one build whose warnings fail it (the driver owns strictness), not a
    check followed by a build: every prompt is compiled once, and nothing is written."""
    from promptc.compile import pipeline

    from .conftest import run_promptc

    write(project, "prompts_src/a.prompt", "/// sectoin: x\nText\n")  # W303
    write(project, "prompts_src/b.prompt", "Plain.\n")
    write(project, "prompts_src/c.prompt", "Hi ${name}.\n")
    compiled: list[str] = []
    real = pipeline.compile_prompt

    def counting(rel: str, *args, **kwargs):
        compiled.append(rel)
        return real(rel, *args, **kwargs)

    monkeypatch.setattr(pipeline, "compile_prompt", counting)
    done = run_promptc("build", "--strict", "--tokenizer", "approx-bytes/4", cwd=project)
    assert done.returncode == 1 and "error[W303]" in done.stdout, done.stdout
    assert sorted(compiled) == ["a.prompt", "b.prompt", "c.prompt"]
    assert not (project / "build").exists()
    compiled.clear()
    write(project, "prompts_src/a.prompt", "Text\n")
    done = run_promptc("build", "--strict", "--tokenizer", "approx-bytes/4", cwd=project)
    assert done.returncode == 0 and "build written: 3 prompts" in done.stdout, done.stdout
    assert sorted(compiled) == ["a.prompt", "b.prompt", "c.prompt"]


def test_the_library_build_writes_and_checks_the_configured_bindings(project: Path) -> None:
    """`promptc.build()` runs every stage the CLI does, bindings included, and `check(locked=True)`
    reports a bindings file that is not what the build would write."""
    write(project, "prompts_src/greet.prompt", "Hello ${name}.\n")
    config = Config(
        src=str(project / "prompts_src"),
        out=str(project / "build"),
        tokenizer="approx-bytes/4",
        python_bindings=str(project / "app" / "prompts.py"),
    )
    result = build(config=config)
    assert result.ok and result.written
    module = project / "app" / "prompts.py"
    assert "def greet(*, name: Any) -> Rendered:" in module.read_text()
    assert check(config=config, locked=True).ok
    module.write_text(module.read_text() + "# edited\n")
    stale = check(config=config, locked=True)
    assert not stale.ok and stale.stale == () and stale.stale_bindings == (str(module),)
    assert [d.code for d in stale.diagnostics] == ["E905"]
    build(config=config)  # unchanged artifacts: only the bindings file is rewritten
    assert "# edited" not in module.read_text()
