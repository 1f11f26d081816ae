"""Runtime helpers that collect the inputs of the built-in partials (`std/env`, `std/git`, `std/date`).

The keys returned here are exactly the placeholders of those partials, namespaced (`env_*`, `git_*`,
`today`) so they do not collide with a prompt's own inputs:

    rt = load("build", unknown_inputs="ignore")  # one set of values, many prompts
    rt.render("review", question=q, **env_inputs(), **git_inputs(), **date_inputs())

Every value is a string. These helpers never raise: outside a git repository, without git installed,
or when git hangs (each call has a timeout), fields fall back to `"unknown"` (one-line fields) or
`"(unknown)"` (multi-line fields), so a session can always start. Like sysprompt's `EnvInfo` /
`GitInfo`, the result is a snapshot; the `std/git` partial tells the model so.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys

UNKNOWN = "unknown"
UNKNOWN_BLOCK = "(unknown)"
#: Seconds per git call: a snapshot must never stall session start (network filesystems, huge repos).
GIT_TIMEOUT = 3.0
RECENT_COMMITS = 5

ENV_KEYS = ("env_cwd", "env_is_git_repo", "env_platform", "env_shell", "env_os_version")
GIT_KEYS = ("git_branch", "git_main_branch", "git_user", "git_status", "git_recent_commits")
DATE_KEYS = ("today",)


def _git(args: list[str], cwd: str | os.PathLike[str] | None) -> str | None:
    """Run `git ARGS`; the stripped stdout, or None on any failure (no git, not a repo, timeout…)."""
    env = dict(os.environ)
    # A snapshot must not take the index lock (it would race the user's own git commands), must not
    # prompt for credentials, and must print paths in UTF-8 rather than octal escapes.
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    command = ["git", "-c", "core.quotepath=off", "-c", "color.ui=false", *args]
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except Exception:  # FileNotFoundError (no git), TimeoutExpired, PermissionError, bad cwd…
        return None
    if done.returncode != 0:
        return None
    return done.stdout.rstrip("\n")


def _os_version() -> str:
    try:
        system, release = platform.system(), platform.release()
    except Exception:
        return UNKNOWN
    return f"{system} {release}".strip() or UNKNOWN


def _cwd(cwd: str | os.PathLike[str] | None) -> str:
    if cwd is not None:
        return os.fspath(cwd)
    try:
        return os.getcwd()
    except OSError:  # the working folder was deleted under us
        return UNKNOWN


def is_git_repo(cwd: str | os.PathLike[str] | None = None) -> bool:
    return _git(["rev-parse", "--is-inside-work-tree"], cwd) == "true"


def env_inputs(cwd: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Inputs of `std/env`: the environment snapshot (sysprompt's `EnvInfo`)."""
    folder = _cwd(cwd)
    return {
        "env_cwd": folder,
        "env_is_git_repo": "Yes" if folder != UNKNOWN and is_git_repo(folder) else "No",
        "env_platform": sys.platform or UNKNOWN,
        "env_shell": os.environ.get("SHELL") or os.environ.get("COMSPEC") or UNKNOWN,
        "env_os_version": _os_version(),
    }


def _branch(cwd: str | os.PathLike[str] | None) -> str:
    # symbolic-ref works on an unborn branch (a fresh `git init`), where rev-parse HEAD fails.
    name = _git(["symbolic-ref", "--short", "-q", "HEAD"], cwd)
    if name:
        return name
    sha = _git(["rev-parse", "--short", "HEAD"], cwd)
    return f"(detached at {sha})" if sha else UNKNOWN


def _main_branch(cwd: str | os.PathLike[str] | None) -> str:
    remote_head = _git(["symbolic-ref", "--short", "-q", "refs/remotes/origin/HEAD"], cwd)
    if remote_head:
        return remote_head.split("/", 1)[1] if "/" in remote_head else remote_head
    for candidate in ("main", "master"):
        for ref in (f"refs/heads/{candidate}", f"refs/remotes/origin/{candidate}"):
            if _git(["show-ref", "--verify", "--quiet", ref], cwd) is not None:
                return candidate
    return UNKNOWN


def _status(cwd: str | os.PathLike[str] | None) -> str:
    out = _git(["status", "--porcelain", "-b"], cwd)
    if out is None:
        return UNKNOWN_BLOCK
    lines = [line for line in out.splitlines() if line]
    changes = [line for line in lines if not line.startswith("## ")]
    # `-b` always prints the `## branch` header; with no other line the tree is clean, so say it.
    return "\n".join([*lines, "(clean)"] if not changes else lines)


def _recent_commits(cwd: str | os.PathLike[str] | None) -> str:
    out = _git(["log", "--oneline", "--no-decorate", "-n", str(RECENT_COMMITS)], cwd)
    if out is None:
        # `git log` fails on an unborn branch: distinguish "no commits yet" from "cannot tell".
        return "(no commits yet)" if _git(["rev-parse", "--git-dir"], cwd) is not None else UNKNOWN_BLOCK
    return out or "(no commits yet)"


def git_inputs(cwd: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Inputs of `std/git`: branch, main branch, user, `git status --porcelain -b`, recent commits."""
    folder = _cwd(cwd)
    if folder == UNKNOWN or not is_git_repo(folder):
        return {
            "git_branch": UNKNOWN,
            "git_main_branch": UNKNOWN,
            "git_user": UNKNOWN,
            "git_status": UNKNOWN_BLOCK,
            "git_recent_commits": UNKNOWN_BLOCK,
        }
    return {
        "git_branch": _branch(folder),
        "git_main_branch": _main_branch(folder),
        "git_user": _git(["config", "user.name"], folder) or UNKNOWN,
        "git_status": _status(folder),
        "git_recent_commits": _recent_commits(folder),
    }


def date_inputs(today: _dt.date | None = None) -> dict[str, str]:
    """Inputs of `std/date`: today's date, ISO 8601 (local time unless a date is passed)."""
    day = today or _dt.date.today()
    if isinstance(day, _dt.datetime):  # a datetime is a date too; keep the date part only
        day = day.date()
    return {"today": day.isoformat()}


__all__ = ["env_inputs", "git_inputs", "date_inputs", "is_git_repo", "ENV_KEYS", "GIT_KEYS", "DATE_KEYS"]
