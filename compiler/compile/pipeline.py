"""The compile of one prompt, declared: its stages in order, as `PASSES` declares the passes.

A compile is `STAGES`, and each stage is a function of the compilation's typed state
(`Compilation`), in the spirit of sqlglot's `RULES` and the named stages of mkdocs' `build()`:

- `FRONT`, the front end: `read` (the source's bytes from the tree), `decode` (bytes → normalised
  text) and `parse` (text → items);
- `passes`, which runs `PASSES` (comments, directives, includes, resources, roles, placeholders,
  inference, sections) over the document;
- `BACK`, the back stages: `settle` (model, provider profile, tokenizer, TTL), `build_artifact`
  (the artifact, with the request model's cache), `locate` (where the prefix ends), `check` (what the
  provider profile says about the request), `params` (each `/// param:` value against the
  profile's typed parameters), `lint` (W710), `budget` (`/// budget:` and the
  model's context window), `allow` (`/// promptc: allow` comments and the project's `allow`) and
  `encode` (the artifact's bytes).

A stage that cannot go on stops the compile (`Compilation.stop`): a file that cannot be read or
decoded, errors before the artifact would be made, or before its bytes would be. A partial is
compiled by `PARTIAL_STAGES` (the front end and the first two passes) once per build, by the
`PartialLoader` that the entry hands every compile it starts.

`compile_prompt` is the one entry: the build driver, `diff` and its divergence, the language
server, `fmt`, `import`/`audit` and the library's `compile_text` all compile through it. Pure: no
file system (the source tree is in memory), no printing.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import field

from ..backend import emit, suppress
from ..backend.budget import check as check_budget
from ..backend.emit import Request
from ..backend.meter import Meter, TokenizerError, meter
from ..backend.params import check as check_params
from ..backend.prefix import Cut
from ..backend.prefix import lint as lint_prefix
from ..backend.prefix import locate as locate_prefix
from ..backend.request import check as check_request
from ..backend.request import settle as settle_request
from ..facts import codes
from ..facts.config import Config
from ..facts.diagnostics import Diagnostic, DiagnosticSink, SourceText, file_span, has_errors, make
from ..facts.language import STD_PREFIX
from ..facts.records import dataclass
from ..passes.comments import strip_comments
from ..passes.context import Context, SourceTree
from ..passes.directives import collect, collect_directives
from ..passes.includes import expand_includes
from ..passes.inference import infer_inputs
from ..passes.placeholders import bind_placeholders
from ..passes.resources import load_resources
from ..passes.roles import split_roles
from ..passes.sections import partition_sections
from ..runtime.buildfolder import artifact_path
from ..runtime.model import Artifact, ManifestEntry
from ..std import std_bytes, std_display, std_partials
from ..syntax.jsonfile import read_json
from ..syntax.nodes import Document, Header, Item, evolve
from ..syntax.parse import parse as parse_text
from ..syntax.source import decode as decode_bytes
from ..syntax.source import vanished
from .prompt import CompiledPrompt, name_of

# ---------------------------------------------------------------------------------------------
# The passes

Pass = Callable[[Document, Context], Document]

#: The passes that read what a file itself declares (its comments and directives), before anything
#: is spliced into it: a partial's stages run their partial form, editors their prompt form.
HEADER_PASSES: tuple[Pass, ...] = (strip_comments, collect_directives)

PASSES: tuple[Pass, ...] = (
    *HEADER_PASSES,
    expand_includes,
    load_resources,
    split_roles,
    bind_placeholders,
    infer_inputs,
    partition_sections,
)


def run(doc: Document, ctx: Context, passes: tuple[Pass, ...] = PASSES) -> Document:
    for compiler_pass in passes:
        doc = compiler_pass(doc, ctx)
    return doc


# ---------------------------------------------------------------------------------------------
# What a compile gives the build


# ---------------------------------------------------------------------------------------------
# The state a compile carries through its stages


@dataclass(slots=True, eq=False)
class Compilation:
    """One compile in progress: what it started from, and what each stage has made so far. The
    stages fill it in order; `compiled` is what the build keeps of it."""

    rel: str  # source-relative path (`std/NAME` for a built-in partial)
    config: Config
    tree: SourceTree
    partials: PartialLoader
    data: bytes | None = None
    #: how diagnostics name the file (`prompts_src/a.prompt`, `<std>/env.prompt`)
    display: str = ""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: the front end's
    source: SourceText | None = None
    items: tuple[Item, ...] = ()
    #: the passes'
    context: Context | None = None
    document: Document | None = None
    #: the back stages'
    request: Request | None = None
    meter: Meter | None = None
    artifact: Artifact | None = None
    cut: Cut | None = None
    encoded: bytes | None = None
    #: a stage ended the compile: the stages after it do not run
    stopped: bool = False
    _compiled: CompiledPrompt | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return name_of(self.rel)

    @property
    def root(self) -> str:
        """How the source folder is shown (`prompts_src/`), which the artifact's paths omit."""
        display, rel = self.display, self.rel
        return display[: len(display) - len(rel)] if display.endswith(rel) else ""

    def stop(self) -> None:
        self.stopped = True

    def finished(self) -> tuple[Document, Artifact]:
        """The document and the artifact of a compile that ran to its end (a caller's error
        otherwise): what `divergence.prompt_in` hands out."""
        if self.document is None or self.artifact is None:
            raise ValueError(f"{self.rel}: the compile did not finish")
        return self.document, self.artifact

    @property
    def compiled(self) -> CompiledPrompt:
        """What the build keeps of the compile, once its stages have run (made once)."""
        if self._compiled is None:
            self._compiled = self._result()
        return self._compiled

    def _result(self) -> CompiledPrompt:
        doc = self.document
        diagnostics = tuple(self.diagnostics)
        if doc is None:
            return CompiledPrompt(self.name, self.rel, diagnostics)
        if self.encoded is None or self.artifact is None:
            return CompiledPrompt(self.name, self.rel, diagnostics, includes=doc.includes, resources=doc.resources)
        return CompiledPrompt(
            self.name,
            self.rel,
            diagnostics,
            self.artifact,
            self.encoded,
            doc.includes,
            ManifestEntry.of(self.artifact, artifact_path(self.name), hashlib.sha256(self.encoded).hexdigest()),
            resources=doc.resources,
        )


