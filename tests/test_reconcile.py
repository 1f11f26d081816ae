"""`promptc reconcile`: record files with planted causes, mixed with healthy traffic, are classified
exactly (every record, by its line), token sums are the records' own, each cause points at its
source line, and malformed input is a located diagnostic (W951, E950), never a traceback."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

import pytest

from promptc.driver import build
from promptc.facts.config import Config
from promptc.runtime.model import Artifact
from promptc.runtime.usage import USAGE_SCHEMA, iso_timestamp
from promptc.tools.reconcile import KINDS, ReadStats, SourceLocator, parse_fail_on, read_records, reconcile

from .conftest import run_promptc

#: a long stable system prompt, one sentence a line (the dynamic cause's line is checked against it)
STABLE = "\n".join(
    f"Policy {i}: answer from the article, cite it, and never guess about {i * 7} plans." for i in range(140)
)
CL_V1 = (
    "/// param: model=claude-sonnet-4-5, max_tokens=100\n"
    "/// cache_ttl: 5m\n"
    "----- system -----\n"
    "You are the billing assistant.\n"
    f"{STABLE}\n"
    "----- user -----\n"
    "${q}\n"
)
CL_V2 = CL_V1.replace("You are the billing assistant.", "You are the billing assistant of Acme.")
GP = f"/// param: model=gpt-4o\n----- system -----\n{STABLE}\n----- user -----\n${{q}}\n"
SMALL = "/// param: model=gpt-4o-mini\n----- system -----\nSort the ticket.\n----- user -----\n${q}\n"
T0 = 1_796_115_600.0  # 2026-12-01T09:00:00Z


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A git repository whose HEAD has CL_V1; the working tree (and its build) has CL_V2."""
    root = tmp_path_factory.mktemp("reconcile")
    src = root / "prompts_src"
    src.mkdir()
    (root / "pyproject.toml").write_text('[tool.promptc]\nsrc = "prompts_src"\nout = "build"\n')
    for name, text in (("cl", CL_V1), ("gp", GP), ("small", SMALL)):
        (src / f"{name}.prompt").write_text(text)
    assert build(src, root / "build", Config()).ok
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "v1")
    (root / "old_prefix").write_text(json.loads((root / "build/cl.json").read_text())["cache"]["prefix_sha256"])
    (src / "cl.prompt").write_text(CL_V2)
    assert build(src, root / "build", Config()).ok
    return root


def _artifacts(root: Path) -> dict[str, Artifact]:
    return {
        name: Artifact.from_json(json.loads((root / f"build/{name}.json").read_text()))
        for name in ("cl", "gp", "small")
    }


class Day:
    """Records with the classification each one should get."""

    def __init__(self, artifacts: dict[str, Artifact], old_prefix: str) -> None:
        self.a = artifacts
        self.old_prefix = old_prefix
        self.items: list[tuple[dict, str]] = []

    def add(self, prompt: str, kind: str, start: float, *, read: int, written: int | None = None, **extra) -> None:
        art = self.a.get(prompt)
        anthropic = prompt == "cl"
        record = {
            "schema": USAGE_SCHEMA,
            "prompt": prompt,
            "artifact_sha256": None,
            "prefix_sha256": art.cache.prefix_sha256 if art else "cd" * 32,
            "shape": "anthropic" if anthropic else "openai",
            "provider": "anthropic" if anthropic else "openai",
            "model": art.model if art else "gpt-4o",
            "response_model": None,
            "started_at": iso_timestamp(start),
            "timestamp": iso_timestamp(start + extra.pop("took", 1.5)),
            "input_tokens": extra.pop("total", (art.cache.cacheable_tokens or 0) + 40 if art else 900),
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written if anthropic else None,
            "output_tokens": 20,
            "usage": {},
        }
        record.update(extra)
        self.items.append((record, kind))


