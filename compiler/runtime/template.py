"""The one reader and code generator of promptc's template blocks (promplate syntax, docs/language.md).

The parser (`syntax/parse.py`), the inference (`analysis/inference.py`), the build and the runtime
(`runtime/render.py`) all read `{{ }}`, `{# #}` and `{% %}` blocks, check their `{% %}` structure and
parse their Python through this module, so the template language has one definition. Standard
library only: applications ship it with the runtime (no lark). The language's facts — delimiters,
tags, limits — live in `language.py`.

What is here, and who uses it:

* `read_block(raw)` — a block as written → kind, code, trim dashes, `{% %}` keyword (the parser,
  and `scan`).
* `scan(text)` — *artifact template text* → tokens: literal text (escapes resolved, trim dashes
  applied), `${path}` placeholders, blocks (the runtime, the build). Linear time.
* `Structure` — the `{% %}` nesting rules, fed one tag at a time, reporting E204/E205/E206/E208/
  E209/E210 problems (the parser over a whole file, `generate` over one section).
* `unwrap(code, base)` / `offset_at(...)` — promplate's `dedent(code).strip()` with the source
  offset of every character kept, and the way back from a (line, column) to an offset (inference,
  `generate`).
* `parse_header(keyword, text)` / `parse_code(kind, text)` — a block's Python → `ast`, with the
  block rules and positioned `TemplateSyntaxError`s (inference, `generate`); `walk(trees)` — their
  nodes, once, for the inference's uses and `certain_block`.
* `generate(tokens)` → `Program`, `compile_program(program)` → code object, `compile_section(text)`
  (cached) and `run`/`execute` — a section's template → one Python module and its output (the
  runtime renders with them; the build compiles exactly the same module to catch what CPython's
  compiler rejects, e.g. `def f(a, a)`, before an artifact ships: `check_section(text, parsed)`,
  which takes over the block trees the inference already parsed and keeps nothing but the fact;
  `surely_compiles(blocks)` (of `certain_block`s) says when a section's blocks cannot fail there,
  so the check is skipped).

Semantics of the generated code (`generate`). A section compiles into one module::

    def __promptc_section__():
        global a, b          # every name the template binds at its top level
        __append__('literal')                   # literal text
        __append__(__promptc_input__('a.b'))    # ${a.b}: always the inputs, never template names
        ...statements of {{ }} / {# #}; a {{ }} ends with __append__(expression)...
        if c:                # {% if c %} … {% elif d %} … {% else %} … {% endif %}, for, while
            ...
    __promptc_section__()

It runs with the inputs as its globals (`execute`). The body is a function, as in promplate, so a
top-level `{# return #}` ends the section's output there. Every name the template binds at its top
level (assignment, augmented assignment, `for`/`with`/`except` targets, imports, `def`/`class`,
walrus targets including those in top-level comprehensions, `match` captures, `del`) is declared
`global`, so the template keeps module-level name semantics: a name assigned on some paths only
(`{% if c %}{# x = 1 #}{% endif %}{{ x }}`) falls back to the input of that name instead of raising
`UnboundLocalError` (the deliberate difference from promplate; the compiler lists such a name as an
input). Refused at compile time, located at the node: a `return` with a value, `yield` at the
template's top level (it would turn the wrapper into a generator), `nonlocal` at the top level, and
everything CPython's compiler refuses in a function (`break` outside a loop, `await`, `import *`…).

Differences from today's module-level code that follow from the function (all match promplate and
the inference): `from m import *` is refused; top-level annotations `x: T = v` are not evaluated
(`x = v`; `x: T` alone does nothing) and no `__annotations__` is created; `locals()`/`vars()` at
the top level see no template names and `exec("y = 1")` binds nothing (both W603 in the
inference); a top-level `def f`'s `__qualname__` is `__promptc_section__.<locals>.f`. Template code
is compiled with `from __future__ import annotations` in effect, as it always was (the runtime
inherited it): annotations in `def` signatures are never evaluated.

Line numbers. Token *i* of a section owns the generated lines `first_line … first_line +
line_count - 1` (`first_line` = 1 + the line counts of the tokens before it; a literal, a
placeholder and a `{% %}` tag take one line, a `{{ }}`/`{# #}` block one per line of its unwrapped
code). `Program.origins` keeps, per token, its offset in the section text and the unwrap positions
of its code, so any (line, column) CPython reports maps back to a token and an offset in the
section text (`Program.locate`), and a traceback line to a line of the section (`section_line`).
The wrapper's own `def`, `global` and call sit on line 1.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import hashlib
import linecache
import re
import types
import warnings
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from functools import lru_cache
from types import CodeType
from typing import Any, Generic, Literal, NamedTuple, TypeVar

from ..facts import codes
from ..facts.codes import Code
from ..facts.language import BLOCK_KINDS, CLOSERS, CONTINUERS, DELIMITERS, JINJA_TAGS, MAX_NESTING, OPENERS
from ..facts.printable import text_of
from ..facts.records import dataclass

__all__ = [
    "APPEND",
    "PARTS",
    "LOOKUP",
    "FUNCTION",
    "BEFORE_SEPARATOR",
    "BEFORE_SECTION",
    "BEFORE_FILE_END",
    "BEFORE_SECTION_END",
    "BlockKind",
    "TokenKind",
    "TemplateSyntaxError",
    "BlockParts",
    "read_block",
    "Token",
    "scan",
    "Problem",
    "Structure",
    "unwrap",
    "offset_at",
    "parse_header",
    "ParsedCode",
    "parse_code",
    "Origin",
    "Program",
    "generate",
    "compile_program",
    "CompiledSection",
    "compile_section",
    "check_section",
    "surely_compiles",
    "certain_block",
    "walk",
    "execute",
    "run",
]

#: Names the generated code uses. `__append__` and `__parts__` are promplate's own, so templates
#: written for promplate keep working.
APPEND = "__append__"
PARTS = "__parts__"
LOOKUP = "__promptc_input__"
#: what a `{{ }}` block's value goes through: `__promptc_output__(value, token_index)`, which
#: refuses to print a function or a class as text (see `execute`)
OUTPUT = "__promptc_output__"
#: The function a section's template compiles into.
FUNCTION = "__promptc_section__"

#: `Structure.barrier` / `Structure.end` reasons: they end the E204 message "… is never closed <reason>".
BEFORE_SEPARATOR = "before the role separator"
BEFORE_SECTION = "before the next section"
BEFORE_FILE_END = "before the end of the file"
BEFORE_SECTION_END = "before the end of the section"

BlockKind = Literal["expr", "exec", "stmt"]
TokenKind = Literal["lit", "ph", "expr", "exec", "stmt"]

#: Parts of CPython's messages that mean "nested too deeply" rather than "wrong": E210, not E601.
_TOO_DEEP = ("too many nested parentheses", "too many levels of indentation", "too many statically nested")
#: Template code is compiled as it always was: with `from __future__ import annotations`.
_COMPILE_FLAGS = __future__.annotations.compiler_flag
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class TemplateSyntaxError(Exception):
    """A template block that cannot compile, with where and why.

    `lineno`/`col`/`end_lineno`/`end_col` locate the problem in the text that was parsed: the
    unwrapped code of the block (`unwrap`), or the header text for `parse_header`. `lineno` is
    1-based, `col` is 0-based and counts characters (code points) of that line — ast node columns,
    which count UTF-8 bytes, are converted; SyntaxError columns, which are 1-based, are shifted.
    They are None when Python gave no position (map those to the whole block). `offset_at` turns
    them into a source offset.

    Errors raised by `generate`, `compile_program` and `compile_section` are also *located* in the
    section text: `token` (index into the tokens), `offset`/`end_offset` (into the section text) and
    `line` (1-based line of the section text); their `lineno`/`col` are then within the token's code.

    `code` is the diagnostic code (`codes.PYTHON_SYNTAX`, `codes.EXPR_BLOCK_NOT_EXPRESSION` for the
    `{{ }}` rules, `codes.TOO_DEEP`, or a structure code from `Structure`); `too_deep` marks
    `TOO_DEEP` ("nested too deeply for Python").
    """

    def __init__(
        self,
        message: str,
        lineno: int | None = None,
        col: int | None = None,
        end_lineno: int | None = None,
        end_col: int | None = None,
        *,
        code: Code = codes.PYTHON_SYNTAX,
        hint: str | None = None,
        too_deep: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.lineno = lineno
        self.col = col
        self.end_lineno = end_lineno
        self.end_col = end_col
        self.code = code
        self.hint = hint
        self.too_deep = too_deep
        self.token: int | None = None
        self.offset: int | None = None
        self.end_offset: int | None = None
        self.line: int | None = None

    def __str__(self) -> str:
        return self.message


# ---------------------------------------------------------------------------------------------
# Blocks


@dataclass(frozen=True, slots=True)
class BlockParts:
    """One block as written (`{{- x -}}`), read: what it is, its code, and its trim dashes."""

    kind: BlockKind
    #: the inner text without the delimiters and the trim dashes, as written (not unwrapped)
    code: str
    #: index of `code` within the raw block (2, or 3 after a left trim dash)
    code_offset: int
    trim_left: bool
    trim_right: bool
    #: `{% %}` only: the first word of the stripped code, split on whitespace, `(` or `:`; else ""
    keyword: str = ""


_KEYWORD_END = re.compile(r"[\s(:]")


def read_block(raw: str) -> BlockParts:
    """Read a raw block (delimiters included): `{{ e }}`, `{# code #}`, `{% tag %}`, with trim dashes.

    The dash rule (language.py): a `-` right after the opener trims left; a `-` right before the
    closer trims right unless it is the left dash itself; one dash per side at most. Used by the
    parser for every block it meets and by `scan`. Raises ValueError for text that is not a block.
    A `BlockParts` is immutable: the parts of a short block are read once per process (the 4,096
    read last), since the same blocks come back in prompt after prompt."""
    return _read_short(raw) if len(raw) <= 1000 else _read_block(raw)


def _read_block(raw: str) -> BlockParts:
    opener = raw[:2]
    kind = BLOCK_KINDS.get(opener)
    if kind is None or len(raw) < 4 or not raw.endswith(DELIMITERS[opener]):
        raise ValueError(f"not a template block: {raw[:40]!r}")
    inner = raw[2:-2]
    trim_left = inner.startswith("-")
    trim_right = inner.endswith("-") and len(inner) > (1 if trim_left else 0)
    code = inner[(1 if trim_left else 0) : len(inner) - (1 if trim_right else 0)]
    keyword = ""
    if kind == "stmt":
        stripped = code.strip()
        keyword = _KEYWORD_END.split(stripped, maxsplit=1)[0] if stripped else ""
    return BlockParts(kind, code, 2 + trim_left, trim_left, trim_right, keyword)  # type: ignore[arg-type]


_read_short = lru_cache(maxsize=4096)(_read_block)


# ---------------------------------------------------------------------------------------------
# Artifact template text → tokens


@dataclass(frozen=True, slots=True)
class Token:
    """One piece of a section's template text.

    `text`: literal text (escapes resolved, trim dashes applied), the placeholder's path, or the
    block's code (`block.code`). `pos`: offset in the section text (a literal: of its first kept
    character, or of the backslash of a leading escape). `line`: 1-based line of `pos`. `raw`: the
    placeholder or block exactly as written ("" for literal text). `block`: the read block."""

    kind: TokenKind
    text: str
    pos: int = 0
    line: int = 1
    raw: str = ""
    block: BlockParts | None = None

    @property
    def trim_left(self) -> bool:
        return self.block is not None and self.block.trim_left

    @property
    def trim_right(self) -> bool:
        return self.block is not None and self.block.trim_right

    @property
    def end(self) -> int:
        """Offset just past a placeholder or block in the section text. For literal text, `pos +
        len(text)`, which is not where it ends in the section text when it holds escapes."""
        return self.pos + (len(self.raw) if self.raw else len(self.text))


#: Every place where a token may start: an escaped opener, `${`, `{{`, `{#`, `{%`.
_CANDIDATE = re.compile(r"\\(?=\$\{|\{\{|\{#|\{%)|\$\{|\{[{#%]")


class _Next:
    """The first occurrence of `needle` at or after `start`, for non-decreasing starts: each part of
    the text is searched once, which keeps `scan` linear however many openers lack a closer."""

    __slots__ = ("_find", "_needle", "_at")

    def __init__(self, text: str, needle: str) -> None:
        self._find = text.find
        self._needle = needle
        self._at = -2  # not searched yet

    def __call__(self, start: int) -> int:
        at = self._at
        if at >= start or at == -1:
            return at
        at = self._at = self._find(self._needle, start)
        return at


@lru_cache(maxsize=4096)
def scan(text: str) -> tuple[Token, ...]:
    """Artifact template text (one section's) → tokens, in order. Used by the runtime and the build.

    Left to right, at each position the first that applies: a backslash before an opener (a literal
    opener, merged into the literal text); `${…}` up to the first `}` on the same line (a
    placeholder: its path is not checked here); `{{ … }}` up to the first `}}` and `{# … #}` up to
    the first `#}`, across lines; `{% … %}` up to the first `%}` on the same line. An opener with
    no closer is literal text. Then trim dashes remove one whitespace character of the adjacent
    literal text (language.py). Exactly the tokens of the old runtime's `_TOKEN` regex, but linear
    time: that regex rescanned to the end of the text for every unterminated opener."""
    tokens: list[Token] = []
    literal: list[str] = []
    literal_at = 0
    line, line_at = 1, 0
    count = text.count

    def line_of(pos: int) -> int:  # positions asked for never decrease
        nonlocal line, line_at
        line += count("\n", line_at, pos)
        line_at = pos
        return line

    def flush() -> None:
        if literal:
            tokens.append(Token("lit", "".join(literal), literal_at, line_of(literal_at)))
            literal.clear()

    brace, newline = _Next(text, "}"), _Next(text, "\n")
    closers = {"{": _Next(text, "}}"), "#": _Next(text, "#}"), "%": _Next(text, "%}")}
    search = _CANDIDATE.search
    at = last = 0
    while (match := search(text, at)) is not None:
        start = match.start()
        first = text[start]
        if first == "\\":
            end = start + 3
        else:
            second = text[start + 1]
            close = (brace if first == "$" else closers[second])(start + 2)
            if close == -1 or (first == "$" or second == "%") and -1 < newline(start + 2) < close:
                at = start + 1  # unterminated here: literal text, look again one character on
                continue
            end = close + (1 if first == "$" else 2)
        if start > last:
            if not literal:
                literal_at = last
            literal.append(text[last:start])
        at = last = end
        if first == "\\":
            if not literal:
                literal_at = start
            literal.append(text[start + 1 : end])
            continue
        flush()
        raw = text[start:end]
        if first == "$":
            tokens.append(Token("ph", raw[2:-1], start, line_of(start), raw))
        else:
            parts = read_block(raw)
            tokens.append(Token(parts.kind, parts.code, start, line_of(start), raw, parts))
    if last < len(text):
        if not literal:
            literal_at = last
        literal.append(text[last:])
    flush()
    return _apply_trims(tokens)


def _apply_trims(tokens: list[Token]) -> tuple[Token, ...]:
    """`{{-` removes one whitespace character right before the block, `-}}` one right after, only
    from literal text of this section (promplate's `\\s{{-` / `-}}\\s`). Left to right, like
    promplate's tokenizer: `a -}} {{- b` removes the one space once."""
    out = tokens
    for i, tok in enumerate(out):
        if tok.block is None:
            continue
        if tok.block.trim_left and i > 0:
            prev = out[i - 1]
            if prev.kind == "lit" and prev.text[-1:].isspace():
                out[i - 1] = Token("lit", prev.text[:-1], prev.pos, prev.line)
        if tok.block.trim_right and i + 1 < len(out):
            nxt = out[i + 1]
            if nxt.kind == "lit" and nxt.text[:1].isspace():
                out[i + 1] = Token("lit", nxt.text[1:], nxt.pos + 1, nxt.line + (nxt.text[0] == "\n"))
    return tuple(t for t in out if t.kind != "lit" or t.text)


# ---------------------------------------------------------------------------------------------
# `{% %}` structure

W = TypeVar("W")


@dataclass(frozen=True, slots=True)
class Problem(Generic[W]):
    """A structure problem. `where` is the caller's object for the offending tag (the parser passes
    its Block node, `generate` a token index); `related` the one for the tag it relates to (the
    opener a closer does not match, or that already has its `else`)."""

    code: Code
    message: str
    where: W
    hint: str | None = None
    related: W | None = None


class _Open(Generic[W]):
    __slots__ = ("construct", "where", "in_else")

    def __init__(self, construct: str, where: W) -> None:
        self.construct = construct
        self.where = where
        self.in_else = False


class Structure(Generic[W]):
    """The `{% %}` nesting rules, with an explicit stack (no recursion, any depth).

    Feed it, in order, every `{% %}` tag (`tag`), every role separator or section directive
    (`barrier`: nothing may stay open across one), then `end()`. Each call returns the problems it
    found, each at the `where` the caller passed:

    * E204 an opener never closed (reported, innermost first, at the barrier or the end);
    * E205 an end tag with nothing open;
    * E206 an end tag that does not match the innermost open construct (which it then closes);
    * E208 an unknown tag;
    * E209 `elif` outside `if`, `else` outside `if`/`for`/`while`, or either after the construct's
      `else` (a second `else`, `elif` after `else`);
    * E210 nesting deeper than `max_nesting`: reported once, after which every call returns [].

    `position(where)` (optional) renders an opener's position for messages ("opened at 3:5")."""

    def __init__(self, *, max_nesting: int = MAX_NESTING, position: Callable[[W], str] | None = None) -> None:
        self.max_nesting = max_nesting
        self._position = position
        self._stack: list[_Open[W]] = []
        self._stopped = False

    @property
    def depth(self) -> int:
        """How many constructs are open."""
        return len(self._stack)

    @property
    def open(self) -> tuple[tuple[str, W], ...]:
        """The open constructs, outermost first: (construct, where of its opener)."""
        return tuple((frame.construct, frame.where) for frame in self._stack)

    @property
    def stopped(self) -> bool:
        """True once nesting went too deep (E210): the rest is not checked."""
        return self._stopped

    def _opened_at(self, where: W) -> str:
        return f" opened at {self._position(where)}" if self._position is not None else ""

    def tag(self, keyword: str, where: W, code: str = "") -> list[Problem[W]]:
        """One `{% %}` tag. `keyword` is `BlockParts.keyword`; `code`, the tag's stripped text, only
        words the E208 message when the keyword is empty (`{% (x) %}`)."""
        if self._stopped:
            return []
        stack = self._stack
        if keyword in OPENERS:
            if len(stack) >= self.max_nesting:
                self._stopped = True
                return [
                    Problem(
                        codes.TOO_DEEP,
                        f"`{{% %}}` blocks nested more than {self.max_nesting} deep",
                        where,
                        "flatten the template; Python cannot compile deeper nesting",
                    )
                ]
            stack.append(_Open(keyword, where))
            return []
        if keyword in CONTINUERS:
            allowed = CONTINUERS[keyword]
            top = stack[-1] if stack else None
            if top is None or top.construct not in allowed:
                return [
                    Problem(
                        codes.MISPLACED_CONTINUATION,
                        f"`{{% {keyword} %}}` outside {' / '.join(f'`{{% {a} %}}`' for a in allowed)}",
                        where,
                        "move it inside the block it belongs to",
                    )
                ]
            if top.in_else:
                if keyword == "elif":
                    message = f"`{{% elif %}}` after the `{{% else %}}` of `{{% if %}}`{self._opened_at(top.where)}"
                    hint = "`{% else %}` is the last branch: move the `{% elif %}` before it"
                else:
                    message = f"a second `{{% else %}}` in `{{% {top.construct} %}}`{self._opened_at(top.where)}"
                    hint = "a block takes at most one `{% else %}`"
                return [Problem(codes.MISPLACED_CONTINUATION, message, where, hint, top.where)]
            if keyword == "else":
                top.in_else = True
            return []
        if keyword in CLOSERS:
            construct = CLOSERS[keyword]
            if not stack:
                return [
                    Problem(
                        codes.CLOSES_NOTHING,
                        f"`{{% {keyword} %}}` closes nothing",
                        where,
                        "remove it, or open the block first",
                    )
                ]
            top = stack.pop()
            if top.construct != construct:
                # reported at the opening tag: that is the block left without its end
                closed_at = f" at {self._position(where)}" if self._position is not None else ""
                return [
                    Problem(
                        codes.MISMATCHED_CLOSE,
                        f"`{{% {top.construct} %}}` opened here is closed by `{{% {keyword} %}}`{closed_at}",
                        top.where,
                        f"close `{{% {top.construct} %}}` with `{{% end{top.construct} %}}` first",
                        where,
                    )
                ]
            return []
        shown = keyword or code
        word = shown.split(maxsplit=1)[0] if shown.split() else ""
        return [
            Problem(
                codes.UNKNOWN_TAG,
                f"unknown statement tag `{{% {shown} %}}`" if shown else "empty `{% %}` tag",
                where,
                JINJA_TAGS.get(word)
                or "`{% %}` holds if / elif / else / for / while and endif / endfor / endwhile; "
                "use `{# #}` for other statements",
            )
        ]

    def barrier(self, reason: str = BEFORE_SEPARATOR) -> list[Problem[W]]:
        """A role separator or a section directive: it closes nothing, so every open construct is
        E204 "… never closed <reason>" (innermost first), and the stack starts empty again."""
        if self._stopped:
            return []
        problems = [
            Problem(
                codes.BLOCK_NEVER_CLOSED,
                f"`{{% {frame.construct} %}}` opened here is never closed {reason}",
                frame.where,
                f"add `{{% end{frame.construct} %}}`",
            )
            for frame in reversed(self._stack)
        ]
        self._stack.clear()
        return problems

    def end(self, reason: str = BEFORE_FILE_END) -> list[Problem[W]]:
        """The end of the text: like a barrier."""
        return self.barrier(reason)


# ---------------------------------------------------------------------------------------------
# Block code → Python text with positions


def unwrap(code: str, base: int) -> tuple[str, list[int]]:
    """promplate's `textwrap.dedent(code).strip()`, with the source offset of every character kept.

    `base` is the offset of `code` in its text; `positions[i]` is the offset of `text[i]`, and
    `positions[len(text)]` the offset just past its last character (len(text) + 1 entries). Mirrors
    textwrap exactly: lines of only spaces/tabs become empty, the margin is the longest common
    leading run of spaces/tabs of the other non-empty lines, and it is cut from each line."""
    if "\n" not in code:  # one line (most blocks): dedent cuts a margin of the leading whitespace
        text = code.strip()
        first = base + len(code) - len(code.lstrip())
        return text, [*range(first, first + len(text)), first + len(text) if text else base]
    lines = code.split("\n")
    starts: list[int] = []
    offset = 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    margin: str | None = None
    for line in lines:
        if not line or not line.strip(" \t"):
            continue
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if margin is None:
            margin = indent
        else:
            i = 0
            for a, b in zip(margin, indent, strict=False):
                if a != b:
                    break
                i += 1
            margin = margin[:i]
    cut = len(margin or "")
    pieces: list[str] = []  # whole lines (less the margin), joined below: no loop per character
    positions: list[int] = []
    for number, (line, start) in enumerate(zip(lines, starts, strict=True)):
        if number:
            pieces.append("\n")
            positions.append(base + start - 1)
        if line and not line.strip(" \t"):
            continue  # whitespace-only line: dedent empties it
        skip = cut if line.startswith(margin or "") else 0
        pieces.append(line[skip:])
        positions.extend(range(base + start + skip, base + start + len(line)))
    joined = "".join(pieces)
    lead = len(joined) - len(joined.lstrip())
    text = joined.strip()
    kept = positions[lead : lead + len(text)]
    end = (kept[-1] + 1) if kept else (positions[lead] if lead < len(positions) else base + len(code.rstrip()))
    kept.append(end)
    return text, kept


def _char_col(line: str, byte_col: int) -> int:
    """A UTF-8 byte column of `line` (as ast nodes and compile() errors count) → a character column."""
    return len(line.encode("utf-8", "surrogatepass")[: max(0, byte_col)].decode("utf-8", errors="ignore"))


def _line_bounds(text: str, lineno: int) -> tuple[int, int] | None:
    """(start, end) indexes of 1-based line `lineno` of `text`, or None past the last line."""
    start = 0
    for _ in range(lineno - 1):
        newline = text.find("\n", start)
        if newline == -1:
            return None
        start = newline + 1
    end = text.find("\n", start)
    return start, (len(text) if end == -1 else end)


def offset_at(
    text: str, positions: Sequence[int], lineno: int | None, col: int | None, *, byte_col: bool = False
) -> int:
    """The source offset of (1-based `lineno`, 0-based `col`) in `text`, an `unwrap` result with its
    `positions`. Columns count characters unless `byte_col` (ast node columns); out-of-range
    positions clamp to the text (None or a line before the first → its start)."""
    if lineno is None or lineno < 1:
        return positions[0]
    bounds = _line_bounds(text, lineno)
    if bounds is None:
        return positions[len(text)]
    start, end = bounds
    col = max(0, col or 0)
    if byte_col:
        col = _char_col(text[start:end], col)
    return positions[start + min(col, end - start)]


# ---------------------------------------------------------------------------------------------
# Block code → ast


def _clamp(text: str, lineno: int, col: int) -> tuple[int, int]:
    """A (line, column) of a parse of `text` with synthetic text around it → one inside `text`."""
    if lineno < 1:
        return 1, 0
    bounds = _line_bounds(text, lineno)
    if bounds is None:
        last = text.rsplit("\n", 1)[-1]
        return text.count("\n") + 1, len(last)
    start, end = bounds
    return lineno, max(0, min(col, end - start))


def _parse(source: str, text: str, prefix_lines: int) -> ast.Module:
    """`ast.parse(source)`, where `source` is `text` after `prefix_lines` synthetic lines (and maybe
    followed by more); every failure becomes a TemplateSyntaxError positioned in `text`."""
    try:
        with warnings.catch_warnings():  # invalid escape sequences etc. are not our diagnostics
            warnings.simplefilter("ignore")
            return ast.parse(source, "<template>", "exec")
    except SyntaxError as error:
        message = str(error.msg or "invalid syntax")
        lineno = col = end_lineno = end_col = None
        if error.lineno is not None:
            # SyntaxError columns from the parser are 1-based and count characters
            lineno, col = _clamp(text, error.lineno - prefix_lines, (error.offset or 1) - 1)
            if error.end_lineno is not None and error.end_offset:
                end_lineno, end_col = _clamp(text, error.end_lineno - prefix_lines, error.end_offset - 1)
        if any(marker in message for marker in _TOO_DEEP):
            failure = TemplateSyntaxError(
                f"block nested too deeply for Python: {message}",
                lineno,
                col,
                end_lineno,
                end_col,
                code=codes.TOO_DEEP,
                too_deep=True,
            )
        else:
            failure = TemplateSyntaxError(f"Python syntax error: {message}", lineno, col, end_lineno, end_col)
        raise failure from None
    except (RecursionError, MemoryError):
        raise TemplateSyntaxError("block nested too deeply to parse", code=codes.TOO_DEEP, too_deep=True) from None
    except ValueError as error:  # e.g. NUL bytes
        raise TemplateSyntaxError(f"Python syntax error: {error}") from None


def _shift(nodes: Sequence[ast.AST], delta: int) -> None:
    """Move every node of the trees by `delta` lines (iteratively; `ast.increment_lineno` per tree)."""
    if not delta:
        return
    work: list[ast.AST] = list(nodes)
    while work:
        node = work.pop()
        if "lineno" in node._attributes:
            node.lineno = getattr(node, "lineno", 0) + delta  # type: ignore[attr-defined]
            end = getattr(node, "end_lineno", None)
            if end is not None:
                node.end_lineno = end + delta  # type: ignore[attr-defined]
        work.extend(ast.iter_child_nodes(node))


def _node_position(node: ast.AST, text: str) -> tuple[int | None, int | None, int | None, int | None]:
    """An ast node's (lineno, col, end_lineno, end_col) in `text`, columns in characters."""
    lineno = getattr(node, "lineno", None)
    if lineno is None:
        return None, None, None, None
    lines = text.split("\n")

    def char(line_number: int, byte_col: int) -> int:
        return _char_col(lines[line_number - 1], byte_col) if 1 <= line_number <= len(lines) else byte_col

    col = char(lineno, getattr(node, "col_offset", 0) or 0)
    end_lineno = getattr(node, "end_lineno", None)
    end_byte = getattr(node, "end_col_offset", None)
    if end_lineno is None or end_byte is None:
        return lineno, col, None, None
    return lineno, col, end_lineno, char(end_lineno, end_byte)


_HEADERS = (ast.If, ast.For, ast.While)
_HEADER_TYPES: dict[str, type[ast.stmt]] = {
    "if": ast.If,
    "elif": ast.If,
    "else": ast.If,
    "for": ast.For,
    "while": ast.While,
}


def parse_header(keyword: str, text: str) -> ast.If | ast.For | ast.While | None:
    """A `{% %}` tag's header → the statement it opens, for inference and `generate`.

    `text` is the tag's unwrapped code (`{% for x in y %}` → "for x in y"), parsed as promplate
    writes it: followed by `:` and an indented `pass`; `elif`/`else` after a synthetic `if 1: pass`.
    Returns the `ast.If` (if, elif), `ast.For` or `ast.While`, whose body is `[Pass]`; for `else` a
    synthetic `ast.If` whose `orelse` is `[Pass]`; None for end tags (their text is not checked).
    Node positions are relative to `text` (line 1 is the header; columns in UTF-8 bytes, as ast
    gives them). A header that is not exactly one such statement is refused, so `{% if a: b %}`
    can never smuggle in a second statement. Raises TemplateSyntaxError (E601, E210; E208 for an
    unknown keyword) positioned in `text`."""
    if keyword in CLOSERS:
        return None
    expected = _HEADER_TYPES.get(keyword)
    if expected is None:
        shown = keyword or text
        raise TemplateSyntaxError(
            f"unknown statement tag `{{% {shown} %}}`" if shown else "empty `{% %}` tag", code=codes.UNKNOWN_TAG
        )
    continuation = keyword in CONTINUERS
    prefix = "if 1: pass\n" if continuation else ""
    module = _parse(f"{prefix}{text}:\n pass\n", text, 1 if continuation else 0)
    body = module.body
    node: ast.AST | None = body[0] if len(body) == 1 else None
    if continuation and isinstance(node, ast.If):
        inner = node.orelse
        if keyword == "elif":
            node = inner[0] if len(inner) == 1 and isinstance(inner[0], ast.If) else None
        else:
            node = node if len(inner) == 1 and isinstance(inner[0], ast.Pass) else None
    ok = isinstance(node, expected)
    if ok and keyword != "else":
        inner_body = node.body  # type: ignore[union-attr]
        ok = len(inner_body) == 1 and isinstance(inner_body[0], ast.Pass) and not getattr(node, "orelse", None)
    if not ok:
        raise TemplateSyntaxError(f"malformed `{{% {keyword} %}}` header")
    if continuation:
        _shift([node], -1)  # type: ignore[list-item]
        if keyword == "else":  # the synthetic `if 1: pass` line is gone: put it on the header's line
            for sub in ast.walk(node):  # type: ignore[arg-type]
                if getattr(sub, "lineno", 1) < 1:
                    sub.lineno, sub.col_offset, sub.end_lineno, sub.end_col_offset = 1, 0, 1, 0  # type: ignore[attr-defined]
    return node  # type: ignore[return-value]


class ParsedCode(NamedTuple):
    """A `{{ }}` / `{# #}` block's statements, and the E602 problem of a `{{ }}` that breaks its
    rules (not raised: the inference still analyses the statements). Positions are in the text."""

    body: list[ast.stmt]
    problem: TemplateSyntaxError | None = None


def parse_code(kind: str, text: str) -> ParsedCode:
    """An `expr` (`{{ }}`) or `exec` (`{# #}`) block's unwrapped code → its statements.

    `{{ }}` rules (E602, returned as `problem`, positioned at the node): an empty `{{ }}`; a
    `{{ }}` that does not end in an expression (its value is the output); a one-line `{{ }}` holding
    several statements (promplate pastes a one-line block into `__append__(…)`, so it must be a
    single expression). Syntax errors raise TemplateSyntaxError (E601, or E210 when Python says
    the code is nested too deeply), positioned in `text`. Used by inference and `generate`."""
    body = _parse(text, text, 0).body
    problem: TemplateSyntaxError | None = None
    if kind == "expr":
        hint = "end it with the value to output, or use `{# #}` for statements"
        if not body:
            problem = TemplateSyntaxError("empty `{{ }}` block", code=codes.EXPR_BLOCK_NOT_EXPRESSION, hint=hint)
        elif not isinstance(body[-1], ast.Expr):
            problem = TemplateSyntaxError(
                "`{{ }}` block does not end in an expression",
                *_node_position(body[-1], text),
                code=codes.EXPR_BLOCK_NOT_EXPRESSION,
                hint=hint,
            )
        elif "\n" not in text and len(body) > 1:
            problem = TemplateSyntaxError(
                "a one-line `{{ }}` block must be a single expression",
                *_node_position(body[1], text),
                code=codes.EXPR_BLOCK_NOT_EXPRESSION,
                hint="put the statements on their own lines, or use `{# #}` for them",
            )
    return ParsedCode(body, problem)


# ---------------------------------------------------------------------------------------------
# Tokens → one Python module


@dataclass(frozen=True, slots=True)
class Origin:
    """Where the generated lines of one token come from."""

    index: int  # the token's index
    kind: TokenKind
    pos: int  # the token's offset in the section text
    line: int  # 1-based section line of `pos`
    raw: str  # the token as written ("" for literal text)
    #: blocks: the unwrapped code (what the generated lines hold); literal text / placeholder path otherwise
    text: str
    #: blocks: section offset of every character of `text`, plus one past its end (`unwrap`); else ()
    positions: tuple[int, ...]
    first_line: int  # first generated line
    line_count: int  # generated lines it owns (≥ 1)


def _locate(origins: Sequence[Origin], lineno: int, col: int, byte_col: bool) -> tuple[int, int, int, int]:
    """(token index, section offset, line within the token's text, character column there)."""
    if not origins:
        return -1, 0, 1, 0
    i = max(0, bisect_right(origins, lineno, key=lambda o: o.first_line) - 1)
    origin = origins[i]
    if not origin.positions:
        return origin.index, origin.pos, 1, 0
    local = min(max(1, lineno - origin.first_line + 1), origin.line_count)
    bounds = _line_bounds(origin.text, local) or (len(origin.text), len(origin.text))
    start, end = bounds
    column = max(0, col)
    if byte_col:
        column = _char_col(origin.text[start:end], column)
    column = min(column, end - start)
    return origin.index, origin.positions[start + column], local, column


@dataclass(frozen=True, eq=False)
class Program:
    """A section's template as one Python module, with the way back from generated positions."""

    module: ast.Module
    origins: tuple[Origin, ...]
    #: the generated Python, line N for generated line N (literals shortened), for linecache
    listing: str
    #: the names declared `global` in the wrapper: everything the template binds at its top level
    names: tuple[str, ...]

    def locate(self, lineno: int, col: int = 0, *, byte_col: bool = False) -> tuple[int, int]:
        """A (1-based line, 0-based column) of the generated module → (token index, offset in the
        section text). Columns count characters, or UTF-8 bytes with `byte_col` (ast nodes and
        compile() errors). Lines outside the program clamp to the first/last token; a program
        without tokens gives (-1, 0)."""
        index, offset, _, _ = _locate(self.origins, lineno, col, byte_col)
        return index, offset

    def section_line(self, lineno: int) -> int:
        """A generated line (a traceback's `tb_lineno`) → the 1-based line of the section text."""
        index, offset, _, _ = _locate(self.origins, lineno, 0, False)
        if index < 0:
            return 1
        origin = self.origins[index]
        return origin.line + origin.raw.count("\n", 0, max(0, offset - origin.pos))


@dataclass
class _Frame:
    construct: str  # "", "if", "for", "while"
    node: Any  # the statement whose body/orelse receives the following code
    body: list[ast.stmt]


def _at(node: ast.AST, line: int, col: int = 0, end_line: int | None = None, end_col: int = 0) -> Any:
    node.lineno = line  # type: ignore[attr-defined]
    node.col_offset = col  # type: ignore[attr-defined]
    node.end_lineno = line if end_line is None else end_line  # type: ignore[attr-defined]
    node.end_col_offset = end_col  # type: ignore[attr-defined]
    return node


def _append(value: ast.expr, where: ast.AST | int) -> ast.stmt:
    """`__append__(value)`, located at node `where` or at the start of line `where`."""
    if isinstance(where, int):
        loc: tuple[int, int, int, int] = (where, 0, where, 0)
    else:
        loc = (where.lineno, where.col_offset, where.end_lineno, where.end_col_offset)  # type: ignore[attr-defined]
    call = _at(ast.Call(_at(ast.Name(APPEND, ast.Load()), *loc), [value], []), *loc)
    return _at(ast.Expr(call), *loc)  # type: ignore[no-any-return]


def _output(value: ast.expr, where: ast.AST, index: int) -> ast.stmt:
    """`__promptc_output__(value, index)`: a `{{ }}` block's value, checked before it is output."""
    loc = (where.lineno, where.col_offset, where.end_lineno, where.end_col_offset)  # type: ignore[attr-defined]
    call = _at(ast.Call(_at(ast.Name(OUTPUT, ast.Load()), *loc), [value, _at(ast.Constant(index), *loc)], []), *loc)
    return _at(ast.Expr(call), *loc)  # type: ignore[no-any-return]


#: values that are code, not text: printing one (`{{ input }}` → `<built-in function input>`) is
#: never what a prompt meant
NOT_TEXT = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.BuiltinMethodType,
    types.MethodWrapperType,
    type,
)


class OutputError(Exception):
    """A `{{ }}` block's value is a function or a class; `token` is the block's token index."""

    def __init__(self, token: int, value: object) -> None:
        kind = "class" if isinstance(value, type) else "function"
        super().__init__(f"a {kind} ({value!r}), not text")
        self.token = token
        self.value = value


def _short_repr(text: str) -> str:
    return repr(text) if len(text) <= 80 else repr(text[:60]) + " ..."


def _fill_empty(body: list[ast.stmt]) -> None:
    """Python refuses an empty suite: `{% if x %}{% endif %}` gets a `pass`. Iterative, no recursion."""
    work = [body]
    while work:
        suite = work.pop()
        for node in suite:
            if isinstance(node, (ast.If, ast.For, ast.While)):
                if not node.body:
                    node.body.append(ast.copy_location(ast.Pass(), node))
                work.append(node.body)
                work.append(node.orelse)


def _unannotate(statements: list[ast.stmt]) -> None:
    """Top-level `x: T = v` → `x = v`, and `x: T` → `pass`: in a function an annotation is not
    evaluated, and an annotated name cannot be declared `global` (CPython refuses it)."""
    for i, node in enumerate(statements):
        if isinstance(node, ast.AnnAssign) and node.simple and isinstance(node.target, ast.Name):
            new: ast.stmt = ast.Assign([node.target], node.value) if node.value is not None else ast.Pass()
            statements[i] = ast.copy_location(new, node)


def _binds_nothing(statements: Sequence[ast.stmt], code: str) -> bool:
    """True when a block's statements can neither bind a name in the template's scope nor hold
    what `_template_scope` refuses, so its walk may skip them: expression statements only, whose
    code has no walrus and no `yield` (an expression binds a name of the template's scope only by
    `:=`; comprehension and lambda bindings are their own). ASCII code only: nothing to doubt."""
    return (
        ":=" not in code
        and "yield" not in code
        and code.isascii()
        and all(type(statement) is ast.Expr for statement in statements)
    )


def _template_scope(body: list[ast.stmt], skip: Set[int] = frozenset()) -> tuple[list[str], tuple[ast.AST, str] | None]:
    """The names the template's own scope binds (sorted), and the first node the template may not
    hold at its top level with the message why. Rewrites top-level annotations (`_unannotate`).
    `skip` holds the `id` of statements known to bind nothing and hold nothing refused (the
    generated appends of literal text and placeholders, `_binds_nothing` blocks): not walked.

    Walks the template's scope iteratively: not the bodies of `def`, `lambda` and `class` (their
    decorators, defaults, annotations and bases run in the template's scope, so those are walked),
    and, of a comprehension, only its first iterable as template scope — the rest is the
    comprehension's own scope, whose targets are its own but whose walrus targets bind in the
    template's scope."""
    names: set[str] = set()
    _unannotate(body)
    work: list[tuple[ast.AST, bool]] = [(node, False) for node in reversed(body)]  # (node, in a comprehension)
    while work:
        node, inner = work.pop()
        if id(node) in skip:
            continue
        if isinstance(node, ast.Name):
            if not inner and not isinstance(node.ctx, ast.Load):
                names.add(node.id)
            continue
        if isinstance(node, ast.NamedExpr):
            if isinstance(node.target, ast.Name):
                names.add(node.target.id)
            work.append((node.value, inner))
            continue
        if isinstance(node, (*_FUNCTIONS, ast.Lambda)):
            args = node.args
            outer: list[ast.AST] = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
            if not isinstance(node, ast.Lambda):
                names.add(node.name)
                every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
                outer += [a.annotation for a in every if a is not None and a.annotation is not None]
                outer += node.decorator_list
                if node.returns is not None:
                    outer.append(node.returns)
            work.extend((sub, inner) for sub in outer)
            continue
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
            work.extend((sub, inner) for sub in (*node.decorator_list, *node.bases, *node.keywords))
            continue
        if isinstance(node, _COMPREHENSIONS):
            generators = node.generators
            work.append((generators[0].iter, inner))
            own: list[ast.AST] = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            for number, generator in enumerate(generators):
                own.append(generator.target)
                own.extend(generator.ifs)
                if number:
                    own.append(generator.iter)
            work.extend((sub, True) for sub in own)
            continue
        if not inner:
            if isinstance(node, (ast.Yield, ast.YieldFrom)):
                return sorted(names), (node, "Python syntax error: 'yield' outside function")
            if isinstance(node, ast.Return) and node.value is not None:
                return sorted(names), (node, "a template's `return` takes no value")
            if isinstance(node, ast.Nonlocal):
                return sorted(names), (node, f"Python syntax error: no binding for nonlocal '{node.names[0]}' found")
        if isinstance(node, ast.Global):
            continue
        if isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name.split(".")[0]) for a in node.names if a.name != "*")
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        for field in ("body", "orelse", "finalbody"):
            suite = getattr(node, field, None)
            if isinstance(suite, list):
                _unannotate(suite)
        work.extend((child, inner) for child in ast.iter_child_nodes(node))
    return sorted(names), None


