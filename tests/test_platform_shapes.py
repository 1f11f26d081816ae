"""Issue 34's request side, through the official SDKs (tests/sdk_capture.py): OpenAI's explicit
breakpoints (GPT-5.6 and later) and required retention (GPT-5.5 and later), Claude on Amazon
Bedrock (boto3's `bedrock-runtime` client, botocore's Stubber: the kwargs are validated offline
against the service model) and on Vertex AI (`anthropic.AnthropicVertex`), the anthropic shapes'
options (automatic caching, cache diagnostics), and the bad input each can meet: a TTL the model
does not offer (E710), more stable ends than markers (W712), a Converse request that starts with
the assistant (E711), another provider's model (a RenderError at render)."""

from __future__ import annotations

import inspect
import json
from dataclasses import replace

import pytest

from promptc import compile_text
from promptc.facts.config import Config
from promptc.facts.profiles import data, resolve, shape_params
from promptc.runtime.render import RenderError, render_artifact

from . import sdk_capture
from .conftest import run_promptc, write

TOOLS = json.dumps([{"name": "lookup", "description": "Look an order up.", "input_schema": {"type": "object"}}])
SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
)
RULES = "Answer from the order history only; cite the order number. " * 40  # ~480 tokens
#: a system prompt with a stable and a dynamic block, a stable example turn, a dynamic question
SOURCE = (
    "/// param: model={model}, max_tokens=64\n/// tools: tools.json\n/// output: answer.json\n{ttl}"
    "----- system -----\n/// section: rules stable\n{rules}\n/// section: who dynamic\nCustomer: ${{who}}\n"
    "----- user -----\n/// section: example stable\nWhere is order 7?\n"
    "----- assistant -----\n{{}}\n"
    "----- user -----\n/// section: q dynamic\n${{q}}\n"
)
INPUTS = {"who": "Ann", "q": "Where is order 12?"}


def _artifact(model: str, ttl: str | None = None, rules: str = RULES, config: Config | None = None):
    text = SOURCE.format(model=model, ttl=f"/// cache_ttl: {ttl}\n" if ttl else "", rules=rules)
    result = compile_text(text, name="p", config=config, partials={"tools.json": TOOLS, "answer.json": SCHEMA})
    assert result.artifact is not None, [(d.code, d.message) for d in result.diagnostics]
    return result.artifact, result.diagnostics


def _breakpoints(turns: list[dict]) -> list[tuple[int, str]]:
    return [
        (i, part["text"][:20])
        for i, turn in enumerate(turns)
        if isinstance(turn["content"], list)
        for part in turn["content"]
        if "prompt_cache_breakpoint" in part
    ]


# ---------------------------------------------------------------------------------------------
# OpenAI: explicit breakpoints for GPT-5.6 and later, retention for GPT-5.5 and later


@pytest.mark.parametrize("ttl", [None, "12h"])
def test_gpt_5_6_carries_one_breakpoint_where_the_stable_prefix_ends(ttl) -> None:
    artifact, _ = _artifact("gpt-5.6-sol", ttl, rules=RULES * 3)
    rendered = render_artifact(artifact, INPUTS)
    marker = {"mode": "explicit", "ttl": ttl} if ttl else {"mode": "explicit"}
    chat = sdk_capture.capture_openai_chat(rendered.as_shape("openai"))
    assert chat["body"] == rendered.body("openai")
    system = chat["json"]["messages"][0]["content"]
    assert system[0] == {"type": "text", "text": (RULES * 3).strip(), "prompt_cache_breakpoint": marker}
    assert system[1] == {"type": "text", "text": "Customer: Ann"}  # dynamic: none after the prefix
    assert _breakpoints(chat["json"]["messages"]) == [(0, RULES[:20])]
    assert chat["json"]["prompt_cache_retention"] == "24h" and "prompt_cache_options" not in chat["json"]
    responses = sdk_capture.capture_openai_responses(rendered.as_shape("openai-responses"))
    assert responses["body"] == rendered.body("openai-responses")
    assert responses["json"]["input"][0]["content"][0]["prompt_cache_breakpoint"] == marker
    assert responses["json"]["input"][0]["content"][0]["type"] == "input_text"
    assert responses["json"]["input"][2] == {"role": "assistant", "content": "{}"}  # output_text takes none
    # what the marker covers is what the artifact says is cached: the tools, schema and rules
    # (exactly: GPT-5.6 counts no 128-token steps)
    assert artifact.cache.cacheable_tokens == artifact.cache.prefix_tokens > 1024


