"""Diagnostics as data: spans, diagnostics, and their text/json/github/sarif renderings.

Passes never print or raise for a user's mistake; they append a `Diagnostic` to the context.
Only the CLI turns diagnostics into text and exit codes.
"""

from __future__ import annotations

import bisect
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import field, replace
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from . import codes
from .codes import CODES, Code, Severity
from .records import dataclass
from .version import VERSION


@dataclass(frozen=True, slots=True)
class Span:
    """A range in a source file: 1-based line/column (columns count code points), 0-based offsets."""

    start: int
    end: int
    line: int
    col: int
    #: The file this span points into; lets a section mix text from the includer and its partials.
    src: SourceText | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class SourceText:
    """Normalised source text with an index of line starts, to map offsets to line:col."""

    path: str
    text: str
    line_starts: tuple[int, ...] = field(default=())
    #: line number → its text, made once: every diagnostic on a line shares one string (a
    #: million diagnostics on one 7 MB line must not hold a million copies of it)
    lines: dict[int, str] = field(default_factory=dict, compare=False, repr=False)

    @staticmethod
    def of(path: str, text: str) -> SourceText:
        starts = [0]
        find = text.find
        pos = find("\n")
        while pos != -1:
            starts.append(pos + 1)
            pos = find("\n", pos + 1)
        return SourceText(path, text, tuple(starts))

    def span(self, start: int, end: int | None = None) -> Span:
        start = max(0, min(start, len(self.text)))
        end = start if end is None else max(start, min(end, len(self.text)))
        index = bisect.bisect_right(self.line_starts, start) - 1
        return Span(start, end, index + 1, start - self.line_starts[index] + 1, self)

    def line_text(self, line: int) -> str:
        if not 1 <= line <= len(self.line_starts):
            return ""
        found = self.lines.get(line)
        if found is None:
            start = self.line_starts[line - 1]
            end = self.text.find("\n", start)
            found = self.lines[line] = self.text[start : end if end != -1 else len(self.text)]
        return found


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text between two places of the diagnostic's own file with `text` (an insertion
    when they are the same place): offsets into the normalised text, and the same places as
    1-based lines and code-point columns, as diagnostics count them."""

    start: int
    end: int
    line: int
    col: int
    end_line: int
    end_col: int
    text: str

    @staticmethod
    def of(source: SourceText, start: int, end: int, text: str) -> Edit:
        first, last = source.span(start), source.span(end)
        return Edit(first.start, last.start, first.line, first.col, last.line, last.col, text)

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "col": self.col,
            "end_line": self.end_line,
            "end_col": self.end_col,
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class Fix:
    """A suggestion as data, as ruff's `Fix`: what it does (`title`, an editor's quick fix) and the
    edits that do it. The hint says the same in words; the CLI prints the hint, `--format json`
    and SARIF carry the fix, and the language server offers it as a code action."""

    title: str
    edits: tuple[Edit, ...]
    #: the one fix the hint proposes, as opposed to one of several ways out
    preferred: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "edits": [e.to_json() for e in self.edits], "preferred": self.preferred}


def replace_word(source: SourceText, span: Span, old: str, new: str) -> Fix | None:
    """The fix replacing the word `old` where it is written inside `span` (the first whole-word
    occurrence) with `new`; None when `old` is not written there."""
    written = source.text[span.start : span.end]
    match = re.search(rf"(?<![\w]){re.escape(old)}(?![\w])", written)
    if match is None:
        return None
    at = span.start + match.start()
    return Fix(f"Replace `{old}` with `{new}`", (Edit.of(source, at, at + len(old), new),))


def insert(source: SourceText, offset: int, text: str, title: str, *, preferred: bool = False) -> Fix:
    """The fix inserting `text` at `offset` of `source`."""
    return Fix(title, (Edit.of(source, offset, offset, text),), preferred)


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    severity: Severity
    message: str
    path: str
    span: Span | None = None
    hint: str | None = None
    #: The source line the caret points into (kept so diagnostics render without re-reading files).
    source_line: str | None = None
    #: For a diagnostic in a partial (or a tool file): the prompts whose build reported it
    included_by: tuple[str, ...] = ()
    #: what would fix it, as edits of its own file (the first is the one the hint proposes)
    fixes: tuple[Fix, ...] = ()

    def __post_init__(self) -> None:
        if self.code not in CODES:  # a programming error, not a user one
            raise ValueError(f"undocumented diagnostic code {self.code}")

    @property
    def line(self) -> int:
        return self.span.line if self.span else 1

    @property
    def col(self) -> int:
        return self.span.col if self.span else 1

    @property
    def end(self) -> tuple[int, int]:
        """(line, column) just past the span, on the span's line (a span that runs past the end of
        its line ends there). Columns count code points from 1, like `col`."""
        if self.span is None:
            return self.line, self.col
        width = max(0, self.span.end - self.span.start)
        if self.source_line is not None:
            width = min(width, max(0, len(self.source_line) + 1 - self.col))
        return self.line, self.col + width

    def __str__(self) -> str:
        """The CLI's one-line form: `path:line:col: severity[CODE]: message`."""
        return f"{self.path}:{self.line}:{self.col}: {self.severity}[{self.code}]: {self.message}"

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.path, self.line, self.col, self.code, self.message)

    def as_error(self) -> Diagnostic:
        return replace(self, severity="error")

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "end_line": self.end[0],
            "end_col": self.end[1],
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
            "included_by": list(self.included_by),
            "fixes": [fix.to_json() for fix in self.fixes],
        }