def _located(
    error: TemplateSyntaxError, tok: Token, index: int, text: str, positions: Sequence[int]
) -> TemplateSyntaxError:
    """Fill in where a TemplateSyntaxError about token `index` (positioned in `text`) is in the section."""
    error.token = index
    if error.lineno is None or error.too_deep:
        error.offset, error.end_offset = tok.pos, tok.pos + len(tok.raw)
    else:
        error.offset = offset_at(text, positions, error.lineno, error.col)
        if error.end_lineno is not None:
            error.end_offset = max(error.offset, offset_at(text, positions, error.end_lineno, error.end_col))
    error.line = tok.line + tok.raw.count("\n", 0, max(0, error.offset - tok.pos))
    return error


def _structure_error(problem: Problem[int], tokens: Sequence[Token]) -> TemplateSyntaxError:
    tok = tokens[problem.where]
    error = TemplateSyntaxError(problem.message, code=problem.code, hint=problem.hint)
    error.token, error.offset, error.end_offset, error.line = problem.where, tok.pos, tok.pos + len(tok.raw), tok.line
    return error


#: a block already parsed from exactly its unwrapped code: a `{% %}` tag's header (`parse_header`)
#: or a `{{ }}` / `{# #}` block's statements (`parse_code(...).body`); None: parse it here
Parsed = ast.If | ast.For | ast.While | list[ast.stmt] | None


