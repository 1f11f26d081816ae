"""The shared golden vectors of the two runtimes: `tests/vectors/*.json`.

Each vector holds the sources of one prompt, the artifact the compiler made of them (its
`input_schema` replaced by a hand-made one where a vector says so), and cases: input values, and
what the Python runtime (`promptc.runtime`) makes of them — the rendered prompt and the request in
every shape, or the error it raises. `tests/test_js_runtime.py` checks that the Python runtime
still produces exactly this; `runtime-js/test/vectors.test.js` that the JavaScript runtime does.

The canonical serialisation both sides compare is JSON without spaces (`separators=(",", ":")`,
`ensure_ascii=False` in Python, `JSON.stringify` in JavaScript): the two agree on it byte for
byte, key order included, for every value but a float holding an integer (`3.0`), which
JavaScript cannot tell from `3` — so no vector holds one.

Regenerate with `UPDATE_GOLDEN=1 python -m pytest tests/test_js_runtime.py` (or run this file).
The same run writes `runtime-js/src/shape-params.js` from `promptc/data/providers.json`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from promptc import runtime, shapes
from promptc.compile import compile_text
from promptc.config import Config
from promptc.language import SHAPES
from promptc.profiles import data as profile_data

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "tests" / "vectors"
SHAPE_PARAMS_JS = ROOT / "runtime-js" / "src" / "shape-params.js"

TOOL = {
    "name": "lookup_order",
    "description": "Find an order by its number.",
    "input_schema": {"type": "object", "properties": {"number": {"type": "string"}}, "required": ["number"]},
}
STRICT_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
    "required": ["answer", "confidence"],
    "additionalProperties": False,
}
LOOSE_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}}
ORDER_SCHEMA = {
    "type": "object",
    "properties": {
        "order": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                        "required": ["sku", "qty"],
                    },
                },
                "notes": {"type": "object", "additionalProperties": {"type": "string"}},
            },
            "required": ["id", "items"],
        }
    },
    "required": ["order"],
}

#: name → (files, prompt, config, input_schema override or None, cases: (values, model))
SOURCES: dict[str, tuple[dict[str, str], str, Config, Any, list[tuple[dict[str, Any], str | None]]]]
SOURCES = {
    "placeholders": (
        {
            "p.prompt": "/// input: name: str, n: int, ratio: float, ok: bool, tags: list[str], limit: int | None\n"
            "/// input: scores: dict[str, float], anything\n"
            "----- system -----\nHello ${name}: n=${n} ratio=${ratio} ok=${ok} limit=${limit}.\n"
            "----- user -----\ntags=${tags} scores=${scores} anything=${anything}\n"
        },
        "p",
        Config(),
        None,
        [
            (
                {
                    "name": "Ann",
                    "n": 3,
                    "ratio": 0.1,
                    "ok": True,
                    "tags": ["a", "it's", 'say "hi"', "both ' and \"", "tab\there", "é\u200b\x00😀"],
                    "scores": {"x": 1.5, "y": -2.25e-7, "z": 1.25e-20},
                    "anything": {"k": [None, False, 9007199254740991, {"deep": "\\"}]},
                },
                None,
            ),
            ({"name": "", "n": -0, "ratio": 2.5, "ok": False, "tags": [], "scores": {}, "anything": None}, None),
            ({"name": "x", "n": 1, "ratio": 1e-5, "ok": True, "tags": ["b"], "scores": {}, "anything": "t"}, None),
        ],
    ),
    "dotted": (
        {"d.prompt": "----- user -----\n${user.name} (${user.address.city}) ${plain}\n"},
        "d",
        Config(),
        None,
        [
            ({"user": {"name": "Bo", "address": {"city": "Zürich"}}, "plain": 7}, None),
            ({"user": {"name": "Bo", "address": {"town": "Bern"}}, "plain": 7}, None),
            ({"user": "Bo", "plain": 7}, None),
            ({"user": {"name": "Bo", "address": None}, "plain": 7}, None),
        ],
    ),
    "escapes": (
        {
            "e.prompt": "----- user -----\nLiteral \\${x}, \\{{ y }}, \\{# z #}, \\{% w %}; real ${x}.\n"
            "Not openers: $x, {x}, $ {y}, } and }}, a lone \\ and \\n.\n"
            "A --- not a separator and /// not a directive in a value: ${x}\n"
        },
        "e",
        Config(),
        None,
        [({"x": "----- system -----\n/// input: evil\n${x} {{ 1 }} \\${x}"}, None), ({"x": 0}, None)],
    ),
    "sections": (
        {
            "s.prompt": "/// param: model=claude-sonnet-4-5\n/// param: max_tokens=512\n/// param: temperature=0.5\n"
            "/// param: stop=END\n/// cache_ttl: 1h\n/// input: question: str, context: str\n"
            "----- system -----\n/// section: identity stable\nYou are the helpdesk.\n"
            "/// section: rules stable\nBe brief.\n/// section: today dynamic\nContext: ${context}\n"
            "----- developer -----\n/// section: policy stable\nNever share secrets.\n"
            "----- user -----\n/// section: history stable\nEarlier: nothing.\n/// section: ask dynamic\n${question}\n"
            "----- assistant -----\nSure.\n"
            "----- system -----\nA late system note about ${context}.\n"
        },
        "s",
        Config(),
        None,
        [({"question": "Why?", "context": "ctx"}, None), ({"question": "", "context": ""}, "claude-opus-4-1")],
    ),
    "tools": (
        {
            "t.prompt": "/// tools: tool.json\n/// output: answer.json\n/// param: model=gpt-4o-mini\n"
            "/// param: max_tokens=256\n/// param: top_k=5\n/// param: seed=7\n/// input: q: str\n"
            "----- system -----\n/// section: id stable\nYou answer in JSON.\n----- user -----\n${q}\n",
            "tool.json": json.dumps(TOOL),
            "answer.json": json.dumps(STRICT_SCHEMA),
        },
        "t",
        Config(),
        None,
        [({"q": "Where is order 12?"}, None), ({"q": "Again"}, "gemini-2.5-flash")],
    ),
    "tools_loose": (
        {
            "l.prompt": "/// tools: tool.json\n/// output: answer.json\n/// param: max_tokens=64\n"
            "----- user -----\n/// section: only stable\nSay hi.\n",
            "tool.json": json.dumps([TOOL, {**TOOL, "name": "cancel_order"}]),
            "answer.json": json.dumps(LOOSE_SCHEMA),
        },
        "l",
        Config(provider="anthropic"),
        None,
        [({}, None), ({}, "claude-haiku-4-5")],
    ),
    "validation": (
        {
            "v.prompt": "/// input: n: int, tags: list[str], flags: dict[str, bool], maybe: str | None, order\n"
            "----- user -----\n${n} ${tags} ${flags} ${maybe} ${order.id}\n"
        },
        "v",
        Config(),
        {
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "flags": {"type": "object", "additionalProperties": {"type": "boolean"}},
                "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                **ORDER_SCHEMA["properties"],
            },
            "required": ["n", "tags", "flags", "order"],
        },
        [
            ({}, None),
            ({"n": 1, "tags": ["a"]}, None),
            (
                {
                    "n": "3",
                    "tags": ["a", 2, None],
                    "flags": {"x": True, "y": "no", "strange key": 1},
                    "maybe": 5,
                    "order": {"items": [{"sku": "A", "qty": 1}, {"sku": "B"}, {"sku": "C", "qty": "3"}]},
                },
                None,
            ),
            ({"n": True, "tags": "abc", "flags": [], "order": {"id": 1, "items": {}}}, None),
            ({"n": 1.5, "tags": [], "flags": {}, "order": {"id": "o" * 60, "items": [], "notes": {"a": 1}}}, None),
            ({"n": 2, "tags": [], "flags": {}, "order": {"id": "O-1", "items": [], "notes": {"a": "b"}}}, None),
        ],
    ),
    "lookup": (
        # a mapping type says nothing of its keys, so a missing one is the render's lookup error
        {"k.prompt": "/// input: d: dict[str, str]\n----- user -----\n${d.key}\n"},
        "k",
        Config(),
        None,
        [({"d": {"key": "v"}}, None), ({"d": {}}, None)],
    ),
    "schema_file": (
        {
            "o.prompt": "/// input: ticket: @ticket.json, mode: @mode.json, who, items, maybe\n"
            "----- user -----\n${ticket.id} ${mode} ${who.name} ${who.team.name} ${items} ${maybe}\n",
            "ticket.json": json.dumps(
                {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "priority": {"enum": ["low", "high", 3, None]},
                        "version": {"const": {"major": 1, "tags": ["x"]}},
                        "owner": {"type": ["string", "null"]},
                    },
                    "required": ["id", "priority"],
                    "additionalProperties": False,
                }
            ),
            "mode.json": json.dumps({"type": "string", "enum": ["fast", "slow"]}),
        },
        "o",
        Config(),
        # what the build infers for `{% for x in items %}` and `{% if maybe %}${maybe.v}{% endif %}`
        # (a python-renderer prompt, which only Python renders), on a placeholder prompt
        "inferred",
        [
            (
                {
                    "ticket": {"id": "T-1", "priority": 3, "version": {"tags": ["x"], "major": 1}, "owner": None},
                    "mode": "fast",
                    "who": {"name": "Ann", "team": {"name": "core"}},
                    "items": ["a", "b"],
                    "maybe": None,
                },
                None,
            ),
            (
                {
                    "ticket": {"id": 1, "priority": "urgent", "version": {"major": 2}, "owner": 5, "extra": 1},
                    "mode": "medium",
                    "who": {"name": "Ann"},
                    "items": 5,
                    "maybe": {"v": 1},
                },
                None,
            ),
            ({"ticket": {"priority": True}, "mode": "slow", "who": "Ann", "items": {"k": 1}, "maybe": 0}, None),
        ],
    ),
    "contracts": (
        # a schema file as pydantic writes one ($defs + $ref), keys with defaults, boolean
        # subschemas, anyOf, uniqueItems, a non-ASCII key, lengths in code points
        {
            "c.prompt": "/// input: order: @order.json\n----- user -----\n${order.id} ${order.qty} ${order.note}\n",
            "order.json": json.dumps(
                {
                    "$defs": {"Qty": {"type": "integer", "minimum": 1, "default": 1}},
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "minLength": 2},
                        "qty": {"$ref": "#/$defs/Qty"},
                        "note": {"type": "string", "default": "none"},
                        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                        "kind": {"anyOf": [{"const": "a"}, {"const": "b"}]},
                        "é": {"type": "boolean"},
                        "debug": False,
                    },
                    "required": ["id"],
                    "additionalProperties": False,
                },
                ensure_ascii=False,
            ),
        },
        "c",
        Config(),
        None,
        [
            ({"order": {"id": "A1"}}, None),
            ({"order": {"id": "😀😀", "qty": 2, "note": "n", "tags": ["x", "y"], "kind": "b", "é": True}}, None),
            (
                {"order": {"id": "A", "qty": 0, "tags": ["x", "x"], "kind": "c", "é": 1, "debug": True, "x": 1}},
                None,
            ),
            ({"ordr": {"id": "A1"}, "é": 1}, None),  # unknown inputs: did you mean, and what is missing
            ({"order": {"id": "A1"}, "extra": None}, None),
        ],
    ),
    "proto": (
        # `${d.__proto__}` reads a key, as in Python: never the prototype of a JavaScript object
        {"p.prompt": "/// input: d: dict[str, str], e\n----- user -----\n${d.__proto__} ${e.constructor}\n"},
        "p",
        Config(),
        None,
        [
            ({"d": {}, "e": {"constructor": "c"}}, None),
            ({"d": {"__proto__": "x"}, "e": {"constructor": "c"}}, None),
            ({"d": {"__proto__": "x"}, "e": {}}, None),
        ],
    ),
}


#: provider responses each vector's `parse` cases hold (prompts with an output schema): JSON text,
#: a decoded value, not JSON, a value that fails the contract in several places
PARSES: dict[str, list[Any]] = {
    "tools": [
        '{"answer": "Yes.", "confidence": 0.5}',
        {"answer": "No.", "confidence": 1},
        "{not json",
        {"answer": 3, "confidence": "high", "extra": None},
        '{"answer": "é"}',
    ],
    "tools_loose": ['{"answer": "x", "more": [1, 2]}', {"answer": None}, []],
    "contracts": ['{"answer": "x"}'],  # no output schema: no contract to parse against
}


def run_parse(artifact: dict[str, Any], response: Any) -> dict[str, Any]:
    case: dict[str, Any] = {"response": response}
    try:
        case["value"] = runtime.parse_output(artifact, response)
    except runtime.RenderError as exc:
        case["error"] = _error(exc)
    return case


def _with_inferred(schema: dict[str, Any]) -> dict[str, Any]:
    properties = {
        **schema["properties"],
        "items": {"type": ["array", "object", "string"]},
        "maybe": {"type": ["object", "null"], "properties": {"v": {}}, "required": ["v"]},
    }
    return {**schema, "properties": properties, "required": ["items", "mode", "ticket", "who"]}


def canonical(value: Any) -> str:
    """The serialisation both runtimes compare (JSON.stringify's bytes)."""
    _no_integral_floats(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _no_integral_floats(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and item.is_integer():
            raise ValueError(f"a vector holds the float {item!r}, which JavaScript reads as an integer")
        if isinstance(item, int) and abs(item) > 2**53 - 1:
            raise ValueError(f"a vector holds the integer {item}, which JavaScript cannot hold exactly")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def rendered_json(rendered: runtime.Rendered) -> dict[str, Any]:
    """A rendered prompt as plain data, under the field names of the Python `Rendered`."""
    return {
        "name": rendered.name,
        "messages": rendered.messages,
        "blocks": [
            [{"boundary": b.boundary, "text": b.text, "breakpoint": b.breakpoint, "anthropic": b.anthropic} for b in bs]
            for bs in rendered.blocks
        ],
        "prefix_sha256": rendered.prefix_sha256,
        "params": rendered.params,
        "model": rendered.model,
        "tools": [t.to_json() for t in rendered.tools],
        "output_schema": None if rendered.output_schema is None else rendered.output_schema.to_json(),
        "ttl": rendered.ttl,
        "head_breakpoint": rendered.head_breakpoint,
    }


def _error(exc: Exception) -> dict[str, str]:
    return {"type": type(exc).__name__, "message": str(exc)}


def run_case(artifact: dict[str, Any], values: dict[str, Any], model: str | None) -> dict[str, Any]:
    """What the Python runtime makes of one case."""
    case: dict[str, Any] = {"values": values, "model": model}
    try:
        rendered = runtime.render_artifact(artifact, values)
    except runtime.RenderError as exc:
        case["error"] = _error(exc)
        return case
    case["rendered"] = rendered_json(rendered)
    case["shapes"] = {}
    for shape in (*SHAPES, "openai-chat"):  # the last one: not a shape
        try:
            case["shapes"][shape] = {"request": rendered.as_shape(shape, model=model)}
        except runtime.RenderError as exc:
            case["shapes"][shape] = {"error": _error(exc)}
    return case


def artifact_of(files: dict[str, str], prompt: str, config: Config, schema: dict[str, Any] | None) -> dict[str, Any]:
    compiled = compile_text(
        files[f"{prompt}.prompt"],
        prompt,
        config=config,
        partials={k: v for k, v in files.items() if k != f"{prompt}.prompt"},
    )
    errors = [d for d in compiled.diagnostics if d.severity == "error"]
    if compiled.artifact is None or errors:
        raise AssertionError(f"vector `{prompt}` does not compile: {[d.message for d in compiled.diagnostics]}")
    artifact = compiled.artifact.to_json()
    if schema == "inferred":
        artifact["input_schema"] = _with_inferred(artifact["input_schema"])
    elif schema is not None:
        artifact["input_schema"] = schema  # hand-made
    return artifact


def vector(name: str, artifact: dict[str, Any] | None = None) -> dict[str, Any]:
    """The vector `name`: compiled afresh, or over the `artifact` already stored."""
    files, prompt, config, schema, cases = SOURCES[name]
    if artifact is None:
        artifact = artifact_of(files, prompt, config, schema)
    return {
        "about": "generated by tests/js_vectors.py (UPDATE_GOLDEN=1 on tests/test_js_runtime.py); do not edit",
        "name": name,
        "sources": files,
        "artifact": artifact,
        "cases": [run_case(artifact, values, model) for values, model in cases],
        "parses": [run_parse(artifact, response) for response in PARSES.get(name, [])],
    }


def dump(value: dict[str, Any]) -> str:
    canonical(value)  # refuses what JavaScript would read differently
    return json.dumps(value, ensure_ascii=False, indent=1) + "\n"


def shape_params_js() -> str:
    """`runtime-js/src/shape-params.js`: each shape's parameter names, from providers.json."""
    table = {shape: entry["params"] for shape, entry in profile_data()["shapes"].items()}
    assert set(table) | {"plain"} == set(SHAPES) and shapes.SHAPES == SHAPES
    body = json.dumps(table, indent=2, ensure_ascii=False)
    return (
        "// Generated from promptc/data/providers.json by tests/js_vectors.py: do not edit.\n"
        "// promptc's parameter names → the names each shape's SDK call takes.\n"
        f"export const SHAPE_PARAMS = Object.freeze({body});\n"
    )


def write_all() -> None:
    VECTORS.mkdir(exist_ok=True)
    for stale in VECTORS.glob("*.json"):
        if stale.stem not in SOURCES:
            stale.unlink()
    for name in SOURCES:
        (VECTORS / f"{name}.json").write_text(dump(vector(name)), encoding="utf-8")
    SHAPE_PARAMS_JS.write_text(shape_params_js(), encoding="utf-8")


if __name__ == "__main__":
    write_all()
