"""Jinja2 templates → promptc nodes (`ir`), for `promptc import jinja` and Prompty's jinja2 format.

Jinja's values are Python's (`{{ x }}` prints `str(x)`, `if` tests Python truth, `for` iterates as
Python does), so most of a Jinja template has a promptc spelling with the same meaning:

* `{{ name }}` and `{{ a.b.c }}` (a path into the inputs) → `${a.b.c}`; any other expression →
  `{{ code }}` with the Python equivalent (`a.b` → `a["b"]`, `~` → `str(a) + str(b)`, filters that
  have one Python expression: `upper`, `lower`, `trim`, `capitalize`, `length`, `count`, `join`,
  `replace`, `string`, `list`, `abs`, `sum`, `items`, `format`, `safe`);
* `{% if %}` / `{% elif %}` / `{% else %}`, `{% for %}` (with `loop.index`, `index0`, `first`,
  `last`, `length`, `revindex`, `revindex0`; Jinja's `{% else %}` of a loop, which runs when it did not
  iterate), `{% set x = … %}` outside loops → `{# x = … #}`, `{% raw %}`, `{% include %}` on a line
  of its own → `/// include:`;
* whitespace control (`{%- -%}`, `{{- -}}`, `{#- -#}`) strips the neighbouring literal text here,
  as Jinja would at render time (the default environment: no `trim_blocks`, no `lstrip_blocks`).

Everything else (`default`, `title`, `tojson`, `indent`, `e`, macros, `extends`, blocks, `is
defined` …) is refused with E962: Jinja's meaning there is not Python's, or there is no promptc
construct for it. A name of a path that breaks promptc's attribute rule (`{{ x.__class__ }}`,
`{{ x.constructor }}`, `{{ _secret }}`: `ir.refused_name`) is refused with E973. The parser is iterative with an explicit depth bound, linear in the input.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import keyword
import re
from collections.abc import Callable, Iterator
from dataclasses import field
from typing import Any, NoReturn

from ...facts import codes
from ...facts.codes import Code
from ...facts.language import IDENTIFIER_PATTERN, MAX_PATH_SEGMENTS
from ...facts.records import dataclass
from .ir import For, If, Include, Node, Out, Refusal, Role, Stmt, Text, py_string, refused_name, walk

#: how deeply expressions and blocks may nest (each level of an expression is a dozen Python frames)
MAX_DEPTH = 40
#: a loop over a plain input, or a subscript of one (`items["a"][0]`): what `loop.last` can see the end of
_PURE_SEQUENCE = re.compile(rf"{IDENTIFIER_PATTERN}(\[\"[^\"]*\"\]|\[\d+\])*")

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<name>"""
    + IDENTIFIER_PATTERN
    + r""")
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<op>\*\*|//|==|!=|<=|>=|[-+*/%~|.,:()\[\]{}<>=])
    """,
    re.X | re.S,
)
#: dict methods: Jinja's `d.items` is the method, not the key, so a path through one is refused
_DICT_ATTRS = frozenset(dir(dict))
_BUILTINS = frozenset(dir(builtins))
_LITERALS = {"true": "True", "false": "False", "none": "None", "True": "True", "False": "False", "None": "None"}
_COMPARE = {"==", "!=", "<", ">", "<=", ">="}
_LOOP_ATTRS = ("index", "index0", "first", "last", "length", "revindex", "revindex0")

#: where a filter's template puts the value it filters (`filtered` splits the template there): a
#: character no generated code holds, since string literals escape every unprintable one
_HOLE = "\0"
#: filter → (Python template of the value `v` and the arguments, number of positional arguments allowed)
_FILTERS: dict[str, tuple[Callable[..., str], tuple[int, int]]] = {
    "upper": (lambda v: f"str({v}).upper()", (0, 0)),
    "lower": (lambda v: f"str({v}).lower()", (0, 0)),
    "capitalize": (lambda v: f"str({v}).capitalize()", (0, 0)),
    "trim": (lambda v, chars=None: f"str({v}).strip({chars or ''})", (0, 1)),
    "length": (lambda v: f"len({v})", (0, 0)),
    "count": (lambda v: f"len({v})", (0, 0)),
    "join": (lambda v, sep='""': f"{sep if sep.startswith(chr(34)) else f'str({sep})'}.join(map(str, {v}))", (0, 1)),
    "replace": (lambda v, old, new: f"str({v}).replace({old}, {new})", (2, 2)),
    "string": (lambda v: f"str({v})", (0, 0)),
    "list": (lambda v: f"list({v})", (0, 0)),
    "abs": (lambda v: f"abs({v})", (0, 0)),
    "sum": (lambda v: f"sum({v})", (0, 0)),
    "items": (lambda v: f"{v}.items()", (0, 0)),
    "format": (lambda v, *args: f"(str({v}) % ({', '.join(args)}{',' if len(args) == 1 else ''}))", (0, 99)),
    "safe": (lambda v: v, (0, 0)),
}
_FILTER_HINTS = {
    "default": "promptc has no undefined values: every input is passed; declare it `T | None` and write "
    "`{{ x if x is not None else 'fallback' }}`",
    "d": "promptc has no undefined values: every input is passed; declare it `T | None` and write "
    "`{{ x if x is not None else 'fallback' }}`",
    "tojson": "Jinja's tojson escapes <, >, & and ' for HTML; write the JSON text you want with a {{ }} block",
    "e": "promptc never escapes HTML; escape the value before rendering",
    "escape": "promptc never escapes HTML; escape the value before rendering",
    "title": "Jinja's title() splits words differently from Python's str.title()",
    "int": "Jinja's int falls back to 0 on bad input; Python's int() raises: convert the value before rendering",
    "float": "Jinja's float falls back to 0.0 on bad input; convert the value before rendering",
    "sort": "Jinja sorts case-insensitively by default; sort the value before rendering",
    "round": "Jinja rounds half away from zero, Python's round() to even",
}


