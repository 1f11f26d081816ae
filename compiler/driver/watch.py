"""`promptc watch`: rebuild on every change to the source tree, keeping the last good artifacts.

The shape is mkdocs' livereload: the watchdog handler runs on the observer's thread and only records
the changed paths and sets a flag under a `threading.Condition`; ONE loop waits for that flag, lets a
quiet window pass (editors save in several steps: write a temp file, rename it, touch it), then runs
one incremental build. Changes that arrive while a build runs are recorded under the same lock and
start the next build, so none is lost. Every build error is caught and reported; the loop goes on.

The output folder is watched too, for what changes there that the builds did not write (a
`git checkout -- build/`, an artifact edited in place): such a change starts a build, handed the
paths, which then checks every artifact as a fresh `promptc build` does and writes what a clean
build would. Each build swaps the output folder with its shadow set, and a watch follows a folder,
not its name: the output watch is moved to the new set after every build that swapped it, so the
builds' own writes (into the shadow set, before the swap) are never seen as changes.

The watcher never prints: each finished build is handed to `on_result` as a `WatchBuild`, and the CLI
(`promptc.cli.watch`) turns it into text.
"""

from __future__ import annotations

import inspect
import os
import signal
import stat as stat_module
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from ..facts.config import Config, find_pyproject
from ..facts.language import RESOURCE_SUFFIX, SOURCE_SUFFIX
from ..facts.records import dataclass
from ..runtime.buildfolder import CACHE_DIR, STAGING_MARK
from . import Session, build

if TYPE_CHECKING:
    from watchdog.events import FileSystemEvent
    from watchdog.observers.api import BaseObserver, ObservedWatch

    from ..facts.config import Config
    from ..facts.diagnostics import Diagnostic
    from . import BuildResult

#: Default quiet window, seconds: long enough to cover an editor's write-then-rename, short enough
#: that the rebuild feels immediate.
DEBOUNCE = 0.05
#: A stream of changes that never goes quiet (a generator rewriting files) still gets built this often.
MAX_WAIT = 1.0
#: A batch of more changed paths than this (a `git checkout`, a generator) is built with a stat of
#: every source rather than from the paths alone: the kernel drops events when its queue
#: overflows, which only such a burst can cause.
MAX_CHANGES = 1000

CONFIG_NAME = "pyproject.toml"
#: What the output folder's watch reports: files and folders created, deleted or moved, and files
#: closed after writing (an edit in place). Not "modified", which inotify also reports for a change
#: of attributes: each build hard-links the files in place into its shadow set.
_OUTPUT_EVENTS = (
    FileCreatedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
)
# Files editors and tools write next to the file being saved. Only `.prompt` and `.json` files start a build
# anyway; naming these keeps a `notes.prompt~` or a `#a.prompt#` from ever looking like a source.
_EDITOR_SUFFIXES = (
    "~",  # vim/emacs backup
    ".swp",  # vim swap files, .swp through .swo, .swn, .swx
    ".swo",
    ".swn",
    ".swx",
    ".tmp",
    ".temp",
    ".bak",
    ".orig",
    ".part",
    "___jb_tmp___",  # JetBrains "safe write"
    "___jb_old___",
)
_EDITOR_NAMES = frozenset({"4913"})  # vim's probe for whether it may write in the folder


def is_editor_file(name: str) -> bool:
    """Swap, backup and temporary files editors leave beside a file (by its base name)."""
    return (
        name in _EDITOR_NAMES
        or name.endswith(_EDITOR_SUFFIXES)
        or (len(name) > 1 and name.startswith("#") and name.endswith("#"))  # emacs auto-save
        or name.startswith(".#")  # emacs lock file
    )