Stage = Callable[[Compilation], None]


def run_stages(state: Compilation, stages: Sequence[Stage]) -> Compilation:
    """Run `stages` over `state`, in order, until one stops the compile.

    The cyclic garbage collector is off while they run: a compile allocates its items, its ASTs
    and its document and keeps nearly all of them until it ends, so each collection would walk
    everything made so far and free nothing (on one section of 20,000 blocks that was a third of
    the compile, and the number of full collections grows with the input). What a compile leaves
    as cyclic garbage is collected after it, when the collector runs again."""
    collecting = gc.isenabled()
    if collecting:
        gc.disable()
    try:
        for stage in stages:
            if state.stopped:
                break
            stage(state)
    finally:
        if collecting:
            gc.enable()
    return state


# ---------------------------------------------------------------------------------------------
# The front end


def read(state: Compilation) -> None:
    """The file's bytes from the source tree, unless the caller handed them in."""
    if state.data is not None:
        return
    try:
        state.data = state.tree.files[state.rel]
    except OSError as exc:  # listed, then gone before it was read
        state.diagnostics.append(vanished(state.display, exc))
        state.stop()


def decode(state: Compilation) -> None:
    assert state.data is not None
    state.source, found = decode_bytes(state.display, state.data)
    state.diagnostics += found
    if state.source is None:
        state.stop()


def parse(state: Compilation) -> None:
    assert state.source is not None
    sink = DiagnosticSink(state.source)
    sink.items = state.diagnostics  # the parser reports into the compile's own list
    state.items = parse_text(state.source, sink)


FRONT: tuple[Stage, ...] = (read, decode, parse)


# ---------------------------------------------------------------------------------------------
# The passes, as a stage


