"""Benchmark promptc against the I/O floor, Jinja2 and promplate-inspect, side by side in one run.

This machine is shared and noisy, so every tool is measured in the same run, interleaved round by round (one run of
each per round, after an unrecorded warm-up round), and the table reports medians and ratios within the run. Every
promptc measurement is a fresh `promptc` process, so interpreter and import start-up are included. Peak RSS comes
from the warm-up round, run under `/usr/bin/time -f %M` (`ru_maxrss`: the largest of the process and the workers it
waited for, not their sum); the timed rounds are spawned directly.

    python bench/run.py                      # 200 and 2,000 files, 5 runs each
    python bench/run.py --large              # also 20,000 files
    python bench/run.py --sizes 2000 --tiny 100000   # also the edit loop on 100,000 tiny prompts (minutes)
    python bench/run.py --runs 9 --sizes 2000 --json bench/results/2000.json
    python bench/run.py --markdown           # the tables in Markdown, for docs/performance.md
    python bench/run.py --from-json FILE --markdown   # re-print a saved run without measuring
    python bench/run.py --large --update-doc docs/performance.md   # measure, then refresh the doc's results block

Corpora are generated under bench/corpus/ (gitignored) by bench/corpus.py (and bench/tinycorpus.py) when missing or
stale. The edit loop is measured against its own floors: bench/editfloor.py (a fresh process that stats the tree and
writes one file's JSON and the manifest) and bench/watchfloor.py (a watchdog observer doing the same per event).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
CORPUS_ROOT = BENCH / "corpus"
RESULTS = BENCH / "results"
sys.path.insert(0, str(BENCH))

import corpus  # noqa: E402  (bench/corpus.py, next to this file)
import render as render_bench  # noqa: E402  (bench/render.py)
import tinycorpus  # noqa: E402  (bench/tinycorpus.py)

DEFAULT_SIZES = (200, 2000)
LARGE_SIZE = 20_000
REFERENCE_SIZE = 2000  # the targets are stated on the 2,000-file corpus
WATCH_TIMEOUT = 30.0
POLL_INTERVAL = 0.002

# The Jinja2 and promplate-inspect measurements run in their own interpreter, so that the process wall time includes
# start-up exactly like a `promptc` run, while the loop time (walk + read + analyse every file) is timed inside.
_WALK = r"""
import json, os, sys, time
t_start = time.perf_counter()
{imports}
src = sys.argv[1]
t_loop = time.perf_counter()
paths = []
for folder, dirs, files in os.walk(src):
    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    paths.extend(os.path.join(folder, f) for f in sorted(files) if f.endswith(".prompt"))
paths.sort()
errors = 0
names = 0
for path in paths:
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    try:
        names += len({analyse})
    except Exception:
        errors += 1
t_end = time.perf_counter()
print(json.dumps({{"loop": t_end - t_loop, "imports": t_loop - t_start, "files": len(paths), "errors": errors,
                  "names": names}}))
