"""`promptc diff --fail-on output-breaking`: output-schema changes classified for the code that
parses responses (issue 25), each kind through the real command on two manifests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from promptc.driver import build
from promptc.tools.outputcontract import classify

from .conftest import run_promptc, write

BASE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "maxLength": 200, "description": "The answer."},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "tone": {"enum": ["formal", "casual"]},
        "sources": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "note": {"type": "string"},
        "meta": {"type": "object", "properties": {"id": {"type": "integer"}}, "additionalProperties": False},
        "kind": {"anyOf": [{"const": "a"}, {"const": "b"}]},
    },
    "required": ["answer", "confidence", "tone", "sources", "meta", "kind"],
    "additionalProperties": False,
}


def _changed(edit) -> dict[str, Any]:
    schema = json.loads(json.dumps(BASE))
    edit(schema)
    return schema


def _set(path: str, value: Any):
    def edit(schema: dict[str, Any]) -> None:
        *parents, leaf = path.split("/")
        node = schema
        for part in parents:
            node = node[part]
        if value is _DELETE:
            del node[leaf]
        else:
            node[leaf] = value

    return edit


_DELETE = object()

#: (what changes, the edit, breaking?, the kind reported)
CASES = [
    ("a property removed", _set("properties/note", _DELETE), True, "property removed"),
    ("a required property removed", _set("properties/tone", _DELETE), True, "property removed"),
    (
        "a property made optional",
        _set("required", ["answer", "confidence", "sources", "meta", "kind"]),
        True,
        "property made optional",
    ),
    ("a changed type", _set("properties/answer/type", "integer"), True, "type changed"),
    ("integer widened to number", _set("properties/meta/properties/id/type", "number"), True, "type changed"),
    ("null admitted", _set("properties/answer/type", ["string", "null"]), True, "may now be null"),
    (
        "an enum admitting a new value",
        _set("properties/tone/enum", ["formal", "casual", "pirate"]),
        True,
        "enum admits new values",
    ),
    ("an object opened to extra keys", _set("additionalProperties", True), True, "opened to extra keys"),
    ("a nested object opened", _set("properties/meta/additionalProperties", _DELETE), True, "opened to extra keys"),
    ("a raised maximum length", _set("properties/answer/maxLength", 400), True, "`maxLength` loosened"),
    ("a lowered minimum", _set("properties/confidence/minimum", -1), True, "`minimum` loosened"),
    ("a bound removed", _set("properties/confidence/maximum", _DELETE), True, "`maximum` removed"),
    ("items may repeat", _set("properties/sources/uniqueItems", False), True, "items may now repeat"),
    ("items changed type", _set("properties/sources/items", {"type": "integer"}), True, "type changed"),
    (
        "an anyOf option added",
        _set("properties/kind/anyOf", [{"const": "a"}, {"const": "b"}, {"const": "c"}]),
        True,
        "`anyOf` admits a new option",
    ),
    ("a schema that admits anything", _set("properties/note", {}), True, "now admits any value"),
    ("an enum removed", _set("properties/tone", {"type": "string"}), True, "enum removed"),
    ("a keyword promptc cannot compare", _set("properties/note/not", {"const": "x"}), True, "`not` changed"),
    ("a new optional property", _set("properties/extra", {"type": "string"}), False, "new optional property"),
    (
        "a new required property",
        lambda s: (s["properties"].update(extra={"type": "string"}), s["required"].append("extra")),
        False,
        "new required property",
    ),
    ("a narrowed enum", _set("properties/tone/enum", ["formal"]), False, "enum narrowed"),
    ("number narrowed to integer", _set("properties/confidence/type", "integer"), False, "type narrowed"),
    ("an optional property made required", lambda s: s["required"].append("note"), False, "property made required"),
    ("a lowered maximum length", _set("properties/answer/maxLength", 100), False, "`maxLength` tightened"),
    ("an anyOf option removed", _set("properties/kind/anyOf", [{"const": "a"}]), False, "`anyOf` option removed"),
    (
        "a description changed",
        _set("properties/answer/description", "What the model says."),
        False,
        "annotation changed",
    ),
    (
        "an object closed",
        lambda s: s["properties"]["sources"].update(items={"type": "object", "additionalProperties": False}),
        True,
        "type changed",
    ),
]


@pytest.fixture(scope="module")
def manifests(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("outputs")
    write(root, "prompts_src/schemas/answer.json", json.dumps(BASE))
    write(root, "prompts_src/ask.prompt", "/// output: schemas/answer.json\n/// input: q\nAnswer ${q}\n")
    assert build(root / "prompts_src", root / "build").ok
    manifest = json.loads((root / "build" / "manifest.json").read_text())
    assert manifest["artifacts"]["ask"]["output_schema"] == BASE
    return root, manifest


@pytest.mark.parametrize(("what", "edit", "breaking", "kind"), CASES, ids=[c[0] for c in CASES])
def test_each_kind_of_change_is_classified_by_diff(manifests, what, edit, breaking, kind, tmp_path) -> None:
    root, manifest = manifests
    new = json.loads(json.dumps(manifest))
    new["artifacts"]["ask"]["output_schema"] = _changed(edit)
    (tmp_path / "new.json").write_text(json.dumps(new))
    old_path, new_path = str(root / "build" / "manifest.json"), str(tmp_path / "new.json")
    done = run_promptc("diff", old_path, new_path, "--fail-on", "output-breaking", "--format", "json")
    assert done.returncode == (1 if breaking else 0), done.stdout + done.stderr
    outputs = json.loads(done.stdout)["outputs"]
    assert len(outputs) == 1 and outputs[0]["name"] == "ask" and outputs[0]["breaking"] is breaking
    assert kind in [change["kind"] for change in outputs[0]["changes"]], outputs
    assert all(not change["breaking"] for change in outputs[0]["changes"]) or breaking
    # --fail-on output fails on any change, compatible ones too
    assert run_promptc("diff", old_path, new_path, "--fail-on", "output").returncode == 1


def test_at_least_twenty_kinds() -> None:
    assert len({kind for *_, kind in CASES}) >= 20


def test_the_text_report_and_schemas_added_or_removed(manifests, tmp_path) -> None:
    root, manifest = manifests
    new = json.loads(json.dumps(manifest))
    new["artifacts"]["ask"]["output_schema"] = _changed(_set("properties/note", _DELETE))
    (tmp_path / "new.json").write_text(json.dumps(new))
    done = run_promptc("diff", str(root / "build" / "manifest.json"), str(tmp_path / "new.json"))
    assert "output contract changes (1):\n  ask (breaking: code that parses the response can fail):\n" in done.stdout
    assert "    breaking: note: property removed\n" in done.stdout
    assert "1 output contract change (1 breaking)" in done.stdout
    assert [c.kind for c in classify(None, BASE)] == ["output schema added"]
    assert [(c.kind, c.breaking) for c in classify(BASE, None)] == [("output schema removed", True)]
    assert classify(BASE, json.loads(json.dumps(BASE))) == []


def test_references_are_resolved_before_comparing() -> None:
    old = {"$defs": {"T": {"enum": ["a", "b"]}}, "type": "object", "properties": {"t": {"$ref": "#/$defs/T"}}}
    new = {"type": "object", "properties": {"t": {"enum": ["a", "b"]}}}
    assert classify(old, new) == []
    widened = {"$defs": {"T": {"enum": ["a", "b", "c"]}}, "type": "object", "properties": {"t": {"$ref": "#/$defs/T"}}}
    assert [(c.path, c.kind) for c in classify(old, widened)] == [("t", "enum admits new values")]
