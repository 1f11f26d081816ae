"""The partials shipped with promptc (`/// include: std/env`), and the names they go by.

Standard library only. The files are package data of this folder; a compile reads them through the
build's partial loader (`promptc.compile.pipeline.PartialLoader`), never from the source tree.
"""

from __future__ import annotations

import os
from functools import cache
from typing import TYPE_CHECKING

from ..facts.language import SOURCE_SUFFIX, STD_PREFIX
from ..facts.lazy import lazy_import

if TYPE_CHECKING:
    from importlib import resources
else:  # only for a package imported from a zip (its wheel): a folder is read as files
    resources = lazy_import("importlib.resources")

#: how diagnostics name the built-in partials' files: `<std>/env.prompt`
STD_DISPLAY = "<std>"


#: this folder: the partials are its package data, read as files beside the code
_FOLDER = os.path.dirname(os.path.abspath(__file__))


@cache
def std_partials() -> tuple[str, ...]:
    """The built-in partials, as `std/NAME`."""
    if os.path.isdir(_FOLDER):
        names = os.listdir(_FOLDER)
    else:
        names = [entry.name for entry in resources.files(__name__).iterdir()]
    return tuple(
        sorted(f"{STD_PREFIX}{name.removesuffix(SOURCE_SUFFIX)}" for name in names if name.endswith(SOURCE_SUFFIX))
    )


def std_display(key: str) -> str:
    """`std/env` → `<std>/env.prompt`, as diagnostics name it."""
    return f"{STD_DISPLAY}/{key[len(STD_PREFIX) :]}{SOURCE_SUFFIX}"


def std_bytes(key: str) -> bytes:
    """The bytes of the built-in partial `std/NAME`."""
    name = f"{key[len(STD_PREFIX) :]}{SOURCE_SUFFIX}"
    if not os.path.isdir(_FOLDER):
        return resources.files(__name__).joinpath(name).read_bytes()
    with open(os.path.join(_FOLDER, name), "rb") as handle:
        return handle.read()