@dataclass(slots=True)
class Options:
    """How the template is read: Prompty finds role lines (`system:`) at the top level."""

    roles: bool = False
    #: the folder of the template under the source root, for `{% include %}` paths
    folder: str = ""
    #: include name → target of `/// include:` (the importer has converted it) or None when missing
    resolve_include: Callable[[str], str | None] | None = None


@dataclass(slots=True)
class Template:
    nodes: list[Node]
    #: names read from the inputs (free names of the template), in first-use order
    inputs: list[str] = field(default_factory=list)
    #: the includes it makes, in order
    includes: list[str] = field(default_factory=list)


#: Prompty's role boundary (prompty/parsers/prompty.py `_BOUNDARY_RE`), without attributes
#: (possessive: the blanks before and after an optional `#` are read once, not split every way)
PROMPTY_ROLE = re.compile(r"^\s*+#?\s*+(system|user|assistant|developer)(\[[^\]]*\])?\s*:\s*$", re.I)


# ---------------------------------------------------------------------------------------------
# Lexing: text, {{ }}, {% %}, {# #}


@dataclass(slots=True)
class _Tok:
    kind: str  # "text" | "var" | "stmt"
    value: str  # text, or the tag's inside
    line: int
    column: int
    #: `-` on the left / right of the tag
    lstrip: bool = False
    rstrip: bool = False
    #: for "var"/"stmt": the tokens of the inside (kind, text, offset in value)
    tokens: list[tuple[str, str, int]] = field(default_factory=list)
    #: absolute offset in the template → (line, column), for positions inside the tag
    locate: Any = None


class _Lines:
    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def at(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index] + 1


