"""The build driver: read sources → plan (what is reused) → compile (pool) → manifest → write
→ bindings.

Each stage is a module of this package, and `build()` below reads top to bottom like the stages:

- `sources`  — read every `*.prompt` under the source folder (stat shortcut for unchanged files)
- `plan`     — the incremental cache: which artifacts in the output folder can be kept as they are
- `pool`     — compile the rest, on every core when there are enough prompts
- `manifest` — what `manifest.json` records about every artifact
- `output`   — swap the new set in atomically under a lock, or leave the old one exactly as it was
- `bindings` — the configured `python_bindings` / `typescript_bindings`, from the build in hand

The driver owns every stage and the rules around them: the project's `allow` (on the build's
own diagnostics and the configuration's; a prompt's are allowed by its compile), `strict` (a
warning fails the build, or under `keep_last_good` the prompt, as an error does) and the
bindings. So the CLI, `watch`, the library and CI get the same build.

The library never prints: progress goes to the `on_progress(done, total)` callback the caller
passes (the CLI draws a bar with it), and every problem is a `Diagnostic` in the result.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import bindings
from ..backend.emit import dumps
from ..backend.suppress import allowed
from ..compile.pipeline import CompiledPrompt
from ..facts import codes
from ..facts.config import Config, load_config
from ..facts.diagnostics import Diagnostic, deduplicated, file_span, has_errors, make
from ..facts.language import SOURCE_SUFFIX
from ..passes.context import SourceTree
from ..runtime.buildfolder import (
    CACHE_DIR,
    MANIFEST,
    STAGING_MARK,
    BuildFolder,
    Refused,
    artifact_path,
    claim_output,
    discard,
    give_back,
    linked_part,
    make_spool,
    output_lock,
    owns_output,
    recover,
    stale_paths,
    write_error,
    write_output,
)
from ..runtime.model import Artifact, Manifest
from .manifest import collisions, manifest_for
from .plan import Plan, compiler_fingerprint, last_good, load_plan, save_state
from .pool import PARALLEL_THRESHOLD, compile_many
from .sources import is_prompt, read_tree

__all__ = [
    "build",
    "check",
    "compile_tree",
    "BuildResult",
    "Progress",
    "CACHE_DIR",
    "STAGING_MARK",
    "MANIFEST",
    "PARALLEL_THRESHOLD",
]

#: `on_progress(done, total)`: called after each compiled prompt
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class BuildResult:
    """What a build or a check did. Frozen; every field is public and plain data."""

    #: every prompt in source order: compiled now, or reused from the output folder
    prompts: tuple[CompiledPrompt, ...] = ()
    #: sorted by path, line, column
    diagnostics: tuple[Diagnostic, ...] = ()
    #: the manifest the build wrote or would write (None when the build failed)
    manifest: Manifest | None = None
    #: every file of the new output set, relative to the output folder, sorted (manifest included)
    outputs: tuple[str, ...] = ()
    #: the output folder was replaced by this build
    written: bool = False
    #: the output folder already held exactly this build, so nothing was touched
    unchanged: bool = False
    #: `check(locked=True)`: output files that differ from what build would write, are missing or extra
    stale: tuple[str, ...] = ()
    #: `check(locked=True)`: configured bindings files (as configured) that build would change or add
    stale_bindings: tuple[str, ...] = ()
    #: how many source files (prompts and partials) were read
    source_count: int = 0

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)

    @property
    def errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == "warning")


@dataclass(slots=True)
class _Compiled:
    """The driver's working state between stages (private: `BuildResult` is what callers see)."""

    config: Config = field(default_factory=Config)
    #: warnings fail as errors do
    strict: bool = False
    prompts: list[CompiledPrompt] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    manifest: Manifest | None = None
    #: new files → their bytes, or the spool file holding them (large builds)
    files: dict[str, bytes | Path] = field(default_factory=dict)
    #: artifacts the output folder already holds as they should be (reused)
    keep: list[str] = field(default_factory=list)
    tree: SourceTree | None = None
    plan: Plan | None = None

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)

    def report(self, diagnostics: Sequence[Diagnostic]) -> None:
        """Add what a stage of the driver found, under the project's `allow` and `strict`."""
        self.diagnostics += _strict(allowed(diagnostics, self.config.allow), self.strict)

    def result(self, **changes: Any) -> BuildResult:
        return BuildResult(
            prompts=tuple(self.prompts),
            diagnostics=tuple(deduplicated(self.diagnostics)),
            manifest=self.manifest,
            outputs=tuple(sorted([*self.files, *self.keep])) if self.manifest is not None else (),
            source_count=sum(1 for rel in self.tree.files if rel.endswith(SOURCE_SUFFIX))
            if self.tree is not None
            else 0,
            **changes,
        )


