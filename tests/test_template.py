"""promptc.runtime.template and promptc.facts.language: the one definition of the template language.

The reference for "identical behaviour" is the runtime as it was before it moved onto
promptc.runtime.template: its tokenizer and code generator are frozen below (`_OLD_*`, copied from
compiler/runtime/render.py), so these tests keep their meaning after the runtime switches over. While
promptc.runtime still has its own copies, a test checks the frozen copy against them.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import linecache
import re
import textwrap
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptc.facts import language
from promptc.runtime import render as runtime
from promptc.runtime.template import (
    APPEND,
    BEFORE_SECTION,
    BEFORE_SEPARATOR,
    LOOKUP,
    PARTS,
    BlockParts,
    Structure,
    TemplateSyntaxError,
    Token,
    certain_block,
    compile_program,
    compile_section,
    execute,
    generate,
    offset_at,
    parse_code,
    parse_header,
    read_block,
    run,
    scan,
    surely_compiles,
    unwrap,
    walk,
)

from .conftest import examples

# ---------------------------------------------------------------------------------------------
# The old runtime, frozen (compiler/runtime/render.py before the switch): tokenizer, code generator, exec.

_OLD_TOKEN = re.compile(
    r"\\(\$\{|\{\{|\{#|\{%)" r"|\$\{([^}\n]*)\}" r"|(\{\{[\s\S]*?\}\})" r"|(\{#[\s\S]*?#\})" r"|(\{%[^\n]*?%\})"
)
_OLD_KIND = {"{{": "expr", "{#": "exec", "{%": "stmt"}


@dataclass(frozen=True)
class _OldTok:
    kind: str
    text: str
    pos: int = 0
    trim_left: bool = False
    trim_right: bool = False


def _old_tokenize(text: str) -> tuple[_OldTok, ...]:
    tokens: list[_OldTok] = []
    literal: list[str] = []
    literal_at = 0

    def flush() -> None:
        if literal:
            tokens.append(_OldTok("lit", "".join(literal), literal_at))
            literal.clear()

    last = 0
    for match in _OLD_TOKEN.finditer(text):
        if match.start() > last:
            if not literal:
                literal_at = last
            literal.append(text[last : match.start()])
        last = match.end()
        escape, path, *_ = match.groups()
        if escape is not None:
            if not literal:
                literal_at = match.start()
            literal.append(escape)
            continue
        flush()
        if path is not None:
            tokens.append(_OldTok("ph", path, match.start()))
            continue
        raw = match.group(0)
        inner = raw[2:-2]
        trim_left = inner.startswith("-")
        trim_right = inner.endswith("-") and len(inner) > (1 if trim_left else 0)
        code = inner[(1 if trim_left else 0) : len(inner) - (1 if trim_right else 0)]
        tokens.append(_OldTok(_OLD_KIND[raw[:2]], code, match.start(), trim_left, trim_right))
    if last < len(text):
        if not literal:
            literal_at = last
        literal.append(text[last:])
    flush()
    out = list(tokens)
    for i, tok in enumerate(out):
        if tok.kind in ("lit", "ph"):
            continue
        if tok.trim_left and i > 0 and out[i - 1].kind == "lit" and out[i - 1].text[-1:].isspace():
            out[i - 1] = _OldTok("lit", out[i - 1].text[:-1], out[i - 1].pos)
        if tok.trim_right and i + 1 < len(out) and out[i + 1].kind == "lit" and out[i + 1].text[:1].isspace():
            out[i + 1] = _OldTok("lit", out[i + 1].text[1:], out[i + 1].pos + 1)
    return tuple(t for t in out if t.kind != "lit" or t.text)


class _OldProblem(Exception):
    pass


def _old_call(func: str, arg: ast.expr) -> ast.stmt:
    return ast.Expr(ast.Call(ast.Name(func, ast.Load()), [arg], []))


def _old_parse(code: str, line: int) -> list[ast.stmt]:
    try:
        module = ast.parse(code, mode="exec")
    except (SyntaxError, ValueError) as exc:
        raise _OldProblem(str(exc)) from None
    for node in module.body:
        ast.increment_lineno(node, line - 1)
    return module.body


@dataclass
class _OldFrame:
    construct: str
    node: Any
    body: list
    in_else: bool = False


def _old_compile(text: str):
    root = _OldFrame("", None, [])
    stack = [root]
    for tok in _old_tokenize(text):
        body = stack[-1].body
        line = text.count("\n", 0, tok.pos) + 1
        if tok.kind == "lit":
            body.append(_old_call("__append__", ast.Constant(tok.text)))
        elif tok.kind == "ph":
            body.append(
                _old_call(
                    "__append__", ast.Call(ast.Name("__promptc_input__", ast.Load()), [ast.Constant(tok.text)], [])
                )
            )
        elif tok.kind == "expr":
            statements = _old_parse(textwrap.dedent(tok.text).strip(), line)
            if not statements or not isinstance(statements[-1], ast.Expr):
                raise _OldProblem("a `{{ }}` block must end with an expression")
            last = statements.pop()
            body.extend(statements)
            body.append(ast.copy_location(_old_call("__append__", last.value), last))
        elif tok.kind == "exec":
            body.extend(_old_parse(textwrap.dedent(tok.text).strip(), line))
        else:
            code = textwrap.dedent(tok.text).strip()
            keyword = re.split(r"[\s(:]", code, maxsplit=1)[0] if code else ""
            top = stack[-1]
            if keyword in ("if", "for", "while"):
                header = _old_parse(f"{code}:\n pass\n", line)[0]
                header.body = []
                top.body.append(header)
                stack.append(_OldFrame(keyword, header, header.body))
            elif keyword == "elif":
                if top.construct != "if" or top.in_else:
                    raise _OldProblem("`{% elif %}` outside `{% if %}`")
                branch = _old_parse(f"if 1: pass\n{code}:\n pass\n", line - 1)[0].orelse[0]
                branch.body = []
                top.node.orelse = [branch]
                top.node, top.body = branch, branch.body
            elif keyword == "else":
                if not top.construct or top.in_else or code != "else":
                    raise _OldProblem("misplaced `{% else %}`")
                top.node.orelse = []
                top.body = top.node.orelse
                top.in_else = True
            elif keyword in ("endif", "endfor", "endwhile"):
                if top.construct != keyword[3:]:
                    raise _OldProblem("mismatched")
                stack.pop()
            else:
                raise _OldProblem("unknown tag")
    if len(stack) > 1:
        raise _OldProblem("never closed")
    work = [root.body]
    while work:
        for node in work.pop():
            if isinstance(node, (ast.If, ast.For, ast.While)):
                if not node.body:
                    node.body.append(ast.Pass())
                work.extend((node.body, node.orelse))
    module = ast.Module(root.body, [])
    ast.fix_missing_locations(module)
    try:
        # inherits `from __future__ import annotations` from this module, as runtime.py's compile() did
        return compile(module, "<old>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise _OldProblem(str(exc)) from None


def _lookup(inputs: dict):
    def lookup(path: str) -> str:
        value = inputs
        for i, part in enumerate(path.split(".")):
            value = value[part] if i == 0 or isinstance(value, dict) else getattr(value, part)
        return str(value)

    return lookup


def old_render(text: str, inputs: dict) -> str:
    parts: list[Any] = []
    scope = dict(inputs)
    scope["__builtins__"] = builtins
    scope["__parts__"] = parts
    scope["__append__"] = parts.append
    scope["__promptc_input__"] = _lookup(inputs)
    exec(_old_compile(text), scope)
    return "".join(map(str, parts))


def new_render(text: str, inputs: dict) -> str:
    return run(compile_section(text).code, inputs, _lookup(inputs))


def outcome(render, text: str, inputs: dict) -> tuple[str, str]:
    try:
        return "ok", render(text, inputs)
    except Exception as exc:  # compared by type: both must fail the same way
        return "error", type(exc).__name__


def token_key(tokens) -> list[tuple]:
    return [(t.kind, t.text, t.pos, t.trim_left, t.trim_right) for t in tokens]


# ---------------------------------------------------------------------------------------------
# language.py


def _same_while_present(module: Any, name: str, value: Any) -> None:
    """The old definition, while the module still has its own copy, equals language.py's."""
    old = getattr(module, name, None)
    if old is not None:
        assert (old.pattern, old.flags) == (value.pattern, value.flags) if isinstance(old, re.Pattern) else old == value


