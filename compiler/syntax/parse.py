"""Source text → AST items, with positions.

The Lark parser is built once per process (LALR, contextual lexer) and its analysed grammar is
cached on disk, so start-up does not recompile the grammar. The grammar is flat on purpose: the
nesting of `{% %}` tags is checked here with an explicit stack, which gives messages about the
*opening* tag ("`{% if %}` opened here is never closed") and cannot hit Python's recursion limit
however deep the nesting goes.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..facts import codes
from ..facts.codes import CODES
from ..facts.diagnostics import Diagnostic, DiagnosticSink, SourceText, Span
from ..facts.language import (
    CLOSERS,
    DELIMITERS,
    INLINE_COMMENT,
    MAX_PATH_SEGMENTS,
    PLACEHOLDER_PATH,
    SECTION_DIRECTIVE,
    SEPARATOR,
    STMT_KEYWORDS,
    TEMPLATE_ESCAPES,
)
from ..facts.lazy import lazy_import
from ..runtime.template import BEFORE_FILE_END, BEFORE_SECTION, BEFORE_SEPARATOR, Structure, read_block
from .caches import cache_folder
from .nodes import Block, Comment, Directive, Escape, Item, NearSeparator, Placeholder, Separator, Text

if TYPE_CHECKING:
    from importlib import resources

    import lark
else:  # a build that compiles nothing (everything reused) never needs the parser
    lark = lazy_import("lark")
    resources = lazy_import("importlib.resources")  # the grammar of a package imported from a zip


def grammar_text() -> str:
    """The grammar ships inside the wheel as package data (`promptc.grammar`, from the top-level
    `grammar/prompt.lark` of the repository): read as the file beside the package where it is one
    (importlib.resources, and the imports it brings, only for a package imported from a zip)."""
    try:
        spec = importlib.util.find_spec("promptc.grammar")
    except ModuleNotFoundError:
        spec = None
    if spec is None:  # running from a source checkout that is not installed
        root = Path(__file__).resolve().parent.parent.parent
        return (root / "grammar" / "prompt.lark").read_text(encoding="utf-8")
    for folder in spec.submodule_search_locations or ():
        path = os.path.join(folder, "prompt.lark")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                return handle.read()
    return resources.files("promptc.grammar").joinpath("prompt.lark").read_text(encoding="utf-8")


def _cache_path(grammar: str) -> str | None:
    """Where Lark keeps the analysed grammar, or None for no cache."""
    base = cache_folder()
    if base is None:
        return None
    digest = hashlib.sha256(f"{lark.__version__}\0{grammar}".encode()).hexdigest()[:16]
    return os.path.join(base, f"grammar-{digest}.lark.cache")


@cache
def parser() -> lark.Lark:
    grammar = grammar_text()
    options: dict[str, Any] = dict(
        parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=False
    )
    path = _cache_path(grammar)
    if path is not None:
        try:
            return lark.Lark(grammar, cache=path, **options)
        except OSError:  # an unwritable or corrupt cache must never stop a build
            Path(path).unlink(missing_ok=True)
    return lark.Lark(grammar, **options)


# ---------------------------------------------------------------------------------------------


def _block(
    kind: str, value: str, start: int, line: int, col: int, src: SourceText, sink: DiagnosticSink
) -> Block | None:
    parts = read_block(value)
    code_start = start + parts.code_offset
    span = Span(start, start + len(value), line, col, src)
    # the code starts on the opener's line: `{{` or `{{-` holds no newline
    code_span = Span(code_start, code_start + len(parts.code), line, col + parts.code_offset, src)
    if kind != "stmt" and ("\n" in value) and (SEPARATOR.search(value) or SECTION_DIRECTIVE.search(value)):
        sink.report(
            codes.BLOCK_SPANS_SEPARATOR,
            f"`{value[:2]}` opened here is not closed before the next role separator or section",
            src.span(start, start + 2),
            f"close the block with `{value[-2:]}` before the separator",
        )
        return None
    if kind == "stmt" and parts.keyword in CLOSERS and parts.code.strip() != parts.keyword:
        sink.report(
            codes.UNKNOWN_TAG,
            f"unexpected `{parts.code.strip()[len(parts.keyword) :].strip()}` after `{{% {parts.keyword} %}}`",
            span,
            f"an end tag holds nothing else: `{{% {parts.keyword} %}}`",
        )  # the tag still closes its block, so the structure check does not cascade
    if kind == "stmt" and parts.keyword not in STMT_KEYWORDS:
        # the one reader of `{% %}` tags says what is wrong with it (E208)
        for problem in Structure[Span]().tag(parts.keyword, span, parts.code.strip()):
            sink.report(CODES[problem.code], problem.message, span, problem.hint)
        return None
    return Block(kind, parts.code, span, code_span, parts.trim_left, parts.trim_right, parts.keyword, value)  # type: ignore[arg-type]


#: UNTERMINATED_MARK reaches the items only from a text that holds the mark's private-use
#: characters itself (then nothing was marked, see `_mark_unterminated`): they are its text
_TEXT_KINDS = frozenset(("TEXT", "NEWLINE", "STRAY", "UNTERMINATED_MARK"))
_BLOCK_KINDS = {"EXPR_BLOCK": "expr", "EXEC_BLOCK": "exec", "STMT_BLOCK": "stmt"}


#: one token: (terminal, value, offset)
Lexeme = tuple[str, str, int]


def _tokens_to_items(tokens: Iterable[Lexeme], src: SourceText, sink: DiagnosticSink) -> list[Item]:
    """The parser's items from the lexer's tokens. Every offset a token gives is inside the text,
    so spans are made here directly (`SourceText.span`'s clamping is not needed), each line found
    by one bisection of the line starts."""
    items: list[Item] = []
    append = items.append
    text_start = -1  # pending run of plain text, merged into one Text node
    text_end = -1
    text = src.text
    starts = src.line_starts
    line_of = bisect_right

    def at(start: int, end: int) -> Span:
        line = line_of(starts, start)
        return Span(start, end, line, start - starts[line - 1] + 1, src)

    for kind, value, start in tokens:
        if kind in _TEXT_KINDS:
            if text_start == -1:
                text_start = start
            text_end = start + len(value)
            continue
        if text_start != -1:
            line = line_of(starts, text_start)
            append(
                Text(
                    text[text_start:text_end], Span(text_start, text_end, line, text_start - starts[line - 1] + 1, src)
                )
            )
            text_start = -1
        end = start + len(value)
        line = line_of(starts, start)
        col = start - starts[line - 1] + 1
        if kind == "DIRECTIVE":
            # the terminal guarantees `DIRECTIVE`'s shape, `[ \t]*///[ \t]*KEY[ \t]*:VALUE` with no
            # `:` in KEY: its groups are read with string methods
            key_at = value.index("///") + 3
            colon = value.index(":", key_at)
            raw_value = value[colon + 1 :].rstrip("\n")
            if "///" in raw_value:
                raw_value = INLINE_COMMENT.sub("", raw_value)  # comments first
            value_at = start + colon + 1
            lead = len(raw_value) - len(raw_value.lstrip())
            clean = raw_value.strip()
            append(
                Directive(
                    value[key_at:colon].strip(" \t"),
                    clean,
                    Span(start, end, line, col, src),
                    at(value_at + lead, value_at + lead + len(clean)),
                )
            )
        elif kind in _BLOCK_KINDS:
            block = _block(_BLOCK_KINDS[kind], value, start, line, col, src, sink)
            append(block if block is not None else Text(value, Span(start, end, line, col, src)))
        elif kind == "PLACEHOLDER":
            name = value[2:-1]
            span = Span(start, end, line, col, src)
            if not name.strip():
                sink.report(
                    codes.EMPTY_PLACEHOLDER, "empty placeholder `${}`", span, "write the input's name: `${name}`"
                )
                append(Text(value, span))
            elif not PLACEHOLDER_PATH.match(name):
                hint = "a placeholder is `${name}` or `${name.attr}`: letters, digits and `_`"
                if name.strip() != name and PLACEHOLDER_PATH.match(name.strip()):
                    hint = f"remove the spaces: `${{{name.strip()}}}`"
                elif "{" in name or "(" in name or " " in name.strip():
                    hint += "; use a `{{ }}` block for expressions"
                sink.report(codes.INVALID_PLACEHOLDER, f"invalid placeholder name `{name}`", span, hint)
                append(Text(value, span))
            elif name.count(".") >= MAX_PATH_SEGMENTS:  # each segment nests the inferred schema deeper
                sink.report(
                    codes.INVALID_PLACEHOLDER,
                    f"the placeholder's path has {name.count('.') + 1:,} segments; at most {MAX_PATH_SEGMENTS}",
                    span,
                    "pass the value deep inside as an input of its own",
                )
                append(Text(value, span))
            else:
                append(Placeholder(name, span))
        elif kind == "SEPARATOR":
            match = SEPARATOR.match(value.rstrip("\n"))
            role = match.group(1) if match else value.strip("- \t\n")
            role_at = start + (match.start(1) if match else 0)
            append(Separator(role, Span(start, end, line, col, src), at(role_at, role_at + len(role))))
        elif kind == "FULL_COMMENT":
            append(Comment(True, Span(start, end, line, col, src)))
        elif kind == "INLINE_COMMENT":
            append(Comment(False, Span(start, end, line, col, src)))
        elif kind == "NEAR_SEPARATOR":
            append(NearSeparator(value, Span(start, end, line, col, src)))
        elif kind == "ESCAPE":
            append(Escape(value[1:], Span(start, end, line, col, src)))
        elif kind == "UNTERMINATED":
            closer = DELIMITERS[value]
            where = " on the same line" if value == "{%" else ""
            span = Span(start, end, line, col, src)
            sink.report(
                codes.UNTERMINATED,
                f"unterminated `{value}`: no `{closer}` follows{where}",
                span,
                f"close it with `{closer}`, or write `\\{value}` for a literal `{value}`",
            )
            append(Text(value, span))
        else:  # pragma: no cover - the grammar has no other terminal
            raise AssertionError(kind)
    if text_start != -1:
        append(Text(text[text_start:text_end], at(text_start, text_end)))
    return items


def _check_nesting(items: list[Item], sink: DiagnosticSink) -> None:
    """The `{% %}` structure, checked once for the whole build (`template.Structure`): separators
    and section directives are barriers, since a block never spans them."""
    structure: Structure[Block] = Structure(position=lambda block: f"{block.span.line}:{block.span.col}")
    if not any(item.__class__ is Block and item.kind == "stmt" for item in items):
        return  # no tag: nothing can be open, nothing can close
    for item in items:  # node classes have no subclasses: compared by identity, the cheaper test
        if item.__class__ is Separator:
            problems = structure.barrier(BEFORE_SEPARATOR)
        elif item.__class__ is Directive and item.key == "section":
            problems = structure.barrier(BEFORE_SECTION)
        elif item.__class__ is Block and item.kind == "stmt":
            problems = structure.tag(item.keyword, item)
        else:
            continue
        for problem in problems:
            sink.report(CODES[problem.code], problem.message, problem.where.span, problem.hint)
        if structure.stopped:
            return
    for problem in structure.end(BEFORE_FILE_END):
        sink.report(CODES[problem.code], problem.message, problem.where.span, problem.hint)


@cache
def _lexer() -> lark.lexer.BasicLexer:
    """Lark's lexer for the grammar's terminals, in the grammar's priorities: the same tokens the
    LALR parser consumes, built once (Lark's own `Lark.lex` rebuilds it on every call)."""
    return lark.lexer.BasicLexer(parser().lexer_conf)


#: openers, with escaped ones first so they are skipped as the lexer skips them (ESCAPE)
_OPENER_SCAN = re.compile(r"\\(?:{0})|{0}".format("|".join(map(re.escape, TEMPLATE_ESCAPES))))
#: the mark that stands in for an unterminated opener (see `_mark_unterminated`)
_MARK = "\ue000"
_MARKS = {
    "{{": "\ue000\ue001",
    "{#": "\ue000\ue002",
    "{%": "\ue000\ue003",
    "${": "\ue000\ue004",
}  # the grammar's UNTERMINATED_MARK


def _mark_unterminated(text: str) -> str | None:
    r"""`text` with every opener that has no closer replaced by a mark of the same length, or None
    when there is none (or the text holds the mark's character itself).

    The grammar's block terminals are lazy scans to their closer (`{{[\s\S]*?}}`): at an opener
    with no closer the lexer scans to the end of the file, then falls back to UNTERMINATED — at
    every such opener, which made 40,000 lines of `{{ a` quadratic. Whether an opener is closed is
    known in one pass: `{{` and `{#` are closed only when a `}}` / `#}` starts after them somewhere,
    `${` and `{%` only when a `}` / `%}` follows on the same line. Openers are found left to right
    and non-overlapping, escaped ones skipped, as the lexer sees them; an opener inside a longer
    token (a comment, a terminated block) is marked harmlessly, since those terminals accept any
    character and every token's value is read back from the original text."""
    if _MARK in text:
        return None
    last_expr, last_exec = text.rfind("}}"), text.rfind("#}")
    line_end = -1
    last_brace = last_stmt = -1
    marks: list[int] = []
    for match in _OPENER_SCAN.finditer(text):
        opener, at = match.group(), match.start()
        if opener[0] == "\\":
            continue
        if opener == "{{":
            closed = last_expr >= at + 2
        elif opener == "{#":
            closed = last_exec >= at + 2
        else:
            if at > line_end:  # a new line: where it ends, and its last `}` and `%}`
                line_start = text.rfind("\n", 0, at) + 1
                line_end = text.find("\n", at)
                if line_end == -1:
                    line_end = len(text)
                last_brace = text.rfind("}", line_start, line_end)
                last_stmt = text.rfind("%}", line_start, line_end)
            closed = (last_brace if opener == "${" else last_stmt) >= at + 2
        # `{%}` / `{#}`: the opener's second character may begin a closer (`%}` / `#}`) of a block
        # before it; left to the lexer (at most one such unclosed opener per line or file)
        if not closed and not (opener in ("{%", "{#") and text.startswith("}", at + 2)):
            marks.append(at)
    if not marks:
        return None
    pieces: list[str] = []
    previous = 0
    for at in marks:
        pieces.append(text[previous:at])
        pieces.append(_MARKS[text[at : at + 2]])
        previous = at + 2
    pieces.append(text[previous:])
    return "".join(pieces)


def _unmark(toks: Iterable[Any], original: str) -> Iterator[Any]:
    """Tokens of the marked text, read back against the original text."""
    for tok in toks:
        if _MARK not in tok.value:
            yield tok
            continue
        kind = "UNTERMINATED" if tok.type == "UNTERMINATED_MARK" else tok.type
        yield lark.Token.new_borrow_pos(kind, original[tok.start_pos : tok.start_pos + len(tok.value)], tok)


def tokens(
    text: str, *, full_parse: bool = False
) -> Iterable[Any]:  # lark.Token, whose positions lark types as optional
    """The grammar's tokens for `text`.

    The grammar's only rule, `start: _item*`, accepts every sequence of items, so an LALR parse
    can never reject anything and its parse tree is just the token list: the default path runs
    Lark's lexer alone, three times faster. `full_parse=True` runs the LALR parser, and
    tests/test_parse.py checks that both give the same tokens and that the grammar stays flat.
    Unterminated openers are marked first (`_mark_unterminated`), which keeps lexing linear.
    """
    marked = _mark_unterminated(text)
    lexed = text if marked is None else marked
    if full_parse:
        found = parser().parse(lexed).children
    else:
        found = lark.lexer.LexerThread.from_text(_lexer(), lexed).lex(None)  # type: ignore[no-untyped-call]
    return found if marked is None else _unmark(found, text)


def _union_cache_path() -> str | None:
    """Where the lexer's regular expression is kept, named by the grammar and the lark release
    that derived it (read from lark's `__init__.py` without importing lark), or None."""
    base = cache_folder()
    spec = importlib.util.find_spec("lark")
    if base is None or spec is None or spec.origin is None:
        return None
    try:
        with open(spec.origin, "rb") as handle:
            lark_init = handle.read()
    except OSError:
        return None
    digest = hashlib.sha256(grammar_text().encode() + b"\0" + lark_init).hexdigest()[:16]
    return os.path.join(base, f"lexer-{digest}.json")


@cache
def _union() -> re.Pattern[str] | None:
    """The lexer's own regular expression: the union of the grammar's terminals, in the order its
    `Scanner` tries them (priority first), as lark compiled it; None if lark split it in two.

    The expression (its text and flags, as JSON: nothing in it is executed) is kept in promptc's
    cache folder, so a process that parses does not import lark and load its analysed grammar
    (a tenth of a second: the language server's start, every build that compiles)."""
    path = _union_cache_path()
    if path is not None:
        try:
            with open(path, encoding="utf-8") as handle:
                kept = json.load(handle)
            return re.compile(kept["pattern"], kept["flags"])
        except (OSError, ValueError, KeyError, TypeError, re.error):
            pass
    expressions = _lexer().scanner._mres
    if len(expressions) != 1 or _lexer().callback:
        return None
    union: re.Pattern[str] = expressions[0]
    if path is not None:
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as handle:
                json.dump({"pattern": union.pattern, "flags": union.flags}, handle)
            os.replace(tmp, path)
        except OSError:  # a cache is an optimisation; never fail a parse over it
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return union


def warm() -> None:
    """Load what parsing needs (before a pool forks its workers, which inherit it)."""
    _union()


def lexemes(text: str) -> list[Lexeme]:
    """The grammar's tokens for `text` as (terminal, value, offset), exactly those of `tokens`
    (tests/test_parse.py compares them), without a Token object per token: the lexer's regular
    expression, run once over the text. Every character of a text is matched by some terminal
    (TEXT, NEWLINE and STRAY cover them all), so its matches follow each other; if they ever did
    not, this falls back to the lexer, which reports the character."""
    union = _union()
    marked = _mark_unterminated(text)
    lexed = text if marked is None else marked
    found = [] if union is None else [(m.lastgroup or "", m.group(), m.start()) for m in union.finditer(lexed)]
    if union is None or sum(len(value) for _, value, _ in found) != len(text):
        return [(t.type, t.value, t.start_pos) for t in tokens(text)]
    if marked is None:
        return found
    return [
        (
            "UNTERMINATED" if kind == "UNTERMINATED_MARK" else kind,
            text[start : start + len(value)] if _MARK in value else value,
            start,
        )
        for kind, value, start in found
    ]


def parse(src: SourceText, sink: DiagnosticSink, *, full_parse: bool = False) -> tuple[Item, ...]:
    """Parse a normalised source into items. Errors go to `sink`; the result is always usable."""
    try:
        found: Iterable[Lexeme] = (
            [(t.type, t.value, t.start_pos) for t in tokens(src.text, full_parse=True)]
            if full_parse
            else lexemes(src.text)
        )
        items = _tokens_to_items(found, src, sink)
    except (lark.exceptions.LarkError, RecursionError) as exc:  # the grammar accepts any text; keep a net anyway
        line = getattr(exc, "line", 1) or 1
        col = getattr(exc, "column", 1) or 1
        offset = src.line_starts[min(line, len(src.line_starts)) - 1] + col - 1
        sink.report(codes.SYNTAX, f"cannot parse the file: {type(exc).__name__}", src.span(offset), None)
        return ()
    _check_nesting(items, sink)
    return tuple(items)


def template_items(text: str, path: str = "<template>") -> tuple[tuple[Item, ...], list[Diagnostic]]:
    """The items of template text as the real parser reads it (comments removed), with what the
    parser reported. For tools that analyse one section's template on its own (the inference
    tests, the benchmark's comparison with promplate-inspect, an editor)."""
    src = SourceText.of(path, text)
    sink = DiagnosticSink(src)
    items = tuple(item for item in parse(src, sink) if not isinstance(item, Comment))
    return items, sink.items
