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

import bisect
import contextlib
import errno
import hashlib
import os
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from ..backend.suppress import allowed
from ..compile.prompt import CompiledPrompt, name_of
from ..facts import codes
from ..facts.config import Config, load_config
from ..facts.diagnostics import Diagnostic, deduplicated, file_span, has_errors, make
from ..facts.language import SOURCE_SUFFIX
from ..facts.lazy import lazy_import
from ..facts.records import dataclass
from ..passes.context import SourceTree
from ..runtime.atomic import read_file
from ..runtime.buildfolder import (
    CACHE_DIR,
    MANIFEST,
    STAGING_MARK,
    BuildFolder,
    KnownOutput,
    Refused,
    artifact_path,
    claim_output,
    discard,
    folders_of,
    give_back,
    linked_part,
    make_spool,
    output_clock,
    output_lock,
    output_record,
    owns_output,
    recover,
    shadow_identity,
    stale_paths,
    write_error,
    write_output,
)
from ..runtime.confine import option_refusal
from ..runtime.model import Artifact, Manifest, ManifestEntry
from .manifest import ManifestDoc, collisions, entry_of, manifest_for, piece_fields
from .plan import (
    Plan,
    acyclic,
    changes_of,
    collecting,
    empty_plan,
    fingerprint,
    last_good,
    load_plan,
    output_stat,
    reuse,
    save_state,
    trusted_stat,
    warnings_of,
)
from .pool import PARALLEL_THRESHOLD, compile_many, load_compiler
from .sources import LazyFiles, is_prompt, read_tree, update_tree

if TYPE_CHECKING:
    from .. import bindings
else:  # the last stage, when the configuration names a bindings file
    bindings = lazy_import("promptc.bindings")

__all__ = [
    "build",
    "check",
    "compile_tree",
    "BuildResult",
    "Progress",
    "Session",
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

    #: every prompt in source order: compiled now, or reused from the output folder (a reused one
    #: is made from the incremental state when first read)
    prompts: Sequence[CompiledPrompt] = ()
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
    def compiled(self) -> tuple[CompiledPrompt, ...]:
        """The prompts this build compiled (the others it reused), in source order."""
        if isinstance(self.prompts, _Prompts):
            return self.prompts.made_now()
        return tuple(p for p in self.prompts if not p.reused)

    @property
    def warnings(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == "warning")


@dataclass(slots=True)
class _Compiled:
    """The driver's working state between stages (private: `BuildResult` is what callers see)."""

    config: Config = field(default_factory=Config)
    #: warnings fail as errors do
    strict: bool = False
    prompts: Sequence[CompiledPrompt] = ()
    diagnostics: list[Diagnostic] = field(default_factory=list)
    manifest: Manifest | None = None
    #: the prompts compiled now (by source), and the state records of those reused
    compiled: dict[str, CompiledPrompt] = field(default_factory=dict)
    reused: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: new files → their bytes, or the spool file holding them (large builds)
    files: dict[str, bytes | Path] = field(default_factory=dict)
    #: artifacts the output folder already holds as they should be (reused)
    keep: list[str] = field(default_factory=list)
    tree: SourceTree | None = None
    plan: Plan | None = None
    #: when the sources were walked (their records are as of then)
    walked_ns: int = 0
    #: the walk reported no problem
    clean_walk: bool = False
    #: the manifest's pieces after this build
    doc: ManifestDoc | None = None
    #: they were the last build's (patched now), and its `manifest.json` is still on disk as written
    doc_known: bool = False
    manifest_intact: bool = False
    #: files of the previous set this build drops
    removed_paths: list[str] = field(default_factory=list)
    #: the prompts of the tree, sorted
    rels: list[str] = field(default_factory=list)
    #: artifact sha256 by name, of the prompts compiled without their entry (a large build's)
    arts: dict[str, str] = field(default_factory=dict)
    #: the state's records this build changed, as they were before it (by source)
    state_changes: dict[str, dict[str, Any] | None] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)

    def report(self, diagnostics: Sequence[Diagnostic]) -> None:
        """Add what a stage of the driver found, under the project's `allow` and `strict`."""
        self.diagnostics += _strict(allowed(diagnostics, self.config.allow), self.strict)

    def result(self, **changes: Any) -> BuildResult:
        return BuildResult(
            prompts=self.prompts,
            diagnostics=tuple(deduplicated(self.diagnostics)),
            manifest=self.manifest,
            outputs=tuple(sorted([*self.files, *self.keep])) if self.manifest is not None else (),
            source_count=sum(1 for rel in self.tree.files if rel.endswith(SOURCE_SUFFIX))
            if self.tree is not None
            else 0,
            **changes,
        )


