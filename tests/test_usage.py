"""Usage records (`Rendered.usage`, promptc.runtime.usage; runtime-js/src/usage.js): the provider's own
counts read from the official SDKs' response objects — built by the clients from provider-shaped
JSON served by a capturing transport (boto3's with botocore's Stubber, which checks the response
against the service model) — and from the plain JSON, the same record in both runtimes, written to
JSONL, to a callback, and onto an OpenTelemetry span. The provider's diagnosis of a cache miss and
its TTL-split writes are kept."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from promptc.driver import build
from promptc.facts.config import Config
from promptc.runtime.render import RenderError, load
from promptc.runtime.usage import (
    FIRST_SECOND,
    LAST_SECOND,
    PENDING,
    USAGE_SCHEMA,
    UsageError,
    UsageRecord,
    counts_of,
    iso_timestamp,
    parse_timestamp,
)

from . import sdk_capture
from .conftest import ROOT

STABLE = " ".join(f"Rule {i}: answer from the policy and cite the article." for i in range(260))
WHEN = "2026-12-01T09:30:00.125Z"

PROMPTS = {
    "claude.prompt": f"/// param: model=claude-sonnet-4-5, max_tokens=256\n----- system -----\n{STABLE}\n----- user -----\n${{q}}\n",
    "gpt.prompt": f"/// param: model=gpt-4o\n----- system -----\n{STABLE}\n----- user -----\n${{q}}\n",
    "gem.prompt": f"/// param: model=gemini-2.5-flash\n----- system -----\n{STABLE}\n----- user -----\n${{q}}\n",
    # Claude on the platforms: Bedrock's Converse API, and Vertex AI (its own cache)
    "rock.prompt": "/// param: model=us.anthropic.claude-sonnet-4-5-20250929-v1:0, max_tokens=256\n"
    f"----- system -----\n{STABLE}\n----- user -----\n${{q}}\n",
    "vertex.prompt": "/// param: model=claude-sonnet-4-5@20250929, max_tokens=256\n"
    f"----- system -----\n{STABLE}\n----- user -----\n${{q}}\n",
}

#: provider-shaped answers, with the cache fields each provider reports
ANSWERS = {
    "anthropic": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 14,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 3120,
            "output_tokens": 9,
        },
    },
    "openai": {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ok", "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": 3150,
            "completion_tokens": 9,
            "total_tokens": 3159,
            "prompt_tokens_details": {"cached_tokens": 3072, "audio_tokens": 0},
        },
    },
    "openai-responses": {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": "gpt-4o-2024-08-06",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}],
            }
        ],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "temperature": None,
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "usage": {
            "input_tokens": 3150,
            "input_tokens_details": {"cached_tokens": 2944},
            "output_tokens": 9,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 3159,
        },
    },
    "gemini": {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {
            "promptTokenCount": 3150,
            "cachedContentTokenCount": 2048,
            "candidatesTokenCount": 9,
            "totalTokenCount": 3159,
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "r1",
    },
}

#: the responses of requests that asked for the provider's cache diagnostics and wrote with TTLs:
#: Anthropic (anthropic/types/diagnostics.py, cache_miss_*.py, cache_creation.py), OpenAI Responses
#: (openai/types/responses/response.py PromptCacheDiagnostics, response_usage.py), Bedrock Converse
#: (botocore's TokenUsage with cacheDetails), Gemini's Interactions API (usage.total_cached_tokens)
DIAGNOSED = {
    "anthropic": {
        **ANSWERS["anthropic"],
        "diagnostics": {"cache_miss_reason": {"type": "system_changed", "cache_missed_input_tokens": 2900}},
        "usage": {
            "input_tokens": 14,
            "cache_creation_input_tokens": 3120,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 120, "ephemeral_1h_input_tokens": 3000},
            "output_tokens": 9,
        },
    },
    "openai-responses": {
        **ANSWERS["openai-responses"],
        "model": "gpt-5.6-sol",
        "prompt_cache_diagnostics": {
            "type": "cache_miss",
            "reason": "input_changed",
            "cache_missed_tokens": 2944,
            "comparison_reusable_tokens": 3072,
        },
        "usage": {
            "input_tokens": 3150,
            "input_tokens_details": {
                "cached_tokens": 0,
                "cache_write_tokens": 3072,
                "cache_write_tokens_details": {"ttl_30m_tokens": 0, "ttl_12h_tokens": 3072},
            },
            "output_tokens": 9,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 3159,
        },
    },
    "openai": {
        **ANSWERS["openai"],
        "usage": {
            "prompt_tokens": 3150,
            "completion_tokens": 9,
            "total_tokens": 3159,
            "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 3072},
        },
    },
}
BEDROCK_ANSWER = {
    "output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
    "stopReason": "end_turn",
    "usage": {
        "inputTokens": 14,
        "outputTokens": 9,
        "totalTokens": 3143,
        "cacheReadInputTokens": 0,
        "cacheWriteInputTokens": 3120,
        "cacheDetails": [{"ttl": "1h", "inputTokens": 3000}, {"ttl": "5m", "inputTokens": 120}],
    },
    "metrics": {"latencyMs": 412},
}
INTERACTION_ANSWER = {
    "id": "int_1",
    "status": "completed",
    "model": "gemini-3.5-flash",
    "usage": {"total_input_tokens": 5000, "total_cached_tokens": 4096, "total_output_tokens": 9, "total_tokens": 5009},
}

CAPTURE = {
    "anthropic": sdk_capture.capture_anthropic,
    "openai": sdk_capture.capture_openai_chat,
    "openai-responses": sdk_capture.capture_openai_responses,
    "gemini": sdk_capture.capture_gemini,
}
PROMPT_OF = {
    "anthropic": "claude",
    "openai": "gpt",
    "openai-responses": "gpt",
    "gemini": "gem",
    "bedrock": "rock",
    "anthropic-vertex": "vertex",
}

#: what each answer's record says: (input_tokens, cache_read, cache_creation, output, the provider's own counts)
EXPECTED = {
    "anthropic": (
        3134,
        3120,
        0,
        9,
        {"input_tokens": 14, "cache_read_input_tokens": 3120, "cache_creation_input_tokens": 0, "output_tokens": 9},
    ),
    "openai": (
        3150,
        3072,
        None,
        9,
        {"prompt_tokens": 3150, "prompt_tokens_details.cached_tokens": 3072, "completion_tokens": 9},
    ),
    "openai-responses": (
        3150,
        2944,
        None,
        9,
        {"input_tokens": 3150, "input_tokens_details.cached_tokens": 2944, "output_tokens": 9},
    ),
    "gemini": (
        3150,
        2048,
        None,
        9,
        {"prompt_token_count": 3150, "cached_content_token_count": 2048, "candidates_token_count": 9},
    ),
}


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("usage")
    src = root / "prompts_src"
    src.mkdir()
    for rel, text in PROMPTS.items():
        (src / rel).write_text(text, encoding="utf-8")
    result = build(src, root / "build", Config())
    assert result.ok, result.diagnostics
    return root / "build"


def _rendered(out: Path, shape: str):
    return load(out).render(PROMPT_OF[shape], q="How do refunds work?")


@pytest.mark.parametrize("shape", list(ANSWERS))
def test_the_record_of_an_sdk_response_object_is_the_record_of_its_json(out: Path, shape: str) -> None:
    rendered = _rendered(out, shape)
    captured = CAPTURE[shape](rendered.as_shape(shape), ANSWERS[shape])
    response = captured["response"]
    assert type(response).__module__.split(".")[0] in ("anthropic", "openai", "google")  # the SDK's own object
    from_sdk = rendered.usage(response, shape=shape, timestamp=WHEN)
    from_json = rendered.usage(json.loads(json.dumps(ANSWERS[shape])), shape=shape, timestamp=WHEN)
    detected = rendered.usage(response, timestamp=WHEN)  # the shape read from the response itself
    assert from_sdk == from_json == detected
    total, read, written, output, own = EXPECTED[shape]
    assert (from_sdk.input_tokens, from_sdk.cache_read_input_tokens) == (total, read)
    assert (from_sdk.cache_creation_input_tokens, from_sdk.output_tokens, from_sdk.usage) == (written, output, own)
    manifest = json.loads((out / "manifest.json").read_text())
    artifact = json.loads((out / f"{PROMPT_OF[shape]}.json").read_text())
    assert from_sdk.prompt == PROMPT_OF[shape]
    assert from_sdk.artifact_sha256 == manifest["artifacts"][PROMPT_OF[shape]]["sha256"]
    assert from_sdk.prefix_sha256 == artifact["cache"]["prefix_sha256"] is not None
    assert from_sdk.model == artifact["model"]
    assert from_sdk.response_model == ANSWERS[shape].get("model", ANSWERS[shape].get("modelVersion"))
    assert from_sdk.timestamp == WHEN and from_sdk.shape == shape
    assert from_sdk.started_at is not None and parse_timestamp(from_sdk.started_at) > 0
    assert rendered.usage(ANSWERS[shape], shape=shape, started=0).started_at == "1970-01-01T00:00:00.000Z"


def test_a_record_survives_its_jsonl_line(out: Path, tmp_path: Path) -> None:
    rendered = _rendered(out, "anthropic")
    log = tmp_path / "usage.jsonl"
    seen: list[UsageRecord] = []
    first = rendered.usage(ANSWERS["anthropic"], to=[log, seen.append], timestamp=WHEN)
    second = rendered.usage(ANSWERS["anthropic"], to=str(log), timestamp="2026-12-01T10:30:00+01:00")
    lines = log.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and seen == [first]
    assert [UsageRecord.from_json(json.loads(line)) for line in lines] == [first, second]
    assert json.loads(lines[0])["schema"] == USAGE_SCHEMA
    assert second.timestamp == WHEN.replace("09:30:00.125", "09:30:00.000")  # +01:00 read as UTC


def test_responses_whose_usage_cannot_be_read_are_render_errors(out: Path) -> None:
    rendered = _rendered(out, "anthropic")
    with pytest.raises(RenderError, match="cannot tell which provider"):
        rendered.usage({"id": "x"})
    with pytest.raises(RenderError, match="has no usage"):
        rendered.usage({"id": "x"}, shape="anthropic")
    with pytest.raises(RenderError, match="usage.input_tokens: expected a token count"):
        rendered.usage({"usage": {"input_tokens": "many"}}, shape="anthropic")
    with pytest.raises(RenderError, match="`plain` render has no provider response"):
        rendered.usage(ANSWERS["anthropic"], shape="plain")


def test_records_are_checked_when_read_back() -> None:
    good = {
        "schema": USAGE_SCHEMA,
        "prompt": "p",
        "shape": "openai",
        "timestamp": WHEN,
        "input_tokens": 10,
        "cache_read_input_tokens": 4,
    }
    assert UsageRecord.from_json(good).cache_read_input_tokens == 4
    for change, message in (
        ({"schema": "x"}, "schema"),
        ({"prompt": ""}, "prompt"),
        ({"shape": "plain"}, "shape"),
        ({"timestamp": "yesterday"}, "timestamp"),
        ({"timestamp": "2026-12-01T09:00:00"}, "no time zone"),
        ({"input_tokens": -1}, "input_tokens"),
        ({"cache_read_input_tokens": 11}, "fewer than the cached"),
        ({"model": 3}, "model"),
    ):
        with pytest.raises(UsageError, match=message):
            UsageRecord.from_json({**good, **change})


def test_a_count_is_a_whole_number_below_2_63_and_nothing_else() -> None:
    from decimal import Decimal

    good = {"schema": USAGE_SCHEMA, "prompt": "p", "shape": "openai", "timestamp": WHEN, "input_tokens": 10}
    for written, read in ((7, 7), ("7", 7), (7.0, 7), ("0007", 7), (2**63 - 1, 2**63 - 1), ("9" * 18, int("9" * 18))):
        assert UsageRecord.from_json({**good, "output_tokens": written}).output_tokens == read
    for bad in ("²", "٣", "1_000", " 12", "", "-5", "1" * 6000, float("nan"), float("inf"), 1e300, -1, 1.5, 2**63):
        with pytest.raises(UsageError, match="^output_tokens: expected a token count") as caught:
            UsageRecord.from_json({**good, "output_tokens": bad})
        assert caught.value.field == "output_tokens" and len(str(caught.value)) < 120
    for bad in (True, [], {}, Decimal("1" * 6000), 2**20_000):  # repr of the last raises: it is not quoted
        with pytest.raises(UsageError, match="^input_tokens: expected a token count"):
            UsageRecord.from_json({**good, "input_tokens": bad})


def test_timestamps_are_the_years_1_to_9999_in_utc() -> None:
    """The four-digit years both runtimes write: the year 1 is `0001` (strftime's `%Y` wrote `1`,
    which no reader takes for a year), and a moment outside them, NaN or infinite is refused."""
    assert iso_timestamp(FIRST_SECOND) == "0001-01-01T00:00:00.000Z"
    assert iso_timestamp(LAST_SECOND) == "9999-12-31T23:59:59.999Z"
    assert parse_timestamp("0001-01-01T00:00:00.000Z") == FIRST_SECOND
    record = {"schema": USAGE_SCHEMA, "prompt": "p", "shape": "openai", "input_tokens": 10}
    assert UsageRecord.from_json({**record, "timestamp": FIRST_SECOND}).timestamp == "0001-01-01T00:00:00.000Z"
    too_early, too_late = "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"
    for bad in (float("nan"), float("inf"), 1e300, -1e300, FIRST_SECOND - 1, 10**400, too_early, too_late, "²"):
        with pytest.raises(UsageError, match="^started_at: "):
            UsageRecord.from_json({**record, "timestamp": WHEN, "started_at": bad})
    with pytest.raises(UsageError, match="not a moment between the years 1 and 9999"):
        iso_timestamp(1e300)


def test_timestamps_are_utc_with_milliseconds() -> None:
    assert iso_timestamp(0) == "1970-01-01T00:00:00.000Z"
    assert iso_timestamp(1.9999) == "1970-01-01T00:00:01.999Z"
    assert iso_timestamp("2026-12-01T10:00:00.5+01:00") == "2026-12-01T09:00:00.500Z"
    assert parse_timestamp("2026-12-01T09:00:00Z") == parse_timestamp(1796115600)


# ---------------------------------------------------------------------------------------------
# The provider's diagnosis of a miss, and writes split by TTL


def test_an_anthropic_response_keeps_the_miss_reason_and_the_ttl_split_writes(out: Path, tmp_path: Path) -> None:
    """The SDK's own Message (parsed by the client from the wire) and its JSON make the same record:
    the reason and its estimate, each TTL's writes normalised for pricing and kept as reported."""
    rendered = _rendered(out, "anthropic")
    response = sdk_capture.capture_anthropic(rendered.as_shape("anthropic"), DIAGNOSED["anthropic"])["response"]
    assert type(response.diagnostics).__module__ == "anthropic.types.diagnostics"
    record = rendered.usage(response, timestamp=WHEN)
    assert record == rendered.usage(json.loads(json.dumps(DIAGNOSED["anthropic"])), timestamp=WHEN)
    assert (record.cache_miss_reason, record.cache_missed_input_tokens) == ("system_changed", 2900)
    assert (record.input_tokens, record.cache_creation_input_tokens) == (14 + 3120, 3120)
    assert record.cache_creation_by_ttl == {"5m": 120, "1h": 3000}
    assert record.usage == {
        "input_tokens": 14,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 3120,
        "cache_creation.ephemeral_5m_input_tokens": 120,
        "cache_creation.ephemeral_1h_input_tokens": 3000,
        "output_tokens": 9,
    }
    line = json.loads(record.line())
    keys = list(line)
    assert keys.index("cache_creation_by_ttl") == keys.index("cache_creation_input_tokens") + 1
    assert keys[-3:] == ["cache_miss_reason", "cache_missed_input_tokens", "usage"]
    log = tmp_path / "usage.jsonl"
    rendered.usage(response, to=log, timestamp=WHEN)
    assert UsageRecord.from_json(json.loads(log.read_text())) == record


