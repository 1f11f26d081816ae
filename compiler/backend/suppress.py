"""Allowing one warning on one line: `/// promptc: allow W706` on the line before the one it is
about, or at the end of that line.

```text
/// promptc: allow W706
Built on 2024-05-06 (the date is part of the identity on purpose).
Release 2024-05-06 is the current one. /// promptc: allow W706
```

Several codes are separated by commas. Only warnings can be allowed: an error stops the build
whatever a comment says, and allowing one is E304. The directive is read wherever a diagnostic
can point, the prompt and its partials; it is not metadata (the directives pass checks its codes).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..facts.diagnostics import Diagnostic
from ..facts.language import ALLOW_COMMENT


def allowed_lines(text: str) -> dict[int, set[str]]:
    """Line number → the codes allowed on it, from the `/// promptc: allow` comments of `text`."""
    allowed: dict[int, set[str]] = {}
    if "promptc" not in text:
        return allowed
    for number, line in enumerate(text.split("\n"), 1):
        match = ALLOW_COMMENT.search(line)
        if match is None:
            continue
        names = {name.strip().upper() for name in match.group(1).split(",") if name.strip()}
        target = number + 1 if line.lstrip().startswith("///") else number
        allowed.setdefault(target, set()).update(names)
    return allowed


def apply(diagnostics: Iterable[Diagnostic], files: dict[str, str]) -> list[Diagnostic]:
    """`diagnostics` without the warnings that a comment in their own file allows on their line.
    `files` maps each diagnostic path to its text."""
    tables = {path: allowed_lines(text) for path, text in files.items()}
    return [
        d for d in diagnostics if not (d.severity == "warning" and d.code in tables.get(d.path, {}).get(d.line, ()))
    ]


def allowed(diagnostics: Iterable[Diagnostic], codes: Iterable[str]) -> list[Diagnostic]:
    """`diagnostics` without the warnings whose code is in `codes` (`allow` in [tool.promptc],
    `--allow` on the command line): the one rule every stage that reports applies."""
    allow = frozenset(codes)
    if not allow:
        return list(diagnostics)
    return [d for d in diagnostics if not (d.severity == "warning" and d.code in allow)]