class _Prompts(Sequence[CompiledPrompt]):
    """A build's prompts in source order: those it compiled, and those it reused from the output
    folder as the incremental state recorded them, each made into a `CompiledPrompt` (its entry
    decoded from the manifest) when first read: a build that reuses 100,000 prompts makes none
    of them unless asked."""

    __slots__ = ("_rels", "_made", "_records", "_entries")

    def __init__(
        self,
        rels: list[str],
        made: dict[str, CompiledPrompt],
        records: Mapping[str, dict[str, Any]],
        entries: Mapping[str, ManifestEntry],
    ) -> None:
        self._rels, self._made, self._records, self._entries = rels, made, records, entries

    def _at(self, rel: str) -> CompiledPrompt:
        prompt = self._made.get(rel)
        if prompt is None:
            prompt = self._made[rel] = reuse(rel, self._records[rel], self._entries[name_of(rel)])
        elif prompt.entry is None and prompt.name in self._entries and not has_errors(prompt.diagnostics):
            # compiled by a large build, which kept its entry as a piece of the manifest
            prompt = self._made[rel] = replace(prompt, entry=self._entries[prompt.name])
        return prompt

    @overload
    def __getitem__(self, index: int) -> CompiledPrompt: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[CompiledPrompt, ...]: ...

    def __getitem__(self, index: int | slice) -> CompiledPrompt | tuple[CompiledPrompt, ...]:
        if isinstance(index, slice):
            return tuple(self._at(rel) for rel in self._rels[index])
        return self._at(self._rels[index])

    def __len__(self) -> int:
        return len(self._rels)

    def __iter__(self) -> Iterator[CompiledPrompt]:
        return (self._at(rel) for rel in self._rels)

    def made_now(self) -> tuple[CompiledPrompt, ...]:
        """The prompts compiled by the build (not those reused), without making the others."""
        return tuple(self._at(rel) for rel in self._rels if rel not in self._records)

    def __repr__(self) -> str:
        return f"<{len(self._rels)} prompts, {len(self._rels) - len(self._records)} compiled>"


class _PieceEntries(Mapping[str, ManifestEntry]):
    """The entries of a build that wrote no manifest: those its workers sent back as pieces, then
    those of the manifest it started from."""

    def __init__(self, pieces: dict[str, bytes], previous: Mapping[str, ManifestEntry]) -> None:
        self._pieces, self._previous = dict(pieces), previous

    def __getitem__(self, name: str) -> ManifestEntry:
        piece = self._pieces.get(name)
        return entry_of(name, piece) if piece is not None else self._previous[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted({*self._pieces, *self._previous}))

    def __len__(self) -> int:
        return sum(1 for _ in self)


