"""Stage 2 — plan: what the incremental state lets this build reuse, and the state itself.

The state (`buildfolder.state_path`: `.promptc-cache/<out>.state.json`) is one file, read once per
process. It records, for every source file, its stat and sha256; for every artifact in the output
folder, the sha256 of its source and of every file it read, the sha256 and the stat of the
artifact file, and its warnings; and what the output folder holds (`output`: its identity and its
folders' stats, the manifest's stat, the shadow set and how it differs from the live set). The
manifest's entries are not in it: `manifest.json` holds them, and a build reads it back as pieces
(`ManifestDoc.read`) when its stat is the one recorded. It is an optimisation only: a stale,
corrupt or missing state (or manifest) means a full build, never a wrong one, and it is keyed by a
fingerprint of the compiler's own files and the configuration.

The file is a journal of JSON lines, so that saving costs what the build changed: a header (format,
fingerprint), the base (every record), then one line per later build holding only the records it
changed (`null` for one it dropped). Loading applies the lines in order. Every line is checked to
the last field before it is used (`_valid_layer`: each record's shape, each field's type and
range): a state any line of which does not parse or is not what promptc writes — a build killed
while appending, a disk that lost bytes, a hand edit — is no state, and the build is a full one.
Once the lines after the base weigh half as much as the base, the next save rewrites the file
whole (atomically), merged.

Stat, not content, proves a file unchanged, with git's rule for racily clean entries. A source
record whose mtime lies within `RACY_WINDOW_NS` of the moment it was recorded (each record keeps
that moment) is not trusted, because a second edit in the same timestamp tick would leave the stat
as it was; such a file is read and hashed again until it is older than that. An output file (an
artifact, `manifest.json`) is trusted by its size, mtime, inode and change time (which no user
call can set back: an edit in place that restores size and mtime still moves it), and only when
that change time is older than the file system's clock as it was read before the stat
(`buildfolder.output_clock`): a file changed in the same tick is recorded without its stat (the
manifest with its sha256), and the next build reads and hashes it.
"""

from __future__ import annotations

import gc
import hashlib
import os
import stat as stat_module
import time
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import field, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..compile.prompt import CompiledPrompt, name_of
from ..facts import codes
from ..facts.config import Config
from ..facts.diagnostics import Diagnostic, Edit, Fix, Span, has_errors
from ..facts.language import RESOURCE_SUFFIX, SOURCE_SUFFIX
from ..facts.lazy import lazy_import
from ..facts.records import dataclass
from ..facts.version import VERSION
from ..passes.context import SourceTree
from ..runtime.atomic import write_file
from ..runtime.buildfolder import artifact_path, state_path
from ..runtime.model import ManifestEntry
from ..syntax.source import MAX_SOURCE_BYTES
from .sources import RACY_WINDOW_NS

if TYPE_CHECKING:
    from ..backend import meter
    from ..syntax import parse
else:  # the compile stack, which a build that reuses every prompt never loads
    meter = lazy_import("promptc.backend.meter")
    parse = lazy_import("promptc.syntax.parse")

#: the first line's `format`; a state of another format is no state
STATE_FORMAT = "promptc-state/4"
#: the journal is merged into the base once its lines weigh this share of the base, or number this many
COMPACT_SHARE = 0.5
COMPACT_LINES = 500
#: a state file larger than this is not read (a build that finds none is only a full build)
STATE_LIMIT = 1 << 32


#: the collector's state at each `acyclic()` entry, outermost first
_PAUSED: list[bool] = []


def _promote() -> None:
    """Move every object the collector tracks into its oldest generation without walking them
    (`freeze` then `unfreeze`): the young-generation passes that follow, frequent and meant to be
    cheap, then do not walk the hundreds of thousands of objects made while it was paused."""
    gc.freeze()
    gc.unfreeze()


@contextmanager
def acyclic() -> Iterator[None]:
    """Around code that makes many objects and no reference cycle (the build's bookkeeping: the
    state decoded, the reused prompts, the manifest's pieces): the cyclic collector would walk
    every object the build holds again and again while they are made, for nothing to collect."""
    _PAUSED.append(gc.isenabled())
    gc.disable()
    try:
        yield
    finally:
        if _PAUSED.pop():
            _promote()
            gc.enable()


