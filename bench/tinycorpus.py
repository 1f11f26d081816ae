"""A corpus of many tiny prompts (about 120 bytes each), for the edit loop at scale: 100,000 of them.

Where `bench/corpus.py` makes realistic 1.5 KB sources, this one makes the tree large while each compile stays
cheap, so what a one-edit build costs beyond compiling one file — the per-tree work — shows. File `i` is
`t<i // 500>/p<i>.prompt`: a flow directive, a system line and a user line with one placeholder, its text
depending on `i` alone (deterministic, no randomness).

    python bench/tinycorpus.py OUT_DIR --files 100000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

GENERATOR_VERSION = 1
MARKER = ".corpus.json"
PER_FOLDER = 500


def relative_path(index: int) -> str:
    return f"t{index // PER_FOLDER:04d}/p{index:06d}.prompt"


def render_file(index: int) -> str:
    return (
        f"/// flow: tiny{index % 97}\n"
        "----- system -----\n"
        f"You answer question {index} briefly.\n"
        "----- user -----\n"
        f"${{question}} (case {index * 7919 % 100003})\n"
    )


def generate(out_dir: str | os.PathLike, files: int) -> None:
    root = Path(out_dir)
    for folder in range((files + PER_FOLDER - 1) // PER_FOLDER):
        (root / f"t{folder:04d}").mkdir(parents=True, exist_ok=True)
    for index in range(files):
        with open(root / relative_path(index), "w", encoding="utf-8") as handle:
            handle.write(render_file(index))
    (root / MARKER).write_text(json.dumps({"generator_version": GENERATOR_VERSION, "files": files}) + "\n")


def is_current(out_dir: str | os.PathLike, files: int) -> bool:
    """The marker says this generator made `files` files there, and the last one is as generated."""
    root = Path(out_dir)
    try:
        marker = json.loads((root / MARKER).read_text())
        last = (root / relative_path(files - 1)).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return False
    return marker == {"generator_version": GENERATOR_VERSION, "files": files} and last == render_file(files - 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", metavar="OUT_DIR")
    parser.add_argument("--files", type=int, default=100_000)
    args = parser.parse_args(argv)
    generate(args.out_dir, args.files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
