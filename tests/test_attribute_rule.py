"""The attribute rule: no segment of a placeholder path starts with `_` or reaches an object's
internals (`promptc.facts.language.unsafe_name`), in the build (E506), in both runtimes (a
RenderError whatever the value is) and in the importers (E973).

`${a.__class__.__init__.__globals__.API_KEY}` with a dataclass passed as `a` used to build, and
to render the application's module global into the request; runtime-js read a class's static
fields through `${a.constructor.API_KEY}` the same way."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import promptc
from promptc.compile import compile_text
from promptc.facts.config import Config
from promptc.facts.language import UNSAFE_NAMES, unsafe_name, unsafe_segment
from promptc.runtime.render import RenderError, _lookup, refused_path, render_artifact
from promptc.tools.importers.convert import convert

from .conftest import examples, run_promptc, snapshot, write

APPROX = Config(tokenizer="approx-bytes/4")

#: what the exploit read: a global of the module that defines the value's class
API_KEY = "sk-test-secret-4242"
EXPLOIT = "settings.__class__.__init__.__globals__.API_KEY"
#: the same path with every segment renamed to one the rule allows (what a build accepts)
SAFE = "settings.klass.init.globs.API_KEY"


@dataclass
class Settings:
    region: str = "eu"


def _build(cwd: Path, real: bool = False):
    return run_promptc("build", "prompts_src", "-o", "build", "--tokenizer", "approx-bytes/4", cwd=cwd, real=real)


def _hand_made(root: Path, path: str, renderer: str = "placeholder") -> dict[str, Any]:
    """Build `leak.prompt` with SAFE, then put `path` in its artifact in place of SAFE and the
    artifact's sha256 in the manifest: a build folder changed after the build (or written by
    a promptc without the rule), which `load()` accepts."""
    write(root, "prompts_src/leak.prompt", f"----- user -----\nKey: ${{{SAFE}}}\n")
    assert _build(root).returncode == 0
    artifact_path = root / "build/leak.json"
    text = artifact_path.read_text(encoding="utf-8").replace(SAFE, path)
    for safe, unsafe in zip(SAFE.split("."), path.split("."), strict=True):
        text = text.replace(f'"{safe}"', f'"{unsafe}"')  # the input schema's property names
    artifact = json.loads(text)
    if renderer == "python":
        artifact["renderer"] = "python"
        section = artifact["messages"][0]["blocks"][0]["sections"][0]
        section["text"] = "{{ 'Code: ' }}" + section["text"]
    data = json.dumps(artifact, ensure_ascii=False, indent=1).encode() + b"\n"
    artifact_path.write_bytes(data)
    manifest = json.loads((root / "build/manifest.json").read_text())
    manifest["artifacts"]["leak"]["sha256"] = hashlib.sha256(data).hexdigest()
    (root / "build/manifest.json").write_text(json.dumps(manifest))
    return artifact


# ---------------------------------------------------------------------------------------------
# The build


def test_the_exploit_is_a_build_error_at_the_segment_and_build_is_kept(tmp_path: Path) -> None:
    write(tmp_path, "prompts_src/leak.prompt", "----- user -----\nKey: ${settings.region}\n")
    assert _build(tmp_path).returncode == 0
    before = snapshot(tmp_path / "build")
    write(tmp_path, "prompts_src/leak.prompt", f"----- user -----\nKey: ${{{EXPLOIT}}}\n")
    done = _build(tmp_path, real=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    out = done.stdout + done.stderr
    assert "prompts_src/leak.prompt:2:17: error[E506]: " in out, out
    assert "reads `__class__`, which starts with `_`" in out
    assert "hint: rename the key, or pass the value as an input of its own" in out
    assert snapshot(tmp_path / "build") == before


@pytest.mark.parametrize(
    ("path", "segment", "column"),
    [
        ("_secret", "_secret", 3),
        ("a._private", "_private", 5),
        ("a.b.__dict__", "__dict__", 7),
        ("gen.gi_frame.f_globals", "gi_frame", 7),
        ("err.tb_frame", "tb_frame", 7),
        ("cls.mro", "mro", 7),
        ("obj.constructor.name", "constructor", 7),
        ("cls.prototype", "prototype", 7),
        ("fn.func_globals", "func_globals", 6),
    ],
)
def test_every_refused_name_is_e506_at_its_segment(path: str, segment: str, column: int) -> None:
    result = compile_text(f"${{{path}}}\n", config=APPROX)
    (found,) = [d for d in result.diagnostics if d.code == "E506"]
    assert (found.line, found.col, found.span.end - found.span.start) == (1, column, len(segment))
    assert f"reads `{segment}`" in found.message and result.artifact is None


def test_a_partials_placeholder_is_located_in_the_partial() -> None:
    result = compile_text(
        "/// include: _part\nHi\n", config=APPROX, partials={"_part.prompt": "Key: ${a.constructor}\n"}
    )
    (found,) = [d for d in result.diagnostics if d.code == "E506"]
    assert (found.path, found.line, found.col) == ("_part.prompt", 1, 10)


def test_a_define_keeps_its_name_and_python_blocks_are_not_bound() -> None:
    """The rule is about what a runtime reads: a define's `${__version__}` is text at build time,
    and `{{ }}` is Python written by the prompt's author (docs/robustness.md: not a sandbox)."""
    defined = compile_text(
        "v${__version__}\n", config=Config(tokenizer="approx-bytes/4", defines=(("__version__", "2"),))
    )
    assert not [d for d in defined.diagnostics if d.severity == "error"]
    python = compile_text("/// input: a\n{{ a.__class__.__name__ }}\n", config=APPROX)
    assert "E506" not in {d.code for d in python.diagnostics}


