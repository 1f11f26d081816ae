"""`promptc fmt`: the canonical layout of a prompt source, and the check that makes it safe.

Two stages, each a function with a name:

- `layout(text, partial=...)` — the pure text transform. It reads the file with the compiler's own
  parser (`parse.parse`: the grammar's tokens, so a `///` inside a block or a `{{ … }}` that spans
  lines is seen exactly as the build sees it) and rewrites only what the build throws away or
  trims: directive, comment and separator lines, the whitespace the roles pass trims at the edges
  of a section, and the order of the file-level directives at the top of the file.
- `format_tree(root, rels, config)` — the safety rule. Every file is compiled before and after
  (in memory, never writing the output folder): the prompt itself, or for a partial every prompt
  that includes it. The artifacts must be identical except for `source_sha256` and the source line
  numbers in `origins` and `cache.prefix_end` (mapped through the layout's line map), and the warnings must be the same
  codes; otherwise the file is refused (E931, E932) and left as it was. A file that does not
  compile is refused too (E930): fmt never guesses what a broken file means.

The rules (docs/formatter.md has them with examples):

1. Directives: `/// key: value`, at the start of the line, one space after `///` and after the colon,
   an inline comment after it kept after one space.
2. Role separators: `----- role -----`, five dashes each side, the role in lowercase.
3. Full-line comments lose their trailing whitespace; an inline comment stands one space after the
   text (the build removes it with the whitespace before it).
4. Blank lines where the build trims them (between directives at the top of a prompt, before and
   after a separator or a `/// section:` line, at the start and end of a prompt): runs of blank
   lines become one empty line; a prompt's leading and trailing blank lines go, and it ends with
   exactly one newline. The last text line of a section loses its trailing whitespace.
5. The file-level directives at the top of a file are put in the order of `DIRECTIVE_ORDER`
   (stable: two `param` lines keep their order, so the later still wins), any other key after them
   in the order written. A comment above a directive moves with it; the comments before the first
   directive (the file's description) stay first; `/// promptc: allow` stays above its line.

Text that reaches the model is never touched: trailing spaces inside a section, blank lines
between paragraphs, indentation, and everything inside `${…}`, `{{ }}`, `{# #}` and `{% %}`.
"""

from __future__ import annotations

import bisect
import difflib
import os
import posixpath
from collections import ChainMap, Counter
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from ..compile import compile_source
from ..compile.pipeline import read_source
from ..compile.prompt import CompiledPrompt
from ..driver.sources import LooseFiles, is_prompt, read_tree
from ..facts import codes
from ..facts.config import Config
from ..facts.diagnostics import Diagnostic, DiagnosticSink, SourceText, file_span, has_errors, make
from ..facts.language import DIRECTIVE, INLINE_COMMENT, PARTIAL_PREFIX, SEPARATOR, SOURCE_SUFFIX
from ..facts.records import dataclass
from ..passes.context import SourceTree
from ..passes.directives import DIRECTIVES, Directives
from ..runtime.atomic import ChangedOnDisk, reason, write_file
from ..runtime.confine import edit_refusal
from ..syntax.nodes import Block, Comment, Directive, Separator
from ..syntax.parse import parse

__all__ = [
    "DIRECTIVE_ORDER",
    "Layout",
    "layout",
    "FileResult",
    "FormatResult",
    "FormatError",
    "format_tree",
    "format_text",
    "unified_diff",
]

#: The canonical order of the file-level directives at the top of a file, the ranks their
#: declarations give them (`promptc.passes.directives`): what the prompt is (flow, node, role,
#: tags), how it is called (params, cache lifetime), its contract (inputs) and the rest of the
#: request (tools, output schema). Other keys (metadata) follow, as written.
DIRECTIVE_ORDER = DIRECTIVES.order
#: `/// promptc: allow CODE` is about the line after it, so it travels with that line.
_ALLOW_KEY = "promptc"
#: directives that stand for something where they are written
_SECTION_KEY = "section"
_INCLUDE_KEY = "include"

