"""The build driver: read the source tree, compile every prompt, write `build/` all or nothing.

This is the only module (with the CLI and watch) that touches the file system. A build either
replaces the whole output folder with the new set, atomically, or leaves it exactly as it was.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from . import __version__, codes
from .compile import CompiledPrompt, compile_source
from .config import Config
from .context import LazyFiles, SourceTree
from .diagnostics import Diagnostic, Span, file_span, has_errors, make, ordered
from .emit import dumps
from .progress import progress

MANIFEST = "manifest.json"
MANIFEST_SCHEMA = "promptc.manifest/1"
CACHE_DIR = ".promptc-cache"
STAGING_MARK = ".promptc-tmp-"


@dataclass
class BuildResult:
    prompts: list[CompiledPrompt] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    manifest: dict[str, Any] | None = None
    #: every file the build writes, relative to the output folder → bytes
    files: dict[str, bytes] = field(default_factory=dict)
    written: bool = False
    unchanged: bool = False
    #: for `check --locked`: output paths that differ from what build would write
    stale: list[str] = field(default_factory=list)
    source_count: int = 0
    #: output paths an incremental build keeps as they are (their artifacts were reused)
    keep: list[str] = field(default_factory=list)
    fingerprint: str = ""
    tree: SourceTree | None = None
    #: the incremental cache as loaded (source → entry), to carry reused entries over unchanged
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)

    @property
    def errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == "warning")


# ---------------------------------------------------------------------------------------------
# Reading the source tree


def _display_root(src: Path) -> str:
    try:
        rel = os.path.relpath(src)
    except ValueError:
        rel = str(src)
    return Path(rel).as_posix()


#: A file whose recorded mtime is this close to the end of the build that recorded it is read
#: again next time: it may have changed within the same timestamp tick ("racily clean", as git
#: calls it).
RACY_WINDOW_NS = 2_000_000_000


def read_tree(
    src: Path, out: Path | None = None, known: dict[str, list] | None = None, known_at_ns: int = 0
) -> tuple[SourceTree, list[Diagnostic]]:
    """Read every `*.prompt` under `src`, in sorted order.

    `known` maps paths to [size, mtime_ns, inode, sha256] from the last build: a file whose stat
    still matches (and was not modified just before that build) is not read now; its bytes are
    read later only if a compile needs them. Symlinks are followed only while they stay inside the
    source folder; a directory reached twice (a symlink loop) is skipped with a warning.
    """
    diagnostics: list[Diagnostic] = []
    root_display = _display_root(src)
    root_real = os.path.realpath(src)
    out_real = os.path.realpath(out) if out is not None else None
    files: dict[str, bytes] = {}
    deferred: dict[str, str] = {}
    shas: dict[str, str] = {}
    stats: dict[str, list[int]] = {}
    known = known or {}
    trust_before = known_at_ns - RACY_WINDOW_NS
    outside: dict[str, str] = {}
    seen_dirs: set[str] = set()
    # Each folder travels with its real path: a plain subfolder's is its parent's plus its name,
    # so `realpath` (an lstat per path component) runs only for symlinks.
    stack: list[tuple[str, str, str]] = [(str(src), "", root_real)]
    while stack:
        folder, rel_folder, real = stack.pop()
        if real in seen_dirs:
            diagnostics.append(
                make(
                    codes.SYMLINK_LOOP,
                    "symlink loop: this folder was already read; skipped",
                    file_span(),
                    "remove the symlink that points back into the tree",
                    path=f"{root_display}/{rel_folder}".rstrip("/"),
                )
            )
            continue
        seen_dirs.add(real)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            diagnostics.append(
                make(
                    codes.UNREADABLE,
                    f"cannot read folder: {exc.strerror}",
                    file_span(),
                    path=f"{root_display}/{rel_folder}",
                )
            )
            continue
        subfolders = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            rel = f"{rel_folder}{entry.name}"
            path = entry.path
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                symlink = entry.is_symlink()
                target = os.path.realpath(path) if symlink else os.path.join(real, entry.name)
                if out_real is not None and target == out_real:
                    continue
                if symlink and not (target == root_real or target.startswith(root_real + os.sep)):
                    continue  # a folder outside the source tree is not part of it
                subfolders.append((path, rel + "/", target))
                continue
            if not entry.name.endswith(".prompt"):
                continue
            if entry.is_symlink():
                target = os.path.realpath(path)
                if not target.startswith(root_real + os.sep):
                    outside[rel] = target
                    continue
            try:
                st = os.stat(path)
                stat = [st.st_size, st.st_mtime_ns, st.st_ino]
                record = known.get(rel)
                if record is not None and record[:3] == stat and stat[1] < trust_before:
                    deferred[rel] = path
                    shas[rel] = record[3]
                else:
                    with open(path, "rb") as handle:
                        data = handle.read()
                    files[rel] = data
                    shas[rel] = hashlib.sha256(data).hexdigest()
                stats[rel] = stat
            except FileNotFoundError:
                diagnostics.append(
                    make(
                        codes.UNREADABLE,
                        "cannot read file: it vanished while the build ran, or is a dangling symlink",
                        file_span(),
                        "restore the file or remove the link",
                        path=f"{root_display}/{rel}",
                    )
                )
            except OSError as exc:
                diagnostics.append(
                    make(
                        codes.UNREADABLE,
                        f"cannot read file: {exc.strerror or exc}",
                        file_span(),
                        "check the file's permissions",
                        path=f"{root_display}/{rel}",
                    )
                )
        stack.extend(reversed(subfolders))
    tree = SourceTree(
        files=LazyFiles(files, deferred), outside=outside, root_display=root_display, shas=shas, stats=stats
    )
    return tree, diagnostics


def is_partial(rel: str) -> bool:
    return os.path.basename(rel).startswith("_")


# ---------------------------------------------------------------------------------------------
# Compiling


def _dedupe(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    seen = set()
    unique = []
    for d in diagnostics:
        key = (d.path, d.line, d.col, d.code, d.message)
        if key not in seen:
            seen.add(key)
            unique.append(d)
    return ordered(unique)


def _compile_one(rel: str) -> CompiledPrompt:
    tree, config = _WORKER_STATE["tree"], _WORKER_STATE["config"]
    result = compile_source(rel, tree.files[rel], config, tree, _WORKER_STATE["partials"])
    # Send back bytes, not the dict: pickling the artifact twice would cost more than compiling it.
    return _spool(replace(result, artifact=None), _WORKER_STATE.get("spool"))


def _spool(prompt: CompiledPrompt, spool: str | None) -> CompiledPrompt:
    """Write the artifact into the spool folder and drop its bytes from memory: a 20,000-prompt
    build would otherwise hold every artifact until the end."""
    if spool is None or prompt.data is None:
        return prompt
    path = os.path.join(spool, f"{prompt.name}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    _write_file(Path(path), prompt.data)
    return replace(prompt, data=None, spooled=path)


_WORKER_STATE: dict[str, Any] = {}
#: Below this many prompts a process pool costs more than it saves.
PARALLEL_THRESHOLD = 48


def _workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def compile_many(
    rels: list[str], tree: SourceTree, config: Config, *, jobs: int | None = None, spool: str | None = None
) -> list[CompiledPrompt]:
    """Compile prompts, on every core when there are enough of them. Output order is `rels` order,
    and each artifact's bytes do not depend on which process compiled it. With `spool`, artifacts
    go to files in that folder as they are made instead of staying in memory."""
    partials: dict = {}
    jobs = jobs if jobs is not None else _workers()
    if jobs > 1 and len(rels) >= PARALLEL_THRESHOLD and _can_fork():
        import multiprocessing

        from .parse import parser

        # The parser is loaded once here and inherited by the forked workers. The tokenizer is not:
        # each worker loads its own, in parallel, which costs no wall time and keeps ~60 MB of BPE
        # tables out of the main process, the one that holds the whole build's results.
        parser()
        _WORKER_STATE.update(tree=tree, config=config, partials=partials, spool=spool)
        try:
            ctx = multiprocessing.get_context("fork")
            with ctx.Pool(jobs) as pool, progress(len(rels)) as bar:
                chunk = max(8, len(rels) // (jobs * 8))
                compiled = []
                for prompt in pool.imap(_compile_one, rels, chunksize=chunk):
                    compiled.append(prompt)
                    bar.advance()
                return compiled
        finally:
            _WORKER_STATE.clear()
    with progress(len(rels)) as bar:
        compiled = []
        for rel in rels:
            compiled.append(_spool(compile_source(rel, tree.files[rel], config, tree, partials), spool))
            bar.advance()
        return compiled


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


def _collisions(prompts: list[CompiledPrompt], tree: SourceTree) -> list[Diagnostic]:
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


# ---------------------------------------------------------------------------------------------
# The incremental cache: what each artifact in the output folder was compiled from


def compiler_fingerprint(config: Config) -> str:
    """Changes whenever anything that can change artifact bytes changes: the compiler's own files
    (code, grammar, built-in partials, data), its version, and the config."""
    return hashlib.sha256(f"{_package_digest()}\0{config.fingerprint()}".encode()).hexdigest()


@cache
def _package_digest() -> str:
    # Read once per process: a watch loop rebuilds many times, the compiler's files do not change.
    from .parse import grammar_text

    digest = hashlib.sha256(__version__.encode())
    digest.update(grammar_text().encode())
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".prompt", ".json") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _state_path(out: Path) -> Path:
    return out.parent / CACHE_DIR / f"{out.name}.state.json"


def _load_state(out: Path, fingerprint: str) -> tuple[dict[str, Any], dict[str, list], int]:
    """(artifact entries, source file records, when they were recorded) — empty when stale."""
    import orjson

    try:
        state = orjson.loads(_state_path(out).read_bytes())
    except (OSError, ValueError):
        return {}, {}, 0
    if not isinstance(state, dict) or state.get("fingerprint") != fingerprint:
        return {}, {}, 0
    entries, files, saved = state.get("entries"), state.get("files"), state.get("saved_ns")
    if not isinstance(entries, dict) or not isinstance(files, dict) or not isinstance(saved, int):
        return {}, {}, 0
    return entries, files, saved


def _output_stat(path: Path | str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _save_state(
    out: Path, fingerprint: str, prompts: list[CompiledPrompt], tree: SourceTree, previous: dict[str, Any]
) -> None:
    import orjson

    shas = tree.shas
    files = {rel: [*stat, shas[rel]] for rel, stat in tree.stats.items() if rel in shas}

    entries = {}
    base = str(out)
    for prompt in prompts:
        if prompt.summary is None or prompt.artifact_sha256 is None or has_errors(prompt.diagnostics):
            continue
        if prompt.reused and prompt.source in previous:
            entries[prompt.source] = previous[prompt.source]  # hard-linked: same inode, size, mtime
            continue
        stat = _output_stat(os.path.join(base, f"{prompt.name}.json"))
        if stat is None:
            continue
        entries[prompt.source] = {
            "sha": shas[prompt.source],
            "deps": {dep: shas.get(dep) for dep in prompt.includes},
            "summary": prompt.summary,
            "artifact_sha256": prompt.artifact_sha256,
            "includes": list(prompt.includes),
            "stat": stat,
            "warnings": [_diag_to_state(d) for d in prompt.diagnostics],
        }
    path = _state_path(out)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        state = {"fingerprint": fingerprint, "saved_ns": time.time_ns(), "files": files, "entries": entries}
        tmp.write_bytes(orjson.dumps(state))
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # the cache is an optimisation; never fail a build over it


def _diag_to_state(d: Diagnostic) -> list:
    span = [d.span.start, d.span.end, d.span.line, d.span.col] if d.span else None
    return [d.code, d.severity, d.message, d.path, span, d.hint, d.source_line]


def _diag_from_state(row: list) -> Diagnostic:
    code, severity, message, path, span, hint, line = row
    return Diagnostic(code, severity, message, path, Span(*span) if span else None, hint, line)


def _reuse(rel: str, entry: dict[str, Any], out: Path) -> CompiledPrompt | None:
    from .compile import name_of

    name = name_of(rel)
    if _output_stat(os.path.join(out, f"{name}.json")) != entry.get("stat"):
        return None  # the file in the output folder is not the one this cache describes
    try:
        warnings = tuple(_diag_from_state(row) for row in entry["warnings"])
        return CompiledPrompt(
            name,
            rel,
            warnings,
            includes=tuple(entry["includes"]),
            summary=entry["summary"],
            artifact_sha256=entry["artifact_sha256"],
            reused=True,
        )
    except (KeyError, TypeError, ValueError):
        return None


_SUMMARY_KEYS = ("source", "source_sha256", "inputs", "includes", "prefix_sha256", "prefix_tokens")


def _last_good(prompt: CompiledPrompt, previous: dict[str, Any], out: Path) -> CompiledPrompt | None:
    """For watch: a prompt that fails keeps the artifact the output folder already has."""
    entry = previous.get(prompt.name)
    if not isinstance(entry, dict) or not (out / f"{prompt.name}.json").is_file():
        return None
    summary = {key: entry.get(key) for key in _SUMMARY_KEYS}
    return replace(prompt, summary=summary, artifact_sha256=entry.get("sha256"), reused=True, data=None)


def _preload_token_counts(out: Path, rels: list[str], config: Config) -> None:
    """Feed the meter the counts the previous artifacts of these prompts recorded, so that a
    rebuild after an edit that leaves the texts alone (a comment, a directive) or changes one
    section never loads the tokenizer for the rest."""
    import orjson

    from .compile import name_of
    from .meter import TokenizerError, meter

    if _read_manifest(out).get("tokenizer") != config.tokenizer:
        return
    try:
        counter = meter(config.tokenizer)
    except TokenizerError:
        return
    for rel in rels:
        try:
            artifact = orjson.loads((out / f"{name_of(rel)}.json").read_bytes())
            counts = {}
            for message in artifact["messages"]:
                counts[message["content"]] = message["tokens"]
                for block in message["blocks"]:
                    counts[block["text"]] = block["tokens"]
                    for section in block["sections"]:
                        counts[section["text"]] = section["tokens"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        counter.preload(counts)


def _read_manifest(out: Path) -> dict[str, Any]:
    import orjson

    try:
        data = orjson.loads((out / MANIFEST).read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def compile_project(
    src: Path,
    config: Config,
    out: Path | None = None,
    *,
    incremental: bool = False,
    keep_last_good: bool = False,
    spool: str | None = None,
) -> BuildResult:
    """Read and compile everything; no writing (but artifacts go to `spool` files when given). `files` holds the bytes of every artifact compiled
    in this run plus the manifest; `keep` names artifacts reused from the output folder as they are."""
    result = BuildResult()
    if not src.is_dir():
        result.diagnostics.append(
            make(
                codes.SOURCE_NOT_FOUND,
                f"source folder `{src}` not found",
                None,
                "pass the folder: `promptc build prompts_src`",
                path=str(src),
            )
        )
        return result
    fingerprint = compiler_fingerprint(config) if (incremental and out is not None) else ""
    state, known, known_at = _load_state(out, fingerprint) if (fingerprint and out is not None) else ({}, {}, 0)
    tree, diagnostics = read_tree(src, out, known, known_at)
    for rel in tree.outside:
        if not is_partial(rel):
            diagnostics.append(
                make(
                    codes.INCLUDE_OUTSIDE,
                    "symlink points outside the source folder; not compiled",
                    file_span(),
                    "copy the file into the source folder instead of linking it",
                    path=tree.display(rel),
                )
            )
    rels = [rel for rel in tree.files if not is_partial(rel)]
    shas = tree.shas
    reused: dict[str, CompiledPrompt] = {}
    for rel in rels:
        entry = state.get(rel)
        if (
            out is not None
            and isinstance(entry, dict)
            and entry.get("sha") == shas[rel]
            and all(shas.get(dep) == sha for dep, sha in entry.get("deps", {}).items())
        ):
            prompt = _reuse(rel, entry, out)
            if prompt is not None:
                reused[rel] = prompt
    to_compile = [rel for rel in rels if rel not in reused]
    if out is not None and incremental and 0 < len(to_compile) < PARALLEL_THRESHOLD:
        _preload_token_counts(out, to_compile, config)
    use_spool = spool if len(to_compile) >= PARALLEL_THRESHOLD else None
    fresh = iter(compile_many(to_compile, tree, config, spool=use_spool))
    prompts = [reused[rel] if rel in reused else next(fresh) for rel in rels]
    if keep_last_good and out is not None:
        previous = _read_manifest(out).get("artifacts", {})
        prompts = [(_last_good(p, previous, out) or p) if has_errors(p.diagnostics) else p for p in prompts]
    result.prompts = prompts
    result.source_count = len(tree.files)
    result.fingerprint = fingerprint
    result.tree = tree
    result.state = state
    for rel in getattr(tree.files, "failed", ()):
        diagnostics.append(
            make(
                codes.UNREADABLE,
                "cannot read file: it vanished while the build ran",
                file_span(),
                path=tree.display(rel),
            )
        )
    for prompt in prompts:
        diagnostics.extend(prompt.diagnostics)
    diagnostics.extend(_collisions(prompts, tree))
    result.diagnostics = _dedupe(diagnostics)
    if result.ok or keep_last_good:
        writable = [p for p in prompts if p.artifact_sha256 is not None]
        result.manifest = manifest_for(writable, config)
        files = {
            f"{p.name}.json": p.data or Path(p.spooled) for p in writable if not p.reused and (p.data or p.spooled)
        }
        files[MANIFEST] = dumps(result.manifest)
        result.files = dict(sorted(files.items()))
        result.keep = sorted(f"{p.name}.json" for p in writable if p.reused)
    return result


# ---------------------------------------------------------------------------------------------
# Writing


@cache
def _renameat2_exchange():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> None:
    """Atomically swap two directories (Linux renameat2), so readers see the old set or the new."""
    fn = _renameat2_exchange()
    if fn is not None:
        if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
            raise OSError(err, os.strerror(err), str(b))
    # No atomic exchange on this platform: two renames; the window between them is recovered by
    # `_recover` at the start of the next build.
    parked = b.with_name(f"{b.name}{STAGING_MARK}old")
    os.rename(b, parked)
    os.rename(a, b)
    os.rename(parked, a)


def _recover(out: Path) -> None:
    """Undo what a killed build left behind: a parked old set (non-Linux two-rename swap) and
    staging folders."""
    parked = out.with_name(f"{out.name}{STAGING_MARK}old")
    if not out.exists() and parked.is_dir():
        os.rename(parked, out)
    for leftover in out.parent.glob(f"{out.name}{STAGING_MARK}*"):
        _discard(leftover, out)


def _discard(folder: Path, out: Path) -> None:
    """Move a folder into the cache's trash (one rename) and delete it in the background.

    Deleting a few thousand files and folders takes far longer than building them when only one
    prompt changed; the folder is already out of the way, so nobody needs to wait for it."""
    trash = out.parent / CACHE_DIR / "trash"
    try:
        trash.mkdir(parents=True, exist_ok=True)
        os.rename(folder, trash / f"{out.name}-{os.getpid()}-{time.monotonic_ns()}")
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)
        return
    _empty_trash(trash)


_EMPTYING: set[str] = set()


def _empty_trash(trash: Path) -> None:
    """Delete the trash in a daemon thread. A process that exits first leaves the rest for the next
    build; entries are unique names, so two processes emptying one trash do not collide."""
    import threading

    key = str(trash)
    if key in _EMPTYING:
        return
    _EMPTYING.add(key)

    def run() -> None:
        try:
            for _ in range(3):  # pick up what another build moved in meanwhile
                entries = list(trash.iterdir()) if trash.is_dir() else []
                if not entries:
                    break
                for entry in entries:
                    shutil.rmtree(entry, ignore_errors=True)
        finally:
            _EMPTYING.discard(key)

    threading.Thread(target=run, name="promptc-trash", daemon=True).start()


def list_output(out: Path) -> list[str]:
    """Every file under `out`, as sorted `/`-separated relative paths."""
    return sorted(output_inodes(out))


def output_inodes(out: Path) -> dict[str, int]:
    """Every file under `out` with its inode, which the directory listing gives without a stat."""
    found: dict[str, int] = {}
    stack = [(str(out), "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, f"{prefix}{entry.name}/"))
            else:
                found[f"{prefix}{entry.name}"] = entry.inode()
    return found


def current_files(out: Path) -> dict[str, bytes] | None:
    if not out.is_dir():
        return None
    return {rel: (out / rel).read_bytes() for rel in list_output(out)}


def stale_paths(expected: dict[str, bytes], out: Path) -> list[str]:
    actual = current_files(out) or {}
    stale = [p for p, data in expected.items() if actual.get(p) != data]
    stale += [p for p in actual if p not in expected]
    return sorted(stale)


@contextmanager
def output_lock(out: Path, timeout: float = 120.0) -> Iterator[None]:
    """One build at a time per output folder; a second one waits for the first, then fails (E907)."""
    import fcntl

    lock_dir = out.parent / CACHE_DIR
    lock_dir.mkdir(parents=True, exist_ok=True)
    lock_path = lock_dir / f"{out.name}.lock"
    with open(lock_path, "a+b") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another promptc build still holds {lock_path} after {timeout:g}s") from None
                time.sleep(0.02)
        yield


def _same_output(out: Path, files: dict[str, bytes], keep: list[str]) -> bool:
    if not out.is_dir():
        return False
    if list_output(out) != sorted([*files, *keep]):
        return False
    for rel, data in files.items():
        try:
            if (out / rel).read_bytes() != (data.read_bytes() if isinstance(data, Path) else data):
                return False
        except OSError:
            return False
    return True


def _write_file(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)


def _place(source: str, target: str) -> None:
    """Hard-link an unchanged artifact into the new set (no copy); copy where links are refused."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _shadow_path(out: Path) -> Path:
    return out.parent / CACHE_DIR / f"{out.name}.shadow"


