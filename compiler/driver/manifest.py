"""Stage 4 — the manifest: what `build/manifest.json` records about every artifact.

`manifest_for` makes the `Manifest` of a build's prompts. `ManifestDoc` holds the bytes the build
writes for it (exactly `backend.emit.dumps(manifest)`) as pieces — one per artifact entry and one
per prefix group — so that a build that changed k prompts serialises k entries and the groups they
left or joined, and joins the rest as they were: the previous build's pieces, kept in memory by a
watch session or split out of the `manifest.json` that build wrote.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from ..compile.prompt import CompiledPrompt
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
_MEMBER = ",\n    "
_NEST = b"\n    "
_ARTIFACTS = ',\n  "artifacts": '
_PREFIXES = ',\n  "prefixes": '
_END = "\n}\n"


def _piece(key: str, value: Any) -> str:
    """`"key": value` as it appears at depth 2 of the indented document."""
    text = orjson.dumps(key) + b": " + orjson.dumps(value, option=orjson.OPT_INDENT_2).replace(b"\n", _NEST)
    return text.decode("utf-8")


def _members(pieces: list[str]) -> str:
    return "{\n    " + _MEMBER.join(pieces) + "\n  }" if pieces else "{}"


class ManifestDoc:
    """`manifest.json`'s bytes held as one piece of text per artifact entry (sorted by name) and
    per prefix group (sorted by sha256), patched by `put` and `remove`; `bytes()` joins them.
    Equal, byte for byte, to `dumps(Manifest.of(...))` of the same entries
    (tests/test_incremental.py proves it). The incremental state keeps the pieces (each entry's
    with its record, each group's), so a build starts from the last one's without reading or
    decoding the manifest."""

    def __init__(self, tokenizer: str | None, provider: str | None) -> None:
        document = {
            "schema": MANIFEST_SCHEMA,
            "compiler": {"name": "promptc", "version": VERSION},
            "tokenizer": tokenizer or None,
            "provider": provider or None,
        }
        self.head = orjson.dumps(document, option=orjson.OPT_INDENT_2)[: -len(b"\n}")].decode("utf-8")
        self.tokenizer, self.provider = tokenizer or None, provider or None
        self.names: list[str] = []
        #: name → its `"name": {…}` piece
        self.entries: dict[str, str] = {}
        #: prefix sha256 → its `"sha": {…}` piece
        self.groups: dict[str, str] = {}
        self._shas: list[str] = []
        self._bytes: bytes | None = None
        #: sha256 → the group as `Manifest` holds it, decoded once
        self._typed: dict[str, PrefixGroup] = {}
        #: the groups `put` and `remove` changed since `changed_groups()` was last asked
        self._touched: set[str] = set()
        #: `put` or `remove` changed the document since this was last set False
        self.changed = False

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
        doc._touched = set(groups)
        return doc

    @classmethod
    def restore(cls, entries: Mapping[str, str], groups: Mapping[str, str], config: Config) -> ManifestDoc | None:
        """The document of these pieces (by artifact name, by prefix sha256); None when they are
        not pieces this promptc writes."""
        doc = cls(config.tokenizer, config.provider)
        if not all(isinstance(piece, str) and piece[:1] == '"' for piece in (*entries.values(), *groups.values())):
            return None
        doc.entries, doc.groups = dict(entries), dict(groups)
        doc.names, doc._shas = sorted(entries), sorted(groups)
        return doc

    @classmethod
    def read(cls, data: bytes, config: Config) -> ManifestDoc | None:
        """The document of a `manifest.json` this promptc wrote with this configuration, split
        back into its pieces: each member of `artifacts` and of `prefixes` starts a line indented
        by exactly four spaces and a quote (deeper members by more spaces; a string holds no raw
        newline), so the members are split where a comma, a newline, four spaces and a quote
        meet. None for any other bytes (the caller then builds it afresh)."""
        doc = cls(config.tokenizer, config.provider)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        head = doc.head + _ARTIFACTS
        if not (text.startswith(head) and text.endswith(_END)):
            return None
        middle = text.find("\n  }" + _PREFIXES + "{", len(head))
        if text[len(head) : len(head) + 2] == "{}":
            artifacts, after = [], len(head) + 2
        elif middle >= 0 and text.startswith("{\n    ", len(head)):
            artifacts, after = _split(text[len(head) + 6 : middle]), middle + 4
        else:
            return None
        if not text.startswith(_PREFIXES, after):
            return None
        rest = text[after + len(_PREFIXES) : len(text) - len(_END)]
        if rest == "{}":
            prefixes = []
        elif rest.startswith("{\n    ") and rest.endswith("\n  }"):
            prefixes = _split(rest[6:-4])
        else:
            return None
        for piece in artifacts:
            name = _name_of(piece)
            if name is None or (doc.names and name <= doc.names[-1]):
                return None
            doc.names.append(name)
            doc.entries[name] = piece
        for piece in prefixes:
            sha = piece[1:65]
            if piece[65:69] != '": {' or (doc._shas and sha <= doc._shas[-1]):
                return None
            doc._shas.append(sha)
            doc.groups[sha] = piece
        return doc

    def changed_groups(self) -> dict[str, str | None]:
        """The groups changed since the last call, with their pieces (None: gone)."""
        touched, self._touched = self._touched, set()
        return {sha: self.groups.get(sha) for sha in touched}

    # ---- patching

    def entry(self, name: str) -> ManifestEntry | None:
        """The entry of `name` as the document holds it (decoded from its piece)."""
        piece = self.entries.get(name)
        return None if piece is None else entry_of(name, piece)

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
        self.changed = True

    def remove(self, name: str, old: ManifestEntry | None) -> None:
        if name not in self.entries:
            return
        del self.entries[name]
        del self.names[bisect.bisect_left(self.names, name)]
        if old is not None and old.prefix_sha256:
            self._leave(old.prefix_sha256, name)
        self._bytes = None
        self.changed = True

    def _group(self, sha: str) -> tuple[int, list[str]] | None:
        piece = self.groups.get(sha)
        if piece is None:
            return None
        return _group_of(piece)

    def _set_group(self, sha: str, tokens: int, names: list[str]) -> None:
        self.groups[sha] = _piece(sha, {"tokens": tokens, "artifacts": names})
        self._typed[sha] = PrefixGroup(tokens, tuple(names))
        self._touched.add(sha)

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
            self._touched.add(sha)
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
            self._bytes = "".join(
                (
                    self.head,
                    _ARTIFACTS,
                    _members([entries[name] for name in self.names]),
                    _PREFIXES,
                    _members([groups[sha] for sha in self._shas]),
                    _END,
                )
            ).encode("utf-8")
        return self._bytes

    def manifest(self, typed: Mapping[str, ManifestEntry] | None = None) -> Manifest:
        """The typed manifest of the document as it is now (later patches do not change it), equal
        to `Manifest.of` of its entries. `typed` are entries the caller holds already (those it
        made); every other entry, and every group, is decoded from its piece when first read, so
        a build that reused 100,000 prompts never decodes the entries nobody asks for."""
        entries = _Entries(list(self.names), dict(self.entries), typed or {})
        groups = _Groups(list(self._shas), dict(self.groups), dict(self._typed))
        return Manifest(MANIFEST_SCHEMA, "promptc", VERSION, self.tokenizer, self.provider, entries, groups)


class _Entries(Mapping[str, ManifestEntry]):
    """A manifest's entries by name, in name order, each decoded from its piece when first read."""

    __slots__ = ("_names", "_pieces", "_typed")

    def __init__(self, names: list[str], pieces: dict[str, str], typed: Mapping[str, ManifestEntry]) -> None:
        self._names, self._pieces = names, pieces
        self._typed = dict(typed)

    def __getitem__(self, name: str) -> ManifestEntry:
        entry = self._typed.get(name)
        if entry is None:
            entry = self._typed[name] = entry_of(name, self._pieces[name])
        return entry

    def __contains__(self, name: object) -> bool:
        return name in self._pieces

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return f"{{{', '.join(f'{name!r}: {self[name]!r}' for name in self._names)}}}"


class _Groups(Mapping[str, PrefixGroup]):
    """A manifest's prefix groups by sha256, in order, each decoded from its piece when first read."""

    __slots__ = ("_shas", "_pieces", "_typed")

    def __init__(self, shas: list[str], pieces: dict[str, str], typed: dict[str, PrefixGroup]) -> None:
        self._shas, self._pieces, self._typed = shas, pieces, typed

    def __getitem__(self, sha: str) -> PrefixGroup:
        group = self._typed.get(sha)
        if group is None:
            tokens, names = _group_of(self._pieces[sha])
            group = self._typed[sha] = PrefixGroup(tokens, tuple(names))
        return group

    def __contains__(self, sha: object) -> bool:
        return sha in self._pieces

    def __iter__(self) -> Iterator[str]:
        return iter(self._shas)

    def __len__(self) -> int:
        return len(self._shas)

    def __repr__(self) -> str:
        return f"{{{', '.join(f'{sha!r}: {self[sha]!r}' for sha in self._shas)}}}"


def _group_of(piece: str) -> tuple[int, list[str]]:
    """The length and members of a group piece (`"<sha256>": {…}`)."""
    group = orjson.loads(piece[68:])
    return int(group["tokens"]), list(group["artifacts"])


def _split(members: str) -> list[str]:
    """The pieces of an object's members as `_members` joined them."""
    pieces = members.split(_MEMBER + '"')
    return [pieces[0], *('"' + piece for piece in pieces[1:])]


def _name_of(piece: str) -> str | None:
    """The key a piece starts with (`"name": {…}`), or None when it is not one."""
    end = piece.find('": {')
    if piece[:1] != '"' or end < 0:
        return None
    if "\\" not in piece[:end]:
        return piece[1:end] if '"' not in piece[1:end] else None
    try:  # an escape in the key: read it as JSON up to its closing quote
        key, at = _DECODER.raw_decode(piece)
    except ValueError:
        return None
    return key if isinstance(key, str) and piece.startswith(": {", at) else None


_DECODER = json.JSONDecoder()


def _key(name: str) -> str:
    return orjson.dumps(name).decode("utf-8") + ": {"


def piece_of(name: str, entry: ManifestEntry) -> str:
    """The manifest piece of one entry, as `ManifestDoc` holds it."""
    return _piece(name, entry.to_json())


def entry_of(name: str, piece: str) -> ManifestEntry:
    """The entry a manifest piece holds (promptc's own: taken as it is)."""
    # the key ends at the first `": {` unless the name holds a quote or a backslash (escaped in it)
    start = piece.find('": {') + 3 if '"' not in name and "\\" not in name else len(_key(name)) - 1
    return ManifestEntry.from_json(orjson.loads(piece[start:]), own=True)