def test_language_matches_the_modules_it_replaces():
    from promptc.backend import emit
    from promptc.facts import config
    from promptc.passes import directives
    from promptc.syntax import parse

    assert language.JOINER == emit.JOINER == runtime.JOINER == "\n\n"
    for name, value in [
        ("PLACEHOLDER_NAME", language.PLACEHOLDER_PATH),
        ("_SEPARATOR", language.SEPARATOR),
        ("_SECTION_DIRECTIVE", language.SECTION_DIRECTIVE),
        ("_DIRECTIVE", language.DIRECTIVE),
        ("OPENERS", language.OPENERS),
        ("CONTINUERS", language.CONTINUERS),
        ("CLOSERS", language.CLOSERS),
        ("STMT_KEYWORDS", language.STMT_KEYWORDS),
        ("MAX_NESTING", language.MAX_NESTING),
        ("_OPENER_CLOSE", language.DELIMITERS),
    ]:
        _same_while_present(parse, name, value)
    _same_while_present(emit, "_OPENER", language.OPENER)
    _same_while_present(runtime, "SHAPES", language.SHAPES)
    _same_while_present(runtime, "MANIFEST", language.MANIFEST)
    _same_while_present(runtime, "SYSTEM_ROLES", language.SYSTEM_ROLES)
    _same_while_present(runtime, "_PATH", language.PLACEHOLDER_PATH)
    _same_while_present(directives, "BOUNDARIES", language.BOUNDARIES)
    _same_while_present(directives, "TARGETS", language.TARGETS)
    _same_while_present(config, "ROLES", language.ROLES)
    assert language.SEPARATOR.flags & re.M
    assert language.ROLES == ("system", "developer", "user", "assistant")
    assert language.MAX_NESTING == 90 and language.IMPLICIT_SECTION == "body"
    assert set(language.TEMPLATE_ESCAPES) == set(language.DELIMITERS)
    assert language.SOURCE_ESCAPES == ("///", *language.TEMPLATE_ESCAPES)


@pytest.mark.parametrize(
    "text", ["", "plain", "${x}", "{{ a }} {# b #} {% c %}", "\\${", "{{{", "{${", "a\\{{b", "}}#}%}", "{x}"]
)
def test_escape_literal_and_unescape(text):
    escaped = language.escape_literal(text)
    assert language.unescape(escaped) == text
    # the runtime reads escaped text back as exactly one literal
    assert [(t.kind, t.text) for t in scan(escaped)] == ([("lit", text)] if text else [])


def test_separator_pattern():
    assert language.SEPARATOR.search("x\n----- user -----\ny").group(1) == "user"
    assert language.SEPARATOR.search("---- user ----") is None
    assert language.PLACEHOLDER_PATH.match("a.b_c.d1") and not language.PLACEHOLDER_PATH.match("a.")


# ---------------------------------------------------------------------------------------------
# read_block


@pytest.mark.parametrize(
    ("raw", "kind", "code", "offset", "left", "right", "keyword"),
    [
        ("{{ x }}", "expr", " x ", 2, False, False, ""),
        ("{{- x -}}", "expr", " x ", 3, True, True, ""),
        ("{{-x}}", "expr", "x", 3, True, False, ""),
        ("{{x-}}", "expr", "x", 2, False, True, ""),
        ("{{-}}", "expr", "", 3, True, False, ""),
        ("{{--}}", "expr", "", 3, True, True, ""),
        ("{{-- x --}}", "expr", "- x -", 3, True, True, ""),
        ("{{}}", "expr", "", 2, False, False, ""),
        ("{{ a - b }}", "expr", " a - b ", 2, False, False, ""),
        ("{{ x - }}", "expr", " x - ", 2, False, False, ""),
        ("{#- y = 1\n z = 2 -#}", "exec", " y = 1\n z = 2 ", 3, True, True, ""),
        ("{##}", "exec", "", 2, False, False, ""),
        ("{% if a %}", "stmt", " if a ", 2, False, False, "if"),
        ("{%- for x in y -%}", "stmt", " for x in y ", 3, True, True, "for"),
        ("{% if(a) %}", "stmt", " if(a) ", 2, False, False, "if"),
        ("{% else: %}", "stmt", " else: ", 2, False, False, "else"),
        ("{%\tendif\t%}", "stmt", "\tendif\t", 2, False, False, "endif"),
        ("{% endif x %}", "stmt", " endif x ", 2, False, False, "endif"),
        ("{%  %}", "stmt", "  ", 2, False, False, ""),
        ("{% (x) %}", "stmt", " (x) ", 2, False, False, ""),
        ("{%-%}", "stmt", "", 3, True, False, ""),
    ],
)
def test_read_block(raw, kind, code, offset, left, right, keyword):
    parts = read_block(raw)
    assert parts == BlockParts(kind, code, offset, left, right, keyword)
    assert raw[parts.code_offset : parts.code_offset + len(code)] == code


@pytest.mark.parametrize("raw", ["${x}", "{{ x }", "{{", "x", "{% x }}", ""])
def test_read_block_refuses_what_is_not_a_block(raw):
    with pytest.raises(ValueError):
        read_block(raw)


# ---------------------------------------------------------------------------------------------
# scan: identical to the old runtime tokenizer, linear time