class Session:
    """What a build keeps in memory for the next build of the same tree: a watch loop's state.

    The source tree as last read, the incremental state, the manifest's pieces, the prompts it
    reused or compiled (as the next build reuses them) and which prompts read which files. Pass
    one session to every `build()` of one source folder, output folder and configuration, with
    the paths that changed since the last one (`changes=`): the build then reads those paths, the
    prompts they feed and the manifest entries they change, never the rest of the tree. A session
    made for another build (another folder or configuration, `strict` or not) starts afresh."""

    def __init__(self) -> None:
        self.key: tuple[Any, ...] | None = None
        self.tree: SourceTree | None = None
        #: the walk that made `tree` reported no problem (a changed path can then be read alone)
        self.clean = False
        #: the incremental state, as this session's last build saved it (its `entries` are the
        #: prompts the next build reuses: those written without errors)
        self.plan: Plan | None = None
        self.doc: ManifestDoc | None = None
        #: a file → the prompts that read it (includes, tools, schemas), for the entries indexed
        self.dependents: dict[str, set[str]] = {}
        self.indexed = False
        #: the prompts of `tree`, sorted
        self.rels: list[str] | None = None

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]

    def _index(self, rel: str, record: dict[str, Any] | None, add: bool = True) -> None:
        for dep in (record or {}).get("deps") or ():
            users = self.dependents.setdefault(dep, set())
            if add:
                users.add(rel)
            else:
                users.discard(rel)


