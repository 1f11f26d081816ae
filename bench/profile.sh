#!/usr/bin/env bash
# Where `promptc build` spends its time, on a benchmark corpus.
#
#   bench/profile.sh [FILES] [cold|noop|touch]      (default: 2000 cold)
#
# Prints two profiles:
#   1. cProfile of the real CLI (`python -m cProfile -s cumulative promptc build …`), top entries. With a process
#      pool the compile work happens in the workers and shows up here only as `pool.map` waiting on a lock.
#   2. The same build in one process (the pool switched off by patching promptc.driver), so that the compile
#      pipeline itself is visible: pyinstrument's call tree when installed (`pip install pyinstrument`), else
#      cProfile sorted by cumulative time, restricted to the compiler's own functions.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$PWD/.venv/bin/python}
PROMPTC=${PROMPTC:-$PWD/.venv/bin/promptc}
FILES=${1:-2000}
MODE=${2:-cold}
TOP=${TOP:-30}

"$PY" bench/run.py --prepare --sizes "$FILES" >&2
ws=$PWD/bench/corpus/n$FILES
src=$ws/src
out=$ws/out
touched=$(cd "$src" && find . -name '*.prompt' ! -name '_*' | sed 's|^\./||' | LC_ALL=C sort | awk '{a[NR]=$0} END {print a[int(NR/2)+1]}')
backup=$(mktemp)
cp "$src/$touched" "$backup"
trap 'cp "$backup" "$src/$touched"; rm -f "$backup"' EXIT

prepare() {
  case "$MODE" in
    cold) rm -rf "$out" "$ws/.promptc-cache" ;;
    noop) (cd "$ws" && "$PROMPTC" build src -o out -q) ;;
    touch)
      cp "$backup" "$src/$touched"
      (cd "$ws" && "$PROMPTC" build src -o out -q)
      printf '/// profile: touched\n' >>"$src/$touched"
      ;;
    *) echo "unknown mode $MODE (cold, noop or touch)" >&2; exit 2 ;;
  esac
}

echo "== 1. cProfile of \`promptc build\` ($FILES files, $MODE), top $TOP by cumulative time"
prepare
(cd "$ws" && "$PY" -m cProfile -s cumulative "$PROMPTC" build src -o out -q) | sed -n "1,$((TOP + 8))p"

echo
echo "== 2. the same build in one process (no worker pool)"
prepare
cd "$ws"
"$PY" - "$TOP" <<'EOF'
import cProfile
import importlib.util
import pstats
import sys

import promptc.driver as build_module
import promptc.driver.pool as pool_module

if hasattr(pool_module, "_workers"):
    pool_module._workers = lambda: 1
for module in (build_module, pool_module):
    module.PARALLEL_THRESHOLD = 10**9
from promptc.cli import main

top = int(sys.argv[1])
sys.argv = ["promptc", "build", "src", "-o", "out", "-q"]


def run():
    try:
        main()
    except SystemExit:
        pass


if importlib.util.find_spec("pyinstrument"):
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.001)
    profiler.start()
    run()
    profiler.stop()
    print(profiler.output_text(unicode=True, color=False, show_all=False))
else:
    profile = cProfile.Profile()
    profile.runcall(run)
    stats = pstats.Stats(profile)
    stats.sort_stats("cumulative").print_stats("compiler/", top)
EOF
