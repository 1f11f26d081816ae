"""Dotprompt's Handlebars → promptc nodes (`ir`).

Handlebars prints values the JavaScript way (`true`, `1` for 1.0, nothing for null) and tests
truth its own way (`{}` is true, `[]` false), where promptc's template code is Python. So the
translation is driven by each value's type — from the prompt's `input.schema` (Picoschema or JSON
Schema) where it declares one, else inferred from the template's own use (a printed value is a
string, an `{{#each}}` value a list, `a.b` an object), and that inferred type becomes the
prompt's declared contract, so a value of another type is an error at render time, never a
different text:

* a required string or integer at the top level → `${path}`; other printed scalars →
  `{{ … }}` with an expression that spells the value as Dotprompt does;
* `{{#if}}` / `{{else if}}` / `{{else}}`, `{{#unless}}`, `{{#ifEquals a b}}`, `{{#unlessEquals}}` →
  `{% if %}` with Handlebars' truth for the type; `{{#each}}` (lists and objects, `this`, `@index`,
  `@first`, `@last`, `@key`, `../`, block parameters `as |item i|`, `{{else}}`) → `{% for %}`;
* `{{role "…"}}` → a role separator (`model` → `assistant`); `{{json x}}` → `json.dumps`;
* `{{> name}}` on a line of its own, at the top level → `/// include:` of `_name.prompt`; any other
  `{{> name}}` is inlined, up to the build's bound on what includes expand to (E974, as E806);
* comments, `~` whitespace control and Handlebars' standalone lines are applied to the literal text.

Refused (E973): a path with a segment no promptc path may read (`{{a.__class__}}`,
`{{this.__dict__}}`, `{{x.constructor}}`: `ir.refused_name`).

Refused (E962): custom helpers, Dotprompt's `media`, `history` and `section`, `{{#with}}`,
subexpressions, `@root` beyond a path, `@` data variables of the render context (`@state`,
`@auth` …), partials with arguments or inside a block, a `{{#role}}` block (Dotprompt renders
nothing of its content) and printing a list, an object or an untyped value.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import keyword
import re
from collections.abc import Callable
from dataclasses import field
from typing import Any, NoReturn

from ...facts import codes
from ...facts.codes import Code
from ...facts.language import IDENTIFIER, MAX_PATH_SEGMENTS
from ...facts.records import dataclass
from ...passes.includes import MAX_EXPANDED_CHARS, MAX_EXPANDED_ITEMS
from .ir import For, If, Include, Node, Out, Refusal, Role, Text, py_string, refused_name, walk

MAX_DEPTH = 64
_ROLES = {"system": "system", "user": "user", "model": "assistant", "assistant": "assistant"}
_UNSUPPORTED_HELPERS = {
    "media": "promptc messages hold text; send media parts from your code",
    "history": "promptc messages are fixed at build time; add the history messages from your code",
    "section": "Dotprompt sections are message parts; promptc has sections of text (`/// section:`)",
    "with": "write the full path (`{{a.b}}`) instead of `{{#with a}}`",
    "lookup": "write the path itself",
    "log": "remove the log call",
}
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<number>-?\d+(?:\.\d+)?(?![\w.]))
  | (?P<path>@?(?:\.\./)*(?:this|\.|[A-Za-z_$][\w$\-]*|\[[^\]]*\])(?:[./](?:[A-Za-z_$][\w$\-]*|\d+|\[[^\]]*\]))*)
  | (?P<op>[()=|])
    """,
    re.X,
)


@dataclass(slots=True)
class Tag:
    kind: str  # "text" | "var" | "open" | "close" | "else" | "partial" | "comment"
    value: str
    line: int
    column: int
    lstrip: bool = False
    rstrip: bool = False
    tokens: list[tuple[str, str]] = field(default_factory=list)