# The build's own bookkeeping (the state decoded, reused prompts, the manifest's pieces) makes
# hundreds of thousands of objects and no cycle: the collector is paused around it (`acyclic`, a
# context manager used as the decorator), and runs for the compiles (`collecting`).
@acyclic()
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
    session: Session | None = None,
    changes: Collection[str] | None = None,
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

    With `session` (see `Session`), what this build learnt is kept for the next; with `changes`
    too — the absolute paths created, modified, moved or deleted since the session's last build,
    as a watcher saw them — only those paths are read. Without `changes` every source is stat'ed.
    """
    config, loaded = _config(config)
    reported = [*loaded, *config_diagnostics]
    src, out = Path(src if src is not None else config.src), Path(out if out is not None else config.out)
    project = _Compiled(config=config, strict=strict)
    project.report(reported)
    problem = _output_problem(src, out)
    refused = _refusals(config, out) if write and problem is None else []
    if write and problem is None and not refused:
        problem = _holds_working_folder(out)
    if problem is not None or refused:
        project.report([problem] if problem is not None else refused)
        return project.result()
    spools: list[Path] = []
    failed = True
    remembered = False
    try:
        # The lock is held for the whole build, not only the write: a slow build that started
        # first can never land last with older sources than what a faster one already wrote.
        with output_lock(out) if write else contextlib.nullcontext():
            try:
                plan: Plan | None = None
                known: _Known | None = None
                claimed_ns = 0
                if write:
                    # Before anything is read from the output folder: what dead builds left is
                    # cleaned up, and a folder or cache entry promptc did not make is refused. The
                    # state is read only for the very output folder promptc's last build swapped
                    # in: a committed, copied or hand-made one (or cache) is rebuilt from the
                    # sources, then recorded.
                    recover(out)
                    plan, session = _plan(src, out, config, strict, session, incremental)
                    known = _known(plan, out) if incremental else None
                    claimed_ns = time.time_ns()
                    claim_output(out, known.output if known is not None else None)
                    # before any output file is looked at: a stat taken later whose change time is
                    # older proves its file (see `trusted_stat`)
                    plan.clock = output_clock(out)

                def spool() -> str:
                    spools.append(make_spool(out))
                    return str(spools[-1])

                project = _compile(
                    src,
                    out,
                    config,
                    reported=reported,
                    strict=strict,
                    plan=plan if incremental else None,
                    known=known,
                    keep_last_good=keep_last_good,
                    spool=spool if write else None,
                    on_progress=on_progress,
                    session=session,
                    changes=changes,
                )
                if not write or project.manifest is None:
                    return project.result()
                made = not os.path.isdir(out)
                written = _write(out, project, known)
                if plan is not None and plan.fingerprint and project.tree is not None:
                    # the files written now are proven by a stat taken after the swap, against the
                    # clock read then; those the build did not write, by the clock read before
                    clock = output_clock(out) if written else plan.clock
                    _record(out, project, plan, known, written, claimed_ns, clock=clock, made=made)
                    if session is not None:
                        _remember(session, project)
                        remembered = True
            except OSError as exc:
                if write and exc.errno == errno.ENOSPC:
                    give_back(out)  # the shadow set is only an optimisation: its space is the user's
                raise
            # the bindings of what the output folder now holds (still under the lock)
            if config.bindings():
                with collecting():
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
        if session is not None and not remembered:
            session.reset()  # a build that wrote nothing: the next one starts from the disk again
    return project.result()


@dataclass(slots=True)
class _Known:
    """The previous build's output as the state recorded it: its manifest (as pieces, when the
    file is still the one it wrote) and the check and patch of the folder it allows."""

    output: KnownOutput
    #: artifacts the manifest lists that the state has no entry for (kept last-good ones), by name
    kept: frozenset[str]
    #: the stat of `manifest.json` as written
    manifest_stat: list[int] | None
    #: its sha256, when that stat was taken within the racy window (it proves nothing alone)
    manifest_sha: str | None = None


def _plan(
    src: Path, out: Path, config: Config, strict: bool, session: Session | None, incremental: bool
) -> tuple[Plan, Session | None]:
    """The incremental state: the session's, when it was made for this very build and the state
    file on disk is still the one it wrote (no other build ran in between), else the one on disk
    (for an output folder this promptc's last build swapped in), else an empty one (which the
    build then fills). A build that is not incremental starts from an empty one."""
    if session is not None:
        plan = session.plan
        if (
            incremental
            and plan is not None
            and session.key == _session_key(src, out, fingerprint(config, plan.package), strict)
            and plan.is_on_disk(out)
            and owns_output(out)
        ):
            return plan, session
        session.reset()
    plan = load_plan(out, config) if incremental and owns_output(out) else empty_plan(config)
    if session is not None:
        session.key = _session_key(src, out, plan.fingerprint, strict)
        session.plan = plan
    return plan, session


def _session_key(src: Path, out: Path, fingerprint: str, strict: bool) -> tuple[Any, ...]:
    return (os.path.abspath(src), os.path.abspath(out), fingerprint, strict)


def _known(plan: Plan, out: Path) -> _Known | None:
    """What the state knows of the output folder, when it recorded all of it (a loaded state's
    fields are of the shapes promptc writes: `plan._valid_output`)."""
    output = plan.output
    if not output or output["live"] is None:
        return None
    live, shadow, dirs, diff = output["live"], output["shadow"], output["dirs"], output["diff"]
    kept = frozenset(output["kept"])
    entries = plan.entries

    def holds(rel: str) -> bool:
        if rel == MANIFEST:
            return True
        if not rel.endswith(".json"):
            return False
        name = rel[: -len(".json")]
        return f"{name}{SOURCE_SUFFIX}" in entries or name in kept

    known = KnownOutput(holds, dirs, live, shadow, frozenset(diff))
    return _Known(known, kept, output["manifest"], output["manifest_sha"])


def _write(out: Path, project: _Compiled, known: _Known | None) -> bool:
    """Swap the new set in, unless the output folder already holds it."""
    assert project.manifest is not None and project.doc is not None
    if known is not None and project.doc_known:
        removed = project.removed_paths
        known.output.removed = frozenset(removed)
        artifacts = {rel: data for rel, data in project.files.items() if rel != MANIFEST}
        if project.manifest_intact and not removed and not project.doc.changed and _on_disk(out, artifacts):
            return False  # nothing this build made differs from what is there
        # the hashes of the kept files serve only a shadow set brought up to date by listing it
        patchable = known.output.matches(out) and known.output.shadow == shadow_identity(out)
        return write_output(
            out, project.files, project.keep, {} if patchable else _kept_shas(project), known=known.output
        )
    return write_output(out, project.files, project.keep, _kept_shas(project))


def _kept_shas(project: _Compiled) -> dict[str, str]:
    """The sha256 of every artifact the build keeps as the output folder has it, by path: those
    reused (their records have it) and the last-good ones a failing prompt keeps."""
    shas = {artifact_path(name_of(rel)): record["art"] for rel, record in project.reused.items()}
    shas.update((p.entry.path, p.entry.sha256) for p in project.compiled.values() if p.reused and p.entry is not None)
    return shas


def _on_disk(out: Path, files: dict[str, bytes | Path]) -> bool:
    """Whether the output folder holds these very bytes at these paths."""
    for rel, data in files.items():
        try:
            if read_file(out / rel, follow=False) != (data.read_bytes() if isinstance(data, Path) else data):
                return False
        except OSError:
            return False
    return True


def _record(
    out: Path,
    project: _Compiled,
    plan: Plan,
    known: _Known | None,
    written: bool,
    claimed_ns: int,
    *,
    clock: int,
    made: bool = False,
) -> None:
    """Save the state: what changed in the sources' records and the entries, and the output
    folder as this build left it. The folders' stats are recorded as of `claimed_ns`, when the
    claim proved them to hold only promptc's files: one changed since then is listed again. The
    output files' stats prove them only when their change time is older than `clock`
    (`trusted_stat`). `made`: the output folder did not exist before this build, whose shadow
    set (if the write made one) is then the new set itself."""
    assert project.tree is not None and project.manifest is not None
    files = project.tree.files
    fresh = files.fresh if isinstance(files, LazyFiles) else frozenset(files)
    doc = project.doc
    assert doc is not None
    changes = changes_of(
        plan,
        project.compiled.values(),
        project.reused,
        project.tree,
        fresh,
        out,
        arts=project.arts,
        now_ns=project.walked_ns,
        clock=clock,
    )
    present = changes.present
    # the last-good artifacts a watch build kept for prompts that fail now
    kept = sorted(p.name for p in project.compiled.values() if p.entry is not None and p.source not in present)
    if written or known is None or not plan.output:
        if known is not None and project.doc_known and isinstance(plan.output.get("dirs"), dict):
            folders = set(plan.output["dirs"]) | folders_of(project.files)
        else:
            folders = folders_of([*project.files, *project.keep])
        output = output_record(out, folders, claimed_ns)
        if made and written and output["shadow"] is not None:
            output["diff"] = []  # the first build's shadow set is a twin of the live one
        else:
            if not project.doc_known:
                output["shadow"] = None  # how it differs from the live set is not known
            output["diff"] = sorted({*project.files, *project.removed_paths})
    else:
        output = dict(plan.output)
        output["dirs"] = output_record(out, plan.output.get("dirs") or (), claimed_ns)["dirs"]
    output["kept"] = kept
    manifest = output_stat(out / MANIFEST)
    output["manifest"] = manifest
    # the manifest on disk holds these bytes (written now, or found to be them): a stat that
    # proves nothing alone is recorded with their sha256, which the next build checks
    data = project.files[MANIFEST]
    assert isinstance(data, bytes)  # the manifest is joined in memory, never spooled
    racy = manifest is not None and trusted_stat(manifest, clock) is None
    output["manifest_sha"] = hashlib.sha256(data).hexdigest() if racy else None
    doc.changed = False
    changed = {rel: plan.entries.get(rel) for rel in changes.entries}  # the records before this build
    save_state(out, plan, changes, output)
    project.state_changes = changed


def _remember(session: Session, project: _Compiled) -> None:
    """Keep what the next build of the session reuses: the tree, the manifest's pieces and the
    state (whose entries are the prompts written without errors), and which prompts read which
    files, brought up to date in the entries this build changed."""
    assert session.plan is not None
    session.tree, session.clean, session.doc = project.tree, project.clean_walk, project.doc
    session.rels = project.rels
    if project.tree is not None and isinstance(project.tree.files, LazyFiles):
        project.tree.files.forget()  # an initial build read every source: keep none of their bytes
    entries = session.plan.entries
    if not session.indexed:
        session.dependents = {}
        for rel, record in entries.items():
            session._index(rel, record)
        session.indexed = True
        return
    for rel, old in project.state_changes.items():
        session._index(rel, old, add=False)
        session._index(rel, entries.get(rel))


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
    refused = _refusals(config, out) if locked and problem is None else []
    if problem is not None or refused:
        failed = _Compiled(config=config, strict=strict)
        failed.report([*reported, *([problem] if problem is not None else refused)])
        return failed.result()
    project = _compile(src, out, config, reported=reported, strict=strict)
    if not (locked and project.ok):
        return project.result()
    stale = stale_paths(project.files, out)
    for path in stale:
        message, hint = _why_stale(path, out, project)
        project.report([make(codes.BUILD_STALE, message, None, hint, path=(out / path).as_posix())])
    stale_bindings: list[str] = []
    if config.bindings():
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
    plan: Plan | None = None,
    known: _Known | None = None,
    keep_last_good: bool = False,
    spool: Callable[[], str] | None = None,
    on_progress: Progress | None = None,
    session: Session | None = None,
    changes: Collection[str] | None = None,
) -> _Compiled:
    """Stages 1 to 4: everything but writing (large builds spool artifacts to files, though).
    `plan` is the incremental state (None: a clean build)."""
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
    incremental = plan is not None
    plan = plan if plan is not None else Plan()

    # 1. read sources: the paths a watcher saw change, or every source (files the state knows
    # unchanged by their stat are read only when needed)
    walked_ns = time.time_ns()
    previous = session.tree if session is not None and session.clean else None
    updated = update_tree(previous, src, out, changes) if previous is not None and changes is not None else None
    if updated is not None:
        tree, diagnostics, touched = updated
        changed = {rel for rel in touched if previous is not None and previous.shas.get(rel) != tree.shas.get(rel)}
    else:
        tree, diagnostics = read_tree(src, out, plan.files if incremental else None)
        changed = None
    project.tree, project.plan, project.walked_ns = tree, plan, walked_ns
    outside = _outside_symlinks(tree)
    project.clean_walk = not diagnostics and not outside
    project.report(diagnostics)
    project.report(outside)
    if updated is not None and session is not None and session.rels is not None:
        rels = _patched_rels(session.rels, touched, tree)
    else:
        rels = [rel for rel in tree.files if is_prompt(rel)]
    project.rels = rels

    # 2. plan: which artifacts the output folder already holds as they should be. The manifest it
    # holds, in pieces (the session's, or the file itself when it is the one the state recorded),
    # comes first: without it nothing is reused.
    doc, project.manifest_intact = _previous_doc(session, plan, known, out, config) if incremental else (None, False)
    project.doc_known = doc is not None
    reused: dict[str, dict[str, Any]] = {}
    if doc is not None and changed is not None and session is not None:
        reused = _session_reusable(session, plan, rels, tree, out, changed, known)
    elif doc is not None:
        reused = plan.reusable(rels, tree, out)
    to_compile = [rel for rel in rels if rel not in reused]
    if incremental and 0 < len(to_compile) < PARALLEL_THRESHOLD:
        plan.preload_token_counts(out, to_compile)
    # the entries of the previous manifest, decoded when a reused prompt is read
    last_entries = doc.manifest().artifacts if doc is not None else {}

    # 3. compile the rest (a large build gets each manifest entry back as its piece)
    use_spool = spool() if spool is not None and len(to_compile) >= PARALLEL_THRESHOLD else None
    pieces: dict[str, bytes] = {}
    if to_compile:
        load_compiler()
    with collecting():
        compiled = compile_many(
            to_compile, tree, config, spool=use_spool, pieces=pieces if use_spool else None, on_progress=on_progress
        )
    if isinstance(tree.files, LazyFiles) and len(to_compile) >= PARALLEL_THRESHOLD:
        tree.files.forget()  # the sources' bytes served the compiles: a 20,000-file build held them all
    # a reused prompt's warnings are reported again (and fail it, under `strict`)
    warned = {rel: warnings_of(record) for rel, record in reused.items() if record.get("warnings")}
    if strict:
        compiled = [_failed_by_strict(p) for p in compiled]
        for p in compiled:
            if has_errors(p.diagnostics):
                pieces.pop(p.name, None)
        for rel in warned:  # a reused prompt with a warning fails as a compiled one does
            compiled.append(_failed_by_strict(reuse(rel, reused.pop(rel), None)))
        warned = {}
    if keep_last_good:
        on_disk: list[Manifest | None] = []

        def previous_entry(name: str) -> ManifestEntry | None:
            if doc is not None:
                return doc.entry(name)
            if not on_disk:
                on_disk.append(BuildFolder(out).manifest_or_none())
            return None if on_disk[0] is None else on_disk[0].artifacts.get(name)

        compiled = [
            (last_good(p, previous_entry(p.name), out) or p) if has_errors(p.diagnostics) else p for p in compiled
        ]
    made = {p.source: p for p in compiled}
    project.compiled = made
    project.reused = reused
    # the artifacts' sha256 of the prompts whose entry came back as a piece (for the state)
    project.arts = {name: piece_fields(piece)[0] for name, piece in pieces.items()}
    for rel in rels:
        prompt = made.get(rel)
        found = prompt.diagnostics if prompt is not None else warned.get(rel)
        if not found:
            continue
        own = tree.display(rel)
        # a prompt's diagnostics are already allowed (and, by `_failed_by_strict`, strict)
        project.diagnostics.extend(d if d.path == own else replace(d, included_by=(name_of(rel),)) for d in found)
    # only a prompt compiled now can collide (a reused one had no error)
    project.report(collisions(compiled, tree))

    # 4. the manifest, and the set of files to write
    entries: Mapping[str, ManifestEntry] = _PieceEntries(pieces, last_entries)
    if keep_last_good or project.ok:
        writable = [p for p in compiled if p.entry is not None or p.name in pieces]
        typed = {p.name: p.entry for p in writable if p.entry is not None}
        if doc is None:
            doc = ManifestDoc.of(typed, config, pieces)  # nothing was reused
        else:
            for p in writable:
                if p.entry is None:
                    doc.put_piece(p.name, pieces[p.name])
                elif not p.reused or p.name not in doc:
                    doc.put(p.name, p.entry, doc.entry(p.name))
            kept = len(reused) + len(writable)
            if kept != len(doc):  # some entry of the last build has no prompt now
                now = {*(p.name for p in writable), *(name_of(rel) for rel in reused)}
                gone = [name for name in doc.entries if name not in now]
                project.removed_paths = [artifact_path(name) for name in gone]
                for name in gone:
                    doc.remove(name, doc.entry(name))
        pieces.clear()  # the document holds them (until it joins them)
        project.doc = doc
        files: dict[str, bytes | Path] = {}
        for p in writable:
            if not p.reused and (p.data or p.spooled):
                files[artifact_path(p.name)] = p.data or Path(p.spooled or "")
        files[MANIFEST] = doc.bytes()  # first: the pieces are let go once joined
        project.manifest = doc.manifest(typed)
        entries = project.manifest.artifacts
        project.files = dict(sorted(files.items()))
        project.keep = sorted(
            [artifact_path(rel[: -len(SOURCE_SUFFIX)]) for rel in reused]
            + [artifact_path(p.name) for p in writable if p.reused]
        )
    project.prompts = _Prompts(rels, dict(made), reused, entries)
    return project


def _patched_rels(rels: list[str], touched: Iterable[str], tree: SourceTree) -> list[str]:
    """The sorted prompt paths of the tree, from the last build's and the paths a walk touched."""
    rels = list(rels)
    for rel in touched:
        if not is_prompt(rel):
            continue
        at = bisect.bisect_left(rels, rel)
        there = at < len(rels) and rels[at] == rel
        if rel in tree.shas and not there:
            rels.insert(at, rel)
        elif rel not in tree.shas and there:
            del rels[at]
    return rels


