"""Stage 3 — compile: every prompt that the plan did not reuse, on every core when there are enough."""

from __future__ import annotations

import gc
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from ..compile.prompt import CompiledPrompt
from ..facts.config import Config
from ..facts.lazy import lazy_import
from ..passes.context import SourceTree
from ..runtime.buildfolder import artifact_path, write_new_file
from .manifest import piece_of

if TYPE_CHECKING:
    import ctypes
    import multiprocessing
    from concurrent import futures
    from concurrent.futures import process as futures_process

    from ..compile import pipeline
    from ..compile.pipeline import PartialLoader
    from ..syntax import parse
else:
    # What a build that compiles nothing, or only a few prompts in this process, never needs: the
    # compile stack, and the process pool's machinery (fork, pipes, pickling, threads).
    pipeline = lazy_import("promptc.compile.pipeline")
    parse = lazy_import("promptc.syntax.parse")
    ctypes = lazy_import("ctypes")
    multiprocessing = lazy_import("multiprocessing")
    futures = lazy_import("concurrent.futures")
    futures_process = lazy_import("concurrent.futures.process")


def _compile_one(rel: str) -> tuple[CompiledPrompt, bytes | None]:
    tree, config = _WORKER_STATE["tree"], _WORKER_STATE["config"]
    result = _compile(rel, tree, config, _WORKER_STATE["partials"])
    # Send back bytes, not the dict: pickling the artifact twice would cost more than compiling it.
    return _spool(replace(result, artifact=None), _WORKER_STATE.get("spool"), _WORKER_STATE.get("pieces", False))


def _compile(rel: str, tree: SourceTree, config: Config, partials: PartialLoader) -> CompiledPrompt:
    # a source listed, then gone: E106 in whichever process found it, nothing cached
    return pipeline.compile_prompt(rel, config, tree, partials=partials).compiled


def _spool(prompt: CompiledPrompt, spool: str | None, pieces: bool) -> tuple[CompiledPrompt, bytes | None]:
    """Write the artifact into the spool folder and drop its bytes from memory: a 20,000-prompt
    build would otherwise hold every artifact until the end. With `pieces`, the manifest entry
    goes back as its piece of the manifest (`manifest.piece_of`), made here, in parallel, and
    the prompt without it: the build holds a piece per prompt, not an entry's objects."""
    if spool is None or prompt.data is None:
        return prompt, None
    path = os.path.join(spool, artifact_path(prompt.name))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_new_file(Path(path), prompt.data)
    if pieces and prompt.entry is not None:
        return replace(prompt, data=None, spooled=path, entry=None), piece_of(prompt.name, prompt.entry)
    return replace(prompt, data=None, spooled=path), None


_WORKER_STATE: dict[str, Any] = {}
#: Below this many prompts a process pool costs more than it saves.
PARALLEL_THRESHOLD = 48


class Interrupted(KeyboardInterrupt):
    """SIGTERM arrived while the process pool compiled: the workers are stopped, nothing was
    written, and the caller ends the way the signal asks (the CLI re-raises it). A subclass of
    KeyboardInterrupt, so whatever handles Ctrl-C handles it too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_HELD = {signal.SIGINT, signal.SIGTERM}


@contextmanager
def _signals_held() -> Iterator[None]:
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not POSIX
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _worker_init() -> None:
    """In each forked worker: Ctrl-C is the parent's to handle (it stops the pool; a worker that
    raised KeyboardInterrupt itself would print a traceback), SIGTERM ends it quietly, and it dies
    with the parent, so a parent killed outright leaves no worker writing into a closed pipe. The
    signals the parent held back while forking are let through only then."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent()
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG (Linux)
        if os.getppid() == 1:  # the parent died before the call
            os._exit(1)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


@contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """While a build runs, SIGTERM (CI cancelling a job) raises `Interrupted` in the main thread, so
    the pool is stopped and every `finally` runs, instead of the parent dying under its workers.
    A forked worker that a signal reaches before its initializer ran (it inherits these handlers)
    exits at once, quietly. A handler the application installed itself is left in place."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    owner = os.getpid()

    def on_term(signum: int, _frame: FrameType | None) -> None:
        if os.getpid() != owner:
            os._exit(128 + signum)
        raise Interrupted(signum)

    def on_int(signum: int, frame: FrameType | None) -> None:
        if os.getpid() != owner:
            os._exit(128 + signum)
        signal.default_int_handler(signum, frame)

    installed: dict[int, Any] = {}
    for signum, handler, default in (
        (signal.SIGTERM, on_term, signal.SIG_DFL),
        (signal.SIGINT, on_int, signal.default_int_handler),
    ):
        previous = signal.getsignal(signum)
        if previous is default:
            signal.signal(signum, handler)
            installed[signum] = previous
    try:
        yield
    finally:
        for number, previous in installed.items():
            signal.signal(number, previous)


def _stop(executor: futures.ProcessPoolExecutor, finished: bool) -> None:
    """Shut the executor down; after an interruption, without waiting for chunks in progress: the
    workers are killed (they hold nothing that needs cleaning up, their spool files go with the
    spool folder)."""
    if finished:
        executor.shutdown(wait=True)
        return
    _quiet_manager_thread()
    processes = list(getattr(executor, "_processes", {}).values())
    manager = getattr(executor, "_executor_manager_thread", None)
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        try:
            process.kill()
        except (OSError, AttributeError):
            pass
    for process in processes:
        process.join(timeout=5)
    if manager is not None:
        manager.join(timeout=5)


def _quiet_manager_thread() -> None:
    """CPython 3.11's executor manager thread, finding the workers dead, sets an exception on
    futures that the interrupted map has already cancelled, and prints the `InvalidStateError`
    that raises as a thread traceback (fixed in later CPython releases). That one exception, from
    that thread, is not promptc's to report: the build says it was interrupted."""
    previous = threading.excepthook
    if getattr(previous, "_promptc_quiet", False):
        return

    def hook(args: threading.ExceptHookArgs) -> None:
        if isinstance(args.thread, futures_process._ExecutorManagerThread) and isinstance(
            args.exc_value, futures.InvalidStateError
        ):
            return
        previous(args)

    hook._promptc_quiet = True  # type: ignore[attr-defined]
    threading.excepthook = hook


def _workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def load_compiler() -> None:
    """Import the compile stack now: a build does it before it lets the cyclic collector run for
    its compiles, since the import's thousands of objects are never garbage (collecting while
    they are made cost a one-file rebuild 4 ms)."""
    pipeline.PartialLoader  # noqa: B018 - the first attribute read imports the module


def compile_many(
    rels: list[str],
    tree: SourceTree,
    config: Config,
    *,
    jobs: int | None = None,
    spool: str | None = None,
    pieces: dict[str, bytes] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[CompiledPrompt]:
    """Compile prompts, on every core when there are enough of them. Output order is `rels` order,
    and each artifact's bytes do not depend on which process compiled it. With `spool`, artifacts
    go to files in that folder as they are made instead of staying in memory; with `pieces` too,
    so do the manifest entries: a prompt comes back without its entry, whose manifest piece
    (`manifest.piece_of`) is put in `pieces` by name."""
    if not rels:
        return []
    partials = pipeline.PartialLoader(config, tree)  # each partial is parsed once per process
    jobs = jobs if jobs is not None else _workers()
    if jobs > 1 and len(rels) >= PARALLEL_THRESHOLD and _can_fork():
        # The parser's lexer is loaded once here and inherited by the forked workers. The tokenizer is not:
        # each worker loads its own, in parallel, which costs no wall time and keeps ~60 MB of BPE
        # tables out of the main process, the one that holds the whole build's results.
        parse.warm()
        _WORKER_STATE.update(tree=tree, config=config, partials=partials, spool=spool, pieces=pieces is not None)
        # Everything the workers inherit is frozen out of the collector's reach: a collection in a
        # worker would otherwise write to the header of every inherited object (the source tree,
        # the parser, every module) and so copy each page of them, in each worker.
        gc.freeze()
        try:
            # concurrent.futures, not multiprocessing.Pool: a worker that a signal killed (Ctrl-C
            # and CI's SIGTERM reach the whole process group) breaks the executor cleanly, where
            # Pool.terminate() waits forever for a queue lock the dead worker held.

            ctx = multiprocessing.get_context("fork")
            executor = futures.ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_worker_init)
            finished = False
            try:
                with stop_on_sigterm():
                    # small chunks: the last ones finish close together, so no worker idles
                    # long at the end while another compiles a big chunk alone
                    chunk = max(4, len(rels) // (jobs * 32))
                    compiled = []
                    # The workers are forked while the map submits its chunks: with Ctrl-C and
                    # SIGTERM held back meanwhile, a signal is never handled inside fork's own
                    # hooks (where an exception is only printed and ignored) nor by a child that
                    # has not yet installed its handlers; it arrives, whole, right after.
                    with _signals_held():
                        results = executor.map(_compile_one, rels, chunksize=chunk)
                    for prompt, piece in results:
                        compiled.append(prompt)
                        if piece is not None and pieces is not None:
                            pieces[prompt.name] = piece
                        if on_progress is not None:
                            on_progress(len(compiled), len(rels))
                    finished = True
                    return compiled
            except futures_process.BrokenProcessPool:
                # the workers were killed under us: by a signal to the group (which reaches this
                # process too, an instant later) or by the OOM killer
                raise Interrupted(signal.SIGTERM) from None
            finally:
                _stop(executor, finished)
        finally:
            _WORKER_STATE.clear()
            gc.unfreeze()
    compiled = []
    for rel in rels:
        prompt, piece = _spool(_compile(rel, tree, config, partials), spool, pieces is not None)
        compiled.append(prompt)
        if piece is not None and pieces is not None:
            pieces[prompt.name] = piece
        if on_progress is not None:
            on_progress(len(compiled), len(rels))
    return compiled
