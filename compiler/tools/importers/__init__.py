"""Bring your prompts: Dotprompt, Prompty and Jinja2 sources → `.prompt` sources.

    from promptc.tools.importers import import_tree, convert, audit

    result = import_tree("prompty", "prompts/", "prompts_src/")      # writes, like `promptc import`
    result = import_tree("dotprompt", "prompts/", "prompts_src/", check=True)   # and compares renders
    report = audit("jinja", "templates/")                             # the cache analysis, nothing written

Each foreign file is either converted — written as a `.prompt` file that compiles and, with
`check`, renders the same messages as the original engine on sample inputs — or refused with a
located diagnostic (E96x) and not written. Nothing is ever half converted: a construct promptc
cannot express with the same meaning stops the file.

The original engines (dotpromptz, prompty, jinja2) are imported only by `check`. The conversion
itself is pure: `convert` takes the files' bytes and returns the converted files in memory, and
`audit` compiles them in memory through the same compile the build uses (`compile.compile_source`
over a `context.SourceTree`), so its prefix analysis is the build's. See docs/import.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from pathlib import Path

from ...facts import codes
from ...facts.config import Config
from ...facts.diagnostics import Diagnostic, has_errors, make, ordered
from ...facts.language import SOURCE_SUFFIX
from ...facts.records import dataclass
from ...runtime.atomic import TooLarge, read_file
from ...runtime.confine import refusal, source_folder_refusal
from ...syntax.source import MAX_SOURCE_BYTES
from .audit import AuditReport, audit
from .check import run_checks
from .common import Converted, owned
from .convert import CACHE_CODES, KINDS, _kind, compile_converted, convert
from .folder import Folder, convert_folder, read_folder
from .write import write_atomic

__all__ = [
    "KINDS",
    "ImportResult",
    "ImportedFile",
    "AuditReport",
    "import_tree",
    "convert",
    "read_folder",
    "Folder",
    "audit",
    "compile_converted",
]


@dataclass(frozen=True, slots=True)
class ImportedFile:
    """One foreign file and what became of it."""

    source: str  # path under the imported folder
    target: str  # `.prompt` path under the output folder
    status: str  # "written" | "unchanged" | "refused" | "checked" (converted, not written)
    extra: tuple[str, ...] = ()  # side files (schemas, tools) under the output folder
    partial: bool = False


@dataclass(frozen=True, slots=True)
class ImportResult:
    files: tuple[ImportedFile, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    #: `.prompt` text and side files by output path, as converted (also for `write=False`)
    outputs: Mapping[str, str] = field(default_factory=dict)
    #: --check: how many input sets were rendered and compared, per prompt
    checked: Mapping[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)

    @property
    def imported(self) -> int:
        return sum(1 for f in self.files if f.status != "refused")

    @property
    def refused(self) -> int:
        return sum(1 for f in self.files if f.status == "refused")


# ---------------------------------------------------------------------------------------------
# import_tree: convert, compile, check, write


def import_tree(
    kind: str,
    src: Path | str,
    out: Path | str,
    *,
    write: bool = True,
    force: bool = False,
    check: bool = False,
    inputs: Path | str | None = None,
    config: Config | None = None,
    role: str = "system",
) -> ImportResult:
    """`promptc import KIND SRC -o OUT`. Writes each converted file atomically; a file at a target
    path that promptc import did not write (or that was edited since) is refused (E965) unless
    `force`. With `check`, renders every converted prompt with the original engine and with promptc
    on sample inputs and reports differences (E967); a prompt that differs is not written."""
    kind = _kind(kind)
    config = config or Config()
    folder, converted = convert_folder(kind, src, role=role, samples=check)
    diagnostics = list(folder.diagnostics)
    _tree, compiled = compile_converted(converted, config, root_display=Path(out).as_posix())
    checked: dict[str, int] = {}
    if check:
        found = run_checks(kind, Path(src), converted, compiled, inputs, checked)
        diagnostics += found
        if any(d.code == codes.IMPORT_ENGINE_MISSING for d in found):
            write = False  # --check was asked for and cannot run: nothing unchecked is written
    # a partial whose includer was refused is still written; a prompt refused by check is not
    results: list[ImportedFile] = []
    outputs: dict[str, str] = {}
    for c in converted:
        diagnostics += c.diagnostics
        if not c.refused:
            outputs[c.target] = c.text
            outputs.update(c.extra)
    for c in converted:
        for d in compiled[c.target].diagnostics if c.target in compiled else ():
            if d.code not in CACHE_CODES and d.severity == "warning":
                diagnostics.append(d)
    if write:
        # OUT is the user's (`-o`) or the source folder [tool.promptc] names, which must lie inside
        # the project; no file is written through a link (`promptc.runtime.confine`)
        setting = config.setting("src", out)
        refused = source_folder_refusal(out, "src", project=config.project, setting=setting)
        if refused is not None:
            diagnostics.append(refused)
            results += [ImportedFile(c.source, c.target, "refused", (), c.partial) for c in converted]
        else:
            option = "src" if setting is not None else "import -o"
            diagnostics += _write(converted, Path(out), force, results, config.project, option)
    else:
        results += [
            ImportedFile(c.source, c.target, "refused" if c.refused else "checked", tuple(c.extra), c.partial)
            for c in converted
        ]
    return ImportResult(tuple(results), tuple(ordered(diagnostics)), outputs, checked)


def _write(
    converted: list[Converted], out: Path, force: bool, results: list[ImportedFile], project: str | None, option: str
) -> list[Diagnostic]:
    diagnostics: list[Diagnostic] = []
    for c in converted:
        if c.refused:
            results.append(ImportedFile(c.source, c.target, "refused", (), c.partial))
            continue
        wanted = {c.target: c.text, **c.extra}
        blocked = None
        seen: dict[str, bytes | None] = {}
        for rel, text in wanted.items():
            path = out / rel
            try:
                # what stands there, read as the build reads a source (never more than it would
                # compile): a larger file is no import's output
                seen[rel] = read_file(path, limit=MAX_SOURCE_BYTES, follow=False) if path.is_file() else None
            except TooLarge:
                seen[rel] = None
                if not force:
                    blocked = rel
                    break
            except OSError:
                seen[rel] = None
            if path.is_symlink() or (path.exists() and not path.is_file()):
                blocked = rel  # a link or a folder where the file goes: never written through
                break
            if seen[rel] is None or force:
                continue
            try:
                current = seen[rel].decode("utf-8")  # type: ignore[union-attr]
            except UnicodeDecodeError:
                current = None
            if current == text:
                continue
            mine = current is not None and (
                owned(current) if rel.endswith(SOURCE_SUFFIX) else _side_file_owned(out, c.target)
            )
            if not mine:
                blocked = rel
                break
        if blocked is not None:
            c.refused = True
            diagnostics.append(
                make(
                    codes.IMPORT_WOULD_OVERWRITE,
                    f"`{(out / blocked).as_posix()}` exists and was not written by promptc import (or was edited since)"
                    if not (out / blocked).is_symlink()
                    else f"`{(out / blocked).as_posix()}` is a symlink; promptc import never writes through one",
                    None,
                    "move it away, or pass --force to replace it",
                    path=(out / blocked).as_posix(),
                )
            )
            results.append(ImportedFile(c.source, c.target, "refused", (), c.partial))
            continue
        linked = next((d for rel in wanted if (d := refusal(out / rel, option, project=project)) is not None), None)
        if linked is not None:  # a folder on the way is a link (E915)
            c.refused = True
            diagnostics.append(linked)
            results.append(ImportedFile(c.source, c.target, "refused", (), c.partial))
            continue
        changed = False
        try:
            for rel, text in wanted.items():
                changed |= write_atomic(out / rel, text, seen.get(rel))
        except OSError as exc:
            c.refused = True
            diagnostics.append(
                make(
                    codes.IMPORT_WRITE_FAILED,
                    f"cannot write `{exc.filename or out}`: {exc.strerror or exc}",
                    None,
                    "check the folder's permissions, and that no file stands where a folder is needed",
                    path=str(exc.filename or out),
                )
            )
            results.append(ImportedFile(c.source, c.target, "refused", (), c.partial))
            continue
        results.append(
            ImportedFile(c.source, c.target, "written" if changed else "unchanged", tuple(c.extra), c.partial)
        )
    return diagnostics


def _side_file_owned(out: Path, target: str) -> bool:
    """A schema or tool file beside `target` is import's when the `.prompt` that names it is."""
    try:
        return owned(read_file(out / target, limit=MAX_SOURCE_BYTES, follow=False).decode("utf-8"))
    except (OSError, UnicodeDecodeError):
        return False