def planted_day(artifacts: dict[str, Artifact], old_prefix: str) -> Day:
    """Every cause, each planted among healthy traffic."""
    day = Day(artifacts, old_prefix)
    p_cl = artifacts["cl"].cache.cacheable_tokens
    p_gp = artifacts["gp"].cache.cacheable_tokens
    assert p_cl and p_gp and p_gp > 1024 + 128 and artifacts["small"].cache.cacheable_tokens == 0
    # cl (anthropic, 5m TTL): three at once on a cold cache, then a request a minute
    day.add("cl", "first-write", T0, read=0, written=p_cl, took=2.0)
    day.add("cl", "concurrent", T0 + 0.1, read=0, written=p_cl)
    day.add("cl", "concurrent", T0 + 0.2, read=0, written=p_cl)
    t = T0
    for _ in range(10):
        t += 60
        day.add("cl", "hit", t, read=p_cl, written=0)
    t += 400  # longer than 5 minutes
    day.add("cl", "expired", t, read=0, written=p_cl)
    for _ in range(5):
        t += 60
        day.add("cl", "hit", t, read=p_cl, written=0)
    t += 30
    day.add("cl", "below-minimum", t, read=0, written=0)  # the provider neither read nor wrote
    t += 30
    day.add("cl", "model", t, read=0, written=p_cl, model="claude-opus-4-1")
    day.add("cl", "model", t + 5, read=0, written=p_cl, model="claude-opus-4-1")
    t += 30
    day.add("cl", "stale", t, read=0, written=p_cl, prefix_sha256="ab" * 32)
    day.add("cl", "bust", t + 1, read=0, written=p_cl, prefix_sha256=old_prefix)
    day.add("cl", "bust", t + 2, read=p_cl, written=0, prefix_sha256=old_prefix)
    t += 30
    day.add("cl", "dynamic", t, read=0, written=p_cl)
    day.add("cl", "hit", t + 30, read=p_cl + 7, written=0)  # more than predicted is a hit too
    day.add("cl", "hit", t + 60, read=p_cl - 90, written=0)  # Claude counted fewer than promptc's estimate
    # gp (openai): hits every two minutes, a partial read, a short request, a long gap
    g = T0 + 5
    day.add("gp", "first-write", g, read=0)
    for _ in range(6):
        g += 120
        day.add("gp", "hit", g, read=p_gp)
    g += 120
    day.add("gp", "dynamic", g, read=1024)
    g += 60
    day.add("gp", "below-minimum", g, read=0, total=700)
    g += 900
    day.add("gp", "expired", g, read=0)
    g += 60
    day.add("gp", "hit", g, read=p_gp)
    # small: under the minimum by the build's own count; gone: not in the build at all
    for i in range(4):
        day.add("small", "below-minimum", T0 + 7 + 300 * i, read=0, total=60)
    day.add("gone", "stale", T0 + 8, read=0)
    return day


def _write(path: Path, day: Day, order: list[int] | None = None) -> dict[int, tuple[str, str]]:
    """Write the day as JSONL; returns line → (prompt, expected kind)."""
    order = order or list(range(len(day.items)))
    expected = {}
    with path.open("w", encoding="utf-8") as out:
        for line, index in enumerate(order, 1):
            record, kind = day.items[index]
            out.write(json.dumps(record) + "\n")
            expected[line] = (record["prompt"], kind)
    return expected


def _reconcile(project: Path, path: Path, **options):
    """The library's reconcile, run in the project folder as the command runs it (sources shown
    as `prompts_src/…`, the revision's tree read with git for --against)."""
    import contextlib

    from promptc.cli.oldtree import from_revision
    from promptc.driver.sources import read_tree

    seen: dict[int, tuple[str, str]] = {}
    stats = ReadStats()
    with contextlib.chdir(project):
        tree, _ = read_tree(Path("prompts_src"), Path("build"))
        against = options.get("against")
        old = from_revision(against, "prompts_src", "build").sources if against else None
        result = reconcile(
            read_records(path, stats),
            _artifacts(project),
            stats,
            locator=SourceLocator(tree, Config(), old),
            observe=lambda line, prompt, kind: seen.__setitem__(line, (prompt, kind)),
            **options,
        )
    return result, seen


