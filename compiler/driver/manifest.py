"""Stage 4 — the manifest: what `build/manifest.json` records about every artifact.

`manifest_for` makes the `Manifest` of a build's prompts. `ManifestDoc` holds the bytes the build
writes for it (exactly `backend.emit.dumps(manifest)`) as pieces — one per artifact entry and one
per prefix group — so that a build that changed k prompts serialises k entries and the groups they
left or joined, and joins the rest as they were: the previous build's pieces, kept in memory by a
watch session or split out of the `manifest.json` that build wrote.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from ..compile.pipeline import CompiledPrompt
from ..facts import codes
from ..facts.config import Config
from ..facts.diagnostics import Diagnostic, file_span, make
from ..facts.language import MANIFEST, MANIFEST_SCHEMA
from ..facts.version import VERSION
from ..passes.context import SourceTree
from ..runtime.model import Manifest, ManifestEntry, PrefixGroup


def manifest_for(prompts: list[CompiledPrompt], config: Config) -> Manifest:
    """The manifest of the prompts a build writes: each one's entry, and the prefixes they share."""
    entries = []
    for prompt in prompts:
        assert prompt.entry is not None
        entries.append((prompt.name, prompt.entry))
    return Manifest.of(entries, tokenizer=config.tokenizer, provider=config.provider or None)


def collisions(prompts: list[CompiledPrompt], tree: SourceTree) -> list[Diagnostic]:
    problems = []
    for prompt in prompts:
        if prompt.name == MANIFEST[: -len(".json")]:
            problems.append(
                make(
                    codes.ARTIFACT_COLLISION,
                    f"`{prompt.source}` would be written to {MANIFEST}, which the manifest owns",
                    file_span(),
                    "rename the file",
                    path=tree.display(prompt.source),
                )
            )
    return problems


# ---------------------------------------------------------------------------------------------
# The manifest's bytes, in pieces

#: what separates two members of the `artifacts` or `prefixes` object (depth 2 of the document)
_MEMBER = b",\n    "
_NEST = b"\n    "
_ARTIFACTS = b',\n  "artifacts": '
_PREFIXES = b',\n  "prefixes": '
_END = b"\n}\n"
_SEPARATOR = _MEMBER + b'"'


def _piece(key: str, value: Any) -> bytes:
    """`"key": value` as it appears at depth 2 of the indented document."""
    return orjson.dumps(key) + b": " + orjson.dumps(value, option=orjson.OPT_INDENT_2).replace(b"\n", _NEST)


def _members(pieces: list[bytes | memoryview]) -> bytes:
    return b"{\n    " + _MEMBER.join(pieces) + b"\n  }" if pieces else b"{}"


def _members_at(data: bytes, view: memoryview, start: int, end: int) -> list[memoryview] | None:
    """The members of the depth-1 object at `data[start:end]`, each `"key": value`, as views of
    `data` (nothing copied). A member starts with a key at exactly four spaces of indent; anything
    deeper is indented further, and a string never holds a raw newline, so the split is exact."""
    if data[start:end] == b"{}":
        return []
    if data[start : start + 7] != b'{\n    "' or data[end - 4 : end] != b"\n  }":
        return None
    found = []
    at, stop = start + 6, end - 4
    while True:
        next_at = data.find(_SEPARATOR, at, stop)
        if next_at < 0:
            found.append(view[at:stop])
            return found
        found.append(view[at:next_at])
        at = next_at + len(_MEMBER)


