"""`promptc lsp` driven over stdio by a real LSP client (pygls' `LanguageClient`), as an editor
drives it: one server for the module, a small workspace of its own, every feature checked."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from tests.conftest import promptc_executable, run_promptc

PROMPT_A = """\
/// flow: demo
/// input: question, product
/// tools: tools/search.json
----- system -----
/// include: _shared
/// section: rules stable
Answer briefly.
----- user -----
/// section: ask dynamic
About ${product}: ${question}
"""

#: `a.prompt` with a typo, saved: what `promptc check` reports in it, the server must publish
PROMPT_BAD = PROMPT_A.replace("${question}", "${questoin}")

PROMPT_B = """\
/// input: topic
----- system -----
/// include: _shared
----- user -----
Tell me about ${topic}.
"""

SHARED = """\
/// section: identity stable
You are the helpful assistant of the demo project. You answer in plain English.
"""

#: the same system message as b: the two share their cache-stable prefix
PROMPT_E = """\
/// input: name
----- system -----
/// include: _shared
----- user -----
Hello ${name}.
"""

TOOLS = {"name": "search", "description": "Search the docs.", "input_schema": {"type": "object", "properties": {}}}

TICKET_SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}


class Session:
    """A synchronous face on pygls' asyncio client: its loop runs in a thread of its own."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client = LanguageClient("promptc-tests", "1")
        self.published: list[types.PublishDiagnosticsParams] = []
        self.changed = threading.Condition()
        self.versions: dict[str, int] = {}

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _published(params: types.PublishDiagnosticsParams) -> None:
            with self.changed:
                self.published.append(params)
                self.changed.notify_all()

        # started elsewhere: the workspace (and its [tool.promptc]) comes from `initialize`
        self.run(self.client.start_io(promptc_executable(), "lsp", cwd=str(root.parent)))
        self.run(
            self.client.initialize_async(
                types.InitializeParams(
                    capabilities=types.ClientCapabilities(),
                    root_uri=root.as_uri(),
                    workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="demo")],
                )
            )
        )
        self.notify(self.client.initialized, types.InitializedParams())

    def run(self, coro, timeout: float = 30):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def notify(self, method, params) -> None:
        self.loop.call_soon_threadsafe(method, params)

    def uri(self, rel: str) -> str:
        return (self.root / "prompts_src" / rel).as_uri()

    def open(self, rel: str, text: str | None = None) -> str:
        """Open a document (with its text on disk unless `text` is given); once per session."""
        uri = self.uri(rel)
        if uri in self.versions and text is None:
            return uri
        text = (self.root / "prompts_src" / rel).read_text() if text is None else text
        self.versions[uri] = 1
        item = types.TextDocumentItem(uri=uri, language_id="prompt", version=1, text=text)
        self.notify(self.client.text_document_did_open, types.DidOpenTextDocumentParams(text_document=item))
        return uri

    def change(self, uri: str, *changes) -> None:
        self.versions[uri] += 1
        doc = types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri])
        params = types.DidChangeTextDocumentParams(text_document=doc, content_changes=list(changes))
        self.notify(self.client.text_document_did_change, params)

    def diagnostics(
        self, uri: str, after: int = 0, timeout: float = 20, any_version: bool = False
    ) -> list[types.Diagnostic]:
        """The first diagnostics published for `uri` at its current version (or at any, with
        `any_version`), after the `after`-th publication of the session."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for params in self.published[after:]:
                    if params.uri == uri and (any_version or params.version == self.versions[uri]):
                        return list(params.diagnostics)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no diagnostics for {uri} at version {self.versions[uri]}")
                self.changed.wait(left)

    def close(self) -> None:
        try:
            self.run(self.client.shutdown_async(None), timeout=10)
            self.client.exit(None)
            self.run(self.client.stop(), timeout=10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))} | {
        ".": (0, folder.stat().st_mtime_ns)
    }


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("lsp")
    (root / "pyproject.toml").write_text('[tool.promptc]\nsrc = "prompts_src"\nout = "build"\n')
    src = root / "prompts_src"
    (src / "tools").mkdir(parents=True)
    (src / "a.prompt").write_text(PROMPT_A)
    (src / "bad.prompt").write_text(PROMPT_BAD)
    (src / "b.prompt").write_text(PROMPT_B)
    (src / "e.prompt").write_text(PROMPT_E)
    (src / "_shared.prompt").write_text(SHARED)
    (src / "tools" / "search.json").write_text(json.dumps(TOOLS))
    (src / "schemas").mkdir()
    (src / "schemas" / "ticket.json").write_text(json.dumps(TICKET_SCHEMA))
    (root / "build").mkdir()
    (root / "build" / "keep.txt").write_text("the server must not touch this folder\n")
    before = _snapshot(root / "build")
    session = Session(root)
    yield session
    session.close()
    assert _snapshot(root / "build") == before, "the language server wrote into build/"
    assert not (root / ".promptc-cache").exists()


def _check_json(root: Path) -> list[dict]:
    result = run_promptc("check", "--format", "json", cwd=root)
    return json.loads(result.stdout)["diagnostics"]


def test_diagnostics_are_checks_then_clear_after_an_incremental_edit(workspace):
    """An error arrives as `promptc check` reports it (code, message, range); editing it away with
    an incremental change publishes an empty list."""
    uri = workspace.open("bad.prompt")
    expected = [d for d in _check_json(workspace.root) if d["path"] == "prompts_src/bad.prompt"]
    got = workspace.diagnostics(uri)
    assert [d.code for d in got] == [d["code"] for d in expected] == ["W502", "E501"]
    for lsp, cli in zip(got, expected, strict=True):
        assert lsp.message == cli["message"]
        assert (lsp.range.start.line + 1, lsp.range.start.character + 1) == (cli["line"], cli["col"])
        assert (lsp.range.end.line + 1, lsp.range.end.character + 1) == (cli["end_line"], cli["end_col"])
        assert lsp.data["hint"] == cli["hint"]
        assert [r.message for r in lsp.related_information] == [f"hint: {cli['hint']}"]
    # fix the typo: replace `questoin` (line 10, after `About ${product}: ${`) with `question`
    line = PROMPT_BAD.splitlines()[9]
    start = line.index("questoin")
    edit = types.TextDocumentContentChangePartial(
        range=types.Range(
            start=types.Position(line=9, character=start), end=types.Position(line=9, character=start + 8)
        ),
        text="question",
    )
    mark = len(workspace.published)
    workspace.change(uri, edit)
    assert workspace.diagnostics(uri, after=mark) == []
    # the file on disk still has the typo: the unsaved text is what was compiled
    assert "questoin" in (workspace.root / "prompts_src" / "bad.prompt").read_text()


def test_a_partial_change_rechecks_the_prompts_that_include_it(workspace):
    """Full sync of a partial: its new problem is reported in it (naming the prompts that include
    it) and the open prompt that includes it is checked again."""
    a = workspace.open("a.prompt")
    workspace.diagnostics(a)
    shared = workspace.open("_shared.prompt")
    assert workspace.diagnostics(shared) == []
    mark = len(workspace.published)
    broken = SHARED + "/// section: identity stable\nagain\n"
    workspace.change(shared, types.TextDocumentContentChangeWholeDocument(text=broken))
    try:
        got = workspace.diagnostics(shared, after=mark)
        assert got and all(d.data["included_by"] == ["a", "b", "bad", "e"] for d in got)
        assert all("reported while compiling a, b, bad, e" in [r.message for r in d.related_information] for d in got)
        # a.prompt's text did not change, yet it is checked again (at its own version)
        workspace.diagnostics(a, after=mark)
    finally:
        mark = len(workspace.published)
        workspace.change(shared, types.TextDocumentContentChangeWholeDocument(text=SHARED))
        assert workspace.diagnostics(shared, after=mark) == []


def _at(text: str, needle: str, offset: int = 0) -> types.Position:
    index = text.index(needle) + offset
    line = text.count("\n", 0, index)
    return types.Position(line=line, character=index - (text.rfind("\n", 0, index) + 1))


def _doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


def test_hover_input_section_and_include(workspace):
    uri = workspace.open("a.prompt")
    text = PROMPT_A

    def hover(needle: str, offset: int = 0) -> str:
        result = workspace.run(
            workspace.client.text_document_hover_async(
                types.HoverParams(text_document=_doc(uri), position=_at(text, needle, offset))
            )
        )
        assert result is not None, needle
        return result.contents.value

    on_input = hover("${product}", 3)
    assert "input `product`" in on_input and "declared" in on_input and "section `ask` (dynamic)" in on_input
    on_section = hover("/// section: rules")
    assert "boundary: **stable** (declared)" in on_section and "tokens (cl100k_base)" in on_section
    assert "target: system" in on_section
    on_include = hover("_shared")
    assert "`prompts_src/_shared.prompt`" in on_include and "`identity`" in on_include


def test_definition_of_include_and_tools(workspace):
    uri = workspace.open("a.prompt")

    def definition(needle: str) -> list[str]:
        params = types.DefinitionParams(text_document=_doc(uri), position=_at(PROMPT_A, needle, 2))
        return [loc.uri for loc in workspace.run(workspace.client.text_document_definition_async(params))]

    assert definition("_shared") == [workspace.uri("_shared.prompt")]
    assert definition("tools/search.json") == [workspace.uri("tools/search.json")]


def test_references_of_an_input(workspace):
    uri = workspace.open("a.prompt")
    text = PROMPT_A
    params = types.ReferenceParams(
        text_document=_doc(uri),
        position=_at(text, "${question}", 4),
        context=types.ReferenceContext(include_declaration=True),
    )
    found = workspace.run(workspace.client.text_document_references_async(params))
    assert [(loc.range.start.line, loc.range.start.character) for loc in found] == [
        (1, text.splitlines()[1].index("question")),
        (9, text.splitlines()[9].index("${question}")),
    ]


def test_completion(workspace):
    uri = workspace.open("c.prompt", "/// input: city, date\n/// \n/// include: \n-----\nWeather in ${\n")

    def labels(line: int, character: int) -> list[str]:
        params = types.CompletionParams(
            text_document=_doc(uri), position=types.Position(line=line, character=character)
        )
        return [item.label for item in workspace.run(workspace.client.text_document_completion_async(params)).items]

    workspace.diagnostics(uri)
    assert {"section", "include", "input", "tools"} <= set(labels(1, 4))
    assert {"_shared", "std/env", "std/git", "std/date"} <= set(labels(2, 13))
    assert labels(3, 5) == ["system", "developer", "user", "assistant"]
    assert labels(4, 13) == ["city", "date"]


def test_code_actions_from_hints(workspace):
    uri = workspace.open("d.prompt", "/// input: question\n----- user -----\nQ: ${questoin}\n")
    diagnostics = workspace.diagnostics(uri)
    error = next(d for d in diagnostics if d.code == "E501")
    params = types.CodeActionParams(
        text_document=_doc(uri),
        range=error.range,
        context=types.CodeActionContext(diagnostics=[error]),
    )
    actions = workspace.run(workspace.client.text_document_code_action_async(params))
    by_title = {a.title: a.edit.changes[uri] for a in actions}
    replace = by_title["Replace `questoin` with `question`"]
    assert [(e.range.start.line, e.range.start.character, e.range.end.character, e.new_text) for e in replace] == [
        (2, 5, 13, "question")
    ]
    add = by_title["Add `questoin` to `/// input:`"]
    assert [(e.range.start.line, e.range.start.character, e.new_text) for e in add] == [(0, 19, ", questoin")]


def test_code_actions_are_the_diagnostics_own_fixes(workspace):
    """A directive typo's quick fix comes from the diagnostic's structured fix (its `data`), with
    its preference: the hint's wording plays no part."""
    uri = workspace.open("t.prompt", "/// Section: intro\n----- usr -----\nHello.\n")
    diagnostics = workspace.diagnostics(uri)
    assert {"W303", "E401"} <= {d.code for d in diagnostics}
    for d in diagnostics:
        d.data = {**d.data, "hint": "no words to read here"}  # the actions must not need the hint
    params = types.CodeActionParams(
        text_document=_doc(uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=2, character=0)),
        context=types.CodeActionContext(diagnostics=diagnostics),
    )
    actions = workspace.run(workspace.client.text_document_code_action_async(params))
    found = {
        a.title: (
            a.is_preferred,
            [(e.range.start.line, e.range.start.character, e.new_text) for e in a.edit.changes[uri]],
        )
        for a in actions
    }
    assert found["Write `/// section:`"] == (True, [(0, 4, "section")])
    assert found["Replace `usr` with `user`"] == (True, [(1, 6, "user")])


