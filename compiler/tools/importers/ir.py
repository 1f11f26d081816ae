"""What an importer makes of a foreign template, and how it becomes `.prompt` text.

Each front end (Handlebars for Dotprompt, Jinja for Prompty and plain Jinja) turns a template into
a list of nodes whose meaning is promptc's: literal text, a value (`${path}` or `{{ code }}`),
`{% if %}` / `{% for %}` blocks, a statement (`{# code #}`), a role separator and an include.
Whitespace control of the foreign syntax (`{{~ }}`, `{%- %}`, standalone lines) is already
applied to the literal text by the front end, so nothing here trims.

`emit` writes the nodes as `.prompt` text: literal text escaped so that promptc reads it back as
the same characters (`\\${`, `\\{{`, `\\{#`, `\\{%`, `\\///`), code checked so that it cannot close
its block early. What cannot be written faithfully is a `Refusal`, raised with the position in the
foreign file; the file is then not written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import field

from ...facts import codes
from ...facts.codes import Code
from ...facts.language import SEPARATOR, UNSAFE_PREFIX, unsafe_name
from ...facts.records import dataclass

#: a path into a foreign file's header (keys and list indices)
JsonPath = tuple[str | int, ...]
#: where a path of a header is written: (line, column) in the foreign file
Where = Callable[..., tuple[int, int]]


class Refusal(Exception):
    """The importer cannot write this file without changing its meaning. Positions are 1-based in
    the foreign file (line, column); `code` is one of the E96x codes."""

    def __init__(self, code: Code, message: str, line: int = 1, column: int = 1, hint: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.line, self.column, self.hint = code, message, line, column, hint


@dataclass(slots=True)
class Text:
    text: str
    line: int = 1
    column: int = 1


@dataclass(slots=True)
class Out:
    """A value: `${path}` when `path` is set (a plain path into the inputs whose text promptc's
    `str()` gives exactly), else `{{ code }}`."""

    code: str
    path: str | None = None
    line: int = 1
    column: int = 1


@dataclass(slots=True)
class If:
    #: (condition code, body) for `if` and each `elif`
    branches: list[tuple[str, list[Node]]]
    orelse: list[Node] | None = None
    line: int = 1
    column: int = 1


@dataclass(slots=True)
class For:
    target: str
    iterable: str
    body: list[Node] = field(default_factory=list)
    line: int = 1
    column: int = 1


@dataclass(slots=True)
class Stmt:
    code: str
    line: int = 1
    column: int = 1


@dataclass(slots=True)
class Role:
    role: str
    line: int = 1
    column: int = 1


@dataclass(slots=True)
class Include:
    """`/// include: target` on a line of its own; the front end made sure the foreign include stood
    alone on its line, so the line and its newline are the include's."""

    target: str
    line: int = 1
    column: int = 1


Node = Text | Out | If | For | Stmt | Role | Include

#: an opener with the backslashes before it. A match starts only where a run of backslashes starts
#: (the lookbehind): searched from each backslash of a run that no opener follows, it read the rest
#: of the run each time (40,000 backslashes took 30 s).
_OPENERS = re.compile(r"(?<!\\)\\*+(\$\{|\{\{|\{#|\{%|///)")
_CLOSERS = ("}}", "#}", "%}")


def escape(text: str, line: int = 1, column: int = 1) -> str:
    """Literal text → `.prompt` text that reads back as exactly `text`."""

    def one(match: re.Match[str]) -> str:
        run = match.group(0)
        if run.startswith("\\"):
            # `\{{` in the foreign text is a backslash and an opener: promptc has no way to write
            # a literal backslash before a literal opener that reads back the same
            raise Refusal(
                codes.IMPORT_NO_EQUIVALENT,
                f"the text `{run}` (a backslash before `{match.group(1)}`) has no promptc spelling",
                line,
                column,
                "put a space between the backslash and the opener",
            )
        return "\\" + run

    return _OPENERS.sub(one, text)


def check_code(code: str, line: int, column: int) -> str:
    """Code for a `{{ }}`, `{# #}` or `{% %}`: one line, and no closer inside it (the front ends
    spell string literals with escapes, so a closer can only come from the structure)."""
    if "\n" in code or any(closer in code for closer in _CLOSERS):
        raise Refusal(
            codes.IMPORT_NO_EQUIVALENT,
            "this expression cannot be written inside a promptc block",
            line,
            column,
            "simplify the expression",
        )
    return code


