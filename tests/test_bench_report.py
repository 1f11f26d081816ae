"""`make bench`'s harness (bench/run.py) without measuring anything: the one issue-26 table it prints from a run's
figures, the report it re-prints from a saved run, and the serial build the cold build is compared with
(bench/serialbuild.py). No test here times anything."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


def _load(name: str):
    """A bench script as a module; it finds its neighbours (corpus, render, …) on a path set for the import only."""
    saved, before = list(sys.path), set(sys.modules)
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
        # the neighbours it imported (`corpus`, `render`, …) stay its own, not top-level modules of the suite
        for added in set(sys.modules) - before:
            if str(getattr(sys.modules[added], "__file__", "") or "").startswith(str(BENCH)) and added != spec.name:
                del sys.modules[added]
    return module


run = _load("run")
serialbuild = _load("serialbuild")

RENDER = {
    "rounds": 1,
    "cases": [
        {"key": "placeholder", "label": "placeholder", "prompt": "support/chat", "shape": "openai"},
        {"key": "python", "label": "python-renderer", "prompt": "agents/planner", "shape": "openai"},
    ],
    "samples": {
        "placeholder": {"promptc": [2e-6], "jinja2": [8e-6], "promplate": [6e-6], "format": [1e-6]},
        "python": {"promptc": [12e-6], "jinja2": [11e-6], "promplate": [11e-6]},
    },
}
LSP_FIGURES = {
    "files": 2000,
    "prompt": "a.prompt",
    "prompt_bytes": 1500,
    "start_ms": [800.0, 900.0, 1000.0],
    "pygls_floor_ms": 500.0,
    "start_median_ms": 900.0,
    "changes": 200,
    "rss_after_edits_mb": 150.0,
    "rss_peak_mb": 260.0,
    "rss_now_mb": 255.0,
    "code_lens_first_ms": 5000.0,
    "code_lens_again_ms": 30.0,
    **{f"{k}_{s}_ms": 5.0 for k in ("change", "include_change", "after_lens") for s in ("median", "p90", "max")},
    "targets": [
        {"key": "start", "measured": 900.0, "target": 1000.0},
        {"key": "change", "measured": 5.0, "target": 50.0},
        {"key": "include_change", "measured": 5.0, "target": 50.0},
        {"key": "after_lens", "measured": 5.0, "target": 50.0},
        {"key": "rss", "measured": 260.0, "target": 250.0},
    ],
}


def _results():
    """A run's figures, made up so that each target's verdict is known."""
    results = run.Results()
    results.settings = {"runs": 5, "sizes": [200, 2000], "reference": 2000, "large_size": 20000, "tiny": [100000]}
    results.settings.update(debounce_s=0.05, large_runs=2, tiny_runs=3, elapsed_s=780.0, seed=1)

    def put(key: str, files: int, seconds: float, rss_mb: float | None = None) -> None:
        m = results.get(key, key, files)
        m.samples = [seconds, seconds]
        m.rss_kb = [int(rss_mb * 1024)] if rss_mb else []

    put("touch@2000", 2000, 0.40)  # 4× the floor: MISS
    put("editfloor@2000", 2000, 0.10)
    put("noop@2000", 2000, 0.30)
    put("watch@2000", 2000, 0.08)  # (80 − 50) ms = 6× the floor: PASS
    put("watchfloor@2000", 2000, 0.005)
    put("cold@2000", 2000, 3.0, 150)  # 1.5× Jinja2: MISS; 12× the I/O floor: MISS
    put("jinja@2000", 2000, 2.0)
    put("jinja-loop@2000", 2000, 1.9)
    put("floor@2000", 2000, 0.25)
    put("cold@20000", 20000, 30.0, 190)  # 10×: PASS; but the no-op build's 210 MB: MISS
    put("noop@20000", 20000, 3.0, 210)
    put("touch@20000", 20000, 3.0, 180)
    put("tinycold@100000", 100000, 50.0, 500)
    put("tinynoop@100000", 100000, 3.0, 300)
    put("tinytouch@100000", 100000, 3.2, 310)  # 8× the 2,000-file one-edit build: PASS
    put("tinyeditfloor@100000", 100000, 0.5)
    results.identity = {
        "files": 2000,
        "compared": 2001,
        "differing": 0,
        "different": [],
        "only_in_parallel": [],
        "only_in_serial": [],
        "serial_s": 6.0,
        "parallel_s": 3.5,
        "serial_parallel_workers": 2,
    }
    results.pathological = {
        "limit": 2.6,
        "repeat": 3,
        "rows": [
            {"input": "linear input", "n": 100, "bytes": 1000, "small": 1.0, "large": 2.1},
            {"input": "quadratic input", "n": 100, "bytes": 1000, "small": 1.0, "large": 4.0},
        ],
    }
    results.lsp = LSP_FIGURES
    results.render = RENDER
    return results


def _status(targets, start: str) -> str:
    found = [t for t in targets if t.name.startswith(start)]
    assert len(found) == 1, (start, [t.name for t in targets])
    return found[0].status.split(" ")[0]


def test_every_target_of_issue_26_is_judged_against_its_floor() -> None:
    targets = run.issue26_targets(_results())
    expected = {
        "one-file rebuild": "MISS",
        "`promptc watch`": "PASS",
        "cold build ≤ 0.75× Jinja2": "MISS",
        "cold build ≤ 8× the I/O floor": "MISS",
        "cold build output byte-identical": "PASS",
        "20,000 files: cold build linear": "PASS",
        "20,000 files: peak RSS": "MISS",
        "100,000 tiny prompts: peak RSS": "PASS",
        "100,000 tiny prompts: one-edit build": "PASS",
        "linear (time at 2N / at N): linear input": "PASS",
        "linear (time at 2N / at N): quadratic input": "MISS",
        "language server: `initialize`": "PASS",
        "language server: a change → diagnostics ≤ 50 ms at p90 (a corpus prompt)": "PASS",
        "language server: a change → diagnostics ≤ 50 ms at p90 (a prompt with a partial)": "PASS",
        "language server: a change → diagnostics ≤ 50 ms at p90 (after the code lens)": "PASS",
        "language server: peak RSS": "MISS",
        "render ≤ 0.5× Jinja2": "PASS",
        "typed python renderer ≤ 1.0× promplate": "MISS",
    }
    assert {start: _status(targets, start) for start in expected} == expected
    assert len(targets) == len(expected)
    one_file = targets[0]
    assert (one_file.measured, one_file.judged, one_file.limit) == ("400 ms", "4.00×", "≤ 3×")
    assert "100 ms" in one_file.peer  # the floor it is judged against, from the same run
    rss = next(t for t in targets if t.name.startswith("20,000 files: peak RSS"))
    assert rss.judged == "210 MB" and "no-op 210 MB" in rss.measured


def test_a_skipped_part_says_why_and_is_not_judged() -> None:
    results = run.Results()
    results.settings = {"reference": 2000, "large_size": 0, "tiny": [], "skipped": {"large": "--no-large"}}
    results.settings["skipped"].update(tiny="--no-tiny", lsp="--no-lsp", pathological="--no-pathological")
    targets = run.issue26_targets(results)
    assert {t.status for t in targets} == {"n/a"}
    assert [t.limit for t in targets if t.name.startswith("20,000 files")] == ["≤ 11×", "≤ 200 MB"]
    lsp = [t for t in targets if t.name.startswith("language server")]
    assert len(lsp) == 5 and {t.measured for t in lsp} == {"not measured (--no-lsp)"}
    assert [t.limit for t in lsp] == ["≤ 1000 ms", "≤ 50 ms", "≤ 50 ms", "≤ 50 ms", "≤ 250 MB"]
    assert any(t.measured == "not measured (--no-tiny)" for t in targets)


def test_a_differing_serial_build_fails_the_identity_row() -> None:
    results = _results()
    results.identity.update(differing=1, different=["a/b.json"])
    row = next(t for t in run.issue26_targets(results) if t.name.startswith("cold build output"))
    assert row.status == "MISS" and "a/b.json" in row.measured


def test_a_saved_run_prints_the_same_report_and_ends_with_the_issue_26_table(tmp_path: Path) -> None:
    results = _results()
    saved = json.loads(json.dumps(results.to_json()))
    again = run.Results.from_json(saved)
    assert run.report(again, markdown=False) == run.report(results, markdown=False)
    markdown = run.report(results, markdown=True)
    last = markdown[markdown.index("Issue 26's targets") :]
    assert "| one-file rebuild" in last and "Issue 17" not in last
    doc = tmp_path / "performance.md"
    doc.write_text(f"prose\n{run.DOC_BEGIN}\nthe previous run\n{run.DOC_END}\nmore prose\n")
    run.update_doc(doc, markdown)
    text = doc.read_text()
    assert (
        text.startswith("prose\n") and text.endswith(f"{run.DOC_END}\nmore prose\n") and "the previous run" not in text
    )


def test_compare_names_every_difference(tmp_path: Path) -> None:
    for side, files in (("a", {"x.json": b"1", "d/y.json": b"2", "only_a": b""}), ("b", {"x.json": b"1"})):
        for rel, data in files.items():
            (tmp_path / side / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / side / rel).write_bytes(data)
    (tmp_path / "b" / "d").mkdir()
    (tmp_path / "b" / "d" / "y.json").write_bytes(b"3")
    diff = serialbuild.compare(str(tmp_path / "a"), str(tmp_path / "b"))
    assert diff == {"files": 3, "only_in_first": ["only_a"], "only_in_second": [], "different": ["d/y.json"]}


@pytest.mark.skipif(sys.platform != "linux", reason="the pool forks on Linux")
def test_the_serial_build_is_serial_and_equals_the_parallel_one(tmp_path: Path) -> None:
    """The helper must keep matching how the driver decides on its pool: with more prompts than the pool's
    threshold it compiles every one in its own process, and writes what a parallel build writes."""
    import promptc.driver.pool as pool

    src = tmp_path / "src"
    src.mkdir()
    count = pool.PARALLEL_THRESHOLD + 4
    for i in range(count):
        (src / f"p{i:03d}.prompt").write_text(f"/// section: s stable\nPrompt {i}.\n/// section: d\n${{x{i}}}\n")
    (tmp_path / "pyproject.toml").write_text('[tool.promptc]\ntokenizer = "approx-bytes/4"\n')
    done = subprocess.run(
        [sys.executable, str(BENCH / "serialbuild.py"), "src", "serial/out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    helper = json.loads(done.stdout.strip().splitlines()[-1])
    assert helper["exit"] == 0 and helper["compiled"] == count and helper["children_cpu_s"] == 0
    assert helper["parallel_threshold"] == pool.PARALLEL_THRESHOLD
    cmd = [sys.executable, "-m", "promptc", "build", "src", "-o", "parallel/out", "--quiet"]
    subprocess.run(cmd, cwd=tmp_path, capture_output=True, check=True)
    diff = serialbuild.compare(str(tmp_path / "parallel" / "out"), str(tmp_path / "serial" / "out"))
    assert diff["files"] == count + 1 and not (diff["only_in_first"] or diff["only_in_second"] or diff["different"])
