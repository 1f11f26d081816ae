"""Typed inputs from schema files (`/// input: order: @schemas/order.json`) and types inferred from
uses (`${user.name}`, `{% for x in items %}`), checked at build and at render."""

from __future__ import annotations

import json

import pytest

from promptc.compile import compile_text
from promptc.facts.config import Config
from promptc.runtime.render import InputTypeError, render_artifact

from .conftest import run_promptc, write

APPROX = Config(tokenizer="approx-bytes/4")

ORDER = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "status": {"enum": ["open", "closed"]},
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"qty": {"type": "integer"}}, "required": ["qty"]},
        },
    },
    "required": ["id", "items"],
    "additionalProperties": False,
}


def _compile(text: str, partials: dict[str, str] | None = None):
    return compile_text(text, name="p", partials=partials, config=APPROX)


def _codes(compiled) -> list[str]:
    return [d.code for d in compiled.diagnostics]


def _schema(compiled) -> dict:
    return compiled.artifact.input_schema


def test_a_schema_file_types_an_input_and_ships_inside_the_artifact():
    compiled = _compile(
        "/// input: order: @schemas/order.json\nOrder ${order.id}\n", {"schemas/order.json": json.dumps(ORDER)}
    )
    assert _codes(compiled) == []
    assert _schema(compiled)["properties"]["order"] == ORDER
    assert _schema(compiled)["required"] == ["order"]
    assert "schemas/order.json" in compiled.artifact.resources


def test_a_partials_schema_resolves_against_the_partial():
    compiled = _compile(
        "/// include: shared/_order\nThanks.\n",
        {
            "shared/_order.prompt": "/// input: order: @order.json\nOrder ${order.id}\n",
            "shared/order.json": json.dumps(ORDER),
        },
    )
    assert _codes(compiled) == []
    assert _schema(compiled)["properties"]["order"] == ORDER


def test_render_reports_every_problem_by_path():
    compiled = _compile("/// input: order: @order.json\nOrder ${order.id}\n", {"order.json": json.dumps(ORDER)})
    with pytest.raises(InputTypeError) as caught:
        render_artifact(
            compiled.artifact, dict(order={"id": 7, "status": "lost", "items": [{"qty": 1}, {"qty": "3"}, {}], "x": 1})
        )
    assert sorted(caught.value.problems) == sorted(
        [
            "order.id: expected a string, got 7",
            'order.status: expected one of "open" | "closed", got "lost"',
            'order.items[1].qty: expected an integer, got "3"',
            "order.items[2].qty: required, missing",
            'order["x"]: not allowed (the schema lists its keys)',
        ]
    )
    good = {"id": "A1", "status": "open", "items": [{"qty": 2}]}
    assert render_artifact(compiled.artifact, {"order": good}).messages[0]["content"] == "Order A1"


@pytest.mark.parametrize(
    ("files", "code"),
    [
        ({}, "E820"),
        ({"order.json": "{not json"}, "E821"),
        ({"order.json": '{"type": "strin"}'}, "E823"),
        ({"order.json": '{"type": "object", "properties": {"n": {"$ref": "#/$defs/n"}}}'}, "E826"),
        ({"order.json": '{"type": "object", "patternProperties": {"^a": {}}}'}, "E825"),
        ({"order.json": '{"type": "string", "pattern": "^A"}'}, "E825"),
    ],
)
def test_bad_schema_files_are_located_diagnostics(files, code):
    compiled = _compile("/// input: order: @order.json\nOrder ${order}\n", files)
    assert code in _codes(compiled)


def test_an_at_without_a_path_is_a_malformed_directive():
    assert _codes(_compile("/// input: order: @\nOrder ${order}\n")) == ["E304"]


def test_uses_imply_types_for_untyped_inputs():
    compiled = _compile(
        "/// input: user, items\nHi ${user.name} of ${user.team.name}\n{% for x in items %}{{ x }}{% endfor %}\n"
    )
    assert _codes(compiled) == []
    properties = _schema(compiled)["properties"]
    assert properties["user"] == {
        "type": "object",
        "properties": {
            "name": {},
            "team": {"type": "object", "properties": {"name": {}}, "required": ["name"]},
        },
        "required": ["name", "team"],
    }
    assert properties["items"] == {"type": ["array", "object", "string"]}
    with pytest.raises(InputTypeError, match=r"user\.team: required, missing"):
        render_artifact(compiled.artifact, {"user": {"name": "Ada"}, "items": []})
    with pytest.raises(InputTypeError, match=r"items: expected"):
        render_artifact(compiled.artifact, {"user": {"name": "Ada", "team": {"name": "core"}}, "items": 3})