def _miss_reason_classes() -> dict[str, type]:
    """Every `type` of the pinned SDK's CacheMissReason union, with its class: a reason the SDK
    adds is tested too."""
    from anthropic.types.cache_miss_reason import CacheMissReason

    (union, *_) = typing.get_args(CacheMissReason)
    return {typing.get_args(m.model_fields["type"].annotation)[0]: m for m in typing.get_args(union)}


def test_every_anthropic_miss_reason_and_a_pending_diagnosis_are_kept(out: Path) -> None:
    from anthropic.types import Message

    reasons = _miss_reason_classes()
    assert {"model_changed", "system_changed", "tools_changed", "messages_changed"} <= set(reasons)
    assert {"previous_message_not_found", "unavailable"} <= set(reasons)
    rendered = _rendered(out, "anthropic")
    for reason, kind in reasons.items():
        given: dict = {"type": reason}
        if "cache_missed_input_tokens" in kind.model_fields:
            given["cache_missed_input_tokens"] = 1200
        answer = {**ANSWERS["anthropic"], "diagnostics": {"cache_miss_reason": given}}
        record = rendered.usage(Message.model_validate(answer))
        assert record.cache_miss_reason == reason and record == rendered.usage(answer, timestamp=record.timestamp)
        assert record.cache_missed_input_tokens == given.get("cache_missed_input_tokens")
    # a diagnostics object whose reason is null: the comparison had not finished (the SDK's docstring)
    pending = {**ANSWERS["anthropic"], "diagnostics": {"cache_miss_reason": None}}
    record = rendered.usage(Message.model_validate(pending))
    assert (record.cache_miss_reason, record.cache_missed_input_tokens) == (PENDING, None)
    # no diagnostics asked for, or none found: no reason, and the line is the one it always was
    plain = rendered.usage({**ANSWERS["anthropic"], "diagnostics": None}, timestamp=WHEN)
    assert plain.cache_miss_reason is None and "cache_miss_reason" not in plain.line()
    assert plain == rendered.usage(ANSWERS["anthropic"], timestamp=WHEN, started=plain.started_at)
    assert "cache_creation_by_ttl" not in plain.line()


