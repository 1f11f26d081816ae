"""What a fresh `promptc` process loads and compiles before it does anything (issue 26: a one-file
rebuild as a fresh process costs about what the edit costs): a build that finds nothing to compile
imports nothing of the compile stack, and the record types' generated methods come from their
cache beside the bytecode instead of being compiled again."""

from __future__ import annotations

import dataclasses
import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import promptc.runtime
import promptc.runtime.render
from promptc.facts import records

#: what a no-op build must not import: the compile stack, its libraries, the process pool, the
#: renderer and the bindings generators
COMPILE_STACK = (
    "promptc.compile.pipeline",
    "promptc.passes.inference",
    "promptc.analysis.inference",
    "promptc.syntax.parse",
    "promptc.syntax.nodes",
    "promptc.backend.emit",
    "promptc.backend.meter",
    "promptc.runtime.template",
    "promptc.runtime.render",
    "promptc.bindings",
    "lark",
    "tiktoken",
    "multiprocessing",
    "concurrent.futures",
)


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _modules_after_build(cwd: Path) -> list[str]:
    code = textwrap.dedent(
        """
        import sys
        from promptc.cli import main
        sys.argv = ["promptc", "build", "-q"]
        try:
            main()
        except SystemExit as exc:
            assert not exc.code, exc.code
        print("\\n".join(sorted(sys.modules)))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120, env=_environment()
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_a_build_that_compiles_nothing_imports_nothing_of_the_compile_stack(tmp_path: Path) -> None:
    (tmp_path / "prompts_src").mkdir()
    for index in range(3):
        (tmp_path / "prompts_src" / f"p{index}.prompt").write_text(f"----- system -----\nYou help {index}.\n${{q}}\n")
    first = _modules_after_build(tmp_path)
    assert "promptc.compile.pipeline" in first  # the first build compiles: the check below can fail
    again = _modules_after_build(tmp_path)
    loaded = [name for name in COMPILE_STACK if name in again]
    assert loaded == [], f"a no-op build imported {loaded}"
    # an edit compiles that one prompt in this process: the compile stack, and still no pool
    (tmp_path / "prompts_src" / "p1.prompt").write_text("----- system -----\nYou help one.\n${q}\n")
    edited = _modules_after_build(tmp_path)
    assert "promptc.compile.pipeline" in edited
    assert [name for name in ("multiprocessing", "promptc.bindings", "promptc.runtime.render") if name in edited] == []


def test_the_runtime_package_re_exports_the_renderers_names_on_first_use() -> None:
    assert promptc.runtime.__all__ == promptc.runtime.render.__all__
    for name in promptc.runtime.__all__:
        assert getattr(promptc.runtime, name) is getattr(promptc.runtime.render, name)
    with pytest.raises(AttributeError):
        promptc.runtime.compile_prompt  # noqa: B018 - not a runtime name


# ---------------------------------------------------------------------------------------------
# `promptc.facts.records.dataclass`


def _pair(decorator: object) -> type:
    @decorator  # type: ignore[operator]
    class Point:
        """A point."""

        x: int
        y: str = "a"
        tags: tuple[str, ...] = dataclasses.field(default=())

    return Point


def test_a_record_is_the_dataclass_that_dataclasses_makes() -> None:
    options = {"frozen": True, "slots": True}
    ours = _pair(records.dataclass(**options))
    theirs = _pair(dataclasses.dataclass(**options))
    assert dataclasses.is_dataclass(ours)
    assert [(f.name, f.default) for f in dataclasses.fields(ours)] == [
        (f.name, f.default) for f in dataclasses.fields(theirs)
    ]
    assert str(inspect.signature(ours)) == str(inspect.signature(theirs))
    assert ours.__init__.__annotations__ == theirs.__init__.__annotations__  # evaluated, as dataclasses leaves them
    a, b = ours(1, "b", ("t",)), ours(1, "b", ("t",))
    assert a == b and hash(a) == hash(b) and a != ours(2)
    assert repr(a).endswith("Point(x=1, y='b', tags=('t',))")
    assert dataclasses.replace(a, x=3).x == 3 and ours.__slots__ == theirs.__slots__
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.x = 2  # type: ignore[misc]


_CLASSES = """
from promptc.facts.records import compiled_texts, dataclass

@dataclass(frozen=True, slots=True)
class One:
    a: int
    b: str = ""

@dataclass
class Two:
    c: list[int]

assert One(1, "x") == One(1, "x") and Two([1]).c == [1]
print(compiled_texts())
"""


def _import_fresh(folder: Path, env: dict[str, str]) -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, '.'); import shapes_module"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def test_generated_methods_are_compiled_once_and_then_read_from_the_cache(tmp_path: Path) -> None:
    (tmp_path / "shapes_module.py").write_text(_CLASSES)
    env = _environment()
    assert _import_fresh(tmp_path, env) > 0  # the first process compiles the texts ...
    caches = list((tmp_path / "__pycache__").glob("shapes_module.*.records"))
    assert len(caches) == 1
    assert _import_fresh(tmp_path, env) == 0  # ... the next takes them from the cache
    # a damaged cache is no cache: the texts are compiled again, and the classes are right
    caches[0].write_bytes(b"\x00garbage")
    assert _import_fresh(tmp_path, env) > 0
    assert _import_fresh(tmp_path, env) == 0
    # a changed class misses the cache (keyed by the generated text) and is compiled; a changed
    # default is not in the text (dataclasses passes defaults in) and needs nothing new
    (tmp_path / "shapes_module.py").write_text(_CLASSES.replace('b: str = ""', 'b: str = "changed"'))
    assert _import_fresh(tmp_path, env) == 0
    (tmp_path / "shapes_module.py").write_text(_CLASSES.replace('b: str = ""', 'b: str = ""\n    d: int = 0'))
    assert _import_fresh(tmp_path, env) > 0


def test_no_cache_is_written_where_bytecode_would_not_be(tmp_path: Path) -> None:
    (tmp_path / "shapes_module.py").write_text(_CLASSES)
    env = {**_environment(), "PYTHONDONTWRITEBYTECODE": "1"}
    assert _import_fresh(tmp_path, env) > 0
    assert list(tmp_path.rglob("*.records")) == []
    assert _import_fresh(tmp_path, env) > 0


def test_every_record_type_of_the_package_is_made_by_the_cached_dataclass() -> None:
    """`facts.records.dataclass` everywhere: one `@dataclass` from the standard library would put
    its compile back into every process's start-up."""
    package = Path(records.__file__).resolve().parent.parent
    plain = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py"))
        if path.name != "records.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if line.startswith("from dataclasses import") and "dataclass," in f"{line},".replace(" ", "").split("import")[1]
    ]
    assert plain == []