def lex(text: str, base_line: int = 1) -> list[_Tok]:
    lines = _Lines(text)
    out: list[_Tok] = []
    pos = 0
    n = len(text)

    def where(offset: int) -> tuple[int, int]:
        line, column = lines.at(offset)
        return line + base_line - 1, column

    opener = re.compile(r"\{\{|\{%|\{#")
    while pos < n:
        m = opener.search(text, pos)
        if m is None:
            out.append(_Tok("text", text[pos:], *where(pos)))
            break
        if m.start() > pos:
            out.append(_Tok("text", text[pos : m.start()], *where(pos)))
        start = m.start()
        kind = m.group(0)
        inner = start + 2
        lstrip = inner < n and text[inner] == "-"
        if inner < n and text[inner] in "-+":
            inner += 1
        if kind == "{#":
            end = text.find("#}", inner)
            if end == -1:
                raise Refusal(codes.IMPORT_TEMPLATE_SYNTAX, "unclosed comment `{#`", *where(start))
            rstrip = text[end - 1] == "-" and end - 1 >= inner
            out.append(_Tok("comment", "", *where(start), lstrip, rstrip))
            pos = end + 2
            continue
        closer = "}}" if kind == "{{" else "%}"
        tokens: list[tuple[str, str, int]] = []
        depth = 0
        p = inner
        end = -1
        while p < n:
            if depth == 0 and (text.startswith(closer, p) or text.startswith("-" + closer, p)):
                end = p
                break
            tm = _TOKEN.match(text, p)
            if tm is None:
                raise Refusal(codes.IMPORT_TEMPLATE_SYNTAX, f"unexpected character `{text[p]}`", *where(p))
            group = tm.lastgroup or ""
            value = tm.group(0)
            if group != "ws":
                if value in "([{":
                    depth += 1
                elif value in ")]}":
                    depth -= 1
                    if depth < 0:
                        raise Refusal(codes.IMPORT_TEMPLATE_SYNTAX, f"unbalanced `{value}`", *where(p))
                tokens.append((group, value, p))
            p = tm.end()
        if end == -1:
            raise Refusal(codes.IMPORT_TEMPLATE_SYNTAX, f"unclosed `{kind}`", *where(start))
        rstrip = text.startswith("-", end)
        tok = _Tok("var" if kind == "{{" else "stmt", text[inner:end], *where(start), lstrip, rstrip, tokens, where)
        pos = end + (3 if rstrip else 2)
        if tok.kind == "stmt" and tokens and tokens[0][1] == "raw":
            m_end = re.compile(r"\{%-?\s*endraw\s*-?%\}").search(text, pos)
            if m_end is None:
                raise Refusal(codes.IMPORT_TEMPLATE_SYNTAX, "`{% raw %}` without `{% endraw %}`", *where(start))
            raw = text[pos : m_end.start()]
            end_tag = m_end.group(0)
            if rstrip:
                raw = raw.lstrip()
            if end_tag.startswith("{%-"):
                raw = raw.rstrip()
            out.append(_Tok("comment", "", *where(start), lstrip, False))
            out.append(_Tok("text", raw, *where(pos)))
            out.append(_Tok("comment", "", *where(m_end.start()), False, end_tag.endswith("-%}")))
            pos = m_end.end()
            continue
        out.append(tok)
    # whitespace control: `-` strips the neighbouring text's whitespace, newlines included
    for i, tok in enumerate(out):
        if tok.kind == "text":
            continue
        if tok.lstrip and i > 0 and out[i - 1].kind == "text":
            out[i - 1].value = out[i - 1].value.rstrip()
        if tok.rstrip and i + 1 < len(out) and out[i + 1].kind == "text":
            nxt = out[i + 1]
            stripped = nxt.value.lstrip()
            gone = nxt.value[: len(nxt.value) - len(stripped)]
            nxt.line += gone.count("\n")
            nxt.column = (len(gone) - gone.rfind("\n")) if "\n" in gone else nxt.column + len(gone)
            nxt.value = stripped
    return out


# ---------------------------------------------------------------------------------------------
# Expressions


@dataclass(slots=True)
class _Scope:
    """Names the template binds where an expression stands: loop targets and `set` names, and the
    loops (innermost last) with their counter variable and iterable code."""

    bound: set[str] = field(default_factory=set)
    loops: list[tuple[str, str]] = field(default_factory=list)


