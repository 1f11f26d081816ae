"""promptc's folder in the user's cache folder, shared by the caches that outlive a process (the
analysed grammar, the parsed o200k_base ranks). Standard library and platformdirs only: cheap to
import (platformdirs is loaded where the standard's own rule does not say the folder)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ..facts.lazy import lazy_import

if TYPE_CHECKING:
    import platformdirs
else:
    platformdirs = lazy_import("platformdirs")


def cache_folder() -> str | None:
    """promptc's folder in the user's cache folder (platformdirs knows it on Linux, macOS and
    Windows; `XDG_CACHE_HOME` wins where set), created if needed, or None when it is unusable."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        base = os.path.join(xdg, "promptc")
    elif sys.platform.startswith("linux"):  # the XDG rule, as platformdirs applies it there
        base = os.path.join(os.path.expanduser("~"), ".cache", "promptc")
    else:
        base = platformdirs.user_cache_dir("promptc", appauthor=False)
    # Lark unpickles the cache file: only a folder of the user's own may hold it. When that folder
    # is unusable there is no cache (a shared temporary folder would let another user run code).
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
    except OSError:
        return None
    if not os.access(base, os.W_OK):
        return None
    return base
