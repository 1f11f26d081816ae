"""The I/O floor: the least work any build of a prompt tree must do, with no compiling at all.

Reads every `*.prompt` file under SRC (sorted, recursively), hashes it with sha256, writes one JSON file per source
(its path, hash, size and text) under OUT mirroring the source tree, then a `manifest.json` listing them all. Only
the standard library is imported, so start-up is as cheap as a Python program gets.

    python bench/iofloor.py SRC OUT
"""

from __future__ import annotations

import hashlib
import json
import os
import sys


def sources(src: str) -> list[str]:
    """Every `*.prompt` under `src`, as sorted `/`-separated relative paths (hidden entries skipped)."""
    found = []
    for folder, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel_folder = os.path.relpath(folder, src)
        prefix = "" if rel_folder == "." else rel_folder.replace(os.sep, "/") + "/"
        found.extend(prefix + f for f in files if f.endswith(".prompt") and not f.startswith("."))
    return sorted(found)


def run(src: str, out: str) -> int:
    manifest = {}
    made: set[str] = set()
    for rel in sources(src):
        with open(os.path.join(src, rel), "rb") as handle:
            data = handle.read()
        digest = hashlib.sha256(data).hexdigest()
        name = rel[: -len(".prompt")]
        target = os.path.join(out, name + ".json")
        parent = os.path.dirname(target)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        record = {"name": name, "source": rel, "source_sha256": digest, "bytes": len(data), "text": data.decode()}
        payload = json.dumps(record, sort_keys=True).encode()
        with open(target, "wb") as handle:
            handle.write(payload)
        manifest[name] = {
            "path": name + ".json",
            "sha256": hashlib.sha256(payload).hexdigest(),
            "source_sha256": digest,
        }
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "manifest.json"), "wb") as handle:
        handle.write(json.dumps({"artifacts": manifest}, sort_keys=True, indent=2).encode())
    return len(manifest)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python bench/iofloor.py SRC OUT", file=sys.stderr)
        return 2
    run(argv[0], argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