# ---------------------------------------------------------------------------------------------
# The Python runtime


@pytest.mark.parametrize("renderer", ["placeholder", "python"])
def test_a_hand_made_artifact_is_refused_by_the_python_runtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, renderer: str
) -> None:
    monkeypatch.chdir(tmp_path)
    _hand_made(tmp_path, EXPLOIT, renderer)
    expected = f"prompt `leak`, section `body`: {refused_path(EXPLOIT, '__class__')}"
    for value in (Settings(), {"__class__": {"__init__": {"__globals__": {"API_KEY": API_KEY}}}}):
        with pytest.raises(RenderError) as refused:
            promptc.load("build").render("leak", settings=value)
        assert str(refused.value) == expected and API_KEY not in str(refused.value)
    done = run_promptc("render", "leak", "--var", f"{EXPLOIT}={API_KEY}", cwd=tmp_path, real=True)
    assert done.returncode != 0 and "Traceback" not in done.stderr and expected in done.stderr
    assert API_KEY not in done.stdout


def test_lookup_refuses_for_mappings_and_objects_alike() -> None:
    """The last guard (the render plan refuses first): no segment is read, whatever the value."""
    for value in (Settings(), {"__class__": "x", "constructor": "y"}):
        for path in ("a.__class__", "a.constructor", "_a.region"):
            with pytest.raises(RenderError, match="reads `"):
                _lookup({"a": value, "_a": value}, path)
    assert _lookup({"a": Settings()}, "a.region") == "eu"


# ---------------------------------------------------------------------------------------------
# The JavaScript runtime


@pytest.mark.ci_only
def test_node_refuses_the_hand_made_artifact_with_the_same_message(tmp_path: Path, node_bodies) -> None:
    _hand_made(tmp_path, EXPLOIT)
    text = (tmp_path / "build/leak.json").read_text(encoding="utf-8")
    values = {"settings": {"__class__": {"__init__": {"__globals__": {"API_KEY": API_KEY}}}}}
    answer = node_bodies(text, values, "openai", "gpt-4o")
    assert answer == {"error": f"RenderError: prompt `leak`, section `body`: {refused_path(EXPLOIT, '__class__')}"}


# ---------------------------------------------------------------------------------------------
# The importers


@pytest.mark.parametrize(
    ("kind", "name", "text", "where"),
    [
        ("dotprompt", "p.prompt", "Key: {{a.__class__}}\n", (1, 6)),
        ("dotprompt", "p.prompt", "Hi\n{{this.__dict__}}\n", (2, 1)),
        ("dotprompt", "p.prompt", "{{#each items}}\n{{this.constructor.name}}\n{{/each}}\n", (2, 1)),
        ("dotprompt", "p.prompt", "{{#if a.gi_frame}}x{{/if}}\n", (1, 1)),
        ("dotprompt", "p.prompt", "{{@root.__proto__}}\n", (1, 1)),
        ("jinja", "p.j2", "Key: {{ a.__class__ }}\n", (1, 11)),
        ("jinja", "p.j2", "Hi\n{{ x.constructor }}\n", (2, 6)),
        ("jinja", "p.j2", "{{ _secret }}\n", (1, 4)),
        ("jinja", "p.j2", "{{ cls.mro() }}\n", (1, 8)),
        ("prompty", "p.prompty", "---\nname: p\n---\nsystem:\n{{ a.__globals__ }}\n", (5, 6)),
    ],
)
def test_an_import_refuses_a_path_the_rule_refuses(kind: str, name: str, text: str, where: tuple[int, int]) -> None:
    (converted,) = [c for c in convert(kind, {name: text.encode()}) if c.source == name]
    assert converted.refused and converted.text == ""
    (found,) = [d for d in converted.diagnostics if d.severity == "error"]
    assert (found.code, found.line, found.col) == ("E973", *where), found
    assert "which starts with `_`" in found.message or "reaches an object's internals" in found.message


