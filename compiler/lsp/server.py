"""`promptc lsp`: the language server, on pygls over stdio.

Each request is answered from the compiler's own results (`workspace.Project`, `features`): a
change to a document re-compiles it (and, for a partial, the open prompts that include it) and
publishes exactly the diagnostics `promptc check` reports for each file. The server reads the
workspace and never writes anything, `build/` included.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.workspace import TextDocument, Workspace

from ..facts.diagnostics import Diagnostic
from ..facts.language import SOURCE_SUFFIX
from ..facts.version import VERSION
from ..passes.context import SourceTree
from . import features
from .workspace import Project, is_foreign

COMPLETION_TRIGGERS = ["{", "-", ":", " ", "/", ","]


def path_of_uri(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


#: a line with its end, as the LSP counts lines: only `\n`, `\r\n` and `\r` end one (Python's
#: `str.splitlines` also ends lines at U+2028, U+0085, form feed, U+001E …, which the client does not)
_LSP_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


class _Document(TextDocument):
    """A pygls document whose lines are the client's: an incremental edit after a U+2028 (or any
    other character `str.splitlines` breaks at) lands on the line the client meant."""

    @property
    def lines(self) -> Sequence[str]:
        return tuple(_LSP_LINE.findall(self.source))


def _create_document(
    workspace: Workspace,
    doc_uri: str,
    source: str | None = None,
    version: int | None = None,
    language_id: str | None = None,
) -> TextDocument:
    return _Document(
        doc_uri,
        source=source,
        version=version,
        language_id=language_id,
        sync_kind=workspace._sync_kind,
        position_codec=workspace.position_codec,
    )


#: what `structure_message` hands on for a request it has already answered with an error
_ANSWERED = object()


def _what_failed(error: JsonRpcException) -> str | None:
    """`Invalid Params: invalid value @ $.params.position (Position.line should be in range
    [0:2147483647], but was -1.)`: where the params failed, from cattrs, and why."""
    cause = error.__cause__
    if not isinstance(cause, cattrs.ClassValidationError):
        return None
    where = "; ".join(cattrs.transform_error(cause))
    why: list[str] = []
    stack: list[BaseException] = [cause]
    while stack:
        exc = stack.pop()
        if isinstance(exc, BaseExceptionGroup):
            stack.extend(reversed(exc.exceptions))
        elif isinstance(exc, ValueError) and str(exc):
            why.append(str(exc))
    return f"{error.message}: {where}" + (f" ({'; '.join(why)})" if why else "")


class _Protocol(LanguageServerProtocol):
    """pygls' protocol with two repairs: a request whose params do not validate is answered with a
    JSON-RPC error (pygls logs it and drops it, and the client waits forever), and the workspace's
    documents split lines as the client does."""

    @property
    def _workspace(self) -> Workspace | None:
        return self.__dict__.get("_promptc_workspace")

    @_workspace.setter
    def _workspace(self, workspace: Workspace | None) -> None:
        if workspace is not None:
            # the workspace's documents are made by its own method: it is replaced on this instance
            workspace._create_text_document = _create_document.__get__(workspace)  # type: ignore[method-assign]
        self.__dict__["_promptc_workspace"] = workspace

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if not (isinstance(data, dict) and "method" in data and data.get("id") is not None):
                raise  # a notification (or a response) gets no answer
            response = error.to_response_error()
            response.message = _what_failed(error) or response.message
            self._send_response(data["id"], error=response)
            return _ANSWERED

    def handle_message(self, message: Any) -> None:
        if message is _ANSWERED:
            return
        super().handle_message(message)


class PromptServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "promptc",
            VERSION,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=_Protocol,
        )
        self.project: Project | None = None
        #: open documents outside the source folder: compiled on their own (uri → Project)
        self.loose: dict[str, Project] = {}

    # -- documents ----------------------------------------------------------------------------

    def ensure_project(self) -> Project:
        if self.project is None:
            self.project = Project(Path.cwd())
        return self.project

    def foreign(self, uri: str) -> bool:
        """A document the server leaves alone: outside every promptc project (no `[tool.promptc]`
        above it, not in the source folder), or a `.prompt` of another tool (Dotprompt,
        Humanloop: it starts with a YAML `---` header)."""
        path = path_of_uri(uri)
        if path is None or path.suffix != SOURCE_SUFFIX:
            return True
        if not self.ensure_project().owns(path):
            return True
        document = self.workspace.text_documents.get(uri)
        return document is not None and is_foreign(document.source[:64])

    def place(self, uri: str) -> tuple[Project, str] | None:
        """The project and source-relative path of a document (a file outside the source folder
        is compiled as the only prompt of its own folder); None for a foreign document."""
        if self.foreign(uri):
            return None
        path = path_of_uri(uri)
        assert path is not None
        project = self.ensure_project()
        rel = project.rel_of(path)
        if rel is not None:
            return project, rel
        loose = self.loose.get(uri)
        if loose is None:
            loose = self.loose[uri] = _LooseProject(path, project)
        return loose, loose.rel_of(path) or path.name

    def sync(self, uri: str) -> None:
        placed = self.place(uri)
        if placed is None:
            self.forget(uri)
            return
        project, rel = placed
        document = self.workspace.get_text_document(uri)
        project.open(rel, document.source)

    def forget(self, uri: str) -> None:
        """A document that became foreign (its first line is now `---`): its unsaved text leaves
        the project, whose prompts read the file on disk again."""
        path = path_of_uri(uri)
        if path is None or self.project is None:
            return
        rel = self.project.rel_of(path)
        if rel is not None and rel in self.project.open_files:
            self.project.close(rel)
            self.project.disk_changed()
        self.loose.pop(uri, None)

    def publish(self, changed_uri: str) -> None:
        """Re-check the changed document and every open document whose diagnostics it can change:
        the prompts that include a changed partial, the partials a changed prompt includes. A
        foreign document gets an empty list (what was reported before it became one goes)."""
        placed = self.place(changed_uri)
        if placed is None:
            document = self.workspace.text_documents.get(changed_uri)
            version = document.version if document is not None else None
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=changed_uri, diagnostics=[], version=version)
            )
            return
        project, rel = placed
        tree = project.tree()
        targets = {changed_uri}
        for uri in list(self.workspace.text_documents):
            if uri == changed_uri:
                continue
            other = self.place(uri)
            if other is None or other[0] is not project:
                continue
            other_rel = other[1]
            if other_rel in project.open_files and (
                rel in project.analyse(other_rel, tree).compiled.deps
                if other_rel.endswith(SOURCE_SUFFIX) and not Path(other_rel).name.startswith("_")
                else True
            ):
                targets.add(uri)
        for uri in sorted(targets):
            self.publish_one(uri, tree)

    def publish_one(self, uri: str, tree: SourceTree | None = None) -> None:
        placed = self.place(uri)
        if placed is None:
            return
        project, rel = placed
        tree = tree if tree is not None and project is self.project else project.tree()
        found: list[Diagnostic] = project.diagnostics_for(rel, tree)
        src = project.source_text(rel, tree)
        lines = src.text.split("\n") if src is not None else [""]
        codec = self.workspace.position_codec
        diagnostics = [features.lsp_diagnostic(uri, d, lines, codec) for d in found]
        document = self.workspace.get_text_document(uri)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=document.version)
        )

    def view(self, uri: str) -> features.FileView | None:
        placed = self.place(uri)
        if placed is None:
            return None
        project, rel = placed
        return features.view_of(project, rel, self.workspace.position_codec)


class _LooseProject(Project):
    """A `.prompt` file outside the workspace's source folder: its folder is its source folder,
    with the workspace's config, read only as far as the compile needs (never walked)."""

    scan = False

    def __init__(self, path: Path, workspace: Project) -> None:
        self._folder = path.parent.resolve()
        self._workspace = workspace
        super().__init__(workspace.root)

    def load_config(self) -> None:
        super().load_config()
        self.src = self._folder
        self.out = self._folder / ".promptc-lsp-never-written"
        self.src_display = _relative(self._folder, self.root)


