"""`promptc reconcile`'s record reader on any byte stream: a record is read whole wherever the file's
read chunks end, and a bad value in any field of a record (a count or a timestamp that is not one,
out of range, NaN, a number of thousands of digits, a Unicode digit) is a counted, located warning
that skips that record only, never a traceback. The tests drive the `promptc reconcile` command
where they can, so they hold for any implementation of the reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptc.driver import build
from promptc.facts.config import Config
from promptc.runtime.usage import USAGE_SCHEMA
from promptc.tools.reconcile import ReadStats, read_records

from .conftest import examples, run_promptc

PROMPT = "/// param: model=gpt-4o\n----- system -----\nSort the ticket.\n----- user -----\n${q}\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("reader")
    (root / "prompts_src").mkdir()
    (root / "pyproject.toml").write_text('[tool.promptc]\nsrc = "prompts_src"\nout = "build"\n')
    (root / "prompts_src/a.prompt").write_text(PROMPT)
    assert build(root / "prompts_src", root / "build", Config()).ok
    return root


def record(n: int = 0, **fields) -> dict:
    """A valid usage record (the n-th of a day: a minute apart), with `fields` changed."""
    minute = f"{n // 60 % 24:02d}:{n % 60:02d}"
    return {
        "schema": USAGE_SCHEMA,
        "prompt": "a",
        "artifact_sha256": None,
        "prefix_sha256": None,
        "shape": "openai",
        "provider": "openai",
        "model": "gpt-4o",
        "response_model": None,
        "started_at": f"2026-12-01T{minute}:00.000Z",
        "timestamp": f"2026-12-01T{minute}:01.250Z",
        "input_tokens": 1200 + n,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": None,
        "output_tokens": 20,
        "usage": {"prompt_tokens": 1200 + n},
    } | fields


def reconciled(project: Path, text: str | bytes, name: str = "usage.jsonl") -> tuple[dict, str]:
    """`promptc reconcile --format json` of a records file: the payload, and stderr (no traceback)."""
    path = project / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    done = run_promptc("reconcile", name, "--format", "json", cwd=project)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


# ---------------------------------------------------------------------------------------------
# A record is read whole wherever the chunks end


def _awkward_file() -> bytes:
    """Small, and every kind of token a chunk could cut: `null`, integers, floats, `true`, escapes
    (a surrogate pair, a quote), raw multi-byte UTF-8, CRLF, blank lines, a pretty-printed record, an
    OTLP document of two spans, a malformed line and a byte that is not UTF-8."""

    def short(n: int, **fields) -> dict:  # the fields a record needs, to keep the file small
        return {"schema": USAGE_SCHEMA, "prompt": "a", "shape": "openai", "timestamp": f"2026-12-01T09:{n:02d}:00Z"} | {
            "input_tokens": 1200 + n,
            **fields,
        }

    def span(end: str) -> dict:
        attributes = {"promptc.prompt": {"stringValue": "a"}, "gen_ai.provider.name": {"stringValue": "openai"}}
        attributes |= {"gen_ai.usage.input_tokens": {"intValue": "12"}}
        attributes |= {"gen_ai.usage.output_tokens": {"doubleValue": 7.0}, "other": {"boolValue": True}}
        listed = [{"key": key, "value": value} for key, value in attributes.items()]
        return {"name": "chat", "endTimeUnixNano": end, "attributes": listed}

    otlp = {"resourceSpans": [{"scopeSpans": [{"spans": [span("1796115601500000000"), span("1796115602000000000")]}]}]}
    lines = [
        json.dumps(short(1, output_tokens=None, started_at=None)),
        json.dumps(short(2, model="\u00e9\U0001fae9", usage={"x": 1.5e3, "y": True, "z": -0.0})),
        "",
        json.dumps(short(3, model='gpt "quoted" \\'), ensure_ascii=False),
        json.dumps(short(4, model="caf\u00e9 \U0001fae9 \u4e2d"), ensure_ascii=False) + "\r",
        "{not json",
        json.dumps(short(5), indent=1),
        json.dumps(otlp, separators=(",", ":")),
        json.dumps(short(6, cache_read_input_tokens=1000, output_tokens=5.0)),
    ]
    text = "\n".join(lines).encode() + b"\n"
    return text + b'{"schema": "promptc.usage/1", "prompt": "a", "note": "\xff"}\n' + json.dumps(short(7)).encode()


def _read(path: Path, chunk: int | None = None) -> tuple[list, list]:
    stats = ReadStats()
    options = {} if chunk is None else {"chunk_size": chunk}
    found = [(line, rec) for line, rec in read_records(path, stats, **options)]
    return found, [(d.code, d.line, d.col, d.message) for d in stats.diagnostics]


def test_a_chunk_boundary_at_every_byte_reads_the_same_records(tmp_path: Path) -> None:
    """Reads of 97 bytes of the file shifted by 0 to 96 leading blanks put a read boundary at
    every byte offset of it, and reads of 1 to 16 bytes cut every token several times: no token (a
    `null`, a number, an escape, a UTF-8 sequence) is read cut, and the records and diagnostics
    are those of one read of the whole file."""
    data = _awkward_file()
    path = tmp_path / "awkward.jsonl"
    path.write_bytes(data)
    whole = _read(path, len(data) + 1)
    assert [line for line, _ in whole[0]] == [1, 2, 4, 5, 7, 14, 14, 15, 17]
    # `{not json`, the record without a shape, the byte that is not UTF-8
    assert [(code, line) for code, line, *_ in whole[1]] == [("W951", 6), ("W953", 16), ("W951", 16)]
    for chunk in range(1, 17):
        assert _read(path, chunk) == whole, chunk
    for shift in range(97):
        path.write_bytes(b" " * shift + data)  # the first record starts later on line 1: nothing else moves
        assert _read(path, 97) == whole, shift


def test_a_token_cut_by_the_real_chunk_boundary_is_read_whole(project: Path) -> None:
    """The command as shipped (1 MiB reads): the file is padded so that a read boundary falls
    inside a `null`, inside numbers, inside a timestamp and a `\\u` escape, and just before and
    after a newline, each in its own record."""
    padding = json.dumps(record(0)).encode() + b"\n"
    line = json.dumps(record(1, response_model=None, usage={"x": 12345678}, model="gpt-4o\u00e9")).encode()
    targets = [b"null", b"1201", b"12345678", b"01.250Z", b"\\u00e9", b"}"]
    cuts = [line.index(t) + 2 for t in targets] + [len(line), len(line) + 1]
    out = bytearray()
    records = 0
    for n, cut in enumerate(cuts, 1):
        start = (n << 20) - cut  # where the record starts: `cut` of its bytes before the boundary
        while len(out) + len(padding) < start:
            out += padding
            records += 1
        out += b" " * (start - len(out) - 1) + b"\n"  # a blank line makes up the rest
        out += line + b"\n"
        records += 1
    payload, stderr = reconciled(project, bytes(out), "boundaries.jsonl")
    assert payload["summary"]["records"] == records
    assert payload["summary"]["skipped"] == 0 and payload["diagnostics"] == [], stderr


# ---------------------------------------------------------------------------------------------
# A bad value is a located, counted warning for that record only

#: raw JSON tokens and values that no count accepts (a count is a whole number, 0 ≤ n < 2^63)
BAD_COUNTS = [
    '"²"',  # str.isdigit accepts it, int() refuses it
    '"٣"',  # an Arabic-Indic digit: int() accepts it
    '"1_000"',  # int() accepts the underscore
    '" 12"',
    '"-5"',
    '""',
    "1" * 6000,  # int() refuses more than 4300 digits
    '"' + "1" * 6000 + '"',
    "NaN",
    "Infinity",
    "-Infinity",
    "1e300",
    "1e400",
    "-1",
    "1.5",
    str(2**63),
    str(2**64),
    "true",
    "false",
    "[]",
    "{}",
    '"twelve"',
]
#: and no timestamp (ISO 8601 with a zone, or epoch seconds, within the years 1 to 9999 in UTC)
BAD_TIMESTAMPS = [
    '"²"',
    '"tomorrow"',
    '"2026-12-01T09:00:00"',  # no zone
    '"2026-13-01T09:00:00Z"',
    '"0001-01-01T00:00:00+01:00"',  # the year 0 in UTC
    '"9999-12-31T23:59:59-01:00"',  # the year 10000 in UTC
    '"２０２６-12-01T09:00:00.000Z"',  # full-width digits
    '"' + "9" * 6000 + '"',
    "1" * 6000,
    "NaN",
    "Infinity",
    "1e300",
    "-1e300",
    "1e20",
    "true",
    "[]",
    "{}",
]
BAD_TEXTS = ["1", "true", "[]", '{"a": 1}', "NaN"]
FIELDS = {
    "input_tokens": BAD_COUNTS + ["null"],
    "cache_read_input_tokens": BAD_COUNTS,
    "cache_creation_input_tokens": BAD_COUNTS,
    "output_tokens": BAD_COUNTS,
    "timestamp": BAD_TIMESTAMPS + ["null"],
    "started_at": BAD_TIMESTAMPS,
    "prompt": BAD_TEXTS + ['""', "null"],
    "shape": BAD_TEXTS + ['"claude"', "null"],
    "provider": BAD_TEXTS,
    "model": BAD_TEXTS,
    "prefix_sha256": BAD_TEXTS,
    "usage": ["1", "true", "[]", '"x"', "0"],
}


def _line_with(field: str, raw: str, n: int) -> str:
    text = json.dumps(record(n, **{field: "@BAD@"}))
    return text.replace('"@BAD@"', raw)


MUTATIONS = [(field, raw) for field in sorted(FIELDS) for raw in FIELDS[field]]


def _check(project: Path, lines: list[str], bad: dict[int, str]) -> None:
    """Reconcile `lines` (JSONL) where the records at the indexes of `bad` have a bad value in the
    field named: each of those is a W953 at its line and the field's column, and nothing else is lost."""
    payload, _ = reconciled(project, "\n".join(lines) + "\n")
    summary = payload["summary"]
    assert summary["records"] == len(lines) - len(bad) and summary["skipped"] == len(bad)
    assert summary["warnings"] == ({"W953": len(bad)} if bad else {})
    expected = [(index + 1, lines[index].index(f'"{field}"') + 1) for index, field in sorted(bad.items())]
    assert [(d["line"], d["col"]) for d in payload["diagnostics"]] == expected[:50]
    for d, field in zip(payload["diagnostics"], [field for _, field in sorted(bad.items())], strict=False):
        assert d["code"] == "W953" and d["message"].startswith(f"usage record skipped: `{field}`: "), d
        assert len(d["message"]) < 200, d  # a value of 6,000 digits is quoted shortened
    assert sum(p["requests"] for p in payload["prompts"]) == len(lines) - len(bad)