def test_an_import_keeps_names_the_rule_allows() -> None:
    (converted,) = convert("dotprompt", {"p.prompt": b"{{a.constructor_id}} {{a.klass}} {{a.f_name}}\n"})
    assert not converted.refused, converted.diagnostics
    assert "${a.constructor_id} ${a.klass} ${a.f_name}" in converted.text


# ---------------------------------------------------------------------------------------------
# Property: the build and both runtimes refuse exactly the paths with a refused segment


_SAFE_SEGMENT = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,7}", fullmatch=True).filter(lambda s: not unsafe_name(s))
_UNSAFE_SEGMENT = st.one_of(st.from_regex(r"_[A-Za-z0-9_]{0,7}", fullmatch=True), st.sampled_from(sorted(UNSAFE_NAMES)))


@st.composite
def _paths(draw: st.DrawFn, unsafe: bool) -> str:
    segments = draw(st.lists(_SAFE_SEGMENT, min_size=0 if unsafe else 1, max_size=4))
    if unsafe:
        segments.insert(draw(st.integers(0, len(segments))), draw(_UNSAFE_SEGMENT))
        if draw(st.booleans()):
            segments.append(draw(_UNSAFE_SEGMENT))
    return ".".join(segments)


_BASE = compile_text("----- user -----\nHi ${v}\n", "p", config=APPROX).artifact
assert _BASE is not None


def _artifact_with(path: str) -> dict[str, Any]:
    """A hand-made artifact that renders `Hi ${path}` (no build would write an unsafe one)."""
    artifact = copy.deepcopy(_BASE.to_json())
    root = path.split(".", 1)[0]
    artifact["inputs"] = [root]
    artifact["input_schema"] = {"type": "object", "properties": {}, "required": [root]}
    block = artifact["messages"][0]["blocks"][0]
    section = block["sections"][0]
    artifact["messages"][0]["content"] = block["text"] = section["text"] = f"Hi ${{{path}}}"
    section["inputs"] = [root]
    return artifact


def _value_for(path: str) -> dict[str, Any]:
    """Nested mappings holding every key of `path`: a runtime that read it would find it."""
    *keys, last = path.split(".")
    value: Any = {last: "found"} if keys else None
    for key in reversed(keys[1:]):
        value = {key: value}
    return {keys[0] if keys else last: value if keys else "found"}


PROPERTY = settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(path=_paths(unsafe=True))
def test_a_path_with_a_refused_segment_is_refused_by_the_build_and_the_python_runtime(path: str) -> None:
    offset, segment = unsafe_segment(path)  # type: ignore[misc]
    built = compile_text(f"${{{path}}}\n", config=APPROX)
    (found,) = [d for d in built.diagnostics if d.code == "E506"]
    assert (found.col, found.span.end - found.span.start) == (3 + offset, len(segment))
    with pytest.raises(RenderError) as refused:
        render_artifact(_artifact_with(path), _value_for(path))
    assert str(refused.value) == f"prompt `p`, section `body`: {refused_path(path, segment)}"


@PROPERTY
@given(path=_paths(unsafe=False))
def test_a_path_without_one_builds_and_renders(path: str) -> None:
    built = compile_text(f"${{{path}}}\n", config=APPROX)
    assert "E506" not in {d.code for d in built.diagnostics}
    rendered = render_artifact(_artifact_with(path), _value_for(path))
    assert rendered.messages[0]["content"] == "Hi found"


@pytest.mark.ci_only
@settings(
    max_examples=examples(200),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(path=st.one_of(_paths(unsafe=True), _paths(unsafe=False)))
def test_node_refuses_exactly_what_python_refuses(path: str, node_bodies) -> None:
    artifact = _artifact_with(path)
    try:
        render_artifact(artifact, _value_for(path))
        expected = None
    except RenderError as exc:
        expected = f"RenderError: {exc}"
    answer = node_bodies(json.dumps(artifact), _value_for(path), "openai", "gpt-4o")
    assert answer.get("error") == expected, answer


def test_the_docs_name_every_refused_name() -> None:
    """docs/language.md and docs/robustness.md list the names; the list itself lives in facts."""
    for doc in ("docs/language.md", "docs/robustness.md"):
        text = (Path(__file__).parent.parent / doc).read_text(encoding="utf-8")
        assert [name for name in sorted(UNSAFE_NAMES) if f"`{name}`" not in text] == [], doc