def _context(state: Compilation) -> Context:
    if state.context is None:
        assert state.source is not None
        state.context = Context(state.config, state.source, state.tree, state.partials, state.diagnostics)
    return state.context


def passes(state: Compilation) -> None:
    assert state.source is not None
    state.document = run(Document(state.source, state.name, state.items), _context(state))


# ---------------------------------------------------------------------------------------------
# The back stages


def settle(state: Compilation) -> None:
    assert state.document is not None
    state.request, found = settle_request(state.document, state.config)
    state.diagnostics += found


def build_artifact(state: Compilation) -> None:
    """emit: the artifact, when nothing before it failed (and the cut of its prefix, which emit
    located for `cache.prefix_end`)."""
    if has_errors(state.diagnostics):
        state.stop()
        return
    assert state.document is not None and state.request is not None and state.data is not None
    try:
        state.meter = meter(state.request.tokenizer)
        cuts: list[Cut] = []
        state.artifact = emit.build_artifact(
            state.document, state.rel, state.data, state.meter, state.request, state.root, cuts
        )
        state.cut = cuts[-1] if cuts else None
    except TokenizerError as exc:
        state.diagnostics.append(tokenizer_diagnostic(state.display, exc))
        state.stop()


def tokenizer_diagnostic(path: str, exc: Exception) -> Diagnostic:
    return make(
        codes.TOKENIZER_UNAVAILABLE,
        str(exc),
        file_span(),
        "set `tokenizer` in [tool.promptc] to cl100k_base or o200k_base",
        path=path,
    )


def locate(state: Compilation) -> None:
    """Where the request model's walk stops, as a place in the sources: emit's, or else read from
    the artifact's request model."""
    assert state.document is not None and state.artifact is not None
    if state.cut is None:
        state.cut = locate_prefix(state.document, state.rel, state.root, state.artifact)


def check(state: Compilation) -> None:
    assert state.document is not None and state.artifact is not None and state.request is not None
    state.diagnostics += check_request(state.artifact, state.document, state.request)


def params(state: Compilation) -> None:
    """`/// param:` values typed by the provider profile (E730)."""
    assert state.document is not None and state.request is not None
    state.diagnostics += check_params(state.document, state.request)


def lint(state: Compilation) -> None:
    assert state.document is not None and state.artifact is not None
    assert state.cut is not None and state.meter is not None
    state.diagnostics += lint_prefix(
        state.artifact, state.document, state.cut, state.meter, state.config.stable_run_tokens
    )


def budget(state: Compilation) -> None:
    """`/// budget:` and the model's context window, against the request's worst case."""
    assert state.document is not None and state.artifact is not None and state.meter is not None
    state.diagnostics += check_budget(state.artifact, state.document, state.meter.tokens)


def allow(state: Compilation) -> None:
    """Drop the warnings a `/// promptc: allow CODE` comment allows on their line, in the prompt
    and the partials it includes, and those the project's `allow` names."""
    assert state.source is not None and state.document is not None
    files = {state.source.path: state.source.text}
    for key in state.document.includes:
        partial = state.partials.load(key)
        if partial.source is not None:
            files[partial.source.path] = partial.source.text
    kept: list[Diagnostic] = state.diagnostics
    if any("promptc" in text for text in files.values()):
        kept = suppress.apply(kept, files)
    state.diagnostics[:] = suppress.allowed(kept, state.config.allow)


def encode(state: Compilation) -> None:
    """The artifact's bytes, exactly as the build writes them; not when an error was found."""
    if has_errors(state.diagnostics):
        state.stop()
        return
    state.encoded = emit.dumps(state.artifact)


BACK: tuple[Stage, ...] = (settle, build_artifact, locate, check, params, lint, budget, allow, encode)

#: The whole compile of a prompt.
STAGES: tuple[Stage, ...] = (*FRONT, passes, *BACK)


# ---------------------------------------------------------------------------------------------
# Partials


def partial_header(state: Compilation) -> None:
    """The first two passes as a partial has them: comments gone, its file-scoped directives
    collected into its header (those only a prompt may set are errors), markers kept."""
    assert state.source is not None
    ctx = _context(state)
    doc = strip_comments(Document(state.source, state.rel, state.items), ctx)
    kept, header = collect(doc.items, ctx, partial=True)
    state.document = evolve(doc, items=kept, header=header)


