// The declarations hold for a typical caller (`npm run typecheck`; tests/test_bindings_ts.py runs
// tsc on generated bindings too).
import { dumpsJson, InputTypeError, load, parseJson, readArtifact, renderArtifact, type Rendered } from "promptc-runtime";

const rendered: Rendered = load(new URL("../../build/", import.meta.url)).render("support/chat", { question: "q" });
const request = rendered.asShape("anthropic", { model: "claude-sonnet-4-5" });
const messages: { role: string; content: string }[] = rendered.asShape("plain");
const text: string = rendered.blocks[0][0].text;
const body: string = rendered.body("openai", { model: "gpt-4o" });
// the platforms' shapes and the anthropic shapes' options
const converse = rendered.asShape("bedrock", { model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0" });
const vertex: string = rendered.body("anthropic-vertex", {
  model: "claude-sonnet-4-5@20250929",
  caching: "automatic",
  previousMessageId: null,
});
const end: readonly [number, number] | null = rendered.stableEnd;
console.log(converse, vertex, end);
const same: string = dumpsJson(parseJson('{"zeta": 1, "10": -0.0}'), { ensureAscii: true, separators: [", ", ": "] });
const fromText = renderArtifact(readArtifact('{"schema": "promptc.artifact/2"}'));
try {
  renderArtifact({}, {});
} catch (error) {
  if (error instanceof InputTypeError) console.log(error.problems.join("\n"));
}
console.log(request, messages, text, rendered.prefixSha256, body, same, fromText.provider, rendered.cacheModel);

// usage records: the Python runtime's fields, sent to a file, a function or a span
const record = rendered.usage(
  { type: "message", usage: { input_tokens: 3, cache_read_input_tokens: 2048, cache_creation_input_tokens: 0 } },
  { shape: "anthropic", to: [(r) => r.cache_read_input_tokens, "usage.jsonl"], span: null },
);
const cached: number = record.cache_read_input_tokens;
const written: number | null = record.cache_creation_input_tokens;
console.log(cached, written, record.timestamp, rendered.artifactSha256, rendered.renderedAt);
// the provider's diagnosis of a miss and the writes of each TTL, where the response has them
const reason: string | undefined = record.cache_miss_reason;
const hourWrites: number | undefined = record.cache_creation_by_ttl?.["1h"];
console.log(reason, hourWrites, record.cache_missed_input_tokens);