@pytest.mark.parametrize("batch", range(0, len(MUTATIONS), 40))
def test_every_bad_value_in_every_field_skips_that_record_only(project: Path, batch: int) -> None:
    """Every field of a record set to each value it must refuse, one record a line between good
    ones: each is a W953 pointing at the field, the good records are all reconciled."""
    lines: list[str] = []
    bad: dict[int, str] = {}
    for field, raw in MUTATIONS[batch : batch + 40]:
        lines.append(json.dumps(record(len(lines))))
        bad[len(lines)] = field
        lines.append(_line_with(field, raw, len(lines)))
    lines.append(json.dumps(record(len(lines))))
    _check(project, lines, bad)


@settings(max_examples=examples(200), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.none(), st.sampled_from(MUTATIONS)), min_size=1, max_size=12))
def test_bad_values_anywhere_among_good_records(project: Path, plan: list[tuple[str, str] | None]) -> None:
    """Any run of good records and records with a bad value, in any order (several in a row, at
    the start or the end): the good ones are reconciled, each bad one is counted and located."""
    lines = []
    bad = {}
    for index, mutation in enumerate(plan):
        if mutation is None:
            lines.append(json.dumps(record(index)))
        else:
            bad[index] = mutation[0]
            lines.append(_line_with(*mutation, index))
    _check(project, lines, bad)


