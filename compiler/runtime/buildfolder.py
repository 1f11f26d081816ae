"""The build folder: what is in it, how it is read, and how it is replaced.

A build folder (`build/`) holds `manifest.json` and one JSON artifact per prompt, and nothing
else; promptc's state about it lives beside it, in `.promptc-cache/` (the lock, the incremental
cache, the shadow set, the trash, the record of the folders promptc made). This module is the one
place that knows those names and reads or changes those files:

- reading (`BuildFolder`): the manifest and the artifacts, typed (`promptc.runtime.model`), each
  artifact checked against the manifest's sha256 and kept inside the folder; the runtime, `diff`,
  `cost`, `report`, the bindings and the driver read a build through it;
- writing (`write_output`): the new set assembled beside the folder and swapped in with one
  atomic exchange, under a lock, the exchanged-out set kept as the shadow for the next build;
  only folders promptc made are ever moved or deleted (`claim_output`, `recover`, `_Owned`), and a
  failure leaves the previous build exactly as it was. Single files go through `promptc.runtime.atomic`.

Standard library only: the runtime that applications ship reads build folders with it.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import secrets
import shutil
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache, partial
from pathlib import Path
from typing import Any

from ..facts import codes
from ..facts.diagnostics import Diagnostic, make
from ..facts.language import CACHE_DIR, MANIFEST
from ..facts.lazy import lazy_import
from ..facts.records import dataclass
from .atomic import ABSENT, read_file, write_file
from .model import Artifact, ArtifactError, Manifest, ManifestEntry

try:
    import fcntl
except ImportError:  # not POSIX: the lock is filelock's (LockFileEx on Windows)
    fcntl = None  # type: ignore[assignment]
#: only where there is no `fcntl`: importing it would cost every fresh `promptc build` 60 ms
filelock = lazy_import("filelock")

__all__ = [
    "CACHE_DIR",
    "MANIFEST",
    "STAGING_MARK",
    "BuildFolder",
    "BuildFolderError",
    "Refused",
    "artifact_path",
    "manifest_path",
    "read_document",
    "state_path",
    "write_output",
]

#: Beside the output folder: the lock, the incremental cache, the shadow set, the trash.
#: Staging folders sit beside the output folder as `<out>.promptc-tmp-*`.
STAGING_MARK = ".promptc-tmp-"


def artifact_path(name: str) -> str:
    """Where prompt `name`'s artifact is, relative to the build folder."""
    return f"{name}.json"


def state_path(out: Path) -> Path:
    """The incremental cache of the build folder `out`."""
    return out.parent / CACHE_DIR / f"{out.name}.state.json"


def manifest_path(path: Path | str) -> Path:
    """A build folder's manifest, or `path` itself when it names a file (a manifest elsewhere)."""
    path = Path(path)
    return path / MANIFEST if path.is_dir() else path


# ---------------------------------------------------------------------------------------------
# Reading a build


class BuildFolderError(ValueError):
    """A build folder, manifest or artifact that cannot be read; the message says which and why.
    `unreadable` when the file could not be read at all (none there yet, no permission), as
    opposed to one that was read and is not what promptc writes."""

    def __init__(self, message: str, *, unreadable: bool = False) -> None:
        super().__init__(message)
        self.unreadable = unreadable


def read_document(path: Path | str, label: str | None = None) -> dict[str, Any]:
    """The JSON object of a manifest file (decoded, not yet typed); `label` names it in errors."""
    shown = label or str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise BuildFolderError(f"cannot read {shown}: {exc.strerror or exc}", unreadable=True) from None
    return parse_document(data, shown)


