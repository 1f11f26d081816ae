"""Request shapes: a rendered prompt as the keyword arguments of each provider's official SDK call.

| shape              | call                                                        |
|--------------------|-------------------------------------------------------------|
| `plain`            | the messages as `[{"role", "content"}]`                     |
| `anthropic`        | `anthropic.Anthropic().messages.create(**req)`              |
| `openai`           | `openai.OpenAI().chat.completions.create(**req)`            |
| `openai-responses` | `openai.OpenAI().responses.create(**req)`                   |
| `gemini`           | `google.genai.Client().models.generate_content(**req)`      |

Every shape but `plain` carries the model (the artifact's, or the one passed in), the tools, the
output schema and the parameters the call takes, spelled as the call spells them
(`promptc/data/providers.json`, `shapes`); a parameter the call does not take is left out (the
build warns, W707, for the profile's own shape). The tests pass each shape to the real SDKs.

The order of the request keeps the artifact's cache proof true in each provider's cache order
(tools, then system, then messages): the tools and schema are the artifact's, byte for byte; one
text block per artifact block; system and developer messages that open the conversation become the
system part, and one that comes later stays where it is as a user turn (Anthropic and Gemini have
one system part, at the start; moving text there would change the bytes every breakpoint after it
covers — the build warns, W405).

Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .language import SHAPES, SYSTEM_ROLES
from .profiles import shape_params

if TYPE_CHECKING:
    from .runtime import Rendered

__all__ = ["SHAPES", "build", "strict_compatible"]


class ShapeError(ValueError):
    """A rendered prompt cannot take this shape (the runtime turns it into a RenderError)."""


def strict_compatible(schema: Any) -> bool:
    """Whether OpenAI's strict structured outputs accept `schema`: every object schema closes its
    properties (`additionalProperties: false`) and requires all of them. Iterative."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        if node.get("type") == "object" or "properties" in node:
            properties = node.get("properties", {})
            if node.get("additionalProperties") is not False:
                return False
            if not isinstance(properties, dict) or set(node.get("required", ())) != set(properties):
                return False
        stack.extend(node.values())
    return True


_PARAM_NAMES: dict[str, dict[str, str]] = {}


def _params(rendered: Rendered, shape: str) -> dict[str, Any]:
    """The artifact's params under the names the shape's call takes; others are left out."""
    if not rendered.params:
        return {}
    names = _PARAM_NAMES.get(shape)
    if names is None:
        names = _PARAM_NAMES[shape] = shape_params(shape)
    out: dict[str, Any] = {}
    for key, value in rendered.params.items():
        native = names.get(key)
        if native is None:
            continue
        if native in ("stop_sequences",) and isinstance(value, str):
            value = [value]
        out[native] = value
    return out


def _model(rendered: Rendered, shape: str, model: str | None) -> str:
    chosen = model or rendered.model
    if not chosen:
        raise ShapeError(
            f"prompt `{rendered.name}`: the {shape} request needs a model; set `/// param: model=…`, "
            "`model` in [tool.promptc], or pass one (`--model`, `as_shape(shape, model=…)`)"
        )
    return chosen


def _cache_control(ttl: str | None) -> dict[str, str]:
    return {"type": "ephemeral", "ttl": ttl} if ttl else {"type": "ephemeral"}


def _anthropic(rendered: Rendered, model: str | None) -> dict[str, Any]:
    """One text block per artifact block; empty blocks are skipped (the API refuses empty text), and
    a message left with no block at all is dropped. `cache_control` (with the TTL) goes on the blocks
    that end at a breakpoint marked for Anthropic; when that block rendered empty, on the text block
    before it, which ends at the same position; on the last tool for the breakpoint right after the
    tools."""
    params = _params(rendered, "anthropic")
    if "max_tokens" not in params:
        raise ShapeError(
            f"prompt `{rendered.name}`: the anthropic request needs `max_tokens`; "
            "add `/// param: max_tokens=1024` to the prompt"
        )
    control = _cache_control(rendered.ttl)
    tools = [tool.to_json() for tool in rendered.tools]
    if tools and rendered.head_breakpoint:
        tools[-1]["cache_control"] = dict(control)
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    opening = True  # still in the system/developer messages that open the conversation
    for message, blocks in zip(rendered.messages, rendered.blocks, strict=True):
        opening = opening and message["role"] in SYSTEM_ROLES
        content: list[dict[str, Any]] = system if opening else []
        for block in blocks:
            if block.text:
                content.append({"type": "text", "text": block.text})
            if block.anthropic and content:
                content[-1]["cache_control"] = dict(control)
            elif block.anthropic and not opening and messages:  # empty: the block before ends here
                messages[-1]["content"][-1]["cache_control"] = dict(control)
            elif block.anthropic and tools and not system and not messages:
                tools[-1]["cache_control"] = dict(control)
        if not opening and content:
            role = "user" if message["role"] in SYSTEM_ROLES else message["role"]
            messages.append({"role": role, "content": content})
    request: dict[str, Any] = {"model": _model(rendered, "anthropic", model), "max_tokens": params.pop("max_tokens")}
    if tools:
        request["tools"] = tools
    if system:
        request["system"] = system
    request["messages"] = messages
    if rendered.output_schema is not None:
        request["output_config"] = {"format": {"type": "json_schema", "schema": rendered.output_schema.schema}}
    request.update(params)
    return request


