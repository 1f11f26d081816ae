"""Pathological inputs: every construct left open must cost linear time.

Compiles each input at two sizes, N and 2N, in this process, and prints the time of each, the time
per byte of the larger one, and the ratio (about 2 for linear work, about 4 for quadratic, so a
regression to quadratic shows). The deep include chain grows in depth (N and 2N partials, each
including the next) and the long line in length (one line of N and 2N KB). Part of `make bench`
(`bench/run.py` runs it with `--json` and judges each ratio); never a timed test.

Each time is the fastest of `--repeat` compiles (default 3), after one untimed warm-up compile: a single compile of
the same text varies by up to 1.5x on this machine (where the cyclic collector happens to run), and noise only ever
adds time. The verdict: 2N / N ≤ `LIMIT` (2.6). Doubling N costs 2.0x for linear work, 2.14x for N log N at
N = 20,000, 2.83x for N^1.5 and 4x for quadratic work; 2.6 (an exponent of 1.38) leaves room for noise above linear
and catches anything N^1.4 or worse.

    python bench/pathological.py [--size N] [--repeat K] [--markdown | --json]
"""

from __future__ import annotations

import argparse
import json
import time

from promptc import compile_text
from promptc.facts.config import Config

INPUTS = {
    "unterminated {{ per line": lambda n: "{{ a\n" * n,
    "unterminated {# per line": lambda n: "{# a\n" * n,
    "${ on one line": lambda n: "${" * n,
    "{% on one line": lambda n: "{%" * n,
    "{{ {{ … (no closer)": lambda n: "{{" * n,
    "escaped openers": lambda n: "\\{{ " * n,
    "closed blocks": lambda n: "{{ a }} " * n,
    # N blocks in one section, each with a few AST nodes, all kept until the section is analysed:
    # the cyclic GC walked them at every collection, and full collections grew with N (issue 26)
    "N rich blocks in one section": lambda n: "".join(
        f"{{{{ user.name.upper() if flag else items[{i}] }}}} " for i in range(n)
    ),
    "one long line (N/20 KB)": lambda n: "----- user -----\n" + "word ${a} " * (n * 5) + "\n",
    # N declared names, all but one unused: N warnings on one long line (was quadratic: 5 s at 5,000)
    "/// input: with N names": lambda n: "/// input: " + ", ".join(f"name{i}" for i in range(n)) + "\nHi ${name0}\n",
    "/// input: N typed names": lambda n: (
        "/// input: " + ", ".join(f"name{i}: list[str] | None" for i in range(n)) + "\nHi ${name0}\n"
    ),
}

#: the most time 2N may take, as a multiple of N's, for an input to count as linear (see the docstring)
LIMIT = 2.6

#: include chains: depth N/100 and 2N/100 (the compiler caps the depth it follows; past the cap it
#: reports E-codes, which must still be linear)
CHAIN = "include chain (N/100 partials deep)"


def chain(depth: int) -> tuple[str, dict[str, str]]:
    partials = {f"_p{i}.prompt": f"/// include: _p{i + 1}\nLevel {i}.\n" for i in range(depth)}
    partials[f"_p{depth}.prompt"] = "End.\n"
    return "/// include: _p0\nHi\n", partials


def timed(text: str, config: Config, partials: dict[str, str] | None = None, repeat: int = 1) -> float:
    """The fastest of `repeat` compiles of `text`, in seconds."""
    best = float("inf")
    for _ in range(max(1, repeat)):
        started = time.perf_counter()
        compile_text(text, config=config, partials=partials)
        best = min(best, time.perf_counter() - started)
    return best


def measure(size: int, repeat: int = 3) -> list[dict]:
    config = Config(tokenizer="approx-bytes/4")
    timed("/// input: a\nHi ${a} {{ a }}\n", config)  # the grammar, the passes and the tokenizer load here
    rows = []
    for name, make in INPUTS.items():
        small_text, large_text = make(size), make(2 * size)
        small, large = timed(small_text, config, repeat=repeat), timed(large_text, config, repeat=repeat)
        rows.append({"input": name, "n": size, "bytes": len(large_text.encode()), "small": small, "large": large})
    depth = max(2, size // 100)
    (small_text, small_partials), (large_text, large_partials) = chain(depth), chain(2 * depth)
    small = timed(small_text, config, small_partials, repeat=repeat)
    large = timed(large_text, config, large_partials, repeat=repeat)
    size_bytes = sum(len(t.encode()) for t in large_partials.values()) + len(large_text)
    rows.append({"input": CHAIN, "n": depth, "bytes": size_bytes, "small": small, "large": large})
    for row in rows:
        row["ratio"] = row["large"] / row["small"] if row["small"] else None
        row["ok"] = row["ratio"] is not None and row["ratio"] <= LIMIT
    return rows


HEADER = ["input", "N", "time N s", "time 2N s", "µs per byte (2N)", "2N / N", f"≤ {LIMIT:g}"]


def table(rows: list[dict]) -> list[list[str]]:
    return [
        [
            r["input"],
            f"{r['n']:,}",
            f"{r['small']:.3f}",
            f"{r['large']:.3f}",
            f"{r['large'] / r['bytes'] * 1e6:.2f}",
            f"{r['large'] / r['small']:.2f}" if r["small"] else "",
            "PASS" if r["large"] <= LIMIT * r["small"] else "MISS",
        ]
        for r in rows
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000, help="N (default 20,000)")
    parser.add_argument("--repeat", type=int, default=3, help="compiles per time, the fastest kept (default 3)")
    parser.add_argument("--markdown", action="store_true", help="print the table in Markdown")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON (what bench/run.py reads)")
    args = parser.parse_args()
    rows = measure(args.size, args.repeat)
    if args.json:
        print(json.dumps({"size": args.size, "repeat": args.repeat, "limit": LIMIT, "rows": rows}))
        return 0
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import format_markdown, format_text  # noqa: PLC0415

    fmt = format_markdown if args.markdown else format_text
    print(fmt(HEADER, table(rows)))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