@pytest.mark.parametrize(
    ("diagnostics", "reason", "missed"),
    [
        ({"type": "cache_miss", "reason": "input_changed", "cache_missed_tokens": 2944}, "input_changed", 2944),
        ({"type": "cache_miss", "reason": "model_changed", "cache_missed_tokens": 10}, "model_changed", 10),
        ({"type": "comparison_response_not_found"}, "comparison_response_not_found", None),
        ({"type": "unavailable"}, "unavailable", None),
        ({"type": "cache_hit"}, None, None),
        (None, None, None),
    ],
)
def test_an_openai_response_keeps_its_prompt_cache_diagnostics(out: Path, diagnostics, reason, missed) -> None:
    """`prompt_cache_options.comparison_response_id` asks the Responses API for a diagnosis; the
    Response object carries it as `prompt_cache_diagnostics`. Its writes split by TTL are kept."""
    rendered = _rendered(out, "openai-responses")
    answer = {**DIAGNOSED["openai-responses"], "prompt_cache_diagnostics": diagnostics}
    response = sdk_capture.capture_openai_responses(rendered.as_shape("openai-responses"), answer)["response"]
    assert type(response).__name__ == "Response"
    record = rendered.usage(response, timestamp=WHEN)
    assert record == rendered.usage(json.loads(json.dumps(answer)), timestamp=WHEN)
    assert (record.cache_miss_reason, record.cache_missed_input_tokens) == (reason, missed)
    assert (record.cache_creation_input_tokens, record.cache_creation_by_ttl) == (3072, {"12h": 3072})
    assert record.usage["input_tokens_details.cache_write_tokens_details.ttl_12h_tokens"] == 3072
    assert record.usage["input_tokens_details.cache_write_tokens_details.ttl_30m_tokens"] == 0


