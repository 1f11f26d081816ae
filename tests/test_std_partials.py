"""Built-in partials std/env, std/git, std/date and the helpers that collect their inputs."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from promptc import compile_text
from promptc.runtime import envinfo
from promptc.runtime.envinfo import DATE_KEYS, ENV_KEYS, GIT_KEYS, date_inputs, env_inputs, git_inputs
from promptc.runtime.render import render_artifact

HAS_GIT = shutil.which("git") is not None
needs_git = pytest.mark.skipif(not HAS_GIT, reason="git is not installed")


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory, monkeypatch):
    """No user or system git config leaks into the tests (default branch, user name, hooks…)."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CEILING_DIRECTORIES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(Path(tmp_path_factory.getbasetemp()).parent))


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def std_text(name: str) -> str:
    return resources.files("promptc.std").joinpath(f"{name}.prompt").read_text(encoding="utf-8")


def placeholders(text: str) -> set[str]:
    return set(re.findall(r"(?<!\\)\$\{([A-Za-z_][A-Za-z0-9_]*)\}", text))


# ---------------------------------------------------------------------------------------------
# env_inputs


def test_env_inputs_keys_and_values(tmp_path: Path):
    info = env_inputs(tmp_path)
    assert tuple(info) == ENV_KEYS
    assert all(isinstance(v, str) and v for v in info.values())
    assert info["env_cwd"] == str(tmp_path)
    assert info["env_is_git_repo"] == "No"
    assert info["env_platform"] == sys.platform


def test_env_inputs_defaults_to_the_current_folder(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert env_inputs()["env_cwd"] == os.getcwd()


@needs_git
def test_env_inputs_inside_a_repository(tmp_path: Path):
    git(tmp_path, "init", "-q")
    (tmp_path / "sub").mkdir()
    assert env_inputs(tmp_path / "sub")["env_is_git_repo"] == "Yes"


# ---------------------------------------------------------------------------------------------
# git_inputs

UNKNOWN_GIT = {
    "git_branch": "unknown",
    "git_main_branch": "unknown",
    "git_user": "unknown",
    "git_status": "(unknown)",
    "git_recent_commits": "(unknown)",
}


def test_git_inputs_outside_a_repository(tmp_path: Path):
    info = git_inputs(tmp_path)
    assert tuple(info) == GIT_KEYS
    assert info == UNKNOWN_GIT


def test_git_inputs_in_a_missing_folder(tmp_path: Path):
    assert git_inputs(tmp_path / "gone") == UNKNOWN_GIT
    assert env_inputs(tmp_path / "gone")["env_is_git_repo"] == "No"


def test_without_git_installed(tmp_path: Path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert git_inputs(tmp_path) == UNKNOWN_GIT
    assert env_inputs(tmp_path)["env_is_git_repo"] == "No"


def test_git_that_hangs_or_breaks(tmp_path: Path, monkeypatch):
    def hang(*args, **kwargs):
        raise subprocess.TimeoutExpired(args[0], envinfo.GIT_TIMEOUT)

    monkeypatch.setattr(envinfo.subprocess, "run", hang)
    assert git_inputs(tmp_path) == UNKNOWN_GIT

    def broken(*args, **kwargs):
        raise PermissionError("denied")

    monkeypatch.setattr(envinfo.subprocess, "run", broken)
    assert git_inputs(tmp_path) == UNKNOWN_GIT
    assert env_inputs(tmp_path)["env_is_git_repo"] == "No"


@needs_git
def test_git_inputs_fresh_repository_without_commits(tmp_path: Path):
    git(tmp_path, "init", "-q", "-b", "trunk")
    info = git_inputs(tmp_path)
    assert info["git_branch"] == "trunk"
    assert info["git_main_branch"] == "unknown"
    assert info["git_user"] == "unknown"
    assert info["git_status"].splitlines()[0].startswith("## ")
    assert info["git_recent_commits"] == "(no commits yet)"


@needs_git
def test_git_inputs_in_a_repository(tmp_path: Path):
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.name", "Ada Lovelace")
    git(tmp_path, "config", "user.email", "ada@example.com")
    (tmp_path / "a.txt").write_text("a\n")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-q", "-m", "first commit")
    git(tmp_path, "checkout", "-q", "-b", "feature")
    (tmp_path / "a.txt").write_text("changed\n")
    git(tmp_path, "commit", "-q", "-am", "second commit")

    clean = git_inputs(tmp_path)
    assert tuple(clean) == GIT_KEYS
    assert clean["git_branch"] == "feature"
    assert clean["git_main_branch"] == "main"
    assert clean["git_user"] == "Ada Lovelace"
    assert clean["git_status"] == "## feature\n(clean)"
    commits = clean["git_recent_commits"].splitlines()
    assert [line.split(" ", 1)[1] for line in commits] == ["second commit", "first commit"]

    (tmp_path / "new file é.txt").write_text("x\n")
    (tmp_path / "a.txt").write_text("again\n")
    dirty = git_inputs(tmp_path)["git_status"].splitlines()
    assert dirty[0] == "## feature"
    assert " M a.txt" in dirty
    # core.quotepath=off: UTF-8 names rather than octal escapes (git still quotes names with spaces)
    assert any(line.startswith("?? ") and "new file é.txt" in line for line in dirty)
    assert "(clean)" not in dirty


@needs_git
def test_main_branch_prefers_origin_head(tmp_path: Path):
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "develop")
    git(upstream, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "--allow-empty", "-m", "root")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream), str(clone))
    assert git_inputs(clone)["git_main_branch"] == "develop"