def test_the_cache_folder_is_the_one_platformdirs_names(tmp_path: Path, monkeypatch) -> None:
    """On Linux the folder is worked out by the XDG rule without importing platformdirs: the same
    folder platformdirs names, with and without `XDG_CACHE_HOME`."""
    import platformdirs

    from promptc.syntax.caches import cache_folder

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache_folder() == platformdirs.user_cache_dir("promptc", appauthor=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_folder() == platformdirs.user_cache_dir("promptc", appauthor=False)


def test_the_command_exits_hard_with_its_status_its_output_and_the_record_caches_saved(tmp_path: Path) -> None:
    """`promptc` (and `python -m promptc`) skips the interpreter's teardown at exit: what it printed
    is all there, the status is the command's, and the record types' cache is written."""
    import promptc.runtime.model as model

    cache = Path(model.__file__).parent / "__pycache__" / f"model.{sys.implementation.cache_tag}.records"
    cache.unlink(missing_ok=True)
    (tmp_path / "prompts_src").mkdir()
    (tmp_path / "prompts_src" / "a.prompt").write_text("Hi ${name}.\n" * 2000)
    built = subprocess.run(
        [sys.executable, "-m", "promptc", "build", "--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        env=_environment(),
        timeout=120,
    )
    assert built.returncode == 0 and b'"written": true' in built.stdout, built.stderr
    assert cache.is_file()
    failed = subprocess.run(
        [sys.executable, "-m", "promptc", "build", "missing"], cwd=tmp_path, capture_output=True, env=_environment()
    )
    assert failed.returncode == 1 and b"error[E906]" in failed.stdout and failed.stdout.endswith(b"in 0 files\n")