def test_code_lens_shows_where_the_cache_prefix_ends(workspace):
    uri = workspace.open("a.prompt")
    params = types.CodeLensParams(text_document=_doc(uri))
    lenses = workspace.run(workspace.client.text_document_code_lens_async(params))
    assert len(lenses) == 1
    title = lenses[0].command.title
    # the prefix (tools, the shared identity, `rules`) ends before `ask`, which uses an input
    assert title.startswith("cache prefix ends here: ")
    # b and e have no tools, so their prefix differs (bad.prompt joins once its typo is edited away)
    shared = lenses[0].data["shared_by"]
    assert set(shared) - {"bad"} == {"a"} and f"shared by {len(shared)} prompt" in title
    assert title.endswith(' — section "ask" is dynamic')  # the artifact's own cache.prefix_end.reason
    assert lenses[0].range.start.line == 8  # on `/// section: ask dynamic`, where the artifact says it ends
    b = workspace.open("b.prompt")
    workspace.diagnostics(b)
    lens_b = workspace.run(workspace.client.text_document_code_lens_async(types.CodeLensParams(text_document=_doc(b))))
    assert "shared by 2 prompts —" in lens_b[0].command.title
    assert lens_b[0].data == {"shared_by": ["b", "e"]}


def test_the_command_is_registered_and_other_commands_do_not_import_pygls():
    result = run_promptc("lsp", "--help")
    assert result.returncode == 0 and "language server" in result.stdout
    probe = "import sys, promptc.cli; print(sorted({'pygls', 'lsprotocol'} & set(sys.modules)))"
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert shown.stdout.strip() == "[]", shown.stderr