def _previous_doc(
    session: Session | None, plan: Plan, known: _Known | None, out: Path, config: Config
) -> tuple[ManifestDoc | None, bool]:
    """The manifest the last build wrote, as pieces to patch: the session's, or `manifest.json`
    read back when it is the file the state recorded (which lists the prompts the state has
    entries for, and the last-good artifacts it kept); None: nothing can be reused. And whether
    `manifest.json` is still the very file the state recorded."""
    if session is not None and session.doc is not None:
        return session.doc, known is not None and _manifest_is_recorded(out, known)
    if known is None or known.manifest_stat is None:
        return None, False
    try:
        data = read_file(out / MANIFEST, follow=False)
    except OSError:
        return None, False
    if not _manifest_is_recorded(out, known, data):
        return None, False  # changed since the state recorded it (or while it was read)
    # the entries it holds are the state's and the kept ones: the state was saved with it
    return ManifestDoc.read(data, config, count=len(plan.entries) + len(known.kept)), True


def _manifest_is_recorded(out: Path, known: _Known, data: bytes | None = None) -> bool:
    """Whether `manifest.json` is the file the state recorded: its stat, taken after `data` (its
    bytes, when they were read) and, for a stat recorded within the racy window, its bytes' sha256."""
    if known.manifest_stat is None or output_stat(out / MANIFEST) != known.manifest_stat:
        return False
    if known.manifest_sha is None:
        return True
    if data is None:
        try:
            data = read_file(out / MANIFEST, follow=False)
        except OSError:
            return False
    return hashlib.sha256(data).hexdigest() == known.manifest_sha