def file_span() -> Span:
    """The span of a diagnostic about a whole file (it has no better place): shown at 1:1."""
    return Span(0, 0, 1, 1)


def make(
    code: Code,
    message: str,
    span: Span | None = None,
    hint: str | None = None,
    *,
    source: SourceText | None = None,
    path: str | None = None,
    source_line: str | None = None,
    fixes: Iterable[Fix | None] = (),
) -> Diagnostic:
    """The one way to make a diagnostic. The severity is the code's own. The file is the span's
    own when it has one, else `source`, else `path` (for diagnostics about a file that could not be
    read, a folder or the configuration); the source line under the caret comes from the file.
    `fixes` are edits of that file (a None, a suggestion that found nothing to edit, is dropped)."""
    src = (span.src if span is not None and span.src is not None else None) or source
    line = source_line
    if line is None and span is not None and src is not None:
        line = src.line_text(span.line)
    if span is not None and span.src is not None:
        span = replace(span, src=None)  # diagnostics travel between processes; keep them small
    where = src.path if src is not None else (path if path is not None else "<unknown>")
    kept = tuple(fix for fix in fixes if fix is not None)
    return Diagnostic(str(code), code.severity, message, where, span, hint, line, fixes=kept)


class DiagnosticSink:
    """Collects diagnostics for one source file; knows the text so spans get their source line."""

    __slots__ = ("source", "items")

    def __init__(self, source: SourceText) -> None:
        self.source = source
        self.items: list[Diagnostic] = []

    def report(
        self,
        code: Code,
        message: str,
        span: Span | None = None,
        hint: str | None = None,
        fixes: Iterable[Fix | None] = (),
    ) -> None:
        self.items.append(make(code, message, span, hint, source=self.source, fixes=fixes))

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.items.extend(diagnostics)

    @property
    def has_errors(self) -> bool:
        return has_errors(self.items)


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diagnostics)


