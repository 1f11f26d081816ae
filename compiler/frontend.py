"""The front end: bytes → normalised text → items, for prompts and for the partials they include.

`read_source` decodes and parses one file. `PartialLoader` does that for partials, once per build
and process: a partial shared by a hundred prompts is decoded, parsed, stripped of comments and
its directives collected once, then spliced by the include pass wherever it is included. The
loader is the only part of a compilation that reads a file (the build driver read the source tree
into memory; the built-in `std/` partials ship inside the package), so every pass stays pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from . import codes
from .config import Config
from .context import Context, SourceTree
from .diagnostics import Diagnostic, DiagnosticSink, SourceText, file_span, make
from .language import SOURCE_SUFFIX, STD_PREFIX
from .nodes import Document, Header, Item
from .source import decode

#: how diagnostics name the built-in partials' files: `<std>/env.prompt`
STD_DISPLAY = "<std>"


def vanished(display: str, exc: OSError) -> Diagnostic:
    """E106 for a source that was listed but could not be read when a compile needed it."""
    return make(
        codes.UNREADABLE,
        f"cannot read file: {exc.strerror or exc} (it vanished or changed while the build ran)",
        file_span(),
        "restore the file, or build again",
        path=display,
    )


def read_source(display: str, data: bytes) -> tuple[SourceText | None, tuple[Item, ...], list[Diagnostic]]:
    """Decode (§1) and parse one file. The items are empty when the file cannot be decoded."""
    src, diagnostics = decode(display, data)
    if src is None:
        return None, (), diagnostics
    from .parse import parse  # the parser is heavy: only when something is compiled

    sink = DiagnosticSink(src)
    sink.extend(diagnostics)
    items = parse(src, sink)
    return src, items, sink.items


@cache
def std_partials() -> tuple[str, ...]:
    """The built-in partials, as `std/NAME`."""
    folder = resources.files("promptc.std")
    return tuple(
        sorted(
            f"{STD_PREFIX}{p.name.removesuffix(SOURCE_SUFFIX)}"
            for p in folder.iterdir()
            if p.name.endswith(SOURCE_SUFFIX)
        )
    )


def _std_bytes(key: str) -> bytes:
    return resources.files("promptc.std").joinpath(f"{key[len(STD_PREFIX) :]}{SOURCE_SUFFIX}").read_bytes()


@dataclass(frozen=True, slots=True)
class Partial:
    """A partial after the front end and the first two passes: its items (comments gone, file-scoped
    directives collected into `header`, section and include markers kept) and what they reported."""

    key: str  # source-relative path, or `std/NAME`
    source: SourceText | None
    items: tuple[Item, ...]
    header: Header
    diagnostics: tuple[Diagnostic, ...]


class PartialLoader:
    """Loads partials by key, once each; shared by every prompt one process compiles in a build."""

    def __init__(self, config: Config, tree: SourceTree) -> None:
        self.config = config
        self.tree = tree
        self._loaded: dict[str, Partial] = {}
        #: the include pass keeps each partial's expansion here (includes spliced in), by key
        self.expanded: dict[str, object] = {}
        #: the resources pass keeps each checked tool or schema file here, by source-relative path
        self.resources: dict[object, object] = {}

    def exists(self, key: str) -> bool:
        return key in std_partials() if key.startswith(STD_PREFIX) else key in self.tree.files

    def load(self, key: str) -> Partial:
        partial = self._loaded.get(key)
        if partial is None:
            partial = self._loaded[key] = self._read(key)
        return partial

    def read_json(self, key: str) -> tuple[SourceText | None, object, tuple[Diagnostic, ...]]:
        """A JSON file of the tree (a tool definition or schema), decoded and parsed; not cached
        here (the resources pass caches what it makes of the file)."""
        from .jsonfile import read_json

        display = self.tree.display(key)
        try:
            data = self.tree.files[key]
        except OSError as exc:
            return None, None, (vanished(display, exc),)
        src, value, diagnostics = read_json(display, data)
        return src, value, tuple(diagnostics)

    def _read(self, key: str) -> Partial:
        from .passes.comments import strip_comments
        from .passes.directives import collect

        if key.startswith(STD_PREFIX):
            data, display = _std_bytes(key), f"{STD_DISPLAY}/{key[len(STD_PREFIX) :]}{SOURCE_SUFFIX}"
        else:
            display = self.tree.display(key)
            try:
                data = self.tree.files[key]
            except OSError as exc:  # listed, then gone before it was read
                return Partial(key, None, (), Header(), (vanished(display, exc),))
        src, items, diagnostics = read_source(display, data)
        if src is None:
            return Partial(key, None, (), Header(), tuple(diagnostics))
        ctx = Context(self.config, src, self.tree)
        doc = strip_comments(Document(src, key, items), ctx)
        kept, header = collect(doc.items, ctx, partial=True)
        return Partial(key, src, kept, header, (*diagnostics, *ctx.diagnostics))
