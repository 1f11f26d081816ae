"""The language server on the benchmark corpus: start-up, keystroke latency and memory.

Starts the installed `promptc lsp` over stdio with pygls' client, as an editor does, in a
throwaway workspace holding the 2,000-file corpus of `bench/corpus.py` (and a prompt that includes
a partial), and measures the three targets of issue 26:

- **start-up**: from spawning the server to the `publishDiagnostics` of the first document it is
  sent: `initialize`, `initialized`, `didOpen` of a corpus prompt (a fresh server per round,
  `--starts` rounds; the median is judged), target ≤ 1 s;
- **a change**: `didChange` (one character typed at the end of a line, then taken back, so the
  file stays valid and the same size) to the `publishDiagnostics` of that version, `--changes`
  edits, on a corpus prompt and on a prompt that includes a partial; the p90 is judged, target
  ≤ 50 ms;
- **memory**: the server's peak RSS (`VmHWM` of `/proc/PID/status`), after the edits and after a
  `codeLens` request (the cache lens says which prompts share the prefix, which compiles the whole
  workspace once, as an editor showing lenses asks on every open), target ≤ 250 MB.

    python bench/lsp_latency.py [--files 2000] [--changes 200] [--starts 5] [--json]

The machine is shared: every figure is a median (or a p90) over rounds, and each is printed with
its target. Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import corpus  # noqa: E402  (bench/corpus.py, next to this file)

START_TARGET_MS = 1000.0
CHANGE_TARGET_MS = 50.0  # p90
RSS_TARGET_MB = 250.0
WAIT_S = 60.0

PARTIAL = """\
/// section: identity stable
You are the support assistant of Acme. You answer questions about orders, shipping, returns and
billing, politely and briefly, and you never invent an order status you have not been given.
"""


def prompt_text() -> str:
    """A realistic prompt of about 1,500 bytes: directives, an include, sections, placeholders
    and a template block."""
    body = [
        "/// A support prompt used to time the language server.",
        "/// flow: support",
        "/// param: model=gpt-4o-mini, temperature=0.2",
        "/// input: customer_name, question, orders, tier",
        "----- system -----",
        "/// include: _identity",
        "/// section: rules stable",
        "Rules:",
        *(f"- Rule {i}: keep answers short, cite the order number, and offer a next step." for i in range(8)),
        "/// section: account dynamic",
        "The customer is ${customer_name} (tier: ${tier}).",
        "{% for order in orders %}- order {{ order }}",
        "{% endfor %}",
        "----- user -----",
        "${question}",
    ]
    text = "\n".join(body) + "\n"
    while len(text.encode()) < 1500:
        text = text.replace("Rules:\n", "Rules:\n- Be kind and exact.\n", 1)
    return text


def promptc_command() -> list[str]:
    script = Path(sys.executable).with_name("promptc")
    return [str(script), "lsp"] if script.exists() else [sys.executable, "-m", "promptc", "lsp"]


def make_workspace(root: Path, files: int) -> list[str]:
    """The corpus under `root/prompts_src`, the support prompt and its partial beside it; returns
    the corpus's paths (source-relative)."""
    src = root / "prompts_src"
    paths = corpus.generate(src, files)
    (root / "pyproject.toml").write_text('[tool.promptc]\nsrc = "prompts_src"\nout = "build"\n')
    (src / "_identity.prompt").write_text(PARTIAL)
    (src / "support.prompt").write_text(prompt_text())
    return sorted(paths)


