"""The typed artifact model (`promptc.runtime.model`): exact round trips, strict reading, schema agreement."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest

from promptc.runtime.model import (
    ARTIFACT_SCHEMA,
    MANIFEST_SCHEMA,
    Artifact,
    ArtifactError,
    Block,
    Breakpoint,
    Cache,
    Manifest,
    ManifestEntry,
    Message,
    PrefixEnd,
    PrefixGroup,
    Section,
    Totals,
)
from promptc.schemas import load as load_schema

from .conftest import ROOT

BUILD = ROOT / "build"
BUILD_FILES = sorted(BUILD.rglob("*.json"))
ARTIFACT_FILES = [path for path in BUILD_FILES if path.name != "manifest.json"]
EMIT_CASES = sorted((ROOT / "tests/cases/emit").glob("*.expected.json"))


def _dumps(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2) + b"\n"


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _read(rel: str) -> dict[str, Any]:
    return json.loads((ROOT / rel).read_text(encoding="utf-8"))


def test_there_is_something_to_test() -> None:
    assert (BUILD / "manifest.json") in BUILD_FILES
    assert len(ARTIFACT_FILES) >= 3
    assert any(json.loads(path.read_text())["artifact"] is not None for path in EMIT_CASES)


# ---------------------------------------------------------------------------------------------
# Round trips


@pytest.mark.parametrize("path", BUILD_FILES, ids=_rel)
def test_build_file_round_trips_byte_for_byte(path: Path) -> None:
    raw = path.read_bytes()
    data = orjson.loads(raw)
    model = Manifest.from_json(data) if path.name == "manifest.json" else Artifact.from_json(data)
    assert _dumps(model.to_json()) == raw
    assert type(model).from_json(model.to_json()) == model  # and back again


@pytest.mark.parametrize("path", EMIT_CASES, ids=_rel)
def test_emit_golden_artifact_round_trips(path: Path) -> None:
    expected = json.loads(path.read_text(encoding="utf-8"))["artifact"]
    if expected is None:
        pytest.skip("this case compiles to no artifact")
    out = Artifact.from_json(expected).to_json()
    assert out == expected
    assert json.dumps(out) == json.dumps(expected)  # the same key order too


@pytest.mark.parametrize("path", BUILD_FILES, ids=_rel)
def test_to_json_validates_against_the_shipped_schema(path: Path) -> None:
    data = orjson.loads(path.read_bytes())
    if path.name == "manifest.json":
        jsonschema.validate(Manifest.from_json(data).to_json(), load_schema("manifest"))
    else:
        jsonschema.validate(Artifact.from_json(data).to_json(), load_schema("artifact"))


def test_to_json_gives_fresh_lists_and_dicts() -> None:
    data = _read("build/support/chat.json")
    artifact = Artifact.from_json(data)
    out = artifact.to_json()
    out["params"]["stop"].append("mutated")
    out["messages"][0]["blocks"].clear()
    out["tags"].append("x")
    data["params"]["stop"].append("mutated too")
    assert artifact.to_json() == _read("build/support/chat.json")


def test_from_json_shares_strings_instead_of_copying() -> None:
    data = _read("build/agents/planner.json")
    artifact = Artifact.from_json(data)
    assert artifact.messages[0].content is data["messages"][0]["content"]
    assert artifact.messages[0].blocks[1].sections[0].text is data["messages"][0]["blocks"][1]["sections"][0]["text"]


def test_types_and_fields() -> None:
    artifact = Artifact.from_json(_read("build/agents/planner.json"))
    assert [f.name for f in dataclasses.fields(Artifact)] == list(_read("build/agents/planner.json"))
    assert artifact.schema == ARTIFACT_SCHEMA
    assert isinstance(artifact.messages, tuple) and isinstance(artifact.messages[0], Message)
    block = artifact.messages[0].blocks[0]
    assert isinstance(block, Block) and block.stable and isinstance(block.sections[0], Section)
    assert isinstance(artifact.inputs, tuple) and isinstance(block.sections[0].inputs, tuple)
    assert artifact.cache.prefix_end == PrefixEnd(0, 0, "<std>/env.prompt", 4, 1, 'section "std.env" is dynamic')
    assert isinstance(artifact.cache, Cache) and isinstance(artifact.totals, Totals)
    assert all(isinstance(b, Breakpoint) for b in artifact.cache.breakpoints)
    chat_end = Artifact.from_json(_read("build/support/chat.json")).cache.prefix_end
    assert chat_end == PrefixEnd(None, None, "support/chat.prompt", 8, 35, "input ${product}")
    manifest = Manifest.from_json(_read("build/manifest.json"))
    assert manifest.schema == MANIFEST_SCHEMA and manifest.compiler_name == "promptc"
    assert isinstance(manifest.artifacts["agents/planner"], ManifestEntry)
    assert all(isinstance(group, PrefixGroup) for group in manifest.prefixes.values())


def test_frozen_and_hashable() -> None:
    artifact = Artifact.from_json(_read("build/agents/planner.json"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        artifact.name = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        artifact.messages[0].blocks[0].tokens = 1  # type: ignore[misc]
    assert hash(artifact) == hash(Artifact.from_json(_read("build/agents/planner.json")))
    assert (
        len({Manifest.from_json(_read("build/manifest.json")), Manifest.from_json(_read("build/manifest.json"))}) == 1
    )
    assert not hasattr(artifact, "__dict__")  # slots


def test_nested_classes_read_on_their_own() -> None:
    data = _read("build/agents/planner.json")
    block = data["messages"][0]["blocks"][1]
    assert Block.from_json(block).to_json() == block
    assert Section.from_json(block["sections"][0]).to_json() == block["sections"][0]
    assert Message.from_json(data["messages"][1]).to_json() == data["messages"][1]
    assert Cache.from_json(data["cache"]).to_json() == data["cache"]
    assert Totals.from_json(data["totals"]).to_json() == data["totals"]
    assert Breakpoint.from_json(data["cache"]["breakpoints"][0]).to_json() == data["cache"]["breakpoints"][0]
    # an artifact of the same schema written before the reason was recorded still reads
    assert PrefixEnd.from_json({"message": 1, "block": 2}) == PrefixEnd(1, 2)
    assert PrefixEnd(1, 2).to_json() == {"message": 1, "block": 2}
    where = {"message": None, "block": None, "source": "a.prompt", "line": 3, "column": 9, "reason": "end of request"}
    assert PrefixEnd.from_json(where).to_json() == where
    manifest = _read("build/manifest.json")
    entry = manifest["artifacts"]["agents/planner"]
    assert ManifestEntry.from_json(entry).to_json() == entry
    group = next(iter(manifest["prefixes"].values()))
    assert PrefixGroup.from_json(group).to_json() == group
    with pytest.raises(ArtifactError, match=r"^block: sections\[0\]\.tokens: expected an integer, got 'x'$"):
        Block.from_json({**block, "sections": [{**block["sections"][0], "tokens": "x"}]})
    with pytest.raises(ArtifactError, match=r"^section: expected a JSON object, got a list$"):
        Section.from_json([])  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Summary, manifest entries, breakpoints


def test_summary_is_what_the_manifest_records() -> None:
    manifest = _read("build/manifest.json")
    for path in ARTIFACT_FILES:
        data = json.loads(path.read_text(encoding="utf-8"))
        artifact = Artifact.from_json(data)
        rel = path.relative_to(BUILD).as_posix()
        entry = ManifestEntry.of(artifact, rel, hashlib.sha256(path.read_bytes()).hexdigest())
        assert entry.to_json() == manifest["artifacts"][artifact.name]
        assert entry.to_json() == {"path": rel, "sha256": entry.sha256, **artifact.summary()}


def test_manifest_of_rebuilds_the_committed_manifest() -> None:
    committed = _read("build/manifest.json")
    entries = []
    for path in reversed(ARTIFACT_FILES):  # any order: `of` sorts
        artifact = Artifact.from_json(json.loads(path.read_text(encoding="utf-8")))
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        entries.append((artifact.name, ManifestEntry.of(artifact, path.relative_to(BUILD).as_posix(), sha)))
    manifest = Manifest.of(
        entries,
        tokenizer=committed["tokenizer"],
        provider=committed["provider"],
        compiler_version=committed["compiler"]["version"],
    )
    assert _dumps(manifest.to_json()) == (BUILD / "manifest.json").read_bytes()
    assert Manifest.of(dict(entries), tokenizer="cl100k_base", provider="").provider is None


def test_breakpoint_at() -> None:
    artifact = Artifact.from_json(_read("build/agents/planner.json"))
    first = artifact.breakpoint_at(0, 0)
    assert first is not None and first.stable_prefix and first.anthropic and first.tokens == 399
    assert artifact.breakpoint_at(1, 0) == artifact.cache.breakpoints[1]
    assert artifact.breakpoint_at(0, 1) is None
    assert artifact.breakpoint_at(7, 7) is None


# ---------------------------------------------------------------------------------------------
# Strict reading: a table of malformed documents


def _set(*path: Any, value: Any) -> Callable[[Any], None]:
    def mutate(doc: Any) -> None:
        for key in path[:-1]:
            doc = doc[key]
        doc[path[-1]] = value

    return mutate


def _delete(*path: Any) -> Callable[[Any], None]:
    def mutate(doc: Any) -> None:
        for key in path[:-1]:
            doc = doc[key]
        del doc[path[-1]]

    return mutate


CHAT = "artifact `support/chat`: "
PLANNER = "artifact `agents/planner`: "

MALFORMED_ARTIFACTS: list[tuple[str, str, Callable[[Any], None], str]] = [
    # (id, base file, mutation, expected message fragment)
    (
        "deep-token-string",
        "build/support/chat.json",
        _set("messages", 1, "blocks", 0, "tokens", value="x"),
        CHAT + "messages[1].blocks[0].tokens: expected an integer, got 'x'",
    ),
    (
        "deep-section-missing-text",
        "build/agents/planner.json",
        _delete("messages", 0, "blocks", 1, "sections", 1, "text"),
        PLANNER + "messages[0].blocks[1].sections[1].text: required key is missing",
    ),
    (
        "deep-section-input-not-identifier",
        "build/agents/planner.json",
        _set("messages", 1, "blocks", 1, "sections", 0, "inputs", 0, value="not a name"),
        PLANNER + "messages[1].blocks[1].sections[0].inputs[0]: expected an identifier, got 'not a name'",
    ),
    (
        "bool-as-int",
        "build/support/chat.json",
        _set("messages", 0, "chars", value=True),
        CHAT + "messages[0].chars: expected an integer, got true",
    ),
    (
        "float-as-int",
        "build/support/chat.json",
        _set("totals", "tokens", value=1.0),
        CHAT + "totals.tokens: expected an integer, got 1.0",
    ),
    (
        "negative-count",
        "build/support/chat.json",
        _set("cache", "prefix_chars", value=-1),
        CHAT + "cache.prefix_chars: expected a non-negative integer, got -1",
    ),
    (
        "int-as-bool",
        "build/agents/planner.json",
        _set("cache", "breakpoints", 1, "anthropic", value=1),
        PLANNER + "cache.breakpoints[1].anthropic: expected true or false, got 1",
    ),
    (
        "bad-boundary",
        "build/agents/planner.json",
        _set("messages", 0, "blocks", 0, "boundary", value="sticky"),
        PLANNER + "messages[0].blocks[0].boundary: expected one of 'stable', 'dynamic', got 'sticky'",
    ),
    (
        "bad-role",
        "build/support/chat.json",
        _set("messages", 3, "role", value="robot"),
        CHAT + "messages[3].role: expected one of 'system', 'developer', 'user', 'assistant', got 'robot'",
    ),
    (
        "bad-block-sha",
        "build/support/chat.json",
        _set("messages", 2, "blocks", 0, "sha256", value="ABC"),
        CHAT + "messages[2].blocks[0].sha256: expected a sha256 (64 lowercase hex digits), got 'ABC'",
    ),
    (
        "message-not-object",
        "build/support/chat.json",
        _set("messages", 2, value=["user", "hi"]),
        CHAT + "messages[2]: expected an object, got a list",
    ),
    (
        "messages-not-list",
        "build/support/chat.json",
        _set("messages", value={"role": "user"}),
        CHAT + "messages: expected a list, got an object",
    ),
    (
        "no-blocks",
        "build/support/chat.json",
        _set("messages", 0, "blocks", value=[]),
        CHAT + "messages[0].blocks: expected at least one block, got an empty list",
    ),
    (
        "no-sections",
        "build/support/chat.json",
        _set("messages", 0, "blocks", 0, "sections", value=[]),
        CHAT + "messages[0].blocks[0].sections: expected at least one section, got an empty list",
    ),
    (
        "prefix-end-not-object",
        "build/agents/planner.json",
        _set("cache", "prefix_end", value=[0, 0]),
        PLANNER + "cache.prefix_end: expected an object, got a list",
    ),
    (
        "prefix-end-missing-block",
        "build/agents/planner.json",
        _delete("cache", "prefix_end", "block"),
        PLANNER + "cache.prefix_end.block: required key is missing",
    ),
    (
        "prefix-end-reason-without-line",
        "build/agents/planner.json",
        _delete("cache", "prefix_end", "line"),
        PLANNER + "cache.prefix_end.line: required key is missing",
    ),
    (
        "prefix-end-column-zero",
        "build/support/chat.json",
        _set("cache", "prefix_end", "column", value=0),
        CHAT + "cache.prefix_end.column: expected a positive integer, got 0",
    ),
    (
        "prefix-end-reason-not-string",
        "build/support/chat.json",
        _set("cache", "prefix_end", "reason", value=None),
        CHAT + "cache.prefix_end.reason: expected a string, got null",
    ),
    (
        "prefix-end-source-only",
        "build/support/chat.json",
        _set("cache", "prefix_end", value={"message": None, "block": None, "source": "x.prompt"}),
        CHAT + "cache.prefix_end.line: required key is missing",
    ),
    (
        "prefix-sha-int",
        "build/agents/planner.json",
        _set("cache", "prefix_sha256", value=5),
        PLANNER + "cache.prefix_sha256: expected a sha256 (64 lowercase hex digits) or null, got 5",
    ),
    (
        "missing-cache",
        "build/support/chat.json",
        _delete("cache"),
        CHAT + "cache: required key is missing",
    ),
    (
        "totals-null",
        "build/support/chat.json",
        _set("totals", value=None),
        CHAT + "totals: expected an object, got null",
    ),
    (
        "flow-int",
        "build/support/chat.json",
        _set("flow", value=3),
        CHAT + "flow: expected a string or null, got 3",
    ),
    (
        "duplicate-input",
        "build/support/chat.json",
        _set("inputs", value=["a", "b", "a"]),
        CHAT + "inputs[2]: duplicate name 'a'",
    ),
    (
        "tag-not-string",
        "build/support/chat.json",
        _set("tags", 1, value=None),
        CHAT + "tags[1]: expected a string, got null",
    ),
    (
        "metadata-value-not-string",
        "build/support/chat.json",
        _set("metadata", value={"owner": 7}),
        CHAT + 'metadata["owner"]: expected a string, got 7',
    ),
    (
        "params-not-object",
        "build/support/chat.json",
        _set("params", value=[1]),
        CHAT + "params: expected an object, got a list",
    ),
    (
        "params-nan",
        "build/support/chat.json",
        _set("params", "stop", 0, value=float("nan")),
        CHAT + 'params["stop"][0]: expected a JSON value, got nan',
    ),
    (
        "params-python-object",
        "build/support/chat.json",
        _set("params", "temperature", value={1, 2}),
        CHAT + 'params["temperature"]: expected a JSON value, got a Python set',
    ),
    (
        "renderer",
        "build/support/chat.json",
        _set("renderer", value="jinja"),
        CHAT + "renderer: expected one of 'placeholder', 'python', got 'jinja'",
    ),
    (
        "name-not-string",
        "build/support/chat.json",
        _set("name", value=["support", "chat"]),
        "artifact: name: expected a string, got a list",
    ),
    (
        "long-string-shortened",
        "build/support/chat.json",
        _set("messages", 0, "tokens", value="y" * 500),
        CHAT + "messages[0].tokens: expected an integer, got 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy...'",
    ),
    (
        "newer-schema",
        "build/support/chat.json",
        _set("schema", value="promptc.artifact/3"),
        "artifact `support/chat` was written by a newer promptc (schema promptc.artifact/3); "
        "this promptc reads promptc.artifact/2 — rebuild or upgrade",
    ),
    (
        "foreign-schema",
        "build/support/chat.json",
        _set("schema", value="https://json-schema.org/draft/2020-12/schema"),
        CHAT + "not a promptc artifact (schema 'https://json-schema.org/draft/2020-12/schema')",
    ),
    (
        "manifest-schema",
        "build/support/chat.json",
        _set("schema", value=MANIFEST_SCHEMA),
        CHAT + "not a promptc artifact (schema 'promptc.manifest/2')",
    ),
    (
        "schema-missing",
        "build/support/chat.json",
        _delete("schema"),
        CHAT + "not a promptc artifact (no `schema` key)",
    ),
    (
        "schema-not-string",
        "build/support/chat.json",
        _set("schema", value=1),
        CHAT + "not a promptc artifact (schema 1)",
    ),
    (
        "huge-version-number",
        "build/support/chat.json",
        _set("schema", value="promptc.artifact/" + "9" * 5000),
        CHAT + "not a promptc artifact (schema 'promptc.artifact/99999",
    ),
    (
        "older-schema",
        "build/support/chat.json",
        _set("schema", value="promptc.artifact/1"),
        CHAT
        + "schema promptc.artifact/1 is not one this promptc reads (promptc.artifact/2) — rebuild with this promptc",
    ),
]


@pytest.mark.parametrize(
    ("base", "mutate", "fragment"),
    [case[1:] for case in MALFORMED_ARTIFACTS],
    ids=[case[0] for case in MALFORMED_ARTIFACTS],
)
def test_malformed_artifact(base: str, mutate: Callable[[Any], None], fragment: str) -> None:
    doc = _read(base)
    mutate(doc)
    with pytest.raises(ArtifactError) as caught:
        Artifact.from_json(doc)
    assert fragment in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_error_path_attribute() -> None:
    doc = _read("build/support/chat.json")
    doc["messages"][1]["blocks"][0]["tokens"] = "x"
    with pytest.raises(ArtifactError) as caught:
        Artifact.from_json(doc)
    assert str(caught.value) == "artifact `support/chat`: messages[1].blocks[0].tokens: expected an integer, got 'x'"
    assert caught.value.path == "messages[1].blocks[0].tokens"


@pytest.mark.parametrize("document", [None, [], "artifact", 3, b"{}"], ids=repr)
def test_non_object_documents(document: Any) -> None:
    with pytest.raises(ArtifactError, match=r"^artifact: expected a JSON object, got "):
        Artifact.from_json(document)
    with pytest.raises(ArtifactError, match=r"^manifest: expected a JSON object, got "):
        Manifest.from_json(document)


def test_artifacts_written_before_prefix_end_had_a_reason_still_read() -> None:
    """Schema 2.0 artifacts: `prefix_end` null (no prefix) or without source/line/column/reason."""
    validator = jsonschema.Draft202012Validator(load_schema("artifact"))
    doc = _read("build/support/chat.json")
    doc["cache"]["prefix_end"] = None
    assert Artifact.from_json(doc).cache.prefix_end is None and validator.is_valid(doc)
    doc = _read("build/agents/planner.json")
    doc["cache"]["prefix_end"] = {"message": 0, "block": 0}
    assert Artifact.from_json(doc).to_json() == doc and validator.is_valid(doc)


def test_unknown_keys_are_ignored_and_dropped() -> None:
    doc = _read("build/agents/planner.json")
    doc["added_later"] = {"anything": [1, 2]}
    doc["messages"][0]["blocks"][0]["sections"][0]["lint"] = "new"
    doc["cache"]["prefix_end"]["section"] = 0
    doc["cache"]["breakpoints"][0]["openai"] = True
    assert Artifact.from_json(doc).to_json() == _read("build/agents/planner.json")
    manifest = _read("build/manifest.json")
    manifest["compiler"]["commit"] = "abc"
    manifest["artifacts"]["agents/planner"]["size"] = 12
    manifest["built_at"] = "today"
    assert Manifest.from_json(manifest).to_json() == _read("build/manifest.json")


def test_deeply_nested_params_do_not_overflow() -> None:
    doc = _read("build/support/chat.json")
    deep: Any = "bottom"
    for _ in range(sys.getrecursionlimit() * 3):
        deep = {"d": [deep]}
    doc["params"]["deep"] = deep
    artifact = Artifact.from_json(doc)
    out, depth = artifact.to_json()["params"]["deep"], 0
    while isinstance(out, dict):  # compared by walking: `==` itself would recurse too deeply
        assert out is not deep and list(out) == ["d"]
        out, deep, depth = out["d"][0], deep["d"][0], depth + 1
    assert out == "bottom" and depth == sys.getrecursionlimit() * 3
    deep_bad: Any = float("inf")
    for _ in range(5000):
        deep_bad = [deep_bad]
    doc["params"]["deep"] = deep_bad
    with pytest.raises(ArtifactError, match=r'params\["deep"\]\[0\]\[0\].*expected a JSON value, got inf$'):
        Artifact.from_json(doc)


MALFORMED_MANIFESTS: list[tuple[str, Callable[[Any], None], str]] = [
    (
        "entry-prefix-tokens",
        _set("artifacts", "agents/planner", "prefix_tokens", value="399"),
        "manifest: artifacts[\"agents/planner\"].prefix_tokens: expected an integer, got '399'",
    ),
    (
        "entry-missing-sha",
        _delete("artifacts", "agents/fixer", "sha256"),
        'manifest: artifacts["agents/fixer"].sha256: required key is missing',
    ),
    (
        "entry-not-object",
        _set("artifacts", "agents/fixer", value="agents/fixer.json"),
        "manifest: artifacts[\"agents/fixer\"]: expected an object, got 'agents/fixer.json'",
    ),
    ("artifacts-list", _set("artifacts", value=[]), "manifest: artifacts: expected an object, got a list"),
    ("compiler-missing", _delete("compiler"), "manifest: compiler: required key is missing"),
    (
        "compiler-name",
        _set("compiler", "name", value="other"),
        "manifest: compiler.name: expected 'promptc', got 'other'",
    ),
    ("compiler-version", _set("compiler", "version", value=1), "manifest: compiler.version: expected a string, got 1"),
    ("provider", _set("provider", value=False), "manifest: provider: expected a string or null, got false"),
    ("tokenizer", _delete("tokenizer"), "manifest: tokenizer: required key is missing"),
    (
        "prefix-key",
        _set("prefixes", "nope", value={"tokens": 1, "artifacts": ["a"]}),
        'manifest: prefixes["nope"]: expected a sha256 key (64 lowercase hex digits)',
    ),
    (
        "newer",
        _set("schema", value="promptc.manifest/7"),
        "manifest was written by a newer promptc (schema promptc.manifest/7); this promptc reads promptc.manifest/2"
        " — rebuild or upgrade",
    ),
    (
        "foreign",
        _set("schema", value=ARTIFACT_SCHEMA),
        "manifest: not a promptc manifest (schema 'promptc.artifact/2')",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "fragment"), [case[1:] for case in MALFORMED_MANIFESTS], ids=[case[0] for case in MALFORMED_MANIFESTS]
)
def test_malformed_manifest(mutate: Callable[[Any], None], fragment: str) -> None:
    doc = _read("build/manifest.json")
    mutate(doc)
    with pytest.raises(ArtifactError) as caught:
        Manifest.from_json(doc)
    assert fragment in str(caught.value)


def test_malformed_prefix_groups() -> None:
    doc = _read("build/manifest.json")
    sha = next(iter(doc["prefixes"]))
    doc["prefixes"][sha]["artifacts"] = []
    with pytest.raises(ArtifactError, match=r"artifacts: expected at least one artifact, got an empty list$"):
        Manifest.from_json(doc)
    doc["prefixes"][sha] = {"tokens": True, "artifacts": ["a"]}
    with pytest.raises(ArtifactError, match=rf'^manifest: prefixes\["{sha}"\]\.tokens: expected an integer, got true$'):
        Manifest.from_json(doc)


# ---------------------------------------------------------------------------------------------
# Fuzz: random mutations of real documents never raise anything but ArtifactError, and from_json
# accepts a mutated document exactly when the shipped JSON Schema does.

_REPLACEMENTS: list[Any] = ["x", "", "dynamic", -1, 0, 7, 1.5, None, True, False, [], ["x"], {}, {"a": 1}]


def _locations(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path] if path else []
    if isinstance(doc, dict):
        for key, value in doc.items():
            found.extend(_locations(value, (*path, key)))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found.extend(_locations(value, (*path, index)))
    return found


def _mutate(doc: Any, rng: random.Random) -> None:
    path = rng.choice(_locations(doc))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if rng.random() < 0.35:
        del parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(rng.choice(_REPLACEMENTS))


@pytest.mark.parametrize(
    ("kind", "bases"),
    [(Artifact, ["build/support/chat.json", "build/agents/planner.json"]), (Manifest, ["build/manifest.json"])],
    ids=["artifact", "manifest"],
)
def test_fuzz_mutations(kind: type[Artifact] | type[Manifest], bases: list[str]) -> None:
    rng = random.Random(0)
    schema = load_schema("artifact" if kind is Artifact else "manifest")
    validator = jsonschema.Draft202012Validator(schema)
    originals = [_read(base) for base in bases]
    outcomes = {"accepted": 0, "refused": 0}
    for iteration in range(300):
        doc = copy.deepcopy(rng.choice(originals))
        for _ in range(rng.randint(1, 3)):
            _mutate(doc, rng)
        try:
            model = kind.from_json(doc)
        except ArtifactError as exc:
            outcomes["refused"] += 1
            assert str(exc), iteration
            assert not validator.is_valid(doc), (
                f"iteration {iteration}: the schema accepts what from_json refused: {exc}"
            )
        else:
            outcomes["accepted"] += 1
            validator.validate(model.to_json())
            assert validator.is_valid(doc), f"iteration {iteration}: from_json accepted what the schema refuses"
    assert outcomes["accepted"] > 10 and outcomes["refused"] > 100, outcomes


# ---------------------------------------------------------------------------------------------
# Cost and dependencies


def test_a_100_message_artifact_reads_whole() -> None:
    doc = _read("build/agents/planner.json")
    doc["messages"] = (doc["messages"] * 50)[:100]
    artifact = Artifact.from_json(doc)
    assert len(artifact.messages) == 100
    assert artifact.to_json()["messages"] == doc["messages"]  # speed is measured in `make bench`


def test_model_imports_only_the_standard_library() -> None:
    code = (
        "import sys; import promptc.runtime.model; "
        "bad = sorted(m for m in ('orjson', 'lark', 'tiktoken', 'click', 'watchdog') if m in sys.modules); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
