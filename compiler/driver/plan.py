"""Stage 2 — plan: what the incremental cache lets this build reuse, and the cache itself.

The cache (`buildfolder.state_path`: `.promptc-cache/<out>.state.json`) records, for every artifact
in the output folder, the sha256 of the source and of every partial it includes, its manifest
entry, its warnings, and the stat of the artifact file; and for every source file its stat and
sha256. It is an optimisation only: a stale, corrupt or missing cache means a full build, never a
wrong one, and it is keyed by a fingerprint of the compiler's own files and the configuration.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from ..backend.meter import TokenizerError, meter
from ..compile.pipeline import CompiledPrompt, name_of
from ..facts.config import Config
from ..facts.diagnostics import Diagnostic, Edit, Fix, Span, has_errors
from ..facts.language import RESOURCE_SUFFIX, SOURCE_SUFFIX
from ..facts.version import VERSION
from ..passes.context import SourceTree
from ..runtime.atomic import read_file, write_file
from ..runtime.buildfolder import BuildFolder, artifact_path, state_path
from ..runtime.model import Manifest, ManifestEntry
from ..syntax.parse import grammar_text


@dataclass(slots=True)
class Plan:
    """The incremental cache as loaded for one build. An empty plan reuses nothing."""

    #: changes whenever the compiler or the config changes; "" means no incremental cache
    fingerprint: str = ""
    #: source → what the cache knows of its artifact
    entries: dict[str, Any] = field(default_factory=dict)
    #: source → [size, mtime_ns, inode, sha256] when the cache was saved
    files: dict[str, list[Any]] = field(default_factory=dict)
    saved_ns: int = 0

    def reusable(self, rels: list[str], tree: SourceTree, out: Path) -> dict[str, CompiledPrompt]:
        """The prompts whose source, partials and artifact file are exactly what the cache recorded."""
        reused: dict[str, CompiledPrompt] = {}
        shas = tree.shas
        for rel in rels:
            entry = self.entries.get(rel)
            if not isinstance(entry, dict) or entry.get("sha") != shas.get(rel):
                continue
            deps = entry.get("deps")
            if not isinstance(deps, dict) or any(shas.get(dep) != sha for dep, sha in deps.items()):
                continue
            prompt = _reuse(rel, entry, out)
            if prompt is not None:
                reused[rel] = prompt
        return reused

    def preload_token_counts(self, out: Path, rels: list[str], config: Config) -> None:
        """Feed the meter the counts the previous artifacts of these prompts recorded, so that a
        rebuild after an edit that leaves the texts alone (a comment, a directive) or changes one
        section never loads the tokenizer for the rest."""
        folder = BuildFolder(out)
        for rel in rels:
            artifact = folder.artifact_file(name_of(rel))
            if artifact is None:
                continue
            try:
                counter = meter(artifact.tokenizer.name)  # the same tokenizer counts the same text alike
            except TokenizerError:
                continue
            counts: dict[str, int] = {}
            for message in artifact.messages:
                counts[message.content] = message.tokens
                for block in message.blocks:
                    counts[block.text] = block.tokens
                    for section in block.sections:
                        counts[section.text] = section.tokens
            counter.preload(counts)


def load_plan(out: Path, config: Config) -> Plan:
    """The cache for `out`, or an empty plan (with the fingerprint) when it is stale or unreadable."""
    fingerprint = compiler_fingerprint(config)
    try:
        # never through a link, never a pipe: a cache entry promptc did not write is no cache
        state = orjson.loads(read_file(state_path(out), follow=False))
    except (OSError, ValueError):
        return Plan(fingerprint)
    if not isinstance(state, dict) or state.get("fingerprint") != fingerprint:
        return Plan(fingerprint)
    entries, files, saved = state.get("entries"), state.get("files"), state.get("saved_ns")
    if not isinstance(entries, dict) or not isinstance(files, dict) or not isinstance(saved, int):
        return Plan(fingerprint)
    return Plan(fingerprint, entries, files, saved)


def save_state(out: Path, plan: Plan, prompts: list[CompiledPrompt], tree: SourceTree) -> None:
    """Record what this build wrote, for the next one to plan with."""
    shas = tree.shas
    files = {rel: [*stat, shas[rel]] for rel, stat in tree.stats.items() if rel in shas}
    entries = {}
    base = str(out)
    for prompt in prompts:
        if prompt.entry is None or has_errors(prompt.diagnostics):
            continue
        stat = _output_stat(os.path.join(base, prompt.entry.path))
        if stat is None:
            continue
        if prompt.reused and prompt.source in plan.entries:
            # Usually a hard link of the file the entry describes, but the output's shadow set may
            # keep its own copy of the same bytes (another inode and mtime): record what is there.
            old = plan.entries[prompt.source]
            entries[prompt.source] = old if old.get("stat") == stat else {**old, "stat": stat}
            continue
        entries[prompt.source] = {
            "sha": shas[prompt.source],
            "deps": {dep: shas.get(dep) for dep in prompt.deps},
            "entry": prompt.entry.to_json(),
            "includes": list(prompt.includes),
            "stat": stat,
            **_warnings_to_state(prompt.diagnostics),
        }
    state = {"fingerprint": plan.fingerprint, "saved_ns": time.time_ns(), "files": files, "entries": entries}
    try:
        # atomic (a killed build leaves the old cache or the new), not fsynced: it is an
        # optimisation a crash may lose, and never written through a link
        write_file(state_path(out), orjson.dumps(state), symlinks="refuse", durable=False)
    except OSError:
        pass  # the cache is an optimisation; never fail a build over it


def last_good(prompt: CompiledPrompt, previous: Manifest | None, out: Path) -> CompiledPrompt | None:
    """For watch: a prompt that fails keeps the artifact the output folder already has."""
    entry = None if previous is None else previous.artifacts.get(prompt.name)
    if entry is None or not (out / entry.path).is_file():
        return None
    return replace(prompt, entry=entry, reused=True, data=None)


def compiler_fingerprint(config: Config) -> str:
    """Changes whenever anything that can change artifact bytes changes: the compiler's own files
    (code, grammar, built-in partials, data), its version, and the config."""
    return hashlib.sha256(f"{_package_digest()}\0{config.fingerprint()}".encode()).hexdigest()


@cache
def _package_digest() -> str:
    # Read once per process: a watch loop rebuilds many times, the compiler's files do not change.

    digest = hashlib.sha256(VERSION.encode())
    digest.update(grammar_text().encode())
    package = Path(__file__).resolve().parent.parent
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", SOURCE_SUFFIX, RESOURCE_SUFFIX) and "__pycache__" not in path.parts:
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _output_stat(path: Path | str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _warnings_to_state(diagnostics: tuple[Diagnostic, ...]) -> dict[str, Any]:
    """A prompt's warnings, with each source line they echo stored once (`lines`) and named by its
    index: a thousand warnings on one long line must not store the line a thousand times."""
    lines: dict[str, int] = {}
    rows = []
    for d in diagnostics:
        span = [d.span.start, d.span.end, d.span.line, d.span.col] if d.span else None
        line = None if d.source_line is None else lines.setdefault(d.source_line, len(lines))
        fixes = [
            [f.title, f.preferred, [[e.start, e.end, e.line, e.col, e.end_line, e.end_col, e.text] for e in f.edits]]
            for f in d.fixes
        ]
        rows.append([d.code, d.severity, d.message, d.path, span, d.hint, line, fixes])
    return {"warnings": rows, "lines": list(lines)}


def _diag_from_state(row: list[Any], lines: list[str]) -> Diagnostic:
    code, severity, message, path, span, hint, line, fixes = row
    text = None if line is None else lines[line]
    kept = tuple(Fix(title, tuple(Edit(*edit) for edit in edits), preferred) for title, preferred, edits in fixes)
    return Diagnostic(code, severity, message, path, Span(*span) if span else None, hint, text, fixes=kept)


def _reuse(rel: str, entry: dict[str, Any], out: Path) -> CompiledPrompt | None:
    name = name_of(rel)
    if _output_stat(os.path.join(out, artifact_path(name))) != entry.get("stat"):
        return None  # the file in the output folder is not the one this cache describes
    try:
        lines = entry["lines"]
        warnings = tuple(_diag_from_state(row, lines) for row in entry["warnings"])
        return CompiledPrompt(
            name,
            rel,
            warnings,
            includes=tuple(entry["includes"]),
            # written by this very promptc (the fingerprint says so): taken as it is
            entry=ManifestEntry.from_json(entry["entry"], own=True),
            resources=tuple(dep for dep in entry["deps"] if dep not in entry["includes"]),
            reused=True,
        )
    except (KeyError, TypeError, ValueError, IndexError):  # ArtifactError is a ValueError
        return None