SCAN_TABLE = [
    "",
    "plain text",
    "a ${x} b ${user.name}",
    "${}",
    "${ x }",
    "${x\n}",
    "${x",
    "\\${x}",
    "\\\\${x}",
    "\\{{ x }}",
    "\\{# x #}",
    "\\{% x %}",
    "\\///",
    "a {{ x }} b",
    "a {{- x -}} b",
    "a  {{- x -}}  b",
    "{{ x -}} {{- x }}",
    "{{ x -}}  {{- x }}",
    "\t{{- x }}\t",
    "\n{{- x -}}\n",
    "{{-}}",
    "{{--}}",
    "{{ x }}}",
    "{{{ x }}",
    "{{ a\n b }}",
    "{# x = 1 #}{{ x }}",
    "{#- y = 1 -#}\n{{ y }}",
    "{#}#}",
    "{% if x %}a{% endif %}",
    "{% if x\n%}",
    "{%- if x -%} a {%- endif -%}",
    "{% a %}%}",
    "{{ unterminated",
    "{# unterminated",
    "{% unterminated",
    "${ unterminated",
    "{{ a }} {{ b",
    "x ${a} {{- b -}} ${c} y",
    "${a}{{- b -}}${c}",
    "a\\{{-b}}",
    " {{- a -}} {{- b -}} ",
    "\u3000{{- a -}}\u2028",
    "{{ '}}' }}",
    "{{ x }}\n{% for i in y -%}\n  {{ i }}\n{%- endfor %}\n",
]


def _check_scan(text: str) -> None:
    tokens = scan(text)
    assert token_key(tokens) == token_key(_old_tokenize(text)), text
    for tok in tokens:
        assert tok.line == text.count("\n", 0, tok.pos) + 1
        if tok.kind != "lit":
            assert text[tok.pos : tok.end] == tok.raw
            if tok.block is not None:
                assert tok.block == read_block(tok.raw) and tok.text == tok.block.code


@pytest.mark.parametrize("text", SCAN_TABLE)
def test_scan_matches_the_old_runtime(text):
    _check_scan(text)


FRAGMENTS = [
    "\\",
    "$",
    "{",
    "}",
    "#",
    "%",
    "-",
    " ",
    "\t",
    "\n",
    "\u3000",
    "a",
    "x",
    "${x}",
    "${a.b}",
    "{{",
    "}}",
    "{#",
    "#}",
    "{%",
    "%}",
    "{{- x -}}",
    "{%- if a -%}",
    "{#- b -#}",
    "\\{{",
    "\\${",
]


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=3)), max_size=30).map("".join))
def test_scan_matches_the_old_runtime_on_any_text(text):
    _check_scan(text)


@pytest.mark.parametrize(
    "text",
    ["{{" * 200_000, "{#" * 200_000, "${" * 200_000, "{%" * 200_000, "\\{{" * 100_000, "{{ a }}" * 50_000],
    ids=["expr", "exec", "placeholder", "stmt", "escapes", "blocks"],
)
def test_scan_of_unterminated_openers_finishes(text):
    # the old one-regex tokenizer took minutes on these (it rescanned to the end for each opener);
    # `make bench` measures the time, this only shows the whole text comes back as tokens
    tokens = scan.__wrapped__(text)
    assert tokens[0].pos == 0 and sum(len(t.raw or t.text) for t in tokens) >= len(text) // 2


def test_scan_tokens_carry_lines_and_raw():
    text = "a\n${b}\n{{\n c\n}} \n{%- if d %}"
    tokens = scan(text)
    assert [(t.kind, t.line) for t in tokens] == [
        ("lit", 1),
        ("ph", 2),
        ("lit", 2),
        ("expr", 3),
        ("lit", 5),
        ("stmt", 6),
    ]
    assert tokens[1].raw == "${b}" and tokens[3].raw == "{{\n c\n}}"
    assert (tokens[4].text, tokens[4].pos) == (" ", 15)  # the `-` of `{%-` ate the newline before it
    trimmed = scan("{{ a -}}\nb")
    assert (trimmed[1].text, trimmed[1].pos, trimmed[1].line) == ("b", 9, 2)


# ---------------------------------------------------------------------------------------------
# Structure


def _structure(events: str, max_nesting: int = 90) -> list[tuple[str, int, str]]:
    """Space-separated tags; `|` is a role separator, `§` a section directive. → (code, event index, message)."""
    structure: Structure[int] = Structure(max_nesting=max_nesting, position=lambda i: f"#{i}")
    problems = []
    for index, event in enumerate(events.split()):
        if event == "|":
            problems += structure.barrier(BEFORE_SEPARATOR)
        elif event == "§":
            problems += structure.barrier(BEFORE_SECTION)
        else:
            problems += structure.tag(event, index)
    problems += structure.end()
    return [(p.code, p.where, p.message) for p in problems]


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ("if endif", []),
        ("if elif elif else endif", []),
        ("for else endfor while else endwhile", []),
        ("if for while endwhile endfor endif", []),
        ("if", [("E204", 0, "`{% if %}` opened here is never closed before the end of the file")]),
        (
            "if for",
            [
                ("E204", 1, "`{% for %}` opened here is never closed before the end of the file"),
                ("E204", 0, "`{% if %}` opened here is never closed before the end of the file"),
            ],
        ),
        ("endif", [("E205", 0, "`{% endif %}` closes nothing")]),
        ("if endfor", [("E206", 0, "`{% if %}` opened here is closed by `{% endfor %}` at #1")]),
        ("elif", [("E209", 0, "`{% elif %}` outside `{% if %}`")]),
        ("for elif endfor", [("E209", 1, "`{% elif %}` outside `{% if %}`")]),
        ("else", [("E209", 0, "`{% else %}` outside `{% if %}` / `{% for %}` / `{% while %}`")]),
        # the defect: a second else, an elif after else, a loop's second else
        ("if else else endif", [("E209", 2, "a second `{% else %}` in `{% if %}` opened at #0")]),
        ("if else elif endif", [("E209", 2, "`{% elif %}` after the `{% else %}` of `{% if %}` opened at #0")]),
        ("for else else endfor", [("E209", 2, "a second `{% else %}` in `{% for %}` opened at #0")]),
        ("while else else endwhile", [("E209", 2, "a second `{% else %}` in `{% while %}` opened at #0")]),
        ("if if else endif else endif", []),  # each `if` has its own else
        ("if else if else endif else endif", [("E209", 5, "a second `{% else %}` in `{% if %}` opened at #0")]),
        (
            "if | endif",
            [
                ("E204", 0, "`{% if %}` opened here is never closed before the role separator"),
                ("E205", 2, "`{% endif %}` closes nothing"),
            ],
        ),
        (
            "for § endfor",
            [
                ("E204", 0, "`{% for %}` opened here is never closed before the next section"),
                ("E205", 2, "`{% endfor %}` closes nothing"),
            ],
        ),
        ("if else | if else endif", [("E204", 0, "`{% if %}` opened here is never closed before the role separator")]),
        ("include", [("E208", 0, "unknown statement tag `{% include %}`")]),
    ],
)
def test_structure(events, expected):
    assert _structure(events) == expected


def test_structure_hints_and_related():
    structure: Structure[str] = Structure()
    assert structure.tag("if", "open") == []
    assert structure.tag("else", "e1") == []
    [problem] = structure.tag("else", "e2")
    assert (problem.where, problem.related, problem.hint) == ("e2", "open", "a block takes at most one `{% else %}`")
    [mismatch] = structure.tag("endfor", "close")
    assert mismatch.code == "E206" and (mismatch.where, mismatch.related) == ("open", "close")
    assert mismatch.message.startswith("`{% if %}` opened here is closed by `{% endfor %}`")
    assert structure.depth == 0 and structure.end() == []
    empty = Structure().tag("", 0, "(x)")
    assert empty[0].message == "unknown statement tag `{% (x) %}`"
    assert Structure().tag("", 0)[0].message == "empty `{% %}` tag"


