"""`promptc reconcile` on a large usage log: how fast the records are read and classified.

Writes N usage records (default 1,000,000: about 430 MB of JSONL, three prompts of a small build,
a request every few seconds with hits, misses and an expiry now and then) once under
bench/corpus/reconcile/, then times `promptc reconcile --format json` on it in a fresh process
(`--runs` times, the fastest kept: noise only ever adds time), and the reader alone (the records
read and checked, nothing classified) in this process. Prints records per second and MB per
second of each, and the command's peak RSS. The times are CPU seconds (user and system), which a
machine shared with other work changes much less than the wall-clock time. Never a timed test:
the reader's correctness is tests/test_reconcile_reader.py's.

    python bench/reconcile.py [--records N] [--runs K] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
WORK = BENCH / "corpus" / "reconcile"
PROMPTS = {
    "support": "/// param: model=gpt-4o\n----- system -----\n"
    + " ".join(f"Rule {i}: answer from the article." for i in range(300))
    + "\n----- user -----\n${q}\n",
    "triage": "/// param: model=gpt-4o-mini\n----- system -----\nSort the ticket.\n----- user -----\n${q}\n",
    "writer": "/// param: model=claude-sonnet-4-5, max_tokens=100\n/// cache_ttl: 5m\n----- system -----\n"
    + " ".join(f"Style {i}: short sentences, no jargon." for i in range(300))
    + "\n----- user -----\n${q}\n",
}
T0 = 1_796_115_600.0  # 2026-12-01T09:00:00Z


def project() -> Path:
    """A built project of three prompts under WORK (made once)."""
    root = WORK / "project"
    if (root / "build" / "manifest.json").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    (root / "prompts_src").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[tool.promptc]\nsrc = "prompts_src"\nout = "build"\n')
    for name, text in PROMPTS.items():
        (root / "prompts_src" / f"{name}.prompt").write_text(text)
    subprocess.run([sys.executable, "-m", "promptc", "build"], cwd=root, check=True, capture_output=True)
    return root


def records_file(root: Path, count: int) -> Path:
    """`count` records of the three prompts, a few seconds apart (made once per count)."""
    from promptc.runtime.usage import iso_timestamp

    path = WORK / f"usage-{count}.jsonl"
    if path.exists():
        return path
    artifacts = {name: json.loads((root / "build" / f"{name}.json").read_text()) for name in PROMPTS}
    rng = random.Random(7)
    when = T0
    partial = path.with_suffix(".partial")
    with partial.open("w", encoding="utf-8") as out:
        for _ in range(count):
            name = rng.choice(("support", "support", "triage", "writer"))
            art = artifacts[name]
            cacheable = art["cache"]["cacheable_tokens"] or 0
            anthropic = name == "writer"
            when += rng.uniform(0.5, 8.0) + (900 if rng.random() < 0.001 else 0)
            read = cacheable if rng.random() < 0.9 else 0
            record = {
                "schema": "promptc.usage/1",
                "prompt": name,
                "artifact_sha256": None,
                "prefix_sha256": art["cache"]["prefix_sha256"],
                "shape": "anthropic" if anthropic else "openai",
                "provider": "anthropic" if anthropic else "openai",
                "model": art["model"],
                "response_model": None,
                "started_at": iso_timestamp(when),
                "timestamp": iso_timestamp(when + rng.uniform(0.3, 3.0)),
                "input_tokens": cacheable + rng.randint(20, 400),
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": (0 if read else cacheable) if anthropic else None,
                "output_tokens": rng.randint(5, 300),
                "usage": {},
            }
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
    partial.replace(path)
    return path


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_command(root: Path, path: Path, runs: int) -> tuple[float, int]:
    """The least CPU time of `runs` fresh `promptc reconcile` processes, and the largest peak RSS (KB)."""
    best = float("inf")
    peak = 0
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        started = _children_cpu()
        done = subprocess.run(
            [sys.executable, "-m", "promptc", "reconcile", str(path), "--format", "json"],
            cwd=root,
            capture_output=True,
            env={**os.environ, "CI": ""},
        )
        best = min(best, _children_cpu() - started)
        if done.returncode != 0:
            raise SystemExit(f"promptc reconcile failed:\n{done.stderr.decode()}")
        peak = max(peak, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before)
    return best, peak


def time_reader(path: Path, runs: int) -> float:
    from promptc.tools.reconcile import ReadStats, read_records

    best = float("inf")
    for _ in range(runs):
        stats = ReadStats()
        started = time.process_time()
        for _item in read_records(path, stats):
            pass
        best = min(best, time.process_time() - started)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    root = project()
    path = records_file(root, args.records)
    megabytes = path.stat().st_size / 1e6
    command, rss = time_command(root, path, args.runs)
    reader = time_reader(path, args.runs)
    result = {
        "records": args.records,
        "megabytes": round(megabytes, 1),
        "command_cpu_seconds": round(command, 2),
        "command_records_per_second": round(args.records / command),
        "command_peak_rss_mb": round(rss / 1024, 1),
        "reader_cpu_seconds": round(reader, 2),
        "reader_records_per_second": round(args.records / reader),
        "reader_mb_per_second": round(megabytes / reader, 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{args.records:,} records, {megabytes:.0f} MB")
        print(
            f"  promptc reconcile: {command:.2f} CPU s ({result['command_records_per_second']:,} records/s), "
            f"peak RSS {rss / 1024:.0f} MB"
        )
        print(
            f"  the reader alone:  {reader:.2f} CPU s ({result['reader_records_per_second']:,} records/s, "
            f"{result['reader_mb_per_second']} MB/s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
