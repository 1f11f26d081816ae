"""One definition of "a value this contract admits" (issue 25): for drawn JSON Schemas (anyOf /
oneOf beside other keywords, required, closed and open objects, `$ref`/`$defs`, boolean
subschemas, draft-07 tuples, enums of mixed numbers) and drawn values, jsonschema, the Python
check and the JavaScript check agree on accept or reject for every pair the build accepts; and
the two runtimes' messages are the same bytes. The generated types' side (mypy, tsc) is in
tests/test_contract_types.py.

The Python half runs in the default suite; the JavaScript half runs node once per batch
(`ci_only`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptc.runtime.inputtypes import check_value, normalize

from .conftest import ROOT, examples

KEYS = ["a", "b", "id", "kind", "é", "__proto__"]
NUMBERS = [0, 1, 1.0, 2, 2.5, -1, 3.0, 10]
SCALARS = st.sampled_from([None, True, False, "", "a", "ab", "é", "abc", *NUMBERS])


def json_values() -> st.SearchStrategy[Any]:
    return st.recursive(
        SCALARS,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
        max_leaves=8,
    )


TYPES = ["string", "integer", "number", "boolean", "null", "array", "object"]


def leaf_schemas(refs: list[str]) -> st.SearchStrategy[Any]:
    options = [
        st.just({}),
        st.booleans(),
        st.sampled_from(TYPES).map(lambda t: {"type": t}),
        st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True).map(lambda ts: {"type": ts}),
        st.lists(SCALARS, min_size=1, max_size=4).map(lambda vs: {"enum": vs}),
        SCALARS.map(lambda v: {"const": v}),
        st.fixed_dictionaries(
            {"type": st.just("string")}, optional={"minLength": st.integers(0, 3), "maxLength": st.integers(0, 3)}
        ),
        st.fixed_dictionaries(
            {"type": st.sampled_from(["integer", "number"])},
            optional={
                "minimum": st.sampled_from(NUMBERS),
                "exclusiveMaximum": st.sampled_from(NUMBERS),
                "maximum": st.sampled_from(NUMBERS),
                "multipleOf": st.sampled_from([1, 2, 0.5, 2.5]),
            },
        ),
    ]
    if refs:
        options.append(st.sampled_from(refs).map(lambda name: {"$ref": f"#/$defs/{name}"}))
    return st.one_of(options)


def schemas(refs: list[str], max_leaves: int = 6) -> st.SearchStrategy[Any]:
    keys = st.sampled_from(KEYS)

    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "type": st.just("object"),
                    "properties": st.dictionaries(keys, inner, max_size=3),
                    "required": st.lists(keys, max_size=2, unique=True),
                    "additionalProperties": st.one_of(st.booleans(), inner),
                    "minProperties": st.integers(0, 2),
                    "propertyNames": st.just({"maxLength": 2}),
                    "dependentRequired": st.dictionaries(keys, st.lists(keys, max_size=2, unique=True), max_size=1),
                },
            ),
            st.fixed_dictionaries(
                {"type": st.just("array")},
                optional={
                    "items": inner,
                    "prefixItems": st.lists(inner, max_size=2),
                    "minItems": st.integers(0, 2),
                    "maxItems": st.integers(0, 3),
                    "uniqueItems": st.booleans(),
                    "contains": inner,
                },
            ),
            st.tuples(
                st.sampled_from(["anyOf", "oneOf", "allOf"]),
                st.lists(inner, min_size=1, max_size=3),
                st.fixed_dictionaries(
                    {},
                    optional={
                        "type": st.sampled_from(["object", "string", "integer"]),
                        "required": st.lists(keys, max_size=2, unique=True),
                        "properties": st.dictionaries(keys, inner, max_size=2),
                    },
                ),
            ).map(lambda t: {**t[2], t[0]: t[1]}),
            inner.map(lambda s: {"not": s}),
            st.tuples(inner, inner, inner).map(lambda t: {"if": t[0], "then": t[1], "else": t[2]}),
        )

    return st.recursive(leaf_schemas(refs), extend, max_leaves=max_leaves)


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any] | bool:
    """A schema as a file holds it: sometimes with `$defs` its subschemas refer to, sometimes in
    draft-07's spelling (a tuple `items`, `additionalItems`, `dependencies`)."""
    if draw(st.integers(0, 9)) == 0:
        items = draw(st.lists(schemas([], 3), min_size=1, max_size=2))
        extra = draw(st.one_of(st.booleans(), schemas([], 2)))
        deps = draw(st.dictionaries(st.sampled_from(KEYS), st.lists(st.sampled_from(KEYS), max_size=2), max_size=1))
        return {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "anyOf": [{"type": "array", "items": items, "additionalItems": extra}, {"dependencies": deps}],
        }
    names = draw(st.lists(st.sampled_from(["d0", "d1", "d2"]), max_size=2, unique=True))
    defs: dict[str, Any] = {}
    for i, name in enumerate(names):
        defs[name] = draw(schemas(names[:i], 3))  # refs to earlier definitions only: no cycle
    root = draw(schemas(names))
    if names and isinstance(root, dict):
        root = {**root, "$defs": defs}
    elif names:
        root = {"allOf": [root], "$defs": defs}
    return root


