"""Every artifact and manifest promptc writes validates against the JSON Schemas it ships."""

from __future__ import annotations

import collections.abc
import dataclasses
import json
from pathlib import Path

import jsonschema

from promptc.schemas import load

from .conftest import ROOT


def test_committed_build_validates() -> None:
    artifact_schema, manifest_schema = load("artifact"), load("manifest")
    build = ROOT / "build"
    manifest = json.loads((build / "manifest.json").read_text())
    jsonschema.validate(manifest, manifest_schema)
    assert manifest["artifacts"], "the example build is empty"
    for entry in manifest["artifacts"].values():
        jsonschema.validate(json.loads((build / entry["path"]).read_text()), artifact_schema)


def test_golden_artifacts_validate() -> None:
    schema = load("artifact")
    for path in sorted(Path(ROOT / "tests/cases/emit").glob("*.expected.json")):
        artifact = json.loads(path.read_text())["artifact"]
        if artifact is not None:
            jsonschema.validate(artifact, schema)


# ---------------------------------------------------------------------------------------------
# The model and the schemas, field by field

#: model class → how its JSON names differ from its fields (the manifest nests the compiler)
_RENAMED = {"Manifest": {"compiler_name": "compiler", "compiler_version": "compiler"}}


def _resolve(node: dict, root: dict) -> dict:
    while "$ref" in node:
        node = root["$defs"][node["$ref"].removeprefix("#/$defs/")]
    return node


def _options(node: dict, root: dict) -> list[dict]:
    """A schema node as its alternatives (`oneOf`/`anyOf`), each resolved."""
    node = _resolve(node, root)
    alternatives = node.get("oneOf") or node.get("anyOf")
    if alternatives:
        return [option for alt in alternatives for option in _options(alt, root)]
    return [node]


def _json_types(node: dict, root: dict) -> set[str]:
    types: set[str] = set()
    for option in _options(node, root):
        if "type" in option:
            declared = option["type"]
            types |= set(declared if isinstance(declared, list) else [declared])
        for value in [*option.get("enum", ()), *(("const" in option and [option["const"]]) or ())]:
            types.add({str: "string", bool: "boolean", int: "integer", type(None): "null"}.get(type(value), "?"))
    return types


def _literals(node: dict, root: dict) -> set[object] | None:
    found: set[object] = set()
    for option in _options(node, root):
        if "enum" in option:
            found |= set(option["enum"])
        elif "const" in option:
            found.add(option["const"])
        elif option.get("type") == "null":
            found.add(None)
        else:
            return None
    return found


def _expected(annotation: object) -> tuple[set[str], list[object]]:
    """The JSON types a field annotation allows, and the model classes or literals inside it."""
    import types as pytypes
    import typing

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is typing.Any:
        return {"any"}, []
    if origin in (typing.Union, pytypes.UnionType):
        kinds: set[str] = set()
        inner: list[object] = []
        for arg in args:
            k, i = _expected(arg)
            kinds |= k
            inner += i
        return kinds, inner
    if annotation is type(None):
        return {"null"}, []
    if origin is typing.Literal:
        return {"literal"}, [set(args)]
    if annotation is str:
        return {"string"}, []
    if annotation is bool:
        return {"boolean"}, []
    if annotation is int:
        return {"integer"}, []
    if annotation is float:
        return {"number"}, []
    if origin in (tuple, list):
        return {"array"}, [a for a in args if a is not Ellipsis]
    if origin in (dict, collections.abc.Mapping) or annotation is dict or str(origin).endswith("Mapping"):
        return {"mapping"}, list(args[1:])
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return {"object"}, [annotation]
    raise AssertionError(f"no JSON type for {annotation!r}")


def _check(cls: type, node: dict, root: dict, where: str, seen: set[type]) -> None:
    import typing

    if cls in seen:
        return
    seen.add(cls)
    objects = [o for o in _options(node, root) if o.get("type") == "object" or "properties" in o]
    assert len(objects) == 1, f"{where}: no object schema for {cls.__name__}"
    schema = objects[0]
    properties = schema.get("properties", {})
    renamed = _RENAMED.get(cls.__name__, {})
    hints = typing.get_type_hints(cls)
    json_names = list(dict.fromkeys(renamed.get(f.name, f.name) for f in dataclasses.fields(cls)))
    assert list(properties) == json_names, f"{where}: the schema's properties are not {cls.__name__}'s fields, in order"
    assert schema.get("additionalProperties") is False, f"{where}: the schema allows fields the model does not have"
    for f in dataclasses.fields(cls):
        if f.name in renamed:
            continue
        kinds, inner = _expected(hints[f.name])
        sub = properties[f.name]
        mapping = "mapping" in kinds
        kinds = {"object" if k == "mapping" else k for k in kinds}
        if "any" in kinds:
            continue
        if "literal" in kinds:
            allowed = set().union(*[i for i in inner if isinstance(i, set)]) | ({None} if "null" in kinds else set())
            assert _literals(sub, root) == allowed, f"{where}.{f.name}: the schema's values are not {allowed}"
            continue
        declared = _json_types(sub, root)
        assert declared, f"{where}.{f.name}: no type in the schema"
        # an integer-valued schema of a float field is fine the other way round only
        assert declared <= kinds | ({"number"} if "integer" in kinds else set()), (
            f"{where}.{f.name}: the schema says {sorted(declared)}, the model {sorted(kinds)}"
        )
        # a value the model can hold that the schema refuses; an optional property whose null
        # the model writes by leaving the key out is the one exception
        optional = f.name not in schema.get("required", ())
        missing = kinds - declared - ({"null"} if optional else set())
        assert not missing, f"{where}.{f.name}: the model holds {sorted(missing)}, the schema refuses it"
        for item in inner:
            if isinstance(item, type) and dataclasses.is_dataclass(item):
                target = sub
                if mapping:  # a JSON object whose values are the class
                    objects = [o for o in _options(sub, root) if o.get("type") == "object"]
                    assert objects and isinstance(objects[0].get("additionalProperties"), dict), where
                    target = objects[0]["additionalProperties"]
                elif "array" in kinds:
                    arrays = [o for o in _options(sub, root) if o.get("type") == "array"]
                    assert arrays, f"{where}.{f.name}: no array schema"
                    target = arrays[0]["items"]
                _check(item, target, root, f"{where}.{f.name}", seen)


def test_the_model_and_the_schemas_agree_field_by_field() -> None:
    """Every field of every artifact and manifest class is a property of the shipped JSON Schema,
    in the order the build writes it, with the types the model reads (and nothing else is): the
    schemas beside the model cannot drift from it."""
    from promptc.runtime import model

    for cls, name in ((model.Artifact, "artifact"), (model.Manifest, "manifest")):
        root = load(name)
        seen: set[type] = set()
        _check(cls, root, root, name, seen)
        assert len(seen) >= 3, name  # the nested classes were reached, not only the top
