"""Property: the cache proof is computed from the bytes each SDK sends.

Drawn prompts — tools from a partial, output schemas, parameters, late system messages,
one-message and empty-turn prompts, TTLs, many stable sections, models of every provider (an
alias or its dated snapshot) — rendered with hostile values, sent through the real anthropic,
openai (chat and responses) and google-genai clients with a capturing transport
(tests/sdk_capture.py). In every shape: the SDK accepts the request and sends exactly
`rendered.body(shape)`; the request read back from what the SDK sent, in the provider's cache
order, begins with exactly the recorded prefix (its hash is the recorded hash, and the part after
it is dynamic); every recorded Anthropic breakpoint is a `cache_control` marker and every marker
a recorded breakpoint; `cacheable_tokens` is what the stable-prefix marker (or the provider's
automatic caching) covers, counted on the sent text. The JavaScript runtime writes the same bodies
(`ci_only`: node), values that are lists and dicts of characters newer than either runtime's
Unicode tables included. A second property mutates one thing at a time and checks that the hash and
`diff --fail-on bust` move exactly when the provider's documented cache keys change.

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
    "openai": ["gpt-4o", "gpt-4o-2024-08-06", "gpt-4.1-mini", "gpt-5"],
    "gemini": ["gemini-2.5-flash", "gemini-2.5-pro"],
}
#: the model a shape of another provider than the artifact's is rendered for
OTHER_MODEL = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o", "gemini": "gemini-2.5-flash"}
SHAPE_PROVIDER = {"anthropic": "anthropic", "openai": "openai", "openai-responses": "openai", "gemini": "gemini"}
CAPTURE = {
    "anthropic": sdk_capture.capture_anthropic,
    "openai": sdk_capture.capture_openai_chat,
    "openai-responses": sdk_capture.capture_openai_responses,
    "gemini": sdk_capture.capture_gemini,
}

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
    provider = draw(st.sampled_from([None, "anthropic", "openai", "gemini"]))
    lines = []
    files: dict[str, str] = {}
    params = ["max_tokens=64"]
    if provider is not None:
        params.insert(0, f"model={draw(st.sampled_from(MODELS[provider]))}")
    if draw(st.booleans()):
        params.append("temperature=0.5")
    if draw(st.booleans()):
        params.append('stop="END"')
    if provider == "anthropic" and draw(st.booleans()):
        params.append('tool_choice={"type": "auto"}')
    if provider == "anthropic" and draw(st.booleans()):
        params.append('thinking={"type": "enabled", "budget_tokens": 1024}')
    lines.append(f"/// param: {', '.join(params)}\n")
    if provider in (None, "anthropic") and draw(st.booleans()):
        lines.append(f"/// cache_ttl: {draw(st.sampled_from(['5m', '1h']))}\n")
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
    if shape == "anthropic":
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
        # a message is its blocks joined by a blank line; the cache reads it block by block
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


def check_request(drawn: Drawn, artifact, first: dict[str, Any], second: dict[str, Any]) -> list[tuple[str, Any]]:
    """Every check of the module docstring for one artifact and two sets of values (`second` has
    every value changed). Returns the (shape, model) pairs whose bodies were checked, per value set."""
    checked = []
    own = artifact.provider.name if artifact.provider is not None else None
    tokens = _counter(artifact.tokenizer.name).tokens
    cache_info = artifact.cache
    for shape in ("anthropic", "openai", "openai-responses", "gemini"):
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
                # refused only for what the API refuses: no user turn (every user turn rendered empty)
                assert shape in ("anthropic", "gemini") and "has no user turn" in str(exc), exc
                opening = 0
                while opening < len(rendered.messages) and rendered.messages[opening]["role"] in SYSTEM_ROLES:
                    opening += 1
                assert all(not m["content"] for m in rendered.messages[opening:] if m["role"] != "assistant")
                reads.append(None)
                continue
            body = rendered.body(shape, model=model)
            if inputs is first:  # through the SDK: it accepts the request and sends these bytes
                sent = CAPTURE[shape](request)
                assert sent["body"] == body, shape
                # (Gemini's model is in the URL: models/NAME:generateContent)
                assert request["model"] == json.loads(body).get("model", request["model"])
            checked.append((shape, model, inputs, body))
            sent_json = json.loads(body)
            if readable:
                reads.append(read_back(shape, sent_json, request["model"], artifact, rendered, view))
            else:
                reads.append(None)
            if shape == "anthropic":
                check_markers(sent_json, artifact, rendered, tokens)
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
        if profile is not None and profile.shape != "anthropic":  # automatic caching of the prefix
            assert cache_info.cacheable_tokens == profile.cacheable(counted)
    return checked


def check_markers(body: dict[str, Any], artifact, rendered, tokens) -> None:
    """Every recorded Anthropic breakpoint is a `cache_control` marker and every marker a recorded
    breakpoint; the stable-prefix marker covers what cacheable_tokens counts."""
    recorded = [b for b in artifact.cache.breakpoints if b.anthropic]
    sent_blocks = [
        (m["role"], b)
        for m in [{"role": "system", "content": body.get("system", [])}, *body["messages"]]
        for b in m["content"]
    ]
    marked_tools = [t for t in body.get("tools", []) if "cache_control" in t]
    assert all(t is body["tools"][-1] for t in marked_tools)
    markers = len(marked_tools) + sum(1 for _, b in sent_blocks if "cache_control" in b)
    assert markers == len(recorded), (recorded, body)
    # the marked text blocks are exactly the artifact's marked blocks, in order
    in_order = [b for blocks in rendered.blocks for b in blocks if b.text]
    assert [b.anthropic for b in in_order] == ["cache_control" in b for _, b in sent_blocks]
    assert bool(marked_tools) == any(b.message is None for b in recorded)
    # what the stable-prefix marker covers: the tools and text blocks up to it, as sent
    covered = 0
    stable = next((b for b in recorded if b.stable_prefix), None)
    tools = [{k: v for k, v in t.items() if k != "cache_control"} for t in body.get("tools", [])]
    if tools:
        covered += tokens(canonical_json(tools))
    if stable is not None and stable.message is not None:
        for _, block in sent_blocks:
            covered += tokens(block["text"])
            if "cache_control" in block:
                break
    if stable is not None:
        assert stable.tokens == covered
    profile = (
        resolve("anthropic", artifact.model) if artifact.provider and artifact.provider.name == "anthropic" else None
    )
    if profile is not None:
        assert artifact.cache.cacheable_tokens == profile.cacheable(covered if stable is not None else 0)


def compiled(drawn: Drawn):
    result = compile_text(drawn.source, name="p", partials=drawn.files)
    errors = [d for d in result.diagnostics if d.severity == "error"]
    if errors:
        # the only errors a drawn prompt may have: its own provider's API refuses it (E711), or a
        # param's value (E730: `temperature` other than 1 for OpenAI's reasoning models)
        assert {d.code for d in errors} <= {"E711", "E730"}, [(d.code, d.message) for d in errors]
        assert drawn.provider in ("anthropic", "gemini", "openai")
        return None
    assert result.artifact is not None
    return result.artifact


def value_sets(drawn: Drawn, data) -> tuple[dict[str, Any], dict[str, Any]]:
    first = {name: data.draw(values, label=name) for name in drawn.inputs}
    second = {name: value + "¤" if isinstance(value, str) else [value, "¤"] for name, value in first.items()}
    return first, second


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
    check_request(drawn, artifact, *value_sets(drawn, data))


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
    for shape, model, inputs, body in check_request(drawn, artifact, *value_sets(drawn, data)):
        answer = node_bodies(text, inputs, shape, model)
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