def test_openai_chat_writes_are_kept(out: Path) -> None:
    rendered = _rendered(out, "openai")
    response = sdk_capture.capture_openai_chat(rendered.as_shape("openai"), DIAGNOSED["openai"])["response"]
    record = rendered.usage(response, timestamp=WHEN)
    assert (record.input_tokens, record.cache_read_input_tokens, record.cache_creation_input_tokens) == (3150, 0, 3072)
    assert record.cache_creation_by_ttl == {} and record.cache_miss_reason is None


def test_a_bedrock_converse_response_is_read(out: Path) -> None:
    """The dict boto3's `converse` returns (botocore's Stubber refuses a response the Converse
    output shape does not admit). Bedrock counts the input neither read nor written apart
    (`inputTokens`), as Anthropic does; `cacheDetails` splits the writes by TTL (sorted 1h before 5m)."""
    rendered = _rendered(out, "bedrock")
    response = sdk_capture.capture_bedrock(rendered.as_shape("bedrock"), BEDROCK_ANSWER)["response"]
    record = rendered.usage(response, timestamp=WHEN)
    assert (record.shape, record.provider, record.response_model) == ("bedrock", "bedrock", None)
    assert record.model == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert (record.input_tokens, record.cache_read_input_tokens, record.cache_creation_input_tokens) == (3134, 0, 3120)
    assert record.cache_creation_by_ttl == {"1h": 3000, "5m": 120}
    assert record.usage == {
        "inputTokens": 14,
        "cacheReadInputTokens": 0,
        "cacheWriteInputTokens": 3120,
        "cacheDetails.1h.inputTokens": 3000,
        "cacheDetails.5m.inputTokens": 120,
        "outputTokens": 9,
    }
    assert UsageRecord.from_json(json.loads(record.line())) == record
    usage = {"inputTokens": 14, "outputTokens": 9, "totalTokens": 3143, "cacheReadInputTokens": 3120}
    hit = sdk_capture.capture_bedrock(rendered.as_shape("bedrock"), {**BEDROCK_ANSWER, "usage": usage})
    read = rendered.usage(hit["response"], shape="bedrock")
    assert (read.input_tokens, read.cache_read_input_tokens, read.cache_creation_input_tokens) == (3134, 3120, 0)
    with pytest.raises(RenderError, match=r"usage.cacheDetails: expected a TTL such as `5m`"):
        rendered.usage({"usage": {"inputTokens": 1, "cacheDetails": [{"ttl": "forever", "inputTokens": 1}]}})