# line kinds
_BLANK = "blank"  # spaces and tabs only, outside any block
_TEXT = "text"  # text the model sees (or a `#` header line, a near-separator)
_INSIDE = "inside"  # a line that starts inside a block spanning lines: never touched
_INCLUDE = "include"  # `/// include:` splices text: treated as text
_SEPARATOR = "separator"
_SECTION = "section"
_DIRECTIVE = "directive"  # any other directive: the build removes the whole line
_COMMENT = "comment"  # a full-line comment: removed with its newline
_EDGE = "edge"  # the start or end of the file

_VANISH = frozenset((_BLANK, _DIRECTIVE, _COMMENT))
_BOUNDARY = frozenset((_SEPARATOR, _SECTION))


@dataclass(frozen=True, slots=True)
class Layout:
    """The canonical text of one source, and where each of its lines went."""

    text: str
    #: old line (0-based index) → new line number (1-based), or None for a blank line removed
    line_map: tuple[int | None, ...]

    def new_line(self, old: int) -> int | None:
        """The new number of the 1-based line `old` (None: removed)."""
        return self.line_map[old - 1] if 1 <= old <= len(self.line_map) else old


@dataclass(slots=True)
class _Line:
    old: int  # 0-based index in the original
    text: str
    kind: str
    key: str = ""  # for directives
    inline: int = -1  # offset in the line of an inline comment


def _classify(text: str) -> tuple[list[_Line], list[Diagnostic]]:
    """The lines of `text`, each with what the parser says it is."""
    src = SourceText.of("<fmt>", text)
    sink = DiagnosticSink(src)
    items = parse(src, sink)
    raw = text.split("\n") if text else []
    if text.endswith("\n"):
        raw.pop()
    lines = [_Line(i, value, _BLANK if not value.strip(" \t") else _TEXT) for i, value in enumerate(raw)]
    starts = src.line_starts

    def index(offset: int) -> int:
        return bisect.bisect_right(starts, offset) - 1

    for item in items:
        span = item.span
        at = index(span.start)
        if at >= len(lines):
            continue
        if isinstance(item, Separator):
            lines[at].kind = _SEPARATOR
        elif isinstance(item, Directive):
            line = lines[at]
            line.key = item.key
            line.kind = {_SECTION_KEY: _SECTION, _INCLUDE_KEY: _INCLUDE}.get(item.key, _DIRECTIVE)
        elif isinstance(item, Comment):
            if item.full_line:
                lines[at].kind = _COMMENT
            else:
                lines[at].inline = span.start - starts[at]
        elif isinstance(item, Block) and span.end > span.start:
            last = index(span.end - 1)
            for inside in range(at + 1, min(last, len(lines) - 1) + 1):
                lines[inside].kind = _INSIDE
    return lines, sink.items


def _directive(line: _Line, value: str) -> str:
    match = DIRECTIVE.match(line.text)
    comment = ""
    if match is not None:
        found = INLINE_COMMENT.search(match.group(2))
        if found is not None:
            comment = found.group().strip()
    out = f"/// {line.key}:"
    if value:
        out += f" {value}"
    if comment:
        out += f" {comment}"
    return out


def _separator(line: _Line) -> str:
    match = SEPARATOR.match(line.text)
    if match is None:  # pragma: no cover - the lexer matched the same pattern
        return line.text.rstrip()
    role = match.group(1)
    tail = line.text[match.end(1) :].lstrip(" \t").lstrip("-").strip()
    return f"----- {role.lower()} -----" + (f" {tail}" if tail else "")


def _inline(line: _Line) -> str:
    """A text line's inline comment one space after the text (the build removes it with the
    whitespace before it, so the spacing never reaches the model)."""
    head = line.text[: line.inline]
    comment = line.text[line.inline :].strip()
    return f"{head} {comment}"


