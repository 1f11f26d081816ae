"""Capture the HTTP request an official provider SDK would send, without sending it.

Each `capture_*` function builds the real client of one SDK (anthropic, openai, google-genai, and
anthropic's Vertex AI client) with a fake API key and an `httpx2.Client` whose transport is an
`httpx2.MockTransport` (all three SDKs are built on httpx2, the pydantic fork of httpx), calls the
SDK's own request method with `req` passed unchanged as keyword arguments, and returns what went
over the (mock) wire:

    {"method": "POST", "url": "...", "headers": {lowercased name: value}, "json": <decoded body>,
     "body": <the body's bytes>}

The mock answers with a minimal valid success body so the SDK call completes, or with `answer` (a
provider-shaped JSON body) when one is given; the SDK's own response object is then under
`"response"`. Retries are off and no
request reaches the network. Whatever the SDK raises before sending (`TypeError` for an unknown or
missing keyword, a pydantic `ValidationError` for a bad google-genai config, ...) propagates, so a
test can use these helpers to show that a request is *not* acceptable to the SDK.

`capture_bedrock` does the same for boto3's `bedrock-runtime` client with botocore's `Stubber`:
botocore validates the keyword arguments against the service model and serialises the request, the
stub answers instead of the network, and the request botocore built (its URL path and body bytes)
is what comes back.

The SDKs are imported inside the functions, so importing this module needs none of them.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

FAKE_API_KEY = "sk-promptc-capture-not-a-real-key"

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
OPENAI_BASE_URL = "https://api.openai.com/v1"
GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/"

#: Environment variables the SDKs read at client construction (credentials, base URLs, extra headers,
#: organisation/project headers, Vertex AI switch, API version, HTTP backend). They are hidden while a
#: client is built and used, so a developer's shell cannot change what is captured.
_ENV_PREFIXES = ("ANTHROPIC_", "OPENAI_", "GOOGLE_GENAI_", "GOOGLE_CLOUD_", "GEMINI_", "AWS_", "CLOUD_ML_")
_ENV_NAMES = ("GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "BOTO_CONFIG")

#: the Vertex AI client's region and project, and a token that spares it Google's credentials
VERTEX_REGION = "us-east5"
VERTEX_PROJECT = "promptc-capture"
FAKE_ACCESS_TOKEN = "ya29.promptc-capture-not-a-real-token"
BEDROCK_REGION = "us-east-1"


@contextlib.contextmanager
def _clean_env() -> Iterator[None]:
    hidden = {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES}
    for key in hidden:
        del os.environ[key]
    try:
        yield
    finally:
        os.environ.update(hidden)


class _Recorder:
    """A MockTransport handler: records every request and answers with `make_body(request)`."""

    def __init__(self, make_body: Callable[[Any], dict[str, Any]]) -> None:
        self.make_body = make_body
        self.requests: list[Any] = []

    def __call__(self, request: Any) -> Any:
        import httpx2

        self.requests.append(request)
        return httpx2.Response(200, json=self.make_body(request))

    def only(self) -> dict[str, Any]:
        if len(self.requests) != 1:
            raise AssertionError(f"expected the SDK to send exactly one request, it sent {len(self.requests)}")
        request = self.requests[0]
        content = request.content
        return {
            "method": request.method,
            "url": str(request.url),
            "headers": {k.lower(): v for k, v in request.headers.items()},
            "json": json.loads(content) if content else None,
            "body": content,
        }


def _request_json(request: Any) -> dict[str, Any]:
    try:
        body = json.loads(request.content or b"{}")
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _model_of(request: Any) -> str:
    model = _request_json(request).get("model")
    return model if isinstance(model, str) else "unknown-model"


def _anthropic_body(request: Any) -> dict[str, Any]:
    return {
        "id": "msg_capture",
        "type": "message",
        "role": "assistant",
        "model": _model_of(request),
        "content": [{"type": "text", "text": "{}"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _openai_chat_body(request: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-capture",
        "object": "chat.completion",
        "created": 0,
        "model": _model_of(request),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "{}", "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _openai_responses_body(request: Any) -> dict[str, Any]:
    return {
        "id": "resp_capture",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": _model_of(request),
        "output": [
            {
                "type": "message",
                "id": "msg_capture",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "{}", "annotations": []}],
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
            "input_tokens": 1,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 1,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 2,
        },
    }


def _gemini_body(request: Any) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "{}"}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": "capture",
        "responseId": "capture",
    }


def _answering(answer: dict[str, Any] | None, default: Callable[[Any], dict[str, Any]]) -> _Recorder:
    return _Recorder(default if answer is None else (lambda _request: answer))


def capture_anthropic(req: dict[str, Any], answer: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request `anthropic.Anthropic(...).messages.create(**req)` sends."""
    import anthropic
    import httpx2

    recorder = _answering(answer, _anthropic_body)
    with _clean_env(), httpx2.Client(transport=httpx2.MockTransport(recorder), trust_env=False) as http:
        client = anthropic.Anthropic(
            api_key=FAKE_API_KEY,
            base_url=ANTHROPIC_BASE_URL,
            max_retries=0,
            # An explicit timeout also turns off the SDK's "use streaming for a large max_tokens" refusal,
            # which is about the client's default timeout, not about the request's shape.
            timeout=600.0,
            http_client=http,
        )
        response = client.messages.create(**req)
    return {**recorder.only(), "response": response}


