"""Request shapes: a rendered prompt as the keyword arguments of each provider's official SDK call.

| shape              | call                                                        |
|--------------------|-------------------------------------------------------------|
| `plain`            | the messages as `[{"role", "content"}]`                     |
| `anthropic`        | `anthropic.Anthropic().messages.create(**req)`              |
| `openai`           | `openai.OpenAI().chat.completions.create(**req)`            |
| `openai-responses` | `openai.OpenAI().responses.create(**req)`                   |
| `gemini`           | `google.genai.Client().models.generate_content(**req)`      |
| `bedrock`          | `boto3.client("bedrock-runtime").converse(**req)`           |
| `anthropic-vertex` | `anthropic.AnthropicVertex(...).messages.create(**req)`     |

Every shape but `plain` carries the model (the artifact's, or the one passed in), the tools, the
output schema and the parameters the call takes, spelled as the call spells them
(`promptc/data/providers.json`, `shapes`); a parameter the call does not take is left out (the
build warns, W707, for the profile's own shape). The tests pass each shape to the real SDKs.

A request goes to the provider of its shape: rendering a shape of another provider than the
artifact's model needs a model of that provider (`model=`), else it is refused with the reason;
a request the provider's API refuses (no user turn for Anthropic and Gemini, `shapes.*.requires`)
is a `ShapeError` naming the shape. The cache breakpoints are the artifact's: `cache_control`
(anthropic, anthropic-vertex) and `cachePoint` blocks (bedrock) go exactly where the build recorded
them (`promptc.runtime.requestmodel` places them on a non-empty stable block or the last tool),
never moved at render; for an OpenAI model with explicit breakpoints (GPT-5.6 and later) the openai
shapes put one `prompt_cache_breakpoint` on the text part that ends the cache-stable prefix, and
none after it; `prompt_cache_key` is the prefix hash, sent when the request goes to the artifact's
own OpenAI model (the hash covers the model); a model that requires a `prompt_cache_retention`
(OpenAI GPT-5.5 and later: `24h`) is sent it. A marker's TTL is the artifact's `cache_ttl` when
the model the request goes to offers it (providers.json `cache_ttls`), else the provider's default.

Options of the anthropic shapes (`build(..., caching="automatic")`: one top-level `cache_control`
instead of the block markers; `previous_message_id=`: Anthropic's cache diagnostics) are the
caller's, per request; docs/caching.md says when automatic caching wins.

`body(rendered, shape)` is the exact bytes the pinned Python SDK sends for the request: its
top-level key order and `json.dumps` options (`shapes.*.body`), for Gemini its REST layout, for
Bedrock botocore's rest-json body (the model id goes in the URI), for Vertex AI the Messages body
without the model (in the URL) and with the SDK's `anthropic_version`. The JavaScript runtime's
`rendered.body(shape)` writes the same bytes.

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
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..facts.language import SHAPES, SYSTEM_ROLES
from ..facts.profiles import Profile, data, provider_of_model, resolve, shape_params, shape_provider, shape_requires
from ..facts.records import dataclass

if TYPE_CHECKING:
    from .render import Rendered

__all__ = ["CACHING", "NOT_GIVEN", "SHAPES", "ShapeOptions", "body", "build", "strict_compatible"]


class ShapeError(ValueError):
    """A rendered prompt cannot take this shape (the runtime turns it into a RenderError)."""


class _NotGiven:
    """`previous_message_id` left out: the request asks for no cache diagnostics (None opts in
    without a previous message)."""

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN: Any = _NotGiven()
#: how the anthropic shapes mark the cache: the artifact's block markers (`blocks`, the default),
#: or one top-level `cache_control` the provider moves to the last cacheable block (`automatic`)
CACHING = ("blocks", "automatic")
#: the shapes that take the options of Anthropic's Messages API
_ANTHROPIC_SHAPES = ("anthropic", "anthropic-vertex")


@dataclass(frozen=True, slots=True)
class ShapeOptions:
    """The caller's per-request options: `caching` (`CACHING`) and `previous_message_id` (a
    `msg_…` id, None to opt in to cache diagnostics on a first turn, `NOT_GIVEN` not to)."""

    caching: str = "blocks"
    previous_message_id: Any = NOT_GIVEN

    def check(self, shape: str) -> None:
        if self.caching not in CACHING:
            raise ShapeError(f"caching must be one of {', '.join(CACHING)}, got {self.caching!r}")
        given = [
            name
            for name, on in (
                ("caching='automatic'", self.caching == "automatic"),
                ("previous_message_id", self.previous_message_id is not NOT_GIVEN),
            )
            if on
        ]
        if given and shape not in _ANTHROPIC_SHAPES:
            raise ShapeError(
                f"{' and '.join(given)}: an option of the anthropic and anthropic-vertex shapes, not of {shape}"
            )
        pid = self.previous_message_id
        if pid is not NOT_GIVEN and pid is not None and not (isinstance(pid, str) and pid):
            raise ShapeError(f"previous_message_id must be a message id (`msg_…`) or None, got {pid!r}")


_DEFAULT_OPTIONS = ShapeOptions()


@lru_cache(maxsize=256)
def _profile(provider: str | None, model: str | None) -> Profile | None:
    """The profile of the model a request goes to (its provider named by the shape)."""
    return resolve(provider, model) if provider else None


def _offered(ttl: str | None, profile: Profile | None) -> str | None:
    """The artifact's `cache_ttl` when the model the request goes to offers it, else None (the
    provider's default lifetime: a TTL written for another provider's model is never sent)."""
    if not ttl or profile is None or ttl not in profile.cache_ttls:
        return None
    return ttl


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
        if native in ("stop_sequences", "stopSequences") and isinstance(value, str):
            value = [value]
        out[native] = value
    return out


def _model(rendered: Rendered, shape: str, model: str | None) -> str:
    """The model the request goes to: `model`, else the artifact's — which must be a model of the
    shape's provider (a gemini request cannot go to claude-sonnet-4-5)."""
    target = shape_provider(shape)
    if model:
        other = provider_of_model(model)
        if target and other and not _serves(target, other):
            raise ShapeError(
                f"prompt `{rendered.name}`: `{model}` is an {other} model; the {shape} request goes to {target}: "
                f"pass one of its models (`--model`, `as_shape('{shape}', model=…)`)"
            )
        return model
    own = rendered.provider or provider_of_model(rendered.model)
    if rendered.model and target and own and not _serves(target, own):
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