#: any JSON value (NaN and the infinities too, as Python's json reads them)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**200), max_value=2**200) | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
SPAN_KEYS = ["startTimeUnixNano", "endTimeUnixNano", "attributes", "name"]
ATTRIBUTES = ["promptc.prompt", "gen_ai.provider.name", "gen_ai.usage.input_tokens"]


def _span_line(n: int, key: str | None = None, value=None, attribute: str | None = None) -> str:
    attributes = {"promptc.prompt": "a", "gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": str(1200 + n)}
    span = {"name": "chat", "startTimeUnixNano": str(1796115600 + 60 * n) + "0" * 9}
    span["endTimeUnixNano"] = str(1796115601 + 60 * n) + "0" * 9
    if attribute is not None:
        attributes[attribute] = value
    span["attributes"] = [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]
    if key is not None:
        span[key] = value
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})


@settings(max_examples=examples(200), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.tuples(st.just("record"), st.sampled_from([*sorted(FIELDS), "schema", "extra"]), JSON_VALUES),
            st.tuples(st.just("span"), st.sampled_from(SPAN_KEYS), JSON_VALUES),
            st.tuples(st.just("attribute"), st.sampled_from(ATTRIBUTES), JSON_VALUES),
        ),
        min_size=1,
        max_size=10,
    )
)
def test_any_value_in_any_field_is_read_or_skipped_with_a_warning(project: Path, plan: list) -> None:
    """Any JSON value in any field of a record, or in a span's times and attributes: the command
    exits 0 without a traceback, every line is one record read or one record skipped with a
    warning at its line, and the lines left as they were are all read."""
    lines = []
    changed = set()
    for index, change in enumerate(plan):
        if change is None:
            lines.append(json.dumps(record(index)) if index % 2 else _span_line(index))
            continue
        changed.add(index + 1)
        kind, name, value = change
        if kind == "record":
            lines.append(json.dumps(record(index, **{name: value})))
        else:
            lines.append(_span_line(index, **({"key": name} if kind == "span" else {"attribute": name}), value=value))
    payload, _ = reconciled(project, "\n".join(lines) + "\n")
    summary = payload["summary"]
    assert summary["records"] + summary["skipped"] + summary["other_spans"] == len(lines)
    assert summary["skipped"] == sum(summary["warnings"].values())
    assert {d["line"] for d in payload["diagnostics"]} <= changed
    assert summary["records"] >= len(lines) - len(changed)


