"""Each request shape, passed as it is to the official SDK call of its provider, on a client whose
HTTP transport captures the request instead of sending it (tests/sdk_capture.py): the SDK accepts
it, and the body it would send carries the model, the tools, the output schema, the parameters and
the cache breakpoints. The parameter tables in promptc/data/providers.json are checked against the
signatures of the SDK versions pyproject.toml pins."""

from __future__ import annotations

import inspect
import json
import re

import pytest

from promptc import load
from promptc.driver import build
from promptc.facts.profiles import data, provider_of_model, shape_params
from promptc.runtime.render import RenderError, render_artifact

from . import sdk_capture
from .conftest import write

# The SDKs are imported by the tests that use them, not at collection: google-genai alone takes
# over a second to import, and every xdist worker collects every module.

TOOLS = [
    {
        "name": "search_docs",
        "description": "Search the product documentation.",
        "input_schema": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"],
        },
    },
    {
        "name": "open_ticket",
        "description": "Open a support ticket.",
        "input_schema": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]},
    },
]
ANSWER = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
    "required": ["answer", "confidence"],
    "additionalProperties": False,
}
AGENT = (
    '/// param: model=claude-sonnet-4-5, max_tokens=700, stop="</answer>", temperature=0.2\n'
    "/// output: schemas/answer.json\n"
    "/// cache_ttl: 1h\n"
    "----- system -----\n"
    "/// include: _identity\n"
    "Answer from the documentation only.\n"
    "/// section: live dynamic\n"
    "Customer tier: ${tier}\n"
    "----- user -----\n"
    "${question}\n"
)
IDENTITY = "/// tools: tools/docs.json\nYou are the support agent of Acme.\n"
INPUTS = {"tier": "gold", "question": "How do I reset my password?"}


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("sdk")
    write(root, "prompts_src/agent.prompt", AGENT)
    write(root, "prompts_src/_identity.prompt", IDENTITY)
    write(root, "prompts_src/tools/docs.json", json.dumps(TOOLS, indent=2))
    write(root, "prompts_src/schemas/answer.json", json.dumps(ANSWER, indent=2))
    write(
        root,
        "prompts_src/dynamic_first.prompt",
        "/// tools: tools/docs.json\n/// param: max_tokens=50\n----- system -----\n${q}\n----- user -----\nHi\n",
    )
    result = build(root / "prompts_src", root / "build")
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    codes = {d.code for d in result.diagnostics}
    assert "W707" in codes  # temperature: the anthropic request takes none
    return load(root / "build")


def test_anthropic_sdk_accepts_the_shape(runtime) -> None:
    request = runtime.render("agent", INPUTS).as_shape("anthropic")
    sent = sdk_capture.capture_anthropic(request)
    assert sent["method"] == "POST" and sent["url"].endswith("/v1/messages")
    body = sent["json"]
    assert body["model"] == "claude-sonnet-4-5" and body["max_tokens"] == 700
    assert body["stop_sequences"] == ["</answer>"]
    assert "temperature" not in body  # not a parameter of this SDK's call (W707 at build)
    assert [t["name"] for t in body["tools"]] == ["search_docs", "open_ticket"]
    assert body["tools"][0]["input_schema"] == TOOLS[0]["input_schema"]
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": ANSWER}}
    # cache order: tools, system, messages; the stable prefix ends after the identity and rules
    assert body["system"][0] == {
        "type": "text",
        "text": "You are the support agent of Acme.\nAnswer from the documentation only.",
        "cache_control": {"type": "ephemeral", "ttl": "1h"},
    }
    assert body["system"][1] == {"type": "text", "text": "Customer tier: gold"}
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": INPUTS["question"]}]}]
    assert all("cache_control" not in tool for tool in body["tools"])


def test_anthropic_breakpoint_after_the_tools_when_they_are_the_whole_stable_part(runtime) -> None:
    artifact = runtime.artifact("dynamic_first")
    assert artifact.cache.prefix_end is not None and artifact.cache.prefix_end.message is None
    assert artifact.cache.prefix_tokens == artifact.cache.head_tokens > 0
    request = runtime.render("dynamic_first", q="hello").as_shape("anthropic", model="claude-haiku-4-5")
    body = sdk_capture.capture_anthropic(request)["json"]
    assert body["model"] == "claude-haiku-4-5"
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": "hello"}]  # dynamic: no breakpoint