def _sort_header(lines: list[_Line], end: int, directives: Directives) -> list[_Line]:
    """`lines[:end]` (blank lines, comments and file-level directives) in the canonical order."""
    first = next((i for i in range(end) if lines[i].kind == _DIRECTIVE and lines[i].key != _ALLOW_KEY), None)
    if first is None:
        return lines[:end]
    # the description above the first directive stays first, and so does an allow comment
    # that is about that directive
    lead = first
    while lead > 0 and lines[lead - 1].kind == _DIRECTIVE and lines[lead - 1].key == _ALLOW_KEY:
        lead -= 1
    preamble = lines[:lead]
    units: list[tuple[int, int, list[_Line]]] = []
    pending: list[_Line] = []
    for i in range(lead, end):
        line = lines[i]
        pending.append(line)
        if line.kind == _DIRECTIVE and line.key != _ALLOW_KEY:
            rank = directives.rank(line.key)
            units.append((rank, len(units), pending))
            pending = []
    units.sort(key=lambda unit: (unit[0], unit[1]))
    return [*preamble, *(line for unit in units for line in unit[2]), *pending]


def layout(text: str, *, partial: bool = False, directives: Directives = DIRECTIVES) -> Layout:
    """The canonical layout of a normalised source (LF line ends, no BOM). Pure: it never compiles;
    `format_tree` checks that the result compiles to the same artifact. `partial` for a partial
    (`_name.prompt`), whose first and last lines splice into the includer's text, so its edges are
    not a message's. `directives`: the table whose ranks order the header."""
    lines, _ = _classify(text)
    values = {line.old: line.text for line in lines}

    # Directive values as the compiler reads them (stripped, inline comment removed).
    for line in lines:
        if line.kind in (_DIRECTIVE, _SECTION, _INCLUDE):
            match = DIRECTIVE.match(line.text)
            raw = INLINE_COMMENT.sub("", match.group(2)) if match else ""
            values[line.old] = _directive(line, raw.strip())
        elif line.kind == _SEPARATOR:
            values[line.old] = _separator(line)
        elif line.kind == _COMMENT:
            values[line.old] = line.text.rstrip()
        elif line.inline >= 0:
            values[line.old] = _inline(line)

    edge_is_boundary = not partial
    # the header: the leading run of blank lines, comments and file-level directives
    header_end = 0
    while header_end < len(lines) and lines[header_end].kind in _VANISH:
        header_end += 1
    after_header = lines[header_end].kind if header_end < len(lines) else _EDGE
    header_trimmed = edge_is_boundary or after_header in _BOUNDARY or (after_header == _EDGE and not partial)
    header_blanks = {values[line.old] for line in lines[:header_end] if line.kind == _BLANK}
    if header_end and (header_trimmed or len(header_blanks) <= 1):
        lines = [*_sort_header(lines, header_end, directives), *lines[header_end:]]

    kept: list[_Line] = []
    n = len(lines)
    i = 0
    while i < n:
        if lines[i].kind not in _VANISH:
            line = lines[i]
            if line.kind == _TEXT and line.inline < 0:
                # the last text line of a section: the roles pass trims its trailing whitespace
                j = i + 1
                while j < n and lines[j].kind in _VANISH:
                    j += 1
                following = lines[j].kind if j < n else _EDGE
                if following in _BOUNDARY or (following == _EDGE and edge_is_boundary):
                    values[line.old] = values[line.old].rstrip(" \t")
            kept.append(line)
            i += 1
            continue
        j = i
        while j < n and lines[j].kind in _VANISH:
            j += 1
        before = lines[i - 1].kind if i > 0 else _EDGE
        after = lines[j].kind if j < n else _EDGE
        trimmed = (
            before in _BOUNDARY or after in _BOUNDARY or (edge_is_boundary and (before == _EDGE or after == _EDGE))
        )
        previous_blank = False
        for k in range(i, j):
            line = lines[k]
            if line.kind != _BLANK or not trimmed:
                kept.append(line)
                previous_blank = False
                continue
            at_edge = (before == _EDGE and not any(x.kind != _BLANK for x in lines[i:k])) or (
                after == _EDGE and not any(x.kind != _BLANK for x in lines[k:j])
            )
            if previous_blank or at_edge:
                continue  # one blank line where several stood; none at a prompt's edges
            values[line.old] = ""
            kept.append(line)
            previous_blank = True
        i = j

    line_map: list[int | None] = [None] * len(values)
    for number, line in enumerate(kept, 1):
        line_map[line.old] = number
    out = "\n".join(values[line.old] for line in kept)
    return Layout(out + "\n" if kept else "", tuple(line_map))


# ---------------------------------------------------------------------------------------------
# The safety rule