def parse_document(data: bytes, label: str) -> dict[str, Any]:
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise BuildFolderError(f"{label} is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise BuildFolderError(f"{label} is not a promptc manifest (expected a JSON object)")
    return document


class BuildFolder:
    """A build folder as the runtime and the tools read it: the manifest, read once, and each
    artifact when it is asked for, checked against the manifest's sha256 (a hand-edited or
    half-copied build would render something nobody compiled) and never outside the folder."""

    def __init__(self, path: Path | str, manifest: Manifest | None = None) -> None:
        self.path = Path(path)
        self._manifest = manifest

    def __repr__(self) -> str:
        return f"BuildFolder({str(self.path)!r})"

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    @property
    def manifest(self) -> Manifest:
        """The typed manifest; `BuildFolderError` when there is none or it is not one."""
        if self._manifest is None:
            path = self.manifest_path
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                raise BuildFolderError(
                    f"no {MANIFEST} in `{self.path}`: run `promptc build` first", unreadable=True
                ) from None
            except OSError as exc:
                raise BuildFolderError(f"cannot read `{path}`: {exc}", unreadable=True) from None
            try:
                self._manifest = Manifest.from_json(json.loads(data))
            except ArtifactError as exc:
                raise BuildFolderError(f"`{path}`: {exc}") from None
            except (ValueError, RecursionError) as exc:
                raise BuildFolderError(f"cannot read `{path}`: {exc}") from None
        return self._manifest

    def manifest_or_none(self) -> Manifest | None:
        """The manifest, or None when there is no readable one (a first build, a foreign folder)."""
        try:
            return self.manifest
        except BuildFolderError:
            return None

    def entry(self, name: str) -> ManifestEntry | None:
        return self.manifest.artifacts.get(name)

    def artifact(self, name: str) -> Artifact:
        """The artifact of prompt `name`, as the manifest lists it; `BuildFolderError` otherwise
        (no such prompt, a file outside the folder, bytes that are not the ones built)."""
        entry = self.entry(name)
        if entry is None:
            raise BuildFolderError(f"no prompt `{name}` in `{self.path}`")
        root = self.path.resolve()
        path = (self.path / entry.path).resolve()
        if root != path and root not in path.parents:
            raise BuildFolderError(f"manifest entry `{name}` points outside `{self.path}`")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise BuildFolderError(f"cannot read the artifact of `{name}`: {exc}") from None
        if hashlib.sha256(data).hexdigest() != entry.sha256:
            raise BuildFolderError(
                f"`{path.name}` does not match {MANIFEST} (changed after the build); run `promptc build`"
            )
        try:
            return Artifact.from_json(json.loads(data))
        except (ValueError, RecursionError) as exc:  # ArtifactError is a ValueError too: both name the file
            raise BuildFolderError(f"`{path}`: {exc}") from None

    def artifact_or_none(self, name: str) -> Artifact | None:
        """The artifact when the folder holds the one the manifest lists, else None."""
        try:
            return self.artifact(name)
        except BuildFolderError:
            return None

    def artifact_file(self, name: str) -> Artifact | None:
        """The artifact file of prompt `name` as it is, without the manifest (what an earlier build
        left: the incremental build reads its token counts), or None."""
        try:
            return Artifact.from_json(json.loads((self.path / artifact_path(name)).read_bytes()))
        except (OSError, ValueError, RecursionError):
            return None


# ---------------------------------------------------------------------------------------------
# Replacing a build


@cache
def _renameat2_exchange() -> Any:
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


def recover(out: Path) -> None:
    """Undo what a killed build left behind, under the output lock: a parked old set (non-Linux
    two-rename swap), staging folders, spool folders and trash. Only folders promptc made are
    touched (their device and inode are in its record, or in a mark inside them): a folder that
    merely has one of these names, committed or planted, is left alone."""
    cache = cache_folder(out)
    owned = _Owned(cache, out)
    parked = out.with_name(f"{out.name}{STAGING_MARK}old")
    if not os.path.lexists(out) and owned.holds(parked):
        os.rename(parked, out)
    for leftover in out.parent.glob(f"{out.name}{STAGING_MARK}*"):
        if owned.holds(leftover):
            discard(leftover, out)
    # What builds that died left in the cache: their spool folders, and trash their background
    # thread never finished deleting. Deleted now, before this build needs the space.
    for spool in cache.glob(f"{out.name}.spool-*"):
        if not _alive(spool.name[len(out.name) + len(".spool-") :].partition("-")[0]) and _is_marked(spool):
            _remove_tree(spool)
    trash = cache / TRASH
    if _real_dir(trash) is not None:
        for entry in os.scandir(trash):
            if entry.name.startswith(f"{out.name}-") and not _alive(entry.name[len(out.name) + 1 :].partition("-")[0]):
                _delete_trash_entry(trash, entry.name)


def _alive(pid_text: str) -> bool:
    """Whether the process that named a leftover (by its pid) may still be running. Unknown is alive."""
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return True
    if sys.platform == "win32":  # os.kill(pid, 0) would send CTRL_C_EVENT there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, owned by someone else
    return True


# ---------------------------------------------------------------------------------------------
# What promptc made, and nothing else
#
# A build deletes, empties or swaps only folders it made. It knows them by device and inode, which
# no committed, copied or planted file can predict: folders that never become the output folder
# (spools) carry a mark file naming their own identity; trash entries carry it in their name; the
# staging folders, the shadow and the output folder itself (which trade places, so nothing can be
# put inside them) are listed in `.promptc-cache/<out>.owned`. Nothing is ever reached through a
# symlink: every folder is checked with lstat, and a cache entry promptc needs that is a link, or
# otherwise not what promptc makes, stops the build (E913) with nothing touched.

#: inside a folder promptc made in its cache: that folder's "<device>:<inode>"
MARK = ".promptc-owned"
TRASH = "trash"


class Refused(Exception):
    """The build will not touch a folder or file it did not make; `diagnostic` (E912, E913) says which."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def _identity(info: os.stat_result) -> str:
    return f"{info.st_dev}:{info.st_ino}"


def _real_dir(path: Path | str) -> os.stat_result | None:
    """The lstat of a folder that is really a folder here (a symlink to one is not), else None."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info if stat.S_ISDIR(info.st_mode) else None


def _not_ours(path: Path, what: str, hint: str | None = None) -> Refused:
    try:
        info = os.lstat(path)
        kind = (
            f"a symlink to `{os.readlink(path)}`"
            if stat.S_ISLNK(info.st_mode)
            else ("a folder" if stat.S_ISDIR(info.st_mode) else "a file")
        )
    except OSError:
        kind = "there"
    shown = path.as_posix()
    return Refused(
        make(
            codes.CACHE_NOT_OURS,
            f"`{shown}` is {kind} that promptc did not make; it {what}, so the build stops with nothing touched",
            None,
            hint or f"delete `{shown}` (promptc recreates what it needs); a cache folder is never committed or copied",
            path=shown,
        )
    )


def cache_folder(out: Path) -> Path:
    """`.promptc-cache` beside `out`, made when missing. A link or a file there is refused (E913):
    the lock, the incremental cache and the shadow set live in it, and none is reached through a link."""
    cache = out.parent / CACHE_DIR
    try:
        os.mkdir(cache)
    except FileExistsError:
        pass
    except FileNotFoundError:
        out.parent.mkdir(parents=True, exist_ok=True)
        os.makedirs(cache, exist_ok=True)
    if _real_dir(cache) is None:
        raise _not_ours(cache, "must be a folder of its own (not a link) to hold the lock, cache and shadow set")
    _ignore_itself(cache)
    return cache


def _mark(folder: Path) -> None:
    info = os.lstat(folder)
    write_file(folder / MARK, f"{_identity(info)}\n".encode(), expect=ABSENT, symlinks="refuse", durable=False)


def _is_marked(folder: Path) -> bool:
    info = _real_dir(folder)
    if info is None:
        return False
    try:
        return read_file(folder / MARK, limit=64, follow=False) == f"{_identity(info)}\n".encode()
    except OSError:
        return False


def _make_marked(folder: Path) -> Path:
    os.mkdir(folder)
    _mark(folder)
    return folder


def make_spool(out: Path) -> Path:
    """A new spool folder for this build's artifacts (a unique name, made here, marked)."""
    cache = cache_folder(out)
    return _make_marked(cache / f"{out.name}.spool-{os.getpid()}-{secrets.token_hex(4)}")


class _Owned:
    """The output-set folders promptc made for one output folder: staging sets, the shadow and the
    output folder, by "<device>:<inode>", in `.promptc-cache/<out>.owned`. Read and written under
    the output lock."""

    def __init__(self, cache: Path, out: Path) -> None:
        self.path = cache / f"{out.name}.owned"
        try:
            text = read_file(self.path, limit=1 << 16, follow=False).decode("ascii")
        except FileNotFoundError:
            text = ""
        except (OSError, UnicodeDecodeError):
            if os.path.lexists(self.path) and not stat.S_ISREG(os.lstat(self.path).st_mode):
                raise _not_ours(self.path, "records which folders promptc made") from None
            text = ""
        self.ids = set(text.split())
        #: the ids as the file holds them (a save that would write them again writes nothing)
        self._saved = set(self.ids)

    def holds(self, path: Path | str) -> bool:
        info = _real_dir(path)
        return info is not None and _identity(info) in self.ids

    def add(self, *paths: Path) -> None:
        for path in paths:
            info = _real_dir(path)
            if info is not None:
                self.ids.add(_identity(info))

    def only(self, *paths: Path) -> None:
        self.ids = set()
        self.add(*paths)

    def save(self) -> None:
        if self.ids == self._saved and os.path.isfile(self.path):
            return
        text = "".join(f"{ident}\n" for ident in sorted(self.ids))
        try:
            write_file(self.path, text.encode("ascii"), symlinks="refuse", durable=False)
            self._saved = set(self.ids)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _not_ours(self.path, "records which folders promptc made") from None
            raise


#: A folder whose mtime is this close to the moment its stat was recorded is listed again: an
#: entry added within the same timestamp tick would leave its mtime as it was (git's "racily
#: clean" rule; two seconds covers the coarsest file systems).
RACY_WINDOW_NS = 2_000_000_000


@dataclass(slots=True)
class KnownOutput:
    """What the incremental state knows of an output folder and its shadow set, as the last build
    left them: enough to check the folder and bring the shadow up to date in what a build changes
    instead of listing both trees.

    `holds(rel)` says whether a file belongs to the live set; `dirs` is every folder of the live
    set (`""` the folder itself) → [mtime_ns, inode, ctime_ns, when the stat was recorded]; `live` and
    `shadow` are the identities ("<device>:<inode>") of the two sets; `diff` the paths in which
    the shadow differs from the live set (what the last build wrote or removed); `removed` the
    paths of the live set this build drops."""

    holds: Callable[[str], bool]
    dirs: dict[str, list[int]]
    live: str
    shadow: str | None
    diff: frozenset[str]
    removed: frozenset[str] = frozenset()

    def matches(self, out: Path) -> bool:
        info = _real_dir(out)
        return info is not None and _identity(info) == self.live


def _only_known(out: Path, known: KnownOutput) -> bool:
    """Whether `out` holds only files of the live set, proven from its folders' stats (listing only
    the folders whose stat moved). False when that cannot be shown (then the caller lists it all).
    The change time is in the stat: a file dropped in and the folder's mtime set back still moves
    it."""
    if not known.matches(out):
        return False
    base = str(out)
    for rel, record in known.dirs.items():
        path = os.path.join(base, rel) if rel else base
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue  # a folder gone holds nothing foreign
        except OSError:
            return False
        if not stat.S_ISDIR(info.st_mode):
            return False
        if (
            info.st_mtime_ns == record[0]
            and info.st_ino == record[1]
            and info.st_ctime_ns == record[2]
            and info.st_ctime_ns < record[3] - RACY_WINDOW_NS
        ):
            continue
        try:
            entries = list(os.scandir(path))
        except OSError:
            return False
        prefix = f"{rel}/" if rel else ""
        for entry in entries:
            child = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                if child not in known.dirs:
                    files, odd = _scan(Path(entry.path))
                    if files or odd:
                        return False
            elif not (entry.is_file(follow_symlinks=False) and known.holds(child)):
                return False
    return True


def output_record(out: Path, dirs: Iterable[str], now_ns: int) -> dict[str, Any]:
    """What a build that just wrote `out` records of it for the next one: the identities of the
    live and shadow sets and the stat of each of `dirs` (the live set's folders; those gone are
    left out)."""
    shadow = _real_dir(_shadow_path(out))
    live = _real_dir(out)
    stats: dict[str, list[int]] = {}
    base = str(out)
    for rel in dirs:
        try:
            info = os.lstat(os.path.join(base, rel) if rel else base)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            stats[rel] = [info.st_mtime_ns, info.st_ino, info.st_ctime_ns, now_ns]
    return {
        "live": _identity(live) if live is not None else None,
        "shadow": _identity(shadow) if shadow is not None else None,
        "dirs": stats,
    }


def output_clock(out: Path) -> int:
    """The file system's clock in `out`'s folder now, as it stamps change times there: the change
    time of the build's lock file (in the cache beside `out`, which shares its file system: the
    atomic swap needs that), touched. An output file whose change time is older was last changed
    before this moment, so a later change shows in its stat. 0 when it cannot be read (no stat is
    then recorded as proof: the next build hashes the files)."""
    lock = out.parent / CACHE_DIR / f"{out.name}.lock"
    try:
        fd = os.open(lock, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return 0
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return 0
        if os.utime in os.supports_fd:
            os.utime(fd)
        else:
            os.utime(lock)
        return os.fstat(fd).st_ctime_ns
    except OSError:
        return 0
    finally:
        os.close(fd)


def folders_of(paths: Iterable[str]) -> set[str]:
    """Every folder the files at `paths` sit in, and their parents (`""` the top)."""
    found = {""}
    for rel in paths:
        folder = rel.rpartition("/")[0]
        while folder and folder not in found:
            found.add(folder)
            folder = folder.rpartition("/")[0]
    return found


def owns_output(out: Path) -> bool:
    """Whether `out` is the very folder promptc's last build of it swapped in (its record says so);
    the incremental cache is trusted only then."""
    cache = out.parent / CACHE_DIR
    if _real_dir(cache) is None:
        return False
    try:
        return _Owned(cache, out).holds(out)
    except Refused:
        return False


def claim_output(out: Path, known: KnownOutput | None = None) -> None:
    """Before a build reads anything from `out`: refuse (E912) an output folder holding anything
    promptc did not write (any file but `manifest.json` and the artifacts it lists, or a symlink,
    pipe or device anywhere inside), and (E913) cache entries of this output that are links or
    otherwise not promptc's. Nothing is moved or deleted; a missing or empty folder is fine.

    With `known` (what the last build recorded of the folder it left), the folder is proven to hold
    nothing else by the stats of its folders — a file added, removed or renamed in a folder moves
    that folder's mtime — and only the folders whose stat moved (or was recorded within the racy
    window of their last change) are listed."""
    if _real_dir(out) is not None:
        foreign = foreign_files(out) if known is None or not _only_known(out, known) else []
        if foreign:
            raise Refused(_foreign_diagnostic(out, foreign))
    cache = cache_folder(out)
    owned = _Owned(cache, out)
    _usable_shadow(cache, out, owned)
    _usable_trash(cache)
    dirty = cache / f"{out.name}.shadow.dirty"
    if os.path.lexists(dirty) and not _empty_file(dirty):
        raise _not_ours(dirty, "flags a half-updated shadow set")


def foreign_files(folder: Path) -> list[str]:
    """What in `folder` promptc did not write, as `/`-separated relative paths (links and special
    files suffixed with what they are): everything but `manifest.json` and the regular files its
    `artifacts` list."""
    files, odd = _scan(folder)
    if not files:
        return odd
    listed = _listed(folder) if MANIFEST in files else None
    keep = set() if listed is None else {MANIFEST, *listed}
    return sorted([*odd, *(rel for rel in files if rel not in keep)])


def _listed(folder: Path) -> set[str] | None:
    """The artifact paths a promptc manifest lists, or None when `manifest.json` is not one. The
    answer for the manifest a build just wrote is kept (by its file's identity), so a watch loop's
    next build does not parse it again."""
    path = folder / MANIFEST
    try:
        info = os.lstat(path)
    except OSError:
        return None
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    known = _LISTED.get(str(path))
    if known is not None and known[0] == key:
        return known[1]
    try:
        data = json.loads(read_file(path, limit=1 << 28, follow=False))
    except (OSError, ValueError, RecursionError):
        return None
    artifacts = data.get("artifacts") if isinstance(data, dict) else None
    if not isinstance(artifacts, dict) or not str(data.get("schema", "")).startswith("promptc"):
        return None
    return {
        entry["path"] for entry in artifacts.values() if isinstance(entry, dict) and isinstance(entry.get("path"), str)
    }


#: manifest path → (its identity when read, the artifact paths it lists): what builds just wrote
_LISTED: dict[str, tuple[tuple[int, int, int, int], set[str]]] = {}


def _remember_listing(out: Path, files: dict[str, bytes | Path], keep: list[str]) -> None:
    path = out / MANIFEST
    try:
        info = os.lstat(path)
    except OSError:
        return
    if len(_LISTED) > 64:
        _LISTED.clear()
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    _LISTED[str(path)] = (key, {rel for rel in (*files, *keep) if rel != MANIFEST})


def _foreign_diagnostic(out: Path, foreign: list[str], shown: int = 5) -> Diagnostic:
    names = ", ".join(f"`{(out / rel).as_posix()}`" for rel in foreign[:shown])
    more = f" and {len(foreign) - shown} more" if len(foreign) > shown else ""
    return make(
        codes.OUTPUT_NOT_OURS,
        f"output folder `{out.as_posix()}` holds {len(foreign)} file{'s' if len(foreign) != 1 else ''} promptc did not "
        f"write: {names}{more}; promptc replaces its output folder as a whole, so it builds only into a folder that "
        "is empty or holds a promptc build, and never moves or deletes anything else",
        None,
        "build into a folder of its own (a new or empty one: `-o`, or `out` in [tool.promptc]), or move those files out of it",
        path=out.as_posix(),
    )


def _scan(folder: Path) -> tuple[dict[str, int], list[str]]:
    """Every regular file under `folder` with its inode, and everything that is neither a regular
    file nor a real folder (symlinks, pipes, devices), never following a link."""
    found: dict[str, int] = {}
    odd: list[str] = []
    stack = [(str(folder), "")]
    while stack:
        path, prefix = stack.pop()
        try:
            entries = list(os.scandir(path))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, f"{prefix}{entry.name}/"))
            elif entry.is_file(follow_symlinks=False):
                found[f"{prefix}{entry.name}"] = entry.inode()
            else:
                odd.append(f"{prefix}{entry.name} ({'a symlink' if entry.is_symlink() else 'not a regular file'})")
    return found, odd


