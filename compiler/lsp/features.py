"""What the language server answers, computed from the compiler's own results.

`FileView` is one open file as the compiler saw it: its normalised text, its directives as the
directive pass collects them (includes, sections, tool and schema references, with the spans of
their values), and, for a prompt, the compiled document and artifact. Every answer (hover,
definition, references, completion, code actions, the cache lens) is read off those; nothing here
parses prompt text a second time.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import field
from importlib import resources
from pathlib import Path

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from ..compile.pipeline import HEADER_PASSES, Compilation, PartialLoader, run
from ..driver.sources import is_prompt
from ..facts.diagnostics import Diagnostic, SourceText, Span
from ..facts.language import BOUNDARIES, PARTIAL_PREFIX, RESOURCE_SUFFIX, ROLES, SOURCE_SUFFIX, STD_PREFIX, TARGETS
from ..facts.records import dataclass
from ..passes.context import Context, SourceTree
from ..passes.directives import DIRECTIVES, Directives
from ..passes.includes import resolve as resolve_include
from ..passes.resources import resolve as resolve_resource
from ..runtime.inputtypes import describe
from ..runtime.model import Artifact
from ..runtime.model import Section as ArtifactSection
from ..runtime.requestmodel import of_artifact
from ..std import STD_DISPLAY, std_partials
from ..syntax.nodes import Directive, Document, Header, Include, ResourceRef, SectionMarker
from ..syntax.nodes import Section as SyntaxSection
from .workspace import Project

SOURCE_NAME = "promptc"


@dataclass
class FileView:
    """One file of the workspace as the compiler sees it."""

    project: Project
    tree: SourceTree
    rel: str
    display: str
    src: SourceText
    codec: PositionCodec
    #: the partials the view's compile read (and its code actions resolve through)
    loader: PartialLoader
    #: the prompt's compile (None for a partial)
    analysis: Compilation | None = None
    header: Header = field(default_factory=Header)
    directives: tuple[Directive, ...] = ()
    includes: tuple[Include, ...] = ()
    resources: tuple[ResourceRef, ...] = ()
    markers: tuple[SectionMarker, ...] = ()

    @property
    def document(self) -> Document | None:
        return self.analysis.document if self.analysis is not None else None

    @property
    def lines(self) -> list[str]:
        return self.src.text.split("\n")

    # -- positions ----------------------------------------------------------------------------

    def position(self, line: int, col: int) -> types.Position:
        """A 1-based line and code-point column → an LSP position in the client's units."""
        return self.codec.position_to_client_units(self.lines, types.Position(line=line - 1, character=col - 1))

    def range_of(self, span: Span) -> types.Range:
        end = self.src.span(span.end)
        return types.Range(start=self.position(span.line, span.col), end=self.position(end.line, end.col))

    def offset(self, position: types.Position) -> int:
        lines = self.lines
        server = self.codec.position_from_client_units(
            lines, types.Position(line=position.line, character=position.character)
        )
        if server.line >= len(self.src.line_starts):
            return len(self.src.text)
        return min(self.src.line_starts[server.line] + server.character, len(self.src.text))

    def mine(self, span: Span | None) -> bool:
        return span is not None and span.src is not None and span.src.path == self.display

    def context(self) -> Context:
        return Context(self.project.config, self.src, self.tree, self.loader)


def view_of(project: Project, rel: str, codec: PositionCodec, tree: SourceTree | None = None) -> FileView | None:
    """The compiler's view of the source-relative file `rel` (a prompt or a partial): a prompt's
    own compile, with its first two passes over what it wrote (its includes, sections and
    resource references, before the includes are spliced); a partial's stages, as the build's
    partial loader runs them."""
    tree = tree or project.tree()
    display = project.display(rel)
    loader = PartialLoader(project.config, tree)
    if is_prompt(rel):
        analysis: Compilation | None = project.analyse(rel, tree)
        assert analysis is not None
        src, items = analysis.source, analysis.items
        if src is None:
            return None
        doc = run(Document(src, rel, items), Context(project.config, src, tree, loader), HEADER_PASSES)
        kept = doc.items
        header = analysis.document.header if analysis.document is not None else doc.header
    else:
        if rel not in tree.files:
            return None
        analysis = None
        partial = loader.compilation(rel)
        src, items = partial.source, partial.items
        if src is None or partial.document is None:
            return None
        kept, header = partial.document.items, partial.document.header
    return FileView(
        project,
        tree,
        rel,
        display,
        src,
        codec,
        loader,
        analysis,
        header,
        tuple(item for item in items if isinstance(item, Directive)),
        tuple(item for item in kept if isinstance(item, Include)),
        tuple(item for item in kept if isinstance(item, ResourceRef)),
        tuple(item for item in kept if isinstance(item, SectionMarker)),
    )


