"""Contracts: which values a JSON Schema admits, one definition for the build, both runtimes and
the generated types.

Declared input types (`/// input: name: TYPE`) are written in a small, Python-looking language:

    str | int | float | bool | list[T] | dict[str, T] | T | None

`parse_type` turns a type into a JSON Schema (`list[str]` → `{"type": "array", "items":
{"type": "string"}}`, `T | None` → `{"anyOf": [T, {"type": "null"}]}`). A schema file
(`/// input: order: @order.json`, `/// output: answer.json`) is brought into the same form by
`normalize`: local `$ref`s resolved (a recursive one is refused, located), the older drafts'
spellings rewritten (draft-07's tuple `items: [...]` is `prefixItems`, `dependencies` is
`dependentRequired` / `dependentSchemas`), and every keyword that no checker checks refused
(`pattern`, `patternProperties`, …: the two runtimes' regular expressions differ). What
`normalize` returns is what the artifact holds and what every checker reads.

`check_value` checks a value against such a schema, with JSON Schema 2020-12's semantics for
every keyword in `CHECKED_KEYWORDS` (an integer-valued float such as `3.0` is an integer, `true`
is not a number, `{}` and `true` admit anything, `false` nothing), and returns every problem by
path (`history[2]: expected a string, got 3`); runtime-js's `checkValue` is the same function, to
the byte of its messages (tests/vectors). `from_text` parses a `--var` value by its declared
type. Standard library only, iterative where input can be deep, and bounded: a type nests at most
`MAX_DEPTH` levels, a normalized schema at most `MAX_SCHEMA_DEPTH`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeGuard
from urllib.parse import unquote

from ..facts import codes
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
    "normalize",
    "Normalized",
    "SchemaProblem",
    "admits",
    "json_text",
    "CHECKED_KEYWORDS",
]

#: the JSON Schema keywords `check_value` checks (the Python and JavaScript runtimes alike)
CHECKED_KEYWORDS = frozenset(
    {"type", "enum", "const", "minLength", "maxLength"}
    | {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
    | {"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains", "minContains", "maxContains"}
    | {"properties", "required", "additionalProperties", "propertyNames", "minProperties", "maxProperties"}
    | {"dependentRequired", "dependentSchemas"}
    | {"anyOf", "oneOf", "allOf", "not", "if", "then", "else"}
)
#: keywords that only annotate (nothing to check; `format` is an annotation in 2020-12)
ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "format", "$schema", "$id", "$comment", "deprecated"}
    | {"readOnly", "writeOnly", "contentEncoding", "contentMediaType", "contentSchema"}
    # OpenAPI's hint beside a `oneOf` (pydantic writes it for tagged unions): JSON Schema ignores it
    | {"discriminator"}
)
#: keywords `normalize` rewrites away: references, and the older drafts' spellings
RESOLVED_KEYWORDS = frozenset({"$ref", "$defs", "definitions", "additionalItems", "dependencies"})
#: a normalized schema nests at most this deep, and has at most this many nodes (references
#: are copied in, so a schema file can ask for many)
MAX_SCHEMA_DEPTH = 64
MAX_SCHEMA_NODES = 20_000
#: keywords whose value is one schema / an object of schemas / a list of schemas
_ONE_SCHEMA = ("additionalProperties", "propertyNames", "items", "contains", "not", "if", "then", "else")
_SCHEMA_MAP = ("properties", "dependentSchemas")
_SCHEMA_LIST = ("prefixItems", "anyOf", "oneOf", "allOf")

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


# ---------------------------------------------------------------------------------------------
# Normalizing a schema file: references resolved, one dialect, every keyword checked


class SchemaProblem(NamedTuple):
    """Why a schema cannot be a contract: `path` into the schema as written (to locate it in the
    file), `code` E825 (a keyword no checker checks) or E826 (a `$ref` that cannot be resolved or
    refers back to itself, or a schema too large once resolved)."""

    path: tuple[str | int, ...]
    code: str
    message: str


class Normalized(NamedTuple):
    schema: Any
    problems: tuple[SchemaProblem, ...]


_OLD_DRAFTS = ("draft-03", "draft-04", "draft-06", "draft-07")


def _dialect(schema: Any) -> str:
    declared = schema.get("$schema") if isinstance(schema, dict) else None
    if isinstance(declared, str):
        if any(d in declared for d in _OLD_DRAFTS):
            return "07"  # `$ref` siblings ignored, tuple `items`, `dependencies`
        if "2019-09" in declared:
            return "2019"  # tuple `items`
    return "2020"


#: keywords a dialect does not have (a validator of that draft ignores them, so promptc refuses them
#: rather than check what the author's other tools would not)
_NOT_IN_DIALECT = {
    "07": frozenset({"prefixItems", "dependentRequired", "dependentSchemas", "minContains", "maxContains"}),
    "2019": frozenset({"prefixItems"}),
    "2020": frozenset(),
}


def _pointer(root: Any, ref: str) -> tuple[Any, tuple[str | int, ...]] | str:
    """The subschema a local `$ref` names, and its path; or why it cannot be resolved."""
    if not ref.startswith("#"):
        return f"`$ref` {json_text(ref)} is not local (promptc never fetches a schema): copy it into `$defs`"
    fragment = ref[1:]
    if fragment and not fragment.startswith("/"):
        return f"`$ref` {json_text(ref)} names an anchor: write a JSON pointer (`#/$defs/name`)"
    node, path = root, list[str | int]()
    for raw in fragment.split("/")[1:] if fragment else []:
        part = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
            path.append(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
            path.append(int(part))
        else:
            return f"`$ref` {json_text(ref)} points to nothing in this file"
    return node, tuple(path)


def normalize(schema: Any) -> Normalized:
    """`schema` as a contract every checker reads the same way (see the module docstring), and the
    problems that stop it. Iterative and bounded (`MAX_SCHEMA_DEPTH`, `MAX_SCHEMA_NODES`)."""
    dialect = _dialect(schema)
    problems: list[SchemaProblem] = []
    seen_problems: set[tuple[tuple[str | int, ...], str]] = set()
    has_ref = '"$ref"' in json.dumps(schema, default=str)

    def problem(path: tuple[str | int, ...], code: str, message: str) -> None:
        if (path, message) not in seen_problems:
            seen_problems.add((path, message))
            problems.append(SchemaProblem(path, code, message))

    holder: dict[str, Any] = {}
    merges: list[tuple[dict[str, Any], Any, dict[str, Any]]] = []
    # (node as written, its path, the container and key its normal form goes to, the `$ref`
    # targets being expanded (a cycle guard), depth)
    stack: list[tuple[Any, tuple[str | int, ...], Any, Any, tuple[tuple[str | int, ...], ...], int]] = [
        (schema, (), holder, "root", (), 0)
    ]
    count = 0
    while stack:
        node, path, parent, key, chain, depth = stack.pop()
        count += 1
        if count > MAX_SCHEMA_NODES or depth > MAX_SCHEMA_DEPTH:
            limit = f"{MAX_SCHEMA_NODES} nodes" if count > MAX_SCHEMA_NODES else f"{MAX_SCHEMA_DEPTH} levels"
            problem(path, codes.UNRESOLVABLE_REF, f"the schema is larger than {limit} once its `$ref`s are copied in")
            parent[key] = True
            break
        if not isinstance(node, dict):
            parent[key] = node  # a boolean schema (the meta-schema check refused anything else)
            continue
        if "$ref" in node:
            ref = node["$ref"]
            found = _pointer(schema, ref) if isinstance(ref, str) else "`$ref` is a string"
            if isinstance(found, str):
                problem(
                    (*path, "$ref"),
                    codes.UNRESOLVABLE_REF if ref.startswith("#") else codes.UNCHECKED_SCHEMA_KEYWORD,
                    found,
                )
                parent[key] = True
                continue
            target, target_path = found
            if target_path in chain or path[: len(target_path)] == target_path:
                cycle = " → ".join("#" + "".join(f"/{part}" for part in p) for p in (*chain, target_path))
                problem(
                    (*path, "$ref"),
                    codes.UNRESOLVABLE_REF,
                    f"`$ref` {json_text(ref)} refers back to a schema that holds it ({cycle}): "
                    "a recursive schema has no finite check",
                )
                parent[key] = True
                continue
            siblings = {k: v for k, v in node.items() if k != "$ref" and k not in ("$defs", "definitions")}
            if dialect == "07":
                siblings = {}  # draft-07 and older ignore every keyword beside `$ref`
            asserting = {k: v for k, v in siblings.items() if k not in ANNOTATIONS}
            if not asserting:
                stack.append((target, target_path, parent, key, (*chain, target_path), depth + 1))
                annotations = {k: v for k, v in siblings.items() if k in ("title", "description", "default")}
                if annotations:
                    merges.append((parent, key, annotations))
                continue
            # keywords beside `$ref` apply too (2019-09 and later): the target joins them in `allOf`
            referred: tuple[Any, tuple[str | int, ...]] | None = (target, target_path)
            node = {k: v for k, v in node.items() if k != "$ref"}
        else:
            referred = None
        out: dict[str, Any] = {}
        parent[key] = out
        children: list[tuple[Any, tuple[str | int, ...], Any, Any, tuple[Any, ...], int]] = []
        items_is_tuple = isinstance(node.get("items"), list)
        skip = set()
        if "if" not in node:
            skip |= {"then", "else"}
        if "contains" not in node:
            skip |= {"minContains", "maxContains"}
        for word, value in node.items():
            at = (*path, word)
            if word in skip:
                continue
            if word in ("$defs", "definitions", "$schema"):
                continue  # definitions are reached through `$ref`s; one dialect after this
            if word in ("$id", "$comment"):
                if word == "$id" and path and has_ref:
                    problem(
                        at,
                        codes.UNCHECKED_SCHEMA_KEYWORD,
                        "`$id` below the root changes what `$ref`s mean: keep one `$id`, at the root",
                    )
                continue
            if word in ANNOTATIONS:
                out[word] = value
                continue
            if word == "items" and items_is_tuple:
                if dialect == "2020":
                    problem(
                        at,
                        codes.UNCHECKED_SCHEMA_KEYWORD,
                        "`items` holds a list: write `prefixItems` (JSON Schema 2020-12)",
                    )
                    continue
                out["prefixItems"] = []
                for i, sub in enumerate(value):
                    out["prefixItems"].append(None)
                    children.append((sub, (*at, i), out["prefixItems"], i, chain, depth + 1))
                continue
            if word == "additionalItems":
                if items_is_tuple and dialect != "2020":
                    children.append((value, at, out, "items", chain, depth + 1))
                elif dialect == "2020":
                    problem(
                        at,
                        codes.UNCHECKED_SCHEMA_KEYWORD,
                        "`additionalItems` is not a 2020-12 keyword: write `items` after `prefixItems`",
                    )
                continue  # beside a schema `items`, `additionalItems` means nothing
            if word == "dependencies" and dialect == "07" and isinstance(value, dict):
                for name, dep in value.items():
                    if isinstance(dep, list):
                        out.setdefault("dependentRequired", {})[name] = dep
                    else:
                        out.setdefault("dependentSchemas", {})[name] = None
                        children.append((dep, (*at, name), out["dependentSchemas"], name, chain, depth + 1))
                continue
            if word in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
                bound = node.get("minimum" if word == "exclusiveMinimum" else "maximum")
                if value and isinstance(bound, (int, float)):
                    out[word] = bound  # draft-04's boolean form
                continue
            if word in _NOT_IN_DIALECT[dialect]:
                problem(
                    at,
                    codes.UNCHECKED_SCHEMA_KEYWORD,
                    f"`{word}` is not a keyword of the schema's `$schema` draft (its validators ignore it)",
                )
                continue
            if word not in CHECKED_KEYWORDS:
                why = (
                    "Python's and JavaScript's regular expressions differ, so the two would disagree"
                    if word in ("pattern", "patternProperties")
                    else "a value the schema refuses would pass"
                )
                problem(at, codes.UNCHECKED_SCHEMA_KEYWORD, f"`{word}` is not checked by promptc's runtimes: {why}")
                continue
            if word in _ONE_SCHEMA:
                out[word] = None
                children.append((value, at, out, word, chain, depth + 1))
            elif word in _SCHEMA_MAP and isinstance(value, dict):
                out[word] = dict.fromkeys(value)
                children.extend((sub, (*at, k), out[word], k, chain, depth + 1) for k, sub in value.items())
            elif word in _SCHEMA_LIST and isinstance(value, list):
                out[word] = [None] * len(value)
                children.extend((sub, (*at, i), out[word], i, chain, depth + 1) for i, sub in enumerate(value))
            else:
                out[word] = value
        if "minimum" in out and "exclusiveMinimum" in node and node["exclusiveMinimum"] is True:
            del out["minimum"]
        if "maximum" in out and "exclusiveMaximum" in node and node["exclusiveMaximum"] is True:
            del out["maximum"]
        if referred is not None:
            out["allOf"] = [*out.get("allOf", []), None]
            target, target_path = referred
            children.append(
                (target, target_path, out["allOf"], len(out["allOf"]) - 1, (*chain, target_path), depth + 1)
            )
        stack.extend(reversed(children))
    for parent, key, annotations in reversed(merges):
        if isinstance(parent.get(key) if isinstance(parent, dict) else parent[key], dict):
            parent[key] = {**parent[key], **annotations}
    return Normalized(holder.get("root", True), tuple(problems))


def unchecked_keywords(schema: Any) -> list[tuple[tuple[str | int, ...], str]]:
    """Every keyword in `schema` that would stop it being a contract, with the path to it
    (`[(("properties", "code"), "pattern")]`); see `normalize`."""
    return [(p.path, str(p.path[-1]) if p.path else "") for p in normalize(schema).problems]


# ---------------------------------------------------------------------------------------------
# What a schema says, in words (messages, hovers, diffs)


def json_text(value: Any) -> str:
    """JSON text of a value as both runtimes print it in messages: `ensure_ascii=False`, and an
    integer-valued float as the integer (`1.0` is `1`: JSON does not tell them apart, nor does
    JavaScript). A value JSON cannot hold is `"<type>"`."""
    try:
        return json.dumps(
            _plain_numbers(value), ensure_ascii=False, default=lambda o: f"<{type(o).__name__}>", allow_nan=True
        )
    except (TypeError, ValueError, RecursionError):
        return json.dumps(f"<{type(value).__name__}>")


def _plain_numbers(value: Any) -> Any:
    """`value` with every integer-valued float an int (iterative; other values as they are)."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if not isinstance(value, (list, tuple, dict)):
        return value
    out: Any = [] if not isinstance(value, dict) else {}
    stack: list[tuple[Any, Any]] = [(value, out)]
    while stack:
        source, target = stack.pop()
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for k, v in pairs:
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            elif isinstance(v, (list, tuple, dict)):
                child: Any = {} if isinstance(v, dict) else []
                stack.append((v, child))
                v = child
            if isinstance(target, dict):
                target[k] = v
            else:
                target.append(v)
    return out