def _empty_file(path: Path) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size == 0


def _usable_shadow(cache: Path, out: Path, owned: _Owned) -> bool:
    """Whether the shadow set exists and is promptc's. A folder there that is not in the record but
    holds nothing but a promptc build (one a promptc before this record kept) is adopted; anything
    else there is refused (E913)."""
    shadow = cache / f"{out.name}.shadow"
    if not os.path.lexists(shadow):
        return False
    if owned.holds(shadow):
        return True
    if _real_dir(shadow) is not None and not foreign_files(shadow):
        owned.add(shadow)
        return True
    raise _not_ours(shadow, "is where promptc keeps the previous build (the shadow set)")


def _usable_trash(cache: Path) -> Path:
    trash = cache / TRASH
    if os.path.lexists(trash) and _real_dir(trash) is None:
        raise _not_ours(trash, "is where promptc moves folders it deletes")
    return trash


def _remove_tree(folder: Path | str) -> None:
    """Delete a folder promptc made. `shutil.rmtree` never follows a link inside it, and refuses
    one in its place."""
    if _real_dir(folder) is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _trash_name(out: Path, info: os.stat_result) -> str:
    return f"{out.name}-{os.getpid()}-{time.monotonic_ns()}-d{info.st_dev}i{info.st_ino}"