def generate(tokens: Sequence[Token], parsed: Sequence[Parsed] | None = None) -> Program:
    """One section's tokens (`scan`) → its Python module (see the module docstring for the code and
    its semantics). Checks the `{% %}` structure (`Structure`, E204 "… before the end of the
    section"), parses every block (`parse_header`, `parse_code`) and refuses a top-level `return`
    with a value, `yield` and `nonlocal`; the first problem raises a located TemplateSyntaxError.
    What only CPython's compiler knows (`compile_program`) is not checked here. A one-line `{{ }}`
    holding several statements (E602 for the build) still generates: its statements run and its
    last expression is output, as the runtime always did. Iterative: any nesting depth.

    `parsed`, when given, holds one entry per block token, in order: what the build's inference
    already parsed from the same code (`Parsed`), so no block is parsed twice. The module takes
    those nodes over (it moves and rewrites them)."""
    root = _Frame("", None, [])
    blocks = 0
    stack = [root]
    structure: Structure[int] = Structure(position=lambda i: f"line {tokens[i].line}")
    origins: list[Origin] = []
    listing: list[str] = []
    #: the statements `_template_scope` need not walk (their nodes live as long as the module)
    skip: set[int] = set()
    first = 1
    for index, tok in enumerate(tokens):
        body = stack[-1].body
        indent = "    " * len(stack)
        positions: tuple[int, ...] = ()
        text, count = tok.text, 1
        parts = tok.block
        if parts is None:
            if tok.kind == "lit":
                body.append(_append(_at(ast.Constant(tok.text), first), first))
                listing.append(f"{indent}{APPEND}({_short_repr(tok.text)})")
            elif tok.kind != "ph":
                raise ValueError(f"a `{tok.kind}` token without its BlockParts")
            else:
                value = ast.Call(_at(ast.Name(LOOKUP, ast.Load()), first), [_at(ast.Constant(tok.text), first)], [])
                body.append(_append(_at(value, first), first))
                listing.append(f"{indent}{APPEND}({LOOKUP}({tok.text!r}))")
            skip.add(id(body[-1]))
        else:
            text, unwrapped = unwrap(parts.code, tok.pos + parts.code_offset)
            positions = tuple(unwrapped)
            given = parsed[blocks] if parsed is not None and blocks < len(parsed) else None
            blocks += 1
            if parts.kind == "stmt":
                keyword = parts.keyword
                problems = structure.tag(keyword, index, text)
                if problems:
                    raise _structure_error(problems[0], tokens)
                try:
                    header = given if isinstance(given, _HEADERS) else parse_header(keyword, text)
                except TemplateSyntaxError as error:
                    raise _located(error, tok, index, text, positions) from None
                top = stack[-1]
                if keyword in OPENERS:
                    header.body = []  # type: ignore[union-attr]
                    _shift([header], first - 1)  # type: ignore[list-item]
                    body.append(header)  # type: ignore[arg-type]
                    stack.append(_Frame(keyword, header, header.body))  # type: ignore[union-attr]
                    listing.append(f"{indent}{text}:")
                elif keyword == "elif":
                    header.body = []  # type: ignore[union-attr]
                    _shift([header], first - 1)  # type: ignore[list-item]
                    top.node.orelse = [header]
                    top.node, top.body = header, header.body  # type: ignore[union-attr]
                    listing.append(f"{indent[4:]}{text}:")
                elif keyword == "else":
                    top.node.orelse = []
                    top.body = top.node.orelse
                    listing.append(f"{indent[4:]}else:")
                else:
                    stack.pop()
                    listing.append(f"{indent[4:]}# {text}")
            else:
                count = text.count("\n") + 1
                try:
                    statements = given if isinstance(given, list) else []
                    if not isinstance(given, list) or (
                        parts.kind == "expr" and (not statements or not isinstance(statements[-1], ast.Expr))
                    ):
                        code = parse_code(parts.kind, text)
                        statements = code.body
                        if parts.kind == "expr" and (not statements or not isinstance(statements[-1], ast.Expr)):
                            raise code.problem  # type: ignore[misc]
                except TemplateSyntaxError as error:
                    raise _located(error, tok, index, text, positions) from None
                _shift(statements, first - 1)
                plain = _binds_nothing(statements, text)
                start = len(body)
                if parts.kind == "expr":
                    last = statements.pop()
                    body.extend(statements)
                    body.append(_output(last.value, last, index))  # type: ignore[attr-defined]
                else:
                    body.extend(statements)
                if plain:
                    skip.update(map(id, body[start:]))
                listing.extend(indent + line for line in text.split("\n"))
        origins.append(Origin(index, tok.kind, tok.pos, tok.line, tok.raw, text, positions, first, count))
        first += count
    problems = structure.end(BEFORE_SECTION_END)
    if problems:
        raise _structure_error(problems[0], tokens)
    _fill_empty(root.body)
    names, refused = _template_scope(root.body, skip)
    if refused is not None:
        node, message = refused
        index, offset, lineno, col = _locate(origins, node.lineno, node.col_offset, True)  # type: ignore[attr-defined]
        refusal = TemplateSyntaxError(message, lineno, col)
        tok = tokens[index]
        refusal.token, refusal.offset = index, offset
        refusal.line = tok.line + tok.raw.count("\n", 0, offset - tok.pos)
        raise refusal
    last_line = max(1, first - 1)
    function_body: list[ast.stmt] = [_at(ast.Global(names), 1)] if names else []
    function_body += root.body or [_at(ast.Pass(), 1)]
    arguments = ast.arguments(
        posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]
    )
    function = ast.FunctionDef(FUNCTION, arguments, function_body, [], None)
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        function.type_params = []  # type: ignore[attr-defined]
    call = _at(ast.Expr(_at(ast.Call(_at(ast.Name(FUNCTION, ast.Load()), 1), [], []), 1)), 1)
    module = ast.Module([_at(function, 1, 0, last_line), call], [])
    return Program(module, tuple(origins), "\n".join(listing) + "\n" if listing else "", tuple(names))


