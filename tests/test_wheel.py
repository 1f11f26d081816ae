"""`pip install .` (not only an editable install) must work: the grammar, schemas, built-in
partials and data ship inside the wheel, and the package finds them there."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .conftest import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Build from a copy of what the wheel is made of: setuptools writes its scratch folders into the
    # project, and the two tests of this module may build at once on two xdist workers.
    tree = tmp_path_factory.mktemp("tree")
    for name in ("pyproject.toml", "setup.cfg", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    for name in ("compiler", "grammar"):
        shutil.copytree(ROOT / name, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(tree)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        pytest.fail(result.stdout + result.stderr)
    (path,) = out.glob("promptc_compiler-*.whl")
    return path


def test_wheel_contains_package_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "promptc/grammar/prompt.lark",
        "promptc/schemas/artifact.schema.json",
        "promptc/schemas/manifest.schema.json",
        "promptc/data/providers.json",
        "promptc/data/prices.json",
        "promptc/tools/report.py",
        "promptc/data/diagnostics/W705.txt",
        "promptc/std/env.prompt",
        "promptc/std/git.prompt",
        "promptc/std/date.prompt",
        "promptc/py.typed",
        "promptc/__main__.py",
    ):
        assert required in names, required
    # nothing installs a top-level `compiler` module (a distribution of that name exists elsewhere)
    assert not any(n.split("/", 1)[0] in ("compiler", "grammar") for n in names), sorted(names)
    for init in (ROOT / "compiler").rglob("__init__.py"):  # every subpackage ships
        folder = init.parent.relative_to(ROOT / "compiler").as_posix()
        assert f"promptc/{folder}/__init__.py".replace("/./", "/") in names, folder
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "promptc = promptc.cli:run" in entry_points


def test_compiles_from_the_wheel_alone(wheel: Path, tmp_path: Path) -> None:
    code = (
        "import promptc, promptc.syntax.parse as p; "
        f"assert promptc.__file__.startswith({str(wheel)!r}), promptc.__file__; "
        "print(promptc.compile_text('----- system -----\\nBe brief.\\n/// include: std/date\\n----- user -----\\nHi ${name}').artifact.inputs)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": str(wheel), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "name" in result.stdout