def test_a_claude_on_vertex_response_is_the_vertex_shapes(out: Path) -> None:
    """Claude on Vertex AI answers with Anthropic's Message (the AnthropicVertex client parses it): a
    prompt built for the `anthropic-vertex` provider reads it as that shape (another cache than the
    Claude API's); the same JSON for a prompt built for the Claude API reads as `anthropic`."""
    rendered = _rendered(out, "anthropic-vertex")
    assert rendered.provider == "anthropic-vertex"
    answer = {**DIAGNOSED["anthropic"], "model": "claude-sonnet-4-5@20250929"}
    response = sdk_capture.capture_anthropic_vertex(rendered.as_shape("anthropic-vertex"), answer)["response"]
    record = rendered.usage(response, timestamp=WHEN)
    assert (record.shape, record.provider, record.cache_miss_reason) == (
        "anthropic-vertex",
        "anthropic-vertex",
        "system_changed",
    )
    assert record == rendered.usage(answer, shape="anthropic-vertex", timestamp=WHEN)
    assert record.cache_creation_by_ttl == {"5m": 120, "1h": 3000}
    assert _rendered(out, "anthropic").usage(response).shape == "anthropic"
    assert rendered.usage(response, shape="anthropic").provider == "anthropic"  # as the caller says


def test_a_gemini_interactions_response_is_read(out: Path) -> None:
    """The pinned google-genai's GenerateContentResponse counts cached tokens in
    `usage_metadata.cached_content_token_count`; the Interactions API (the provider's caching page:
    `usage.total_cached_tokens`) in its usage's total_* counts."""
    from google.genai.interactions import Interaction

    rendered = _rendered(out, "gemini")
    response = Interaction.model_validate(INTERACTION_ANSWER)
    record = rendered.usage(response, timestamp=WHEN)
    assert record == rendered.usage(INTERACTION_ANSWER, shape="gemini", timestamp=WHEN)
    assert (record.shape, record.response_model) == ("gemini", "gemini-3.5-flash")
    assert (record.input_tokens, record.cache_read_input_tokens, record.output_tokens) == (5000, 4096, 9)
    assert record.usage == {"total_input_tokens": 5000, "total_cached_tokens": 4096, "total_output_tokens": 9}
    camel = {"usage": {"totalInputTokens": 5000, "totalCachedTokens": 4096}}  # Vertex AI's REST JSON
    assert counts_of(camel, "gemini").cache_read_input_tokens == 4096