def _openai_messages(rendered: Rendered) -> list[dict[str, str]]:
    return [m.copy() for m in rendered.messages]


def _openai(rendered: Rendered, model: str | None) -> dict[str, Any]:
    request: dict[str, Any] = {"model": _model(rendered, "openai", model), "messages": _openai_messages(rendered)}
    if rendered.tools:
        request["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
            }
            for t in rendered.tools
        ]
    output = rendered.output_schema
    if output is not None:
        request["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": output.name, "schema": output.schema, "strict": strict_compatible(output.schema)},
        }
    if rendered.prefix_sha256:
        # Requests that share a cache-stable prefix share the key, which routes them to the same
        # cache shard; requests with different prefixes never collide.
        request["prompt_cache_key"] = rendered.prefix_sha256
    request.update(_params(rendered, "openai"))
    return request


def _openai_responses(rendered: Rendered, model: str | None) -> dict[str, Any]:
    request: dict[str, Any] = {
        "model": _model(rendered, "openai-responses", model),
        "input": _openai_messages(rendered),
    }
    if rendered.tools:
        request["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
                "strict": False,
            }
            for t in rendered.tools
        ]
    output = rendered.output_schema
    if output is not None:
        request["text"] = {
            "format": {
                "type": "json_schema",
                "name": output.name,
                "schema": output.schema,
                "strict": strict_compatible(output.schema),
            }
        }
    if rendered.prefix_sha256:
        request["prompt_cache_key"] = rendered.prefix_sha256
    request.update(_params(rendered, "openai-responses"))
    return request


def _gemini(rendered: Rendered, model: str | None) -> dict[str, Any]:
    """`contents` with Gemini's roles (`user`, `model`); opening system and developer messages are
    the `system_instruction` (one part per block); empty parts are left out."""
    system: list[dict[str, str]] = []
    contents: list[dict[str, Any]] = []
    opening = True
    for message, blocks in zip(rendered.messages, rendered.blocks, strict=True):
        opening = opening and message["role"] in SYSTEM_ROLES
        parts = [{"text": block.text} for block in blocks if block.text]
        if opening:
            system.extend(parts)
        elif parts:
            contents.append({"role": "model" if message["role"] == "assistant" else "user", "parts": parts})
    config: dict[str, Any] = {}
    if system:
        config["system_instruction"] = {"parts": system}
    if rendered.tools:
        config["tools"] = [
            {
                "function_declarations": [
                    {"name": t.name, "description": t.description, "parameters_json_schema": t.input_schema}
                    for t in rendered.tools
                ]
            }
        ]
    if rendered.output_schema is not None:
        config["response_mime_type"] = "application/json"
        config["response_json_schema"] = rendered.output_schema.schema
    config.update(_params(rendered, "gemini"))
    request: dict[str, Any] = {"model": _model(rendered, "gemini", model), "contents": contents}
    if config:
        request["config"] = config
    return request


_BUILDERS: dict[str, Callable[[Rendered, str | None], Any]] = {
    "plain": lambda rendered, model: _openai_messages(rendered),
    "anthropic": _anthropic,
    "openai": _openai,
    "openai-responses": _openai_responses,
    "gemini": _gemini,
}


def build(rendered: Rendered, shape: str, model: str | None = None) -> Any:
    builder = _BUILDERS.get(shape)
    if builder is None:
        raise ShapeError(f"unknown shape `{shape}`; shapes: {', '.join(SHAPES)}")
    return builder(rendered, model)