def _valid(document: Any, value: Any) -> bool:
    from jsonschema.validators import validator_for

    cls = validator_for(document) if isinstance(document, dict) else validator_for({})
    return cls(document).is_valid(value)


def schema_ok(document: Any) -> bool:
    """Whether the meta-schema accepts `document` (else the build's E823 refuses it)."""
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    cls = validator_for(document) if isinstance(document, dict) else validator_for({})
    try:
        cls.check_schema(document)
    except SchemaError:
        return False
    return True


def _json(value: Any) -> Any:
    """`value` as it arrives from JSON (what both runtimes see)."""
    return json.loads(json.dumps(value))


@settings(max_examples=examples(200))
@given(documents(), st.lists(json_values(), min_size=1, max_size=6))
def test_the_python_check_agrees_with_jsonschema(document: Any, values: list[Any]) -> None:
    if not schema_ok(document):
        return  # the build's meta-schema check refuses it (E823)
    normalized = normalize(document)
    if normalized.problems:
        return  # the build refuses it (E825, E826), at a located keyword
    for value in map(_json, values):
        problems = check_value(normalized.schema, value, "x")
        assert (problems == []) == _valid(document, value), (document, normalized.schema, value, problems)


def test_the_issues_cases() -> None:
    """anyOf beside required; boolean subschemas; a draft-07 tuple; 3.0 an integer; pydantic's
    `$defs`; non-ASCII keys and float enums printed as JavaScript prints them."""
    both = normalize({"anyOf": [{"properties": {"kind": {"const": "a"}}}], "required": ["id"]}).schema
    assert check_value(both, {"kind": "a"}, "x") == ["x.id: required, missing"]
    closed = normalize({"properties": {"debug": False}, "items": False}).schema
    assert check_value(closed, {"debug": 1}, "x") == ["x.debug: not allowed (the schema admits no value here)"]
    assert check_value({"type": "array", "items": False}, [1], "x") == [
        "x[0]: not allowed (the schema lists its items)"
    ]
    tuple_ = normalize(
        {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}], "additionalItems": False}
    ).schema
    assert tuple_ == {"prefixItems": [{"type": "string"}], "items": False}
    assert check_value(tuple_, ["a", 2], "x") == ["x[1]: not allowed (the schema lists its items)"]
    assert check_value({"type": "integer"}, 3.0, "n") == []
    assert check_value({"enum": [1.0, 2.5]}, 3, "n") == ["n: expected one of 1 | 2.5, got 3"]
    assert check_value({"additionalProperties": False}, {"é": 1}, "t") == [
        't["é"]: not allowed (the schema lists its keys)'
    ]


def test_pydantic_model_json_schema_is_accepted() -> None:
    """The schema pydantic writes (`$defs` + `$ref`, `anyOf` with null, `default`, `title`)."""
    pydantic = pytest.importorskip("pydantic")

    class Item(pydantic.BaseModel):
        sku: str
        qty: int = 1

    class Order(pydantic.BaseModel):
        id: str
        items: list[Item]
        note: str | None = None

    normalized = normalize(Order.model_json_schema())
    assert normalized.problems == ()
    assert "$defs" not in json.dumps(normalized.schema) and "$ref" not in json.dumps(normalized.schema)
    good = {"id": "A", "items": [{"sku": "x"}, {"sku": "y", "qty": 2}]}
    assert check_value(normalized.schema, good, "order") == []
    assert check_value(normalized.schema, {"id": "A", "items": [{"qty": "2"}]}, "order") == [
        "order.items[0].sku: required, missing",
        'order.items[0].qty: expected an integer, got "2"',
    ]

    class Tree(pydantic.BaseModel):
        children: list[Tree]

    recursive = normalize(Tree.model_json_schema())
    assert [p.code for p in recursive.problems] == ["E826"]


# ---------------------------------------------------------------------------------------------
# JavaScript: the same messages, byte for byte

CHECK_JS = """
import { readFileSync } from "node:fs";
import { checkValue } from "%s";
const cases = JSON.parse(readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(cases.map(([schema, value]) => checkValue(schema, value, "x"))));
"""


def run_js_checks(cases: list[tuple[Any, Any]]) -> list[list[str]]:
    node = shutil.which("node")
    assert node, "node is needed (.ci/run installs it)"
    module = (ROOT / "runtime-js" / "src" / "inputtypes.js").as_uri()
    done = subprocess.run(
        [node, "--input-type=module", "-e", CHECK_JS % module],
        input=json.dumps(cases, ensure_ascii=False),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.ci_only
# one example is a batch of 20-40 drawn documents (one node process checks them all): drawing it is
# slow by design, more so on a loaded machine
@settings(
    max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(st.lists(st.tuples(documents(), st.lists(json_values(), min_size=1, max_size=4)), min_size=20, max_size=40))
def test_the_javascript_check_gives_the_python_messages(batch: list[tuple[Any, list[Any]]]) -> None:
    cases = []
    for document, values in batch:
        normalized = normalize(document)
        if normalized.problems:
            continue
        cases += [(normalized.schema, _json(value)) for value in values]
    expected = [check_value(schema, value, "x") for schema, value in cases]
    assert run_js_checks(cases) == expected