def test_gpt_4o_mini_carries_no_marker_and_is_sent_as_before() -> None:
    artifact, _ = _artifact("gpt-4o-mini")
    rendered = render_artifact(artifact, INPUTS)
    for shape, capture in (
        ("openai", sdk_capture.capture_openai_chat),
        ("openai-responses", sdk_capture.capture_openai_responses),
    ):
        body = capture(rendered.as_shape(shape))["json"]
        turns = body["messages" if shape == "openai" else "input"]
        assert all(isinstance(turn["content"], str) for turn in turns)
        assert turns[0]["content"] == f"{RULES.strip()}\n\nCustomer: Ann"
        assert "prompt_cache_retention" not in body and "prompt_cache_breakpoint" not in json.dumps(body)
        assert body["prompt_cache_key"] == artifact.cache.prefix_sha256
    assert artifact.cache.cacheable_tokens == 0  # below gpt-4o-mini's 1,024


def test_gpt_5_5_requests_carry_the_24h_retention_and_no_breakpoint() -> None:
    artifact, _ = _artifact("gpt-5.5")
    rendered = render_artifact(artifact, INPUTS)
    chat = sdk_capture.capture_openai_chat(rendered.as_shape("openai"))["json"]
    responses = sdk_capture.capture_openai_responses(rendered.as_shape("openai-responses"))["json"]
    assert chat["prompt_cache_retention"] == responses["prompt_cache_retention"] == "24h"
    assert isinstance(chat["messages"][0]["content"], str)
    # another prompt rendered for gpt-5.5 gets it too; one rendered for gpt-4o does not
    assert (
        render_artifact(_artifact("gpt-4o")[0], INPUTS).as_shape("openai", model="gpt-5.5")["prompt_cache_retention"]
        == "24h"
    )
    assert "prompt_cache_retention" not in rendered.as_shape("openai", model="gpt-4o")
    # a prompt cannot ask gpt-5.5 for another retention
    bad = compile_text("/// param: model=gpt-5.5, prompt_cache_retention=in_memory\n----- user -----\nHi\n", name="p")
    assert [d.code for d in bad.diagnostics if d.severity == "error"] == ["E730"]


def test_gpt_5_6_prefix_ending_in_the_tools_can_carry_no_marker_and_counts_nothing() -> None:
    text = "/// param: model=gpt-5.6-sol\n/// tools: tools.json\n----- system -----\n${who}\n" + RULES
    result = compile_text(text, name="p", partials={"tools.json": TOOLS})
    assert result.artifact is not None
    cache = result.artifact.cache
    assert cache.prefix_sha256 is not None and cache.prefix_end is not None and cache.prefix_end.message is None
    assert cache.cacheable_tokens == 0
    body = sdk_capture.capture_openai_chat(render_artifact(result.artifact, {"who": "x"}).as_shape("openai"))["json"]
    assert not _breakpoints(body["messages"])


def test_cache_ttl_none_sends_no_breakpoint_to_gpt_5_6() -> None:
    artifact, _ = _artifact("gpt-5.6-sol", "none")
    assert artifact.cache.cacheable_tokens == 0
    body = render_artifact(artifact, INPUTS).as_shape("openai")
    assert not _breakpoints(body["messages"])


# ---------------------------------------------------------------------------------------------
# Claude on Amazon Bedrock: Converse with cachePoint blocks