class _Expr:
    """A recursive-descent parser over one tag's tokens, with an explicit depth bound."""

    def __init__(
        self, tokens: list[tuple[str, str, int]], tok: _Tok, scope: _Scope, uses: list[tuple[str, bool, int, int]]
    ) -> None:
        self.tokens, self.i, self.tok, self.scope, self.uses = tokens, 0, tok, scope, uses
        self.depth = 0

    # -- helpers
    def peek(self, k: int = 0) -> tuple[str, str, int] | None:
        j = self.i + k
        return self.tokens[j] if j < len(self.tokens) else None

    def at(self, value: str) -> bool:
        t = self.peek()
        return t is not None and t[1] == value and t[0] in ("op", "name")

    def take(self, value: str | None = None) -> tuple[str, str, int]:
        t = self.peek()
        if t is None or (value is not None and t[1] != value):
            self.fail(f"expected `{value}`" if value else "unexpected end of the expression")
        self.i += 1
        return t

    def fail(
        self,
        message: str,
        code: Code = codes.IMPORT_TEMPLATE_SYNTAX,
        hint: str | None = None,
        at: tuple[str, str, int] | None = None,
    ) -> NoReturn:
        t = at or self.peek() or (self.tokens[-1] if self.tokens else None)
        line, column = self.tok.line, self.tok.column
        if t is not None and self.tok.locate is not None:
            line, column = self.tok.locate(t[2])
        raise Refusal(code, message, line, column, hint)

    def check_name(self, t: tuple[str, str, int]) -> None:
        """The attribute rule on a segment of a path (`ir.refused_name`), at its token."""
        refused = refused_name(t[1])
        if refused is not None:
            self.fail(refused[0], codes.IMPORT_UNSAFE_PATH, refused[1], at=t)

    def refuse(self, message: str, hint: str | None = None) -> NoReturn:
        """A construct without a promptc equivalent: reported at the token just read."""
        last = self.tokens[self.i - 1] if 0 < self.i <= len(self.tokens) else None
        self.fail(message, codes.IMPORT_NO_EQUIVALENT, hint, at=last)

    def done(self) -> bool:
        return self.i >= len(self.tokens)

    # -- grammar (Jinja's precedence, lowest first)
    def expression(self) -> str:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.refuse(f"the expression is nested more than {MAX_DEPTH} levels deep")
        try:
            value = self.or_()
            if self.at("if"):
                self.take("if")
                condition = self.or_()
                if not self.at("else"):
                    self.refuse(
                        "`x if c` without `else` is undefined in Jinja when c is false",
                        "write the `else` branch: `x if c else ''`",
                    )
                self.take("else")
                other = self.expression()
                return f"({value} if {condition} else {other})"
            return value
        finally:
            self.depth -= 1

    def or_(self) -> str:
        value = self.and_()
        while self.at("or"):
            self.take()
            value = f"({value} or {self.and_()})"
        return value

    def and_(self) -> str:
        value = self.not_()
        while self.at("and"):
            self.take()
            value = f"({value} and {self.not_()})"
        return value

    def not_(self) -> str:
        count = 0
        while self.at("not"):  # a chain of `not` is counted, not recursed into
            self.take()
            count += 1
        value = self.compare()
        return "(not " * count + value + ")" * count

    def compare(self) -> str:
        value = self.math1()
        parts = [value]
        while True:
            t = self.peek()
            if t is None:
                break
            if t[0] == "op" and t[1] in _COMPARE:
                self.take()
                parts.append(t[1])
            elif t[1] == "in" and t[0] == "name":
                self.take()
                parts.append("in")
            elif t[1] == "not" and t[0] == "name" and (self.peek(1) or ("", "", 0))[1] == "in":
                self.take()
                self.take()
                parts.append("not in")
            else:
                break
            parts.append(self.math1())
        return value if len(parts) == 1 else "(" + " ".join(parts) + ")"

    def math1(self) -> str:
        value = self.concat()
        while self.at("+") or self.at("-"):
            op = self.take()[1]
            value = f"({value} {op} {self.concat()})"
        return value

    def concat(self) -> str:
        value = self.math2()
        if not self.at("~"):
            return value
        parts = [f"str({value})"]
        while self.at("~"):
            self.take()
            parts.append(f"str({self.math2()})")
        return "(" + " + ".join(parts) + ")"

    def math2(self) -> str:
        value = self.pow_()
        while any(self.at(op) for op in ("*", "/", "//", "%")):
            op = self.take()[1]
            value = f"({value} {op} {self.pow_()})"
        return value

    def pow_(self) -> str:
        value = self.unary()
        while self.at("**"):
            self.take()
            value = f"({value} ** {self.unary()})"
        return value

    def unary(self) -> str:
        ops = []
        while self.at("-") or self.at("+"):  # iterative, like `not`
            ops.append(self.take()[1])
        value = self.filtered(self.postfix(self.primary()))
        for op in reversed(ops):
            value = f"({op}{value})"
        return value

    def primary(self) -> tuple[str, str | None]:
        """(code, plain path or None): a path is a free name followed by attribute names only."""
        t = self.take()
        kind, value = t[0], t[1]
        if kind == "name":
            if value in _LITERALS:
                return _LITERALS[value], None
            if value in ("and", "or", "not", "if", "else", "in", "is"):
                self.fail(f"unexpected `{value}`")
            if value == "loop" and self.scope.loops:
                return self.loop_attr(), None
            if keyword.iskeyword(value):
                self.refuse(f"`{value}` is a Python keyword; promptc template code cannot use it as a name")
            bound = value in self.scope.bound
            if not bound:
                self.check_name(t)  # an input's name, read from the context
            where = self.tok.locate(t[2]) if self.tok.locate is not None else (self.tok.line, self.tok.column)
            self.uses.append((value, bound, *where))
            return value, (None if bound else value)
        if kind == "number":
            return value, None
        if kind == "string":
            text = ast.literal_eval(value)
            while (nxt := self.peek()) is not None and nxt[0] == "string":  # adjacent literals join
                text += ast.literal_eval(self.take()[1])
            return py_string(text), None
        if value == "(":
            if self.at(")"):
                self.take()
                return "()", None
            first = self.expression()
            if self.at(","):
                items = [first]
                while self.at(","):
                    self.take()
                    if self.at(")"):
                        break
                    items.append(self.expression())
                self.take(")")
                return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")", None
            self.take(")")
            return f"({first})", None
        if value == "[":
            items = []
            while not self.at("]"):
                items.append(self.expression())
                if not self.at("]"):
                    self.take(",")
            self.take("]")
            return "[" + ", ".join(items) + "]", None
        if value == "{":
            self.refuse("dict literals are not imported", "pass the mapping as an input")
        self.fail(f"unexpected `{value}`")
        raise AssertionError  # pragma: no cover

    def loop_attr(self) -> str:
        self.take(".")
        attr = self.take()[1]
        counter, iterable = self.scope.loops[-1]
        pure = _PURE_SEQUENCE.fullmatch(iterable) is not None
        if attr in ("last", "length", "revindex", "revindex0") and not pure:
            self.refuse(f"`loop.{attr}` over a computed sequence", "loop over an input (a plain name) instead")
        table = {
            "index": f"({counter} + 1)",
            "index0": counter,
            "first": f"({counter} == 0)",
            "last": f"({counter} == len({iterable}) - 1)",
            "length": f"len({iterable})",
            "revindex": f"(len({iterable}) - {counter})",
            "revindex0": f"(len({iterable}) - {counter} - 1)",
        }
        if attr not in table:
            self.refuse(f"`loop.{attr}` has no promptc equivalent", f"use one of loop.{', loop.'.join(_LOOP_ATTRS)}")
        return table[attr]

    def postfix(self, head: tuple[str, str | None]) -> tuple[str, str | None]:
        code, path = head
        start, steps = self.tokens[self.i - 1], 0
        while True:
            if self.at(".") or self.at("[") or self.at("("):
                steps += 1
                if steps > MAX_PATH_SEGMENTS:  # a path becomes `${a.b…}`, each step a level of its type
                    self.fail(
                        f"attributes, subscripts and calls chained more than {MAX_PATH_SEGMENTS} times",
                        codes.IMPORT_NO_EQUIVALENT,
                        "pass the value deep inside as an input of its own",
                        at=start,
                    )
            if self.at("."):
                self.take()
                t = self.take()
                attr = t[1]
                if t[0] == "number" and attr.isdigit():
                    code, path = f"{code}[{attr}]", None
                    continue
                if t[0] != "name":
                    self.fail("expected an attribute name after `.`")
                self.check_name(t)
                if self.at("("):
                    if attr in ("format", "format_map"):
                        self.refuse(
                            f"`.{attr}(…)` is not imported (a format string can read any attribute)",
                            "use the `format` filter or `~`",
                        )
                    code, path = f"{code}.{attr}", None  # a method: Jinja calls getattr(x, name)
                    continue
                if attr in _DICT_ATTRS:
                    self.refuse(
                        f"`.{attr}` is a dict method in Jinja, not the key `{attr}`",
                        f'write `["{attr}"]` for the key',
                    )
                code = f"{code}[{py_string(attr)}]"
                path = f"{path}.{attr}" if path is not None else None
            elif self.at("["):
                self.take()
                if self.at(":") or self.at("]"):
                    self.refuse("slices are not imported")
                index = self.expression()
                if self.at(":"):
                    self.refuse("slices are not imported")
                self.take("]")
                code, path = f"{code}[{index}]", None
            elif self.at("("):
                self.take()
                args = []
                while not self.at(")"):
                    if (self.peek() or ("", "", 0))[0] == "name" and (self.peek(1) or ("", "", 0))[1] == "=":
                        self.refuse("keyword arguments are not imported")
                    args.append(self.expression())
                    if not self.at(")"):
                        self.take(",")
                self.take(")")
                if path is not None and "." not in path:
                    self.refuse(
                        f"`{path}(…)` calls an input: promptc inputs are data",
                        "call it before rendering and pass the result",
                    )
                code, path = f"{code}({', '.join(args)})", None
            else:
                return code, path

    def filtered(self, head: tuple[str, str | None]) -> str:
        code, path = head
        self.path = path
        # Each filter and test wraps the code so far. Its pieces before and after are kept and the
        # code is joined once, at the end: rebuilding the whole string at every filter made a chain
        # of N filters cost N² (100,000 took 27 s before the chain was refused).
        before: list[str] = []
        after: list[str] = []

        def wrap(made: str) -> None:
            left, hole, right = made.partition(_HOLE)
            before.append(left)
            after.append(right)
            assert hole and _HOLE not in right, made  # every template holds its value exactly once

        while True:
            if self.at("|"):
                self.take()
                name = self.take()[1]
                args: list[str] = []
                if self.at("("):
                    self.take()
                    while not self.at(")"):
                        if (self.peek() or ("", "", 0))[0] == "name" and (self.peek(1) or ("", "", 0))[1] == "=":
                            self.refuse(f"the filter `{name}` with keyword arguments is not imported")
                        args.append(self.expression())
                        if not self.at(")"):
                            self.take(",")
                    self.take(")")
                if name not in _FILTERS:
                    self.refuse(
                        f"the Jinja filter `{name}` has no Python expression promptc can use",
                        _FILTER_HINTS.get(
                            name,
                            f"compute the value before rendering; filters promptc imports: {', '.join(sorted(_FILTERS))}",
                        ),
                    )
                fn, (low, high) = _FILTERS[name]
                if not low <= len(args) <= high:
                    self.refuse(f"the filter `{name}` with {len(args)} arguments is not imported")
                wrap(fn(_HOLE, *args))
                self.path = path = None if name != "safe" else path
            elif self.at("is"):
                self.take()
                negate = self.at("not")
                if negate:
                    self.take()
                test = self.take()[1]
                if test == "none":
                    wrap(f"({_HOLE} is {'not ' if negate else ''}None)")
                elif test == "string":
                    wrap(f"({'not ' if negate else ''}isinstance({_HOLE}, str))")
                else:
                    hint = (
                        "promptc has no undefined values: every input is passed (declare it `T | None` and test `is none`)"
                        if test in ("defined", "undefined")
                        else None
                    )
                    self.refuse(f"the Jinja test `is {test}` is not imported", hint)
                self.path = path = None
            else:
                return "".join(reversed(before)) + code + "".join(after)


