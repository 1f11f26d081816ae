"""The watch floor: the least work a watcher must do between a save and the new artifact on disk.

A watchdog observer on SRC (recursive, as `promptc watch` uses). At start it writes every source's JSON file and a
manifest under OUT as `bench/iofloor.py` does (not timed by the harness), then prints `ready`. On each event for a
`*.prompt` file it reads and sha256-hashes that file, writes its JSON file and rewrites `manifest.json` from the
entries it holds in memory (compact JSON, the C encoder). No debounce, nothing compiled. It runs until SIGTERM.

    python bench/watchfloor.py SRC OUT
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import threading

import iofloor  # bench/iofloor.py, next to this file
from watchdog.events import FileSystemEventHandler
from watchdog.observers import Observer


class Floor(FileSystemEventHandler):
    def __init__(self, src: str, out: str) -> None:
        self.src, self.out = os.path.abspath(src), out
        self.lock = threading.Lock()
        iofloor.run(src, out)
        with open(os.path.join(out, "manifest.json"), "rb") as handle:
            self.manifest = json.loads(handle.read())

    def on_any_event(self, event) -> None:  # noqa: ANN001 - watchdog's event type
        if event.is_directory or event.event_type not in ("modified", "closed", "created", "moved"):
            return
        path = os.fsdecode(event.dest_path if event.event_type == "moved" else event.src_path)
        if not path.endswith(".prompt"):
            return
        rel = os.path.relpath(path, self.src).replace(os.sep, "/")
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return
        digest = hashlib.sha256(data).hexdigest()
        name = rel[: -len(".prompt")]
        record = {"name": name, "source": rel, "source_sha256": digest, "bytes": len(data), "text": data.decode()}
        payload = json.dumps(record, sort_keys=True).encode()
        with self.lock:
            target = os.path.join(self.out, name + ".json")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            _write(target, payload)
            self.manifest["artifacts"][name] = {
                "path": name + ".json",
                "sha256": hashlib.sha256(payload).hexdigest(),
                "source_sha256": digest,
            }
            _write(os.path.join(self.out, "manifest.json"), json.dumps(self.manifest, sort_keys=True).encode())


def _write(path: str, data: bytes) -> None:
    temporary = f"{path}.tmp"
    with open(temporary, "wb") as handle:
        handle.write(data)
    os.replace(temporary, path)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python bench/watchfloor.py SRC OUT", file=sys.stderr)
        return 2
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    handler = Floor(*argv)
    observer = Observer()
    observer.schedule(handler, handler.src, recursive=True)
    observer.start()
    print("ready", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        observer.stop()
        observer.join()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
