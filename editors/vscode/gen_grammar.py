"""Write the VS Code extension's TextMate grammar and language configuration from `promptc.facts.language`.

    python editors/vscode/gen_grammar.py          # rewrite syntaxes/prompt.tmLanguage.json and
                                                  # language-configuration.json
    python editors/vscode/gen_grammar.py --check  # exit 1 when the committed files differ

The language is defined once, in the compiler: the comment marker, the openers and closers, the
escapes, the roles, the `{% %}` tags, the section boundaries and targets and the cache TTLs come
from `promptc.facts.language`, and the directives from their declarations (`promptc.passes.directives`:
each key, and which kind of value it takes), so a change there changes the grammar, and
`tests/test_editor_grammar.py` fails until the committed files are regenerated. What is written
here is only how each construct is coloured: each kind of directive value has its rule.

How the grammar follows `grammar/prompt.lark`, one line at a time (TextMate cannot look ahead past
the end of a line):

* role separators, directives and full-line comments are line-anchored, as in the Lark grammar,
  and an inline comment after a separator or a directive is a comment (comments first);
* an inline comment is `///` after a space or tab; `a///b` and `file:///x` stay text;
* `${…}` and `{% %}` end on their line; `{{ }}` and `{# #}` are matched to the first closer, and
  may span lines (a block that reaches a separator or a section directive is cut there, where
  promptc reports it, so the rest of the file keeps its colours while a closer is being typed);
* the code of a block is Python (`source.python`), tokenised inside the block's delimiters only;
* `#` lines are header comments before the first separator. Which lines those are needs the whole
  file (in a file without separators they are text); the grammar treats `#` lines as header
  comments while the file has shown nothing but comments, directives, `#` lines and blank lines.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from promptc.facts import language as lang
from promptc.passes.directives import DIRECTIVES, Directives

HERE = Path(__file__).resolve().parent
GRAMMAR = HERE / "syntaxes" / "prompt.tmLanguage.json"
LANGUAGE_CONFIGURATION = HERE / "language-configuration.json"
SCOPE = "source.prompt"

E = re.escape
COMMENT = E(lang.COMMENT)
IDENT = lang.IDENTIFIER_PATTERN
#: a directive key (grammar/prompt.lark DIRECTIVE)
KEY = r"[a-z][a-z0-9_.\-]*"
#: the role word of a separator line (grammar/prompt.lark SEPARATOR)
WORD = r"[A-Za-z][A-Za-z0-9_]*"
ROLE = "(?i:" + "|".join(lang.ROLES) + ")"
SEPARATOR_LINE = rf"^-{{5,}}[ \t]+{WORD}[ \t]+-{{5,}}(?:[ \t]+{COMMENT}.*|[ \t]*)$"
SECTION_LINE = rf"^[ \t]*{COMMENT}[ \t]*section[ \t]*:"
TRIM = E(lang.TRIM)


def words(names: object) -> str:
    """A regex alternation of whole words, longest first so that no word hides a longer one."""
    return "|".join(E(name) for name in sorted(set(names), key=lambda n: (-len(n), n)))  # type: ignore[arg-type]


def opener(kind: str) -> str:
    (found,) = (o for o, k in lang.BLOCK_KINDS.items() if k == kind)
    return found


# ---------------------------------------------------------------------------------------------
# Directive values: how each kind of value is coloured


def _comma() -> dict:
    return {"match": ",", "name": "punctuation.separator.comma.prompt"}


def _json_values() -> list[dict]:
    """JSON literals, as `param` values are typed (promptc.passes.directives.typed_value)."""
    return [
        {
            "name": "string.quoted.double.prompt",
            "match": r'"(?:[^"\\]|\\.)*"',
        },
        {"name": "string.quoted.single.prompt", "match": r"'(?:[^'\\]|\\.)*'"},
        {"name": "constant.numeric.prompt", "match": r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])"},
        {"name": "constant.language.prompt", "match": r"\b(?:true|false|null)\b"},
        {"name": "punctuation.definition.brackets.prompt", "match": r"[\[\]{}]"},
    ]


def _type_patterns() -> list[dict]:
    """The type of a typed input (`name: list[str] | None`, `name: @schema.json`), and its token
    bound (`str(max_tokens=4000)`, for `/// budget:`)."""
    return [
        {
            "match": r"(\()[ \t]*(max_tokens)[ \t]*(=)[ \t]*([0-9_]+)[ \t]*(\))",
            "captures": {
                "1": {"name": "punctuation.definition.bound.prompt"},
                "2": {"name": "variable.other.property.prompt"},
                "3": {"name": "keyword.operator.assignment.prompt"},
                "4": {"name": "constant.numeric.prompt"},
                "5": {"name": "punctuation.definition.bound.prompt"},
            },
        },
        {
            "match": r"(@)([^\s,|\[\]]+)",
            "captures": {
                "1": {"name": "punctuation.definition.schema.prompt"},
                "2": {"name": "string.unquoted.path.prompt"},
            },
        },
        {"match": IDENT, "name": "support.type.prompt"},
        {"match": r"\|", "name": "keyword.operator.union.prompt"},
        {
            "begin": r"\[",
            "end": r"\]",
            "beginCaptures": {"0": {"name": "punctuation.definition.brackets.prompt"}},
            "endCaptures": {"0": {"name": "punctuation.definition.brackets.prompt"}},
            "patterns": [{"include": "#input-type"}, _comma()],
        },
    ]


def value_kinds() -> dict[str, list[dict]]:
    """Each kind of directive value (`promptc.passes.directives.ValueKind`) → its patterns."""
    first = r"(?<=:)[ \t]*"  # the first word of the value: right after the directive's colon
    paths = [{"match": r"[^,\s]+", "name": "string.unquoted.path.prompt"}, _comma()]
    names = [{"match": r"[^,\s]+", "name": "string.unquoted.name.prompt"}, _comma()]
    kinds = {
        "params": [
            {
                "match": r"([A-Za-z_][A-Za-z0-9_.\-]*)[ \t]*(=)",
                "captures": {
                    "1": {"name": "variable.other.property.prompt"},
                    "2": {"name": "keyword.operator.assignment.prompt"},
                },
            },
            *_json_values(),
            _comma(),
        ],
        "names": names,
        "inputs": [
            {
                "begin": ":",
                "end": "(?=,)|$",
                "beginCaptures": {"0": {"name": "punctuation.separator.type.prompt"}},
                "patterns": [{"include": "#input-type"}],
            },
            {"match": IDENT, "name": "variable.parameter.input.prompt"},
            _comma(),
        ],
        "section": [
            {
                "match": first + r"([A-Za-z_][A-Za-z0-9_.\-]*)",
                "captures": {"1": {"name": "entity.name.section.prompt"}},
            },
            {"match": rf"\b(?:{words(lang.BOUNDARIES)})\b", "name": "storage.modifier.boundary.prompt"},
            {"match": rf"\b(?:{words(lang.TARGETS)})\b", "name": "storage.modifier.target.prompt"},
            {"match": r"\S+", "name": "invalid.illegal.section.prompt"},
        ],
        "paths": paths,
        "role": [
            {"match": first + rf"({ROLE})[ \t]*$", "captures": {"1": {"name": "entity.name.tag.role.prompt"}}},
            {"match": r"\S+", "name": "invalid.illegal.role.prompt"},
        ],
        "ttl": [
            {
                "match": first + rf"({words(lang.CACHE_TTLS)})[ \t]*$",
                "captures": {"1": {"name": "constant.other.ttl.prompt"}},
            },
            {"match": r"\S+", "name": "invalid.illegal.ttl.prompt"},
        ],
        "budget": [
            {
                "match": rf"\b({words(lang.BUDGET_LIMITS)})[ \t]*(<=|≤)[ \t]*([0-9_]+)",
                "captures": {
                    "1": {"name": "variable.other.property.prompt"},
                    "2": {"name": "keyword.operator.comparison.prompt"},
                    "3": {"name": "constant.numeric.prompt"},
                },
            },
            _comma(),
            {"match": r"[^,\s]+", "name": "invalid.illegal.budget.prompt"},
        ],
        "allow": [{"include": "#allow-codes"}],
        "text": [{"match": r"\S(?:.*\S)?", "name": "string.unquoted.prompt"}],
    }
    return kinds


def value_rules(directives: Directives = DIRECTIVES) -> dict[str, list[dict]]:
    """Each declared directive key → the patterns of its value, in the order declared."""
    kinds = value_kinds()
    missing = sorted({d.value for d in directives.declared} - set(kinds))
    if missing:  # a new kind of value: say here how it looks
        raise SystemExit(f"gen_grammar.py: no rule for the directive value kind(s) {missing}")
    return {d.name: kinds[d.value] for d in directives.declared}


def directive(key: str, key_scope: str, value: list[dict]) -> dict:
    """`/// key: value` alone on its line, with an optional inline comment at its end."""
    return {
        "name": f"meta.directive.{key if key != KEY else 'metadata'}.prompt",
        "match": (
            rf"^([ \t]*)({COMMENT})[ \t]*({key})[ \t]*(:)(?!//)(.*?)(?:([ \t]+)({COMMENT}.*))?$"
            if key == KEY
            else rf"^([ \t]*)({COMMENT})[ \t]*({E(key)})[ \t]*(:)(?!//)(.*?)(?:([ \t]+)({COMMENT}.*))?$"
        ),
        "captures": {
            "2": {"name": "punctuation.definition.directive.prompt"},
            "3": {"name": key_scope},
            "4": {"name": "punctuation.separator.key-value.prompt"},
            "5": {"name": "meta.directive.value.prompt", "patterns": value},
            "7": {"name": "comment.line.triple-slash.prompt", "patterns": [{"include": "#comment-tail"}]},
        },
    }


# ---------------------------------------------------------------------------------------------
# Template blocks


def block_rules(kind: str, close: str) -> list[dict]:
    """`{{ … }}` / `{# … #}`: on one line a single match; else begin/end across lines."""
    open_ = opener(kind)
    name = f"meta.block.{kind}.prompt"
    begin_captures = {
        "1": {"name": "punctuation.section.embedded.begin.prompt"},
        "2": {"name": "keyword.operator.trim.prompt"},
    }
    end_captures = {
        "1": {"name": "keyword.operator.trim.prompt"},
        "2": {"name": "punctuation.section.embedded.end.prompt"},
    }
    python = [{"include": "source.python"}]
    return [
        {
            "name": name,
            "match": rf"({E(open_)})({TRIM}?)(.*?)({TRIM}?)({E(close)})",
            "captures": {
                **begin_captures,
                "3": {"name": "meta.embedded.inline.python", "patterns": python},
                "4": end_captures["1"],
                "5": end_captures["2"],
            },
        },
        {
            # The closer, a separator or a section directive ends it; the code is Python, read a
            # line at a time inside the delimiters so that nothing in it can run past the closer.
            "name": name,
            "begin": rf"({E(open_)})({TRIM}?)",
            "end": rf"({TRIM}?)({E(close)})|(?={SEPARATOR_LINE})|(?={SECTION_LINE})",
            "beginCaptures": begin_captures,
            "endCaptures": end_captures,
            "contentName": "meta.embedded.block.python",
            "patterns": [{"match": rf"(?:(?!{TRIM}?{E(close)}).)+", "captures": {"0": {"patterns": python}}}],
        },
    ]


def grammar(directives: Directives = DIRECTIVES) -> dict:
    """The TextMate grammar; `directives`: the table whose keys get their own rules."""
    roles = ", ".join(lang.ROLES)
    tags = [*lang.OPENERS, *lang.CONTINUERS, *lang.CLOSERS]
    stmt_open = opener("stmt")
    stmt_close = lang.DELIMITERS[stmt_open]
    repository: dict[str, dict] = {
        "preamble": {
            # Before the first separator: comments, directives, blank lines and Composum's `#` header lines.
            "begin": r"\A(?=[ \t]*(?:#|" + COMMENT + r"|$))",
            "end": rf"^(?![ \t]*(?:#|{COMMENT}|$))",
            "patterns": [{"include": "#directive"}, {"include": "#comment-line"}, {"include": "#header-comment"}],
        },
        "header-comment": {
            "name": "comment.line.number-sign.header.prompt",
            "match": r"^[ \t]*(#).*$",
            "captures": {"1": {"name": "punctuation.definition.comment.prompt"}},
        },
        "separator": {
            "comment": f"a role separator: five or more dashes, a role ({roles}), five or more dashes",
            "name": "meta.separator.prompt",
            "match": rf"^(-{{5,}})[ \t]+(?:({ROLE})|({WORD}))[ \t]+(-{{5,}})(?:([ \t]+)({COMMENT}.*)|[ \t]*)$",
            "captures": {
                "1": {"name": "punctuation.definition.separator.prompt"},
                "2": {"name": "entity.name.tag.role.prompt"},
                "3": {"name": "invalid.illegal.role.prompt"},
                "4": {"name": "punctuation.definition.separator.prompt"},
                "6": {"name": "comment.line.triple-slash.prompt", "patterns": [{"include": "#comment-tail"}]},
            },
        },
        "directive": {
            "patterns": [
                *(
                    directive(key, "keyword.other.directive.prompt", value)
                    for key, value in value_rules(directives).items()
                ),
                directive(KEY, "variable.other.metadata.prompt", value_kinds()["text"]),
            ]
        },
        "comment-line": {
            "name": "comment.line.triple-slash.prompt",
            "match": rf"^[ \t]*({COMMENT})(.*)$",
            "captures": {
                "1": {"name": "punctuation.definition.comment.prompt"},
                "2": {"patterns": [{"include": "#allow-comment"}]},
            },
        },
        "comment-inline": {
            "comment": "an inline comment: `///` after a space or tab; it goes with the whitespace before it",
            "name": "comment.line.triple-slash.prompt",
            "match": rf"[ \t]+({COMMENT})(.*)",
            "captures": {
                "1": {"name": "punctuation.definition.comment.prompt"},
                "2": {"patterns": [{"include": "#allow-comment"}]},
            },
        },
        "allow-comment": {
            "comment": "`/// promptc: allow CODE` at the end of the line it is about",
            "match": r"(?<=///)[ \t]*(promptc)[ \t]*(:)(.*)",
            "captures": {
                "1": {"name": "keyword.other.directive.prompt"},
                "2": {"name": "punctuation.separator.key-value.prompt"},
                "3": {"patterns": [{"include": "#allow-codes"}]},
            },
        },
        "comment-tail": {
            "comment": "the inline comment of a separator or directive line",
            "match": rf"({COMMENT})(.*)",
            "captures": {
                "1": {"name": "punctuation.definition.comment.prompt"},
                "2": {"patterns": [{"include": "#allow-comment"}]},
            },
        },
        "allow-codes": {
            "patterns": [
                {"match": r"\ballow\b", "name": "keyword.other.allow.prompt"},
                {"match": r"\b[A-Za-z]\d{3}\b", "name": "constant.other.diagnostic-code.prompt"},
                _comma(),
            ]
        },
        "input-type": {"patterns": _type_patterns()},
        "escape": {
            "comment": "a backslash escapes only the comment marker and the four openers",
            "name": "constant.character.escape.prompt",
            "match": E(lang.ESCAPE) + "(?:" + "|".join(E(s) for s in lang.SOURCE_ESCAPES) + ")",
        },
        "placeholder": {
            "patterns": [
                {
                    "match": E(lang.PLACEHOLDER_OPEN + lang.DELIMITERS[lang.PLACEHOLDER_OPEN]),
                    "name": "invalid.illegal.placeholder.prompt",
                },
                {"include": "#placeholder-path"},
            ]
        },
        "placeholder-path": {
            "name": "meta.placeholder.prompt",
            "match": rf"({E(lang.PLACEHOLDER_OPEN)})(?:({IDENT}(?:\.{IDENT})*)|([^}}\n]*))(\}})",
            "captures": {
                "1": {"name": "punctuation.definition.placeholder.begin.prompt"},
                "2": {"name": "variable.other.placeholder.prompt"},
                "3": {"name": "invalid.illegal.placeholder.prompt"},
                "4": {"name": "punctuation.definition.placeholder.end.prompt"},
            },
        },
        "block-expr": {"patterns": block_rules("expr", lang.DELIMITERS[opener("expr")])},
        "block-exec": {"patterns": block_rules("exec", lang.DELIMITERS[opener("exec")])},
        "block-stmt": {
            "comment": "a structure tag, on one line: " + ", ".join(tags),
            "name": "meta.block.stmt.prompt",
            "match": (
                rf"({E(stmt_open)})({TRIM}?)([ \t]*)(?:({words(tags)})\b|({IDENT}))?(.*?)({TRIM}?)({E(stmt_close)})"
            ),
            "captures": {
                "1": {"name": "punctuation.section.embedded.begin.prompt"},
                "2": {"name": "keyword.operator.trim.prompt"},
                "4": {"name": "keyword.control.flow.prompt"},
                "5": {"name": "invalid.illegal.tag.prompt"},
                "6": {"name": "meta.embedded.inline.python", "patterns": [{"include": "source.python"}]},
                "7": {"name": "keyword.operator.trim.prompt"},
                "8": {"name": "punctuation.section.embedded.end.prompt"},
            },
        },
        "embedded-python": {
            "comment": (
                "never matches: vscode-textmate, and so VS Code, loads an embedded grammar only when a "
                "`patterns` list names it, and the blocks name source.python in their captures"
            ),
            "begin": "(?!)",
            "end": "(?!)",
            "patterns": [{"include": "source.python"}],
        },
        "unterminated": {
            "comment": "an opener with no closer on its line (for `{{` and `{#`: anywhere)",
            "name": "invalid.illegal.unterminated.prompt",
            "match": "|".join(E(o) for o in (lang.PLACEHOLDER_OPEN, stmt_open)),
        },
    }
    return {
        "$schema": "https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json",
        "name": "promptc prompt",
        "scopeName": SCOPE,
        "fileTypes": [lang.SOURCE_SUFFIX.lstrip(".")],
        "comment": "Generated by editors/vscode/gen_grammar.py from promptc.facts.language: do not edit.",
        "patterns": [
            {"include": "#preamble"},
            {"include": "#separator"},
            {"include": "#directive"},
            {"include": "#comment-line"},
            {"include": "#comment-inline"},
            {"include": "#escape"},
            {"include": "#placeholder"},
            {"include": "#block-expr"},
            {"include": "#block-exec"},
            {"include": "#block-stmt"},
            {"include": "#unterminated"},
            {"include": "#embedded-python"},
        ],
        "repository": repository,
    }


def language_configuration() -> dict:
    """Comment toggling, brackets and auto-closing for VS Code, from the same delimiters."""
    pairs = [[o, c] for o, c in lang.DELIMITERS.items()]
    return {
        "comments": {"lineComment": lang.COMMENT},
        "brackets": [["{", "}"], ["[", "]"], ["(", ")"]],
        "autoClosingPairs": [
            *({"open": o, "close": c, "notIn": ["string", "comment"]} for o, c in pairs),
            {"open": "[", "close": "]"},
            {"open": "(", "close": ")"},
            {"open": '"', "close": '"', "notIn": ["string"]},
        ],
        "surroundingPairs": [["{", "}"], ["[", "]"], ["(", ")"], ['"', '"']],
        "autoCloseBefore": ";:.,=}])>` \n\t",
    }


def render(document: dict) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def outputs() -> dict[Path, str]:
    return {GRAMMAR: render(grammar()), LANGUAGE_CONFIGURATION: render(language_configuration())}


def main(argv: list[str]) -> int:
    stale = [path for path, text in outputs().items() if not path.exists() or path.read_text("utf-8") != text]
    if "--check" in argv:
        for path in stale:
            print(f"{path.relative_to(HERE)} is not what gen_grammar.py writes: run it", file=sys.stderr)
        return 1 if stale else 0
    for path, text in outputs().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