def build(
    src: Path | str | None = None,
    out: Path | str | None = None,
    config: Config | None = None,
    *,
    write: bool = True,
    incremental: bool = True,
    keep_last_good: bool = False,
    strict: bool = False,
    config_diagnostics: Sequence[Diagnostic] = (),
    on_progress: Progress | None = None,
) -> BuildResult:
    """Compile `src` into `out`, then write the configured bindings.

    All or nothing: unless every source compiles, nothing in `out` changes. With `keep_last_good`
    (the watch loop) a failing prompt keeps the artifact `out` already has and the rest is written.
    With `strict`, a warning fails like an error (and is reported as one). With `incremental`,
    sources whose bytes, partials, config and compiler are unchanged are not recompiled; the
    output is byte-identical to a clean build either way.

    Without `config`, `[tool.promptc]` is read as the CLI reads it (`load_config()`), and its
    diagnostics are the result's; `src` and `out` default to the config's. A caller that read the
    configuration itself hands its diagnostics in as `config_diagnostics`, to be reported (and
    allowed, and made errors by `strict`) with the build's.
    """
    config, loaded = _config(config)
    reported = [*loaded, *config_diagnostics]
    src, out = Path(src if src is not None else config.src), Path(out if out is not None else config.out)
    project = _Compiled(config=config, strict=strict)
    project.report(reported)
    problem = _output_problem(src, out)
    if problem is not None:
        project.report([problem])
        return project.result()
    spools: list[Path] = []
    failed = True
    try:
        # The lock is held for the whole build, not only the write: a slow build that started
        # first can never land last with older sources than what a faster one already wrote.
        with output_lock(out) if write else contextlib.nullcontext():
            try:
                if write:
                    # Before anything is read from the output folder or the cache: what dead builds
                    # left is cleaned up, and a folder or cache entry promptc did not make is refused.
                    recover(out)
                    claim_output(out)

                def spool() -> str:
                    spools.append(make_spool(out))
                    return str(spools[-1])

                project = _compile(
                    src,
                    out,
                    config,
                    reported=reported,
                    strict=strict,
                    incremental=incremental and write,
                    trusted=write and owns_output(out),
                    keep_last_good=keep_last_good,
                    spool=spool if write else None,
                    on_progress=on_progress,
                )
                if not write or project.manifest is None:
                    return project.result()
                shas = {entry.path: entry.sha256 for entry in project.manifest.artifacts.values()}
                written = write_output(out, project.files, project.keep, shas)
                if project.plan is not None and project.plan.fingerprint and project.tree is not None:
                    save_state(out, project.plan, project.prompts, project.tree)
            except OSError as exc:
                if write and exc.errno == errno.ENOSPC:
                    give_back(out)  # the shadow set is only an optimisation: its space is the user's
                raise
            # the bindings of what the output folder now holds (still under the lock)
            if bindings.configured(config):
                project.report(bindings.write(bindings.generate(config, _artifacts(project, out))))
        failed = False
        return project.result(written=written, unchanged=not written)
    except TimeoutError as exc:
        project.report([make(codes.OUTPUT_LOCKED, str(exc), None, "wait for the other build to finish", path=str(out))])
    except Refused as exc:
        project.report([exc.diagnostic])
    except OSError as exc:
        project.report([write_error(out, exc)])
    finally:
        for folder in spools:  # what is left in it after a write (all of it after a failure)
            discard(folder, out, now=failed)
    return project.result()


def _config(config: Config | None) -> tuple[Config, list[Diagnostic]]:
    if config is not None:
        return config, []

    return load_config()


def check(
    src: Path | str | None = None,
    out: Path | str | None = None,
    config: Config | None = None,
    *,
    locked: bool = False,
    strict: bool = False,
    config_diagnostics: Sequence[Diagnostic] = (),
) -> BuildResult:
    """Compile without writing (and without the incremental cache: check is the authority); with
    `locked`, also report every output file and configured bindings file that build would change,
    add or remove. Config, `src`, `out`, `strict` and `config_diagnostics` are as for `build`."""
    config, loaded = _config(config)
    reported = [*loaded, *config_diagnostics]
    src, out = Path(src if src is not None else config.src), Path(out if out is not None else config.out)
    problem = _output_problem(src, out)
    if problem is not None:
        failed = _Compiled(config=config, strict=strict)
        failed.report([*reported, problem])
        return failed.result()
    project = _compile(src, out, config, reported=reported, strict=strict)
    if not (locked and project.ok):
        return project.result()
    stale = stale_paths(project.files, out)
    for path in stale:
        message, hint = _why_stale(path, out, project)
        project.report([make(codes.BUILD_STALE, message, None, hint, path=(out / path).as_posix())])
    stale_bindings: list[str] = []
    if bindings.configured(config):
        for binding, problem in bindings.stale(bindings.generate(config, _artifacts(project, out))):
            project.report([problem])
            if problem.code == codes.BUILD_STALE:
                stale_bindings.append(binding.path)
    return project.result(stale=tuple(stale), stale_bindings=tuple(stale_bindings))


