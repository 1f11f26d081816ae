"""The VS Code extension's grammar is generated from the compiler's definition of the language and
agrees with the Lark grammar line by line; its manifest is what `vsce package` needs.

The real tokenizer (vscode-textmate on vscode-oniguruma) runs in `editors/vscode/test/` under
`node --test`; `test_editor_grammar_node.py` runs it, and `vsce package`, from `.ci/run`.
"""

from __future__ import annotations

import importlib.util
import json
import random
import re

import pytest

from promptc.facts import language
from promptc.passes.directives import RESERVED_KEYS
from promptc.syntax.parse import parser

from .conftest import ROOT

VSCODE = ROOT / "editors" / "vscode"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_grammar", VSCODE / "gen_grammar.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()
GRAMMAR = json.loads((VSCODE / "syntaxes" / "prompt.tmLanguage.json").read_text(encoding="utf-8"))
REPO = GRAMMAR["repository"]


def test_committed_grammar_and_language_configuration_are_what_the_generator_writes() -> None:
    for path, text in GEN.outputs().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(ROOT)} is stale: run `.venv/bin/python editors/vscode/gen_grammar.py`"
        )
    assert GEN.main(["--check"]) == 0


def test_the_grammar_follows_promptc_language(monkeypatch: pytest.MonkeyPatch) -> None:
    # Not a copy of today's lists: a new role or tag in promptc.facts.language changes the grammar.
    monkeypatch.setattr(language, "ROLES", (*language.ROLES, "tool"))
    monkeypatch.setattr(language, "CLOSERS", {**language.CLOSERS, "endmatch": "match"})
    grammar = _generator().grammar()
    assert re.match(grammar["repository"]["separator"]["match"], "----- tool -----").group(2) == "tool"
    tag = re.search(grammar["repository"]["block-stmt"]["match"], "{% endmatch %}")
    assert tag and tag.group(4) == "endmatch"
    assert grammar != GRAMMAR


def test_every_reserved_directive_key_has_its_own_rule() -> None:
    key_scopes = {rule["captures"]["3"]["name"] for rule in REPO["directive"]["patterns"]}
    assert key_scopes == {"keyword.other.directive.prompt", "variable.other.metadata.prompt"}
    reserved = {
        re.match(rule["match"], f"/// {key}: x").group(3)
        for rule in REPO["directive"]["patterns"][:-1]
        for key in (*RESERVED_KEYS, "promptc")
        if re.match(rule["match"], f"/// {key}: x")
    }
    assert reserved == {*RESERVED_KEYS, "promptc"}


# ---------------------------------------------------------------------------------------------
# The same lines, read by the Lark grammar and by the TextMate rules


def _lines() -> list[str]:
    corpus = [
        line
        for folder in (ROOT / "prompts_src", VSCODE / "test" / "fixtures")
        for path in sorted(folder.rglob("*.prompt"))
        for line in path.read_text(encoding="utf-8").split("\n")
    ]
    pieces = ["-----", "---", " ", "\t", "user", "USER", "tool", "///", "//", "x", ":", "#", "\\", "${", "}", "{%"]
    pieces += ["%}", "{{", "}}", "{#", "#}", "-", "section", "input", "a.b", "1", "http", "\u00a0"]
    corpus += [  # every near miss of a separator line
        f"{lead}{'-' * left}{ws}{word}{ws}{'-' * right}{tail}"
        for lead in ("", " ")
        for left in (4, 5, 6)
        for right in (4, 5)
        for ws in ("", " ", "\t", "  ")
        for word in ("user", "USER", "tool", "x1", "1x")
        for tail in ("", " ", " /// c", "/// c", " x")
    ]
    rng = random.Random(15)
    corpus += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 9))) for _ in range(3000)]
    return corpus


LINES = _lines()
TERMINALS = {t.name: re.compile(t.pattern.to_regexp()) for t in parser().terminals}


def _tm(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)  # the grammar's regexes use no Oniguruma-only syntax


def test_separators_directives_and_comment_lines_agree_with_the_lark_grammar() -> None:
    separator = _tm(REPO["separator"]["match"])
    directive = _tm(REPO["directive"]["patterns"][-1]["match"])
    reserved = [_tm(rule["match"]) for rule in REPO["directive"]["patterns"][:-1]]
    comment = _tm(REPO["comment-line"]["match"])
    for line in LINES:
        lark = {
            name: bool(TERMINALS[name].fullmatch(line + "\n")) for name in ("SEPARATOR", "DIRECTIVE", "FULL_COMMENT")
        }
        assert bool(separator.match(line)) == lark["SEPARATOR"], line
        assert bool(directive.match(line)) == lark["DIRECTIVE"], line
        if lark["DIRECTIVE"]:
            key = re.match(r"[ \t]*///[ \t]*([a-z][a-z0-9_.\-]*)", line).group(1)
            assert any(rule.match(line) for rule in reserved) == (key in (*RESERVED_KEYS, "promptc")), line
        assert bool(comment.match(line)) == lark["FULL_COMMENT"], line


