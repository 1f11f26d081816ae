"""Every artifact and manifest promptc writes validates against the JSON Schemas it ships."""

from __future__ import annotations

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
