"""Fuzzing: sources built from the grammar's own pieces plus random bytes. For every input the
compiler ends with a result (exit 0 or 1, never a traceback), and every diagnostic's line and
column lie inside the file."""

from __future__ import annotations

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptc.cli import main
from promptc.compile import compile_source
from promptc.facts.config import Config
from promptc.passes.context import SourceTree
from promptc.syntax.source import decode

from .conftest import examples

APPROX = Config(tokenizer="approx-bytes/4")

PIECES = [
    "///",
    " /// note",
    "\\///",
    '/// param: t=0.7, s="a, b"',
    "/// flow: f",
    "/// flow: g",
    "/// tag: a, a",
    "/// section: s stable",
    "/// section: d dynamic user_context",
    "/// section: ",
    "/// include: _p",
    "/// include: ../x",
    "/// input: a, b",
    "/// role: user",
    "/// sectoin: x",
    "----- system -----",
    "----- user -----",
    "----- tool -----",
    "---- user ----",
    "  ----- assistant -----",
    "${a}",
    "${a.b}",
    "${}",
    "${ a }",
    "${",
    "\\${",
    "{{ a }}",
    "{{- a -}}",
    "{{ a +",
    "{{",
    "}}",
    "{# x = 1 #}",
    "{#",
    "#}",
    "{% if a %}",
    "{% elif b %}",
    "{% else %}",
    "{% endif %}",
    "{% for x in xs %}",
    "{% endfor %}",
    "{% while c %}",
    "{% endwhile %}",
    "{% include x %}",
    "{%",
    "%}",
    "http://x",
    "file:///y",
    "a///b",
    "2024-01-02",
    "\t",
    " ",
    "\n",
    "\n\n",
    "\r\n",
    "\r",
    "\ufeff",
    "é",
    "😀",
    "\\",
    "$",
    "{",
    "}",
    "-",
    "lambda",
    "{{ (lambda x: x)(y) }}",
    "{# with open(f) as g: pass #}",
    "{{ [i for i in r] }}",
    "{# try:\n  1\nexcept E as e:\n  pass #}",
]

sources = st.one_of(
    st.lists(st.sampled_from(PIECES) | st.text(max_size=8), max_size=40).map(lambda parts: "".join(parts).encode()),
    st.binary(max_size=200),
    st.lists(st.sampled_from(PIECES).map(str.encode) | st.binary(max_size=6), max_size=30).map(b"".join),
)


def _lines(data: bytes) -> list[str]:
    src, _ = decode("f.prompt", data)
    if src is None:
        return data.decode("utf-8", errors="replace").split("\n")
    return src.text.split("\n")


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=sources, partial=st.sampled_from([b"Shared ${p}\n", b"/// include: _p\n", b"----- user -----\n", b"\xff"]))
def test_any_input_gives_diagnostics_inside_the_file(data: bytes, partial: bytes) -> None:
    tree = SourceTree(files={"f.prompt": data, "_p.prompt": partial})
    result = compile_source("f.prompt", data, APPROX, tree)
    assert result.ok == (result.data is not None)
    lines = _lines(data)
    partial_lines = _lines(partial)
    for d in result.diagnostics:
        if d.span is None:
            continue
        own = partial_lines if d.path == "_p.prompt" else lines
        assert 1 <= d.line <= len(own), (d, len(own))
        assert 1 <= d.col <= len(own[d.line - 1]) + 1, (d, own[d.line - 1])


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=sources)
def test_cli_exit_code_is_0_or_1(data: bytes, tmp_path_factory) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    (root / "prompts_src").mkdir()
    (root / "prompts_src/f.prompt").write_bytes(data)
    result = CliRunner().invoke(main, ["check", str(root / "prompts_src"), "--tokenizer", "approx-bytes/4"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 1), result.output
