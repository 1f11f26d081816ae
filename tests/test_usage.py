"""Usage records (`Rendered.usage`, promptc.runtime.usage; runtime-js/src/usage.js): the provider's own
counts read from the official SDKs' response objects — built by the clients from provider-shaped
JSON served by a capturing transport — and from the plain JSON, the same record in both runtimes,
written to JSONL, to a callback, and onto an OpenTelemetry span."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from promptc.driver import build
from promptc.facts.config import Config
from promptc.runtime.render import RenderError, load
from promptc.runtime.usage import (
    FIRST_SECOND,
    LAST_SECOND,
    USAGE_SCHEMA,
    UsageError,
    UsageRecord,
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

CAPTURE = {
    "anthropic": sdk_capture.capture_anthropic,
    "openai": sdk_capture.capture_openai_chat,
    "openai-responses": sdk_capture.capture_openai_responses,
    "gemini": sdk_capture.capture_gemini,
}
PROMPT_OF = {"anthropic": "claude", "openai": "gpt", "openai-responses": "gpt", "gemini": "gem"}

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
    for shape, answer in ANSWERS.items():
        for given in (shape, None):
            cases.append({"prompt": PROMPT_OF[shape], "shape": given, "answer": answer})
            record = _rendered(out, shape).usage(answer, shape=given, timestamp=WHEN).to_json()
            record.pop("started_at")
            expected.append(record)
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
