"""The render plan: an artifact compiled once renders exactly what section-by-section rendering does,
and `load()` reads nothing but the manifest until a prompt is rendered."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptc import compile_text
from promptc.runtime.model import Artifact
from promptc.runtime.render import (
    JOINER,
    MissingInputsError,
    RenderError,
    RenderPlan,
    _render_section,
    load,
    plan_for,
    render_artifact,
)

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
COMMITTED = sorted(
    p.relative_to(BUILD).with_suffix("").as_posix() for p in BUILD.rglob("*.json") if p.name != "manifest.json"
)


def section_by_section(artifact: Artifact, inputs: dict) -> tuple[list[dict], list[list[tuple]]]:
    """The reference: every section rendered on its own, joined as the artifact joins them."""
    messages, blocks = [], []
    marks = {(b.message, b.block): b.anthropic for b in artifact.cache.breakpoints}
    for mi, message in enumerate(artifact.messages):
        rendered = []
        for bi, block in enumerate(message.blocks):
            text = JOINER.join(
                _render_section(s.text, inputs, artifact.name, s.name, s.origins) for s in block.sections
            )
            rendered.append((block.boundary, text, (mi, bi) in marks, marks.get((mi, bi), False)))
        messages.append({"role": message.role, "content": JOINER.join(b[1] for b in rendered)})
        blocks.append(rendered)
    return messages, blocks


def as_tuples(rendered) -> list[list[tuple]]:
    return [[(b.boundary, b.text, b.breakpoint, b.anthropic) for b in blocks] for blocks in rendered.blocks]


class Loud(str):
    """A str subclass whose __str__ lies: the text inserted is the string's own data, as before."""

    def __str__(self) -> str:
        return "WRONG"


values = st.one_of(
    st.text(max_size=30),
    st.integers(),
    st.none(),
    st.floats(allow_nan=False),
    st.text(max_size=10).map(Loud),
    st.lists(st.text(max_size=5), max_size=3),
)


_SCALAR_VALUES = {
    "string": st.text(max_size=12),
    "integer": st.integers(),
    "number": st.floats(allow_nan=False, allow_infinity=False),
    "boolean": st.booleans(),
    "null": st.none(),
}


