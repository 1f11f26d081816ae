// Usage records from load()'s renders: the manifest's sha256, JSONL lines, functions and spans.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { load, parseTimestamp, RenderError, spanAttributes } from "../index.js";
import { renderArtifact, setUsageWriter } from "../src/render.js";

const BUILD = new URL("../../build/", import.meta.url);
const VALUES = { customer_name: "Ann", product: "Acme", question: "Why?" };
const ANSWER = {
  id: "chatcmpl-1",
  object: "chat.completion",
  model: "gpt-4o-mini-2024-07-18",
  usage: { prompt_tokens: 1200, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 1024 } },
};

test("a record carries the manifest's sha256, the prefix and the provider's counts", () => {
  const runtime = load(BUILD);
  const rendered = runtime.render("support/chat", VALUES);
  const record = rendered.usage(ANSWER, { timestamp: "2026-12-01T10:00:00+01:00" });
  assert.equal(record.artifact_sha256, runtime.manifest.artifacts["support/chat"].sha256);
  assert.equal(record.prefix_sha256, rendered.prefixSha256);
  assert.deepEqual(
    [record.shape, record.provider, record.model, record.response_model, record.timestamp],
    ["openai", "openai", "gpt-4o-mini", "gpt-4o-mini-2024-07-18", "2026-12-01T09:00:00.000Z"],
  );
  assert.deepEqual([record.input_tokens, record.cache_read_input_tokens, record.cache_creation_input_tokens], [1200, 1024, null]);
  assert.ok(Math.abs(parseTimestamp(record.started_at) - rendered.renderedAt) < 0.002);
});

test("records go to JSONL files, functions and spans", () => {
  const rendered = load(BUILD).render("support/chat", VALUES);
  const file = join(mkdtempSync(join(tmpdir(), "promptc-usage-")), "usage.jsonl");
  const seen = [];
  const attributes = [];
  const span = { setAttributes: (a) => attributes.push(a) };
  const first = rendered.usage(ANSWER, { to: [file, (r) => seen.push(r)], span });
  rendered.usage(ANSWER, { to: file });
  const lines = readFileSync(file, "utf8").trimEnd().split("\n");
  assert.equal(lines.length, 2);
  assert.deepEqual(JSON.parse(lines[0]), first);
  assert.deepEqual(seen, [first]);
  assert.deepEqual(attributes, [spanAttributes(first)]);
  assert.equal(attributes[0]["gen_ai.usage.cache_read.input_tokens"], 1024);
  assert.equal(attributes[0]["promptc.prompt"], "support/chat");
  assert.equal("gen_ai.usage.cache_creation.input_tokens" in attributes[0], false);
});

test("the provider's miss reason and its writes by TTL are kept, and set on the span", () => {
  const rendered = load(BUILD).render("support/chat", VALUES);
  const answer = {
    type: "message",
    model: "claude-sonnet-4-5-20250929",
    diagnostics: { cache_miss_reason: { type: "tools_changed", cache_missed_input_tokens: 900 } },
    usage: {
      input_tokens: 12,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 1000,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 1000 },
      output_tokens: 3,
    },
  };
  const attributes = [];
  const record = rendered.usage(answer, { span: { setAttributes: (a) => attributes.push(a) } });
  assert.deepEqual(
    [record.shape, record.cache_miss_reason, record.cache_missed_input_tokens, record.cache_creation_by_ttl],
    ["anthropic", "tools_changed", 900, { "1h": 1000 }],
  );
  assert.equal(record.usage["cache_creation.ephemeral_5m_input_tokens"], 0);
  assert.equal(attributes[0]["promptc.cache_miss_reason"], "tools_changed");
  assert.equal(attributes[0]["promptc.usage.cache_creation.1h.input_tokens"], 1000);
  assert.equal("promptc.usage.cache_creation.5m.input_tokens" in attributes[0], false);
  const pending = rendered.usage({ ...answer, diagnostics: { cache_miss_reason: null } });
  assert.equal(pending.cache_miss_reason, "pending");
  const none = rendered.usage({ ...answer, diagnostics: null });
  assert.equal("cache_miss_reason" in none, false);
});

test("a count is what Python's record takes: a whole number below 2^63, ASCII digits in a string", () => {
  const rendered = load(BUILD).render("support/chat", VALUES);
  const withPrompt = (prompt_tokens) => ({ ...ANSWER, usage: { ...ANSWER.usage, prompt_tokens } });
  assert.equal(rendered.usage(withPrompt("1200")).input_tokens, 1200);
  assert.equal(rendered.usage(withPrompt(9007199254740991)).input_tokens, 9007199254740991);
  for (const bad of [1e300, "\u00b2", "1_000", "12345678901234567890", 2 ** 64, 1.5, "", true]) {
    assert.throws(() => rendered.usage(withPrompt(bad)), /expected a token count/, String(bad));
  }
});

test("unreadable responses are render errors; without a file writer only functions take records", () => {
  const runtime = load(BUILD);
  const rendered = runtime.render("support/chat", VALUES);
  assert.throws(() => rendered.usage({}), (e) => e instanceof RenderError && /cannot tell which provider/.test(e.message));
  assert.throws(() => rendered.usage({ usage: { input_tokens: -3 } }, { shape: "anthropic" }), /expected a token count ≥ 0/);
  const bare = renderArtifact(runtime.artifact("support/chat"), VALUES);
  assert.equal(bare.artifactSha256, null);
  // the last test of the file (node --test runs each file in a process of its own): index.js's
  // file writer stays uninstalled from here on, as in a browser that loads src/render.js alone
  setUsageWriter(null);
  assert.throws(() => bare.usage(ANSWER, { to: "usage.jsonl" }), /go to a function/);
});
