"""The JavaScript runtime (`runtime-js/`) renders as the Python runtime does: shared golden vectors.

The default suite checks that the vectors in `tests/vectors/` are what the Python runtime makes of
them now (regenerate with `UPDATE_GOLDEN=1`); `.ci/run` runs node's test runner over the same
vectors (`ci_only`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from promptc.facts.language import SHAPES

from . import js_vectors
from .conftest import ROOT

UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


def test_vectors_are_what_the_python_runtime_renders() -> None:
    if UPDATE:
        js_vectors.write_all()
    stored = sorted(p.stem for p in js_vectors.VECTORS.glob("*.json"))
    assert stored == sorted(js_vectors.SOURCES), "run UPDATE_GOLDEN=1 python -m pytest tests/test_js_runtime.py"
    for name in stored:
        path = js_vectors.VECTORS / f"{name}.json"
        text = path.read_text(encoding="utf-8")
        fresh = js_vectors.dump(js_vectors.vector(name, json.loads(text)["artifact"]))
        assert text == fresh, f"{path.name} is stale: run UPDATE_GOLDEN=1 python -m pytest tests/test_js_runtime.py"


def test_the_vectors_cover_every_shape_and_every_error() -> None:
    outcomes: set[str] = set()
    for path in js_vectors.VECTORS.glob("*.json"):
        for case in json.loads(path.read_text(encoding="utf-8"))["cases"]:
            if "error" in case:
                outcomes.add(case["error"]["type"])
                continue
            for shape, result in case["shapes"].items():
                outcomes.add(f"{shape}:{'error' if 'error' in result else 'ok'}")
    expected = {f"{shape}:ok" for shape in SHAPES}
    assert expected | {"MissingInputsError", "InputTypeError", "RenderError", "anthropic:error"} <= outcomes


@pytest.mark.ci_only
def test_node_renders_the_vectors_as_python_does() -> None:
    node = shutil.which("node")
    assert node, "node is not installed (.ci/run installs it)"
    done = subprocess.run(
        [node, "--test", "test/"], cwd=ROOT / "runtime-js", capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout


TSC_FLAGS = ["--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022"]
BAD_CALLS = (
    'r.body("bedrockx", {});',  # not a shape
    'r.asShape("anthropic", { caching: "auto" });',  # not a caching mode
    'r.body("anthropic-vertex", { previousMessageId: 42 });',  # not a message id
)


@pytest.mark.ci_only
def test_tsc_checks_the_runtime_declarations(tmp_path) -> None:
    """runtime-js/test/types.ts (every shape, the anthropic shapes' options) passes `tsc --strict`
    against the runtime's .d.ts files, and each call they do not allow is caught."""
    tsc = ROOT / "runtime-js" / "node_modules" / ".bin" / "tsc"
    assert tsc.exists(), "run `npm ci` in runtime-js (.ci/run does)"
    app = tmp_path / "app"
    (app / "node_modules").mkdir(parents=True)
    (app / "node_modules" / "promptc-runtime").symlink_to(ROOT / "runtime-js", target_is_directory=True)
    (app / "package.json").write_text('{"type": "module"}\n')
    (app / "good.ts").write_text((ROOT / "runtime-js" / "test" / "types.ts").read_text(encoding="utf-8"))
    good = subprocess.run([str(tsc), *TSC_FLAGS, "good.ts"], cwd=app, capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stdout
    head = 'import { load } from "promptc-runtime";\nconst r = load("build").render("x");\n'
    for i, call in enumerate(BAD_CALLS):
        (app / f"bad{i}.ts").write_text(head + call + "\n")
        bad = subprocess.run([str(tsc), *TSC_FLAGS, f"bad{i}.ts"], cwd=app, capture_output=True, text=True, timeout=300)
        assert bad.returncode != 0 and f"bad{i}.ts(3," in bad.stdout, (call, bad.stdout)