def compile_program(program: Program, filename: str = "<promptc-template>") -> CodeType:
    """CPython's `compile()` of a generated program, for the runtime and the build (which compiles
    exactly what the runtime will run, to refuse at build time what only CPython's compiler knows:
    `def f(a, a)`, a walrus in a comprehension's iterable, `await`, `break` outside a loop,
    `import *`, 21 nested loops…). Any SyntaxError/ValueError/RecursionError/MemoryError becomes a
    TemplateSyntaxError located through `Program.locate` (E601, or E210 when nested too deeply)."""
    try:
        with warnings.catch_warnings():  # SyntaxWarnings about the template's code are not ours
            warnings.simplefilter("ignore")
            code: CodeType = compile(program.module, filename, "exec", flags=_COMPILE_FLAGS, dont_inherit=True)
            return code
    except SyntaxError as exc:
        message = str(exc.msg or "invalid syntax")
        deep = any(marker in message for marker in _TOO_DEEP)
        error = TemplateSyntaxError(
            f"block nested too deeply for Python: {message}" if deep else f"Python syntax error: {message}",
            code=codes.TOO_DEEP if deep else codes.PYTHON_SYNTAX,
            too_deep=deep,
        )
        if exc.lineno is not None and program.origins:
            # compile() of an ast reports 1-based columns counting UTF-8 bytes
            index, offset, lineno, col = _locate(program.origins, exc.lineno, (exc.offset or 1) - 1, True)
            origin = program.origins[index]
            error.lineno, error.col = (lineno, col) if origin.positions else (None, None)
            error.token, error.offset = index, offset
            if exc.end_lineno is not None and exc.end_offset:
                end_index, end, _, _ = _locate(program.origins, exc.end_lineno, exc.end_offset - 1, True)
                error.end_offset = end if end_index == index and end >= offset else None
            error.line = origin.line + origin.raw.count("\n", 0, max(0, offset - origin.pos))
        raise error from None
    except (RecursionError, MemoryError):
        raise TemplateSyntaxError("template nested too deeply to compile", code=codes.TOO_DEEP, too_deep=True) from None
    except ValueError as exc:
        raise TemplateSyntaxError(f"Python syntax error: {exc}") from None