def test_a_partial_nothing_includes_still_gets_its_reading_errors(workspace):
    uri = workspace.open("_new.prompt", "/// section: draft stable\nHello ${}\n")
    assert [d.code for d in workspace.diagnostics(uri)] == ["E202"]


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_frame(stream) -> dict:
    length = 0
    while (header := stream.readline()) not in (b"\r\n", b""):
        if header.lower().startswith(b"content-length:"):
            length = int(header.split(b":")[1])
    return json.loads(stream.read(length))


def test_a_request_whose_params_do_not_validate_gets_an_error_response(tmp_path):
    """JSON-RPC: a request is always answered. A hover at `line: -1`, written on the wire as a
    client that does not validate would, gets Invalid Params (-32602) naming where the params
    failed, and the server goes on answering (the next request, then shutdown)."""
    (tmp_path / "a.prompt").write_text("Hello.\n")
    uri = (tmp_path / "a.prompt").as_uri()
    server = subprocess.Popen(
        [promptc_executable(), "lsp"],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    answers: list[dict] = []

    def read() -> None:
        while (message := _read_frame(server.stdout)) is not None:
            answers.append(message)
            if message.get("id") == 4:
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    hover = {"textDocument": {"uri": uri}, "position": {"line": -1, "character": 0}}
    good = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
    item = {"uri": uri, "languageId": "prompt", "version": 1, "text": "Hello.\n"}
    for message in (
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"capabilities": {}, "rootUri": tmp_path.as_uri()},
        },
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}},
        {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": hover},
        {"jsonrpc": "2.0", "id": 3, "method": "textDocument/definition", "params": good},
        {"jsonrpc": "2.0", "id": 4, "method": "shutdown"},
    ):
        server.stdin.write(_frame(message))
    server.stdin.flush()
    reader.join(30)
    server.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
    server.stdin.close()
    server.wait(10)
    by_id = {a["id"]: a for a in answers if "id" in a and "method" not in a}
    assert sorted(by_id) == [1, 2, 3, 4], answers
    error = by_id[2]["error"]
    assert error["code"] == -32602
    assert "$.params.position" in error["message"] and "Position.line" in error["message"]
    assert by_id[3] == {"jsonrpc": "2.0", "id": 3, "result": []}