def from_schema(schema: dict):
    """Values an input schema admits (the subset promptc's input schemas use); any text for `{}`."""
    if "anyOf" in schema:
        return st.one_of([from_schema(option) for option in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": k}) for k in kind])
    if kind == "array":
        return st.lists(from_schema(schema.get("items", {})), max_size=3)
    if kind == "object":
        properties = schema.get("properties", {})
        return st.fixed_dictionaries({k: from_schema(v) for k, v in properties.items()})
    return _SCALAR_VALUES.get(kind, st.text(max_size=12))


@pytest.mark.parametrize("name", COMMITTED)
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_plan_renders_what_sections_render_for_every_committed_prompt(name: str, data) -> None:
    artifact = load(BUILD).artifact(name)
    typed = artifact.input_schema.get("properties", {})
    inputs = {
        n: data.draw(from_schema(typed[n]) if typed.get(n) else values, label=n)
        for n in (*artifact.inputs, *artifact.helpers)
    }
    if "files" in inputs:
        inputs["files"] = data.draw(st.lists(st.text(max_size=8), max_size=4), label="files")
    rendered = render_artifact(artifact, inputs, unknown_inputs="ignore")
    messages, blocks = section_by_section(artifact, inputs)
    assert rendered.messages == messages
    assert as_tuples(rendered) == blocks
    assert all(type(m["content"]) is str for m in rendered.messages)


piece = st.sampled_from(["${a}", "${b.c}", "\\${a}", "\\{{ x }}", "{{ a }}", "\\", "$", "{", "}", "x", "\n", " "])


@settings(max_examples=15, deadline=None)
@given(parts=st.lists(piece, max_size=12), a=values)
def test_plan_matches_sections_on_placeholder_and_python_text(parts: list[str], a) -> None:
    text = "----- system -----\nStable.\n/// section: s2 dynamic\n" + "".join(parts) + "\n----- user -----\nQ ${a}\n"
    compiled = compile_text(text, name="p")
    if compiled.artifact is None or any(d.severity == "error" for d in compiled.diagnostics):
        return
    artifact = compiled.artifact
    inputs = {"a": a, "b": {"c": a}, **dict.fromkeys(artifact.helpers, "h")}
    inputs.update({n: "v" for n in artifact.inputs if n not in inputs})
    rendered = render_artifact(artifact, inputs, unknown_inputs="ignore")
    messages, blocks = section_by_section(artifact, inputs)
    assert (rendered.messages, as_tuples(rendered)) == (messages, blocks)


def hand_edited(text: str) -> dict:
    data = compile_text("----- user -----\nHi ${a}.\n", name="p").artifact.to_json()
    data["messages"][0]["blocks"][0]["sections"][0]["text"] = text
    return data


def test_hand_edited_placeholder_problems_are_reported_at_render_in_text_order() -> None:
    # a root the artifact does not list: an unknown input; rendered when the caller passes it and
    # unknown inputs are ignored, else a missing input
    with pytest.raises(RenderError, match="unknown input: zz"):
        render_artifact(hand_edited("${a} ${zz}"), {"a": 1, "zz": 2})
    edited = hand_edited("${a} ${zz}")
    assert render_artifact(edited, {"a": 1, "zz": 2}, unknown_inputs="ignore").messages[0]["content"] == "1 2"
    with pytest.raises(MissingInputsError, match="zz"):
        render_artifact(hand_edited("${a} ${zz}"), {"a": 1})
    with pytest.raises(RenderError, match="invalid placeholder `\\$\\{9x\\}`"):
        render_artifact(hand_edited("${a} ${9x}"), {"a": 1})
    with pytest.raises(MissingInputsError, match="zz"):  # the first problem in the text wins
        render_artifact(hand_edited("${zz} ${9x}"), {"a": 1})


def test_a_plan_is_compiled_once_and_renders_fresh_mutable_results() -> None:
    artifact = compile_text("----- system -----\nStable.\n----- user -----\nHi ${a}.\n", name="p").artifact
    assert plan_for(artifact) is plan_for(artifact)
    first = render_artifact(artifact, {"a": 1})
    first.messages[0]["content"] = "changed"
    first.params["x"] = 1
    second = render_artifact(artifact, {"a": 2})
    assert second.messages == [{"role": "system", "content": "Stable."}, {"role": "user", "content": "Hi 2."}]
    assert second.params == {} and second.blocks[0][0] is first.blocks[0][0]  # a literal block is shared
    assert isinstance(RenderPlan(artifact).render({"a": 3}).messages, list)


def test_load_reads_only_the_manifest_until_a_prompt_is_rendered(tmp_path: Path) -> None:
    build = tmp_path / "build"
    shutil.copytree(BUILD, build)
    # every artifact but one unreadable: listing and rendering that one must not touch the others
    for path in build.rglob("*.json"):
        if path.name != "manifest.json" and path.stem != "chat":
            path.write_text("not json")
    runtime = load(build)
    assert runtime.names() == COMMITTED
    assert "agents/fixer" in runtime
    inputs = {"customer_name": "Ada", "product": "promptc", "question": "why?"}
    assert runtime.render("support/chat", inputs).messages[-1]["content"].endswith("why?")
    with pytest.raises(RenderError, match="does not match"):
        runtime.render("agents/fixer", {})


def test_manifest_is_parsed_once_per_runtime(tmp_path: Path) -> None:
    build = tmp_path / "build"
    shutil.copytree(BUILD, build)
    runtime = load(build)
    runtime.names()
    (build / "manifest.json").write_text(json.dumps({"broken": True}))
    assert runtime.names() == COMMITTED