def _relative(folder: Path, root: Path) -> str:
    try:
        return Path(os.path.relpath(folder, root)).as_posix()
    except ValueError:
        return folder.as_posix()


server = PromptServer()


@server.feature(types.INITIALIZE)
def _initialize(ls: PromptServer, params: types.InitializeParams) -> None:
    root = None
    if params.workspace_folders:
        root = path_of_uri(params.workspace_folders[0].uri)
    elif params.root_uri:
        root = path_of_uri(params.root_uri)
    elif params.root_path:
        root = Path(params.root_path)
    ls.project = Project(root or Path.cwd())


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def _did_open(ls: PromptServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.sync(params.text_document.uri)
    ls.publish(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def _did_change(ls: PromptServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.sync(params.text_document.uri)
    ls.publish(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def _did_save(ls: PromptServer, params: types.DidSaveTextDocumentParams) -> None:
    if ls.project is not None:
        ls.project.disk_changed()
    ls.sync(params.text_document.uri)
    ls.publish(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def _did_close(ls: PromptServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    placed = ls.place(uri)
    if placed is not None:
        placed[0].close(placed[1])
        placed[0].disk_changed()
    ls.loose.pop(uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def _did_change_watched(ls: PromptServer, params: types.DidChangeWatchedFilesParams) -> None:
    project = ls.ensure_project()
    if any(change.uri.endswith("pyproject.toml") for change in params.changes):
        project.load_config()
    project.disk_changed()
    for uri in sorted(ls.workspace.text_documents):
        ls.publish_one(uri)


@server.feature(types.TEXT_DOCUMENT_HOVER)
def _hover(ls: PromptServer, params: types.HoverParams) -> types.Hover | None:
    view = ls.view(params.text_document.uri)
    return features.hover(view, params.position) if view is not None else None


@server.feature(types.TEXT_DOCUMENT_DEFINITION)
def _definition(ls: PromptServer, params: types.DefinitionParams) -> list[types.Location]:
    view = ls.view(params.text_document.uri)
    return features.definition(view, params.position) if view is not None else []


@server.feature(types.TEXT_DOCUMENT_REFERENCES)
def _references(ls: PromptServer, params: types.ReferenceParams) -> list[types.Location]:
    view = ls.view(params.text_document.uri)
    if view is None:
        return []
    return features.references(view, params.text_document.uri, params.position, params.context.include_declaration)


@server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=COMPLETION_TRIGGERS))
def _completion(ls: PromptServer, params: types.CompletionParams) -> types.CompletionList:
    view = ls.view(params.text_document.uri)
    items = features.completion(view, params.position) if view is not None else []
    return types.CompletionList(is_incomplete=False, items=items)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix])
)
def _code_action(ls: PromptServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    view = ls.view(params.text_document.uri)
    if view is None:
        return []
    return features.code_actions(view, params.text_document.uri, list(params.context.diagnostics))


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
def _code_lens(ls: PromptServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    view = ls.view(params.text_document.uri)
    return features.code_lens(view) if view is not None else []


def serve() -> None:
    """Serve over stdio until the client says exit."""
    server.start_io()