def _delete_trash_entry(trash: Path | str, name: str) -> None:
    """Delete a trash entry only when its name carries its own device and inode (promptc moved it
    there): a planted entry, or a link, is left alone."""
    path = os.path.join(trash, name)
    info = _real_dir(path)
    if info is not None and name.endswith(f"-d{info.st_dev}i{info.st_ino}"):
        shutil.rmtree(path, ignore_errors=True)


def discard(folder: Path, out: Path, *, now: bool = False) -> None:
    """Delete a folder promptc made: move it into the cache's trash (one rename) and delete it in
    the background, or (`now`, or when the trash cannot be used) delete it here.

    Deleting a few thousand files and folders takes far longer than building them when only one
    prompt changed; the folder is already out of the way, so nobody needs to wait for it."""
    info = _real_dir(folder)
    if info is None:
        return
    if now:
        _remove_tree(folder)
        return
    trash = out.parent / CACHE_DIR / TRASH
    try:
        if _real_dir(out.parent / CACHE_DIR) is None:
            raise NotADirectoryError(errno.ENOTDIR, "no cache folder", str(trash))
        try:
            os.mkdir(trash)
        except FileExistsError:
            if _real_dir(trash) is None:
                raise
        os.rename(folder, trash / _trash_name(out, info))
    except OSError:
        _remove_tree(folder)
        return
    _empty_trash(trash)