def write_output(
    out: Path, files: dict[str, bytes | Path], keep: list[str] = (), shas: dict[str, str] | None = None
) -> bool:
    """Replace `out` with exactly `files` plus the `keep` files already in it, atomically.
    Returns False (and touches nothing) when `out` already holds exactly that.

    The new set is assembled in a staging folder and swapped in with one atomic exchange. The
    exchanged-out old set is kept as a *shadow* (`.promptc-cache/<out>.shadow`): the next build
    brings the shadow up to date instead of creating a whole new tree, because creating hundreds
    of folders and links costs far more than the one artifact a watch rebuild changes. `shas`
    (sha256 of every `keep` file) says which shadow files are already right."""
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "a file stands where the output folder should be", str(out))
    if _same_output(out, files, list(keep)):
        return False
    out.parent.mkdir(parents=True, exist_ok=True)
    shadow = _shadow_path(out)
    dirty = shadow.with_name(shadow.name + ".dirty")
    reuse = shas is not None and out.is_dir() and shadow.is_dir() and not dirty.exists()
    if reuse:
        staging = shadow
    else:
        if shadow.exists():  # left half-updated by a build that died: start from scratch
            _discard(shadow, out)
        dirty.unlink(missing_ok=True)
        staging = out.with_name(f"{out.name}{STAGING_MARK}{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
    try:
        if reuse:
            dirty.touch()
            _update_shadow(staging, out, files, keep, shas or {})
        else:
            _fill_staging(staging, out, files, keep)
        if out.is_dir():
            _exchange(staging, out)  # staging now holds the old set, complete
            if staging != shadow:
                shadow.parent.mkdir(parents=True, exist_ok=True)
                os.rename(staging, shadow)
            dirty.unlink(missing_ok=True)
        else:
            os.rename(staging, out)
    finally:
        if staging != shadow and staging.exists():
            _discard(staging, out)
    return True


def _fill_staging(staging: Path, out: Path, files: dict[str, bytes | Path], keep: list[str]) -> None:
    staging.mkdir()
    made = {""}
    old_base, new_base = str(out), str(staging)

    def ensure_folder(rel: str) -> str:
        folder = rel.rpartition("/")[0]
        if folder not in made:
            os.makedirs(os.path.join(new_base, folder), exist_ok=True)
            made.add(folder)
        return os.path.join(new_base, rel)

    for rel in keep:
        _place(os.path.join(old_base, rel), ensure_folder(rel))
    for rel, data in files.items():
        if isinstance(data, Path):
            os.rename(data, ensure_folder(rel))  # already written to the spool
        else:
            _write_file(Path(ensure_folder(rel)), data)


def _file_sha(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def _update_shadow(
    shadow: Path, out: Path, files: dict[str, bytes | Path], keep: list[str], shas: dict[str, str]
) -> None:
    """Make the shadow hold exactly the new set. Files are only ever replaced (new file, then an
    atomic rename), never rewritten in place: a shadow file may be a hard link of a live one."""
    base, live = str(shadow), str(out)
    shadow_inodes = output_inodes(shadow)
    live_inodes = output_inodes(out)
    existing = set(shadow_inodes)
    wanted = {*files, *keep}
    emptied: set[str] = set()
    for rel in existing - wanted:
        os.unlink(os.path.join(base, rel))
        emptied.add(rel.rpartition("/")[0])

    def replace_with(rel: str, produce) -> None:
        target = os.path.join(base, rel)
        folder = os.path.dirname(target)
        if rel.rpartition("/")[0] not in existing_folders:
            os.makedirs(folder, exist_ok=True)
            existing_folders.add(rel.rpartition("/")[0])
        temporary = f"{target}.promptc-new"
        produce(temporary)
        os.replace(temporary, target)

    existing_folders = {rel.rpartition("/")[0] for rel in existing} | {""}
    for rel in keep:
        source, target = os.path.join(live, rel), os.path.join(base, rel)
        if rel in existing and (shadow_inodes[rel] == live_inodes.get(rel) or _file_sha(target) == shas.get(rel)):
            continue  # already the right bytes (usually the very same inode: both trees are on one device)
        replace_with(rel, lambda temporary, source=source: _place(source, temporary))
    for rel, data in files.items():
        if isinstance(data, Path):
            replace_with(rel, lambda temporary, data=data: os.rename(data, temporary))
        else:
            replace_with(rel, lambda temporary, data=data: _write_file(Path(temporary), data))
    for folder in sorted(emptied - {""}, key=len, reverse=True):  # a deleted source's folders go too
        path = os.path.join(base, folder)
        while path != base:
            try:
                os.rmdir(path)
            except OSError:
                break
            path = os.path.dirname(path)


def _write_error(out: Path, exc: OSError) -> Diagnostic:
    reason = exc.strerror or str(exc)
    hint = (
        "free some disk space"
        if exc.errno == errno.ENOSPC
        else "check the folder's permissions and that no file stands where a folder should be"
    )
    return make(
        codes.OUTPUT_UNWRITABLE,
        f"cannot write `{out}`: {reason}; the previous build is unchanged",
        None,
        hint,
        path=str(out),
    )


def build(
    src: Path | str = "prompts_src",
    out: Path | str = "build",
    config: Config | None = None,
    *,
    write: bool = True,
    incremental: bool = True,
    keep_last_good: bool = False,
) -> BuildResult:
    """Compile `src` into `out`.

    All or nothing: unless every source compiles, nothing in `out` changes. With `keep_last_good`
    (the watch loop) a failing prompt keeps the artifact `out` already has and the rest is written.
    With `incremental`, sources whose bytes, partials, config and compiler are unchanged are not
    recompiled; the output is byte-identical to a clean build either way.
    """
    src, out = Path(src), Path(out)
    config = config or Config()
    spool = out.parent / CACHE_DIR / f"{out.name}.spool-{os.getpid()}" if write else None
    result = BuildResult()
    try:
        result = compile_project(
            src,
            config,
            out,
            incremental=incremental and write,
            keep_last_good=keep_last_good,
            spool=str(spool) if spool is not None else None,
        )
        if not write or result.manifest is None:
            return result
        with output_lock(out):
            _recover(out)
            shas = {entry["path"]: entry["sha256"] for entry in result.manifest["artifacts"].values()}
            result.written = write_output(out, result.files, result.keep, shas)
            result.unchanged = not result.written
            if result.fingerprint:
                _save_state(out, result.fingerprint, result.prompts, result.tree, result.state)
    except TimeoutError as exc:
        result.diagnostics.append(
            make(codes.OUTPUT_LOCKED, str(exc), None, "wait for the other build to finish", path=str(out))
        )
    except OSError as exc:
        result.diagnostics.append(_write_error(out, exc))
    finally:
        if spool is not None and spool.exists():
            _discard(spool, out)
    return result


def check(
    src: Path | str = "prompts_src", out: Path | str = "build", config: Config | None = None, *, locked: bool = False
) -> BuildResult:
    """Compile without writing (and without the incremental cache: check is the authority); with
    `locked`, also report every output file that build would change, add or remove."""
    src, out = Path(src), Path(out)
    result = compile_project(src, config or Config(), out)
    if locked and result.ok:
        result.stale = stale_paths(result.files, out)
        for path in result.stale:
            result.diagnostics.append(
                make(
                    codes.BUILD_STALE,
                    f"`{(out / path).as_posix()}` is stale: it differs from what `promptc build` would write",
                    None,
                    "run `promptc build` and commit the result",
                    path=(out / path).as_posix(),
                )
            )
    return result


def with_defines(config: Config, defines: dict[str, str]) -> Config:
    if not defines:
        return config
    return replace(config, defines=tuple(sorted({**config.defines_map, **defines}.items())))
