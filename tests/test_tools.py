"""`/// tools:` and `/// output:` in builds: resolution, order, checks, the cache proof over them,
incremental rebuilds when a tool file changes, and the profile's numbers (model, tokenizer,
cacheable tokens)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import orjson
import pytest

from promptc import compile_text
from promptc.driver import build
from promptc.facts.config import Config, load_config
from promptc.syntax.jsonfile import MAX_DEPTH, locate, read_json
from promptc.tools.diff import diff_manifests

from .conftest import run_promptc, write

APPROX = Config(tokenizer="approx-bytes/4")


def tool(name: str, description: str = "Does a thing.", **properties: str) -> dict:
    schema = {"type": "object", "properties": {k: {"type": v} for k, v in properties.items()}}
    return {"name": name, "description": description, "input_schema": schema}


def codes_of(result) -> list[str]:
    return [d.code for d in result.diagnostics]


def test_tools_keep_first_seen_order_across_partials_and_resolve_against_their_file() -> None:
    result = compile_text(
        "/// tools: tools/b.json\n/// include: shared/_identity\n/// tools: tools/a.json, tools/b.json\nHi\n",
        partials={
            "shared/_identity.prompt": "/// tools: kit/c.json\nYou are an agent.\n",
            "shared/kit/c.json": json.dumps([tool("c"), tool("d")]),
            "tools/a.json": json.dumps(tool("a")),
            "tools/b.json": json.dumps(tool("b")),
        },
        config=APPROX,
    )
    assert result.artifact is not None, result.diagnostics
    assert [t.name for t in result.artifact.tools] == ["b", "c", "d", "a"]  # b named twice: once
    assert result.artifact.resources == ("shared/kit/c.json", "tools/a.json", "tools/b.json")
    assert result.resources == result.artifact.resources


def test_output_schema_is_named_by_its_title_else_its_file() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    titled = compile_text(
        "/// output: s/answer.json\nHi\n", partials={"s/answer.json": json.dumps({**schema, "title": "reply"})}
    )
    assert titled.artifact.output_schema.name == "reply"
    plain = compile_text("/// output: s/answer.json\nHi\n", partials={"s/answer.json": json.dumps(schema)})
    assert plain.artifact.output_schema.name == "answer"
    assert plain.artifact.output_schema.schema == schema
    bad = compile_text(
        "/// output: s/answer.json\nHi\n", partials={"s/answer.json": json.dumps({**schema, "title": "The Answer"})}
    )
    assert codes_of(bad) == ["E823"] and bad.artifact is None


@pytest.mark.parametrize(
    ("files", "code", "needle"),
    [
        ({"t.json": "[]"}, "E822", "the tool list is empty"),
        ({"t.json": "null"}, "E822", "a tool is an object"),  # JSON null is a value, not a read failure
        ({"t.json": json.dumps({"name": "x", "input_schema": {"type": "object"}})}, "E822", "has no description"),
        ({"t.json": json.dumps({**tool("x"), "parameters": {}})}, "E822", "unknown key `parameters`"),
        ({"t.json": json.dumps({**tool("x"), "input_schema": {"type": "array"}})}, "E823", "root must be"),
        ({"t.json": '{"name": "a", "name": "b"}'}, "E821", 'key "name" given twice'),
        ({"t.json": "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)}, "E821", "nests deeper"),
        ({"t.json": b"\xff\xfe{}"}, "E107", "UTF-16"),
        ({"t.json": json.dumps(tool("x", **{"q": "string"})).replace('"string"', "NaN")}, "E821", "invalid JSON"),
        ({}, "E820", "not found"),
    ],
)
def test_bad_tool_files_are_located_diagnostics(files, code, needle, tmp_path: Path) -> None:
    write(tmp_path, "prompts_src/p.prompt", "/// tools: t.json\nHi\n")
    for rel, body in files.items():
        write(tmp_path, f"prompts_src/{rel}", body)
    result = build(tmp_path / "prompts_src", tmp_path / "build", APPROX)
    found = [d for d in result.diagnostics if d.code == code]
    assert found, result.diagnostics
    assert needle in found[0].message
    assert not (tmp_path / "build").exists()  # nothing written


def test_paths_that_leave_the_source_folder_are_refused(tmp_path: Path) -> None:
    write(tmp_path, "outside.json", json.dumps(tool("x")))
    write(tmp_path, "prompts_src/p.prompt", "/// tools: ../outside.json\nHi\n")
    write(tmp_path, "prompts_src/q.prompt", "/// tools: linked.json\nHi\n")
    write(tmp_path, "prompts_src/r.prompt", "/// tools: /etc/tools.json\nHi\n")
    os.symlink(tmp_path / "outside.json", tmp_path / "prompts_src" / "linked.json")
    result = build(tmp_path / "prompts_src", tmp_path / "build", APPROX)
    messages = sorted(d.message for d in result.diagnostics if d.code == "E820")
    assert len(messages) == 3
    assert any("leaves the source folder" in m for m in messages)
    assert any("symlink that points outside" in m for m in messages)
    assert any("is absolute" in m for m in messages)


def test_the_schema_check_is_iterative_and_bounded() -> None:
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    src, value, diagnostics = read_json("t.json", deep.encode())
    assert value is not None and not diagnostics
    schema = {"type": "object", "properties": {}}
    node = schema["properties"]
    for i in range(MAX_DEPTH // 2 - 2):
        node[f"p{i}"] = {"type": "object", "properties": {}}
        node = node[f"p{i}"]["properties"]
    result = compile_text(
        "/// tools: t.json\nHi\n", partials={"t.json": json.dumps(tool("x") | {"input_schema": schema})}
    )
    assert result.artifact is not None, result.diagnostics


def test_locate_finds_values_keys_and_falls_back_to_the_deepest_part() -> None:
    text = '[{"name": "a"},\n {"name": "b", "input_schema": {"type": "strin"}}]'
    assert text[locate(text, [1, "input_schema", "type"]) :].startswith('"strin"')
    assert text[locate(text, [1, "name"]) :].startswith('"b"')
    assert text[locate(text, [1, "missing"]) :].startswith("{")
    assert locate(text, []) == 0


# ---------------------------------------------------------------------------------------------
# The cache proof covers the tools and the schema


def _project(root: Path, description: str, dynamic: str = "Now: ${state}") -> None:
    write(
        root,
        "prompts_src/agent.prompt",
        f"/// include: _id\n/// output: answer.json\nRules.\n/// section: live dynamic\n{dynamic}\n",
    )
    write(root, "prompts_src/_id.prompt", "/// tools: tools.json\nYou are an agent.\n")
    write(root, "prompts_src/tools.json", json.dumps([tool("search", description, q="string")]))
    write(root, "prompts_src/answer.json", json.dumps({"type": "object", "properties": {"a": {"type": "string"}}}))


def _manifest(root: Path) -> dict:
    return orjson.loads((root / "build" / "manifest.json").read_bytes())


def test_editing_a_tool_file_rebuilds_and_busts_the_cache_but_dynamic_text_does_not(tmp_path: Path) -> None:
    _project(tmp_path, "Search the docs.")
    first = build(tmp_path / "prompts_src", tmp_path / "build", APPROX)
    assert first.diagnostics == () or all(d.severity == "warning" for d in first.diagnostics)
    before = _manifest(tmp_path)
    again = build(tmp_path / "prompts_src", tmp_path / "build", APPROX)
    assert [p.reused for p in again.prompts] == [True]
    # a new tool description: the prompt is compiled again and its prefix moves
    write(tmp_path, "prompts_src/tools.json", json.dumps([tool("search", "Search the manual.", q="string")]))
    edited = build(tmp_path / "prompts_src", tmp_path / "build", APPROX)
    assert [p.reused for p in edited.prompts] == [False]
    after = _manifest(tmp_path)
    diff = diff_manifests(before, after)
    assert [b.name for b in diff.busts] == ["agent"]
    artifact = orjson.loads((tmp_path / "build" / "agent.json").read_bytes())
    assert artifact["tools"][0]["description"] == "Search the manual."
    # dynamic text changes nothing in the prefix
    shutil.copytree(tmp_path / "build", tmp_path / "old")
    _project(tmp_path, "Search the manual.", dynamic="Today: ${state}")
    build(tmp_path / "prompts_src", tmp_path / "build", APPROX)
    assert diff_manifests(after, _manifest(tmp_path)).busts == ()
    report = run_promptc(
        "diff", str(tmp_path / "old" / "manifest.json"), str(tmp_path / "build" / "manifest.json"), cwd=tmp_path
    )
    assert report.returncode == 0 and "diff: 0 cache busts" in report.stdout, report.stdout


def test_the_prefix_covers_tools_and_schema_first(tmp_path: Path) -> None:
    _project(tmp_path, "Search the docs.")
    build(tmp_path / "prompts_src", tmp_path / "build", APPROX)
    artifact = orjson.loads((tmp_path / "build" / "agent.json").read_bytes())
    cache = artifact["cache"]
    assert cache["head_chars"] > 0 and cache["prefix_chars"] == cache["head_chars"] + len("You are an agent.\nRules.")
    assert artifact["totals"]["chars"] > cache["prefix_chars"]


# ---------------------------------------------------------------------------------------------
# Profiles: model, tokenizer, cacheable tokens


def test_the_model_picks_the_profile_and_the_tokenizer(tmp_path: Path) -> None:
    write(tmp_path, "prompts_src/gpt.prompt", "/// param: model=gpt-4o\nHello there.\n")
    write(
        tmp_path,
        "prompts_src/claude.prompt",
        "/// param: model=claude-opus-4-5, max_tokens=9\n----- system -----\nHello there.\n----- user -----\n${q}\n",
    )
    write(tmp_path, "prompts_src/none.prompt", "Hello there.\n")
    result = build(tmp_path / "prompts_src", tmp_path / "build")
    assert not [d for d in result.diagnostics if d.severity == "error"]
    entries = _manifest(tmp_path)["artifacts"]
    assert (entries["gpt"]["provider"], entries["gpt"]["tokenizer"], entries["gpt"]["tokens_exact"]) == (
        "openai",
        "o200k_base",
        True,
    )
    assert (entries["claude"]["provider"], entries["claude"]["tokenizer"], entries["claude"]["tokens_exact"]) == (
        "anthropic",
        "cl100k_base",
        False,
    )
    assert entries["none"]["provider"] is None and entries["none"]["cacheable_tokens"] is None
    claude = orjson.loads((tmp_path / "build" / "claude.json").read_bytes())
    assert claude["model"] == "claude-opus-4-5" and "model" not in claude["params"]
    assert claude["provider"]["min_cacheable_tokens"] == 4096 and claude["provider"]["family"] == "claude-opus-4-5"
    assert claude["cache"]["cacheable_tokens"] == 0
    w705 = [d for d in result.diagnostics if d.code == "W705" and d.path.endswith("claude.prompt")]
    assert "claude-opus-4-5 (anthropic) caches prefixes of at least 4096 tokens" in w705[0].message


def test_openai_caches_in_128_token_steps(tmp_path: Path) -> None:
    text = "word " * 1300
    write(tmp_path, "prompts_src/long.prompt", f"{text}\n")
    build(tmp_path / "prompts_src", tmp_path / "build", Config(provider="openai", tokenizer="approx-bytes/4"))
    artifact = orjson.loads((tmp_path / "build" / "long.json").read_bytes())
    tokens = artifact["cache"]["prefix_tokens"]
    assert tokens == 1625
    assert artifact["cache"]["cacheable_tokens"] == 1024 + (tokens - 1024) // 128 * 128 == 1536
    assert artifact["tokenizer"] == {"name": "approx-bytes/4", "exact": False}  # configured, not the profile's


def test_config_model_and_cache_ttl(tmp_path: Path) -> None:
    write(
        tmp_path,
        "pyproject.toml",
        "[tool.promptc]\nmodel = 'claude-sonnet-4-5'\ncache_ttl = '1h'\ntokenizer = 'approx-bytes/4'\n",
    )
    write(
        tmp_path,
        "prompts_src/p.prompt",
        "/// param: max_tokens=20\n----- system -----\nStable.\n----- user -----\n${q}\n",
    )
    config, diagnostics = load_config(tmp_path / "pyproject.toml")
    assert not diagnostics and config.model == "claude-sonnet-4-5" and config.cache_ttl == "1h"
    result = run_promptc("build", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    rendered = run_promptc("render", "p", "--var", "q=hi", "--shape", "anthropic", cwd=tmp_path, real=True)
    assert rendered.returncode == 0, rendered.stderr
    body = json.loads(rendered.stdout)
    assert body["model"] == "claude-sonnet-4-5"
    assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    write(tmp_path, "pyproject.toml", "[tool.promptc]\ncache_ttl = '2h'\n")
    assert "`cache_ttl` must be one of 5m, 1h" in load_config(tmp_path / "pyproject.toml")[1][0].message


def test_cache_ttl_directive_is_checked() -> None:
    result = compile_text("/// cache_ttl: 10m\nHi\n")
    assert codes_of(result) == ["E710"]
    assert "did" not in result.diagnostics[0].message


def test_inspect_shows_the_model_profile_tools_and_cacheable_tokens(tmp_path: Path) -> None:
    _project(tmp_path, "Search the docs.")
    write(
        tmp_path,
        "prompts_src/agent.prompt",
        "/// param: model=gpt-4o\n" + (tmp_path / "prompts_src/agent.prompt").read_text(),
    )
    assert run_promptc("build", "prompts_src", "-o", "build", cwd=tmp_path).returncode == 0
    shown = run_promptc("inspect", "agent", "-o", "build", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "model:   gpt-4o  profile: openai (minimum 1024 tokens)" in shown.stdout
    assert "tokens:  o200k_base (exact)" in shown.stdout
    assert "tools:   search" in shown.stdout and "output:  answer" in shown.stdout
    assert "cacheable 0" in shown.stdout and "(tools and schema " in shown.stdout


# ---------------------------------------------------------------------------------------------
# One error per mistake, every schema problem at its keyword, in promptc's words


def _tool_errors(body: str) -> list[tuple[str, int, int, str, str | None]]:
    found = compile_text("/// tools: t.json\nHi\n", partials={"t.json": body}).diagnostics
    return [(d.code, d.line, d.col, d.message, d.hint) for d in found]


def test_an_openai_tool_file_is_one_error_and_its_inner_mistakes_are_still_found() -> None:
    wrapped = {
        "type": "function",
        "function": {"name": "search", "description": "Search.", "parameters": {"type": "object", "properties": {}}},
    }
    ((code, line, col, message, hint),) = _tool_errors(json.dumps(wrapped))
    assert (code, line, col) == ("E822", 1, 10)  # at `"function"`, the value of `type`
    assert message.startswith('this is an OpenAI tool (`{"type": "function", "function": {…}}`)')
    assert "with `parameters` renamed `input_schema`" in hint
    wrapped["function"]["parameters"]["properties"] = {"q": {"type": "strin"}}
    found = _tool_errors(json.dumps(wrapped))
    assert [c for c, *_ in found] == ["E822", "E823"]
    assert (
        found[1][3]
        == "tool `search`: parameters: `type` is `strin`, which is not a JSON Schema type (at `properties/q/type`)"
    )
    assert found[1][4] == "did you mean `string`?"
    # OpenAI's inner object on its own: `parameters` is one error, not also "no input_schema"
    inner = {"name": "fetch", "description": "Fetch.", "parameters": {"type": "object", "properties": {}}}
    ((code, _, _, message, hint),) = _tool_errors(json.dumps(inner))
    assert code == "E822" and message.startswith("`parameters` is OpenAI's name")
    assert hint == "rename the key `input_schema`; the openai and gemini shapes send it as `parameters`"


def test_every_schema_problem_is_reported_at_its_keyword_with_its_own_hint() -> None:
    body = (
        '{"name": "lookup", "description": "Look up.", "input_schema": {"type": "object",\n'
        '  "properties": {"id": {"type": "strin"}, "n": {"type": "integr", "minimum": "0"},'
        ' "type": {"type": "string"}},\n'
        '  "requird": ["id"], "required": "id"}}\n'
    )
    found = _tool_errors(body)
    assert [(c, line, col) for c, line, col, _, _ in found] == [
        ("E823", 2, 33),
        ("E823", 2, 57),
        ("E823", 2, 78),
        ("E823", 3, 3),  # the misspelt key itself
        ("E823", 3, 34),
    ]
    messages = [m.split(": ", 2)[2] for _, _, _, m, _ in found]
    assert messages == [
        "`type` is `strin`, which is not a JSON Schema type (at `properties/id/type`)",
        "`type` is `integr`, which is not a JSON Schema type (at `properties/n/type`)",
        "`minimum` must be a number, not a string (at `properties/n/minimum`)",
        "`requird` is not a JSON Schema keyword, so it checks nothing (at `requird`)",
        "`required` must be an array, not a string (at `required`)",
    ]
    hints = [h for *_, h in found]
    assert hints[0] == "did you mean `string`?" and hints[1] == "did you mean `integer`?"
    assert hints[3] == "did you mean `required`?" and hints[4] == 'list the names: `"required": ["id"]`'
    assert not any("is not valid under any of the given schemas" in m for _, _, _, m, _ in found)


def test_a_property_called_type_is_a_name_not_the_keyword() -> None:
    schema = {"type": "object", "properties": {"type": {"type": "string"}, "requird": {"type": "boolean"}}}
    assert _tool_errors(json.dumps(tool("x") | {"input_schema": schema})) == []