def test_the_values_of_the_issue_are_warnings_not_tracebacks(project: Path) -> None:
    """Issue 33, item 15: each of these ended `promptc reconcile` with a traceback."""
    good = json.dumps(record(0))
    cases = [
        ("input_tokens", '"²"'),
        ("input_tokens", "1" * 6000),
        ("input_tokens", '"' + "1" * 6000 + '"'),
        ("timestamp", "NaN"),
        ("timestamp", "1e300"),
        ("timestamp", "-1e300"),
        ("timestamp", '"0001-01-01T00:00:00+01:00"'),
    ]
    text = "\n".join([good] + [_line_with(f, raw, n) for n, (f, raw) in enumerate(cases, 1)] + [good]) + "\n"
    payload, stderr = reconciled(project, text)
    assert payload["summary"]["records"] == 2 and payload["summary"]["skipped"] == len(cases)
    assert [(d["code"], d["line"]) for d in payload["diagnostics"]] == [("W953", n) for n in range(2, len(cases) + 2)]
    text_run = run_promptc("reconcile", "usage.jsonl", cwd=project)
    assert text_run.returncode == 0 and "Traceback" not in text_run.stderr
    assert f"({len(cases)} skipped)" in text_run.stdout
    assert "usage.jsonl:2:" in text_run.stderr and "warning[W953]: usage record skipped: `input_tokens`" in (
        text_run.stderr
    )


SPAN_TIMES = ['"²"', '"-1"', "-1", "1e300", '"' + "1" * 6000 + '"', "1" * 6000, "true", "NaN", "[]", '"1.5"']