def test_bedrock_sdk_accepts_the_shape_with_cache_points_at_the_recorded_ends() -> None:
    artifact, _ = _artifact("us.anthropic.claude-opus-4-8", "1h")
    rendered = render_artifact(artifact, INPUTS)
    request = rendered.as_shape("bedrock")
    sent = sdk_capture.capture_bedrock(request)
    assert sent["url"] == "/model/us.anthropic.claude-opus-4-8/converse"
    assert sent["body"] == rendered.body("bedrock")
    body = sent["json"]
    point = {"cachePoint": {"type": "default", "ttl": "1h"}}
    assert body["system"] == [{"text": RULES.strip()}, point, {"text": "Customer: Ann"}]
    assert body["messages"] == [  # the stable run of the example turn and its answer ends at the answer
        {"role": "user", "content": [{"text": "Where is order 7?"}]},
        {"role": "assistant", "content": [{"text": "{}"}, point]},
        {"role": "user", "content": [{"text": "Where is order 12?"}]},
    ]
    assert body["inferenceConfig"] == {"maxTokens": 64}
    assert body["toolConfig"]["tools"] == [
        {
            "toolSpec": {
                "name": "lookup",
                "description": "Look an order up.",
                "inputSchema": {"json": {"type": "object"}},
            }
        }
    ]
    assert json.loads(body["outputConfig"]["textFormat"]["structure"]["jsonSchema"]["schema"]) == json.loads(SCHEMA)
    recorded = [(b.message, b.block) for b in artifact.cache.breakpoints if b.anthropic]
    assert recorded == [(0, 0), (2, 0)]  # the two cachePoints, after those blocks


def test_bedrock_joins_turns_of_one_role_and_marks_the_tools() -> None:
    text = (
        "/// param: model=anthropic.claude-sonnet-4-6, temperature=0.2, stop=END\n/// tools: tools.json\n"
        "----- system -----\n${who}\n----- user -----\nFirst.\n----- developer -----\nLater rules.\n"
        "----- user -----\n${q}\n"
    )
    result = compile_text(text, name="p", partials={"tools.json": TOOLS})
    assert result.artifact is not None
    rendered = render_artifact(result.artifact, INPUTS)
    body = sdk_capture.capture_bedrock(rendered.as_shape("bedrock"))["json"]
    assert body["toolConfig"]["tools"][-1] == {"cachePoint": {"type": "default"}}  # the head is the stable part
    assert [m["role"] for m in body["messages"]] == ["user"]  # user, developer (a user turn), user: one message
    assert body["messages"][0]["content"] == [
        {"text": "First."},
        {"text": "Later rules."},
        {"cachePoint": {"type": "default"}},
        {"text": "Where is order 12?"},
    ]
    assert body["inferenceConfig"] == {"temperature": 0.2, "stopSequences": ["END"]}


def test_bedrock_minimums_are_the_platforms_own() -> None:
    """Claude Sonnet 4.5 caches from 1,024 tokens on the Claude API and from 4,096 on Bedrock: the
    same ~1,500-token prompt is cached on one and W705 on the other, with or without the
    cross-Region prefix."""
    rules = RULES * 3  # ~1,500 tokens
    direct, found = _artifact("claude-sonnet-4-5", rules=rules)
    assert direct.cache.cacheable_tokens > 1024 and "W705" not in {d.code for d in found}
    for model in ("anthropic.claude-sonnet-4-5-20250929-v1:0", "global.anthropic.claude-sonnet-4-5-20250929-v1:0"):
        bedrock, found = _artifact(model, rules=rules)
        assert bedrock.cache.cacheable_tokens == 0
        w705 = next(d for d in found if d.code == "W705")
        assert f"{model} (bedrock) caches prefixes of at least 4096 tokens" in w705.message