def ordered(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    return sorted(diagnostics, key=Diagnostic.sort_key)


def deduplicated(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """One diagnostic per place and problem, ordered; one in a partial names every prompt that
    reported it (the build and the language server alike)."""
    unique: dict[tuple[str, int, int, str, str], Diagnostic] = {}
    for d in diagnostics:
        key = (d.path, d.line, d.col, d.code, d.message)
        first = unique.get(key)
        if first is None:
            unique[key] = d
        elif d.included_by:
            names = tuple(sorted({*first.included_by, *d.included_by}))
            unique[key] = replace(first, included_by=names)
    return ordered(unique.values())


# ---------------------------------------------------------------------------------------------
# Renderers


def _expand_tabs_for_caret(line: str, col: int) -> tuple[str, int]:
    """Tabs in the echoed line would misplace the caret; show them as single spaces."""
    return line.replace("\t", " "), col


#: ANSI styles of `render_text(color=True)`: bold red errors, bold yellow warnings, blue gutters,
#: a caret in the severity's colour, a cyan hint label (rustc's and ruff's palette)
_STYLE = {"error": "\x1b[1;31m", "warning": "\x1b[1;33m", "gutter": "\x1b[34m", "hint": "\x1b[36m", "bold": "\x1b[1m"}
_RESET = "\x1b[0m"


def render_text(d: Diagnostic, color: bool = False) -> str:
    """The CLI's text rendering: the one-line form, the source line with a caret under the span,
    and the hint. `color` adds ANSI styles (the CLI decides: `--color`, `NO_COLOR`, a terminal)."""

    def paint(style: str, text: str) -> str:
        return f"{_STYLE[style]}{text}{_RESET}" if color else text

    where = f"{d.path}:{d.line}:{d.col}:"
    lines = [f"{paint('bold', where)} {paint(d.severity, f'{d.severity}[{d.code}]')}: {d.message}" if color else str(d)]
    if d.span is not None and d.source_line is not None:
        shown, col = d.source_line, d.col
        if len(shown) > 200:  # keep huge single-line files readable (cut first: a tab is one column)
            start = max(0, col - 80)
            shown = ("…" if start else "") + shown[start : start + 160]
            col = col - start + (1 if start else 0)
        shown, col = _expand_tabs_for_caret(shown, col)
        width = max(1, min(d.span.end - d.span.start, len(shown) - col + 1))
        gutter = str(d.line)
        pad = " " * len(gutter)
        lines.append(paint("gutter", f" {pad} |"))
        lines.append(f"{paint('gutter', f' {gutter} |')} {shown}")
        lines.append(f"{paint('gutter', f' {pad} |')} {' ' * (col - 1)}{paint(d.severity, '^' * width)}")
    if d.included_by:
        lines.append(f"  {paint('hint', '= note:')} {_included_by(d.included_by)}")
    if d.hint:
        lines.append(f"  {paint('hint', '= hint:')} {d.hint}")
    return "\n".join(lines)


def _included_by(names: tuple[str, ...], shown: int = 5) -> str:
    more = len(names) - shown
    listed = ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")
    return f"reported while compiling {listed}, which include{'s' if len(names) == 1 else ''} this file"


def use_color(choice: str = "auto", stream: TextIO | None = None) -> bool:
    """Whether to colour output: `always`/`never` decide; `auto` colours a terminal unless
    `NO_COLOR` is set (https://no-color.org), `TERM` is `dumb` or a CI runner is detected;
    `FORCE_COLOR` colours anyway."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    env = os.environ
    if env.get("FORCE_COLOR"):
        return True
    if "NO_COLOR" in env or env.get("TERM") == "dumb" or env.get("CI"):
        return False
    stream = stream if stream is not None else sys.stdout
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def github_escape(value: str, *, prop: bool = False) -> str:
    """Escape a value for a GitHub Actions workflow command (`prop`: a property like file=)."""
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


_MARKDOWN_SPECIAL = re.compile(r"([!-/:-@\[-`{-~])")


def markdown_escape(value: str) -> str:
    """Text as literal Markdown (GitHub's job summaries, pull request comments): every ASCII
    punctuation character backslash-escaped (CommonMark allows it for each one), so a name or
    message from a source is never markup, a link, an HTML tag, a mention or a table cell break;
    line breaks become spaces, so it stays in its table cell."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(value.splitlines()))


def render_markdown(diagnostics: Iterable[Diagnostic], title: str, files: int | None = None) -> str:
    """A Markdown report (GitHub's `$GITHUB_STEP_SUMMARY`): a heading with `title` and the counts,
    then one table row per diagnostic with its place, code, message and hint."""
    items = list(diagnostics)
    lines = [f"### {markdown_escape(title)}: {summary_line(items, files)}", ""]
    if items:
        lines += ["| | where | code | message |", "| --- | --- | --- | --- |"]
        for d in items:
            mark = "❌ error" if d.severity == "error" else "⚠️ warning"
            text = markdown_escape(d.message)
            if d.included_by:
                text += f" \\({markdown_escape(_included_by(d.included_by))}\\)"
            if d.hint:
                text += f"<br>hint: {markdown_escape(d.hint)}"
            where = markdown_escape(f"{d.path}:{d.line}:{d.col}")
            lines.append(f"| {mark} | {where} | {d.code} | {text} |")
        lines.append("")
    return "\n".join(lines)


def render_github(d: Diagnostic) -> str:
    kind = "error" if d.severity == "error" else "warning"
    message = (
        f"[{d.code}] {d.message}"
        + (f" ({_included_by(d.included_by)})" if d.included_by else "")
        + (f" (hint: {d.hint})" if d.hint else "")
    )
    end_line, end_col = d.end
    props = (
        f"file={github_escape(d.path, prop=True)},line={d.line},col={d.col},endLine={end_line},"
        f"endColumn={end_col},title={github_escape(d.code, prop=True)}"
    )
    return f"::{kind} {props}::{github_escape(message)}"


def summary_line(diagnostics: Iterable[Diagnostic], files: int | None = None) -> str:
    items = list(diagnostics)
    errors = sum(1 for d in items if d.severity == "error")
    warnings = len(items) - errors
    parts = [f"{errors} error{'s' if errors != 1 else ''}", f"{warnings} warning{'s' if warnings != 1 else ''}"]
    tail = f" in {files} file{'s' if files != 1 else ''}" if files is not None else ""
    return ", ".join(parts) + tail


# ---------------------------------------------------------------------------------------------
# SARIF 2.1.0 (GitHub code scanning and other viewers)

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


def _sarif_uri(path: str) -> str:
    """A diagnostic's path as a SARIF `artifactLocation.uri`: relative paths stay relative (to the
    folder promptc ran in, the repository root in CI), percent-encoded; absolute ones are `file:`
    URIs. `<std>/env.prompt` (a partial shipped with promptc) keeps its name, encoded."""
    if os.path.isabs(path):
        return Path(path).as_uri()
    # `:` encoded: in a first segment it would read as a scheme
    return quote(path.replace(os.sep, "/"), safe="/-._~!$&'()*+,;=@")


def _rule_names() -> dict[str, str]:
    """E501 → `UndeclaredInput`: the constant's name in `codes`, as SARIF rule names read."""
    return {
        str(value): "".join(part.capitalize() for part in name.split("_"))
        for name, value in vars(codes).items()
        if isinstance(value, Code) and name.isupper()
    }


def render_sarif(diagnostics: Iterable[Diagnostic], *, version: str | None = None) -> dict[str, Any]:
    """One SARIF 2.1.0 log of the diagnostics: a run of the tool `promptc`, whose rules are the
    codes reported (title, explanation, `promptc explain CODE`), one result per diagnostic at its
    `path:line:col` range (columns in code points, as promptc counts them). The hint is part of the
    message (code scanning shows only the message), and also in `properties` with the prompts that
    reported a partial's diagnostic. Deterministic: the same diagnostics give the same bytes."""
    if version is None:
        version = VERSION
    items = list(diagnostics)
    names = _rule_names()
    used = sorted({d.code for d in items})
    index = {code: i for i, code in enumerate(used)}
    rules = []
    for code in used:
        entry = CODES[code]
        rule: dict[str, Any] = {
            "id": code,
            "shortDescription": {"text": entry.heading},
            "fullDescription": {"text": entry.explain or entry.heading},
            "help": {
                "text": f"{entry.explain or entry.heading}\n\nRun `promptc explain {code}` for an example.",
                "markdown": f"{entry.explain or entry.heading}\n\nRun `promptc explain {code}` for an example.",
            },
            "defaultConfiguration": {"level": "error" if entry.severity == "error" else "warning"},
            "properties": {"tags": ["promptc", entry.severity]},
        }
        if code in names:
            rule["name"] = names[code]
        rules.append(rule)
    results = []
    for d in items:
        end_line, end_col = d.end
        region: dict[str, Any] = {
            "startLine": d.line,
            "startColumn": d.col,
            "endLine": end_line,
            "endColumn": max(end_col, d.col),
        }
        if d.source_line is not None and d.span is not None:
            region["snippet"] = {"text": d.source_line}
        text = d.message
        if d.included_by:
            text += f" ({_included_by(d.included_by)})"
        if d.hint:
            text += f"\nhint: {d.hint}"
        uri = _sarif_uri(d.path)
        where: dict[str, Any] = {"uri": uri} if uri.startswith("file:") else {"uri": uri, "uriBaseId": "%SRCROOT%"}
        result: dict[str, Any] = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": "error" if d.severity == "error" else "warning",
            "message": {"text": text},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": where,
                        "region": region,
                    }
                }
            ],
        }
        if d.fixes:
            result["fixes"] = [
                {
                    "description": {"text": fix.title},
                    "artifactChanges": [
                        {
                            "artifactLocation": where,
                            "replacements": [
                                {
                                    "deletedRegion": {
                                        "startLine": e.line,
                                        "startColumn": e.col,
                                        "endLine": e.end_line,
                                        "endColumn": e.end_col,
                                    },
                                    "insertedContent": {"text": e.text},
                                }
                                for e in fix.edits
                            ],
                        }
                    ],
                }
                for fix in d.fixes
            ]
        properties: dict[str, Any] = {}
        if d.hint:
            properties["hint"] = d.hint
        if d.included_by:
            properties["included_by"] = list(d.included_by)
        if properties:
            result["properties"] = properties
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "promptc",
                        "version": version,
                        "semanticVersion": version,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
