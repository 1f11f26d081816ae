"""Jinja habits in Python blocks: what people write out of Jinja muscle memory, recognised so the
diagnostic says that blocks are Python and what to write instead.

- `{{ name | upper }}` is a bitwise or in Python, and `upper` becomes an input; with arguments,
  `{{ name|default('there') }}` calls `default`: W605, with the Python spelling of the whole
  expression (`{{ name or 'there' }}`, `{{ ', '.join(items) }}`);
- `{{ loop.index }}` reads an input called `loop`: W605, use `enumerate`;
- `{# TODO #}` is a Jinja comment, but `{# #}` runs Python statements here, so `TODO` is read as
  an input: W605, write `/// TODO`; a `{# comment in words #}` that is no Python gets E601 with
  that hint, and so does `{{ and }}` written as text (the hint: `\\{{`);
- `{% else if c %}` is a syntax error: E601 gets the hint `{% elif c %}`;
- `{% set x = 1 %}`, `{% include %}`, `{% macro %}`, `{% raw %}`: E208's hint is the promptc way
  (`language.JINJA_TAGS`, used where the parser reports the tag).

Only names the template does not define and that are Jinja's own (its filters, `loop`) are
flagged, so `{{ a | b }}` on two sets the prompt is given stays quiet. A habit's name that is
also an undeclared input (E501, E503) is said once: the error carries the habit's hint (see
`inference._check_declared`), and the warning is left out.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Set as AbstractSet
from dataclasses import replace

from ..facts import codes
from ..facts.diagnostics import Span
from ..facts.language import IDENTIFIER_PATTERN
from ..facts.records import dataclass
from ..syntax.nodes import Block, Section
from .context import Context

JINJA_FILTERS = frozenset(
    "abs attr batch capitalize center count default dictsort e escape filesizeformat first float forceescape format "
    "groupby indent int items join last length list lower map max min pprint random reject rejectattr replace "
    "reverse round safe select selectattr slice sort string striptags sum title tojson trim truncate unique upper "
    "urlencode urlize wordcount wordwrap xmlattr".split()
)
_FILTER = re.compile(rf"(?<!\|)\|(?![|=])\s*({IDENTIFIER_PATTERN})(\s*\()?")
_LOOP = re.compile(r"(?<![\w.])loop\.(index0?|revindex0?|first|last|length|cycle|previtem|nextitem|depth)\b")
_ELSE_IF = re.compile(r"\s*else\s+if\b")
_BARE_NAME = re.compile(rf"\s*({IDENTIFIER_PATTERN})\s*")
#: block code that reads as words, not Python (`{{ and }}` in prose, `{# TODO: fix the tone #}`)
_PROSE = re.compile(r"\s*[A-Za-z][\w\s,.;:!?'\"-]*")
#: longest block code the hint rewrites (longer ones get the short hint)
_REWRITE_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class Habit:
    """A W605 to report: `name` is the input the habit creates (`upper`, `loop`, `TODO`)."""

    name: str
    message: str
    span: Span
    hint: str


def _call(func: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=ast.Name(func, ast.Load()), args=list(args), keywords=[])


def _method(value: ast.expr, name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=ast.Attribute(value, name, ast.Load()), args=list(args), keywords=[])


def _translate(name: str, x: ast.expr, args: list[ast.expr]) -> ast.expr | None:
    """Jinja's `x | name(args)` as a Python expression, or None where there is no short one."""
    text = ast.Constant
    if name in ("default", "d"):
        return ast.BoolOp(ast.Or(), [x, args[0] if args else text("")])
    if name == "join":
        return _method(args[0] if args else text(""), "join", x)
    if name in ("length", "count"):
        return _call("len", x)
    if name in ("upper", "lower", "title", "capitalize") and not args:
        return _method(x, name)
    if name == "trim":
        return _method(x, "strip", *args)
    if name == "replace":
        return _method(x, "replace", *args)
    if name == "first" and not args:
        return ast.Subscript(x, text(0), ast.Load())
    if name == "last" and not args:
        return ast.Subscript(x, ast.UnaryOp(ast.USub(), text(1)), ast.Load())
    if name in ("list", "sum", "min", "max", "abs", "int", "float", "round") and (not args or name == "round"):
        return _call(name, x, *args)
    if name == "string" and not args:
        return _call("str", x)
    if name == "sort" and not args:
        return _call("sorted", x)
    if name == "reverse" and not args:
        return _call("list", _call("reversed", x))
    if name == "unique" and not args:
        return _call("list", _method(ast.Name("dict", ast.Load()), "fromkeys", x))
    if name == "format":
        return ast.BinOp(x, ast.Mod(), ast.Tuple(args, ast.Load()) if len(args) != 1 else args[0])
    return None