def test_a_converse_request_must_start_with_a_user_turn() -> None:
    refused = compile_text(
        "/// param: model=anthropic.claude-sonnet-4-6\n----- system -----\nRules.\n----- assistant -----\nHi.\n"
        "----- user -----\n${q}\n",
        name="p",
    )
    (e711,) = [d for d in refused.diagnostics if d.code == "E711"]
    assert (e711.span.line, "start with the assistant's turn") == (4, "start with the assistant's turn")
    assert refused.artifact is None
    # at render, for an artifact of no profile whose user turn rendered empty
    loose = compile_text("----- system -----\nRules.\n----- user -----\n${q}\n----- assistant -----\nHi.\n", name="p")
    rendered = render_artifact(loose.artifact, {"q": ""})
    with pytest.raises(RenderError, match="bedrock request must start with a user turn"):
        rendered.as_shape("bedrock", model="anthropic.claude-sonnet-4-6")


def test_the_bedrock_mapping_is_the_converse_input_of_the_pinned_service_model() -> None:
    session = pytest.importorskip("botocore.session").get_session()
    operation = session.get_service_model("bedrock-runtime").operation_model("Converse")
    members = operation.input_shape.members
    spec = data()["shapes"]["bedrock"]["body"]
    assert list(members) == [*spec["uri"], *spec["order"]]
    assert members["modelId"].serialization["location"] == "uri"
    inference = list(members["inferenceConfig"].members)
    assert spec["inference"] == inference and set(shape_params("bedrock").values()) <= set(inference)
    assert list(session.get_service_model("bedrock-runtime").shape_for("CacheTTL").enum) == ["5m", "1h"]
    for model, ttls in data()["providers"]["bedrock"]["cache_ttls"]["by_model"].items():
        assert set(ttls) <= {"5m", "1h"}, model


# ---------------------------------------------------------------------------------------------
# Claude on Vertex AI


def test_vertex_sdk_accepts_the_shape_and_sends_the_body() -> None:
    anthropic_constants = pytest.importorskip("anthropic._constants")
    artifact, _ = _artifact("claude-sonnet-4-5@20250929", "1h")
    assert artifact.provider is not None and artifact.provider.name == "anthropic-vertex"
    rendered = render_artifact(artifact, INPUTS)
    sent = sdk_capture.capture_anthropic_vertex(rendered.as_shape("anthropic-vertex"))
    assert sent["url"].endswith("/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict")
    assert sent["body"] == rendered.body("anthropic-vertex")
    body = sent["json"]
    assert "model" not in body and body["anthropic_version"] == anthropic_constants.ANTHROPIC_API_VERSION
    assert list(body)[-1] == "anthropic_version"
    assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert data()["shapes"]["anthropic-vertex"]["body"]["append"] == {
        "anthropic_version": anthropic_constants.ANTHROPIC_API_VERSION
    }
    # the Claude API's minimums and limits (Google: Vertex behaves as Anthropic documents)
    claude = resolve("anthropic", "claude-sonnet-4-5")
    assert claude is not None
    vertex = replace(claude, name="anthropic-vertex", shape="anthropic-vertex")
    assert resolve(None, "claude-sonnet-4-5@20250929") == vertex


def test_vertex_takes_the_claude_api_names_and_the_api_refuses_vertex_ids() -> None:
    artifact, _ = _artifact("claude-opus-4-6")  # a Vertex id too (no version after `@`)
    rendered = render_artifact(artifact, INPUTS)
    sent = sdk_capture.capture_anthropic_vertex(rendered.as_shape("anthropic-vertex"))
    assert sent["url"].endswith("/models/claude-opus-4-6:rawPredict")
    with pytest.raises(RenderError, match="is an anthropic-vertex model; the anthropic request goes to anthropic"):
        rendered.as_shape("anthropic", model="claude-sonnet-4-5@20250929")
    with pytest.raises(RenderError, match="is an openai model; the bedrock request goes to bedrock"):
        rendered.as_shape("bedrock", model="gpt-4o")
    with pytest.raises(RenderError, match=r"built for `claude-opus-4-6` \(anthropic\); the bedrock request"):
        rendered.as_shape("bedrock")


# ---------------------------------------------------------------------------------------------
# The anthropic shapes' options