def give_back(out: Path) -> None:
    """After a full disk: delete the shadow set (promptc's own) and what this process sent to the
    trash, here and now, so a later build that fits on its own is not short of the space they held.
    The output folder is untouched."""
    cache = out.parent / CACHE_DIR
    if _real_dir(cache) is None:
        return
    try:
        owned = _Owned(cache, out)
        shadow = _shadow_path(out)
        if owned.holds(shadow):
            _remove_tree(shadow)
            _clear_flag(shadow.with_name(shadow.name + ".dirty"))
        empty_own_trash(out)
    except (OSError, Refused):
        pass


def empty_own_trash(out: Path) -> None:
    """Delete, here and now, what this process moved into the trash (a failed build gives the
    space back before it reports)."""
    trash = out.parent / CACHE_DIR / TRASH
    if _real_dir(trash) is None:
        return
    mine = f"-{os.getpid()}-"
    for entry in os.scandir(trash):
        if mine in entry.name:
            _delete_trash_entry(trash, entry.name)


_EMPTYING: set[str] = set()


def _empty_trash(trash: Path) -> None:
    """Delete the trash in a daemon thread. A process that exits first leaves the rest for the next
    build; entries are unique names, so two processes emptying one trash do not collide."""
    key = str(trash)
    if key in _EMPTYING:
        return
    _EMPTYING.add(key)

    def run() -> None:
        try:
            for _ in range(3):  # pick up what another build moved in meanwhile
                if _real_dir(trash) is None:
                    break
                entries = [entry.name for entry in os.scandir(trash)]
                if not entries:
                    break
                for name in entries:
                    _delete_trash_entry(trash, name)
        except OSError:
            pass
        finally:
            _EMPTYING.discard(key)

    threading.Thread(target=run, name="promptc-trash", daemon=True).start()


