"""Pathological inputs: every construct left open must cost linear time.

Compiles each input at two sizes, N and 2N, in this process, and prints the time of each and the
ratio (about 2 for linear work, about 4 for quadratic). Part of `make bench`; never a timed test.

    python bench/pathological.py [--size N]
"""

from __future__ import annotations

import argparse
import time

from promptc import compile_text
from promptc.config import Config

INPUTS = {
    "unterminated {{ per line": lambda n: "{{ a\n" * n,
    "unterminated {# per line": lambda n: "{# a\n" * n,
    "${ on one line": lambda n: "${" * n,
    "{% on one line": lambda n: "{%" * n,
    "{{ {{ … (no closer)": lambda n: "{{" * n,
    "escaped openers": lambda n: "\\{{ " * n,
    "closed blocks": lambda n: "{{ a }} " * n,
    "includes nested 60 deep": None,  # see below: a fixed shape, reported once
}


def timed(text: str, config: Config) -> float:
    started = time.perf_counter()
    compile_text(text, config=config)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000, help="N (default 20,000)")
    args = parser.parse_args()
    config = Config(tokenizer="approx-bytes/4")
    print(f"{'input':32} {'N':>8} {'time N':>9} {'time 2N':>9} {'ratio':>6}")
    for name, make in INPUTS.items():
        if make is None:
            partials = {f"_p{i}.prompt": f"/// include: _p{i + 1}\nLevel {i}.\n" for i in range(60)}
            partials["_p60.prompt"] = "End.\n"
            started = time.perf_counter()
            compile_text("/// include: _p0\nHi\n", config=config, partials=partials)
            print(f"{name:32} {'':>8} {time.perf_counter() - started:9.3f}")
            continue
        small, large = timed(make(args.size), config), timed(make(2 * args.size), config)
        print(f"{name:32} {args.size:8,} {small:9.3f} {large:9.3f} {large / small:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
