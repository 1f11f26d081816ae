"""Allowing one warning on one line: `/// promptc: allow W706` on the line before the one it is
about, or at the end of that line.

```text
/// promptc: allow W706
Built on 2024-05-06 (the date is part of the identity on purpose).
Release 2024-05-06 is the current one. /// promptc: allow W706
```

Several codes are separated by commas. Only warnings can be allowed: an error stops the build
whatever a comment says, and allowing one is E304. The directive is read wherever a diagnostic
can point, the prompt and its partials; it is not metadata.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .codes import CODES
from .diagnostics import Diagnostic

ALLOW = re.compile(r"(?:^|[ \t])///[ \t]*promptc[ \t]*:[ \t]*allow[ \t]+([A-Za-z0-9, \t]+?)[ \t]*$")


def allowed_lines(text: str) -> dict[int, set[str]]:
    """Line number → the codes allowed on it, from the `/// promptc: allow` comments of `text`."""
    allowed: dict[int, set[str]] = {}
    if "promptc" not in text:
        return allowed
    for number, line in enumerate(text.split("\n"), 1):
        match = ALLOW.search(line)
        if match is None:
            continue
        names = {name.strip().upper() for name in match.group(1).split(",") if name.strip()}
        target = number + 1 if line.lstrip().startswith("///") else number
        allowed.setdefault(target, set()).update(names)
    return allowed


def parse_allow(value: str) -> tuple[list[str], str | None]:
    """The codes of a `promptc: allow …` directive value, or the problem with it."""
    words = value.split(None, 1)
    if not words or words[0] != "allow" or len(words) < 2:
        return [], "write `/// promptc: allow CODE[, CODE]` (the only `promptc:` directive)"
    names = [name.strip().upper() for name in words[1].split(",") if name.strip()]
    for name in names:
        if name not in CODES:
            return names, f"`{name}` is not a diagnostic code (`promptc explain CODE` lists what one means)"
        if CODES[name].severity == "error":
            return names, f"`{name}` is an error: errors cannot be allowed, only warnings"
    return names, None


def apply(diagnostics: Iterable[Diagnostic], files: dict[str, str]) -> list[Diagnostic]:
    """`diagnostics` without the warnings that a comment in their own file allows on their line.
    `files` maps each diagnostic path to its text."""
    tables = {path: allowed_lines(text) for path, text in files.items()}
    return [
        d for d in diagnostics if not (d.severity == "warning" and d.code in tables.get(d.path, {}).get(d.line, ()))
    ]
