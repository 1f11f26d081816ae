"""Cache insight (issue 16): why the prefix ends where it does (`cache.prefix_end`, W710, inspect)
and what a change busts (`promptc diff --old-src`, `--against REV`)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from promptc.compile import compile_text
from promptc.facts.config import Config

from .conftest import run_promptc, write

REPO = Path(__file__).resolve().parent.parent
APPROX = Config(tokenizer="approx-bytes/4")
LONG = "Answer briefly and politely, cite the relevant help-centre article, never invent prices or policies. " * 3


def _end(text: str, partials: dict[str, str] | None = None, config: Config = APPROX) -> dict:
    compiled = compile_text(text, name="p", partials=partials, config=config)
    assert compiled.artifact is not None, compiled.diagnostics
    return compiled.artifact.to_json()["cache"]["prefix_end"]


def _codes(text: str, config: Config = APPROX, **kwargs) -> list[str]:
    return [d.code for d in compile_text(text, name="p", config=config, **kwargs).diagnostics]


# ---------------------------------------------------------------------------------------------
# cache.prefix_end: where and why


@pytest.mark.parametrize(
    ("text", "where", "reason"),
    [
        ("Stable first.\n\nHello ${user.name}, welcome.\n", (3, 7), "input ${user.name}"),
        ("Rules.\n{% for x in items %}- {{ x }}\n{% endfor %}\n", (2, 1), "a {% for %} block"),
        ("Rules.\nToday is {{ today() }}.\n", (2, 10), "a {{ }} block"),
        ("Rules.\n{# n = 1 #}\n", (2, 1), "a {# #} block"),
        (
            "----- system -----\nRules.\n----- user -----\n/// section: request dynamic\nPlease help.\n",
            (4, 1),
            'section "request" is dynamic',
        ),
        ("Line one.\nLine two ends here.\n", (2, 20), "end of request"),
    ],
    ids=["placeholder", "for-block", "expr-block", "exec-block", "declared-dynamic", "end-of-request"],
)
def test_prefix_end_names_the_element_and_points_at_it(text: str, where: tuple[int, int], reason: str) -> None:
    end = _end(text)
    assert (end["source"], end["line"], end["column"], end["reason"]) == ("p.prompt", *where, reason)


def test_prefix_end_inside_a_partial_points_into_the_partial() -> None:
    partial = "/// section: persona\nYou are the assistant of ${team}.\n"
    end = _end("Intro text.\n/// include: _persona\n", partials={"_persona.prompt": partial})
    assert (end["source"], end["line"], end["column"], end["reason"]) == ("_persona.prompt", 2, 26, "input ${team}")
    assert (end["message"], end["block"]) == (0, 0)


def test_no_prefix_still_says_why() -> None:
    end = _end("${question}\n")
    assert end == {"message": None, "block": None, "source": "p.prompt", "line": 1, "column": 1,
                   "reason": "input ${question}"}  # fmt: skip


def test_the_committed_example_records_its_reason() -> None:
    chat = json.loads((REPO / "build/support/chat.json").read_text())
    end = chat["cache"]["prefix_end"]
    assert (end["source"], end["line"], end["column"], end["reason"]) == (
        "support/chat.prompt",
        8,
        35,
        "input ${product}",
    )


# ---------------------------------------------------------------------------------------------
# W710


def test_support_chat_gets_w710_with_the_tokens_fixing_product_would_make_cacheable() -> None:
    """The README's example: `${product}` in the first line; the figure is exactly the prefix the
    prompt gets when ${product} is fixed at build time as empty text."""
    text = (REPO / "prompts_src/support/chat.prompt").read_text()
    compiled = compile_text(text, name="support/chat")
    [w710] = [d for d in compiled.diagnostics if d.code == "W710"]
    assert compiled.artifact is not None and compiled.artifact.cache.prefix_tokens == 0
    fixed = compile_text(text, name="support/chat", defines={"product": ""}).artifact
    assert fixed is not None
    figure = fixed.cache.prefix_tokens
    assert 80 <= figure <= 110  # "about 90 stable tokens follow" (issue 16)
    assert (w710.line, w710.span.col) == (8, 35)
    assert f"cutting off {figure} stable tokens" in w710.message
    assert f"from 0 to {figure} tokens" in w710.hint and "-D product=…" in w710.hint
    assert "promptc explain W710" in w710.hint


def test_w710_fires_for_a_movable_block_and_stays_quiet_otherwise() -> None:
    loop = f"Rules.\n{{% for x in items %}}- {{{{ x }}}}\n{{% endfor %}}\n{LONG}\n"
    assert "W710" in _codes(loop)
    assert "W710" not in _codes(f"Hi ${{a}} and ${{b}}.\n{LONG}\n")  # two inputs: fixing one is not enough
    assert "W710" in _codes(f"Hi ${{a}}, again ${{a}}.\n{LONG}\n")  # one input, used twice
    assert "W710" not in _codes("Hi ${a}. Short.\n")  # too little at stake
    declared = f"----- system -----\n/// section: s dynamic\nHi ${{a}}.\n{LONG}\n"
    assert "W710" not in _codes(declared)  # the author made it dynamic on purpose


def test_w710_threshold_is_configurable() -> None:
    text = "Hi ${a}. Twelve words of stable text follow the greeting here, not many more.\n"
    assert "W710" not in _codes(text)
    assert "W710" in _codes(text, Config(tokenizer="approx-bytes/4", stable_run_tokens=10))


def test_w710_is_allowed_by_comment_config_and_flag(project: Path) -> None:
    text = f"Hi ${{a}}.\n{LONG}\n"
    assert "W710" in _codes(text)
    assert "W710" not in _codes("/// promptc: allow W710\n" + text)
    assert "W710" not in _codes(text, Config(tokenizer="approx-bytes/4", allow=("W710",)))
    write(project, "prompts_src/p.prompt", text)
    write(project, "pyproject.toml", '[tool.promptc]\ntokenizer = "approx-bytes/4"\n')
    assert "W710" in run_promptc("check", cwd=project).stdout
    done = run_promptc("check", "--allow", "w710", cwd=project)
    assert done.returncode == 0 and "W710" not in done.stdout and "0 warnings" in done.stdout
    write(project, "pyproject.toml", '[tool.promptc]\ntokenizer = "approx-bytes/4"\nallow = ["W710"]\n')
    assert "W710" not in run_promptc("build", cwd=project).stdout


def test_bad_allow_codes_are_usage_errors(project: Path) -> None:
    write(project, "prompts_src/p.prompt", "Hi.\n")
    done = run_promptc("check", "--allow", "E501", cwd=project)
    assert done.returncode == 2 and "only warnings can be allowed" in done.stderr
    write(project, "pyproject.toml", '[tool.promptc]\nallow = ["W7100"]\n')
    done = run_promptc("check", cwd=project)
    assert done.returncode == 2 and "error[E902]" in done.stdout and "`W7100` is not a diagnostic code" in done.stdout
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------------------------------------
# inspect


def test_inspect_shows_where_and_why_the_prefix_ends() -> None:
    done = run_promptc("inspect", "support/chat", cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert "prefix ends: prompts_src/support/chat.prompt:8:35: input ${product}" in done.stdout
    done = run_promptc("inspect", "agents/reviewer", "--format", "json", cwd=REPO)
    end = json.loads(done.stdout)["artifact"]["cache"]["prefix_end"]
    assert (end["source"], end["reason"]) == ("<std>/env.prompt", 'section "std.env" is dynamic')


# ---------------------------------------------------------------------------------------------
# diff: the first differing character of each cache bust


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd, check=True, capture_output=True
    )


@pytest.fixture
def history(tmp_path: Path) -> Path:
    """This repository's prompts, config and build as a git repository with two commits: the
    second adds a word to the agents' shared identity and rebuilds."""
    for name in ("prompts_src", "build"):
        shutil.copytree(REPO / name, tmp_path / name)
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "one")
    identity = tmp_path / "prompts_src/agents/_identity.prompt"
    identity.write_text(identity.read_text().replace("You are careful,", "You are careful, patient,"))
    assert run_promptc("build", "-q", cwd=tmp_path).returncode == 0
    _git(tmp_path, "commit", "-qam", "two")
    return tmp_path