def _pythonic(code: str, names: set[str]) -> str | None:
    """The block's expression with every Jinja filter among `names` written the Python way
    (`name|default('there')` → `name or 'there'`), or None when one has no short spelling."""
    if len(code) > _REWRITE_LIMIT:
        return None

    class Rewrite(ast.NodeTransformer):
        failed = False

        def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
            self.generic_visit(node)
            if not isinstance(node.op, ast.BitOr):
                return node
            right = node.right
            if isinstance(right, ast.Name):
                name, args, keywords = right.id, [], []
            elif isinstance(right, ast.Call) and isinstance(right.func, ast.Name):
                name, args, keywords = right.func.id, list(right.args), right.keywords
            else:
                return node
            if name not in names:
                return node
            translated = None if keywords else _translate(name, node.left, args)
            if translated is None:
                self.failed = True
                return node
            return translated

    try:
        tree = ast.parse(code.strip(), mode="eval")
        rewrite = Rewrite()
        tree = rewrite.visit(tree)
        if rewrite.failed:
            return None
        return ast.unparse(ast.fix_missing_locations(tree))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _filter_hint(name: str, before: str, code: str, names: set[str]) -> str:
    better = _pythonic(code, names)
    if better is not None:
        return f"blocks are Python, not Jinja: `| {name}` is a bitwise or; write `{{{{ {better} }}}}`"
    x = before if re.fullmatch(r"[A-Za-z_][\w.]*", before) else "x"
    return (
        f"blocks are Python, not Jinja: `| {name}` is a bitwise or; call a Python function or method on "
        f"`{x}` instead (`{x}.{name}()` for a string method)"
    )


def check(section: Section, inputs: set[str], ctx: Context, helpers: AbstractSet[str] = frozenset()) -> list[Habit]:
    """The W605s of a section's Jinja filters, `loop` and `{# comments #}` where they would be read
    as inputs (returned: the caller reports them, once it knows which are undeclared inputs); and
    better hints for the errors Jinja syntax causes (reported already, by the parser or the
    analysis)."""
    found: list[Habit] = []
    names = inputs | set(helpers)
    for item in section.items:
        if not isinstance(item, Block) or item.code_span.src is None:
            continue
        src = item.code_span.src
        if item.kind == "expr" and "|" in item.code:  # a filter is written after a `|`
            flagged = {m.group(1) for m in _FILTER.finditer(item.code) if m.group(1) in JINJA_FILTERS}
            flagged &= names
            for match in _FILTER.finditer(item.code):
                name = match.group(1)
                if name not in flagged:
                    continue
                start = item.code_span.start + match.start()
                called = match.group(2) is not None
                message = (
                    f"`| {name}(…)` is a Jinja filter; in a Python block it calls `{name}`, which becomes an input"
                    if called
                    else f"`| {name}` is a Jinja filter; in a Python block it makes `{name}` an input"
                )
                found.append(
                    Habit(
                        name,
                        message,
                        src.span(start, item.code_span.start + match.end(1)),
                        _filter_hint(name, item.code[: match.start()].strip(), item.code, flagged),
                    )
                )
        if item.kind == "exec":
            bare = _BARE_NAME.fullmatch(item.code)
            if bare is not None and bare.group(1) in inputs:
                name = bare.group(1)
                start = item.code_span.start + bare.start(1)
                found.append(
                    Habit(
                        name,
                        f"`{{# {name} #}}` looks like a Jinja comment; `{{# #}}` runs Python statements here, "
                        f"so `{name}` is read as an input",
                        src.span(start, start + len(name)),
                        f"write a comment as `/// {name}` (on a line of its own, or at the end of a line)",
                    )
                )
        for match in _LOOP.finditer(item.code) if "loop" in inputs else ():
            if "loop" in inputs:
                start = item.code_span.start + match.start()
                found.append(
                    Habit(
                        "loop",
                        f"`loop.{match.group(1)}` is Jinja's loop variable; here `loop` is read as an input",
                        src.span(start, item.code_span.start + match.end()),
                        "blocks are Python: `{% for i, x in enumerate(items) %}` gives the index as `i`",
                    )
                )
        if item.kind == "stmt" and _ELSE_IF.match(item.code):
            _rehint(ctx, item, "blocks are Python: write `{% elif … %}`")
        elif item.kind == "exec" and _PROSE.fullmatch(item.code):
            _rehint(
                ctx,
                item,
                "`{# #}` runs Python statements here, it is not a Jinja comment: write a comment as "
                "`/// …`, or `\\{#` for a literal `{#`",
                only_bare=True,
            )
        elif item.kind == "expr" and _PROSE.fullmatch(item.code):
            _rehint(
                ctx,
                item,
                "`{{ }}` holds a Python expression; to write `{{` as text, escape it: `\\{{`",
                only_bare=True,
            )
    return found


def _rehint(ctx: Context, block: Block, hint: str, *, only_bare: bool = False) -> None:
    """Give the error already reported inside `block` the Jinja-aware hint (`only_bare`: only an
    E601 that has no hint of its own)."""
    for index, d in enumerate(ctx.diagnostics):
        if d.severity == "error" and d.span is not None and block.span.start <= d.span.start <= block.span.end:
            if only_bare and (d.code != codes.PYTHON_SYNTAX or d.hint):
                continue
            if d.line == block.span.line or d.span.start >= block.span.start:
                ctx.diagnostics[index] = replace(d, hint=hint)
                return
