// Usage records: a port of `promptc.runtime.usage`. `rendered.usage(response)` turns a provider's response
// (an SDK response object or its decoded JSON) into the record the Python runtime writes for the
// same response, field for field. No I/O here: index.js appends records to JSONL files.

export const USAGE_SCHEMA = "promptc.usage/1";
/** promptc's provider names → the OpenTelemetry GenAI `gen_ai.provider.name` values */
export const OTEL_PROVIDER_NAMES = Object.freeze({
  anthropic: "anthropic",
  openai: "openai",
  gemini: "gcp.gemini",
  bedrock: "aws.bedrock",
  "anthropic-vertex": "gcp.vertex_ai",
});
const SHAPE_PROVIDERS = {
  anthropic: "anthropic",
  openai: "openai",
  "openai-responses": "openai",
  gemini: "gemini",
  bedrock: "bedrock",
  "anthropic-vertex": "anthropic-vertex",
};
/** shapes whose responses are the same JSON: told apart by the provider the prompt was built for */
const SAME_RESPONSE = { "anthropic-vertex": "anthropic" };
/** the TTL-split write counts: the provider's field → the price table's TTL name */
const ANTHROPIC_TTLS = [
  ["ephemeral_5m_input_tokens", "5m"],
  ["ephemeral_1h_input_tokens", "1h"],
];
const OPENAI_TTLS = [
  ["ttl_30m_tokens", "30m"],
  ["ttl_12h_tokens", "12h"],
];
const TTL = /^[1-9][0-9]{0,3}[smhd]$/;
/** `cache_miss_reason` for a diagnosis the provider had not finished when it wrote the response */
export const PENDING = "pending";
/** the span attribute of the writes of one TTL (the GenAI conventions define no split by lifetime) */
const ttlWritesAttribute = (ttl) => `promptc.usage.cache_creation.${ttl}.input_tokens`;

/** A response whose usage cannot be read, or a record that is not a usage record. */
export class UsageError extends Error {
  constructor(message) {
    super(message);
    this.name = "UsageError";
  }
}

const isObject = (value) => value !== null && (typeof value === "object" || typeof value === "function");

/** The first of `names` that `value` has (a Map key or a property), or null. */
function get(value, ...names) {
  if (!isObject(value)) return null;
  for (const name of names) {
    const found = value instanceof Map ? value.get(name) : value[name];
    if (found !== undefined && found !== null) return found;
  }
  return null;
}

// Python's `MAX_COUNT`: the largest count a record holds (a signed 64-bit integer)
const MAX_COUNT = 2n ** 63n - 1n;

/** A token count as Python's `whole_number` takes it: an integer (a number without a fraction, or
 * a bigint), or a string of 1 to 19 ASCII digits (OTLP JSON writes 64-bit integers as strings),
 * from 0 to 2^63 - 1; null for null. */
function count(value, what) {
  if (value === null || value === undefined) return null;
  if (typeof value === "object" && typeof value.valueOf === "function" && !Array.isArray(value)) value = value.valueOf();
  let exact = null;
  if (typeof value === "string" && /^[0-9]{1,19}$/.test(value)) exact = BigInt(value);
  else if (typeof value === "bigint") exact = value;
  else if (typeof value === "number" && Number.isInteger(value)) exact = BigInt(value);
  if (exact === null) throw new UsageError(`${what}: expected a token count, got ${JSON.stringify(value)}`);
  if (exact < 0n) throw new UsageError(`${what}: expected a token count ≥ 0, got ${value}`);
  if (exact > MAX_COUNT) throw new UsageError(`${what}: expected a token count below 2^63, got ${value}`);
  return Number(exact);
}

function present(counts) {
  const out = {};
  for (const [name, value] of Object.entries(counts)) if (value !== null) out[name] = value;
  return out;
}

/** The shape whose response `response` is, from the fields only that shape's usage has; null when
 * it cannot tell. A Claude on Vertex AI response reads as `anthropic`. */
export function detectShape(response) {
  if (get(response, "usage_metadata", "usageMetadata") !== null) return "gemini";
  const usage = get(response, "usage");
  if (usage === null) return null;
  if (get(usage, "prompt_tokens") !== null) return "openai";
  if (get(usage, "input_tokens_details") !== null || get(response, "object") === "response") return "openai-responses";
  if (get(usage, "inputTokens") !== null) return "bedrock";
  if (get(usage, "total_input_tokens", "totalInputTokens", "total_cached_tokens", "totalCachedTokens") !== null) {
    return "gemini"; // the Interactions API
  }
  if (
    get(response, "type") === "message" ||
    get(usage, "cache_read_input_tokens") !== null ||
    get(usage, "cache_creation_input_tokens") !== null
  ) {
    return "anthropic";
  }
  return null;
}