def list_output(out: Path) -> list[str]:
    """Every regular file under `out`, as sorted `/`-separated relative paths (links not followed)."""
    return sorted(output_inodes(out))


def output_inodes(out: Path) -> dict[str, int]:
    """Every regular file under `out` with its inode, which the directory listing gives without a stat."""
    return _scan(out)[0]


def current_files(out: Path) -> dict[str, bytes | None] | None:
    """What `out` holds, for `check --locked`: every file's bytes; None for a symlink, a pipe or a
    device (never followed or opened: build writes only regular files, so each is stale)."""
    if _real_dir(out) is None:
        return None
    files, odd = _scan(out)
    found: dict[str, bytes | None] = {}
    for rel in files:
        try:
            found[rel] = read_file(out / rel, follow=False)
        except OSError:
            found[rel] = None
    for rel in odd:
        found[rel.rpartition(" (")[0]] = None
    return found


def stale_paths(expected: dict[str, bytes | Path], out: Path) -> list[str]:
    actual = current_files(out) or {}
    stale = [p for p, data in expected.items() if actual.get(p) is None or actual.get(p) != _content(data)]
    stale += [p for p in actual if p not in expected]
    return sorted(set(stale))


def linked_part(out: Path, rel: str) -> str | None:
    """The first part of `out/rel` (relative to `out`) that is a symlink or not a folder on the way, if any."""
    parts = rel.split("/")
    for depth in range(1, len(parts) + 1):
        part = "/".join(parts[:depth])
        try:
            info = os.lstat(out / part)
        except OSError:
            return None
        if stat.S_ISLNK(info.st_mode):
            return part
    return None


@contextmanager
def output_lock(out: Path, timeout: float = 120.0) -> Iterator[None]:
    """One build at a time per output folder; a second one waits for the first, then fails (E907).

    An OS lock on `.promptc-cache/<out>.lock` that the kernel releases when the process dies, so a
    killed build never leaves a stale lock behind: `flock` where the platform has `fcntl` (taken
    directly: importing the `filelock` package would cost every fresh `promptc build` 60 ms), and
    `filelock` (`LockFileEx` on Windows) where it has not. The lock file is never opened through a
    link (E913)."""
    lock_dir = cache_folder(out)
    lock_path = lock_dir / f"{out.name}.lock"
    if fcntl is None:
        try:
            with filelock.FileLock(lock_path, timeout=timeout, poll_interval=0.02):
                yield
        except filelock.Timeout:
            raise TimeoutError(f"another promptc build still holds {lock_path} after {timeout:g}s") from None
        return
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _not_ours(lock_path, "is the build's lock") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _not_ours(lock_path, "is the build's lock")
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"another promptc build still holds {lock_path} after {timeout:g}s") from None
                time.sleep(0.02)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _ignore_itself(cache_dir: Path) -> None:
    """The cache folder holds only machine-local state: a `.gitignore` inside keeps it out of git."""
    marker = cache_dir / ".gitignore"
    if not os.path.lexists(marker):
        try:
            write_file(
                marker,
                b"# promptc's local build cache; safe to delete\n*\n",
                expect=ABSENT,
                symlinks="refuse",
                durable=False,
            )
        except OSError:
            pass