def test_a_use_only_inside_a_branch_admits_none():
    compiled = _compile("{% if user %}Hi ${user.name}{% endif %}\n")
    assert _schema(compiled)["properties"]["user"]["type"] == ["object", "null"]
    assert render_artifact(compiled.artifact, {"user": None}).messages[0]["content"].strip() == ""


def test_a_loop_over_a_name_the_template_assigns_infers_nothing():
    compiled = _compile("{# if flag: items = [1] #}{% for x in items %}{{ x }}{% endfor %}\n")
    assert _schema(compiled)["properties"].get("items", {}) == {}


def test_objects_with_attributes_pass_an_inferred_object_type():
    class User:
        name = "Ada"

    compiled = _compile("Hi ${user.name}\n")
    assert render_artifact(compiled.artifact, {"user": User()}).messages[0]["content"] == "Hi Ada"


@pytest.mark.parametrize(
    ("source", "partials", "message"),
    [
        ("/// input: n: int\nValue ${n.attr}\n", {}, "`n` is int, which has no keys or attributes"),
        ("/// input: flag: bool\n{% for x in flag %}{{ x }}{% endfor %}\n", {}, "cannot be iterated"),
        (
            "/// input: order: @order.json\nStatus ${order.stat}\n",
            {"order.json": json.dumps(ORDER)},
            "`order` has no property `stat`",
        ),
        (
            "/// input: order: @order.json\n{{ order.id }}\n",
            {"order.json": json.dumps(ORDER)},
            "a dict has no attribute `id`",
        ),
    ],
)
def test_a_use_that_contradicts_the_declared_type_is_an_error_at_the_use(source, partials, message):
    compiled = _compile(source, partials)
    errors = [d for d in compiled.diagnostics if d.code == "E505"]
    assert len(errors) == 1 and message in errors[0].message
    assert errors[0].span.line == 2


@pytest.mark.parametrize(
    "source",
    [
        "/// input: d: dict[str, str]\nValue ${d.key}\n",
        "/// input: order: @order.json\n{{ order.get('id') }} {{ order['items'] }}\n",
        "/// input: s: str\n{% for c in s %}{{ c }}{% endfor %}\n",
    ],
)
def test_uses_the_declared_type_allows_are_not_errors(source):
    assert "E505" not in _codes(_compile(source, {"order.json": json.dumps(ORDER)}))


def test_var_parses_an_enum_value_bare_and_rejects_one_outside_it(tmp_path):
    write(
        tmp_path, "prompts_src/p.prompt", "/// input: order: @order.json, status: @status.json\n${status} ${order.id}\n"
    )
    write(tmp_path, "prompts_src/order.json", json.dumps(ORDER))
    write(tmp_path, "prompts_src/status.json", '{"enum": ["open", "closed"]}')
    assert (
        run_promptc("build", "prompts_src", "-o", "build", "--tokenizer", "approx-bytes/4", cwd=tmp_path).returncode
        == 0
    )
    order = json.dumps({"id": "A1", "items": []})
    ok = run_promptc("render", "p", "--var", "status=open", "--var", f"order={order}", "--format", "json", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    bad = run_promptc("render", "p", "--var", "status=lost", "--var", f"order={order}", cwd=tmp_path)
    assert bad.returncode == 2 and "status" in bad.stderr and "Traceback" not in bad.stderr


def test_diff_reports_a_narrower_schema_as_breaking(tmp_path):
    write(tmp_path, "prompts_src/p.prompt", "/// input: order: @order.json\nOrder ${order.id}\n")
    write(tmp_path, "prompts_src/order.json", json.dumps(ORDER))
    assert (
        run_promptc("build", "prompts_src", "-o", "old", "--tokenizer", "approx-bytes/4", cwd=tmp_path).returncode == 0
    )
    narrower = {**ORDER, "required": ["id", "items", "status"]}
    write(tmp_path, "prompts_src/order.json", json.dumps(narrower))
    assert (
        run_promptc("build", "prompts_src", "-o", "new", "--tokenizer", "approx-bytes/4", cwd=tmp_path).returncode == 0
    )
    result = run_promptc("diff", "old", "new", cwd=tmp_path)
    assert "order" in result.stdout and "breaking" in result.stdout


def test_var_with_an_object_wrong_inside_says_where(tmp_path):
    write(tmp_path, "prompts_src/p.prompt", "/// input: order: @order.json\nOrder ${order.id}\n")
    write(tmp_path, "prompts_src/order.json", json.dumps(ORDER))
    assert (
        run_promptc("build", "prompts_src", "-o", "build", "--tokenizer", "approx-bytes/4", cwd=tmp_path).returncode
        == 0
    )
    bad = run_promptc("render", "p", "--var", 'order={"id": 1}', cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "order.items: required, missing" in bad.stderr and "order.id: expected a string, got 1" in bad.stderr


# ---------------------------------------------------------------------------------------------
# Issue 25: what the build accepts, the runtime renders (optional paths, guards, references)

OPTIONAL = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "express": {"type": "boolean"},
        "note": {"type": "string", "default": "-"},
    },
    "required": ["id"],
}


