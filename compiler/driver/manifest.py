"""Stage 4 — the manifest: what `build/manifest.json` records about every artifact."""

from __future__ import annotations

from .. import codes
from ..config import Config
from ..context import SourceTree
from ..diagnostics import Diagnostic, file_span, make
from ..language import MANIFEST
from ..model import Manifest
from ..pipeline import CompiledPrompt


def manifest_for(prompts: list[CompiledPrompt], config: Config) -> Manifest:
    """The manifest of the prompts a build writes: each one's entry, and the prefixes they share."""
    entries = []
    for prompt in prompts:
        assert prompt.entry is not None
        entries.append((prompt.name, prompt.entry))
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
