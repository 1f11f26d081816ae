"""`promptc import`'s writes, through promptc's one atomic writer (`promptc.runtime.atomic`): a temporary
file beside the target, then a rename, so a reader or a crash sees the old bytes or the new ones.
Compare-and-swap: the file is replaced only if it still holds what the import read when it decided
the file was its own (an edit that lands in between is kept), and a link is never written through."""

from __future__ import annotations

from pathlib import Path

from ...runtime.atomic import ABSENT, write_file


def write_atomic(path: Path, text: str, read: bytes | None = None) -> bool:
    """Write `text` to `path` unless it already holds exactly that; True when it wrote. `read`: the
    bytes the caller saw at `path` (None: it saw no file there)."""
    data = text.encode("utf-8")
    if read == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(path, data, expect=ABSENT if read is None else read, symlinks="refuse")
    return True