/** [the provider's field, its TTL name, its count] of each TTL-split write count `holder` has. */
function ttlCounts(holder, fields, what) {
  return fields.map(([name, ttl]) => [name, ttl, count(get(holder, name), `${what}.${name}`)]);
}

/** The TTL split of `written` tokens, zeros left out; empty when the parts add up to more than the
 * writes the provider reports. */
function split(counts, written) {
  const out = {};
  let sum = 0;
  for (const [, ttl, tokens] of counts) {
    if (tokens) {
      out[ttl] = (out[ttl] ?? 0) + tokens;
      sum += tokens;
    }
  }
  return sum <= (written ?? 0) ? out : {};
}

/** [cache_miss_reason, cache_missed_input_tokens] of a response. */
function diagnosis(response, shape) {
  let reason;
  let kind;
  let what;
  let missedName;
  if (shape === "anthropic" || shape === "anthropic-vertex") {
    const diagnostics = get(response, "diagnostics");
    if (diagnostics === null) return [null, null];
    reason = get(diagnostics, "cache_miss_reason");
    if (reason === null) return [PENDING, null];
    kind = get(reason, "type");
    what = "diagnostics.cache_miss_reason";
    missedName = "cache_missed_input_tokens";
  } else if (shape === "openai" || shape === "openai-responses") {
    reason = get(response, "prompt_cache_diagnostics");
    if (reason === null || get(reason, "type") === "cache_hit") return [null, null];
    kind = get(reason, "type") === "cache_miss" ? get(reason, "reason") : get(reason, "type");
    what = "prompt_cache_diagnostics";
    missedName = "cache_missed_tokens";
  } else {
    return [null, null];
  }
  if (typeof kind !== "string" || kind === "") {
    throw new UsageError(`${what}: expected a reason (its \`type\`), got ${JSON.stringify(kind)}`);
  }
  return [kind, count(get(reason, missedName), `${what}.${missedName}`)];
}