@dataclass(frozen=True, slots=True)
class FileResult:
    """What fmt did (or would do) with one source."""

    rel: str  # path under the source folder
    display: str  # as diagnostics name it
    status: str  # "unchanged" | "changed" | "refused"
    original: bytes = b""
    formatted: str | None = None
    diagnostics: tuple[Diagnostic, ...] = ()


@dataclass(frozen=True, slots=True)
class FormatResult:
    files: tuple[FileResult, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def changed(self) -> tuple[FileResult, ...]:
        return tuple(f for f in self.files if f.status == "changed")

    @property
    def refused(self) -> tuple[FileResult, ...]:
        return tuple(f for f in self.files if f.status == "refused")

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


class FormatError(ValueError):
    """`format_text` could not format the text under the safety rule; `diagnostics` say why."""

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics = tuple(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics) or "cannot format")


#: what the before/after compiles meter with (see `format_tree`)
CHECK_TOKENIZER = "approx-bytes/4"

#: the transform `format_tree` checks: (normalised text, is a partial) → layout
Formatter = Callable[[str, bool], Layout]


def _default_formatter(text: str, partial: bool) -> Layout:
    return layout(text, partial=partial)


def _is_partial(rel: str) -> bool:
    return posixpath.basename(rel).startswith(PARTIAL_PREFIX)


def _normalised(data: dict[str, Any], maps: dict[str, Layout]) -> dict[str, Any]:
    """An artifact's JSON without what formatting must change: the source's digest, and source
    line numbers (mapped to the formatted file's)."""
    data = dict(data)
    data.pop("source_sha256", None)
    messages = []
    for message in data.get("messages", ()):
        message = dict(message)
        blocks = []
        for block in message.get("blocks", ()):
            block = dict(block)
            sections = []
            for section in block.get("sections", ()):
                section = dict(section)
                origins = []
                for source, line in section.get("origins", ()):
                    mapped = maps[source].new_line(line) if source in maps else line
                    origins.append([source, mapped])
                section["origins"] = origins
                sections.append(section)
            block["sections"] = sections
            blocks.append(block)
        message["blocks"] = blocks
        messages.append(message)
    data["messages"] = messages
    cache = data.get("cache")
    end = cache.get("prefix_end") if isinstance(cache, dict) else None
    if isinstance(end, dict) and isinstance(end.get("line"), int):
        # where the prefix ends moves with its line, its column with the line's own layout; the
        # end of the request sits after the last text, wherever trailing blank lines left it
        source = end.get("source")
        mapped = maps[source].new_line(end["line"]) if source in maps else end["line"]
        if end.get("reason") == "end of request":
            mapped = None
        data["cache"] = {**(cache or {}), "prefix_end": {**end, "line": mapped, "column": None}}
    return data


def _first_difference(before: Any, after: Any, at: str = "") -> str | None:
    """The path of the first field that differs (`messages[0].content`), or None. The artifact's
    depth is fixed by its schema, so the recursion is bounded."""
    if type(before) is not type(after):
        return at or "artifact"
    if isinstance(before, dict):
        for key in (*before, *(k for k in after if k not in before)):
            if key not in before or key not in after:
                return f"{at}.{key}" if at else key
            found = _first_difference(before[key], after[key], f"{at}.{key}" if at else key)
            if found:
                return found
        return None
    if isinstance(before, list):
        if len(before) != len(after):
            return at
        for i, (x, y) in enumerate(zip(before, after, strict=True)):
            found = _first_difference(x, y, f"{at}[{i}]")
            if found:
                return found
        return None
    return None if before == after else at


#: warnings about the bytes of a file that fmt writes anew (UTF-8 without a BOM, LF line ends):
#: formatting makes them go away, which is the point
FIXED_BY_FORMATTING = frozenset((codes.BOM_DROPPED, codes.CRLF_NORMALISED))


def _warnings(diagnostics: Iterable[Diagnostic]) -> Counter[str]:
    return Counter(d.code for d in diagnostics if d.severity == "warning" and d.code not in FIXED_BY_FORMATTING)