# ---------------------------------------------------------------------------------------------
# Diagnostics


def lsp_diagnostic(uri: str, d: Diagnostic, lines: list[str], codec: PositionCodec) -> types.Diagnostic:
    """A compiler diagnostic as the LSP's: the same code, message and range as `promptc check`
    prints (`path:line:col` to `end_line:end_col`). The hint, and the prompts that reported a
    partial's diagnostic, are related information at the same place; its fixes are in `data`,
    where the code actions read them."""
    end_line, end_col = d.end
    start = codec.position_to_client_units(lines, types.Position(line=d.line - 1, character=d.col - 1))
    end = codec.position_to_client_units(lines, types.Position(line=end_line - 1, character=end_col - 1))
    where = types.Location(uri=uri, range=types.Range(start=start, end=end))
    related = []
    if d.hint:
        related.append(types.DiagnosticRelatedInformation(location=where, message=f"hint: {d.hint}"))
    if d.included_by:
        names = ", ".join(d.included_by)
        related.append(types.DiagnosticRelatedInformation(location=where, message=f"reported while compiling {names}"))
    return types.Diagnostic(
        range=types.Range(start=start, end=end),
        message=d.message,
        severity=types.DiagnosticSeverity.Error if d.severity == "error" else types.DiagnosticSeverity.Warning,
        code=d.code,
        source=SOURCE_NAME,
        related_information=related or None,
        data={"hint": d.hint, "included_by": list(d.included_by), "fixes": [fix.to_json() for fix in d.fixes]},
    )


# ---------------------------------------------------------------------------------------------
# What is under the cursor


@dataclass(frozen=True, slots=True)
class Target:
    kind: str  # "input" | "section" | "include" | "tools" | "output" | "schema"
    name: str
    span: Span | None = None
    #: for paths: the resolved source-relative path or `std/NAME`, and the problem when it does not resolve
    resolved: str | None = None
    problem: str | None = None


def _references(view: FileView) -> list[tuple[str, Span]]:
    """Every use of an input or helper written in this file, in source order, without repeats."""
    doc = view.document
    seen: set[tuple[str, int]] = set()
    out = []
    if doc is not None:
        for message in doc.messages:
            for section in message.sections:
                for name, span in section.references:
                    if view.mine(span) and (name, span.start) not in seen:
                        seen.add((name, span.start))
                        out.append((name, span))
    return sorted(out, key=lambda item: item[1].start)


def _input_names(view: FileView) -> set[str]:
    doc = view.document
    names = set(view.header.declared_inputs or ())
    if doc is not None:
        names |= set(doc.inputs)
    return names


