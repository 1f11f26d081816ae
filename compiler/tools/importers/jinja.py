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

Each input's type is inferred from the template's own use, as for Dotprompt (`Shape`): a value
only ever printed whole (`{{ name }}`) is a string, one used against a number literal (`n + 1`,
`n > 0`) a number, one looped over (`{% for x in xs %}`) a list whose items are typed by the loop
variable's own use, one read by attribute (`a.b`) an object with that property required, and one
tested `is none` may be None. A value also used any other way (`x | upper`, `a ~ b`, `x == y`)
or in two incompatible ways stays untyped; a truth test (`{% if x %}`, `x or y`) says nothing. The inferred type is the imported prompt's contract, so a
value of another type is an `InputTypeError` at render time, never a different text.

Role lines: Prompty's (`system:`, `# user:`) always (`Options.roles = "prompty"`); Prompt flow's
(`# system:`, `user:` …, its chat parser's separator) in a template whose first line of text is
one (`promptflow_chat`). Both split the rendered text into messages, so a role line is a message
separator only at the top level: inside a block, it would make as many messages as the loop has
items, which promptc's messages, fixed at build time, cannot (E962).
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
#: how many levels below an input its type is inferred (properties, list items): each level is two
#: levels of the JSON Schema written to an `@schema` file, which the build reads at most 32 deep
#: (E821). Deeper, a value is left untyped.
MAX_SHAPE_DEPTH = 15
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
#: the code of a number literal (a negative one is parenthesised by `unary`)
_NUMBER = re.compile(r"\(?-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\)?")
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
    """How the template is read: Prompty (`roles="prompty"`) and Prompt flow (`"promptflow"`) find
    role lines (`system:`) at the top level."""

    roles: str | None = None
    #: the folder of the template under the source root, for `{% include %}` paths
    folder: str = ""
    #: include name → target of `/// include:` (the importer has converted it) or None when missing
    resolve_include: Callable[[str], str | None] | None = None


class Shape:
    """How a template uses one value, collected while it is read: the ways it is used whole
    (`print`, `truth`, `none`, `other`), the properties read from it and the items of a loop over
    it. `schema()` is the type this implies (see the module's docstring). Bounded: nothing is
    inferred below `MAX_SHAPE_DEPTH` levels. Uses: `print` (printed whole), `truth` (tested),
    `none` (tested against none), `number` (against a number literal: `n + 1`, `n > 0`),
    `iterate`, `other` (anything else)."""

    __slots__ = ("depth", "uses", "props", "items")

    def __init__(self, depth: int = 1) -> None:
        self.depth = depth
        self.uses: set[str] = set()
        self.props: dict[str, Shape] = {}
        self.items: Shape | None = None

    def prop(self, name: str) -> Shape | None:
        """The shape of `value.name`, read from this value."""
        if self.depth >= MAX_SHAPE_DEPTH:
            self.uses.add("other")
            return None
        if name not in self.props:
            self.props[name] = Shape(self.depth + 1)
        return self.props[name]

    def iterate(self) -> Shape | None:
        """The shape of the items of a loop over this value."""
        if self.depth >= MAX_SHAPE_DEPTH:
            self.uses.add("other")
            return None
        if self.items is None:
            self.items = Shape(self.depth + 1)
        return self.items

    def merge(self, other: Shape) -> None:
        """Add the uses `other` saw (the same input read by an included template), copied: `other`
        is left as it is, for the other templates that include it."""
        pending = [(self, other)]
        while pending:
            mine, theirs = pending.pop()
            mine.uses |= theirs.uses
            for name, shape in theirs.props.items():
                pending.append((mine.props.setdefault(name, Shape(mine.depth + 1)), shape))
            if theirs.items is not None:
                if mine.items is None:
                    mine.items = Shape(mine.depth + 1)
                pending.append((mine.items, theirs.items))

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the value as used: `{}` (any value) when the uses say nothing or disagree."""
        if self.props and self.items is not None:  # read by attribute and looped over
            found: dict[str, Any] = {}
        elif self.props:
            found = {
                "type": "object",
                "properties": {name: shape.schema() for name, shape in self.props.items()},
                "required": list(self.props),
            }
        elif self.items is not None:
            items = self.items.schema()
            found = {"type": "array", "items": items} if items else {"type": "array"}
        else:
            whole = self.uses - {"truth", "none"}
            if "number" in whole and whole <= {"number", "print"}:
                found = {"type": "number"}
            elif whole == {"print"}:
                found = {"type": "string"}
            else:
                found = {}
        if "none" in self.uses and isinstance(found.get("type"), str):
            found["type"] = [found["type"], "null"]
        return found


@dataclass(slots=True)
class Template:
    nodes: list[Node]
    #: names read from the inputs (free names of the template), in first-use order
    inputs: list[str] = field(default_factory=list)
    #: the includes it makes, in order
    includes: list[str] = field(default_factory=list)
    #: how the template uses each input (`Shape.schema()` is its inferred type)
    shapes: dict[str, Shape] = field(default_factory=dict)


#: Prompty's role boundary (prompty/parsers/prompty.py `_BOUNDARY_RE`), without attributes
#: (possessive: the blanks before and after an optional `#` are read once, not split every way)
PROMPTY_ROLE = re.compile(r"^\s*+#?\s*+(system|user|assistant|developer)(\[[^\]]*\])?\s*:\s*$", re.I)
#: Prompt flow's role separator (promptflow-tools `promptflow/tools/common.py`, `parse_chat`:
#: `(?i)^\s*#?\s*(system|user|assistant|function|tool)\s*:\s*\n`), matched on one line
PROMPTFLOW_ROLE = re.compile(r"^\s*+#?\s*+(system|user|assistant|function|tool)\s*:\s*$", re.I)
#: a line Prompt flow's chat parser reads as a message's name (`name:`, then the name and `content:`)
PROMPTFLOW_NAME = re.compile(r"^\s*+#{0,2}\s*+name\s*:\s*$", re.I)
#: the dialects of role lines: (name in messages, pattern)
_ROLE_LINES = {"prompty": ("Prompty", PROMPTY_ROLE), "promptflow": ("Prompt flow", PROMPTFLOW_ROLE)}


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
    loops (innermost last) with their counter variable and iterable code; the shapes of the inputs
    read so far, and of the items a loop variable stands for."""

    bound: set[str] = field(default_factory=set)
    loops: list[tuple[str, str]] = field(default_factory=list)
    inputs: dict[str, Shape] = field(default_factory=dict)
    items: dict[str, Shape] = field(default_factory=dict)


@dataclass(slots=True)
class _Occurrence:
    """A value read by a path (`a.b`, a loop variable's `item.c`) at one place, and how the
    expression around it uses it whole: `other` until the parser sees a use that says more."""

    shape: Shape
    code: str
    use: str = "other"


class _Expr:
    """A recursive-descent parser over one tag's tokens, with an explicit depth bound."""

    def __init__(
        self, tokens: list[tuple[str, str, int]], tok: _Tok, scope: _Scope, uses: list[tuple[str, bool, int, int]]
    ) -> None:
        self.tokens, self.i, self.tok, self.scope, self.uses = tokens, 0, tok, scope, uses
        self.depth = 0
        #: the paths read, in the order their reading ended (`_Occurrence`)
        self.found: list[_Occurrence] = []

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

    def numeric(self, left: str, right: str) -> None:
        """`left` and `right` are the operands of arithmetic or a comparison: a path read whole
        against a number literal is used as a number."""
        for mine, other in ((left, right), (right, left)):
            if _NUMBER.fullmatch(other):
                for found in self.found[-2:]:
                    if found.code == mine and found.use == "other":
                        found.use = "number"

    def truth(self, code: str) -> None:
        """`code` is tested for truth (`if`, `and`, `or`, `not`): when it is a path read whole,
        that use says nothing of its type."""
        if self.found and self.found[-1].code == code and self.found[-1].use == "other":
            self.found[-1].use = "truth"

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
                self.truth(condition)
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
            self.truth(value)
            self.take()
            right = self.and_()
            self.truth(right)
            value = f"({value} or {right})"
        return value

    def and_(self) -> str:
        value = self.not_()
        while self.at("and"):
            self.truth(value)
            self.take()
            right = self.not_()
            self.truth(right)
            value = f"({value} and {right})"
        return value

    def not_(self) -> str:
        count = 0
        while self.at("not"):  # a chain of `not` is counted, not recursed into
            self.take()
            count += 1
        value = self.compare()
        if count:
            self.truth(value)
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
            right = self.math1()
            if parts[-1] in _COMPARE:
                self.numeric(parts[-2], right)
            parts.append(right)
        return value if len(parts) == 1 else "(" + " ".join(parts) + ")"

    def math1(self) -> str:
        value = self.concat()
        while self.at("+") or self.at("-"):
            op = self.take()[1]
            right = self.concat()
            self.numeric(value, right)
            value = f"({value} {op} {right})"
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
            right = self.pow_()
            self.numeric(value, right)
            value = f"({value} {op} {right})"
        return value

    def pow_(self) -> str:
        value = self.unary()
        while self.at("**"):
            self.take()
            right = self.unary()
            self.numeric(value, right)
            value = f"({value} ** {right})"
        return value

    def unary(self) -> str:
        ops = []
        while self.at("-") or self.at("+"):  # iterative, like `not`
            ops.append(self.take()[1])
        value = self.filtered(*self.postfix(*self.primary()))
        for op in reversed(ops):
            value = f"({op}{value})"
        return value

    def primary(self) -> tuple[str, str | None, Shape | None]:
        """(code, plain path or None, the shape of the value when it is an input or a loop
        variable): a path is a free name followed by attribute names only."""
        t = self.take()
        kind, value = t[0], t[1]
        if kind == "name":
            if value in _LITERALS:
                return _LITERALS[value], None, None
            if value in ("and", "or", "not", "if", "else", "in", "is"):
                self.fail(f"unexpected `{value}`")
            if value == "loop" and self.scope.loops:
                return self.loop_attr(), None, None
            if keyword.iskeyword(value):
                self.refuse(f"`{value}` is a Python keyword; promptc template code cannot use it as a name")
            bound = value in self.scope.bound
            if not bound:
                self.check_name(t)  # an input's name, read from the context
            where = self.tok.locate(t[2]) if self.tok.locate is not None else (self.tok.line, self.tok.column)
            self.uses.append((value, bound, *where))
            if bound:
                return value, None, self.scope.items.get(value)
            return value, value, self.scope.inputs.setdefault(value, Shape())
        if kind == "number":
            return value, None, None
        if kind == "string":
            text = ast.literal_eval(value)
            while (nxt := self.peek()) is not None and nxt[0] == "string":  # adjacent literals join
                text += ast.literal_eval(self.take()[1])
            return py_string(text), None, None
        if value == "(":
            if self.at(")"):
                self.take()
                return "()", None, None
            first = self.expression()
            if self.at(","):
                items = [first]
                while self.at(","):
                    self.take()
                    if self.at(")"):
                        break
                    items.append(self.expression())
                self.take(")")
                return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")", None, None
            self.take(")")
            return f"({first})", None, None
        if value == "[":
            items = []
            while not self.at("]"):
                items.append(self.expression())
                if not self.at("]"):
                    self.take(",")
            self.take("]")
            return "[" + ", ".join(items) + "]", None, None
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

    def postfix(self, code: str, path: str | None, shape: Shape | None) -> tuple[str, str | None, Shape | None]:
        """The attributes, subscripts and calls after a primary; `shape` follows the attributes
        read (`a.b` makes `a` an object); any other step uses the value some other way."""
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
                    code, path, shape = f"{code}[{attr}]", None, _other(shape)
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
                    code, path, shape = f"{code}.{attr}", None, _other(shape)  # a method: Jinja calls getattr(x, name)
                    continue
                if attr in _DICT_ATTRS:
                    self.refuse(
                        f"`.{attr}` is a dict method in Jinja, not the key `{attr}`",
                        f'write `["{attr}"]` for the key',
                    )
                code = f"{code}[{py_string(attr)}]"
                path = f"{path}.{attr}" if path is not None else None
                shape = shape.prop(attr) if shape is not None else None
            elif self.at("["):
                self.take()
                if self.at(":") or self.at("]"):
                    self.refuse("slices are not imported")
                index = self.expression()
                if self.at(":"):
                    self.refuse("slices are not imported")
                self.take("]")
                code, path, shape = f"{code}[{index}]", None, _other(shape)
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
                code, path, shape = f"{code}({', '.join(args)})", None, _other(shape)
            else:
                return code, path, shape

    def filtered(self, code: str, path: str | None, shape: Shape | None) -> str:
        self.path = path
        found = None
        if shape is not None:
            found = _Occurrence(shape, code)
            self.found.append(found)
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
                if test == "none" and found is not None and not before:
                    found.use = "none"  # the value itself is tested: it may be None
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


def _other(shape: Shape | None) -> Shape | None:
    """A step after a path that is not an attribute (a call, a subscript): the value is used some
    other way, and what the step yields has no shape (None)."""
    if shape is not None:
        shape.uses.add("other")
    return None


def expression(
    tok: _Tok,
    tokens: list[tuple[str, str, int]],
    scope: _Scope,
    uses: list[tuple[str, bool, int, int]],
    use: str = "other",
) -> tuple[str, str | None, Shape | None]:
    """(Python code, plain path or None, the value's shape when the expression is one path read
    whole) of a whole expression; `use` is how the tag uses it (`print`, `truth`, `iterate`)."""
    parser = _Expr(tokens, tok, scope, uses)
    parser.path = None
    code = parser.expression()
    if not parser.done():
        parser.fail(f"unexpected `{parser.peek()[1]}`")  # type: ignore[index]
    path = parser.path if code == _path_code(parser.path) else None
    whole = parser.found[-1] if parser.found and parser.found[-1].code == code else None
    if whole is not None and whole.use == "other":
        whole.use = use
    for found in parser.found:
        found.shape.uses.add(found.use)
    return code, path, whole.shape if whole is not None else None


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
    #: for a for loop: what its loop variable's name stood for before (`_Scope.items`), restored
    #: when the loop's scope ends
    items_before: dict[str, Shape | None] = field(default_factory=dict)


def parse(text: str, options: Options | None = None, base_line: int = 1) -> Template:
    """Parse a Jinja template into promptc nodes; raises `Refusal`."""
    options = options or Options()
    tokens = lex(text, base_line)
    if options.roles:
        tokens = _role_lines(tokens, options.roles)
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
                engine = _ROLE_LINES[options.roles or "prompty"][0]
                fail(
                    tok,
                    f"a {engine} role line inside a block: {engine} splits the rendered text into messages, "
                    "so the block decides how many there are",
                    codes.IMPORT_NO_EQUIVALENT,
                    "promptc's messages are fixed at build time: move the role line out of the block, "
                    "or send a conversation's turns as messages from your code",
                )
            current.append(Role(tok.value, tok.line, tok.column))
            continue
        if tok.kind == "var":
            if not tok.tokens:
                fail(tok, "empty `{{ }}`")
            code, path, _shape = expression(tok, tok.tokens, scope, uses, "print")
            current.append(Out(code, path, tok.line, tok.column))
            continue
        # statements
        if not tok.tokens:
            fail(tok, "empty `{% %}`")
        word = tok.tokens[0][1]
        rest = tok.tokens[1:]
        if word == "if":
            code, _, _shape = expression(tok, rest, scope, uses, "truth")
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
                code, _, _shape = expression(tok, rest, scope, uses, "truth")
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
            _restore(scope, frame)
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
            iterable, _, shape = expression(tok, tail, scope, uses, "iterate")
            items = shape.iterate() if shape is not None else None
            counters += 1
            counter = f"loop_{counters}"
            loop = For(", ".join(names) if len(names) > 1 else names[0], iterable, [], tok.line, tok.column)
            current.append(loop)
            frame = _Frame("for", loop.body, tok, loop, bound_here={n for n in names if n not in scope.bound})
            frame.bound_here.add(counter)
            frame.items_before = {n: scope.items.pop(n, None) for n in names}
            if items is not None and len(names) == 1:
                scope.items[names[0]] = items  # `item.a` in the body is a property of the items
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
                _restore(scope, frame)
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
            code, _, _shape = expression(tok, rest[2:], scope, uses)
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
    template.shapes = {name: scope.inputs[name] for name in template.inputs if name in scope.inputs}
    return template


def _restore(scope: _Scope, frame: _Frame) -> None:
    """The end of a loop's scope: its variable names stand for what they stood for before."""
    for name, before in frame.items_before.items():
        scope.items.pop(name, None)
        if before is not None:
            scope.items[name] = before


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


def promptflow_chat(text: str) -> bool:
    """Whether a Jinja template is a Prompt flow chat template: its first line of text (blank
    lines and comments aside) is a role line, as Prompt flow's chat parser needs (it refuses text
    before the first one). Its role lines are then read as Prompt flow reads them."""
    try:
        tokens = lex(text)
    except Refusal:
        return False  # the parse reports it
    for tok in tokens:
        if tok.kind == "comment" or (tok.kind == "text" and not tok.value.strip()):
            continue
        if tok.kind != "text":
            return False
        lines = tok.value.lstrip("\n").split("\n")
        return len(lines) > 1 and PROMPTFLOW_ROLE.match(lines[0]) is not None
    return False


def _role_lines(tokens: list[_Tok], dialect: str) -> list[_Tok]:
    """Split the role lines of Prompty (`system:`, `user:` …, `dialect="prompty"`) or Prompt flow
    (`"promptflow"`) out of the text tokens. A role line is a whole line of literal text; one with
    attributes (`user[name="a"]:`), and Prompt flow's `function` and `tool` roles, are refused.
    Prompty splits the rendered text with `splitlines()`, so a role line that ends the template
    counts; Prompt flow's separator ends with a newline."""
    engine, pattern = _ROLE_LINES[dialect]
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
            m = pattern.match(piece) if (starts_line and not last) else None
            if m is None and dialect == "prompty" and last and starts_line and tok is tokens[-1]:
                m = pattern.match(piece)
            if m:
                if pattern.groups > 1 and m.group(2):
                    raise Refusal(
                        codes.IMPORT_NO_EQUIVALENT,
                        f"the role line `{piece.strip()}` has attributes",
                        line + k,
                        1,
                        "promptc messages have a role and content only",
                    )
                if m.group(1).lower() in ("function", "tool"):
                    raise Refusal(
                        codes.IMPORT_NO_EQUIVALENT,
                        f"the {engine} role `{m.group(1).lower()}` has no promptc message role",
                        line + k,
                        1,
                        "promptc messages are system, developer, user or assistant: a tool's result comes from your code",
                    )
                if buffer:
                    out.append(_Tok("text", "\n".join(buffer) + "\n", start_line, start_column))
                out.append(_Tok("role", m.group(1).lower(), line + k, 1))
                buffer = []
                start_line, start_column = line + k + 1, 1
            else:
                if dialect == "promptflow" and starts_line and not last and PROMPTFLOW_NAME.match(piece):
                    raise Refusal(
                        codes.IMPORT_NO_EQUIVALENT,
                        f"Prompt flow reads the line `{piece.strip()}` (then the name and `content:`) as the message's name",
                        line + k,
                        1,
                        "promptc messages have a role and content only: remove the name lines",
                    )
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