@pytest.mark.parametrize("breaker", ["\u2028", "\u0085", "\f", "\u001e"])
def test_incremental_edits_after_a_character_splitlines_breaks_at(workspace, breaker):
    """LSP lines end at \\n, \\r\\n and \\r only: an edit on the line after one holding U+2028 (or
    U+0085, a form feed, U+001E) lands on that line, as the client meant it."""
    text = f"/// input: name\n----- user -----\nHi{breaker} there\nBye ${{nme}}\n"
    uri = workspace.open(f"lines_{ord(breaker):04x}.prompt", text)
    assert "E501" in [d.code for d in workspace.diagnostics(uri)]
    start = len("Bye ${")
    edit = types.TextDocumentContentChangePartial(
        range=types.Range(
            start=types.Position(line=3, character=start), end=types.Position(line=3, character=start + 3)
        ),
        text="name",
    )
    mark = len(workspace.published)
    workspace.change(uri, edit)
    assert [d.code for d in workspace.diagnostics(uri, after=mark)] == []
    # and a diagnostic after the character is placed on the client's line
    mark = len(workspace.published)
    workspace.change(
        uri,
        types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=3, character=0), end=types.Position(line=3, character=0)),
            text="${oops} ",
        ),
    )
    got = workspace.diagnostics(uri, after=mark)
    assert [(d.code, d.range.start.line, d.range.start.character) for d in got if d.code == "E501"] == [("E501", 3, 0)]


