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

A request goes to the provider of its shape: rendering a shape of another provider than the
artifact's model needs a model of that provider (`model=`), else it is refused with the reason;
a request the provider's API refuses (no user turn for Anthropic and Gemini, `shapes.*.requires`)
is a `ShapeError` naming the shape. The cache breakpoints are the artifact's: `cache_control` goes
exactly where the build recorded it (`promptc.runtime.requestmodel` places it on a non-empty stable block
or the last tool), never moved at render; `prompt_cache_key` is the prefix hash, sent when the
request goes to the artifact's own OpenAI model (the hash covers the model).

`body(rendered, shape)` is the exact bytes the pinned Python SDK sends for the request: its
top-level key order and `json.dumps` options (`shapes.*.body`), for Gemini its REST layout. The
JavaScript runtime's `rendered.body(shape)` writes the same bytes.

The order of the request keeps the artifact's cache proof true in each provider's cache order
(tools, then system, then messages): the tools and schema are the artifact's, byte for byte; one
text block per artifact block; system and developer messages that open the conversation become the
system part, and one that comes later stays where it is as a user turn (Anthropic and Gemini have
one system part, at the start; moving text there would change the bytes every breakpoint after it
covers — the build warns, W405).

Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..facts.language import SHAPES, SYSTEM_ROLES
from ..facts.profiles import data, provider_of_model, shape_params, shape_provider, shape_requires

if TYPE_CHECKING:
    from .render import Rendered

__all__ = ["SHAPES", "body", "build", "strict_compatible"]


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
    """The model the request goes to: `model`, else the artifact's — which must be a model of the
    shape's provider (a gemini request cannot go to claude-sonnet-4-5)."""
    target = shape_provider(shape)
    if model:
        other = provider_of_model(model)
        if target and other and other != target:
            raise ShapeError(
                f"prompt `{rendered.name}`: `{model}` is an {other} model; the {shape} request goes to {target}: "
                f"pass one of its models (`--model`, `as_shape('{shape}', model=…)`)"
            )
        return model
    own = rendered.provider or provider_of_model(rendered.model)
    if rendered.model and target and own and own != target:
        raise ShapeError(
            f"prompt `{rendered.name}` is built for `{rendered.model}` ({own}); the {shape} request goes to {target}: "
            f"pass one of its models (`--model`, `as_shape('{shape}', model=…)`)"
        )
    if not rendered.model:
        raise ShapeError(
            f"prompt `{rendered.name}`: the {shape} request needs a model; set `/// param: model=…`, "
            "`model` in [tool.promptc], or pass one (`--model`, `as_shape(shape, model=…)`)"
        )
    return rendered.model


def _cache_key(rendered: Rendered, model: str | None) -> str | None:
    """The prefix hash as `prompt_cache_key`. An OpenAI artifact's hash covers its model, so it is
    sent for that model only; an artifact without a profile has a hash of the bytes alone, sent for
    any model; another provider's hash is not OpenAI's to route by."""
    if not rendered.prefix_sha256:
        return None
    if rendered.provider is None:
        return rendered.prefix_sha256
    if rendered.provider != "openai":
        return None
    if model and model not in (rendered.model, rendered.cache_model):
        return None
    return rendered.prefix_sha256


def _refuse_turnless(rendered: Rendered, shape: str, turns: list[dict[str, Any]], system: bool) -> None:
    """A request with no user turn, which the shape's API refuses (`shapes.*.requires`)."""
    if shape_requires(shape) != "user_turn" or any(turn["role"] == "user" for turn in turns):
        return
    if not turns and system:
        why = "every message is a system message (the opening system and developer messages are its system part)"
    elif not turns:
        why = "every message rendered empty"
    else:
        why = "its user turns rendered empty"
    field = "contents" if shape == "gemini" else "messages"
    raise ShapeError(
        f"prompt `{rendered.name}`: the {shape} request has no user turn ({field}): {why}; "
        "add a `----- user -----` message, or render its inputs non-empty"
    )


def _cache_control(ttl: str | None) -> dict[str, str]:
    return {"type": "ephemeral", "ttl": ttl} if ttl else {"type": "ephemeral"}


