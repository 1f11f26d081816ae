"""The benchmark corpus generator (bench/corpus.py): deterministic, and every file is a valid source for all tools."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FILES = 60  # enough for every shape the generator makes (no separators, user_context, assistant turns)


def _load_corpus():
    spec = importlib.util.spec_from_file_location("bench_corpus", ROOT / "bench" / "corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


corpus = _load_corpus()


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("corpus") / "src"
    corpus.generate(src, FILES, seed=7)
    return src


def test_same_seed_same_bytes(generated: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    corpus.generate(again, FILES, seed=7)
    assert _tree(again) == _tree(generated)
    assert corpus.is_current(again, FILES, seed=7)
    assert not corpus.is_current(again, FILES + 1, seed=7)
    assert corpus.is_intact(again, FILES, seed=7)
    edited = again / corpus.relative_path(5)
    edited.write_bytes(edited.read_bytes() + b"/// edited\n")
    assert not corpus.is_intact(again, FILES, seed=7)


def test_bytes_do_not_depend_on_hash_seed_or_process(generated: Path, tmp_path: Path) -> None:
    out = tmp_path / "subprocess"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    cmd = [sys.executable, str(ROOT / "bench" / "corpus.py"), str(out), "--files", str(FILES), "--seed", "7"]
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    assert _tree(out) == _tree(generated)


def test_other_seed_other_bytes_and_smaller_corpus_is_a_prefix(generated: Path, tmp_path: Path) -> None:
    assert corpus.render_file(3, seed=8) != corpus.render_file(3, seed=7)
    small = tmp_path / "small"
    corpus.generate(small, 10, seed=7)
    big = _tree(generated)
    assert all(big[rel] == data for rel, data in _tree(small).items() if rel != corpus.MARKER)


def test_shape_of_the_corpus(generated: Path) -> None:
    paths = sorted(generated.rglob("*.prompt"))
    assert len(paths) == FILES
    assert max(len(p.relative_to(generated).parts) for p in paths) >= 4  # flow/group/experimental/file
    sizes = [p.stat().st_size for p in paths]
    assert 1300 <= sum(sizes) / len(sizes) <= 1700
    text = "\n".join(p.read_text() for p in paths)
    for feature in (
        "/// param: temperature=",
        "/// flow: ",
        "/// node: ",
        "/// tag: ",
        "----- system -----",
        "----- user -----",
        "----- assistant -----",
        "/// section: rules stable",
        " dynamic\n",
        "dynamic user_context",
        "${question}",
        "{{ ",
        "{% for ",
        "{% if ",
        "{% else %}",
        ". /// ",  # an inline comment
    ):
        assert feature in text, feature
    assert "{#" not in text  # a comment to Jinja2 but code to promplate: never generated
    # some files have no separators at all
    assert any("----- " not in p.read_text() for p in paths)


def test_every_file_compiles(generated: Path, tmp_path: Path) -> None:
    from promptc.driver import build

    result = build(generated, tmp_path / "out")
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert not errors, "\n".join(f"{d.path}:{d.line}: {d.code} {d.message}" for d in errors[:10])
    assert result.ok and len(result.prompts) == FILES
    # template blocks are real: prompts have inferred inputs and need the python renderer
    manifest = result.manifest
    assert manifest is not None
    assert all(entry.inputs for entry in manifest.artifacts.values())


def test_compile_text_agrees(generated: Path) -> None:
    import promptc

    for path in sorted(generated.rglob("*.prompt"))[:5]:
        compiled = promptc.compile_text(path.read_text(), name=path.stem)
        assert compiled.ok, [d.message for d in compiled.diagnostics]


def test_every_file_parses_with_jinja2(generated: Path) -> None:
    jinja2 = pytest.importorskip("jinja2")
    meta = pytest.importorskip("jinja2.meta")

    env = jinja2.Environment()
    for path in sorted(generated.rglob("*.prompt")):
        names = meta.find_undeclared_variables(env.parse(path.read_text()))
        assert names or "{{" not in path.read_text(), path