def compile_tree(tree: SourceTree, config: Config) -> tuple[list[CompiledPrompt], Manifest]:
    """Every prompt of a source tree held in memory (a git revision's, say), compiled as a build
    of it would compile them, and the manifest that build would write: the prompts that do not
    compile there are left out of it, as a build would fail them."""
    rels = sorted(rel for rel in tree.files if is_prompt(rel))
    prompts = compile_many(rels, tree, config)
    return prompts, manifest_for([p for p in prompts if p.ok], config)


def _artifacts(project: _Compiled, out: Path) -> dict[str, Artifact]:
    """The artifacts of the build in hand, by prompt name: those compiled now from memory, the
    ones the build reused (or spooled to disk) from the output folder, checked against the
    manifest's hashes. A prompt whose artifact cannot be had is left out (the build reported why)."""
    if project.manifest is None:
        return {}
    folder = BuildFolder(out, project.manifest)  # the manifest in hand, not the one on disk
    artifacts: dict[str, Artifact] = {}
    for prompt in project.prompts:
        if prompt.name not in project.manifest.artifacts:
            continue
        artifact = prompt.load_artifact() or folder.artifact_or_none(prompt.name)
        if artifact is not None:
            artifacts[prompt.name] = artifact
    return artifacts


def _why_stale(path: str, out: Path, project: _Compiled) -> tuple[str, str]:
    """E905's message and hint for one output file: missing, stray, or stale, and what changed."""
    shown = (out / path).as_posix()
    rebuild = "run `promptc build` and commit the result"
    if not out.is_dir():
        return f"`{shown}` is missing: the output folder `{out.as_posix()}` does not exist", rebuild
    link = linked_part(out, path)
    if link is not None:
        return (
            f"`{(out / link).as_posix()}` is a symlink: promptc writes only files and folders of its own "
            "into the output folder and never follows a link there",
            "delete the link, then run `promptc build` and commit the result",
        )
    if path not in project.files:
        return (
            f"`{shown}` should not be there: no source compiles to it",
            "delete it, or run `promptc build`, which removes it",
        )
    if not (out / path).exists():
        return f"`{shown}` is missing: `promptc build` would write it", rebuild
    if path == MANIFEST:
        return f"`{shown}` is stale: it lists artifacts or hashes that are not the current ones", rebuild
    prompt = next((p for p in project.prompts if artifact_path(p.name) == path), None)
    if prompt is None or project.tree is None:
        return f"`{shown}` is stale: it differs from what `promptc build` would write", rebuild
    source = project.tree.display(prompt.source)
    recorded = BuildFolder(out).artifact_file(prompt.name)
    if recorded is None or recorded.source_sha256 != project.tree.shas.get(prompt.source):
        return f"`{shown}` is stale: its source `{source}` changed since it was built", rebuild
    deps = ", ".join(f"`{project.tree.display(d)}`" for d in prompt.deps) if prompt.deps else ""
    what = f"one of {deps}, the config or promptc itself" if deps else "the config or promptc itself"
    return f"`{shown}` is stale: `{source}` is unchanged, so {what} changed", rebuild


def _strict(diagnostics: Sequence[Diagnostic], strict: bool) -> list[Diagnostic]:
    return [d.as_error() if strict and d.severity == "warning" else d for d in diagnostics]


def _failed_by_strict(prompt: CompiledPrompt) -> CompiledPrompt:
    """Under `strict`, a prompt with a warning fails as one with an error does: its warnings are
    errors and it has no artifact to write (a watch build keeps its last good one)."""
    if not any(d.severity == "warning" for d in prompt.diagnostics):
        return prompt
    return replace(
        prompt,
        diagnostics=tuple(_strict(prompt.diagnostics, True)),
        artifact=None,
        data=None,
        entry=None,
        spooled=None,
        reused=False,
    )


