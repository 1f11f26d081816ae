"""promptc's folder in the user's cache folder, shared by the caches that outlive a process (the
analysed grammar, the parsed o200k_base ranks). Standard library and platformdirs only: cheap to
import."""

from __future__ import annotations

import os

import platformdirs


def cache_folder() -> str | None:
    """promptc's folder in the user's cache folder (platformdirs knows it on Linux, macOS and
    Windows; `XDG_CACHE_HOME` wins where set), created if needed, or None when it is unusable."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = os.path.join(xdg, "promptc") if xdg else platformdirs.user_cache_dir("promptc", appauthor=False)
    # Lark unpickles the cache file: only a folder of the user's own may hold it. When that folder
    # is unusable there is no cache (a shared temporary folder would let another user run code).
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
    except OSError:
        return None
    if not os.access(base, os.W_OK):
        return None
    return base