@dataclass(frozen=True, eq=False)
class CompiledSection:
    """A section's template, compiled: what the runtime executes, and how to report from it."""

    code: CodeType
    program: Program
    #: the code's `co_filename`; linecache holds `program.listing` under it
    filename: str

    def error_line(self, exc: BaseException) -> int | None:
        """The section line of the innermost template frame in `exc`'s traceback, if any."""
        where = self._innermost(exc)
        return None if where is None else self.program.section_line(where)

    def error_token(self, exc: BaseException) -> tuple[int, int] | None:
        """(index of the template token, lines into that token) of the innermost template frame in
        `exc`'s traceback: where in the source the failing code was written."""
        where = self._innermost(exc)
        if where is None:
            return None
        index, offset, _, _ = _locate(self.program.origins, where, 0, False)
        if index < 0:
            return None
        origin = self.program.origins[index]
        return origin.index, origin.raw.count("\n", 0, max(0, offset - origin.pos))

    def _innermost(self, exc: BaseException) -> int | None:
        line = None
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        return line


class CacheInfo(NamedTuple):
    """As `functools.lru_cache` reports it."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


class _SectionCache:
    """`compile_section`: a least-recently-used cache of compiled sections by text, as
    `functools.lru_cache(maxsize=1024)` was, which also takes the blocks the build already parsed."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._compiled: dict[str, CompiledSection] = {}
        self._hits = self._misses = 0

    def __call__(self, text: str, parsed: Sequence[Parsed] | None = None) -> CompiledSection:
        """One section's artifact template text → its compiled code (cached per distinct text, the
        1,024 used last): `scan`, `generate`, `compile_program`. Tracebacks through the code show
        the listing (linecache). Raises a located TemplateSyntaxError (`.line` is the section
        line) for the runtime to wrap. `parsed`: the blocks the build's inference already parsed
        (see `generate`), used only when the text is not compiled yet."""
        cache = self._compiled
        found = cache.pop(text, None)
        if found is not None:
            cache[text] = found
            self._hits += 1
            return found
        self._misses += 1
        program = generate(scan(text), parsed)
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        filename = f"<promptc-section-{digest}>"
        listing = program.listing
        linecache.cache[filename] = (len(listing), None, listing.splitlines(True), filename)
        compiled = CompiledSection(compile_program(program, filename), program, filename)
        cache[text] = compiled
        if len(cache) > self.maxsize:
            del cache[next(iter(cache))]
        return compiled

    def cache_info(self) -> CacheInfo:
        return CacheInfo(self._hits, self._misses, self.maxsize, len(self._compiled))

    def cache_clear(self) -> None:
        self._compiled.clear()
        self._hits = self._misses = 0