def expression(
    tok: _Tok, tokens: list[tuple[str, str, int]], scope: _Scope, uses: list[tuple[str, bool, int, int]]
) -> tuple[str, str | None]:
    """(Python code, plain path or None) of a whole expression."""
    parser = _Expr(tokens, tok, scope, uses)
    parser.path = None
    code = parser.expression()
    if not parser.done():
        parser.fail(f"unexpected `{parser.peek()[1]}`")  # type: ignore[index]
    path = parser.path if code == _path_code(parser.path) else None
    return code, path


def _path_code(path: str | None) -> str | None:
    if path is None:
        return None
    root, *attrs = path.split(".")
    return root + "".join(f"[{py_string(a)}]" for a in attrs)


# ---------------------------------------------------------------------------------------------
# Statements and the tree


@dataclass(slots=True)
class _Frame:
    kind: str  # "root" | "if" | "for"
    nodes: list[Node]
    tok: _Tok | None = None
    node: If | For | None = None
    #: for a for loop with `{% else %}`: the else body, and the wrapping If
    orelse: list[Node] | None = None
    bound_here: set[str] = field(default_factory=set)


def parse(text: str, options: Options | None = None, base_line: int = 1) -> Template:
    """Parse a Jinja template into promptc nodes; raises `Refusal`."""
    options = options or Options()
    tokens = lex(text, base_line)
    if options.roles:
        tokens = _prompty_roles(tokens)
    root = _Frame("root", [])
    frames = [root]
    scope = _Scope()
    uses: list[tuple[str, bool, int, int]] = []
    template = Template(root.nodes)
    loop_targets: set[str] = set()
    counters = 0

    def fail(tok: _Tok, message: str, code: Code = codes.IMPORT_TEMPLATE_SYNTAX, hint: str | None = None) -> NoReturn:
        raise Refusal(code, message, tok.line, tok.column, hint)

    for index, tok in enumerate(tokens):
        current = frames[-1].nodes
        if tok.kind == "text":
            if tok.value:
                current.append(Text(tok.value, tok.line, tok.column))
            continue
        if tok.kind == "comment":
            continue
        if tok.kind == "role":
            if len(frames) > 1:
                fail(
                    tok,
                    "a Prompty role line inside a block",
                    codes.IMPORT_NO_EQUIVALENT,
                    "promptc's messages are fixed at build time: move the role line out of the block",
                )
            current.append(Role(tok.value, tok.line, tok.column))
            continue
        if tok.kind == "var":
            if not tok.tokens:
                fail(tok, "empty `{{ }}`")
            code, path = expression(tok, tok.tokens, scope, uses)
            current.append(Out(code, path, tok.line, tok.column))
            continue
        # statements
        if not tok.tokens:
            fail(tok, "empty `{% %}`")
        word = tok.tokens[0][1]
        rest = tok.tokens[1:]
        if word == "if":
            code, _ = expression(tok, rest, scope, uses)
            branch = If([(code, [])], None, tok.line, tok.column)
            current.append(branch)
            frames.append(_Frame("if", branch.branches[0][1], tok, branch))
        elif word in ("elif", "else") and frames[-1].kind == "if":
            frame = frames[-1]
            node = frame.node
            assert isinstance(node, If)
            if node.orelse is not None:
                fail(tok, f"`{{% {word} %}}` after `{{% else %}}`")
            if word == "elif":
                code, _ = expression(tok, rest, scope, uses)
                node.branches.append((code, []))
                frame.nodes = node.branches[-1][1]
            else:
                if rest:
                    fail(tok, "`{% else %}` takes nothing")
                node.orelse = []
                frame.nodes = node.orelse
        elif word == "else" and frames[-1].kind == "for":
            frame = frames[-1]
            if frame.orelse is not None:
                fail(tok, "a second `{% else %}` in one loop")
            frame.orelse = []
            for name in frame.bound_here:
                scope.bound.discard(name)
            scope.loops.pop()
            frame.nodes = frame.orelse
        elif word == "endif":
            if frames[-1].kind != "if":
                fail(tok, "`{% endif %}` without `{% if %}`")
            frames.pop()
        elif word == "for":
            names: list[str] = []
            j = 0
            while j < len(rest) and rest[j][1] != "in":
                t = rest[j]
                if t[0] == "name":
                    if keyword.iskeyword(t[1]) or t[1] in _BUILTINS:
                        fail(
                            tok,
                            f"the loop variable `{t[1]}` is a Python name promptc cannot rebind",
                            codes.IMPORT_NO_EQUIVALENT,
                        )
                    names.append(t[1])
                elif t[1] not in (",", "(", ")"):
                    fail(tok, f"unexpected `{t[1]}` in the loop target")
                j += 1
            if not names or j >= len(rest):
                fail(tok, "expected `{% for x in items %}`")
            tail = rest[j + 1 :]
            for bad in ("if", "recursive"):
                if any(t[1] == bad and t[0] == "name" for t in tail):
                    fail(
                        tok,
                        f"`{bad}` in a for tag is not imported",
                        codes.IMPORT_NO_EQUIVALENT,
                        "filter the sequence before rendering",
                    )
            iterable, _ = expression(tok, tail, scope, uses)
            counters += 1
            counter = f"loop_{counters}"
            loop = For(", ".join(names) if len(names) > 1 else names[0], iterable, [], tok.line, tok.column)
            current.append(loop)
            frame = _Frame("for", loop.body, tok, loop, bound_here={n for n in names if n not in scope.bound})
            frame.bound_here.add(counter)
            frames.append(frame)
            scope.bound.update(names)
            scope.bound.add(counter)
            scope.loops.append((counter, iterable))
            loop_targets.update(names)
        elif word == "endfor":
            if frames[-1].kind != "for":
                fail(tok, "`{% endfor %}` without `{% for %}`")
            frame = frames.pop()
            node = frame.node
            assert isinstance(node, For)
            if frame.orelse is None:
                for name in frame.bound_here:
                    scope.bound.discard(name)
                scope.loops.pop()
            counter = next(n for n in frame.bound_here if n.startswith("loop_"))
            if any(isinstance(n, Out) and counter in n.code for n in _all(node.body)) or any(
                counter in _codes(n) for n in _all(node.body)
            ):
                node.target = f"{counter}, {node.target}" if "," not in node.target else f"{counter}, ({node.target})"
                node.iterable = f"enumerate({node.iterable})"
            if frame.orelse is not None:
                parent = frames[-1].nodes
                parent.pop()  # the For, now wrapped
                iterable = (
                    node.iterable.removeprefix("enumerate(").removesuffix(")")
                    if node.iterable.startswith("enumerate(")
                    else node.iterable
                )
                if not _PURE_SEQUENCE.fullmatch(iterable):
                    fail(
                        frame.tok or tok,
                        "a loop `{% else %}` over a computed sequence",
                        codes.IMPORT_NO_EQUIVALENT,
                        "loop over an input (a plain name)",
                    )
                parent.append(If([(iterable, [node])], frame.orelse, node.line, node.column))
        elif word == "set":
            if any(f.kind == "for" for f in frames):
                fail(
                    tok,
                    "`{% set %}` inside a loop (Jinja scopes it to one iteration)",
                    codes.IMPORT_NO_EQUIVALENT,
                    "compute the value before rendering",
                )
            if len(rest) < 3 or rest[0][0] != "name" or rest[1][1] != "=":
                fail(tok, "only `{% set name = expression %}` is imported", codes.IMPORT_NO_EQUIVALENT)
            name = rest[0][1]
            if keyword.iskeyword(name) or name in _BUILTINS:
                fail(tok, f"`{name}` is a Python name promptc cannot rebind", codes.IMPORT_NO_EQUIVALENT)
            code, _ = expression(tok, rest[2:], scope, uses)
            current.append(Stmt(f"{name} = {code}", tok.line, tok.column))
            scope.bound.add(name)
            loop_targets.add(name)
        elif word == "include":
            target = _include(tok, rest, tokens, index, options)
            template.includes.append(target)
            current.append(Include(target, tok.line, tok.column))
        elif word in ("endraw",):
            fail(tok, "`{% endraw %}` without `{% raw %}`")
        else:
            hint = {
                "macro": "write the text out, or split it into a partial and `/// include:` it",
                "extends": "promptc has no template inheritance: `/// include:` the shared parts instead",
                "block": "promptc has no template inheritance: `/// include:` the shared parts instead",
                "with": "compute the value before rendering",
                "filter": "apply the filter to the value before rendering",
            }.get(word)
            if word in ("else", "elif"):
                fail(tok, f"`{{% {word} %}}` outside a block")
            if word.startswith("end"):
                fail(tok, f"`{{% {word} %}}` without its opening tag")
            fail(tok, f"`{{% {word} %}}` has no promptc equivalent", codes.IMPORT_NO_EQUIVALENT, hint)
    if len(frames) > 1:
        opened = frames[-1].tok
        assert opened is not None
        fail(opened, f"`{{% {frames[-1].kind} %}}` is never closed")
    seen: set[str] = set()
    for name, bound, line, column in uses:
        if bound:
            continue
        if name in loop_targets:
            raise Refusal(
                codes.IMPORT_NO_EQUIVALENT,
                f"`{name}` is both an input and a name the template binds (a loop variable or `set`)",
                line,
                column,
                "Jinja scopes a loop variable to its loop and Python does not: rename the loop variable",
            )
        if name not in seen:
            seen.add(name)
            template.inputs.append(name)
    return template