def _refuse_uncompiled(display: str, first: Diagnostic, via: str | None) -> Diagnostic:
    where = f"{first.path}:{first.line}:{first.col}"
    subject = f"`{via}`, which includes it," if via else "it"
    return make(
        codes.FMT_DOES_NOT_COMPILE,
        f"not formatted: {subject} does not compile ({first.severity}[{first.code}] at {where}: {first.message})",
        first.span if first.path == display else file_span(),
        "fix what `promptc check` reports, then format",
        path=display,
        source_line=first.source_line if first.path == display else None,
    )


class _Compiler:
    """Compiles prompts of one tree (and the tree with one file replaced), in memory."""

    def __init__(self, config: Config, tree: SourceTree) -> None:
        self.config = config
        self.tree = tree
        self._before: dict[str, CompiledPrompt] = {}

    def compile(self, rel: str, files: Mapping[str, bytes] | None = None) -> CompiledPrompt:
        if files is None:
            if rel not in self._before:
                self._before[rel] = compile_source(rel, self.tree.files[rel], self.config, self.tree)
            return self._before[rel]
        tree = SourceTree(files=files, outside=self.tree.outside, root_display=self.tree.root_display)
        return compile_source(rel, files[rel], self.config, tree)


def _merged(files: Mapping[str, bytes], *layers: dict[str, bytes]) -> Mapping[str, bytes]:
    """`files` with `layers` over it (later ones win): a dict, or for a loose folder's lazily read
    files a chain that reads nothing until asked."""
    if isinstance(files, dict):
        merged = dict(files)
        for layer in layers:
            merged.update(layer)
        return merged

    # a ChainMap writes only to its first map (a layer): the files underneath are only read
    return ChainMap(*reversed(layers), cast(MutableMapping[str, bytes], files))


def _host(rel: str, files: Mapping[str, bytes]) -> tuple[str, bytes]:
    """A prompt that includes the partial `rel` and nothing else: how fmt checks a partial that no
    prompt includes. It lives next to the partial, under a name no source has."""
    folder = posixpath.dirname(rel)
    name = "promptc-fmt-host"
    while posixpath.join(folder, name + SOURCE_SUFFIX) in files:
        name += "-"
    return posixpath.join(folder, name + SOURCE_SUFFIX), f"/// include: {posixpath.basename(rel)}\n".encode()


