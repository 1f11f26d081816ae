"""A `promptc build` forced serial: the reference that the parallel cold build must equal, byte for byte.

Runs the CLI's `build` in this process with the process pool turned off where `promptc.driver.pool.compile_many`
decides on it (`_workers` answers 1 and the pool's `PARALLEL_THRESHOLD` is out of reach). The driver's own copy of
the threshold (`promptc.driver.PARALLEL_THRESHOLD`, which picks the spool folder and the token-count preload) is left
as it is, so the build takes the path of a parallel one except for where each prompt compiles. It checks that it
really compiled every prompt here: it counts the calls of `promptc.driver.pool._compile` (the serial path's compile)
and that no child process ran.

Run it from the folder whose `pyproject.toml` configures the build, with an OUT that has no incremental state (a
fresh folder), so that every prompt is compiled. Prints one JSON line: the exit status, the prompts compiled here,
the CPU seconds of child processes (0 when nothing forked), the wall time, and the pool a parallel build would use
(its workers, and its threshold in prompts).

    python bench/serialbuild.py SRC OUT
    python bench/serialbuild.py --compare DIR_A DIR_B     # the files that differ between two output folders
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time


def build_serial(src: str, out: str) -> dict:
    import promptc.driver.pool as pool
    from promptc.cli import main

    compiled = 0
    original = pool._compile

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - a transparent wrapper
        nonlocal compiled
        compiled += 1
        return original(*args, **kwargs)

    parallel = {"workers": pool._workers(), "threshold": pool.PARALLEL_THRESHOLD}
    pool._workers = lambda: 1
    pool._compile = counted
    pool.PARALLEL_THRESHOLD = 1 << 62
    started = time.perf_counter()
    try:
        main(["build", src, "-o", out, "--quiet"], prog_name="promptc")
        status = 0
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    seconds = time.perf_counter() - started
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "exit": status,
        "compiled": compiled,
        "children_cpu_s": round(children.ru_utime + children.ru_stime, 3),
        "seconds": round(seconds, 3),
        "parallel_workers": parallel["workers"],
        "parallel_threshold": parallel["threshold"],
    }


def tree_bytes(root: str) -> dict[str, bytes]:
    """Every file under `root` (links not followed) by its `/`-separated relative path, with its bytes."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as handle:
                found[os.path.relpath(path, root).replace(os.sep, "/")] = handle.read()
    return found


def compare(a: str, b: str) -> dict:
    """How two output folders differ: files only in one, and files in both whose bytes differ."""
    left, right = tree_bytes(a), tree_bytes(b)
    return {
        "files": len(left),
        "only_in_first": sorted(left.keys() - right.keys()),
        "only_in_second": sorted(right.keys() - left.keys()),
        "different": sorted(rel for rel in left.keys() & right.keys() if left[rel] != right[rel]),
    }


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "--compare":
        result = compare(argv[1], argv[2])
        print(json.dumps(result))
        return 0 if not (result["only_in_first"] or result["only_in_second"] or result["different"]) else 1
    if len(argv) != 2:
        print("usage: python bench/serialbuild.py SRC OUT | --compare DIR_A DIR_B", file=sys.stderr)
        return 2
    result = build_serial(*argv)
    print(json.dumps(result), flush=True)
    return result["exit"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