def _codes(node: Node) -> str:
    if isinstance(node, If):
        return " ".join(c for c, _ in node.branches)
    if isinstance(node, For):
        return node.iterable
    if isinstance(node, (Out, Stmt)):
        return node.code
    return ""


def _all(nodes: list[Node]) -> Iterator[Node]:
    return walk(nodes)


def _include(tok: _Tok, rest: list[tuple[str, str, int]], tokens: list[_Tok], index: int, options: Options) -> str:
    if len(rest) != 1 or rest[0][0] != "string":
        raise Refusal(
            codes.IMPORT_NO_EQUIVALENT,
            'only `{% include "file" %}` with one literal name is imported',
            tok.line,
            tok.column,
        )
    name = ast.literal_eval(rest[0][1])
    before = tokens[index - 1] if index > 0 else None
    after = tokens[index + 1] if index + 1 < len(tokens) else None
    alone_before = before is None or (before.kind == "text" and (before.value == "" or before.value.endswith("\n")))
    alone_after = after is None or (after.kind == "text" and after.value.startswith("\n"))
    if not (alone_before and alone_after):
        raise Refusal(
            codes.IMPORT_NO_EQUIVALENT,
            "an `{% include %}` that shares its line with text",
            tok.line,
            tok.column,
            "put the include on a line of its own (promptc's `/// include:` is a line)",
        )
    if after is not None:
        after.value = after.value[1:]  # the include's line ends here
    target = options.resolve_include(name) if options.resolve_include else None
    if target is None:
        raise Refusal(
            codes.IMPORT_PARTIAL_MISSING,
            f"the included template `{name}` is not in the imported folder",
            tok.line,
            tok.column,
        )
    return target