def _serves(target: str, provider: str) -> bool:
    """Whether a request to `target` can go to a model of `provider`: its own, or the provider
    whose models the platform serves under the same names (Vertex AI serves `claude-opus-4-6`)."""
    if target == provider:
        return True
    same: str | None = ((data()["providers"].get(target) or {}).get("same_as") or {}).get("value")
    return same == provider


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
    needs = shape_requires(shape)
    if needs == "user_first" and turns and turns[0]["role"] != "user":
        raise ShapeError(
            f"prompt `{rendered.name}`: the {shape} request must start with a user turn, and its first turn is the "
            f"{turns[0]['role']}'s; put a `----- user -----` message before it, or render the user turn non-empty"
        )
    if needs not in ("user_turn", "user_first") or any(turn["role"] == "user" for turn in turns):
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


def _anthropic(
    rendered: Rendered, model: str | None, options: ShapeOptions, shape: str = "anthropic"
) -> dict[str, Any]:
    """One text block per artifact block; empty blocks are skipped (the API refuses empty text), and
    a message left with no block at all is dropped. `cache_control` (with the TTL) goes on the
    blocks the artifact marks for Anthropic (each a non-empty stable block) and on the last tool
    when the artifact marks the place after the tools; with `caching="automatic"` one top-level
    `cache_control` instead (a top-level marker counts against the same limit of four, so the two
    are never mixed). `previous_message_id` asks for Anthropic's cache diagnostics."""
    params = _params(rendered, shape)
    if "max_tokens" not in params:
        raise ShapeError(
            f"prompt `{rendered.name}`: the {shape} request needs `max_tokens`; "
            "add `/// param: max_tokens=1024` to the prompt"
        )
    chosen = _model(rendered, shape, model)
    control = _cache_control(_offered(rendered.ttl, _profile(shape_provider(shape), chosen)))
    automatic = options.caching == "automatic"
    marks = not automatic
    tools = [tool.to_json() for tool in rendered.tools]
    if tools and rendered.head_breakpoint and marks:
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
                if block.anthropic and marks:
                    content[-1]["cache_control"] = dict(control)
        if not opening and content:
            role = "user" if message["role"] in SYSTEM_ROLES else message["role"]
            messages.append({"role": role, "content": content})
    _refuse_turnless(rendered, shape, messages, bool(system))
    request: dict[str, Any] = {"model": chosen, "max_tokens": params.pop("max_tokens")}
    if automatic:
        request["cache_control"] = control
    if options.previous_message_id is not NOT_GIVEN:
        request["diagnostics"] = {"previous_message_id": options.previous_message_id}
    if tools:
        request["tools"] = tools
    if system:
        request["system"] = system
    request["messages"] = messages
    if rendered.output_schema is not None:
        request["output_config"] = {"format": {"type": "json_schema", "schema": rendered.output_schema.schema}}
    request.update(params)
    return request