def describe(schema: Any) -> str:
    """A schema written back in the type language (for messages)."""
    return _describe(schema, 0)


def _describe(schema: Any, depth: int) -> str:
    if schema is True:
        return "any"
    if schema is False:
        return "nothing"
    if not isinstance(schema, dict) or depth > MAX_SCHEMA_DEPTH:
        return "any"
    for word in ("anyOf", "oneOf"):
        if isinstance(schema.get(word), list):
            return " | ".join(_describe(option, depth + 1) for option in schema[word])
    if "const" in schema:
        return json_text(schema["const"])
    if isinstance(schema.get("enum"), list):
        return " | ".join(json_text(v) for v in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_describe({**schema, "type": k}, depth + 1) for k in kind)
    if kind is None and isinstance(schema.get("allOf"), list) and schema["allOf"]:
        return " & ".join(_describe(option, depth + 1) for option in schema["allOf"])
    if kind == "array":
        items = schema.get("items", {})
        return f"list[{_describe(items, depth + 1) if 'prefixItems' not in schema else 'any'}]"
    extra = schema.get("additionalProperties")
    if kind == "object" and isinstance(extra, dict) and "properties" not in schema:
        return f"dict[str, {_describe(extra, depth + 1)}]"
    names = {v: k for k, v in _SCALARS.items()}
    return names.get(kind, "object" if kind == "object" else "any") if isinstance(kind, str) else "any"


