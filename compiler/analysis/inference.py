"""Which names a section's template reads from its inputs (docs/language.md, "Inputs"), found without running anything.

promplate compiles a template into *one* Python function: literal text becomes `__append__(...)`,
`{{ e }}` becomes `__append__(e)`, `{# code #}` is pasted in, and `{% if/for/while %}` open indented
blocks. So the template is one flow of Python statements, and its inputs are the names it may read
before it has assigned them. This module works that out with Python's `ast` and a definite-assignment
analysis:

* the state is the set of names *definitely* assigned at a point (a "must" set) plus whether the
  point is reachable; joins intersect the reachable states;
* a read of a name not in the state is a *free use*; free uses of non-builtins are inputs, except
  names only ever called and never assigned anywhere in the template, which are *helpers*;
* nested scopes (def, lambda, class, comprehensions) follow Python's own scoping rules; a function
  body runs later, so its free names count as assigned only when they are assigned at the `def` and
  never deleted anywhere in the enclosing scope.

Whenever the analysis cannot be precise it errs towards reporting an input: an extra input is an
annoyance, a missing one a runtime `NameError`.

Robustness: the `{% %}` structure is walked with an explicit stack and expressions with an explicit
work list, so neither recurses per nesting level. Statement recursion is bounded by Python's own
limit of 100 indentation levels; a `RecursionError`/`MemoryError` anyway (from `ast.parse` on
pathological input) becomes E210 at the block. Any other surprise inside one block becomes a
diagnostic, never an exception.

Work kept across sections (a build's prompts repeat their blocks and their dynamic sections): the
trees of each distinct block code are parsed once per process (`_TREES`), and the analysis of a
section is handed out again, its spans moved, for a section written the same way (`_SECTIONS`).
Both are bounded, and what they hand out is what a fresh analysis would find (property tests).
"""

from __future__ import annotations

import ast
import builtins
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from functools import partial
from itertools import islice
from typing import Any, NamedTuple

from ..facts import codes
from ..facts.codes import CODES, Code
from ..facts.diagnostics import Diagnostic, SourceText, Span, make
from ..facts.records import dataclass
from ..runtime import template
from ..syntax.nodes import Block, Item, Placeholder, Spliced

__all__ = ["Analysis", "ShapeUse", "analyse", "BUILTIN_NAMES"]

#: Names resolved by Python's builtins, never inputs. `__builtins__` is put into the globals by
#: `eval`, which is how promplate runs a template.
BUILTIN_NAMES: frozenset[str] = frozenset(dir(builtins)) | {"__builtins__"}

#: Builtins that read variables by name at run time: with them the inputs cannot be known.
_DYNAMIC = frozenset({"globals", "locals", "vars", "eval", "exec"})
#: Frame introspection reaches the same variables through attributes.
_FRAME_ATTRS = frozenset({"f_locals", "f_globals", "_getframe", "currentframe"})

#: Locals promplate's generated render function defines before any template code runs.
_PROMPLATE_LOCALS = frozenset({"__append__", "__parts__"})

#: CPython's tokenizer accepts at most 99 nested indentation levels and promplate's render body
#: already sits at level 1, so `{% %}` nesting plus a block's own indentation must stay within 98.
_MAX_INDENT = 98
#: CPython refuses more than 20 statically nested loops/try/with in one function ("too many
#: statically nested blocks"); we count only loops, a lower bound, so this never fires wrongly.
_MAX_STATIC_BLOCKS = 20


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: the statements that hold statements (their bodies are a level deeper)
_COMPOUND = frozenset(
    {ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match, *_FUNCTIONS, ast.ClassDef}
    | ({ast.TryStar} if hasattr(ast, "TryStar") else set())
)


@dataclass(frozen=True, slots=True)
class Analysis:
    """What one section's template needs: inputs are runtime values, helpers callables."""

    inputs: frozenset[str]
    helpers: frozenset[str]
    has_template: bool
    diagnostics: tuple[Diagnostic, ...]
    #: where each input or helper is first read (a placeholder, or the name node in a block), so
    #: E501/E702 point at the use, never at a string that happens to contain the name
    first_uses: tuple[tuple[str, Span], ...] = ()
    #: every free read of an input or helper, in the order the analysis met them (the language
    #: server's "find references")
    all_uses: tuple[tuple[str, Span], ...] = ()
    #: what the template does with inputs, for their inferred types and the declared-type check
    shape_uses: tuple[ShapeUse, ...] = ()
    #: inputs every use of which is guarded (`{% if x %}…x…`) or None-safe (`{% if x %}`, `x is
    #: None`): left out, they render as None and nothing fails. The others are required.
    optional: frozenset[str] = frozenset()
    #: each block of the section, in order, as parsed here (`template.Parsed`): the inference pass
    #: hands them to the section's compile, which takes the nodes over, so no block is parsed twice.
    #: Empty for an analysis kept from a section written the same way (its check is skipped).
    blocks: tuple[template.Parsed, ...] = ()
    #: the section's program is certain to compile (`template.surely_compiles` of `blocks`): the
    #: inference pass skips its compile check
    surely_compiles: bool = False


class ShapeUse(NamedTuple):
    """One use that says something about an input's type: a placeholder path (`${user.name}`:
    kind "path", attrs ("name",)), a `{% for x in items %}` over the input itself (kind "iter"),
    or a Python attribute of it in template code (`{{ user.name }}`: kind "attr").
    `guarded`: where a test proves the input is not None (`{% if user %}`, `x is not None`, the
    right of `x and …`), so a None there is never used."""

    name: str
    kind: str
    attrs: tuple[str, ...]
    span: Span | None
    guarded: bool


# ---------------------------------------------------------------------------------------------
# Position mapping: parsed text → .prompt file


class _Mapper:
    """Maps positions in the text handed to `ast.parse` back to offsets in the source file.

    promplate does `dedent(inner).strip()` before parsing, so columns shift per line; we keep, for
    every character of the parsed text, the source offset it came from.
    """

    __slots__ = ("src", "text", "positions", "_line_starts", "ascii", "fallback")

    def __init__(self, src: SourceText | None, text: str, positions: list[int], fallback: Span) -> None:
        self.src = src
        self.text = text
        self.positions = positions  # len(text) + 1 entries
        self._line_starts: list[int] | None = None  # made when a position is first asked for
        self.ascii = text.isascii()  # then a UTF-8 byte column is a character column
        self.fallback = fallback

    @property
    def line_starts(self) -> list[int]:
        starts = self._line_starts
        if starts is None:
            starts = [0]
            find = self.text.find
            pos = find("\n")
            while pos != -1:
                starts.append(pos + 1)
                pos = find("\n", pos + 1)
            self._line_starts = starts
        return starts

    def _index(self, lineno: int | None, col: int | None, byte_col: bool) -> int:
        """Index into the parsed text of a 1-based line and 0-based column."""
        if lineno is None or lineno < 1:
            return 0
        starts = self.line_starts
        if lineno > len(starts):
            return len(self.text)
        text = self.text
        start = starts[lineno - 1]
        end = text.find("\n", start)
        if end == -1:
            end = len(text)
        col = max(0, col or 0)
        if byte_col and not self.ascii:  # ast node columns count UTF-8 bytes
            col = len(text[start:end].encode("utf-8")[:col].decode("utf-8", errors="ignore"))
        return start + min(col, end - start)

    def offset(self, lineno: int | None, col: int | None, byte_col: bool = False) -> int:
        return self.positions[self._index(lineno, col, byte_col)]

    def span(
        self,
        lineno: int | None,
        col: int | None,
        end_lineno: int | None = None,
        end_col: int | None = None,
        byte_col: bool = False,
    ) -> Span:
        if self.src is None:
            return self.fallback
        start = self.offset(lineno, col, byte_col)
        end = start + 1
        if end_lineno is not None and end_col is not None:
            end = max(self.offset(end_lineno, end_col, byte_col), start)
            if end == start:
                end = start + 1
        return self.src.span(start, end)

    def node_span(self, node: ast.AST) -> Span:
        lineno = getattr(node, "lineno", None)
        if lineno is None:
            return self.fallback
        if self.ascii and self.src is not None and "\n" not in self.text:
            # one ASCII line (most blocks): `span` with every column a character of line 1
            size = len(self.text)
            start = self.positions[
                0 if lineno < 1 else size if lineno > 1 else min(max(0, getattr(node, "col_offset", 0) or 0), size)
            ]
            end_lineno = getattr(node, "end_lineno", None)
            end_col = getattr(node, "end_col_offset", None)
            end = start + 1
            if end_lineno is not None and end_col is not None:
                index = 0 if end_lineno < 1 else size if end_lineno > 1 else min(max(0, end_col), size)
                end = max(self.positions[index], start)
                if end == start:
                    end = start + 1
            return self.src.span(start, end)
        return self.span(
            lineno,
            getattr(node, "col_offset", 0),
            getattr(node, "end_lineno", None),
            getattr(node, "end_col_offset", None),
            True,
        )


# ---------------------------------------------------------------------------------------------
# Flow state and scopes


class _State(NamedTuple):
    names: frozenset[str]  # definitely assigned here
    live: bool  # reachable; dead code keeps the state of the jump that killed it (conservative)


def _join(states: Sequence[_State]) -> _State:
    """Meet of control-flow paths: only reachable paths count, names must be assigned on all."""
    live = [s for s in states if s.live]
    pool = live or list(states)
    if not pool:
        return _State(frozenset(), False)
    names = pool[0].names
    for other in pool[1:]:
        names = names & other.names
    return _State(names, bool(live))


