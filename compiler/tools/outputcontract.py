"""The output contract between a prompt and the code that parses its response: which changes to a
`/// output:` schema can break that code (`promptc diff --fail-on output-breaking`).

The reader of a response is the other way round from the caller of `render`: a change is
*compatible* when every response the new schema admits is one the old code handles, and
*breaking* when the code may now receive something it was not written for. By the rules below,
each found at a path inside the schema (`answer.items[]`):

breaking
    a property removed (code reads it), a required property made optional, a changed type (a
    new kind of value: `string` → `integer`, `integer` → `number`, null admitted), an enum or
    `const` that admits new values, an object opened to extra keys, a looser bound (`maxLength`
    raised, `minimum` lowered, `uniqueItems` dropped), an `anyOf`/`oneOf` option the old ones do
    not cover, a schema that now admits anything, the output schema removed, and any other change
    to a keyword that asserts (`not`, `if`, `allOf` …) — conservative: what cannot be told apart
    is breaking;
compatible
    a new optional or required property, an existing property made required, a narrowed enum or
    type (`number` → `integer`), a tighter bound, an object closed to extra keys, an option
    removed, a changed annotation (`title`, `description`, `examples`), the output schema added.

Both schemas are first brought into one form (`inputtypes.normalize`: `$ref`s resolved, one
dialect); a schema that cannot be (a recursive one) is compared as written: equal, or breaking.
Iterative over the schema's depth.
"""

from __future__ import annotations

import json
from typing import Any

from ..facts.records import dataclass
from ..runtime.inputtypes import ANNOTATIONS, json_text, normalize

__all__ = ["OutputChange", "classify"]