def test_openai_chat_sdk_accepts_the_shape(runtime) -> None:
    rendered = runtime.render("agent", INPUTS)
    sent = sdk_capture.capture_openai_chat(rendered.as_shape("openai", model="gpt-4o"))
    assert sent["url"].endswith("/chat/completions")
    body = sent["json"]
    assert body["model"] == "gpt-4o"
    assert body["max_completion_tokens"] == 700 and "max_tokens" not in body
    assert body["temperature"] == 0.2 and body["stop"] == "</answer>"
    assert body["tools"][1] == {
        "type": "function",
        "function": {
            "name": "open_ticket",
            "description": "Open a support ticket.",
            "parameters": TOOLS[1]["input_schema"],
        },
    }
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": ANSWER, "strict": True},
    }
    # the artifact's prefix hash covers anthropic and claude-sonnet-4-5: not OpenAI's to route by
    assert "prompt_cache_key" not in body
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


def test_openai_responses_sdk_accepts_the_shape(runtime) -> None:
    rendered = runtime.render("agent", INPUTS)
    sent = sdk_capture.capture_openai_responses(rendered.as_shape("openai-responses", model="gpt-5"))
    assert sent["url"].endswith("/responses")
    body = sent["json"]
    assert body["model"] == "gpt-5" and body["max_output_tokens"] == 700
    assert "stop" not in body  # the Responses API has no stop sequences
    assert body["tools"][0] == {
        "type": "function",
        "name": "search_docs",
        "description": "Search the product documentation.",
        "parameters": TOOLS[0]["input_schema"],
        "strict": False,
    }
    assert body["text"] == {"format": {"type": "json_schema", "name": "answer", "schema": ANSWER, "strict": True}}
    assert body["input"][0]["role"] == "system" and body["input"][1]["content"] == INPUTS["question"]
    assert "prompt_cache_key" not in body


