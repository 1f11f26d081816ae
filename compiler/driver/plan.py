"""Stage 2 — plan: what the incremental cache lets this build reuse, and the cache itself.

The cache (`.promptc-cache/<out>.state.json`) records, for every artifact in the output folder, the
sha256 of the source and of every partial it includes, what the manifest says about it, its
warnings, and the stat of the artifact file; and for every source file its stat and sha256. It is
an optimisation only: a stale, corrupt or missing cache means a full build, never a wrong one, and
it is keyed by a fingerprint of the compiler's own files and the configuration.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from .. import __version__
from ..atomic import read_file, write_file
from ..compile import CompiledPrompt, name_of
from ..config import Config
from ..context import SourceTree
from ..diagnostics import Diagnostic, Span, has_errors
from ..model import Artifact, ArtifactError, ManifestEntry
from .output import CACHE_DIR


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
        import orjson

        from ..meter import TokenizerError, meter

        for rel in rels:
            try:
                artifact = Artifact.from_json(orjson.loads((out / f"{name_of(rel)}.json").read_bytes()))
                counter = meter(artifact.tokenizer.name)  # the same tokenizer counts the same text alike
            except (OSError, ValueError, ArtifactError, TokenizerError):
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
    import orjson

    fingerprint = compiler_fingerprint(config)
    try:
        # never through a link, never a pipe: a cache entry promptc did not write is no cache
        state = orjson.loads(read_file(_state_path(out), follow=False))
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
    import orjson

    shas = tree.shas
    files = {rel: [*stat, shas[rel]] for rel, stat in tree.stats.items() if rel in shas}
    entries = {}
    base = str(out)
    for prompt in prompts:
        if prompt.summary is None or prompt.artifact_sha256 is None or has_errors(prompt.diagnostics):
            continue
        stat = _output_stat(os.path.join(base, f"{prompt.name}.json"))
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
            "summary": prompt.summary,
            "artifact_sha256": prompt.artifact_sha256,
            "includes": list(prompt.includes),
            "stat": stat,
            **_warnings_to_state(prompt.diagnostics),
        }
    state = {"fingerprint": plan.fingerprint, "saved_ns": time.time_ns(), "files": files, "entries": entries}
    try:
        # atomic (a killed build leaves the old cache or the new), not fsynced: it is an
        # optimisation a crash may lose, and never written through a link
        write_file(_state_path(out), orjson.dumps(state), symlinks="refuse", durable=False)
    except OSError:
        pass  # the cache is an optimisation; never fail a build over it


def last_good(prompt: CompiledPrompt, previous: dict[str, Any], out: Path) -> CompiledPrompt | None:
    """For watch: a prompt that fails keeps the artifact the output folder already has."""
    raw = previous.get(prompt.name)
    if not isinstance(raw, dict) or not (out / f"{prompt.name}.json").is_file():
        return None
    try:
        entry = ManifestEntry.from_json(raw)
    except ArtifactError:
        return None
    summary = {key: value for key, value in entry.to_json().items() if key not in ("path", "sha256")}
    return replace(prompt, summary=summary, artifact_sha256=entry.sha256, reused=True, data=None)


def compiler_fingerprint(config: Config) -> str:
    """Changes whenever anything that can change artifact bytes changes: the compiler's own files
    (code, grammar, built-in partials, data), its version, and the config."""
    return hashlib.sha256(f"{_package_digest()}\0{config.fingerprint()}".encode()).hexdigest()


@cache
def _package_digest() -> str:
    # Read once per process: a watch loop rebuilds many times, the compiler's files do not change.
    from ..parse import grammar_text

    digest = hashlib.sha256(__version__.encode())
    digest.update(grammar_text().encode())
    package = Path(__file__).resolve().parent.parent
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".prompt", ".json") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _state_path(out: Path) -> Path:
    return out.parent / CACHE_DIR / f"{out.name}.state.json"


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
        rows.append([d.code, d.severity, d.message, d.path, span, d.hint, line])
    return {"warnings": rows, "lines": list(lines)}


def _diag_from_state(row: list[Any], lines: list[str]) -> Diagnostic:
    code, severity, message, path, span, hint, line = row
    text = None if line is None else lines[line]
    return Diagnostic(code, severity, message, path, Span(*span) if span else None, hint, text)


def _reuse(rel: str, entry: dict[str, Any], out: Path) -> CompiledPrompt | None:
    name = name_of(rel)
    if _output_stat(os.path.join(out, f"{name}.json")) != entry.get("stat"):
        return None  # the file in the output folder is not the one this cache describes
    try:
        lines = entry["lines"]
        warnings = tuple(_diag_from_state(row, lines) for row in entry["warnings"])
        return CompiledPrompt(
            name,
            rel,
            warnings,
            includes=tuple(entry["includes"]),
            resources=tuple(dep for dep in entry["deps"] if dep not in entry["includes"]),
            summary=entry["summary"],
            artifact_sha256=entry["artifact_sha256"],
            reused=True,
        )
    except (KeyError, TypeError, ValueError, IndexError):
        return None