def _old(project: Path) -> dict[str, str]:
    return {"cl": (project / "old_prefix").read_text()}


def test_every_planted_cause_is_classified_and_the_sums_are_the_records(project: Path, tmp_path: Path) -> None:
    day = planted_day(_artifacts(project), (project / "old_prefix").read_text())
    expected = _write(tmp_path / "day.jsonl", day)
    assert {kind for _, kind in expected.values()} == set(KINDS) - {"not-cached"}
    result, seen = _reconcile(project, tmp_path / "day.jsonl", old_prefixes=_old(project), against="HEAD")
    assert seen == expected
    records = [r for r, _ in day.items]
    for field, total in (
        ("input_tokens", "input_tokens"),
        ("cache_read_input_tokens", "cached"),
        ("cache_creation_input_tokens", "cache_written"),
        ("output_tokens", "output_tokens"),
    ):
        assert result.total(total) == sum(r[field] or 0 for r in records)
    assert result.stats.records == len(records) and result.stats.skipped == 0
    data = result.to_json()
    assert data["summary"]["input_tokens"] == sum(r["input_tokens"] for r in records)
    cl = next(p for p in data["prompts"] if p["name"] == "cl")
    assert cl["requests"] == sum(1 for r in records if r["prompt"] == "cl")
    assert cl["observed_cached_tokens"] == sum(r["cache_read_input_tokens"] for r in records if r["prompt"] == "cl")
    hits = next(p for p in data["prompts"] if p["name"] == "gp")
    assert 0 < float(hits["hit_ratio"]) < 1 and float(hits["lost"]) > 0


def test_records_out_of_order_within_the_horizon_classify_the_same(project: Path, tmp_path: Path) -> None:
    day = planted_day(_artifacts(project), (project / "old_prefix").read_text())
    by_start = sorted(range(len(day.items)), key=lambda i: day.items[i][0]["started_at"])
    # as appending processes write them: each record a few places away from its turn (< 10 min)
    nearby = sorted(by_start, key=lambda i: by_start.index(i) + random.Random(i).uniform(-4, 4))
    shuffled = list(by_start)
    random.Random(7).shuffle(shuffled)
    for order, horizon in ((nearby, 600.0), (shuffled, 86_400.0)):
        expected = _write(tmp_path / "shuffled.jsonl", day, order)
        _, seen = _reconcile(
            project, tmp_path / "shuffled.jsonl", old_prefixes=_old(project), against="HEAD", horizon=horizon
        )
        # the three concurrent requests are one write and two re-writes whatever their order in the file
        assert sorted(seen.values()) == sorted(expected.values())


def test_each_cause_points_at_its_source_line(project: Path, tmp_path: Path) -> None:
    day = planted_day(_artifacts(project), (project / "old_prefix").read_text())
    _write(tmp_path / "day.jsonl", day)
    result, _ = _reconcile(project, tmp_path / "day.jsonl", old_prefixes=_old(project), against="HEAD")
    cl, gp, small = result.prompts["cl"], result.prompts["gp"], result.prompts["small"]
    src = "prompts_src"
    assert cl.where["model"].label() == f"{src}/cl.prompt:1" and "model=" in cl.where["model"].text
    assert cl.where["expired"].label() == f"{src}/cl.prompt:2"  # the `/// cache_ttl:` line
    assert cl.where["bust"].line == 4 and "of Acme" in cl.where["bust"].text  # the line changed since HEAD
    assert cl.where["dynamic"].line == 4  # nothing read: the request differs from its first block on
    assert cl.where["concurrent"] is None and cl.where["stale"] is None
    assert gp.where["expired"] is None  # no `/// cache_ttl:` line to change
    assert small.where["below-minimum"].label() == f"{src}/small.prompt:5"  # where the prefix ends
    assert "short of the minimum of 1024" in small.details["below-minimum"]
    # the partial read stopped at token 1024 of the system prompt: the line holding that token
    from promptc.backend.meter import meter

    count = meter("o200k_base").tokens
    lines = STABLE.splitlines()
    holding = next(n for n in range(1, len(lines) + 1) if count("\n".join(lines[:n])) > 1024)
    assert gp.where["dynamic"].line == 2 + holding  # the system prompt starts on line 3
    assert gp.where["dynamic"].text == lines[holding - 1]