compile_section = _SectionCache(1024)


#: The nodes a block may hold for `surely_compiles`: each is accepted by CPython's compiler (its
#: symtable, its AST validator and optimizer, its code generator) in any arrangement that
#: `ast.parse` produced, bar the three exceptions `surely_compiles` checks itself (a `__debug__`
#: bound or passed by keyword, a keyword argument repeated, nesting deep enough for its recursion
#: limit). Left out on purpose, so a section holding one is compiled: every scope (`def`, `lambda`,
#: `class`, comprehensions: duplicate arguments, walrus rules, `nonlocal`), `yield`/`await`,
#: `return`/`break`/`continue`, `global`/`nonlocal`, starred targets, `del`, imports, `try`/`with`/
#: `match` and nested statements (their own nesting limits), annotations (`global` conflicts).
_CERTAIN_NODES: frozenset[type[ast.AST]] = frozenset(
    {
        # statements of a `{{ }}` / `{# #}` block, and the headers `parse_header` makes (body `pass`)
        ast.Expr,
        ast.Assign,
        ast.AugAssign,
        ast.Pass,
        ast.If,
        ast.For,
        ast.While,
        # expressions
        ast.Name,
        ast.Constant,
        ast.Attribute,
        ast.Subscript,
        ast.Slice,
        ast.Call,
        ast.keyword,
        ast.BinOp,
        ast.UnaryOp,
        ast.BoolOp,
        ast.Compare,
        ast.IfExp,
        ast.Tuple,
        ast.List,
        ast.Set,
        ast.Dict,
        ast.JoinedStr,
        ast.FormattedValue,
    }
)
#: how many nodes one block may hold, and how deep `{% %}` tags may nest in a section, for
#: `surely_compiles` to vouch for it: far below CPython's limits (its compiler's recursion limit is
#: thousands of levels, and a tree of N nodes is at most N deep; it refuses a 21st statically
#: nested loop)
_CERTAIN_SIZE = 64
_CERTAIN_NESTING = 16

