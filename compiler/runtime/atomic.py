"""Writing and reading files safely: the one way every promptc command replaces a file.

`write_file(path, data)` never truncates a file in place. The new bytes go to a temporary file in
the target's own folder (unnamed where Linux offers `O_TMPFILE`, so a process killed while writing
leaves nothing behind; otherwise `.<name>.<pid>.<random>.promptc-tmp`, created exclusively and never
through a link), which is flushed to disk (`fsync`) and then renamed over the target in one step:
a reader, a crash or a full disk sees the old file or the new one, never a mix or a fragment. The
new file keeps the old one's permission bits. On any failure the temporary file is removed and the
target is left exactly as it was.

- **Compare-and-swap** (`expect=`): with the bytes the caller read, the file is replaced only when
  it still holds exactly those bytes just before the rename; otherwise `ChangedOnDisk` is raised and
  nothing is written (a save that lands while `promptc fmt` runs is kept, not overwritten). With
  `expect=ABSENT` the file is created only when no file of that name exists (an atomic link, no
  window at all). The byte comparison and the rename are two system calls; an edit landing in the
  microseconds between them is the one window POSIX leaves, and it is as small as the OS allows.
- **Symlinks**: by default a symlink at `path` stays a symlink and its target is replaced (the
  temporary file sits beside the target), as an editor saving through a link does; a dangling
  link is refused. `symlinks="refuse"` refuses any link (promptc's own cache files).

`read_file(path, limit=…)` reads a regular file only (never a pipe or a device, so it cannot hang),
optionally without following a symlink, and refuses one larger than `limit` before reading it.
Standard library only.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path
from typing import Final, Literal

__all__ = ["ABSENT", "ANY", "ChangedOnDisk", "TooLarge", "read_file", "reason", "write_file", "write_text"]


class _Sentinel:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: `expect=ANY`: replace whatever the file holds (the default)
ANY: Final = _Sentinel("ANY")
#: `expect=ABSENT`: create the file only when nothing of that name exists
ABSENT: Final = _Sentinel("ABSENT")

#: what temporary files are called when the platform cannot make unnamed ones
TEMP_SUFFIX = ".promptc-tmp"


class ChangedOnDisk(OSError):
    """The file no longer holds the bytes the caller read (or exists when it should not): not written."""

    def __init__(self, path: str, created: bool = False) -> None:
        reason = "it exists already" if created else "it changed on disk since it was read"
        super().__init__(errno.EAGAIN, reason, path)


class TooLarge(OSError):
    """`read_file` with a `limit`: the file is larger; it was not read."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        self.size, self.limit = size, limit
        super().__init__(errno.EFBIG, f"file is {size:,} bytes, more than the {limit:,} read", path)