@dataclass(frozen=True)
class WatchBuild:
    """One finished build of the watch loop, as handed to `on_result`."""

    #: 1 for the initial build, then 2, 3, …
    seq: int
    initial: bool
    #: absolute paths whose change started this build (empty for the initial build), sorted
    changes: tuple[str, ...]
    #: True when the build followed a change to pyproject.toml (config re-read, full rebuild)
    config_reloaded: bool
    #: None when the build raised; see `error`
    result: BuildResult | None
    #: "ExceptionType: message" when the build raised, else None
    error: str | None
    exception: BaseException | None
    #: seconds the build took (config reload included)
    duration: float
    #: wall-clock time the build finished (time.time())
    finished_at: float
    #: diagnostics about the configuration itself (pyproject.toml), shown with every build
    config_diagnostics: tuple[Diagnostic, ...] = ()
    #: names of artifacts this build removed (their sources were deleted)
    removed: tuple[str, ...] = ()

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """The build's (which reports the configuration's with its own), or the configuration's
        alone when the build raised."""
        return list(self.result.diagnostics) if self.result is not None else list(self.config_diagnostics)

    @property
    def compiled(self) -> int:
        """Prompts compiled by this build (a failing prompt counts; artifacts reused unchanged do not)."""
        if self.result is None:
            return 0

        return len(self.result.compiled)

    @property
    def ok(self) -> bool:
        return self.error is None and self.result is not None and self.result.ok


ConfigLoader = Callable[[], "tuple[Config, Sequence[Diagnostic]]"]
Builder = Callable[..., "BuildResult"]


def _takes_session(builder: Builder) -> bool:
    try:
        parameters = inspect.signature(builder).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is p.VAR_KEYWORD or p.name == "session" for p in parameters)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _in_staging(path: str, out: str, mark: str) -> bool:
    """Whether `path` is in (or is) one of the build's staging folders, which sit beside `out` as
    `<out>.promptc-tmp-*` and trade places with it when a build lands."""
    parent = os.path.dirname(out)
    if not _under(path, parent) or path == parent:
        return False
    first = os.path.relpath(path, parent).split(os.sep, 1)[0]
    return first.startswith(os.path.basename(out) + mark)


