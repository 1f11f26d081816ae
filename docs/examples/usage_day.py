"""A day of usage records for the repository's helpdesk prompts, as the runtime writes them.

Run from the repository root: `python docs/examples/usage_day.py` writes `usage.jsonl`. Each request
is rendered with promptc's runtime and answered by a simulated provider: the JSON an Anthropic or
OpenAI response carries, with the cache counts the provider would report. docs/observability.md
reconciles the file with the build; the planted problems are the ones it finds.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from promptc.runtime import load
from promptc.runtime.usage import append_jsonl, iso_timestamp

LOG = "usage.jsonl"
DAY = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
runtime = load("build")
PREFIX = runtime.artifact("helpdesk/agent").cache.cacheable_tokens  # 1114: what the build promises


def anthropic(read: int, written: int, model: str = "claude-sonnet-4-5-20250929") -> dict:
    """An Anthropic Messages response: `input_tokens` counts what came after the cached prefix."""
    usage = {"input_tokens": 42, "cache_read_input_tokens": read, "cache_creation_input_tokens": written}
    return {"type": "message", "model": model, "usage": {**usage, "output_tokens": 180}}


def agent(at: datetime, answer: dict, *, took: float = 2.0, **options) -> None:
    rendered = runtime.render("helpdesk/agent", customer_email="ann@example.com", message="Sync stopped.")
    rendered.usage(answer, to=LOG, started=at, timestamp=at + timedelta(seconds=took), **options)


open(LOG, "w").close()
# 08:00 three requests at once on a cold cache: one writes the entry, two more write it again
for i in range(3):
    agent(DAY + timedelta(seconds=0.2 * i), anthropic(0, PREFIX))
# 08:05 – 12:00: a request every five minutes, each a hit
at = DAY + timedelta(minutes=5)
while at <= DAY.replace(hour=12):
    agent(at, anthropic(PREFIX, 0))
    at += timedelta(minutes=5)
# 13:30: the first request after lunch; 90 minutes is longer than the 1h TTL
agent(DAY.replace(hour=13, minute=30), anthropic(0, PREFIX))
for minute in range(35, 60, 5):
    agent(DAY.replace(hour=13, minute=minute), anthropic(PREFIX, 0))
# 14:00: an experiment sends four requests to another model
for minute in range(4):
    agent(
        DAY.replace(hour=14, minute=minute), anthropic(0, PREFIX, "claude-opus-4-1-20250805"), model="claude-opus-4-1"
    )
# 15:00: a worker still running yesterday's build (another prefix) sends three
for minute in range(3):
    rendered = runtime.render("helpdesk/agent", customer_email="bo@example.com", message="Refund?")
    record = rendered.usage(anthropic(0, PREFIX), started=DAY.replace(hour=15, minute=minute))
    append_jsonl(LOG, dataclasses.replace(record, prefix_sha256="9f" * 32))
# 16:00: a code path adds the date to the system prompt after rendering: warm entry, no read
agent(DAY.replace(hour=16), anthropic(PREFIX, 0))
for minute in (2, 4):
    agent(DAY.replace(hour=16, minute=minute), anthropic(0, PREFIX))
# all day: triage, whose 214-token prefix is under gpt-4.1-mini's minimum of 1,024
for hour in range(8, 18):
    rendered = runtime.render("helpdesk/triage", message="My invoice is wrong")
    answer = {
        "object": "chat.completion",
        "model": "gpt-4.1-mini-2025-04-14",
        "usage": {"prompt_tokens": 231, "completion_tokens": 12, "prompt_tokens_details": {"cached_tokens": 0}},
    }
    rendered.usage(answer, to=LOG, started=DAY.replace(hour=hour), timestamp=DAY.replace(hour=hour, second=1))
print(f"wrote {sum(1 for _ in open(LOG))} records to {LOG} ({iso_timestamp(DAY)[:10]})")
