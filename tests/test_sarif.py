"""`--format sarif`: a SARIF 2.1.0 log that GitHub code scanning (and any SARIF viewer) reads,
validated against the OASIS SARIF 2.1.0 JSON Schema vendored in tests/schemas/ (the errata01
`sarif-schema-2.1.0.json` of oasis-tcs/sarif-spec; nothing is downloaded at test time)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

import promptc
from promptc.facts.diagnostics import Diagnostic, make
from tests.conftest import run_promptc

SCHEMA = json.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text("utf-8"))

# RFC 3986: the characters of a URI reference, percent-escapes well formed; a URI has a scheme
_URI_CHARS = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?#\[\]]|%[0-9A-Fa-f]{2})*")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")

FORMATS = jsonschema.FormatChecker()


@FORMATS.checks("uri")
def _uri(value: object) -> bool:
    return not isinstance(value, str) or (_SCHEME.match(value) is not None and _URI_CHARS.fullmatch(value) is not None)


@FORMATS.checks("uri-reference")
def _uri_reference(value: object) -> bool:
    if not isinstance(value, str) or _SCHEME.match(value):
        return _uri(value)
    first = value.split("/", 1)[0]
    # a relative reference whose first segment has a `:` would read as a scheme
    return _URI_CHARS.fullmatch(value) is not None and ":" not in first


def validate(log: dict) -> None:
    jsonschema.Draft4Validator.check_schema(SCHEMA)
    errors = sorted(jsonschema.Draft4Validator(SCHEMA, format_checker=FORMATS).iter_errors(log), key=str)
    assert errors == [], "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


PROMPT_BAD = "/// input: question\n----- user -----\nQ: ${questoin} — ünï ${question}\n/// include: _shared\n"
SHARED = "/// section: s stable\nHi {{ 1 +\n"


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.promptc]\n")
    src = tmp_path / "prompts_src" / "my prompts"
    src.mkdir(parents=True)
    (src / "bad.prompt").write_text(PROMPT_BAD)
    (src / "_shared.prompt").write_text(SHARED)
    (src / "ok.prompt").write_text("/// input: x\n----- user -----\n${x}\n")
    return tmp_path


def test_check_format_sarif_is_a_valid_sarif_log_with_every_diagnostic(tmp_path: Path) -> None:
    root = _project(tmp_path)
    done = run_promptc("check", "--format", "sarif", cwd=root)
    assert done.returncode == 1, done.stderr
    log = json.loads(done.stdout)  # stdout is the log and nothing else
    validate(log)
    as_json = json.loads(run_promptc("check", "--format", "json", cwd=root).stdout)["diagnostics"]
    [run] = log["runs"]
    assert run["tool"]["driver"]["name"] == "promptc" and run["tool"]["driver"]["version"] == promptc.__version__
    assert run["columnKind"] == "unicodeCodePoints"
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted({d["code"] for d in as_json})
    results = run["results"]
    assert len(results) == len(as_json) >= 2
    for result, d in zip(results, as_json, strict=True):
        assert result["ruleId"] == d["code"] and rules[result["ruleIndex"]]["id"] == d["code"]
        assert result["level"] == d["severity"]
        assert result["message"]["text"].startswith(d["message"])
        if d["hint"]:
            assert f"\nhint: {d['hint']}" in result["message"]["text"]
        location = result["locations"][0]["physicalLocation"]
        # relative to the folder promptc ran in (the repository root in CI), spaces encoded
        assert location["artifactLocation"] == {"uri": d["path"].replace(" ", "%20"), "uriBaseId": "%SRCROOT%"}
        region = location["region"]
        assert (region["startLine"], region["startColumn"], region["endLine"], region["endColumn"]) == (
            d["line"],
            d["col"],
            d["end_line"],
            d["end_col"],
        )
    undeclared = next(r for r in results if r["ruleId"] == "E501")
    assert undeclared["properties"]["hint"].startswith("did you mean")
    assert next(r for r in rules if r["id"] == "E501")["name"] == "UndeclaredInput"
    in_partial = [r for r in results if r["properties"].get("included_by")]
    assert in_partial and in_partial[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(
        "_shared.prompt"
    )


def test_a_clean_tree_is_a_valid_log_with_no_results_and_the_build_takes_the_format(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / "prompts_src" / "my prompts" / "bad.prompt").unlink()
    (root / "prompts_src" / "my prompts" / "_shared.prompt").unlink()
    done = run_promptc("check", "--format", "sarif", cwd=root)
    assert done.returncode == 0, done.stderr
    log = json.loads(done.stdout)
    validate(log)
    assert log["runs"][0]["results"] == [] and log["runs"][0]["tool"]["driver"]["rules"] == []
    built = run_promptc("build", "--format", "sarif", cwd=root)
    assert built.returncode == 0 and json.loads(built.stdout)["runs"][0]["results"] == []


@pytest.mark.parametrize(
    "path",
    ["a:b/c.prompt", "/abs/dir with space/x.prompt", "<std>/env.prompt", "pyproject.toml", "naïve/100%.prompt"],
)
def test_awkward_paths_are_valid_uri_references(path: str) -> None:
    """The library API renders any diagnostic; a path that is no plain relative name (a colon, an
    absolute path, the `<std>` partials, a percent sign) is still a valid `uri-reference`."""
    from promptc.facts import codes

    log = promptc.render_sarif([make(codes.UNDECLARED_INPUT, "input `x` used but not declared", path=path)])
    validate(log)
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert _uri_reference(uri)


def test_the_same_diagnostics_give_the_same_bytes() -> None:
    from promptc.facts import codes

    found: list[Diagnostic] = [
        make(codes.UNUSED_INPUT, "declared input `a` is never used", path="b.prompt"),
        make(codes.UNDECLARED_INPUT, "input `x` used but not declared", path="a.prompt", source_line="${x}"),
    ]
    assert json.dumps(promptc.render_sarif(found)) == json.dumps(promptc.render_sarif(list(found)))


def test_watch_refuses_sarif_as_a_usage_error(tmp_path: Path) -> None:
    done = run_promptc("watch", "--format", "sarif", cwd=_project(tmp_path))
    assert done.returncode == 2 and "promptc check --format sarif" in done.stderr
    (tmp_path / "md").mkdir()
    done = run_promptc("watch", "--format", "markdown", cwd=_project(tmp_path / "md"))
    assert done.returncode == 2 and "promptc check --format markdown" in done.stderr