def test_definition_of_a_schema_input_type(workspace):
    """Go to definition on `@schemas/ticket.json` in `/// input:` opens the schema file; on the
    input's name it stays an input (no file)."""
    text = "/// input: ticket: @schemas/ticket.json\n----- user -----\nTicket ${ticket.id}\n"
    uri = workspace.open("typed.prompt", text)
    workspace.diagnostics(uri)

    def definition(needle: str, offset: int) -> list[str]:
        params = types.DefinitionParams(text_document=_doc(uri), position=_at(text, needle, offset))
        return [loc.uri for loc in workspace.run(workspace.client.text_document_definition_async(params))]

    assert definition("@schemas", 3) == [workspace.uri("schemas/ticket.json")]
    assert definition("ticket.json", 2) == [workspace.uri("schemas/ticket.json")]
    assert definition("ticket:", 1) == []
    hover = workspace.run(
        workspace.client.text_document_hover_async(
            types.HoverParams(text_document=_doc(uri), position=_at(text, "@schemas", 3))
        )
    )
    assert "input schema `schemas/ticket.json`" in hover.contents.value


#: a Dotprompt file (Firebase Genkit): YAML front matter, then Handlebars; `.prompt` too
DOTPROMPT = """\
---
model: googleai/gemini-2.0-flash
input:
  schema:
    name: string
---
Hello {{name}}, {{#if vip}}welcome back{{/if}}! ${not_promptc}
"""


def _hover_at(workspace, uri: str, line: int, character: int):
    params = types.HoverParams(text_document=_doc(uri), position=types.Position(line=line, character=character))
    return workspace.run(workspace.client.text_document_hover_async(params))


def test_a_dotprompt_file_beside_a_promptc_one_is_left_alone(workspace):
    """In the source folder, a `.prompt` that starts with a YAML `---` header is another tool's:
    no diagnostics, no hover, no lens; the promptc prompt beside it is checked as ever. Deleting
    the header makes it promptc's, and typing it back clears what was reported."""
    ours = workspace.open("d2.prompt", "/// input: question\n----- user -----\nQ: ${questoin}\n")
    assert "E501" in [d.code for d in workspace.diagnostics(ours)]
    theirs = workspace.open("genkit.prompt", DOTPROMPT)
    assert workspace.diagnostics(theirs) == []
    assert _hover_at(workspace, theirs, 6, 8) is None
    lenses = workspace.run(
        workspace.client.text_document_code_lens_async(types.CodeLensParams(text_document=_doc(theirs)))
    )
    assert not lenses
    # without its header the same text is a promptc prompt with problems promptc reports
    mark = len(workspace.published)
    body = DOTPROMPT.split("---\n", 2)[2]
    workspace.change(theirs, types.TextDocumentContentChangeWholeDocument(text=body))
    assert workspace.diagnostics(theirs, after=mark) != []
    mark = len(workspace.published)
    workspace.change(theirs, types.TextDocumentContentChangeWholeDocument(text=DOTPROMPT))
    assert workspace.diagnostics(theirs, after=mark) == []


def test_a_prompt_file_outside_every_promptc_project_is_left_alone(workspace, tmp_path):
    """A `.prompt` in a folder with no `[tool.promptc]` above it and outside the source folder
    (a Humanloop or Dotprompt project next door) gets nothing; one under a pyproject.toml with
    `[tool.promptc]` is checked."""
    elsewhere = tmp_path / "humanloop"
    elsewhere.mkdir()
    (elsewhere / "pyproject.toml").write_text('[project]\nname = "not-promptc"\n')
    uri = (elsewhere / "support.prompt").as_uri()
    workspace.versions[uri] = 1
    item = types.TextDocumentItem(uri=uri, language_id="prompt", version=1, text="Hi ${}\n")
    workspace.notify(workspace.client.text_document_did_open, types.DidOpenTextDocumentParams(text_document=item))
    assert workspace.diagnostics(uri) == []
    assert _hover_at(workspace, uri, 0, 4) is None
    project = tmp_path / "other_promptc"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.promptc]\n")
    uri2 = (project / "x.prompt").as_uri()
    workspace.versions[uri2] = 1
    item = types.TextDocumentItem(uri=uri2, language_id="prompt", version=1, text="Hi ${}\n")
    workspace.notify(workspace.client.text_document_did_open, types.DidOpenTextDocumentParams(text_document=item))
    assert [d.code for d in workspace.diagnostics(uri2)] == ["E202"]
