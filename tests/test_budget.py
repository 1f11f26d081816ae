"""Token budgets (`/// budget:`, promptc.backend.budget): the worst case the build computes is at least the
tokens of any request rendered within the declared bounds (a property over random templates and
values, with each tokenizer), and budgets, bounds and context windows are located errors."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from promptc import compile_text
from promptc.backend.budget import JUNCTION_TOKENS, worst_case
from promptc.backend.meter import meter
from promptc.facts.config import Config
from promptc.passes.directives import parse_budget
from promptc.runtime.render import render_artifact

from .conftest import examples, run_promptc

#: text that tokenizers split in many ways: words, spaces runs, digits, punctuation, non-ASCII
ALPHABET = st.sampled_from(
    list("ab xyz  \n\t0123456789.,;:!?'\"()-_/éßü漢字🙂\u200b\U0001f9ea") + ["  ", "\n\n", "ing", "the"]
)
TEXT = st.lists(ALPHABET, max_size=40).map("".join)
#: (tokenizer, model): the exact BPEs and the byte estimate
TOKENIZERS = (("cl100k_base", "claude-sonnet-4-5"), ("o200k_base", "gpt-4o"), ("approx-bytes/4", "gpt-4o"))


def _analyse(source: str, tokenizer: str = "", partials: dict[str, str] | None = None):
    """(artifact or None, the compiled document) of a prompt held in a string."""
    from promptc.compile.pipeline import compile_prompt
    from promptc.passes.context import SourceTree

    files = {"p.prompt": source.encode("utf-8"), **{k: v.encode("utf-8") for k, v in (partials or {}).items()}}
    analysis = compile_prompt("p.prompt", Config(tokenizer=tokenizer), SourceTree(files=files))
    return analysis.compiled.load_artifact(), analysis.document


def _escaped(text: str) -> str:
    """Literal text for a prompt: no opener, separator or directive the source would read."""
    return text.replace("$", "").replace("{", "(").replace("\\", "/").replace("///", "//").replace("-----", "--")


@st.composite
def prompts(draw):
    tokenizer, model = draw(st.sampled_from(TOKENIZERS))
    names = [f"v{i}" for i in range(draw(st.integers(1, 3)))]
    bounds = {name: draw(st.integers(0, 30)) for name in names}
    pieces = []
    for _ in range(draw(st.integers(1, 5))):
        pieces.append(_escaped(draw(TEXT)))
        pieces.append("${" + draw(st.sampled_from(names)) + "}")
    pieces.append(_escaped(draw(TEXT)))
    system = _escaped(draw(TEXT)).strip() or "Be brief."
    declared = ", ".join(f"{n}: str(max_tokens={b})" for n, b in bounds.items())
    source = (
        f"/// param: model={model}\n/// input: {declared}\n----- system -----\n{system}\n----- user -----\n"
        + "".join(pieces)
        + "\n"
    )
    return tokenizer, source, bounds


def _fit(value: str, bound: int, count) -> str:
    """`value` cut until its text is within `bound` tokens."""
    while value and count(value) > bound:
        value = value[:-1]
    return value


@settings(max_examples=examples(400))
@given(prompts(), st.lists(TEXT, min_size=3, max_size=3))
def test_the_worst_case_is_at_least_any_request_within_the_bounds(drawn, values) -> None:
    tokenizer, source, bounds = drawn
    artifact, document = _analyse(source, tokenizer)
    assume(artifact is not None)  # a drawn text can still make a source the build refuses
    count = meter(tokenizer).tokens
    inputs = {name: _fit(value, bounds[name], count) for name, value in zip(bounds, values, strict=False)}
    rendered = render_artifact(artifact, inputs, unknown_inputs="ignore")  # declared, unused inputs too
    sent = sum(part.tokens for part in artifact.cache.head) + sum(count(m["content"]) for m in rendered.messages)
    worst = worst_case(artifact, document, count)
    assert worst.tokens is not None and worst.tokens >= sent, (source, inputs, worst)
    # and the quick bound (bytes, no tokenizer) is above the exact worst case
    assert worst_case(artifact, document, None).tokens >= worst.tokens


_NOTE = None


def _note_prompt():
    """A prompt reading `${t.note}` of a schema-typed input, compiled once."""
    global _NOTE
    if _NOTE is None:
        schema = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}
        source = "/// param: model=gpt-4o\n/// input: t: @schemas/t.json\n----- user -----\nNote: ${t.note}!\n"
        _NOTE = _analyse(source, partials={"schemas/t.json": json.dumps(schema)})
        assert _NOTE[0] is not None
    return _NOTE


@settings(max_examples=examples(200))
@given(st.integers(0, 20), st.lists(st.sampled_from(list("aé漢🙂 \n")), max_size=20).map("".join))
def test_a_schemas_max_length_bounds_the_value(length, value) -> None:
    """`maxLength` as a bound (the build refuses it in an input schema until the runtimes check it,
    E825: the artifact here carries it as a build that admits it would)."""
    from dataclasses import replace

    artifact, document = _note_prompt()
    note = {"type": "string", "maxLength": length}
    schema = {"type": "object", "properties": {"note": note}, "required": ["note"]}
    artifact = replace(artifact, input_schema={**artifact.input_schema, "properties": {"t": schema}})
    value = value[:length]
    count = meter("o200k_base").tokens
    rendered = render_artifact(artifact, {"t": {"note": value}})
    worst = worst_case(artifact, document, count)
    assert worst.tokens >= sum(count(m["content"]) for m in rendered.messages)
    assert worst.inputs == (("t.note", 4 * length, 1),)


def _diagnostics(source: str, **options) -> list[str]:
    """The diagnostics but W705 (these short prompts are under every cache minimum)."""
    return [str(d) for d in compile_text(source, name="p", **options).diagnostics if d.code != "W705"]


BIG = "Cite the article you used. " * 300


def test_over_a_budget_is_located_at_the_limit() -> None:
    source = (
        "/// param: model=claude-sonnet-4-5, max_tokens=100\n"
        "/// budget: total<=4000, uncached<=500\n"
        "/// input: diff: str(max_tokens=1000)\n"
        f"----- system -----\n{BIG}\n----- user -----\nReview: ${{diff}}\n"
    )
    found = _diagnostics(source)
    assert len(found) == 1 and found[0].startswith("p.prompt:2:26: error[E720]: budget `uncached<=500` exceeded")
    assert f"diff}} 1000, joins {JUNCTION_TOKENS}" in found[0]
    within = source.replace("uncached<=500", "uncached<=1100")
    assert _diagnostics(within) == []
    over = source.replace("total<=4000", "total<=2000")
    assert _diagnostics(over)[0].startswith(
        "p.prompt:2:13: error[E720]: budget `total<=2000` exceeded: the worst case is"
    )


def test_a_budget_needs_every_value_bounded() -> None:
    source = "/// param: model=gpt-4o\n/// budget: total<=500\n/// input: a: str(max_tokens=5), b\n----- user -----\n${a} and ${b}\n"
    assert _diagnostics(source) == [
        "p.prompt:5:10: error[E721]: the budget cannot be checked: input `${b}` has no upper bound"
    ]
    block = "/// budget: total<=500\n/// input: a: str(max_tokens=5)\n{% for x in a %}{{ x }}{% endfor %}\n"
    assert _diagnostics(block) == [
        "p.prompt:3:1: error[E721]: the budget cannot be checked: a `{% %}` block has no upper bound"
    ]


def test_a_context_window_is_checked_whenever_the_worst_case_is_bounded() -> None:
    source = "/// param: model=gpt-4o, max_tokens=100000\n/// input: diff: str(max_tokens=30000)\n----- user -----\n${diff}\n"
    (found,) = _diagnostics(source)
    assert found.startswith("p.prompt:1:12: error[E722]: the request can need 130")
    assert "more than the 128000-token context window of gpt-4o" in found
    assert _diagnostics(source.replace("30000", "20000")) == []
    unbounded = source.replace(": str(max_tokens=30000)", "")
    assert _diagnostics(unbounded) == []  # nothing to check without a bound
    gemini = "/// param: model=gemini-2.5-flash, max_tokens=900000\n/// input: d: str(max_tokens=1000)\n----- user -----\n${d}\n"
    assert _diagnostics(gemini) == []  # Gemini's limit is on the input alone


def test_malformed_budgets_and_bounds() -> None:
    assert parse_budget("total<=8_000, uncached <= 2000")[0] == [
        ("total", 8000, "total<=8_000"),
        ("uncached", 2000, "uncached <= 2000"),
    ]
    for value, message in (
        ("", "needs a limit"),
        ("totl<=8", "did you mean `total`?"),
        ("total>=8", "write `total<=TOKENS`"),
        ("total<=8k", "`8k` is not a whole number"),
        ("total<=8, total<=9", "given twice"),
    ):
        assert message in (parse_budget(value)[1] or ""), value
    assert (
        "E304]: input `d`: `max_tokens` needs a whole number of tokens, not `lots`"
        in _diagnostics("/// input: d: str(max_tokens=lots)\n${d}\n")[0]
    )
    assert _diagnostics("/// budget: total<=10\n/// budget: total<=20\nHi\n")[0].startswith("p.prompt:2:1: error[E301]")


def test_a_partial_may_not_set_a_budget(tmp_path: Path) -> None:
    src = tmp_path / "prompts_src"
    src.mkdir()
    (src / "_part.prompt").write_text("/// budget: total<=10\nShared text.\n")
    (src / "p.prompt").write_text("/// include: _part\nHello.\n")
    done = run_promptc("check", "prompts_src", cwd=tmp_path)
    assert done.returncode == 1 and "a partial may not set `budget`" in done.stdout + done.stderr