def format_tree(
    root: Path | str,
    rels: Iterable[str] | None = None,
    config: Config | None = None,
    *,
    tree: SourceTree | None = None,
    formatter: Formatter = _default_formatter,
) -> FormatResult:
    """Format the sources `rels` (paths under the source folder `root`; default: every `.prompt`
    file in it) under the safety rule. Nothing is written: the result holds each file's formatted
    text; `write_results` writes the changed ones. `tree` (a `SourceTree`) is used instead of
    reading `root` when given; `formatter` is the transform under test (the default is `layout`)."""
    # Every text of the artifact (messages, sections, tools, schema) is compared byte for byte, so
    # when the texts agree the counts of any tokenizer agree: the check meters with the byte
    # estimate, which loads nothing (a real tokenizer takes a second to load).
    config = replace(config or Config(), tokenizer=CHECK_TOKENIZER)
    diagnostics: list[Diagnostic] = []
    if tree is None:
        root = Path(root)
        if not root.is_dir():
            missing = make(
                codes.SOURCE_NOT_FOUND,
                f"source folder `{root}` not found",
                None,
                "pass a folder or a .prompt file: `promptc fmt PATH`",
                path=str(root),
            )
            return FormatResult((), (missing,))
        tree, read_diagnostics = read_tree(root, Path(config.out))
        diagnostics += read_diagnostics

    # a loose file's folder (`promptc fmt ~/notes.prompt`) is never read whole: its files are
    # read when a compile asks for them (the tree is a `LooseFiles`)
    files = tree.files if isinstance(tree.files, LooseFiles) else {rel: tree.files[rel] for rel in tree.files}
    wanted = sorted(rel for rel in files if rel.endswith(SOURCE_SUFFIX)) if rels is None else list(rels)
    compiler = _Compiler(config, tree)
    includers: dict[str, list[str]] | None = None
    results: list[FileResult] = []
    maps: dict[str, Layout] = {}
    for rel in wanted:
        display = tree.display(rel)
        data = files[rel]
        src, _items, read_problems = read_source(display, data)
        if src is None or has_errors(read_problems):
            first = next(d for d in read_problems if d.severity == "error")
            results.append(FileResult(rel, display, "refused", data, None, (_refuse_uncompiled(display, first, None),)))
            continue
        partial = _is_partial(rel)
        # what the file's artifacts are checked on: itself, or every prompt including it
        if partial:
            if includers is None:
                includers = {}
                for prompt in (r for r in files if is_prompt(r)):
                    for dep in compiler.compile(prompt).includes:
                        includers.setdefault(dep, []).append(prompt)
            targets = includers.get(rel, [])
        else:
            targets = [rel]
        extra: dict[str, bytes] = {}
        if not targets:
            host, text = _host(rel, files)
            extra[host] = text
            targets = [host]
        before = [
            compiler.compile(t) if t not in extra else compiler.compile(t, _merged(files, extra)) for t in targets
        ]
        broken = next((c for c in before if has_errors(c.diagnostics)), None)
        if broken is not None:
            first = next(d for d in broken.diagnostics if d.severity == "error")
            via = None if broken.source == rel else (None if broken.source in extra else tree.display(broken.source))
            results.append(FileResult(rel, display, "refused", data, None, (_refuse_uncompiled(display, first, via),)))
            continue
        formatted = formatter(src.text, partial)
        new_bytes = formatted.text.encode("utf-8")
        if new_bytes == data:
            results.append(FileResult(rel, display, "unchanged", data, formatted.text))
            continue
        after_files = _merged(files, extra, {rel: new_bytes})
        problem = None
        for old in before:
            new = compiler.compile(old.source, after_files)
            problem = _compare(old, new, {rel: formatted}, display)
            if problem is not None:
                break
        if problem is not None:
            results.append(FileResult(rel, display, "refused", data, None, (problem,)))
            continue
        maps[rel] = formatted
        results.append(FileResult(rel, display, "changed", data, formatted.text))
    results = _check_together(results, maps, files, compiler, includers)
    for result in results:
        diagnostics += result.diagnostics
    return FormatResult(tuple(results), tuple(diagnostics))


def _compare(old: CompiledPrompt, new: CompiledPrompt, maps: dict[str, Layout], display: str) -> Diagnostic | None:
    """E931 when the formatted file compiles to another artifact, E932 when its warnings change."""
    name = old.name
    if has_errors(new.diagnostics) or new.artifact is None:
        first = next((d for d in new.diagnostics if d.severity == "error"), None)
        why = f"the formatted text does not compile ({first.code}: {first.message})" if first else "no artifact"
        return _changed(display, name, why)
    assert old.artifact is not None
    field_path = _first_difference(_normalised(old.artifact.to_json(), maps), _normalised(new.artifact.to_json(), {}))
    if field_path is not None:
        return _changed(display, name, f"`{field_path}` would change")
    if _warnings(old.diagnostics) != _warnings(new.diagnostics):
        gained = sorted((_warnings(new.diagnostics) - _warnings(old.diagnostics)).elements())
        lost = sorted((_warnings(old.diagnostics) - _warnings(new.diagnostics)).elements())
        what = ", ".join([*(f"+{c}" for c in gained), *(f"-{c}" for c in lost)])
        return make(
            codes.FMT_CHANGES_WARNINGS,
            f"not formatted: formatting would change the warnings of `{name}` ({what})",
            file_span(),
            "this is a bug in promptc fmt: please report it with the file; the file is unchanged",
            path=display,
        )
    return None


def _changed(display: str, name: str, why: str) -> Diagnostic:
    return make(
        codes.FMT_CHANGES_ARTIFACT,
        f"not formatted: the compiled artifact of `{name}` would not stay byte-identical: {why}",
        file_span(),
        "this is a bug in promptc fmt: please report it with the file; the file is unchanged",
        path=display,
    )


