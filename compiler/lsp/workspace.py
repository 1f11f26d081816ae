"""The language server's view of a workspace: the source folder on disk, overlaid with the
documents open in the editor, compiled by the compiler's own entry (`pipeline.compile_prompt`).

No LSP types here, and no writes: the project is read (the source folder, `[tool.promptc]`),
never the output folder, and nothing is ever written. Every compile goes through the same code as
`promptc check`, so the editor and the build cannot disagree.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..compile.pipeline import Compilation, PartialLoader, compile_prompt
from ..driver.sources import LooseFiles, is_prompt, read_tree
from ..facts.config import Config, find_pyproject, load_config
from ..facts.diagnostics import Diagnostic, SourceText, deduplicated
from ..facts.language import SOURCE_SUFFIX
from ..facts.records import dataclass
from ..passes.context import SourceTree
from ..syntax.source import decode

#: the first line of a YAML front matter: a Dotprompt or Humanloop `.prompt` file, not promptc's (a
#: promptc separator has five dashes and a role; `---` alone is text to promptc)
FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*(?:#[^\r\n]*)?(?:\r\n|\r|\n|\Z)")


def is_foreign(text: str) -> bool:
    """A `.prompt` file of another tool: it starts with a YAML front matter (`---`)."""
    return FRONT_MATTER.match(text) is not None


def has_promptc_table(pyproject: Path | None) -> bool:
    """Whether `pyproject` has a `[tool.promptc]` table (an unreadable file has none)."""
    if pyproject is None:
        return False
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    tool = data.get("tool")
    return isinstance(tool, dict) and "promptc" in tool


#: how long a scan of the source folder is trusted before the next compile looks again (a save or
#: a watched-file event from the editor makes the next compile look at once)
RESCAN_AFTER_S = 2.0


@contextlib.contextmanager
def _cwd(folder: Path) -> Iterator[None]:
    """Run with `folder` as the current folder: `[tool.promptc]` paths, and the paths diagnostics
    show, are what `promptc check` run from the workspace's root would see."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


class Overlay(Mapping[str, bytes]):
    """The source tree's files with the open documents' unsaved text in place of their disk bytes
    (and open documents that are not saved yet added)."""

    def __init__(self, disk: Mapping[str, bytes], open_files: Mapping[str, bytes]) -> None:
        self._disk = disk
        self._open = open_files
        self._order = sorted({*disk, *open_files})

    def __getitem__(self, rel: str) -> bytes:
        data = self._open.get(rel)
        return data if data is not None else self._disk[rel]

    def __contains__(self, rel: object) -> bool:
        return rel in self._open or rel in self._disk

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)


@dataclass(frozen=True, slots=True)
class Cached:
    """A compiled prompt and the content hashes of every file it read (itself first). `full`: the
    whole compile (items, document, artifact) is kept; otherwise only what a workspace-wide
    question asks of a prompt (`_summary`)."""

    analysis: Compilation
    fingerprint: tuple[tuple[str, str], ...]
    full: bool = True


def _summary(analysis: Compilation) -> Compilation:
    """What the server keeps of a prompt it compiled only to answer for the whole workspace (the
    prompts that include a partial, those that share a prefix): its diagnostics, its dependencies
    and its manifest entry, not its items, document, artifact and bytes. On the 2,000-file
    workspace the whole compiles were 110 MB of the server's memory after one code lens."""
    compiled = analysis.compiled
    summary = Compilation(analysis.rel, analysis.config, analysis.tree, analysis.partials, display=analysis.display)
    summary.diagnostics = list(compiled.diagnostics)
    summary.stopped = analysis.stopped
    summary._compiled = replace(compiled, artifact=None, data=None)
    return summary


