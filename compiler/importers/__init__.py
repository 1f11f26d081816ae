"""Bring your prompts: Dotprompt, Prompty and Jinja2 sources → `.prompt` sources.

    from promptc.importers import import_tree, convert, audit

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

import os
import re
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import codes
from ..config import Config
from ..diagnostics import Diagnostic, file_span, has_errors, make, ordered
from ..source import decode
from .common import Converted, owned, refusal_diagnostic, warning
from .ir import Refusal

KINDS = ("dotprompt", "prompty", "jinja")
#: what a folder of each kind holds
SUFFIXES = {
    "dotprompt": (".prompt",),
    "prompty": (".prompty",),
    "jinja": (".j2", ".jinja", ".jinja2"),
}
#: warnings of the compile that are about caching, which `audit` reports (not `import`)
CACHE_CODES = frozenset({"W705", "W710"})
#: at most this many files are imported from one folder (each is also bounded by the source limit)
MAX_FILES = 20_000

__all__ = [
    "KINDS",
    "ImportResult",
    "ImportedFile",
    "AuditReport",
    "import_tree",
    "convert",
    "read_folder",
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


def _kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown source kind {kind!r}: expected one of {', '.join(KINDS)}")
    return kind


def read_folder(kind: str, src: Path | str) -> tuple[dict[str, bytes], list[Diagnostic]]:
    """The files of `kind` under `src` (a folder, or one file), by `/`-separated path."""
    kind = _kind(kind)
    root = Path(src)
    files: dict[str, bytes] = {}
    if root.is_file():
        return {root.name: root.read_bytes()}, []
    if not root.is_dir():
        return {}, [
            make(
                codes.SOURCE_NOT_FOUND,
                f"`{root}` is neither a folder nor a file",
                None,
                "name the folder that holds the prompts",
                path=str(root),
            )
        ]
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__"))
        for name in sorted(names):
            if name.endswith(SUFFIXES[kind]):
                path = Path(folder) / name
                if path.is_symlink() and not path.resolve().is_relative_to(root.resolve()):
                    continue
                rel = path.relative_to(root).as_posix()
                files[rel] = path.read_bytes()
                if len(files) > MAX_FILES:
                    return files, [
                        make(
                            codes.FILE_TOO_LARGE,
                            f"more than {MAX_FILES:,} files to import",
                            None,
                            "import one folder at a time",
                            path=str(root),
                        )
                    ]
    return files, []


def _target(kind: str, rel: str, partial: bool) -> str:
    stem = rel
    for suffix in SUFFIXES[kind]:
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    folder, _, name = stem.rpartition("/")
    if partial and not name.startswith("_"):
        name = "_" + name
    return (folder + "/" if folder else "") + name + ".prompt"


def convert(kind: str, files: Mapping[str, bytes], *, root_display: str = "", role: str = "system") -> list[Converted]:
    """Convert every file of `files` (path under the imported folder → bytes). Pure: nothing is
    read or written. `role` is the message role of a plain Jinja template."""
    kind = _kind(kind)
    display = (lambda rel: f"{root_display.rstrip('/')}/{rel}") if root_display else (lambda rel: rel)
    sources = {}
    results: list[Converted] = []
    for rel in sorted(files):
        if not rel.isprintable() or "///" in rel:
            # the path goes into the marker line and into `/// include:` lines: it must stay one line
            results.append(
                Converted(
                    rel,
                    _target(kind, rel, False),
                    diagnostics=[
                        make(
                            codes.IMPORT_WRITE_FAILED,
                            f"the file name {rel!r} holds a control character or `///`, which a `.prompt` line cannot hold",
                            None,
                            "rename the file",
                            path=display(rel.encode("unicode_escape").decode("ascii")),
                        )
                    ],
                    refused=True,
                )
            )
            continue
        src, diagnostics = decode(display(rel), files[rel])
        if src is None:
            results.append(Converted(rel, _target(kind, rel, False), diagnostics=list(diagnostics), refused=True))
            continue
        sources[rel] = src
    if kind == "prompty":
        from . import prompty

        for rel, src in sources.items():
            results.append(prompty.convert(src, rel, _target(kind, rel, False), _jinja_includes(kind, rel, files)))
    elif kind == "jinja":
        results += _convert_jinja(sources, files, role)
    else:
        from . import dotprompt

        results += dotprompt.convert_all(sources, lambda rel, partial: _target(kind, rel, partial))
    seen: dict[str, Converted] = {}
    for c in sorted(results, key=lambda c: c.source):
        first = seen.setdefault(c.target, c)
        if first is not c and not c.refused and c.foreign is not None:
            c.refused = True
            c.diagnostics.append(
                make(
                    codes.IMPORT_WOULD_OVERWRITE,
                    f"`{first.source}` and `{c.source}` would both be written to `{c.target}`",
                    file_span(),
                    "rename one of them",
                    source=c.foreign,
                )
            )
    return sorted(results, key=lambda c: c.source)


def _jinja_includes(kind: str, includer: str, files: Mapping[str, bytes]):
    """`{% include "name" %}` → the `/// include:` path of its partial, relative to the includer's
    output (Jinja names are relative to the loader's root, promptc's to the including file)."""

    def resolve(name: str) -> str | None:
        name = name.lstrip("./") if name.startswith("./") else name
        if name not in files:
            return None
        target = _target(kind, name, True)
        here = posixpath.dirname(_target(kind, includer, False)) or "."
        return posixpath.relpath(target, here)

    return resolve


def _convert_jinja(sources: dict, files: Mapping[str, bytes], role: str) -> list[Converted]:
    from . import jinja
    from .common import assemble, input_decl
    from .ir import Role, emit_marked

    included: set[str] = set()
    parsed: dict[str, Any] = {}
    out: list[Converted] = []
    for rel, src in sources.items():
        try:
            parsed[rel] = jinja.parse(src.text, jinja.Options(resolve_include=_jinja_includes("jinja", rel, files)))
        except Refusal as refusal:
            parsed[rel] = refusal
    for rel, template in parsed.items():
        if isinstance(template, jinja.Template):
            for target in template.includes:
                here = posixpath.dirname(_target("jinja", rel, False))
                included.add(posixpath.normpath(posixpath.join(here, target)))
    for rel, src in sources.items():
        partial = _target("jinja", rel, True) in included
        converted = Converted(rel, _target("jinja", rel, partial), foreign=src, partial=partial)
        template = parsed[rel]
        if isinstance(template, Refusal):
            converted.refused = True
            converted.diagnostics.append(refusal_diagnostic(template, src))
            out.append(converted)
            continue
        nodes = template.nodes if partial else [Role(role), *template.nodes]
        names = list(template.inputs)
        pending, seen = [(rel, template)], {rel}
        while pending:  # the inputs of the partials it includes (and theirs) are its inputs too
            at, current = pending.pop()
            for target in current.includes:
                here = posixpath.dirname(_target("jinja", at, False))
                wanted = posixpath.normpath(posixpath.join(here, target))
                other = next((r for r in parsed if _target("jinja", r, True) == wanted), None)
                if other is None or other in seen or not isinstance(parsed[other], jinja.Template):
                    continue
                seen.add(other)
                names += [n for n in parsed[other].inputs if n not in names]
                pending.append((other, parsed[other]))
        try:
            body, marks = emit_marked(nodes)
            header = []
            if not partial and names:
                stem = converted.target.rsplit("/", 1)[-1].removesuffix(".prompt")
                header.append("/// input: " + ", ".join(input_decl(n, None, stem, converted.extra, "") for n in names))
            converted.text = assemble("jinja", rel, header, body, partial=partial, marks=marks, into=converted)
            converted.inputs = names
        except Refusal as refusal:
            converted.refused = True
            converted.diagnostics.append(refusal_diagnostic(refusal, src))
        out.append(converted)
    return out


# ---------------------------------------------------------------------------------------------
# Compiling what was converted (in memory), and refusing what does not compile


_PARAM_LINE = re.compile(r"///\s*param:\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*=")


def _param_field(c: Converted, text: bytes, d) -> tuple[int, int] | None:
    """The foreign header field behind the `/// param:` line a diagnostic points at, if any."""
    if d.span is None or not (d.path == c.target or d.path.endswith("/" + c.target)):
        return None
    lines = text.decode("utf-8").split("\n")
    if not 1 <= d.span.line <= len(lines):
        return None
    m = _PARAM_LINE.match(lines[d.span.line - 1])
    return c.param_origin.get(m.group(1)) if m else None


def compile_converted(converted: list[Converted], config: Config | None = None, *, root_display: str = ""):
    """Compile the converted files in memory, as `promptc build` of the output folder would.
    Returns (the source tree, {target: CompiledPrompt}) and marks a file that does not compile as
    refused (E971, at the foreign file; the compiler's own diagnostic is quoted)."""
    from ..compile import compile_source
    from ..context import SourceTree
    from ..frontend import PartialLoader

    config = config or Config()
    files: dict[str, bytes] = {}
    for c in converted:
        if not c.refused:
            files[c.target] = c.text.encode("utf-8")
            files.update({path: text.encode("utf-8") for path, text in c.extra.items()})
    tree = SourceTree(files=files, root_display=root_display)
    partials = PartialLoader(config, tree)
    compiled = {}
    for c in converted:
        if c.refused or c.partial:
            continue
        result = compile_source(c.target, files[c.target], config, tree, partials)
        errors = [d for d in result.diagnostics if d.severity == "error"]
        if errors and c.foreign is not None:
            first = errors[0]
            c.refused = True
            at = _param_field(c, files[c.target], first)
            if at is not None:  # a header value promptc refuses (E730 …): at the field it came from
                c.diagnostics.append(
                    warning(
                        codes.IMPORT_UNSUPPORTED_FIELD,
                        f"the value is refused: {first.code}: {first.message}",
                        c.foreign,
                        *at,
                        first.hint or f"see `promptc explain {first.code}`",
                    )
                )
                continue
            c.diagnostics.append(
                make(
                    codes.IMPORT_NOT_COMPILED,
                    f"the imported prompt does not compile: {first.code}: {first.message}",
                    file_span(),
                    first.hint or f"see `promptc explain {first.code}`",
                    source=c.foreign,
                )
            )
            continue
        compiled[c.target] = result
    return tree, compiled


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
    files, diagnostics = read_folder(kind, src)
    shown = Path(src).as_posix() if Path(src).is_dir() else Path(src).parent.as_posix()
    converted = convert(kind, files, root_display="" if shown == "." else shown, role=role)
    _tree, compiled = compile_converted(converted, config, root_display=Path(out).as_posix())
    checked: dict[str, int] = {}
    if check:
        from .check import run_checks

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
        for d in compiled.get(c.target).diagnostics if c.target in compiled else ():
            if d.code not in CACHE_CODES and d.severity == "warning":
                diagnostics.append(d)
    if write:
        diagnostics += _write(converted, Path(out), force, results)
    else:
        results += [
            ImportedFile(c.source, c.target, "refused" if c.refused else "checked", tuple(c.extra), c.partial)
            for c in converted
        ]
    return ImportResult(tuple(results), tuple(ordered(diagnostics)), outputs, checked)


def _write(converted: list[Converted], out: Path, force: bool, results: list[ImportedFile]) -> list[Diagnostic]:
    from .write import write_atomic

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
                seen[rel] = path.read_bytes() if path.is_file() and not path.is_symlink() else None
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
                owned(current) if rel.endswith(".prompt") else _side_file_owned(out, c.target)
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
        return owned((out / target).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False


from .audit import AuditReport, audit  # noqa: E402  (uses the names above)
