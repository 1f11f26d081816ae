"""Where two builds of one prompt first differ: the first character of the cache-stable prefix that
is not the same, as a place in each source tree (`promptc diff --old-src`, `--against`).

A prefix is read as one stream: the parts the request model hashes (`promptc.runtime.requestmodel`), in
the provider's cache order — the provider and the model, the parameters its cache keys on, the
tools and output schema, then each block with the role the provider sees — with the source spans
of the compiled document, so that every character knows where it came from (a `/// param:` line, a
partial's text, a define's, an escape's). The first character where the old and the new stream
differ is the cache bust's cause; when one stream is a prefix of the other, that side's prefix
simply ends there, and its place is the artifact's `cache.prefix_end` (with the reason).

Pure: the trees are in memory (`SourceTree`); nothing here reads files or runs git.
"""

from __future__ import annotations

import bisect
import json as _json
from collections.abc import Callable
from typing import Any

from ..backend.prefix import block_sections
from ..compile.pipeline import Compilation, compile_prompt
from ..facts.config import Config
from ..facts.diagnostics import SourceText, Span
from ..facts.language import JOINER
from ..facts.records import dataclass
from ..passes.context import SourceTree
from ..runtime import requestmodel
from ..runtime.model import Artifact
from ..syntax.jsonfile import locate
from ..syntax.nodes import Document, Escape, Text


@dataclass(frozen=True, slots=True)
class SourcePoint:
    """A place in a source tree: `source` as diagnostics show it (`prompts_src/agents/_identity.prompt`,
    `HEAD~1:prompts_src/…` for a git revision), 1-based line and column, the line's text, and,
    where the place is the end of a prefix, why it ends there."""

    source: str
    line: int
    column: int
    text: str
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "line": self.line,
            "column": self.column,
            "text": self.text,
            "reason": self.reason,
        }

    def label(self) -> str:
        return f"{self.source}:{self.line}:{self.column}"


@dataclass(frozen=True, slots=True)
class FirstDifference:
    """The first character where the old and new prefixes differ: `offset` counts characters of
    the prefix stream both share before it (the roles count as one character each, the tools and
    schema as their canonical JSON); `old`/`new` are None when that tree was not given or the
    prompt did not compile there."""

    offset: int
    new: SourcePoint | None
    old: SourcePoint | None

    def to_json(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "new": None if self.new is None else self.new.to_json(),
            "old": None if self.old is None else self.old.to_json(),
        }


def prompt_in(tree: SourceTree, rel: str, config: Config) -> Compilation | None:
    """The compile of `rel` in `tree` (the build's own, `pipeline.compile_prompt`), or None when
    it does not compile there: a build of that tree would fail it."""
    if rel not in tree.files:
        return None
    compiled = compile_prompt(rel, config, tree)
    return compiled if compiled.encoded is not None else None


def _doc(compiled: Compilation) -> Document:
    assert compiled.document is not None
    return compiled.document


def _artifact(compiled: Compilation) -> Artifact:
    assert compiled.artifact is not None
    return compiled.artifact


# (start offset in the stream, the piece's text, the span it came from (None: a joiner, a label),
# the request part it belongs to)
_Piece = tuple[int, str, Span | None, requestmodel.Part]


def _pieces(doc: Document) -> Callable[[int, int], tuple[requestmodel.Piece, ...]]:
    """Where the characters of each block's prefix text come from: its sections' text items."""

    def pieces(mi: int, bi: int) -> tuple[requestmodel.Piece, ...]:
        out: list[requestmodel.Piece] = []
        at = 0
        for si, section in enumerate(block_sections(doc, mi, bi)):
            if si:
                out.append(requestmodel.Piece(at, len(JOINER), None))
                at += len(JOINER)
            for item in section.items:
                if isinstance(item, (Text, Escape)) and item.value:
                    out.append(requestmodel.Piece(at, len(item.value), item.span))
                    at += len(item.value)
        return tuple(out)

    return pieces