def target_at(view: FileView, position: types.Position) -> Target | None:
    offset = view.offset(position)
    line = view.src.span(offset).line
    inputs = _input_names(view)
    for name, span in _references(view):
        if span.start <= offset < max(span.end, span.start + 1) and name in inputs:
            return Target("input", name, span)
    for name, span in view.header.declared_input_spans:
        if view.mine(span) or span.src is None:
            if span.start <= offset <= span.end:
                return Target("input", name, span)
    ctx = view.context()
    for inc in view.includes:
        if inc.span.line == line:
            key, _code, problem = resolve_include(ctx, view.rel, inc.path)
            return Target("include", inc.path, inc.span, key, problem)
    for ref in view.resources:
        if ref.span.line == line:
            chosen = next(((p, s) for p, s in ref.paths if s.start <= offset <= s.end), ref.paths[0])
            key, problem = resolve_resource(ctx, view.rel, chosen[0])
            # an `@schemas/x.json` input type is a reference of kind "input": a path, not an input
            kind = "schema" if ref.kind == "input" else ref.kind
            return Target(kind, chosen[0], chosen[1], key, problem)
    for d in view.directives:
        if d.key == "input" and d.span.line == line:
            for match in re.finditer(r"@([^\s,|\]\[]+)", d.value):
                start = d.value_span.start + match.start()
                if start <= offset <= start + len(match.group(0)):
                    key, problem = resolve_resource(ctx, view.rel, match.group(1))
                    return Target(
                        "schema", match.group(1), view.src.span(start, start + len(match.group(0))), key, problem
                    )
    for marker in view.markers:
        if marker.span.line == line:
            return Target("section", marker.name, marker.span)
    return None


def path_of(view: FileView, key: str) -> Path | None:
    """The file a resolved include, tool or schema key names on disk."""
    if key.startswith(STD_PREFIX):
        return Path(str(resources.files("promptc.std").joinpath(f"{key[len(STD_PREFIX) :]}{SOURCE_SUFFIX}")))
    return view.project.src / key


# ---------------------------------------------------------------------------------------------
# Hover


def _sections_of(doc: Document, artifact: Artifact | None) -> list[tuple[int, SyntaxSection, ArtifactSection | None]]:
    """(message index, document section, artifact section or None) in document order."""
    out: list[tuple[int, SyntaxSection, ArtifactSection | None]] = []
    for mi, message in enumerate(doc.messages):
        flat: list[ArtifactSection] = []
        if artifact is not None and mi < len(artifact.messages):
            flat = [s for block in artifact.messages[mi].blocks for s in block.sections]
        for si, section in enumerate(message.sections):
            out.append((mi, section, flat[si] if si < len(flat) and flat[si].name == section.name else None))
    return out


def hover(view: FileView, position: types.Position) -> types.Hover | None:
    target = target_at(view, position)
    if target is None:
        return None
    if target.kind == "input":
        text = _hover_input(view, target.name)
    elif target.kind == "section":
        text = _hover_section(view, target)
    else:
        text = _hover_path(view, target)
    if text is None:
        return None
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
        range=view.range_of(target.span) if target.span is not None else None,
    )


def _hover_input(view: FileView, name: str) -> str:
    header = view.header
    doc = view.document
    artifact = view.analysis.compiled.artifact if view.analysis is not None else None
    declared = header.declared_inputs is not None and name in header.declared_inputs
    spans = dict(header.declared_input_spans)
    if declared:
        where = f" (line {spans[name].line})" if name in spans else ""
        how = f"declared in `/// input:`{where}"
        if doc is not None and name not in doc.inputs and name not in doc.helpers:
            how += ", never used"
    else:
        how = "inferred from its uses (no `/// input:` declares it)"
    schema = None
    if artifact is not None:
        schema = artifact.input_schema.get("properties", {}).get(name)
    if schema is None:
        schema = dict(header.input_types).get(name)
    kind = f"`{describe(schema)}`" if schema else "any (no type declared)"
    lines = [f"**input `{name}`**: {how}", "", f"type: {kind}"]
    if doc is not None:
        users = [
            f"- section `{section.name}` ({section.boundary}) in message {mi + 1} ({doc.messages[mi].role})"
            for mi, section, _ in _sections_of(doc, artifact)
            if name in section.inputs
        ]
        if users:
            lines += ["", "used by:", *users]
    return "\n".join(lines)


