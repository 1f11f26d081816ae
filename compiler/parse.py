"""Source text → AST items, with positions.

The Lark parser is built once per process (LALR, contextual lexer) and its analysed grammar is
cached on disk, so start-up does not recompile the grammar. The grammar is flat on purpose: the
nesting of `{% %}` tags is checked here with an explicit stack, which gives messages about the
*opening* tag ("`{% if %}` opened here is never closed") and cannot hit Python's recursion limit
however deep the nesting goes.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path

from . import codes
from .diagnostics import DiagnosticSink, SourceText, Span
from .nodes import Block, Comment, Directive, Escape, Item, NearSeparator, Placeholder, Separator, Text

PLACEHOLDER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_SEPARATOR = re.compile(r"^-{5,}[ \t]+([A-Za-z][A-Za-z0-9_]*)[ \t]+-{5,}[ \t]*$", re.M)
_SECTION_DIRECTIVE = re.compile(r"^[ \t]*///[ \t]*section[ \t]*:", re.M)
_DIRECTIVE = re.compile(r"[ \t]*///[ \t]*([a-z][a-z0-9_.\-]*)[ \t]*:(.*)", re.S)

#: Tags a `{% %}` block may hold, and what each one closes or continues.
OPENERS = ("if", "for", "while")
CONTINUERS = {"elif": ("if",), "else": ("if", "for", "while")}
CLOSERS = {"endif": "if", "endfor": "for", "endwhile": "while"}
STMT_KEYWORDS = frozenset((*OPENERS, *CONTINUERS, *CLOSERS))

#: Deepest `{% %}` nesting accepted. CPython refuses more than 100 levels of indentation, and the
#: python renderer compiles the template to one function, so deeper nesting could never render.
MAX_NESTING = 90


def grammar_text() -> str:
    """The grammar ships inside the wheel as package data (`compiler/grammar/prompt.lark`)."""
    try:
        return resources.files("promptc.grammar").joinpath("prompt.lark").read_text(encoding="utf-8")
    except ModuleNotFoundError:  # running from a source checkout that is not installed
        return (Path(__file__).resolve().parent.parent / "grammar" / "prompt.lark").read_text(encoding="utf-8")


def _cache_path(grammar: str) -> str | None:
    """Where Lark keeps the analysed grammar: the user's cache folder (platformdirs knows it on
    Linux, macOS and Windows; `XDG_CACHE_HOME` wins where set), else the temporary folder."""
    import lark
    import platformdirs

    digest = hashlib.sha256(f"{lark.__version__}\0{grammar}".encode()).hexdigest()[:16]
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = os.path.join(xdg, "promptc") if xdg else platformdirs.user_cache_dir("promptc", appauthor=False)
    for folder in (base, os.path.join(tempfile.gettempdir(), "promptc-grammar")):
        try:
            os.makedirs(folder, exist_ok=True)
            if os.access(folder, os.W_OK):
                return os.path.join(folder, f"grammar-{digest}.lark.cache")
        except OSError:
            continue
    return None


@cache
def parser():
    from lark import Lark

    grammar = grammar_text()
    options = dict(parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=False)
    path = _cache_path(grammar)
    if path is not None:
        try:
            return Lark(grammar, cache=path, **options)
        except OSError:  # an unwritable or corrupt cache must never stop a build
            Path(path).unlink(missing_ok=True)
    return Lark(grammar, **options)


# ---------------------------------------------------------------------------------------------


def _block(
    kind: str, value: str, start: int, line: int, col: int, src: SourceText, sink: DiagnosticSink
) -> Block | None:
    open_len = 2
    inner = value[2:-2]
    trim_left = inner.startswith("-")
    trim_right = inner.endswith("-") and len(inner) > (1 if trim_left else 0)
    code_start = start + open_len + (1 if trim_left else 0)
    code = inner[(1 if trim_left else 0) : len(inner) - (1 if trim_right else 0)]
    span = Span(start, start + len(value), line, col, src)
    # the code starts on the opener's line: `{{` or `{{-` holds no newline
    code_span = Span(code_start, code_start + len(code), line, col + (code_start - start), src)
    if kind != "stmt" and ("\n" in value) and (_SEPARATOR.search(value) or _SECTION_DIRECTIVE.search(value)):
        sink.report(
            codes.BLOCK_SPANS_SEPARATOR,
            f"`{value[:2]}` opened here is not closed before the next role separator or section",
            src.span(start, start + 2),
            f"close the block with `{value[-2:]}` before the separator",
        )
        return None
    keyword = ""
    if kind == "stmt":
        stripped = code.strip()
        keyword = re.split(r"[\s(:]", stripped, maxsplit=1)[0] if stripped else ""
        if keyword not in STMT_KEYWORDS:
            sink.report(
                codes.UNKNOWN_TAG,
                f"unknown statement tag `{{% {keyword or stripped} %}}`" if stripped else "empty `{% %}` tag",
                span,
                "`{% %}` holds if / elif / else / for / while and endif / endfor / endwhile; "
                "use `{# #}` for other statements",
            )
            return None
    return Block(kind, code, span, code_span, trim_left, trim_right, keyword, value)  # type: ignore[arg-type]


_OPENER_CLOSE = {"${": "}", "{{": "}}", "{#": "#}", "{%": "%}"}
_TEXT_KINDS = frozenset(("TEXT", "NEWLINE", "STRAY"))


def _tokens_to_items(tokens, src: SourceText, sink: DiagnosticSink) -> list[Item]:
    items: list[Item] = []
    text_start = -1  # pending run of plain text, merged into one Text node
    text_end = -1
    text = src.text

    text_line = text_col = 0

    def flush() -> None:
        nonlocal text_start
        if text_start != -1:
            items.append(Text(text[text_start:text_end], Span(text_start, text_end, text_line, text_col, src)))
            text_start = -1

    for tok in tokens:
        kind = tok.type
        start = tok.start_pos
        value = tok.value
        end = start + len(value)
        if kind in _TEXT_KINDS:
            if text_start == -1:
                text_start, text_line, text_col = start, tok.line, tok.column
            text_end = end
            continue
        flush()
        if kind == "SEPARATOR":
            match = _SEPARATOR.match(value.rstrip("\n"))
            role = match.group(1) if match else value.strip("- \t\n")
            role_at = start + (match.start(1) if match else 0)
            items.append(Separator(role, src.span(start, end), src.span(role_at, role_at + len(role))))
        elif kind == "NEAR_SEPARATOR":
            items.append(NearSeparator(value, src.span(start, end)))
        elif kind == "DIRECTIVE":
            match = _DIRECTIVE.match(value)
            assert match is not None  # the terminal guarantees the shape
            raw_value = match.group(2)
            value_at = start + match.start(2)
            lead = len(raw_value) - len(raw_value.lstrip())
            clean = raw_value.strip()
            items.append(
                Directive(
                    match.group(1),
                    clean,
                    src.span(start, end),
                    src.span(value_at + lead, value_at + lead + len(clean)),
                )
            )
        elif kind == "FULL_COMMENT":
            items.append(Comment(True, src.span(start, end)))
        elif kind == "INLINE_COMMENT":
            items.append(Comment(False, src.span(start, end)))
        elif kind == "ESCAPE":
            items.append(Escape(value[1:], src.span(start, end)))
        elif kind == "PLACEHOLDER":
            name = value[2:-1]
            span = src.span(start, end)
            if not name.strip():
                sink.report(
                    codes.EMPTY_PLACEHOLDER, "empty placeholder `${}`", span, "write the input's name: `${name}`"
                )
                items.append(Text(value, span))
            elif not PLACEHOLDER_NAME.match(name):
                hint = "a placeholder is `${name}` or `${name.attr}`: letters, digits and `_`"
                if name.strip() != name and PLACEHOLDER_NAME.match(name.strip()):
                    hint = f"remove the spaces: `${{{name.strip()}}}`"
                elif "{" in name or "(" in name or " " in name.strip():
                    hint += "; use a `{{ }}` block for expressions"
                sink.report(codes.INVALID_PLACEHOLDER, f"invalid placeholder name `{name}`", span, hint)
                items.append(Text(value, span))
            else:
                items.append(Placeholder(name, span))
        elif kind in ("EXPR_BLOCK", "EXEC_BLOCK", "STMT_BLOCK"):
            block = _block(kind[:4].lower(), value, start, tok.line, tok.column, src, sink)
            items.append(block if block is not None else Text(value, src.span(start, end)))
        elif kind == "UNTERMINATED":
            closer = _OPENER_CLOSE[value]
            where = " on the same line" if value == "{%" else ""
            sink.report(
                codes.UNTERMINATED,
                f"unterminated `{value}`: no `{closer}` follows{where}",
                src.span(start, end),
                f"close it with `{closer}`, or write `\\{value}` for a literal `{value}`",
            )
            items.append(Text(value, src.span(start, end)))
        else:  # pragma: no cover - the grammar has no other terminal
            raise AssertionError(kind)
    flush()
    return items


def _check_nesting(items: list[Item], sink: DiagnosticSink) -> None:
    """Balance `{% %}` tags with an explicit stack; separators and sections are barriers."""
    stack: list[tuple[Block, str]] = []  # (opening block, the construct it opened)

    def unclosed(barrier: str) -> None:
        for opener, construct in reversed(stack):
            sink.report(
                codes.BLOCK_NEVER_CLOSED,
                f"`{{% {construct} %}}` opened here is never closed{barrier}",
                opener.span,
                f"add `{{% end{construct} %}}`",
            )
        stack.clear()

    for item in items:
        if isinstance(item, Separator):
            unclosed(" before the role separator")
            continue
        if isinstance(item, Directive) and item.key == "section":
            unclosed(" before the next section")
            continue
        if not isinstance(item, Block) or item.kind != "stmt":
            continue
        keyword = item.keyword
        if keyword in OPENERS:
            if len(stack) >= MAX_NESTING:
                sink.report(
                    codes.TOO_DEEP,
                    f"`{{% %}}` blocks nested more than {MAX_NESTING} deep",
                    item.span,
                    "flatten the template; Python cannot compile deeper nesting",
                )
                return
            stack.append((item, keyword))
        elif keyword in CONTINUERS:
            allowed = CONTINUERS[keyword]
            if not stack or stack[-1][1] not in allowed:
                sink.report(
                    codes.MISPLACED_CONTINUATION,
                    f"`{{% {keyword} %}}` outside {' / '.join(f'`{{% {a} %}}`' for a in allowed)}",
                    item.span,
                    "move it inside the block it belongs to",
                )
        elif keyword in CLOSERS:
            construct = CLOSERS[keyword]
            if not stack:
                sink.report(
                    codes.CLOSES_NOTHING,
                    f"`{{% {keyword} %}}` closes nothing",
                    item.span,
                    "remove it, or open the block first",
                )
            elif stack[-1][1] != construct:
                opener, open_construct = stack[-1]
                sink.report(
                    codes.MISMATCHED_CLOSE,
                    f"`{{% {keyword} %}}` does not match `{{% {open_construct} %}}` "
                    f"opened at {opener.span.line}:{opener.span.col}",
                    item.span,
                    f"close `{{% {open_construct} %}}` with `{{% end{open_construct} %}}` first",
                )
                stack.pop()
            else:
                stack.pop()
    unclosed(" before the end of the file")


@cache
def _lexer():
    """Lark's lexer for the grammar's terminals, in the grammar's priorities: the same tokens the
    LALR parser consumes, built once (Lark's own `Lark.lex` rebuilds it on every call)."""
    from lark.lexer import BasicLexer

    return BasicLexer(parser().lexer_conf)


def tokens(text: str, *, full_parse: bool = False):
    """The grammar's tokens for `text`.

    The grammar's only rule, `start: _item*`, accepts every sequence of items, so an LALR parse
    can never reject anything and its parse tree is just the token list: the default path runs
    Lark's lexer alone, three times faster. `full_parse=True` runs the LALR parser, and
    tests/test_parse.py checks that both give the same tokens and that the grammar stays flat.
    """
    if full_parse:
        return parser().parse(text).children
    from lark.lexer import LexerThread

    return LexerThread.from_text(_lexer(), text).lex(None)


def parse(src: SourceText, sink: DiagnosticSink, *, full_parse: bool = False) -> tuple[Item, ...]:
    """Parse a normalised source into items. Errors go to `sink`; the result is always usable."""
    from lark.exceptions import LarkError

    try:
        items = _tokens_to_items(tokens(src.text, full_parse=full_parse), src, sink)
    except (LarkError, RecursionError) as exc:  # the grammar accepts any text; keep a net anyway
        line = getattr(exc, "line", 1) or 1
        col = getattr(exc, "column", 1) or 1
        offset = src.line_starts[min(line, len(src.line_starts)) - 1] + col - 1
        sink.report(codes.SYNTAX, f"cannot parse the file: {type(exc).__name__}", src.span(offset), None)
        return ()
    _check_nesting(items, sink)
    return tuple(items)