def _anthropic_vertex(rendered: Rendered, model: str | None, options: ShapeOptions) -> dict[str, Any]:
    """The anthropic shape's request for Claude on Vertex AI (the same Messages API)."""
    return _anthropic(rendered, model, options, "anthropic-vertex")


def _bedrock(rendered: Rendered, model: str | None, options: ShapeOptions) -> dict[str, Any]:
    """Converse: `system` and `messages` of `{"text": …}` blocks (empty ones left out), a
    `cachePoint` block right after each block the artifact marks (the anthropic shape's markers,
    at most four) and after the last tool when it marks the head; consecutive turns of one role
    are one message (Converse refuses roles that do not alternate). The inference parameters
    go in `inferenceConfig`, the tools in `toolConfig`, the output schema (as JSON text) in
    `outputConfig`."""
    chosen = _model(rendered, "bedrock", model)
    ttl = _offered(rendered.ttl, _profile("bedrock", chosen))
    point = {"type": "default", "ttl": ttl} if ttl else {"type": "default"}
    params = _params(rendered, "bedrock")
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    opening = True
    for message, blocks in zip(rendered.messages, rendered.blocks, strict=True):
        opening = opening and message["role"] in SYSTEM_ROLES
        content: list[dict[str, Any]] = system if opening else []
        for block in blocks:
            if block.text:
                content.append({"text": block.text})
                if block.anthropic:
                    content.append({"cachePoint": dict(point)})
        if not opening and content:
            role = "user" if message["role"] in SYSTEM_ROLES else message["role"]
            if messages and messages[-1]["role"] == role:
                messages[-1]["content"].extend(content)
            else:
                messages.append({"role": role, "content": content})
    _refuse_turnless(rendered, "bedrock", messages, bool(system))
    request: dict[str, Any] = {"modelId": chosen, "messages": messages}
    if system:
        request["system"] = system
    inference = {name: params[name] for name in data()["shapes"]["bedrock"]["body"]["inference"] if name in params}
    if inference:
        request["inferenceConfig"] = inference
    if rendered.tools:
        specs: list[dict[str, Any]] = []
        for tool in rendered.tools:
            spec: dict[str, Any] = {"name": tool.name}
            if tool.description:  # a NonEmptyString: an empty one is left out
                spec["description"] = tool.description
            spec["inputSchema"] = {"json": tool.to_json()["input_schema"]}
            specs.append({"toolSpec": spec})
        if rendered.head_breakpoint:
            specs.append({"cachePoint": dict(point)})
        request["toolConfig"] = {"tools": specs}
    output = rendered.output_schema
    if output is not None:
        structure = {"jsonSchema": {"schema": _schema_text(output.schema), "name": output.name}}
        request["outputConfig"] = {"textFormat": {"type": "json_schema", "structure": structure}}
    return request


def _schema_text(schema: Any) -> str:
    """The output schema as the JSON text Converse takes (`jsonSchema.schema` is a string):
    compact, keys as written, non-ASCII kept (the runtimes write the same text)."""
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":"))


def _openai_messages(rendered: Rendered) -> list[dict[str, str]]:
    return [m.copy() for m in rendered.messages]