def _prompty_roles(tokens: list[_Tok]) -> list[_Tok]:
    """Split Prompty's role lines (`system:`, `user:` …) out of the text tokens. A role line is a
    whole line of literal text; one with attributes (`user[name="a"]:`) is refused."""
    out: list[_Tok] = []
    for tok in tokens:
        if tok.kind != "text":
            out.append(tok)
            continue
        pieces = tok.value.split("\n")
        buffer: list[str] = []
        line = tok.line
        column = tok.column
        start_line, start_column = line, column
        for k, piece in enumerate(pieces):
            last = k == len(pieces) - 1
            # a piece is a whole line only if it starts a line and ends one
            starts_line = k > 0 or _after_newline(out)
            m = PROMPTY_ROLE.match(piece) if (starts_line and not last) else None
            if m is None and last and starts_line and PROMPTY_ROLE.match(piece) and tok is tokens[-1]:
                m = PROMPTY_ROLE.match(piece)
            if m:
                if m.group(2):
                    raise Refusal(
                        codes.IMPORT_NO_EQUIVALENT,
                        f"the role line `{piece.strip()}` has attributes",
                        line + k,
                        1,
                        "promptc messages have a role and content only",
                    )
                if buffer:
                    out.append(_Tok("text", "\n".join(buffer) + "\n", start_line, start_column))
                out.append(_Tok("role", m.group(1).lower(), line + k, 1))
                buffer = []
                start_line, start_column = line + k + 1, 1
            else:
                buffer.append(piece)
        if buffer and (len(buffer) > 1 or buffer[0]):
            out.append(_Tok("text", "\n".join(buffer), start_line, start_column))
    return out


def _after_newline(out: list[_Tok]) -> bool:
    for tok in reversed(out):
        if tok.kind == "text":
            return tok.value.endswith("\n")
        if tok.kind == "role":
            return True
        if tok.kind != "comment":
            return False
    return True