@pytest.mark.parametrize(
    ("shape", "capture", "model"),
    [
        ("anthropic", sdk_capture.capture_anthropic, "claude-sonnet-4-5"),
        ("anthropic-vertex", sdk_capture.capture_anthropic_vertex, "claude-sonnet-4-5@20250929"),
    ],
)
def test_automatic_caching_and_diagnostics_pass_the_sdk(shape, capture, model) -> None:
    artifact, _ = _artifact(model, "1h")
    rendered = render_artifact(artifact, INPUTS)
    plain = json.dumps(capture(rendered.as_shape(shape))["json"])
    assert plain.count('"cache_control"') == 2 and '"diagnostics"' not in plain
    sent = capture(rendered.as_shape(shape, caching="automatic", previous_message_id="msg_01XYZ"))
    assert sent["body"] == rendered.body(shape, caching="automatic", previous_message_id="msg_01XYZ")
    body = sent["json"]
    assert body["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert json.dumps(body).count('"cache_control"') == 1  # the top-level one only: the limit is shared
    assert body["diagnostics"] == {"previous_message_id": "msg_01XYZ"}
    first = capture(rendered.as_shape(shape, previous_message_id=None))["json"]
    assert first["diagnostics"] == {"previous_message_id": None}  # opted in on a first turn


def test_an_option_a_shape_does_not_take_is_a_render_error() -> None:
    rendered = render_artifact(_artifact("claude-sonnet-4-5")[0], INPUTS)
    with pytest.raises(RenderError, match="an option of the anthropic and anthropic-vertex shapes, not of bedrock"):
        rendered.as_shape("bedrock", model="anthropic.claude-sonnet-4-6", caching="automatic")
    with pytest.raises(RenderError, match="previous_message_id: an option .* not of openai"):
        rendered.body("openai", model="gpt-4o", previous_message_id="msg_1")
    with pytest.raises(RenderError, match="caching must be one of blocks, automatic, got 'auto'"):
        rendered.as_shape("anthropic", caching="auto")
    with pytest.raises(RenderError, match="previous_message_id must be a message id"):
        rendered.as_shape("anthropic", previous_message_id="")


def test_the_cli_renders_the_new_shapes_and_options(tmp_path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.promptc]\nsrc = 'src'\nout = 'out'\ntokenizer = 'approx-bytes/4'\n")
    write(tmp_path, "src/tools.json", TOOLS)
    write(tmp_path, "src/answer.json", SCHEMA)
    write(tmp_path, "src/p.prompt", SOURCE.format(model="claude-sonnet-4-5", ttl="", rules=RULES))
    assert run_promptc("build", "-q", cwd=tmp_path).returncode == 0
    args = ("render", "p", "--var", "who=Ann", "--var", "q=Where is order 12?")
    done = run_promptc(
        *args, "--shape", "anthropic", "--caching", "automatic", "--previous-message-id", "", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    request = json.loads(done.stdout)
    assert request["cache_control"] == {"type": "ephemeral"} and request["diagnostics"] == {"previous_message_id": None}
    raw = run_promptc(
        *args, "--shape", "bedrock", "--model", "anthropic.claude-sonnet-4-6", "--format", "body", cwd=tmp_path
    )
    assert raw.returncode == 0, raw.stderr
    expected = render_artifact(_artifact("claude-sonnet-4-5", config=Config(tokenizer="approx-bytes/4"))[0], INPUTS)
    assert raw.stdout.encode() == expected.body("bedrock", model="anthropic.claude-sonnet-4-6")
    refused = run_promptc(
        *args, "--shape", "gemini", "--model", "gemini-2.5-flash", "--caching", "automatic", cwd=tmp_path
    )
    assert refused.returncode == 1 and "an option of the anthropic and anthropic-vertex shapes" in refused.stderr


def test_the_sdk_calls_take_the_keywords_the_new_shapes_write() -> None:
    messages = pytest.importorskip("anthropic.resources.messages").Messages.create
    keywords = {n for n, p in inspect.signature(messages).parameters.items() if p.kind == p.KEYWORD_ONLY}
    assert set(shape_params("anthropic-vertex").values()) | {"cache_control", "diagnostics", "system"} <= keywords
    assert shape_params("anthropic-vertex") == shape_params("anthropic")


# ---------------------------------------------------------------------------------------------
# Bad input: TTLs, more stable ends than markers


@pytest.mark.parametrize(
    ("model", "ttl", "offered"),
    [
        ("gpt-5.6-sol", "1h", "30m or 12h"),
        ("anthropic.claude-sonnet-4-6", "1h", "5m"),
        ("claude-sonnet-4-5", "30m", "5m or 1h"),
        ("gpt-4o-mini", "1h", None),
        ("gemini-2.5-flash", "5m", None),
    ],
)
def test_a_ttl_the_model_does_not_offer_is_e710_at_the_directive(model, ttl, offered) -> None:
    text = SOURCE.format(model=model, ttl=f"/// cache_ttl: {ttl}\n", rules=RULES)
    result = compile_text(text, name="p", partials={"tools.json": TOOLS, "answer.json": SCHEMA})
    (e710,) = [d for d in result.diagnostics if d.code == "E710"]
    assert result.artifact is None
    assert (e710.span.line, e710.span.col) == (4, 16)  # the value of `/// cache_ttl:`
    if offered:
        assert f"offers no `{ttl}` cache TTL: its breakpoints live {offered}" in e710.message
        assert "/// cache_ttl: none" in (e710.hint or "")
    else:
        assert "takes no cache TTL" in e710.message and e710.hint == "remove the `/// cache_ttl:` line"


def test_a_config_ttl_is_checked_where_the_model_offers_ttls() -> None:
    config = Config(cache_ttl="1h")
    artifact, _ = _artifact("gpt-4o-mini", config=config)  # automatic caching: a project default, unused
    assert artifact.cache.ttl == "1h"
    text = SOURCE.format(model="gpt-5.6-sol", ttl="", rules=RULES)
    result = compile_text(text, name="p", config=config, partials={"tools.json": TOOLS, "answer.json": SCHEMA})
    (e710,) = [d for d in result.diagnostics if d.code == "E710"]
    assert e710.span.line == 1 and "[tool.promptc] `cache_ttl`" in e710.message
    assert "/// cache_ttl: 30m" in (e710.hint or "")
    # the prompt's own line wins over the project's
    assert _artifact("gpt-5.6-sol", "30m", config=config)[0].cache.ttl == "30m"


def test_more_stable_ends_than_markers_is_w712_naming_the_unmarked_ones(tmp_path) -> None:
    text = "/// param: model=us.anthropic.claude-opus-4-8, max_tokens=9\n----- system -----\nRules.\n" + "".join(
        f"----- user -----\n/// section: s{i} stable\nStep {i}: {'check the order. ' * (i + 1)}\n"
        f"/// section: q{i} dynamic\n${{q{i}}}\n"
        for i in range(6)
    )
    result = compile_text(text, name="p")
    (w712,) = [d for d in result.diagnostics if d.code == "W712"]
    # six runs of stable text; the four sent: the stable prefix's end, then the three covering most
    assert [(b.message, b.anthropic) for b in result.artifact.cache.breakpoints] == [
        (1, True),
        (2, False),
        (3, False),
        (4, True),
        (5, True),
        (6, True),
    ]
    assert w712.message.startswith(
        "2 stable ends left without a cache marker: line 10 (covering 26 tokens), line 15 (covering 46 tokens); "
    )
    assert "takes 4 per request" in w712.message and w712.span.line == 10
    # none when no marker is sent at all, nor for a provider that caches automatically
    assert "W712" not in {
        d.code
        for d in compile_text(text.replace("max_tokens=9", "max_tokens=9\n/// cache_ttl: none"), name="p").diagnostics
    }
    assert "W712" not in {
        d.code for d in compile_text(text.replace("us.anthropic.claude-opus-4-8", "gpt-4o"), name="p").diagnostics
    }
