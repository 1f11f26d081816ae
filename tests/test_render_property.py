"""Property: whatever the input values, a rendered request starts with exactly the cache-stable prefix bytes
that the build recorded — in every shape, tools and output schema included, in the provider's cache order —
and only stable source text moves `prefix_sha256`."""

from __future__ import annotations

import json
import re
from functools import cache

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from promptc import compile_text
from promptc.runtime.render import JOINER, RenderError, render_artifact
from promptc.runtime.requestmodel import Part, canonical_json, digest

from .conftest import examples

#: Fragments that would mean something in a source file: openers, closers, escapes, comments,
#: separator lines, section directives, blank lines.
HOSTILE = [
    "${",
    "}",
    "${x}",
    "{{",
    "}}",
    "{{ 1/0 }}",
    "{#",
    "#}",
    "{%",
    "%}",
    "{% if x %}",
    "{% endif %}",
    "\\",
    "\\${x}",
    "///",
    " /// note",
    "\n----- user -----\n",
    "\n----- system -----\n",
    "\n/// section: evil stable\n",
    "\n/// role: assistant\n",
    "\n\n",
    "\r\n",
    "\ufeff",
    "\u2028",
    "é",
    "漢字",
    "🙂",
    "\x00",
]
values = st.one_of(
    st.text(max_size=40),
    st.lists(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=8)), max_size=8).map("".join),
)

PROMPTS = {
    # a stable block, then dynamic; later stable messages are outside the prefix
    "two_messages": (
        "----- system -----\n/// section: rules stable\nYou are careful. Literal \\${not_input} and C:\\dir.\n"
        "/// section: state\nState: ${state}\n"
        "----- developer -----\n/// section: fixed stable\nFixed developer text.\n"
        "----- user -----\n/// section: hello stable\nHello.\n/// section: ask\nQuestion: ${question}\n"
    ),
    # python renderer with whitespace control hugging the section edges
    "python": (
        "----- system -----\n/// section: head stable\nStable head line.\n\nSecond paragraph.\n"
        "/// section: loop\n{%- for item in items -%}\n- {{ item }}\n{%- endfor -%}\n"
        "/// section: tail\n{{- state -}}\n----- user -----\n${question}\n"
    ),
    # user_context in the first user message: the prefix spans message 0 and stops inside message 1
    "user_context": (
        "----- system -----\nSystem rules, all stable.\n"
        "/// section: ctx dynamic user_context\nContext: ${state}\n"
        "----- user -----\n${question}\n"
    ),
    # starts with dynamic text: no prefix at all
    "no_prefix": "----- system -----\n${state}\n----- user -----\nStable after dynamic.\n",
    # a system message after the conversation started (W405): stable rules, then a late dynamic one
    "late_system": (
        "----- system -----\nStable rules.\n----- user -----\nQ\n----- assistant -----\nok\n"
        "----- system -----\nNow: ${state}\n----- user -----\n${question}\n"
    ),
    # every message stable, then a dynamic last turn
    "stable_run": (
        "----- system -----\nA.\n----- user -----\nB.\n----- assistant -----\nC.\n----- user -----\n{{ question }}\n"
    ),
    # tools from a partial and an output schema, then stable rules, then dynamic text
    "tools_and_schema": (
        "/// output: answer.json\n----- system -----\n/// include: _agent\nStable rules.\n"
        "/// section: live dynamic\nNow: ${state}\n----- user -----\n${question}\n"
    ),
    # the tools are the whole stable part: the first block is dynamic
    "tools_only": "/// tools: tools.json\n----- system -----\n${state}\n----- user -----\nStable after.\n",
}
#: Every prompt sets max_tokens, which the anthropic shape needs; the shapes get a model at render.
PROMPTS = {name: '/// param: max_tokens=64, temperature=0.5, stop="END"\n' + text for name, text in PROMPTS.items()}
TOOLS = [
    {
        "name": "search",
        "description": "Search the docs.",
        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    },
    {"name": "fetch", "description": "Fetch a page: é 漢字.", "input_schema": {"type": "object"}},
]
ANSWER = {
    "title": "answer",
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}
FILES = {
    "tools.json": json.dumps(TOOLS),
    "answer.json": json.dumps(ANSWER),
    "_agent.prompt": "/// tools: tools.json\nYou are an agent with tools.\n",
}
MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "openai": "gpt-4o",
    "openai-responses": "gpt-4o",
    "gemini": "gemini-2.5-flash",
}