@needs_git
def test_git_never_takes_the_index_lock(tmp_path: Path, monkeypatch):
    seen = []
    real_run = subprocess.run

    def spy(*args, **kwargs):
        seen.append(kwargs.get("env", {}).get("GIT_OPTIONAL_LOCKS"))
        return real_run(*args, **kwargs)

    monkeypatch.setattr(envinfo.subprocess, "run", spy)
    git_inputs(tmp_path)
    assert seen and set(seen) == {"0"}


# ---------------------------------------------------------------------------------------------
# date_inputs


def test_date_inputs():
    assert date_inputs(dt.date(2024, 2, 29)) == {"today": "2024-02-29"}
    assert date_inputs(dt.datetime(2024, 2, 29, 23, 59)) == {"today": "2024-02-29"}
    today = date_inputs()
    assert tuple(today) == DATE_KEYS
    assert today["today"] in {dt.date.today().isoformat(), (dt.date.today() - dt.timedelta(days=1)).isoformat()}


# ---------------------------------------------------------------------------------------------
# The partials


@pytest.mark.parametrize(("name", "keys"), [("env", ENV_KEYS), ("git", GIT_KEYS), ("date", DATE_KEYS)])
def test_partial_placeholders_are_exactly_the_helper_keys(name, keys):
    assert placeholders(std_text(name)) == set(keys)


def compile_with(includes: str) -> dict:
    result = compile_text(f"----- system -----\nBe brief.\n{includes}----- user -----\n${{question}}\n", name="p")
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert result.artifact is not None and not errors, result.diagnostics
    assert not result.diagnostics, result.diagnostics
    return result.artifact.to_json()


def sections(artifact: dict) -> dict[str, dict]:
    return {s["name"]: s for m in artifact["messages"] for b in m["blocks"] for s in b["sections"]}


def test_std_partials_compile_with_the_expected_sections():
    art = compile_with("/// include: std/env\n/// include: std/git\n/// include: std/date\n")
    assert set(art["inputs"]) == {*ENV_KEYS, *GIT_KEYS, *DATE_KEYS, "question"}
    found = sections(art)
    assert (found["std.env"]["boundary"], found["std.env"]["target"]) == ("dynamic", "system")
    assert (found["std.git"]["boundary"], found["std.git"]["target"]) == ("dynamic", "system")
    assert (found["std.date"]["boundary"], found["std.date"]["target"]) == ("dynamic", "user_context")
    # the stable text before them is the cache prefix; the snapshots never are
    end = art["cache"]["prefix_end"]
    assert (end["message"], end["block"], end["source"], end["line"]) == (0, 0, "<std>/env.prompt", 4)
    assert end["reason"] == 'section "std.env" is dynamic'  # the partial's own line
    assert [s["name"] for s in art["messages"][0]["blocks"][0]["sections"]] == ["body"]


def test_git_partial_warns_that_it_is_a_snapshot():
    text = std_text("git").lower()
    assert "snapshot" in text and "start of the session" in text


@needs_git
def test_std_partials_render_with_the_helpers(tmp_path: Path):
    git(tmp_path, "init", "-q", "-b", "main")
    art = compile_with("/// include: std/env\n/// include: std/git\n/// include: std/date\n")
    inputs = {
        **env_inputs(tmp_path),
        **git_inputs(tmp_path),
        **date_inputs(dt.date(2030, 1, 2)),
        "question": "What changed?",
    }
    rendered = render_artifact(art, inputs)
    system = rendered.messages[0]["content"]
    assert system.startswith("Be brief.\n\n")
    assert f"Working directory: {tmp_path}" in system
    assert "Is directory a git repo: Yes" in system
    assert "Current branch: main" in system
    assert "snapshot" in system
    assert "${" not in system
    user = rendered.messages[1]["content"]
    assert "Today's date is 2030-01-02." in user
    assert user.endswith("What changed?")


def test_std_partials_render_outside_a_repository(tmp_path: Path):
    art = compile_with("/// include: std/env\n/// include: std/git\n")
    rendered = render_artifact(art, {**env_inputs(tmp_path), **git_inputs(tmp_path), "question": "q"})
    system = rendered.messages[0]["content"]
    assert "Is directory a git repo: No" in system
    assert "Current branch: unknown" in system


def test_env_partial_alone_in_a_file_without_separators():
    result = compile_text("/// include: std/env\n", name="env_only")
    assert result.artifact is not None and not result.diagnostics
    assert result.artifact.inputs == tuple(sorted(ENV_KEYS))
    assert result.artifact.cache.prefix_sha256 is None
