"""JSON Schemas for the artifact and the manifest, shipped inside the wheel."""

from __future__ import annotations

import json
from importlib import resources


def load(name: str) -> dict:
    """`load("artifact")` or `load("manifest")`."""
    return json.loads(resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8"))