def test_diff_against_a_revision_points_at_the_changed_line(history: Path) -> None:
    done = run_promptc("diff", "--against", "HEAD~1", "--format", "json", cwd=history)
    assert done.returncode == 0, done.stdout + done.stderr
    busts = {b["name"]: b for b in json.loads(done.stdout)["busts"]}
    assert sorted(busts) == ["agents/fixer", "agents/planner", "agents/reviewer"]
    first = busts["agents/reviewer"]["first_difference"]
    line = "You help with reading code, planning changes, reviewing diffs and fixing bugs. You are careful,"
    column = len(line) + 1
    assert first["new"] == {
        "source": "prompts_src/agents/_identity.prompt",
        "line": 5,
        "column": column,
        "text": line + " patient,",
        "reason": None,
    }
    assert first["old"]["source"] == "HEAD~1:prompts_src/agents/_identity.prompt"
    assert (first["old"]["line"], first["old"]["column"], first["old"]["text"]) == (5, column, line)
    assert busts["agents/reviewer"]["tokens_at_stake"] == 399
    text = run_promptc("diff", "--against", "HEAD~1", cwd=history).stdout
    assert "    new: prompts_src/agents/_identity.prompt:5:96\n" in text
    assert "    old: HEAD~1:prompts_src/agents/_identity.prompt:5:96\n" in text
    github = run_promptc("diff", "--against", "HEAD~1", "--format", "github", cwd=history).stdout
    assert "::warning file=prompts_src/agents/_identity.prompt,line=5,col=96,title=promptc%3A cache bust::" in github
    # nothing was checked out or written: the work tree is the second commit's
    status = subprocess.run(["git", "status", "--porcelain"], cwd=history, capture_output=True, text=True)
    assert status.stdout == ""


