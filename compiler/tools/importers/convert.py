"""Converting foreign files (Dotprompt, Prompty, Jinja2) into `.prompt` sources, in memory, and
compiling what was converted through the build's own compile: what `import_tree` writes and
`audit` analyses. Pure: the files' bytes in, `Converted` files and diagnostics out.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from typing import Any

from ...compile import compile_source
from ...compile.pipeline import PartialLoader
from ...compile.prompt import CompiledPrompt
from ...facts import codes
from ...facts.config import Config
from ...facts.diagnostics import Diagnostic, SourceText, file_span, make
from ...passes.context import SourceTree
from ...syntax.source import decode
from .common import Converted, assemble, input_decl, refusal_diagnostic, warning
from .dotprompt import convert_all as convert_dotprompt
from .ir import Refusal, Role, Text, emit_marked
from .jinja import Options as JinjaOptions
from .jinja import Shape, promptflow_chat
from .jinja import Template as JinjaTemplate
from .jinja import parse as parse_jinja
from .prompty import convert as convert_prompty

KINDS = ("dotprompt", "prompty", "jinja")
#: what a folder of each kind holds
SUFFIXES = {
    "dotprompt": (".prompt",),
    "prompty": (".prompty",),
    "jinja": (".j2", ".jinja", ".jinja2"),
}
#: warnings of the compile that are about caching, which `audit` reports (not `import`)
CACHE_CODES = frozenset({codes.PREFIX_BELOW_MINIMUM, codes.PREFIX_CUT_SHORT})


def _kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown source kind {kind!r}: expected one of {', '.join(KINDS)}")
    return kind


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
        for rel, src in sources.items():
            results.append(convert_prompty(src, rel, _target(kind, rel, False), _jinja_includes(kind, rel, files)))
    elif kind == "jinja":
        results += _convert_jinja(sources, files, role)
    else:
        results += convert_dotprompt(sources, lambda rel, partial: _target(kind, rel, partial))
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


def _jinja_includes(kind: str, includer: str, files: Mapping[str, bytes]) -> Callable[[str], str | None]:
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


def _convert_jinja(sources: dict[str, SourceText], files: Mapping[str, bytes], role: str) -> list[Converted]:
    """Plain Jinja templates: each one message (`role`), unless it is a Prompt flow chat template
    (`jinja.promptflow_chat`: it opens with a role line), whose role lines start its messages. The
    inputs are typed by their use (`jinja.Shape`), the includes' inputs with the includer's."""
    included: set[str] = set()
    parsed: dict[str, Any] = {}
    chat: set[str] = {rel for rel, src in sources.items() if promptflow_chat(src.text)}
    out: list[Converted] = []
    for rel, src in sources.items():
        options = JinjaOptions(
            roles="promptflow" if rel in chat else None, resolve_include=_jinja_includes("jinja", rel, files)
        )
        try:
            parsed[rel] = parse_jinja(src.text, options)
        except Refusal as refusal:
            parsed[rel] = refusal
    for rel, template in parsed.items():
        if isinstance(template, JinjaTemplate):
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
        nodes = template.nodes
        first = next((n for n in nodes if not (isinstance(n, Text) and not n.text.strip())), None)
        if not partial and not isinstance(first, Role):
            nodes = [Role(role), *nodes]
        names = list(template.inputs)
        shapes = {name: Shape() for name in names}
        for name, shape in template.shapes.items():
            shapes[name].merge(shape)
        pending, seen = [(rel, template)], {rel}
        while pending:  # the inputs of the partials it includes (and theirs) are its inputs too
            at, current = pending.pop()
            for target in current.includes:
                here = posixpath.dirname(_target("jinja", at, False))
                wanted = posixpath.normpath(posixpath.join(here, target))
                other = next((r for r in parsed if _target("jinja", r, True) == wanted), None)
                if other is None or other in seen or not isinstance(parsed[other], JinjaTemplate):
                    continue
                seen.add(other)
                names += [n for n in parsed[other].inputs if n not in names]
                for name, shape in parsed[other].shapes.items():
                    shapes.setdefault(name, Shape()).merge(shape)
                pending.append((other, parsed[other]))
        try:
            body, marks = emit_marked(nodes)
            header = []
            converted.shapes = {name: shapes[name].schema() for name in names if name in shapes}
            if not partial and names:
                stem = converted.target.rsplit("/", 1)[-1].removesuffix(".prompt")
                header.append(
                    "/// input: "
                    + ", ".join(input_decl(n, converted.shapes.get(n), stem, converted.extra, "") for n in names)
                )
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


def _param_field(c: Converted, text: bytes, d: Diagnostic) -> tuple[int, int] | None:
    """The foreign header field behind the `/// param:` line a diagnostic points at, if any."""
    if d.span is None or not (d.path == c.target or d.path.endswith("/" + c.target)):
        return None
    lines = text.decode("utf-8").split("\n")
    if not 1 <= d.span.line <= len(lines):
        return None
    m = _PARAM_LINE.match(lines[d.span.line - 1])
    return c.param_origin.get(m.group(1)) if m else None


def compile_converted(
    converted: list[Converted], config: Config | None = None, *, root_display: str = ""
) -> tuple[SourceTree, dict[str, CompiledPrompt]]:
    """Compile the converted files in memory, as `promptc build` of the output folder would.
    Returns (the source tree, {target: CompiledPrompt}) and marks a file that does not compile as
    refused (E971, at the foreign file; the compiler's own diagnostic is quoted)."""
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
