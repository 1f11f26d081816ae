"""Typed request parameters: each `/// param:` value checked against the provider profile's type
and range for it (E730, at the value).

`promptc/data/providers.json` has a `parameters` section: per request shape, per parameter
(promptc's name, as in `shapes`), a JSON Schema of the values the provider's API takes, narrowed
per model family by `by_model` (the longest model-name prefix that matches wins), each with the
API reference page, the pinned SDK type it agrees with and the date it was read. The value is
checked with `promptc.inputtypes`, the checker both runtimes use for inputs.

With a profile (a model or a configured provider), the value is checked against that shape's
schema. Without one, a value no shape takes is refused all the same (`temperature=hot` is a
number nowhere): the check is against every shape that defines the parameter, and it fails only
when none admits the value. A parameter the shape does not take at all is W707's (`request.check`).
"""

from __future__ import annotations

import re
from typing import Any

from ..facts import codes
from ..facts.diagnostics import Diagnostic, Span, make
from ..facts.profiles import data
from ..runtime.inputtypes import check_value, describe, json_text
from ..syntax.nodes import Document
from .emit import Request

__all__ = ["check", "parameter_schema", "parameters"]


def parameters() -> dict[str, dict[str, Any]]:
    """The `parameters` section of providers.json: shape → parameter → entry."""
    section = data().get("parameters") or {}
    return {shape: entries for shape, entries in section.items() if not shape.startswith("_")}


def parameter_schema(shape: str, name: str, model: str | None) -> tuple[Any, dict[str, Any], str | None] | None:
    """(schema, entry, model family or None) for parameter `name` of `shape` and `model`, or None
    when the profile does not type it."""
    entry = parameters().get(shape, {}).get(name)
    if not isinstance(entry, dict):
        return None
    table = entry.get("by_model") or {}
    family = max((prefix for prefix in table if model and model.startswith(prefix)), key=len, default=None)
    return (table[family] if family is not None else entry["schema"]), entry, family


def _value_span(doc: Document, name: str, fallback: Span | None) -> Span | None:
    """Where the value of `name=…` is written inside its directive's value (the piece up to the
    next comma outside quotes and brackets)."""
    if fallback is None or fallback.src is None:
        return fallback
    src = fallback.src
    text = src.text[fallback.start : fallback.end]
    found = None
    for match in re.finditer(rf"(?<![\w.-]){re.escape(name)}\s*=\s*", text):
        found = match  # the last one: a param given twice keeps the later value
    if found is None:
        return fallback
    start = end = found.end()
    depth, quote = 0, ""
    while end < len(text):
        ch = text[end]
        if quote:
            if ch == "\\":
                end += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth <= 0:
            break
        end += 1
    while end > start and text[end - 1] in " \t":
        end -= 1
    return src.span(fallback.start + start, fallback.start + max(end, start + 1))


#: `check_value` of a scalar param value against a profile's schema, worked out once per process
#: (a project writes the same few `temperature=0.2` over and over): (id of the schema, name, type,
#: value) → (the schema, kept so its id stays its own; the problems). The 1,024 asked for last;
#: a string of over 200 characters is checked every time.
_CHECKED: dict[tuple[int, str, type, object], tuple[Any, list[str]]] = {}
_SCALARS = (bool, int, float, str, type(None))


def _problems(schema: Any, value: Any, name: str) -> list[str]:
    """`check_value(schema, value, name)`, remembered for scalar values."""
    if type(value) not in _SCALARS or (type(value) is str and len(value) > 200):
        return check_value(schema, value, name)
    key = (id(schema), name, type(value), value)
    found = _CHECKED.pop(key, None)
    if found is None or found[0] is not schema:
        found = (schema, check_value(schema, value, name))
    _CHECKED[key] = found
    if len(_CHECKED) > 1024:
        del _CHECKED[next(iter(_CHECKED))]
    return found[1]


def _detail(problems: list[str], name: str) -> str:
    first = problems[0]
    return first[len(name) + 2 :] if first.startswith(f"{name}: ") else first


def check(doc: Document, request: Request) -> list[Diagnostic]:
    """E730 for every `/// param:` value the provider's API would refuse."""
    spans = dict(doc.header.param_spans)
    profile = request.profile
    diagnostics: list[Diagnostic] = []
    for name, value in doc.header.params:
        if name == "model":
            continue
        if profile is not None:
            typed = parameter_schema(profile.shape, name, request.model)
            if typed is None:
                continue  # not a parameter of this shape: W707
            schema, entry, family = typed
            problems = _problems(schema, value, name)
            if not problems:
                continue
            label = f"{request.model} ({profile.name})" if request.model else profile.name
            where = f"{family}… models take" if family else f"the {profile.shape} request takes"
            source = entry.get("by_model_source") if family else entry.get("source")
            message = f"param `{name}` for {label}: {_detail(problems, name)}"
            hint = f"{where} `{name}` as {_range(schema)}" + (f" (see {source})" if source else "")
        else:
            shapes = [(shape, entries[name]) for shape, entries in parameters().items() if name in entries]
            if not shapes:
                continue
            results = [(shape, _problems(entry["schema"], value, name)) for shape, entry in shapes]
            if any(not problems for _, problems in results):
                continue
            shape, problems = results[0]
            message = f"param `{name}`: {_detail(problems, name)}, which no provider takes"
            takes = "; ".join(f"{s} takes {_range(e['schema'])}" for s, e in shapes)
            hint = f"{takes} (promptc/data/providers.json, `parameters`)"
        diagnostics.append(
            make(
                codes.PARAM_VALUE_REFUSED,
                message,
                _value_span(doc, name, spans.get(name)),
                hint,
                source=doc.source,
            )
        )
    return diagnostics


def _range(schema: Any) -> str:
    """`a number from 0 to 2`, `an integer of at least 1`, `"low" | "high"`: a schema in words."""
    if not isinstance(schema, dict):
        return describe(schema)
    kind = schema.get("type")
    noun = {"number": "a number", "integer": "an integer"}.get(kind) if isinstance(kind, str) else None
    if noun is None:
        return describe(schema)

    low = schema.get("minimum")
    high = schema.get("maximum")
    below = schema.get("exclusiveMaximum")
    if low is not None and high is not None:
        return f"{noun} from {json_text(low)} to {json_text(high)}"
    if low is not None and below is not None:
        return f"{noun} from {json_text(low)} up to (not including) {json_text(below)}"
    if low is not None:
        return f"{noun} of at least {json_text(low)}"
    if high is not None:
        return f"{noun} of at most {json_text(high)}"
    return noun
