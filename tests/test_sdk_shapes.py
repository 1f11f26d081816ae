"""Each request shape, passed as it is to the official SDK call of its provider, on a client whose
HTTP transport captures the request instead of sending it (tests/sdk_capture.py): the SDK accepts
it, and the body it would send carries the model, the tools, the output schema, the parameters and
the cache breakpoints. The parameter tables in promptc/data/providers.json are checked against the
signatures of the SDK versions pyproject.toml pins."""

from __future__ import annotations

import inspect
import json

import pytest

from promptc import load
from promptc.driver import build
from promptc.profiles import data, shape_params
from promptc.runtime import RenderError

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


SDK_CALLS = {
    "anthropic": lambda: pytest.importorskip("anthropic").resources.messages.Messages.create,
    "openai": lambda: pytest.importorskip("openai").resources.chat.completions.Completions.create,
    "openai-responses": lambda: pytest.importorskip("openai").resources.responses.Responses.create,
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


def test_every_profile_number_names_its_source_and_date() -> None:
    for name, provider in data()["providers"].items():
        for key in ("tokenizer", "max_breakpoints", "lookback_blocks", "min_cacheable_tokens", "cache_step_tokens"):
            fact = provider[key]
            if fact.get("value") is None and not fact.get("by_model"):
                continue  # the provider has no such thing
            assert fact["source"].startswith("https://"), (name, key)
            assert fact["read"] == "2026-12-01", (name, key)


def test_shape_params_of_the_profile_shapes_exist() -> None:
    for provider in data()["providers"].values():
        assert shape_params(provider["shape"])