#: A partial's compile: the front end and the first two passes, once per build.
PARTIAL_STAGES: tuple[Stage, ...] = (*FRONT, partial_header)


@dataclass(frozen=True, slots=True)
class Partial:
    """A partial after its stages: its items (comments gone, file-scoped directives collected into
    `header`, section and include markers kept) and what they reported."""

    key: str  # source-relative path, or `std/NAME`
    source: SourceText | None
    items: tuple[Item, ...]
    header: Header
    diagnostics: tuple[Diagnostic, ...]


class PartialLoader:
    """Loads partials by key, once each; shared by every prompt one process compiles in a build.

    The loader is the only part of a compilation that reads a file: the build driver read the
    source tree into memory, and the built-in `std/` partials ship inside the package."""

    def __init__(self, config: Config, tree: SourceTree) -> None:
        self.config = config
        self.tree = tree
        self._loaded: dict[str, Partial] = {}
        #: the include pass keeps each partial's expansion here (includes spliced in), by key
        self.expanded: dict[str, object] = {}
        #: the resources pass keeps each checked tool or schema file here, by kind and path
        self.resources: dict[object, object] = {}

    def exists(self, key: str) -> bool:
        return key in std_partials() if key.startswith(STD_PREFIX) else key in self.tree.files

    def load(self, key: str) -> Partial:
        partial = self._loaded.get(key)
        if partial is None:
            partial = self._loaded[key] = self._read(key)
        return partial

    def read_json(self, key: str) -> tuple[SourceText | None, object, tuple[Diagnostic, ...]]:
        """A JSON file of the tree (a tool definition or schema), decoded and parsed; not cached
        here (the resources pass caches what it makes of the file)."""
        display = self.tree.display(key)
        try:
            data = self.tree.files[key]
        except OSError as exc:
            return None, None, (vanished(display, exc),)
        src, value, diagnostics = read_json(display, data)
        return src, value, tuple(diagnostics)

    def compilation(self, key: str) -> Compilation:
        """A partial's compile, run through `PARTIAL_STAGES` (the language server reads it too)."""
        if key.startswith(STD_PREFIX):
            state = Compilation(key, self.config, self.tree, self, std_bytes(key), std_display(key))
        else:
            state = Compilation(key, self.config, self.tree, self, display=self.tree.display(key))
        return run_stages(state, PARTIAL_STAGES)

    def _read(self, key: str) -> Partial:
        state = self.compilation(key)
        doc = state.document
        if doc is None:
            return Partial(key, state.source, (), Header(), tuple(state.diagnostics))
        return Partial(key, state.source, doc.items, doc.header, tuple(state.diagnostics))


# ---------------------------------------------------------------------------------------------
# The one entry


def compile_prompt(
    rel: str,
    config: Config,
    tree: SourceTree | None = None,
    *,
    data: bytes | None = None,
    partials: PartialLoader | None = None,
    stages: Sequence[Stage] = STAGES,
) -> Compilation:
    """Compile the prompt `rel` of `tree` (its bytes are `data`, else the tree's). `partials` is
    the build's loader, shared by every prompt of the build; a fresh one is made when it is not
    given. The result keeps what every stage made: the parsed items, the document, the artifact."""
    if tree is None:
        tree = SourceTree(files={rel: data or b""})
    state = Compilation(
        rel, config, tree, partials if partials is not None else PartialLoader(config, tree), data, tree.display(rel)
    )
    return run_stages(state, stages)


def read_source(display: str, data: bytes) -> tuple[SourceText | None, tuple[Item, ...], list[Diagnostic]]:
    """The front end alone (`FRONT`) over one file's bytes: its text, items and diagnostics; the
    items are empty when the file cannot be decoded."""
    tree = SourceTree(files={display: data})
    state = run_stages(Compilation(display, Config(), tree, PartialLoader(Config(), tree), data, display), FRONT)
    return state.source, state.items, state.diagnostics