/** The token counts of a response of `shape`, normalised as `promptc.runtime.usage.counts_of` does. */
export function countsOf(response, shape) {
  if (shape === "plain") throw new UsageError("a `plain` render has no provider response: name the shape it was sent as");
  if (!Object.hasOwn(SHAPE_PROVIDERS, shape)) {
    throw new UsageError(`unknown shape \`${shape}\`; usage is read for: ${Object.keys(SHAPE_PROVIDERS).join(", ")}`);
  }
  let responseModel = get(response, "model", "model_version", "modelVersion");
  responseModel = typeof responseModel === "string" ? responseModel : null;
  const none = { byTtl: {}, reason: null, missed: null };
  if (shape === "gemini") {
    const meta = get(response, "usage_metadata", "usageMetadata");
    if (meta !== null) {
      const total = count(get(meta, "prompt_token_count", "promptTokenCount"), "usage_metadata.prompt_token_count");
      const cached = count(
        get(meta, "cached_content_token_count", "cachedContentTokenCount"),
        "usage_metadata.cached_content_token_count",
      );
      const output = count(
        get(meta, "candidates_token_count", "candidatesTokenCount"),
        "usage_metadata.candidates_token_count",
      );
      const own = { prompt_token_count: total, cached_content_token_count: cached, candidates_token_count: output };
      return { input: total ?? 0, read: cached ?? 0, written: null, output, usage: present(own), responseModel, ...none };
    }
    // the Interactions API: its usage's total_* counts
    const usage = get(response, "usage");
    if (get(usage, "total_input_tokens", "totalInputTokens", "total_cached_tokens", "totalCachedTokens") === null) {
      throw new UsageError("the gemini response has no usage_metadata (usageMetadata) nor usage.total_input_tokens");
    }
    const total = count(get(usage, "total_input_tokens", "totalInputTokens"), "usage.total_input_tokens");
    const cached = count(get(usage, "total_cached_tokens", "totalCachedTokens"), "usage.total_cached_tokens");
    const output = count(get(usage, "total_output_tokens", "totalOutputTokens"), "usage.total_output_tokens");
    const own = { total_input_tokens: total, total_cached_tokens: cached, total_output_tokens: output };
    return { input: total ?? 0, read: cached ?? 0, written: null, output, usage: present(own), responseModel, ...none };
  }
  const usage = get(response, "usage");
  if (usage === null) throw new UsageError(`the ${shape} response has no usage`);
  const [reason, missed] = diagnosis(response, shape);
  if (shape === "anthropic" || shape === "anthropic-vertex") {
    const uncached = count(get(usage, "input_tokens"), "usage.input_tokens");
    if (uncached === null) throw new UsageError(`the ${shape} response's usage has no input_tokens`);
    const read = count(get(usage, "cache_read_input_tokens"), "usage.cache_read_input_tokens");
    const written = count(get(usage, "cache_creation_input_tokens"), "usage.cache_creation_input_tokens");
    const byTtl = ttlCounts(get(usage, "cache_creation"), ANTHROPIC_TTLS, "usage.cache_creation");
    const output = count(get(usage, "output_tokens"), "usage.output_tokens");
    const own = {
      input_tokens: uncached,
      cache_read_input_tokens: read,
      cache_creation_input_tokens: written,
      ...Object.fromEntries(byTtl.map(([name, , tokens]) => [`cache_creation.${name}`, tokens])),
      output_tokens: output,
    };
    return {
      input: uncached + (read ?? 0) + (written ?? 0),
      read: read ?? 0,
      written: written ?? 0,
      output,
      usage: present(own),
      responseModel,
      byTtl: split(byTtl, written),
      reason,
      missed,
    };
  }
  if (shape === "bedrock") {
    // inputTokens is the input neither read nor written (Bedrock's prompt-caching page: total input
    // tokens = inputTokens + cacheReadInputTokens + cacheWriteInputTokens)
    const uncached = count(get(usage, "inputTokens"), "usage.inputTokens");
    if (uncached === null) throw new UsageError("the bedrock response's usage has no inputTokens");
    const read = count(get(usage, "cacheReadInputTokens"), "usage.cacheReadInputTokens");
    const written = count(get(usage, "cacheWriteInputTokens"), "usage.cacheWriteInputTokens");
    const details = get(usage, "cacheDetails") ?? [];
    if (!Array.isArray(details)) {
      throw new UsageError(`usage.cacheDetails: expected a list of {ttl, inputTokens}, got ${JSON.stringify(details)}`);
    }
    const byTtl = details.map((detail) => {
      const ttl = get(detail, "ttl");
      if (typeof ttl !== "string" || !TTL.test(ttl)) {
        throw new UsageError(`usage.cacheDetails: expected a TTL such as \`5m\` or \`1h\`, got ${JSON.stringify(ttl)}`);
      }
      const name = `cacheDetails.${ttl}.inputTokens`;
      return [name, ttl, count(get(detail, "inputTokens"), `usage.${name}`)];
    });
    const output = count(get(usage, "outputTokens"), "usage.outputTokens");
    const own = {
      inputTokens: uncached,
      cacheReadInputTokens: read,
      cacheWriteInputTokens: written,
      ...Object.fromEntries(byTtl.map(([name, , tokens]) => [name, tokens])),
      outputTokens: output,
    };
    return {
      input: uncached + (read ?? 0) + (written ?? 0),
      read: read ?? 0,
      written: written ?? 0,
      output,
      usage: present(own),
      responseModel,
      byTtl: split(byTtl, written),
      reason,
      missed,
    };
  }
  const [totalName, detailsName, outputName] =
    shape === "openai"
      ? ["prompt_tokens", "prompt_tokens_details", "completion_tokens"]
      : ["input_tokens", "input_tokens_details", "output_tokens"];
  const total = count(get(usage, totalName), `usage.${totalName}`);
  if (total === null) throw new UsageError(`the ${shape} response's usage has no ${totalName}`);
  const details = get(usage, detailsName);
  const cached = count(get(details, "cached_tokens"), `usage.${detailsName}.cached_tokens`);
  const written = count(get(details, "cache_write_tokens"), `usage.${detailsName}.cache_write_tokens`);
  const prefix = `${detailsName}.cache_write_tokens_details`;
  const byTtl = ttlCounts(get(details, "cache_write_tokens_details"), OPENAI_TTLS, `usage.${prefix}`);
  const output = count(get(usage, outputName), `usage.${outputName}`);
  const own = {
    [totalName]: total,
    [`${detailsName}.cached_tokens`]: cached,
    [`${detailsName}.cache_write_tokens`]: written,
    ...Object.fromEntries(byTtl.map(([name, , tokens]) => [`${prefix}.${name}`, tokens])),
    [outputName]: output,
  };
  return {
    input: total,
    read: cached ?? 0,
    written,
    output,
    usage: present(own),
    responseModel,
    byTtl: split(byTtl, written),
    reason,
    missed,
  };
}

/** `when` (epoch seconds, a Date, an ISO string, or undefined: now) as `2026-12-01T09:30:00.125Z`. */
export function isoTimestamp(when) {
  if (when === undefined || when === null) return new Date().toISOString();
  if (typeof when === "string") return new Date(parseTimestamp(when) * 1000).toISOString();
  if (when instanceof Date) return when.toISOString();
  if (typeof when !== "number" || !Number.isFinite(when)) {
    throw new UsageError(`a timestamp is epoch seconds, a Date or an ISO 8601 string, not ${JSON.stringify(when)}`);
  }
  return new Date(Math.floor(when * 1000)).toISOString();
}

