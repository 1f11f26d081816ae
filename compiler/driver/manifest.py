"""Stage 4 — the manifest: what `build/manifest.json` records about every artifact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import codes
from ..config import Config
from ..context import SourceTree
from ..diagnostics import Diagnostic, file_span, make
from ..language import MANIFEST
from ..model import Manifest, ManifestEntry
from ..pipeline import CompiledPrompt


def manifest_for(prompts: list[CompiledPrompt], config: Config) -> Manifest:
    """The manifest of the prompts a build writes: each one's entry, and the prefixes they share."""
    entries = []
    for prompt in prompts:
        assert prompt.summary is not None and prompt.artifact_sha256 is not None
        raw = {"path": f"{prompt.name}.json", "sha256": prompt.artifact_sha256, **prompt.summary}
        entries.append((prompt.name, ManifestEntry.from_json(raw, own=True)))
    return Manifest.of(entries, tokenizer=config.tokenizer, provider=config.provider or None)


def collisions(prompts: list[CompiledPrompt], tree: SourceTree) -> list[Diagnostic]:
    problems = []
    for prompt in prompts:
        if prompt.name == MANIFEST[: -len(".json")]:
            problems.append(
                make(
                    codes.ARTIFACT_COLLISION,
                    f"`{prompt.source}` would be written to {MANIFEST}, which the manifest owns",
                    file_span(),
                    "rename the file",
                    path=tree.display(prompt.source),
                )
            )
    return problems


def read_manifest(out: Path) -> dict[str, Any]:
    import orjson

    try:
        data = orjson.loads((out / MANIFEST).read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
