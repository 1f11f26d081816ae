"""Reading foreign sources: the one reader of the files `promptc import` and `promptc audit` convert,
and of `import --check --inputs FILE`.

The build's walk of its source folder (`driver.sources`) is the model, and its rules hold here:

- **Regular files only, capped before reading.** Every file is read by `runtime.atomic.read_file`,
  which opens without blocking and refuses a named pipe, a socket or a device (so import never
  waits on one) and a file over `MAX_SOURCE_BYTES` (8 MiB, E105, the build's limit) before a byte
  of it is read. A folder is read up to `MAX_FILES` files and `MAX_FOLDER_BYTES` bytes in all.
- **Links stay inside the folder.** A symlink is followed while it resolves inside the imported
  folder. A foreign file that is a link leading outside is refused unread (E975), as the build
  never compiles such a prompt (E802); a linked folder leading outside, or back into a folder
  already walked (a loop), is not walked (W976).
- **Hidden entries are skipped** (`.git`, an editor's `.#name.j2` lock file, which is a dangling
  link), and so are `node_modules` and `__pycache__` folders.
- **Every `OSError` is a diagnostic** naming the file (E975 unless the caller names its own code),
  never a traceback; the walk keeps an explicit stack, so a deep tree is no recursion.

For `--check`, it also reads the one other kind of file a foreign prompt names: Prompty's
`sample: ${file:chat.json}` (`read_samples`), by the same rules.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

from ...facts import codes
from ...facts.codes import Code
from ...facts.diagnostics import Diagnostic, file_span, make
from ...facts.records import dataclass
from ...runtime.atomic import TooLarge, read_file
from ...syntax.jsonfile import read_json
from ...syntax.source import MAX_SOURCE_BYTES
from .common import Converted, warning
from .convert import SUFFIXES, _kind, _target, convert
from .yamlheader import YamlError
from .yamlheader import parse as parse_yaml

#: at most this many files of the kind are taken from one folder, and at most this many bytes of
#: them in all (each file is also capped, at `MAX_SOURCE_BYTES`): the memory an import holds
MAX_FILES = 20_000
MAX_FOLDER_BYTES = 64 << 20
#: folders never walked (besides hidden ones): what a JavaScript or Python project keeps beside its prompts
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__"})


@dataclass(frozen=True, slots=True)
class Folder:
    """What `read_folder` found under a folder (or one file)."""

    #: the bytes of each file of the kind, by `/`-separated path under the folder
    files: Mapping[str, bytes] = field(default_factory=dict)
    #: the files of the kind that could not be read, each refused with its diagnostic
    unread: tuple[Converted, ...] = ()
    #: what concerns the folder rather than one file: a folder not walked (W976) or not listed
    #: (E975), the walk stopped at `MAX_FILES` or `MAX_FOLDER_BYTES` (E105)
    diagnostics: tuple[Diagnostic, ...] = ()
    #: how the folder is shown in diagnostics ("" for the current folder)
    root_display: str = ""


def read_foreign(
    path: str | os.PathLike[str], shown: str, *, follow: bool = True, code: Code | None = None
) -> bytes | Diagnostic:
    """The bytes of one foreign file, or the diagnostic (at `shown`, with a hint) that says why
    they were not read: E105 for a file over `MAX_SOURCE_BYTES`, refused before a byte
    is read; E975 for anything else (`code`, when given, is the code of either). `follow=False`
    refuses a symlink (the walk resolves links itself and reads the real path)."""
    try:
        return read_file(path, limit=MAX_SOURCE_BYTES, follow=follow)
    except TooLarge as exc:
        found = codes.FILE_TOO_LARGE
        message = f"source file is {exc.size:,} bytes; the limit is {MAX_SOURCE_BYTES:,}: not read"
        hint = "split it into smaller files (a partial, an include)"
    except OSError as exc:
        found = codes.IMPORT_UNREADABLE
        message, hint = _why(exc)
    return make(code or found, message, file_span(), hint, path=shown)


def _why(exc: OSError) -> tuple[str, str]:
    """(message, hint) for a file `read_file` could not read."""
    if isinstance(exc, FileNotFoundError):
        if exc.filename and os.path.islink(exc.filename):
            return "cannot read file: a dangling symlink", "restore what it points to, or remove the link"
        return "cannot read file: no such file (or it was deleted while import ran)", "check the path"
    if isinstance(exc, PermissionError):
        return "cannot read file: permission denied", "check the file's permissions"
    # read_file's EINVAL: opened without blocking and found not to be a regular file; ENXIO and
    # ENODEV: a socket or a device without a driver, which cannot even be opened
    if exc.errno in (errno.EINVAL, errno.ENXIO, errno.ENODEV):
        return (
            "not a regular file (a named pipe, a socket or a device); not read",
            "foreign prompt sources are regular files: remove or rename it",
        )
    if exc.errno == errno.ELOOP:
        return "cannot read file: a symlink (a loop of links, or a link that appeared while import ran)", (
            "replace the link with the file"
        )
    return f"cannot read file: {exc.strerror or exc}", "check the file"


def _printable(rel: str) -> str:
    """A path as a diagnostic may show it: a name holding a control character (or bytes that are
    not UTF-8) is shown escaped, never written raw to the terminal."""
    return rel if rel.isprintable() else rel.encode("unicode_escape", "backslashreplace").decode("ascii")


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def read_folder(kind: str, src: Path | str) -> Folder:
    """The files of `kind` under `src` (a folder, or one file), read by the rules above."""
    kind = _kind(kind)
    root = Path(src)
    if not os.path.isdir(root):
        parent = root.parent.as_posix()
        display = "" if parent == "." else parent
        shown = f"{display}/{root.name}" if display else root.name
        if not os.path.lexists(root):
            problem = make(
                codes.SOURCE_NOT_FOUND,
                f"`{root}` is neither a folder nor a file",
                None,
                "name the folder that holds the prompts",
                path=str(root),
            )
            return Folder(diagnostics=(problem,), root_display=display)
        data = read_foreign(root, shown)  # named by the user: a link is followed
        if isinstance(data, Diagnostic):
            return Folder(unread=(_refused(kind, root.name, data),), root_display=display)
        return Folder({root.name: data}, root_display=display)
    display = "" if root.as_posix() == "." else root.as_posix()
    walk = _Walk(kind, root, display)
    walk.run()
    return Folder(walk.files, tuple(walk.unread), tuple(walk.diagnostics), display)


def convert_folder(
    kind: str, src: Path | str, *, role: str = "system", samples: bool = False
) -> tuple[Folder, list[Converted]]:
    """`read_folder`, then `convert` what was read: every file of the kind under `src`, converted
    or refused (the files that could not be read among the refused), in path order. With
    `samples` (--check), the sample files the prompts name are read too (`read_samples`)."""
    folder = read_folder(kind, src)
    converted = convert(kind, folder.files, root_display=folder.root_display, role=role)
    if samples:
        read_samples(converted, src, folder.root_display)
    return folder, sorted([*converted, *folder.unread], key=lambda c: c.source)


def read_samples(converted: list[Converted], src: Path | str, display: str = "") -> None:
    """Prompty's `sample: ${file:chat.json}` (`Converted.sample_file`), read for --check: the file
    beside the prompt, by the rules above (a regular file of at most 8 MiB; through a link only
    while it stays inside the imported folder), parsed by its suffix as Prompty parses it (`.json`,
    `.yaml`, `.yml`) with promptc's bounded readers. Its values become the prompt's sample (the
    header's own values first). A file that is not read, or holds no mapping of input values, is a
    warning (W972) at the reference: the sample never reaches the model, and --check makes its
    samples from the input types instead."""
    root = Path(src) if os.path.isdir(src) else Path(src).parent
    root_real = os.path.realpath(root)
    for c in converted:
        if c.sample_file is None or c.refused or c.foreign is None:
            continue
        rel, line, column = c.sample_file
        shown = f"{display}/{_printable(rel)}" if display else _printable(rel)
        values, problem = None, None
        if not _inside(os.path.realpath(root / rel), root_real):
            problem = "outside the imported folder"
        else:
            data = read_foreign(root / rel, shown)
            if isinstance(data, Diagnostic):
                problem = data.message
            else:
                values, problem = _sample_values(rel, shown, data)
        if values is not None:
            first = c.samples[0] if c.samples else {}
            c.samples[:1] = [{**values, **first}]
            continue
        c.diagnostics.append(
            warning(
                codes.IMPORT_FIELD_DROPPED,
                f"`sample` is not imported: `{shown}`: {problem}",
                c.foreign,
                line,
                column,
                "--check makes its samples from the input types; give others with --inputs FILE",
            )
        )


def _sample_values(rel: str, shown: str, data: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(the input values a sample file holds, or None and why not)."""
    if rel.endswith(".json"):
        _src, value, found = read_json(shown, data, deep_hint="give shallower values")
        errors = [d for d in found if d.severity == "error"]
        if errors:
            where = f" (line {errors[0].line}, column {errors[0].col})" if errors[0].span is not None else ""
            return None, f"{errors[0].message}{where}"
    elif rel.endswith((".yaml", ".yml")):
        try:
            value = parse_yaml(data.decode("utf-8")).data
        except UnicodeDecodeError:
            return None, "not UTF-8 text"
        except YamlError as exc:
            return None, f"{exc.message} (line {exc.line}, column {exc.column})"
    else:
        return None, "Prompty reads a file of this kind as text, not as a mapping of input values"
    if not isinstance(value, dict):
        return None, "not a mapping of input values"
    return value, None


def _refused(kind: str, rel: str, problem: Diagnostic) -> Converted:
    return Converted(rel, _target(kind, rel, False), diagnostics=[problem], refused=True)


class _Walk:
    """One walk of a foreign folder, depth first in name order, with an explicit stack."""

    def __init__(self, kind: str, root: Path, display: str) -> None:
        self.kind = kind
        self.suffixes = SUFFIXES[kind]
        self.root = root
        self.display = display
        self.root_real = os.path.realpath(root)
        self.files: dict[str, bytes] = {}
        self.unread: list[Converted] = []
        self.diagnostics: list[Diagnostic] = []
        self.count = 0
        self.total = 0

    def shown(self, rel: str) -> str:
        rel = _printable(rel)
        return f"{self.display}/{rel}" if self.display else rel

    def run(self) -> None:
        seen: set[str] = set()
        stack: list[tuple[str, str, str]] = [(str(self.root), "", self.root_real)]
        while stack:
            folder, rel_folder, real = stack.pop()
            if real in seen:
                self.not_walked(rel_folder, "a symlink back into a folder already read (a loop); not walked")
                continue
            seen.add(real)
            try:
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except OSError as exc:
                where = self.shown(rel_folder.rstrip("/")) if rel_folder else self.root.as_posix()
                self.diagnostics.append(
                    make(
                        codes.IMPORT_UNREADABLE,
                        f"cannot read folder: {exc.strerror or exc}",
                        file_span(),
                        "check the folder's permissions",
                        path=where,
                    )
                )
                continue
            below: list[tuple[str, str, str]] = []
            for entry in entries:
                name = entry.name
                if name.startswith("."):
                    continue
                rel = rel_folder + name
                try:
                    link, is_dir = entry.is_symlink(), entry.is_dir()
                except OSError:
                    link, is_dir = False, False
                if is_dir:
                    if name in SKIPPED_FOLDERS:
                        continue
                    target = os.path.realpath(entry.path) if link else os.path.join(real, name)
                    if link and not _inside(target, self.root_real):
                        self.not_walked(rel, "a symlink to a folder outside the imported folder; not walked")
                        continue
                    below.append((entry.path, rel + "/", target))
                elif name.endswith(self.suffixes) and not self.file(entry.path, rel, link):
                    return
            stack.extend(reversed(below))

    def not_walked(self, rel: str, message: str) -> None:
        self.diagnostics.append(
            make(
                codes.IMPORT_LINK_NOT_FOLLOWED,
                message,
                file_span(),
                "copy the files into the folder, or import the other folder on its own",
                path=self.shown(rel.rstrip("/")),
            )
        )

    def file(self, path: str, rel: str, link: bool) -> bool:
        """Read one file of the kind; False when the walk must stop (a limit was reached)."""
        self.count += 1
        if self.count > MAX_FILES:
            self.stop(f"more than {MAX_FILES:,} files to import")
            return False
        if link and not _inside(os.path.realpath(path), self.root_real):
            self.unread.append(
                _refused(
                    self.kind,
                    rel,
                    make(
                        codes.IMPORT_UNREADABLE,
                        "a symlink leading outside the imported folder; not read",
                        file_span(),
                        "copy the file into the folder instead of linking it",
                        path=self.shown(rel),
                    ),
                )
            )
            return True
        # a file listed as no link is opened as none: one swapped for a link since is refused
        data = read_foreign(path, self.shown(rel), follow=link)
        if isinstance(data, Diagnostic):
            self.unread.append(_refused(self.kind, rel, data))
            return True
        self.total += len(data)
        if self.total > MAX_FOLDER_BYTES:
            self.stop(f"more than {MAX_FOLDER_BYTES:,} bytes of files to import (at `{_printable(rel)}`)")
            return False
        self.files[rel] = data
        return True

    def stop(self, message: str) -> None:
        self.diagnostics.append(
            make(codes.FILE_TOO_LARGE, message, None, "import one folder at a time", path=self.root.as_posix())
        )


__all__ = ["MAX_FILES", "MAX_FOLDER_BYTES", "Folder", "convert_folder", "read_folder", "read_foreign", "read_samples"]