def test_an_opentelemetry_export_reconciles_as_the_jsonl_does(project: Path, tmp_path: Path) -> None:
    """OTLP/JSON (the collector's file exporter: one document a line) and the Python SDK's own
    `span.to_json()` (ConsoleSpanExporter), made by the real SDK from the same records."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from promptc.runtime.usage import UsageRecord, parse_timestamp, span_attributes

    day = planted_day(_artifacts(project), (project / "old_prefix").read_text())
    expected = _write(tmp_path / "day.jsonl", day)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    with tracer.start_as_current_span("unrelated"):  # another instrumentation's span: skipped
        pass
    for record, _ in day.items:
        parsed = UsageRecord.from_json(record)
        start = int(parse_timestamp(parsed.started_at) * 1e9)
        span = tracer.start_span("chat", start_time=start, attributes=span_attributes(parsed))
        span.end(end_time=int(parse_timestamp(parsed.timestamp) * 1e9))
    spans = exporter.get_finished_spans()
    console = tmp_path / "console.json"
    console.write_text("".join(span.to_json() + "\n" for span in spans))  # pretty-printed, one after another
    otlp = tmp_path / "otlp.jsonl"
    with otlp.open("w") as out:
        for span in spans:
            attributes = [
                {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
                for k, v in (span.attributes or {}).items()
            ]
            document = {
                "resourceSpans": [
                    {
                        "resource": {"attributes": []},
                        "scopeSpans": [
                            {
                                "scope": {"name": "app"},
                                "spans": [
                                    {
                                        "traceId": f"{span.context.trace_id:032x}",
                                        "spanId": f"{span.context.span_id:016x}",
                                        "name": span.name,
                                        "startTimeUnixNano": str(span.start_time),
                                        "endTimeUnixNano": str(span.end_time),
                                        "attributes": attributes,
                                    }
                                ],
                            }
                        ],
                    }
                ]
            }
            out.write(json.dumps(document) + "\n")
    want = sorted(expected.values())
    for path in (console, otlp):
        result, seen = _reconcile(project, path, old_prefixes=_old(project), against="HEAD")
        assert sorted(seen.values()) == want, path.name
        assert result.stats.other_spans == 1 and result.stats.skipped == 0
        assert result.total("input_tokens") == sum(r["input_tokens"] for r, _ in day.items)


def test_malformed_records_are_located_and_skipped(project: Path, tmp_path: Path) -> None:
    day = planted_day(_artifacts(project), (project / "old_prefix").read_text())
    good = [json.dumps(r) for r, _ in day.items[:4]]
    bad = dict(day.items[0][0], input_tokens=-5)
    lines = [
        good[0],
        '{"schema": "promptc.usage/1", "prompt": ',  # cut off mid-record
        good[1],
        json.dumps(bad),
        "[1, 2]",
        good[2],
        "not json at all",
        json.dumps({"hello": "world"}),
        "[" * 100_000 + "]" * 100_000,  # deeper than any stack: a diagnostic, not a RecursionError
        good[3][: len(good[3]) // 2],  # a log whose last line was cut off
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines))
    stats = ReadStats()
    records = list(read_records(path, stats))
    assert [line for line, _ in records] == [1, 3, 6]
    located = [(d.code, d.line) for d in stats.diagnostics]
    assert located == [("W951", 2), ("W953", 4), ("W951", 5), ("W951", 7), ("W951", 8), ("W951", 9), ("W951", 10)]
    assert "nested too deeply" in stats.diagnostics[5].message
    assert "`input_tokens`: expected a token count ≥ 0" in stats.diagnostics[1].message
    assert str(stats.diagnostics[0]).startswith(f"{path}:2:1: warning[W951]")


def test_the_command(project: Path, tmp_path: Path) -> None:
    day = planted_day(_artifacts(project), (project / "old_prefix").read_text())
    _write(project / "day.jsonl", day)
    done = run_promptc("reconcile", "day.jsonl", "--against", "HEAD", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "cl: bust, 2 requests" in done.stdout and "prompts_src/cl.prompt:4" in done.stdout
    failing = run_promptc("reconcile", "day.jsonl", "--fail-on", "hit<0.95", "--format", "json", cwd=project)
    assert failing.returncode == 1
    payload = json.loads(failing.stdout)
    assert payload["command"] == "reconcile" and payload["failed"] == ["hit<0.95 (cl, gp)"]
    assert payload["summary"]["records"] == len(day.items)
    github = run_promptc("reconcile", "day.jsonl", "--format", "github", "--fail-on", "lost>0.0001", cwd=project)
    assert github.returncode == 1
    assert "::warning file=prompts_src/cl.prompt,line=2," in github.stdout
    assert github.stdout.rstrip().splitlines()[-1].startswith("::error title=promptc reconcile::--fail-on lost>")
    missing = run_promptc("reconcile", "nope.jsonl", cwd=project)
    assert missing.returncode == 2 and "error[E950]: cannot read the usage records: no such file" in missing.stderr
    usage = run_promptc("reconcile", "day.jsonl", "--fail-on", "hit>3", cwd=project)
    assert usage.returncode == 2 and "expected hit<RATIO or lost>DOLLARS" not in usage.stdout
    assert "Traceback" not in missing.stderr + usage.stderr


def test_fail_on_rules() -> None:
    assert str(parse_fail_on("hit<0.6")) == "hit<0.6" and parse_fail_on("hit < 60%") == parse_fail_on("hit<0.6")
    assert str(parse_fail_on("lost>$5")) == "lost>5.000000"
    for bad in ("hit>0.6", "hit<2", "lost<1", "cost>5", "hit<x"):
        with pytest.raises(ValueError):
            parse_fail_on(bad)


def test_memory_stays_bounded_on_a_large_file(project: Path, tmp_path: Path) -> None:
    """A file twenty times larger takes no more memory: the reader streams, the state is per
    prompt and cache entry, and the reorder buffer holds only the records inside its horizon."""
    import tracemalloc

    art = _artifacts(project)["gp"]
    template = {
        "schema": USAGE_SCHEMA,
        "prompt": "gp",
        "prefix_sha256": art.cache.prefix_sha256,
        "shape": "openai",
        "provider": "openai",
        "model": "gpt-4o",
        "input_tokens": art.cache.cacheable_tokens + 100,
        "cache_read_input_tokens": art.cache.cacheable_tokens,
    }

    def peak(count: int) -> int:
        path = tmp_path / f"big{count}.jsonl"
        with path.open("w") as out:
            for i in range(count):
                out.write(json.dumps({**template, "timestamp": iso_timestamp(T0 + 10 * i)}) + "\n")
        tracemalloc.start()
        stats = ReadStats()
        result = reconcile(read_records(path, stats), _artifacts(project), stats, horizon=60)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert stats.skipped == 0 and result.prompts["gp"].requests == count
        return top

    small, large = peak(100), peak(2_000)
    assert large < small * 2 + 1_000_000, (small, large)


def test_a_record_of_a_revision_without_against_is_stale(project: Path, tmp_path: Path) -> None:
    day = planted_day(_artifacts(project), (project / "old_prefix").read_text())
    expected = _write(tmp_path / "day.jsonl", day)
    _, seen = _reconcile(project, tmp_path / "day.jsonl")
    assert seen == {line: (p, "stale" if k == "bust" else k) for line, (p, k) in expected.items()}


def test_the_report_shows_the_observed_hits(project: Path) -> None:
    day = planted_day(_artifacts(project), (project / "old_prefix").read_text())
    _write(project / "day.jsonl", day)
    done = run_promptc("report", "-o", "report.html", "--records", "day.jsonl", cwd=project)
    assert done.returncode == 0, done.stderr
    page = (project / "report.html").read_text()
    section = page[page.index('<section id="observed">') :]
    section = section[: section.index("</section>")]
    assert "Observed hits" in section and "usage records: day.jsonl" in page
    for cause in ("expired", "concurrent", "model", "stale", "dynamic", "below-minimum"):
        assert f"</b>: {cause}," in section, cause
    assert "<code>prompts_src/cl.prompt:2</code>" in section  # the expired cause's cache_ttl line


def test_the_library_api(project: Path) -> None:
    import contextlib

    import promptc

    day = planted_day(_artifacts(project), (project / "old_prefix").read_text())
    _write(project / "day.jsonl", day)
    with contextlib.chdir(project):
        result = promptc.reconcile_file("day.jsonl", "build", src="prompts_src")
    assert isinstance(result, promptc.Reconciliation)
    assert result.prompts["cl"].kinds["concurrent"] == 2 and result.prompts["cl"].where["expired"].line == 2
    with pytest.raises(OSError, match="no such file"):
        promptc.reconcile_file(project / "missing.jsonl", project / "build")
    with pytest.raises(ValueError, match="no readable manifest"):
        promptc.reconcile_file(project / "day.jsonl", project / "nowhere")


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_reading_does_not_depend_on_where_the_chunks_end(project: Path, tmp_path: Path, chunk) -> None:
    """JSONL, pretty-printed documents one after another and one array over many lines, with
    malformed lines among them, read the same whatever the size of the chunks the file comes in."""
    day = planted_day(_artifacts(project), (project / "old_prefix").read_text())
    records = [r for r, _ in day.items[:6]]
    text = (
        "\n".join(json.dumps(r) for r in records[:2])
        + "\n{broken\n"
        + json.dumps(records[2], indent=4)
        + "\n"
        + json.dumps(records[3:5], indent=2)
        + "\n  "
        + json.dumps(records[5])
        + "\n"
    )
    path = tmp_path / "mixed.json"
    path.write_text(text, encoding="utf-8")
    stats = ReadStats()
    found = list(read_records(path, stats, chunk_size=chunk))
    assert [record.prompt for _, record in found] == [r["prompt"] for r in records]
    starts = [line for line, _ in found]
    assert starts[:3] == [1, 2, 4] and starts[3] == starts[4] and starts[5] == text.count("\n")
    assert [(d.code, d.line) for d in stats.diagnostics] == [("W951", 3)]


def test_bytes_that_are_not_utf8_are_located(project: Path, tmp_path: Path) -> None:
    day = planted_day(_artifacts(project), (project / "old_prefix").read_text())
    lines = [json.dumps(r).encode() for r, _ in day.items[:3]]
    lines[1] = lines[1].replace(b'"usage": {}', b'"usage": {}, "note": "\xff\xfe"')
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(lines) + '\n{"é": 1}\n'.encode())
    stats = ReadStats()
    assert len(list(read_records(path, stats))) == 3  # the record itself is still read
    assert [(d.code, d.line) for d in stats.diagnostics] == [("W951", 4), ("W951", 2)]
    assert "not UTF-8 text here" in stats.diagnostics[1].message


@pytest.mark.parametrize("option", ["--window", "--horizon"])
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "soon"])
def test_a_duration_that_is_not_finite_seconds_is_a_usage_error(project: Path, option: str, value: str) -> None:
    result = run_promptc("reconcile", "usage.jsonl", option, value, cwd=project)
    assert result.returncode == 2, result.stderr
    assert "seconds" in result.stderr and "Traceback" not in result.stderr