"""
JINJA_WORKER = _WALK.format(
    imports="import jinja2, jinja2.meta\nenv = jinja2.Environment()",
    analyse="jinja2.meta.find_undeclared_variables(env.parse(text))",
)
INSPECT_WORKER = _WALK.format(
    imports="from promplate_inspect import find_input_variables_in_template",
    analyse="find_input_variables_in_template(text)",
)


# ---------------------------------------------------------------------------------------------
# Measuring one process


@dataclass
class Sample:
    seconds: float
    rss_kb: int
    returncode: int
    output: str = ""
    inner: dict | None = None  # what a worker printed (loop time, error counts)


GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def run_timed(cmd: list[str], cwd: Path | None = None, *, rss: bool = False) -> Sample:
    """Run `cmd` to completion: wall time from just before spawn to reaping, and the child's peak RSS.

    With `rss`, the command runs under `/usr/bin/time -f %M` when present: `ru_maxrss` of a child spawned by this
    (~20 MB) Python process starts at this process's own high-water mark (Linux records the pre-exec RSS), which
    would hide the footprint of small commands. That wrapper costs ~2 ms, so timed runs are spawned directly.
    """
    with tempfile.TemporaryFile() as log, tempfile.NamedTemporaryFile("r") as rss_file:
        wrapped = [GNU_TIME, "-f", "%M", "-o", rss_file.name, *cmd] if rss and GNU_TIME else cmd
        start = time.perf_counter()
        proc = subprocess.Popen(wrapped, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        output = log.read().decode("utf-8", errors="replace")
        rss_kb = usage.ru_maxrss
        if wrapped is not cmd:
            numbers = [line for line in rss_file.read().split() if line.isdigit()]
            rss_kb = int(numbers[-1]) if numbers else rss_kb
    return Sample(seconds, rss_kb, proc.returncode, output)


def run_worker(code: str, src: Path, *, rss: bool = False) -> Sample:
    sample = run_timed([sys.executable, "-c", code, str(src)], rss=rss)
    if sample.returncode == 0:
        sample.inner = json.loads(sample.output.strip().splitlines()[-1])
    return sample


class Failed(Exception):
    pass


def checked(sample: Sample, what: str) -> Sample:
    if sample.returncode != 0:
        tail = "\n".join(sample.output.strip().splitlines()[-15:])
        raise Failed(f"{what} exited with {sample.returncode}:\n{tail}")
    return sample


# ---------------------------------------------------------------------------------------------
# Results


@dataclass
class Measurement:
    key: str
    label: str
    files: int | None
    samples: list[float] = field(default_factory=list)
    rss_kb: list[int] = field(default_factory=list)
    note: str = ""
    error: str = ""

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None

    @property
    def peak_rss_mb(self) -> float | None:
        return max(self.rss_kb) / 1024 if self.rss_kb else None


class Results:
    def __init__(self) -> None:
        self.measurements: dict[str, Measurement] = {}
        self.machine: dict = {}
        self.settings: dict = {}
        #: bench/render.py's samples (render speed, in this process), if measured
        self.render: dict = {}

    def get(self, key: str, label: str = "", files: int | None = None) -> Measurement:
        if key not in self.measurements:
            self.measurements[key] = Measurement(key, label, files)
        return self.measurements[key]

    def median(self, key: str) -> float | None:
        m = self.measurements.get(key)
        return m.median if m else None

    def to_json(self) -> dict:
        return {
            "machine": self.machine,
            "settings": self.settings,
            "measurements": [
                {**asdict(m), "median": m.median, "peak_rss_mb": m.peak_rss_mb} for m in self.measurements.values()
            ],
            "render": self.render,
            "targets": [asdict(t) for t in targets(self)],
        }

    @classmethod
    def from_json(cls, data: dict) -> Results:
        results = cls()
        results.machine = data.get("machine", {})
        results.settings = data.get("settings", {})
        results.render = data.get("render", {})
        for raw in data.get("measurements", []):
            raw = {k: v for k, v in raw.items() if k not in ("median", "peak_rss_mb")}
            results.measurements[raw["key"]] = Measurement(**raw)
        return results


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# The machine


def machine_info() -> dict:
    info: dict = {"python": platform.python_version(), "implementation": platform.python_implementation()}
    info["platform"] = platform.platform()
    try:
        info["nproc"] = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        info["nproc"] = os.cpu_count()
    info["cpu_count"] = os.cpu_count()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["memory_gb"] = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    try:
        info["loadavg_at_start"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    from importlib import metadata

    for dist, label in (
        ("promptc-compiler", "promptc"),
        ("jinja2", "jinja2"),
        ("promplate", "promplate"),
        ("promplate-inspect", "promplate-inspect"),
    ):
        try:
            info[f"{label}_version"] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            info[f"{label}_version"] = None
    return info


# ---------------------------------------------------------------------------------------------
# Corpora and the commands under test


@dataclass
class Workspace:
    files: int
    root: Path  # bench/corpus/n<files>/

    @property
    def src(self) -> Path:
        return self.root / "src"

    @property
    def out(self) -> Path:
        return self.root / "out"

    @property
    def floor_out(self) -> Path:
        return self.root / "iofloor-out"

    def reset_promptc(self) -> None:
        """Remove everything a previous build left: the output folder, its staging leftovers and every cache."""
        for path in (self.out, self.root / ".promptc-cache", self.src / ".promptc-cache"):
            shutil.rmtree(path, ignore_errors=True)
        for leftover in self.root.glob("out.promptc-tmp-*"):
            shutil.rmtree(leftover, ignore_errors=True)


def prepare_corpus(files: int, seed: int) -> Workspace:
    ws = Workspace(files, CORPUS_ROOT / f"n{files}")
    if not corpus.is_intact(ws.src, files, seed):
        progress(f"generating the {files:,}-file corpus (seed {seed}) in {ws.src}")
        shutil.rmtree(ws.root, ignore_errors=True)
        tmp = ws.root.with_name(ws.root.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        corpus.generate(tmp / "src", files, seed)
        tmp.rename(ws.root)
    # A config of its own, so the benchmark does not depend on the repository's [tool.promptc] table.
    (ws.root / "pyproject.toml").write_text("[tool.promptc]\n")
    return ws


def promptc_exe(explicit: str | None) -> str:
    if explicit:
        return explicit
    beside = Path(sys.executable).parent / "promptc"
    if beside.exists():
        return str(beside)
    found = shutil.which("promptc")
    if not found:
        raise SystemExit("promptc not found: install the project (`make build`) or pass --promptc")
    return found


def build_cmd(exe: str, ws: Workspace) -> list[str]:
    return [exe, "build", str(ws.src), "-o", str(ws.out), "--quiet"]


def prompt_sources(ws: Workspace) -> list[str]:
    return sorted(p.relative_to(ws.src).as_posix() for p in ws.src.rglob("*.prompt") if not p.name.startswith("_"))


# ---------------------------------------------------------------------------------------------
# One corpus size: every tool, interleaved round by round


def measure_size(results: Results, ws: Workspace, exe: str, runs: int) -> None:
    n = ws.files
    floor = results.get(f"floor@{n}", "I/O floor (bench/iofloor.py, process)", n)
    jinja_proc = results.get(f"jinja@{n}", "Jinja2 parse + find_undeclared_variables (process)", n)
    jinja_loop = results.get(f"jinja-loop@{n}", "Jinja2 parse + find_undeclared_variables (loop only)", n)
    inspect_proc = results.get(f"inspect@{n}", "promplate-inspect find_input_variables (process)", n)
    inspect_loop = results.get(f"inspect-loop@{n}", "promplate-inspect find_input_variables (loop only)", n)
    cold = results.get(f"cold@{n}", "promptc build, cold", n)
    noop = results.get(f"noop@{n}", "promptc build, no-op rebuild", n)
    touch = results.get(f"touch@{n}", "promptc build, one file touched", n)
    edit_floor = results.get(f"editfloor@{n}", "incremental floor (bench/editfloor.py, process)", n)

    sources = prompt_sources(ws)
    touched_rel = sources[len(sources) // 2]
    touched = ws.src / touched_rel
    original = touched.read_bytes()
    floor_cmd = [sys.executable, str(BENCH / "iofloor.py"), str(ws.src), str(ws.floor_out)]
    edit_floor_cmd = [sys.executable, str(BENCH / "editfloor.py"), str(ws.src), str(ws.floor_out), str(touched_rel)]

    def take(m: Measurement, sample: Sample, warm: bool) -> None:
        """The warm-up round gives peak RSS (under /usr/bin/time); the measured rounds give times."""
        if warm:
            m.rss_kb.append(sample.rss_kb)
        else:
            m.samples.append(sample.seconds)

    def one_round(index: int, warm: bool) -> None:
        shutil.rmtree(ws.floor_out, ignore_errors=True)
        take(floor, checked(run_timed(floor_cmd, rss=warm), "iofloor.py"), warm)
        for proc_m, loop_m, code, what in (
            (jinja_proc, jinja_loop, JINJA_WORKER, "jinja2"),
            (inspect_proc, inspect_loop, INSPECT_WORKER, "promplate-inspect"),
        ):
            if proc_m.error:
                continue
            try:
                s = checked(run_worker(code, ws.src, rss=warm), what)
            except Failed as exc:
                proc_m.error = loop_m.error = str(exc).splitlines()[-1]
                continue
            take(proc_m, s, warm)
            if not warm:
                loop_m.samples.append(s.inner["loop"])
            errors = s.inner["errors"]
            proc_m.note = loop_m.note = f"{errors} of {s.inner['files']} files raised" if errors else ""
        if cold.error:
            return
        try:
            ws.reset_promptc()
            take(cold, checked(run_timed(build_cmd(exe, ws), cwd=ws.root, rss=warm), "promptc build (cold)"), warm)
            take(noop, checked(run_timed(build_cmd(exe, ws), cwd=ws.root, rss=warm), "promptc build (no-op)"), warm)
            touched.write_bytes(original + f"/// bench: touched in round {index}\n".encode())
            s = checked(run_timed(build_cmd(exe, ws), cwd=ws.root, rss=warm), "promptc build (one file touched)")
            take(touch, s, warm)
            # the floor of the same edit, right after: stat the tree, hash the file, write it and the manifest
            take(edit_floor, checked(run_timed(edit_floor_cmd, rss=warm), "editfloor.py"), warm)
        except Failed as exc:
            cold.error = noop.error = touch.error = str(exc)
            progress(f"promptc failed on the {n:,}-file corpus: {exc}")

    try:
        progress(f"{n:,} files: warm-up round")
        one_round(-1, warm=True)
        if not cold.error:
            try:
                verify_build(ws)
            except Failed as exc:
                cold.error = noop.error = touch.error = str(exc)
        for index in range(runs):
            progress(f"{n:,} files: round {index + 1}/{runs}")
            one_round(index, warm=False)
    finally:
        touched.write_bytes(original)
    touch.note = f"appends a comment line to {touched_rel}"
    edit_floor.note = f"the same edit of {touched_rel}"


def verify_build(ws: Workspace) -> None:
    manifest = json.loads((ws.out / "manifest.json").read_text())
    expected = len(prompt_sources(ws))
    if len(manifest.get("artifacts", {})) != expected:
        raise Failed(f"manifest lists {len(manifest.get('artifacts', {}))} artifacts, expected {expected}")


# ---------------------------------------------------------------------------------------------
# Watch latency


def watch_available(exe: str) -> bool:
    try:
        done = subprocess.run([exe, "watch", "--help"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def debounce_seconds(explicit: float | None) -> tuple[float, str]:
    """The watcher's debounce window: --debounce, else a module-level DEBOUNCE* number in promptc.driver.watch."""
    if explicit is not None:
        return explicit, "--debounce"
    try:
        import promptc.driver.watch as watch_module
    except Exception:  # noqa: BLE001 - any import problem means "unknown"
        return 0.0, "unknown (promptc.driver.watch not importable)"
    for name in sorted(dir(watch_module)):
        value = getattr(watch_module, name)
        if "DEBOUNCE" in name.upper() and isinstance(value, (int, float)) and not isinstance(value, bool):
            seconds = value / 1000 if "MS" in name.upper() else float(value)
            return seconds, f"promptc.driver.watch.{name}"
    return 0.0, "unknown (no DEBOUNCE constant in promptc.driver.watch)"