def test_structure_depth_limit_is_90_and_then_stops():
    assert _structure(" ".join(["if"] * 90 + ["endif"] * 90)) == []
    problems = _structure(" ".join(["if"] * 91 + ["endif"] * 91))
    assert problems == [("E210", 90, "`{% %}` blocks nested more than 90 deep")]
    structure: Structure[int] = Structure(max_nesting=2)
    structure.tag("if", 0), structure.tag("if", 1)
    assert structure.tag("for", 2)[0].code == "E210" and structure.stopped
    assert structure.tag("endfor", 3) == [] and structure.end() == []


def test_structure_is_iterative():
    depth = 200_000
    structure: Structure[int] = Structure(max_nesting=depth)
    for i in range(depth):
        assert structure.tag("for", i) == []
    assert len(structure.end()) == depth


# ---------------------------------------------------------------------------------------------
# unwrap


@pytest.mark.parametrize(
    "code",
    [
        " x ",
        "",
        "   ",
        "\n  a = 1\n  b = 2\n",
        "\n    a\n      b\n    c\n",
        "\t\ta\n\t\tb",
        "  a\n\n  b",
        "  a\n   \n  b",
        " \t a\n \t b",
        "a\n  b",
        "\n\n  x\n\n",
        " é = 1\n ü = 2 ",
    ],
)
def test_unwrap_is_dedent_strip_with_positions(code):
    from promptc.analysis import inference

    base = 100
    text, positions = unwrap(code, base)
    assert text == textwrap.dedent(code).strip()
    assert len(positions) == len(text) + 1
    for i, char in enumerate(text):
        assert code[positions[i] - base] == char
    assert positions == sorted(positions)
    assert (text, positions) == getattr(inference, "_unwrap", unwrap)(code, base)


@settings(max_examples=examples(200), deadline=None)
@given(st.text(alphabet=" \t\nab:", max_size=30))
def test_unwrap_on_any_code(code):
    text, positions = unwrap(code, 7)
    assert text == textwrap.dedent(code).strip() and len(positions) == len(text) + 1
    assert all(code[positions[i] - 7] == c for i, c in enumerate(text))


def test_offset_at():
    code = "\n    a = 1\n    bé = (\n"
    text, positions = unwrap(code, 10)
    assert text == "a = 1\nbé = ("
    assert offset_at(text, positions, 1, 0) == 10 + code.index("a")
    assert offset_at(text, positions, 2, 3) == 10 + code.index("=", code.index("b"))
    assert offset_at(text, positions, 2, 4, byte_col=True) == 10 + code.index("=", code.index("b"))
    assert offset_at(text, positions, 9, 0) == positions[-1]
    assert offset_at(text, positions, None, None) == positions[0]
    assert offset_at(text, positions, 1, 99) == 10 + code.index("1") + 1


# ---------------------------------------------------------------------------------------------
# parse_header / parse_code


def test_parse_header_nodes():
    node = parse_header("if", "if a and b")
    assert isinstance(node, ast.If) and node.lineno == 1 and isinstance(node.body[0], ast.Pass)
    node = parse_header("elif", "elif c")
    assert isinstance(node, ast.If) and node.lineno == 1 and ast.unparse(node.test) == "c"
    assert isinstance(parse_header("else", "else"), ast.If)
    node = parse_header("for", "for i, x in enumerate(y)")
    assert isinstance(node, ast.For) and ast.unparse(node.target) == "(i, x)"
    assert isinstance(parse_header("while", "while n"), ast.While)
    assert parse_header("endif", "endif") is None


@pytest.mark.parametrize(
    ("keyword", "text", "message", "where"),
    [
        ("if", "if a b", "Python syntax error: invalid syntax", (1, 5)),
        ("elif", "elif é é", "Python syntax error: invalid syntax", (1, 7)),
        ("else", "else x", "Python syntax error: expected ':'", (1, 5)),
        ("for", "for x y", "Python syntax error: invalid syntax", (1, 6)),
        ("if", "if x: y", "Python syntax error: invalid syntax", None),
        ("while", "while", "Python syntax error: invalid syntax", (1, 5)),
    ],
)
def test_parse_header_errors_are_positioned_in_the_text(keyword, text, message, where):
    with pytest.raises(TemplateSyntaxError) as info:
        parse_header(keyword, text)
    error = info.value
    assert error.code == "E601" and error.message == message
    assert 1 <= (error.lineno or 1) <= text.count("\n") + 1 and 0 <= (error.col or 0) <= len(text)
    if where is not None:
        assert (error.lineno, error.col) == where


def test_parse_header_refuses_an_unknown_keyword():
    with pytest.raises(TemplateSyntaxError) as info:
        parse_header("include", "include x")
    assert info.value.code == "E208"


def test_parse_code_rules():
    assert parse_code("expr", "x").problem is None
    assert parse_code("exec", "").body == [] and parse_code("exec", "").problem is None
    empty = parse_code("expr", "").problem
    assert empty.code == "E602" and empty.message == "empty `{{ }}` block" and empty.lineno is None
    no_expr = parse_code("expr", "a = 1\nb = 2").problem
    assert no_expr.message == "`{{ }}` block does not end in an expression" and (no_expr.lineno, no_expr.col) == (2, 0)
    one_line = parse_code("expr", "é = 1; é")
    assert one_line.problem.message == "a one-line `{{ }}` block must be a single expression"
    assert (one_line.problem.lineno, one_line.problem.col, one_line.problem.end_col) == (1, 7, 8)  # characters
    assert len(one_line.body) == 2


def test_parse_code_errors():
    with pytest.raises(TemplateSyntaxError) as info:
        parse_code("exec", "a = 1\néé = 1 1")
    assert (info.value.lineno, info.value.col, info.value.code) == (2, 7, "E601")
    with pytest.raises(TemplateSyntaxError) as info:
        parse_code("expr", "(" * 300 + ")" * 300)
    assert info.value.code == "E210" and info.value.too_deep
    assert "nested too deeply" in info.value.message
    with pytest.raises(TemplateSyntaxError) as info:
        parse_code("exec", "a\x00")
    assert info.value.code == "E601"


# ---------------------------------------------------------------------------------------------
# generate + compile: what the runtime runs

BASE = {
    "x": 3,
    "k": 2,
    "n": 3,
    "c": True,
    "items": [1, 2],
    "d": 2,
    "p": [1, 2, 3],
    "counter": 0,
    "pairs": [(1, "a"), (2, "b")],
    "who": "W",
}