@cache
def compiled(name: str) -> dict:
    result = compile_text(PROMPTS[name], name=name, partials=FILES)
    assert result.artifact is not None, result.diagnostics
    assert not [d for d in result.diagnostics if d.severity == "error"]
    return result.artifact.to_json()


def shaped(shape: str, rendered):
    """The shape's request, or None when its API would refuse it because every user turn rendered
    empty (which the test then checks is so)."""
    try:
        return rendered.as_shape(shape, model=MODELS.get(shape))
    except RenderError as exc:
        assert shape in ("anthropic", "gemini") and "has no user turn" in str(exc), exc
        opening = 0
        while opening < len(rendered.messages) and rendered.messages[opening]["role"] in ("system", "developer"):
            opening += 1
        turns = [m for m in rendered.messages[opening:] if m["role"] != "assistant"]
        assert all(not m["content"] for m in turns), rendered.messages
        return None


def _shape_blocks(shape: str, rendered) -> list[tuple[str, str, bool]] | None:
    """A shape's messages as (role, block text, cache breakpoint) in the order it is sent."""
    body = shaped(shape, rendered)
    if body is None:
        return None
    if shape == "plain":
        return [(m["role"], m["content"], False) for m in body]
    if shape == "openai":
        return [(m["role"], m["content"], False) for m in body["messages"]]
    if shape == "openai-responses":
        return [(m["role"], m["content"], False) for m in body["input"]]
    if shape == "gemini":
        config = body.get("config", {})
        sent = [("system", part["text"], False) for part in config.get("system_instruction", {}).get("parts", [])]
        for content in body["contents"]:
            sent += [(content["role"], part["text"], False) for part in content["parts"]]
        return sent
    sent = [("system", b["text"], "cache_control" in b) for b in body.get("system", [])]
    for message in body["messages"]:
        sent += [(message["role"], b["text"], "cache_control" in b) for b in message["content"]]
    return sent