def _entry_on_disk(out: Path, name: str) -> ManifestEntry | None:
    manifest = BuildFolder(out).manifest_or_none()
    return None if manifest is None else manifest.artifacts.get(name)


def _session_reusable(
    session: Session,
    plan: Plan,
    rels: list[str],
    tree: SourceTree,
    out: Path,
    changed: set[str],
    known: _Known | None,
) -> dict[str, dict[str, Any]]:
    """The prompts a session build reuses without looking at them: every prompt its state has an
    entry for (written last time, without errors) but those whose source or any file they read
    changed (those are checked against the state as a fresh build would check them) and those
    whose artifact the shadow set must link and the output folder lost."""
    entries = plan.entries
    affected: set[str] = set()
    for rel in changed:
        if is_prompt(rel):
            affected.add(rel)
        affected |= session.dependents.get(rel, set())
    if known is not None:
        for path in known.output.diff:
            if not path.endswith(".json"):
                continue
            source = f"{path[: -len('.json')]}{SOURCE_SUFFIX}"
            if source in entries and not os.path.isfile(out / path):
                affected.add(source)
    reused = {rel: entries[rel] for rel in rels if rel in entries and rel not in affected}
    recheck = [rel for rel in rels if rel in affected]
    reused.update(plan.reusable(recheck, tree, out))
    return reused


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


