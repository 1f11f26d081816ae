"""Property: the cache proof is computed from the bytes each SDK sends.

Drawn prompts — tools from a partial, output schemas, parameters, late system messages,
one-message and empty-turn prompts, TTLs, many stable sections, models of every provider and
platform (an alias or its dated snapshot; OpenAI models before and after explicit breakpoints;
Claude on Bedrock, with and without a cross-Region prefix, and on Vertex AI) — rendered with
hostile values, sent through the real anthropic (and its Vertex AI client), openai (chat and
responses), google-genai and boto3 (`bedrock-runtime`, botocore's Stubber) clients with a capturing
transport (tests/sdk_capture.py). In every shape: the SDK accepts the request and sends exactly
`rendered.body(shape)`; the request read back from what the SDK sent, in the provider's cache
order, begins with exactly the recorded prefix (its hash is the recorded hash, and the part after
it is dynamic); every recorded breakpoint is a marker (`cache_control`, a `cachePoint` block) and
every marker a recorded breakpoint; an OpenAI model with explicit breakpoints carries one
`prompt_cache_breakpoint`, on the part that ends the recorded stable prefix, and an earlier model
none; a model that requires a retention is sent it; `cacheable_tokens` is what the stable-prefix
marker (or the provider's automatic caching) covers, counted on the sent text. The anthropic
shapes' options (automatic caching, cache diagnostics) pass the SDKs too. The JavaScript runtime
writes the same bodies
(`ci_only`: node), values that are lists and dicts of characters newer than either runtime's
Unicode tables included. A second property mutates one thing at a time and checks
that the hash and `diff --fail-on bust` move exactly when the provider's documented cache keys
change.

The reading-back here is the test's own (the layout each provider's cache reads, written out from
providers.json's `cache_key`), so it checks promptc.runtime.requestmodel rather than repeating it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptc import compile_text
from promptc.backend.emit import dumps
from promptc.backend.meter import meter
from promptc.facts.config import Config
from promptc.facts.language import JOINER, SYSTEM_ROLES
from promptc.facts.profiles import resolve, resolve_model
from promptc.runtime.model import Manifest, ManifestEntry
from promptc.runtime.render import RenderError, render_artifact
from promptc.runtime.requestmodel import Part, canonical_json, digest
from promptc.tools.diff import diff_manifests

from . import sdk_capture
from .conftest import examples

# the anthropic SDK warns that manual thinking is deprecated on newer models: still a valid request
pytestmark = pytest.mark.filterwarnings("ignore:Using Claude with:UserWarning")

# ---------------------------------------------------------------------------------------------
# Drawing prompts

MODELS = {
    "anthropic": ["claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "claude-haiku-4-5", "claude-opus-4-6"],
    "openai": ["gpt-4o", "gpt-4o-2024-08-06", "gpt-4o-mini", "gpt-4.1-mini", "gpt-5", "gpt-5.5", "gpt-5.6-sol"],
    "gemini": ["gemini-2.5-flash", "gemini-2.5-pro"],
    "bedrock": [
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "anthropic.claude-sonnet-4-6",
        "global.anthropic.claude-opus-4-8",
    ],
    "anthropic-vertex": ["claude-sonnet-4-5@20250929", "claude-haiku-4-5@20251001"],
}
#: the model a shape of another provider than the artifact's is rendered for (OpenAI's: one with
#: explicit breakpoints, so that every artifact's stable end is checked in that shape too)
OTHER_MODEL = {
    "anthropic": "claude-sonnet-4-5",
    "openai": "gpt-5.6-sol",
    "gemini": "gemini-2.5-flash",
    "bedrock": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "anthropic-vertex": "claude-sonnet-4-5@20250929",
}
SHAPE_PROVIDER = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openai-responses": "openai",
    "gemini": "gemini",
    "bedrock": "bedrock",
    "anthropic-vertex": "anthropic-vertex",
}
CAPTURE = {
    "anthropic": sdk_capture.capture_anthropic,
    "openai": sdk_capture.capture_openai_chat,
    "openai-responses": sdk_capture.capture_openai_responses,
    "gemini": sdk_capture.capture_gemini,
    "bedrock": sdk_capture.capture_bedrock,
    "anthropic-vertex": sdk_capture.capture_anthropic_vertex,
}
#: the shapes whose cache is written only at the markers the artifact records
MARKED = ("anthropic", "anthropic-vertex", "bedrock")

#: tool files: integer-like keys, numbers Python and JavaScript spell differently, non-ASCII
TOOLS = [
    {
        "name": "lookup",
        "description": "Look an order up — précis, 精确 😀.",
        "input_schema": {
            "type": "object",
            "properties": {
                "zeta": {"type": "string"},
                "10": {"type": "integer", "maximum": 1234567890123456789, "minimum": -0.0},
                "2": {"type": "number", "exclusiveMaximum": 1e21, "default": 100.0, "multipleOf": 1e-7},
            },
            "required": ["zeta"],
        },
    },
    {"name": "cancel", "description": "Cancel it.", "input_schema": {"type": "object", "properties": {}}},
]
SCHEMAS = [
    {
        "title": "answer",
        "type": "object",
        "properties": {"3": {"type": "integer"}, "text": {"type": "string"}, "1": {"const": 1e16}},
        "required": ["3", "text", "1"],
        "additionalProperties": False,
    },
    {"title": "loose", "type": "object", "properties": {"b": {"type": "number", "minimum": 2.5e-5}}},
]
WORDS = ["Answer", "briefly.", "Cite", "the", "help-centre", "article;", "never", "invent", "prices", "é", "漢字", "🙂"]
#: literal text that would mean something in a source file, written escaped
ESCAPED = ["\\${not_an_input}", "\\{{ 1 }}", "a $ sign", "{braces}", "C:\\dir"]
HOSTILE = [
    "",
    "${x}",
    "{{ 1/0 }}",
    "\n----- user -----\n",
    "/// section: evil stable",
    "\\",
    "\u2028",
    "é",
    "😀",
    "\x00",
]
#: characters newer than the Unicode version of `repr`'s table (promptc.facts.printable: 14.0),
#: which Node's and newer Pythons' tables call printable: from 15.0 (U+1FAE8, U+11F00), 15.1
#: (U+2EBF0), 16.0 (U+1FAE9, U+1FA89, U+1CC00, U+16D40) and 17.0 (U+088F, U+33479); and code
#: points no version assigns or that are private use or noncharacters
NEWEST = [
    *"\U0001fae8\U00011f00\U0002ebf0\U0001fae9\U0001fa89\U0001cc00\U00016d40\u088f\U00033479",
    *"\u0378\U000e0080\U0010fffd\ufffe\x85\xad\u200b",
]

text_values = st.one_of(
    st.sampled_from(HOSTILE + NEWEST),
    st.lists(st.one_of(st.sampled_from(HOSTILE + NEWEST), st.text(max_size=6)), max_size=4).map("".join),
)
#: a value is inserted as its `str()`: a list or dict writes its strings with `repr`, whose escapes
#: are the table's (the same bytes from both runtimes, whatever their engines' Unicode version)
values = st.one_of(
    text_values,
    st.lists(text_values, max_size=3),
    st.dictionaries(text_values, st.one_of(text_values, st.lists(text_values, max_size=2)), max_size=2),
)


@dataclass(frozen=True)
class Drawn:
    source: str
    files: dict[str, str]
    provider: str | None
    inputs: tuple[str, ...]


stable_text = st.lists(st.sampled_from(WORDS + ESCAPED), min_size=1, max_size=6).map(" ".join)


@st.composite
def messages(draw, inputs: list[str]) -> str:
    """Messages with stable and dynamic sections; a late system message; an empty-turn user."""
    roles = draw(
        st.lists(st.sampled_from(["system", "developer", "user", "assistant"]), min_size=1, max_size=5).filter(
            lambda rs: rs[0] != "assistant"
        )
    )
    out = []
    for mi, role in enumerate(roles):
        out.append(f"----- {role} -----\n")
        sections = draw(st.integers(1, 4))
        for si in range(sections):
            if draw(st.booleans()):
                out.append(f"/// section: s{mi}_{si} stable\n{draw(stable_text)}\n")
            else:
                name = f"v{len(inputs)}"
                inputs.append(name)
                text = draw(st.sampled_from(["${%s}", "Now: ${%s}", "${%s} and more words"])) % name
                out.append(f"/// section: d{mi}_{si} dynamic\n{text}\n")
    return "".join(out)


@st.composite
def prompts(draw) -> Drawn:
    provider = draw(st.sampled_from([None, "anthropic", "openai", "gemini", "bedrock", "anthropic-vertex"]))
    lines = []
    files: dict[str, str] = {}
    params = ["max_tokens=64"]
    model = None
    if provider is not None:
        model = draw(st.sampled_from(MODELS[provider]))
        params.insert(0, f"model={model}")
    if draw(st.booleans()):
        params.append("temperature=0.5")
    if draw(st.booleans()):
        params.append('stop="END"')
    if provider == "anthropic" and draw(st.booleans()):
        params.append('tool_choice={"type": "auto"}')
    if provider == "anthropic" and draw(st.booleans()):
        params.append('thinking={"type": "enabled", "budget_tokens": 1024}')
    lines.append(f"/// param: {', '.join(params)}\n")
    # a TTL the model offers (none: no marker at all); without a profile, Claude's
    ttls = list(resolve(provider, model).cache_ttls) if provider else ["5m", "1h"]  # type: ignore[union-attr]
    if ttls and draw(st.booleans()):
        lines.append(f"/// cache_ttl: {draw(st.sampled_from([*ttls, 'none']))}\n")
    if draw(st.booleans()):
        files["schema.json"] = json.dumps(draw(st.sampled_from(SCHEMAS)), ensure_ascii=False)
        lines.append("/// output: schema.json\n")
    inputs: list[str] = []
    if draw(st.booleans()):  # tools from a partial, which also brings stable text
        files["tools.json"] = json.dumps(draw(st.lists(st.sampled_from(TOOLS), min_size=1, max_size=2, unique_by=id)))
        files["_agent.prompt"] = "/// tools: tools.json\nYou are an agent with tools.\n"
        include = "/// include: _agent\n"
    else:
        include = ""
    if draw(st.integers(0, 5)) == 0:  # a one-message prompt: no separator, role system
        name = "v0"
        inputs.append(name)
        body = f"{include}{draw(stable_text)}\n${{{name}}}\n"
    else:
        body = draw(messages(inputs))
        if include:
            body = body.replace("\n", "\n" + include, 1)
    return Drawn("".join(lines) + body, files, provider, tuple(inputs))


# ---------------------------------------------------------------------------------------------
# Reading a request back in its provider's cache order


def _tool_parts(tools: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [("tools", canonical_json(tools))] if tools else []


def read_back(
    shape: str, body: dict[str, Any], model: str, artifact, rendered, own: str | None
) -> list[tuple[str, str, bool]]:
    """The request body as the cache of `own` (the artifact's provider; None: the generic order)
    reads it: (label, text, content) in cache order, from what the SDK sent; `model` is the model it
    went to (Gemini's is in the URL, not the body)."""
    out: list[tuple[str, str, bool]] = []
    profile = resolve(own, artifact.model) if own else None
    keyed = dict(profile.cache_params) if profile is not None else {}

    def params(level: str) -> None:
        for name, param_level in keyed.items():
            if param_level == level and name in body:
                out.append((f"param:{name}", canonical_json(body[name]), False))

    if own is not None:
        out.append(("provider", own, False))
        out.append(("model", resolve_model(own, model), False))
    if shape == "bedrock":
        specs = [t["toolSpec"] for t in body.get("toolConfig", {}).get("tools", []) if "toolSpec" in t]
        tools = [
            {"name": s["name"], "description": s.get("description", ""), "input_schema": s["inputSchema"]["json"]}
            for s in specs
        ]
        out += [(label, text, True) for label, text in _tool_parts(tools)]
        if "outputConfig" in body:  # as for Claude on its API: a key of the system level
            structure = body["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
            schema = {"name": structure["name"], "schema": json.loads(structure["schema"])}
            out.append(("output_schema", canonical_json(schema), False))
        out += [("system", b["text"], True) for b in body.get("system", []) if "text" in b]
        out += [(m["role"], b["text"], True) for m in body["messages"] for b in m["content"] if "text" in b]
        return out
    if shape in ("anthropic", "anthropic-vertex"):
        tools = [{k: v for k, v in t.items() if k != "cache_control"} for t in body.get("tools", [])]
        out += [(label, text, True) for label, text in _tool_parts(tools)]
        if "output_config" in body:  # Anthropic: a key of the system level, not content
            schema = {"name": artifact.output_schema.name, "schema": body["output_config"]["format"]["schema"]}
            out.append(("output_schema", canonical_json(schema), False))
        params("system")
        out += [("system", b["text"], True) for b in body.get("system", [])]
        params("messages")
        out += [(m["role"], b["text"], True) for m in body["messages"] for b in m["content"]]
        return out
    if shape == "gemini":
        declarations = [d for group in body.get("tools", []) for d in group["functionDeclarations"]]
        tools = [
            {"name": d["name"], "description": d["description"], "input_schema": d["parameters_json_schema"]}
            for d in declarations
        ]
        out += [(label, text, True) for label, text in _tool_parts(tools)]
        out += [("system", p["text"], True) for p in body.get("systemInstruction", {}).get("parts", [])]
        out += [(c["role"], p["text"], True) for c in body["contents"] for p in c["parts"]]
        return out
    # openai, openai-responses (and the generic order, which is theirs without the identity)
    if shape == "openai":
        tools = [
            {
                "name": t["function"]["name"],
                "description": t["function"]["description"],
                "input_schema": t["function"]["parameters"],
            }
            for t in body.get("tools", [])
        ]
        schema = body.get("response_format", {}).get("json_schema")
        turns = body["messages"]
    else:
        tools = [
            {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
            for t in body.get("tools", [])
        ]
        schema = body.get("text", {}).get("format")
        turns = body["input"]
    out += [(label, text, True) for label, text in _tool_parts(tools)]
    if schema is not None:
        out.append(("output_schema", canonical_json({"name": schema["name"], "schema": schema["schema"]}), True))
    for turn, blocks in zip(turns, rendered.blocks, strict=True):
        # a message is its blocks joined by a blank line, or (explicit breakpoints) one text part
        # per non-empty block; the cache reads it block by block
        if isinstance(turn["content"], list):
            assert [part["text"] for part in turn["content"]] == [b.text for b in blocks if b.text]
        else:
            assert turn["content"] == JOINER.join(b.text for b in blocks)
        out += [(turn["role"], b.text, True) for b in blocks if b.text]
    return out


def _digest(parts: list[tuple[str, str, bool]]) -> str:
    return digest([Part("x", label, text, "", content) for label, text, content in parts])


def recorded_prefix_length(parts: list[tuple[str, str, bool]], sha: str) -> int:
    """The k for which the first k parts hash to the recorded hash (the last one content)."""
    found = [k for k in range(1, len(parts) + 1) if parts[k - 1][2] and _digest(parts[:k]) == sha]
    assert len(found) == 1, (sha, parts)
    return found[0]


@cache
def _counter(name: str):
    return meter(name)


def check_request(
    drawn: Drawn, artifact, first: dict[str, Any], second: dict[str, Any], options: dict[str, Any] | None = None
) -> list[tuple[Any, ...]]:
    """Every check of the module docstring for one artifact and two sets of values (`second` has
    every value changed); `options` (the anthropic shapes': automatic caching, diagnostics) are
    checked on the first. Returns the (shape, model, inputs, body, options) whose bodies were
    checked."""
    checked: list[tuple[Any, ...]] = []
    own = artifact.provider.name if artifact.provider is not None else None
    tokens = _counter(artifact.tokenizer.name).tokens
    cache_info = artifact.cache
    for shape in SHAPE_PROVIDER:
        model = None if SHAPE_PROVIDER[shape] == own else OTHER_MODEL[SHAPE_PROVIDER[shape]]
        # the cache order the recorded prefix is in: the artifact's own provider's; without a
        # profile the generic one, which is OpenAI's without the identity
        view: str | None = own
        readable = SHAPE_PROVIDER[shape] == own or (own is None and shape in ("openai", "openai-responses"))
        reads = []
        for inputs in (first, second):
            rendered = render_artifact(artifact, inputs)
            try:
                request = rendered.as_shape(shape, model=model)
            except RenderError as exc:
                # refused only for what the API refuses: no user turn (every user turn rendered
                # empty), or (Converse) a first turn that is the assistant's
                turns = _turns(rendered)
                if shape == "bedrock" and turns and turns[0] == "assistant":
                    assert "must start with a user turn" in str(exc), exc
                    reads.append(None)
                    continue
                assert shape in ("anthropic", "anthropic-vertex", "gemini", "bedrock"), exc
                assert "has no user turn" in str(exc), exc
                assert "user" not in turns, turns
                reads.append(None)
                continue
            body = rendered.body(shape, model=model)
            model_key = "modelId" if shape == "bedrock" else "model"
            if inputs is first:  # through the SDK: it accepts the request and sends these bytes
                sent = CAPTURE[shape](request)
                assert sent["body"] == body, shape
                # (Gemini's, Vertex AI's and Bedrock's model is in the URL)
                assert request[model_key] == json.loads(body).get(model_key, request[model_key])
                in_url = shape in ("gemini", "bedrock", "anthropic-vertex")
                assert (request[model_key].replace(":", "%3A") in sent["url"]) == in_url, sent["url"]
                if options and shape in ("anthropic", "anthropic-vertex"):
                    check_options(shape, rendered, model, options)
                    checked.append((shape, model, inputs, rendered.body(shape, model=model, **options), options))
            checked.append((shape, model, inputs, body, None))
            sent_json = json.loads(body)
            if readable:
                reads.append(read_back(shape, sent_json, request[model_key], artifact, rendered, view))
            else:
                reads.append(None)
            if shape in MARKED:
                check_markers(shape, sent_json, request[model_key], artifact, rendered, tokens)
            elif shape in ("openai", "openai-responses"):
                check_openai_cache(shape, sent_json, request["model"], artifact, rendered)
        if reads[0] is None or reads[1] is None:
            continue
        parts1, parts2 = reads
        if cache_info.prefix_sha256 is None:
            # no prefix: the first content part of the request is dynamic
            content2 = [p for p in parts2 if p[2]]
            assert content2 and "¤" in content2[0][1], parts2
            continue
        k1 = recorded_prefix_length(parts1, cache_info.prefix_sha256)
        k2 = recorded_prefix_length(parts2, cache_info.prefix_sha256)
        assert parts1[:k1] == parts2[:k2]
        # and it stops where the request turns dynamic: the next content part carries a value
        rest = [p for p in parts2[k2:] if p[2]]
        assert not rest or "¤" in rest[0][1], (parts2[:k2], rest[:1])
        counted = sum(tokens(text) for _, text, content in parts1[:k1] if content)
        assert counted == cache_info.prefix_tokens
        profile = resolve(own, artifact.model) if own else None
        if profile is not None and not profile.marks_blocks and not profile.explicit_breakpoints:
            assert cache_info.cacheable_tokens == profile.cacheable(counted)  # automatic caching of the prefix
    return checked


def _turns(rendered) -> list[str]:
    """The roles of the turns a request sends after its system part (empty messages left out)."""
    opening = 0
    while opening < len(rendered.messages) and rendered.messages[opening]["role"] in SYSTEM_ROLES:
        opening += 1
    return [
        "user" if m["role"] in SYSTEM_ROLES else m["role"]
        for m, blocks in zip(rendered.messages[opening:], rendered.blocks[opening:], strict=True)
        if any(b.text for b in blocks)
    ]


def _marked_blocks(shape: str, body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[bool], list[Any]]:
    """What a marker shape sent: its tools; for each text block in request order whether it is
    marked (`cache_control` on it; a `cachePoint` block right after it, in the same list); the text
    blocks; and, for Bedrock, that no `cachePoint` stands anywhere but after a text block."""
    if shape == "bedrock":
        lists = [body.get("system", []), *(m["content"] for m in body["messages"])]
        marked: list[bool] = []
        texts: list[Any] = []
        for blocks in lists:
            for i, block in enumerate(blocks):
                if "cachePoint" in block:
                    assert i and "text" in blocks[i - 1], blocks
                else:
                    texts.append(block)
                    marked.append(i + 1 < len(blocks) and "cachePoint" in blocks[i + 1])
        return body.get("toolConfig", {}).get("tools", []), marked, texts
    blocks = [b for m in [{"content": body.get("system", [])}, *body["messages"]] for b in m["content"]]
    return body.get("tools", []), ["cache_control" in b for b in blocks], blocks


def _markers_of(shape: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every marker the body carries (the `cache_control` or `cachePoint` objects)."""
    if shape == "bedrock":
        lists = [body.get("system", []), body.get("toolConfig", {}).get("tools", [])]
        lists += [m["content"] for m in body["messages"]]
        return [b["cachePoint"] for blocks in lists for b in blocks if "cachePoint" in b]
    lists = [body.get("tools", []), body.get("system", []), *(m["content"] for m in body["messages"])]
    return [b["cache_control"] for blocks in lists for b in blocks if "cache_control" in b]


def check_markers(shape: str, body: dict[str, Any], model: str, artifact, rendered, tokens) -> None:
    """Every recorded breakpoint is a marker (`cache_control`, or a `cachePoint` block right after the
    block) and every marker a recorded breakpoint; the stable-prefix marker covers what
    cacheable_tokens counts."""
    recorded = [b for b in artifact.cache.breakpoints if b.anthropic]
    tools, marked, texts = _marked_blocks(shape, body)
    marked_tools = [i for i, t in enumerate(tools) if "cache_control" in t or "cachePoint" in t]
    assert marked_tools in ([], [len(tools) - 1]), tools
    assert sum(marked) + len(marked_tools) == len(recorded), (recorded, body)
    # the marked text blocks are exactly the artifact's marked blocks, in order
    in_order = [b for blocks in rendered.blocks for b in blocks if b.text]
    assert [b.anthropic for b in in_order] == marked
    assert bool(marked_tools) == any(b.message is None for b in recorded)
    # each carries the artifact's TTL when the model offers it, else none (the default)
    profile = resolve(SHAPE_PROVIDER[shape], model)
    assert profile is not None
    ttl = rendered.ttl if rendered.ttl in profile.cache_ttls else None
    for point in _markers_of(shape, body):
        assert point.get("ttl") == ttl, (point, rendered.ttl, model)
    # what the stable-prefix marker covers: the tools and text blocks up to it, as sent
    covered = 0
    stable = next((b for b in recorded if b.stable_prefix), None)
    if shape == "bedrock":
        plain_tools = [
            {"name": s["name"], "description": s.get("description", ""), "input_schema": s["inputSchema"]["json"]}
            for s in (t["toolSpec"] for t in tools if "toolSpec" in t)
        ]
    else:
        plain_tools = [{k: v for k, v in t.items() if k != "cache_control"} for t in tools]
    if plain_tools:
        covered += tokens(canonical_json(plain_tools))
    if stable is not None and stable.message is not None:
        for block, mark in zip(texts, marked, strict=True):
            covered += tokens(block["text"])
            if mark:
                break
    if stable is not None:
        assert stable.tokens == covered
    own = artifact.provider.name if artifact.provider else None
    if own is not None and own == SHAPE_PROVIDER[shape]:
        profile = resolve(own, artifact.model)
        assert profile is not None and profile.marks_blocks
        assert artifact.cache.cacheable_tokens == profile.cacheable(covered if stable is not None else 0)


def check_openai_cache(shape: str, body: dict[str, Any], model: str, artifact, rendered) -> None:
    """OpenAI GPT-5.6 and later: one `prompt_cache_breakpoint`, on the text part that ends the
    recorded stable prefix (none when it ends in the tools, on a Responses assistant turn, or with
    `cache_ttl: none`), and `cacheable_tokens` what it covers; earlier models: no marker. A model
    that requires a retention is sent it."""
    profile = resolve("openai", model)
    assert profile is not None
    turns = body["messages" if shape == "openai" else "input"]
    found = [
        (mi, pi, part)
        for mi, turn in enumerate(turns)
        if isinstance(turn["content"], list)
        for pi, part in enumerate(turn["content"])
        if "prompt_cache_breakpoint" in part
    ]
    end = next(((b.message, b.block) for b in artifact.cache.breakpoints if b.stable_prefix), None)
    expected = (
        profile.explicit_breakpoints
        and end is not None
        and end[0] is not None
        and artifact.cache.ttl != "none"
        and not (shape == "openai-responses" and rendered.messages[end[0]]["role"] == "assistant")
    )
    if not expected:
        assert not found, found
    else:
        assert len(found) == 1, found
        mi, pi, part = found[0]
        blocks = rendered.blocks[end[0]]
        assert mi == end[0] and part["text"] == blocks[end[1]].text
        assert pi == sum(1 for b in blocks[: end[1]] if b.text)  # the part of that block
        ttl = artifact.cache.ttl if artifact.cache.ttl in profile.cache_ttls else None
        assert part["prompt_cache_breakpoint"] == ({"mode": "explicit", "ttl": ttl} if ttl else {"mode": "explicit"})
    assert body.get("prompt_cache_retention") == (profile.cache_retention or body.get("prompt_cache_retention"))
    if profile.cache_retention:
        assert body["prompt_cache_retention"] == "24h"
    own = artifact.provider.name if artifact.provider else None
    if own == "openai" and profile.explicit_breakpoints and model in (artifact.model, None):
        own_profile = resolve("openai", artifact.model)
        assert own_profile is not None
        marked = end is not None and end[0] is not None and artifact.cache.ttl != "none"
        assert artifact.cache.cacheable_tokens == (own_profile.cacheable(artifact.cache.prefix_tokens) if marked else 0)


def check_options(shape: str, rendered, model: str | None, options: dict[str, Any]) -> None:
    """The anthropic shapes' options through the SDK: automatic caching is one top-level
    `cache_control` and no block marker; `previous_message_id` is the request's `diagnostics`."""
    request = rendered.as_shape(shape, model=model, **options)
    sent = CAPTURE[shape](request)
    assert sent["body"] == rendered.body(shape, model=model, **options)
    body = sent["json"]
    automatic = options.get("caching") == "automatic"
    assert ("cache_control" in body) == automatic
    _, marked, _ = _marked_blocks(shape, body)
    assert not any(marked) or not automatic
    assert not any("cache_control" in t for t in body.get("tools", [])) or not automatic
    if "previous_message_id" in options:
        assert body["diagnostics"] == {"previous_message_id": options["previous_message_id"]}
    else:
        assert "diagnostics" not in body


def compiled(drawn: Drawn):
    result = compile_text(drawn.source, name="p", partials=drawn.files)
    errors = [d for d in result.diagnostics if d.severity == "error"]
    if errors:
        # the only errors a drawn prompt may have: its own provider's API refuses it (E711), or a
        # param's value (E730: `temperature` other than 1 for OpenAI's reasoning models)
        assert {d.code for d in errors} <= {"E711", "E730"}, [(d.code, d.message) for d in errors]
        assert drawn.provider is not None
        return None
    assert result.artifact is not None
    return result.artifact


def value_sets(drawn: Drawn, data) -> tuple[dict[str, Any], dict[str, Any]]:
    first = {name: data.draw(values, label=name) for name in drawn.inputs}
    second = {name: value + "¤" if isinstance(value, str) else [value, "¤"] for name, value in first.items()}
    return first, second


#: the anthropic shapes' options: automatic caching, cache diagnostics (opted in, or a previous id)
shape_options = st.fixed_dictionaries(
    {},
    optional={
        "caching": st.sampled_from(["blocks", "automatic"]),
        "previous_message_id": st.sampled_from([None, "msg_01AbCdEf", "msg_é😀"]),
    },
)


@pytest.mark.slow  # the three SDKs on drawn prompts; .ci/run runs it with the fuller profile
@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
@given(drawn=prompts(), data=st.data())
def test_every_shape_sends_the_recorded_prefix_through_the_real_sdks(drawn: Drawn, data) -> None:
    artifact = compiled(drawn)
    if artifact is None:
        return
    check_request(drawn, artifact, *value_sets(drawn, data), data.draw(shape_options, label="options"))


# ---------------------------------------------------------------------------------------------
# The JavaScript runtime sends the same bytes


@pytest.mark.ci_only
@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(drawn=prompts(), data=st.data())
def test_node_sends_the_bytes_python_sends(drawn: Drawn, data, node_bodies) -> None:
    artifact = compiled(drawn)
    if artifact is None:
        return
    text = dumps(artifact).decode("utf-8")  # the artifact file, as the build writes it
    options = data.draw(shape_options, label="options")
    for shape, model, inputs, body, used in check_request(drawn, artifact, *value_sets(drawn, data), options):
        answer = node_bodies(text, inputs, shape, model, used)
        assert answer == {"body": body.decode("utf-8")}, shape


@pytest.mark.ci_only
def test_node_escapes_in_a_value_what_python_escapes(node_bodies) -> None:
    """Issue 33, item 17: `🫩` (Unicode 16.0) in a list was `'\\U0001fae9'` from Python 3.11 and
    the raw character from Node; both now write `repr` by one table (promptc.facts.printable)."""
    artifact = compile_text("/// param: model=gpt-4o\n----- user -----\nItems: ${a}\n", name="p").artifact
    assert artifact is not None
    values = {"a": [*NEWEST, {"".join(NEWEST): "\U0001fae9 ok"}]}
    body = render_artifact(artifact, values).body("openai").decode("utf-8")
    assert "\\\\U0001fae9" in body and "\\\\u0378" in body and "\U0001fae9" not in body
    assert node_bodies(dumps(artifact).decode("utf-8"), values, "openai", None) == {"body": body}


# ---------------------------------------------------------------------------------------------
# One change at a time: the hash moves exactly when a documented cache key changes

BASE = {
    "anthropic": (
        "claude-sonnet-4-5",
        'tool_choice={"type": "auto"}, thinking={"type": "enabled", "budget_tokens": 1024}',
    ),
    "openai": ("gpt-4o", 'tool_choice="auto"'),
    "gemini": ("gemini-2.5-flash", "temperature=0.5"),
}
MUTATIONS = ["tool", "model", "alias", "tool_choice", "thinking", "schema", "system", "dynamic"]


def mutation_source(
    provider: str, layout: str, mutation: str | None, system: str = "You are careful and brief.", dynamic: str = "Now"
) -> tuple[str, dict[str, str]]:
    """A prompt of `provider` whose prefix reaches `layout` (`head`: the first message block is
    dynamic; `system`: the system message is stable, the user turn dynamic; `messages`: a stable
    user turn too), with `mutation` applied."""
    model, params = BASE[provider]
    tools = json.loads(json.dumps(TOOLS[:1]))
    schema = json.loads(json.dumps(SCHEMAS[0]))
    if mutation == "tool":
        tools[0]["description"] += "!"
    elif mutation == "model":
        model = {"anthropic": "claude-opus-4-1", "openai": "gpt-4.1", "gemini": "gemini-2.5-pro"}[provider]
    elif mutation == "alias":  # the same model under its dated name: the same cache
        model = resolve_model(provider, model)
    elif mutation == "tool_choice":
        params = params.replace('"auto"', '"any"') if provider == "anthropic" else params.replace('"auto"', '"none"')
    elif mutation == "thinking":  # (only Anthropic's base prompt sets it: elsewhere no change)
        params = params.replace("1024", "2048")
    elif mutation == "schema":
        schema["properties"]["text"]["description"] = "the answer"
    elif mutation == "system":
        system += " Always."
    elif mutation == "dynamic":
        dynamic += " later"
    first = f"/// section: live dynamic\n{dynamic}: ${{state}}\n" if layout == "head" else f"{system}\n"
    user = "A stable question.\n" if layout == "messages" else f"{dynamic} ${{question}}\n"
    source = (
        f"/// param: model={model}, max_tokens=64, {params}\n/// tools: tools.json\n/// output: schema.json\n"
        f"----- system -----\n{first}----- user -----\n{user}"
    )
    if layout == "messages":
        source += "----- assistant -----\nok\n----- user -----\n${question}\n"
    return source, {"tools.json": json.dumps(tools), "schema.json": json.dumps(schema)}


def expected_to_move(provider: str, layout: str, mutation: str) -> bool:
    """What the provider's documentation says (providers.json `cache_key`): a key moves the hash when
    the prefix reaches the level it keys."""
    profile = resolve(provider, None)
    assert profile is not None
    # the levels whose content the prefix holds (a stable system message is OpenAI's messages level:
    # no key of OpenAI's is at a level, so the difference does not show here)
    reach = {"head": {"tools", "output_schema"}, "system": {"tools", "output_schema", "system"}}.get(
        layout, {"tools", "output_schema", "system", "messages"}
    )
    keyed = dict(profile.cache_params)
    if mutation in ("tool", "model"):
        return True  # the tools lead every prefix; the model is the cache's identity
    if mutation in ("alias", "dynamic"):
        return False
    if mutation in ("tool_choice", "thinking"):
        return mutation in keyed and keyed[mutation] in reach
    if mutation == "schema":
        return profile.schema_cached or (profile.schema_level is not None and profile.schema_level in reach)
    if mutation == "system":
        return layout != "head"
    raise AssertionError(mutation)


def _entry(artifact) -> ManifestEntry:
    encoded = dumps(artifact)
    return ManifestEntry.of(artifact, "p.json", __import__("hashlib").sha256(encoded).hexdigest())


@pytest.mark.parametrize("mutation", MUTATIONS)
@pytest.mark.parametrize("layout", ["head", "system", "messages"])
@pytest.mark.parametrize("provider", sorted(BASE))
@settings(max_examples=1 if examples(10) < 20 else 4, deadline=None)
@given(system=stable_text, dynamic=stable_text)
def test_the_hash_moves_exactly_when_a_documented_cache_key_changes(
    provider, layout, mutation, system, dynamic
) -> None:
    """Every provider × how far the prefix reaches × what changes (exhaustively), around drawn text."""
    config = Config(tokenizer="approx-bytes/4")
    sources = [
        mutation_source(provider, layout, None, system, dynamic),
        mutation_source(provider, layout, mutation, system, dynamic),
    ]
    built = []
    for text, files in sources:
        result = compile_text(text, name="p", config=config, partials=files)
        assert result.artifact is not None, [d.message for d in result.diagnostics]
        built.append(result.artifact)
    before, after = built
    assert before.cache.prefix_sha256 is not None
    moved = before.cache.prefix_sha256 != after.cache.prefix_sha256
    assert moved == expected_to_move(provider, layout, mutation), (mutation, before.cache.key, after.cache.key)
    # `promptc diff --fail-on bust` reads the same: a bust exactly when the hash moved
    diff = diff_manifests(
        Manifest.of({"p": _entry(before)}, tokenizer=None, provider=None),
        Manifest.of({"p": _entry(after)}, tokenizer=None, provider=None),
    )
    assert diff.failing(["bust"]) == (["bust"] if moved else [])


def test_a_model_change_is_a_bust_on_its_param_line(tmp_path) -> None:
    """The CLI end to end: a switched model fails `diff --fail-on bust` with the `/// param:` line
    as the first difference (the issue's example: claude-sonnet-4-5 → claude-opus-4-1)."""
    from .conftest import run_promptc, write

    text, files = mutation_source("anthropic", "system", None)
    write(tmp_path, "pyproject.toml", "[tool.promptc]\nsrc = 'src'\nout = 'out'\ntokenizer = 'approx-bytes/4'\n")
    for rel, body in {"p.prompt": text, **files}.items():
        write(tmp_path, f"src/{rel}", body)
        write(tmp_path, f"old/{rel}", body)
    assert run_promptc("build", "-q", cwd=tmp_path).returncode == 0
    (tmp_path / "old.json").write_bytes((tmp_path / "out/manifest.json").read_bytes())
    write(tmp_path, "src/p.prompt", text.replace("claude-sonnet-4-5", "claude-opus-4-1"))
    assert run_promptc("build", "-q", cwd=tmp_path).returncode == 0
    done = run_promptc("diff", "old.json", "--old-src", "old", "--fail-on", "bust", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "src/p.prompt:1:12 (`model` differs: the cache keys on it)" in done.stdout
    assert "| /// param: model=claude-opus-4-1, max_tokens=64" in done.stdout
    # the alias and its dated snapshot are one cache: no bust
    write(tmp_path, "src/p.prompt", text.replace("claude-sonnet-4-5", "claude-sonnet-4-5-20250929"))
    assert run_promptc("build", "-q", cwd=tmp_path).returncode == 0
    same = run_promptc("diff", "old.json", "--old-src", "old", "--fail-on", "bust", cwd=tmp_path)
    assert same.returncode == 0 and "0 cache busts" in same.stdout, same.stdout


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=prompts())
def test_the_walks_stop_is_the_prefixs_stop(drawn: Drawn) -> None:
    """`Request.stop` (which hashes nothing) is where `prefix()` stops, in every provider's view;
    the compile's cut, located by emit, is where the artifact's request model stops."""
    from promptc.runtime import requestmodel

    artifact = compiled(drawn)
    if artifact is None:
        return
    for profile in (True, None, requestmodel.anthropic_view(None)):
        request = requestmodel.of_artifact(artifact, profile=profile)
        assert request.stop() is request.prefix().stop
    # the cut the compile keeps is emit's (what `cache.prefix_end` records): the artifact's own
    from promptc.backend.prefix import locate
    from promptc.compile import pipeline
    from promptc.facts.config import Config
    from promptc.passes.context import SourceTree

    files = {"p.prompt": drawn.source.encode(), **{k: v.encode() for k, v in drawn.files.items()}}
    state = pipeline.compile_prompt("p.prompt", Config(), SourceTree(files=files))
    assert state.artifact is not None and state.document is not None and state.cut is not None
    assert state.cut == locate(state.document, state.rel, state.root, state.artifact)
