"""What a pass sees of its compilation: the config, the source tree, the partials, diagnostics.

The partial loader is handed in by whoever starts the compile (`promptc.compile.pipeline`): the context
never makes one, so nothing here imports the front end or a pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Protocol

from ..facts.codes import Code
from ..facts.config import Config
from ..facts.diagnostics import Diagnostic, Fix, SourceText, Span, make
from ..facts.language import SOURCE_SUFFIX
from ..facts.records import dataclass

if TYPE_CHECKING:
    from ..syntax.nodes import Header, Item


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


class LoadedPartial(Protocol):
    """A partial as the partial's stages leave it (`promptc.compile.pipeline.Partial`)."""

    @property
    def key(self) -> str: ...
    @property
    def source(self) -> SourceText | None: ...
    @property
    def items(self) -> tuple[Item, ...]: ...
    @property
    def header(self) -> Header: ...
    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]: ...


class Partials(Protocol):
    """What the include and resources passes ask of the build's partial loader
    (`promptc.compile.pipeline.PartialLoader`, injected by whoever starts the compile)."""

    #: the include pass keeps each partial's expansion here (includes spliced in), by key
    expanded: dict[str, object]
    #: the resources pass keeps each checked tool or schema file here, by kind and path
    resources: dict[object, object]

    def exists(self, key: str) -> bool: ...
    def load(self, key: str) -> LoadedPartial: ...
    def read_json(self, key: str) -> tuple[SourceText | None, object, tuple[Diagnostic, ...]]: ...


class Context:
    """Per-file compilation context. Passes read config and append diagnostics; nothing else."""

    __slots__ = ("config", "tree", "source", "diagnostics", "partials")

    def __init__(
        self,
        config: Config,
        source: SourceText,
        tree: SourceTree,
        partials: Partials,
        diagnostics: list[Diagnostic] | None = None,
    ) -> None:
        self.config = config
        self.tree = tree
        self.source = source
        #: what the passes report; the compilation's own list when it hands one in
        self.diagnostics: list[Diagnostic] = [] if diagnostics is None else diagnostics
        #: loads partials once per build; the include pass splices what it returns
        self.partials = partials

    def report(
        self,
        code: Code,
        message: str,
        span: Span | None = None,
        hint: str | None = None,
        fixes: Iterable[Fix | None] = (),
    ) -> None:
        """Report a diagnostic of this file; `fixes` are its suggestions as edits (`diagnostics.Fix`)."""
        self.diagnostics.append(make(code, message, span, hint, source=self.source, fixes=fixes))

    def source_of(self, span: Span | None) -> SourceText:
        """The file a span of this compilation points into (a partial's, for spliced text)."""
        return span.src if span is not None and span.src is not None else self.source

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics.extend(diagnostics)

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)
