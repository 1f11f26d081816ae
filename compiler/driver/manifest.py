"""Stage 4 — the manifest: what `build/manifest.json` records about every artifact."""

from __future__ import annotations

from ..compile.pipeline import CompiledPrompt
from ..facts import codes
from ..facts.config import Config
from ..facts.diagnostics import Diagnostic, file_span, make
from ..facts.language import MANIFEST
from ..passes.context import SourceTree
from ..runtime.model import Manifest


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
