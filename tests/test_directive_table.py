"""One declaration per directive (`DIRECTIVES` in compiler/passes/directives.py): the reader the
pass dispatches to, the reserved keys and the keys only a prompt may set, W303's "did you mean",
fmt's order, the editor grammar, the language server's completion, the `Header` fields and the
table in docs/language.md all follow from it. A table of a test's own, with one directive more,
shows a new directive reaching each of them."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from promptc.facts import codes
from promptc.facts.config import Config
from promptc.facts.diagnostics import DiagnosticSink, SourceText
from promptc.lsp import features
from promptc.lsp.workspace import Project
from promptc.passes.context import Context, SourceTree
from promptc.passes.directives import (
    DIRECTIVES,
    Declaration,
    Directives,
    HeaderBuilder,
    collect,
    docs_table,
    with_docs_table,
)
from promptc.syntax.nodes import Directive, Header, Item
from promptc.syntax.parse import parse
from promptc.tools.fmt import DIRECTIVE_ORDER, layout

from .conftest import ROOT


def _read_audience(builder: HeaderBuilder, d: Directive) -> tuple[Item, ...]:
    builder.metadata[d.key] = f"read: {d.value}"
    return ()


AUDIENCE = Declaration(
    "audience",
    "prompt",
    _read_audience,
    example="`/// audience: support`",
    doc="who reads the answers (a test's directive)",
    value="names",
    rank=15,  # between flow (10) and node (20)
)
SCRATCH = Directives((*DIRECTIVES.declared, AUDIENCE))


def _gen_grammar() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_grammar", ROOT / "editors" / "vscode" / "gen_grammar.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _collect(text: str, directives: Directives, *, partial: bool = False) -> tuple[Header, list[str]]:
    source = SourceText.of("_p.prompt" if partial else "p.prompt", text)
    items = parse(source, DiagnosticSink(source))
    ctx = Context(Config(), source, SourceTree(), None)  # type: ignore[arg-type]  # no include is loaded
    _, header = collect(items, ctx, partial=partial, directives=directives)
    return header, [f"{d.code} {d.message}" for d in ctx.diagnostics]


def test_the_docs_table_is_the_declarations() -> None:
    doc = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    assert with_docs_table(doc) == doc, "run `python -m promptc.passes.directives docs/language.md`"
    for d in DIRECTIVES.declared:
        assert f"| {d.example} | {d.scope} |" in doc


def test_every_header_field_is_filled_by_one_declaration() -> None:
    """`Header`'s fields are documented by the declarations that fill them; `metadata` holds
    the keys no declaration has."""
    filled = [name for d in DIRECTIVES.declared for name in d.fills]
    assert len(filled) == len(set(filled)), "a Header field filled by two declarations"
    assert {f.name for f in dataclasses.fields(Header)} == {*filled, "metadata"}


def test_a_table_refuses_a_key_or_a_rank_twice() -> None:
    with pytest.raises(ValueError, match="declared twice"):
        Directives((*DIRECTIVES.declared, dataclasses.replace(AUDIENCE, name="param")))
    with pytest.raises(ValueError, match="share a rank"):
        Directives((*DIRECTIVES.declared, dataclasses.replace(AUDIENCE, rank=10)))


def test_a_directive_declared_in_a_scratch_table_is_in_the_keys_and_the_pass() -> None:
    assert "audience" not in DIRECTIVES.reserved_keys
    assert SCRATCH.reserved_keys == (*DIRECTIVES.reserved_keys, "audience")
    assert SCRATCH.prompt_only_keys == (*DIRECTIVES.prompt_only_keys, "audience")
    # the pass dispatches to its reader, and holds it to its scope
    text = "/// audience: support\nHi\n"
    assert _collect(text, SCRATCH)[0].metadata == (("audience", "read: support"),)
    assert _collect(text, DIRECTIVES)[0].metadata == (("audience", "support"),)
    assert _collect(text, SCRATCH, partial=True)[1] == [
        f"{codes.PARTIAL_NOT_ALLOWED.code} a partial may not set `audience`"
    ]
    assert _collect(text, DIRECTIVES, partial=True)[1] == [
        f"{codes.IGNORED_IN_PARTIAL.code} metadata `audience` in a partial is ignored"
    ]
    # a typo of it is W303, as of any reserved key
    assert SCRATCH.typo_of("audiense") == "audience" and DIRECTIVES.typo_of("audiense") is None
    assert _collect("/// audiense: support\nHi\n", SCRATCH)[1] == [
        f"{codes.DIRECTIVE_TYPO.code} unknown directive `audiense`, kept as metadata"
    ]
    assert "| `/// audience: support` | prompt | who reads the answers (a test's directive) |" in docs_table(SCRATCH)


def test_a_directive_declared_in_a_scratch_table_is_in_fmts_order() -> None:
    text = "/// tag: t\n/// audience: support\n/// node: n\n/// flow: f\nHi\n"
    assert SCRATCH.order == ("flow", "audience", *DIRECTIVE_ORDER[1:])
    assert layout(text, directives=SCRATCH).text == "/// flow: f\n/// audience: support\n/// node: n\n/// tag: t\nHi\n"
    # without its declaration it is metadata, after the declared directives
    assert layout(text).text == "/// flow: f\n/// node: n\n/// tag: t\n/// audience: support\nHi\n"


def test_a_directive_declared_in_a_scratch_table_is_in_the_editor_grammar() -> None:
    gen = _gen_grammar()

    def rule_for(grammar: dict, line: str) -> str:
        return next(r["name"] for r in grammar["repository"]["directive"]["patterns"] if re.match(r["match"], line))

    line = "/// audience: support, sales"
    assert rule_for(gen.grammar(SCRATCH), line) == "meta.directive.audience.prompt"
    assert rule_for(gen.grammar(), line) == "meta.directive.metadata.prompt"
    assert gen.value_rules(SCRATCH)["audience"] == gen.value_kinds()["names"]


def test_a_directive_declared_in_a_scratch_table_is_in_the_completion(tmp_path: Path) -> None:
    (tmp_path / "prompts_src").mkdir()
    (tmp_path / "prompts_src" / "a.prompt").write_text("/// au\nHi\n", encoding="utf-8")
    view = features.view_of(Project(tmp_path), "a.prompt", PositionCodec())
    assert view is not None
    after_slashes = types.Position(line=0, character=6)
    offered = [item.label for item in features.completion(view, after_slashes, directives=SCRATCH)]
    assert offered == list(SCRATCH.reserved_keys) and "audience" in offered
    assert "audience" not in [item.label for item in features.completion(view, after_slashes)]