@contextmanager
def collecting() -> Iterator[None]:
    """Inside `acyclic()`: the collector as it was before, for code that makes cycles (compiles)."""
    enable = bool(_PAUSED) and _PAUSED[0]
    if enable:
        _promote()
        gc.enable()
    try:
        yield
    finally:
        if enable:
            gc.disable()


@dataclass(slots=True)
class Plan:
    """The incremental state as loaded for one build. An empty plan reuses nothing."""

    #: changes whenever the compiler or the config changes; "" means no incremental state
    fingerprint: str = ""
    #: source → what the state knows of its artifact
    entries: dict[str, Any] = field(default_factory=dict)
    #: source → [size, mtime_ns, inode, ctime_ns, sha256, recorded_ns]
    files: dict[str, list[Any]] = field(default_factory=dict)
    #: what the output folder held after the build that saved the state (`buildfolder.output_record`)
    output: dict[str, Any] = field(default_factory=dict)
    #: [stat key of the compiler's files, their content digest, when it was computed]
    package: list[Any] = field(default_factory=list)
    #: the state file as read — (device, inode, size) — when the next save may append to it
    where: tuple[int, int, int] | None = None
    base_size: int = 0
    journal_size: int = 0
    journal_lines: int = 0
    #: entries whose artifact file turned out to hold the recorded bytes under another stat
    refreshed: dict[str, Any] = field(default_factory=dict)
    #: the file system's clock in the output folder before any artifact was looked at
    #: (`buildfolder.output_clock`): a stat with an older change time is recorded as proof
    clock: int = 0

    def reusable(self, rels: Iterable[str], tree: SourceTree, out: Path) -> dict[str, dict[str, Any]]:
        """The prompts whose source, partials and artifact file are exactly what the state
        recorded, with their records (`reuse` makes a record the prompt a build hands out)."""
        reused: dict[str, dict[str, Any]] = {}
        shas = tree.shas
        entries = self.entries
        base = os.path.join(str(out), "")
        stat = os.stat
        with acyclic():
            for rel in rels:
                entry = entries.get(rel)
                if not isinstance(entry, dict) or entry.get("sha") != shas.get(rel):
                    continue
                deps = entry.get("deps")  # absent: none (the state leaves empty fields out)
                if deps is not None and (not isinstance(deps, dict) or any(shas.get(d) != h for d, h in deps.items())):
                    continue
                path = f"{base}{artifact_path(rel[: -len(SOURCE_SUFFIX)])}"
                try:
                    st = stat(path)
                except OSError:
                    continue
                recorded = entry.get("stat")  # absent: recorded within the racy window, so hashed
                there = (
                    recorded is not None
                    and recorded[3] == st.st_ctime_ns
                    and recorded[1] == st.st_mtime_ns
                    and recorded[0] == st.st_size
                    and recorded[2] == st.st_ino
                )
                if not there and not self._artifact_is_there(rel, entry, path):
                    continue
                reused[rel] = self.refreshed.get(rel, entry)
        return reused

    def _artifact_is_there(self, rel: str, entry: dict[str, Any], path: str) -> bool:
        """The artifact file is the one the entry describes: the same stat, or the same bytes (a
        file the last build wrote within the racy window, one the build's own hard links gave a
        new change time, a copy the shadow set kept), whose new stat is then recorded."""
        stat = output_stat(path)
        if stat is None:
            return False
        if stat == entry.get("stat"):
            return True
        try:
            with open(path, "rb") as handle:
                same: bool = hashlib.sha256(handle.read()).hexdigest() == entry["art"]
        except OSError:
            return False
        if same:
            entry = {key: value for key, value in entry.items() if key != "stat"}
            proof = trusted_stat(stat, self.clock)
            if proof is not None:
                entry["stat"] = proof
            self.entries[rel] = self.refreshed[rel] = entry
        return same

    def is_on_disk(self, out: Path) -> bool:
        """Whether the state file is still the one this plan was read from or last wrote."""
        try:
            info = os.lstat(state_path(out))
        except OSError:
            return False
        return self.where == (info.st_dev, info.st_ino, info.st_size)

    def preload_token_counts(self, out: Path, rels: list[str]) -> None:
        """Feed the meter the counts the previous artifacts of these prompts recorded, so that a
        rebuild after an edit that leaves the texts alone (a comment, a directive) or changes one
        section never loads the tokenizer for the rest. Only an artifact whose bytes are the ones
        the state recorded is read (an artifact edited by hand teaches the meter nothing), and it
        is read as plain JSON: its texts and counts, not the whole model."""
        for rel in rels:
            record = self.entries.get(rel)
            if not isinstance(record, dict):
                continue
            try:
                with open(os.path.join(out, artifact_path(name_of(rel))), "rb") as handle:
                    data = handle.read()
                if hashlib.sha256(data).hexdigest() != record.get("art"):
                    continue
                artifact = orjson.loads(data)
                counter = meter.meter(artifact["tokenizer"]["name"])  # the same tokenizer counts the same text alike
                counts: dict[str, int] = {}
                for message in artifact["messages"]:
                    counts[message["content"]] = message["tokens"]
                    for block in message["blocks"]:
                        counts[block["text"]] = block["tokens"]
                        for section in block["sections"]:
                            counts[section["text"]] = section["tokens"]
            except (OSError, orjson.JSONDecodeError, KeyError, TypeError, meter.TokenizerError):
                continue
            if all(isinstance(text, str) and type(tokens) is int for text, tokens in counts.items()):
                counter.preload(counts)


