"""Declared input types (`/// input: name: TYPE`) as JSON Schema, and checking values against them.

The type language is a small, Python-looking one:

    str | int | float | bool | list[T] | dict[str, T] | T | None

`parse_type` turns a type into a JSON Schema (`list[str]` → `{"type": "array", "items":
{"type": "string"}}`, `T | None` → `{"anyOf": [T, {"type": "null"}]}`), so any language can
validate values; `check_value` checks a value against such a schema (the subset promptc writes:
`type`, `items`, `additionalProperties`, `anyOf`, `properties`/`required`) and returns every
problem by path (`history[2]: expected string, got 3`). `from_text` parses a `--var` value by its
declared type. Standard library only, iterative where input can be deep, and bounded: a type
nests at most `MAX_DEPTH` levels.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["TypeSyntaxError", "accepts", "parse_type", "check_value", "from_text", "describe", "optional"]

MAX_DEPTH = 16
_SCALARS = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "None": "null"}
_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_]*)|(\[|\]|,|\|))")


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
    if schema.get("type") == "null":
        return True
    return any(option.get("type") == "null" for option in schema.get("anyOf", ()))


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


def _accepts_one(new: dict[str, Any], old: dict[str, Any]) -> bool:
    if "anyOf" in new or "anyOf" in old:
        return accepts(new, old)
    kind_new, kind_old = new.get("type"), old.get("type")
    if kind_new != kind_old:
        return kind_new == "number" and kind_old == "integer"
    if kind_new == "array":
        return accepts(new.get("items", {}), old.get("items", {}))
    if kind_new == "object":
        return accepts(new.get("additionalProperties", {}), old.get("additionalProperties", {}))
    return True


def describe(schema: dict[str, Any]) -> str:
    """A schema written back in the type language (for messages)."""
    if "anyOf" in schema:
        return " | ".join(describe(option) for option in schema["anyOf"])
    kind = schema.get("type")
    if kind == "array":
        return f"list[{describe(schema.get('items', {}))}]"
    if kind == "object" and "additionalProperties" in schema:
        return f"dict[str, {describe(schema['additionalProperties'])}]"
    names = {v: k for k, v in _SCALARS.items()}
    return names.get(kind, "object" if kind == "object" else "any") if isinstance(kind, str) else "any"


_JSON_TYPES = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false"}


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if kind == "array":
        return isinstance(value, (list, tuple))
    if kind == "object":
        return isinstance(value, dict)
    return True


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=lambda o: f"<{type(o).__name__}>")
    except (TypeError, ValueError):
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 40 else text[:37] + "..."


def check_value(schema: dict[str, Any], value: Any, path: str) -> list[str]:
    """Every way `value` fails `schema`, as `path: expected …, got …` (depth-first, in order)."""
    problems: list[str] = []
    stack: list[tuple[dict[str, Any], Any, str]] = [(schema, value, path)]
    while stack:
        node, item, where = stack.pop()
        if "anyOf" in node:
            if not any(not check_value(option, item, where) for option in node["anyOf"]):
                problems.append(f"{where}: expected {describe(node)}, got {_shown(item)}")
            continue
        kind = node.get("type")
        if isinstance(kind, str) and not _type_ok(kind, item):
            expected = _JSON_TYPES.get(kind, describe(node))
            problems.append(f"{where}: expected {expected}, got {_shown(item)}")
            continue
        children: list[tuple[dict[str, Any], Any, str]] = []
        if kind == "array" and isinstance(node.get("items"), dict):
            children = [(node["items"], element, f"{where}[{i}]") for i, element in enumerate(item)]
        elif kind == "object" and isinstance(item, dict):
            properties = node.get("properties", {})
            for name in node.get("required", ()):
                if name not in item:
                    problems.append(f"{where}.{name}: required, missing")
            extra = node.get("additionalProperties")
            for key, element in item.items():
                if key in properties:
                    children.append((properties[key], element, f"{where}.{key}"))
                elif isinstance(extra, dict):
                    children.append((extra, element, f"{where}[{json.dumps(key)}]"))
        stack.extend(reversed(children))
    return problems


def from_text(schema: dict[str, Any], text: str) -> Any:
    """A `--var NAME=TEXT` value parsed by its declared type: strings stay as written, `true` and
    `false` are booleans, numbers are numbers, lists and objects are JSON. Raises ValueError."""
    options = schema.get("anyOf", [schema])
    if any(option.get("type") == "string" for option in options):
        return text
    if text == "null" and any(option.get("type") == "null" for option in options):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        raise ValueError(f"expected {describe(schema)}, got {text!r}") from None
    problems = check_value(schema, value, "value")
    if problems:
        raise ValueError(f"expected {describe(schema)}, got {text!r}")
    return value