def optional(schema: Any) -> bool:
    """Whether a schema admits null explicitly (an input of type `T | None` may be left out)."""
    if schema is True or not isinstance(schema, dict):
        return schema is True
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "const" in schema and schema["const"] is None:
        return True
    if isinstance(schema.get("enum"), list) and None in schema["enum"]:
        return True
    lists = [schema[word] for word in ("anyOf", "oneOf") if isinstance(schema.get(word), list)]
    return any(optional(option) for options in lists for option in options if isinstance(option, (dict, bool)))


def accepts(new: Any, old: Any) -> bool:
    """Whether every value `old` admits is admitted by `new` (so a caller written against `old`
    cannot fail against `new`). Conservative: False when it cannot tell."""
    if new is True or new == {}:
        return True  # any value
    if old is True or old == {}:
        return False
    if old is False:
        return True
    if not isinstance(new, dict) or not isinstance(old, dict):
        return False
    olds = old.get("anyOf", [old])
    news = new.get("anyOf", [new])
    return all(any(_accepts_one(n, o) for n in news) for o in olds)


_SIMPLE_KEYS = frozenset({"type", "items", "additionalProperties"}) | ANNOTATIONS


def _accepts_one(new: Any, old: Any) -> bool:
    if not isinstance(new, dict) or not isinstance(old, dict):
        return new is True or old is False
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