def py_string(value: str) -> str:
    """A Python string literal for `value` that holds no brace (so it can never close a block:
    every closer ends with `}`) and no newline."""
    out = ['"']
    for char in value:
        if char in '{}"\\' or char == "\n" or not char.isprintable():
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else (f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"))
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def emit(nodes: list[Node]) -> str:
    """The body of a `.prompt` file for `nodes` (which start with a `Role`)."""
    return emit_marked(nodes)[0]


def emit_marked(nodes: list[Node]) -> tuple[str, list[tuple[int, int, int]]]:
    """`emit`, and where each node's text starts: (offset in the body, line, column in the foreign
    file), in order, so positions in the `.prompt` text map back to the source."""
    parts: list[str] = []
    marks: list[tuple[int, int, int]] = []
    roles: set[int] = set()  # offsets of the role lines written
    size = 0

    def put(text: str, node: Node | _Tag | None = None) -> None:
        nonlocal size
        if node is not None and text:
            marks.append((size, node.line, node.column))
        parts.append(text)
        size += len(text)

    def end_line() -> None:
        last = _last(parts)
        if last and not last.endswith("\n"):
            put("\n")

    # iterative walk: (nodes, index) frames, with the closing tag to write when a frame ends
    stack: list[tuple[Sequence[Node | _Tag], int, str, Node | None]] = [(nodes, 0, "", None)]
    while stack:
        items, index, closing, owner = stack.pop()
        if index >= len(items):
            put(closing, owner)
            continue
        node = items[index]
        stack.append((items, index + 1, closing, owner))
        if isinstance(node, Text):
            put(escape(node.text, node.line, node.column), node)
            continue
        if not isinstance(node, (Role, Include)) and _last(parts).endswith("\\"):
            raise Refusal(
                codes.IMPORT_NO_EQUIVALENT,
                "a backslash right before a value or a block has no promptc spelling (it would escape it)",
                node.line,
                node.column,
                "put a space after the backslash",
            )
        if isinstance(node, Out):
            if node.path is not None:
                put("${" + node.path + "}", node)
            else:
                put("{{ " + check_code(node.code, node.line, node.column) + " }}", node)
        elif isinstance(node, Stmt):
            put("{# " + check_code(node.code, node.line, node.column) + " #}", node)
        elif isinstance(node, Role):
            end_line()
            roles.add(size)
            put(f"----- {node.role} -----\n", node)
        elif isinstance(node, Include):
            end_line()
            put(f"/// include: {node.target}\n", node)
        elif isinstance(node, For):
            check_code(f"{node.target} in {node.iterable}", node.line, node.column)
            put(f"{{% for {node.target} in {node.iterable} %}}", node)
            stack.append((node.body, 0, "{% endfor %}", node))
        elif isinstance(node, If):
            # the branches are written as nested frames: if, elif …, else, endif
            frames: list[tuple[Sequence[Node | _Tag], int, str, Node | None]] = []
            for k, (condition, body) in enumerate(node.branches):
                tag = "if" if k == 0 else "elif"
                check_code(condition, node.line, node.column)
                frames.append(([_Tag(f"{{% {tag} {condition} %}}", node.line, node.column), *body], 0, "", None))
            if node.orelse is not None:
                frames.append(([_Tag("{% else %}", node.line, node.column), *node.orelse], 0, "", None))
            frames[-1] = (frames[-1][0], 0, "{% endif %}", node)
            stack.extend(reversed(frames))
        elif isinstance(node, _Tag):  # an if's own tags, queued as nodes of its frames
            put(node.text, node)
    text = "".join(parts)
    offset = 0
    for line in text.split("\n"):
        if offset not in roles and SEPARATOR.match(line):
            first = next((n for n in _walk(nodes) if isinstance(n, Text) and line.strip() in n.text), None)
            where = (1, 1)
            if first is not None:
                before = first.text[: first.text.index(line.strip())]
                where = (
                    (first.line + before.count("\n"), 1) if "\n" in before else (first.line, first.column + len(before))
                )
            raise Refusal(
                codes.IMPORT_NO_EQUIVALENT,
                f"the text line `{line.strip()}` would read as a promptc role separator",
                *where,
                "change the dashes around the word (promptc reads `----- word -----` as a new message)",
            )
        offset += len(line) + 1
    return text, marks


@dataclass(slots=True)
class _Tag:
    text: str
    line: int = 1
    column: int = 1


def _last(parts: list[str]) -> str:
    for part in reversed(parts):
        if part:
            return part
    return ""


def _walk(nodes: list[Node]) -> Iterator[Node]:
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, For):
            stack.extend(reversed(node.body))
        elif isinstance(node, If):
            for _, body in node.branches:
                stack.extend(reversed(body))
            if node.orelse:
                stack.extend(reversed(node.orelse))


def walk(nodes: list[Node]) -> Iterator[Node]:
    """Every node, depth first, in text order."""
    return _walk(nodes)


def refused_name(name: str) -> tuple[str, str] | None:
    """The message and hint of E973 (`codes.IMPORT_UNSAFE_PATH`) when a segment of a foreign path
    breaks promptc's attribute rule, which both runtimes enforce; None when it keeps it. The root
    is a segment too: Handlebars and Jinja read it from a context object. Refused here, where the
    foreign file can be named, rather than by the build (E506) of the converted text."""
    if not unsafe_name(name):
        return None
    why = f"starts with `{UNSAFE_PREFIX}`" if name.startswith(UNSAFE_PREFIX) else "reaches an object's internals"
    return (
        f"the path reads `{name}`, which {why}: no promptc placeholder path may, and both runtimes refuse it",
        "rename the key, or pass the value as an input of its own: promptc paths read plain data",
    )