def _openai_turns(rendered: Rendered, profile: Profile | None, responses: bool) -> list[dict[str, Any]]:
    """The turns of an openai request. For a model with explicit breakpoints, one text part per
    non-empty artifact block and a `prompt_cache_breakpoint` on the part that ends the cache-stable
    prefix (none after it; none with `cache_ttl: none`); a message whose blocks are all empty keeps
    its empty text. In Responses input an assistant turn keeps its text: its parts would be
    `output_text`, which takes no breakpoint. Every other model: the messages as they are."""
    if profile is None or not profile.explicit_breakpoints:
        return _openai_messages(rendered)
    end = rendered.stable_end if rendered.ttl != "none" else None
    ttl = _offered(rendered.ttl, profile)
    marker = {"mode": "explicit", "ttl": ttl} if ttl else {"mode": "explicit"}
    kind = "input_text" if responses else "text"
    turns: list[dict[str, Any]] = []
    for mi, (message, blocks) in enumerate(zip(rendered.messages, rendered.blocks, strict=True)):
        if responses and message["role"] == "assistant":
            turns.append(message.copy())
            continue
        parts: list[dict[str, Any]] = []
        for bi, block in enumerate(blocks):
            if block.text:
                parts.append({"type": kind, "text": block.text})
                if end is not None and end[0] == mi and end[1] == bi:
                    parts[-1]["prompt_cache_breakpoint"] = dict(marker)
        turns.append({"role": message["role"], "content": parts or message["content"]})
    return turns


def _openai(rendered: Rendered, model: str | None, options: ShapeOptions) -> dict[str, Any]:
    chosen = _model(rendered, "openai", model)
    profile = _profile("openai", chosen)
    request: dict[str, Any] = {"model": chosen, "messages": _openai_turns(rendered, profile, False)}
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
    if profile is not None and profile.cache_retention:
        request["prompt_cache_retention"] = profile.cache_retention
    request.update(_params(rendered, "openai"))
    return request


def _openai_responses(rendered: Rendered, model: str | None, options: ShapeOptions) -> dict[str, Any]:
    chosen = _model(rendered, "openai-responses", model)
    profile = _profile("openai", chosen)
    request: dict[str, Any] = {"model": chosen, "input": _openai_turns(rendered, profile, True)}
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
    if profile is not None and profile.cache_retention:
        request["prompt_cache_retention"] = profile.cache_retention
    request.update(_params(rendered, "openai-responses"))
    return request


def _gemini(rendered: Rendered, model: str | None, options: ShapeOptions) -> dict[str, Any]:
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


_BUILDERS: dict[str, Callable[[Rendered, str | None, ShapeOptions], Any]] = {
    "plain": lambda rendered, model, options: _openai_messages(rendered),
    "anthropic": _anthropic,
    "openai": _openai,
    "openai-responses": _openai_responses,
    "gemini": _gemini,
    "bedrock": _bedrock,
    "anthropic-vertex": _anthropic_vertex,
}


def build(
    rendered: Rendered,
    shape: str,
    model: str | None = None,
    *,
    caching: str = "blocks",
    previous_message_id: Any = NOT_GIVEN,
) -> Any:
    builder = _BUILDERS.get(shape)
    if builder is None:
        raise ShapeError(f"unknown shape `{shape}`; shapes: {', '.join(SHAPES)}")
    options = _DEFAULT_OPTIONS
    if caching != "blocks" or previous_message_id is not NOT_GIVEN:
        options = ShapeOptions(caching, previous_message_id)
        options.check(shape)
    return builder(rendered, model, options)


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


def body(
    rendered: Rendered,
    shape: str,
    model: str | None = None,
    *,
    caching: str = "blocks",
    previous_message_id: Any = NOT_GIVEN,
) -> bytes:
    """The request body of `shape` as the pinned Python SDK sends it: the same bytes (providers.json
    `shapes.*.body`: the SDK's top-level order and json.dumps options; Gemini's REST layout; the
    keys the SDK moves into the URL (`uri`) left out, the ones it adds (`append`) last)."""
    if shape == "plain":
        raise ShapeError("the plain shape is not a request body: pick a provider's shape")
    request = build(rendered, shape, model, caching=caching, previous_message_id=previous_message_id)
    spec = data()["shapes"][shape]["body"]
    if shape == "gemini":
        payload = _gemini_body(request, spec)
    else:
        for key in spec.get("uri", ()):
            request.pop(key, None)
        payload = _ordered(request, spec["order"])
        payload.update(spec.get("append", {}))
    options = spec["serializer"]
    text = json.dumps(
        payload,
        ensure_ascii=options["ensure_ascii"],
        separators=tuple(options["separators"]),
        allow_nan=options["allow_nan"],
    )
    return text.encode("utf-8")
