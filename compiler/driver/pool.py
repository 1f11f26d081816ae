"""Stage 3 — compile: every prompt that the plan did not reuse, on every core when there are enough."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..compile import CompiledPrompt, compile_source, name_of
from ..config import Config
from ..context import SourceTree
from ..frontend import PartialLoader, vanished
from .output import _write_file


def _compile_one(rel: str) -> CompiledPrompt:
    tree, config = _WORKER_STATE["tree"], _WORKER_STATE["config"]
    result = _compile(rel, tree, config, _WORKER_STATE["partials"])
    # Send back bytes, not the dict: pickling the artifact twice would cost more than compiling it.
    return _spool(replace(result, artifact=None), _WORKER_STATE.get("spool"))


def _compile(rel: str, tree: SourceTree, config: Config, partials: PartialLoader) -> CompiledPrompt:
    try:
        data = tree.files[rel]
    except OSError as exc:  # listed, then gone: E106 in whichever process found it, nothing cached
        return CompiledPrompt(name_of(rel), rel, (vanished(tree.display(rel), exc),))
    return compile_source(rel, data, config, tree, partials)


def _spool(prompt: CompiledPrompt, spool: str | None) -> CompiledPrompt:
    """Write the artifact into the spool folder and drop its bytes from memory: a 20,000-prompt
    build would otherwise hold every artifact until the end."""
    if spool is None or prompt.data is None:
        return prompt
    path = os.path.join(spool, f"{prompt.name}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    _write_file(Path(path), prompt.data)
    return replace(prompt, data=None, spooled=path)


_WORKER_STATE: dict[str, Any] = {}
#: Below this many prompts a process pool costs more than it saves.
PARALLEL_THRESHOLD = 48


def _workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def compile_many(
    rels: list[str],
    tree: SourceTree,
    config: Config,
    *,
    jobs: int | None = None,
    spool: str | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[CompiledPrompt]:
    """Compile prompts, on every core when there are enough of them. Output order is `rels` order,
    and each artifact's bytes do not depend on which process compiled it. With `spool`, artifacts
    go to files in that folder as they are made instead of staying in memory."""
    partials = PartialLoader(config, tree)  # each partial is parsed once per process
    jobs = jobs if jobs is not None else _workers()
    if jobs > 1 and len(rels) >= PARALLEL_THRESHOLD and _can_fork():
        import multiprocessing

        from ..parse import parser

        # The parser is loaded once here and inherited by the forked workers. The tokenizer is not:
        # each worker loads its own, in parallel, which costs no wall time and keeps ~60 MB of BPE
        # tables out of the main process, the one that holds the whole build's results.
        parser()
        _WORKER_STATE.update(tree=tree, config=config, partials=partials, spool=spool)
        try:
            ctx = multiprocessing.get_context("fork")
            with ctx.Pool(jobs) as pool:
                chunk = max(8, len(rels) // (jobs * 8))
                compiled = []
                for prompt in pool.imap(_compile_one, rels, chunksize=chunk):
                    compiled.append(prompt)
                    if on_progress is not None:
                        on_progress(len(compiled), len(rels))
                return compiled
        finally:
            _WORKER_STATE.clear()
    compiled = []
    for rel in rels:
        compiled.append(_spool(_compile(rel, tree, config, partials), spool))
        if on_progress is not None:
            on_progress(len(compiled), len(rels))
    return compiled
