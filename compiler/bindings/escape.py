"""Strings from prompt sources written into generated code as data, never as code.

Every string the bindings generators (`promptc.bindings`, `promptc.bindings_ts`) take from a
build — prompt names and file names, model names, descriptions, enum values, property names, the
prompt's leading comment — reaches the generated module through one of these functions, so a file
named `a" if __import__("os").system("x") else "a.prompt` or a model `x\"\"\"+…+\"\"\"` stays text:

- `python_string` / `ts_string`: a string literal whose value is exactly the text;
- `python_docstring` / `ts_comment`: text inside a `\"\"\"` docstring or a `/** */` comment, which
  cannot end it (every `"` and `\\` escaped in Python, `*/` broken up in TypeScript);
- `python_comment`: `#` comment lines, one per line of the text.

Whatever the text holds (quotes, backslashes, NUL and other control characters, line and
paragraph separators, lone surrogates), the output is printable, encodes as UTF-8 and cannot leave
its literal or comment: a character that is not printable is written as an escape (`\\x00`,
`\\u2028`, `\\ud800`), in a comment as the same escape's text. Standard library only.
"""

from __future__ import annotations

import json

__all__ = [
    "python_string",
    "python_literal",
    "python_docstring",
    "python_comment",
    "ts_string",
    "ts_comment",
    "printable",
]


def _escape(ch: str) -> str:
    """Python's escape of one character (`\\x00`, `\\u2028`, `\\U000e0001`)."""
    cp = ord(ch)
    if cp <= 0xFF:
        return f"\\x{cp:02x}"
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def printable(text: str, keep: str = "") -> str:
    """`text` with every character that is not printable (`str.isprintable`; a space is) written as
    its escape, but for those in `keep`."""
    if text.isprintable() and not keep:
        return text
    return "".join(ch if ch.isprintable() or ch in keep else _escape(ch) for ch in text)


_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\", '"': '\\"'}


def python_string(text: str) -> str:
    """A double-quoted Python string literal of `text`: backslash and quote escaped, and every
    character that is not printable, so the literal holds no line break, NUL or surrogate."""
    text = str(text)
    if text.isprintable() and "\\" not in text and '"' not in text:
        return f'"{text}"'
    return '"' + "".join(_SHORT.get(ch) or (ch if ch.isprintable() else _escape(ch)) for ch in text) + '"'


def python_literal(value: object) -> str:
    """A Python literal of a JSON scalar (`'a'`, `1`, `True`, `None`), as `Literal[...]` holds it:
    `repr`, which for a string escapes every character that is not printable."""
    if not (value is None or isinstance(value, (str, int))):
        raise TypeError(f"not a literal: {type(value).__name__}")
    return repr(value)


def python_docstring(text: str) -> str:
    """`text` as the inside of a `\"\"\"` docstring: backslashes and double quotes escaped (so
    nothing can close it or start an escape), line breaks kept, anything else unprintable
    escaped. The docstring's value is `text` itself."""
    out = []
    for ch in str(text):
        if ch == "\\" or ch == '"':
            out.append("\\" + ch)
        elif ch in "\n\t" or ch.isprintable():
            out.append(ch)
        else:
            out.append(_escape(ch))
    return "".join(out)


def python_comment(text: str, indent: str = "", marker: str = "#") -> list[str]:
    """`# …` lines holding `text`: one per line of it (split wherever Python or any editor
    would see a line break), unprintable characters shown as escapes."""
    lines = str(text).splitlines() or [""]
    return [f"{indent}{marker} {printable(line, keep=chr(9))}".rstrip() for line in lines]


def ts_string(text: str) -> str:
    """A TypeScript (JavaScript) string literal of `text`: JSON's escapes, plus an escape for every
    character that is not printable (U+2028, U+2029, lone surrogates), so the literal is one line
    and encodes as UTF-8."""
    body = json.dumps(str(text), ensure_ascii=False)
    if body.isprintable():
        return body
    return "".join(ch if ch.isprintable() else _ts_escape(ch) for ch in body)


def _ts_escape(ch: str) -> str:
    cp = ord(ch)
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    cp -= 0x10000  # a JavaScript string is UTF-16: a surrogate pair
    return f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}"


def ts_comment(text: str, indent: str = "") -> list[str]:
    """`text` as a `/** … */` comment: `*/` broken up so the comment cannot end early, one line
    per line of the text, unprintable characters shown as escapes."""
    lines = [printable(line).replace("*/", "*\\/") for line in str(text).splitlines()] or [""]
    if len(lines) == 1:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**", *(f"{indent} * {line}".rstrip() for line in lines), f"{indent} */"]
