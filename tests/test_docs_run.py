"""Every command and code sample in README.md and docs/*.md runs, and the output the docs show is
the output promptc prints.

A fenced block is run by its language:

- `console`: each `$ command` line runs in bash, in a scratch copy of the repository (its
  `prompts_src/`, `build/`, `docs/examples/` and `pyproject.toml`) with the installed `promptc` on `PATH`; the lines
  after it, up to the next `$`, are its expected output (stdout and stderr together). A line `…`
  stands for any number of lines. A command shown without output must succeed.
- `python`: executed in the same kind of scratch copy.
- `toml`: a `[tool.promptc]` example, read by `load_config` without a diagnostic.

An HTML comment right before a block steers it: `<!-- docs-test: setup COMMAND -->` runs COMMAND
first (repeatable: the state the prose describes, e.g. after a typo), and
`<!-- docs-test: skip REASON -->` leaves out a block that cannot run here (one that loops until
Ctrl-C, or is the set-up itself); a skip must give its reason. `text` blocks (prompt sources,
grammar sketches) are not run; the diagnostics in docs/diagnostics.md are checked by
tests/test_docs.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN = ("console", "python", "toml")
MARK = re.compile(r"<!--\s*docs-test:\s*(setup|skip)\s*(.*?)\s*-->")
FENCE = re.compile(r"^```([a-z]*)\n(.*?)^```$", re.S | re.M)


@dataclass
class Sample:
    path: Path
    line: int
    language: str
    body: str
    setup: list[str] = field(default_factory=list)
    skip: str | None = None

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def samples() -> list[Sample]:
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            language = match.group(1)
            if language not in (*RUN, "sh"):
                continue
            before = text[: match.start()]
            # the HTML comments between the previous block (or paragraph) and this fence
            tail = before[before.rfind("```") + 3 if "```" in before else 0 :]
            tail = tail[tail.rfind("\n\n") + 2 :] if "\n\n" in tail.rstrip("\n") else tail
            sample = Sample(path, before.count("\n") + 1, language, match.group(2))
            for kind, value in MARK.findall(tail):
                if kind == "setup":
                    sample.setup.append(value)
                else:
                    sample.skip = value or None
                    assert value, f"{sample.id}: a docs-test skip needs its reason"
            found.append(sample)
    return found


SAMPLES = samples()


def test_every_sample_that_cannot_run_says_why() -> None:
    for sample in SAMPLES:
        if sample.language == "sh":
            assert sample.skip, f"{sample.id}: an `sh` block is not run; mark it `<!-- docs-test: skip REASON -->`"


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    for name in ("prompts_src", "build", "docs/examples"):
        shutil.copytree(ROOT / name, tmp_path / name, symlinks=True)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["CI"] = "true"  # plain output, as the docs show it
    return env


def _matches(expected: list[str], actual: list[str]) -> bool:
    """`expected` lines against `actual`, where a `…` line matches any run of lines."""
    pattern = "".join(".*?" if line == "…" else re.escape(line) + "\n" for line in expected)
    return re.fullmatch(pattern, "".join(line + "\n" for line in actual), re.S) is not None


def _run_console(sample: Sample, cwd: Path) -> None:
    commands: list[tuple[str, list[str]]] = []
    for line in sample.body.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands:
            commands[-1][1].append(line.rstrip())
    assert commands, f"{sample.id}: a console block without a `$ command`"
    for command, expected in commands:
        done = subprocess.run(["bash", "-c", command], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120)
        actual = [line.rstrip() for line in (done.stdout + done.stderr).splitlines()]
        if not expected:
            assert done.returncode == 0, f"{sample.id}: `{command}` failed:\n{done.stdout}{done.stderr}"
            continue
        assert _matches(expected, actual), (
            f"{sample.id}: `{command}` printed\n" + "\n".join(actual) + "\n\nbut the docs show\n" + "\n".join(expected)
        )


@pytest.mark.parametrize("sample", [s for s in SAMPLES if s.language in RUN], ids=lambda s: s.id)
def test_sample_runs_as_shown(sample: Sample, scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if sample.skip:
        pytest.skip(sample.skip)
    for command in sample.setup:
        subprocess.run(["bash", "-c", command], cwd=scratch, env=_env(), check=True, capture_output=True)
    if sample.language == "console":
        _run_console(sample, scratch)
    elif sample.language == "python":
        monkeypatch.chdir(scratch)
        exec(compile(sample.body, sample.id, "exec"), {"__name__": "__docs__"})
    else:
        from promptc.facts.config import load_config

        (scratch / "pyproject.toml").write_text(sample.body, encoding="utf-8")
        config, diagnostics = load_config(scratch / "pyproject.toml")
        assert diagnostics == [], f"{sample.id}: {[str(d) for d in diagnostics]}"
