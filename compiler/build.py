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
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator

from . import __version__
from .compile import CompiledPrompt, compile_source
from .config import Config
from .context import SourceTree
from .diagnostics import Diagnostic, Span, has_errors, ordered
from .emit import dumps

MANIFEST = "manifest.json"
MANIFEST_SCHEMA = "promptc.manifest/1"
CACHE_DIR = ".promptc-cache"
_TMP_MARK = ".promptc-tmp-"


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


def read_tree(src: Path, out: Path | None = None) -> tuple[SourceTree, list[Diagnostic]]:
    """Read every `*.prompt` under `src` into memory, in sorted order.

    Symlinks are followed only while they stay inside the source folder; a directory reached twice
    (a symlink loop) is skipped with a warning.
    """
    diagnostics: list[Diagnostic] = []
    root_display = _display_root(src)
    root_real = os.path.realpath(src)
    out_real = os.path.realpath(out) if out is not None else None
    files: dict[str, bytes] = {}
    outside: dict[str, str] = {}
    seen_dirs: set[str] = set()
    stack: list[tuple[str, str]] = [(str(src), "")]
    while stack:
        folder, rel_folder = stack.pop()
        real = os.path.realpath(folder)
        if real in seen_dirs:
            diagnostics.append(
                Diagnostic(
                    "W909",
                    "warning",
                    "symlink loop: this folder was already read; skipped",
                    f"{root_display}/{rel_folder}".rstrip("/"),
                    Span(0, 0, 1, 1),
                    "remove the symlink that points back into the tree",
                )
            )
            continue
        seen_dirs.add(real)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            diagnostics.append(
                Diagnostic("E106", "error", f"cannot read folder: {exc.strerror}", f"{root_display}/{rel_folder}", Span(0, 0, 1, 1))
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
                target = os.path.realpath(path)
                if out_real is not None and target == out_real:
                    continue
                if entry.is_symlink() and not (target == root_real or target.startswith(root_real + os.sep)):
                    continue  # a folder outside the source tree is not part of it
                subfolders.append((path, rel + "/"))
                continue
            if not entry.name.endswith(".prompt"):
                continue
            if entry.is_symlink():
                target = os.path.realpath(path)
                if not target.startswith(root_real + os.sep):
                    outside[rel] = target
                    continue
            try:
                with open(path, "rb") as handle:
                    files[rel] = handle.read()
            except FileNotFoundError:
                diagnostics.append(
                    Diagnostic("E106", "error", "file vanished while the build read it", f"{root_display}/{rel}", Span(0, 0, 1, 1))
                )
            except OSError as exc:
                diagnostics.append(
                    Diagnostic(
                        "E106",
                        "error",
                        f"cannot read file: {exc.strerror or exc}",
                        f"{root_display}/{rel}",
                        Span(0, 0, 1, 1),
                        "check the file's permissions",
                    )
                )
        stack.extend(reversed(subfolders))
    return SourceTree(files=dict(sorted(files.items())), outside=outside, root_display=root_display), diagnostics


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


def compile_tree(tree: SourceTree, config: Config) -> list[CompiledPrompt]:
    partials: dict = {}
    prompts = []
    for rel, data in tree.files.items():
        if is_partial(rel):
            continue
        prompts.append(compile_source(rel, data, config, tree, partials))
    return prompts


def manifest_for(prompts: list[CompiledPrompt], config: Config) -> dict[str, Any]:
    artifacts: dict[str, Any] = {}
    prefixes: dict[str, dict[str, Any]] = {}
    for prompt in sorted(prompts, key=lambda p: p.name):
        artifact = prompt.artifact
        assert artifact is not None and prompt.data is not None
        cache = artifact["cache"]
        artifacts[prompt.name] = {
            "path": f"{prompt.name}.json",
            "sha256": hashlib.sha256(prompt.data).hexdigest(),
            "source": artifact["source"],
            "source_sha256": artifact["source_sha256"],
            "inputs": artifact["inputs"],
            "includes": artifact["includes"],
            "prefix_sha256": cache["prefix_sha256"],
            "prefix_tokens": cache["prefix_tokens"],
        }
        if cache["prefix_sha256"]:
            entry = prefixes.setdefault(cache["prefix_sha256"], {"tokens": cache["prefix_tokens"], "artifacts": []})
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
                Diagnostic(
                    "E908",
                    "error",
                    f"`{prompt.source}` would be written to {MANIFEST}, which the manifest owns",
                    tree.display(prompt.source),
                    Span(0, 0, 1, 1),
                    "rename the file",
                )
            )
    return problems


