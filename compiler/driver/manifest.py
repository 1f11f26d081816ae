"""Stage 4 — the manifest: what `build/manifest.json` records about every artifact.

`manifest_for` makes the `Manifest` of a build's prompts. `ManifestDoc` holds the bytes the build
writes for it (exactly `backend.emit.dumps(manifest)`) as pieces — one per artifact entry and one
per prefix group — so that a build that changed k prompts serialises k entries and the groups they
left or joined, and keeps the rest as they were: the previous build's pieces, kept in memory by a
watch session, or the bytes of the `manifest.json` that build wrote, read back (`ManifestDoc.read`),
into which the changed pieces are spliced.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

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
_MEMBER = b",\n    "
#: where a member starts: only a member at depth 2 starts a line with four spaces and a quote
#: (deeper lines are indented further, and a string holds no raw newline)
_NEXT = _MEMBER + b'"'
_OPEN, _CLOSE = b"{\n    ", b"\n  }"
_NEST = b"\n    "
_ARTIFACTS = b',\n  "artifacts": '
_PREFIXES = b',\n  "prefixes": '
_END = b"\n}\n"


def _piece(key: str, value: Any) -> bytes:
    """`"key": value` as it appears at depth 2 of the indented document."""
    return orjson.dumps(key) + b": " + orjson.dumps(value, option=orjson.OPT_INDENT_2).replace(b"\n", _NEST)


V = TypeVar("V")

#: how many members `_Members` finds in its bytes one by one before it splits them all
_SEARCHES = 32


class _Members:
    """The members of one object of the document (`artifacts` by name, `prefixes` by sha256) as
    pieces, in key order. Either a dict of every piece (`indexed`), or — read back from a file —
    the file's bytes and the pieces patched since: a piece is found in the bytes by its key, and
    `text()` splices the patched pieces in. The bytes are split into the dict only when a caller
    needs every member or a key the object does not hold yet (its place must be found)."""

    __slots__ = ("_keys", "_pieces", "_base", "_start", "_end", "_count", "_patched", "_spans")

    def __init__(self) -> None:
        self._keys: list[str] | None = []
        self._pieces: dict[str, bytes] = {}
        self._base = b""
        #: the members' bytes in `_base` (between the object's `{\n    ` and `\n  }`)
        self._start = self._end = 0
        #: how many members the base holds, less those removed since
        self._count = 0
        #: key → its piece, or None when removed, since the base was read
        self._patched: dict[str, bytes | None] = {}
        #: key → where its member lies in the base
        self._spans: dict[str, tuple[int, int]] = {}

    @classmethod
    def of(cls, pieces: dict[str, bytes]) -> _Members:
        """The members of these pieces, given in key order."""
        members = cls()
        members._keys, members._pieces = list(pieces), pieces
        return members

    @classmethod
    def read(cls, base: bytes, at: int, end: int) -> _Members | None:
        """The object that stands at [at, end) in `base` (`{}`, or `{\n    …\n  }`), or None."""
        members = cls()
        members._keys, members._base = None, base
        if end - at == 2 and base.startswith(b"{}", at):
            members._start = members._end = at + 1
            return members
        if not (base.startswith(_OPEN, at) and base.startswith(_CLOSE, end - len(_CLOSE))):
            return None
        members._start, members._end = at + len(_OPEN), end - len(_CLOSE)
        members._count = -1  # counted when first asked
        return members

    def _span(self, key: str) -> tuple[int, int] | None:
        span = self._spans.get(key)
        if span is None and self._start < self._end:
            needle = _NEST + orjson.dumps(key) + b": {"
            found = self._base.find(needle, self._start - len(_NEST), self._end)
            if found >= 0:
                start = found + len(_NEST)
                end = self._base.find(_NEXT, start, self._end)
                span = self._spans[key] = (start, self._end if end < 0 else end)
        return span

    def get(self, key: str) -> bytes | None:
        if self._keys is not None:
            return self._pieces.get(key)
        if key in self._patched:
            return self._patched[key]
        if len(self._spans) >= _SEARCHES:  # a caller reading many: split the bytes once
            return self._index()[1].get(key)
        span = self._span(key)
        return None if span is None else self._base[span[0] : span[1]]

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        if self._keys is not None:
            return len(self._pieces)
        if self._count < 0:
            self._count = self._base.count(_NEXT, self._start, self._end) + 1
            self._count -= sum(1 for piece in self._patched.values() if piece is None)
        return self._count

    def keys(self) -> list[str]:
        """Every key, sorted (the caller does not change the list)."""
        return self._index()[0]

    def pieces(self) -> dict[str, bytes]:
        """Every piece by key (the caller does not change the dict)."""
        return self._index()[1]

    def _index(self) -> tuple[list[str], dict[str, bytes]]:
        if self._keys is None:
            keys: list[str] = []
            pieces: dict[str, bytes] = {}
            if self._start < self._end:
                parts = self._base[self._start : self._end].split(_NEXT)
                for number, part in enumerate(parts):
                    piece = part if number == 0 else b'"' + part
                    key = _key_of(piece)
                    if key is None or (keys and key <= keys[-1]):
                        raise ValueError("not a manifest this promptc wrote")
                    patched = self._patched.get(key, piece) if key in self._patched else piece
                    if patched is not None:
                        keys.append(key)
                        pieces[key] = patched
            self._keys, self._pieces = keys, pieces
            self._base, self._patched, self._spans = b"", {}, {}
        return self._keys, self._pieces

    def set(self, key: str, piece: bytes) -> None:
        if self._keys is None and (key in self._patched or self.get(key) is not None):
            if self._patched.get(key, piece) is None and self._count >= 0:
                self._count += 1  # removed, and back
            self._patched[key] = piece  # in its place in the base
            return
        keys, pieces = self._index()
        if key not in pieces:
            bisect.insort(keys, key)
        pieces[key] = piece

    def remove(self, key: str) -> None:
        if self._keys is None:
            if self.get(key) is not None:
                self._patched[key] = None
                if self._count >= 0:
                    self._count -= 1
            return
        if self._pieces.pop(key, None) is not None:
            del self._keys[bisect.bisect_left(self._keys, key)]

    def text(self) -> list[bytes | memoryview]:
        """The object as the document writes it, in parts to join (the unchanged runs of the
        bytes it was read from are views of them, not copies)."""
        if self._keys is not None:
            pieces = self._pieces
            return [_OPEN, _MEMBER.join([pieces[key] for key in self._keys]), _CLOSE] if pieces else [b"{}"]
        base = memoryview(self._base)
        if not self._patched:
            return [base[self._start - len(_OPEN) : self._end + len(_CLOSE)] if self._start < self._end else b"{}"]
        items: list[bytes | memoryview] = []
        cursor = self._start
        for start, end, key in sorted((*self._spans[key], key) for key in self._patched):
            if cursor < start - len(_MEMBER):
                items.append(base[cursor : start - len(_MEMBER)])  # the members up to this one, as they were
            piece = self._patched[key]
            if piece is not None:
                items.append(piece)
            cursor = end + len(_MEMBER)
        if cursor < self._end:
            items.append(base[cursor : self._end])
        if not items:
            return [b"{}"]
        parts: list[bytes | memoryview] = [_OPEN]
        for number, item in enumerate(items):
            parts += (_MEMBER, item) if number else (item,)
        parts.append(_CLOSE)
        return parts

    def rebase(self, data: bytes, start: int, end: int) -> None:
        """The object now stands at [start, end) in `data` (the document written): it is read from
        there from now on, and the pieces it held are let go (a build of 100,000 prompts would
        otherwise hold each entry twice, as a piece and in the document)."""
        count = len(self)
        self._keys, self._pieces, self._base, self._patched, self._spans = None, {}, data, {}, {}
        self._start, self._end = (start + len(_OPEN), end - len(_CLOSE)) if end - start > 2 else (start + 1,) * 2
        self._count = count

    def copy(self) -> _Members:
        """A snapshot that later patches of this one do not change."""
        other = _Members()
        other._keys = None if self._keys is None else list(self._keys)
        other._pieces = dict(self._pieces)
        other._base, other._start, other._end, other._count = self._base, self._start, self._end, self._count
        other._patched, other._spans = dict(self._patched), dict(self._spans)
        return other


def _key_of(piece: bytes) -> str | None:
    """The key a piece starts with (`"key": {…}`), or None when it is not one."""
    end = piece.find(b'": {')
    if piece[:1] != b'"' or end < 0:
        return None
    try:
        if b"\\" not in piece[:end]:
            key = piece[1:end].decode("utf-8")
            return key if '"' not in key else None
        found, at = _DECODER.raw_decode(piece.decode("utf-8"))  # an escape in the key: read it as JSON
    except (UnicodeDecodeError, ValueError):
        return None
    return found if isinstance(found, str) and piece.decode("utf-8").startswith(": {", at) else None


_DECODER = json.JSONDecoder()


class ManifestDoc:
    """`manifest.json`'s bytes held as one piece per artifact entry (sorted by name) and per
    prefix group (sorted by sha256), patched by `put` and `remove`; `bytes()` joins them. Equal,
    byte for byte, to `dumps(Manifest.of(...))` of the same entries (tests/test_incremental.py
    proves it). A build starts from the last one's document: the session's, or `manifest.json`
    read back (`read`), whose pieces stay in the file's bytes until a patch needs more than
    finding one (see `_Members`), so a one-edit build of 100,000 prompts splices one entry in."""

    def __init__(self, tokenizer: str | None, provider: str | None) -> None:
        document = {
            "schema": MANIFEST_SCHEMA,
            "compiler": {"name": "promptc", "version": VERSION},
            "tokenizer": tokenizer or None,
            "provider": provider or None,
        }
        self.head = orjson.dumps(document, option=orjson.OPT_INDENT_2)[: -len(b"\n}")]
        self.tokenizer, self.provider = tokenizer or None, provider or None
        #: artifact name → its `"name": {…}` piece
        self._entries = _Members()
        #: prefix sha256 → its `"sha": {…}` piece
        self._groups = _Members()
        self._bytes: bytes | None = None
        #: sha256 → the group as `Manifest` holds it, decoded once
        self._typed: dict[str, PrefixGroup] = {}
        #: `put` or `remove` changed the document since this was last set False
        self.changed = False

    # ---- making one

    @classmethod
    def of(
        cls, entries: Mapping[str, ManifestEntry], config: Config, pieces: Mapping[str, bytes] | None = None
    ) -> ManifestDoc:
        """The document of these entries, every piece serialised; with `pieces`, more entries
        given as the pieces their workers made (`piece_of`)."""
        doc = cls(config.tokenizer, config.provider)
        groups: dict[str, tuple[int, list[str]]] = {}
        given = pieces or {}
        made: dict[str, bytes] = {}
        for name in sorted({*entries, *given}):
            entry = entries.get(name)
            if entry is not None:
                piece, sha, tokens = piece_of(name, entry), entry.prefix_sha256, entry.prefix_tokens
            else:
                piece = given[name]
                _, sha, tokens = piece_fields(piece)
            made[name] = piece
            if sha:
                groups.setdefault(sha, (tokens, []))[1].append(name)
        pieces = made
        doc._entries = _Members.of(pieces)
        doc._groups = _Members.of(
            {sha: _piece(sha, {"tokens": groups[sha][0], "artifacts": groups[sha][1]}) for sha in sorted(groups)}
        )
        doc._typed = {sha: PrefixGroup(tokens, tuple(names)) for sha, (tokens, names) in groups.items()}
        return doc

    @classmethod
    def read(cls, data: bytes, config: Config, count: int | None = None) -> ManifestDoc | None:
        """The document of a `manifest.json` this promptc wrote with this configuration: its
        bytes, whose members are found (and split into pieces, when needed) where a comma, a
        newline, four spaces and a quote meet. `count`: how many entries the caller knows it
        holds (it recorded them when it wrote the file), else they are counted when asked. None
        for any other bytes (the caller then builds the document afresh)."""
        doc = cls(config.tokenizer, config.provider)
        at = len(doc.head) + len(_ARTIFACTS)
        if not (data.startswith(doc.head + _ARTIFACTS) and data.endswith(_END)):
            return None
        # the two objects meet where the first closes at depth 1: found from the end, so that
        # only the (smaller) prefixes are scanned, not every artifact entry
        meet = data.rfind(_CLOSE + _PREFIXES + b"{")
        split = meet + len(_CLOSE) if meet >= 0 else data.rfind(b"{}" + _PREFIXES) + 2
        if split < 2 or not data.startswith(_PREFIXES, split):
            return None
        artifacts = _Members.read(data, at, split)
        prefixes = _Members.read(data, split + len(_PREFIXES), len(data) - len(_END))
        if artifacts is None or prefixes is None:
            return None
        doc._entries, doc._groups = artifacts, prefixes
        if count is not None:
            doc._entries._count = count
        for members in (doc._entries, doc._groups):
            if members._start < members._end:  # the first and the last member are pieces
                last = members._base.rfind(_NEXT, members._start, members._end)
                first_end = members._base.find(_NEXT, members._start, members._end)
                if _key_of(data[members._start : members._end if first_end < 0 else first_end]) is None:
                    return None
                if last >= 0 and _key_of(data[last + len(_MEMBER) : members._end]) is None:
                    return None
        doc._bytes = data
        return doc

    # ---- what it holds

    @property
    def names(self) -> list[str]:
        """Every artifact name, sorted (the caller does not change the list)."""
        return self._entries.keys()

    @property
    def entries(self) -> dict[str, bytes]:
        """Every entry's piece by artifact name (the caller does not change the dict)."""
        return self._entries.pieces()

    @property
    def groups(self) -> dict[str, bytes]:
        """Every prefix group's piece by sha256 (the caller does not change the dict)."""
        return self._groups.pieces()

    def __len__(self) -> int:
        """How many entries the document holds."""
        return len(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    # ---- patching

    def entry(self, name: str) -> ManifestEntry | None:
        """The entry of `name` as the document holds it (decoded from its piece)."""
        piece = self._entries.get(name)
        return None if piece is None else entry_of(name, piece)

    def put(self, name: str, entry: ManifestEntry, old: ManifestEntry | None) -> None:
        """Set the entry of `name` (`old` is the entry the document held for it, if any)."""
        piece = piece_of(name, entry)
        self._put(name, piece, entry.prefix_sha256, entry.prefix_tokens, old.prefix_sha256 if old is not None else None)

    def put_piece(self, name: str, piece: bytes) -> None:
        """Set the entry of `name` as its piece (`piece_of`), as a large build's workers made it."""
        _, sha, tokens = piece_fields(piece)
        old = self._entries.get(name)
        self._put(name, piece, sha, tokens, piece_fields(old)[1] if old is not None else None)

    def _put(self, name: str, piece: bytes, sha: str | None, tokens: int, old_sha: str | None) -> None:
        if self._entries.get(name) == piece:
            return
        self._entries.set(name, piece)
        if old_sha:
            self._leave(old_sha, name)
        if sha:
            self._join(sha, tokens, name)
        self._bytes = None
        self.changed = True

    def remove(self, name: str, old: ManifestEntry | None) -> None:
        if name not in self._entries:
            return
        self._entries.remove(name)
        if old is not None and old.prefix_sha256:
            self._leave(old.prefix_sha256, name)
        self._bytes = None
        self.changed = True

    def _group(self, sha: str) -> tuple[int, list[str]] | None:
        piece = self._groups.get(sha)
        return None if piece is None else _group_of(piece)

    def _set_group(self, sha: str, tokens: int, names: list[str]) -> None:
        self._groups.set(sha, _piece(sha, {"tokens": tokens, "artifacts": names}))
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
            self._groups.remove(sha)
            self._typed.pop(sha, None)
            return
        if first:
            head = self._entries.get(names[0])
            tokens = piece_fields(head)[2] if head is not None else tokens
        self._set_group(sha, tokens, names)

    def _join(self, sha: str, tokens: int, name: str) -> None:
        group = self._group(sha)
        if group is None:
            self._set_group(sha, tokens, [name])
            return
        kept, names = group
        if name not in names:
            bisect.insort(names, name)
        self._set_group(sha, tokens if names[0] == name else kept, names)

    # ---- reading

    def bytes(self) -> bytes:
        if self._bytes is None:
            artifacts, prefixes = self._entries.text(), self._groups.text()
            self._bytes = data = b"".join((self.head, _ARTIFACTS, *artifacts, _PREFIXES, *prefixes, _END))
            at = len(self.head) + len(_ARTIFACTS)
            after = at + sum(len(part) for part in artifacts)
            self._entries.rebase(data, at, after)
            self._groups.rebase(data, after + len(_PREFIXES), len(data) - len(_END))
        return self._bytes

    def manifest(self, typed: Mapping[str, ManifestEntry] | None = None) -> Manifest:
        """The typed manifest of the document as it is now (later patches do not change it), equal
        to `Manifest.of` of its entries. `typed` are entries the caller holds already (those it
        made); every other entry, and every group, is decoded from its piece when first read, so
        a build that reused 100,000 prompts never decodes the entries nobody asks for."""
        entries = _Decoded(self._entries.copy(), typed or {}, entry_of)
        groups = _Decoded(self._groups.copy(), self._typed, _group)
        return Manifest(MANIFEST_SCHEMA, "promptc", VERSION, self.tokenizer, self.provider, entries, groups)


class _Decoded(Mapping[str, V]):
    """One object of a manifest (its entries by name, or its prefix groups by sha256), in key
    order, each value decoded from its piece when first read."""

    __slots__ = ("_members", "_typed", "_decode")

    def __init__(self, members: _Members, typed: Mapping[str, V], decode: Callable[[str, bytes], V]) -> None:
        self._members, self._typed, self._decode = members, dict(typed), decode

    def __getitem__(self, key: str) -> V:
        value = self._typed.get(key)
        if value is None:
            piece = self._members.get(key)
            if piece is None:
                raise KeyError(key)
            value = self._typed[key] = self._decode(key, piece)
        return value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._members

    def __iter__(self) -> Iterator[str]:
        return iter(self._members.keys())

    def __len__(self) -> int:
        return len(self._members)

    def __repr__(self) -> str:
        return f"{{{', '.join(f'{key!r}: {self[key]!r}' for key in self)}}}"


def _group(sha: str, piece: bytes) -> PrefixGroup:
    tokens, names = _group_of(piece)
    return PrefixGroup(tokens, tuple(names))


def _group_of(piece: bytes) -> tuple[int, list[str]]:
    """The length and members of a group piece (`"<sha256>": {…}`)."""
    group = orjson.loads(memoryview(piece)[68:])
    return int(group["tokens"]), list(group["artifacts"])


def piece_of(name: str, entry: ManifestEntry) -> bytes:
    """The manifest piece of one entry, as `ManifestDoc` holds it."""
    return _piece(name, entry.to_json())


#: the lines of an entry's piece (depth 3 of the document) that `piece_fields` reads
_SHA = b'\n      "sha256": "'
_PREFIX = b'\n      "prefix_sha256": '
_TOKENS = b'\n      "prefix_tokens": '


def piece_fields(piece: bytes) -> tuple[str, str | None, int]:
    """An entry piece's artifact sha256, prefix sha256 and prefix length, read from its lines
    (promptc's own layout: each field of the entry on its own line, six spaces in, before any
    line of its schemas, which are indented further)."""
    at = piece.find(_SHA) + len(_SHA)
    sha = piece[at : at + 64].decode("ascii")
    at = piece.find(_PREFIX) + len(_PREFIX)
    prefix = piece[at + 1 : at + 65].decode("ascii") if piece[at : at + 1] == b'"' else None
    at = piece.find(_TOKENS) + len(_TOKENS)
    end = piece.find(b",", at)
    return sha, prefix, int(piece[at:end])


def entry_of(name: str, piece: bytes) -> ManifestEntry:
    """The entry a manifest piece holds (promptc's own: taken as it is)."""
    # the value starts after the key: `": {` ends it unless the name holds a quote or a backslash
    plain = '"' not in name and "\\" not in name
    start = piece.find(b'": {') + 3 if plain else len(orjson.dumps(name)) + 2
    return ManifestEntry.from_json(orjson.loads(memoryview(piece)[start:]), own=True)
