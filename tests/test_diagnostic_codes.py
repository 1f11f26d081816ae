"""Exact text of every diagnostic code, as a user sees it (like Jinja's test_error_messages).

Each entry produces the diagnostic from real input and pins the full rendering: location, code,
message, the echoed source line, the caret and the hint. A code missing here fails
`test_every_code_has_an_exact_text_case`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from promptc.compile import compile_text
from promptc.driver import build, check
from promptc.facts.codes import CODES
from promptc.facts.config import Config, load_config
from promptc.facts.diagnostics import render_text

from .conftest import write

APPROX = Config(tokenizer="approx-bytes/4")


def _text(source: str | bytes, *, partials=None, config: Config = APPROX, name: str = "case"):
    def run(tmp_path: Path):
        if isinstance(source, bytes):
            write(tmp_path, f"prompts_src/{name}.prompt", source)
            for rel, body in (partials or {}).items():
                write(tmp_path, f"prompts_src/{rel}", body)
            return check("prompts_src", "build", config).diagnostics
        return list(compile_text(source, name=name, partials=partials, config=config).diagnostics)

    return run


def _project(files: dict[str, str | bytes], *, config: Config = APPROX, action: str = "check", prepare=None):
    def run(tmp_path: Path):
        for rel, body in files.items():
            write(tmp_path, rel, body)
        if prepare:
            prepare(tmp_path)
        if action == "build":
            return build("prompts_src", "build", config).diagnostics
        if action == "locked":
            return check("prompts_src", "build", config, locked=True).diagnostics
        if action == "config":
            return load_config(tmp_path / "pyproject.toml")[1]
        return check("prompts_src", "build", config).diagnostics

    return run


def _configured(option: str, prepare=None):
    """A build of a project whose [tool.promptc] sets `option` (read as the CLI reads it)."""

    def run(tmp_path: Path):
        write(tmp_path, "prompts_src/a.prompt", "Hi\n")
        write(tmp_path, "pyproject.toml", f'[tool.promptc]\ntokenizer = "approx-bytes/4"\n{option}\n')
        if prepare:
            prepare(tmp_path)
        return build(config=load_config(tmp_path / "pyproject.toml")[0]).diagnostics

    return run


def _linked_app(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "app").symlink_to("elsewhere", target_is_directory=True)


def _linked_output(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "build").symlink_to("elsewhere", target_is_directory=True)


def _linked_trash(tmp_path: Path) -> None:
    (tmp_path / ".promptc-cache").mkdir()
    (tmp_path / ".promptc-cache/trash").symlink_to("../..", target_is_directory=True)


def _stale_build(tmp_path: Path) -> None:
    build("prompts_src", "build", APPROX)
    (tmp_path / "prompts_src/a.prompt").write_text("Changed.\n")


def _file_as_output(tmp_path: Path) -> None:
    (tmp_path / "build").write_text("not a folder")


def _dangling(tmp_path: Path) -> None:
    os.symlink(tmp_path / "prompts_src/gone.prompt", tmp_path / "prompts_src/link.prompt")


def _symlink_loop(tmp_path: Path) -> None:
    (tmp_path / "prompts_src/sub").mkdir()
    os.symlink(tmp_path / "prompts_src", tmp_path / "prompts_src/sub/loop")


def _locked_elsewhere(tmp_path: Path) -> None:
    import fcntl

    (tmp_path / ".promptc-cache").mkdir()
    handle = open(tmp_path / ".promptc-cache/build.lock", "a+b")
    fcntl.flock(handle, fcntl.LOCK_EX)
    _HELD.append(handle)


def _fmt(files: dict[str, str], *, formatter=None, paths=None, vanish: str | None = None):
    """`promptc fmt`'s library: format the tree (and write it), returning its diagnostics."""

    def run(tmp_path: Path):
        from promptc.tools.fmt import format_tree, write_results

        for rel, body in files.items():
            write(tmp_path, f"prompts_src/{rel}", body)
        kwargs = {"formatter": formatter} if formatter else {}
        result = format_tree("prompts_src", paths, APPROX, **kwargs)
        if vanish:  # a folder where the file was: the atomic rename cannot replace it
            (tmp_path / "prompts_src" / vanish).unlink()
            (tmp_path / "prompts_src" / vanish).mkdir()
        return [*result.diagnostics, *write_results(result, "prompts_src")]

    return run