class _Loop:
    __slots__ = ("breaks", "continues")

    def __init__(self) -> None:
        self.breaks: list[_State] = []
        self.continues: list[_State] = []


class _Scope:
    """A Python scope. `def_names` is the enclosing state when the scope was created (the `def`,
    the lambda, the class statement, the comprehension); `deferred` scopes run later than that."""

    __slots__ = ("kind", "parent", "def_names", "locals", "globals", "deferred", "kills")

    def __init__(
        self,
        kind: str,
        parent: _Scope | None,
        def_names: frozenset[str],
        locals_: frozenset[str],
        globals_: frozenset[str],
        deferred: bool,
        kills: frozenset[str],
    ) -> None:
        self.kind = kind  # "template" | "function" | "class" | "comprehension"
        self.parent = parent
        self.def_names = def_names
        self.locals = locals_
        self.globals = globals_
        self.deferred = deferred
        self.kills = kills  # names deleted or unbound anywhere in this scope


class _Scan(NamedTuple):
    bound: frozenset[str]
    kills: frozenset[str]
    globals: frozenset[str]
    nonlocals: frozenset[str]


def _scan(roots: Iterable[ast.AST]) -> _Scan:
    """Names bound in one scope (Python's rule: assigned anywhere in it), without entering nested
    scopes; walrus targets inside comprehensions belong to this scope, comprehension targets do
    not. Iterative, so deep expressions cannot overflow the stack."""
    bound: set[str] = set()
    kills: set[str] = set()
    globals_: set[str] = set()
    nonlocals: set[str] = set()
    stack: list[ast.AST] = list(roots)
    while stack:
        node = stack.pop()
        if isinstance(node, _FUNCTIONS):
            bound.add(node.name)
            stack.extend(node.decorator_list)
            stack.extend(_signature_exprs(node.args))
            if node.returns is not None:
                stack.append(node.returns)
        elif isinstance(node, ast.ClassDef):
            bound.add(node.name)
            stack.extend(node.decorator_list)
            stack.extend(node.bases)
            stack.extend(k.value for k in node.keywords)
        elif isinstance(node, ast.Lambda):
            stack.extend(_default_exprs(node.args))
        elif isinstance(node, _COMPREHENSIONS):
            for gen in node.generators:  # targets are the comprehension's own; a walrus is ours
                stack.append(gen.iter)
                stack.extend(gen.ifs)
            if isinstance(node, ast.DictComp):
                stack.extend((node.key, node.value))
            else:
                stack.append(node.elt)
        elif isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                bound.add(node.id)
            elif isinstance(node.ctx, ast.Del):
                bound.add(node.id)
                kills.add(node.id)
        elif isinstance(node, ast.NamedExpr):
            if isinstance(node.target, ast.Name):
                bound.add(node.target.id)
            stack.append(node.value)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    bound.add(alias.asname or alias.name.split(".", 1)[0])
        elif isinstance(node, ast.Global):
            globals_.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            nonlocals.update(node.names)
        else:
            if isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
                kills.add(node.name)  # `except E as e` deletes e when the handler ends
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                bound.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                bound.add(node.rest)
            stack.extend(ast.iter_child_nodes(node))
    return _Scan(frozenset(bound), frozenset(kills), frozenset(globals_), frozenset(nonlocals))


def _kills(roots: Iterable[ast.AST]) -> frozenset[str]:
    return _scan(roots).kills


def _default_exprs(args: ast.arguments) -> list[ast.expr]:
    return [*args.defaults, *(d for d in args.kw_defaults if d is not None)]


def _all_args(args: ast.arguments) -> list[ast.arg]:
    found = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    if args.vararg is not None:
        found.append(args.vararg)
    if args.kwarg is not None:
        found.append(args.kwarg)
    return found


def _signature_exprs(args: ast.arguments) -> list[ast.expr]:
    """Defaults and annotations: evaluated when the `def` runs, in the enclosing scope (3.11)."""
    found = _default_exprs(args)
    found.extend(a.annotation for a in _all_args(args) if a.annotation is not None)
    return found


def _param_names(args: ast.arguments) -> frozenset[str]:
    return frozenset(a.arg for a in _all_args(args))


def _target_names(targets: Iterable[ast.AST]) -> frozenset[str]:
    names: set[str] = set()
    stack = list(targets)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            stack.extend(node.elts)
        elif isinstance(node, ast.Starred):
            stack.append(node.value)
    return frozenset(names)


def _is_true_constant(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and bool(node.value)


def _irrefutable(case: ast.match_case) -> bool:
    """A case that always matches (`case _:`, `case x:`), so the match never falls through."""
    if case.guard is not None:
        return False
    stack: list[ast.pattern] = [case.pattern]
    while stack:
        pattern = stack.pop()
        if isinstance(pattern, ast.MatchAs):
            if pattern.pattern is None:
                return True
            stack.append(pattern.pattern)
        elif isinstance(pattern, ast.MatchOr):
            stack.extend(pattern.patterns)
    return False


def _nesting(body: Sequence[ast.stmt]) -> tuple[int, int]:
    """(deepest indentation level, deepest loop nesting outside functions) of statements."""
    if not any(statement.__class__ in _COMPOUND for statement in body):
        return 0, 0  # simple statements only (most blocks): nothing is nested
    deepest = 0
    loops = 0
    stack: list[tuple[ast.AST, int, int, bool]] = [(s, 0, 0, True) for s in body]
    while stack:
        node, depth, loop_depth, counted = stack.pop()
        deepest = max(deepest, depth)
        if counted:
            loops = max(loops, loop_depth)
        inner_loop = loop_depth + (1 if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) else 0)
        inner_counted = counted and not isinstance(node, (*_FUNCTIONS, ast.ClassDef))
        if isinstance(node, ast.Match):
            for case in node.cases:
                stack.extend((s, depth + 2, inner_loop, inner_counted) for s in case.body)
            continue
        for field in ("body", "orelse", "finalbody"):
            for child in getattr(node, field, ()) or ():
                if isinstance(child, ast.stmt):
                    stack.append((child, depth + 1, inner_loop, inner_counted))
        for handler in getattr(node, "handlers", ()) or ():
            stack.extend((s, depth + 2, inner_loop, inner_counted) for s in handler.body)
    return deepest, loops


# ---------------------------------------------------------------------------------------------
# Parsed blocks


class _Parsed(NamedTuple):
    block: Block
    mapper: _Mapper
    body: list[ast.stmt]  # expr/exec blocks: the statements; stmt blocks: []
    header: ast.If | ast.For | ast.While | None  # stmt blocks: the statement the header opens
    keyword: str
    problem: Diagnostic | None = None  # E602: reported, but the statements are still analysed
    #: every node of `body` and `header`, each tree breadth first (`template.walk`): the one walk
    #: of the block that the attribute uses and `template.surely_compiles` share
    nodes: Sequence[ast.AST] = ()
    #: the key under which `analyse` may keep the trees in `_TREES` (None: not to be kept)
    key: tuple[str, str, str] | None = None
    #: the trees, as `_TREES` keeps them
    trees: _Trees | None = None
    #: the trees came from `_TREES`, shared with other blocks written the same way
    shared: bool = False


class _BlockError(Exception):
    """A block that cannot be analysed at all, with the diagnostic saying why."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def _block_keyword(block: Block) -> str:
    if block.keyword:
        return block.keyword
    words = block.code.split(None, 1)
    return words[0] if words else ""


def _problem(error: template.TemplateSyntaxError, mapper: _Mapper, block: Block) -> Diagnostic:
    """A located diagnostic from the template reader's error (positions are in the unwrapped code)."""
    span = block.span if error.lineno is None else mapper.span(error.lineno, error.col, error.end_lineno, error.end_col)
    return make(CODES[error.code], error.message, span, error.hint)


class _Trees(NamedTuple):
    """What parsing a block's unwrapped code gives, wherever the block is written: the statements
    (or the `{% %}` header), their nodes (`template.walk`) and the E602 problem, positioned in the
    code."""

    body: list[ast.stmt]
    header: ast.If | ast.For | ast.While | None
    nodes: list[ast.AST]
    problem: template.TemplateSyntaxError | None
    #: `template.certain_block` of it
    certain: bool


#: (kind, keyword, unwrapped code) → its `_Trees`, for the blocks a build writes again and again
#: (`{% endif %}`, `{% else %}`, `{{ turn.text }}`): each is parsed once per process, those used
#: last kept, at most 4,096 blocks and 40,000 nodes (about 10 MB). Sharing is sound because nothing the analysis keeps holds a node (only spans
#: and names), no tree is changed by it, and the trees handed to the section's compile check
#: (which takes them over) are never kept nor taken from here (`analyse`); a block written twice in
#: one section gets its own trees the second time (the analysis tells nodes apart by `id`). An
#: OrderedDict, because the least recently used entry goes first: `next(iter(d))` on a plain dict
#: steps over every entry deleted before it, and a section of 40,000 distinct blocks evicted
#: 36,000 of them that way, the square of that in steps.
_TREES: OrderedDict[tuple[str, str, str], _Trees] = OrderedDict()
_TREES_MAX = 4096
_TREES_NODES = 40_000
#: the nodes `_TREES` holds (recounted when it was cleared)
_kept_nodes = 0
#: longer code is parsed every time (it is rare, and a kept tree holds its text's worth of nodes)
_TREES_CODE_MAX = 1000


