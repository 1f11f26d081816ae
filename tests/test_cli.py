"""The installed `promptc` command, run as a user would (subprocess), plus CliRunner wiring tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from promptc.cli import main

from .conftest import run_promptc, snapshot, write

GOOD = "/// input: name\nHello ${name}.\n"


def test_version() -> None:
    result = run_promptc("--version", real=True)
    assert result.returncode == 0
    assert result.stdout.startswith("promptc ")
    assert "writes promptc.artifact/2, promptc.manifest/2" in result.stdout
    assert "o200k_base (data from bpe-openai " in result.stdout


def test_build_then_check_locked(project: Path) -> None:
    write(project, "prompts_src/hello.prompt", GOOD)
    built = run_promptc("build", "prompts_src", "-o", "build", cwd=project)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "build written: 1 prompt → build: 0 errors, 0 warnings in 1 file" in built.stdout
    assert json.loads((project / "build/hello.json").read_text())["inputs"] == ["name"]
    locked = run_promptc("check", "prompts_src", "-o", "build", "--locked", cwd=project)
    assert locked.returncode == 0, locked.stdout
    write(project, "prompts_src/hello.prompt", GOOD.replace("Hello", "Hi"))
    stale = run_promptc("check", "prompts_src", "-o", "build", "--locked", cwd=project)
    assert stale.returncode == 1
    assert "error[E905]: `build/hello.json` is stale" in stale.stdout
    assert "check: build is stale (2 files)" in stale.stdout


def test_errors_exit_1_with_located_diagnostics_and_no_traceback(project: Path) -> None:
    write(project, "prompts_src/ok.prompt", GOOD)
    write(project, "prompts_src/bad.prompt", "Hello ${}\n{{ a + }}\n")
    write(project, "prompts_src/binary.prompt", b"\x00\x01\x02")
    result = run_promptc("build", "prompts_src", cwd=project, real=True)
    assert result.returncode == 1
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    assert "prompts_src/bad.prompt:1:7: error[E202]: empty placeholder `${}`" in output
    assert "prompts_src/bad.prompt:2:7: error[E601]: Python syntax error" in output
    assert "prompts_src/binary.prompt:1:1: error[E102]" in output
    assert "build failed, nothing written: 3 errors, 0 warnings in 3 files" in output
    assert not (project / "build").exists()


def test_usage_errors_exit_2(project: Path) -> None:
    assert run_promptc("build", "--no-such-flag", cwd=project).returncode == 2
    assert run_promptc("build", "-D", "not a define", cwd=project).returncode == 2
    assert run_promptc("frobnicate", cwd=project).returncode == 2


def test_defines_bind_placeholders_at_build_time(project: Path) -> None:
    write(project, "prompts_src/p.prompt", "Welcome to ${product}, ${user}.\n")
    result = run_promptc("build", "-D", "product=Acme", cwd=project)
    assert result.returncode == 0, result.stdout
    artifact = json.loads((project / "build/p.json").read_text())
    assert artifact["inputs"] == ["user"]
    assert artifact["messages"][0]["content"] == "Welcome to Acme, ${user}."


def test_config_from_pyproject_and_flags_win(project: Path) -> None:
    write(
        project,
        "pyproject.toml",
        '[tool.promptc]\nsrc = "prompts_src"\nout = "dist/prompts"\n[tool.promptc.defines]\nproduct = "Acme"\n',
    )
    write(project, "prompts_src/p.prompt", "About ${product}.\n")
    assert run_promptc("build", cwd=project).returncode == 0
    assert (project / "dist/prompts/p.json").exists()
    assert run_promptc("build", "-o", "other", "-D", "product=Beta", cwd=project).returncode == 0
    assert json.loads((project / "other/p.json").read_text())["messages"][0]["content"] == "About Beta."


def test_json_and_github_formats(project: Path) -> None:
    write(project, "prompts_src/w.prompt", "/// sectoin: x\nText\n")
    as_json = run_promptc("check", "--format", "json", cwd=project)
    payload = json.loads(as_json.stdout)
    assert as_json.returncode == 0
    assert payload["warnings"] == 1 and payload["errors"] == 0
    assert payload["diagnostics"][0]["code"] == "W303"
    assert payload["diagnostics"][0]["path"] == "prompts_src/w.prompt"
    github = run_promptc("check", "--format", "github", cwd=project)
    assert (
        "::warning file=prompts_src/w.prompt,line=1,col=1,endLine=1,endColumn=15,title=W303::"
        "[W303] unknown directive `sectoin`" in github.stdout
    )
    assert (payload["diagnostics"][0]["end_line"], payload["diagnostics"][0]["end_col"]) == (1, 15)
    strict = run_promptc("check", "--strict", cwd=project)
    assert strict.returncode == 1


def test_strict_build_writes_nothing_on_warnings(project: Path) -> None:
    write(project, "prompts_src/w.prompt", "/// sectoin: x\nText\n")
    result = run_promptc("build", "--strict", cwd=project)
    assert result.returncode == 1
    assert snapshot(project / "build") == {}


def test_quiet_hides_warnings(project: Path) -> None:
    write(project, "prompts_src/w.prompt", "/// sectoin: x\nText\n")
    result = run_promptc("check", "--quiet", cwd=project)
    assert result.returncode == 0 and result.stdout == ""


def test_cli_runner_wiring(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(project, "prompts_src/p.prompt", GOOD)
    runner = CliRunner()
    result = runner.invoke(main, ["build", "--tokenizer", "approx-bytes/4"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((project / "build/manifest.json").read_text())
    assert manifest["tokenizer"] == "approx-bytes/4"
    result = runner.invoke(main, ["check", "--tokenizer", "nope"])
    assert result.exit_code == 2  # one usage error, not an E901 per prompt
    assert "unknown tokenizer `nope`" in result.output


def test_provider_flag_checks_prefix_minimums(project: Path) -> None:
    write(
        project,
        "prompts_src/short.prompt",
        "----- system -----\nA short stable prompt.\n----- user -----\n${question}\n",
    )
    assert run_promptc("check", "--strict", cwd=project).returncode == 0
    warned = run_promptc("check", "--provider", "gemini", cwd=project)
    assert warned.returncode == 0
    assert (
        "warning[W705]: cache-stable prefix is 5 tokens (22 chars); gemini caches prefixes of at least 4096 tokens"
        in warned.stdout
    )
    typo = run_promptc("check", "--provider", "anthropc", cwd=project)
    assert typo.returncode == 2 and "did you mean `anthropic`?" in typo.stderr
    unknown = run_promptc("check", "--provider", "nope", cwd=project)
    assert unknown.returncode == 2 and "unknown provider `nope`" in unknown.stderr


@pytest.mark.parametrize("how", ["flag", "config"])
def test_an_unknown_tokenizer_is_one_usage_error(project: Path, how: str) -> None:
    for i in range(5):
        write(project, f"prompts_src/p{i}.prompt", "Hi\n")
    args = ["check", "prompts_src"]
    if how == "flag":
        args += ["--tokenizer", "gpt-17"]
    else:
        (project / "pyproject.toml").write_text('[tool.promptc]\ntokenizer = "gpt-17"\n', encoding="utf-8")
    for command in ("check", "build"):
        args[0] = command
        result = run_promptc(*args, cwd=project)
        assert result.returncode == 2, result.stdout + result.stderr
        if how == "flag":
            assert result.stderr.count("unknown tokenizer `gpt-17`") == 1 and "E901" not in result.stdout
        else:  # an E902 at the config file's line, as every other bad value there
            assert result.stdout.count("pyproject.toml:2:1: error[E902]: unknown tokenizer `gpt-17`") == 1
            assert "E901" not in result.stdout


def test_a_misspelt_tokenizer_gets_did_you_mean_with_the_config_line(project: Path) -> None:
    write(project, "prompts_src/p.prompt", "Hi\n")
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.promptc]\ntokenizer = "cl100k"\n')
    result = run_promptc("check", cwd=project)
    assert result.returncode == 2
    assert "pyproject.toml:5:1: error[E902]: unknown tokenizer `cl100k`" in result.stdout
    assert "= hint: did you mean `cl100k_base`?" in result.stdout
    flag = run_promptc("check", "--tokenizer", "o200k", cwd=project)
    assert flag.returncode == 2 and "did you mean `o200k_base`?" in flag.stderr


def test_config_paths_are_relative_to_the_pyproject_that_holds_them(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.promptc]\nsrc = 'prompts'\nout = 'dist/prompts'\n")
    write(tmp_path, "prompts/a.prompt", "Hi.\n")
    (tmp_path / "deep" / "er").mkdir(parents=True)
    built = run_promptc("build", cwd=tmp_path / "deep" / "er")
    assert built.returncode == 0, built.stdout
    assert (tmp_path / "dist" / "prompts" / "a.json").is_file()
    assert "→ ../../dist/prompts:" in built.stdout
    assert run_promptc("check", "--locked", cwd=tmp_path / "deep").returncode == 0
    # the defaults are the config's folder's too
    write(tmp_path, "pyproject.toml", "[tool.promptc]\n")
    (tmp_path / "prompts").rename(tmp_path / "prompts_src")
    assert run_promptc("build", cwd=tmp_path / "deep").returncode == 0
    assert (tmp_path / "build" / "a.json").is_file() and not (tmp_path / "deep" / "build").exists()


def test_a_missing_source_folder_hint_names_the_config(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.promptc]\nsrc = 'prompts'\n")
    result = run_promptc("check", cwd=tmp_path)
    assert result.returncode == 1
    assert "source folder `prompts` not found" in result.stdout
    assert "set `src` in [tool.promptc] of pyproject.toml" in result.stdout


def test_explain_prints_a_codes_documentation_and_example() -> None:
    result = run_promptc("explain", "e501", real=True)
    assert result.returncode == 0
    assert result.stdout.startswith("E501: ")
    assert "severity: error" in result.stdout and "error[E501]" in result.stdout  # the real example
    unknown = run_promptc("explain", "E99")
    assert unknown.returncode == 2 and "no diagnostic code 'E99'" in unknown.stderr


def test_list_shows_inputs_model_prefix_and_whether_it_is_cached(project: Path) -> None:
    write(project, "prompts_src/a.prompt", "/// param: model=gpt-4o\nHello ${name}.\n")
    write(project, "prompts_src/b.prompt", "Stable.\n")
    assert run_promptc("build", cwd=project).returncode == 0
    listed = run_promptc("list", cwd=project)
    assert listed.returncode == 0
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["prompt", "inputs", "model", "prefix", "cached"]
    assert lines[1].split()[:3] == ["a", "name", "gpt-4o"] and lines[1].endswith("no (below minimum)")
    assert lines[2].split() == ["b", "-", "-", "3", "-"]  # no model: no profile, no verdict
    data = json.loads(run_promptc("list", "--format", "json", cwd=project).stdout)
    assert (
        data["schema"] == "promptc.output/1"
        and data["command"] == "list"
        and data["prompts"][0]["cacheable_tokens"] == 0
    )


def test_colour_on_request_never_in_a_pipe(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(project, "prompts_src/w.prompt", "/// sectoin: x\nText\n")
    piped = run_promptc("check", cwd=project)
    assert "\x1b[" not in piped.stdout
    coloured = run_promptc("--color", "always", "check", cwd=project)
    assert "\x1b[1;33mwarning[W303]\x1b[0m" in coloured.stdout
    assert "\x1b[" not in run_promptc("--color", "never", "check", cwd=project).stdout


def test_use_color_follows_no_color_ci_and_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from promptc.facts.diagnostics import use_color

    class Tty:
        def isatty(self) -> bool:
            return True

    for name in ("NO_COLOR", "CI", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    assert use_color("auto", Tty()) is True
    monkeypatch.setenv("NO_COLOR", "")
    assert use_color("auto", Tty()) is False and use_color("always", Tty()) is True
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("CI", "true")
    assert use_color("auto", Tty()) is False
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert use_color("auto", Tty()) is True
    assert use_color("never", Tty()) is False


def test_prompt_names_complete_for_render_and_inspect(project: Path) -> None:
    import os
    import subprocess

    from .conftest import promptc_executable

    write(project, "prompts_src/support/chat.prompt", "Hi.\n")
    write(project, "prompts_src/support/faq.prompt", "Hi.\n")
    write(project, "prompts_src/other.prompt", "Hi.\n")
    assert run_promptc("build", cwd=project).returncode == 0
    for command in ("render", "inspect"):
        env = {
            **os.environ,
            "COMP_WORDS": f"promptc {command} sup",
            "COMP_CWORD": "2",
            "_PROMPTC_COMPLETE": "bash_complete",
        }
        done = subprocess.run([promptc_executable()], cwd=project, env=env, capture_output=True, text=True)
        assert done.stdout.split() == ["plain,support/chat", "plain,support/faq"], done


def test_every_json_output_shares_one_envelope(project: Path) -> None:
    write(project, "prompts_src/a.prompt", "Hello ${name}.\n")
    documents = {
        "build": run_promptc("build", "--format", "json", cwd=project),
        "check": run_promptc("check", "--format", "json", cwd=project),
        "diff": run_promptc("diff", "build/manifest.json", "build/manifest.json", "--format", "json", cwd=project),
        "inspect": run_promptc("inspect", "a", "--format", "json", cwd=project),
        "render": run_promptc("render", "a", "--var", "name=Ada", "--format", "json", cwd=project),
        "list": run_promptc("list", "--format", "json", cwd=project),
    }
    for command, done in documents.items():
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        data = json.loads(done.stdout)
        assert (data["schema"], data["command"]) == ("promptc.output/1", command)
    assert json.loads(documents["render"].stdout)["request"] == [{"role": "system", "content": "Hello Ada."}]
    assert json.loads(documents["inspect"].stdout)["artifact"]["name"] == "a"


def test_a_config_error_is_reported_once_at_its_line_and_exits_2(project: Path) -> None:
    write(project, "pyproject.toml", "[tool.promptc]\ndefault_role = 'robot'\n")
    for name in "abc":
        write(project, f"prompts_src/{name}.prompt", "Hi.\n")
    done = run_promptc("check", cwd=project)
    assert done.returncode == 2
    assert done.stdout.count("error[E902]") == 1 and "pyproject.toml:2:1: error[E902]" in done.stdout


def test_init_starts_a_project_that_builds_and_renders(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[project]\nname = "mine"\n')
    done = run_promptc("init", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        "[project]" in (tmp_path / "pyproject.toml").read_text()
        and "[tool.promptc]" in (tmp_path / "pyproject.toml").read_text()
    )
    assert run_promptc("build", "--strict", cwd=tmp_path).returncode == 0
    rendered = run_promptc("render", "hello", "--var", "question=Hi?", cwd=tmp_path)
    assert json.loads(rendered.stdout)[1] == {"role": "user", "content": "Hi?"}
    before = (tmp_path / "pyproject.toml").read_text()
    again = run_promptc("init", cwd=tmp_path)  # twice: done already, not a usage error
    assert again.returncode == 0 and "already has [tool.promptc]" in again.stderr
    assert (tmp_path / "pyproject.toml").read_text() == before


def test_init_beside_an_existing_first_prompt_fails_without_writing(tmp_path: Path) -> None:
    write(tmp_path, "prompts_src/hello.prompt", "Mine.\n")
    done = run_promptc("init", cwd=tmp_path)
    assert done.returncode == 1 and "prompts_src/hello.prompt already exists" in done.stderr
    assert not (tmp_path / "pyproject.toml").exists()
    assert (tmp_path / "prompts_src" / "hello.prompt").read_text() == "Mine.\n"


def test_check_locked_json_spells_each_stale_file_one_way(project: Path) -> None:
    """`stale` lists the files as the diagnostics name them: relative to the current folder."""
    write(project, "prompts_src/a.prompt", "Hi.\n")
    assert run_promptc("build", cwd=project).returncode == 0
    write(project, "build/stray.json", "{}")
    write(project, "prompts_src/a.prompt", "Hi!\n")
    done = run_promptc("check", "--locked", "--format", "json", cwd=project)
    payload = json.loads(done.stdout)
    assert done.returncode == 1
    assert payload["stale"] == ["build/a.json", "build/manifest.json", "build/stray.json"]
    assert payload["stale"] == [d["path"] for d in payload["diagnostics"] if d["code"] == "E905"]