def _trims_every_line(text: str, partial: bool):
    """A broken layout (it trims text the model sees), to show the safety net."""
    from promptc.tools.fmt import Layout

    lines = text.split("\n")
    return Layout("\n".join(line.rstrip() for line in lines), tuple(range(1, len(lines) + 1)))


def _drops_a_line(text: str, partial: bool):
    """A broken layout that drops a repeated directive: the artifact is the same, but the W302 that
    told the author about the repetition would silently go."""
    from promptc.tools.fmt import Layout

    lines = text.split("\n")
    return Layout("\n".join(lines[1:]), (None, *range(1, len(lines))))


def _cli_missing_path(tmp_path: Path):
    from promptc.cli import fmt as fmt_cli

    _, problems = fmt_cli._targets(("prompts_src/nope.prompt",), Path("prompts_src"))
    return problems


def _import(kind: str, files: dict[str, str], *, prepare=None, **options):
    """`promptc import KIND src -o out` through the library, returning its diagnostics."""

    def run(tmp_path: Path):
        from promptc.tools.importers import import_tree

        for rel, body in files.items():
            write(tmp_path, f"src/{rel}", body)
        if prepare:
            prepare(tmp_path)
        return list(import_tree(kind, "src", "out", config=APPROX, **options).diagnostics)

    return run


def _no_engine(kind: str, files: dict[str, str]):
    def run(tmp_path: Path):
        from unittest import mock

        with mock.patch("importlib.util.find_spec", lambda name, *a: None):
            return _import(kind, files, check=True)(tmp_path)

    return run


def _linked_folder(tmp_path: Path) -> None:
    write(tmp_path, "shared/team/help.j2", "Help {{ topic }}.\n")
    (tmp_path / "src/shared").symlink_to(tmp_path / "shared", target_is_directory=True)


def _file_where_folder_goes(tmp_path: Path) -> None:
    write(tmp_path, "out/team", "a file where the import needs a folder\n")


def _users_file(tmp_path: Path) -> None:
    write(tmp_path, "out/greet.prompt", "My own prompt.\n")


_HELD: list = []