def compile_project(src: Path, config: Config, out: Path | None = None) -> BuildResult:
    """Read and compile everything; no writing. The result holds the exact bytes build would write."""
    result = BuildResult()
    if not src.is_dir():
        result.diagnostics.append(
            Diagnostic("E906", "error", f"source folder `{src}` not found", str(src), None, "pass the folder: `promptc build prompts_src`")
        )
        return result
    tree, diagnostics = read_tree(src, out)
    for rel, target in tree.outside.items():
        if not is_partial(rel):
            diagnostics.append(
                Diagnostic(
                    "E802",
                    "error",
                    "symlink points outside the source folder; not compiled",
                    tree.display(rel),
                    Span(0, 0, 1, 1),
                    "copy the file into the source folder instead of linking it",
                )
            )
    prompts = compile_tree(tree, config)
    result.prompts = prompts
    result.source_count = len(tree.files)
    for prompt in prompts:
        diagnostics.extend(prompt.diagnostics)
    diagnostics.extend(_collisions(prompts, tree))
    result.diagnostics = _dedupe(diagnostics)
    if result.ok:
        result.manifest = manifest_for(prompts, config)
        files = {f"{p.name}.json": p.data for p in prompts if p.data is not None}
        files[MANIFEST] = dumps(result.manifest)
        result.files = dict(sorted(files.items()))
    return result


# ---------------------------------------------------------------------------------------------
# Writing


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
    parked = b.with_name(f"{b.name}{_TMP_MARK}old")
    os.rename(b, parked)
    os.rename(a, b)
    os.rename(parked, a)


def _recover(out: Path) -> None:
    parked = out.with_name(f"{out.name}{_TMP_MARK}old")
    if not out.exists() and parked.is_dir():
        os.rename(parked, out)
    for leftover in out.parent.glob(f"{out.name}{_TMP_MARK}*"):
        shutil.rmtree(leftover, ignore_errors=True)


def current_files(out: Path) -> dict[str, bytes] | None:
    if not out.is_dir():
        return None
    files = {}
    for path in sorted(out.rglob("*")):
        if path.is_file():
            files[path.relative_to(out).as_posix()] = path.read_bytes()
    return files


def stale_paths(expected: dict[str, bytes], out: Path) -> list[str]:
    actual = current_files(out) or {}
    stale = [p for p, data in expected.items() if actual.get(p) != data]
    stale += [p for p in actual if p not in expected]
    return sorted(stale)


@contextmanager
def output_lock(out: Path, timeout: float = 120.0) -> Iterator[None]:
    """One build at a time per output folder; a second one waits for the first."""
    import fcntl

    lock_dir = out.parent / CACHE_DIR
    lock_dir.mkdir(parents=True, exist_ok=True)
    handle = open(lock_dir / f"{out.name}.lock", "a+b")
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another promptc build holds {lock_dir / (out.name + '.lock')}") from None
                time.sleep(0.05)
        yield
    finally:
        handle.close()


def write_output(out: Path, files: dict[str, bytes]) -> bool:
    """Replace `out` with exactly `files`. Returns False when it already held them."""
    if current_files(out) == files:
        return False
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "a file stands where the output folder should be", str(out))
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.with_name(f"{out.name}{_TMP_MARK}{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir()
        made = {staging}
        for rel, data in files.items():
            target = staging / rel
            if target.parent not in made:
                target.parent.mkdir(parents=True, exist_ok=True)
                made.add(target.parent)
            with open(target, "wb") as handle:
                handle.write(data)
        if out.is_dir():
            _exchange(staging, out)
        else:
            os.rename(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return True


def _write_error(out: Path, exc: OSError) -> Diagnostic:
    reason = exc.strerror or str(exc)
    hint = "free some disk space" if exc.errno == errno.ENOSPC else "check the folder's permissions and that nothing else is in the way"
    return Diagnostic("E904", "error", f"cannot write `{out}`: {reason}; the previous build is unchanged", str(out), None, hint)


def build(src: Path | str = "prompts_src", out: Path | str = "build", config: Config | None = None, *, write: bool = True) -> BuildResult:
    """Compile `src` into `out`. Nothing in `out` changes unless every source compiles."""
    src, out = Path(src), Path(out)
    config = config or Config()
    result = compile_project(src, config, out)
    if not result.ok or not write:
        return result
    try:
        with output_lock(out):
            _recover(out)
            result.written = write_output(out, result.files)
            result.unchanged = not result.written
    except TimeoutError as exc:
        result.diagnostics.append(Diagnostic("E907", "error", str(exc), str(out), None, "wait for the other build to finish"))
    except OSError as exc:
        result.diagnostics.append(_write_error(out, exc))
    return result


def check(src: Path | str = "prompts_src", out: Path | str = "build", config: Config | None = None, *, locked: bool = False) -> BuildResult:
    """Compile without writing; with `locked`, also report output files that build would change."""
    src, out = Path(src), Path(out)
    result = compile_project(src, config or Config(), out)
    if locked and result.ok:
        result.stale = stale_paths(result.files, out)
        for path in result.stale:
            result.diagnostics.append(
                Diagnostic(
                    "E905",
                    "error",
                    f"`{(out / path).as_posix()}` is stale: it differs from what `promptc build` would write",
                    (out / path).as_posix(),
                    None,
                    "run `promptc build` and commit the result",
                )
            )
    return result


def with_defines(config: Config, defines: dict[str, str]) -> Config:
    if not defines:
        return config
    return replace(config, defines=tuple(sorted({**config.defines_map, **defines}.items())))
