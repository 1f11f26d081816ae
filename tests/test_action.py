"""The GitHub Action (`action.yml`) and the workflow in docs/ci.md, run here as a runner would:
each `run:` step in bash (`bash --noprofile --norc -eo pipefail` for `shell: bash`, `bash -e`
without), with the `env:` it declares, `$GITHUB_PATH`, `$GITHUB_STEP_SUMMARY` and
`$RUNNER_TEMP`, against a two-commit git repository: `main` (the base) and a pull request that
busts a cache and adds an input. `uses:` steps (checkout, setup-python) are what this file sets up
itself. Nothing here talks to the network (pip runs with `PIP_NO_INDEX=1`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, promptc_executable, run_promptc

ACTION = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))

#: the only expressions the runner here evaluates (and so the only ones action.yml may use): a
#: whole value that is one context lookup
EXPRESSION = re.compile(r"^\$\{\{\s*(inputs|github)\.([A-Za-z0-9_-]+)\s*\}\}$")

SUPPORT_V1 = """\
/// input: question
----- system -----
/// section: rules stable
You are the support assistant of the demo shop. Answer briefly and politely; cite the order number.
----- user -----
${question}
"""

#: the pull request: the stable text changes (a cache bust on line 4) and a new input (a contract change)
SUPPORT_V2 = (
    SUPPORT_V1.replace("/// input: question", "/// input: question, customer").replace(
        "Answer briefly and politely", "Answer briefly, politely and in English"
    )
    + "(for ${customer})\n"
)


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _build(cwd: Path) -> None:
    done = run_promptc("build", cwd=cwd)  # in process: the steps run the installed command
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> Path:
    """`upstream` with `main` (commit 1) and a clone on the pull request's branch (commit 2), whose
    `origin/main` is deleted so that the steps must fetch the base as on a shallow checkout."""
    upstream = tmp_path_factory.mktemp("upstream")
    _git(upstream, "init", "-q", "-b", "main")
    (upstream / "pyproject.toml").write_text('[tool.promptc]\nsrc = "prompts_src"\nout = "build"\n')
    (upstream / "prompts_src").mkdir()
    (upstream / "prompts_src" / "support.prompt").write_text(SUPPORT_V1)
    _build(upstream)
    _git(upstream, "add", "-A")
    _git(upstream, "commit", "-q", "-m", "prompts")
    work = tmp_path_factory.mktemp("work") / "repo"
    _git(upstream.parent, "clone", "-q", f"file://{upstream}", str(work))
    _git(work, "checkout", "-q", "-b", "feature")
    (work / "prompts_src" / "support.prompt").write_text(SUPPORT_V2)
    _build(work)
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "reword the rules, greet the customer")
    _git(work, "update-ref", "-d", "refs/remotes/origin/main")
    return work


@dataclass
class Run:
    """What a job of steps left: each step's exit code and output, the job summary, the PATH."""

    steps: list[tuple[str, int, str]] = field(default_factory=list)
    summary: str = ""

    @property
    def ok(self) -> bool:
        return all(code == 0 for _, code, _ in self.steps)

    def output(self, name: str) -> str:
        return next(out for step, _, out in self.steps if step == name)


def _evaluate(value: object, contexts: dict[str, dict[str, str]]) -> str:
    text = str(value)
    if "${{" not in text:
        return text
    match = EXPRESSION.match(text)
    assert match, f"the runner here evaluates `${{{{ context.name }}}}` lookups only, not {text!r}"
    return contexts[match.group(1)].get(match.group(2), "")


