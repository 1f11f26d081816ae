"""The state a compilation carries through the passes: config, the source tree, diagnostics."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .codes import Code
from .config import Config
from .diagnostics import Diagnostic, SourceText, Span, make
from .language import SOURCE_SUFFIX

if TYPE_CHECKING:
    from .frontend import PartialLoader


@dataclass(frozen=True, slots=True)
class SourceTree:
    """Every source the build may read, already in memory, keyed by `/`-separated path under the
    source folder. Passes look partials up here; only the build driver touches the disk."""

    files: Mapping[str, bytes] = field(default_factory=dict)
    #: paths that are symlinks resolving outside the source folder (never read); a folder's path
    #: ends with `/`
    outside: Mapping[str, str] = field(default_factory=dict)
    #: how the source folder is shown in diagnostics (as the user named it: "prompts_src")
    root_display: str = ""
    #: sha256 of every file, and its stat as [size, mtime_ns, inode, ctime_ns] (filled by the build driver)
    shas: Mapping[str, str] = field(default_factory=dict)
    stats: Mapping[str, list[int]] = field(default_factory=dict)

    def display(self, rel: str) -> str:
        return f"{self.root_display.rstrip('/')}/{rel}" if self.root_display else rel

    @staticmethod
    def rel_of(name: str) -> str:
        return f"{name}{SOURCE_SUFFIX}"


class Context:
    """Per-file compilation context. Passes read config and append diagnostics; nothing else."""

    __slots__ = ("config", "tree", "source", "diagnostics", "partials")

    def __init__(
        self,
        config: Config,
        source: SourceText,
        tree: SourceTree | None = None,
        partials: PartialLoader | None = None,
    ) -> None:
        self.config = config
        self.tree = tree or SourceTree()
        self.source = source
        self.diagnostics: list[Diagnostic] = []
        if partials is None:
            from .frontend import PartialLoader

            partials = PartialLoader(config, self.tree)
        #: loads partials once per build; the include pass splices what it returns
        self.partials = partials

    def report(self, code: Code, message: str, span: Span | None = None, hint: str | None = None) -> None:
        self.diagnostics.append(make(code, message, span, hint, source=self.source))

    def extend(self, diagnostics) -> None:
        self.diagnostics.extend(diagnostics)

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)