def _holds_working_folder(out: Path) -> Diagnostic | None:
    """E917: an output folder that is the folder the command runs in, or holds it (`-o .`,
    `-o ..`): the swap would move the working folder away under the shell that ran the build."""
    real_out, here = os.path.realpath(out), os.path.realpath(os.getcwd())
    if here != real_out and not here.startswith(real_out.rstrip(os.sep) + os.sep):
        return None
    how = "is the folder promptc runs in" if here == real_out else "holds the folder promptc runs in"
    return make(
        codes.OUTPUT_HOLDS_WORKING_FOLDER,
        f"output folder `{out}` {how}; a build swaps its output folder as a whole, which would move it away "
        "under you; nothing was read or written",
        None,
        "name a folder of its own for the output (`-o build`), and run promptc from beside it",
        path=str(out),
    )


def _refusals(config: Config, out: Path) -> list[Diagnostic]:
    """What the confinement rule (`promptc.runtime.confine`) refuses of what a build writes: the
    output folder (with the cache and staging folders beside it) and each bindings file. Asked
    before anything is read or written, so a refusal leaves the previous build as it was; `check
    --locked` asks too, and reports the same."""
    found = [d for d in (option_refusal(config, "out", out),) if d is not None]
    if config.bindings():
        found += bindings.refusals(config)
    return found


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