def _openai_client(http: Any) -> Any:
    import openai

    return openai.OpenAI(api_key=FAKE_API_KEY, base_url=OPENAI_BASE_URL, max_retries=0, http_client=http)


def capture_openai_chat(req: dict[str, Any], answer: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request `openai.OpenAI(...).chat.completions.create(**req)` sends."""
    import httpx2

    recorder = _answering(answer, _openai_chat_body)
    with _clean_env(), httpx2.Client(transport=httpx2.MockTransport(recorder), trust_env=False) as http:
        response = _openai_client(http).chat.completions.create(**req)
    return {**recorder.only(), "response": response}


def capture_openai_responses(req: dict[str, Any], answer: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request `openai.OpenAI(...).responses.create(**req)` sends."""
    import httpx2

    recorder = _answering(answer, _openai_responses_body)
    with _clean_env(), httpx2.Client(transport=httpx2.MockTransport(recorder), trust_env=False) as http:
        response = _openai_client(http).responses.create(**req)
    return {**recorder.only(), "response": response}


def capture_gemini(req: dict[str, Any], answer: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request `google.genai.Client(...).models.generate_content(**req)` sends."""
    import httpx2
    from google import genai
    from google.genai import types

    recorder = _answering(answer, _gemini_body)
    transport = httpx2.MockTransport(recorder)
    with (
        _clean_env(),
        httpx2.Client(transport=transport, trust_env=False) as http,
    ):
        # Both clients are given so the SDK builds no default (real-network) httpx2 client of its own.
        # retry_options=None means a single attempt.
        http_options = types.HttpOptions(
            base_url=GEMINI_BASE_URL,
            httpx_client=http,
            httpx_async_client=httpx2.AsyncClient(transport=transport, trust_env=False),
            retry_options=None,
        )
        client = genai.Client(api_key=FAKE_API_KEY, http_options=http_options)
        response = client.models.generate_content(**req)
    return {**recorder.only(), "response": response}


def capture_anthropic_vertex(req: dict[str, Any], answer: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request `anthropic.AnthropicVertex(region=…, project_id=…).messages.create(**req)` sends
    (an `access_token` stands in for Google's credentials, so google-auth is not needed)."""
    import anthropic
    import httpx2

    recorder = _answering(answer, _anthropic_body)
    with _clean_env(), httpx2.Client(transport=httpx2.MockTransport(recorder), trust_env=False) as http:
        client = anthropic.AnthropicVertex(
            region=VERTEX_REGION,
            project_id=VERTEX_PROJECT,
            access_token=FAKE_ACCESS_TOKEN,
            max_retries=0,
            timeout=600.0,
            http_client=http,
        )
        response = client.messages.create(**req)
    return {**recorder.only(), "response": response}


def _bedrock_answer(_req: dict[str, Any]) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": "{}"}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
        "metrics": {"latencyMs": 1},
    }


def capture_bedrock(req: dict[str, Any], answer: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request `boto3.client("bedrock-runtime").converse(**req)` builds, validated by botocore
    against the pinned service model (a bad parameter raises `ParamValidationError`):

        {"method": "POST", "url": <the path: /model/{modelId}/converse>, "headers": {…},
         "json": <decoded body>, "body": <the body's bytes>, "response": <the stubbed answer>}
    """
    import boto3
    from botocore.config import Config
    from botocore.stub import Stubber

    seen: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        seen.append(params)

    with _clean_env():
        client = boto3.client(
            "bedrock-runtime",
            region_name=BEDROCK_REGION,
            aws_access_key_id="AKIAPROMPTCCAPTURE00",
            aws_secret_access_key="promptc-capture-not-a-real-secret",
            config=Config(retries={"max_attempts": 0}),
        )
        # registered first: it runs before the stub answers (and so before anything is sent)
        client.meta.events.register_first("before-call.*.*", record)
        with Stubber(client) as stub:
            stub.add_response("converse", answer or _bedrock_answer(req), req)
            response = client.converse(**req)
            stub.assert_no_pending_responses()
    if len(seen) != 1:
        raise AssertionError(f"expected botocore to build exactly one request, it built {len(seen)}")
    built = seen[0]
    content = built["body"]
    return {
        "method": built["method"],
        "url": built["url_path"],
        "headers": {k.lower(): v for k, v in built["headers"].items()},
        "json": json.loads(content) if content else None,
        "body": content,
        "response": response,
    }
