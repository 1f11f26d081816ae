"""A rendered value's text does not depend on the Unicode version of the engine rendering it:
`${items}` of a list writes each string with `repr`, and which characters `repr` escapes comes
from one table (`promptc.facts.printable`, Unicode 14.0's `str.isprintable`), in the Python runtime
whatever Python runs it and in runtime-js whatever Node's ICU is (the cross-runtime property is in
tests/test_request_model_property.py, `ci_only`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptc import compile_text
from promptc.facts import printable
from promptc.runtime.render import render_artifact

from .conftest import ROOT, examples

#: characters Unicode 14.0 does not have (each is escaped), from the versions after it:
#: SHAKING FACE (15.0), a CJK Extension I ideograph (15.1), FACE WITH BAGS UNDER EYES (16.0)
NEWER = ["\U0001fae8", "\U0002ebf0", "\U0001fae9"]


def test_the_table_is_str_isprintable_of_its_unicode_version() -> None:
    """Every code point, when this Python has the table's Unicode version; on a newer one, what
    the table calls printable still is (a character once assigned stays assigned)."""
    host = unicodedata.unidata_version
    if host == printable.UNICODE_VERSION:
        assert printable.runs_of_this_python() == printable.NON_PRINTABLE
        assert all(printable.is_printable(chr(c)) == chr(c).isprintable() for c in range(sys.maxunicode + 1))
    elif tuple(map(int, host.split("."))) > tuple(map(int, printable.UNICODE_VERSION.split("."))):
        assert all(chr(c).isprintable() for c in range(sys.maxunicode + 1) if printable.is_printable(chr(c)))
    else:
        pytest.skip(f"this Python's Unicode {host} is older than the table's")
    for char in NEWER:
        assert not printable.is_printable(char)


#: text with every kind of character: ASCII (quotes, backslash, controls), Latin-1 (U+0085, U+00A0,
#: U+00AD), separators, format characters, surrogates, private use, unassigned and newer ones
TEXT = st.text(
    st.one_of(
        st.characters(),
        st.sampled_from(["'", '"', "\\", "\n", "\x7f", "\x85", "\xa0", "\xad", "\u2028", "\u200b", "\ud800", *NEWER]),
        st.integers(min_value=0xE000, max_value=0x10FFFF).map(chr),
    ),
    max_size=8,
)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(TEXT | st.integers(), inner, max_size=3)
        | st.frozensets(TEXT, max_size=3)
        | st.sets(st.integers() | TEXT, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=examples(500))
@given(VALUES)
def test_repr_of_is_pythons_repr_by_the_table(value) -> None:
    """Where this Python's tables are the table's, `repr_of` is CPython's own `repr`; elsewhere it
    differs only in the characters the two versions classify differently."""
    if unicodedata.unidata_version != printable.UNICODE_VERSION:
        pytest.skip("another Unicode version: the table's answers are checked above")
    assert printable.repr_of(value) == repr(value)
    assert printable.text_of(value) == str(value)


def test_repr_of_writes_what_cpython_writes_for_shared_and_nested_containers() -> None:
    cycle: list = [1]
    cycle.append(cycle)
    mapping: dict = {"k": cycle}
    mapping["self"] = mapping
    holder: tuple = ([],)
    holder[0].append(holder)
    shared = ["x"]
    for value in (cycle, mapping, holder, [shared, shared], (1,), (), set(), frozenset(), frozenset({"é"})):
        assert printable.repr_of(value) == repr(value)
    deep: list = []
    inner = deep
    for _ in range(100_000):  # deeper than CPython's repr goes (RecursionError): written iteratively
        inner.append([])
        inner = inner[0]
    assert printable.repr_of(deep) == "[" * 100_001 + "]" * 100_001


def test_a_value_renders_by_the_table() -> None:
    artifact = compile_text("/// param: model=gpt-4o\n----- user -----\nItems: ${a}\n", name="p").artifact
    assert artifact is not None
    rendered = render_artifact(artifact, {"a": ["\U0001fae8 \U0001fae9", {"k": "\x85 ok"}]})
    expected = "Items: ['\\U0001fae8 \\U0001fae9', {'k': '\\x85 ok'}]"
    assert rendered.messages[0]["content"] == expected


def _other_pythons() -> list[str]:
    """The interpreters `python3.11` to `python3.19` on PATH that run (a pyenv shim of a version
    not selected does not) other than this one."""
    found = []
    for minor in range(11, 20):
        path = shutil.which(f"python3.{minor}")
        if path is None:
            continue
        probe = subprocess.run([path, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True)
        if probe.returncode == 0 and Path(probe.stdout.strip()).resolve() != Path(sys.executable).resolve():
            found.append(path)
    return found


RENDER = """
import json, sys, unicodedata
from promptc.runtime.render import render_artifact
artifact, values = json.loads(sys.stdin.read())
body = render_artifact(artifact, values).body("openai").decode("utf-8")
print(json.dumps({"unicode": unicodedata.unidata_version, "body": body}))
"""


def test_a_body_is_the_same_from_every_python(tmp_path: Path) -> None:
    """Other Pythons on PATH (3.12: Unicode 15.0, 3.13: 15.1) render the bytes this one does: the
    runtime needs only the standard library, so each imports it from this checkout."""
    others = _other_pythons()
    if not others:
        pytest.skip("no other python3.X on PATH")
    (tmp_path / "promptc").symlink_to(ROOT / "compiler", target_is_directory=True)
    artifact = compile_text("/// param: model=gpt-4o\n----- user -----\nItems: ${a}\n", name="p").artifact
    assert artifact is not None
    values = {"a": [*NEWER, "\u0378", "\U000e0080", "é\xa0", {"\U0001fae8": ["\u2028"]}]}
    document = json.dumps([artifact.to_json(), values])
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONSAFEPATH": "1"}
    want = render_artifact(artifact, values).body("openai").decode("utf-8")
    versions = set()
    for python in others:
        done = subprocess.run([python, "-c", RENDER], input=document, capture_output=True, text=True, env=env)
        assert done.returncode == 0, (python, done.stderr)
        answer = json.loads(done.stdout)
        versions.add(answer["unicode"])
        assert answer["body"] == want, (python, answer["unicode"])
    assert "\\\\U0001fae8" in want  # escaped, as Unicode 14.0 has it