CASES = {
    # 1xx
    "E101": _text(b"Hello \xff world\n"),
    "E102": _text(b"Hello\x00 world\n"),
    "W103": _text(b"\xef\xbb\xbfHello\n"),
    "W104": _text(b"Hello\r\nworld\r\n"),
    "E105": _text(b"x" * (8 * 1024 * 1024 + 1)),
    "E106": _project({"prompts_src/a.prompt": "Hi\n"}, prepare=_dangling),
    "E107": _text(b"\xff\xfeH\x00i\x00"),
    # 2xx
    "E200": None,  # unreachable by construction: the grammar accepts any text (see test below)
    "E201": _text("Hello {{ name\n"),
    "E202": _text("Hello ${} there\n"),
    "E203": _text("Hello ${user name} there\n"),
    "E204": _text("{% if ready %}\nGo.\n"),
    "E205": _text("Go.\n{% endif %}\n"),
    "E206": _text("{% for x in xs %}\n{{ x }}\n{% endif %}\n"),
    "E207": _text("----- system -----\n{{ a\n----- user -----\n}}\n"),
    "E208": _text("{% include 'x' %}\n"),
    "E209": _text("{% else %}\n"),
    "E210": _text("".join("{% if a %}" for _ in range(91)) + "".join("{% endif %}" for _ in range(91))),
    "E211": _text("Path ${root}${name}\n", config=Config(tokenizer="approx-bytes/4", defines=(("root", "C:\\"),))),
    # 3xx
    "E301": _text("/// flow: a\n/// flow: b\nHi\n"),
    "W302": _text("/// param: temperature=0.1\n/// param: temperature=0.2\nHi\n"),
    "W303": _text("/// sectoin: rules\nHi\n"),
    "E304": _text("/// param: temperature\nHi\n"),
    "E305": _text("/// role: robot\nHi\n"),
    "W306": _text("/// include: _p\nHi\n", partials={"_p.prompt": "/// owner: me\nText\n"}),
    # 4xx
    "E401": _text("----- tool -----\nHi\n"),
    "E402": _text("Preamble\n----- system -----\nHi\n"),
    "W403": _text("----- system -----\n/// nothing\n----- user -----\nHi\n"),
    "W404": _text("Hi\n--- user ---\nthere\n"),
    "E406": _text("----- system -----\nYou help.\n---- user -----\nHi\n"),
    "W405": _text("----- system -----\nRules.\n----- user -----\nQ\n----- system -----\nNow: ${x}\n"),
    # 5xx
    "E501": _text("/// input: question\nQuestion: ${question}\nAgain: ${questoin}.\n"),
    "W502": _text("/// input: question, unused\nAnswer ${question}.\n"),
    "E503": _text("Answer ${question}.\n", config=Config(tokenizer="approx-bytes/4", require_declared_inputs=True)),
    "E504": _text("Hello ${product.name}\n", config=Config(tokenizer="approx-bytes/4", defines=(("product", "Acme"),))),
    "E505": _text(
        "/// input: order: @order.json\nShip ${order.adress.city}.\n",
        partials={
            "order.json": '{"type": "object", "properties": {"address": {"type": "object"}},\n "additionalProperties": false}\n'
        },
    ),
    "E506": _text("/// input: settings\nKey: ${settings.__class__.__init__.__globals__.API_KEY}\n"),
    # 6xx
    "E601": _text("Line one\nValue: {{ a + }}\n"),
    "E602": _text("{{ x = 1 }}\n"),
    "W603": _text("{{ locals()['name'] }}\n"),
    "W604": _text("Ask the user:\n{{ input }}\n"),
    # 7xx
    "E701": _text("/// section: a\nx\n/// section: a\ny\n"),
    "E702": _text("/// section: rules stable\nUse ${tone}.\n"),
    "E703": _text("/// section: ctx user_context\nNote.\n"),
    "E704": _text("/// section: rules loud\nx\n"),
    "W705": _text("Short stable text.\n", config=Config(tokenizer="approx-bytes/4", provider="openai")),
    "W706": _text("/// section: rules stable\nBuilt on 2024-05-06.\n"),
    "W605": _text("Hello {{ name | title }}.\n"),
    "E707": _text("/// section: rules stable\n{{ 1 + 1 }}\n"),
    "W707": _text("/// param: model=claude-sonnet-4-5, max_tokens=512, temperature=0.2\nHi\n"),
    "W708": _text(
        "/// param: model=claude-sonnet-4-5, max_tokens=512\n----- system -----\nRules.\n"
        + "".join(
            f"----- user -----\n/// section: s{i} stable\nStep {i}.\n/// section: q{i} dynamic\n${{q{i}}}\n"
            for i in range(16)
        )
    ),
    "E709": _text("/// param: model=claude-sonnet-4-5\nHi\n"),
    "W712": _text(
        "/// param: model=us.anthropic.claude-sonnet-4-5-20250929-v1:0, max_tokens=512\n----- system -----\nRules.\n"
        + "".join(
            f"----- user -----\n/// section: s{i} stable\nStep {i}: check the order.\n/// section: q{i} dynamic\n${{q{i}}}\n"
            for i in range(5)
        )
    ),
    "E710": _text("/// param: model=42\nHi\n"),
    "E711": _text("/// param: model=gemini-2.5-flash\nSummarize ${text}\n"),
    "E720": _text("/// budget: total<=5\n/// input: diff: str(max_tokens=10)\nReview ${diff}\n"),
    "E721": _text("/// budget: total<=500\n/// input: diff\nReview ${diff}\n"),
    "E722": _text(
        "/// param: model=gpt-4o, max_tokens=128000\n/// input: diff: str(max_tokens=10)\n----- user -----\n${diff}\n"
    ),
    "E730": _text("/// param: model=gpt-4o, temperature=hot\nHi\n"),
    "W710": _text(
        "----- system -----\nYou are the support assistant for ${product}. Answer briefly and politely, cite the\n"
        "relevant help-centre article when there is one, and never invent prices or policies.\n"
        "----- user -----\nHow do I reset my password?\n"
        "----- assistant -----\nOpen Settings → Account → Password, choose Reset and follow the link we email you.\n"
        "----- user -----\n${question}\n"
    ),
    # 8xx
    "E801": _text("/// include: _tone.prompt\nHi\n", partials={"_tones.prompt": "Be kind.\n"}),
    "E802": _text("/// include: ../outside.prompt\nHi\n"),
    "E803": _text(
        "/// include: _a\nHi\n", partials={"_a.prompt": "/// include: _b\n", "_b.prompt": "/// include: _a\n"}
    ),
    "E804": _text("/// include: _p\nHi\n", partials={"_p.prompt": "----- user -----\nx\n"}),
    "E805": _text("/// include: other\nHi\n", partials={"other.prompt": "x\n"}),
    "E806": _text(
        "/// include: _p0\nHi\n",
        partials={f"_p{i}.prompt": f"/// include: _p{i + 1}\nLevel {i}.\n" for i in range(70)}
        | {"_p70.prompt": "End.\n"},
    ),
    "E820": _text("/// tools: tools/serch.json\nHi\n", partials={"tools/search.json": "[]"}),
    "E821": _text(
        "/// tools: tools/search.json\nHi\n",
        partials={"tools/search.json": '{"name": "search",\n  "description": "x"\n  "input_schema": {}}\n'},
    ),
    "E822": _text(
        "/// tools: search.json\nHi\n",
        partials={
            "search.json": '{"name": "web search", "description": "Search.", "input_schema": {"type": "object"}}\n'
        },
    ),
    "E823": _text(
        "/// tools: search.json\nHi\n",
        partials={
            "search.json": '{"name": "search", "description": "Search.",\n "input_schema": {"type": "object",\n'
            '  "properties": {"q": {"type": "strin"}}}}\n'
        },
    ),
    "E824": _text(
        "/// include: _agent\n/// tools: more.json\nHi\n",
        partials={
            "_agent.prompt": "/// tools: tools.json\nYou are an agent.\n",
            "tools.json": '[{"name": "search", "description": "A.", "input_schema": {"type": "object"}}]\n',
            "more.json": '[{"name": "search", "description": "B.", "input_schema": {"type": "object"}}]\n',
        },
    ),
    "E825": _text(
        "/// input: order: @order.json\nOrder ${order}\n",
        partials={"order.json": '{"type": "object",\n "properties": {"code": {"type": "string", "pattern": "^A"}}}\n'},
    ),
    "E826": _text(
        "/// input: tree: @tree.json\nTree ${tree}\n",
        partials={
            "tree.json": '{"type": "object",\n "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}\n'
        },
    ),
    "W827": _text(
        "/// output: answer.json\nAnswer.\n",
        partials={"answer.json": '{"type": "object",\n "properties": {"code": {"type": "string", "pattern": "^A"}}}\n'},
    ),
    # 9xx
    "E901": _text("Hi\n", config=Config(tokenizer="gpt-17")),
    "E902": _project({"pyproject.toml": "[tool.promptc]\ndefault_role = 'robot'\n"}, action="config"),
    "W903": _project({"pyproject.toml": "[tool.promptc]\ntokeniser = 'cl100k_base'\n"}, action="config"),
    "E904": _project({"prompts_src/a.prompt": "Hi\n"}, action="build", prepare=_file_as_output),
    "E905": _project({"prompts_src/a.prompt": "Hi\n"}, action="locked", prepare=_stale_build),
    "E906": _project({}, action="check", prepare=lambda t: os.rmdir(t / "prompts_src")),
    "E907": _project({"prompts_src/a.prompt": "Hi\n"}, action="build", prepare=_locked_elsewhere),
    "E908": _project({"prompts_src/manifest.prompt": "Hi\n"}),
    "E910": lambda tmp_path: (
        write(tmp_path, "prompts_src/a.prompt", "Hi\n"),
        check("prompts_src", "prompts_src/build", APPROX).diagnostics,
    )[1],
    "E911": _project({"prompts_src/a.prompt": "Hi\n"}, action="build", prepare=_linked_output),
    "E917": lambda tmp_path: (
        write(tmp_path, "prompts_src/a.prompt", "Hi\n"),
        write(tmp_path, "out/.keep", ""),
        os.chdir(tmp_path / "out"),
        build("../prompts_src", ".", APPROX).diagnostics,
    )[3],
    "E912": _project(
        {"prompts_src/a.prompt": "Hi\n", "build/notes.md": "mine\n", "build/img/logo.png": "png"}, action="build"
    ),
    "E913": _project({"prompts_src/a.prompt": "Hi\n"}, action="build", prepare=_linked_trash),
    "E914": _configured('python_bindings = "../notes.txt"'),
    "E915": _configured('python_bindings = "app/prompts.py"', prepare=_linked_app),
    "E916": _configured(
        'python_bindings = "app/prompts.py"', prepare=lambda t: write(t, "app/prompts.py", "def mine(): ...\n")
    ),
    "E920": lambda tmp_path: (
        write(tmp_path, "prompts_src/a-b.prompt", "Hi.\n"),
        write(tmp_path, "prompts_src/a_b.prompt", "Hi.\n"),
        build("prompts_src", "build", APPROX),
        __import__("promptc.bindings.python", fromlist=["python_module"]).python_module("build")[1],
    )[3],
    "W921": lambda tmp_path: (
        write(tmp_path, "prompts_src/count.prompt", "/// input: n: int\n{{ n + 1 }}\n"),
        build("prompts_src", "build", APPROX),
        __import__("promptc.bindings.typescript", fromlist=["typescript_module"]).typescript_module("build")[1],
    )[2],
    "W909": _project({"prompts_src/a.prompt": "Hi\n"}, prepare=_symlink_loop),
    # 93x: the formatter
    "E930": _fmt({"a.prompt": "///  flow: f\nHello ${}\n"}),
    "E931": _fmt({"a.prompt": "Keep these:  \nspaces.\n"}, formatter=_trims_every_line),
    "E932": _fmt({"a.prompt": "/// param: t=1\n/// param: t=1\nHello.\n"}, formatter=_drops_a_line),
    "E933": _fmt({"a.prompt": "///flow:f\nHello.\n"}, vanish="a.prompt"),
    "E934": _cli_missing_path,
    # 94x: the traffic file
    "E945": lambda tmp_path: (
        write(tmp_path, "traffic.json", '{"support/chat": 12000,\n "helpdesk/agent": 800,}\n'),
        __import__("promptc.tools.cost", fromlist=["read_traffic"]).read_traffic("traffic.json")[1],
    )[1],
    "E946": lambda tmp_path: (
        write(tmp_path, "traffic.json", '{"support/chat": 12000,\n "helpdesk/agent": "800 a day"}\n'),
        __import__("promptc.tools.cost", fromlist=["read_traffic"]).read_traffic("traffic.json")[1],
    )[1],
    "W947": lambda tmp_path: (
        write(tmp_path, "traffic.json", '{"support/chat": 12000, "helpdesk/agnet": 800}\n'),
        __import__("promptc.tools.cost", fromlist=["check_traffic"]).check_traffic(
            {"support/chat": 12000, "helpdesk/agnet": 800}, ["support/chat", "helpdesk/agent"], "traffic.json"
        ),
    )[1],
    "W948": lambda tmp_path: (
        write(
            tmp_path, "prompts_src/support/chat.prompt", "/// param: model=claude-opus-4-9, max_tokens=600\nBe brief.\n"
        ),
        __import__("promptc.tools.cost", fromlist=["x"]).unpriced_warnings(
            [
                (
                    __import__("promptc.tools.cost", fromlist=["x"]).PromptFacts(
                        "support/chat",
                        "claude-opus-4-9",
                        "anthropic",
                        10,
                        None,
                        0,
                        0,
                        None,
                        source="support/chat.prompt",
                    ),
                    __import__("promptc.tools.cost", fromlist=["x"]).prices().lookup("anthropic", "claude-opus-4-9"),
                )
            ],
            "prompts_src",
        ),
    )[1],
    # 95x: usage records and the cache advisor
    "E950": lambda tmp_path: [__import__("promptc.tools.reconcile", fromlist=["x"]).records_problem("usage.jsonl")],
    "W951": lambda tmp_path: _records(tmp_path, '{"hello": "world"}\n{"cut off\n'),
    "W953": lambda tmp_path: _records(
        tmp_path,
        '{"schema": "promptc.usage/1", "prompt": "a", "shape": "openai", "timestamp": "2026-12-01T09:00:00.000Z", '
        '"input_tokens": "²"}\n',
    ),
    "E952": lambda tmp_path: _advice_write(tmp_path),
    # 94x: diff's old tree
    "E940": lambda tmp_path: _old_tree(tmp_path, "HEAD", git=False),
    "E941": lambda tmp_path: _old_tree(tmp_path, "main~7"),
    "E942": lambda tmp_path: _old_tree(tmp_path, None),
    "E943": lambda tmp_path: _old_tree(tmp_path, "HEAD", lose_blob=True),
    # 96x-97x: promptc import
    "E960": _import("prompty", {"chat.prompty": "---\nname: chat\nmodel: &m gpt-4o\nalias: *m\n---\nuser:\nHi\n"}),
    "E961": _import(
        "prompty",
        {
            "chat.prompty": "---\nmodel: gpt-4o\ninputs:\n  - name: history\n    kind: thread\n---\nsystem:\nBe brief.\n\n{{history}}\n"
        },
    ),
    "E962": _import("jinja", {"greet.j2": "Dear {{ name | title }},\nthanks for writing.\n"}),
    "E963": _import("dotprompt", {"greet.prompt": "---\nmodel: gemini-2.5-flash\n---\n{{#if vip}}\nWelcome back!\n"}),
    "E964": _import("dotprompt", {"greet.prompt": "{{> signature}}\nHello {{name}}.\n"}),
    "E965": _import("jinja", {"greet.j2": "Hello {{ name }}.\n"}, prepare=_users_file),
    "E966": _import("jinja", {"team/greet.j2": "Hello {{ name }}.\n"}, prepare=_file_where_folder_goes),
    "E967": lambda tmp_path: _check_differs(tmp_path),
    "E968": _no_engine("jinja", {"greet.j2": "Hello {{ name }}.\n"}),
    "E969": lambda tmp_path: (
        write(tmp_path, "inputs.json", '{"share": {"total": 10, "people": 0}}\n'),
        _import("jinja", {"share.j2": "Each pays {{ total / people }}.\n"}, check=True, inputs="inputs.json")(tmp_path),
    )[1],
    "E970": lambda tmp_path: (
        write(tmp_path, "inputs.json", '{"greting": {"name": "Ann"}}\n'),
        _import("jinja", {"greeting.j2": "Hello {{ name }}.\n"}, check=True, inputs="inputs.json")(tmp_path),
    )[1],
    "E971": _import(
        "dotprompt",
        {
            "count.prompt": '---\ninput:\n  schema:\n    type: object\n    properties:\n      n: {type: string, pattern: "^a"}\n---\n{{#if n}}Count: {{n}}{{/if}}\n'
        },
    ),
    "E973": _import("dotprompt", {"leak.prompt": "---\nmodel: gemini-2.5-flash\n---\nKey: {{settings.__class__}}\n"}),
    "E975": _import(
        "jinja", {"greet.j2": "Hello {{ name }}.\n"}, prepare=lambda tmp_path: os.symlink("gone.j2", "src/old.j2")
    ),
    "W976": _import("jinja", {"greet.j2": "Hello {{ name }}.\n"}, prepare=_linked_folder),
    # a partial of 1 MiB printed 17 times on one line: 17 MiB, past the 16 MiB the build's includes expand to
    "E974": _import(
        "dotprompt", {"book.prompt": "Contents: " + "{{> page}}" * 17 + "\n", "_page.prompt": "x" * (1 << 20)}
    ),
    "W972": _import(
        "prompty",
        {
            "chat.prompty": "---\nmodel:\n  id: gpt-4o\n  connection:\n    kind: key\n    apiKey: ${env:OPENAI_API_KEY}\n---\nuser:\nHi\n"
        },
    ),
}