def _content(data: bytes | Path) -> bytes:
    return data.read_bytes() if isinstance(data, Path) else data


def _same_output(out: Path, files: dict[str, bytes | Path], keep: list[str]) -> bool:
    if _real_dir(out) is None:
        return False
    present, odd = _scan(out)
    if odd or sorted(present) != sorted([*files, *keep]):
        return False
    for rel, data in files.items():
        try:
            if read_file(out / rel, follow=False) != _content(data):
                return False
        except OSError:
            return False
    return True


def write_new_file(path: Path, data: bytes) -> None:
    """A new file in a staging folder promptc just made (it swaps in whole, so no temporary file)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _place(source: str, target: str) -> bool:
    """Hard-link an unchanged artifact into the new set (no copy); copy where links are refused.
    Whether it linked."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
        return False
    return True


def _shadow_path(out: Path) -> Path:
    return out.parent / CACHE_DIR / f"{out.name}.shadow"


def write_output(
    out: Path,
    files: dict[str, bytes | Path],
    keep: Sequence[str] = (),
    shas: dict[str, str] | None = None,
    known: KnownOutput | None = None,
) -> bool:
    """Replace `out` with exactly `files` plus the `keep` files already in it, atomically.
    Returns False (and touches nothing) when `out` already holds exactly that.

    The new set is assembled in a staging folder and swapped in with one atomic exchange. The
    exchanged-out old set is kept as a *shadow* (`.promptc-cache/<out>.shadow`): the next build
    brings the shadow up to date instead of creating a whole new tree, because creating hundreds
    of folders and links costs far more than the one artifact a watch rebuild changes. `shas`
    (sha256 of every `keep` file) says which shadow files are already right. With `known` (the
    incremental state's record of both sets; the caller has established that something changed),
    only the paths the last build and this one changed are touched in the shadow, and neither
    tree is listed. A build that makes `out` (there is none yet) links the new set into a shadow set
    of its own as well, before the set is in place (`_twin`): the first rebuild then patches it
    instead of linking every kept file anew, which would give every one of them a new change time
    and have the next build hash them all (see `output_clock`).

    Only folders promptc made are modified or moved (see `claim_output`, which the build runs
    first, and `_Owned`); on a failure (a full disk) every byte this call wrote is deleted before
    the error is raised, so the space comes back and the previous build is as it was."""
    if os.path.lexists(out) and _real_dir(out) is None:
        raise NotADirectoryError(errno.ENOTDIR, "a file stands where the output folder should be", str(out))
    if known is None and _same_output(out, files, list(keep)):
        return False
    out.parent.mkdir(parents=True, exist_ok=True)
    cache = cache_folder(out)
    owned = _Owned(cache, out)
    shadow = _shadow_path(out)
    dirty = shadow.with_name(shadow.name + ".dirty")
    had_shadow = _usable_shadow(cache, out, owned)
    _usable_trash(cache)
    live = _real_dir(out) is not None
    reuse = shas is not None and live and had_shadow and not os.path.lexists(dirty)
    patch = reuse and known is not None and known.matches(out) and _identity_of(shadow) == known.shadow
    staging = shadow if reuse else out.with_name(f"{out.name}{STAGING_MARK}{os.getpid()}-{secrets.token_hex(3)}")
    try:
        if not reuse:
            if had_shadow:  # left half-updated by a build that died, or no longer needed: start afresh
                discard(shadow, out)
            _clear_flag(dirty)
            os.mkdir(staging)
            owned.add(staging)
        if live:
            owned.add(out)  # claimed: it holds a promptc build, which becomes the shadow
        owned.save()  # every folder that will move is on record before it moves
        if patch:
            assert known is not None
            _set_flag(dirty)
            _patch_shadow(staging, out, files, set(keep), known.diff | known.removed)
        elif reuse:
            _set_flag(dirty)
            _update_shadow(staging, out, files, keep, shas or {})
        else:
            _fill_staging(staging, out, files, keep)
        if live:
            _exchange(staging, out)  # staging now holds the old set, complete
            if staging != shadow:
                os.rename(staging, shadow)
            _clear_flag(dirty)
        else:
            _twin(staging, shadow, [*files, *keep], owned)
            os.rename(staging, out)
    except (OSError, Refused):
        # Give the space back now (a full disk is the usual reason), so the error is the only
        # trace: whatever holds the half-made set, and what this build sent to the trash.
        if _real_dir(out) is None or not os.path.samestat(os.lstat(staging), os.lstat(out)):
            _remove_tree(staging)
        if not live:
            _remove_tree(shadow)  # a first build's twin, if it was made, holds the new set's files too
        if staging == shadow:
            _clear_flag(dirty)
        empty_own_trash(out)
        raise
    owned.only(out, shadow)
    if known is None:
        _remember_listing(out, files, list(keep))
    try:
        owned.save()
    except (OSError, Refused):
        pass  # the build is in place; the next one finds the record stale and starts afresh
    return True


