"""promptc's version: what `promptc --version`, the manifest and SARIF logs name (pyproject.toml
holds the same string for the package index; `tests/test_wheel.py` checks the two agree)."""

from __future__ import annotations

VERSION = "0.1.0"