@pytest.mark.parametrize("raw", SPAN_TIMES)
def test_a_bad_span_time_skips_that_span_only(project: Path, raw: str) -> None:
    def span(end: str) -> dict:
        return {
            "name": "chat",
            "startTimeUnixNano": "1796115600000000000",
            "endTimeUnixNano": end,
            "attributes": [
                {"key": "promptc.prompt", "value": {"stringValue": "a"}},
                {"key": "gen_ai.provider.name", "value": {"stringValue": "openai"}},
                {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
                {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "1234"}},
            ],
        }

    spans = [span("1796115601000000000"), span("@BAD@"), span("1796115602000000000")]
    document = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).replace('"@BAD@"', raw)
    payload, _ = reconciled(project, document + "\n", "otlp.jsonl")
    assert payload["summary"]["records"] == 2 and payload["summary"]["skipped"] == 1
    assert [(d["code"], d["line"]) for d in payload["diagnostics"]] == [("W953", 1)]
    assert "endTimeUnixNano" in payload["diagnostics"][0]["message"]


@pytest.mark.parametrize(
    "document",
    [
        {"resourceSpans": 5},
        {"resourceSpans": ["x"]},
        {"resourceSpans": [{"scopeSpans": {"spans": []}}]},
        {"resourceSpans": [{"scopeSpans": [{"spans": "x"}]}]},
        {"resourceSpans": [{"scopeSpans": [None, 3]}]},
    ],
)
def test_an_export_of_the_wrong_shape_is_a_warning(project: Path, document: dict) -> None:
    text = json.dumps(record(0)) + "\n" + json.dumps(document) + "\n" + json.dumps(record(1)) + "\n"
    payload, _ = reconciled(project, text, "otlp.jsonl")
    assert payload["summary"]["records"] == 2 and payload["summary"]["skipped"] == 1
    assert [(d["code"], d["line"]) for d in payload["diagnostics"]] == [("W951", 2)]


def test_more_warnings_than_are_shown_are_counted_by_code(project: Path) -> None:
    lines = [_line_with("input_tokens", "-1", n) for n in range(60)]
    for n in range(5):  # a line that is not JSON, and reading resumes at the next record
        lines += ["not json", json.dumps(record(n))]
    path = project / "many.jsonl"
    path.write_text("\n".join(lines) + "\n")
    done = run_promptc("reconcile", "many.jsonl", cwd=project)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert done.stderr.count("warning[W953]") + done.stderr.count("warning[W951]") == 50
    assert "promptc reconcile: 15 more warnings not shown (W951: 5, W953: 10)" in done.stderr
    payload, _ = reconciled(project, path.read_text(), "many.jsonl")
    assert payload["summary"]["skipped"] == 65 and payload["summary"]["warnings"] == {"W951": 5, "W953": 60}


def test_the_github_format_counts_one_request_in_the_singular(project: Path) -> None:
    prefix = json.loads((project / "build/a.json").read_text())["cache"]["prefix_sha256"]
    path = project / "one.jsonl"
    path.write_text(json.dumps(record(0, prefix_sha256=prefix)) + "\n")
    done = run_promptc("reconcile", "one.jsonl", "--format", "github", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "below-minimum, 1 request," in done.stdout and "1 requests" not in done.stdout


def test_a_value_over_the_size_limit_is_skipped_and_reading_goes_on(tmp_path: Path, monkeypatch) -> None:
    """A value larger than the limit (64 MiB; 1,000 characters here) is a W951, and the records
    after it are read (they were lost: the reader stopped there), with memory bounded by the limit
    whether the value is one line of one token or many lines."""
    import promptc.tools.reconcile as module

    monkeypatch.setattr(module, "MAX_VALUE_CHARS", 1000)
    lines = [
        json.dumps(record(0)),
        '{"prompt": "' + "x" * 5000 + '"}',  # one token, no place a read may be cut in it
        json.dumps(record(1)),
        json.dumps({"records": [record(n) for n in range(2, 12)]}, indent=1),  # many lines
        json.dumps(record(12)),
    ]
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(lines) + "\n")
    for chunk in (1, 7, 64, 4096, 1 << 20):
        found, diagnostics = _read(path, chunk)
        assert [line for line, _ in found] == [1, 3, len(path.read_text().splitlines())], chunk
        assert [(code, line) for code, line, *_ in diagnostics] == [("W951", 2), ("W951", 4)], chunk
        assert all("a value larger than 1000 characters" in d[3] for d in diagnostics)