#: fields that never hold a node worth walking: names, contexts, operators, flags
_NOT_CHILDREN = frozenset(
    {"ctx", "op", "ops", "id", "attr", "arg", "kind", "conversion", "type_comment", "level", "module", "is_async"}
)
#: per node class, the fields `walk` reads
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {ast.Constant: (), ast.Name: ()}


def walk(roots: Iterable[ast.AST]) -> list[ast.AST]:
    """Every node of the trees, each tree breadth first as `ast.walk` yields them, without the
    contexts and operators (`ast.Load()`, `ast.Add()`…, shared singletons that hold nothing).
    Iterative; a list, so its callers (the inference's attribute uses, `surely_compiles`) walk
    a block once between them."""
    out: list[ast.AST] = []
    fields = _CHILD_FIELDS
    node_type = ast.AST
    for root in roots:
        at = len(out)
        out.append(root)
        while at < len(out):
            node = out[at]
            at += 1
            cls = node.__class__
            names = fields.get(cls)
            if names is None:
                names = fields[cls] = tuple(f for f in cls._fields if f not in _NOT_CHILDREN)
            for name in names:
                value = getattr(node, name, None)
                if value.__class__ is list:
                    out.extend(child for child in value if isinstance(child, node_type))
                elif isinstance(value, node_type):
                    out.append(value)
    return out