def test_a_path_into_a_property_that_may_be_absent_is_an_error_at_the_use():
    compiled = _compile(
        "/// input: order: @order.json\nOrder ${order.id}\nExpress: ${order.express}\n",
        {"order.json": json.dumps(OPTIONAL)},
    )
    errors = [d for d in compiled.diagnostics if d.code == "E505"]
    assert len(errors) == 1 and errors[0].span.line == 3
    assert "`express` is not required by the schema of `order`" in errors[0].message
    assert "give it a `default`" in errors[0].hint


def test_a_property_with_a_default_renders_the_default_when_absent():
    compiled = _compile(
        "/// input: order: @order.json\nOrder ${order.id} (${order.note})\n", {"order.json": json.dumps(OPTIONAL)}
    )
    assert _codes(compiled) == []
    assert render_artifact(compiled.artifact, {"order": {"id": "A"}}).messages[0]["content"] == "Order A (-)"
    assert (
        render_artifact(compiled.artifact, {"order": {"id": "A", "note": "n"}}).messages[0]["content"] == "Order A (n)"
    )


def test_a_path_into_an_input_that_may_be_none_needs_a_guard():
    nullable = {"type": ["object", "null"], "properties": {"id": {"type": "string"}}, "required": ["id"]}
    files = {"order.json": json.dumps(nullable)}
    assert "E505" in _codes(_compile("/// input: order: @order.json\nOrder ${order.id}\n", files))
    guarded = _compile("/// input: order: @order.json\n{% if order %}Order ${order.id}{% endif %}\n", files)
    assert "E505" not in _codes(guarded)
    assert render_artifact(guarded.artifact, {}).messages[0]["content"] == ""


def test_pydantic_schemas_type_inputs():
    pydantic = pytest.importorskip("pydantic")

    class Line(pydantic.BaseModel):
        sku: str
        qty: int = 1

    class Order(pydantic.BaseModel):
        id: str
        lines: list[Line]

    compiled = _compile(
        "/// input: order: @order.json\nOrder ${order.id}\n", {"order.json": json.dumps(Order.model_json_schema())}
    )
    assert _codes(compiled) == []
    assert "$ref" not in json.dumps(_schema(compiled))
    with pytest.raises(InputTypeError, match=r"order\.lines\[0\]\.sku: required, missing"):
        render_artifact(compiled.artifact, {"order": {"id": "A", "lines": [{"qty": 2}]}})


@pytest.mark.parametrize(
    ("source", "required"),
    [
        # the cases: a use under an unrelated test is no guard
        ("{% if show %}{% for x in items %}{{ x }}{% endfor %}{% endif %}\n", ["items"]),
        ("{% if flag %}${user.name}{% endif %}\n", ["user"]),
        ("{% if flag %}${name}{% endif %}\n", ["name"]),
        # a test that proves the input is not None is
        ("{% if items %}{% for x in items %}{{ x }}{% endfor %}{% endif %}\n", []),
        ("{% if user is not None %}${user.name}{% else %}anonymous{% endif %}\n", []),
        ("{% if not user %}anonymous{% else %}${user.name}{% endif %}\n", []),
        ("{{ s.upper() if s else '' }}{{ t and t.upper() }}{{ u or 'none' }}\n", []),
        ("{{ len(items) }}{% if items %}{% for x in items %}{{ x }}{% endfor %}{% endif %}\n", ["items"]),
        # a class whose method reads the class itself reads the template's own name
        (
            "{# class Cfg:\n    sep = ', '\n    def join(self, v):\n        return Cfg.sep.join(v)\n#}"
            "{{ Cfg().join(items) }}\n",
            ["items"],
        ),
    ],
)
def test_inference_requires_an_input_wherever_a_path_uses_it_unguarded(source, required):
    compiled = _compile(source)
    assert not [d for d in compiled.diagnostics if d.severity == "error"]
    assert compiled.artifact.input_schema["required"] == required
    assert "Cfg" not in compiled.artifact.inputs