def peak_rss_mb(pid: int) -> tuple[float, float]:
    """(peak, current) resident set of a process, in MB (0 where /proc is not there)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0, 0.0
    values = {}
    for line in status.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            values[key] = int(rest.split()[0]) / 1024
    return values.get("VmHWM", 0.0), values.get("VmRSS", 0.0)


@dataclass
class Session:
    """One server, as the bench drives it."""

    root: Path
    client: LanguageClient = field(default_factory=lambda: LanguageClient("promptc-bench", "1"))
    arrived: dict[tuple[str, int], float] = field(default_factory=dict)
    errors: dict[tuple[str, int], int] = field(default_factory=dict)
    waiting: dict[tuple[str, int], asyncio.Event] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _published(params: types.PublishDiagnosticsParams) -> None:
            if params.version is None:
                return
            key = (params.uri, params.version)
            self.arrived.setdefault(key, time.perf_counter())
            self.errors[key] = sum(d.severity == types.DiagnosticSeverity.Error for d in params.diagnostics)
            if key in self.waiting:
                self.waiting[key].set()

    @property
    def pid(self) -> int:
        server = self.client._server
        return server.pid if server is not None else 0

    def uri(self, rel: str) -> str:
        return (self.root / "prompts_src" / rel).as_uri()

    async def start(self) -> None:
        command = promptc_command()
        await self.client.start_io(command[0], *command[1:], cwd=str(self.root))
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                root_uri=self.root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=self.root.as_uri(), name="bench")],
            )
        )
        self.client.initialized(types.InitializedParams())

    async def wait_for(self, uri: str, version: int) -> float:
        key = (uri, version)
        event = self.waiting.setdefault(key, asyncio.Event())
        if key not in self.arrived:
            await asyncio.wait_for(event.wait(), WAIT_S)
        return self.arrived[key]

    async def open(self, rel: str) -> float:
        """didOpen, and when its diagnostics arrived."""
        uri = self.uri(rel)
        text = (self.root / "prompts_src" / rel).read_text(encoding="utf-8")
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="prompt", version=1, text=text)
            )
        )
        self.versions[uri] = 1
        arrived = await self.wait_for(uri, 1)
        if self.errors[(uri, 1)]:  # a file with errors stops before emit: it would time less than the real work
            raise SystemExit(f"the benchmark prompt {rel} has errors; fix bench/lsp_latency.py")
        return arrived

    async def changes(self, rel: str, count: int) -> list[float]:
        """`count` edits at the end of the file's last non-empty line, each timed in ms."""
        uri = self.uri(rel)
        text = (self.root / "prompts_src" / rel).read_text(encoding="utf-8")
        lines = text.split("\n")
        line = max(i for i, content in enumerate(lines) if content.strip())
        column = len(lines[line])
        timings = []
        for i in range(count):
            version = self.versions[uri] = self.versions.get(uri, 1) + 1
            end = column if i % 2 == 0 else column + 1
            change = types.TextDocumentContentChangePartial(
                range=types.Range(
                    start=types.Position(line=line, character=column), end=types.Position(line=line, character=end)
                ),
                text="?" if i % 2 == 0 else "",
            )
            sent = time.perf_counter()
            self.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[change],
                )
            )
            timings.append((await self.wait_for(uri, version) - sent) * 1000)
        return timings

    async def code_lens(self, rel: str) -> float:
        started = time.perf_counter()
        await self.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=self.uri(rel)))
        )
        return (time.perf_counter() - started) * 1000

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def pygls_floor_ms(rounds: int) -> float:
    """The least any server on pygls pays before it can answer: a fresh interpreter importing
    pygls' server and lsprotocol's types (the median of `rounds`)."""
    import subprocess

    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import lsprotocol.types, pygls.lsp.server"], check=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * 0.9) - 1)]