def certain_block(kind: str, keyword: str, parsed: Parsed, nodes: Sequence[ast.AST]) -> bool:
    """What `surely_compiles` asks of each block on its own: (kind, `{% %}` keyword or "", what
    parsing it gave: the header, None for an end tag, or the statements; and its nodes, `walk` of
    those), parsed without error as `generate` takes it. False for a node not in `_CERTAIN_NODES`,
    a `__debug__` bound or passed by keyword, a keyword argument repeated, a `{{ }}` not ending in
    an expression, more than `_CERTAIN_SIZE` nodes. A function of the block's code alone, so the
    inference works it out once per distinct block."""
    if kind == "stmt":
        if parsed is None:
            return keyword in CLOSERS
        if isinstance(parsed, list):
            return False
    elif not isinstance(parsed, list) or (kind == "expr" and (not parsed or parsed[-1].__class__ is not ast.Expr)):
        return False
    if len(nodes) > _CERTAIN_SIZE:
        return False
    certain = _CERTAIN_NODES
    for node in nodes:
        cls = node.__class__
        if cls not in certain:
            return False
        if cls is ast.Name:
            if node.id == "__debug__" or node.ctx.__class__ is ast.Del:  # type: ignore[attr-defined]
                return False
        elif cls is ast.Attribute:
            if node.attr == "__debug__":  # type: ignore[attr-defined]
                return False
        elif cls is ast.Call:
            names = [k.arg for k in node.keywords if k.arg is not None]  # type: ignore[attr-defined]
            if "__debug__" in names or len(set(names)) != len(names):
                return False
    return True


def surely_compiles(blocks: Iterable[tuple[str, str, bool]]) -> bool:
    """True when the program `generate` makes for a section is certain to compile, so the build's
    compile check (`check_section`) can be skipped: nothing in it can fail only at compile time.

    `blocks` are the section's blocks in order, as (kind, `{% %}` keyword or "", `certain_block`
    of it). Conservative: False when a block is not certain, on a `{% %}` structure problem, or
    nesting deeper than `_CERTAIN_NESTING`; then the caller compiles. `tests/test_template.py`
    checks it against CPython's `compile()` on drawn sections."""
    structure: Structure[int] = Structure(max_nesting=_CERTAIN_NESTING)
    for kind, keyword, certain in blocks:
        if not certain or (kind == "stmt" and (structure.tag(keyword, 0) or structure.stopped)):
            return False
    return not structure.end()


#: section texts `check_section` found to compile, least recently used first out
_CHECKED: dict[str, None] = {}
_CHECKED_MAX = 4096


def check_section(text: str, parsed: Sequence[Parsed] | None = None) -> None:
    """What `compile_section` refuses, without keeping what it makes: the build's check that a
    section compiles (raises its located TemplateSyntaxError). Only the texts that compiled are
    remembered (the 4,096 checked last), not their programs, ASTs and listings, which a build or
    an editor compiling thousands of prompts would otherwise hold until the end. `parsed` as for
    `generate`."""
    if text in _CHECKED:
        _CHECKED[text] = _CHECKED.pop(text)
        return
    compile_program(generate(scan.__wrapped__(text), parsed))
    _CHECKED[text] = None
    if len(_CHECKED) > _CHECKED_MAX:
        del _CHECKED[next(iter(_CHECKED))]


def execute(code: CodeType, inputs: Mapping[str, Any], lookup: Callable[[str], Any]) -> list[Any]:
    """Run compiled template code with the inputs as its globals; returns the appended values.

    The globals are a copy of `inputs`, then `__builtins__`, `__parts__`, `__append__` and
    `__promptc_input__` (= `lookup`, which `${path}` calls) — set after the inputs, so an input of
    one of those names cannot replace them. Exceptions from the template propagate unchanged."""
    parts: list[Any] = []
    append = parts.append

    def output(value: Any, token: int) -> None:
        if isinstance(value, NOT_TEXT):
            raise OutputError(token, value)
        append(value)

    scope: dict[str, Any] = dict(inputs)
    scope["__builtins__"] = builtins
    scope[PARTS] = parts
    scope[APPEND] = append
    scope[LOOKUP] = lookup
    scope[OUTPUT] = output
    exec(code, scope)
    return parts


def run(code: CodeType, inputs: Mapping[str, Any], lookup: Callable[[str], Any]) -> str:
    """`execute`, then the output: each value's `str()` (`promptc.facts.printable.text_of`: the
    strings in a container written by one Unicode version's `repr`), joined. Raises what the
    template or a value's `__str__` raised (use `execute` to tell the two apart)."""
    return "".join(map(text_of, execute(code, inputs, lookup)))
