// Types of promptc-runtime's rendering core (src/render.js): no I/O, runs anywhere.

/** JSON values, as an artifact holds them. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A JSON number as written (`json.js`): Python's reading of it, kept exactly. */
export declare class JsonNumber {
  constructor(lexeme: string);
  readonly lexeme: string;
  readonly integer: boolean;
  /** the text CPython's json.dumps writes for it */
  python(): string;
  valueOf(): number;
}

/** Lossless JSON: objects as Maps in the written order, numbers as JsonNumbers. */
export type JsonTree = null | boolean | string | JsonNumber | JsonTree[] | Map<string, JsonTree>;

import type { Shape } from "./src/language.js";
export type { Shape } from "./src/language.js";
export { ARTIFACT_SCHEMA, JOINER, SHAPES } from "./src/language.js";

/** An artifact cannot be rendered: unknown prompt, bad build folder, bad input value… */
export declare class RenderError extends Error {}

/** Inputs the prompt needs and the values leave out; `missing` names every one, sorted. */
export declare class MissingInputsError extends RenderError {
  readonly prompt: string;
  readonly missing: readonly string[];
}

/** Values for inputs the prompt does not take: `unknown` names them, sorted; `suggestions` maps
 * each to the input it was probably meant to be; `missing` the required inputs not passed. */
export declare class UnknownInputsError extends RenderError {
  readonly prompt: string;
  readonly unknown: readonly string[];
  readonly missing: readonly string[];
  readonly suggestions: { readonly [name: string]: string };
}

export type UnknownInputs = "error" | "ignore";
export declare const UNKNOWN_INPUTS: readonly UnknownInputs[];

export interface RenderOptions {
  /** values for inputs the prompt does not take: an `UnknownInputsError` (the default), or ignored */
  unknownInputs?: UnknownInputs;
}

/** Values that do not match the prompt's declared types; `problems` lists every one, by path. */
export declare class InputTypeError extends RenderError {
  readonly prompt: string;
  readonly problems: readonly string[];
}

export interface RenderedBlock {
  readonly boundary: "stable" | "dynamic";
  readonly text: string;
  /** a cache breakpoint of the artifact ends with this block */
  readonly breakpoint: boolean;
  /** the anthropic shapes put `cache_control` on this block, the bedrock shape a `cachePoint` after
   * it (a marker the artifact records) */
  readonly anthropic: boolean;
}

export interface Message {
  role: string;
  content: string;
}

export interface Tool {
  name: string;
  description: string;
  /** as written: keys in the file's order, numbers as written */
  input_schema: Map<string, JsonTree>;
}

export interface OutputSchema {
  name: string;
  schema: Map<string, JsonTree>;
}

export interface ShapeOptions {
  /** sent instead of the artifact's model */
  model?: string | null;
  /** anthropic and anthropic-vertex shapes: the artifact's block markers (`"blocks"`, the default),
   * or one top-level `cache_control` the provider moves to the last cacheable block (`"automatic"`) */
  caching?: "blocks" | "automatic";
  /** anthropic and anthropic-vertex shapes: ask for cache diagnostics against the conversation's
   * previous response (its `msg_…` id), or `null` to opt in on the first turn */
  previousMessageId?: string | null;
}

/** A rendered prompt: its messages, per message its blocks, and what the shapes need. */
export declare class Rendered {
  readonly name: string;
  readonly messages: Message[];
  readonly blocks: RenderedBlock[][];
  readonly prefixSha256: string | null;
  readonly params: Map<string, JsonTree>;
  readonly model: string | null;
  readonly tools: Tool[];
  readonly outputSchema: OutputSchema | null;
  readonly ttl: string | null;
  readonly headBreakpoint: boolean;
  /** the provider of the artifact's profile, null without one */
  readonly provider: string | null;
  /** the model as the provider resolves it, which the prefix hash covers */
  readonly cacheModel: string | null;
  /** [message, block] of the block that ends the cache-stable prefix (where the openai shapes put
   * `prompt_cache_breakpoint` for a model with explicit breakpoints), or null */
  readonly stableEnd: readonly [number, number] | null;
  /** the sha256 of the artifact file (the manifest's), when rendered from a build folder */
  readonly artifactSha256: string | null;
  /** when this request was rendered, in epoch seconds */
  readonly renderedAt: number | null;
  /** The usage record of the provider's response to this request (an SDK response object or its
   * decoded JSON), as the Python runtime writes it; also sent to `options.to` and `options.span`. */
  usage(response: unknown, options?: UsageOptions): UsageRecord;
  /** The request in a provider's shape: the keyword arguments of its official SDK call, as plain
   * values. A shape of another provider than the artifact's needs `model`. */
  asShape(shape: "plain", options?: ShapeOptions): Message[];
  asShape(shape?: Shape, options?: ShapeOptions): { [key: string]: unknown } | Message[];
  /** The exact request body the pinned Python SDK sends for `asShape(shape)`: POST it as it is. */
  body(shape: Exclude<Shape, "plain">, options?: ShapeOptions): string;
  /** The fields under the Python runtime's names (`prefix_sha256`, `output_schema` …). */
  toJSON(): { [key: string]: unknown };
}