def _records(tmp_path: Path, text: str):
    from promptc.tools.reconcile import ReadStats, read_records

    write(tmp_path, "usage.jsonl", text)
    stats = ReadStats()
    list(read_records("usage.jsonl", stats))
    return stats.diagnostics


def _advice_write(tmp_path: Path):
    """--advise --write for a prompt whose source left the source folder after the build."""
    from decimal import Decimal

    from promptc.passes.context import SourceTree
    from promptc.tools.cost import advise, facts_from_artifact, plan_writes

    long = "Answer from the article you cite. " * 200
    source = (
        f"/// param: model=claude-sonnet-4-5, max_tokens=99\n----- system -----\n{long}\n----- user -----\n${{q}}\n"
    )
    write(tmp_path, "prompts_src/agent.prompt", source)
    (compiled,) = build("prompts_src", "build", Config()).prompts
    artifact = compiled.load_artifact()
    advice = advise([facts_from_artifact(artifact)], {"agent": Decimal(30)})
    return [w.diagnostic for w in plan_writes(advice, SourceTree(files={}, root_display="prompts_src"), Config())]


def _check_differs(tmp_path: Path):
    """A converted prompt that a (deliberately broken) importer got wrong: --check catches it."""
    from promptc.tools.importers import compile_converted, convert
    from promptc.tools.importers.check import run_checks

    write(tmp_path, "src/greet.j2", "Hello {{ name }}.\nBye.\n")
    converted = convert("jinja", {"greet.j2": (tmp_path / "src/greet.j2").read_bytes()}, root_display="src")
    converted[0].text = converted[0].text.replace("Bye.", "Goodbye.")
    _tree, compiled = compile_converted(converted, APPROX)
    return run_checks("jinja", tmp_path / "src", converted, compiled, None, {})