def run_steps(
    steps: list[dict],
    workspace: Path,
    tmp: Path,
    *,
    inputs: dict[str, str] | None = None,
    github: dict[str, str] | None = None,
    path: list[str] = (),
    env: dict[str, str] | None = None,
    skip: tuple[str, ...] = (),
) -> Run:
    """Run the `run:` steps as a runner does, stopping at the first that fails."""
    declared = ACTION.get("inputs", {}) if steps is ACTION["runs"]["steps"] else {}
    values = {name: str(spec.get("default", "")) for name, spec in declared.items()}
    values.update(inputs or {})
    contexts = {"inputs": values, "github": github or {}}
    runner_temp = tmp / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    github_path = tmp / "github-path"
    summary = tmp / "step-summary.md"
    for file in (github_path, summary):
        file.write_text("")
    extra_path = list(path)
    run = Run()
    for step in steps:
        name = step.get("name", step.get("uses", "?"))
        if "uses" in step or name in skip:
            continue
        script = step["run"]
        assert "${{" not in script, f"{name}: an expression pasted into a script is a script injection"
        shell = step.get("shell")
        command = ["bash", "--noprofile", "--norc", "-eo", "pipefail"] if shell == "bash" else ["bash", "-e"]
        folder = workspace / _evaluate(step.get("working-directory", "."), contexts)
        step_env = {
            **os.environ,
            **(env or {}),
            "RUNNER_TEMP": str(runner_temp),
            "GITHUB_PATH": str(github_path),
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_ACTIONS": "true",
            "CI": "true",
        }
        step_env.pop("PYTHONDONTWRITEBYTECODE", None)
        for key, value in (step.get("env") or {}).items():
            step_env[key] = _evaluate(value, contexts)
        step_env["PATH"] = os.pathsep.join([*extra_path, step_env["PATH"]])
        script_file = tmp / "step.sh"
        script_file.write_text(script)
        done = subprocess.run(
            [*command, str(script_file)],
            cwd=folder,
            env=step_env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        run.steps.append((name, done.returncode, done.stdout + done.stderr))
        # what a step appends to $GITHUB_PATH is on PATH for the steps after it
        extra_path = [line for line in reversed(github_path.read_text().splitlines()) if line] + list(path)
        if done.returncode != 0:
            break
    run.summary = summary.read_text()
    return run


def _installed_promptc() -> list[str]:
    return [str(Path(promptc_executable()).parent)]


def test_action_yml_declares_what_its_steps_read() -> None:
    """Every input a step reads is declared, every step is bash, and no expression is pasted into
    a script (inputs reach the scripts as environment variables only)."""
    assert ACTION["runs"]["using"] == "composite"
    declared = set(ACTION["inputs"])
    used: set[str] = set()
    for step in ACTION["runs"]["steps"]:
        assert step["shell"] == "bash" and "${{" not in step["run"]
        for value in [*(step.get("env") or {}).values(), step.get("working-directory", "")]:
            for context, name in re.findall(r"\$\{\{\s*(\w+)\.([\w-]+)\s*\}\}", str(value)):
                if context == "inputs":
                    used.add(name)
    assert used == declared, f"declared but unused: {declared - used}; used but undeclared: {used - declared}"
    for name, spec in ACTION["inputs"].items():
        assert spec.get("description"), name


@pytest.mark.slow  # the whole action, step by step, in a two-commit repository; CI runs it
def test_the_action_reports_a_bust_and_fails_on_the_contract_change(repository: Path, tmp_path: Path) -> None:
    """On the pull request, with the default `fail-on: contract`: the check step passes, the diff
    step fetches `origin/main`, annotates the bust on the line that changed, fails on the added
    input, and the job summary has both in tables."""
    run = run_steps(
        ACTION["runs"]["steps"],
        repository,
        tmp_path,
        github={"base_ref": "main", "event_name": "pull_request"},
        path=_installed_promptc(),
        skip=("Install promptc",),
    )
    names = [name for name, _, _ in run.steps]
    assert names == ["build/ matches the sources", "Prompt changes against the base"]
    assert run.steps[0][1] == 0, run.steps[0][2]
    name, code, output = run.steps[1]
    assert code == 1, output
    assert "::error title=promptc%3A input contract" in output or "::error file=" in output
    bust = next(line for line in output.splitlines() if "cache bust" in line)
    assert bust.startswith("::warning file=prompts_src/support.prompt,line=4,"), bust
    assert "diff failed: contract (--fail-on)" in output
    summary = run.summary
    assert (
        "### promptc check --locked: build matches the sources ✅\n\n### promptc diff against origin\\/main" in summary
    )
    assert "❌ **fails**: contract" in summary
    assert "#### Cache busts (1)" in summary and "| support |" in summary
    assert "prompts\\_src\\/support\\.prompt\\:4\\:" in summary
    assert "#### Input contract changes (1)" in summary and "| support | customer | — | — | **yes** |" in summary


@pytest.mark.slow
def test_report_only_passes_and_a_stale_build_fails_the_check_step(repository: Path, tmp_path: Path) -> None:
    report = (
        run_steps(
            ACTION["runs"]["steps"],
            repository,
            tmp_path / "a",
            inputs={"fail-on": ""},
            github={"base_ref": "main"},
            path=_installed_promptc(),
            skip=("Install promptc",),
        )
        if (tmp_path / "a").mkdir() is None
        else None
    )
    assert report is not None and report.ok, report.steps
    assert "✅ no change of a kind named by `--fail-on`" in report.summary
    # not a pull request and no base: nothing to compare, the step says so and passes
    push = run_steps(
        ACTION["runs"]["steps"], repository, tmp_path, path=_installed_promptc(), skip=("Install promptc",)
    )
    assert push.ok and "no base revision to compare with" in push.output("Prompt changes against the base")
    # a source edited without rebuilding: the check step fails (E905), the diff does not run
    stale = tmp_path / "stale"
    shutil.copytree(repository, stale)
    (stale / "prompts_src" / "support.prompt").write_text(SUPPORT_V2.replace("briefly", "shortly"))
    failed = run_steps(
        ACTION["runs"]["steps"],
        stale,
        tmp_path,
        inputs={"sarif": "promptc.sarif"},
        github={"base_ref": "main"},
        path=_installed_promptc(),
        skip=("Install promptc",),
    )
    assert [(name, code) for name, code, _ in failed.steps] == [("build/ matches the sources", 1)]
    assert "E905" in failed.output("build/ matches the sources")
    assert "| E905 |" in failed.summary and "Run `promptc build` and commit the result." in failed.summary
    log = json.loads((stale / "promptc.sarif").read_text())
    assert {r["ruleId"] for r in log["runs"][0]["results"]} == {"E905"}


def _tree_copy(into: Path) -> Path:
    """What the promptc repository's checkout holds for an install (as tests/test_wheel.py copies it)."""
    into.mkdir(parents=True)
    for name in ("pyproject.toml", "setup.cfg", "README.md"):
        shutil.copy(ROOT / name, into / name)
    for name in ("compiler", "grammar"):
        shutil.copytree(ROOT / name, into / name, ignore=shutil.ignore_patterns("__pycache__"))
    return into


def _python_wrapper(tmp: Path) -> Path:
    """A `python3` for the steps: the real interpreter, whose new virtual environments see this
    test environment's packages (a .pth line), so pip installs promptc itself offline and resolves
    its dependencies as already satisfied (what setup-python plus the package index give in CI)."""
    real = getattr(sys, "_base_executable", sys.executable)
    site = sysconfig.get_paths()["purelib"]
    wrapper = tmp / "bin" / "python3"
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    wrapper.write_text(
        "#!/bin/bash\n"
        f'"{real}" "$@" || exit $?\n'
        'if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then\n'
        '  purelib=$("${@: -1}/bin/python" -c "import sysconfig; print(sysconfig.get_paths()[\'purelib\'])")\n'
        f'  echo "{site}" > "$purelib/_promptc_test_deps.pth"\n'
        "fi\n"
    )
    wrapper.chmod(0o755)
    return wrapper


OFFLINE_PIP = {"PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


@pytest.mark.slow
def test_the_whole_action_installs_promptc_from_its_own_checkout(repository: Path, tmp_path: Path) -> None:
    """With every step, the install step included: promptc comes from the action's checkout
    (`github.action_path`), lands on PATH through `$GITHUB_PATH`, and the later steps use it."""
    action_path = _tree_copy(tmp_path / "action")
    python = _python_wrapper(tmp_path)
    run = run_steps(
        ACTION["runs"]["steps"],
        repository,
        tmp_path,
        inputs={"python": str(python)},
        github={"base_ref": "main", "action_path": str(action_path)},
        env={**OFFLINE_PIP, "PATH": "/usr/bin:/bin"},
    )
    assert [(name, code) for name, code, _ in run.steps] == [
        ("Install promptc", 0),
        ("build/ matches the sources", 0),
        ("Prompt changes against the base", 1),
    ], run.steps
    assert "promptc 0.1.0" in run.output("Install promptc")
    assert "#### Cache busts (1)" in run.summary


def _docs_workflow() -> dict:
    text = (ROOT / "docs" / "ci.md").read_text("utf-8")
    block = next(
        m.group(1)
        for m in re.finditer(r"^```yaml\n(.*?)^```$", text, re.S | re.M)
        if m.group(1).startswith("# .github/workflows/prompts.yml")
    )
    return yaml.safe_load(block)


@pytest.mark.slow
def test_the_workflow_in_ci_md_runs_as_written(repository: Path, tmp_path: Path) -> None:
    """docs/ci.md's workflow, step by step: the wheel built from the promptc repository and
    committed under vendor/ installs, the check passes, the diff fetches the base branch and fails
    on the contract change with the bust annotated."""
    work = tmp_path / "repo"
    shutil.copytree(repository, work)
    workflow = _docs_workflow()
    steps = workflow["jobs"]["promptc"]["steps"]
    install = next(step["run"] for step in steps if step.get("name") == "Install promptc")
    wheel = re.search(r"vendor/(\S+\.whl)", install)
    assert wheel, install
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(work / "vendor")]
        + [str(_tree_copy(tmp_path / "promptc"))],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    assert (work / "vendor" / wheel.group(1)).is_file(), sorted(p.name for p in (work / "vendor").iterdir())
    # what actions/setup-python leaves: a python3 and its pip first on PATH
    venv = tmp_path / "setup-python"
    subprocess.run([str(_python_wrapper(tmp_path)), "-m", "venv", str(venv)], check=True, timeout=300)
    run = run_steps(
        steps,
        work,
        tmp_path,
        github={"base_ref": "main", "event_name": "pull_request"},
        path=[str(venv / "bin")],
        env={**OFFLINE_PIP, "PATH": "/usr/bin:/bin"},
    )
    assert [code for _, code, _ in run.steps] == [0, 0, 1], run.steps
    diff = run.steps[-1][2]
    assert "::warning file=prompts_src/support.prompt,line=4," in diff and "diff failed: contract" in diff
    assert "#### Input contract changes (1)" in run.summary