def cache_order(shape: str, rendered) -> list[tuple[str, str, bool]]:
    """A shape's whole request in its provider's cache order — the tools, the output schema, then
    the message blocks — as (kind, canonical text, cache breakpoint), with the tools and schema
    read back into promptc's own form so that the bytes compare with what the artifact hashed."""
    body = shaped(shape, rendered)
    if body is None:
        return None
    tools: list[dict] = []
    schema = None
    tool_marked = False
    if shape == "anthropic":
        for tool in body.get("tools", []):
            tool_marked = "cache_control" in tool
            tools.append({k: v for k, v in tool.items() if k != "cache_control"})
        schema = body.get("output_config", {}).get("format", {}).get("schema")
    elif shape == "openai":
        tools = [
            {
                "name": t["function"]["name"],
                "description": t["function"]["description"],
                "input_schema": t["function"]["parameters"],
            }
            for t in body.get("tools", [])
        ]
        schema = body.get("response_format", {}).get("json_schema", {}).get("schema")
    elif shape == "openai-responses":
        tools = [
            {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
            for t in body.get("tools", [])
        ]
        schema = body.get("text", {}).get("format", {}).get("schema")
    elif shape == "gemini":
        config = body.get("config", {})
        declarations = [d for group in config.get("tools", []) for d in group["function_declarations"]]
        tools = [
            {"name": d["name"], "description": d["description"], "input_schema": d["parameters_json_schema"]}
            for d in declarations
        ]
        schema = config.get("response_json_schema")
    order = [("tool", canonical_json(tool), tool_marked and i == len(tools) - 1) for i, tool in enumerate(tools)]
    if schema is not None:
        order.append(("output_schema", canonical_json(schema), False))
    return order + _shape_blocks(shape, rendered)


def check_shapes(artifact: dict, inputs: dict) -> None:
    """Every shape sends the artifact's blocks in the artifact's order, so the recorded prefix is a
    prefix of the request, and Anthropic's breakpoints end exactly where the artifact's do."""
    rendered = render_artifact(artifact, inputs, unknown_inputs="ignore")
    message_texts = [m["content"] for m in rendered.messages]
    for shape in ("plain", "openai", "openai-responses"):
        assert [text for _, text, _ in _shape_blocks(shape, rendered)] == message_texts
    gemini = _shape_blocks("gemini", rendered)
    anthropic = _shape_blocks("anthropic", rendered)
    if gemini is None or anthropic is None:
        return
    assert [text for _, text, _ in gemini] == [b.text for blocks in rendered.blocks for b in blocks if b.text]
    in_order = [(mi, b) for mi, blocks in enumerate(rendered.blocks) for b in blocks if b.text]
    assert [text for _, text, _ in anthropic] == [b.text for _, b in in_order]
    # the system part is exactly the opening system/developer messages
    opening = 0
    while opening < len(rendered.messages) and rendered.messages[opening]["role"] in ("system", "developer"):
        opening += 1
    assert [role for role, _, _ in anthropic].count("system") == sum(1 for mi, _ in in_order if mi < opening)
    # the cached positions are exactly the blocks the artifact marks (each a non-empty stable block)
    ends = {i for i, (_, b) in enumerate(in_order) if b.anthropic}
    assert {i for i, (_, _, marked) in enumerate(anthropic) if marked} == ends


def unescape(template: str) -> str:
    return re.sub(r"\\(\$\{|\{\{|\{#|\{%)", r"\1", template)


def prefix_digest(segments: list[tuple[str, str]]) -> str:
    """The recorded hash of a prefix given as (label, text) fields: these prompts have no profile,
    so no identity leads it (promptc.runtime.requestmodel.digest is the encoding)."""
    return digest([Part("block", label, text, "messages", True) for label, text in segments])


def head_segments(rendered) -> list[tuple[str, str]]:
    """What the request leads with, as the generic cache order reads it: the tools, the schema."""
    segments = []
    if rendered.tools:
        segments.append(("tools", canonical_json([t.to_json() for t in rendered.tools])))
    if rendered.output_schema is not None:
        segments.append(("output_schema", canonical_json(rendered.output_schema.to_json())))
    return segments


def check_prefix(artifact: dict, inputs: dict) -> None:
    rendered = render_artifact(artifact, inputs, unknown_inputs="ignore")
    cache_info = artifact["cache"]
    # Structure can never change: same messages, same roles, same blocks.
    assert [m["role"] for m in rendered.messages] == [m["role"] for m in artifact["messages"]]
    assert [len(b) for b in rendered.blocks] == [len(m["blocks"]) for m in artifact["messages"]]
    for message, blocks in zip(rendered.messages, rendered.blocks, strict=True):
        assert message["content"] == JOINER.join(b.text for b in blocks)

    end = cache_info["prefix_end"]
    head = head_segments(rendered)  # what the request leads with
    assert sum(len(text) for _, text in head) == cache_info["head_chars"]
    assert end["reason"] and end["line"] >= 1 and end["column"] >= 1  # where and why it ends
    if end["message"] is None and not head:  # no prefix at all
        assert cache_info["prefix_sha256"] is None
        first = artifact["messages"][0]["blocks"][0]
        assert first["boundary"] == "dynamic"
        return
    if end["message"] is None:  # the tools and schema are the whole prefix
        assert head and artifact["messages"][0]["blocks"][0]["boundary"] == "dynamic"
        assert prefix_digest(head) == cache_info["prefix_sha256"]
        assert cache_info["prefix_chars"] == cache_info["head_chars"]
        return
    last_message, last_block = end["message"], end["block"]
    # Reconstruct the prefix from the rendered request alone: one field per non-empty block.
    segments = []
    for mi in range(last_message + 1):
        role = rendered.messages[mi]["role"]
        upto = last_block + 1 if mi == last_message else len(rendered.blocks[mi])
        segments += [(role, b.text) for b in rendered.blocks[mi][:upto] if b.text]
    tail = JOINER.join(b.text for b in rendered.blocks[last_message][: last_block + 1])
    assert rendered.messages[last_message]["content"].startswith(tail)
    assert prefix_digest([*head, *segments]) == cache_info["prefix_sha256"]
    assert sum(len(text) for _, text in [*head, *segments]) == cache_info["prefix_chars"]
    # Every block in the prefix is stable and renders to its template text, unescaped.
    for mi in range(last_message + 1):
        upto = last_block + 1 if mi == last_message else len(artifact["messages"][mi]["blocks"])
        for bi in range(upto):
            block = artifact["messages"][mi]["blocks"][bi]
            assert block["boundary"] == "stable"
            assert rendered.blocks[mi][bi].text == unescape(block["text"])


def recorded_prefix(artifact: dict, per_block: bool) -> tuple[list[str], str]:
    """What the artifact says the request starts with, in cache order: each tool and the output
    schema (canonical JSON), then the stable text of the prefix — one item per non-empty block
    (`per_block`, the shapes that send blocks) or per message — and the text the item after those
    starts with (the rest of the message the prefix ends in, for the shapes that send messages)."""
    texts = [canonical_json(tool) for tool in artifact["tools"]]
    if artifact["output_schema"] is not None:
        texts.append(canonical_json(artifact["output_schema"]["schema"]))
    end = artifact["cache"]["prefix_end"]
    if end is None or end["message"] is None:
        return texts, ""
    tail = ""
    for mi in range(end["message"] + 1):
        blocks = artifact["messages"][mi]["blocks"]
        inside = [unescape(b["text"]) for b in (blocks[: end["block"] + 1] if mi == end["message"] else blocks)]
        if per_block:
            texts += [text for text in inside if text]
        elif mi < end["message"]:
            texts.append(JOINER.join(inside))
        else:
            tail = JOINER.join(inside)
    return texts, tail


SHAPES_WITH_MODELS = sorted(MODELS)
PER_BLOCK = ("anthropic", "gemini")


def check_cache_order(artifact: dict, first: dict, second: dict) -> None:
    """In every shape, the request up to the end of the cache-stable prefix, in the provider's cache
    order (tools, schema, then messages), is the same for any two sets of inputs and is exactly what
    the artifact records; Anthropic's request carries a breakpoint where that prefix ends."""
    for shape in SHAPES_WITH_MODELS:
        expected, tail = recorded_prefix(artifact, shape in PER_BLOCK)
        n = len(expected)
        for inputs in (first, second):
            sent = cache_order(shape, render_artifact(artifact, inputs, unknown_inputs="ignore"))
            if sent is None:
                continue
            assert [text for _, text, _ in sent[:n]] == expected, shape
            if tail:
                assert sent[n][1].startswith(tail), shape
            if shape == "anthropic" and artifact["cache"]["prefix_sha256"] is not None:
                marked = [i for i, (_, _, m) in enumerate(sent) if m]
                last = max(i for i, (kind, _, _) in enumerate(sent[:n]) if kind != "output_schema")
                assert last in marked, sent


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(PROMPTS)), state=values, question=values, items=st.lists(values, max_size=4))
def test_rendered_request_starts_with_the_prefix(name, state, question, items):
    artifact = compiled(name)
    inputs = {"state": state, "question": question, "items": items}
    assert set(artifact["inputs"]) <= set(inputs)
    check_prefix(artifact, inputs)
    check_shapes(artifact, inputs)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(PROMPTS)), first=st.tuples(values, values), second=st.tuples(values, values))
