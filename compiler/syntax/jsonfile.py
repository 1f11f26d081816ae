"""JSON source files (tool definitions, output schemas): parse with located errors, bounded work.

`read_json` decodes the bytes like a prompt source (UTF-8, BOM and CRLF handled by `source.decode`),
refuses nesting deeper than `MAX_DEPTH` before the recursive `json` parser sees it, refuses
duplicate keys (the standard library would keep the last one silently), and reports the first
error at its line and column inside the file. `locate` finds where a value sits in the file, so
that a problem found later (a bad tool name, a schema the meta-schema rejects) points into the
JSON file rather than at the directive that named it. Both scan the text once, iteratively.

Standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..facts import codes
from ..facts.diagnostics import Diagnostic, SourceText, make
from .source import decode

#: Deepest nesting of objects and lists accepted. Real tool schemas nest a handful of levels; the
#: bound keeps `json` and `jsonschema` (both recursive) far from Python's recursion limit.
MAX_DEPTH = 32

#: a string, or a bracket. A string with no closing quote runs to the end of the text: the scan never
#: restarts inside it (at each of its escaped quotes, reading the rest of the text again each time)
_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)|[{}\[\]]', re.S)
_TOKEN = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|([{}\[\],:])|([^\s{}\[\],:"]+))', re.S)


def too_deep(text: str, limit: int = MAX_DEPTH) -> int | None:
    """The offset where nesting first exceeds `limit`, or None."""
    depth = 0
    for match in _STRUCTURE.finditer(text):
        ch = match.group()
        if ch in "{[":
            depth += 1
            if depth > limit:
                return match.start()
        elif ch in "}]":
            depth -= 1
    return None


def locate(text: str, path: Sequence[str | int]) -> int:
    """The offset of the value at `path` (object keys and list indices) in the JSON `text`; for a
    path that does not exist, the offset of the deepest part of it that does (0 at worst)."""
    target = list(path)
    # one entry per open container: [is_object, current key or index, expecting a key]
    stack: list[list[Any]] = []
    best = 0
    pos = 0
    while True:
        match = _TOKEN.match(text, pos)
        if match is None:
            return best
        string, punct, _literal = match.groups()
        start = match.start(match.lastindex or 0)
        pos = match.end()
        top = stack[-1] if stack else None
        if punct in ("}", "]"):
            if stack:
                stack.pop()
            continue
        if punct == ",":
            if top is not None:
                if top[0]:
                    top[2] = True
                else:
                    top[1] += 1
            continue
        if punct == ":":
            if top is not None:
                top[2] = False
            continue
        if string is not None and top is not None and top[0] and top[2]:
            try:
                top[1] = json.loads(string)
            except ValueError:
                top[1] = None
            depth = len(stack)
            if depth <= len(target) and [e[1] for e in stack] == target[:depth]:
                best = start  # the key of a member on the path: better than its parent
            continue
        # a value starts here
        depth = len(stack)
        if depth <= len(target) and [e[1] for e in stack] == target[:depth]:
            if depth == len(target):
                return start
            best = start
        if punct == "{":
            stack.append([True, None, True])
        elif punct == "[":
            stack.append([False, 0, False])


def token_length(text: str, offset: int) -> int:
    """The length of the JSON token at `offset` (a whole string or literal; 1 for a bracket)."""
    match = _TOKEN.match(text, offset)
    if match is None or match.start(match.lastindex or 0) != offset:
        return 1
    return len(match.group(match.lastindex or 0))


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _reject_constant(name: str) -> Any:
    raise ValueError(f"`{name}` is not JSON")


def read_json(
    display: str,
    data: bytes,
    *,
    deep_hint: str = "flatten the schema (use `$defs` and `$ref` for shared parts)",
) -> tuple[SourceText | None, Any, list[Diagnostic]]:
    """Decode and parse one JSON file: (source, value, diagnostics). `source` is None when the
    bytes are not text; the file is usable when no diagnostic is an error (`value` is then the
    JSON value, which may itself be null). `deep_hint`: the hint when the file nests too deep."""
    src, diagnostics = decode(display, data)
    if src is None:
        return None, None, diagnostics
    text = src.text
    deep = too_deep(text)
    if deep is not None:
        return (
            src,
            None,
            [
                *diagnostics,
                make(
                    codes.INVALID_JSON,
                    f"JSON nests deeper than {MAX_DEPTH} levels",
                    src.span(deep, deep + 1),
                    deep_hint,
                    source=src,
                ),
            ],
        )
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except _DuplicateKey as exc:
        offset = _duplicate_offset(text, exc.key)
        return (
            src,
            None,
            [
                *diagnostics,
                make(
                    codes.INVALID_JSON,
                    f"key {json.dumps(exc.key)} given twice in one object",
                    src.span(offset, offset + len(exc.key) + 2),
                    "JSON readers disagree on which one wins; keep one",
                    source=src,
                ),
            ],
        )
    except json.JSONDecodeError as exc:
        return (
            src,
            None,
            [
                *diagnostics,
                make(
                    codes.INVALID_JSON,
                    f"invalid JSON: {exc.msg}",
                    src.span(exc.pos, exc.pos + 1),
                    "check for a missing comma or quote, or a trailing comma (JSON allows none)",
                    source=src,
                ),
            ],
        )
    except (ValueError, RecursionError) as exc:
        return (
            src,
            None,
            [
                *diagnostics,
                make(codes.INVALID_JSON, f"invalid JSON: {exc}", src.span(0), "write plain JSON", source=src),
            ],
        )
    problem = unrepresentable(value)
    if problem is not None:
        path, message, hint = problem
        offset = locate(text, path)
        return (
            src,
            None,
            [
                *diagnostics,
                make(
                    codes.INVALID_JSON, message, src.span(offset, offset + token_length(text, offset)), hint, source=src
                ),
            ],
        )
    return src, value, diagnostics


#: integers every JSON reader promptc feeds holds exactly (the artifact writer's 64-bit range)
INT_RANGE = 2**63


def unrepresentable(value: Any) -> tuple[list[str | int], str, str] | None:
    """The first value (in document order) that valid JSON can spell but no artifact can carry:
    an integer outside the 64-bit range, a number that overflows to infinity (`1e400`: written
    back it would become `null`), or a string (or key) holding a lone UTF-16 surrogate escape
    (`"\\ud800"`: no UTF-8 text can hold it). As (path, message, hint), or None. Iterative."""
    stack: list[tuple[list[str | int], Any]] = [([], value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, int):
            if not -INT_RANGE <= item < INT_RANGE:
                digits = str(item) if item.bit_length() < 200 else f"{str(item)[:20]}… ({len(str(item)):,} digits)"
                return (
                    path,
                    f"integer {digits} is outside the 64-bit range every JSON reader holds exactly",
                    "use a smaller number, or a string if it is an identifier",
                )
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                return (
                    path,
                    "number overflows to infinity, which JSON cannot carry (it would be written as `null`)",
                    "use a finite number (a float's largest is about 1.8e308)",
                )
        elif isinstance(item, str):
            if _lone_surrogate(item):
                return path, _SURROGATE, _SURROGATE_HINT
        elif isinstance(item, dict):
            for key, member in reversed(list(item.items())):
                if _lone_surrogate(key):
                    return [*path, key], f"key {_SURROGATE[7:]}", _SURROGATE_HINT
                stack.append(([*path, key], member))
        elif isinstance(item, list):
            stack.extend(([*path, index], member) for index, member in reversed(list(enumerate(item))))
    return None


_SURROGATE = (
    "string holds a lone UTF-16 surrogate (an escape like `\\ud800` without its pair), which no UTF-8 text can hold"
)
_SURROGATE_HINT = "write the character itself, or both halves of its surrogate pair (`\\ud83d\\ude00`)"


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _duplicate_offset(text: str, key: str) -> int:
    """The second occurrence of `"key":` (good enough to point at; the message names the key)."""
    pattern = re.compile(re.escape(json.dumps(key)) + r"\s*:")
    matches = pattern.finditer(text)
    first = next(matches, None)
    found = next(matches, None) or first
    return found.start() if found is not None else 0


__all__ = ["MAX_DEPTH", "locate", "read_json", "token_length", "too_deep", "unrepresentable"]
