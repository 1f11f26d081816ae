"""Shared test helpers: a scratch project folder and a runner for the installed `promptc`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent


#: How hard the randomised tests work. `make test` runs the quick profile (the suite stays under a
#: minute on two cores); `.ci/run` sets PROMPTC_TEST_PROFILE=ci for the fuller one.
PROFILE = os.environ.get("PROMPTC_TEST_PROFILE", "dev")
_SCALE = {"dev": 0.15, "ci": 2.0}.get(PROFILE, 1.0)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.register_profile("ci", deadline=None, print_blob=True, derandomize=False)
settings.load_profile("ci" if PROFILE == "ci" else "dev")


def examples(count: int) -> int:
    """`count` scaled by the test profile: how many examples a property test or fuzz loop runs."""
    return max(10, int(count * _SCALE))


def promptc_executable() -> str:
    """The console script installed next to the interpreter running the tests."""
    candidate = Path(sys.executable).with_name("promptc")
    if candidate.exists():
        return str(candidate)
    found = shutil.which("promptc")
    if not found:
        pytest.skip("promptc is not installed")
    return found


def run_promptc(
    *args: str,
    cwd: Path | str | None = None,
    env: dict | None = None,
    timeout: float = 120,
    real: bool = False,
    input: str | None = None,
) -> subprocess.CompletedProcess:
    """Run `promptc ARGS`. In-process through click's CliRunner by default (fast: no interpreter
    start-up); `real=True` runs the installed console script in a subprocess, as a user would."""
    if real:
        full_env = {**os.environ, **(env or {})}
        if env is None or "CI" not in env:
            full_env.pop("CI", None)
        return subprocess.run(
            [promptc_executable(), *args],
            cwd=cwd,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
        )
    import contextlib
    import traceback

    from click.testing import CliRunner

    from promptc.cli import main

    runner = CliRunner()
    overrides = {"CI": None, **(env or {})}
    with contextlib.chdir(cwd or os.getcwd()):
        result = runner.invoke(main, list(args), env=overrides, input=input, prog_name="promptc")
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # what the console script would print: a traceback (tests assert there is none)
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(["promptc", *args], result.exit_code, result.stdout, stderr)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project: tmp/prompts_src, build output goes to tmp/build."""
    (tmp_path / "prompts_src").mkdir()
    return tmp_path


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under a folder with its bytes (for 'byte-identical' assertions)."""
    if not folder.exists():
        return {}
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def node_bodies():
    """Render with the JavaScript runtime (`ci_only`: node): `ask(artifact_text, values, shape,
    model, options=None)` → `{"body": …}` or `{"error": "Name: message"}`, through one long-running
    tests/js_bodies.mjs."""
    node = shutil.which("node")
    assert node, "node is not installed (.ci/run installs it)"
    process = subprocess.Popen(
        [node, str(ROOT / "tests" / "js_bodies.mjs")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )

    def ask(
        artifact_text: str, inputs: dict, shape: str, model: str | None, options: dict | None = None
    ) -> dict[str, str]:
        job = {"artifact": artifact_text, "values": inputs, "shape": shape, "model": model, "options": options}
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(job) + "\n")
        process.stdin.flush()
        return json.loads(process.stdout.readline())

    yield ask
    assert process.stdin is not None
    process.stdin.close()
    process.wait(timeout=30)
