"""Golden-case plumbing: run the pipeline up to a pass and dump the document as plain JSON data."""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

from promptc.compile.pipeline import FRONT, PASSES, compile_prompt
from promptc.facts.config import Config
from promptc.facts.diagnostics import SourceText, Span
from promptc.passes.context import Context, SourceTree
from promptc.syntax.nodes import Document

PASS_NAMES = {p.__name__: p for p in PASSES}
#: case folder → the pass whose output the case pins
FOLDERS = {
    "comments": "strip_comments",
    "directives": "collect_directives",
    "includes": "expand_includes",
    "roles": "split_roles",
    "placeholders": "bind_placeholders",
    "inference": "infer_inputs",
    "sections": "partition_sections",
}


def _plain(value: Any) -> Any:
    if isinstance(value, Span):
        where = f"{value.line}:{value.col}"
        return f"{value.src.path}:{where}" if value.src is not None and value.src.path != "case.prompt" else where
    if isinstance(value, SourceText):
        return value.path
    if is_dataclass(value):
        out: dict[str, Any] = {"type": type(value).__name__}
        for f in fields(value):
            item = getattr(value, f.name)
            if f.name in ("code_span", "value_span", "role_span", "declared_inputs_span", "uses", "references"):
                continue
            if item in (None, (), "", False) and f.name not in ("value",):
                continue
            out[f.name] = _plain(item)
        return out
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def run_until(text: str, pass_name: str, *, partials: dict[str, str] | None = None, config: Config | None = None):
    files = {"case.prompt": text.encode()}
    files.update({k: v.encode() for k, v in (partials or {}).items()})
    tree = SourceTree(files=files)
    config = config or Config(tokenizer="approx-bytes/4")
    # the compile's own front end, then its passes up to (and with) `pass_name`
    front = compile_prompt("case.prompt", config, tree, stages=FRONT)
    assert front.source is not None
    ctx = Context(config, front.source, tree, front.partials, front.diagnostics)
    doc = Document(front.source, "case", front.items)
    for compiler_pass in PASSES:
        doc = compiler_pass(doc, ctx)
        if compiler_pass.__name__ == pass_name:
            break
    diags = [f"{d.path}:{d.line}:{d.col} {d.code} {d.message}" for d in front.diagnostics]
    dumped = _plain(doc)
    dumped.pop("source", None)
    return {"document": dumped, "diagnostics": diags}