def _hover_section(view: FileView, target: Target) -> str:
    doc = view.document
    if doc is None:
        marker = next((m for m in view.markers if m.name == target.name), None)
        boundary = marker.boundary or "inferred where it is included" if marker else "?"
        return f"**section `{target.name}`** (in a partial): boundary {boundary}, target {marker.target if marker else '?'}"
    artifact = view.analysis.compiled.artifact if view.analysis is not None else None
    for mi, section, emitted in _sections_of(doc, artifact):
        if section.name != target.name or not view.mine(section.span):
            continue
        declared = "declared" if section.declared_boundary else "inferred"
        lines = [
            f"**section `{section.name}`** in message {mi + 1} ({doc.messages[mi].role})",
            "",
            f"- boundary: **{section.boundary}** ({declared})",
            f"- target: {section.target}",
        ]
        if section.inputs:
            lines.append(f"- inputs: {', '.join(f'`{n}`' for n in section.inputs)}")
        if emitted is not None:
            tokenizer = artifact.tokenizer.name if artifact is not None else ""
            lines.append(f"- {emitted.chars} chars, {emitted.tokens} tokens ({tokenizer})")
        else:
            lines.append("- chars and tokens: not metered (the prompt has errors)")
        return "\n".join(lines)
    return f"**section `{target.name}`**"