def test_a_split_that_does_not_add_up_is_not_priced() -> None:
    """Writes split into more tokens than the provider says it wrote: the split is dropped (the
    writes are priced at the request's TTL), the counts stay as reported, nothing is raised."""
    usage = {
        "input_tokens": 1,
        "cache_creation_input_tokens": 100,
        "cache_creation": {"ephemeral_1h_input_tokens": 300},
    }
    counts = counts_of({"type": "message", "usage": usage}, "anthropic")
    assert counts.cache_creation_by_ttl == {} and counts.usage["cache_creation.ephemeral_1h_input_tokens"] == 300


def test_the_new_fields_are_checked_when_read_back() -> None:
    good = {
        "schema": USAGE_SCHEMA,
        "prompt": "p",
        "shape": "bedrock",
        "timestamp": WHEN,
        "input_tokens": 100,
        "cache_creation_input_tokens": 60,
        "cache_creation_by_ttl": {"1h": 50, "5m": 0},
        "cache_miss_reason": "tools_changed",
        "cache_missed_input_tokens": 40,
    }
    record = UsageRecord.from_json(good)
    assert record.cache_creation_by_ttl == {"1h": 50} and record.cache_miss_reason == "tools_changed"
    assert record.cache_missed_input_tokens == 40
    for change, message in (
        ({"cache_creation_by_ttl": {"1h": 70}}, "more than the 60 written"),
        ({"cache_creation_by_ttl": {"a while": 1}}, "TTLs such as"),
        ({"cache_creation_by_ttl": {"1h": -1}}, "cache_creation_by_ttl: 1h: expected a token count ≥ 0"),
        ({"cache_creation_by_ttl": [50]}, "an object of counts by TTL"),
        ({"cache_miss_reason": 3}, "cache_miss_reason"),
        ({"cache_miss_reason": ""}, "cache_miss_reason"),
        ({"cache_missed_input_tokens": "many"}, "cache_missed_input_tokens"),
    ):
        with pytest.raises(UsageError, match=message):
            UsageRecord.from_json({**good, **change})