EQUIVALENT = [
    ("expr", "a {{ x }} b", [{}]),
    ("placeholders", "Hi ${who}, ${pairs} \\${not} \\{{ not code }}", [{}]),
    ("trims", "a  {{- x -}}  b\n{%- if x %}\nbig\n{%- endif %}\nz{{ x -}} {{- x }}", [{}]),
    (
        "elif chain",
        "{% if x > 5 %}A{% elif x > 2 %}B{% elif x > 0 %}C{% else %}D{% endif %}",
        [{"x": v} for v in (7, 3, 1, -1)],
    ),
    ("for else", "{% for i in items %}[{{ i }}]{% else %}empty{% endfor %}", [{"items": []}, {"items": [1, 2]}]),
    ("nested loops", "{% for i in range(n) %}{% for j in range(i) %}{{ i }}{{ j }},{% endfor %};{% endfor %}", [{}]),
    (
        "while break",
        "{# i = 0 #}{% while True %}{# i += 1 #}{% if i > n %}{# break #}{% endif %}{{ i }}{% endwhile %}!",
        [{}],
    ),
    ("while else", "{# i = 0 #}{% while i < n %}{# i += 1 #}{% else %}done{{ i }}{% endwhile %}", [{}]),
    ("continue", "{% for i in range(6) %}{% if i % 2 %}{# continue #}{% endif %}{{ i }}{% endfor %}", [{}]),
    ("some paths", "{% if c %}{# x = 'set' #}{% endif %}{{ x }}", [{"c": True}, {"c": False}]),
    ("loop var fallback", "{% for x in items %}{% endfor %}{{ x }}", [{"items": []}, {"items": [7, 8]}]),
    (
        "comprehension",
        "{{ [i * k for i in range(3)] }}{{ {i: i for i in 'ab'} }}{{ sorted({i % 2 for i in range(5)}) }}",
        [{}],
    ),
    ("comprehension scope", "{{ [x for x in range(2)] }}{{ x }}", [{}]),
    ("walrus in comprehension", "{{ [y := i * 2 for i in range(3)] }}{{ y }}", [{}]),
    ("walrus in header", "{% if (m := x * 2) > 4 %}{{ m }}{% endif %}{{ m if x > 2 else 0 }}", [{}]),
    ("lambda", "{# f = lambda v: v + k #}{{ f(1) }}{{ (lambda: k)() }}", [{}]),
    ("def reads later name", "{#\ndef f():\n    return later * 2\n#}{# later = 5 #}{{ f() }}", [{}]),
    (
        "def global",
        "{#\ndef bump():\n    global counter\n    counter += 1\n#}{# bump() #}{# bump() #}{{ counter }}",
        [{}],
    ),
    ("class", "{#\nclass C:\n    v = k\n    def m(self):\n        return self.v + k\n#}{{ C().m() }}", [{}]),
    (
        "try",
        "{#\ntry:\n    r = 1 / d\nexcept ZeroDivisionError as e:\n    r = type(e).__name__\nfinally:\n    done = True\n#}{{ r }} {{ done }}",
        [{"d": 0}, {"d": 2}],
    ),
    (
        "except unbinds",
        "{#\ntry:\n    1 / 0\nexcept ZeroDivisionError as e:\n    pass\n#}{{ 'e' in globals() }}",
        [{}, {"e": 1}],
    ),
    ("with", "{#\nimport contextlib\nwith contextlib.nullcontext(k) as v:\n    w = v * 2\n#}{{ v }}{{ w }}", [{}]),
    (
        "match",
        "{#\nmatch p:\n    case [a, *rest]:\n        out = (a, rest)\n    case {'k': kv, **others}:\n        out = (kv, others)\n    case str() as s:\n        out = s\n    case _:\n        out = None\n#}{{ out }}",
        [{"p": [1, 2, 3]}, {"p": {"k": 1, "z": 2}}, {"p": "str"}, {"p": 5}],
    ),
    ("global del", "{# global g\ng = 1 #}{{ g }}{# del g #}{{ 'g' in globals() }}", [{}]),
    ("del input", "{# del x #}{{ 'x' in globals() }}", [{}]),
    ("multi statement expr", "{{\n  z = [i for i in range(x)]\n  len(z)\n}}", [{}]),
    ("indented exec", "{#\n    a = 1\n    if a:\n        b = 2\n#}{{ a + b }}", [{}]),
    ("imports", "{# import math as m\nfrom os import path #}{{ m.floor(2.5) }}{{ path.basename('/a/b') }}", [{}]),
    ("augassign input", "{# n += 1 #}{{ n }}", [{}]),
    ("placeholder reads inputs", "{# who = 'local' #}${who} {{ who }}", [{}]),
    ("annotation", "{# v: int = 3\nw: Undefined = 4\nu: int #}{{ v + w }}", [{}]),
    ("star unpacking", "{# a, *b = items #}{{ a }}{{ b }}", [{"items": [1, 2, 3]}]),
    (
        "nonlocal in nested def",
        "{#\ndef outer():\n    t = 0\n    def inner():\n        nonlocal t\n        t += 1\n    inner(); inner()\n    return t\n#}{{ outer() }}",
        [{}],
    ),
    ("generator expression", "{{ sum(i for i in range(k)) }}", [{}]),
    ("decorator", "{#\ndef deco(f):\n    return lambda: f() + 1\n@deco\ndef g():\n    return k\n#}{{ g() }}", [{}]),
    (
        "defs on branches",
        "{% if c %}{# def f(): return 1 #}{% else %}{# def f(): return 2 #}{% endif %}{{ f() }}",
        [{"c": True}, {"c": False}],
    ),
    ("tuple targets", "{% for i, (a, b) in enumerate(pairs) %}{{ i }}{{ a }}{{ b }}{% endfor %}{{ i }}", [{}]),
    ("generator function", "{#\ndef gen():\n    yield k\n    yield from range(2)\n#}{{ list(gen()) }}", [{}]),
    (
        "empty suites",
        "{% if c %}{% elif x %}{% else %}{% endif %}{% for i in items %}{% endfor %}{% while False %}{% endwhile %}.",
        [{}],
    ),
    ("name error", "{{ undefined_thing }}", [{}]),
    ("zero division", "a{{ 1 / (d - d) }}", [{}]),
    ("deep nest", "{% if True %}" * 90 + "X" + "{% endif %}" * 90, [{}]),
]


@pytest.mark.parametrize(("name", "template", "variants"), EQUIVALENT, ids=[e[0] for e in EQUIVALENT])
def test_generated_program_renders_like_the_old_runtime(name, template, variants):
    for variant in variants:
        inputs = {**BASE, **variant}
        assert outcome(new_render, template, inputs) == outcome(old_render, template, inputs), variant


#: Templates in the subset where promplate renders the same: no `${}`, no escapes, no name that
#: is assigned on some paths only, no globals()/del of inputs (the documented differences), and
#: none of promplate's own limits: it cannot compile an empty suite (`{% if x %}{% endif %}`), and
#: a class body cannot read the context (its globals are a ChainMap, which LOAD_NAME ignores).
PROMPLATE = [
    "expr",
    "trims",
    "elif chain",
    "for else",
    "nested loops",
    "while break",
    "while else",
    "continue",
    "comprehension",
    "comprehension scope",
    "walrus in comprehension",
    "lambda",
    "def reads later name",
    "try",
    "with",
    "match",
    "multi statement expr",
    "indented exec",
    "imports",
    "annotation",
    "star unpacking",
    "nonlocal in nested def",
    "generator expression",
    "decorator",
    "defs on branches",
    "tuple targets",
    "generator function",
]