# ---------------------------------------------------------------------------------------------
# Loading


def _read_state(path: Path) -> tuple[bytes, tuple[int, int, int]] | None:
    """The state file's bytes and identity: never through a link, never a pipe or a device."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat_module.S_ISREG(info.st_mode) or info.st_size > STATE_LIMIT:
            return None
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 24)
            if not chunk:
                break
            chunks.append(chunk)
        data = b"".join(chunks)
        return data, (info.st_dev, info.st_ino, len(data))
    except OSError:
        return None
    finally:
        os.close(fd)


def empty_plan(config: Config) -> Plan:
    """A plan that reuses nothing, with the fingerprint its build records."""
    fingerprint, package = _fingerprint(config, None)
    return Plan(fingerprint, package=package)


def load_plan(out: Path, config: Config) -> Plan:
    """The state for `out`, or an empty plan (with the fingerprint) when it is stale or unreadable."""
    found = _read_state(state_path(out))
    if found is None:
        return empty_plan(config)
    data, where = found
    with acyclic():  # decoded JSON holds no cycle
        return _load(data, where, config)


def _load(data: bytes, where: tuple[int, int, int], config: Config) -> Plan:
    """The plan of a state file's bytes: every line applied, or none (an empty plan) when any line
    does not parse or is not what promptc writes (see `_valid_layer`)."""
    view = memoryview(data)  # lines are decoded in place, not copied out first
    first = data.find(b"\n")
    second = data.find(b"\n", first + 1) if first >= 0 else -1
    if second < 0 or not data.endswith(b"\n"):
        return empty_plan(config)  # no base, or a last line cut short (a build killed while appending)
    try:
        header = orjson.loads(view[:first])
    except orjson.JSONDecodeError:
        return empty_plan(config)
    if not _valid_header(header):
        return empty_plan(config)
    fingerprint, package = _fingerprint(config, header["package"])
    if header["fingerprint"] != fingerprint:
        return Plan(fingerprint, package=package)  # the compiler or the configuration changed: nothing is reused
    plan = Plan(fingerprint, package=package)
    at = first + 1
    while at < len(data):
        end = data.find(b"\n", at)
        try:
            layer = orjson.loads(view[at:end])
        except orjson.JSONDecodeError:
            return Plan(fingerprint, package=package)
        if not _valid_layer(layer, journal=at > first + 1):
            return Plan(fingerprint, package=package)
        if at == first + 1:  # the base: its records are the plan's
            plan.files, plan.entries, plan.output = layer["files"], layer["entries"], layer["output"]
            plan.base_size = end + 1
        else:
            _apply(plan, layer)
            plan.journal_size += end + 1 - at
            plan.journal_lines += 1
        at = end + 1
    # appended to only when its header is current
    plan.where = where if package == header["package"] else None
    return plan


def _apply(plan: Plan, layer: dict[str, Any]) -> None:
    for name in ("files", "entries"):
        target: dict[str, Any] = getattr(plan, name)
        for key, value in layer[name].items():
            if value is None:
                target.pop(key, None)
            else:
                target[key] = value
    plan.output = layer["output"]


# ---------------------------------------------------------------------------------------------
# What promptc writes, to the last field
#
# Decoded JSON is checked before a build uses any of it: the loops below run over every record of
# a state (100,000 of each at the scale the edit loop is measured at), so the common shapes are
# checked inline, without a call per field. A sha256 is checked to be a string of 64 characters,
# not that they are hex digits: it is only ever compared with a hash made now, which one that is
# not a hash never equals (a rebuild, as for any stale hash), and the digit check (`str.strip` of
# the hex digits) cost three times the rest of a record's check. Keys are never used as paths:
# a record is looked up by the path of a file the walk found.

#: the length of a sha256 as promptc records it (64 lowercase hex digits)
_SHA_LENGTH = 64
_ENTRY_FIELDS = frozenset({"sha", "art", "stat", "deps", "includes", "warnings", "lines"})
_OUTPUT_FIELDS = frozenset({"live", "shadow", "dirs", "diff", "kept", "manifest", "manifest_sha"})
#: no offset, line or column in a source can be larger: where a warning points is at most this
_POSITION_LIMIT = MAX_SOURCE_BYTES + 1


def _is_sha(value: Any) -> bool:
    return type(value) is str and len(value) == _SHA_LENGTH


def _is_output_stat(value: Any) -> bool:
    """[size, mtime_ns, inode, ctime_ns], as `output_stat` makes it."""
    if type(value) is not list or len(value) != 4:
        return False
    size, mtime, inode, ctime = value
    return (
        type(size) is int
        and type(mtime) is int
        and type(inode) is int
        and type(ctime) is int
        and size >= 0
        and inode >= 0
    )


def _is_relative(path: Any) -> bool:
    """A `/`-separated path inside a folder: no empty, `.` or `..` part, not absolute, no NUL."""
    if type(path) is not str or not path or "\x00" in path:
        return False
    parts = path.replace(os.sep, "/").split("/") if os.sep != "/" else path.split("/")
    return not any(part in ("", ".", "..") for part in parts) and not os.path.isabs(path)


def _is_positions(values: Any, count: int) -> bool:
    if type(values) is not list or len(values) != count:
        return False
    for value in values:
        if type(value) is not int or not 0 <= value <= _POSITION_LIMIT:
            return False
    return True


def _is_strings(values: Any) -> bool:
    if type(values) is not list:
        return False
    for value in values:
        if type(value) is not str:
            return False
    return True


def _valid_header(header: Any) -> bool:
    if type(header) is not dict or header.keys() != {"format", "fingerprint", "package"}:
        return False
    package = header["package"]
    return (
        header["format"] == STATE_FORMAT
        and type(header["fingerprint"]) is str
        and type(package) is list
        and len(package) == 3
        and type(package[0]) is str
        and _is_sha(package[1])
        and type(package[2]) is int
    )


def _valid_layer(layer: Any, *, journal: bool) -> bool:
    """Whether a decoded line of the state is one promptc writes: the base (`journal` False: every
    record) or a journal line (`null` drops a record). Every record and every field is checked:
    its type, and its range where one is used as a number (sizes and inodes not negative, a
    warning's positions within a source, an index within its list) or as a path (inside the
    output folder)."""
    if type(layer) is not dict or layer.keys() != {"files", "entries", "output"}:
        return False
    files, entries, output = layer["files"], layer["entries"], layer["output"]
    if type(files) is not dict or type(entries) is not dict:
        return False
    for record in files.values():  # [size, mtime_ns, inode, ctime_ns, sha256, recorded_ns]
        if type(record) is not list or len(record) != 6:
            if record is None and journal:
                continue
            return False
        size, mtime, inode, ctime, sha, recorded = record
        if not (
            type(size) is int
            and type(mtime) is int
            and type(inode) is int
            and type(ctime) is int
            and type(recorded) is int
            and size >= 0
            and inode >= 0
            and type(sha) is str
            and len(sha) == _SHA_LENGTH
        ):
            return False
    for entry in entries.values():
        if type(entry) is not dict:
            if entry is None and journal:
                continue
            return False
        sha, art, stat = entry.get("sha"), entry.get("art"), entry.get("stat")
        if not (type(sha) is str and len(sha) == _SHA_LENGTH and type(art) is str and len(art) == _SHA_LENGTH):
            return False
        if stat is not None:
            if type(stat) is not list or len(stat) != 4:
                return False
            size, mtime, inode, ctime = stat
            if not (type(size) is int and type(mtime) is int and type(inode) is int and type(ctime) is int):
                return False
            if size < 0 or inode < 0:
                return False
        # the common entry holds those fields alone; any other is checked field by field
        if len(entry) != (2 if stat is None else 3) and not _valid_entry_fields(entry):
            return False
    return _valid_output(output)


def _valid_entry_fields(entry: dict[str, Any]) -> bool:
    if not entry.keys() <= _ENTRY_FIELDS or ("stat" in entry and entry["stat"] is None):
        return False
    deps = entry.get("deps")
    if deps is not None:
        if type(deps) is not dict:
            return False
        for value in deps.values():
            if value is not None and not _is_sha(value):
                return False
    if "includes" in entry and not _is_strings(entry["includes"]):
        return False
    if "warnings" not in entry:
        return "lines" not in entry
    return "lines" in entry and _valid_warnings(entry["warnings"], entry["lines"])


def _valid_warnings(rows: Any, lines: Any) -> bool:
    """The rows `_warnings_to_state` writes: [code, severity, message, path, span, hint, line,
    fixes], `line` an index into `lines` (the source lines the warnings echo)."""
    if type(rows) is not list or not _is_strings(lines):
        return False
    known, limit = codes.CODES, _POSITION_LIMIT
    for row in rows:
        if type(row) is not list or len(row) != 8:
            return False
        code, severity, message, path, span, hint, line, fixes = row
        if not (
            type(code) is str
            and code in known
            and severity == "warning"  # a prompt with an error has no entry
            and type(message) is str
            and type(path) is str
            and (hint is None or type(hint) is str)
            and (line is None or (type(line) is int and 0 <= line < len(lines)))
            and type(fixes) is list
        ):
            return False
        if span is not None:  # [start, end, line, col]
            if type(span) is not list or len(span) != 4:
                return False
            start, end, at, col = span
            if not (
                type(start) is int
                and type(end) is int
                and type(at) is int
                and type(col) is int
                and 0 <= start <= limit
                and 0 <= end <= limit
                and 0 <= at <= limit
                and 0 <= col <= limit
            ):
                return False
        for fix in fixes:
            if type(fix) is not list or len(fix) != 3:
                return False
            title, preferred, edits = fix
            if type(title) is not str or type(preferred) is not bool or type(edits) is not list:
                return False
            for edit in edits:  # [start, end, line, col, end_line, end_col, text]
                if (
                    type(edit) is not list
                    or len(edit) != 7
                    or not _is_positions(edit[:6], 6)
                    or type(edit[6]) is not str
                ):
                    return False
    return True


def _valid_output(output: Any) -> bool:
    """What the output folder held (`buildfolder.output_record`, completed by the driver)."""
    if type(output) is not dict or output.keys() != _OUTPUT_FIELDS:
        return False
    live, shadow, dirs, manifest = output["live"], output["shadow"], output["dirs"], output["manifest"]
    if not ((live is None or type(live) is str) and (shadow is None or type(shadow) is str)):
        return False
    if type(dirs) is not dict:
        return False
    for rel, record in dirs.items():  # [mtime_ns, inode, ctime_ns, recorded_ns]
        if not ((rel == "" or _is_relative(rel)) and type(record) is list and len(record) == 4):
            return False
        mtime, inode, ctime, recorded = record
        if not (
            type(mtime) is int and type(inode) is int and type(ctime) is int and type(recorded) is int and inode >= 0
        ):
            return False
    diff, kept = output["diff"], output["kept"]
    if type(diff) is not list or not all(_is_relative(path) and path.endswith(".json") for path in diff):
        return False
    if type(kept) is not list or not all(type(name) is str for name in kept):
        return False
    if not (manifest is None or _is_output_stat(manifest)):
        return False
    return output["manifest_sha"] is None or _is_sha(output["manifest_sha"])


# ---------------------------------------------------------------------------------------------
# Saving


@dataclass(slots=True)
class Changes:
    """What a build changed in the state, to be appended as one line of the journal."""

    files: dict[str, Any] = field(default_factory=dict)
    entries: dict[str, Any] = field(default_factory=dict)
    #: the prompts that have an entry after the build
    present: set[str] = field(default_factory=set)


def changes_of(
    plan: Plan,
    compiled: Iterable[CompiledPrompt],
    reused: Collection[str],
    tree: SourceTree,
    fresh: Iterable[str],
    out: Path,
    *,
    arts: Mapping[str, str] | None = None,
    now_ns: int,
    clock: int = 0,
) -> Changes:
    """The state's changes after a build: the source records of the files read and hashed this
    time (`fresh`, recorded as of `now_ns`) and of the files gone, the entries of the prompts
    compiled now (with the stat of the artifact file written, when its change time is older than
    `clock`: see `trusted_stat`), the entries refreshed, and those gone or failing now. The
    prompts `reused` as they were (their sources) keep their entries."""
    changes = Changes()
    stats, shas = tree.stats, tree.shas
    for rel in fresh:
        if rel in stats and rel in shas:
            changes.files[rel] = [*stats[rel], shas[rel], now_ns]
    for rel in plan.files.keys() - stats.keys():
        changes.files[rel] = None
    base = str(out)
    entries = plan.entries
    present = changes.present
    present.update(rel for rel in reused if rel in entries)
    arts = arts or {}
    for prompt in compiled:
        rel = prompt.source
        # a large build's workers sent the entry back as a manifest piece: its sha256 is in `arts`
        art = prompt.entry.sha256 if prompt.entry is not None else arts.get(prompt.name)
        if art is None or has_errors(prompt.diagnostics):
            continue
        if prompt.reused and rel in entries:
            present.add(rel)
            continue
        stat = output_stat(os.path.join(base, artifact_path(prompt.name)))
        if stat is None:
            continue
        present.add(rel)
        record: dict[str, Any] = {"sha": shas[rel], "art": art}
        proof = trusted_stat(stat, clock)
        if proof is not None:
            record["stat"] = proof
        # empty fields are left out: at 100,000 prompts each costs a container to decode
        if prompt.deps:
            record["deps"] = {dep: shas.get(dep) for dep in prompt.deps}
        if prompt.includes:
            record["includes"] = list(prompt.includes)
        if prompt.diagnostics:
            record.update(_warnings_to_state(prompt.diagnostics))
        changes.entries[rel] = record
    for rel, entry in plan.refreshed.items():
        if rel in present and rel not in changes.entries:
            changes.entries[rel] = entry
    for rel in entries.keys() - present:
        changes.entries[rel] = None
    return changes


def save_state(out: Path, plan: Plan, changes: Changes, output: dict[str, Any]) -> None:
    """Record what this build wrote, for the next one to plan with: one line appended to the
    journal, or the whole state rewritten when the journal has grown (or cannot be appended to).
    `plan` is brought up to date either way (a watch session keeps it for its next build)."""
    layer = {"files": changes.files, "entries": changes.entries, "output": output}
    _apply(plan, layer)
    plan.refreshed = {}
    path = state_path(out)
    try:
        # a line is made only when it may be appended (a first build's would be the whole state)
        line = orjson.dumps(layer) + b"\n" if plan.where is not None and plan.journal_lines < COMPACT_LINES else b""
        if (
            line
            and plan.where is not None
            and plan.journal_size + len(line) <= COMPACT_SHARE * plan.base_size
            and _append(path, plan.where, line)
        ):
            plan.journal_size += len(line)
            plan.journal_lines += 1
            plan.where = (plan.where[0], plan.where[1], plan.where[2] + len(line))
            return
        del line
        header = {"format": STATE_FORMAT, "fingerprint": plan.fingerprint, "package": plan.package}
        data = b"".join(
            (
                orjson.dumps(header),
                b"\n",
                orjson.dumps({"files": plan.files, "entries": plan.entries, "output": plan.output}),
                b"\n",
            )
        )
        # atomic (a killed build leaves the old state or the new), not fsynced: it is an
        # optimisation a crash may lose, and never written through a link
        write_file(path, data, symlinks="refuse", durable=False)
        info = os.lstat(path)
        plan.where = (info.st_dev, info.st_ino, len(data))
        plan.base_size, plan.journal_size, plan.journal_lines = len(data), 0, 0
    except OSError:
        plan.where = None  # the state is an optimisation; never fail a build over it


def _append(path: Path, where: tuple[int, int, int], line: bytes) -> bool:
    """Append `line` to the state file if it is still the very file read (or last written) by this
    process, at the size it had then: never through a link, never to a pipe."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat_module.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino, info.st_size) != where:
            return False
        written = os.write(fd, line)
        if written != len(line):  # a full disk: the torn line is dropped by the next load
            raise OSError("short write")
        return True
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------
# Reusing an artifact