# ---------------------------------------------------------------------------------------------
# OpenTelemetry


def test_an_in_memory_exporter_receives_the_genai_attributes(out: Path) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("promptc-test")
    rendered = _rendered(out, "anthropic")
    with tracer.start_as_current_span("chat claude-sonnet-4-5"):
        record = rendered.usage(ANSWERS["anthropic"], otel=True, timestamp=WHEN)
    (span,) = exporter.get_finished_spans()
    attributes = dict(span.attributes or {})
    assert attributes == {
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-sonnet-4-5",
        "gen_ai.response.model": "claude-sonnet-4-5-20250929",
        "gen_ai.usage.input_tokens": 3134,
        "gen_ai.usage.cache_read.input_tokens": 3120,
        "gen_ai.usage.cache_creation.input_tokens": 0,
        "gen_ai.usage.output_tokens": 9,
        "promptc.prompt": "claude",
        "promptc.artifact_sha256": record.artifact_sha256,
        "promptc.prefix_sha256": record.prefix_sha256,
        "promptc.shape": "anthropic",
    }
    gemini = _rendered(out, "gemini")
    with tracer.start_as_current_span("generate_content gemini-2.5-flash"):
        gemini.usage(ANSWERS["gemini"], otel=True)
    assert exporter.get_finished_spans()[-1].attributes["gen_ai.provider.name"] == "gcp.gemini"
    # the provider's diagnosis and the writes of each TTL: promptc's own attributes (the GenAI
    # conventions define neither), next to the conventions' total of the writes
    with tracer.start_as_current_span("chat claude-sonnet-4-5"):
        rendered.usage(DIAGNOSED["anthropic"], otel=True)
    diagnosed = dict(exporter.get_finished_spans()[-1].attributes or {})
    assert {key: diagnosed[key] for key in diagnosed if key.startswith("promptc.") and "sha256" not in key} == {
        "promptc.prompt": "claude",
        "promptc.shape": "anthropic",
        "promptc.cache_miss_reason": "system_changed",
        "promptc.cache_missed_input_tokens": 2900,
        "promptc.usage.cache_creation.5m.input_tokens": 120,
        "promptc.usage.cache_creation.1h.input_tokens": 3000,
    }
    assert diagnosed["gen_ai.usage.cache_creation.input_tokens"] == 3120
    with tracer.start_as_current_span("chat claude-sonnet-4-5 on bedrock"):
        rendered.usage(BEDROCK_ANSWER, otel=True)
    assert exporter.get_finished_spans()[-1].attributes["gen_ai.provider.name"] == "aws.bedrock"