class Watcher:
    """Watch `src` and rebuild into `out` on every change.

    `on_result(WatchBuild)` is called after each build, on the loop's thread. `config_loader()`, when
    given, is called after `pyproject.toml` changes and returns `(config, diagnostics)`; the watcher
    then takes `src` and `out` from that config too (the CLI's loader re-applies its flags).
    `builder` defaults to `promptc.driver.build` and is there for tests and embedders.

    Use `run()` to loop in the calling thread, or `start()`/`stop()` (or `with Watcher(...) as w:`)
    to loop in a background thread; `wait_for_build()` waits for the next finished build.
    """

    def __init__(
        self,
        src: Path | str,
        out: Path | str,
        config: Config | None = None,
        *,
        on_result: Callable[[WatchBuild], Any] | None = None,
        debounce: float = DEBOUNCE,
        max_wait: float = MAX_WAIT,
        config_loader: ConfigLoader | None = None,
        config_diagnostics: Sequence[Diagnostic] = (),
        config_dirs: Sequence[Path | str] | None = None,
        builder: Builder | None = None,
        strict: bool = False,
    ) -> None:
        self.src = Path(src)
        self.out = Path(out)
        self.config = config or Config(src=str(src), out=str(out))
        self.on_result = on_result
        self.debounce = max(0.0, debounce)
        self.max_wait = max(self.debounce, max_wait)
        self.config_loader = config_loader
        self.config_diagnostics: tuple[Diagnostic, ...] = tuple(config_diagnostics)
        if config_dirs is None and config_loader is not None:
            # pyproject.toml is looked up from the current folder upward: a new one in the current
            # folder would shadow the one found above it, so both folders are watched.
            found = find_pyproject(Path.cwd())
            config_dirs = [Path.cwd(), *([found.parent] if found else [])]
        self._config_dirs = {os.path.abspath(d) for d in (config_dirs or ())}
        self._builder = builder
        #: what each build keeps in memory for the next: the tree, the state, the manifest's pieces
        self._session = Session()
        #: the builder takes `session` and `changes` (the default one does; a custom one may not)
        self._incremental_builder = builder is None or _takes_session(builder)
        #: warnings fail a prompt as errors do (it keeps its last good artifact)
        self.strict = strict

        self._cond = threading.Condition()
        self._changes: set[str] = set()
        self._config_changed = False
        self._first_change = 0.0
        self._last_change = 0.0
        self._stopping = False
        self._building = False
        self._count = 0
        self._cursor = 0
        self._last: WatchBuild | None = None
        self._artifact_names: set[str] | None = None
        self.failure: BaseException | None = None

        self._observer: BaseObserver | None = None
        self._watches: dict[tuple[str, bool], ObservedWatch] = {}
        #: the output folder's watch, with the folder it follows: (path, (device, inode))
        self._output_watch: tuple[tuple[str, tuple[int, int]], ObservedWatch] | None = None
        self._stale_watches: set[str] = set()
        self._thread: threading.Thread | None = None

    # -----------------------------------------------------------------------------------------
    # Which paths matter

    def _paths(self) -> tuple[str, str]:
        return os.path.abspath(self.src), os.path.abspath(self.out)

    def classify(self, path: str, is_directory: bool) -> str | None:
        """What a changed path means: `"config"` for a pyproject.toml the watcher reads, `"source"` for
        a change that needs a build, `"output"` for anything inside the output folder (the build
        checks what is there), None for the rest (the output folder itself, which every build
        swaps, its staging folders, caches, hidden and editor files, files that are not `.prompt`)."""
        if not path:
            return None
        path = os.path.abspath(path)
        src, out = self._paths()
        name = os.path.basename(path)
        if name == CONFIG_NAME and os.path.dirname(path) in self._config_dirs:
            return "config"
        if path == out or _in_staging(path, out, STAGING_MARK):
            return None
        if _under(path, out):
            return "output"
        if path == src:
            return "source"  # the source folder itself appeared, vanished or moved
        if not _under(path, src):
            return None
        parts = Path(os.path.relpath(path, src)).parts
        if any(part.startswith(".") or part == CACHE_DIR for part in parts):
            return None  # hidden files and folders are not part of the source tree (read_tree skips them)
        if is_editor_file(name):
            return None
        if is_directory or name.endswith((SOURCE_SUFFIX, RESOURCE_SUFFIX)):  # prompts, tools and schemas
            return "source"
        return None

    def _record(self, event: FileSystemEvent) -> None:
        """The watchdog handler, on the observer's thread: record and notify, nothing more."""
        if event.event_type not in ("created", "deleted", "modified", "moved", "closed"):
            return
        if event.is_directory and event.event_type in ("modified", "closed"):
            return  # a folder's mtime moves with every file written in it, swap files included
        paths = [os.fsdecode(event.src_path)]
        if event.event_type == "moved":
            paths.append(os.fsdecode(event.dest_path))
        kinds = [(path, self.classify(path, event.is_directory)) for path in paths]
        if not any(kind for _, kind in kinds):
            return
        with self._cond:
            now = time.monotonic()
            if not (self._changes or self._config_changed):
                self._first_change = now
            self._last_change = now
            for path, kind in kinds:
                if kind == "config":
                    self._config_changed = True
                elif kind in ("source", "output"):
                    self._changes.add(os.path.abspath(path))
            if event.is_directory and event.event_type in ("deleted", "moved"):
                # a watch on that folder died with it; `_sync_watches` re-adds it if the folder comes back
                self._stale_watches.add(os.path.abspath(paths[0]))
            self._cond.notify_all()

    # -----------------------------------------------------------------------------------------
    # The observer

    def _tree_watches(self, folder: str, out: str) -> list[tuple[str, bool]]:
        """Watches covering `folder` but never the output folder. Usually one recursive watch; when
        the output folder lies inside, the folders on the way down to it are watched one level deep
        and their other subfolders recursively. Watching the output folder would not only be noise:
        the build swaps it with its staging folder (renameat2 RENAME_EXCHANGE), which watchdog's
        recursive inotify bookkeeping does not survive (its reader thread dies on a KeyError)."""
        if not _under(out, folder) or out == folder:
            return [(folder, True)]
        watches = [(folder, False)]
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return watches
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            path = os.path.join(folder, entry.name)
            if not is_dir or entry.name.startswith(".") or path == out or _in_staging(path, out, STAGING_MARK):
                continue
            watches += self._tree_watches(path, out)
        return watches

    def _desired_watches(self) -> list[tuple[str, bool]]:
        src, out = self._paths()
        wanted = self._tree_watches(src, out) if os.path.isdir(src) else []
        # the source folder's parent, to see the folder itself created, deleted or renamed
        anchors = {os.path.dirname(src), *self._config_dirs}
        wanted += [(folder, False) for folder in sorted(anchors) if os.path.isdir(folder)]
        return wanted

    def _sync_watches(self) -> None:
        """Schedule what should be watched now; called before every build (cheap when nothing moved)."""
        observer = self._observer
        if observer is None:
            return
        with self._cond:
            stale, self._stale_watches = self._stale_watches, set()
        wanted = set(self._desired_watches())
        for key in list(self._watches):
            if key not in wanted or key[0] in stale:
                watch = self._watches.pop(key)
                try:
                    observer.unschedule(watch)
                except (KeyError, OSError, ValueError):
                    pass  # its emitter already stopped when the folder went away
        # Opened/closed-without-writing events are left out: the build itself opens every source, and
        # listening to those would make each build trigger the next.
        event_filter = [
            FileCreatedEvent,
            FileDeletedEvent,
            FileModifiedEvent,
            FileMovedEvent,
            FileClosedEvent,
            DirCreatedEvent,
            DirDeletedEvent,
            DirMovedEvent,
        ]
        for key in sorted(wanted - self._watches.keys()):
            folder, recursive = key
            try:
                self._watches[key] = observer.schedule(
                    self._handler, folder, recursive=recursive, event_filter=event_filter
                )
            except (FileNotFoundError, NotADirectoryError):
                continue  # vanished between the check and the call; the next build tries again
            # any other OSError (the inotify watch limit) propagates: a watcher that cannot watch must say so

    def _watch_output(self) -> None:
        """Watch the output folder that is in place now (after a build, which may have swapped it):
        the watch on the set swapped out, now the shadow set the next build writes into, is
        dropped first. Only changes of the folder's contents are watched, never attributes: the
        builds' hard links between the two sets change the link counts of the files in place."""
        observer = self._observer
        if observer is None:
            return
        out = os.path.abspath(self.out)
        try:
            info = os.lstat(out)
            here = (out, (info.st_dev, info.st_ino)) if stat_module.S_ISDIR(info.st_mode) else None
        except OSError:
            here = None
        if self._output_watch is not None:
            if self._output_watch[0] == here:
                return
            try:
                observer.unschedule(self._output_watch[1])
            except (KeyError, OSError, ValueError):
                pass  # its emitter already stopped with the folder
            self._output_watch = None
        if here is None:
            return
        try:
            watch = observer.schedule(self._handler, out, recursive=True, event_filter=list(_OUTPUT_EVENTS))
        except (FileNotFoundError, NotADirectoryError):
            return  # swapped or removed meanwhile: the next build watches what is there then
        self._output_watch = (here, watch)

    def _open(self) -> None:
        watcher = self

        class _Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                watcher._record(event)

        self._handler = _Handler()
        self._observer = Observer()
        self._sync_watches()
        self._observer.start()

    def _close(self) -> None:
        observer, self._observer = self._observer, None
        self._watches.clear()
        self._output_watch = None
        if observer is not None:
            observer.stop()
            if observer.is_alive():
                observer.join(timeout=5)

    # -----------------------------------------------------------------------------------------
    # The loop

    def _next_batch(self) -> tuple[tuple[str, ...], bool] | None:
        """Wait for a change, then for a quiet window; None when asked to stop."""
        with self._cond:
            while not self._stopping and not (self._changes or self._config_changed):
                self._cond.wait()
            while not self._stopping:
                now = time.monotonic()
                ready_at = min(self._last_change + self.debounce, self._first_change + self.max_wait)
                if now >= ready_at:
                    break
                self._cond.wait(ready_at - now)
            if self._stopping:
                return None
            batch = (tuple(sorted(self._changes)), self._config_changed)
            self._changes = set()
            self._config_changed = False
            self._building = True
            return batch

    def _build(
        self, changes: tuple[str, ...] = (), config_changed: bool = False, *, initial: bool = False
    ) -> WatchBuild:
        started = time.perf_counter()
        result = None
        exception: BaseException | None = None
        try:
            if config_changed and self.config_loader is not None:
                config, diagnostics = self.config_loader()
                self.config, self.config_diagnostics = config, tuple(diagnostics)
                if Path(config.out) != self.out:
                    self._artifact_names = None  # a new output folder: nothing was removed from it
                self.src, self.out = Path(config.src), Path(config.out)
            self._sync_watches()
            builder = self._builder or build
            # The builds after the first are handed the paths that changed, and read only those
            # (and the prompts they feed) with the session's tree and state. A config change
            # rebuilds everything: the state would notice a changed config on its own, but a full
            # build is the answer that does not depend on it.
            extra: dict[str, Any] = {}
            if self._incremental_builder:
                extra["session"] = self._session
                if not initial and not config_changed and len(changes) <= MAX_CHANGES:
                    extra["changes"] = changes
            result = builder(
                self.src,
                self.out,
                self.config,
                keep_last_good=True,
                incremental=not config_changed,
                strict=self.strict,
                config_diagnostics=self.config_diagnostics,
                **extra,
            )
        except Exception as exc:  # noqa: BLE001 - the loop must survive anything a build throws
            exception = exc
        duration = time.perf_counter() - started
        try:
            self._watch_output()
        except OSError as exc:  # the inotify watch limit, say: the loop goes on, the next build retries
            if exception is None:
                exception = exc
        removed: tuple[str, ...] = ()
        if result is not None and result.manifest is not None:
            names = set(result.manifest.artifacts)
            if self._artifact_names is not None and result.written:
                removed = tuple(sorted(self._artifact_names - names))
            self._artifact_names = names
        return WatchBuild(
            seq=self._count + 1,
            initial=initial,
            changes=changes,
            config_reloaded=config_changed,
            result=result,
            error=_one_line(exception) if exception is not None else None,
            exception=exception,
            duration=duration,
            finished_at=time.time(),
            config_diagnostics=self.config_diagnostics,
            removed=removed,
        )

    def _finish(self, record: WatchBuild) -> None:
        """Hand the build to `on_result`, then publish it: `wait_for_build()` returns only once the
        callback has run (so what it printed or recorded is there when the waiter looks)."""
        try:
            if self.on_result is not None:
                self.on_result(record)
        finally:
            with self._cond:
                self._count = record.seq
                self._last = record
                self._building = False
                self._cond.notify_all()

    def run(self) -> None:
        """Watch and rebuild in the calling thread until `stop()` is called (from another thread)."""
        try:
            self._open()
            # The observer starts before the initial build, so a change made while it runs is seen.
            with self._cond:
                self._building = True
            self._finish(self._build(initial=True))
            while True:
                batch = self._next_batch()
                if batch is None:
                    break
                self._finish(self._build(*batch))
        except BaseException as exc:
            self.failure = exc
            raise
        finally:
            with self._cond:
                self._stopping = True
                self._building = False
                self._cond.notify_all()
            self._close()

    def start(self) -> Watcher:
        """Run the loop in a background (daemon) thread; returns self."""
        if self._thread is not None:
            raise RuntimeError("this watcher was already started")
        self._thread = threading.Thread(target=self._run_quietly, name="promptc-watch", daemon=True)
        self._thread.start()
        return self

    def _run_quietly(self) -> None:
        try:
            self.run()
        except BaseException:  # noqa: BLE001 - kept in `failure`; stop() and wait_for_build() re-raise it
            pass

    def stop(self, timeout: float | None = 10.0) -> None:
        """Ask the loop to stop; a build in progress finishes first. Waits up to `timeout` seconds
        for the background thread, then re-raises whatever killed the loop, if anything did."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        if self.failure is not None and not isinstance(self.failure, (KeyboardInterrupt, SystemExit)):
            raise self.failure

    def join(self) -> None:
        """Block until the background loop ends (interruptible by signals in the main thread)."""
        thread = self._thread
        if thread is not None:
            thread.join()

    @property
    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    @property
    def builds(self) -> int:
        """How many builds have finished, the initial one included."""
        with self._cond:
            return self._count

    @property
    def pending(self) -> tuple[str, ...]:
        """Changes recorded and not yet built (pyproject.toml included), sorted."""
        with self._cond:
            return tuple(sorted(self._changes)) + ((CONFIG_NAME,) if self._config_changed else ())

    @property
    def last(self) -> WatchBuild | None:
        with self._cond:
            return self._last

    def wait_for_build(self, timeout: float = 10.0, after: int | None = None) -> WatchBuild | None:
        """Wait for a build numbered above `after` (default: the last one this method returned) and
        return the latest finished one, or None on timeout. Take `after = watcher.builds` *before*
        making a change, so a build that finishes quickly is not missed."""
        deadline = time.monotonic() + timeout
        with self._cond:
            floor = self._cursor if after is None else after
            while self._count <= floor:
                if self.failure is not None or (self._stopping and not self._building):
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            if self.failure is not None and not isinstance(self.failure, (KeyboardInterrupt, SystemExit)):
                raise self.failure
            if self._count <= floor:
                return None
            self._cursor = self._count
            return self._last

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until no change is pending and no build runs (changes the kernel has not reported yet
        cannot be known). Returns False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._building or self._changes or self._config_changed:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stopping:
                    return not (self._building or self._changes or self._config_changed)
                self._cond.wait(remaining)
            return True

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _Stop(Exception):
    """Raised in the main thread by SIGINT/SIGTERM to end `watch()`."""


def watch(
    src: Path | str,
    out: Path | str,
    config: Config | None = None,
    *,
    on_result: Callable[[WatchBuild], Any] | None = None,
    debounce: float = DEBOUNCE,
    config_loader: ConfigLoader | None = None,
    config_diagnostics: Sequence[Diagnostic] = (),
    handle_signals: bool = True,
    strict: bool = False,
) -> None:
    """Watch and rebuild until Ctrl-C (SIGINT) or SIGTERM, then return normally.

    The loop runs in a background thread; the main thread only waits, so a signal never lands in the
    middle of a build. The first signal lets a running build finish, a second one returns at once
    (the build's atomic folder swap means the output folder is still one whole build or the other).
    """
    watcher = Watcher(
        src,
        out,
        config,
        on_result=on_result,
        debounce=debounce,
        config_loader=config_loader,
        config_diagnostics=config_diagnostics,
        strict=strict,
    )
    owner = os.getpid()

    def handler(signum: int, frame: object) -> None:
        if os.getpid() != owner:
            # A forked build worker inherited this handler. Ctrl-C reaches the whole process group:
            # the worker ignores it and the parent decides. SIGTERM is how multiprocessing.Pool stops
            # its workers, so it must still kill the worker (ignoring it hangs the pool's exit).
            if signum == signal.SIGTERM:
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)
            return
        raise _Stop(signum)

    previous: dict[int, Any] = {}
    install = handle_signals and threading.current_thread() is threading.main_thread()
    try:
        if install:
            for signum in (signal.SIGINT, signal.SIGTERM):
                previous[signum] = signal.signal(signum, handler)
        try:
            watcher.start()
            watcher.join()
        except (_Stop, KeyboardInterrupt):
            try:
                watcher.stop(timeout=None)  # let a running build land; a second signal stops waiting
            except (_Stop, KeyboardInterrupt):
                return  # a second Ctrl-C: do not wait for the build
        else:
            watcher.stop()  # the loop ended by itself: re-raise what ended it
    finally:
        for number, old in previous.items():
            signal.signal(number, old)