/** Epoch seconds of an ISO 8601 timestamp with a zone, or of a number of epoch seconds. */
export function parseTimestamp(value) {
  if (typeof value === "number") return value;
  if (typeof value !== "string") {
    throw new UsageError(`timestamp: expected an ISO 8601 string or epoch seconds, got ${JSON.stringify(value)}`);
  }
  const text = value.trim();
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2})$/.test(text)) {
    throw new UsageError(`timestamp: ${JSON.stringify(value)} is not an ISO 8601 date and time with a zone`);
  }
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw new UsageError(`timestamp: ${JSON.stringify(value)} is not an ISO 8601 date and time`);
  return ms / 1000;
}

/** The usage record of `response` (the provider's answer to a request of `rendered`), with the
 * fields and key order of the Python runtime's `UsageRecord.to_json()`. */
export function makeRecord(rendered, response, options = {}) {
  let shape = options.shape ?? detectShape(response);
  if (shape === null) {
    throw new UsageError(
      `prompt \`${rendered.name}\`: cannot tell which provider's response this is; pass shape ` +
        `(${Object.keys(SHAPE_PROVIDERS).join(", ")})`,
    );
  }
  const own = rendered.provider ?? "";
  if ((options.shape ?? null) === null && Object.hasOwn(SAME_RESPONSE, own) && SAME_RESPONSE[own] === shape) shape = own;
  const counts = countsOf(response, shape);
  const started = options.started ?? rendered.renderedAt ?? null;
  // the fields added to promptc.usage/1 after its first release are written only when present,
  // where the Python runtime's UsageRecord.to_json writes them
  const record = {
    schema: USAGE_SCHEMA,
    prompt: rendered.name,
    artifact_sha256: rendered.artifactSha256 ?? null,
    prefix_sha256: rendered.prefixSha256 ?? null,
    shape,
    provider: SHAPE_PROVIDERS[shape],
    model: options.model ?? rendered.model ?? null,
    response_model: counts.responseModel,
    started_at: started === null ? null : isoTimestamp(started),
    timestamp: isoTimestamp(options.timestamp),
    input_tokens: counts.input,
    cache_read_input_tokens: counts.read,
    cache_creation_input_tokens: counts.written,
  };
  if (Object.keys(counts.byTtl).length > 0) record.cache_creation_by_ttl = counts.byTtl;
  record.output_tokens = counts.output;
  if (counts.reason !== null) record.cache_miss_reason = counts.reason;
  if (counts.missed !== null) record.cache_missed_input_tokens = counts.missed;
  record.usage = counts.usage;
  return record;
}

/** The record as one JSONL line (no newline), as Python's `UsageRecord.line()` writes it. */
export function recordLine(record) {
  return JSON.stringify(record);
}

/** The OpenTelemetry attributes of a record (GenAI conventions plus `promptc.*`), as
 * `promptc.runtime.usage.span_attributes` gives them. */
export function spanAttributes(record) {
  const attributes = {
    "gen_ai.provider.name": OTEL_PROVIDER_NAMES[record.provider] ?? record.provider,
    "gen_ai.request.model": record.model,
    "gen_ai.response.model": record.response_model,
    "gen_ai.usage.input_tokens": record.input_tokens,
    "gen_ai.usage.cache_read.input_tokens": record.cache_read_input_tokens,
    "gen_ai.usage.cache_creation.input_tokens": record.cache_creation_input_tokens,
    "gen_ai.usage.output_tokens": record.output_tokens,
    "promptc.prompt": record.prompt,
    "promptc.artifact_sha256": record.artifact_sha256,
    "promptc.prefix_sha256": record.prefix_sha256,
    "promptc.shape": record.shape,
    "promptc.cache_miss_reason": record.cache_miss_reason,
    "promptc.cache_missed_input_tokens": record.cache_missed_input_tokens,
  };
  for (const [ttl, tokens] of Object.entries(record.cache_creation_by_ttl ?? {})) attributes[ttlWritesAttribute(ttl)] = tokens;
  const out = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== null && value !== undefined) out[key] = value;
  return out;
}

/** Send a record to `options.to` (a callable, or a list of callables; index.js adds JSONL paths)
 * and onto `options.span` (an OpenTelemetry span: `trace.getActiveSpan()` from
 * `@opentelemetry/api`, which this package does not depend on). */
export function emit(record, options = {}, writeFile = null) {
  const to = options.to ?? [];
  const sinks = Array.isArray(to) ? to : [to];
  for (const sink of sinks) {
    if (typeof sink === "function") sink(record);
    else if ((typeof sink === "string" || sink instanceof URL) && writeFile !== null) writeFile(sink, record);
    else throw new UsageError(`usage records go to ${writeFile ? "a path or " : ""}a function, not ${typeof sink}`);
  }
  if (options.span) options.span.setAttributes(spanAttributes(record));
  return record;
}
