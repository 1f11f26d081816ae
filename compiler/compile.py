"""Compile one source: bytes → (artifact, diagnostics). Pure: no file system, no printing."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any

from . import codes
from .config import Config
from .context import Context, SourceTree
from .diagnostics import Diagnostic, SourceText, file_span, has_errors, make, ordered
from .emit import build_artifact, dumps
from .frontend import PartialLoader, read_source
from .language import SOURCE_SUFFIX
from .meter import TokenizerError, meter
from .model import Artifact
from .nodes import Document, Item
from .pipeline import run
from .request import check, settle


@dataclass(frozen=True, slots=True)
class CompiledPrompt:
    name: str
    source: str  # path under the source folder
    diagnostics: tuple[Diagnostic, ...]
    artifact: Artifact | None = None
    data: bytes | None = None  # the artifact's JSON bytes, exactly as written
    includes: tuple[str, ...] = field(default=())
    #: what the manifest records about this artifact (`Artifact.summary()`)
    summary: dict[str, Any] | None = None
    #: sha256 of `data`; also set when an incremental build reused the file already in the output
    artifact_sha256: str | None = None
    #: True when the artifact was not compiled in this build but taken from the output folder
    reused: bool = False
    #: where the build's spool holds the artifact's bytes, when it does not keep them in memory
    spooled: str | None = None
    #: tool and schema files the prompt read (source-relative): like includes, editing one rebuilds it
    resources: tuple[str, ...] = field(default=())

    @property
    def deps(self) -> tuple[str, ...]:
        """Every file besides its own source that the artifact depends on."""
        return (*self.includes, *self.resources)

    @property
    def ok(self) -> bool:
        return self.artifact_sha256 is not None and not has_errors(self.diagnostics)

    def load_artifact(self) -> Artifact | None:
        """The artifact, decoding `data` when the build kept only the bytes."""
        if self.artifact is not None or self.data is None:
            return self.artifact
        import orjson

        return Artifact.from_json(orjson.loads(self.data))


def name_of(rel: str) -> str:
    return rel.removesuffix(SOURCE_SUFFIX)


def tokenizer_diagnostic(config: Config, path: str, exc: Exception) -> Diagnostic:
    return make(
        codes.TOKENIZER_UNAVAILABLE,
        str(exc),
        file_span(),
        "set `tokenizer` in [tool.promptc] to cl100k_base or o200k_base",
        path=path,
    )


def _allow(diagnostics: tuple[Diagnostic, ...], src, doc: Document, ctx: Context) -> tuple[Diagnostic, ...]:
    """Drop the warnings a `/// promptc: allow CODE` comment allows on their line (promptc.suppress)."""
    from .suppress import apply

    files = {src.path: src.text}
    for key in doc.includes:
        partial = ctx.partials.load(key)
        if partial.source is not None:
            files[partial.source.path] = partial.source.text
    if not any("promptc" in text for text in files.values()):
        return diagnostics
    return tuple(apply(diagnostics, files))


@dataclass(frozen=True, slots=True)
class SourceAnalysis:
    """A compiled prompt together with what the compiler made on the way: the normalised source,
    the parser's items (directives with their value spans) and the document after every pass.
    Editors (`promptc lsp`) read positions from it, so they never parse a second time."""

    compiled: CompiledPrompt
    source: SourceText | None = None
    items: tuple[Item, ...] = ()
    document: Document | None = None


def compile_source(
    rel: str,
    data: bytes,
    config: Config,
    tree: SourceTree | None = None,
    partials: PartialLoader | None = None,
) -> CompiledPrompt:
    """Compile the prompt `rel` of `tree` (its bytes are `data`). `partials` is the build's loader,
    shared by every prompt of the build; a fresh one is made when it is not given."""
    return analyse_source(rel, data, config, tree, partials).compiled


def analyse_source(
    rel: str,
    data: bytes,
    config: Config,
    tree: SourceTree | None = None,
    partials: PartialLoader | None = None,
) -> SourceAnalysis:
    """`compile_source`, keeping the source, the parsed items and the compiled document."""
    tree = tree or SourceTree(files={rel: data})
    display = tree.display(rel)
    name = name_of(rel)
    src, items, diagnostics = read_source(display, data)
    if src is None:
        return SourceAnalysis(CompiledPrompt(name, rel, tuple(diagnostics)))
    ctx = Context(config, src, tree, partials)
    ctx.extend(diagnostics)  # passes can see what the parser already reported
    doc = run(Document(src, name, items), ctx)
    request, request_diagnostics = settle(doc, config)
    all_diagnostics = (*ctx.diagnostics, *request_diagnostics)
    failed = CompiledPrompt(name, rel, all_diagnostics, includes=doc.includes, resources=doc.resources)
    if has_errors(all_diagnostics):
        return SourceAnalysis(failed, src, items, doc)
    try:
        root = display[: len(display) - len(rel)] if display.endswith(rel) else ""
        artifact = build_artifact(doc, rel, data, meter(request.tokenizer), request, root)
    except TokenizerError as exc:
        failed = replace(failed, diagnostics=(*all_diagnostics, tokenizer_diagnostic(config, display, exc)))
        return SourceAnalysis(failed, src, items, doc)
    from .prefix import lint, locate

    cut = locate(doc, rel, root, artifact)  # where the request model's walk stops
    linted = lint(artifact, doc, cut, meter(request.tokenizer), config.stable_run_tokens)
    from .budget import check as check_budget  # `/// budget:` and the model's context window
    from .params import check as check_params  # `/// param:` values typed by the provider profile

    budgeted = check_budget(artifact, doc, meter(request.tokenizer).tokens)
    checked = (*check(artifact, doc, request), *check_params(doc, request), *linted, *budgeted)
    all_diagnostics = _allow((*all_diagnostics, *checked), src, doc, ctx)
    if config.allow:  # `allow` in [tool.promptc], `--allow` on the command line
        all_diagnostics = tuple(d for d in all_diagnostics if not (d.severity == "warning" and d.code in config.allow))
    if has_errors(all_diagnostics):
        return SourceAnalysis(replace(failed, diagnostics=all_diagnostics), src, items, doc)
    encoded = dumps(artifact)
    compiled = CompiledPrompt(
        name,
        rel,
        all_diagnostics,
        artifact,
        encoded,
        doc.includes,
        artifact.summary(),
        hashlib.sha256(encoded).hexdigest(),
        resources=doc.resources,
    )
    return SourceAnalysis(compiled, src, items, doc)


def compile_text(
    text: str,
    name: str = "prompt",
    defines: dict[str, str] | None = None,
    config: Config | None = None,
    partials: dict[str, str] | None = None,
) -> CompiledPrompt:
    """Compile a prompt held in a string. `partials` maps source-relative paths to their text."""
    config = (config or Config()).with_defines(defines or {})
    rel = f"{name}{SOURCE_SUFFIX}"
    files = {rel: text.encode("utf-8")}
    files.update({path: body.encode("utf-8") for path, body in (partials or {}).items()})
    compiled = compile_source(rel, files[rel], config, SourceTree(files=files))
    # the order the CLI prints them in: by file, line and column
    return replace(compiled, diagnostics=tuple(ordered(compiled.diagnostics)))


__all__ = ["CompiledPrompt", "SourceAnalysis", "analyse_source", "compile_source", "compile_text"]