def last_good(prompt: CompiledPrompt, entry: ManifestEntry | None, out: Path) -> CompiledPrompt | None:
    """For watch: a prompt that fails keeps the artifact the output folder already has."""
    if entry is None or not (out / entry.path).is_file():
        return None
    return replace(prompt, entry=entry, reused=True, data=None)


def reuse(rel: str, record: dict[str, Any], entry: ManifestEntry | None) -> CompiledPrompt:
    """The prompt of a state record and its manifest entry, as an incremental build reuses it.
    Raises ValueError for a record this promptc did not write (the fingerprint says it did)."""
    try:
        deps, includes = record.get("deps") or {}, record.get("includes") or []
        return CompiledPrompt(
            name_of(rel),
            rel,
            warnings_of(record),
            includes=tuple(includes),
            entry=entry,
            resources=tuple([dep for dep in deps if dep not in includes]) if deps else (),
            reused=True,
        )
    except (KeyError, TypeError, IndexError, AttributeError) as exc:
        raise ValueError(f"a state record of {rel} that promptc did not write") from exc


def warnings_of(record: dict[str, Any]) -> tuple[Diagnostic, ...]:
    """The warnings a state record keeps (a prompt reused with them reports them again)."""
    rows = record.get("warnings")
    return tuple([_diag_from_state(row, record["lines"]) for row in rows]) if rows else ()


