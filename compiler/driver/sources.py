"""Stage 1 — read sources: every `*.prompt` under the source folder, and every `*.json` (tool
definitions and schemas that prompts name), in sorted order, with the stat-based shortcut that lets
an incremental build skip reading unchanged files."""

from __future__ import annotations

import bisect
import hashlib
import os
import stat as stat_module
from collections.abc import Iterable, Iterator, Mapping
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
    if name.isascii():
        return True
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
    partials stay available to any prompt that includes them. `fresh` names the files read (and
    hashed) by the walk itself; `links` says the walk went through a symlink."""

    def __init__(
        self,
        loaded: dict[str, bytes],
        deferred: Mapping[str, str] | None = None,
        *,
        order: list[str] | None = None,
        links: bool = False,
        root: str | None = None,
    ) -> None:
        self._data = loaded
        self._paths = dict(deferred or {})
        self._order = order
        self.fresh: frozenset[str] = frozenset(loaded)
        self.links = links
        #: the source folder: a file read by the walk and forgotten since is read again from there
        self._root = root

    def __getitem__(self, rel: str) -> bytes:
        data = self._data.get(rel)
        if data is not None:
            return data
        path = self._paths.get(rel)
        if path is None:
            if self._root is None or rel not in self.fresh:
                raise KeyError(rel)
            path = os.path.join(self._root, *rel.split("/"))
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
        return rel in self._data or rel in self._paths or rel in self.fresh

    @property
    def order(self) -> list[str]:
        """Every path, sorted (sorted once, when first asked for)."""
        if self._order is None:
            self._order = sorted({*self._data, *self._paths})
        return self._order

    def __iter__(self) -> Iterator[str]:
        return iter(self.order)

    def __len__(self) -> int:
        return len(self.order)

    def path_of(self, rel: str) -> str | None:
        return self._paths.get(rel)

    def forget(self) -> None:
        """Drop the bytes read so far (a session keeps the tree for its paths and records, not
        for its contents; a large build lets them go once compiled): a file asked for again is
        read again."""
        self._order = self.order  # listed before the bytes go: the listing is made of both
        self._data = {}


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


_SUFFIXES = (SOURCE_SUFFIX, RESOURCE_SUFFIX)

#: A file whose mtime is this close to the moment its record was made is read again next time:
#: it may have changed within the same timestamp tick ("racily clean", as git calls it). Two
#: seconds covers the coarsest file systems (FAT's two-second mtimes); ext4, XFS, APFS and tmpfs
#: tick in nanoseconds or milliseconds.
RACY_WINDOW_NS = 2_000_000_000


class _Walk:
    """Reading the source folder: the rules every walk of it follows (hidden entries skipped, a
    symlink followed only inside the folder, a folder reached twice skipped, names that are not
    UTF-8 and files that are not regular reported), for the whole tree (`read_tree`) or for the
    paths a watcher saw change (`update_tree`)."""

    def __init__(self, src: Path, out: Path | None, known: Mapping[str, list[Any]], known_at_ns: int) -> None:
        self.root = str(src)
        self.root_display = _display_root(src)
        self.root_real = os.path.realpath(src)
        self.out_real = os.path.realpath(out) if out is not None else None
        self.known = known
        self.known_at_ns = known_at_ns
        self.diagnostics: list[Diagnostic] = []
        self.files: dict[str, bytes] = {}
        self.deferred: dict[str, str] = {}
        self.shas: dict[str, str] = {}
        self.stats: dict[str, list[int]] = {}
        self.outside: dict[str, str] = {}
        self.seen_dirs: set[str] = set()
        self.links = False

    def _problem(self, code: Any, message: str, rel: str, hint: str | None = None) -> None:
        self.diagnostics.append(make(code, message, file_span(), hint, path=f"{self.root_display}/{rel}"))

    def tree(self, folder: str, rel_folder: str, real: str) -> None:
        """Walk `folder` (shown as `rel_folder`, whose real path is `real`) and everything below."""
        stack: list[tuple[str, str, str]] = [(folder, rel_folder, real)]
        while stack:
            folder, rel_folder, real = stack.pop()
            if real in self.seen_dirs:
                self.links = True
                self.diagnostics.append(
                    make(
                        codes.SYMLINK_LOOP,
                        "symlink loop: this folder was already read; skipped",
                        file_span(),
                        "remove the symlink that points back into the tree",
                        path=f"{self.root_display}/{rel_folder}".rstrip("/"),
                    )
                )
                continue
            self.seen_dirs.add(real)
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError as exc:
                self._problem(codes.UNREADABLE, f"cannot read folder: {exc.strerror}", rel_folder)
                continue
            subfolders = []
            known, deferred, shas, stats = self.known, self.deferred, self.shas, self.stats
            for entry in entries:
                name = entry.name
                if name.startswith("."):
                    continue
                rel = f"{rel_folder}{name}"
                # The common case first, without a call: a regular file (the folder entry says so,
                # no system call) whose stat is the recorded one, made outside the racy window.
                if name.endswith(_SUFFIXES) and name.isascii() and entry.is_file(follow_symlinks=False):
                    path = entry.path
                    try:
                        st = os.stat(path)
                    except OSError:
                        st = None
                    record = known.get(rel)
                    if st is not None and record is not None and S_ISREG(st.st_mode):
                        stat = [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]
                        if (
                            record[:4] == stat
                            and stat[1] < (record[5] if len(record) > 5 else self.known_at_ns) - RACY_WINDOW_NS
                            and os.access(path, os.R_OK)  # an unreadable file gets a clean build's verdict
                        ):
                            deferred[rel] = path
                            shas[rel] = record[4]
                            stats[rel] = stat
                            continue
                    self.file(path, rel, False)
                    continue
                if not _utf8(entry.name):
                    if entry.name.endswith(SOURCE_SUFFIX) or entry.is_dir():
                        self._unreadable_name(rel)
                    continue
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                if is_dir:
                    below = self.folder(entry.path, rel, real, entry.is_symlink())
                    if below is not None:
                        subfolders.append(below)
                    continue
                if entry.name.endswith((SOURCE_SUFFIX, RESOURCE_SUFFIX)):
                    self.file(entry.path, rel, entry.is_symlink())
            stack.extend(reversed(subfolders))

    def _unreadable_name(self, rel: str) -> None:
        shown = os.fsencode(rel).decode("utf-8", "backslashreplace")
        self.diagnostics.append(
            make(
                codes.UNREADABLE,
                "file name cannot be read as UTF-8; not read (artifact names are UTF-8 paths)",
                file_span(),
                "rename it; if the name is valid UTF-8, run Python in UTF-8 mode (PYTHONUTF8=1)",
                path=f"{self.root_display}/{shown}",
            )
        )

    def folder(self, path: str, rel: str, parent_real: str, symlink: bool) -> tuple[str, str, str] | None:
        """A subfolder to walk, or None (the output folder, or a link leading outside)."""
        if symlink:
            self.links = True
        target = os.path.realpath(path) if symlink else os.path.join(parent_real, os.path.basename(path))
        if self.out_real is not None and target == self.out_real:
            return None
        if symlink and not (target == self.root_real or target.startswith(self.root_real + os.sep)):
            self.outside[rel + "/"] = target  # not part of the tree; an include through it is E802
            return None
        return (path, rel + "/", target)

    def file(self, path: str, rel: str, symlink: bool) -> None:
        """A `.prompt` or `.json` file: its stat, and its bytes and sha256 unless its record shows
        it unchanged (and not racily so)."""
        if symlink:
            self.links = True
            target = os.path.realpath(path)
            if not target.startswith(self.root_real + os.sep):
                self.outside[rel] = target
                return
        try:
            st = os.stat(path)
            if not S_ISREG(st.st_mode):
                # a named pipe or a device would block `open()` forever
                self._problem(
                    codes.UNREADABLE,
                    "not a regular file (a named pipe, a socket or a device); not read",
                    rel,
                    "prompt sources are regular files: remove or rename it",
                )
                return
            # size, mtime, inode and ctime: an edit that restores size and mtime (`cp -p`, tools
            # that keep timestamps) still moves the ctime, which no user call can set back
            stat = [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]
            record = self.known.get(rel)
            if (
                record is not None
                and record[:4] == stat
                and stat[1] < (record[5] if len(record) > 5 else self.known_at_ns) - RACY_WINDOW_NS
                and os.access(path, os.R_OK)  # an unreadable file gets a clean build's verdict
            ):
                self.deferred[rel] = path
                self.shas[rel] = record[4]
            else:
                with open(path, "rb") as handle:
                    data = handle.read()
                self.files[rel] = data
                self.shas[rel] = hashlib.sha256(data).hexdigest()
            self.stats[rel] = stat
        except FileNotFoundError:
            self._problem(
                codes.UNREADABLE,
                "cannot read file: it vanished while the build ran, or is a dangling symlink",
                rel,
                "restore the file or remove the link",
            )
        except OSError as exc:
            self._problem(
                codes.UNREADABLE, f"cannot read file: {exc.strerror or exc}", rel, "check the file's permissions"
            )


def read_tree(
    src: Path, out: Path | None = None, known: dict[str, list[Any]] | None = None, known_at_ns: int = 0
) -> tuple[SourceTree, list[Diagnostic]]:
    """Read every `*.prompt` (and `*.json`) under `src`.

    `known` maps paths to [size, mtime_ns, inode, ctime_ns, sha256, recorded_ns] from the last
    build (`recorded_ns` defaults to `known_at_ns`): a file whose stat still matches (and was not
    modified just before it was recorded) is not read now; its bytes are read later only if a
    compile needs them. Symlinks are followed only while they stay inside the source folder; a
    directory reached twice (a symlink loop) is skipped with a warning.
    """
    walk = _Walk(src, out, known or {}, known_at_ns)
    walk.tree(str(src), "", walk.root_real)
    return _tree_of(walk), walk.diagnostics


def _tree_of(walk: _Walk, order: list[str] | None = None) -> SourceTree:
    files = LazyFiles(walk.files, walk.deferred, order=order, links=walk.links, root=walk.root)
    return SourceTree(
        files=files, outside=walk.outside, root_display=walk.root_display, shas=walk.shas, stats=walk.stats
    )


def update_tree(
    previous: SourceTree, src: Path, out: Path | None, changed: Iterable[str]
) -> tuple[SourceTree, list[Diagnostic], set[str]] | None:
    """The tree after the paths in `changed` (absolute, as a watcher reports them) were created,
    modified, moved or deleted: only those are stat'ed, read and hashed, a changed folder is
    walked, and every other file keeps its record. None when only a walk of the whole tree can
    say: the previous walk went through a symlink or reported a problem, or the source folder
    itself changed. With the tree come the paths whose record was dropped or read again."""
    files = previous.files
    if not isinstance(files, LazyFiles) or files.links or previous.outside:
        return None
    root = os.path.abspath(src)
    root_real = os.path.realpath(root)
    walk = _Walk(src, out, {}, 0)
    walk.shas, walk.stats = dict(previous.shas), dict(previous.stats)
    order = list(files.order)
    touched: set[str] = set()
    deferred = dict(files._paths)
    for rel in files.fresh:
        deferred[rel] = os.path.join(root, *rel.split("/"))
    for path in sorted({os.path.abspath(p) for p in changed}):
        if path == root or not path.startswith(root + os.sep):
            return None
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        # whatever was there, and below it, is dropped; what is there now is read
        for old in _under(order, rel):
            touched.add(old)
            del order[bisect.bisect_left(order, old)]
            walk.shas.pop(old, None)
            walk.stats.pop(old, None)
            deferred.pop(old, None)
        try:
            info = os.lstat(path)
        except OSError:
            continue  # deleted, or moved away
        parent = os.path.dirname(path)
        if os.path.realpath(parent) != os.path.join(root_real, *rel.split("/")[:-1]):
            return None  # reached through a linked folder
        real = os.path.join(root_real, *rel.split("/"))
        if walk.out_real is not None and (real == walk.out_real or real.startswith(walk.out_real + os.sep)):
            continue
        if stat_module.S_ISLNK(info.st_mode) or not _utf8(os.path.basename(path)):
            return None
        if stat_module.S_ISDIR(info.st_mode):
            walk.tree(path, rel + "/", real)
        elif path.endswith((SOURCE_SUFFIX, RESOURCE_SUFFIX)):
            walk.file(path, rel, False)
    if walk.diagnostics or walk.links or walk.outside:
        return None
    for rel in walk.files:
        touched.add(rel)
        deferred.pop(rel, None)
        at = bisect.bisect_left(order, rel)
        if at == len(order) or order[at] != rel:
            order.insert(at, rel)
    walk.deferred = deferred
    return _tree_of(walk, order), [], touched


def _under(order: list[str], rel: str) -> list[str]:
    """`rel` and every path below it, from a sorted list of paths."""
    found = []
    at = bisect.bisect_left(order, rel)
    if at < len(order) and order[at] == rel:
        found.append(rel)
    start = bisect.bisect_left(order, rel + "/")
    end = bisect.bisect_left(order, rel + "0")  # "0" is the character after "/"
    return found + order[start:end]


def is_partial(rel: str) -> bool:
    return rel.rpartition("/")[2].startswith(PARTIAL_PREFIX)


def is_prompt(rel: str) -> bool:
    """A source that compiles to an artifact: a `.prompt` file that is not a partial."""
    return rel.endswith(SOURCE_SUFFIX) and not rel.rpartition("/")[2].startswith(PARTIAL_PREFIX)