def _hover_path(view: FileView, target: Target) -> str:
    what = {"include": "partial", "tools": "tool definitions", "output": "output schema", "schema": "input schema"}
    if target.resolved is None:
        return f"**{what[target.kind]} `{target.name}`**: {target.problem or 'not found'}"
    if target.resolved.startswith(STD_PREFIX):
        shown = f"{STD_DISPLAY}/{target.resolved[len(STD_PREFIX) :]}{SOURCE_SUFFIX} (shipped with promptc)"
    else:
        shown = view.project.display(target.resolved)
    lines = [f"**{what[target.kind]} `{target.name}`** → `{shown}`"]
    doc = view.document
    if target.kind == "include" and doc is not None:
        names = [s.name for m in doc.messages for s in m.sections if _key_of(view, s.source.path) == target.resolved]
        if names:
            lines.append(f"\nsections: {', '.join(f'`{n}`' for n in names)}")
    if target.kind == "tools" and doc is not None and doc.tools:
        listed = ", ".join(f"`{tool['name']}`" for tool in doc.tools)
        lines.append(f"\ntools of the prompt: {listed}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Definition and references


def definition(view: FileView, position: types.Position) -> list[types.Location]:
    target = target_at(view, position)
    if target is None or target.resolved is None or target.kind in ("input", "section"):
        return []
    path = path_of(view, target.resolved)
    if path is None:
        return []
    start = types.Position(line=0, character=0)
    return [types.Location(uri=path.as_uri(), range=types.Range(start=start, end=start))]


def references(view: FileView, uri: str, position: types.Position, include_declaration: bool) -> list[types.Location]:
    target = target_at(view, position)
    if target is None or target.kind != "input":
        return []
    spans = [span for name, span in _references(view) if name == target.name]
    if include_declaration:
        spans += [span for name, span in view.header.declared_input_spans if name == target.name]
    spans.sort(key=lambda s: s.start)
    return [types.Location(uri=uri, range=view.range_of(span)) for span in spans]


# ---------------------------------------------------------------------------------------------
# Completion

_DIRECTIVE_KEY = re.compile(r"^[ \t]*///[ \t]*([a-z_]*)$")
_SECTION_VALUE = re.compile(r"^[ \t]*///[ \t]*section[ \t]*:[ \t]*(\S+)((?:[ \t]+\S+)*)[ \t]+(\S*)$")
_INCLUDE_VALUE = re.compile(r"^[ \t]*///[ \t]*include[ \t]*:[ \t]*(\S*)$")
_RESOURCE_VALUE = re.compile(r"^[ \t]*///[ \t]*(tools|output)[ \t]*:(?:.*,)?[ \t]*(\S*)$")
_SEPARATOR_START = re.compile(r"^(-{3,})[ \t]*([A-Za-z]*)$")
_PLACEHOLDER_OPEN = re.compile(r"(?<!\\)\$\{([A-Za-z0-9_]*)$")


def completion(
    view: FileView, position: types.Position, directives: Directives = DIRECTIVES
) -> list[types.CompletionItem]:
    """What may be typed at `position`: an input in `${`, a reserved directive key after `///`
    (`directives`' own), a section's words, a partial, a tool or schema file, a role."""
    offset = view.offset(position)
    at = view.src.span(offset)
    line_start = view.src.line_starts[at.line - 1]
    before = view.src.text[line_start:offset]
    kind = types.CompletionItemKind

    def items(
        words: Iterable[str],
        item_kind: types.CompletionItemKind,
        detail: str,
        insert: Callable[[str], str] | None = None,
    ) -> list[types.CompletionItem]:
        return [
            types.CompletionItem(label=w, kind=item_kind, detail=detail, insert_text=insert(w) if insert else None)
            for w in words
        ]

    match = _PLACEHOLDER_OPEN.search(before)
    if match:
        names = view.header.declared_inputs
        if names is None:
            names = view.document.inputs if view.document is not None else ()
        return items(sorted(names), kind.Variable, "input")
    match = _DIRECTIVE_KEY.match(before)
    if match:
        return items(directives.reserved_keys, kind.Keyword, "directive", lambda w: f"{w}: ")
    match = _SECTION_VALUE.match(before)
    if match:
        written = match.group(2).split()
        if any(w in TARGETS for w in written):
            return []
        words = [*([] if any(w in BOUNDARIES for w in written) else BOUNDARIES), *TARGETS]
        return items(words, kind.EnumMember, "section boundary or target")
    match = _INCLUDE_VALUE.match(before)
    if match:
        base = posixpath.dirname(view.rel)
        partials = [
            posixpath.relpath(rel, base or ".").removesuffix(SOURCE_SUFFIX)
            for rel in view.tree.files
            if rel.endswith(SOURCE_SUFFIX) and posixpath.basename(rel).startswith(PARTIAL_PREFIX) and rel != view.rel
        ]
        return [
            *items(sorted(partials), kind.File, "partial"),
            *items(std_partials(), kind.Module, "built-in partial"),
        ]
    match = _RESOURCE_VALUE.match(before)
    if match:
        base = posixpath.dirname(view.rel)
        files = [posixpath.relpath(rel, base or ".") for rel in view.tree.files if rel.endswith(RESOURCE_SUFFIX)]
        return items(sorted(files), kind.File, "tool definitions" if match.group(1) == "tools" else "JSON Schema")
    match = _SEPARATOR_START.match(before)
    if match:
        line_range = types.Range(start=view.position(at.line, 1), end=position)
        return [
            types.CompletionItem(
                label=role,
                kind=kind.Keyword,
                detail="message separator",
                filter_text=before + role,
                text_edit=types.TextEdit(range=line_range, new_text=f"----- {role} -----"),
            )
            for role in ROLES
        ]
    return []


# ---------------------------------------------------------------------------------------------
# Code actions


def code_actions(view: FileView, uri: str, diagnostics: list[types.Diagnostic]) -> list[types.CodeAction]:
    """The quick fixes of the diagnostics in range: each one's structured fixes (`Diagnostic.fixes`,
    carried in the LSP diagnostic's `data`), their edits in the client's units. Nothing is read
    from the text of a hint."""
    actions: list[types.CodeAction] = []
    for diagnostic in diagnostics:
        if diagnostic.source != SOURCE_NAME or not isinstance(diagnostic.data, dict):
            continue
        for fix in diagnostic.data.get("fixes") or ():
            edits = [
                types.TextEdit(
                    range=types.Range(
                        start=view.position(edit["line"], edit["col"]),
                        end=view.position(edit["end_line"], edit["end_col"]),
                    ),
                    new_text=edit["text"],
                )
                for edit in fix["edits"]
            ]
            actions.append(_action(fix["title"], uri, edits, diagnostic, bool(fix["preferred"])))
    return actions


def _action(
    title: str, uri: str, edits: list[types.TextEdit], diagnostic: types.Diagnostic, preferred: bool
) -> types.CodeAction:
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        is_preferred=preferred,
        edit=types.WorkspaceEdit(changes={uri: edits}),
    )


# ---------------------------------------------------------------------------------------------
# The cache made visible


@dataclass(frozen=True, slots=True)
class PrefixEndInfo:
    line: int  # 1-based, in this file
    column: int
    reason: str
    tokens: int
    shared_by: list[str]

    @property
    def title(self) -> str:
        n = len(self.shared_by)
        return (
            f"cache prefix ends here: {self.tokens} tokens, shared by {n} prompt{'s' if n != 1 else ''} — {self.reason}"
        )