def read_file(path: str | os.PathLike[str], *, limit: int | None = None, follow: bool = True) -> bytes:
    """The bytes of a regular file. A pipe, socket, device or folder is an `OSError` (never opened
    for a blocking read); with `follow=False` a symlink is one too (ELOOP); with `limit`, a file
    larger than `limit` bytes is `TooLarge`, refused before a byte is read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
        if not hasattr(os, "O_NOFOLLOW") and os.path.islink(path):  # pragma: no cover - Windows
            raise OSError(errno.ELOOP, "is a symbolic link", os.fspath(path))
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        if limit is not None and info.st_size > limit:
            raise TooLarge(os.fspath(path), info.st_size, limit)
        chunks = []
        remaining = limit + 1 if limit is not None else -1
        while True:
            chunk = os.read(fd, 1 << 20 if remaining < 0 else min(1 << 20, remaining))
            if not chunk:
                break
            chunks.append(chunk)
            if remaining >= 0:
                remaining -= len(chunk)
                if remaining <= 0 and limit is not None:  # it grew past the limit while being read
                    raise TooLarge(os.fspath(path), limit + 1, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_text(
    path: str | os.PathLike[str],
    text: str,
    *,
    expect: bytes | _Sentinel = ANY,
    symlinks: Literal["follow", "refuse"] = "follow",
    mode: int | None = None,
    durable: bool = True,
) -> Path:
    """`write_file` with the text encoded as UTF-8 (newlines as given)."""
    return write_file(path, text.encode("utf-8"), expect=expect, symlinks=symlinks, mode=mode, durable=durable)


def write_file(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    expect: bytes | _Sentinel = ANY,
    symlinks: Literal["follow", "refuse"] = "follow",
    mode: int | None = None,
    durable: bool = True,
) -> Path:
    """Replace (or create) the file at `path` with `data`, atomically; returns the path written
    (the link's target when `path` is a symlink). See the module docstring for the rules.

    `expect`: `ANY` (replace whatever is there), `ABSENT` (create only), or the bytes the file
    must still hold. `mode`: permission bits of a new file (default: the old file's, or 0o666
    less the umask). `durable=False` skips the fsyncs (for scratch files a crash may lose)."""
    target = _resolve(Path(path), symlinks)
    folder = target.parent
    try:
        old = os.stat(target)
    except FileNotFoundError:
        old = None
    if old is not None and stat.S_ISDIR(old.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a folder", str(target))
    if old is not None and not stat.S_ISREG(old.st_mode):
        raise OSError(errno.EINVAL, "not a regular file", str(target))
    if expect is ABSENT and old is not None:
        raise ChangedOnDisk(str(target), created=True)
    if isinstance(expect, bytes) and old is None:
        raise ChangedOnDisk(str(target))
    bits = mode if mode is not None else (stat.S_IMODE(old.st_mode) if old is not None else None)
    fd, temporary = _open_temporary(folder, target.name, bits)
    if temporary is None:
        try:
            return _write(fd, None, folder, target, data, expect, bits, durable)
        except _NoUnnamed:  # the platform makes unnamed files but cannot link them: use a name
            fd, temporary = _open_temporary(folder, target.name, bits)
    return _write(fd, temporary, folder, target, data, expect, bits, durable)


class _NoUnnamed(Exception):
    pass


#: whether O_TMPFILE files can be linked into place here (None: not tried yet)
_UNNAMED: list[bool | None] = [None]


def _write(
    fd: int,
    temporary: str | None,
    folder: Path,
    target: Path,
    data: bytes,
    expect: bytes | _Sentinel,
    bits: int | None,
    durable: bool,
) -> Path:
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if bits is not None and hasattr(os, "fchmod"):
                os.fchmod(fd, bits)
            if durable:
                os.fsync(fd)
            if temporary is None:  # unnamed: give it a name only now, when it is complete
                try:
                    temporary = _name_unnamed(fd, folder, target, expect)
                except ChangedOnDisk:
                    raise
                except OSError as exc:
                    if _UNNAMED[0] is None and exc.errno in _NO_LINK:
                        _UNNAMED[0] = False
                        raise _NoUnnamed from None
                    raise
                _UNNAMED[0] = True
                if temporary is None:  # linked straight to the target (expect=ABSENT)
                    _sync_folder(folder, durable)
                    return target
        finally:
            os.close(fd)
        if expect is ABSENT:
            try:
                os.link(temporary, target)  # fails when anything of that name appeared meanwhile
            except FileExistsError:
                raise ChangedOnDisk(str(target), created=True) from None
            os.unlink(temporary)
            temporary = None
        else:
            if isinstance(expect, bytes) and _current(target) != expect:
                raise ChangedOnDisk(str(target))
            os.replace(temporary, target)
            temporary = None
        _sync_folder(folder, durable)
        return target
    except BaseException:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass
        raise


def _resolve(path: Path, symlinks: str) -> Path:
    if not os.path.islink(path):
        return path
    if symlinks == "refuse":
        raise OSError(errno.ELOOP, "is a symbolic link; promptc does not write through it", str(path))
    target = Path(os.path.realpath(path))
    if not target.exists():
        raise FileNotFoundError(
            errno.ENOENT, f"is a symbolic link to `{os.readlink(path)}`, which does not exist", str(path)
        )
    return target


def _open_temporary(folder: Path, name: str, bits: int | None) -> tuple[int, str | None]:
    """An unnamed file in `folder` where the platform can (O_TMPFILE), else an exclusive new name."""
    # a new file gets 0o666 less the umask, as any editor's would; a replaced one its old bits
    # (set by fchmod once written; private until then)
    create = 0o666 if bits is None else 0o600
    unnamed = getattr(os, "O_TMPFILE", 0)
    if unnamed and _UNNAMED[0] is not False and os.path.exists("/proc/self/fd"):
        try:
            return os.open(folder, unnamed | os.O_WRONLY, create), None
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT, errno.EACCES):
                raise
            if exc.errno == errno.ENOENT and not folder.is_dir():
                raise
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        temporary = os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
        try:
            fd = os.open(temporary, flags, create)
        except FileExistsError:
            continue
        return fd, temporary
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(folder))  # pragma: no cover


#: what linking an unnamed file fails with where the kernel or a sandbox does not allow it
_NO_LINK = frozenset({errno.EXDEV, errno.ENOENT, errno.EPERM, errno.EACCES, errno.EINVAL, errno.EOPNOTSUPP})


def _name_unnamed(fd: int, folder: Path, target: Path, expect: bytes | _Sentinel) -> str | None:
    """Link a complete O_TMPFILE file into the folder: straight to the target for `ABSENT`, else to
    a temporary name the caller renames over the target."""
    source = f"/proc/self/fd/{fd}"
    if expect is ABSENT:
        try:
            os.link(source, target, follow_symlinks=True)
        except FileExistsError:
            raise ChangedOnDisk(str(target), created=True) from None
        return None
    for _ in range(100):
        temporary = os.path.join(folder, f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
        try:
            os.link(source, temporary, follow_symlinks=True)
        except FileExistsError:
            continue
        return temporary
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(folder))  # pragma: no cover


def _current(target: Path) -> bytes | None:
    try:
        with open(target, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _sync_folder(folder: Path, durable: bool) -> None:
    """Make the rename itself durable (best effort: not every platform opens folders)."""
    if not durable or not hasattr(os, "O_DIRECTORY"):
        return
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def reason(exc: OSError) -> str:
    """Why a write failed, in words for a diagnostic (not errno's terse text)."""
    if isinstance(exc, ChangedOnDisk):
        return exc.strerror or "it changed on disk since it was read"
    if isinstance(exc, IsADirectoryError):
        return "it is a folder"
    if exc.errno == errno.ENOTDIR or isinstance(exc, FileExistsError):  # (mkdir of a folder a file holds)
        return "a part of the path is a file, not a folder"
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    if exc.errno == errno.EDQUOT:
        return "the disk quota is exhausted"
    return exc.strerror or str(exc)
