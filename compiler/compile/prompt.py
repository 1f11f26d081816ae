"""What a compile gives the build: `CompiledPrompt`, one prompt's diagnostics, artifact and
manifest entry.

Its own module, apart from the compile (`pipeline`), so that the build can hold, reuse and report
prompts without loading the compile stack: a `promptc build` that finds nothing to compile never
imports the passes, the parser or the tokenizer.
"""

from __future__ import annotations

from dataclasses import field

import orjson

from ..facts.diagnostics import Diagnostic, has_errors
from ..facts.language import SOURCE_SUFFIX
from ..facts.records import dataclass
from ..runtime.model import Artifact, ManifestEntry

__all__ = ["CompiledPrompt", "name_of"]


def name_of(rel: str) -> str:
    return rel.removesuffix(SOURCE_SUFFIX)


@dataclass(frozen=True, slots=True)
class CompiledPrompt:
    name: str
    source: str  # path under the source folder
    diagnostics: tuple[Diagnostic, ...]
    artifact: Artifact | None = None
    data: bytes | None = None  # the artifact's JSON bytes, exactly as written
    includes: tuple[str, ...] = field(default=())
    #: what the manifest records about this artifact: its path, the sha256 of its bytes (also when
    #: an incremental build reused the file already in the output), and the summary
    entry: ManifestEntry | None = None
    #: True when the artifact was not compiled in this build but taken from the output folder
    reused: bool = False
    #: where the build's spool holds the artifact's bytes, when it does not keep them in memory
    spooled: str | None = None
    #: tool and schema files the prompt read (source-relative): like includes, editing one rebuilds it
    resources: tuple[str, ...] = field(default=())

    @property
    def artifact_sha256(self) -> str | None:
        return None if self.entry is None else self.entry.sha256

    @property
    def deps(self) -> tuple[str, ...]:
        """Every file besides its own source that the artifact depends on."""
        return (*self.includes, *self.resources)

    @property
    def ok(self) -> bool:
        return self.entry is not None and not has_errors(self.diagnostics)

    def load_artifact(self) -> Artifact | None:
        """The artifact, decoding `data` when the build kept only the bytes."""
        if self.artifact is not None or self.data is None:
            return self.artifact
        return Artifact.from_json(orjson.loads(self.data))