def _anthropic(rendered: Rendered, model: str | None) -> dict[str, Any]:
    """One text block per artifact block; empty blocks are skipped (the API refuses empty text), and
    a message left with no block at all is dropped. `cache_control` (with the TTL) goes on the
    blocks the artifact marks for Anthropic (each a non-empty stable block) and on the last tool
    when the artifact marks the place after the tools."""
    params = _params(rendered, "anthropic")
    if "max_tokens" not in params:
        raise ShapeError(
            f"prompt `{rendered.name}`: the anthropic request needs `max_tokens`; "
            "add `/// param: max_tokens=1024` to the prompt"
        )
    chosen = _model(rendered, "anthropic", model)
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
                if block.anthropic:
                    content[-1]["cache_control"] = dict(control)
        if not opening and content:
            role = "user" if message["role"] in SYSTEM_ROLES else message["role"]
            messages.append({"role": role, "content": content})
    _refuse_turnless(rendered, "anthropic", messages, bool(system))
    request: dict[str, Any] = {"model": chosen, "max_tokens": params.pop("max_tokens")}
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
    key = _cache_key(rendered, model)
    if key:
        # Requests that share a cache-stable prefix (and model) share the key, which routes them to
        # the same cache shard; requests with different prefixes never collide.
        request["prompt_cache_key"] = key
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
    key = _cache_key(rendered, model)
    if key:
        request["prompt_cache_key"] = key
    request.update(_params(rendered, "openai-responses"))
    return request


def _gemini(rendered: Rendered, model: str | None) -> dict[str, Any]:
    """`contents` with Gemini's roles (`user`, `model`); opening system and developer messages are
    the `system_instruction` (one part per block); empty parts are left out."""
    chosen = _model(rendered, "gemini", model)
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
    _refuse_turnless(rendered, "gemini", contents, bool(system))
    request: dict[str, Any] = {"model": chosen, "contents": contents}
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


# ---------------------------------------------------------------------------------------------
# The bytes


def _ordered(value: dict[str, Any], order: list[str]) -> dict[str, Any]:
    rank = {key: i for i, key in enumerate(order)}
    return {key: value[key] for key in sorted(value, key=lambda k: rank.get(k, len(rank)))}


def _fields(value: Any, table: list[list[str]], nested: dict[str, list[list[str]]]) -> Any:
    """A dict-valued Gemini parameter as the SDK writes it: its known fields in the SDK's field
    order under the REST names; a value that is not an object is sent as it is."""
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for name, rest in table:
        if name in value and value[name] is not None:
            inner = value[name]
            out[rest] = _fields(inner, nested[name], nested) if name in nested else inner
    return out


def _gemini_body(request: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """The generate_content REST body the google-genai SDK writes for the keyword arguments."""
    config = request.get("config", {})
    out: dict[str, Any] = {
        "contents": [
            {"parts": [{"text": p["text"]} for p in c["parts"]], "role": c["role"]} for c in request["contents"]
        ]
    }
    if "system_instruction" in config:
        out["systemInstruction"] = {"parts": [{"text": p["text"]} for p in config["system_instruction"]["parts"]]}
    if "tools" in config:
        out["tools"] = [
            {
                "functionDeclarations": [
                    {
                        "description": d["description"],
                        "name": d["name"],
                        "parameters_json_schema": d["parameters_json_schema"],
                    }
                    for d in tool["function_declarations"]
                ]
            }
            for tool in config["tools"]
        ]
    fields = spec["fields"]
    if config.get("tool_config") is not None:
        out["toolConfig"] = _fields(config["tool_config"], fields["tool_config"], fields)
    generation: dict[str, Any] = {}
    for name, rest in spec["generation"]:
        if config.get(name) is not None:
            value = config[name]
            generation[rest] = _fields(value, fields[name], fields) if name in fields else value
    if generation:
        out["generationConfig"] = generation
    return out


def body(rendered: Rendered, shape: str, model: str | None = None) -> bytes:
    """The request body of `shape` as the pinned Python SDK sends it: the same bytes (providers.json
    `shapes.*.body`: the SDK's top-level order and json.dumps options; Gemini's REST layout)."""
    if shape == "plain":
        raise ShapeError("the plain shape is not a request body: pick a provider's shape")
    request = build(rendered, shape, model)
    spec = data()["shapes"][shape]["body"]
    if shape == "gemini":
        payload = _gemini_body(request, spec)
    else:
        payload = _ordered(request, spec["order"])
    options = spec["serializer"]
    text = json.dumps(
        payload,
        ensure_ascii=options["ensure_ascii"],
        separators=tuple(options["separators"]),
        allow_nan=options["allow_nan"],
    )
    return text.encode("utf-8")
