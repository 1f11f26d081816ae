"""The state a compilation carries through the passes: config, the source tree, diagnostics."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from .codes import Code
from .config import Config
from .diagnostics import Diagnostic, SourceText, Span, make


class LazyFiles(Mapping[str, bytes]):
    """Source bytes by path; files whose stat matches the last build are read only if asked for.

    An incremental build after a one-file edit then reads one file, not the whole tree, while
    partials stay available to any prompt that includes them."""

    def __init__(self, loaded: dict[str, bytes], deferred: Mapping[str, str] | None = None) -> None:
        self._data = loaded
        self._paths = dict(deferred or {})
        self._order = sorted({*loaded, *self._paths})
        #: paths that could not be read when asked for (they vanished since the listing)
        self.failed: list[str] = []

    def __getitem__(self, rel: str) -> bytes:
        data = self._data.get(rel)
        if data is not None:
            return data
        path = self._paths[rel]
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            self.failed.append(rel)
            data = b""
        self._data[rel] = data
        return data

    def __contains__(self, rel: object) -> bool:
        return rel in self._data or rel in self._paths

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)


@dataclass(frozen=True, slots=True)
class SourceTree:
    """Every source the build may read, already in memory, keyed by `/`-separated path under the
    source folder. Passes look partials up here; only the build driver touches the disk."""

    files: Mapping[str, bytes] = field(default_factory=dict)
    #: paths that are symlinks resolving outside the source folder (never read)
    outside: Mapping[str, str] = field(default_factory=dict)
    #: how the source folder is shown in diagnostics (as the user named it: "prompts_src")
    root_display: str = ""
    #: sha256 of every file, and its stat as [size, mtime_ns, inode] (filled by the build driver)
    shas: Mapping[str, str] = field(default_factory=dict)
    stats: Mapping[str, list[int]] = field(default_factory=dict)

    def display(self, rel: str) -> str:
        return f"{self.root_display.rstrip('/')}/{rel}" if self.root_display else rel

    @staticmethod
    def rel_of(name: str) -> str:
        return f"{name}.prompt"


class Context:
    """Per-file compilation context. Passes read config and append diagnostics; nothing else."""

    __slots__ = ("config", "tree", "source", "diagnostics", "partials")

    def __init__(
        self,
        config: Config,
        source: SourceText,
        tree: SourceTree | None = None,
        partials: dict | None = None,
    ) -> None:
        self.config = config
        self.tree = tree or SourceTree()
        self.source = source
        self.diagnostics: list[Diagnostic] = []
        #: parsed partials, shared across the files of one build
        self.partials = partials if partials is not None else {}

    def report(self, code: Code, message: str, span: Span | None = None, hint: str | None = None) -> None:
        self.diagnostics.append(make(code, message, span, hint, source=self.source))

    def extend(self, diagnostics) -> None:
        self.diagnostics.extend(diagnostics)

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)
