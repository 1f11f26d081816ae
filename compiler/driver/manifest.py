"""Stage 4 — the manifest: what `build/manifest.json` records about every artifact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import __version__, codes
from ..compile import CompiledPrompt
from ..config import Config
from ..context import SourceTree
from ..diagnostics import Diagnostic, file_span, make

MANIFEST = "manifest.json"
MANIFEST_SCHEMA = "promptc.manifest/1"


def manifest_for(prompts: list[CompiledPrompt], config: Config) -> dict[str, Any]:
    artifacts: dict[str, Any] = {}
    prefixes: dict[str, dict[str, Any]] = {}
    for prompt in sorted(prompts, key=lambda p: p.name):
        summary = prompt.summary
        assert summary is not None and prompt.artifact_sha256 is not None
        artifacts[prompt.name] = {"path": f"{prompt.name}.json", "sha256": prompt.artifact_sha256, **summary}
        if summary["prefix_sha256"]:
            entry = prefixes.setdefault(summary["prefix_sha256"], {"tokens": summary["prefix_tokens"], "artifacts": []})
            entry["artifacts"].append(prompt.name)
    return {
        "schema": MANIFEST_SCHEMA,
        "compiler": {"name": "promptc", "version": __version__},
        "tokenizer": config.tokenizer,
        "provider": config.provider or None,
        "artifacts": artifacts,
        "prefixes": dict(sorted(prefixes.items())),
    }


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