class Project:
    """One workspace: its config, its source folder, and the open documents.

    With `scan = False` (a `.prompt` file opened outside the source folder, whose folder may be
    `~` or `/`), the folder is never walked: a compile reads only the files it needs, each with
    the source size cap (`driver.sources.LooseFiles`).

    `open_files` maps source-relative paths to the editor's text (as UTF-8 bytes). Compiled prompts
    are cached by the hashes of the files they read, so a change re-compiles only what it can
    change; `check` results are never written anywhere."""

    #: walk the source folder (False: read only the files a compile asks for)
    scan = True

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.open_files: dict[str, bytes] = {}
        self._open_shas: dict[str, str] = {}
        self._cache: dict[str, Cached] = {}
        self._scanned_at = 0.0
        self._disk: SourceTree | None = None
        self._known: dict[str, list[Any]] = {}
        self._known_at = 0
        self._owned: dict[Path, bool] = {}
        self.load_config()

    # -- configuration ------------------------------------------------------------------------

    def load_config(self) -> None:
        """Read `[tool.promptc]` as `promptc check` run from the workspace root reads it."""
        with _cwd(self.root):
            self.pyproject = find_pyproject(self.root)
            config, self.config_diagnostics = load_config(self.pyproject)
            self.src = Path(os.path.abspath(config.src))
            self.out = Path(os.path.abspath(config.out))
        self.config: Config = config
        self.src_display = _display(self.src, self.root)
        self._cache.clear()
        self._owned.clear()
        self._scanned_at = 0.0

    def owns(self, path: Path) -> bool:
        """Whether a `.prompt` file is in a promptc project: inside the source folder, or under a
        `pyproject.toml` (the nearest from its folder up) with a `[tool.promptc]` table."""
        if self.rel_of(path) is not None:
            return True
        folder = path.parent.resolve()
        owned = self._owned.get(folder)
        if owned is None:
            owned = self._owned[folder] = has_promptc_table(find_pyproject(folder))
        return owned

    # -- files --------------------------------------------------------------------------------

    def rel_of(self, path: Path) -> str | None:
        """The source-relative path of a file in the source folder, else None."""
        try:
            rel = path.resolve().relative_to(self.src.resolve())
        except ValueError:
            return None
        return rel.as_posix()

    def path_of_display(self, display: str) -> Path | None:
        """The file a diagnostic's path names (None for the built-in `<std>` partials)."""
        if display.startswith("<"):
            return None
        return (self.root / display).resolve()

    def display(self, rel: str) -> str:
        return f"{self.src_display}/{rel}" if self.src_display not in ("", ".") else rel

    def open(self, rel: str, text: str) -> None:
        data = text.encode("utf-8", "surrogatepass")
        self.open_files[rel] = data
        self._open_shas[rel] = hashlib.sha256(data).hexdigest()

    def close(self, rel: str) -> None:
        self.open_files.pop(rel, None)
        self._open_shas.pop(rel, None)

    def disk_changed(self) -> None:
        """A file was saved or changed on disk: the next compile scans the folder again."""
        self._scanned_at = 0.0

    def _disk_tree(self) -> SourceTree:
        if self._disk is None or time.monotonic() - self._scanned_at > RESCAN_AFTER_S:
            started = time.time_ns()
            if not self.scan:
                tree = SourceTree(files=LooseFiles(self.src))
            elif self.src.is_dir():
                with _cwd(self.root):
                    tree, _ = read_tree(self.src, self.out, self._known, self._known_at if self._disk else 0)
            else:
                tree = SourceTree()
            self._disk = tree
            self._known = {rel: [*tree.stats[rel], tree.shas[rel]] for rel in tree.stats if rel in tree.shas}
            self._known_at = started
            self._scanned_at = time.monotonic()
        return self._disk

    def tree(self) -> SourceTree:
        disk = self._disk_tree()
        return replace(
            disk,
            files=Overlay(disk.files, self.open_files),
            root_display="" if self.src_display in ("", ".") else self.src_display,
            shas={**disk.shas, **self._open_shas},
        )

    def prompts(self, tree: SourceTree) -> list[str]:
        return [rel for rel in tree.files if is_prompt(rel)]

    # -- compiling ----------------------------------------------------------------------------

    def _sha(self, tree: SourceTree, rel: str) -> str:
        sha = tree.shas.get(rel)
        if sha is None:
            if rel not in tree.files:
                return "-"
            try:
                sha = hashlib.sha256(tree.files[rel]).hexdigest()
            except OSError:
                return "-"
        return sha

    def analyse(
        self, rel: str, tree: SourceTree | None = None, loader: PartialLoader | None = None, *, full: bool = True
    ) -> Compilation:
        """Compile one prompt of the tree (from the cache when none of the files it read changed).
        With `full=False` the caller reads only the result's `compiled` diagnostics, dependencies
        and manifest entry (not its artifact), and a prompt that is not open is kept as that
        summary alone."""
        tree = tree or self.tree()
        keep = full or rel in self.open_files
        cached = self._cache.get(rel)
        if (
            cached is not None
            and (cached.full or not keep)
            and all(self._sha(tree, path) == sha for path, sha in cached.fingerprint)
        ):
            return cached.analysis
        try:
            data = tree.files[rel]
        except (KeyError, OSError):
            data = b""
        loader = loader or PartialLoader(self.config, tree)
        analysis = compile_prompt(rel, self.config, tree, data=data, partials=loader)
        compiled = analysis.compiled
        fingerprint = tuple((path, self._sha(tree, path)) for path in (rel, *compiled.deps))
        self._cache[rel] = Cached(analysis if keep else _summary(analysis), fingerprint, keep)
        return analysis

    def analyse_all(self, tree: SourceTree | None = None) -> dict[str, Compilation]:
        """Every prompt of the workspace (what `promptc check` compiles), one shared partial loader.
        Callers read only each result's `compiled` diagnostics, dependencies and manifest entry:
        the prompts that are not open are kept as summaries (`analyse(full=False)`)."""
        tree = tree or self.tree()
        loader = PartialLoader(self.config, tree)
        return {rel: self.analyse(rel, tree, loader, full=False) for rel in self.prompts(tree)}

    def includers(self, rel: str, tree: SourceTree | None = None) -> list[str]:
        """The prompts that read `rel` (a partial, a tool or schema file), directly or not."""
        tree = tree or self.tree()
        return [p for p, a in self.analyse_all(tree).items() if rel in a.compiled.deps]

    def diagnostics_for(self, rel: str, tree: SourceTree | None = None) -> list[Diagnostic]:
        """What `promptc check` reports in the file `rel`, in its order: a prompt's own
        diagnostics; for a partial, what the prompts that include it report in it (each naming
        those prompts), one per place and problem; for a partial nothing includes, what reading it
        finds."""
        tree = tree or self.tree()
        own = self.display(rel)
        found: list[Diagnostic] = []
        if is_prompt(rel):
            found = [d for d in self.analyse(rel, tree).compiled.diagnostics if d.path == own]
        else:
            included = False
            for prompt, analysis in self.analyse_all(tree).items():
                if rel in analysis.compiled.deps:
                    included = True
                    name = prompt.removesuffix(SOURCE_SUFFIX)
                    found += [replace(d, included_by=(name,)) for d in analysis.compiled.diagnostics if d.path == own]
            if not included and rel.endswith(SOURCE_SUFFIX):
                # `promptc check` compiles a partial only through the prompts that include it; one
                # that nothing includes yet still gets what reading it finds (the include pass's
                # own loader: parse, comments, directives), so a new partial is not silent
                found = [d for d in PartialLoader(self.config, tree).load(rel).diagnostics if d.path == own]
        return deduplicated(found)

    def source_text(self, rel: str, tree: SourceTree | None = None) -> SourceText | None:
        """The normalised text of a file of the tree, as the compiler reads it."""
        tree = tree or self.tree()
        try:
            data = tree.files[rel]
        except (KeyError, OSError):
            return None
        src, _ = decode(self.display(rel), data)
        return src

    def sharing(self, prefix_sha256: str, tree: SourceTree | None = None) -> list[str]:
        """The prompts whose cache-stable prefix is `prefix_sha256` (the manifest's `prefixes`)."""
        return sorted(
            a.compiled.name
            for a in self.analyse_all(tree).values()
            if a.compiled.entry is not None and a.compiled.entry.prefix_sha256 == prefix_sha256
        )


def _display(src: Path, root: Path) -> str:
    """How `promptc check`, run from `root`, names the source folder in diagnostics."""
    try:
        return Path(os.path.relpath(src, root)).as_posix()
    except ValueError:
        return src.as_posix()
