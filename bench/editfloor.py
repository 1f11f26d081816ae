"""The incremental floor: the least work a fresh process must do to rebuild a tree after one file changed.

A fresh Python process that stats every `*.prompt` under SRC (to learn which changed), reads and sha256-hashes the
edited one, writes its JSON file under OUT (as `bench/iofloor.py` writes one) and rewrites OUT's `manifest.json`
with the new entry (compact JSON: the C encoder, the cheapest way to write it). Nothing is compiled, and the other
files are never opened. OUT must hold `bench/iofloor.py`'s
output of the same SRC. Only the standard library is imported.

    python bench/editfloor.py SRC OUT EDITED_REL
"""

from __future__ import annotations

import hashlib
import json
import os
import sys


def stat_tree(src: str) -> dict[str, tuple[int, int, int]]:
    """Every `*.prompt` under `src` (hidden entries skipped) with its size, mtime and inode."""
    found = {}
    for folder, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel_folder = os.path.relpath(folder, src)
        prefix = "" if rel_folder == "." else rel_folder.replace(os.sep, "/") + "/"
        for name in files:
            if name.endswith(".prompt") and not name.startswith("."):
                st = os.stat(os.path.join(folder, name))
                found[prefix + name] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return found


def write_atomically(path: str, data: bytes) -> None:
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "wb") as handle:
        handle.write(data)
    os.replace(temporary, path)


def run(src: str, out: str, edited: str) -> None:
    stats = stat_tree(src)
    if edited not in stats:
        raise SystemExit(f"{edited} is not a source under {src}")
    with open(os.path.join(src, edited), "rb") as handle:
        data = handle.read()
    digest = hashlib.sha256(data).hexdigest()
    name = edited[: -len(".prompt")]
    record = {"name": name, "source": edited, "source_sha256": digest, "bytes": len(data), "text": data.decode()}
    payload = json.dumps(record, sort_keys=True).encode()
    write_atomically(os.path.join(out, name + ".json"), payload)
    manifest_path = os.path.join(out, "manifest.json")
    with open(manifest_path, "rb") as handle:
        manifest = json.loads(handle.read())
    manifest["artifacts"][name] = {
        "path": name + ".json",
        "sha256": hashlib.sha256(payload).hexdigest(),
        "source_sha256": digest,
    }
    write_atomically(manifest_path, json.dumps(manifest, sort_keys=True).encode())


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python bench/editfloor.py SRC OUT EDITED_REL", file=sys.stderr)
        return 2
    run(*argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