def test_the_runtime_imports_no_opentelemetry_unless_asked(out: Path, tmp_path: Path) -> None:
    """Nor, recording usage, anything of the compiler: usage records are the runtime's."""
    code = (
        "import json, sys\n"
        "from promptc.runtime import load\n"
        f"r = load({str(out)!r}).render('claude', q='x')\n"
        f"r.usage(json.loads({json.dumps(json.dumps(ANSWERS['anthropic']))}), to={str(tmp_path / 'u.jsonl')!r})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('opentelemetry', 'lark', 'tiktoken', 'orjson')"
        " or m in ('promptc.syntax.parse', 'promptc.compile.pipeline', 'promptc.backend.meter', 'promptc.backend.emit', 'promptc.tools.reconcile')))\n"
        "sys.modules['opentelemetry'] = None  # as if it were not installed\n"
        "try:\n"
        f"    r.usage(json.loads({json.dumps(json.dumps(ANSWERS['anthropic']))}), otel=True)\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.strip().splitlines()
    assert first == "[]"
    assert second.startswith("RenderError") and "otel=True needs the OpenTelemetry API" in second


# ---------------------------------------------------------------------------------------------
# The JavaScript runtime writes the same records


@pytest.mark.ci_only
def test_node_writes_the_records_python_writes(out: Path, tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node, "node is not installed (.ci/run installs it)"
    cases = []
    expected = []
    answers = [
        *ANSWERS.items(),
        *DIAGNOSED.items(),
        ("bedrock", BEDROCK_ANSWER),
        ("gemini", INTERACTION_ANSWER),
        ("anthropic", {**ANSWERS["anthropic"], "diagnostics": {"cache_miss_reason": None}}),
        ("openai-responses", {**DIAGNOSED["openai-responses"], "prompt_cache_diagnostics": {"type": "unavailable"}}),
    ]
    for shape, answer in answers:
        for given in (shape, None):
            cases.append({"prompt": PROMPT_OF[shape], "shape": given, "answer": answer})
            record = _rendered(out, shape).usage(answer, shape=given, timestamp=WHEN).to_json()
            record.pop("started_at")
            expected.append(record)
    # Claude on Vertex AI: the shape named, or the same JSON read for a prompt built for its provider
    for given in ("anthropic-vertex", None):
        cases.append({"prompt": "vertex", "shape": given, "answer": DIAGNOSED["anthropic"]})
        vertex = _rendered(out, "anthropic-vertex").usage(DIAGNOSED["anthropic"], shape=given, timestamp=WHEN)
        expected.append({k: v for k, v in vertex.to_json().items() if k != "started_at"})
    assert expected[-1] == expected[-2] and expected[-1]["shape"] == "anthropic-vertex"
    script = tmp_path / "records.mjs"
    script.write_text(
        f"import {{ load, recordLine }} from {json.dumps((ROOT / 'runtime-js' / 'index.js').as_uri())};\n"
        f"const runtime = load({json.dumps(str(out))});\n"
        "const cases = JSON.parse(process.argv[2]);\n"
        "for (const c of cases) {\n"
        "  const rendered = runtime.render(c.prompt, { q: 'How do refunds work?' });\n"
        f"  const record = rendered.usage(c.answer, {{ shape: c.shape ?? undefined, timestamp: {json.dumps(WHEN)} }});\n"
        "  if (!/^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z$/.test(record.started_at)) throw new Error('started_at');\n"
        "  delete record.started_at;\n"
        "  console.log(recordLine(record));\n"
        "}\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [node, str(script), json.dumps(cases)], capture_output=True, text=True, timeout=60, encoding="utf-8"
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    python_lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in expected]
    assert lines == python_lines