def _read(kind: str, keyword: str, text: str) -> _Trees:
    if kind == "stmt":
        header = template.parse_header(keyword, text)
        nodes = [] if header is None else template.walk((header,))
        return _Trees([], header, nodes, None, template.certain_block(kind, keyword, header, nodes))
    parsed = template.parse_code(kind, text)
    nodes = template.walk(parsed.body)
    return _Trees(parsed.body, None, nodes, parsed.problem, template.certain_block(kind, keyword, parsed.body, nodes))


def _parse_block(block: Block, seen: set[tuple[str, str, str]] | None = None) -> _Parsed:
    """Read one block with the same functions the runtime's code generator uses. `seen`: the
    `_TREES` keys already used in this section (then the trees may come from `_TREES`)."""
    src = block.code_span.src or block.span.src
    text, positions = template.unwrap(block.code, block.code_span.start)
    keyword = _block_keyword(block) if block.kind == "stmt" else ""
    mapper = _Mapper(src, text, positions, block.span)
    key: tuple[str, str, str] | None = None
    trees = None
    if seen is not None and len(text) <= _TREES_CODE_MAX:
        key = (block.kind, keyword, text)
        if key in seen:
            key = None  # written twice in the section: trees of its own
        else:
            seen.add(key)
            trees = _TREES.get(key)
            if trees is not None:
                _TREES.move_to_end(key)  # used last: forgotten last
    shared = trees is not None
    if trees is None:
        try:
            trees = _read(block.kind, keyword, text)
        except template.TemplateSyntaxError as error:
            raise _BlockError(_problem(error, mapper, block)) from None
    problem = _problem(trees.problem, mapper, block) if trees.problem is not None else None
    return _Parsed(block, mapper, trees.body, trees.header, keyword, problem, trees.nodes, key, trees, shared)


def _keep(entries: Iterable[_Parsed | None]) -> None:
    """Keep the trees of a section's blocks that were parsed here, for the blocks written the same
    way later (`_TREES`)."""
    global _kept_nodes
    if not _TREES:
        _kept_nodes = 0
    for entry in entries:
        if entry is None or entry.key is None or entry.shared or entry.trees is None:
            continue
        old = _TREES.get(entry.key)
        _TREES[entry.key] = entry.trees
        _kept_nodes += len(entry.trees.nodes) + 1 - (len(old.nodes) + 1 if old is not None else 0)
    while _TREES and (len(_TREES) > _TREES_MAX or _kept_nodes > _TREES_NODES):
        _kept_nodes -= len(_TREES.popitem(last=False)[1].nodes) + 1


# ---------------------------------------------------------------------------------------------
# The analyser

# Work-list operations of the expression walker.
_VISIT, _CALLEE, _BIND, _WALRUS, _SAVE, _ALT, _JOIN2, _RESTORE, _ENTER, _EXIT, _GUARD, _UNGUARD = range(12)

_NO_NAMES: frozenset[str] = frozenset()


def _truth(test: ast.AST | None) -> tuple[frozenset[str], frozenset[str], list[ast.Name]]:
    """What a test proves: (names not None when it is true, names not None when it is false, the
    names it reads None-safely: tested for truth or compared with None, which a None passes).
    `x`, `not x`, `x is not None`, `x != None`, `and`/`or` of those; anything else proves
    nothing. Bounded: a deeper test proves nothing past 64 levels."""
    if test is None:
        return _NO_NAMES, _NO_NAMES, []
    # post-order over the test's not / and / or structure, with an explicit stack
    results: dict[int, tuple[frozenset[str], frozenset[str], list[ast.Name]]] = {}
    stack: list[tuple[ast.AST, int, bool]] = [(test, 0, False)]
    while stack:
        node, depth, done = stack.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            results[id(node)] = (frozenset((node.id,)), _NO_NAMES, [node])
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and depth < 64:
            if not done:
                stack += [(node, depth, True), (node.operand, depth + 1, False)]
                continue
            true, false, safe = results[id(node.operand)]
            results[id(node)] = (false, true, safe)
        elif isinstance(node, ast.BoolOp) and depth < 64:
            if not done:
                stack.append((node, depth, True))
                stack.extend((value, depth + 1, False) for value in node.values)
                continue
            parts = [results[id(value)] for value in node.values]
            safe = [name for part in parts for name in part[2]]
            trues = [part[0] for part in parts]
            falses = [part[1] for part in parts]
            if isinstance(node.op, ast.And):  # true: every part true; false: some part false
                results[id(node)] = (frozenset().union(*trues), frozenset.intersection(*falses), safe)
            else:
                results[id(node)] = (frozenset.intersection(*trues), frozenset().union(*falses), safe)
        elif (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq))
            and any(isinstance(side, ast.Constant) and side.value is None for side in (node.left, node.comparators[0]))
        ):
            name = next((side for side in (node.left, node.comparators[0]) if isinstance(side, ast.Name)), None)
            if name is None:
                results[id(node)] = (_NO_NAMES, _NO_NAMES, [])
                continue
            proven = frozenset((name.id,))
            not_none = isinstance(node.ops[0], (ast.IsNot, ast.NotEq))
            results[id(node)] = (proven if not_none else _NO_NAMES, _NO_NAMES if not_none else proven, [name])
        else:
            results[id(node)] = (_NO_NAMES, _NO_NAMES, [])
    return results[id(test)]