def output_stat(path: Path | str) -> list[int] | None:
    """[size, mtime_ns, inode, ctime_ns] of an output file, None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def trusted_stat(stat: list[int] | None, clock: int) -> list[int] | None:
    """`stat` when it proves its file unchanged later on: its change time is older than `clock`,
    the file system's clock read (`buildfolder.output_clock`) before the stat was taken and after
    the file's bytes were known to be the recorded ones. A change made after that moment gets a
    later change time, so it shows; one made in the same tick would not, so such a stat is not
    recorded (the next build reads and hashes the file instead). None otherwise."""
    return stat if stat is not None and stat[3] < clock else None


def _warnings_to_state(diagnostics: tuple[Diagnostic, ...]) -> dict[str, Any]:
    """A prompt's warnings, with each source line they echo stored once (`lines`) and named by its
    index: a thousand warnings on one long line must not store the line a thousand times."""
    lines: dict[str, int] = {}
    rows = []
    for d in diagnostics:
        span = [d.span.start, d.span.end, d.span.line, d.span.col] if d.span else None
        line = None if d.source_line is None else lines.setdefault(d.source_line, len(lines))
        fixes = [
            [f.title, f.preferred, [[e.start, e.end, e.line, e.col, e.end_line, e.end_col, e.text] for e in f.edits]]
            for f in d.fixes
        ]
        rows.append([d.code, d.severity, d.message, d.path, span, d.hint, line, fixes])
    return {"warnings": rows, "lines": list(lines)}


def _diag_from_state(row: list[Any], lines: list[str]) -> Diagnostic:
    code, severity, message, path, span, hint, line, fixes = row
    text = None if line is None else lines[line]
    kept = tuple(Fix(title, tuple(Edit(*edit) for edit in edits), preferred) for title, preferred, edits in fixes)
    return Diagnostic(code, severity, message, path, Span(*span) if span else None, hint, text, fixes=kept)


# ---------------------------------------------------------------------------------------------
# The fingerprint


def fingerprint(config: Config, package: Any = None) -> str:
    """The fingerprint of a build with `config` (see `_fingerprint`)."""
    return _fingerprint(config, package)[0]


def _fingerprint(config: Config, cached: Any) -> tuple[str, list[Any]]:
    """The fingerprint — it changes whenever anything that can change artifact bytes changes: the
    compiler's own files (code, grammar, built-in partials, data), its version, and the config —
    and the [stat key, digest, when] of the compiler's files it was made from.
    `cached` is what the state recorded: when the files' stats are still those (and none was
    modified within the racy window before it was recorded), its digest is taken without reading
    the files again."""
    key, newest = _package_key()
    if (
        isinstance(cached, list)
        and len(cached) == 3
        and cached[0] == key
        and isinstance(cached[2], int)
        and newest < cached[2] - RACY_WINDOW_NS
    ):
        package = cached
    else:
        package = [key, _package_digest(), time.time_ns()]
    return hashlib.sha256(f"{package[1]}\0{config.fingerprint()}".encode()).hexdigest(), package


_PACKAGE = Path(__file__).resolve().parent.parent
_SUFFIXES = (".py", SOURCE_SUFFIX, RESOURCE_SUFFIX)


def _package_files() -> list[str]:
    """The compiler's own files that can change what it writes, sorted: its code, built-in
    partials and data (the grammar is read through `grammar_text`)."""
    found = []
    stack = [str(_PACKAGE)]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        stack.append(entry.path)
                elif entry.name.endswith(_SUFFIXES):
                    found.append(entry.path)
    return sorted(found)


@cache
def _package_key() -> tuple[str, int]:
    """A digest of the stats of the compiler's files (and the grammar's), and the newest mtime
    among them: read once per process."""
    digest = hashlib.sha256(VERSION.encode())
    newest = 0
    for path in [*_package_files(), _grammar_path()]:
        try:
            info = os.stat(path)
        except OSError:
            digest.update(f"{path}\0-\n".encode())
            continue
        newest = max(newest, info.st_mtime_ns)
        digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ino}\n".encode())
    return digest.hexdigest(), newest


def _grammar_path() -> str:
    shipped = _PACKAGE / "grammar" / "prompt.lark"
    return str(shipped if shipped.exists() else _PACKAGE.parent / "grammar" / "prompt.lark")


@cache
def _package_digest() -> str:
    # Read once per process: a watch loop rebuilds many times, the compiler's files do not change.
    digest = hashlib.sha256(VERSION.encode())
    digest.update(parse.grammar_text().encode())
    for path in _package_files():
        with open(path, "rb") as handle:
            digest.update(os.path.relpath(path, _PACKAGE).replace(os.sep, "/").encode() + b"\0" + handle.read())
    return digest.hexdigest()
