"""`@dataclass`, without compiling its generated methods in every process.

CPython's `dataclasses` writes each method it generates (`__init__`, `__repr__`, `__eq__`,
`__hash__`, a frozen class's `__setattr__` and `__delattr__`) as source text and compiles that text
whenever the class is defined: about 0.4 ms for a frozen class with slots, so the seventy record
types a `promptc build` defines cost a third of its start-up. promptc's modules import `dataclass`
from here: it makes the very same class — it calls `dataclasses.dataclass` with the same
arguments, so `fields`, `replace`, `asdict` and type checkers (PEP 681's `dataclass_transform`) see
a dataclass — but keeps the code objects compiled
from that text beside the module's bytecode (`__pycache__/<module>.<cache tag>.records`, the way
CPython keeps `.pyc` files there), and takes them from there in the next process.

The cache is keyed by the exact source text the dataclasses module generated, so a changed class,
another Python or another dataclasses module can only miss it, never get another class's code; a
text is compiled as the dataclasses module compiles it (no inherited `__future__` flags). The file
is written (atomically, at exit, with what this process used) only where bytecode would be:
not under `PYTHONDONTWRITEBYTECODE`, not in a folder that cannot be written. It is an optimisation
only: a missing, unreadable or foreign file means the texts are compiled, as `dataclass` would.
"""

from __future__ import annotations

import atexit
import builtins
import dataclasses
import marshal
import os
import sys
import threading
from collections.abc import Callable
from types import CodeType
from typing import Any, TypeVar, dataclass_transform, overload

__all__ = ["dataclass", "compiled_texts", "save"]

T = TypeVar("T")

#: what the cache files hold: this marker, then {generated source text: code object}
_FORMAT = "promptc.records/1"
#: module file → its cache (texts used or compiled in this process) and whether it must be saved
_CACHES: dict[str, _Cache] = {}
_LOCK = threading.RLock()
#: how many generated texts this process compiled (the others came from a cache file)
_COUNTS = {"compiled": 0}


class _Cache:
    __slots__ = ("path", "stored", "used", "dirty")

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.stored: dict[str, CodeType] = _read(path) if path is not None else {}
        self.used: dict[str, CodeType] = {}
        self.dirty = False

    def code(self, text: str) -> CodeType:
        code = self.used.get(text)
        if code is None:
            code = self.stored.get(text)
            if code is None:
                # as `dataclasses` itself compiles it: no flag of this module's `__future__` imports
                code = compile(text, "<string>", "exec", dont_inherit=True)
                _COUNTS["compiled"] += 1
                self.dirty = True
            self.used[text] = code
        return code


def _read(path: str) -> dict[str, CodeType]:
    try:
        with open(path, "rb") as handle:
            found = marshal.loads(handle.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not (isinstance(found, tuple) and len(found) == 2 and found[0] == _FORMAT and isinstance(found[1], dict)):
        return {}
    return {text: code for text, code in found[1].items() if isinstance(text, str) and isinstance(code, CodeType)}


def _cache_path(module: str) -> str | None:
    """`__pycache__/<module>.<cache tag>.records` beside the module's file, as for its bytecode."""
    file = getattr(sys.modules.get(module), "__file__", None)
    tag = sys.implementation.cache_tag
    if not file or tag is None:
        return None
    folder, name = os.path.split(file)
    stem = name.rpartition(".")[0] or name
    return os.path.join(folder, "__pycache__", f"{stem}.{tag}.records")


@atexit.register
def save() -> None:
    """Write the caches this process added to (at exit, or before a hard exit), each holding the
    texts it used; a second call writes nothing new."""
    if sys.dont_write_bytecode:
        return
    for cache in list(_CACHES.values()):
        if cache.path is None or not (cache.dirty or cache.used.keys() != cache.stored.keys()):
            continue
        temporary = f"{cache.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(cache.path), exist_ok=True)
            with open(temporary, "wb") as handle:
                handle.write(marshal.dumps((_FORMAT, cache.used)))
            os.replace(temporary, cache.path)
            cache.stored, cache.dirty = dict(cache.used), False
        except (OSError, ValueError):
            try:
                os.remove(temporary)
            except OSError:
                pass


def _decorate(cls: type[T], options: dict[str, Any]) -> type[T]:
    module = cls.__module__
    with _LOCK:
        cache = _CACHES.get(module)
        if cache is None:
            cache = _CACHES[module] = _Cache(_cache_path(module))

        def cached_exec(source: Any, globals: Any = None, locals: Any = None) -> None:
            builtins.exec(cache.code(source) if isinstance(source, str) else source, globals, locals)

        # `dataclasses` calls `exec` by its global name: the name is shadowed in that module for
        # the duration of this one call (under the lock), and the builtin is what everyone else sees
        setattr(dataclasses, "exec", cached_exec)  # noqa: B010 (mypy: the module declares no `exec`)
        try:
            made: type[T] = dataclasses.dataclass(cls, **options)
        finally:
            delattr(dataclasses, "exec")
    return made


@overload
def dataclass(cls: type[T], /) -> type[T]: ...


@overload
def dataclass(
    *,
    init: bool = True,
    repr: bool = True,
    eq: bool = True,
    order: bool = False,
    unsafe_hash: bool = False,
    frozen: bool = False,
    match_args: bool = True,
    kw_only: bool = False,
    slots: bool = False,
    weakref_slot: bool = False,
) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(cls: Any = None, /, **options: Any) -> Any:
    """`dataclasses.dataclass(cls, **options)`, its generated code taken from the module's cache."""
    if cls is None:
        return lambda inner: _decorate(inner, options)
    return _decorate(cls, options)


def compiled_texts() -> int:
    """How many generated method texts this process compiled (the rest came from a cache file)."""
    return _COUNTS["compiled"]
