"""Stage 1 — read sources: every `*.prompt` under the source folder, and every `*.json` (tool
definitions and schemas that prompts name), in sorted order, with the stat-based shortcut that lets
an incremental build skip reading unchanged files."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from stat import S_ISREG
from typing import Any

from ..facts import codes
from ..facts.diagnostics import Diagnostic, file_span, make
from ..facts.language import PARTIAL_PREFIX, RESOURCE_SUFFIX, SOURCE_SUFFIX
from ..passes.context import SourceTree
from ..runtime.atomic import read_file
from ..syntax.source import MAX_SOURCE_BYTES

# ---------------------------------------------------------------------------------------------
# Reading the source tree


def _utf8(name: str) -> bool:
    """A name the file system gave in bytes that are not UTF-8 arrives with surrogate escapes."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class SourceVanished(OSError):
    """A source the listing found could not be read when a compile asked for it."""

    def __init__(self, rel: str, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause), rel)
        self.rel = rel


class LazyFiles(Mapping[str, bytes]):
    """Source bytes by path; files whose stat matches the last build are read only if asked for.

    An incremental build after a one-file edit then reads one file, not the whole tree, while
    partials stay available to any prompt that includes them."""

    def __init__(self, loaded: dict[str, bytes], deferred: Mapping[str, str] | None = None) -> None:
        self._data = loaded
        self._paths = dict(deferred or {})
        self._order = sorted({*loaded, *self._paths})

    def __getitem__(self, rel: str) -> bytes:
        data = self._data.get(rel)
        if data is not None:
            return data
        path = self._paths[rel]
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            # Raised, in whichever process asked: compiling empty bytes instead would build (and
            # cache) an empty artifact for a file that is simply gone.
            raise SourceVanished(rel, exc) from None
        self._data[rel] = data
        return data

    def __contains__(self, rel: object) -> bool:
        return rel in self._data or rel in self._paths

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)


class LooseFiles(Mapping[str, bytes]):
    """The files of a folder that is not a source folder (a `.prompt` file opened or formatted on
    its own: `~/notes.prompt`), read only when a compile asks for one, never the whole folder.

    A lookup checks the one path: `.prompt` or `.json`, inside the folder after resolving links,
    a regular file of at most `limit` bytes (a bigger one is an OSError naming its size, before a
    byte is read). Listing (what "did you mean" hints iterate) shows what was looked up and the
    folder's own entries, at most `listed` of them, without reading them: opening a file in `~` or
    `/` costs what that file and its includes cost, not a walk of every JSON file beneath."""

    def __init__(self, folder: Path, *, limit: int | None = None, listed: int = 1000) -> None:
        self.folder = Path(os.path.realpath(folder))
        self.limit = MAX_SOURCE_BYTES if limit is None else limit
        self.listed = listed
        self._data: dict[str, bytes] = {}
        self._order: list[str] | None = None

    def _path(self, rel: object) -> str | None:
        if not isinstance(rel, str) or not rel.endswith((SOURCE_SUFFIX, RESOURCE_SUFFIX)):
            return None
        parts = rel.split("/")
        if rel.startswith("/") or any(part in ("", ".", "..") or part.startswith(".") for part in parts):
            return None
        path = os.path.join(self.folder, *parts)
        real = os.path.realpath(path)
        if not real.startswith(str(self.folder) + os.sep):
            return None
        try:
            return path if S_ISREG(os.stat(real).st_mode) else None
        except (OSError, ValueError):
            return None

    def __contains__(self, rel: object) -> bool:
        return rel in self._data or self._path(rel) is not None

    def __getitem__(self, rel: str) -> bytes:
        data = self._data.get(rel)
        if data is not None:
            return data
        path = self._path(rel)
        if path is None:
            raise KeyError(rel)

        try:
            data = read_file(path, limit=self.limit)
        except OSError as exc:
            raise SourceVanished(rel, exc) from None
        self._data[rel] = data
        return data

    def __iter__(self) -> Iterator[str]:
        if self._order is None:
            names: list[str] = []
            try:
                with os.scandir(self.folder) as entries:
                    for entry in entries:
                        if len(names) >= self.listed:
                            break
                        if not entry.name.startswith(".") and entry.name.endswith((SOURCE_SUFFIX, RESOURCE_SUFFIX)):
                            names.append(entry.name)
            except OSError:
                pass
            self._order = names
        return iter(sorted({*self._order, *self._data}))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def loose_tree(folder: Path) -> SourceTree:
    """The source tree of a folder read as a loose file's (see `LooseFiles`)."""
    return SourceTree(files=LooseFiles(folder), root_display=_display_root(folder))


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
    src: Path, out: Path | None = None, known: dict[str, list[Any]] | None = None, known_at_ns: int = 0
) -> tuple[SourceTree, list[Diagnostic]]:
    """Read every `*.prompt` under `src`, in sorted order.

    `known` maps paths to [size, mtime_ns, inode, ctime_ns, sha256] from the last build: a file whose stat
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
            if not _utf8(entry.name):
                if entry.name.endswith(SOURCE_SUFFIX) or entry.is_dir():
                    shown = os.fsencode(rel).decode("utf-8", "backslashreplace")
                    diagnostics.append(
                        make(
                            codes.UNREADABLE,
                            "file name cannot be read as UTF-8; not read (artifact names are UTF-8 paths)",
                            file_span(),
                            "rename it; if the name is valid UTF-8, run Python in UTF-8 mode (PYTHONUTF8=1)",
                            path=f"{root_display}/{shown}",
                        )
                    )
                continue
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
                    outside[rel + "/"] = target  # not part of the tree; an include through it is E802
                    continue
                subfolders.append((path, rel + "/", target))
                continue
            if not entry.name.endswith((SOURCE_SUFFIX, RESOURCE_SUFFIX)):
                continue
            if entry.is_symlink():
                target = os.path.realpath(path)
                if not target.startswith(root_real + os.sep):
                    outside[rel] = target
                    continue
            try:
                st = os.stat(path)
                if not S_ISREG(st.st_mode):
                    # a named pipe or a device would block `open()` forever
                    diagnostics.append(
                        make(
                            codes.UNREADABLE,
                            "not a regular file (a named pipe, a socket or a device); not read",
                            file_span(),
                            "prompt sources are regular files: remove or rename it",
                            path=f"{root_display}/{rel}",
                        )
                    )
                    continue
                # size, mtime, inode and ctime: an edit that restores size and mtime (`cp -p`, tools
                # that keep timestamps) still moves the ctime, which no user call can set back
                stat = [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]
                record = known.get(rel)
                if (
                    record is not None
                    and record[:4] == stat
                    and stat[1] < trust_before
                    and os.access(path, os.R_OK)  # an unreadable file gets a clean build's verdict
                ):
                    deferred[rel] = path
                    shas[rel] = record[4]
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
    return os.path.basename(rel).startswith(PARTIAL_PREFIX)


def is_prompt(rel: str) -> bool:
    """A source that compiles to an artifact: a `.prompt` file that is not a partial."""
    return rel.endswith(SOURCE_SUFFIX) and not is_partial(rel)