# ---------------------------------------------------------------------------------------------
# Checking values


_JSON_TYPES = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false"}


def _is_integer(v: Any) -> TypeGuard[int | float]:
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and v.is_integer())


#: the JSON scalar types, each as a direct check (`bool` is not a number; `3.0` is an integer)
_SIMPLE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
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
    text = json_text(value)
    return text if len(text) <= 40 else text[:37] + "..."


_MISSING = object()


def _member(item: Any, key: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(key, _MISSING)
    return getattr(item, key, _MISSING)


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _multiple(value: Any, factor: Any) -> bool:
    if _is_integer(value) and _is_integer(factor):
        return int(value) % int(factor) == 0  # exact, as JavaScript's `%` is on integers
    try:
        quotient = value / factor
    except (OverflowError, ZeroDivisionError):
        return False
    return math.isfinite(quotient) and float(quotient).is_integer()


def _canonical(value: Any) -> str:
    """A key equal for JSON-equal values (`1` and `1.0`), for `uniqueItems`."""
    try:
        return json.dumps(_plain_numbers(value), sort_keys=True, default=lambda o: f"<object {id(o)}>")
    except (TypeError, ValueError, RecursionError):
        return f"<object {id(value)}>"


#: the numeric bounds, in the order they are checked, and what each says of a value that fails
_BOUNDS = (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<"))
_FAILS = {">=": lambda v, b: v < b, ">": lambda v, b: v <= b, "<=": lambda v, b: v > b, "<": lambda v, b: v >= b}


def admits(schema: Any, value: Any) -> bool:
    """Whether `value` passes `schema` (`check_value` finds no problem)."""
    return not check_value(schema, value, "value", limit=1)


def check_value(schema: Any, value: Any, path: str, limit: int | None = None) -> list[str]:
    """Every way `value` fails `schema`, as `path: expected …, got …` (depth-first, in order;
    at most `limit` of them when given). `runtime-js/src/inputtypes.js` is the same function."""
    problems: list[str] = []
    stack: list[tuple[Any, Any, str]] = [(schema, value, path)]
    while stack:
        if limit is not None and len(problems) >= limit:
            break
        raw, item, where = stack.pop()
        if raw is False:
            problems.append(f"{where}: not allowed (the schema admits no value here)")
            continue
        if not isinstance(raw, dict):  # `true`, or no schema: every value passes
            continue
        node: dict[str, Any] = raw
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
        if isinstance(item, str):
            length = len(item)
            if _is_integer(node.get("minLength")) and length < node["minLength"]:
                problems.append(f"{where}: expected at least {json_text(node['minLength'])} characters, got {length}")
            if _is_integer(node.get("maxLength")) and length > node["maxLength"]:
                problems.append(f"{where}: expected at most {json_text(node['maxLength'])} characters, got {length}")
        elif _number(item):
            for word, sign in _BOUNDS:
                bound = node.get(word)
                if _number(bound) and _FAILS[sign](item, bound):
                    problems.append(f"{where}: expected a number {sign} {json_text(bound)}, got {_shown(item)}")
            factor = node.get("multipleOf")
            if _number(factor) and factor > 0 and not _multiple(item, factor):
                problems.append(f"{where}: expected a multiple of {json_text(factor)}, got {_shown(item)}")
        elif isinstance(item, (list, tuple)):
            count = len(item)
            if _is_integer(node.get("minItems")) and count < node["minItems"]:
                problems.append(f"{where}: expected at least {json_text(node['minItems'])} items, got {count}")
            if _is_integer(node.get("maxItems")) and count > node["maxItems"]:
                problems.append(f"{where}: expected at most {json_text(node['maxItems'])} items, got {count}")
            if node.get("uniqueItems") is True:
                first: dict[str, int] = {}
                for i, element in enumerate(item):
                    key = _canonical(element)
                    if key in first:
                        problems.append(f"{where}[{i}]: duplicate of {where}[{first[key]}]")
                    else:
                        first[key] = i
            if "contains" in node:
                matched = sum(1 for element in item if admits(node["contains"], element))
                low = node.get("minContains", 1)
                high = node.get("maxContains")
                what = describe(node["contains"])
                if _is_integer(low) and matched < low:
                    problems.append(f"{where}: expected at least {json_text(low)} items that are {what}, got {matched}")
                if _is_integer(high) and matched > high:
                    problems.append(f"{where}: expected at most {json_text(high)} items that are {what}, got {matched}")
        elif _type_ok("object", item):
            for name in node.get("required", ()):
                if _member(item, name) is _MISSING:
                    problems.append(f"{where}.{name}: required, missing")
            for key, names in (node.get("dependentRequired") or {}).items():
                if _member(item, key) is not _MISSING:
                    for name in names:
                        if _member(item, name) is _MISSING:
                            problems.append(f"{where}.{name}: required when {where}.{key} is present, missing")
            if isinstance(item, Mapping):
                count = len(item)
                if _is_integer(node.get("minProperties")) and count < node["minProperties"]:
                    problems.append(f"{where}: expected at least {json_text(node['minProperties'])} keys, got {count}")
                if _is_integer(node.get("maxProperties")) and count > node["maxProperties"]:
                    problems.append(f"{where}: expected at most {json_text(node['maxProperties'])} keys, got {count}")
                if "propertyNames" in node:
                    for key in item:
                        problems += check_value(node["propertyNames"], key, f"{where} key {json_text(str(key))}")
        later: list[tuple[Any, Any, str]] = []  # checked after this node, in this order
        if isinstance(node.get("anyOf"), list) and not any(admits(option, item) for option in node["anyOf"]):
            problems.append(f"{where}: expected {describe({'anyOf': node['anyOf']})}, got {_shown(item)}")
        if isinstance(node.get("oneOf"), list):
            matched = sum(1 for option in node["oneOf"] if admits(option, item))
            if matched != 1:
                what = describe({"oneOf": node["oneOf"]})
                problems.append(
                    f"{where}: expected {what}, got {_shown(item)}"
                    if matched == 0
                    else f"{where}: expected exactly one of {what}, got {_shown(item)}, which is {matched} of them"
                )
        if "not" in node and admits(node["not"], item):
            problems.append(f"{where}: expected anything but {describe(node['not'])}, got {_shown(item)}")
        if "if" in node:
            branch = "then" if admits(node["if"], item) else "else"
            if branch in node:
                later.append((node[branch], item, where))
        later.extend((sub, item, where) for sub in node.get("allOf", ()))
        if isinstance(item, (list, tuple)):
            prefix = node.get("prefixItems") or ()
            rest = node.get("items", True)
            for i, element in enumerate(item):
                sub = prefix[i] if i < len(prefix) else rest
                if sub is False and i >= len(prefix):
                    problems.append(f"{where}[{i}]: not allowed (the schema lists its items)")
                elif sub is not True:
                    later.append((sub, element, f"{where}[{i}]"))
        elif _type_ok("object", item) and not isinstance(item, (list, tuple)):
            for key, sub in (node.get("dependentSchemas") or {}).items():
                if _member(item, key) is not _MISSING:
                    later.append((sub, item, where))
            properties = node.get("properties") or {}
            for name, sub in properties.items():
                member = _member(item, name)
                if member is not _MISSING:
                    later.append((sub, member, f"{where}.{name}"))
            extra = node.get("additionalProperties", True)
            if isinstance(item, Mapping) and extra is not True:
                for key, element in item.items():
                    if key in properties:
                        continue
                    if extra is False:
                        problems.append(f"{where}[{json_text(str(key))}]: not allowed (the schema lists its keys)")
                    else:
                        later.append((extra, element, f"{where}[{json_text(str(key))}]"))
        stack.extend(reversed(later))
    return problems if limit is None else problems[:limit]


def predicate(schema: Any) -> Any:
    """A function telling, fast, whether a value passes `schema` (`check_value` finds no
    problem): the render path runs it on every call and asks `check_value` for the messages only
    when it says no. Plain types and lists of them get a direct check; anything else is
    `check_value` itself."""
    if schema is True:
        return lambda v: True
    if isinstance(schema, dict) and not (set(schema) - ANNOTATIONS - {"type", "items"}):
        kind = schema.get("type")
        items = schema.get("items")
        if kind is None and items is None:
            return lambda v: True
        if isinstance(kind, str) and kind in _SIMPLE_CHECKS and items is None:
            return _SIMPLE_CHECKS[kind]
        if kind == "array" and (items is None or isinstance(items, (dict, bool))):
            if items is None or items is True:
                return lambda v: isinstance(v, (list, tuple))
            each = predicate(items) if isinstance(items, dict) else (lambda v: False)
            return lambda v: isinstance(v, (list, tuple)) and all(each(x) for x in v)
    return lambda v: admits(schema, v)


def _same(expected: Any, value: Any) -> bool:
    """JSON equality: `1` is `1.0`, but `true` is not `1` (iterative)."""
    stack = [(expected, value)]
    while stack:
        a, b = stack.pop()
        if isinstance(a, bool) or isinstance(b, bool):
            if not (isinstance(a, bool) and isinstance(b, bool) and a == b):
                return False
        elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if a != b:
                return False
        elif isinstance(a, list) and isinstance(b, (list, tuple)):
            if len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
        elif isinstance(a, dict) and isinstance(b, Mapping):
            if set(a) != set(b):
                return False
            stack.extend((a[k], b[k]) for k in a)
        elif not (type(a) is type(b) and a == b):
            return False
    return True


def from_text(schema: dict[str, Any], text: str, name: str = "value") -> Any:
    """A `--var NAME=TEXT` value parsed by its declared type: strings stay as written, `true` and
    `false` are booleans, numbers are numbers, lists and objects are JSON. Raises ValueError; for a
    list or object that is wrong inside, with every problem by path under `name`."""
    options = schema.get("anyOf") or schema.get("oneOf") or [schema] if isinstance(schema, dict) else [schema]

    def admits_kind(option: Any, kind: str) -> bool:
        written = option.get("type") if isinstance(option, dict) else None
        return written == kind or (isinstance(written, list) and kind in written)

    if any(
        admits_kind(option, "string") and isinstance(option, dict) and "enum" not in option and "const" not in option
        for option in options
    ):
        return text
    if text == "null" and any(admits_kind(option, "null") for option in options):
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