def test_diff_against_a_revision_without_a_committed_build_compiles_it(project: Path) -> None:
    write(project, "pyproject.toml", '[tool.promptc]\ntokenizer = "approx-bytes/4"\nprovider = "openai"\n')
    write(project, "prompts_src/a.prompt", "----- system -----\nBe kind.\nAlways.\n----- user -----\n${q}\n")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "one")
    write(project, "prompts_src/a.prompt", "----- system -----\nBe kind.\nOften ${when}.\n----- user -----\n${q}\n")
    assert run_promptc("build", "-q", cwd=project).returncode == 0
    done = run_promptc("diff", "--against", "HEAD", "--format", "json", cwd=project)
    [bust] = json.loads(done.stdout)["busts"]
    assert (bust["provider"], bust["cacheable_tokens_at_stake"]) == ("openai", 0)  # below the minimum
    new, old = bust["first_difference"]["new"], bust["first_difference"]["old"]
    # the new request has no prefix: its place is why (the new input); the old prefix began at
    # the system message, which the new one no longer caches
    assert (new["source"], new["line"], new["column"], new["reason"]) == ("prompts_src/a.prompt", 3, 7, "input ${when}")
    assert (old["source"], old["line"], old["text"]) == ("HEAD:prompts_src/a.prompt", 1, "----- system -----")