/** A response whose usage cannot be read (`rendered.usage` raises it as a RenderError). */
export declare class UsageError extends Error {}

/** One request's usage, as both runtimes write it (`promptc.usage/1`, one JSONL line each). */
export interface UsageRecord {
  schema: "promptc.usage/1";
  prompt: string;
  artifact_sha256: string | null;
  prefix_sha256: string | null;
  shape: Exclude<Shape, "plain">;
  provider: "anthropic" | "openai" | "gemini" | "bedrock" | "anthropic-vertex";
  model: string | null;
  response_model: string | null;
  started_at: string | null;
  timestamp: string;
  /** every input token of the request, cached and written ones included */
  input_tokens: number;
  cache_read_input_tokens: number;
  /** null where the provider does not report cache writes */
  cache_creation_input_tokens: number | null;
  /** the writes the provider splits by lifetime, by TTL name (`{"1h": 3000}`); absent when it does not split them */
  cache_creation_by_ttl?: { [ttl: string]: number };
  output_tokens: number | null;
  /** the provider's diagnosis of a cache miss (`system_changed`, …, or `pending`); absent without one */
  cache_miss_reason?: string;
  /** the provider's estimate of the input tokens that miss did not read from the cache */
  cache_missed_input_tokens?: number;
  /** the provider's own counts, under its names */
  usage: { [name: string]: number };
}

/** The part of an OpenTelemetry span `usage({ span })` uses (`trace.getActiveSpan()`). */
export interface SpanLike {
  setAttributes(attributes: { [key: string]: string | number }): unknown;
}

export interface UsageOptions {
  /** the shape the request was sent as (read from the response when left out) */
  shape?: Exclude<Shape, "plain">;
  /** the model it was sent to, when not the artifact's */
  model?: string | null;
  /** when the response came (epoch seconds, a Date or an ISO string; default now) */
  timestamp?: number | Date | string;
  /** when the request was sent (default: when it was rendered) */
  started?: number | Date | string;
  /** a JSONL file path (with `load()`'s index.js), a function, or a list of them */
  to?: string | URL | ((record: UsageRecord) => unknown) | Array<string | URL | ((record: UsageRecord) => unknown)>;
  /** an OpenTelemetry span to set the GenAI attributes on */
  span?: SpanLike | null;
}

/** The decoded JSON of `build/<name>.json`. */
export interface Artifact {
  schema: string;
  name: string;
  renderer: "placeholder" | "python";
  inputs: string[];
  input_schema: { [key: string]: Json };
  [key: string]: unknown;
}

/** A provider response that does not match the prompt's output contract. */
export declare class OutputError extends RenderError {
  readonly prompt: string;
  readonly problems: readonly string[];
}

/** The value of a provider response (JSON text, or the decoded value), checked against the
 * artifact's output contract. */
export declare function parseOutput(artifact: Artifact | object | string | Uint8Array, response: unknown): unknown;

/** An artifact read from its JSON text, remembering its tools and params losslessly. */
export declare function readArtifact(text: string | Uint8Array): Artifact;
/** `readArtifact` for a lossless tree already parsed (`parseJson`). */
export declare function adoptArtifact(tree: JsonTree): Artifact;
/** Read JSON losslessly. */
export declare function parseJson(text: string): JsonTree;
/** Write a tree (or plain values) as CPython's json.dumps writes the same data. */
export declare function dumpsJson(
  value: unknown,
  options?: { ensureAscii?: boolean; separators?: [string, string]; allowNan?: boolean },
): string;

/** Render one artifact (decoded, or its JSON text) with `values` (input name → value). */
export declare function renderArtifact(
  artifact: Artifact | object | string | Uint8Array,
  values?: object,
  options?: RenderOptions & { artifactSha256?: string | null },
): Rendered;
/** Install the function `usage({ to: path })` appends records with (index.js installs node's). */
export declare function setUsageWriter(writer: ((path: string | URL, record: UsageRecord) => void) | null): void;