def prefix_end(view: FileView) -> PrefixEndInfo | None:
    """Where this prompt's cache-stable prefix ends, why, and who shares it. The artifact's
    `cache.prefix_end` gives the position and reason when it records them (`source`, `line`,
    `column`, `reason`); otherwise they come from the compiled document: the first dynamic element
    after the prefix's last block, located in this file (or at the include that brought it in)."""
    if view.analysis is None or view.analysis.compiled.artifact is None or view.document is None:
        return None
    artifact = view.analysis.compiled.artifact
    cache = artifact.cache
    shared = view.project.sharing(cache.prefix_sha256, view.tree) if cache.prefix_sha256 else []
    end = cache.prefix_end
    line = getattr(end, "line", None)
    if line is not None:
        source = getattr(end, "source", None)
        column = getattr(end, "column", None) or 1
        reason = getattr(end, "reason", None) or "the first dynamic element"
        if source not in (None, view.rel):
            line, column = _include_line(view, source) or (1, 1)
        return PrefixEndInfo(line, column, reason, cache.prefix_tokens, shared)
    reason, span = _first_dynamic(view)
    if span is None:
        last = len(view.src.line_starts)
        return PrefixEndInfo(last, 1, reason, cache.prefix_tokens, shared)
    return PrefixEndInfo(span.line, span.col, reason, cache.prefix_tokens, shared)


def _first_dynamic(view: FileView) -> tuple[str, Span | None]:
    doc = view.document
    artifact = view.analysis.compiled.artifact if view.analysis is not None else None
    if doc is None or artifact is None:
        return "the prompt does not compile", None
    stop = of_artifact(artifact).prefix().stop  # where the request model's walk stops
    if stop is None or stop.message is None or stop.block is None:
        return "the whole request is stable", None
    mi, bi = stop.message, stop.block
    first = sum(len(block.sections) for block in artifact.messages[mi].blocks[:bi])
    section = doc.messages[mi].sections[first]
    if section.inputs:
        name = section.inputs[0]
        use = next((span for used, span in section.uses if used in section.inputs), None)
        name = next((used for used, _ in section.uses if used in section.inputs), name)
        reason = f"next: section `{section.name}` is dynamic, it uses input `{name}`"
    else:
        use = None
        reason = f"next: section `{section.name}` is declared dynamic"
    for span in (use, section.span):
        if view.mine(span):
            return reason, span
    located = _include_line(view, _key_of(view, section.source.path))
    if located is not None:
        return reason, view.src.span(view.src.line_starts[located[0] - 1])
    return reason, None


def _key_of(view: FileView, path: str) -> str:
    if path.startswith(STD_DISPLAY + "/"):
        return STD_PREFIX + path[len(STD_DISPLAY) + 1 :].removesuffix(SOURCE_SUFFIX)
    prefix = view.project.display("")
    return path[len(prefix) :] if prefix and path.startswith(prefix) else path


def _include_line(view: FileView, key: str) -> tuple[int, int] | None:
    """The line of this file's `/// include:` that brings in `key` (directly or through partials)."""
    loader = view.loader
    ctx = view.context()
    for inc in view.includes:
        start, _, _ = resolve_include(ctx, view.rel, inc.path)
        if start is None:
            continue
        seen = {start}
        stack = [start]
        while stack:
            current = stack.pop()
            if current == key:
                return inc.span.line, 1
            partial = loader.load(current)
            for item in partial.items:
                if isinstance(item, Include):
                    found, _, _ = resolve_include(ctx, current, item.path)
                    if found is not None and found not in seen:
                        seen.add(found)
                        stack.append(found)
    return None


def code_lens(view: FileView) -> list[types.CodeLens]:
    info = prefix_end(view)
    if info is None:
        return []
    position = view.position(info.line, 1)
    return [
        types.CodeLens(
            range=types.Range(start=position, end=position),
            command=types.Command(title=info.title, command=""),
            data={"shared_by": info.shared_by},
        )
    ]