def _old_tree(tmp_path: Path, revision: str | None, git: bool = True, lose_blob: bool = False):
    import subprocess

    from promptc.cli.oldtree import OldTreeError, from_folder, from_revision

    write(tmp_path, "prompts_src/a.prompt", "Hi\n")
    if git:
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "one"]):
            subprocess.run(["git", "-c", "user.email=t@e", "-c", "user.name=t", *args], cwd=tmp_path, check=True)
    if lose_blob:
        oid = subprocess.run(["git", "rev-parse", "HEAD:prompts_src/a.prompt"], cwd=tmp_path, capture_output=True)
        name = oid.stdout.decode().strip()
        (tmp_path / ".git" / "objects" / name[:2] / name[2:]).unlink()
    try:
        if revision is None:
            from_folder("old_src")
        else:
            from_revision(revision, "prompts_src", "build")
    except OldTreeError as exc:
        return [exc.diagnostic]
    return []


EXPECTED_DIR = Path(__file__).parent.parent / "compiler" / "data" / "diagnostics"  # ships: `promptc explain` shows them


def test_every_code_has_an_exact_text_case() -> None:
    assert sorted(CASES) == sorted(CODES)


@pytest.mark.parametrize("code", [c for c in sorted(CASES) if CASES[c] is not None])
def test_exact_text(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prompts_src").mkdir(exist_ok=True)
    if code == "E907":
        import promptc.driver as build_module
        import promptc.runtime.buildfolder as output_module

        original = output_module.output_lock
        monkeypatch.setattr(build_module, "output_lock", lambda out, timeout=0.2: original(out, timeout))
    try:
        diagnostics = CASES[code](tmp_path)
    finally:
        while _HELD:
            _HELD.pop().close()
    matching = [d for d in diagnostics if d.code == code]
    assert matching, f"{code} not produced; got {[d.code for d in diagnostics]}"
    rendered = render_text(matching[0]).replace(str(tmp_path), "<tmp>")
    expected_file = EXPECTED_DIR / f"{code}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        expected_file.parent.mkdir(parents=True, exist_ok=True)
        expected_file.write_text(rendered + "\n", encoding="utf-8")
    assert rendered + "\n" == expected_file.read_text(encoding="utf-8")


def test_e200_grammar_accepts_any_text() -> None:
    """E200 is the parser's safety net; every character is covered by some terminal, so arbitrary
    text (here every code point class the grammar singles out) parses without it."""
    text = "".join(chr(c) for c in range(1, 0x250)) + "\n/// x\n----- user -----\n${a}{{b}}{#c#}{%if d%}{%endif%}\\${"
    result = compile_text(text, config=APPROX)
    assert "E200" not in {d.code for d in result.diagnostics}