def lex(text: str, base_line: int = 1) -> list[Tag]:
    starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def where(offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(starts, offset) - 1
        return index + base_line, offset - starts[index] + 1

    out: list[Tag] = []
    pos, n = 0, len(text)
    while pos < n:
        start = text.find("{{", pos)
        while start > 0 and text[start - 1] == "\\":  # `\{{` is a literal `{{`
            if start > 1 and text[start - 2] == "\\":
                raise Refusal(
                    codes.IMPORT_NO_EQUIVALENT, "`\\\\{{` (an escaped backslash before a mustache)", *where(start - 2)
                )
            out.append(Tag("text", text[pos : start - 1] + "{{", *where(pos)))
            pos = start + 2
            start = text.find("{{", pos)
        if start == -1:
            out.append(Tag("text", text[pos:], *where(pos)))
            break
        if start > pos:
            out.append(Tag("text", text[pos:start], *where(pos)))
        p = start + 2
        triple = text.startswith("{", p)
        if triple:
            p += 1
        lstrip = text.startswith("~", p)
        if lstrip:
            p += 1
        if text.startswith("!--", p):
            end = text.find("--", p + 3)
            while end != -1 and not re.match(r"--~?\}\}", text[end:]):
                end = text.find("--", end + 1)
            if end == -1:
                raise Refusal(codes.IMPORT_TEMPLATE_SYNTAX, "unclosed comment `{{!--`", *where(start))
            m = re.match(r"--(~?)\}\}", text[end:])
            out.append(Tag("comment", "", *where(start), lstrip, bool(m.group(1))))  # type: ignore[union-attr]
            pos = end + m.end()  # type: ignore[union-attr]
            continue
        if text.startswith("!", p):
            end = text.find("}}", p)
            if end == -1:
                raise Refusal(codes.IMPORT_TEMPLATE_SYNTAX, "unclosed comment `{{!`", *where(start))
            out.append(Tag("comment", "", *where(start), lstrip, text[end - 1] == "~"))
            pos = end + 2
            continue
        sigil = text[p] if p < n and text[p] in "#/>^&" else ""
        if sigil:
            p += 1
        closer = "}}}" if triple else "}}"
        end = p
        tokens: list[tuple[str, str]] = []
        while True:
            if end >= n:
                raise Refusal(codes.IMPORT_TEMPLATE_SYNTAX, "unclosed `{{`", *where(start), "close it with `}}`")
            if text.startswith("~" + closer, end) or text.startswith(closer, end):
                break
            m = _TOKEN.match(text, end)
            if m is None:
                raise Refusal(
                    codes.IMPORT_TEMPLATE_SYNTAX,
                    f"malformed or unclosed `{{{{`: unexpected `{text[end]}` at line {where(end)[0]}",
                    *where(start),
                    "close the mustache with `}}`; Handlebars expressions are paths, strings, numbers and helpers",
                )
            if m.lastgroup != "ws":
                tokens.append((m.lastgroup or "", m.group(0)))
            end = m.end()
        rstrip = text.startswith("~", end)
        pos = end + (1 if rstrip else 0) + len(closer)
        line, column = where(start)
        if sigil == "#":
            kind = "open"
        elif sigil == "/":
            kind = "close"
        elif sigil == ">":
            kind = "partial"
        elif sigil == "^":
            kind = "else" if not tokens else "inverse"
        elif tokens and tokens[0] == ("path", "else"):
            kind = "else"
            tokens = tokens[1:]
        else:
            kind = "var"
        if kind == "inverse":
            raise Refusal(
                codes.IMPORT_NO_EQUIVALENT,
                "`{{^name}}` inverse sections are not imported",
                line,
                column,
                "write `{{#unless name}}`",
            )
        if not tokens and kind not in ("else",):
            raise Refusal(codes.IMPORT_TEMPLATE_SYNTAX, "empty mustache", line, column)
        out.append(Tag(kind, "", line, column, lstrip, rstrip, tokens))
    _standalone(out)
    _tildes(out)
    return out


def _standalone(tags: list[Tag]) -> None:
    """Handlebars removes a line that holds only a block tag, `{{else}}`, a comment or a partial
    (with its whitespace and newline). Which lines those are is decided on the text as written,
    before any of them is removed."""
    original = [t.value for t in tags]
    cut_start = [0] * len(tags)
    cut_end = [0] * len(tags)
    for i, tag in enumerate(tags):
        if tag.kind not in ("open", "close", "else", "comment", "partial"):
            continue
        prev = i - 1 if i > 0 else None
        nxt = i + 1 if i + 1 < len(tags) else None
        if (prev is not None and tags[prev].kind != "text") or (nxt is not None and tags[nxt].kind != "text"):
            continue
        before = original[prev] if prev is not None else ""
        head = before.rsplit("\n", 1)
        at_line_start = len(head) == 2 or prev is None or prev == 0
        if not at_line_start or head[-1].strip(" \t"):
            continue
        after = original[nxt] if nxt is not None else ""
        m = re.match(r"[ \t]*(\r?\n|\Z)", after)
        if m is None:
            continue
        tag.value = head[-1] if tag.kind == "partial" and head[-1] else "standalone"
        if prev is not None:
            cut_end[prev] = len(head[-1])
        if nxt is not None:
            cut_start[nxt] = m.end()
    for i, tag in enumerate(tags):
        if tag.kind == "text" and (cut_start[i] or cut_end[i]):
            value = original[i]
            gone = value[: cut_start[i]]
            tag.value = value[cut_start[i] : len(value) - cut_end[i]] if cut_start[i] <= len(value) - cut_end[i] else ""
            if "\n" in gone:
                tag.line += gone.count("\n")
                tag.column = 1


def _tildes(tags: list[Tag]) -> None:
    for i, tag in enumerate(tags):
        if tag.kind == "text":
            continue
        if tag.lstrip and i > 0 and tags[i - 1].kind == "text":
            tags[i - 1].value = tags[i - 1].value.rstrip()
        if tag.rstrip and i + 1 < len(tags) and tags[i + 1].kind == "text":
            tags[i + 1].value = tags[i + 1].value.lstrip()


# ---------------------------------------------------------------------------------------------
# Types


class Inputs:
    """The prompt's inputs and their JSON Schemas: declared (`input.schema`) or inferred from use.
    Inferred schemas are built in place as the template uses them."""

    def __init__(self, declared: dict[str, Any] | None) -> None:
        #: the root object schema, or None without one
        self.declared = declared
        self.schemas: dict[str, dict[str, Any]] = {}
        self.required: set[str] = set()
        self.inferred: set[str] = set()
        if declared is not None:
            for name, schema in (declared.get("properties") or {}).items():
                self.schemas[name] = schema
                if name in (declared.get("required") or []):
                    self.required.add(name)
        self.order: list[str] = []

    def root(self, name: str) -> dict[str, Any]:
        if name not in self.order:
            self.order.append(name)
        if name not in self.schemas:
            self.schemas[name] = {}
            self.required.add(name)
            self.inferred.add(name)
        return self.schemas[name]


def _types(schema: dict[str, Any]) -> tuple[set[str], bool]:
    """(the JSON types a schema allows, whether it may be null); an empty set is any."""
    kind = schema.get("type")
    if kind is None and "enum" in schema:
        values = schema["enum"]
        kinds = {_json_type(v) for v in values if v is not None}
        return kinds, None in values
    if isinstance(kind, str):
        return ({kind} - {"null"}), kind == "null"
    if isinstance(kind, list):
        return {k for k in kind if k != "null"}, "null" in kind
    return set(), True


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


@dataclass(slots=True)
class _Value:
    code: str  # Python code reading the value
    schema: dict[str, Any]
    inferred: bool  # the schema is being inferred (may be narrowed)
    optional: bool  # may be None (an optional property, a nullable type)
    placeholder: str | None  # `${…}` path when the value is a required path into the inputs
    #: how many levels below the inputs its schema stands (an input 1, `a.b` 2, an item of `a` 2):
    #: bounded, so the schema built in place stays far from any recursive reader's limit
    depth: int = 0


@dataclass(slots=True)
class _Scope:
    kind: str  # "root" | "each"
    item: _Value | None = None
    index: str | None = None
    key: str | None = None
    iterable: str | None = None
    params: dict[str, _Value] = field(default_factory=dict)


#: a partial's name → (its path as the including `.prompt` writes it, or None when it cannot be
#: included as a file; its text), or None when the folder has no such partial
Resolver = Callable[[str], "tuple[str | None, str] | None"]


class Translator:
    def __init__(self, inputs: Inputs, resolve_partial: Resolver, partial: bool = False) -> None:
        self.inputs = inputs
        self.resolve_partial = resolve_partial
        self.partial = partial
        self.counter = 0
        #: the partials a prompt includes, with what they print (for the type check)
        self.includes: list[str] = []
        #: how each root input is used: "print" (as a string), or "any"
        self.printed: dict[str, Tag] = {}
        #: each partial as resolved and lexed, once (None: missing, or a template lex refuses)
        self._partials: dict[str, tuple[tuple[str | None, str], list[Tag]] | None] = {}
        #: (partial, how many partials deep it is inlined) → (tags, characters) it expands to
        self._sizes: dict[tuple[str, int], tuple[int, int]] = {}
        #: what the partials inlined so far expand to, in tags and characters (E974 past the bound)
        self._expanded = (0, 0)

    # -- partials
    def _partial(self, name: str) -> tuple[tuple[str | None, str], list[Tag]] | None:
        """The partial `name` resolved, with its tags (a copy is inlined each time), or None when
        the folder has no such partial or its template does not lex (the translation says so
        where it inlines it)."""
        if name not in self._partials:
            found = self.resolve_partial(name)
            try:
                self._partials[name] = None if found is None else (found, lex(found[1]))
            except Refusal:
                self._partials[name] = None
        return self._partials[name]

    def _expansion(self, name: str) -> tuple[int, int]:
        """(tags, characters) the partial `name` expands to when it is inlined at the top level,
        with the partials it inlines in turn, as the translation would expand it: down to
        MAX_DEPTH partials deep (deeper, and partials that include one another, the translation
        refuses, E964; they add nothing here). Counted without expanding anything: each
        (partial, depth) once, iteratively, so the count costs at most MAX_DEPTH times the
        partials however far they fan out (a partial printed twice by a partial printed twice
        doubles at every level)."""
        sizes = self._sizes
        on_path: set[str] = set()
        # (name, depth, the partials it prints still to count, [tags, characters] so far)
        frames: list[tuple[str, int, list[str], list[int]]] = []

        def enter(partial: str, depth: int) -> bool:
            found = self._partial(partial) if depth < MAX_DEPTH else None
            if found is None:
                sizes[(partial, depth)] = (0, 0)
                return False
            (_, text), tags = found
            printed = [t.tokens[0][1] for t in reversed(tags) if t.kind == "partial"]
            frames.append((partial, depth, printed, [len(tags), len(text)]))
            on_path.add(partial)
            return True

        if (name, 0) not in sizes:
            enter(name, 0)
        while frames:
            partial, depth, printed, total = frames[-1]
            if printed:
                child = printed.pop()
                key = (child, depth + 1)
                if child in on_path or (key not in sizes and enter(*key)):
                    continue
                total[0] = min(total[0] + sizes[key][0], MAX_EXPANDED_ITEMS + 1)
                total[1] = min(total[1] + sizes[key][1], MAX_EXPANDED_CHARS + 1)
                continue
            frames.pop()
            on_path.discard(partial)
            sizes[(partial, depth)] = (total[0], total[1])
            if frames:
                parent = frames[-1][3]
                parent[0] = min(parent[0] + total[0], MAX_EXPANDED_ITEMS + 1)
                parent[1] = min(parent[1] + total[1], MAX_EXPANDED_CHARS + 1)
        return sizes[(name, 0)]

    def fail(
        self, tag: Tag, message: str, code: Code = codes.IMPORT_NO_EQUIVALENT, hint: str | None = None
    ) -> NoReturn:
        raise Refusal(code, message, tag.line, tag.column, hint)

    # -- paths
    def value(self, tag: Tag, token: tuple[str, str], scopes: list[_Scope]) -> _Value:
        kind, text = token
        if kind == "string":
            return _Value(py_string(ast.literal_eval(text)), {"type": "string"}, False, False, None)
        if kind == "number":
            return _Value(text, {"type": "number" if "." in text else "integer"}, False, False, None)
        if kind != "path":
            self.fail(tag, f"unexpected `{text}`", codes.IMPORT_TEMPLATE_SYNTAX)
        if text in ("true", "false"):
            return _Value("True" if text == "true" else "False", {"type": "boolean"}, False, False, None)
        if text in ("null", "undefined"):
            return _Value("None", {"type": "null"}, False, True, None)
        if "[" in text or "/" in text.replace("../", ""):
            self.fail(tag, f"the path `{text}` is not imported", hint="write it with dots: `a.b`")
        up = 0
        while text.startswith("../"):
            up += 1
            text = text[3:]
        scope_index = len(scopes) - 1
        contexts = [i for i, s in enumerate(scopes) if s.kind in ("root", "each")]
        if (up or text.startswith("this") or text == ".") and scopes[-1].kind == "params":
            self.fail(tag, "`this` or `../` inside a partial called with arguments")
        if up:
            if up >= len(contexts):
                self.fail(tag, f"`{'../' * up}` goes above the top of the template")
            scope_index = contexts[-1 - up]
        segments = text.split(".") if text != "." else ["this"]
        head = segments[0]
        if head.startswith("@"):
            name = head[1:]
            if name == "root":
                scope_index, segments = 0, segments[1:] or ["this"]
                head = segments[0]
            else:
                loop = next((s for s in reversed(scopes[: scope_index + 1]) if s.kind == "each"), None)
                if name in ("index", "first", "last", "key") and loop is not None and len(segments) == 1:
                    return self.loop_var(tag, loop, name)
                self.fail(
                    tag,
                    f"`@{name}` reads the render context (Dotprompt's data), which promptc does not have",
                    hint="pass the value as an input",
                )
        while scopes[scope_index].kind == "params":
            scope_index -= 1
        scope = scopes[scope_index]
        # block parameters
        if not up and head in self._params(scopes):
            value = self._params(scopes)[head]
            segments = segments[1:]
        elif head == "this":
            value = self._context(scope)
            segments = segments[1:]
        else:
            value = self._context(scope)
        for segment in segments:
            if segment == "this":
                continue
            value = self.prop(tag, value, segment)
        return value

    def _params(self, scopes: list[_Scope]) -> dict[str, _Value]:
        merged: dict[str, _Value] = {}
        for scope in scopes:
            merged.update(scope.params)
        return merged

    def _context(self, scope: _Scope) -> _Value:
        if scope.kind == "root":
            return _Value("", {"type": "object"}, False, False, "")  # the inputs themselves
        assert scope.item is not None
        return scope.item

    def prop(self, tag: Tag, value: _Value, name: str) -> _Value:
        if not IDENTIFIER.fullmatch(name):
            self.fail(tag, f"the name `{name}` is not imported", hint="promptc input names are identifiers")
        refused = refused_name(name)
        if refused is not None:
            self.fail(tag, refused[0], codes.IMPORT_UNSAFE_PATH, refused[1])
        if value.code == "":  # a root input
            if keyword.iskeyword(name) or name in dir(builtins):
                self.fail(
                    tag,
                    f"the input name `{name}` is a Python name promptc's template code cannot read as an input",
                    hint=f"rename the input (`{name}` is a Python keyword or builtin, which the code would read instead)",
                )
            schema = self.inputs.root(name)
            inferred = name in self.inputs.inferred
            optional = name not in self.inputs.required or _types(schema)[1] and bool(_types(schema)[0])
            return _Value(name, schema, inferred, optional, name if not optional else None, 1)
        if value.depth >= MAX_PATH_SEGMENTS:
            self.fail(
                tag,
                f"`{name}` is read more than {MAX_PATH_SEGMENTS} levels below its input",
                hint="pass the value deep inside as an input of its own",
            )
        schema = value.schema
        types, _ = _types(schema)
        if value.inferred:
            if types and types != {"object"}:
                self.fail(
                    tag, f"`{name}` is read as a property of a value this prompt also uses as {'/'.join(sorted(types))}"
                )
            schema["type"] = "object"
            props = schema.setdefault("properties", {})
            child = props.setdefault(name, {})
            required = schema.setdefault("required", [])
            if name not in required:
                required.append(name)
            code = (
                f"{value.code}[{py_string(name)}]"
                if not value.optional
                else f"({value.code} or {{}}).get({py_string(name)})"
            )
            return _Value(
                code,
                child,
                True,
                value.optional,
                f"{value.placeholder}.{name}" if value.placeholder and not value.optional else None,
                value.depth + 1,
            )
        if types and "object" not in types:
            self.fail(
                tag,
                f"`{name}` is read as a property of a value declared as {'/'.join(sorted(types))}",
                codes.IMPORT_UNSUPPORTED_FIELD,
            )
        props = schema.get("properties") or {}
        if name not in props:
            extra = schema.get("additionalProperties")
            if extra is False or not isinstance(extra, dict):
                self.fail(
                    tag,
                    f"`{name}` is not a property input.schema declares",
                    codes.IMPORT_UNSUPPORTED_FIELD,
                    "declare it in input.schema",
                )
            child, required = extra, False
        else:
            child, required = props[name], name in (schema.get("required") or [])
        nullable = _types(child)[1] and bool(_types(child)[0])
        optional = value.optional or not required or nullable
        code = (
            f"{value.code}[{py_string(name)}]"
            if not (value.optional or not required)
            else f"({value.code} or {{}}).get({py_string(name)})"
        )
        placeholder = f"{value.placeholder}.{name}" if value.placeholder and not optional else None
        return _Value(code, child, False, optional, placeholder, value.depth + 1)

    def loop_var(self, tag: Tag, loop: _Scope, name: str) -> _Value:
        if name == "key":
            if loop.key is None:
                self.fail(tag, "`@key` in a loop over a list")
            return _Value(loop.key, {"type": "string"}, False, False, None)
        loop.index = loop.index or "_hb"  # marks the loop as needing enumerate (named later)
        index = f"{loop.iterable}#i"
        if name == "index":
            return _Value(index, {"type": "integer"}, False, False, None)
        if name == "first":
            return _Value(f"({index} == 0)", {"type": "boolean"}, False, False, None)
        return _Value(f"({index} == len({loop.iterable}) - 1)", {"type": "boolean"}, False, False, None)

    # -- printing and truth
    def printed_code(self, tag: Tag, value: _Value) -> Out:
        types, _ = _types(value.schema)
        if value.inferred and not types:
            value.schema["type"] = "string"
            types = {"string"}
        if not types or types & {"array", "object"}:
            what = "untyped" if not types else "/".join(sorted(types))
            self.fail(
                tag,
                f"printing a value that is {what}: Dotprompt spells it as JavaScript would (`a,b`, `[object Object]`)",
                hint="print its fields, `{{#each}}` over it, or `{{json value}}`",
            )
        if value.placeholder and not value.optional and types <= {"string", "integer"}:
            return Out(value.code, value.placeholder, tag.line, tag.column)
        if types <= {"string", "integer"}:  # Python spells these as JavaScript does (bool is not an int here)
            code = value.code if not value.optional else f'("" if (_hb := {value.code}) is None else _hb)'
            return Out(code, None, tag.line, tag.column)
        if types == {"boolean"} and not value.optional:
            return Out(f'("true" if {value.code} else "false")', None, tag.line, tag.column)
        code = (
            f'("" if (_hb := {value.code}) is None else ("true" if _hb else "false") if isinstance(_hb, bool) '
            f"else str(int(_hb)) if isinstance(_hb, float) and _hb.is_integer() else _hb)"
        )
        return Out(code, None, tag.line, tag.column)

    def truth(self, value: _Value) -> str:
        types, _ = _types(value.schema)
        if types == {"object"}:
            return f"({value.code} is not None)"
        if not types:
            return f"({value.code} or isinstance({value.code}, dict))"
        return value.code

    # -- the tree
    def translate(self, tags: list[Tag]) -> list[Node]:
        root: list[Node] = []
        scopes = [_Scope("root")]
        self._scopes = scopes
        self._popped: list[bool] = []
        # frames: (helper name, tag, node, where its body goes, scope pushed?)
        frames: list[dict[str, Any]] = [{"name": "", "nodes": root}]
        pending = list(reversed(tags))
        inlined: list[str] = []  # the partials being inlined, innermost last
        previous: Tag | None = None
        while pending:
            tag = pending.pop()
            nodes = frames[-1]["nodes"]
            if tag.kind == "end-partial":
                inlined.pop()
                if self._popped.pop():
                    scopes.pop()
                continue
            if tag.kind == "text":
                if tag.value:
                    nodes.append(Text(tag.value, tag.line, tag.column))
            elif tag.kind == "comment":
                pass
            elif tag.kind == "var":
                nodes.extend(self.mustache(tag, scopes, len(frames) > 1 or bool(inlined)))
            elif tag.kind == "partial":
                node, body = self.partial_node(tag, pending, len(frames) > 1 or bool(inlined), inlined)
                if node is not None:
                    nodes.append(node)
                else:
                    pending.append(Tag("end-partial", "", tag.line, tag.column))
                    pending.extend(reversed(body or []))
            elif tag.kind == "open":
                if len(frames) > MAX_DEPTH:
                    self.fail(tag, f"blocks nested more than {MAX_DEPTH} deep")
                frames.append(self.open_block(tag, scopes, nodes))
            elif tag.kind == "else":
                self.else_branch(tag, frames[-1], scopes)
            elif tag.kind == "close":
                name = tag.tokens[0][1] if tag.tokens else ""
                frame = frames[-1]
                if len(frames) == 1:
                    self.fail(
                        tag, f"`{{{{/{name}}}}}` closes a block that was never opened", codes.IMPORT_TEMPLATE_SYNTAX
                    )
                if frame["name"] != name:
                    self.fail(tag, f"`{{{{/{name}}}}}` closes `{{{{#{frame['name']}}}}}`", codes.IMPORT_TEMPLATE_SYNTAX)
                self.close_block(frame, scopes)
                frames.pop()
            previous = tag
        del previous
        if len(frames) > 1:
            frame = frames[-1]
            self.fail(frame["tag"], f"`{{{{#{frame['name']}}}}}` is never closed", codes.IMPORT_TEMPLATE_SYNTAX)
        return root

    def mustache(self, tag: Tag, scopes: list[_Scope], in_block: bool) -> list[Node]:
        head = tag.tokens[0]
        args = tag.tokens[1:]
        if head[0] == "path" and head[1] in _UNSUPPORTED_HELPERS:
            self.fail(
                tag, f"Dotprompt's `{head[1]}` helper has no promptc equivalent", hint=_UNSUPPORTED_HELPERS[head[1]]
            )
        if head == ("path", "json"):
            indent = None
            if len(args) == 4 and args[1] == ("path", "indent") and args[2] == ("op", "=") and args[3][0] == "number":
                indent = int(float(args[3][1]))
                args = args[:1]
            if len(args) != 1 or args[0][0] == "op":
                self.fail(tag, "`{{json}}` with options other than `indent=N` is not imported")
            value = self.value(tag, args[0], scopes)
            if value.code == "":
                self.fail(
                    tag, "`{{json this}}` of every input is not imported", hint="name the value: `{{json items}}`"
                )
            how = f"indent={indent}" if indent else 'separators=(",", ":")'
            return [Out(f'__import__("json").dumps({value.code}, {how})', None, tag.line, tag.column)]
        if any(t[0] == "op" for t in tag.tokens):
            self.fail(tag, "subexpressions and hash arguments are not imported")
        if head == ("path", "role"):
            if in_block:
                self.fail(
                    tag,
                    "a `{{role}}` inside a block",
                    hint="promptc's messages are fixed at build time: move it out of the block",
                )
            if len(args) != 1 or args[0][0] != "string":
                self.fail(tag, '`{{role}}` takes one role name: `{{role "user"}}`')
            role = args[0][1][1:-1]
            if role not in _ROLES:
                self.fail(tag, f"the role `{role}` is not imported", hint="use system, user or model")
            return [Role(_ROLES[role], tag.line, tag.column)]
        if args:
            self.fail(
                tag,
                f"`{head[1]}` is a helper promptc does not have",
                hint="compute the value before rendering and pass it as an input",
            )
        value = self.value(tag, head, scopes)
        if value.code == "":
            self.fail(tag, "printing `this` at the top level (every input) is not imported")
        return [self.printed_code(tag, value)]

    def open_block(self, tag: Tag, scopes: list[_Scope], nodes: list[Node]) -> dict[str, Any]:
        name = tag.tokens[0][1]
        args = tag.tokens[1:]
        params: list[str] = []
        if len(args) >= 3 and args[-1] == ("op", "|") and ("path", "as") in args:
            at = args.index(("path", "as"))
            inner = args[at + 1 :]
            if inner[0] != ("op", "|"):
                self.fail(tag, "expected `as |name|`", codes.IMPORT_TEMPLATE_SYNTAX)
            params = [t[1] for t in inner[1:-1]]
            args = args[:at]
        if any(t[0] == "op" for t in args):
            self.fail(tag, "subexpressions and hash arguments are not imported")
        frame: dict[str, Any] = {"name": name, "tag": tag}
        if name == "role":
            self.fail(
                tag,
                "a `{{#role}}` block: Dotprompt's role helper does not render a block's content, so Dotprompt sends nothing of it",
                hint='write `{{role "system"}}` before the text, without a block',
            )
        if name in ("if", "unless"):
            if len(args) != 1:
                self.fail(tag, f"`{{{{#{name}}}}}` takes one value")
            value = self.value(tag, args[0], scopes)
            condition = self.truth(value)
            if name == "unless":
                condition = f"not {condition}"
            node = If([(condition, [])], None, tag.line, tag.column)
            frame.update(node=node, nodes=node.branches[0][1])
            nodes.append(node)
            return frame
        if name in ("ifEquals", "unlessEquals"):
            if len(args) != 2:
                self.fail(tag, f"`{{{{#{name}}}}}` takes two values")
            a, b = (self.value(tag, arg, scopes) for arg in args)
            condition = f"({a.code} {'==' if name == 'ifEquals' else '!='} {b.code})"
            node = If([(condition, [])], None, tag.line, tag.column)
            frame.update(node=node, nodes=node.branches[0][1])
            nodes.append(node)
            return frame
        if name == "each":
            if len(args) != 1:
                self.fail(tag, "`{{#each}}` takes one value")
            value = self.value(tag, args[0], scopes)
            if value.code == "":
                self.fail(tag, "`{{#each this}}` over every input is not imported")
            types, _ = _types(value.schema)
            if value.inferred and not types:
                value.schema["type"] = "array"
                value.schema["items"] = {}
                types = {"array"}
            if types not in ({"array"}, {"object"}):
                self.fail(
                    tag,
                    f"`{{{{#each}}}}` over a value that is {'/'.join(sorted(types)) or 'untyped'}",
                    codes.IMPORT_UNSUPPORTED_FIELD,
                    "declare it as an array or an object",
                )
            self.counter += 1
            item_name = f"item_{self.counter}"
            iterable = value.code if not value.optional else f"({value.code} or ())"
            if types == {"array"}:
                items = value.schema.setdefault("items", {}) if value.inferred else (value.schema.get("items") or {})
                nullable = _types(items)[1] and bool(_types(items)[0])
                item = _Value(item_name, items, value.inferred, nullable, None, value.depth + 1)
                scope = _Scope("each", item, None, None, iterable)
                loop = For(item_name, iterable, [], tag.line, tag.column)
            else:
                extra = value.schema.get("additionalProperties")
                item_schema = extra if isinstance(extra, dict) else {}
                nullable = _types(item_schema)[1] and bool(_types(item_schema)[0])
                item = _Value(item_name, item_schema, False, nullable, None, value.depth + 1)
                key = f"key_{self.counter}"
                iterable = f"{iterable}.items()" if not value.optional else f"({value.code} or {{}}).items()"
                scope = _Scope("each", item, None, key, iterable)
                loop = For(f"{key}, {item_name}", iterable, [], tag.line, tag.column)
            if params:
                scope.params[params[0]] = item
                if len(params) > 1:
                    if scope.key is not None:
                        scope.params[params[1]] = _Value(scope.key, {"type": "string"}, False, False, None)
                    else:
                        scope.index = "_hb"
                        scope.params[params[1]] = _Value(f"{iterable}#i", {"type": "integer"}, False, False, None)
            scopes.append(scope)
            frame.update(node=loop, nodes=loop.body, scope=scope, value=value, parent=nodes)
            nodes.append(loop)
            return frame
        if name in _UNSUPPORTED_HELPERS:
            self.fail(tag, f"`{{{{#{name}}}}}` has no promptc equivalent", hint=_UNSUPPORTED_HELPERS[name])
        self.fail(
            tag,
            f"the block helper `{name}` is a custom helper promptc does not have",
            hint="render its output before the prompt, or write the text with `{{#if}}` / `{{#each}}`",
        )
        raise AssertionError  # pragma: no cover

    def else_branch(self, tag: Tag, frame: dict[str, Any], scopes: list[_Scope]) -> None:
        node = frame.get("node")
        if node is None:
            self.fail(tag, "`{{else}}` outside a block", codes.IMPORT_TEMPLATE_SYNTAX)
        if isinstance(node, If):
            if node.orelse is not None:
                self.fail(tag, "a second `{{else}}`", codes.IMPORT_TEMPLATE_SYNTAX)
            if tag.tokens:
                if tag.tokens[0] != ("path", "if") or len(tag.tokens) != 2:
                    self.fail(tag, "only `{{else if value}}` chains are imported")
                value = self.value(tag, tag.tokens[1], scopes)
                node.branches.append((self.truth(value), []))
                frame["nodes"] = node.branches[-1][1]
            else:
                node.orelse = []
                frame["nodes"] = node.orelse
            return
        # {{else}} of an each: runs when the loop does not iterate
        if tag.tokens or frame.get("orelse") is not None:
            self.fail(tag, "only one plain `{{else}}` in an `{{#each}}`")
        scopes.pop()
        frame["orelse"] = []
        frame["nodes"] = frame["orelse"]

    def close_block(self, frame: dict[str, Any], scopes: list[_Scope]) -> None:
        node = frame.get("node")
        if not isinstance(node, For):
            return
        scope = frame["scope"]
        if frame.get("orelse") is None:
            scopes.pop()
        index_name = f"index_{node.target.split(', ')[-1].removeprefix('item_')}"
        marker = f"{scope.iterable}#i"
        used = False

        for child in walk(node.body):
            for attr in ("code",):
                if hasattr(child, attr) and marker in getattr(child, attr):
                    setattr(child, attr, getattr(child, attr).replace(marker, index_name))
                    used = True
            if isinstance(child, If):
                new = [(c.replace(marker, index_name), b) for c, b in child.branches]
                used |= new != child.branches
                child.branches = new
            if isinstance(child, For) and marker in child.iterable:
                child.iterable = child.iterable.replace(marker, index_name)
                used = True
        if used:
            node.target = f"{index_name}, {node.target}" if scope.key is None else node.target
            node.iterable = f"enumerate({node.iterable})" if scope.key is None else node.iterable
        if frame.get("orelse") is not None:
            parent = frame["parent"]
            parent.pop()
            value = frame["value"]
            parent.append(
                If(
                    [(value.code if not value.optional else f"({value.code})", [node])],
                    frame["orelse"],
                    node.line,
                    node.column,
                )
            )

    def partial_node(
        self, tag: Tag, pending: list[Tag], nested: bool, inlined: list[str]
    ) -> tuple[Include | None, list[Tag] | None]:
        """A `{{> name}}`: `(Include, None)` on a line of its own at the top level when the partial
        ends with a newline (promptc's include is a line); else `(None, its tags)`, inlined here
        with the current context, as Handlebars renders a partial."""
        name = tag.tokens[0][1]
        hashed = tag.tokens[1:]
        pairs: dict[str, _Value] = {}
        while hashed:
            if len(hashed) < 3 or hashed[0][0] != "path" or hashed[1] != ("op", "="):
                self.fail(
                    tag,
                    "a partial with a context argument (`{{> name value}}`)",
                    hint="pass `key=value` arguments, or let the partial read the inputs",
                )
            pairs[hashed[0][1]] = self.value(tag, hashed[2], self._scopes)
            hashed = hashed[3:]
        cached = self._partial(name)
        found = cached[0] if cached is not None else self.resolve_partial(name)
        if found is None:
            self.fail(
                tag,
                f"the partial `{name}` is not in the imported folder (`_{name}.prompt`)",
                codes.IMPORT_PARTIAL_MISSING,
            )
        target, text = found
        if name in inlined or len(inlined) >= MAX_DEPTH:
            self.fail(
                tag, f"the partials include each other: {' > '.join([*inlined, name])}", codes.IMPORT_PARTIAL_MISSING
            )
        indent = "" if tag.value == "standalone" else tag.value
        if indent.strip(" \t") == "" and indent:
            self.fail(tag, "an indented partial (Handlebars indents every line of it)", hint="remove the indentation")
        if tag.value == "standalone" and not nested and not pairs and target is not None and text.endswith("\n"):
            self.includes.append(name)
            return Include(target, tag.line, tag.column), None
        if not inlined:  # the top of a chain of inlined partials: what it all expands to, counted first
            tags, chars = self._expansion(name)
            self._expanded = (self._expanded[0] + tags, self._expanded[1] + chars)
            if self._expanded[0] > MAX_EXPANDED_ITEMS or self._expanded[1] > MAX_EXPANDED_CHARS:
                self.fail(
                    tag,
                    f"`{{{{> {name}}}}}` would make this file expand to more than {MAX_EXPANDED_CHARS:,} "
                    f"characters or {MAX_EXPANDED_ITEMS:,} pieces",
                    codes.IMPORT_EXPANSION_LIMIT,
                    "print each partial once, or split the prompt",
                )
        if cached is None:
            body = lex(text)  # refuses: the partial's template is not well formed
        else:  # a copy of its tags (lexed once), each where it is included: what it says is reported there
            body = [Tag(t.kind, t.value, tag.line, tag.column, t.lstrip, t.rstrip, t.tokens) for t in cached[1]]
        if tag.value == "standalone" and text and not text.endswith("\n"):
            pass  # Handlebars joins it to the next line: so does the inlined text
        inlined.append(name)
        if pairs:
            self._scopes.append(_Scope("params", params=pairs))
        self._popped.append(bool(pairs))
        return None, body