@pytest.mark.parametrize("name", PROMPLATE)
def test_generated_program_renders_like_promplate(name):
    promplate = pytest.importorskip("promplate")
    template, variants = next((t, v) for n, t, v in EQUIVALENT if n == name)
    for variant in variants:
        inputs = {**BASE, **variant}
        assert new_render(template, inputs) == promplate.Template(template).render(dict(inputs))


def test_return_ends_the_section():
    assert new_render("A{# return #}B", {}) == "A"
    loop = "{% for i in range(5) %}{{ i }}{% if i == 2 %}{# return #}{% endif %}{% endfor %}after"
    assert new_render(loop, {}) == "012"
    assert new_render("a{# if c:\n    return #}b", {"c": True}) == "a"
    assert new_render("a{# if c:\n    return #}b", {"c": False}) == "ab"
    pytest.importorskip("promplate")
    from promplate import Template

    assert Template("A{# return #}B").render({}) is None  # promplate's render returns the function's None
    with pytest.raises(_OldProblem, match="'return' outside function"):
        old_render("A{# return #}B", {})


def test_run_sets_the_globals_after_the_inputs():
    inputs = {"__append__": "evil", "__parts__": None, "__builtins__": None, LOOKUP: None, "x": 1}
    assert run(compile_section("{{ x }}${x}").code, inputs, lambda path: f"<{path}>") == "1<x>"
    parts = execute(compile_section("{{ x }}{{ len([1]) }}").code, {"x": [1]}, str)
    assert parts == [[1], 1]
    assert (APPEND, PARTS) == ("__append__", "__parts__")


def test_program_names_and_listing():
    program = generate(
        scan("{# a = 1\nimport os.path\nfor b in []: pass #}{{ [c := 1 for d in []] }}{% for e in f %}{% endfor %}")
    )
    assert program.names == ("a", "b", "c", "e", "os")
    assert program.listing.splitlines()[0] == "    a = 1"
    first = program.module.body[0]
    assert isinstance(first, ast.FunctionDef) and isinstance(first.body[0], ast.Global)


# ---------------------------------------------------------------------------------------------
# Compile-time rejections, located at the token and the section line


def _failure(text: str) -> TemplateSyntaxError:
    program = None
    try:
        program = generate(scan(text))
        compile_program(program)
    except TemplateSyntaxError as error:
        # the cached runtime path raises the same
        with pytest.raises(TemplateSyntaxError) as again:
            compile_section(text)
        assert (again.value.message, again.value.token, again.value.offset) == (
            error.message,
            error.token,
            error.offset,
        )
        return error
    raise AssertionError(f"compiled: {text!r} {program}")


@pytest.mark.parametrize(
    ("text", "message", "token", "line", "at"),
    [
        (
            "one\ntwo\n{#\n  ok = 1\n  def f(a, a): pass\n#}",
            "duplicate argument 'a' in function definition",
            1,
            5,
            "a): pass",
        ),
        (
            "x\n{{ [y for x in (y := [1])] }}",
            "assignment expression cannot be used in a comprehension iterable",
            1,
            2,
            "y := [1]",
        ),
        ("x ${p}\n{{\n  await q\n}}", "'await' outside async function", 3, 3, "await q"),
        ("{{ 1 }}\n{# nonlocal x #}", "no binding for nonlocal 'x' found", 2, 2, "nonlocal x"),
        ("{# x = 1\ndef f():\n    nonlocal q\n#}", "no binding for nonlocal 'q' found", 0, 3, "nonlocal q"),
        ("a\n{% if c %}{# break #}{% endif %}", "'break' outside loop", 2, 2, "break"),
        ("a\n{% for i in c %}{{ i }}{% endfor %}{# continue #}", "'continue' not properly in loop", 4, 2, "continue"),
        ("{# from os import * #}", "import * only allowed at module level", 0, 1, "* #}"),
        ("a\n\n{# b = 1\nreturn b #}", "a template's `return` takes no value", 1, 4, "return b"),
        ("é{{ (yield) }}", "'yield' outside function", 1, 1, "yield"),
        ("{#\ndef f(v=(yield)): pass\n#}", "'yield' outside function", 0, 2, "yield"),
        ("{% for v in (yield from w) %}{% endfor %}", "'yield' outside function", 0, 1, "yield from"),
    ],
)
def test_compile_time_rejections_are_located(text, message, token, line, at):
    error = _failure(text)
    assert message in error.message and error.code == "E601"
    assert (error.token, error.line) == (token, line)
    assert text[error.offset :].startswith(at), text[error.offset :]


def test_structure_and_syntax_errors_are_located():
    error = _failure("a\n{% if c %}b{% else %}c{% else %}d{% endif %}")
    assert error.code == "E209" and error.token == 5 and error.line == 2 and "second `{% else %}`" in error.message
    error = _failure("{% if c %}x\n{% elif d %}y{% else %}z{% elif e %}{% endif %}")
    assert error.code == "E209" and error.token == 6 and error.message.endswith("opened at line 1")
    error = _failure("a\n{% if c %}")
    assert error.code == "E204" and error.token == 1 and error.message.endswith("before the end of the section")
    assert _failure("{% endfor %}").code == "E205"
    assert _failure("{% for a in b %}{% endif %}").code == "E206"
    assert _failure("{% include x %}").code == "E208"
    text = "a\n{{\n  b = 1\n  c = (\n}}"
    error = _failure(text)
    assert error.code == "E601" and error.token == 1 and error.line == 4 and error.offset == text.index("(")
    error = _failure("{% if a b %}")
    assert error.code == "E601" and "{% if a b %}"[error.offset :].startswith("b")
    error = _failure("{% else x %}")
    assert error.code == "E209"
    error = _failure("{% if x %}{% else x %}{% endif %}")
    assert error.code == "E601" and error.token == 1
    error = _failure("x{{ a = 1 }}")
    assert error.code == "E602" and error.message == "`{{ }}` block does not end in an expression" and error.offset == 4
    error = _failure("x{{  }}")
    assert error.code == "E602" and error.message == "empty `{{ }}` block" and error.offset == 1


def test_nesting_limits():
    ok = "{% if True %}" * 90 + "X" + "{% endif %}" * 90
    assert new_render(ok, {}) == "X" == old_render(ok, {})
    error = _failure("{% if True %}" * 91 + "X" + "{% endif %}" * 91)
    assert error.code == "E210" and error.token == 90
    loops = "".join(f"{{% for i{k} in [1] %}}" for k in range(21)) + "X" + "{% endfor %}" * 21
    error = _failure(loops)
    assert error.code == "E210" and error.too_deep and error.token == 20
    twenty = "".join(f"{{% for i{k} in [1] %}}" for k in range(20)) + "X" + "{% endfor %}" * 20
    assert new_render(twenty, {}) == "X" == old_render(twenty, {})


def test_one_line_expr_with_statements_still_runs_like_the_old_runtime():
    assert parse_code("expr", "a = 1; a").problem is not None  # E602 for the build
    assert new_render("{{ a = 2; a * x }}", BASE) == old_render("{{ a = 2; a * x }}", BASE) == "6"


# ---------------------------------------------------------------------------------------------
# Lines: runtime errors, tracebacks, locate


