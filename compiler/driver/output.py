"""Stage 5 — write: replace the output folder atomically, under a lock, or leave it as it was."""

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
from functools import cache
from pathlib import Path

from .. import codes
from ..diagnostics import Diagnostic, make
from ..language import CACHE_DIR

#: Beside the output folder: the lock, the incremental cache, the shadow set, the trash.
#: Staging folders sit beside the output folder as `<out>.promptc-tmp-*`.
STAGING_MARK = ".promptc-tmp-"


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


def recover(out: Path) -> None:
    """Undo what a killed build left behind: a parked old set (non-Linux two-rename swap) and
    staging folders."""
    parked = out.with_name(f"{out.name}{STAGING_MARK}old")
    if not out.exists() and parked.is_dir():
        os.rename(parked, out)
    for leftover in out.parent.glob(f"{out.name}{STAGING_MARK}*"):
        discard(leftover, out)
    cache = out.parent / CACHE_DIR
    # What builds that died left in the cache: their spool folders, and trash their background
    # thread never finished deleting. Deleted now, before this build needs the space.
    for spool in cache.glob(f"{out.name}.spool-*"):
        if not _alive(spool.name.rpartition("-")[2]):
            shutil.rmtree(spool, ignore_errors=True)
    trash = cache / "trash"
    if trash.is_dir():
        for entry in trash.iterdir():
            if entry.name.startswith(f"{out.name}-") and not _alive(entry.name[len(out.name) + 1 :].partition("-")[0]):
                shutil.rmtree(entry, ignore_errors=True)


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


def discard(folder: Path, out: Path) -> None:
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


def stale_paths(expected: dict[str, bytes | Path], out: Path) -> list[str]:
    actual = current_files(out) or {}
    stale = [p for p, data in expected.items() if actual.get(p) != _content(data)]
    stale += [p for p in actual if p not in expected]
    return sorted(stale)


@contextmanager
def output_lock(out: Path, timeout: float = 120.0) -> Iterator[None]:
    """One build at a time per output folder; a second one waits for the first, then fails (E907).

    An OS lock on `.promptc-cache/<out>.lock` that the kernel releases when the process dies, so a
    killed build never leaves a stale lock behind: `flock` where the platform has `fcntl` (taken
    directly: importing the `filelock` package would cost every fresh `promptc build` 60 ms), and
    `filelock` (`LockFileEx` on Windows) where it has not."""
    lock_dir = out.parent / CACHE_DIR
    lock_dir.mkdir(parents=True, exist_ok=True)
    _ignore_itself(lock_dir)
    lock_path = lock_dir / f"{out.name}.lock"
    try:
        import fcntl
    except ImportError:
        fcntl = None
    if fcntl is None:
        from filelock import FileLock, Timeout

        try:
            with FileLock(lock_path, timeout=timeout, poll_interval=0.02):
                yield
        except Timeout:
            raise TimeoutError(f"another promptc build still holds {lock_path} after {timeout:g}s") from None
        return
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
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
    if not marker.exists():
        try:
            marker.write_text("# promptc's local build cache; safe to delete\n*\n", encoding="utf-8")
        except OSError:
            pass


def _content(data: bytes | Path) -> bytes:
    return data.read_bytes() if isinstance(data, Path) else data


def _same_output(out: Path, files: dict[str, bytes | Path], keep: list[str]) -> bool:
    if not out.is_dir():
        return False
    if list_output(out) != sorted([*files, *keep]):
        return False
    for rel, data in files.items():
        try:
            if (out / rel).read_bytes() != _content(data):
                return False
        except OSError:
            return False
    return True


def _write_file(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
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
            discard(shadow, out)
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
    except OSError:
        # Reclaim the space now (a full disk is the usual reason), so the error is the only trace.
        if staging != shadow:
            shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if staging != shadow and staging.exists():
            discard(staging, out)
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
        replace_with(rel, lambda temporary, source=source: link_or_copy(temporary, source))
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
