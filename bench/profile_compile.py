"""Where a cold compile spends its time, per file, serially, in one process.

    .venv/bin/python bench/profile_compile.py [--files 1000] [--rounds 3] [--cprofile N] [--jinja2]

Generates (or reuses) the benchmark corpus (`bench/corpus.py`, seed 1) under `bench/corpus/`, reads it into a
`SourceTree` the way the driver does, and compiles every prompt with `compile_prompt`, one after the other, as one
pool worker does. Each round starts with cold caches (the section compile check's, the blocks read and parsed, the
sections analysed, the params' checks and values, the directive keys' suggestions, the token meters' memos, the
partial loader): a cold build's worker starts with none of them either. Every stage of `STAGES` and every pass of
`PASSES` is timed; the table shows milliseconds a file for the fastest round. `--cprofile N` adds cProfile's top N
functions by own time (one round, not timed); `--jinja2` times Jinja2's `parse` + `find_undeclared_variables` over
the same files in the same process (the reference the cold-build target compares with).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import pstats
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402

from promptc.analysis import inference  # noqa: E402
from promptc.backend import meter as meter_module  # noqa: E402
from promptc.backend import params  # noqa: E402
from promptc.compile import pipeline  # noqa: E402
from promptc.facts.config import Config  # noqa: E402
from promptc.passes import directives  # noqa: E402
from promptc.passes.context import SourceTree  # noqa: E402
from promptc.runtime import template  # noqa: E402
from promptc.syntax.parse import warm  # noqa: E402


def _corpus(files: int) -> Path:
    folder = HERE / "corpus" / f"profile{files}"
    if not corpus.is_current(folder, files):
        corpus.generate(folder, files)
    return folder


def _tree(folder: Path) -> SourceTree:
    files = {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*.prompt"))}
    return SourceTree(files=files, root_display="src")


def _cold() -> None:
    """Forget what an earlier round cached: a worker of a cold build starts without it."""
    template._CHECKED.clear()
    inference._TREES.clear()
    inference._SECTIONS.clear()
    template._read_short.cache_clear()
    params._CHECKED.clear()
    directives.DIRECTIVES._typos.clear()
    directives._TYPED.clear()
    template.compile_section.cache_clear()
    for name in list(meter_module.OFFLINE_ENCODINGS) + [meter_module.APPROX]:
        known = meter_module.meter(name)  # the encoding stays loaded (a worker loads it once)
        known._memo.clear()
        known._chars = 0


def _timed(name: str, function: Callable, totals: dict[str, float]) -> Callable:
    def stage(*args: object) -> object:
        start = time.perf_counter()
        try:
            return function(*args)
        finally:
            totals[name] += time.perf_counter() - start

    return stage


def _stages(totals: dict[str, float]) -> tuple:
    passes = tuple(_timed(f"  {p.__name__}", p, totals) for p in pipeline.PASSES)

    def run_passes(state: pipeline.Compilation) -> None:
        assert state.source is not None
        doc = pipeline.Document(state.source, state.name, state.items)
        ctx = pipeline._context(state)
        for compiler_pass in passes:
            doc = compiler_pass(doc, ctx)
        state.document = doc

    stages = []
    for stage in pipeline.STAGES:
        if stage is pipeline.passes:
            stages.append(_timed("passes", run_passes, totals))
        else:
            stages.append(_timed(stage.__name__, stage, totals))
    return tuple(stages)


def _round(tree: SourceTree, names: list[str], stages: tuple | None) -> tuple[float, list[bytes | None]]:
    _cold()
    config = Config()
    partials = pipeline.PartialLoader(config, tree)
    out: list[bytes | None] = []
    gc.collect()
    start = time.perf_counter()
    for rel in names:
        if stages is None:
            state = pipeline.compile_prompt(rel, config, tree, partials=partials)
        else:
            state = pipeline.compile_prompt(rel, config, tree, partials=partials, stages=stages)
        out.append(state.encoded)
    return time.perf_counter() - start, out


def _jinja2(tree: SourceTree, names: list[str], rounds: int) -> float | None:
    try:
        import jinja2
        from jinja2 import meta
    except ImportError:
        return None
    best = float("inf")
    for _ in range(rounds):
        env = jinja2.Environment()
        gc.collect()
        start = time.perf_counter()
        for rel in names:
            meta.find_undeclared_variables(env.parse(tree.files[rel].decode()))
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cprofile", type=int, default=0, metavar="N", help="also print cProfile's top N")
    parser.add_argument("--jinja2", action="store_true", help="time Jinja2 over the same files")
    args = parser.parse_args(argv)

    tree = _tree(_corpus(args.files))
    names = sorted(tree.files)
    warm()
    _round(tree, names[:20], None)  # imports, the grammar, the tokenizer's ranks

    plain = float("inf")
    stage_best: dict[str, float] = {}
    digest = ""
    for _ in range(args.rounds):
        seconds, artifacts = _round(tree, names, None)
        plain = min(plain, seconds)
        digest = hashlib.sha256(b"".join(b"%d:%s" % (len(a or b""), a or b"") for a in artifacts)).hexdigest()
        totals: dict[str, float] = defaultdict(float)
        _round(tree, names, _stages(totals))
        if not stage_best or sum(v for k, v in totals.items() if not k.startswith(" ")) < sum(
            v for k, v in stage_best.items() if not k.startswith(" ")
        ):
            stage_best = dict(totals)

    n = len(names)
    whole = sum(v for k, v in stage_best.items() if not k.startswith(" "))
    print(f"{n} files, best of {args.rounds} rounds, serial, cold caches; artifacts sha256 {digest[:16]}")
    print(f"compile_prompt: {plain / n * 1000:.3f} ms a file (untimed stages)")
    print(f"{'stage':<24} {'ms a file':>10} {'share':>7}")
    for name, seconds in stage_best.items():
        print(f"{name:<24} {seconds / n * 1000:>10.3f} {seconds / whole:>7.1%}")
    print(f"{'total (timed stages)':<24} {whole / n * 1000:>10.3f}")
    if args.jinja2:
        jinja = _jinja2(tree, names, args.rounds)
        if jinja is None:
            print("jinja2 is not installed (pip install -e '.[bench]')")
        else:
            print(
                f"jinja2 parse + find_undeclared_variables: {jinja / n * 1000:.3f} ms a file; "
                f"promptc / jinja2 = {plain / jinja:.2f}x"
            )
    if args.cprofile:
        profile = cProfile.Profile()
        _cold()
        partials = pipeline.PartialLoader(Config(), tree)
        profile.enable()
        for rel in names:
            pipeline.compile_prompt(rel, Config(), tree, partials=partials)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.cprofile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
