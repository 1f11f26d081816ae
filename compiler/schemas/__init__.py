"""JSON Schemas for the artifact and the manifest, shipped inside the wheel."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any


def load(name: str) -> dict[str, Any]:
    """`load("artifact")` or `load("manifest")`."""
    schema: dict[str, Any] = json.loads(
        resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    )
    return schema