def test_runtime_errors_map_to_section_lines():
    text = "a\nb\n{#\n  x = 1\n  y = 1 / 0\n#}"
    compiled = compile_section(text)
    with pytest.raises(ZeroDivisionError) as info:
        run(compiled.code, {}, str)
    assert compiled.error_line(info.value) == 5
    frames = [tb for tb in _tracebacks(info.value) if tb.tb_frame.f_code.co_filename == compiled.filename]
    assert linecache.getline(compiled.filename, frames[-1].tb_lineno).strip() == "y = 1 / 0"

    text = "line 1\n{% for i in items %}\n{{ i.missing }}\n{% endfor %}"
    compiled = compile_section(text)
    with pytest.raises(AttributeError) as info:
        run(compiled.code, {"items": [1]}, str)
    assert compiled.error_line(info.value) == 3

    text = "{#\ndef f():\n    return 1 / 0\n#}\n\n{{ f() }}"
    compiled = compile_section(text)
    with pytest.raises(ZeroDivisionError) as info:
        run(compiled.code, {}, str)
    assert compiled.error_line(info.value) == 3  # the innermost template frame: inside f


def test_error_lines_count_the_blank_lines_unwrap_strips():
    text = "{#\n\n  z = 1 / 0 #}"
    compiled = compile_section(text)
    with pytest.raises(ZeroDivisionError) as info:
        run(compiled.code, {}, str)
    assert compiled.error_line(info.value) == 3  # the old runtime said line 1


def test_annotations_in_branches_become_assignments():
    text = "{% if c %}{# y: int = 2 #}{% else %}{# y: Undefined #}{% endif %}{{ y }}"
    assert new_render(text, {"c": True, "y": 1}) == "2"
    assert new_render(text, {"c": False, "y": 1}) == "1"
    assert "y" in generate(scan(text)).names


def _tracebacks(exc: BaseException):
    tb = exc.__traceback__
    while tb is not None:
        yield tb
        tb = tb.tb_next


def test_locate_and_section_line():
    text = "ab\n${c}\n{{\n   d\n   + é\n}}{% if x %}"
    program = generate(scan(text) + (Token("stmt", " endif ", len(text), 6, "{% endif %}", read_block("{% endif %}")),))
    origins = program.origins
    assert [o.first_line for o in origins] == [1, 2, 3, 4, 6, 7]
    assert [o.line_count for o in origins] == [1, 1, 1, 2, 1, 1]
    assert program.locate(1) == (0, 0)
    assert program.locate(2, 5) == (1, 3)
    assert program.locate(4, 0) == (3, text.index("d"))
    assert program.locate(5, 4, byte_col=True) == (3, text.index("é") + 1)  # `+ é` then byte 4 is past é
    assert program.locate(5, 2) == (3, text.index("é"))
    assert program.locate(6, 3) == (4, text.index("x"))
    assert [program.section_line(n) for n in range(1, 8)] == [1, 2, 2, 4, 5, 6, 6]
    assert program.locate(99) == (5, len(text) + 3)  # clamps to the last token
    assert generate(()).locate(1) == (-1, 0)


def test_compile_section_is_cached_and_registers_the_listing():
    text = "{{ cached_marker }}\n"
    compiled = compile_section(text)
    hits = compile_section.cache_info().hits
    assert compile_section(text) is compiled and compile_section.cache_info().hits == hits + 1
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    assert compiled.filename == f"<promptc-section-{digest}>" == compiled.code.co_filename
    assert linecache.getline(compiled.filename, 1).strip() == "cached_marker"


def test_the_build_parses_each_block_once(monkeypatch):
    """The inference parses every block of a section, and the section's compile check (the program
    the runtime will run) takes those trees over instead of parsing the blocks again."""
    from promptc.analysis import inference
    from promptc.compile import compile_text
    from promptc.facts.config import Config
    from promptc.runtime import template

    inference._TREES.clear()
    parsed: list[str] = []
    real = template._parse
    monkeypatch.setattr(
        template, "_parse", lambda source, text, lines: parsed.append(text) or real(source, text, lines)
    )
    # a lambda: a section `surely_compiles` does not vouch for, so the check compiles it
    body = "".join(
        f"{{% if flag{i} %}}{{{{ item{i}.name }}}}{{# n{i} = lambda: {i} #}}{{% endif %}}\n" for i in range(5)
    )
    result = compile_text(body, config=Config(tokenizer="approx-bytes/4"))
    assert result.ok, result.diagnostics
    assert sorted(parsed) == sorted(
        [
            *(f"if flag{i}" for i in range(5)),
            *(f"item{i}.name" for i in range(5)),
            *(f"n{i} = lambda: {i}" for i in range(5)),
        ]
    )
    # the trees the check took over are not kept for other blocks (it changed them)
    assert not inference._TREES
    # what the check remembers is that the text compiles, not its program (nothing is kept for a render)
    (section,) = [s for m in result.artifact.messages for b in m.blocks for s in b.sections]
    assert section.text in template._CHECKED


@pytest.mark.slow
def test_generate_is_linear_and_iterative():
    text = "".join(f"{{% for i{k % 7} in [1] %}}{{{{ i{k % 7} }}}}${{v}}{{% endfor %}}\n" for k in range(5000))
    compiled = compile_section(text)
    assert run(compiled.code, {"v": "."}, lambda path: ".") == "1.\n" * 5000


# ---------------------------------------------------------------------------------------------
# surely_compiles: when the build may skip its compile check


def _blocks_of(text: str) -> list[tuple[str, str, Any, list[ast.AST]]] | None:
    """(kind, keyword, parsed, nodes) of each block of a section, as the inference reads them;
    None when a block does not parse (the build reports that, and never asks)."""
    out: list[tuple[str, str, Any, list[ast.AST]]] = []
    for tok in scan(text):
        if tok.block is None:
            continue
        code, _ = unwrap(tok.block.code, 0)
        try:
            if tok.kind == "stmt":
                header = parse_header(tok.block.keyword, code)
                out.append(("stmt", tok.block.keyword, header, walk([header] if header is not None else [])))
            else:
                body = parse_code(tok.kind, code).body
                out.append((tok.kind, "", body, walk(body)))
        except TemplateSyntaxError:
            return None
    return out


def _sure(blocks: list[tuple[str, str, Any, list[ast.AST]]]) -> bool:
    """`surely_compiles` as the inference asks it."""
    return surely_compiles(
        (kind, keyword, certain_block(kind, keyword, parsed, nodes)) for kind, keyword, parsed, nodes in blocks
    )


@given(
    st.lists(
        st.sampled_from(
            [
                "{{ a.b(c, *d, k=e[1:2]) }}",
                "{# def f(x, *y, z=1, **w): return [q for q in x] #}",
                "{# try:\n  import os as o\nexcept E as e:\n  pass #}",
                "{# match a:\n  case [1, *r] | {'k': v, **m}: pass #}",
                "{{ f'{x!r:>{w} }' }}",
                "{% for i, j in k %}",
            ]
        ),
        min_size=1,
        max_size=4,
    )
)
def test_walk_is_ast_walk_without_contexts_and_operators(codes_):
    """`walk` yields the nodes `ast.walk` does, in its order, less the shared contexts and operators."""
    leaves = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
    for code in codes_:
        kind, keyword, parsed, nodes = _blocks_of(code)[0]
        roots = [parsed] if kind == "stmt" else parsed
        expected = [n for root in roots for n in ast.walk(root) if not isinstance(n, leaves)]
        assert nodes == expected


