"""Pathological inputs: every construct left open must cost linear time.

Compiles each input at two sizes, N and 2N, in this process, and prints the time of each, the time
per byte of the larger one, and the ratio (about 2 for linear work, about 4 for quadratic, so a
regression to quadratic shows). The deep include chain grows in depth (N and 2N partials, each
including the next) and the long line in length (one line of N and 2N KB). The families of foreign
folders (`COMMANDS`) run the `promptc` command end to end on a folder written for each size: its
own entry point, in this process (a fresh interpreter's start-up, the same at both sizes, would
flatten the ratio). Part of `make bench` (`bench/run.py` runs it with `--json` and judges each
ratio); never a timed test.

Each time is the fastest of `--repeat` compiles (default 3), after one untimed warm-up compile: a single compile of
the same text varies by up to 1.5x on this machine (where the cyclic collector happens to run), and noise only ever
adds time. The verdict: 2N / N ≤ `LIMIT` (2.6), or 2N under `FLOOR` (50 ms, the machine's noise). Doubling N costs 2.0x for linear work, 2.14x for N log N at
N = 20,000, 2.83x for N^1.5 and 4x for quadratic work; 2.6 (an exponent of 1.38) leaves room for noise above linear
and catches anything N^1.4 or worse.

    python bench/pathological.py [--size N] [--repeat K] [--only WORD] [--markdown | --json]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

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
    # runs of blanks (issue 33: TEXT's lookahead rescanned the rest of the run at every blank, 80,000 blanks
    # took 14.5 s); N×50 blanks is a 1 MB line at N = 20,000
    "blank run in text (N×50 blanks)": lambda n: "a" + " \t" * (n * 25) + "b\n",
    "blank run before /// (N×50 blanks)": lambda n: "a" + " " * (n * 50) + "/// c\n",
    "blank run before // (N×50 blanks)": lambda n: "a" + " " * (n * 50) + "// c\n",
    "line of blanks (N×50)": lambda n: "a\n" + " " * (n * 50) + "\nb\n",
    "blank run in a commented directive (N×50)": lambda n: "/// description: a" + " " * (n * 50) + "b /// c\nHi\n",
    # N distinct names (issue 33: membership tests on tuples made 40,000 of them take 52 s)
    "N distinct placeholders, declared": lambda n: (
        "/// input: " + ", ".join(f"p{i}" for i in range(n)) + "\n" + " ".join(f"${{p{i}}}" for i in range(n)) + "\n"
    ),
    "N distinct placeholders, undeclared": lambda n: " ".join(f"${{p{i}}}" for i in range(n)) + "\n",
    "N distinct names in blocks": lambda n: " ".join(f"{{{{ p{i} }}}}" for i in range(n)) + "\n",
    # N blocks that each bind a new name (the flow state copied every name bound before at each
    # block: 20,000 walrus blocks took 7.3 s)
    "N names bound block after block": lambda n: "".join(f"{{{{ (v{i} := 1) }}}}\n" for i in range(n)),
    "N assignments in one block": lambda n: "{# " + "; ".join(f"v{i} = 0" for i in range(n)) + " #}\n",
}

#: the most time 2N may take, as a multiple of N's, for an input to count as linear (see the docstring)
LIMIT = 2.6
#: below this many seconds at 2N a ratio is the machine's noise, not the work's (a file refused by its
#: size before it is read takes a millisecond at N and at 2N): such a row passes whatever its ratio
FLOOR = 0.05

#: include chains: depth N/100 and 2N/100 (the compiler caps the depth it follows; past the cap it
#: reports E-codes, which must still be linear)
CHAIN = "include chain (N/100 partials deep)"


def chain(depth: int) -> tuple[str, dict[str, str]]:
    partials = {f"_p{i}.prompt": f"/// include: _p{i + 1}\nLevel {i}.\n" for i in range(depth)}
    partials[f"_p{depth}.prompt"] = "End.\n"
    return "/// include: _p0\nHi\n", partials


def fanout(depth: int) -> dict[str, str]:
    """Handlebars partials, each printing the next one twice: the prompt would expand to 2^depth leaves."""
    files = {f"src/_p{i}.prompt": f"{{{{> p{i + 1}}}}}{{{{> p{i + 1}}}}}" for i in range(depth)}
    files[f"src/_p{depth}.prompt"] = "x"
    files["src/a.prompt"] = "---\n---\n{{> p0}} end\n"
    return files


def deep_inputs(depth: int) -> dict[str, str]:
    return {"src/a.j2": "{{ x }}\n", "inputs.json": '{"a": ' + "[" * depth + "]" * depth + "}"}


#: families of `promptc import` (issue 33), run as the command: size → (files to write, arguments)
COMMANDS: dict[str, Callable[[int], tuple[dict[str, str], list[str]]]] = {
    # exponential before: depth N/1000 (20 and 40 at N = 20,000)
    "Handlebars partial fan-out (import, N/1000 deep)": lambda n: (
        fanout(max(2, n // 1000)),
        ["import", "dotprompt", "src", "-o", "out"],
    ),
    "Jinja filter chain (import, N×5 filters)": lambda n: (
        {"src/a.j2": "{{ x" + "|upper" * (n * 5) + " }}\n"},
        ["import", "jinja", "src", "-o", "out"],
    ),
    "dotted path of N/10 segments (import)": lambda n: (
        {"src/a.j2": "{{ a." + ".".join(f"s{i}" for i in range(n // 10)) + " }}\n"},
        ["import", "jinja", "src", "-o", "out"],
    ),
    "--inputs JSON N×5 deep (import --check)": lambda n: (
        deep_inputs(n * 5),
        ["import", "jinja", "src", "-o", "out", "--check", "--inputs", "inputs.json"],
    ),
    "one file of N×50 bytes (import)": lambda n: (
        {"src/a.j2": "Hello {{ name }}, a line of text.\n" * (n * 50 // 34)},
        ["import", "jinja", "src", "-o", "out"],
    ),
    "one file past the 8 MiB limit by N KB (import)": lambda n: (
        {"src/a.j2": ("x" * 1023 + "\n") * (8 * 1024 + n)},
        ["import", "jinja", "src", "-o", "out"],
    ),
}


def run_command(files: dict[str, str], args: list[str], repeat: int = 1) -> tuple[float, int | None, str]:
    """The fastest of `repeat` runs of `promptc ARGS` in a folder holding `files` (the output folder
    removed before each run): (seconds, exit status, the traceback's last line if one escaped)."""
    from promptc.cli import main  # noqa: PLC0415

    best, status, error = float("inf"), None, ""
    with tempfile.TemporaryDirectory(prefix="promptc-patho-") as tmp:
        root = Path(tmp)
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        here = Path.cwd()
        try:
            os.chdir(root)
            for _ in range(max(1, repeat)):
                shutil.rmtree(root / "out", ignore_errors=True)
                sink = io.StringIO()
                started = time.perf_counter()
                try:
                    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                        main.main(args, prog_name="promptc", standalone_mode=True)
                except SystemExit as exc:
                    status = exc.code if isinstance(exc.code, int) else 1
                except BaseException as exc:  # noqa: BLE001 - a traceback is what the row reports
                    status = None
                    error = "".join(traceback.format_exception_only(exc)).strip().splitlines()[-1][:200]
                best = min(best, time.perf_counter() - started)
        finally:
            os.chdir(here)
    return best, status, error


def timed(text: str, config: Config, partials: dict[str, str] | None = None, repeat: int = 1) -> float:
    """The fastest of `repeat` compiles of `text`, in seconds."""
    best = float("inf")
    for _ in range(max(1, repeat)):
        started = time.perf_counter()
        compile_text(text, config=config, partials=partials)
        best = min(best, time.perf_counter() - started)
    return best


def measure(size: int, repeat: int = 3, only: str = "") -> list[dict]:
    """Every family whose name holds `only` (all of them by default), at N = `size` and 2N."""
    config = Config(tokenizer="approx-bytes/4")
    timed("/// input: a\nHi ${a} {{ a }}\n", config)  # the grammar, the passes and the tokenizer load here
    rows = []
    for name, make in INPUTS.items():
        if only not in name:
            continue
        small_text, large_text = make(size), make(2 * size)
        small, large = timed(small_text, config, repeat=repeat), timed(large_text, config, repeat=repeat)
        rows.append({"input": name, "n": size, "bytes": len(large_text.encode()), "small": small, "large": large})
    if only in CHAIN:
        depth = max(2, size // 100)
        (small_text, small_partials), (large_text, large_partials) = chain(depth), chain(2 * depth)
        small = timed(small_text, config, small_partials, repeat=repeat)
        large = timed(large_text, config, large_partials, repeat=repeat)
        size_bytes = sum(len(t.encode()) for t in large_partials.values()) + len(large_text)
        rows.append({"input": CHAIN, "n": depth, "bytes": size_bytes, "small": small, "large": large})
    commands = {name: make for name, make in COMMANDS.items() if only in name}
    if commands:
        run_command({"src/a.j2": "Hi {{ x }}\n"}, ["import", "jinja", "src", "-o", "out"])  # the importers load
    for name, make in commands.items():
        (small_files, args), (large_files, _) = make(size), make(2 * size)
        small, small_status, small_error = run_command(small_files, args, repeat)
        large, large_status, large_error = run_command(large_files, args, repeat)
        size_bytes = sum(len(t.encode()) for t in large_files.values())
        row = {"input": name, "n": size, "bytes": size_bytes, "small": small, "large": large}
        row["exit"] = [small_status, large_status]
        if small_error or large_error:
            row["error"] = small_error or large_error  # a traceback: the command is not bounded yet
        rows.append(row)
    for row in rows:
        row["ratio"] = row["large"] / row["small"] if row["small"] else None
        row["ok"] = not row.get("error") and (
            row["large"] < FLOOR or (row["ratio"] is not None and row["ratio"] <= LIMIT)
        )
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
            f"ERROR (traceback: {r['error']})"
            if r.get("error")
            else "MISS"
            if not r["ok"]
            else "PASS"
            if r["large"] >= FLOOR
            else f"PASS (under {FLOOR * 1000:.0f} ms)",
        ]
        for r in rows
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000, help="N (default 20,000)")
    parser.add_argument("--repeat", type=int, default=3, help="compiles per time, the fastest kept (default 3)")
    parser.add_argument("--only", default="", help="only the families whose name holds this text")
    parser.add_argument("--markdown", action="store_true", help="print the table in Markdown")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON (what bench/run.py reads)")
    args = parser.parse_args()
    rows = measure(args.size, args.repeat, args.only)
    if args.json:
        print(json.dumps({"size": args.size, "repeat": args.repeat, "limit": LIMIT, "floor": FLOOR, "rows": rows}))
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