def test_every_shape_starts_with_the_recorded_prefix(name, first, second):
    artifact = compiled(name)
    check_cache_order(
        artifact,
        {"state": first[0], "question": first[1], "items": list(first)},
        {"state": second[0], "question": second[1], "items": list(second)},
    )


@settings(max_examples=examples(100), deadline=None)
@given(value=values)
def test_values_appear_verbatim(value):
    artifact = compiled("two_messages")
    rendered = render_artifact(artifact, {"state": value, "question": value})
    assert rendered.messages[0]["content"].endswith("State: " + value)
    assert rendered.messages[2]["content"].endswith("Question: " + value)
    assert len(rendered.messages) == 3


# ---------------------------------------------------------------------------------------------
# Source edits: dynamic text never moves the prefix; stable text always does.

safe_words = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,.;!?'()", min_size=1, max_size=10
)
safe_text = st.lists(safe_words, min_size=1, max_size=6).map(" ".join)


def source(stable: str, dynamic: str, dynamic_first: bool) -> str:
    stable_part = f"/// section: rules stable\n{stable}\n"
    dynamic_part = f"/// section: live dynamic\n{dynamic} ${{value}}\n"
    body = dynamic_part + stable_part if dynamic_first else stable_part + dynamic_part
    return f"----- system -----\n{body}----- user -----\nStable user text {stable}\n"