async def measure(root: Path, paths: list[str], starts: int, changes: int) -> dict:
    target = paths[len(paths) // 2]
    start_ms: list[float] = []
    figures: dict = {
        "files": len(paths),
        "prompt": target,
        "prompt_bytes": len((root / "prompts_src" / target).read_bytes()),
    }
    for round_ in range(starts):
        session = Session(root)
        spawned = time.perf_counter()
        await session.start()
        arrived = await session.open(target)
        start_ms.append((arrived - spawned) * 1000)
        if round_ == starts - 1:  # the last server also takes the edits, the lens and the memory readings
            corpus_changes = await session.changes(target, changes)
            await session.open("support.prompt")
            include_changes = await session.changes("support.prompt", changes)
            figures["rss_after_edits_mb"], _ = peak_rss_mb(session.pid)
            figures["code_lens_first_ms"] = round(await session.code_lens(target), 1)
            figures["code_lens_again_ms"] = round(await session.code_lens(target), 1)
            after_lens = await session.changes(target, max(20, changes // 10))
            figures["rss_peak_mb"], figures["rss_now_mb"] = peak_rss_mb(session.pid)
        await session.stop()
    figures["start_ms"] = [round(v, 1) for v in start_ms]
    figures["pygls_floor_ms"] = round(pygls_floor_ms(starts), 1)
    figures["start_median_ms"] = round(statistics.median(start_ms), 1)
    for name, timings in (("change", corpus_changes), ("include_change", include_changes), ("after_lens", after_lens)):
        figures[f"{name}_median_ms"] = round(statistics.median(timings), 2)
        figures[f"{name}_p90_ms"] = round(p90(timings), 2)
        figures[f"{name}_max_ms"] = round(max(timings), 2)
    figures["changes"] = changes
    return figures


def verdicts(figures: dict) -> list[tuple[str, str, float, float, str]]:
    """(key, what, measured, target, unit) per target; `bench/run.py` reads them by key."""
    return [
        (
            "start",
            "initialize → first diagnostics (median of fresh servers)",
            figures["start_median_ms"],
            START_TARGET_MS,
            "ms",
        ),
        ("change", "didChange → diagnostics, corpus prompt, p90", figures["change_p90_ms"], CHANGE_TARGET_MS, "ms"),
        (
            "include_change",
            "didChange → diagnostics, prompt with a partial, p90",
            figures["include_change_p90_ms"],
            CHANGE_TARGET_MS,
            "ms",
        ),
        (
            "after_lens",
            "didChange → diagnostics after the code lens, p90",
            figures["after_lens_p90_ms"],
            CHANGE_TARGET_MS,
            "ms",
        ),
        ("rss", "server peak RSS (after the code lens)", figures["rss_peak_mb"], RSS_TARGET_MB, "MB"),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000, help="corpus files in the workspace (default 2000)")
    parser.add_argument("--changes", type=int, default=200, help="edits to time per prompt (default 200)")
    parser.add_argument("--starts", type=int, default=5, help="fresh servers to time start-up on (default 5)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="promptc-lsp-bench-"))
    env_before = os.environ.get("PYTHONDONTWRITEBYTECODE")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed server runs: bytecode cached
    try:
        paths = make_workspace(root, args.files)
        figures = asyncio.run(measure(root, paths, max(1, args.starts), max(2, args.changes + args.changes % 2)))
    finally:
        shutil.rmtree(root, ignore_errors=True)
        if env_before is not None:
            os.environ["PYTHONDONTWRITEBYTECODE"] = env_before
    results = verdicts(figures)
    figures["targets"] = [
        {"key": key, "what": what, "measured": value, "target": target, "unit": unit, "ok": value <= target}
        for key, what, value, target, unit in results
    ]
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(
            f"promptc lsp on a {figures['files']:,}-file workspace ({figures['prompt_bytes']}-byte prompt, "
            f"{figures['changes']} edits per prompt, {len(figures['start_ms'])} fresh servers):"
        )
        for _key, what, value, target, unit in results:
            verdict = "PASS" if value <= target else "MISS"
            print(f"  {verdict}  {what}: {value:g} {unit} (target ≤ {target:g} {unit})")
        print(
            f"  also: start-up rounds {figures['start_ms']} ms (floor: a fresh interpreter importing pygls and "
            f"lsprotocol, {figures['pygls_floor_ms']} ms); change median {figures['change_median_ms']} ms, "
            f"max {figures['change_max_ms']} ms; code lens {figures['code_lens_first_ms']} ms first, "
            f"{figures['code_lens_again_ms']} ms again; RSS after the edits {figures['rss_after_edits_mb']:.0f} MB, "
            f"now {figures['rss_now_mb']:.0f} MB"
        )
    return 0 if all(value <= target for _, _, value, target, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