class ManifestDoc:
    """`manifest.json`'s bytes held as one piece per artifact entry (sorted by name) and per prefix
    group (sorted by sha256), patched by `put` and `remove`; `bytes()` joins them. Equal, byte for
    byte, to `dumps(Manifest.of(...))` of the same entries (tests/test_incremental.py proves it)."""

    def __init__(self, tokenizer: str | None, provider: str | None) -> None:
        document = {
            "schema": MANIFEST_SCHEMA,
            "compiler": {"name": "promptc", "version": VERSION},
            "tokenizer": tokenizer or None,
            "provider": provider or None,
        }
        self.head = orjson.dumps(document, option=orjson.OPT_INDENT_2)[: -len(b"\n}")]
        self.tokenizer, self.provider = tokenizer or None, provider or None
        self.names: list[str] = []
        #: name → its `"name": {…}` piece (a view of the file it was split from, or bytes)
        self.entries: dict[str, bytes | memoryview] = {}
        #: prefix sha256 → its `"sha": {…}` piece
        self.groups: dict[str, bytes | memoryview] = {}
        self._shas: list[str] = []
        self._bytes: bytes | None = None
        #: sha256 → the group as `Manifest` holds it, decoded once
        self._typed: dict[str, PrefixGroup] = {}

    # ---- making one

    @classmethod
    def of(cls, entries: Mapping[str, ManifestEntry], config: Config) -> ManifestDoc:
        """The document of these entries, every piece serialised."""
        doc = cls(config.tokenizer, config.provider)
        groups: dict[str, tuple[int, list[str]]] = {}
        for name in sorted(entries):
            entry = entries[name]
            doc.entries[name] = _piece(name, entry.to_json())
            if entry.prefix_sha256:
                groups.setdefault(entry.prefix_sha256, (entry.prefix_tokens, []))[1].append(name)
        doc.names = sorted(entries)
        for sha, (tokens, names) in groups.items():
            doc.groups[sha] = _piece(sha, {"tokens": tokens, "artifacts": names})
            doc._typed[sha] = PrefixGroup(tokens, tuple(names))
        doc._shas = sorted(groups)
        return doc

    @classmethod
    def parse(cls, data: bytes, names: Iterable[str], config: Config) -> ManifestDoc | None:
        """The document `data` (a manifest promptc wrote for exactly these artifact names, as the
        incremental state says), split into its pieces without decoding it; None when `data` is
        not laid out as this promptc and this configuration write it (then the caller serialises
        the entries afresh)."""
        doc = cls(config.tokenizer, config.provider)
        head = len(doc.head)
        if not (
            data.startswith(doc.head) and data.endswith(_END) and data[head : head + len(_ARTIFACTS)] == _ARTIFACTS
        ):
            return None
        start = head + len(_ARTIFACTS)
        cut = data.find(_PREFIXES, start)
        if cut < 0:
            return None
        view = memoryview(data)
        artifacts = _members_at(data, view, start, cut)
        prefixes = _members_at(data, view, cut + len(_PREFIXES), len(data) - len(_END))
        ordered = sorted(names)
        if artifacts is None or prefixes is None or len(artifacts) != len(ordered):
            return None
        entries = doc.entries
        for name, piece in zip(ordered, artifacts, strict=True):
            key = orjson.dumps(name) + b": {"
            if piece[: len(key)].tobytes() != key:
                return None
            entries[name] = piece
        for piece in prefixes:
            if piece[:1].tobytes() != b'"' or piece[65:69].tobytes() != b'": {':
                return None
            doc.groups[bytes(piece[1:65]).decode("ascii", "replace")] = piece
        doc.names = ordered
        doc._shas = list(doc.groups)
        if doc._shas != sorted(doc._shas):
            return None
        doc._bytes = data
        return doc

    # ---- patching

    def entry(self, name: str) -> ManifestEntry | None:
        """The entry of `name` as the document holds it (decoded from its piece)."""
        piece = self.entries.get(name)
        if piece is None:
            return None
        return ManifestEntry.from_json(orjson.loads(piece[len(orjson.dumps(name)) + 2 :]), own=True)

    def put(self, name: str, entry: ManifestEntry, old: ManifestEntry | None) -> None:
        """Set the entry of `name` (`old` is the entry the document held for it, if any)."""
        piece = _piece(name, entry.to_json())
        if self.entries.get(name) == piece:
            return
        if name not in self.entries:
            bisect.insort(self.names, name)
        self.entries[name] = piece
        if old is not None and old.prefix_sha256:
            self._leave(old.prefix_sha256, name)
        if entry.prefix_sha256:
            self._join(entry.prefix_sha256, entry.prefix_tokens, name)
        self._bytes = None

    def remove(self, name: str, old: ManifestEntry | None) -> None:
        if name not in self.entries:
            return
        del self.entries[name]
        del self.names[bisect.bisect_left(self.names, name)]
        if old is not None and old.prefix_sha256:
            self._leave(old.prefix_sha256, name)
        self._bytes = None

    def _group(self, sha: str) -> tuple[int, list[str]] | None:
        piece = self.groups.get(sha)
        if piece is None:
            return None
        group = orjson.loads(piece[68:])
        return int(group["tokens"]), list(group["artifacts"])

    def _set_group(self, sha: str, tokens: int, names: list[str]) -> None:
        self.groups[sha] = _piece(sha, {"tokens": tokens, "artifacts": names})
        self._typed[sha] = PrefixGroup(tokens, tuple(names))

    # A group's length is the one of its first member by name, as `Manifest.of` takes it.

    def _leave(self, sha: str, name: str) -> None:
        group = self._group(sha)
        if group is None or name not in group[1]:
            return
        tokens, names = group
        first = names[0] == name
        names.remove(name)
        if not names:
            del self.groups[sha]
            self._typed.pop(sha, None)
            del self._shas[bisect.bisect_left(self._shas, sha)]
            return
        if first:
            head = self.entry(names[0])
            tokens = head.prefix_tokens if head is not None else tokens
        self._set_group(sha, tokens, names)

    def _join(self, sha: str, tokens: int, name: str) -> None:
        group = self._group(sha)
        if group is None:
            bisect.insort(self._shas, sha)
            self._set_group(sha, tokens, [name])
            return
        kept, names = group
        if name not in names:
            bisect.insort(names, name)
        self._set_group(sha, tokens if names[0] == name else kept, names)

    # ---- reading

    def bytes(self) -> bytes:
        if self._bytes is None:
            entries, groups = self.entries, self.groups
            self._bytes = b"".join(
                (
                    self.head,
                    _ARTIFACTS,
                    _members([entries[name] for name in self.names]),
                    _PREFIXES,
                    _members([groups[sha] for sha in self._shas]),
                    _END,
                )
            )
        return self._bytes

    def manifest(self, entries: Mapping[str, ManifestEntry]) -> Manifest:
        """The typed manifest of the document, given the entries it holds (by name): equal to
        `Manifest.of` of them. Each group is decoded once and kept until a patch changes it."""
        typed = self._typed
        for sha in self._shas:
            if sha not in typed:
                tokens, names = self._group(sha) or (0, [])
                typed[sha] = PrefixGroup(tokens, tuple(names))
        artifacts = {name: entries[name] for name in self.names}
        groups = {sha: typed[sha] for sha in self._shas}
        return Manifest(MANIFEST_SCHEMA, "promptc", VERSION, self.tokenizer, self.provider, artifacts, groups)