def test_gemini_sdk_accepts_the_shape(runtime) -> None:
    rendered = runtime.render("agent", INPUTS)
    sent = sdk_capture.capture_gemini(rendered.as_shape("gemini", model="gemini-2.5-flash"))
    assert sent["url"].endswith("/models/gemini-2.5-flash:generateContent")
    body = sent["json"]
    assert body["contents"] == [{"role": "user", "parts": [{"text": INPUTS["question"]}]}]
    assert [p["text"] for p in body["systemInstruction"]["parts"]] == [
        "You are the support agent of Acme.\nAnswer from the documentation only.",
        "Customer tier: gold",
    ]
    declarations = body["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == ["search_docs", "open_ticket"]
    assert declarations[0]["parameters_json_schema"] == TOOLS[0]["input_schema"]
    generation = body["generationConfig"]
    assert generation["maxOutputTokens"] == 700 and generation["stopSequences"] == ["</answer>"]
    assert generation["temperature"] == 0.2
    assert generation["responseMimeType"] == "application/json" and generation["responseJsonSchema"] == ANSWER


CAPTURES = {
    "anthropic": ("capture_anthropic", None),
    "openai": ("capture_openai_chat", "gpt-4o"),
    "openai-responses": ("capture_openai_responses", "gpt-5"),
    "gemini": ("capture_gemini", "gemini-2.5-flash"),
}


@pytest.mark.parametrize("shape", sorted(CAPTURES))
def test_the_body_is_the_bytes_the_sdk_sends(runtime, shape: str) -> None:
    """`rendered.body(shape)` is byte for byte what the pinned SDK sends for `as_shape(shape)`: its
    key order, its JSON options, Gemini's REST layout (providers.json `shapes.*.body`)."""
    capture, model = CAPTURES[shape]
    rendered = runtime.render("agent", INPUTS)
    sent = getattr(sdk_capture, capture)(rendered.as_shape(shape, model=model))
    assert sent["body"] == rendered.body(shape, model=model)
    assert json.loads(sent["body"]) == json.loads(rendered.body(shape, model=model))  # and it is JSON


def test_a_shape_the_sdk_refuses_is_caught_by_the_capture() -> None:
    """The capture is a real check: an unknown keyword fails in the SDK itself."""
    with pytest.raises(TypeError):
        sdk_capture.capture_anthropic({"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [], "temperature": 1})
    with pytest.raises(TypeError):
        sdk_capture.capture_openai_responses({"model": "gpt-5", "input": "x", "stop": ["a"]})


def test_missing_model_or_max_tokens_is_a_render_error(runtime) -> None:
    rendered = runtime.render("dynamic_first", q="x")
    with pytest.raises(RenderError, match="needs a model"):
        rendered.as_shape("openai")


# ---------------------------------------------------------------------------------------------
# The parameter tables against the installed SDKs


def _keywords(function) -> set[str]:
    return {name for name, p in inspect.signature(function).parameters.items() if p.kind == p.KEYWORD_ONLY}


# the submodules are imported by name: the SDKs load them lazily, so an attribute path from the
# package works only after some other test happened to import them in the same worker
SDK_CALLS = {
    "anthropic": lambda: pytest.importorskip("anthropic.resources.messages").Messages.create,
    "openai": lambda: pytest.importorskip("openai.resources.chat.completions").Completions.create,
    "openai-responses": lambda: pytest.importorskip("openai.resources.responses").Responses.create,
}


@pytest.mark.parametrize("shape", sorted(SDK_CALLS))
def test_every_mapped_parameter_is_a_keyword_of_the_sdk_call(shape: str) -> None:
    accepted = _keywords(SDK_CALLS[shape]())
    natives = set(shape_params(shape).values())
    assert natives <= accepted, natives - accepted
    # and the keywords the shape itself writes
    written = {"anthropic": {"model", "max_tokens", "system", "messages", "tools", "output_config"}}.get(
        shape, {"model", "tools", "prompt_cache_key"}
    )
    assert written <= accepted


def test_gemini_parameters_are_fields_of_its_config() -> None:
    types = pytest.importorskip("google.genai.types")

    fields = set(types.GenerateContentConfig.model_fields)
    natives = set(shape_params("gemini").values())
    assert natives <= fields, natives - fields
    assert {"system_instruction", "tools", "response_mime_type", "response_json_schema"} <= fields


def test_anthropic_sdk_takes_no_sampling_parameters() -> None:
    """Why `temperature` is not mapped for the anthropic shape (and is W707 there)."""
    accepted = _keywords(SDK_CALLS["anthropic"]())
    assert not {"temperature", "top_p", "top_k"} & accepted
    assert "temperature" not in shape_params("anthropic")


def _assert_sourced(fact: dict, where: tuple[str, str]) -> None:
    """A provider page (https) or the pinned SDK type that documents the fact (`sdk:openai==…`), and
    the ISO date it was read."""
    assert fact["source"].startswith(("https://", "sdk:")), where
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", fact["read"]), where


def test_every_profile_number_names_its_source_and_date() -> None:
    for name, provider in data()["providers"].items():
        for key in (
            "tokenizer",
            "max_breakpoints",
            "lookback_blocks",
            "min_cacheable_tokens",
            "cache_step_tokens",
            "context_window",
        ):
            fact = provider[key]
            if fact.get("value") is None and not fact.get("by_model"):
                continue  # the provider has no such thing
            _assert_sourced(fact, (name, key))


def test_what_each_cache_keys_on_names_its_source_and_date() -> None:
    """The facts the prefix hash is made of (providers.json `cache_key`, `model_aliases`, `cache_order`)
    each name the page they were read from and the date; the keyed parameters are parameters the
    provider's shape sends, and every alias points into the same provider."""
    for name, provider in data()["providers"].items():
        for key in ("cache_key", "model_aliases", "cache_order"):
            _assert_sourced(provider[key], (name, key))
        accepted = set(shape_params(provider["shape"]))
        assert set(provider["cache_key"]["params"]) <= accepted, name
        for alias, snapshot in provider["model_aliases"]["value"].items():
            assert snapshot.startswith(alias.removesuffix("-latest").removesuffix("-0")), alias
            assert provider_of_model(snapshot) == provider_of_model(alias) == name, alias
    for shape, entry in data()["shapes"].items():
        assert entry["requires"]["source"].startswith("https://") and entry["body"]["sdk"].count("==") == 1, shape


def test_shape_params_of_the_profile_shapes_exist() -> None:
    for provider in data()["providers"].values():
        assert shape_params(provider["shape"])


# ---------------------------------------------------------------------------------------------
# The cases: breakpoints that exist, sendable or refused, another provider's shape

BIG_SCHEMA = {
    "type": "object",
    "properties": {f"field_{i}": {"type": "string", "description": "what this field holds " * 4} for i in range(60)},
}
SMALL_TOOL = [{"name": "ping", "description": "Ping.", "input_schema": {"type": "object"}}]


def _compiled(text: str, **files: str):
    from promptc import compile_text

    return compile_text(text, name="p", partials={f"{k}.json": v for k, v in files.items()})


def _markers(body: dict) -> list[str]:
    out = [f"tool:{t['name']}" for t in body.get("tools", []) if "cache_control" in t]
    for block in body.get("system", []):
        out += [f"system:{block['text'][:12]}"] if "cache_control" in block else []
    for message in body["messages"]:
        out += [f"{message['role']}:{b['text'][:12]}" for b in message["content"] if "cache_control" in b]
    return out


def test_an_anthropic_output_schema_alone_is_no_cached_prefix() -> None:
    """~1,800 schema tokens, no tools, a first message that starts with an input: nothing a marker
    can cover, so no prefix, no cacheable tokens, and W705 says why."""
    compiled = _compiled(
        "/// output: s.json\n/// param: model=claude-sonnet-4-5, max_tokens=10\n"
        "----- system -----\n${who} rules\n----- user -----\nhi\n",
        s=json.dumps(BIG_SCHEMA),
    )
    cache = compiled.artifact.cache
    assert cache.prefix_sha256 is None and cache.prefix_tokens == 0 and cache.cacheable_tokens == 0
    assert [(p.part, p.cached) for p in cache.head] == [("output_schema", False)] and cache.head[0].tokens > 1500
    assert not any(b.stable_prefix for b in cache.breakpoints)
    w705 = next(d for d in compiled.diagnostics if d.code == "W705")
    assert "the output schema" in w705.hint and "not part of anthropic's cached prefix" in w705.hint
    body = sdk_capture.capture_anthropic(render_artifact(compiled.artifact, {"who": "x"}).as_shape("anthropic"))["json"]
    # the one recorded marker (the stable user turn) is the one in the body
    assert [(b.message, b.block) for b in cache.breakpoints if b.anthropic] == [(1, 0)]
    assert _markers(body) == ["user:hi"]


def test_a_small_tool_before_the_schema_is_all_the_marker_covers() -> None:
    compiled = _compiled(
        "/// tools: t.json\n/// output: s.json\n/// param: model=claude-sonnet-4-5, max_tokens=10\n"
        "----- system -----\n${who} rules\n----- user -----\n${q}\n",
        s=json.dumps(BIG_SCHEMA),
        t=json.dumps(SMALL_TOOL),
    )
    cache = compiled.artifact.cache
    tools = next(p for p in cache.head if p.part == "tools")
    assert cache.prefix_tokens == tools.tokens < 50  # the schema behind the tool is not counted
    assert [(b.message, b.block, b.tokens) for b in cache.breakpoints] == [(None, None, tools.tokens)]
    assert cache.cacheable_tokens == 0  # below the model's minimum, as the marker covers only the tool
    rendered = render_artifact(compiled.artifact, {"who": "x", "q": "y"})
    assert _markers(sdk_capture.capture_anthropic(rendered.as_shape("anthropic"))["json"]) == ["tool:ping"]


def test_a_one_message_prompt_for_gemini_is_a_build_error() -> None:
    compiled = _compiled("/// param: model=gemini-2.5-flash\nSummarize ${text}\n")
    error = next(d for d in compiled.diagnostics if d.code == "E711")
    assert (
        (error.span.line, error.span.col) == (2, 1)
        and "gemini request" in error.message
        and "----- user -----" in error.hint
    )
    assert compiled.artifact is None


def test_a_request_without_a_user_turn_is_refused_at_render_naming_the_shape() -> None:
    # no profile: nothing to refuse at build; the shapes that need a user turn refuse at render
    compiled = _compiled("/// param: max_tokens=9\nSummarize ${text}\n")
    rendered = render_artifact(compiled.artifact, {"text": "t"})
    for shape, model in (("gemini", "gemini-2.5-flash"), ("anthropic", "claude-sonnet-4-5")):
        with pytest.raises(RenderError, match=f"the {shape} request has no user turn"):
            rendered.as_shape(shape, model=model)
    sdk_capture.capture_openai_chat(rendered.as_shape("openai", model="gpt-4o"))  # a system message alone is fine
    # the only user turn renders empty
    turn = _compiled(
        "/// param: model=claude-sonnet-4-5, max_tokens=9\n----- system -----\nRules.\n----- user -----\n${q}\n"
    )
    with pytest.raises(RenderError, match="anthropic request has no user turn .*its user turns rendered empty|every"):
        render_artifact(turn.artifact, {"q": ""}).as_shape("anthropic")
    sdk_capture.capture_anthropic(render_artifact(turn.artifact, {"q": "hi"}).as_shape("anthropic"))


def test_another_providers_shape_needs_its_model(tmp_path) -> None:
    compiled = _compiled(
        "/// param: model=claude-sonnet-4-5, max_tokens=9\n----- system -----\nRules.\n----- user -----\n${q}\n"
    )
    rendered = render_artifact(compiled.artifact, {"q": "hi"})
    with pytest.raises(
        RenderError, match=r"built for `claude-sonnet-4-5` \(anthropic\); the gemini request goes to gemini"
    ):
        rendered.as_shape("gemini")
    with pytest.raises(RenderError, match="`gpt-4o` is an openai model; the anthropic request goes to anthropic"):
        rendered.as_shape("anthropic", model="gpt-4o")
    sent = sdk_capture.capture_gemini(rendered.as_shape("gemini", model="gemini-2.5-flash"))
    assert sent["url"].endswith("/models/gemini-2.5-flash:generateContent")
    # and from the shell: the refusal, then the render with --model
    from promptc.driver import build as build_tree

    from .conftest import run_promptc, write

    write(tmp_path, "pyproject.toml", "[tool.promptc]\nsrc = 'src'\nout = 'out'\n")
    write(
        tmp_path,
        "src/p.prompt",
        "/// param: model=claude-sonnet-4-5, max_tokens=9\n----- system -----\nRules.\n----- user -----\n${q}\n",
    )
    build_tree(tmp_path / "src", tmp_path / "out")
    refused = run_promptc("render", "p", "--var", "q=hi", "--shape", "gemini", cwd=tmp_path)
    assert refused.returncode == 1 and "the gemini request goes to gemini" in refused.stderr
    done = run_promptc("render", "p", "--var", "q=hi", "--shape", "gemini", "--model", "gemini-2.5-flash", cwd=tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout)["model"] == "gemini-2.5-flash"
    # --format body: the exact bytes, as rendered.body gives them (and so as the SDK sends them)
    raw = run_promptc("render", "p", "--var", "q=hi", "--shape", "anthropic", "--format", "body", cwd=tmp_path)
    assert raw.returncode == 0 and raw.stdout.encode() == rendered.body("anthropic")


def test_the_prefix_hash_and_cache_key_follow_the_model() -> None:
    base = "/// param: model={m}, max_tokens=9\n----- system -----\nRules.\n----- user -----\n${{q}}\n"
    sha = {
        m: _compiled(base.format(m=m)).artifact.cache.prefix_sha256 for m in ("gpt-4o", "gpt-4o-2024-08-06", "gpt-4.1")
    }
    assert sha["gpt-4o"] == sha["gpt-4o-2024-08-06"] != sha["gpt-4.1"]  # an alias is its snapshot
    rendered = render_artifact(_compiled(base.format(m="gpt-4o")).artifact, {"q": "hi"})
    assert rendered.as_shape("openai")["prompt_cache_key"] == sha["gpt-4o"]
    assert rendered.as_shape("openai", model="gpt-4o-2024-08-06")["prompt_cache_key"] == sha["gpt-4o"]
    assert "prompt_cache_key" not in rendered.as_shape("openai", model="gpt-4.1")  # another model: another cache
