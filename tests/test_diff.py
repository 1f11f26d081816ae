"""`promptc diff` and `diff_manifests`: cache busts, input contracts, added and removed prompts."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from promptc.cli.diff import diff_cmd
from promptc.driver import build
from promptc.tools.diff import FAIL_KINDS, ManifestError, diff_manifests, render_github, render_text

from .conftest import run_promptc, write

SHA_A = "a" * 64
SHA_B = "b" * 64


def entry(
    inputs: list[str] = (), prefix: str | None = SHA_A, tokens: int = 1200, sha: str = "1" * 64
) -> dict[str, Any]:
    return {
        "path": "x.json",
        "sha256": sha,
        "source": "x.prompt",
        "source_sha256": "0" * 64,
        "inputs": list(inputs),
        "includes": [],
        "model": None,
        "provider": None,
        "tokenizer": "cl100k_base",
        "tokens_exact": False,
        "prefix_sha256": prefix,
        "prefix_tokens": tokens if prefix else 0,
        "cacheable_tokens": None,
        "input_schema": {"type": "object", "properties": {name: {} for name in inputs}, "required": sorted(inputs)},
    }


def manifest(**artifacts: dict[str, Any]) -> dict[str, Any]:
    named = {}
    for name, value in artifacts.items():
        value = dict(value, path=f"{name}.json", source=f"{name}.prompt")
        named[name] = value
    return {
        "schema": "promptc.manifest/2",
        "compiler": {"name": "promptc", "version": "0.1.0"},
        "tokenizer": "cl100k_base",
        "provider": None,
        "artifacts": named,
        "prefixes": {},
    }


# ---------------------------------------------------------------------------------------------
# The library API


def test_identical_manifests_have_no_changes() -> None:
    old = manifest(greet=entry(["name"]), faq=entry())
    diff = diff_manifests(old, copy.deepcopy(old))
    assert diff.empty
    assert diff.failing(FAIL_KINDS) == []
    assert render_text(diff) == "diff: no changes"


def test_changed_prefix_is_a_cache_bust_with_the_old_tokens_at_stake() -> None:
    old = manifest(greet=entry(prefix=SHA_A, tokens=1500, sha="1" * 64))
    new = manifest(greet=entry(prefix=SHA_B, tokens=900, sha="2" * 64))
    diff = diff_manifests(old, new)
    assert [b.to_json() for b in diff.busts] == [
        {
            "name": "greet",
            "old_prefix_sha256": SHA_A,
            "new_prefix_sha256": SHA_B,
            "tokens_at_stake": 1500,
            "new_prefix_tokens": 900,
            "provider": None,
            "cacheable_tokens_at_stake": None,
            "new_cacheable_tokens": None,
            "tokenizer": "cl100k_base",
            "tokens_exact": False,
            "first_difference": None,
        }
    ]
    assert diff.tokens_at_stake == 1500
    assert diff.changed == ("greet",)
    assert diff.contracts == ()
    assert diff.failing(["bust"]) == ["bust"]
    assert diff.failing(["contract"]) == []


def test_losing_the_prefix_is_a_bust_but_gaining_one_is_not() -> None:
    old = manifest(lost=entry(prefix=SHA_A, tokens=700), gained=entry(prefix=None))
    new = manifest(lost=entry(prefix=None), gained=entry(prefix=SHA_B, tokens=2000))
    diff = diff_manifests(old, new)
    assert [(b.name, b.new_prefix_sha256, b.tokens_at_stake) for b in diff.busts] == [("lost", None, 700)]


def test_same_prefix_with_other_changes_is_no_bust() -> None:
    # the dynamic tail changed: the artifact differs but every cached prefix still hits
    diff = diff_manifests(manifest(p=entry(sha="1" * 64)), manifest(p=entry(sha="2" * 64)))
    assert diff.busts == ()
    assert diff.changed == ("p",)
    assert not diff.has("bust")


def test_added_input_is_a_breaking_contract_change() -> None:
    diff = diff_manifests(manifest(ask=entry(["question"])), manifest(ask=entry(["context", "question"])))
    [change] = diff.contracts
    assert (change.name, change.added_inputs, change.removed_inputs, change.breaking) == ("ask", ("context",), (), True)
    assert diff.failing(["contract"]) == ["contract"]
    assert diff.failing(["breaking"]) == ["breaking"]


def test_removed_input_is_a_contract_change_that_does_not_break_callers() -> None:
    diff = diff_manifests(manifest(ask=entry(["question", "topic"])), manifest(ask=entry(["question"])))
    [change] = diff.contracts
    assert (change.added_inputs, change.removed_inputs, change.breaking) == ((), ("topic",), False)
    assert diff.failing(["contract"]) == ["contract"]
    assert diff.failing(["breaking"]) == []
    assert "ask: -topic (not breaking)" in render_text(diff)


def test_input_order_is_not_a_contract_change() -> None:
    diff = diff_manifests(manifest(p=entry(["a", "b"])), manifest(p=entry(["b", "a"])))
    assert diff.contracts == ()


def test_added_and_removed_prompts() -> None:
    old = manifest(keep=entry(), gone=entry(prefix=SHA_A, tokens=5000))
    new = manifest(keep=entry(), fresh=entry(["x"]))
    diff = diff_manifests(old, new)
    assert diff.added == ("fresh",)
    assert diff.removed == ("gone",)
    # a removed prompt is reported as removed, not as a bust or a contract change
    assert diff.busts == () and diff.contracts == ()
    assert diff.failing(["removed"]) == ["removed"]
    assert diff.failing(["bust", "contract"]) == []


def test_tokenizer_change_is_reported() -> None:
    new = manifest(p=entry())
    new["tokenizer"] = "o200k_base"
    diff = diff_manifests(manifest(p=entry()), new)
    assert diff.tokenizer == ("cl100k_base", "o200k_base")
    assert "tokenizer changed: cl100k_base → o200k_base" in render_text(diff)


def test_to_json_is_complete_and_serialisable() -> None:
    old = manifest(a=entry(["x"], prefix=SHA_A, tokens=10, sha="1" * 64), gone=entry())
    new = manifest(a=entry(["x", "y"], prefix=SHA_B, tokens=12, sha="2" * 64), new=entry())
    data = json.loads(json.dumps(diff_manifests(old, new).to_json()))
    assert data["schema"] == "promptc.diff/1"
    assert data["summary"] == {
        "busts": 1,
        "tokens_at_stake": 10,
        "contracts": 1,
        "breaking": 1,
        "outputs": 0,
        "outputs_breaking": 0,
        "added": 1,
        "removed": 1,
        "changed": 1,
    }
    assert data["outputs"] == []
    assert data["contracts"] == [
        {"name": "a", "added_inputs": ["y"], "removed_inputs": [], "type_changes": [], "breaking": True}
    ]
    assert data["added"] == ["new"] and data["removed"] == ["gone"] and data["tokenizer"] is None


def test_text_report() -> None:
    old = manifest(a=entry(["x"], prefix=SHA_A, tokens=1200, sha="1" * 64), gone=entry())
    new = manifest(a=entry(["x", "y"], prefix=SHA_B, sha="2" * 64), new=entry())
    assert render_text(diff_manifests(old, new)).splitlines() == [
        "cache busts (1):",
        f"  a: prefix {SHA_A[:12]} → {SHA_B[:12]}, 1200 tokens at stake",
        "input contract changes (1):",
        "  a: +y (breaking: callers must pass the new inputs)",
        "added prompts (1): new",
        "removed prompts (1): gone",
        "changed artifacts (1): a",
        "diff: 1 cache bust (1200 prefix tokens at stake), 1 input contract change (1 breaking), 1 added, 1 removed, 1 changed",
    ]


def test_github_annotations_point_at_the_source_and_follow_fail_on() -> None:
    old = manifest(a=entry(["x"], prefix=SHA_A, tokens=3), gone=entry())
    new = manifest(a=entry(["x", "y"], prefix=SHA_B))
    lines = render_github(diff_manifests(old, new), ["contract"], source_root="prompts_src")
    assert lines[0].startswith("::warning file=prompts_src/a.prompt,title=promptc%3A cache bust::cache prefix of `a`")
    assert lines[1].startswith("::error file=prompts_src/a.prompt,title=promptc%3A input contract::")
    assert lines[2] == "::notice title=promptc%3A prompt removed::prompt `gone` was removed; its callers break"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "old manifest: expected a JSON object, got a list"),
        ({"schema": "promptc.artifact/1", "artifacts": {}}, "not a promptc manifest"),
        ({"schema": "promptc.manifest/9", "artifacts": {}}, "newer promptc"),
        ({"schema": "promptc.manifest/2"}, "old manifest: compiler: required key is missing"),
        ({"artifacts": {"a": 1}}, "not a promptc manifest"),
        ({**manifest(a=entry()), "artifacts": {"a": {**entry(), "inputs": "x"}}}, "expected a list, got 'x'"),
    ],
)
def test_malformed_manifests_raise_manifest_error(document: Any, message: str) -> None:
    with pytest.raises(ManifestError, match=re.escape(message)):
        diff_manifests(document, manifest())


def test_unknown_fail_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown kind"):
        diff_manifests(manifest(), manifest()).has("everything")


# ---------------------------------------------------------------------------------------------
# Real manifests from real builds


STABLE = "You are the support assistant for Acme. Answer briefly and politely.\n"


def test_diff_of_real_builds(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write(src, "support.prompt", STABLE)
    write(src, "ask.prompt", "/// input: question\n----- system -----\n" + STABLE + "----- user -----\n${question}\n")
    write(src, "old.prompt", "Going away.\n")
    first = build(src, tmp_path / "old", incremental=False)
    assert first.ok, first.diagnostics
    write(src, "support.prompt", STABLE.replace("briefly", "at length"))
    write(
        src,
        "ask.prompt",
        "/// input: question, locale\n----- system -----\n" + STABLE + "----- user -----\n${question} ${locale}\n",
    )
    (src / "old.prompt").unlink()
    write(src, "fresh.prompt", "Brand new.\n")
    second = build(src, tmp_path / "new", incremental=False)
    assert second.ok, second.diagnostics

    diff = diff_manifests(first.manifest, second.manifest)
    assert [b.name for b in diff.busts] == ["support"]
    assert diff.busts[0].tokens_at_stake == first.manifest.artifacts["support"].prefix_tokens > 0
    assert [(c.name, c.added_inputs) for c in diff.contracts] == [("ask", ("locale",))]
    # the system message of `ask` did not change: its cached prefix survives the new input
    assert "ask" not in [b.name for b in diff.busts]
    assert (diff.added, diff.removed) == (("fresh",), ("old",))


# ---------------------------------------------------------------------------------------------
# The command


@pytest.fixture
def manifests(tmp_path: Path) -> tuple[Path, Path]:
    old = manifest(a=entry(["x"], prefix=SHA_A, tokens=40, sha="1" * 64), gone=entry())
    new = manifest(a=entry(["x", "y"], prefix=SHA_B, sha="2" * 64), new=entry())
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    return tmp_path / "old.json", tmp_path / "new.json"


def invoke(*args: str | Path, input: str | None = None):
    return CliRunner().invoke(diff_cmd, [str(a) for a in args], input=input)


def test_cli_reports_and_exits_0_without_fail_on(manifests: tuple[Path, Path]) -> None:
    result = invoke(*manifests)
    assert result.exit_code == 0, result.output
    assert "cache busts (1):" in result.stdout
    assert "a: +y (breaking" in result.stdout
    assert result.stdout.rstrip().endswith("1 added, 1 removed, 1 changed")


@pytest.mark.parametrize(
    ("fail_on", "code"),
    [
        (["bust"], 1),
        (["contract"], 1),
        (["breaking"], 1),
        (["removed"], 1),
        (["bust", "contract"], 1),
    ],
)
def test_cli_fail_on_exits_1_when_the_change_exists(
    manifests: tuple[Path, Path], fail_on: list[str], code: int
) -> None:
    args = [a for kind in fail_on for a in ("--fail-on", kind)]
    result = invoke(*manifests, *args)
    assert result.exit_code == code
    assert f"diff failed: {', '.join(fail_on)} (--fail-on)" in result.stderr


def test_cli_fail_on_exits_0_when_no_such_change(tmp_path: Path) -> None:
    old = manifest(a=entry(["x"], sha="1" * 64))
    new = manifest(a=entry(["x"], sha="2" * 64), b=entry())  # changed and added, no bust, no contract change
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    result = invoke(tmp_path / "old.json", tmp_path / "new.json", "--fail-on", "bust", "--fail-on", "contract")
    assert result.exit_code == 0, result.output


def test_cli_removed_input_fails_contract_but_not_breaking(tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text(json.dumps(manifest(a=entry(["x", "y"]))))
    (tmp_path / "new.json").write_text(json.dumps(manifest(a=entry(["x"]))))
    assert invoke(tmp_path / "old.json", tmp_path / "new.json", "--fail-on", "breaking").exit_code == 0
    assert invoke(tmp_path / "old.json", tmp_path / "new.json", "--fail-on", "contract").exit_code == 1


def test_cli_json_output(manifests: tuple[Path, Path]) -> None:
    result = invoke(*manifests, "--format", "json", "--fail-on", "bust", "--fail-on", "removed")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["failed"] == ["bust", "removed"]
    assert data["fail_on"] == ["bust", "removed"]
    assert data["busts"][0]["tokens_at_stake"] == 40
    assert data["summary"]["breaking"] == 1


def test_cli_github_output(manifests: tuple[Path, Path]) -> None:
    result = invoke(*manifests, "--format", "github", "--fail-on", "contract")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert any(line.startswith("::error file=prompts_src/a.prompt,title=promptc%3A input contract::") for line in lines)
    assert any(line.startswith("::warning file=prompts_src/a.prompt,title=promptc%3A cache bust::") for line in lines)


def test_cli_reads_old_manifest_from_stdin_and_build_folders(tmp_path: Path, manifests: tuple[Path, Path]) -> None:
    old, new = manifests
    folder = tmp_path / "build"
    folder.mkdir()
    (folder / "manifest.json").write_bytes(new.read_bytes())
    result = invoke("-", folder, "--format", "json", input=old.read_text())
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["added"] == ["new"]


def test_cli_new_manifest_defaults_to_the_configured_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.promptc]\nout = "dist/prompts"\n')
    (tmp_path / "dist/prompts").mkdir(parents=True)
    (tmp_path / "dist/prompts/manifest.json").write_text(json.dumps(manifest(a=entry(["x", "y"]))))
    (tmp_path / "old.json").write_text(json.dumps(manifest(a=entry(["x"]))))
    monkeypatch.chdir(tmp_path)
    result = invoke("old.json", "--fail-on", "breaking")
    assert result.exit_code == 1
    assert "a: +y (breaking" in result.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "promptc diff: cannot read {old}: No such file or directory"),
        ("{not json", "promptc diff: {old} is not valid JSON"),
        ("[1, 2]", "promptc diff: {old} is not a promptc manifest (expected a JSON object)"),
        ('{"schema": "promptc.manifest/2"}', "promptc diff: old manifest: compiler: required key is missing"),
    ],
)
def test_cli_unreadable_manifest_exits_2_with_one_line(
    manifests: tuple[Path, Path], content: str | None, message: str
) -> None:
    old, new = manifests
    if content is None:
        old.unlink()
    else:
        old.write_text(content)
    result = invoke(old, new)
    assert result.exit_code == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(message.format(old=old))
    assert "Traceback" not in result.output


def test_installed_promptc_diff(manifests: tuple[Path, Path]) -> None:
    old, new = manifests
    result = run_promptc("diff", str(old), str(new), "--fail-on", "breaking", real=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "input contract changes (1):" in result.stdout
    missing = run_promptc("diff", str(old.with_name("missing.json")), str(new))
    assert missing.returncode == 2
    assert "Traceback" not in missing.stderr
    assert len(missing.stderr.splitlines()) == 1
