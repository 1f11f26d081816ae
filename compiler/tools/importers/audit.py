"""`promptc audit KIND SRC`: promptc's cache analysis of foreign prompts, without writing anything.

The foreign files are converted in memory (`convert`) and compiled through the build's own compile
(`compile.compile_source` over a `context.SourceTree`); the manifest's shared prefixes come from the
build's `driver.manifest.manifest_for`. So what audit prints is what `promptc build` of the imported
tree records: each prompt's cache-stable prefix (its length, where it ends and why, in the foreign
file), W705/W710, the prefixes prompts share, and what each provider would cache
(`cache.cacheable_tokens` of the same prompt compiled for that provider).

`prefix_analysis` reads only the artifacts and the manifest, so a test can run it on the files a
real build wrote and compare.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, replace
from pathlib import Path
from typing import Any

from ...compile import compile_source
from ...compile.pipeline import PartialLoader
from ...driver.manifest import manifest_for
from ...facts.codes import CODES
from ...facts.config import Config
from ...facts.diagnostics import Diagnostic, make, ordered
from ...facts.records import dataclass
from ...passes.context import SourceTree
from .common import Converted
from .convert import CACHE_CODES, compile_converted
from .folder import convert_folder

PROVIDERS = ("anthropic", "openai", "gemini")


def prefix_analysis(artifacts: Mapping[str, Any], manifest: Any) -> dict[str, Any]:
    """The cache analysis of a built tree, from its artifacts (name → `model.Artifact`) and its
    `model.Manifest`: per prompt the prefix and where it ends, and the prefixes prompts share."""
    prompts = {}
    for name in sorted(artifacts):
        artifact = artifacts[name]
        cache = artifact.cache
        end = cache.prefix_end
        prompts[name] = {
            "model": artifact.model,
            "provider": artifact.provider.name if artifact.provider is not None else None,
            "min_cacheable_tokens": artifact.provider.min_cacheable_tokens if artifact.provider is not None else None,
            "prefix_sha256": cache.prefix_sha256,
            "prefix_chars": cache.prefix_chars,
            "prefix_tokens": cache.prefix_tokens,
            "cacheable_tokens": cache.cacheable_tokens,
            "breakpoints": len(cache.breakpoints),
            "total_tokens": artifact.totals.tokens,
            "prefix_end": None
            if end is None or end.source is None
            else {"source": end.source, "line": end.line, "column": end.column, "reason": end.reason},
        }
    shared = [
        {"prefix_sha256": sha, "tokens": group.tokens, "prompts": list(group.artifacts)}
        for sha, group in sorted(manifest.prefixes.items())
        if len(group.artifacts) > 1
    ]
    return {"prompts": prompts, "shared_prefixes": shared}


@dataclass(frozen=True, slots=True)
class AuditReport:
    """What `promptc audit` prints, as data (`to_json()` is its `--format json`)."""

    kind: str
    #: `prefix_analysis` of the imported tree, each prompt also with `source` (the foreign file),
    #: `foreign_end` (where the prefix ends in it) and `by_provider` (cacheable tokens per provider)
    analysis: dict[str, Any] = field(default_factory=dict)
    #: refused files (E96x) and the cache warnings (W705, W710), pointing into the foreign files
    diagnostics: tuple[Diagnostic, ...] = ()
    imported: int = 0
    refused: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "imported": self.imported,
            "refused": self.refused,
            **self.analysis,
        }


def audit(kind: str, src: Path | str, config: Config | None = None, *, role: str = "system") -> AuditReport:
    """The cache analysis of the foreign prompts under `src`, imported in memory."""
    config = config or Config()
    folder, converted = convert_folder(kind, src, role=role)
    diagnostics = list(folder.diagnostics)
    root = folder.root_display
    _tree, compiled = compile_converted(converted, config)
    by_target = {c.target: c for c in converted}
    ok = [compiled[c.target] for c in converted if c.target in compiled and not c.refused]
    artifacts = {p.name: p.load_artifact() for p in ok}
    analysis = prefix_analysis(artifacts, manifest_for(ok, config))
    # what each provider would cache of the same prompts
    per_provider: dict[str, dict[str, Any]] = {p.name: {} for p in ok}
    for provider in PROVIDERS:
        again = _compile_all([c for c in converted if not c.refused], replace(config, provider=provider))
        for name, (artifact, problem) in again.items():
            if name in per_provider:
                per_provider[name][provider] = artifact.cache.cacheable_tokens if artifact is not None else problem
    for prompt in ok:
        entry = analysis["prompts"][prompt.name]
        c = by_target[prompt.source]
        entry["source"] = f"{root}/{c.source}" if root else c.source
        entry["by_provider"] = per_provider[prompt.name]
        end = entry["prefix_end"]
        where = c.origin(end["line"], end["column"]) if end and c.origin and end["source"] == c.target else None
        entry["foreign_end"] = None if where is None else {"line": where[0], "column": where[1]}
        for d in prompt.diagnostics:
            if d.code in CACHE_CODES:
                diagnostics.append(_to_foreign(d, c))
    for c in converted:
        if c.refused:
            diagnostics += [d for d in c.diagnostics if d.severity == "error"]
    imported = sum(1 for c in converted if not c.refused and not c.partial)
    refused = sum(1 for c in converted if c.refused)
    return AuditReport(kind, analysis, tuple(ordered(diagnostics)), imported, refused)


def _compile_all(converted: list[Converted], config: Config) -> dict[str, tuple[Any, str | None]]:
    """name → (artifact, None), or (None, the first error) when the prompt does not compile for
    this config (Anthropic requires `max_tokens`, E709)."""
    files: dict[str, bytes] = {}
    for c in converted:
        files[c.target] = c.text.encode("utf-8")
        files.update({path: text.encode("utf-8") for path, text in c.extra.items()})
    tree = SourceTree(files=files)
    partials = PartialLoader(config, tree)
    out: dict[str, tuple[Any, str | None]] = {}
    for c in converted:
        if c.partial:
            continue
        result = compile_source(c.target, files[c.target], config, tree, partials)
        errors = [d for d in result.diagnostics if d.severity == "error"]
        out[result.name] = (
            (None, f"{errors[0].code}: {errors[0].message}") if errors else (result.load_artifact(), None)
        )
    return out


def _to_foreign(d: Diagnostic, c: Converted) -> Diagnostic:
    """A compile diagnostic of the imported text, moved to the foreign file where the text came from."""
    if c.foreign is None or c.origin is None or d.span is None:
        return d
    where = c.origin(d.span.line, d.span.col)
    if where is None:
        where = (1, 1)
    line, column = where
    src = c.foreign
    line = max(1, min(line, len(src.line_starts)))
    offset = min(src.line_starts[line - 1] + column - 1, len(src.text))

    return make(CODES[d.code], d.message, src.span(offset, offset + 1), d.hint, source=src)