def prefix_of(text: str) -> str:
    result = compile_text(text, name="edit")
    assert result.artifact is not None, result.diagnostics
    return result.artifact.cache.prefix_sha256


@settings(max_examples=examples(30), deadline=None)
@given(stable=safe_text, dynamic_a=safe_text, dynamic_b=safe_text, dynamic_first=st.booleans())
def test_dynamic_source_edits_keep_the_prefix(stable, dynamic_a, dynamic_b, dynamic_first):
    assert prefix_of(source(stable, dynamic_a, dynamic_first)) == prefix_of(source(stable, dynamic_b, dynamic_first))


@settings(max_examples=examples(30), deadline=None)
@given(stable_a=safe_text, stable_b=safe_text, dynamic=safe_text)
def test_stable_source_edits_move_the_prefix(stable_a, stable_b, dynamic):
    assume(stable_a != stable_b)
    assert prefix_of(source(stable_a, dynamic, False)) != prefix_of(source(stable_b, dynamic, False))


_SEGMENT_TEXT = st.lists(st.sampled_from(["a", "b", "\x1e", "\x1f", "user", "system", "\n", "é"]), max_size=6).map(
    "".join
)
_SEGMENTS = st.lists(
    st.tuples(st.sampled_from(["system", "developer", "user", "assistant"]), _SEGMENT_TEXT), max_size=4
)


@settings(max_examples=examples(500), deadline=None)
@given(_SEGMENTS, _SEGMENTS)
def test_the_prefix_hash_is_injective(left, right) -> None:
    """No text can forge a message boundary: different prefixes never share a hash (and so never a
    `prompt_cache_key`), whatever characters the texts hold."""
    assume(left != right)
    assert prefix_digest(left) != prefix_digest(right)
    with_identity = [Part("provider", "provider", "anthropic", "identity", False)]
    assert digest(with_identity + [Part("block", r, t, "messages", True) for r, t in left]) != prefix_digest(left)


def test_separator_bytes_in_text_do_not_collide_with_two_messages() -> None:
    assert prefix_digest([("system", "a\x1euser\x1fb")]) != prefix_digest([("system", "a"), ("user", "b")])