def _check_together(
    results: list[FileResult],
    maps: dict[str, Layout],
    files: Mapping[str, bytes],
    compiler: _Compiler,
    includers: dict[str, list[str]] | None,
) -> list[FileResult]:
    """Each change was checked on its own; a prompt that two changed files feed (itself and a
    partial, or two partials) is checked once more with every change applied."""
    changed = {r.rel: r for r in results if r.status == "changed"}
    if len(changed) < 2:
        return results

    feeds: dict[str, list[str]] = {}
    for rel in changed:
        if _is_partial(rel):
            for prompt in (includers or {}).get(rel, []):
                feeds.setdefault(prompt, []).append(rel)
        else:
            feeds.setdefault(rel, []).append(rel)
    together = _merged(files, {rel: (r.formatted or "").encode("utf-8") for rel, r in changed.items()})
    refused: dict[str, Diagnostic] = {}
    for prompt, sources in sorted(feeds.items()):
        if len(sources) < 2 or not is_prompt(prompt):
            continue
        problem = _compare(
            compiler.compile(prompt), compiler.compile(prompt, together), maps, changed[sources[0]].display
        )
        if problem is not None:
            for rel in sources:
                refused[rel] = problem
    if not refused:
        return results
    return [
        FileResult(r.rel, r.display, "refused", r.original, None, (refused[r.rel],)) if r.rel in refused else r
        for r in results
    ]


def write_results(result: FormatResult, root: Path | str) -> list[Diagnostic]:
    """Write every changed file atomically (`promptc.runtime.atomic`: a temporary file beside it, flushed,
    then renamed over it), keeping its permissions, and only if it still holds the bytes fmt read:
    a save that lands while fmt runs is kept, never overwritten. A symlinked source stays a link
    (its target is rewritten) when the target lies inside `root`; one to a file elsewhere is E915
    (`promptc.runtime.confine.edit_refusal`). Returns E933 or E915 for each file that was not
    written (the file is as it was); the caller must not count those as reformatted."""
    problems = []
    done: dict[str, bytes] = {}  # real path → bytes written (a symlink and its target are one file)
    for item in result.changed:
        path = Path(root) / item.rel
        data = (item.formatted or "").encode("utf-8")
        real = os.path.realpath(path)
        if done.get(real) == data:
            continue
        refused = edit_refusal(path, root, "fmt", item.display)
        if refused is not None:
            problems.append(refused)
            continue
        try:
            write_file(path, data, expect=item.original)
            done[real] = data
        except ChangedOnDisk:
            problems.append(
                make(
                    codes.FMT_WRITE_FAILED,
                    "not written: the file changed on disk while fmt ran, and the new text is kept",
                    file_span(),
                    "run `promptc fmt` again to format what is there now",
                    path=item.display,
                )
            )
        except OSError as exc:
            problems.append(
                make(
                    codes.FMT_WRITE_FAILED,
                    f"cannot write the formatted file: {reason(exc)}",
                    file_span(),
                    "check the file's permissions and the free space; the file is unchanged",
                    path=item.display,
                )
            )
    return problems


def format_text(
    text: str,
    *,
    name: str = "prompt",
    partials: dict[str, str] | None = None,
    config: Config | None = None,
    formatter: Formatter = _default_formatter,
) -> str:
    """The canonical layout of the prompt (or, for a `name` starting with `_`, the partial) held in
    `text`, checked like `promptc fmt` checks a file: it must compile, to the same artifact after
    formatting. Raises `FormatError` (with the diagnostics) when it cannot. `partials` maps
    source-relative paths to the text of the files it includes (and of tools and schemas)."""
    rel = f"{name}{SOURCE_SUFFIX}"
    files = {rel: text.encode("utf-8")}
    files.update({path: body.encode("utf-8") for path, body in (partials or {}).items()})
    result = format_tree("", [rel], config or Config(), tree=SourceTree(files=files), formatter=formatter)
    outcome = result.files[0]
    if outcome.status == "refused" or outcome.formatted is None:
        raise FormatError(outcome.diagnostics)
    return outcome.formatted


def unified_diff(item: FileResult) -> str:
    """The change fmt makes to one file, as a unified diff."""
    before = item.original.decode("utf-8", "replace").splitlines(keepends=True)
    after = (item.formatted or "").splitlines(keepends=True)
    return "".join(difflib.unified_diff(before, after, f"{item.display}", f"{item.display}"))
