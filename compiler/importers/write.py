"""Atomic writes for `promptc import`: a temporary file beside the target, then a rename, so a
reader (or a crash) sees the old bytes or the new ones, never part of either."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str) -> bool:
    """Write `text` to `path` unless it already holds exactly that; True when it wrote."""
    data = text.encode("utf-8")
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.chmod(tmp, 0o644 & ~_umask())
        except OSError:  # pragma: no cover - a file system without modes
            pass
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
