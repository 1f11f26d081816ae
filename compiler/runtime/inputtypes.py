"""Declared input types (`/// input: name: TYPE`) as JSON Schema, and checking values against them.

The type language is a small, Python-looking one:

    str | int | float | bool | list[T] | dict[str, T] | T | None

`parse_type` turns a type into a JSON Schema (`list[str]` → `{"type": "array", "items":
{"type": "string"}}`, `T | None` → `{"anyOf": [T, {"type": "null"}]}`), so any language can
validate values; `check_value` checks a value against such a schema (the subset promptc writes:
`type`, one or a list, `items`, `additionalProperties`, `anyOf`, `properties`/`required`, `enum`,
`const`: also what a schema file may use, see `unchecked_keywords`) and returns every problem by
path (`history[2]: expected string, got 3`). `from_text` parses a `--var` value by its
declared type. Standard library only, iterative where input can be deep, and bounded: a type
nests at most `MAX_DEPTH` levels.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..facts.language import IDENTIFIER_PATTERN

__all__ = [
    "TypeSyntaxError",
    "accepts",
    "parse_type",
    "check_value",
    "from_text",
    "describe",
    "optional",
    "unchecked_keywords",
    "predicate",
    "CHECKED_KEYWORDS",
]

#: the JSON Schema keywords `check_value` checks (the Python and JavaScript runtimes alike)
CHECKED_KEYWORDS = frozenset(
    {"type", "enum", "const", "properties", "required", "additionalProperties", "items", "anyOf"}
)
#: keywords that only annotate (nothing to check)
ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "format", "$schema", "$id", "$comment", "deprecated"}
    | {"readOnly", "writeOnly"}
)

MAX_DEPTH = 16
_SCALARS = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "None": "null"}
_TOKEN = re.compile(rf"\s*(?:({IDENTIFIER_PATTERN})|(\[|\]|,|\|))")


class TypeSyntaxError(ValueError):
    """A type that does not parse; `offset` is where, in the type's text."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def parse_type(text: str) -> dict[str, Any]:
    """The JSON Schema of a type written in promptc's type language."""
    tokens: list[tuple[str, int]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None:
            raise TypeSyntaxError(f"unexpected `{text[pos:].strip()[:20]}` in type", pos)
        tokens.append((match.group(1) or match.group(2), match.start(match.lastindex or 0)))
        pos = match.end()
    parser = _Parser(tokens, len(text))
    schema = parser.union(0)
    if parser.i != len(tokens):
        word, at = tokens[parser.i]
        raise TypeSyntaxError(f"unexpected `{word}` in type", at)
    return schema


class _Parser:
    def __init__(self, tokens: list[tuple[str, int]], end: int) -> None:
        self.tokens = tokens
        self.i = 0
        self.end = end

    def peek(self) -> str | None:
        return self.tokens[self.i][0] if self.i < len(self.tokens) else None

    def at(self) -> int:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else self.end

    def expect(self, word: str) -> None:
        if self.peek() != word:
            raise TypeSyntaxError(f"expected `{word}`" + (f", got `{self.peek()}`" if self.peek() else ""), self.at())
        self.i += 1

    def union(self, depth: int) -> dict[str, Any]:
        if depth > MAX_DEPTH:
            raise TypeSyntaxError(f"type nests deeper than {MAX_DEPTH} levels", self.at())
        options = [self.single(depth)]
        while self.peek() == "|":
            self.i += 1
            options.append(self.single(depth))
        if len(options) == 1:
            return options[0]
        unique: list[dict[str, Any]] = []
        for option in options:
            if option not in unique:
                unique.append(option)
        return {"anyOf": unique} if len(unique) > 1 else unique[0]

    def single(self, depth: int) -> dict[str, Any]:
        word = self.peek()
        if word is None or word in "[],|":
            raise TypeSyntaxError("expected a type: str, int, float, bool, list[T], dict[str, T] or None", self.at())
        start = self.at()
        self.i += 1
        if word in _SCALARS:
            return {"type": _SCALARS[word]}
        if word == "list":
            self.expect("[")
            items = self.union(depth + 1)
            self.expect("]")
            return {"type": "array", "items": items}
        if word == "dict":
            self.expect("[")
            if self.peek() != "str":
                raise TypeSyntaxError("dict keys are str: write `dict[str, T]`", self.at())
            self.i += 1
            self.expect(",")
            values = self.union(depth + 1)
            self.expect("]")
            return {"type": "object", "additionalProperties": values}
        raise TypeSyntaxError(
            f"unknown type `{word}`: types are str, int, float, bool, list[T], dict[str, T], None", start
        )


def optional(schema: dict[str, Any]) -> bool:
    """Whether a schema admits null (an input of type `T | None` may be left out)."""
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(isinstance(option, dict) and optional(option) for option in schema.get("anyOf", ()))


def accepts(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Whether every value `old` admits is admitted by `new` (so a caller written against `old`
    cannot fail against `new`). Conservative: False when it cannot tell."""
    if not new:
        return True  # any value
    if not old:
        return False
    olds = old.get("anyOf", [old])
    news = new.get("anyOf", [new])
    return all(any(_accepts_one(n, o) for n in news) for o in olds)


_SIMPLE_KEYS = frozenset({"type", "items", "additionalProperties"}) | ANNOTATIONS


def _accepts_one(new: dict[str, Any], old: dict[str, Any]) -> bool:
    if "anyOf" in new or "anyOf" in old:
        return accepts(new, old)
    if not (set(new) <= _SIMPLE_KEYS and set(old) <= _SIMPLE_KEYS) or isinstance(new.get("type"), list):
        # properties, enums, type lists: the same schema accepts the same values; else it cannot tell
        return _strip(new) == _strip(old)
    kind_new, kind_old = new.get("type"), old.get("type")
    if kind_new != kind_old:
        return kind_new == "number" and kind_old == "integer"
    if kind_new == "array":
        return accepts(new.get("items", {}), old.get("items", {}))
    if kind_new == "object":
        return accepts(new.get("additionalProperties", {}), old.get("additionalProperties", {}))
    return True


def _strip(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k not in ANNOTATIONS}


def unchecked_keywords(schema: Any) -> list[tuple[tuple[str | int, ...], str]]:
    """Every keyword in `schema` that `check_value` would not check, with the path to it
    (`[(("properties", "qty"), "minimum")]`). Iterative; `properties` names are not keywords."""
    found: list[tuple[tuple[str | int, ...], str]] = []
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(schema, ())]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict):
            continue
        for key in sorted(node):
            value = node[key]
            if key in ANNOTATIONS or key in ("enum", "const", "type", "required"):
                continue
            if key == "properties" and isinstance(value, dict):
                stack.extend((sub, (*path, key, name)) for name, sub in sorted(value.items(), reverse=True))
            elif key in ("items", "additionalProperties"):
                stack.append((value, (*path, key)))
            elif key == "anyOf" and isinstance(value, list):
                stack.extend((sub, (*path, key, i)) for i, sub in reversed(list(enumerate(value))))
            else:
                found.append(((*path, key), key))
    return sorted(found, key=lambda f: [str(p) for p in f[0]])


def describe(schema: dict[str, Any]) -> str:
    """A schema written back in the type language (for messages)."""
    if "anyOf" in schema:
        return " | ".join(describe(option) for option in schema["anyOf"])
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    if isinstance(schema.get("enum"), list):
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(describe({**schema, "type": k}) for k in kind)
    if kind == "array":
        return f"list[{describe(schema.get('items', {}))}]"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict) and "properties" not in schema:
        return f"dict[str, {describe(schema['additionalProperties'])}]"
    names = {v: k for k, v in _SCALARS.items()}
    return names.get(kind, "object" if kind == "object" else "any") if isinstance(kind, str) else "any"


_JSON_TYPES = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false"}


#: the JSON scalar types, each as a direct check (`bool` is not a number)
_SIMPLE_CHECKS = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _type_ok(kind: str, value: Any) -> bool:
    scalar = _SIMPLE_CHECKS.get(kind) if isinstance(kind, str) else None
    if scalar is not None:
        return scalar(value)
    if kind == "array":
        return isinstance(value, (list, tuple))
    if kind == "object":
        # a mapping, or (in Python) an object whose attributes a placeholder path reads, as
        # `${user.name}` does; never a scalar or a sequence
        return isinstance(value, Mapping) or not isinstance(value, (str, bytes, int, float, list, tuple, type(None)))
    return True


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=lambda o: f"<{type(o).__name__}>")
    except (TypeError, ValueError):
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 40 else text[:37] + "..."


_MISSING = object()


def _member(item: Any, key: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(key, _MISSING)
    return getattr(item, key, _MISSING)


def check_value(schema: dict[str, Any], value: Any, path: str) -> list[str]:
    """Every way `value` fails `schema`, as `path: expected …, got …` (depth-first, in order)."""
    problems: list[str] = []
    stack: list[tuple[dict[str, Any], Any, str]] = [(schema, value, path)]
    while stack:
        node, item, where = stack.pop()
        if not isinstance(node, dict):
            continue
        if "anyOf" in node:
            if not any(not check_value(option, item, where) for option in node["anyOf"]):
                problems.append(f"{where}: expected {describe(node)}, got {_shown(item)}")
            continue
        kind = node.get("type")
        kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
        if kinds and not any(_type_ok(k, item) for k in kinds):
            expected = _JSON_TYPES.get(kinds[0], describe(node)) if len(kinds) == 1 else describe({"type": kinds})
            problems.append(f"{where}: expected {expected}, got {_shown(item)}")
            continue
        if "const" in node and not _same(node["const"], item):
            problems.append(f"{where}: expected {describe({'const': node['const']})}, got {_shown(item)}")
            continue
        if isinstance(node.get("enum"), list) and not any(_same(option, item) for option in node["enum"]):
            problems.append(f"{where}: expected one of {describe({'enum': node['enum']})}, got {_shown(item)}")
            continue
        children: list[tuple[dict[str, Any], Any, str]] = []
        if isinstance(item, (list, tuple)) and isinstance(node.get("items"), dict):
            children = [(node["items"], element, f"{where}[{i}]") for i, element in enumerate(item)]
        elif _type_ok("object", item) and (
            "properties" in node or "required" in node or "additionalProperties" in node
        ):
            properties = node.get("properties", {})
            for name in node.get("required", ()):
                if _member(item, name) is _MISSING:
                    problems.append(f"{where}.{name}: required, missing")
            for name, sub in properties.items():
                member = _member(item, name)
                if member is not _MISSING:
                    children.append((sub, member, f"{where}.{name}"))
            extra = node.get("additionalProperties")
            if isinstance(item, Mapping) and (isinstance(extra, dict) or extra is False):
                for key, element in item.items():
                    if key in properties:
                        continue
                    if extra is False:
                        problems.append(f"{where}[{json.dumps(str(key))}]: not allowed (the schema lists its keys)")
                    else:
                        children.append((extra, element, f"{where}[{json.dumps(key)}]"))
        stack.extend(reversed(children))
    return problems


def predicate(schema: Any) -> Any:
    """A function telling, fast, whether a value passes `schema` (`check_value` finds no
    problem): the render path runs it on every call and asks `check_value` for the messages only
    when it says no. Plain types and lists of them get a direct check; anything else is
    `check_value` itself."""
    if isinstance(schema, dict) and not (set(schema) - ANNOTATIONS - {"type", "items"}):
        kind = schema.get("type")
        items = schema.get("items")
        if kind is None and items is None:
            return lambda v: True
        if isinstance(kind, str) and kind in _SIMPLE_CHECKS and items is None:
            return _SIMPLE_CHECKS[kind]
        if kind == "array":
            if items is None:
                return lambda v: isinstance(v, (list, tuple))
            each = predicate(items) if isinstance(items, dict) else (lambda v: True)
            return lambda v: isinstance(v, (list, tuple)) and all(each(x) for x in v)
    return lambda v: not check_value(schema, v, "value")


def _same(expected: Any, value: Any) -> bool:
    """JSON equality: `1` is `1.0`, but `true` is not `1`."""
    if isinstance(expected, bool) or isinstance(value, bool):
        return isinstance(expected, bool) and isinstance(value, bool) and expected == value
    if isinstance(expected, (int, float)) and isinstance(value, (int, float)):
        return expected == value
    if isinstance(expected, list) and isinstance(value, (list, tuple)):
        return len(expected) == len(value) and all(_same(a, b) for a, b in zip(expected, value, strict=True))
    if isinstance(expected, dict) and isinstance(value, Mapping):
        return set(expected) == set(value) and all(_same(expected[k], value[k]) for k in expected)
    return type(expected) is type(value) and expected == value


def from_text(schema: dict[str, Any], text: str, name: str = "value") -> Any:
    """A `--var NAME=TEXT` value parsed by its declared type: strings stay as written, `true` and
    `false` are booleans, numbers are numbers, lists and objects are JSON. Raises ValueError; for a
    list or object that is wrong inside, with every problem by path under `name`."""
    options = schema.get("anyOf", [schema])

    def admits(option: Any, kind: str) -> bool:
        written = option.get("type") if isinstance(option, dict) else None
        return written == kind or (isinstance(written, list) and kind in written)

    if any(admits(option, "string") and "enum" not in option and "const" not in option for option in options):
        return text
    if text == "null" and any(admits(option, "null") for option in options):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        if not check_value(schema, text, "value"):
            return text  # an enum of strings, written bare: `--var status=open`
        raise ValueError(f"expected {describe(schema)}, got {text!r}") from None
    problems = check_value(schema, value, name)
    if problems and any(problem.startswith(f"{name}:") for problem in problems):
        raise ValueError(f"expected {describe(schema)}, got {text!r}")
    if problems:  # the right kind of value, wrong inside: say where
        raise ValueError("; ".join(problems))
    return value