def test_diff_old_src_folder(project: Path) -> None:
    write(project, "prompts_src/a.prompt", "/// section: rules\nBe kind and brief.\n/// section: q\n${q}\n")
    write(project, "pyproject.toml", '[tool.promptc]\ntokenizer = "approx-bytes/4"\n')
    assert run_promptc("build", "-q", "-o", "old_build", cwd=project).returncode == 0
    shutil.copytree(project / "prompts_src", project / "old_src")
    write(project, "prompts_src/a.prompt", "/// section: rules\nBe kind and very brief.\n/// section: q\n${q}\n")
    assert run_promptc("build", "-q", cwd=project).returncode == 0
    done = run_promptc("diff", "old_build", "--old-src", "old_src", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "    new: prompts_src/a.prompt:2:13\n      | Be kind and very brief.\n" in done.stdout
    assert "    old: old_src/a.prompt:2:13\n      | Be kind and brief.\n" in done.stdout
    without = run_promptc("diff", "old_build", cwd=project).stdout
    assert "new:" not in without  # no old sources: no location, the manifest diff as before


@pytest.mark.parametrize(
    ("args", "code", "needs_git"),
    [
        (("--against", "HEAD"), "E940", False),
        (("--against", "no-such-branch"), "E941", True),
        (("--against", "--upload-pack=x"), "E941", True),
        (("build", "--old-src", "missing"), "E942", False),
    ],
    ids=["not-a-repo", "unknown-rev", "option-as-rev", "old-src-missing"],
)
def test_diff_errors_are_diagnostics_with_exit_2(
    project: Path, args: tuple[str, ...], code: str, needs_git: bool
) -> None:
    write(project, "prompts_src/a.prompt", "Hi.\n")
    write(project, "pyproject.toml", '[tool.promptc]\ntokenizer = "approx-bytes/4"\n')
    assert run_promptc("build", "-q", cwd=project).returncode == 0
    if needs_git:
        _git(project, "init", "-q")
        _git(project, "add", "-A")
        _git(project, "commit", "-qm", "one")
    done = run_promptc("diff", *args, cwd=project)
    assert done.returncode == 2 and f"error[{code}]" in done.stderr, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    done = run_promptc("diff", *args, "--format", "json", cwd=project)
    assert done.returncode == 2 and json.loads(done.stdout)["diagnostics"][0]["code"] == code


def test_diff_against_a_revision_without_the_source_folder(project: Path) -> None:
    write(project, "README", "nothing yet\n")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "one")
    write(project, "prompts_src/a.prompt", "Hi.\n")
    write(project, "pyproject.toml", '[tool.promptc]\ntokenizer = "approx-bytes/4"\n')
    assert run_promptc("build", "-q", cwd=project).returncode == 0
    done = run_promptc("diff", "--against", "HEAD", cwd=project)
    assert done.returncode == 2 and "error[E942]" in done.stderr


def test_a_tool_description_bust_points_at_the_edited_line_of_the_tool_file(project: Path) -> None:
    """Editing a tool's description busts every prompt that carries it; the bust is placed on the
    line of the description in the tool file (so the github annotation lands there), not line 1."""
    tools = [
        {"name": "search", "description": "Search the docs.", "input_schema": {"type": "object", "properties": {}}},
        {"name": "open", "description": "Open a page.", "input_schema": {"type": "object", "properties": {}}},
    ]
    write(project, "pyproject.toml", '[tool.promptc]\ntokenizer = "approx-bytes/4"\n')
    write(project, "prompts_src/tools/kit.json", json.dumps(tools, indent=2) + "\n")
    write(
        project,
        "prompts_src/a.prompt",
        "/// tools: tools/kit.json\n----- system -----\nBe kind.\n----- user -----\n${q}\n",
    )
    assert run_promptc("build", "-q", cwd=project).returncode == 0
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "one")
    tools[1]["description"] = "Open a page and read it."
    write(project, "prompts_src/tools/kit.json", json.dumps(tools, indent=2) + "\n")
    assert run_promptc("build", "-q", cwd=project).returncode == 0
    _git(project, "commit", "-qam", "two")
    line = next(i for i, text in enumerate(json.dumps(tools, indent=2).splitlines(), 1) if "Open a page" in text)
    assert line > 1
    done = run_promptc("diff", "--against", "HEAD~1", "--format", "json", cwd=project)
    (bust,) = json.loads(done.stdout)["busts"]
    new, old = bust["first_difference"]["new"], bust["first_difference"]["old"]
    assert (new["source"], new["line"]) == ("prompts_src/tools/kit.json", line)
    assert new["text"].strip() == '"description": "Open a page and read it.",'
    assert new["reason"] == "tool `open` differs at `description`"
    assert (old["source"], old["line"]) == ("HEAD~1:prompts_src/tools/kit.json", line)
    github = run_promptc("diff", "--against", "HEAD~1", "--format", "github", cwd=project).stdout
    assert f"::warning file=prompts_src/tools/kit.json,line={line},col=" in github
