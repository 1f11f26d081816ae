"""The partials shipped with promptc (`/// include: std/env`), and the names they go by.

Standard library only. The files are package data of this folder; a compile reads them through the
build's partial loader (`promptc.compile.pipeline.PartialLoader`), never from the source tree.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from ..facts.language import SOURCE_SUFFIX, STD_PREFIX

#: how diagnostics name the built-in partials' files: `<std>/env.prompt`
STD_DISPLAY = "<std>"


@cache
def std_partials() -> tuple[str, ...]:
    """The built-in partials, as `std/NAME`."""
    folder = resources.files(__name__)
    return tuple(
        sorted(
            f"{STD_PREFIX}{p.name.removesuffix(SOURCE_SUFFIX)}"
            for p in folder.iterdir()
            if p.name.endswith(SOURCE_SUFFIX)
        )
    )


def std_display(key: str) -> str:
    """`std/env` → `<std>/env.prompt`, as diagnostics name it."""
    return f"{STD_DISPLAY}/{key[len(STD_PREFIX) :]}{SOURCE_SUFFIX}"


def std_bytes(key: str) -> bytes:
    """The bytes of the built-in partial `std/NAME`."""
    return resources.files(__name__).joinpath(f"{key[len(STD_PREFIX) :]}{SOURCE_SUFFIX}").read_bytes()