class _Analyser:
    def __init__(self, template_kills: frozenset[str]) -> None:
        self.template = _Scope("template", None, frozenset(), frozenset(), frozenset(), False, template_kills)
        self.scope = self.template
        self._state = _State(_PROMPLATE_LOCALS, True)
        #: names bound since `_state` was last read: straight-line assignments join the state in
        #: one copy when it is next read, not one copy each (N assignments were N² work)
        self._pending: dict[str, None] = {}  # in binding order (`mark`); never emptied in place
        self.loops: list[_Loop] = []
        #: free uses: name → True while every use so far was as a callee
        self.uses: dict[str, bool] = {}
        #: free uses: name → where it is first read
        self.first: dict[str, Span] = {}
        #: free uses: every read, in order (name, where)
        self.every: list[tuple[str, Span]] = []
        #: names assigned anywhere in the template scope (a helper must never be assigned)
        self.assigned: set[str] = set()
        self.diagnostics: list[Diagnostic] = []
        self._reported: set[tuple[str, int, int]] = set()
        #: `nonlocal` names that refer to the render function's own variables: Python refuses
        #: them unless the template assigns them somewhere, known only at the end
        self.template_nonlocals: list[tuple[str, Span]] = []
        self.mapper: _Mapper | None = None
        self.block: Block | None = None
        #: template-level functions → the free names their bodies read (name, span, callee, nargs),
        #: resolved when the function is read (called, or passed on) rather than when it is defined
        self.deferred_reads: dict[str, list[tuple[str, Span | None, bool, int]]] = {}
        #: where the body of the template-level function being analysed records its free reads
        self.collector: list[tuple[str, Span | None, bool, int]] | None = None
        #: names a test proves not None here (a stack of what each enclosing test proves), the
        #: Name nodes read None-safely, and the inputs read at least once neither way
        self.guards: list[frozenset[str]] = []
        self.guarded: frozenset[str] = _NO_NAMES
        self.safe: set[int] = set()
        self.unguarded: set[str] = set()
        #: the Name nodes read where a test proves them not None
        self.guarded_nodes: set[int] = set()

    # -- diagnostics ----------------------------------------------------------------------------

    def report(self, code: Code, message: str, node: ast.AST | None, hint: str | None = None) -> None:
        span: Span | None
        if node is not None and self.mapper is not None:
            span = self.mapper.node_span(node)
        else:
            span = self.block.span if self.block is not None else None
        key = (code, span.start if span else -1, span.line if span else -1)
        if key in self._reported:
            return
        self._reported.add(key)
        self.diagnostics.append(make(code, message, span, hint))

    # -- names ------------------------------------------------------------------------------------

    @property
    def state(self) -> _State:
        """The flow state here (the names bound since it was last read joined in)."""
        if self._pending:
            self._state = _State(self._state.names | self._pending.keys(), self._state.live)
            self._pending = {}
        return self._state

    @state.setter
    def state(self, value: _State) -> None:
        self._state = value
        if self._pending:
            self._pending = {}

    def _bound(self, name: str) -> None:
        if name not in self._state.names:
            self._pending[name] = None

    def mark(self) -> tuple[_State, dict[str, None], int]:
        """Where the flow is now, without copying the names (`at` makes it a state again): a
        block's analysis keeps one in case it has to start over, and N blocks copied N names each."""
        return self._state, self._pending, len(self._pending)

    @staticmethod
    def at(mark: tuple[_State, dict[str, None], int]) -> _State:
        state, pending, count = mark  # the first `count` names of a dict only ever appended to
        return _State(state.names | frozenset(islice(pending, count)), state.live) if count else state

    def push_guard(self, names: frozenset[str]) -> None:
        self.guards.append(names)
        self.guarded = self.guarded | names if names else self.guarded

    def pop_guard(self) -> None:
        if self.guards:
            self.guards.pop()
            self.guarded = frozenset().union(*self.guards) if self.guards else _NO_NAMES

    def test(self, node: ast.AST | None) -> tuple[frozenset[str], frozenset[str]]:
        """Walk a test (an `if`/`while` header): its None-safe reads do not make an input required.
        Returns what it proves when true and when false."""
        true, false, safe = _truth(node)
        self.safe.update(id(name) for name in safe)
        if node is not None:
            self.expr(node)
        return true, false

    def use(self, name: str, callee: bool, span: Span | None = None, guarded: bool = False) -> None:
        if not guarded and name not in self.guarded:
            self.unguarded.add(name)
        self.uses[name] = self.uses.get(name, True) and callee
        if span is not None:
            self.every.append((name, span))
            if name not in self.first:
                self.first[name] = span

    def read(self, name: str, node: ast.AST, callee: bool = False, nargs: int = 0) -> None:
        """A load of `name` in the current scope: resolve it as Python would, and if it reaches
        the template scope unassigned it is a free use."""
        scope: _Scope = self.scope
        names = self._state.names
        pending: Collection[str] = self._pending  # the current scope's, not yet joined
        deferred = False
        while True:
            if (name in names or name in pending) and not (deferred and name in scope.kills):
                if scope.kind == "template":
                    self._reached(name, node, deferred, callee, nargs)
                return
            if scope.kind == "template":
                break
            if scope.kind == "class":
                # a name assigned in a class body but not yet is looked up in the globals (LOAD_NAME)
                if name in scope.locals or name in scope.globals:
                    break
                names, scope = scope.def_names, scope.parent  # type: ignore[assignment]
                pending = _NO_NAMES
                continue
            # function or comprehension
            if name in scope.locals:
                return  # a local never reads an input (it is UnboundLocalError at worst)
            if name in scope.globals:
                break
            deferred = deferred or scope.deferred
            names, parent, pending = scope.def_names, scope.parent, _NO_NAMES
            while parent is not None and parent.kind == "class":  # class bodies are not enclosing scopes
                names, parent = parent.def_names, parent.parent
            if parent is None:
                break
            scope = parent
        if deferred and self.collector is not None and name not in BUILTIN_NAMES and name not in self.template.kills:
            # Late binding: a function body reads its free names when it is called, so whether
            # this one is an input is decided at each call of the function (see `_calls`).
            self.collector.append((name, self._span_of(node), callee, nargs))
            return
        self.free(name, node, callee, nargs)

    def _span_of(self, node: ast.AST) -> Span | None:
        return self.mapper.node_span(node) if self.mapper is not None else None

    def _reached(self, name: str, node: ast.AST, deferred: bool, callee: bool, nargs: int) -> None:
        """`name` resolved to the template's own binding. Read from a function body, that is a
        reference the function carries to its calls; read directly, the bound value may be a
        function the template defined, whose body runs now (as far as inference can tell)."""
        if name not in self.deferred_reads:
            return
        if deferred and self.collector is not None:
            self.collector.append((name, self._span_of(node), callee, nargs))
        else:  # read directly, or by a lambda or generator that may run any time from now on
            self._calls(name, self.state.names)

    def _calls(self, function: str, names: frozenset[str]) -> None:
        """A template-level function may run here (it is read while `names` are definitely bound):
        every name its body reads, and the bodies of the functions it reads, resolve against
        `names`; what is not bound there is an input. Iterative; each function once per call."""
        seen = {function}
        work = list(self.deferred_reads.get(function, ()))
        while work:
            name, span, callee, _ = work.pop()
            if name in names:
                if name in self.deferred_reads and name not in seen:
                    seen.add(name)
                    work.extend(self.deferred_reads[name])
                continue
            self.use(name, callee, span)  # guarded by what the call site's tests prove

    def free(self, name: str, node: ast.AST, callee: bool = False, nargs: int = 0) -> None:
        if name in BUILTIN_NAMES:
            if name in _DYNAMIC and not (name == "vars" and callee and nargs):
                self.report(
                    codes.DYNAMIC_NAMES,
                    f"`{name}` reads variables by name at run time; the inputs of this template cannot be inferred completely",
                    node,
                    "pass the values explicitly, or declare them with `/// input:`",
                )
            return
        span = self.mapper.node_span(node) if self.mapper is not None else None
        if name in self.guarded:
            self.guarded_nodes.add(id(node))
        self.use(name, callee, span, guarded=id(node) in self.safe and not callee)

    def _enclosing_function(self) -> _Scope:
        scope = self.scope
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent
        return scope

    def bind(self, name: str) -> None:
        self._bound(name)
        if self.scope.kind == "template" or name in self.scope.globals:
            self.assigned.add(name)

    def bind_walrus(self, name: str) -> None:
        self._bound(name)
        owner = self._enclosing_function()
        if owner.kind == "template" or name in owner.globals:
            self.assigned.add(name)

    def unbind(self, name: str) -> None:
        self.state = _State(self.state.names - {name}, self.state.live)

    def dead(self) -> None:
        self.state = _State(self.state.names, False)

    # -- expressions (iterative) ------------------------------------------------------------------

    def expr(self, node: ast.AST) -> None:
        self._run([(_VISIT, node)])

    def target(self, node: ast.AST) -> None:
        self._run([(_BIND, node)])

    def _run(self, work: list[tuple[int, ast.AST | None]]) -> None:
        saved: list[_State] = []
        frames: list[tuple[_Scope, _State]] = []
        while work:
            op, node = work.pop()
            if op == _VISIT:
                self._visit(node, work)  # type: ignore[arg-type]
            elif op == _CALLEE:
                func = node.func  # type: ignore[union-attr]
                if isinstance(func, ast.Name):
                    self.read(func.id, func, callee=True, nargs=len(node.args) + len(node.keywords))  # type: ignore[union-attr]
                else:
                    work.append((_VISIT, func))
            elif op == _BIND:
                self._bind_target(node, work)  # type: ignore[arg-type]
            elif op == _WALRUS:
                if isinstance(node, ast.Name):
                    self.bind_walrus(node.id)
            elif op == _SAVE:
                saved.append(self.state)
            elif op == _ALT:  # end of the `if` arm of a conditional: keep it, restart from the test
                start = saved.pop()
                saved.append(start)
                saved.append(self.state)
                self.state = start
            elif op == _JOIN2:
                arm = saved.pop()
                saved.pop()
                self.state = _join((arm, self.state))
            elif op == _RESTORE:  # short-circuited operands may not have run: their walruses don't count
                restored = saved.pop()
                self.state = _State(restored.names, self.state.live)
            elif op == _ENTER:
                frames.append((self.scope, self.state))
                self._enter(node)  # type: ignore[arg-type]
            elif op == _EXIT:
                self.scope, outer = frames.pop()
                self.state = _State(outer.names, outer.live)
            elif op == _GUARD:
                self.push_guard(node)  # type: ignore[arg-type]
            elif op == _UNGUARD:
                self.pop_guard()

    def _enter(self, node: ast.AST) -> None:
        if isinstance(node, ast.Lambda):
            params = _param_names(node.args)
            local = params | _scan([node.body]).bound
            self.scope = _Scope("function", self.scope, self.state.names, local, frozenset(), True, frozenset())
            self.state = _State(params, True)
        else:
            targets = _target_names(g.target for g in node.generators)  # type: ignore[attr-defined]
            deferred = isinstance(node, ast.GeneratorExp)  # a generator's body runs when consumed
            self.scope = _Scope(
                "comprehension", self.scope, self.state.names, targets, frozenset(), deferred, frozenset()
            )
            self.state = _State(frozenset(), self.state.live)

    def _visit(self, node: ast.AST, work: list[tuple[int, ast.AST | None]]) -> None:
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                self.bind(node.id)
            else:
                self.read(node.id, node)
        elif isinstance(node, ast.Call):
            for keyword in reversed(node.keywords):
                work.append((_VISIT, keyword.value))
            for arg in reversed(node.args):
                work.append((_VISIT, arg))
            work.append((_CALLEE, node))
        elif isinstance(node, ast.Attribute):
            if node.attr in _FRAME_ATTRS:
                self.report(
                    codes.DYNAMIC_NAMES,
                    f"`.{node.attr}` inspects frames; the inputs of this template cannot be inferred completely",
                    node,
                )
            work.append((_VISIT, node.value))
        elif isinstance(node, ast.NamedExpr):
            work.append((_WALRUS, node.target))
            work.append((_VISIT, node.value))
        elif isinstance(node, ast.BoolOp):
            # every operand but the last is tested for truth; each runs only when the ones before
            # it were true (`and`) or false (`or`), which is what guards it
            proven: list[frozenset[str]] = []
            for value in node.values[:-1]:
                true, false, safe = _truth(value)
                self.safe.update(id(name) for name in safe)
                proven.append(true if isinstance(node.op, ast.And) else false)
            work.append((_RESTORE, None))
            for index in range(len(node.values) - 1, 0, -1):
                work.append((_UNGUARD, None))
                work.append((_VISIT, node.values[index]))
                work.append((_GUARD, frozenset().union(*proven[:index])))  # type: ignore[arg-type]
            work.append((_SAVE, None))
            work.append((_VISIT, node.values[0]))
        elif isinstance(node, ast.Compare):
            # in `a < b < c`, `c` runs only when `a < b`
            work.append((_RESTORE, None))
            for value in reversed(node.comparators[1:]):
                work.append((_VISIT, value))
            work.append((_SAVE, None))
            if node.comparators:
                work.append((_VISIT, node.comparators[0]))
            work.append((_VISIT, node.left))
        elif isinstance(node, ast.IfExp):
            true, false, safe = _truth(node.test)
            self.safe.update(id(name) for name in safe)
            work.extend(
                [
                    (_JOIN2, None),
                    (_UNGUARD, None),
                    (_VISIT, node.orelse),
                    (_GUARD, false),  # type: ignore[list-item]
                    (_ALT, None),
                    (_UNGUARD, None),
                    (_VISIT, node.body),
                    (_GUARD, true),  # type: ignore[list-item]
                    (_SAVE, None),
                    (_VISIT, node.test),
                ]
            )
        elif isinstance(node, ast.Lambda):
            work.append((_EXIT, None))
            work.append((_VISIT, node.body))
            work.append((_ENTER, node))
            for default in reversed(_default_exprs(node.args)):  # defaults run outside, at creation
                work.append((_VISIT, default))
        elif isinstance(node, _COMPREHENSIONS):
            work.append((_EXIT, None))
            if isinstance(node, ast.DictComp):
                work.append((_VISIT, node.value))
                work.append((_VISIT, node.key))
            else:
                work.append((_VISIT, node.elt))
            for index in range(len(node.generators) - 1, -1, -1):
                gen = node.generators[index]
                for cond in reversed(gen.ifs):
                    work.append((_VISIT, cond))
                work.append((_BIND, gen.target))
                if index:
                    work.append((_VISIT, gen.iter))
            work.append((_ENTER, node))
            work.append((_VISIT, node.generators[0].iter))  # the first iterable runs outside
        elif isinstance(node, ast.Dict):
            for key, value in reversed(list(zip(node.keys, node.values, strict=False))):
                work.append((_VISIT, value))
                if key is not None:
                    work.append((_VISIT, key))
        elif isinstance(node, (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)):
            return
        else:
            children = list(ast.iter_child_nodes(node))
            for child in reversed(children):
                work.append((_VISIT, child))

    def _bind_target(self, node: ast.AST, work: list[tuple[int, ast.AST | None]]) -> None:
        if isinstance(node, ast.Name):
            self.bind(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for element in reversed(node.elts):
                work.append((_BIND, element))
        elif isinstance(node, ast.Starred):
            work.append((_BIND, node.value))
        elif isinstance(node, ast.Subscript):  # `d[k] = v` reads d and k, binds nothing
            work.append((_VISIT, node.slice))
            work.append((_VISIT, node.value))
        elif isinstance(node, ast.Attribute):  # `x.a = v` reads x, binds nothing
            work.append((_VISIT, node.value))
        else:
            work.append((_VISIT, node))

    # -- statements (recursive: bounded by Python's 100 indentation levels) -----------------------

    def stmts(self, body: Sequence[ast.stmt]) -> None:
        for statement in body:
            self.stmt(statement)

    def stmt(self, node: ast.stmt) -> None:
        handler = _STATEMENTS.get(type(node))
        if handler is not None:
            handler(self, node)
        else:  # a statement kind this Python grew later: read everything it mentions
            self.expr(node)

    def _expr_stmt(self, node: ast.Expr) -> None:
        self.expr(node.value)

    def _assign(self, node: ast.Assign) -> None:
        self.expr(node.value)
        for target in node.targets:
            self.target(target)

    def _aug_assign(self, node: ast.AugAssign) -> None:
        target = node.target
        if isinstance(target, ast.Name):  # `g += 1` reads g first
            self.read(target.id, target)
            self.expr(node.value)
            self.bind(target.id)
        else:
            self.target(target)
            self.expr(node.value)

    def _ann_assign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.expr(node.value)
        if self.scope.kind == "class":  # annotations only run in class (and module) bodies
            self.expr(node.annotation)
        if node.value is not None:
            self.target(node.target)
        elif not isinstance(node.target, ast.Name):  # `x.a: int` still evaluates x
            self.target(node.target)

    def _delete(self, node: ast.Delete) -> None:
        stack: list[ast.expr] = list(reversed(node.targets))
        while stack:
            target = stack.pop()
            if isinstance(target, ast.Name):
                self.read(target.id, target)  # deleting a name needs it to exist
                self.unbind(target.id)
            elif isinstance(target, (ast.Tuple, ast.List)):
                stack.extend(reversed(target.elts))
            else:
                self.target(target)

    def _if(self, node: ast.If) -> None:
        true, false = self.test(node.test)
        start = self.state
        self.push_guard(true)
        self.stmts(node.body)
        self.pop_guard()
        after_body = self.state
        self.state = start
        self.push_guard(false)
        self.stmts(node.orelse)
        self.pop_guard()
        self.state = _join((after_body, self.state))

    def _for(self, node: ast.For | ast.AsyncFor) -> None:
        self.expr(node.iter)
        before = self.state
        # Entry of every iteration: what held before the loop minus what the body may delete.
        head = _State(before.names - _kills(node.body), before.live)
        loop = _Loop()
        self.loops.append(loop)
        self.state = head
        self.target(node.target)
        self.stmts(node.body)
        self.loops.pop()
        # The loop may run zero times: the target and the body's assignments are not definite.
        self.state = _join((before, self.state, *loop.continues))
        self.stmts(node.orelse)
        self.state = _join((self.state, *loop.breaks))

    def _while(self, node: ast.While) -> None:
        before = self.state
        self.state = _State(before.names - _kills(node.body), before.live)
        true, _ = self.test(node.test)
        after_test = self.state
        loop = _Loop()
        self.loops.append(loop)
        self.push_guard(true)
        self.stmts(node.body)
        self.pop_guard()
        self.loops.pop()
        # leaves normally when the test is false; `while True` never does
        self.state = _State(after_test.names, after_test.live and not _is_true_constant(node.test))
        self.stmts(node.orelse)
        self.state = _join((self.state, *loop.breaks))

    def _with(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.expr(item.context_expr)
            if item.optional_vars is not None:
                self.target(item.optional_vars)
        entry = self.state
        self.stmts(node.body)
        # A context manager may swallow an exception raised anywhere in the body, so the body's
        # own assignments are not definite afterwards (the `as` targets are: bound before it).
        self.state = _join((self.state, _State(entry.names - _kills(node.body), entry.live)))

    def _marks(self) -> list[tuple[_Loop, int, int]]:
        return [(loop, len(loop.breaks), len(loop.continues)) for loop in self.loops]

    @staticmethod
    def _rewrite_jumps(
        marks: list[tuple[_Loop, int, int]],
        change: Callable[[_State], _State],
        until: list[tuple[_Loop, int, int]] | None = None,
    ) -> None:
        """Apply `change` to the break/continue states recorded since `marks` (up to `until`):
        leaving a handler, a `finally` or a case by a jump has the same effects as falling out."""
        ends = {id(loop): (b, c) for loop, b, c in until} if until is not None else {}
        for loop, breaks, continues in marks:
            end_b, end_c = ends.get(id(loop), (len(loop.breaks), len(loop.continues)))
            loop.breaks[breaks:end_b] = [change(s) for s in loop.breaks[breaks:end_b]]
            loop.continues[continues:end_c] = [change(s) for s in loop.continues[continues:end_c]]

    def _try(self, node: ast.Try) -> None:
        entry = self.state
        marks = self._marks()
        self.stmts(node.body)
        after_body = self.state
        # An exception can come from any point of the body: only what held before it, less
        # anything the body deletes, is definite in a handler.
        raised = _State(entry.names - _kills(node.body), entry.live)
        ends: list[_State] = []
        self.state = after_body
        self.stmts(node.orelse)
        ends.append(self.state)
        for handler in node.handlers:
            self.state = raised
            if handler.type is not None:
                self.expr(handler.type)
            handler_marks = self._marks()
            if handler.name:
                self.bind(handler.name)
            self.stmts(handler.body)
            if handler.name:  # Python deletes the name however the handler is left
                name = handler.name
                self.unbind(name)
                self._rewrite_jumps(handler_marks, partial(_forget, name))
            ends.append(self.state)
        normal = _join(ends)
        if not node.finalbody:
            self.state = normal
            return
        before_final = self._marks()
        # `finally` runs on every way out; only what no part of the statement deletes is sure.
        self.state = _State(entry.names - _kills([node]), entry.live)
        self.stmts(node.finalbody)
        gained = self.state.names
        lost = _kills(node.finalbody)
        final_live = self.state.live

        def through_finally(state: _State) -> _State:
            return _State((state.names - lost) | gained, state.live and final_live)

        # Jumps out of the body, handlers or else also run `finally` (not jumps from inside it).
        self._rewrite_jumps(marks, through_finally, until=before_final)
        self.state = through_finally(normal)

    def _match(self, node: ast.Match) -> None:
        self.expr(node.subject)
        start = self.state
        ends: list[_State] = []
        falls_through = True
        for case in node.cases:
            self.state = start
            case_marks = self._marks()
            captures = self._pattern(case.pattern)
            for name in sorted(captures):
                self.bind(name)
            if case.guard is not None:
                self.expr(case.guard)
            self.stmts(case.body)

            # captures count as bound inside their case only (promptc's rule; Python keeps them, so this
            # only ever adds inputs)
            def drop(state: _State, fresh: frozenset[str] = captures - start.names) -> _State:
                return _State(state.names - fresh, state.live)

            ends.append(drop(self.state))
            self._rewrite_jumps(case_marks, drop)
            if _irrefutable(case):
                falls_through = False
                break
        if falls_through:
            ends.append(start)
        self.state = _join(ends)

    def _pattern(self, pattern: ast.pattern) -> frozenset[str]:
        """Reads the value expressions of a pattern; returns the names it captures."""
        captures: set[str] = set()
        stack: list[ast.AST] = [pattern]
        while stack:
            item = stack.pop()
            if isinstance(item, ast.MatchValue):
                self.expr(item.value)
            elif isinstance(item, ast.MatchClass):
                self.expr(item.cls)
                stack.extend(item.patterns)
                stack.extend(item.kwd_patterns)
            elif isinstance(item, ast.MatchMapping):
                for key in item.keys:
                    self.expr(key)
                stack.extend(item.patterns)
                if item.rest:
                    captures.add(item.rest)
            elif isinstance(item, ast.MatchSequence):
                stack.extend(item.patterns)
            elif isinstance(item, ast.MatchOr):
                stack.extend(item.patterns)
            elif isinstance(item, ast.MatchStar):
                if item.name:
                    captures.add(item.name)
            elif isinstance(item, ast.MatchAs):
                if item.pattern is not None:
                    stack.append(item.pattern)
                if item.name:
                    captures.add(item.name)
        return frozenset(captures)

    def _raise(self, node: ast.Raise) -> None:
        if node.exc is not None:
            self.expr(node.exc)
        if node.cause is not None:
            self.expr(node.cause)
        self.dead()

    def _return(self, node: ast.Return) -> None:
        if node.value is not None:
            self.expr(node.value)
        self.dead()  # at the template's top level this ends rendering: promplate allows it

    def _break(self, node: ast.Break) -> None:
        if not self.loops:
            self.report(codes.PYTHON_SYNTAX, "Python syntax error: 'break' outside loop", node)
        elif self.state.live:
            self.loops[-1].breaks.append(self.state)
        self.dead()

    def _continue(self, node: ast.Continue) -> None:
        if not self.loops:
            self.report(codes.PYTHON_SYNTAX, "Python syntax error: 'continue' not properly in loop", node)
        elif self.state.live:
            self.loops[-1].continues.append(self.state)
        self.dead()

    def _assert(self, node: ast.Assert) -> None:
        self.expr(node.test)
        if node.msg is not None:  # the message only runs when the assertion fails
            after_test = self.state
            self.expr(node.msg)
            self.state = after_test

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:  # `import a.b` binds `a`
            self.bind(alias.asname or alias.name.split(".", 1)[0])

    def _import_from(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name == "*":
                self.report(
                    codes.PYTHON_SYNTAX,
                    "Python syntax error: `from … import *` is only allowed at module level "
                    "(a template compiles into a function)",
                    node,
                )
                continue
            if node.module in ("builtins", "inspect", "sys") and alias.name in (_DYNAMIC | _FRAME_ATTRS):
                self.report(
                    codes.DYNAMIC_NAMES,
                    f"`{alias.name}` reads variables by name; the inputs cannot be inferred completely",
                    node,
                )
            self.bind(alias.asname or alias.name)

    def _global(self, node: ast.Global) -> None:
        # At the top level names already fall back to inputs; in functions `_scan` handled it.
        return

    def _nonlocal(self, node: ast.Nonlocal) -> None:
        if self.scope.kind == "template":
            self.report(
                codes.PYTHON_SYNTAX, f"Python syntax error: no binding for nonlocal '{node.names[0]}' found", node
            )

    def _pass(self, node: ast.stmt) -> None:
        return

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            self.expr(decorator)
        for value in _default_exprs(node.args):  # annotations are never evaluated (postponed)
            self.expr(value)
        scan = _scan(node.body)
        params = _param_names(node.args)
        local = (scan.bound | params) - scan.globals - scan.nonlocals
        scope = _Scope("function", self.scope, self.state.names, local, scan.globals, True, scan.kills)
        for name in sorted(scan.nonlocals):
            self._check_nonlocal(name, node)
        outer = (self.scope, self.state, self.loops, self.collector)
        top_level = self.scope.kind == "template"
        if top_level:
            self.collector = []
        self.scope, self.state, self.loops = scope, _State(params, True), []
        try:
            self.stmts(node.body)
        finally:
            reads = self.collector
            self.scope, self.state, self.loops, self.collector = outer
        self.bind(node.name)
        if top_level:
            self.deferred_reads[node.name] = reads or []
            if node.decorator_list:  # a decorator may call the function right away
                self._calls(node.name, self.state.names)

    def _check_nonlocal(self, name: str, node: ast.AST) -> None:
        """`nonlocal name` needs an enclosing function that binds it; class bodies don't count."""
        scope: _Scope | None = self.scope
        while scope is not None and scope.kind != "template":
            if scope.kind == "function" and name in scope.locals:
                return
            scope = scope.parent
        span = self.mapper.node_span(node) if self.mapper is not None else None
        if span is None and self.block is not None:
            span = self.block.span
        if span is not None:
            self.template_nonlocals.append((name, span))

    def _class(self, node: ast.ClassDef) -> None:
        for decorator in node.decorator_list:
            self.expr(decorator)
        for base in node.bases:
            self.expr(base)
        for keyword in node.keywords:
            self.expr(keyword.value)
        scan = _scan(node.body)
        local = scan.bound - scan.globals - scan.nonlocals
        scope = _Scope("class", self.scope, self.state.names, local, scan.globals, False, scan.kills)
        outer = (self.scope, self.state, self.loops, self.collector)
        top_level = self.scope.kind == "template"
        if top_level:
            # the methods' bodies run when they are called, after the class is bound: a method
            # that reads the class itself (`Cfg.sep`) reads the template's own name, not an input
            self.collector = []
        self.scope, self.state, self.loops = scope, _State(frozenset(), self.state.live), []
        try:
            self.stmts(node.body)
        finally:
            reads = self.collector
            self.scope, self.state, self.loops, self.collector = outer
        self.bind(node.name)
        if top_level:
            self.deferred_reads[node.name] = reads or []
            # a method may already run in the class body or a decorator: resolve them now (with the
            # class bound), and again wherever the class is read
            self._calls(node.name, self.state.names)


def _forget(name: str, state: _State) -> _State:
    """`state` without `name` bound (an `except … as name` handler deletes it however it is left)."""
    return _State(state.names - {name}, state.live)


_STATEMENTS: dict[type[ast.stmt], Callable[[_Analyser, Any], None]] = {
    ast.Expr: _Analyser._expr_stmt,
    ast.Assign: _Analyser._assign,
    ast.AugAssign: _Analyser._aug_assign,
    ast.AnnAssign: _Analyser._ann_assign,
    ast.Delete: _Analyser._delete,
    ast.If: _Analyser._if,
    ast.For: _Analyser._for,
    ast.AsyncFor: _Analyser._for,
    ast.While: _Analyser._while,
    ast.With: _Analyser._with,
    ast.AsyncWith: _Analyser._with,
    ast.Try: _Analyser._try,
    ast.Match: _Analyser._match,
    ast.Raise: _Analyser._raise,
    ast.Return: _Analyser._return,
    ast.Break: _Analyser._break,
    ast.Continue: _Analyser._continue,
    ast.Assert: _Analyser._assert,
    ast.Import: _Analyser._import,
    ast.ImportFrom: _Analyser._import_from,
    ast.Global: _Analyser._global,
    ast.Nonlocal: _Analyser._nonlocal,
    ast.Pass: _Analyser._pass,
    ast.FunctionDef: _Analyser._function,
    ast.AsyncFunctionDef: _Analyser._function,
    ast.ClassDef: _Analyser._class,
}
if hasattr(ast, "TryStar"):  # `except*` (3.11+) flows like `except`
    _STATEMENTS[ast.TryStar] = _Analyser._try


# ---------------------------------------------------------------------------------------------
# The `{% %}` structure, walked with an explicit stack


class _TIf:
    __slots__ = ("block", "cond", "ends", "has_else", "falsy")

    def __init__(self, block: Block, cond: _State) -> None:
        self.block = block
        self.cond = cond  # the state when every test so far was false
        self.ends: list[_State] = []
        self.has_else = False
        #: the names proven not None when every test so far was false (`{% if not x %}…{% else %}`)
        self.falsy: frozenset[str] = _NO_NAMES


class _TLoop:
    __slots__ = ("block", "keyword", "before", "after_test", "endless", "loop", "in_else")

    def __init__(self, block: Block, keyword: str, before: _State, loop: _Loop) -> None:
        self.block = block
        self.keyword = keyword
        self.before = before  # `for`: the state once the iterable is evaluated
        self.after_test = before  # `while`: the state after the test at the loop head
        self.endless = False  # `{% while True %}`
        self.loop = loop
        self.in_else = False


def _flatten(items: Iterable[Item | Spliced]) -> Iterator[Item]:
    """Items in order, with spliced partials inlined (iteratively: includes may nest deeply)."""
    stack: list[Iterator[Item | Spliced]] = [iter(items)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, Spliced):
                stack.append(iter(item.items))
                break
            yield item
        else:
            stack.pop()


def _structure_kills(
    events: Sequence[Item], parsed: dict[int, _Parsed | None]
) -> tuple[dict[int, frozenset[str]], frozenset[str]]:
    """For each `{% for/while %}` (by event index), the names its body may delete; and every name
    deleted anywhere at the template's top level (for closures, which run later)."""
    stack: list[tuple[int, set[str]]] = []
    result: dict[int, frozenset[str]] = {}
    everything: set[str] = set()

    def close() -> None:
        index, kills = stack.pop()
        result[index] = frozenset(kills)
        if stack:
            stack[-1][1].update(kills)

    for index, item in enumerate(events):
        if not isinstance(item, Block):
            continue
        if item.kind == "stmt":
            keyword = _block_keyword(item)
            if keyword in ("if", "for", "while"):
                stack.append((index, set()))
            elif keyword.startswith("end") and stack:
                close()
            continue
        entry = parsed.get(index)
        if entry is None or ("del" not in item.code and "except" not in item.code):
            continue  # only `del x` and `except E as x` delete a name
        kills = _kills(entry.body)
        everything.update(kills)
        if stack:
            stack[-1][1].update(kills)
    while stack:
        close()
    return result, frozenset(everything)


class _Template:
    """Drives the analyser over one section's items."""

    def __init__(self, events: Sequence[Item], parsed: dict[int, _Parsed | None], problems: dict[int, Diagnostic]):
        self.events = events
        self.parsed = parsed
        self.problems = problems
        self.loop_kills, all_kills = _structure_kills(events, parsed)
        self.all_kills = all_kills
        self.an = _Analyser(all_kills)
        self.frames: list[_TIf | _TLoop] = []
        self.too_deep = False
        self.shape_uses: list[ShapeUse] = []

    def run(self) -> None:
        an = self.an
        for index, item in enumerate(self.events):
            if isinstance(item, Placeholder):
                if item.root:
                    an.use(item.root, False, item.span)  # `${}` reads the inputs directly, never template locals
                    attrs = tuple(item.path.split(".")[1:])
                    guarded = item.root in an.guarded
                    self.shape_uses.append(ShapeUse(item.root, "path", attrs, item.span, guarded))
                continue
            if not isinstance(item, Block):
                continue
            problem = self.problems.get(index)
            if problem is not None:
                an.diagnostics.append(problem)
            entry = self.parsed.get(index)
            an.block = item
            an.mapper = entry.mapper if entry is not None else None
            before = an.mark()
            try:
                if item.kind == "stmt":
                    self.statement(index, item, entry)
                elif entry is not None:
                    self.code(item, entry)
            except (RecursionError, MemoryError):
                an.diagnostics.append(make(codes.TOO_DEEP, "block nested too deeply to analyse", item.span))
                self.recover(an.at(before), entry)
            except Exception as error:  # never let one odd block stop the build
                an.diagnostics.append(
                    make(
                        codes.DYNAMIC_NAMES,
                        f"template block could not be analysed completely ({type(error).__name__})",
                        item.span,
                    )
                )
                self.recover(an.at(before), entry)
        # Frames still open here are the parser's E204 (the `{% %}` structure is checked once, by
        # `template.Structure`); the analysis only has to stay sound on a broken structure.

    def recover(self, before: _State, entry: _Parsed | None) -> None:
        """After a failure inside a block: back to the template scope, and be conservative: every
        name the block mentions is an input, and nothing it assigns counts as assigned."""
        an = self.an
        an.scope = an.template
        an.loops = [f.loop for f in self.frames if isinstance(f, _TLoop) and not f.in_else]
        if entry is None:
            an.state = before
            return
        nodes: list[ast.AST] = list(entry.body)
        if entry.header is not None:
            nodes.append(entry.header)
        for node in nodes:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and sub.id not in BUILTIN_NAMES and sub.id not in before.names:
                    an.use(sub.id, False, an.mapper.node_span(sub) if an.mapper is not None else None)
        an.state = _State(before.names - _kills(entry.body), before.live)

    def depth_check(self, block: Block, extra_indent: int = 0, extra_loops: int = 0) -> None:
        if self.too_deep:
            return
        depth = len(self.frames) + extra_indent
        loops = sum(1 for f in self.frames if isinstance(f, _TLoop) and not f.in_else) + extra_loops
        if depth > _MAX_INDENT:
            message = f"template nesting too deep: {depth} levels of indentation (Python allows {_MAX_INDENT} here)"
        elif loops > _MAX_STATIC_BLOCKS:
            message = f"{loops} nested loops: Python allows at most {_MAX_STATIC_BLOCKS} in one function"
        else:
            return
        self.too_deep = True
        self.an.diagnostics.append(make(codes.TOO_DEEP, message, block.span, "flatten the template"))

    def code(self, block: Block, entry: _Parsed) -> None:
        indent, loops = _nesting(entry.body)
        self.depth_check(block, indent, loops)
        self.an.stmts(entry.body)
        last = entry.body[-1] if block.kind == "expr" and entry.body else None
        if isinstance(last, ast.Expr) and isinstance(last.value, ast.Name):
            name = last.value.id
            if name in BUILTIN_NAMES and name not in self.an.state.names:
                self.an.report(
                    codes.BUILTIN_AS_TEXT,
                    f"`{{{{ {name} }}}}` outputs Python's builtin `{name}`, not a value: it renders as an error",
                    last.value,
                    f"name the value something else (`{name}_text`), or call it: `{name}(…)`",
                )

    def statement(self, index: int, block: Block, entry: _Parsed | None) -> None:
        an = self.an
        keyword = entry.keyword if entry is not None else _block_keyword(block)
        header = entry.header if entry is not None else None
        top = self.frames[-1] if self.frames else None
        if keyword == "if":
            true, false = an.test(header.test if isinstance(header, ast.If) else None)
            frame = _TIf(block, an.state)
            frame.falsy = false
            self.frames.append(frame)
            an.push_guard(true)  # each frame holds one guard: what its current branch proves
            self.depth_check(block)
        elif keyword == "elif":
            if isinstance(top, _TIf) and not top.has_else:
                top.ends.append(an.state)
                an.state = top.cond
                an.pop_guard()
                an.push_guard(top.falsy)  # the test runs only when every test before was false
                true, false = an.test(header.test if isinstance(header, ast.If) else None)
                an.pop_guard()
                an.push_guard(top.falsy | true)
                top.falsy = top.falsy | false
                top.cond = an.state
            # else: a misplaced `{% elif %}` is the parser's E209
        elif keyword == "else":
            if isinstance(top, _TIf) and not top.has_else:
                top.ends.append(an.state)
                an.state = top.cond
                top.has_else = True
                an.pop_guard()
                an.push_guard(top.falsy)
            elif isinstance(top, _TLoop) and not top.in_else:
                self.leave_loop(top)
                top.in_else = True
                an.pop_guard()
                an.push_guard(_NO_NAMES)
            # else: a misplaced `{% else %}` is the parser's E209
        elif keyword in ("for", "while"):
            self.open_loop(index, block, keyword, header)
        elif keyword.startswith("end"):
            if top is None:
                return  # the parser's E205
            self.frames.pop()  # a mismatched end tag is the parser's E206; it closes the innermost
            an.pop_guard()
            if isinstance(top, _TIf):
                top.ends.append(an.state)
                if not top.has_else:
                    top.ends.append(top.cond)
                an.state = _join(top.ends)
            else:
                if not top.in_else:
                    self.leave_loop(top)
                an.state = _join((an.state, *top.loop.breaks))
        # any other tag never reaches the analysis: the parser refuses it (E208)

    def open_loop(self, index: int, block: Block, keyword: str, header: ast.AST | None) -> None:
        an = self.an
        # Every iteration starts from what held before the loop, less what the body may delete.
        kills = self.loop_kills.get(index, self.all_kills)
        loop = _Loop()
        if keyword == "for":
            if isinstance(header, ast.For):
                iterated = header.iter
                if isinstance(iterated, ast.Name) and iterated.id not in an.state.names:
                    span = an.mapper.node_span(iterated) if an.mapper is not None else None
                    self.shape_uses.append(ShapeUse(iterated.id, "iter", (), span, iterated.id in an.guarded))
                an.expr(header.iter)
            frame = _TLoop(block, keyword, an.state, loop)
            an.push_guard(_NO_NAMES)
            an.state = _State(an.state.names - kills, an.state.live)
            an.loops.append(loop)
            if isinstance(header, ast.For):
                an.target(header.target)  # bound in the body only: the loop may run zero times
        else:
            frame = _TLoop(block, keyword, an.state, loop)
            an.state = _State(an.state.names - kills, an.state.live)
            true: frozenset[str] = _NO_NAMES
            if isinstance(header, ast.While):
                true, _ = an.test(header.test)
                frame.endless = _is_true_constant(header.test)
            an.push_guard(true)
            frame.after_test = an.state
            an.loops.append(loop)
        self.frames.append(frame)
        self.depth_check(block)

    def leave_loop(self, frame: _TLoop) -> None:
        """The loop's normal exit (before any `else`): the iterable ran out / the test was false."""
        an = self.an
        if frame.keyword == "for":
            an.state = _join((frame.before, an.state, *frame.loop.continues))
        else:
            an.state = _State(frame.after_test.names, frame.after_test.live and not frame.endless)
        for position in range(len(an.loops) - 1, -1, -1):
            if an.loops[position] is frame.loop:
                del an.loops[position]
                break

    def result(self) -> tuple[frozenset[str], frozenset[str], tuple[Diagnostic, ...]]:
        an = self.an
        for name, span in an.template_nonlocals:
            if name not in an.assigned:
                an.diagnostics.append(
                    make(codes.PYTHON_SYNTAX, f"Python syntax error: no binding for nonlocal '{name}' found", span)
                )
        helpers = frozenset(name for name, only_called in an.uses.items() if only_called and name not in an.assigned)
        inputs = frozenset(an.uses) - helpers
        return inputs, helpers, tuple(an.diagnostics)


def _attribute_uses(entries: Iterable[_Parsed | None], guarded: frozenset[int] = frozenset()) -> list[ShapeUse]:
    """`name.attr` in template code where `name` is bound nowhere in the section (no assignment,
    parameter or loop target of any scope): the attribute of an input itself (kind "attr")."""
    bound: set[str] = set()
    found: list[tuple[_Parsed, ast.Attribute, str]] = []
    named = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    aliased = (ast.alias, ast.ExceptHandler, ast.MatchAs, ast.MatchStar)
    for entry in entries:
        if entry is None:
            continue
        for node in entry.nodes:  # the statements, then the header: each breadth first, as ast.walk
            cls = node.__class__
            if cls is ast.Name:
                if node.ctx.__class__ is not ast.Load:  # type: ignore[attr-defined]
                    bound.add(node.id)  # type: ignore[attr-defined]
            elif cls is ast.Attribute:
                value = node.value  # type: ignore[attr-defined]
                if value.__class__ is ast.Name:
                    found.append((entry, node, value.id))  # type: ignore[arg-type]
            elif cls is ast.arg:
                bound.add(node.arg)  # type: ignore[attr-defined]
            elif cls in named:
                bound.add(node.name)  # type: ignore[attr-defined]
            elif cls in aliased:
                name = getattr(node, "asname", None) or getattr(node, "name", None)
                if isinstance(name, str):
                    bound.add(name.split(".", 1)[0])
    return [
        ShapeUse(name, "attr", (node.attr,), entry.mapper.node_span(node), id(node.value) in guarded)
        for entry, node, name in found
        if name not in bound
    ]


def _placeholders_only(events: Sequence[Item]) -> Analysis:
    """`analyse` of a section without template blocks (most sections): what `_Template.run` and
    `result` come to when only placeholders read names, every read a plain, unguarded input."""
    first: dict[str, Span] = {}
    every: list[tuple[str, Span]] = []
    shapes: list[ShapeUse] = []
    for item in events:
        if item.__class__ is Placeholder and item.root:
            root, span = item.root, item.span
            every.append((root, span))
            first.setdefault(root, span)
            shapes.append(ShapeUse(root, "path", tuple(item.path.split(".")[1:]), span, False))
    return Analysis(frozenset(first), frozenset(), False, (), tuple(sorted(first.items())), tuple(every), tuple(shapes))


def analyse(items: Sequence[Item | Spliced]) -> Analysis:
    """Infer the inputs and helpers of one section's items. Never raises for any input:
    problems come back as diagnostics."""
    events = list(_flatten(items))
    if not any(item.__class__ is Block for item in events):
        return _placeholders_only(events)
    key, starts, src = _section_key(events)
    if key is not None and src is not None:
        found = _SECTIONS.pop(key, None)
        if found is not None:
            _SECTIONS[key] = found  # used last: forgotten last
            return _relocated(found, starts, src)
    result = _analyse_template(events)
    if key is not None and result.surely_compiles and not result.diagnostics:
        _SECTIONS[key] = _kept(result, starts)
        if len(_SECTIONS) > _SECTIONS_MAX:
            del _SECTIONS[next(iter(_SECTIONS))]
    return result


#: where a span stood in a kept analysis: (index of the block or placeholder it lies in, its start
#: relative to that item's, its length)
_Place = tuple[int, int, int]


class _Kept(NamedTuple):
    """An analysis as `_SECTIONS` keeps it: its facts, with each span as a `_Place` (no span, so
    nothing of the file it came from is kept alive), and no trees (no compile check wants them)."""

    inputs: frozenset[str]
    helpers: frozenset[str]
    optional: frozenset[str]
    first_uses: tuple[tuple[str, _Place], ...]
    all_uses: tuple[tuple[str, _Place], ...]
    shape_uses: tuple[tuple[ShapeUse, _Place | None], ...]


#: A section's analysis by what it depends on (`_section_key`), for the sections written the same
#: way elsewhere (a build's prompts repeat their dynamic sections: the same loops over the same
#: inputs): the 1,024 used last. The analysis of a section moved in its file is the same analysis
#: with every span moved along with the item it lies in (each comes from one block's code or one
#: placeholder), so a kept one is handed out with its spans placed where the section now stands
#: (`_relocated`). Kept only when it reported nothing and its compile check is skipped (its trees
#: are never handed over), and only for a section of one file.
_SECTIONS: dict[tuple[object, ...], _Kept] = {}
_SECTIONS_MAX = 1024
#: a section whose blocks and placeholders are longer is analysed every time
_SECTION_KEY_MAX = 4000


def _section_key(events: Sequence[Item]) -> tuple[tuple[object, ...] | None, list[int], SourceText | None]:
    """What a section's analysis depends on (each block's kind, keyword, code and where its code
    starts and it ends relative to it, each placeholder's path and length, in order), with where
    each stands; None when the section mixes files or is too long to keep."""
    key: list[object] = []
    starts: list[int] = []
    src: SourceText | None = None
    size = 0
    for item in events:
        if item.__class__ is Block:
            span, code_span = item.span, item.code_span
            if code_span.src is not span.src:
                return None, starts, None
            key.append((item.kind, item.keyword, item.code, code_span.start - span.start, span.end - span.start))
            size += len(item.code)
        elif item.__class__ is Placeholder:
            span = item.span
            key.append((item.path, span.end - span.start))
            size += len(item.path)
        else:
            continue
        if span.src is None or (src is not None and span.src is not src) or size > _SECTION_KEY_MAX:
            return None, starts, None
        src = span.src
        starts.append(span.start)
    return tuple(key), starts, src


def _kept(result: Analysis, starts: list[int]) -> _Kept:
    """`result`, the analysis of a section whose blocks and placeholders start at `starts`, as
    `_SECTIONS` keeps it."""

    def place(span: Span) -> _Place:
        index = bisect_right(starts, span.start) - 1
        return index, span.start - starts[index], span.end - span.start

    return _Kept(
        result.inputs,
        result.helpers,
        result.optional,
        tuple((name, place(span)) for name, span in result.first_uses),
        tuple((name, place(span)) for name, span in result.all_uses),
        tuple(
            (use, None) if use.span is None else (use._replace(span=None), place(use.span)) for use in result.shape_uses
        ),
    )


def _relocated(kept: _Kept, starts: list[int], src: SourceText) -> Analysis:
    """The analysis `kept` for the same section with its blocks and placeholders at `starts` in
    `src`: every span placed with the item it lies in."""

    def span(place: _Place) -> Span:
        index, offset, length = place
        start = starts[index] + offset
        return src.span(start, start + length)

    return Analysis(
        kept.inputs,
        kept.helpers,
        True,
        (),
        tuple((name, span(place)) for name, place in kept.first_uses),
        tuple((name, span(place)) for name, place in kept.all_uses),
        tuple(use if place is None else use._replace(span=span(place)) for use, place in kept.shape_uses),
        kept.optional,
        (),
        True,
    )


def _analyse_template(events: Sequence[Item]) -> Analysis:
    """`analyse` of a section's items, spliced partials inlined."""
    parsed: dict[int, _Parsed | None] = {}
    problems: dict[int, Diagnostic] = {}
    has_template = False
    seen: set[tuple[str, str, str]] = set()
    for index, item in enumerate(events):
        if not isinstance(item, Block):
            continue
        has_template = True
        try:
            entry = _parse_block(item, seen)
        except _BlockError as error:
            problems[index] = error.diagnostic
            parsed[index] = None
            continue
        except (RecursionError, MemoryError):
            problems[index] = make(codes.TOO_DEEP, "block nested too deeply to parse", item.span)
            parsed[index] = None
            continue
        except Exception as error:  # a bug of ours must not stop the build
            problems[index] = make(
                codes.DYNAMIC_NAMES,
                f"template block could not be analysed ({type(error).__name__}: {error})",
                item.span,
            )
            parsed[index] = None
            continue
        parsed[index] = entry
        if entry.problem is not None:
            problems[index] = entry.problem
    walker = _Template(events, parsed, problems)
    walker.run()
    inputs, helpers, diagnostics = walker.result()
    # a loop over a name the template assigns anywhere may be over its own value: no evidence
    uses = [u for u in walker.shape_uses if u.kind == "path" or u.name not in walker.an.assigned]
    uses += _attribute_uses(parsed.values(), frozenset(walker.an.guarded_nodes))
    entries = list(parsed.values())
    blocks = tuple(None if e is None else e.header if e.block.kind == "stmt" else e.body for e in entries)
    surely = (
        has_template
        and all(e is not None for e in entries)
        and template.surely_compiles(
            (e.block.kind, e.keyword, e.trees is not None and e.trees.certain) for e in entries if e is not None
        )
    )
    if surely:  # no compile check takes these trees over: they may be shared
        _keep(entries)
    else:  # the check parses the shared blocks itself, and takes the others over
        blocks = tuple(None if e is not None and e.shared else b for e, b in zip(entries, blocks, strict=True))
    return Analysis(
        inputs,
        helpers,
        has_template,
        diagnostics,
        tuple(sorted(walker.an.first.items())),
        tuple(walker.an.every),
        tuple(uses),
        frozenset(inputs - walker.an.unguarded),
        blocks,
        surely,
    )