def _compiles(text: str) -> bool:
    try:
        compile_program(generate(scan(text)))
    except TemplateSyntaxError:
        return False
    return True


_NAMES = st.sampled_from(["a", "b", "x", "__debug__", "f"])


def _expressions(risky: bool) -> st.SearchStrategy[str]:
    """Expressions `surely_compiles` vouches for, and (`risky`) with what it must not: scopes,
    `await`/`yield`, starred values, deep nesting; `__debug__` and repeated keywords come from
    the names."""

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        plain = [
            st.tuples(inner, _NAMES).map(lambda p: f"{p[0]}.{p[1]}"),
            st.tuples(inner, inner).map(lambda p: f"({p[0]} + {p[1]})"),
            st.tuples(inner, inner).map(lambda p: f"{p[0]}[{p[1]}]"),
            st.tuples(inner, inner, inner).map(lambda p: f"({p[0]} if {p[1]} else {p[2]})"),
            st.tuples(inner, inner).map(lambda p: f"[{p[0]}, {p[1]}]"),
            st.tuples(inner, inner).map(lambda p: f"{{ {p[0]}: {p[1]} }}"),
            st.tuples(inner, _NAMES, inner).map(lambda p: f"{p[0]}({p[1]}={p[2]})"),
            st.tuples(inner, _NAMES, _NAMES).map(lambda p: f"f({p[0]}, {p[1]}=1, {p[2]}=2)"),
            inner.map(lambda e: f"not {e}"),
        ]
        odd = [
            inner.map(lambda e: f"[*{e}]"),
            inner.map(lambda e: f"(lambda {e}, {e}: 1)" if e.isidentifier() else f"(lambda: {e})"),
            inner.map(lambda e: f"[y for y in {e}]"),
            inner.map(lambda e: f"[y for x in (y := {e})]"),
            inner.map(lambda e: f"(await {e})"),
            inner.map(lambda e: f"(yield {e})"),
            inner.map(lambda e: "(" * 40 + e + ")" * 40),
        ]
        return st.one_of(*plain, *(odd if risky else ()))

    leaves = st.one_of(_NAMES, st.sampled_from(["(1)", "'s'", "None"]), _NAMES.map(lambda n: f'f"{{{n}!r:>{{b}} }}"'))
    return st.recursive(leaves, extend, max_leaves=6)


def _sections() -> st.SearchStrategy[str]:
    """Section texts: mostly well-nested `{% %}` constructs around blocks `surely_compiles` may
    vouch for, with a risky fragment or a stray tag now and then."""
    plain, risky = _expressions(False), _expressions(True)
    expression = st.one_of(plain, plain, plain, risky)
    target = st.sampled_from(["i", "i, j", "x.a", "x[0]", "i", "__debug__", "*i"])
    leaf = st.one_of(
        st.sampled_from(["text ", "${a} ", "\n"]),
        expression.map(lambda e: f"{{{{ {e} }}}}"),
        st.tuples(_NAMES, st.sampled_from(["=", "+="]), expression).map(lambda p: f"{{# {p[0]} {p[1]} {p[2]} #}}"),
        st.sampled_from(
            [
                "{# break #}",
                "{# continue #}",
                "{# return #}",
                "{# return a #}",
                "{# pass #}",
                "{# del a #}",
                "{# global a #}",
                "{# nonlocal a #}",
                "{# import os #}",
                "{# def f(p, p): pass #}",
                "{# x: int = 1 #}",
                "{# *a, b = c #}",
                "{{ x; y }}",
                "{{ }}",
                "{# x = 1\n  y = 2 #}",
                "{% else %}",
                "{% endif %}",
                "{% for i in a %}" * 21,
            ]
        ),
    )

    def nest(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        body = st.lists(inner, max_size=3).map("".join)
        branch = st.tuples(expression, body).map(lambda p: f"{{% elif {p[0]} %}}{p[1]}")
        return st.one_of(
            st.lists(inner, min_size=2, max_size=4).map("".join),
            st.tuples(expression, body, st.lists(branch, max_size=2), st.none() | body).map(
                lambda p: (
                    f"{{% if {p[0]} %}}{p[1]}{''.join(p[2])}"
                    + ("" if p[3] is None else f"{{% else %}}{p[3]}")
                    + "{% endif %}"
                )
            ),
            st.tuples(target, expression, body, st.none() | body).map(
                lambda p: (
                    f"{{% for {p[0]} in {p[1]} %}}{p[2]}"
                    + ("" if p[3] is None else f"{{% else %}}{p[3]}")
                    + "{% endfor %}"
                )
            ),
            st.tuples(expression, body).map(lambda p: f"{{% while {p[0]} %}}{p[1]}{{% endwhile %}}"),
        )

    return st.recursive(leaf, nest, max_leaves=24)


@settings(max_examples=examples(2000), deadline=None)
@given(_sections())
def test_surely_compiles_is_never_wrong(text):
    """Where `surely_compiles` vouches for a section, CPython's `compile()` of its program succeeds:
    the build's compile check may be skipped there without accepting what cannot render."""
    blocks = _blocks_of(text)
    if blocks is not None and _sure(blocks):
        assert _compiles(text), text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hi {{ order.status.upper() }} {% for turn in transcript %}{{ turn.role }}{% endfor %}", True),
        ("{% if a %}A{% elif b.c %}B{% else %}{# x = f(k=1)[0] #}{% endif %}{% while n %}{% endwhile %}", True),
        ("{{ f(a=1, a=2) }}", False),  # keyword argument repeated
        ("{# __debug__ = 1 #}", False),
        ("{{ f(__debug__=1) }}", False),
        ("{# def f(a, a): pass #}", False),
        ("{{ (lambda a, a: 1) }}", False),
        ("{{ [*a] }}{% for *i in a %}{% endfor %}", False),
        ("{{ [y for x in (y := [1])] }}", False),
        ("{# break #}", False),
        ("{% for i in a %}" * 17 + "{% endfor %}" * 17, False),  # deeper than it vouches for
        ("{{ " + "a." * 70 + "b }}", False),
        ("{% if a %}", False),  # a structure problem: the check decides
    ],
)
def test_surely_compiles_vouches_for_plain_templates_only(text, expected):
    blocks = _blocks_of(text)
    assert blocks is not None
    assert _sure(blocks) is expected
    if expected:
        assert _compiles(text)


def test_the_build_skips_the_compile_check_of_a_section_it_is_sure_of(monkeypatch):
    from promptc.compile import compile_text
    from promptc.facts.config import Config
    from promptc.runtime import template

    checked: list[str] = []
    real = template.check_section
    monkeypatch.setattr(template, "check_section", lambda text, parsed=None: checked.append(text) or real(text, parsed))
    config = Config(tokenizer="approx-bytes/4")
    assert compile_text("{% for t in turns %}{{ t.text }}{% endfor %}", config=config).ok
    assert checked == []
    result = compile_text("{{ [t for t in turns] }}", config=config)
    assert result.ok and checked == ["{{ [t for t in turns] }}"]
