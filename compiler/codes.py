"""Every diagnostic code promptc can emit, in one place.

Codes are stable: once released a code keeps its meaning. `E` codes are errors, `W` codes warnings
(``--strict`` promotes warnings to errors but the code stays). The hundreds digit says which stage
owns the code. ``docs/diagnostics.md`` documents each one; a test keeps the two in step.
"""

from __future__ import annotations

from typing import NamedTuple


class Code(NamedTuple):
    code: str
    title: str


def _catalog(*codes: Code) -> dict[str, Code]:
    return {c.code: c for c in codes}


CODES: dict[str, Code] = _catalog(
    # 1xx: reading the source file
    Code("E101", "invalid UTF-8"),
    Code("E102", "binary file (NUL byte)"),
    Code("W103", "byte order mark dropped"),
    Code("W104", "CRLF or CR line endings normalised"),
    Code("E105", "source file too large"),
    Code("E106", "source file unreadable"),
    Code("E107", "UTF-16 or UTF-32 encoded file"),
    # 2xx: syntax (the grammar and block structure)
    Code("E200", "syntax error"),
    Code("E201", "unterminated placeholder or block"),
    Code("E202", "empty placeholder"),
    Code("E203", "invalid placeholder name"),
    Code("E204", "block never closed"),
    Code("E205", "closing tag without an opening tag"),
    Code("E206", "mismatched closing tag"),
    Code("E207", "block spans a role separator or section"),
    Code("E208", "unknown statement tag"),
    Code("E209", "`elif`/`else` outside an `if`"),
    Code("E210", "line too long or nesting too deep"),
    # 3xx: directives
    Code("E301", "directive given twice"),
    Code("W302", "key given twice; the later value wins"),
    Code("W303", "unknown directive key close to a reserved one"),
    Code("E304", "malformed directive value"),
    Code("E305", "invalid role"),
    Code("W306", "directive ignored here"),
    # 4xx: roles and messages
    Code("E401", "unknown role in separator"),
    Code("E402", "text before the first role separator"),
    Code("W403", "empty message left out"),
    Code("W404", "line looks like a role separator but is not one"),
    # 5xx: inputs and placeholders
    Code("E501", "input used but not declared"),
    Code("W502", "declared input never used"),
    Code("E503", "no `/// input:` declaration"),
    Code("E504", "invalid build-time define"),
    # 6xx: template blocks and inference
    Code("E601", "Python syntax error in a template block"),
    Code("E602", "`{{ }}` block does not end in an expression"),
    Code("W603", "template block cannot be analysed completely"),
    # 7xx: sections and the cache-stable prefix
    Code("E701", "section name used twice"),
    Code("E702", "stable section uses a runtime input"),
    Code("E703", "user_context section but no user message"),
    Code("E704", "malformed section directive"),
    Code("W705", "cache-stable prefix below the provider minimum"),
    Code("W706", "text that looks dynamic in a stable section"),
    Code("E707", "stable section contains template code"),
    # 8xx: partials and includes
    Code("E801", "included file not found"),
    Code("E802", "include escapes the source folder"),
    Code("E803", "include cycle"),
    Code("E804", "partial has separators or file-level directives"),
    Code("E805", "include target is not a partial"),
    # 9xx: configuration, tokenizer and the output folder
    Code("E901", "unknown or unavailable tokenizer"),
    Code("E902", "invalid configuration"),
    Code("W903", "unknown configuration key"),
    Code("E904", "cannot write the output folder"),
    Code("E905", "build/ is stale"),
    Code("E906", "source folder not found"),
    Code("E907", "output folder locked by another build"),
    Code("E908", "two sources map to the same artifact"),
    Code("W909", "symlink loop in the source tree"),
)


def title(code: str) -> str:
    return CODES[code].title