def _compile(
    src: Path,
    out: Path,
    config: Config,
    *,
    reported: Sequence[Diagnostic] = (),
    strict: bool = False,
    incremental: bool = False,
    trusted: bool = False,
    keep_last_good: bool = False,
    spool: Callable[[], str] | None = None,
    on_progress: Progress | None = None,
) -> _Compiled:
    """Stages 1 to 4: everything but writing (large builds spool artifacts to files, though)."""
    project = _Compiled(config=config, strict=strict)
    project.report(reported)
    if not src.is_dir():
        project.report(
            [
                make(
                    codes.SOURCE_NOT_FOUND,
                    f"source folder `{src}` not found",
                    None,
                    f"create it, pass the folder (`promptc build PATH`), or set `src` in [tool.promptc] of {config.origin}"
                    if config.origin
                    else "create it, or pass the folder: `promptc build PATH`",
                    path=str(src),
                )
            ]
        )
        return project

    # 1. read sources (files the cache knows unchanged by their stat are read only when needed)
    # The cache is read only for the very output folder promptc's last build swapped in: a committed,
    # copied or hand-made one (or cache) is rebuilt from the sources, then recorded.
    plan = (load_plan(out, config) if trusted else Plan(compiler_fingerprint(config))) if incremental else Plan()
    tree, diagnostics = read_tree(src, out, plan.files, plan.saved_ns)
    project.tree, project.plan = tree, plan
    project.report(diagnostics)
    project.report(_outside_symlinks(tree))
    rels = [rel for rel in tree.files if is_prompt(rel)]

    # 2. plan: which artifacts the output folder already holds as they should be
    reused = plan.reusable(rels, tree, out)
    to_compile = [rel for rel in rels if rel not in reused]
    if incremental and trusted and 0 < len(to_compile) < PARALLEL_THRESHOLD:
        plan.preload_token_counts(out, to_compile, config)

    # 3. compile the rest
    use_spool = spool() if spool is not None and len(to_compile) >= PARALLEL_THRESHOLD else None
    fresh = iter(compile_many(to_compile, tree, config, spool=use_spool, on_progress=on_progress))
    prompts = [reused[rel] if rel in reused else next(fresh) for rel in rels]
    if strict:
        prompts = [_failed_by_strict(p) for p in prompts]
    if keep_last_good:
        previous = BuildFolder(out).manifest_or_none()
        prompts = [(last_good(p, previous, out) or p) if has_errors(p.diagnostics) else p for p in prompts]
    project.prompts = prompts
    for prompt in prompts:
        own = tree.display(prompt.source)
        # a prompt's diagnostics are already allowed (and, by `_failed_by_strict`, strict)
        project.diagnostics.extend(
            d if d.path == own else replace(d, included_by=(prompt.name,)) for d in prompt.diagnostics
        )
    project.report(collisions(prompts, tree))

    # 4. the manifest, and the set of files to write
    if project.ok or keep_last_good:
        writable = [p for p in prompts if p.entry is not None]
        project.manifest = manifest_for(writable, config)
        files: dict[str, bytes | Path] = {}
        for p in writable:
            if not p.reused and (p.data or p.spooled):
                files[artifact_path(p.name)] = p.data or Path(p.spooled or "")
        files[MANIFEST] = dumps(project.manifest)
        project.files = dict(sorted(files.items()))
        project.keep = sorted(artifact_path(p.name) for p in writable if p.reused)
    return project


def _output_problem(src: Path, out: Path) -> Diagnostic | None:
    """An output folder promptc must not touch: the source folder itself, one inside it or around
    it (a swap would move sources away), or a symlink (the swap would exchange the link, not the
    folder). Nothing is read or moved when this says no."""
    if out.is_symlink():
        return make(
            codes.OUTPUT_IS_SYMLINK,
            f"output folder `{out}` is a symlink; promptc swaps the output folder as a whole and will not swap a link",
            None,
            f"point `out` at the real folder (`{os.path.realpath(out)}`)",
            path=str(out),
        )
    real_src, real_out = os.path.realpath(src), os.path.realpath(out)
    if real_out == real_src or real_out.startswith(real_src + os.sep) or real_src.startswith(real_out + os.sep):
        how = (
            "is the source folder"
            if real_out == real_src
            else (
                "lies inside the source folder" if real_out.startswith(real_src + os.sep) else "holds the source folder"
            )
        )
        return make(
            codes.OUTPUT_OVERLAPS_SOURCES,
            f"output folder `{out}` {how} `{src}`; nothing was read or written",
            None,
            f"use two folders side by side, e.g. `promptc build {src.as_posix()} -o build` "
            "(or set `src` and `out` in [tool.promptc])",
            path=str(out),
        )
    return None


def _outside_symlinks(tree: SourceTree) -> list[Diagnostic]:
    return [
        make(
            codes.INCLUDE_OUTSIDE,
            "symlink points outside the source folder; not compiled",
            file_span(),
            "copy the file into the source folder instead of linking it",
            path=tree.display(rel),
        )
        for rel in tree.outside
        if is_prompt(rel)  # folders, partials and JSON files: only a reference through one is an error
    ]
