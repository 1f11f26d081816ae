"""Token budgets: the worst case of a prompt's request, checked at build (`/// budget:`).

A prompt states its budget in tokens (docs/language.md#token-budgets):

    /// budget: total<=8000, uncached<=2000
    /// input: diff: str(max_tokens=4000), ticket: @schemas/ticket.json

`total` limits the whole request at its worst; `uncached` what of it the provider does not serve
from its cache (the worst case minus `cache.cacheable_tokens`). The worst case is what promptc
counts of a request (as `totals.tokens` counts: the text of the messages, the tools and the output
schema, with the prompt's tokenizer; not the provider's own framing tokens), with every inserted
value at its declared upper bound:

- `TYPE(max_tokens=N)` on an `/// input:` declaration: the value's text is at most N tokens;
- a JSON Schema (`@schema.json`, or the property a dotted `${a.b}` reads) bounds a value by its
  `maxLength` (a character is at most 4 UTF-8 bytes, and a byte-level BPE token at least one
  byte: 4 tokens a character), its `enum`/`const`, `boolean`, or an `integer` with both
  `minimum` and `maximum` (their digits);
- each place a value is inserted adds 2 tokens for the merges a tokenizer may make across the
  join (a BPE can split the text next to a value otherwise than it splits it alone).

The text itself is counted as sent. A `{{ }}`, `{# #}` or `{% %}` block has no bound promptc can
see, and neither has an input without a declared one: with a budget, either is E721. Over a limit
is E720; a worst case (plus the `max_tokens` the request asks for) larger than the model's context
window (`context_window` in promptc/data/providers.json) is E722, checked for every prompt whose
worst case is bounded, with a budget or without.

Pure: the artifact, the document and a token counter in, diagnostics out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..facts import codes
from ..facts.diagnostics import Diagnostic, Span, make
from ..facts.language import BUDGET_LIMITS
from ..facts.profiles import context_window, window_includes_output
from ..facts.records import dataclass
from ..runtime.template import scan
from ..syntax.nodes import Block, Item, Placeholder
from .meter import APPROX

__all__ = ["LIMITS", "JUNCTION_TOKENS", "WorstCase", "check", "worst_case"]

#: the limits a budget may name
LIMITS = BUDGET_LIMITS
#: tokens added for each place a value is inserted (merges across the join)
JUNCTION_TOKENS = 2
#: UTF-8 bytes of one character at most
_BYTES_PER_CHAR = 4

# ---------------------------------------------------------------------------------------------
# The worst case


@dataclass(frozen=True, slots=True)
class WorstCase:
    """The request's worst case: its `tokens` (None: unbounded, because of `unbounded`), and the
    parts: the head (tools, output schema), the literal text, and each input at its bound."""

    tokens: int | None
    head: int = 0
    text: int = 0
    #: (placeholder path, its bound in tokens, how many times it is inserted)
    inputs: tuple[tuple[str, int, int], ...] = ()
    #: why it is unbounded: (what, the first place) — an input without a bound, or a block
    unbounded: tuple[str, Span | None] | None = None

    def describe(self) -> str:
        parts = [f"text {self.text}"]
        if self.head:
            parts.append(f"tools and schema {self.head}")
        joins = 0
        for path, bound, uses in self.inputs:
            parts.append(f"${{{path}}} {bound}" + (f" ×{uses}" if uses > 1 else ""))
            joins += uses
        if joins:
            parts.append(f"joins {JUNCTION_TOKENS * joins}")
        return ", ".join(parts)


def _leaf(schema: Mapping[str, Any], path: list[str]) -> Mapping[str, Any] | None:
    """The schema of `a.b.c` below the input's schema (objects' `properties`)."""
    node: Any = schema
    for key in path:
        if not isinstance(node, Mapping):
            return None
        properties = node.get("properties")
        if not isinstance(properties, Mapping) or key not in properties:
            return None
        node = properties[key]
    return node if isinstance(node, Mapping) else None


def _bytes_bound(schema: Mapping[str, Any]) -> int | None:
    """The most UTF-8 bytes `str(value)` can have for a value `schema` admits; None: unbounded."""
    if "const" in schema:
        return len(_py_str(schema["const"]).encode("utf-8"))
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return max(len(_py_str(v).encode("utf-8")) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            bounds = [_bytes_bound(b) if isinstance(b, Mapping) else None for b in branches]
            return None if any(b is None for b in bounds) else max(bounds)  # type: ignore[type-var]
    kind = schema.get("type")
    if isinstance(kind, list):
        bounds = [_bytes_bound({**schema, "type": k}) for k in kind]
        return None if any(b is None for b in bounds) else max(bounds)  # type: ignore[type-var]
    if kind == "null":
        return len("None")
    if kind == "boolean":
        return len("False")
    if kind == "string" and isinstance(schema.get("maxLength"), int) and not isinstance(schema["maxLength"], bool):
        return _BYTES_PER_CHAR * max(0, int(schema["maxLength"]))
    if kind == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high)):
            return max(len(str(int(low))), len(str(int(high))))  # type: ignore[arg-type]
    return None


def _py_str(value: Any) -> str:
    """`str(value)` as the runtime inserts it (JSON values: Python's spelling)."""
    return str(value)


def _tokens_of_bytes(tokenizer: str, count: int) -> int:
    if tokenizer == APPROX:
        return (count + 3) // 4
    return count  # a byte-level BPE token is at least one byte


def worst_case(artifact: Any, doc: Any, count: Callable[[str], int] | None) -> WorstCase:
    """The worst case of `artifact`'s request (see the module docstring). With `count` None the
    literal text is bounded by its UTF-8 bytes instead of counted (no tokenizer runs: a quick
    upper bound, enough to see that a request is far from a context window)."""
    if count is None:
        tokenizer = artifact.tokenizer.name

        def count(text: str) -> int:
            return _tokens_of_bytes(tokenizer, len(text.encode("utf-8")))

    bounds = {name: tokens for name, tokens, _ in doc.header.input_bounds}
    properties = artifact.input_schema.get("properties", {})
    head = sum(part.tokens for part in artifact.cache.head)
    text = 0
    uses: dict[str, int] = {}
    per_path: dict[str, int] = {}
    for message in artifact.messages:
        for token in scan(message.content):
            if token.kind == "lit":
                if token.text:
                    text += count(token.text)
                continue
            if token.kind != "ph":
                opener = token.raw.strip()[:2]
                closer = {"{{": "}}", "{#": "#}", "{%": "%}"}.get(opener, "")
                return WorstCase(None, head, text, unbounded=(f"a `{opener} {closer}` block", _block_span(doc)))
            path = token.text
            if path not in per_path:
                root, *rest = path.split(".")
                bound: int | None = bounds.get(root) if not rest else None
                schema = properties.get(root)
                leaf = _leaf(schema, rest) if isinstance(schema, Mapping) else None
                by_schema = _bytes_bound(leaf) if leaf is not None else None
                if by_schema is not None:
                    by_schema = _tokens_of_bytes(artifact.tokenizer.name, by_schema)
                    bound = by_schema if bound is None else min(bound, by_schema)
                if bound is None:
                    return WorstCase(None, head, text, unbounded=(f"input `${{{path}}}`", _placeholder_span(doc, path)))
                per_path[path] = bound
            uses[path] = uses.get(path, 0) + 1
    inputs = tuple((path, per_path[path], n) for path, n in uses.items())
    total = head + text + sum((bound + JUNCTION_TOKENS) * n for _, bound, n in inputs)
    return WorstCase(total, head, text, inputs)


def _items(doc: Any) -> Iterator[Item]:
    for message in doc.messages:
        for section in message.sections:
            yield from section.items


def _placeholder_span(doc: Any, path: str) -> Span | None:
    return next((i.span for i in _items(doc) if isinstance(i, Placeholder) and i.path == path), None)


def _block_span(doc: Any) -> Span | None:
    return next((i.span for i in _items(doc) if isinstance(i, Block)), None)


# ---------------------------------------------------------------------------------------------
# The check


def check(artifact: Any, doc: Any, count: Callable[[str], int]) -> list[Diagnostic]:
    """E720 (over a budget), E721 (a budget that cannot be checked), E722 (over the model's
    context window)."""
    header = doc.header
    src = doc.source
    budget = header.budget
    window = None
    if artifact.provider is not None:
        window = context_window(artifact.provider.name, artifact.model)
    if not budget and window is None:
        return []
    output = 0
    if window is not None and window_includes_output(artifact.provider.name):
        asked = artifact.params.get("max_tokens")
        output = asked if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0 else 0
    worst = worst_case(artifact, doc, count if budget else None)
    if not budget:
        if worst.tokens is None or window is None or worst.tokens + output <= window[0]:
            return []  # unbounded, or bounded by bytes within the window: no need to count
        worst = worst_case(artifact, doc, count)
    out: list[Diagnostic] = []
    if worst.tokens is None:
        if budget:
            what, span = worst.unbounded or ("a value", None)
            out.append(
                make(
                    codes.BUDGET_UNBOUNDED,
                    f"the budget cannot be checked: {what} has no upper bound",
                    span or header.budget_span,
                    "declare one: `/// input: NAME: str(max_tokens=4000)`, or a schema with `maxLength`"
                    if what.startswith("input")
                    else "a prompt with a budget inserts values with `${…}` placeholders only",
                    source=src,
                )
            )
        return out
    cached = artifact.cache.cacheable_tokens or 0
    for name, limit, span in budget:
        value = worst.tokens if name == "total" else worst.tokens - cached
        if value <= limit:
            continue
        of = "the worst case" if name == "total" else f"the worst case less the {cached} cached tokens"
        out.append(
            make(
                codes.BUDGET_EXCEEDED,
                f"budget `{name}<={limit}` exceeded: {of} is {value} tokens ({worst.describe()})",
                span,
                "shorten the prompt, lower an input's bound, or raise the budget",
                source=src,
            )
        )
    if window is not None:
        limit, source = window
        need = worst.tokens + output  # a provider with an input limit (Gemini) counts no output
        if need > limit:
            spans = dict(header.param_spans)
            plus = f" + max_tokens {output}" if output else ""
            out.append(
                make(
                    codes.CONTEXT_WINDOW_EXCEEDED,
                    f"the request can need {need} tokens (worst case {worst.tokens}{plus}), more than the "
                    f"{limit}-token context window of {artifact.model}",
                    spans.get("max_tokens") if output else spans.get("model", header.budget_span),
                    f"lower the input bounds or max_tokens, or use a model with a larger window ({source})",
                    source=src,
                )
            )
    return out