@pytest.mark.parametrize(
    ("terminal", "rules"),
    [
        ("ESCAPE", ["escape"]),
        ("PLACEHOLDER", ["placeholder-path"]),
        ("STMT_BLOCK", ["block-stmt"]),
        ("INLINE_COMMENT", ["comment-inline"]),
    ],
)
def test_in_line_constructs_span_what_the_lark_grammar_spans(terminal: str, rules: list[str]) -> None:
    ours = [_tm(REPO[name]["match"]) for name in rules]
    if terminal == "PLACEHOLDER":
        ours.append(_tm(REPO["placeholder"]["patterns"][0]["match"]))
    for line in LINES:
        for start in range(len(line)):
            theirs = TERMINALS[terminal].match(line, start)
            mine = [m.end() for m in (r.match(line, start) for r in ours) if m]
            assert (theirs.end() if theirs else None) == (max(mine) if mine else None), (line, start)


def test_expression_and_statement_blocks_end_at_the_first_closer_as_in_lark() -> None:
    for kind, terminal in (("expr", "EXPR_BLOCK"), ("exec", "EXEC_BLOCK")):
        one_line = _tm(REPO[f"block-{kind}"]["patterns"][0]["match"])
        for line in LINES:
            for start in range(len(line)):
                theirs = TERMINALS[terminal].match(line, start)
                mine = one_line.match(line, start)
                assert (theirs.end() if theirs else None) == (mine.end() if mine else None), (line, start)


# ---------------------------------------------------------------------------------------------
# The extension's manifest, checked the way `vsce package` checks it


def test_the_manifest_is_complete_and_every_path_it_names_exists() -> None:
    manifest = json.loads((VSCODE / "package.json").read_text(encoding="utf-8"))
    for field in ("name", "publisher", "version", "engines", "main", "displayName", "description"):
        assert manifest.get(field), field
    assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", manifest["name"])  # vsce: lowercase, no spaces
    assert re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])
    assert re.fullmatch(r"\^\d+\.\d+\.\d+", manifest["engines"]["vscode"])
    assert (VSCODE / manifest["main"]).is_file()
    contributes = manifest["contributes"]
    (lang,) = contributes["languages"]
    assert lang["extensions"] == [language.SOURCE_SUFFIX]
    assert f"onLanguage:{lang['id']}" in manifest["activationEvents"]
    assert json.loads((VSCODE / lang["configuration"]).read_text(encoding="utf-8"))["comments"]["lineComment"] == "///"
    (grammar,) = contributes["grammars"]
    assert grammar["language"] == lang["id"]
    assert json.loads((VSCODE / grammar["path"]).read_text(encoding="utf-8"))["scopeName"] == grammar["scopeName"]
    text = (VSCODE / grammar["path"]).read_text(encoding="utf-8")
    assert all(f'"{scope}"' in text for scope in grammar["embeddedLanguages"])
    properties = contributes["configuration"]["properties"]
    assert properties["promptc.path"]["type"] == "string"
    assert properties["promptc.args"]["type"] == "array"
    client = (VSCODE / "extension.js").read_text(encoding="utf-8")
    for command in contributes["commands"]:
        assert f'"{command["command"]}"' in client
    assert (VSCODE / "README.md").is_file()
    ignored = (VSCODE / ".vscodeignore").read_text(encoding="utf-8").split()
    assert "test/**" in ignored and "gen_grammar.py" in ignored


def test_the_lock_file_pins_exactly_what_the_manifest_asks_for() -> None:
    # `npm ci` refuses a lock file that is out of step with package.json
    manifest = json.loads((VSCODE / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((VSCODE / "package-lock.json").read_text(encoding="utf-8"))
    root = lock["packages"][""]
    assert lock["lockfileVersion"] >= 2
    for kind in ("dependencies", "devDependencies"):
        assert root.get(kind, {}) == manifest.get(kind, {}), kind
        for name, version in manifest.get(kind, {}).items():
            assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name}: pin an exact version"
            assert lock["packages"][f"node_modules/{name}"]["version"] == version, name


def test_ci_installs_the_node_packages_before_the_ci_only_tests() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "editors/vscode" in script and "npm ci" in script
    assert script.index("npm ci") < script.index("-m ci_only")


def test_the_snapshot_fixtures_cover_every_construct() -> None:
    # Each construct named in the grammar's top-level patterns shows up in some snapshot.
    snaps = "".join(p.read_text(encoding="utf-8") for p in sorted((VSCODE / "test").rglob("*.snap")))
    for scope in (
        "comment.line.triple-slash.prompt",
        "comment.line.number-sign.header.prompt",
        "meta.separator.prompt",
        "invalid.illegal.role.prompt",
        "constant.character.escape.prompt",
        "variable.other.placeholder.prompt",
        "invalid.illegal.unterminated.prompt",
        "meta.block.expr.prompt",
        "meta.block.exec.prompt",
        "meta.block.stmt.prompt",
        "keyword.operator.trim.prompt",
        "meta.embedded.block.python",
        "constant.other.diagnostic-code.prompt",
        *(f"meta.directive.{key}.prompt" for key in (*RESERVED_KEYS, "promptc", "metadata")),
    ):
        assert scope in snaps, scope
    examples = {p.relative_to(ROOT / "prompts_src").with_suffix("") for p in (ROOT / "prompts_src").rglob("*.prompt")}
    snapped = {
        p.relative_to(VSCODE / "test" / "examples").with_suffix("")
        for p in (VSCODE / "test" / "examples").rglob("*.snap")
    }
    assert examples == snapped, "run `UPDATE_SNAPSHOTS=1 node --test test/` in editors/vscode"