def _stream(compiled: Compilation) -> tuple[str, list[_Piece], list[int]]:
    """The prefix as one string, its pieces and their start offsets (for bisect)."""
    doc, artifact = _doc(compiled), _artifact(compiled)
    request = requestmodel.of_artifact(artifact, param_spans=dict(doc.header.param_spans), pieces=_pieces(doc))
    pieces: list[_Piece] = []
    parts: list[str] = []
    at = 0

    def add(text: str, span: Span | None, part: requestmodel.Part) -> None:
        nonlocal at
        if text:
            pieces.append((at, text, span, part))
            parts.append(text)
            at += len(text)

    for part in request.prefix().parts:
        node_span = doc.messages[part.message].span if part.message is not None else part.span
        add("\x00", node_span, part)  # the label: a change of role is a difference at the separator
        add(part.label + "\x00", node_span, part)
        text = part.text or ""
        if part.kind == "block" and part.pieces:
            for piece in part.pieces:
                add(text[piece.offset : piece.offset + piece.length], piece.span, part)
            done = part.pieces[-1].offset + part.pieces[-1].length
            add(text[done:], None, part)
        else:
            add(text, part.span, part)
    return "".join(parts), pieces, [piece[0] for piece in pieces]


def _common_length(a: str, b: str) -> int:
    """How many leading characters `a` and `b` share (slices compare in C: O(n log n))."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _point(compiled: Compilation, streamed: tuple[str, list[_Piece], list[int]], offset: int) -> SourcePoint:
    stream, pieces, starts = streamed
    if offset >= len(stream):  # this side's prefix ends here: why it ends
        return _end(compiled)
    index = bisect.bisect_right(starts, offset) - 1
    part = pieces[index][3]
    src = _doc(compiled).source
    if part.kind in ("tools", "output_schema"):
        files = [compiled.root + path for path in _artifact(compiled).resources]
        where = ", ".join(files) or src.path
        return SourcePoint(where, 1, 1, "", _HEAD_REASON)
    if part.kind in ("provider", "model", "param"):
        what = part.label.removeprefix("param:")
        if part.span is None:  # from the configuration, or the provider the model implies
            return SourcePoint(src.path, 1, 1, src.line_text(1), f"the {what} differs (`{part.text}`)")
        span = part.span
        where_src = span.src or src
        return SourcePoint(
            where_src.path,
            span.line,
            span.col,
            where_src.line_text(span.line),
            f"`{what}` differs: the cache keys on it",
        )
    # a joiner or a label has no place of its own: the next piece that has one
    while index < len(pieces) and pieces[index][2] is None:
        index += 1
        offset = pieces[index][0] if index < len(pieces) else offset
    if index >= len(pieces):
        return _end(compiled)
    start, text, span, _ = pieces[index]
    assert span is not None
    src = span.src or _doc(compiled).source
    exact = span.end - span.start == len(text)  # text as written (not a define, an escape, a frame)
    place = src.span(span.start + (offset - start if exact else 0))
    return SourcePoint(src.path, place.line, place.col, src.line_text(place.line))


def _end(compiled: Compilation) -> SourcePoint:
    end = _artifact(compiled).cache.prefix_end
    if end is None or end.source is None or end.line is None:
        return SourcePoint(_doc(compiled).source.path, 1, 1, _doc(compiled).source.line_text(1), "end of prefix")
    path = end.source if end.source.startswith("<") else compiled.root + end.source
    text = ""
    src = _doc(compiled).source if _doc(compiled).source.path == path else None
    if src is None:
        src = _find_source(_doc(compiled), path)
    if src is not None:
        text = src.line_text(end.line)
    return SourcePoint(path, end.line, end.column or 1, text, end.reason)


def _find_source(doc: Document, path: str) -> SourceText | None:
    for message in doc.messages:
        for section in message.sections:
            for item in section.items:
                src = item.span.src
                if src is not None and src.path == path:
                    return src
            if section.source.path == path:
                return section.source
    return None


#: the reason `_point` gives for a difference in the tools or the output schema
_HEAD_REASON = "the tools or the output schema differ"


def _json_difference(a: Any, b: Any) -> tuple[tuple[str | int, ...], bool]:
    """The path of the first place where `a` differs from `b` in canonical JSON order (keys as
    written, lists by index), and whether that path names a member of `a` (False: `a` ends
    there, or has no such member; the path is then its container). Iterative."""
    path: tuple[str | int, ...] = ()
    while True:
        if isinstance(a, dict) and isinstance(b, dict):
            mine, theirs = list(a.items()), list(b.items())
            for i, (key, value) in enumerate(mine):
                if i >= len(theirs) or theirs[i][0] != key:
                    return (*path, key), True
                if value != theirs[i][1]:
                    path, a, b = (*path, key), value, theirs[i][1]
                    break
            else:
                return path, False
            continue
        if isinstance(a, list) and isinstance(b, list):
            for i, value in enumerate(a):
                if i >= len(b):
                    return (*path, i), True
                if value != b[i]:
                    path, a, b = (*path, i), value, b[i]
                    break
            else:
                return path, False
            continue
        return path, True


def _head_point(compiled: Compilation, other: Compilation) -> SourcePoint | None:
    """Where the tools or the output schema of `compiled` first differ from `other`'s, in the JSON
    file that defines them: the line of the tool's edited description, not line 1 of the file."""
    tree = compiled.tree
    mine = [t.to_json() for t in _artifact(compiled).tools]
    theirs = [t.to_json() for t in _artifact(other).tools]
    schema = _artifact(compiled).output_schema
    if mine != theirs:
        (index, *inner), _ = _json_difference(mine, theirs)
        if not isinstance(index, int) or index >= len(mine):
            return None
        name = mine[index].get("name")

        def want(value: Any) -> bool:
            return isinstance(value, dict) and value.get("name") == name

        what = f"tool `{name}` differs" + (f" at `{inner[0]}`" if inner else "")
    elif schema is not None:
        body = schema.to_json()
        other_schema = _artifact(other).output_schema
        other_body = other_schema.to_json() if other_schema is not None else {}
        path, _ = _json_difference(body.get("schema", body), other_body.get("schema", other_body))
        inner = list(path)
        target = body.get("schema", body)

        def want(value: Any) -> bool:  # noqa: F811
            return bool(value == target)

        what = "the output schema differs"
    else:
        return None
    for rel in _artifact(compiled).resources:
        try:
            text = tree.files[rel].decode("utf-8")
            value = _json.loads(text)
        except (KeyError, OSError, UnicodeDecodeError, ValueError, RecursionError):
            continue
        if want(value):
            prefix: tuple[str | int, ...] = ()
        elif isinstance(value, list) and any(want(v) for v in value):
            prefix = (next(i for i, v in enumerate(value) if want(v)),)
        else:
            continue

        src = SourceText.of(compiled.root + rel, text.replace("\r\n", "\n"))
        place = src.span(locate(src.text, (*prefix, *inner)))
        return SourcePoint(src.path, place.line, place.col, src.line_text(place.line), what)
    return None


def first_difference(old: Compilation | None, new: Compilation | None) -> FirstDifference | None:
    """Where the prefixes of `old` and `new` first differ; None when either side did not compile,
    or when their prefix streams are the same (nothing to point at)."""
    if old is None or new is None:
        return None
    old_streamed, new_streamed = _stream(old), _stream(new)
    if old_streamed[0] == new_streamed[0]:
        return None
    offset = _common_length(old_streamed[0], new_streamed[0])
    new_point, old_point = _point(new, new_streamed, offset), _point(old, old_streamed, offset)
    if new_point.reason == _HEAD_REASON:  # a tool or the schema: the line in its JSON file
        new_point = _head_point(new, old) or new_point
    if old_point.reason == _HEAD_REASON:
        old_point = _head_point(old, new) or old_point
    return FirstDifference(offset, new_point, old_point)


__all__ = ["FirstDifference", "SourcePoint", "first_difference", "prompt_in"]