def _stat_key(path: Path) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _contains(path: Path, needle: bytes) -> bool:
    try:
        return needle in path.read_bytes()
    except OSError:
        return False


def _vm_hwm_kb(pid: int) -> int | None:
    """Peak RSS so far of a running process (Linux), for the long-lived watcher."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def measure_watch(
    results: Results,
    ws: Workspace,
    exe: str,
    runs: int,
    debounce: float,
    pass_debounce: bool = False,
    with_floor: bool = True,
) -> None:
    """The watch floor (bench/watchfloor.py) and `promptc watch`, one after the other in this run: the same files
    rewritten the same way, the time from the write to the artifact and the manifest both holding the new hash."""
    n = ws.files
    sources = prompt_sources(ws)
    # different files from the one-file rebuild, rotated so that no two rounds write the same file
    picks = [sources[(len(sources) // 3 + 7 * i) % len(sources)] for i in range(runs + 1)]
    if with_floor:
        floor = results.get(f"watchfloor@{n}", "watch floor (bench/watchfloor.py): write → artifact + manifest", n)
        floor_out = ws.root / "watchfloor-out"
        shutil.rmtree(floor_out, ignore_errors=True)
        floor_cmd = [sys.executable, str(BENCH / "watchfloor.py"), str(ws.src), str(floor_out)]
        _watch_rounds(floor, floor_cmd, ws, floor_out, picks, "floor", settle=0.5)
        floor.note = "no debounce, nothing compiled"
        shutil.rmtree(floor_out, ignore_errors=True)

    m = results.get(f"watch@{n}", "promptc watch, write → artifact + manifest replaced", n)
    ws.reset_promptc()
    cmd = [
        exe,
        "watch",
        str(ws.src),
        "-o",
        str(ws.out),
        *(["--debounce", f"{debounce * 1000:g}"] if pass_debounce else []),
    ]
    _watch_rounds(m, cmd, ws, ws.out, picks, "watch", settle=max(1.0, 3 * debounce))
    if not m.error:
        m.note = f"debounce {debounce * 1000:.0f} ms"


def _watch_rounds(
    m: Measurement, cmd: list[str], ws: Workspace, out: Path, picks: list[str], label: str, settle: float
) -> None:
    import hashlib

    n = ws.files
    originals = {rel: (ws.src / rel).read_bytes() for rel in picks}
    manifest = out / "manifest.json"
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, cwd=ws.root, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 300
            while not manifest.exists():
                exited = proc.poll()
                if exited is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read().decode(errors="replace").strip().splitlines()[-8:]
                    why = f"exited with {exited}" if exited is not None else "still running after 300 s"
                    m.error = f"watch never wrote the initial build ({why}): " + " | ".join(tail)
                    return
                time.sleep(0.01)
            time.sleep(settle)  # let the initial build settle and the observer start
            for index, rel in enumerate(picks):
                record = index > 0  # the first write is a warm-up
                if proc.poll() is not None:
                    m.error = f"watch exited with {proc.returncode}"
                    return
                name = rel[: -len(".prompt")]
                artifact = out / f"{name}.json"
                data = originals[rel] + f"/// bench: {label} round {index}\n".encode()
                needle = hashlib.sha256(data).hexdigest().encode()
                before = (_stat_key(artifact), _stat_key(manifest))
                start = time.perf_counter()
                (ws.src / rel).write_bytes(data)
                done = False
                while time.perf_counter() - start < WATCH_TIMEOUT:
                    now = (_stat_key(artifact), _stat_key(manifest))
                    if now != before:
                        before = now
                        if _contains(artifact, needle) and _contains(manifest, needle):
                            done = True
                            break
                    time.sleep(POLL_INTERVAL)
                elapsed = time.perf_counter() - start
                if not done:
                    m.error = f"no rebuild seen within {WATCH_TIMEOUT:.0f} s of writing {rel}"
                    return
                if record:
                    m.samples.append(elapsed)
                    progress(f"{n:,} files: {label} round {index}/{len(picks) - 1}: {elapsed * 1000:.1f} ms")
                time.sleep(settle)
        finally:
            for rel, data in originals.items():
                (ws.src / rel).write_bytes(data)
            hwm = _vm_hwm_kb(proc.pid)
            if hwm:
                m.rss_kb.append(hwm)
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# ---------------------------------------------------------------------------------------------
# The edit loop at scale: many tiny prompts (opt-in, --tiny)


def prepare_tiny(files: int) -> Workspace:
    ws = Workspace(files, CORPUS_ROOT / f"tiny{files}")
    if not tinycorpus.is_current(ws.src, files):
        progress(f"generating the {files:,}-file tiny corpus in {ws.src}")
        shutil.rmtree(ws.root, ignore_errors=True)
        tinycorpus.generate(ws.src, files)
    (ws.root / "pyproject.toml").write_text("[tool.promptc]\n")
    return ws


def measure_tiny(results: Results, files: int, exe: str, runs: int) -> None:
    """One clean build (with its peak RSS), then rounds of a no-op build, a one-edit build and the incremental
    floor of the same edit, on the tiny corpus of `files` files."""
    ws = prepare_tiny(files)
    cold = results.get(f"tinycold@{files}", "tiny prompts: promptc build, clean (once)", files)
    noop = results.get(f"tinynoop@{files}", "tiny prompts: promptc build, no-op rebuild", files)
    touch = results.get(f"tinytouch@{files}", "tiny prompts: promptc build, one file edited", files)
    floor = results.get(f"tinyeditfloor@{files}", "tiny prompts: incremental floor (bench/editfloor.py)", files)
    touched_rel = tinycorpus.relative_path(files // 2)
    touched = ws.src / touched_rel
    original = touched.read_bytes()
    try:
        shutil.rmtree(ws.floor_out, ignore_errors=True)
        checked(run_timed([sys.executable, str(BENCH / "iofloor.py"), str(ws.src), str(ws.floor_out)]), "iofloor.py")
        ws.reset_promptc()
        progress(f"{files:,} tiny files: clean build")
        sample = checked(run_timed(build_cmd(exe, ws), cwd=ws.root, rss=True), "promptc build (tiny, clean)")
        cold.samples.append(sample.seconds)
        cold.rss_kb.append(sample.rss_kb)
        floor_cmd = [sys.executable, str(BENCH / "editfloor.py"), str(ws.src), str(ws.floor_out), touched_rel]
        for index in range(-1, runs):
            warm = index < 0
            progress(f"{files:,} tiny files: {'warm-up round' if warm else f'round {index + 1}/{runs}'}")
            s = checked(run_timed(build_cmd(exe, ws), cwd=ws.root, rss=warm), "promptc build (tiny, no-op)")
            (noop.rss_kb if warm else noop.samples).append(s.rss_kb if warm else s.seconds)
            touched.write_bytes(original + f"/// bench: edited in round {index}\n".encode())
            s = checked(run_timed(build_cmd(exe, ws), cwd=ws.root, rss=warm), "promptc build (tiny, one edit)")
            (touch.rss_kb if warm else touch.samples).append(s.rss_kb if warm else s.seconds)
            s = checked(run_timed(floor_cmd, rss=warm), "editfloor.py (tiny)")
            (floor.rss_kb if warm else floor.samples).append(s.rss_kb if warm else s.seconds)
    except Failed as exc:
        cold.error = noop.error = touch.error = str(exc)
        progress(f"promptc failed on the {files:,}-file tiny corpus: {exc}")
    finally:
        touched.write_bytes(original)
    touch.note = floor.note = f"appends a comment line to {touched_rel}"


# ---------------------------------------------------------------------------------------------
# Start-up


def measure_startup(results: Results, exe: str, runs: int) -> None:
    runs = max(runs, 10)
    python = results.get("python", "python -c pass (interpreter start-up)", None)
    version = results.get("version", "promptc --version", None)
    for index in range(runs + 1):
        warm = index == 0  # the first pair warms the page cache and gives peak RSS
        for m, cmd in ((python, [sys.executable, "-c", "pass"]), (version, [exe, "--version"])):
            s = checked(run_timed(cmd, rss=warm), " ".join(cmd[-2:]))
            if warm:
                m.rss_kb.append(s.rss_kb)
            else:
                m.samples.append(s.seconds)


# ---------------------------------------------------------------------------------------------
# Targets


@dataclass
class Target:
    name: str
    status: str  # PASS, MISS or n/a
    measured: str
    limit: str
    by: str = ""


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def targets(results: Results) -> list[Target]:
    ref, large = REFERENCE_SIZE, LARGE_SIZE
    med = results.median
    out: list[Target] = []

    def ratio_target(name: str, value: float | None, limit: float, what: str) -> None:
        if value is None:
            out.append(Target(name, "n/a", "not measured", f"≤ {limit:g}×"))
            return
        ok = value <= limit
        by = "" if ok else f"{value / limit:.2f}× over the limit ({value:.2f}× vs {limit:g}×)"
        out.append(Target(name, "PASS" if ok else "MISS", f"{value:.2f}× {what}", f"≤ {limit:g}×", by))

    def time_target(name: str, seconds: float | None, limit: float, note: str = "") -> None:
        if seconds is None:
            out.append(Target(name, "n/a", "not measured" + (f" ({note})" if note else ""), f"≤ {limit * 1000:.0f} ms"))
            return
        ok = seconds <= limit
        by = "" if ok else f"+{(seconds - limit) * 1000:.0f} ms ({seconds / limit:.1f}× the limit)"
        measured = f"{seconds * 1000:.0f} ms" + (f" ({note})" if note else "")
        out.append(Target(name, "PASS" if ok else "MISS", measured, f"≤ {limit * 1000:.0f} ms", by))

    cold = med(f"cold@{ref}")
    ratio_target(
        f"cold build ≤ 0.75 × Jinja2 ({ref:,} files, both with start-up)",
        _ratio(cold, med(f"jinja@{ref}")),
        0.75,
        "Jinja2",
    )
    loop_ratio = _ratio(cold, med(f"jinja-loop@{ref}"))
    ratio_target(f"  stricter: cold build ≤ 0.75 × Jinja2 loop only ({ref:,} files)", loop_ratio, 0.75, "Jinja2 loop")
    ratio_target(f"cold build ≤ 8 × I/O floor ({ref:,} files)", _ratio(cold, med(f"floor@{ref}")), 8, "I/O floor")
    ratio_target(
        f"no-op rebuild ≤ 1.5 × I/O floor ({ref:,} files)",
        _ratio(med(f"noop@{ref}"), med(f"floor@{ref}")),
        1.5,
        "I/O floor",
    )
    touch, edit_floor = med(f"touch@{ref}"), med(f"editfloor@{ref}")
    ratio_target(
        f"one-file rebuild as a fresh process ≤ 3 × the incremental floor ({ref:,} files)",
        _ratio(touch, edit_floor),
        3,
        "incremental floor"
        + (f" ({touch * 1000:.0f} ms vs {edit_floor * 1000:.0f} ms)" if touch and edit_floor else ""),
    )
    watch = results.measurements.get(f"watch@{ref}")
    watch_floor = med(f"watchfloor@{ref}")
    debounce = results.settings.get("debounce_s") or 0.0
    name = f"watch: save → artifact, minus the debounce, ≤ 10 × the watchdog floor ({ref:,} files)"
    if watch and watch.median is not None and watch_floor:
        latency = watch.median - debounce
        ratio_target(
            name,
            latency / watch_floor,
            10,
            f"watchdog floor ({watch.median * 1000:.0f} ms − {debounce * 1000:.0f} ms debounce = "
            f"{latency * 1000:.0f} ms vs {watch_floor * 1000:.1f} ms)",
        )
    else:
        reason = (watch.error if watch and watch.error else results.settings.get("watch_note")) or "not run"
        out.append(Target(name, "n/a", f"not measured ({reason})", "≤ 10×"))
    tiny_sizes = sorted(
        m.files for m in results.measurements.values() if m.key.startswith("tinytouch@") and m.median is not None
    )
    if tiny_sizes:
        size = tiny_sizes[-1]
        tiny = med(f"tinytouch@{size}")
        ratio_target(
            f"{size:,} tiny prompts: one-edit build ≤ 10 × the {ref:,}-file one-edit build",
            _ratio(tiny, touch),
            10,
            f"the {ref:,}-file one-edit build" + (f" ({tiny:.2f} s vs {touch:.3f} s)" if tiny and touch else ""),
        )
    else:
        out.append(
            Target(
                f"100,000 tiny prompts: one-edit build ≤ 10 × the {ref:,}-file one-edit build",
                "n/a",
                "not measured (run with --tiny 100000)",
                "≤ 10×",
            )
        )
    time_target("promptc --version ≤ 150 ms", med("version"), 0.150)
    ratio_target(
        f"{large:,} files: cold build ≤ 11 × the {ref:,}-file time",
        _ratio(med(f"cold@{large}"), cold),
        11,
        f"the {ref:,}-file time",
    )
    big = results.measurements.get(f"cold@{large}")
    rss = big.peak_rss_mb if big else None
    if rss is None:
        out.append(Target(f"{large:,} files: peak RSS ≤ 200 MB", "n/a", "not measured (run with --large)", "≤ 200 MB"))
    else:
        by = "" if rss <= 200 else f"+{rss - 200:.0f} MB"
        out.append(
            Target(
                f"{large:,} files: peak RSS ≤ 200 MB", "PASS" if rss <= 200 else "MISS", f"{rss:.0f} MB", "≤ 200 MB", by
            )
        )
    if results.render:
        out += [Target(*t) for t in render_bench.targets(results.render)]
    out.append(
        Target(
            "language server: diagnostics of a 1,500-byte file ≤ 50 ms after a change",
            "n/a",
            "measured by bench/lsp_latency.py (the language server's own bench)",
            "≤ 50 ms",
        )
    )
    return out


# ---------------------------------------------------------------------------------------------
# Reporting


def table_rows(results: Results) -> list[list[str]]:
    rows = []
    for m in results.measurements.values():
        n = m.files
        floor = results.median(f"floor@{n}") if n else None
        jinja = results.median(f"jinja@{n}") if n else None
        median = m.median
        comparable = not m.key.startswith(("watch", "floor@", "tiny"))
        r_floor = _ratio(median, floor) if comparable and n else None
        r_jinja = _ratio(median, jinja) if comparable and n and not m.key.startswith("jinja@") else None
        if m.error:
            rows.append([m.label, f"{n:,}" if n else "", "failed", "", "", "", m.error.splitlines()[-1][:100]])
            continue
        rows.append(
            [
                m.label,
                f"{n:,}" if n else "",
                f"{median:.3f}" if median is not None else "",
                f"{r_floor:.2f}×" if r_floor is not None else "",
                f"{r_jinja:.2f}×" if r_jinja is not None else "",
                f"{m.peak_rss_mb:.0f}" if m.peak_rss_mb is not None else "",
                "; ".join(
                    part
                    for part in (
                        f"n={len(m.samples)}, {min(m.samples):.3f}–{max(m.samples):.3f}" if m.samples else "",
                        m.note,
                    )
                    if part
                ),
            ]
        )
    large = results.median(f"cold@{LARGE_SIZE}")
    ref = results.median(f"cold@{REFERENCE_SIZE}")
    if large is not None and ref:
        rows.append(
            [
                f"  {LARGE_SIZE:,}-file cold build / {REFERENCE_SIZE:,}-file cold build",
                "",
                f"{large / ref:.2f}×",
                "",
                "",
                "",
                "",
            ]
        )
    return rows


HEADER = ["measurement", "files", "median s", "× I/O floor", "× Jinja2", "peak RSS MB", "notes"]
TARGET_HEADER = ["target", "status", "measured", "limit", "miss by"]


def format_text(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)


def format_markdown(headers: list[str], rows: list[list[str]]) -> str:
    def esc(cell: str) -> str:
        return cell.replace("|", "\\|")

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def machine_line(machine: dict) -> str:
    parts = [
        f"{machine.get('cpu_model', 'unknown CPU')}",
        f"nproc {machine.get('nproc')}",
        f"{machine.get('memory_gb', '?')} GB RAM",
        f"Python {machine.get('python')}",
        f"load average at start {machine.get('loadavg_at_start')}",
    ]
    versions = ", ".join(
        f"{d} {machine.get(f'{d}_version')}" for d in ("promptc", "jinja2", "promplate", "promplate-inspect")
    )
    return "; ".join(parts) + f"; {versions}"


def report(results: Results, markdown: bool) -> str:
    fmt = format_markdown if markdown else format_text
    settings = results.settings
    out = []
    if markdown:
        out.append(f"Machine: {machine_line(results.machine)}.  ")
        out.append(
            f"Run: {settings.get('runs')} runs per measurement (median), sizes {settings.get('sizes')}, "
            f"corpus seed {settings.get('seed')}, {settings.get('date', '')}."
        )
    else:
        out.append(f"machine: {machine_line(results.machine)}")
        out.append(
            f"runs: {settings.get('runs')} per measurement, sizes {settings.get('sizes')}, seed {settings.get('seed')}"
        )
    out.append("")
    out.append(fmt(HEADER, table_rows(results)))
    out.append("")
    if results.render:
        out.append(fmt(render_bench.HEADER, render_bench.rows(results.render)))
        out.append("")
    rows = [[t.name, t.status, t.measured, t.limit, t.by] for t in targets(results)]
    out.append(fmt(TARGET_HEADER, rows))
    return "\n".join(out)


DOC_BEGIN = "<!-- bench:begin -->"
DOC_END = "<!-- bench:end -->"


def update_doc(path: Path, markdown: str) -> None:
    """Replace the generated block of docs/performance.md; the prose around it is left alone."""
    text = path.read_text()
    start, end = text.find(DOC_BEGIN), text.find(DOC_END)
    if start == -1 or end < start:
        raise SystemExit(f"{path}: no {DOC_BEGIN} … {DOC_END} block to replace")
    text = f"{text[: start + len(DOC_BEGIN)]}\n{markdown}\n{text[end:]}"
    path.write_text(text)
    progress(f"updated the results block in {path}")


# ---------------------------------------------------------------------------------------------
# Main


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "").replace(",", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not sizes or any(s <= 0 for s in sizes):
        raise argparse.ArgumentTypeError("sizes must be positive")
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--runs", type=int, default=5, help="measured runs per measurement (default 5; median reported)"
    )
    parser.add_argument(
        "--sizes", type=parse_sizes, default=list(DEFAULT_SIZES), help="corpus sizes (default 200,2000)"
    )
    parser.add_argument("--large", action="store_true", help=f"also the {LARGE_SIZE:,}-file corpus")
    parser.add_argument(
        "--tiny",
        type=parse_sizes,
        default=[],
        metavar="N[,N]",
        help="also the edit loop on N tiny prompts (bench/tinycorpus.py), e.g. --tiny 100000 (minutes: opt-in)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write every sample and the targets as JSON")
    parser.add_argument("--markdown", action="store_true", help="print the tables in Markdown")
    parser.add_argument("--from-json", metavar="FILE", help="print the report of a saved --json run; measure nothing")
    parser.add_argument("--seed", type=int, default=corpus.DEFAULT_SEED, help="corpus seed")
    parser.add_argument("--promptc", metavar="PATH", help="the promptc executable (default: the one next to python)")
    parser.add_argument("--no-watch", action="store_true", help="skip the watch latency measurement")
    parser.add_argument("--no-render", action="store_true", help="skip the render speed table (bench/render.py)")
    parser.add_argument(
        "--update-doc",
        metavar="FILE",
        help=f"also replace the text between {DOC_BEGIN} and {DOC_END} in FILE with the Markdown report",
    )
    parser.add_argument("--prepare", action="store_true", help="only generate the corpora for --sizes, then exit")
    parser.add_argument(
        "--debounce",
        type=float,
        help="debounce window in seconds, passed to `promptc watch --debounce` (default: promptc.driver.watch.DEBOUNCE)",
    )
    args = parser.parse_args(argv)

    if args.from_json:
        results = Results.from_json(json.loads(Path(args.from_json).read_text()))
        print(report(results, args.markdown))
        if args.update_doc:
            update_doc(Path(args.update_doc), report(results, markdown=True))
        return 0
    if args.prepare:
        for size in sorted(set(args.sizes) | ({LARGE_SIZE} if args.large else set())):
            ws = prepare_corpus(size, args.seed)
            print(f"{ws.src}: {size:,} files")
        return 0
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    # An installed promptc runs from compiled bytecode (pip writes the .pyc files); with
    # PYTHONDONTWRITEBYTECODE set (as in some CI and sandbox shells) every process would compile
    # promptc's, lark's and click's sources again, and the start-up rows would measure that instead.
    bytecode_note = (
        "PYTHONDONTWRITEBYTECODE unset for the measured processes"
        if os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        else ""
    )
    exe = promptc_exe(args.promptc)
    sizes = sorted(set(args.sizes) | ({LARGE_SIZE} if args.large else set()))
    results = Results()
    results.machine = machine_info()
    debounce, debounce_source = debounce_seconds(args.debounce)
    results.settings = {
        "runs": args.runs,
        "sizes": sizes,
        "tiny": args.tiny,
        "seed": args.seed,
        "promptc": exe,
        "date": time.strftime("%Y-%m-%d"),
        "debounce_s": debounce,
        "debounce_source": debounce_source,
        "bytecode": bytecode_note,
    }
    has_watch = not args.no_watch and watch_available(exe)
    if not has_watch:
        results.settings["watch_note"] = (
            "skipped (--no-watch)" if args.no_watch else "`promptc watch` does not exist yet"
        )
    progress(f"promptc: {exe}; sizes {sizes}; {args.runs} runs; watch: {'yes' if has_watch else 'no'}")

    if not args.no_render:
        progress("render speed (bench/render.py, in this process)")
        results.render = render_bench.measure()
    measure_startup(results, exe, args.runs)
    for size in sizes:
        ws = prepare_corpus(size, args.seed)
        measure_size(results, ws, exe, args.runs)
        if has_watch and size != LARGE_SIZE and not results.get(f"cold@{size}").error:
            measure_watch(results, ws, exe, args.runs, debounce, pass_debounce=args.debounce is not None)
            watch = results.get(f"watch@{size}")
            if watch.error.startswith("watch never wrote the initial build (exited with -"):
                # killed by a signal from outside (OOM killer, a neighbour's cleanup): try once more
                progress(f"{watch.error.split(':')[0]}; retrying once")
                watch.error, watch.samples, watch.rss_kb = "", [], []
                measure_watch(
                    results, ws, exe, args.runs, debounce, pass_debounce=args.debounce is not None, with_floor=False
                )
                watch.note += " (retried: the first watcher was killed from outside)"
    for size in args.tiny:
        measure_tiny(results, size, exe, args.runs)

    data = results.to_json()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.json").write_text(json.dumps(data, indent=2) + "\n")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
    print(report(results, args.markdown))
    if args.update_doc:
        update_doc(Path(args.update_doc), report(results, markdown=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