def _twin(staging: Path, shadow: Path, paths: list[str], owned: _Owned) -> None:
    """A shadow set that is the staged set, linked file by file (a first build's, before it is
    swapped in): none when the file system refuses links (the first rebuild then makes one)."""
    try:
        os.mkdir(shadow)
    except OSError:
        return
    try:
        owned.add(shadow)
        owned.save()
        made = {""}
        for rel in paths:
            folder = rel.rpartition("/")[0]
            if folder not in made:
                os.makedirs(os.path.join(shadow, folder), exist_ok=True)
                made.add(folder)
            os.link(os.path.join(staging, rel), os.path.join(shadow, rel))
    except OSError:
        _remove_tree(shadow)


def _identity_of(path: Path) -> str | None:
    info = _real_dir(path)
    return None if info is None else _identity(info)


def shadow_identity(out: Path) -> str | None:
    """The identity ("<device>:<inode>") of `out`'s shadow set, if there is one."""
    return _identity_of(_shadow_path(out))


def _patch_shadow(
    shadow: Path, out: Path, files: dict[str, bytes | Path], keep: set[str], differ: frozenset[str]
) -> None:
    """Make the shadow (the set before the last build) hold exactly the new set, touching only the
    paths that differ: where the last build's set differed from it (`differ`: written, added or
    removed then, or dropped now) and the files written now. Everywhere else the shadow's file is
    the live one (a hard link of it, or a copy of the same bytes)."""
    base, live = str(shadow), str(out)
    emptied: set[str] = set()
    for rel in sorted(differ | files.keys()):
        target = os.path.join(base, rel)
        data = files.get(rel)
        if data is None and rel not in keep:
            try:
                os.unlink(target)
                emptied.add(rel.rpartition("/")[0])
            except FileNotFoundError:
                pass
            continue
        temporary = f"{target}.promptc-new"
        try:
            _produce(temporary, rel, data, live)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            _produce(temporary, rel, data, live)
        os.replace(temporary, target)
    for folder in sorted(emptied - {""}, key=len, reverse=True):  # a deleted source's folders go too
        path = os.path.join(base, folder)
        while path != base:
            try:
                os.rmdir(path)
            except OSError:
                break
            path = os.path.dirname(path)


def _produce(temporary: str, rel: str, data: bytes | Path | None, live: str) -> None:
    if data is None:
        _place(os.path.join(live, rel), temporary)  # kept: the live file, linked
    elif isinstance(data, Path):
        os.rename(data, temporary)  # already written to the spool
    else:
        _write_bytes(data, temporary)


def _set_flag(flag: Path) -> None:
    os.close(os.open(flag, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644))


def _clear_flag(flag: Path) -> None:
    if _empty_file(flag):
        os.unlink(flag)


def _fill_staging(staging: Path, out: Path, files: dict[str, bytes | Path], keep: Sequence[str]) -> None:
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
            write_new_file(Path(ensure_folder(rel)), data)


def _file_sha(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def _write_bytes(data: bytes, path: str) -> None:
    write_new_file(Path(path), data)


def _update_shadow(
    shadow: Path, out: Path, files: dict[str, bytes | Path], keep: Sequence[str], shas: dict[str, str]
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

    def replace_with(rel: str, produce: Callable[[str], object]) -> None:
        target = os.path.join(base, rel)
        folder = os.path.dirname(target)
        if rel.rpartition("/")[0] not in existing_folders:
            os.makedirs(folder, exist_ok=True)
            existing_folders.add(rel.rpartition("/")[0])
        temporary = f"{target}.promptc-new"
        produce(temporary)
        os.replace(temporary, target)

    existing_folders = {rel.rpartition("/")[0] for rel in existing} | {""}
    links = [True]  # hard links work here (both trees on one device), until one is refused

    def link_or_copy(temporary: str, source: str) -> None:
        if not _place(source, temporary):
            links[0] = False

    for rel in keep:
        source, target = os.path.join(live, rel), os.path.join(base, rel)
        if rel in existing and shadow_inodes[rel] == live_inodes.get(rel):
            continue  # the very same file
        # A shadow file with the right bytes but an inode of its own (a full rebuild wrote both sets)
        # is replaced by a link of the live one while links work: one link now, instead of reading
        # and hashing the file on every later build. Without links, the bytes are compared instead.
        if rel in existing and not links[0] and _file_sha(target) == shas.get(rel):
            continue
        replace_with(rel, partial(link_or_copy, source=source))
    for rel, data in files.items():
        if isinstance(data, Path):
            replace_with(rel, partial(os.rename, data))  # already written to the spool
        else:
            replace_with(rel, partial(_write_bytes, data))
    for folder in sorted(emptied - {""}, key=len, reverse=True):  # a deleted source's folders go too
        path = os.path.join(base, folder)
        while path != base:
            try:
                os.rmdir(path)
            except OSError:
                break
            path = os.path.dirname(path)


def write_error(out: Path, exc: OSError) -> Diagnostic:
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