@dataclass(frozen=True, slots=True)
class OutputChange:
    """One change of an output schema: where (`answer.items[]`, `` for the root), what kind
    (`property removed`), whether it can break the code that parses responses, and a detail."""

    path: str
    kind: str
    breaking: bool
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "breaking": self.breaking, "detail": self.detail}

    def text(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{where}{self.kind}" + (f" ({self.detail})" if self.detail else "")


_BOUNDS_LOWER = ("minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum", "minContains")
_BOUNDS_UPPER = ("maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum", "maxContains")
_HANDLED = frozenset(
    {"type", "enum", "const", "properties", "required", "additionalProperties", "items", "prefixItems"}
    | {"anyOf", "oneOf", "uniqueItems", *_BOUNDS_LOWER, *_BOUNDS_UPPER}
)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _kinds(schema: dict[str, Any]) -> set[str] | None:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return set(kind)
    return None


def _covers(old: set[str], new: set[str]) -> bool:
    """Whether the kinds `new` admits are among `old`'s (`integer` is a `number`)."""
    return all(k in old or (k == "integer" and "number" in old) for k in new)


def _values(schema: dict[str, Any]) -> list[Any] | None:
    if "const" in schema:
        return [schema["const"]]
    values = schema.get("enum")
    return values if isinstance(values, list) else None


def _strip(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return schema
    return {k: v for k, v in schema.items() if k not in ANNOTATIONS}


def classify(old: Any, new: Any) -> list[OutputChange]:
    """Every change from output schema `old` to `new` (JSON Schemas as written; None: no output
    schema), classified for the code that parses responses. Empty when nothing changed."""
    if old is None and new is None:
        return []
    if old is None:
        return [OutputChange("", "output schema added", False)]
    if new is None:
        return [OutputChange("", "output schema removed", True, "code that parses the response has no contract")]
    if _canonical(old) == _canonical(new):
        return []
    a, b = normalize(old), normalize(new)
    if a.problems or b.problems:
        return [OutputChange("", "changed", True, "a schema with a recursive `$ref` is compared as written")]
    return _compare(a.schema, b.schema)


def _compare(old: Any, new: Any) -> list[OutputChange]:
    changes: list[OutputChange] = []
    stack: list[tuple[Any, Any, str]] = [(old, new, "")]
    while stack:
        a, b, path = stack.pop()
        if _canonical(a) == _canonical(b):
            continue
        if b is True or _strip(b) == {}:
            if not (a is True or _strip(a) == {}):
                changes.append(OutputChange(path, "now admits any value", True))
                continue
        if not isinstance(a, dict) or not isinstance(b, dict):
            if b is True or b == {}:
                changes.append(OutputChange(path, "now admits any value", True))
            elif a is True or a == {}:
                changes.append(OutputChange(path, "now constrained", False))
            elif b is False:
                changes.append(OutputChange(path, "now admits no value", False))
            else:
                a = a if isinstance(a, dict) else {}
                stack.append((a, b if isinstance(b, dict) else {}, path))
            continue
        if _canonical(_strip(a)) == _canonical(_strip(b)):
            changed = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            changes.append(OutputChange(path, "annotation changed", False, ", ".join(f"`{k}`" for k in changed)))
            continue
        changes += _node(a, b, path, stack)
    return sorted(changes, key=lambda c: (c.path, c.kind))


def _node(a: dict[str, Any], b: dict[str, Any], path: str, stack: list[Any]) -> list[OutputChange]:
    out: list[OutputChange] = []
    # type
    old_kinds, new_kinds = _kinds(a), _kinds(b)
    if new_kinds is not None and old_kinds is not None:
        if not _covers(old_kinds, new_kinds):
            added = sorted(k for k in new_kinds if not _covers(old_kinds, {k}))
            kind = "may now be null" if added == ["null"] else "type changed"
            out.append(
                OutputChange(path, kind, True, f"{' | '.join(sorted(old_kinds))} → {' | '.join(sorted(new_kinds))}")
            )
        elif new_kinds != old_kinds:
            out.append(
                OutputChange(
                    path, "type narrowed", False, f"{' | '.join(sorted(old_kinds))} → {' | '.join(sorted(new_kinds))}"
                )
            )
    elif old_kinds is not None and new_kinds is None and _values(b) is None:
        out.append(OutputChange(path, "type removed", True, "any type is admitted"))
    elif old_kinds is None and new_kinds is not None:
        out.append(OutputChange(path, "type added", False))
    # enum / const
    old_values, new_values = _values(a), _values(b)
    if new_values is not None:
        known = {_canonical(v) for v in old_values} if old_values is not None else None
        fresh = [v for v in new_values if known is not None and _canonical(v) not in known]
        if fresh:
            out.append(OutputChange(path, "enum admits new values", True, ", ".join(json_text(v) for v in fresh)))
        elif old_values is None or len({_canonical(v) for v in new_values}) < len(known or ()):
            out.append(OutputChange(path, "enum narrowed", False))
    elif old_values is not None:
        out.append(OutputChange(path, "enum removed", True, "any value of the type is admitted"))
    # bounds
    for word in _BOUNDS_LOWER + _BOUNDS_UPPER:
        before, after = a.get(word), b.get(word)
        if before == after:
            continue
        lower = word in _BOUNDS_LOWER
        if after is None:
            out.append(OutputChange(path, f"`{word}` removed", True))
        elif before is None:
            out.append(OutputChange(path, f"`{word}` added", False, json_text(after)))
        else:
            looser = after < before if lower else after > before
            out.append(
                OutputChange(
                    path,
                    f"`{word}` {'loosened' if looser else 'tightened'}",
                    looser,
                    f"{json_text(before)} → {json_text(after)}",
                )
            )
    if a.get("uniqueItems") is True and b.get("uniqueItems") is not True:
        out.append(OutputChange(path, "items may now repeat", True))
    elif b.get("uniqueItems") is True and a.get("uniqueItems") is not True:
        out.append(OutputChange(path, "items now unique", False))
    # objects
    old_props, new_props = a.get("properties") or {}, b.get("properties") or {}
    old_required, new_required = set(a.get("required") or ()), set(b.get("required") or ())
    for name in old_props:
        where = f"{path}.{name}" if path else name
        if name not in new_props:
            out.append(OutputChange(where, "property removed", True))
            continue
        if name in old_required and name not in new_required:
            out.append(OutputChange(where, "property made optional", True))
        elif name in new_required and name not in old_required:
            out.append(OutputChange(where, "property made required", False))
        stack.append((old_props[name], new_props[name], where))
    for name in new_props:
        if name not in old_props:
            where = f"{path}.{name}" if path else name
            required = name in new_required
            out.append(OutputChange(where, f"new {'required' if required else 'optional'} property", False))
    for name in sorted((old_required - set(old_props)) - new_required):
        out.append(OutputChange(f"{path}.{name}" if path else name, "property made optional", True))
    old_extra, new_extra = a.get("additionalProperties", True), b.get("additionalProperties", True)
    if old_extra is False and new_extra is not False:
        out.append(OutputChange(path, "opened to extra keys", True))
    elif new_extra is False and old_extra is not False:
        out.append(OutputChange(path, "closed to extra keys", False))
    elif isinstance(old_extra, dict) or isinstance(new_extra, dict):
        stack.append((old_extra, new_extra, f"{path}[*]"))
    # arrays
    if "items" in a or "items" in b:
        stack.append((a.get("items", True), b.get("items", True), f"{path}[]"))
    old_prefix, new_prefix = a.get("prefixItems") or [], b.get("prefixItems") or []
    for i in range(max(len(old_prefix), len(new_prefix))):
        before = old_prefix[i] if i < len(old_prefix) else a.get("items", True)
        after = new_prefix[i] if i < len(new_prefix) else b.get("items", True)
        stack.append((before, after, f"{path}[{i}]"))
    # options
    for word in ("anyOf", "oneOf"):
        old_options, new_options = a.get(word), b.get(word)
        if old_options is None and new_options is None:
            continue
        old_options = (
            old_options if isinstance(old_options, list) else [_strip({k: v for k, v in a.items() if k not in (word,)})]
        )
        new_options = (
            new_options if isinstance(new_options, list) else [_strip({k: v for k, v in b.items() if k not in (word,)})]
        )
        for i, option in enumerate(new_options):
            if not any(not any(c.breaking for c in _compare(o, option)) for o in old_options):
                out.append(OutputChange(path, f"`{word}` admits a new option", True, f"option {i + 1}"))
        if len(new_options) < len(old_options) and not any(c.kind.endswith("new option") for c in out):
            out.append(OutputChange(path, f"`{word}` option removed", False))
    # what the rules above do not read: equal, or (conservatively) breaking
    for word in sorted((set(a) | set(b)) - _HANDLED - ANNOTATIONS):
        if _canonical(a.get(word)) != _canonical(b.get(word)):
            out.append(OutputChange(path, f"`{word}` changed", True, "promptc cannot tell what it admits"))
    return out
