// Types of promptc-runtime: render prompts compiled by promptc, as the Python runtime does.

export * from "./render.js";
import type { Rendered, Shape, UnknownInputs, UsageRecord } from "./render.js";

export declare const USAGE_SCHEMA: "promptc.usage/1";
/** promptc's provider names → the OpenTelemetry GenAI `gen_ai.provider.name` values */
export declare const OTEL_PROVIDER_NAMES: { readonly [provider: string]: string };
/** `cache_miss_reason` for a diagnosis the provider had not finished when it wrote the response */
export declare const PENDING: "pending";
/** The usage record of a response to `rendered` (what `rendered.usage` returns, without sending it). */
export declare function makeRecord(rendered: Rendered, response: unknown, options?: { shape?: Exclude<Shape, "plain">; model?: string | null; timestamp?: number | Date | string }): UsageRecord;
/** The shape whose response this is, or null when the response does not say. */
export declare function detectShape(response: unknown): Exclude<Shape, "plain"> | null;
/** A response's token counts, normalised. */
export declare function countsOf(response: unknown, shape: Exclude<Shape, "plain">): { input: number; read: number; written: number | null; output: number | null; usage: { [name: string]: number }; responseModel: string | null; byTtl: { [ttl: string]: number }; reason: string | null; missed: number | null };
/** A record as one JSONL line (no newline), as Python writes it. */
export declare function recordLine(record: UsageRecord): string;
/** The OpenTelemetry attributes of a record (GenAI conventions plus `promptc.*`). */
export declare function spanAttributes(record: UsageRecord): { [key: string]: string | number };
export declare function isoTimestamp(when?: number | Date | string): string;
export declare function parseTimestamp(value: number | string): number;

export { MANIFEST, MANIFEST_SCHEMA } from "./src/language.js";

/** A schema written back in promptc's type language (`list[str]`, `int | None`). */
export declare function describe(schema: object): string;
/** Every way `value` fails `schema`, as `path: expected …, got …`. */
export declare function checkValue(schema: object | boolean, value: unknown, path: string, limit?: number | null): string[];
/** Whether `value` passes `schema`. */
export declare function admits(schema: object | boolean, value: unknown): boolean;

/** A build folder: `manifest.json` plus one JSON artifact per prompt, read lazily. */
export interface LoadOptions {
  /** values for inputs a prompt does not take: an `UnknownInputsError` (the default), or ignored */
  unknownInputs?: UnknownInputs;
}

export declare class Runtime {
  constructor(buildDir: string | URL, options?: LoadOptions);
  readonly buildDir: string;
  readonly unknownInputs: UnknownInputs;
  readonly manifest: { schema: string; artifacts: { [name: string]: { path: string; sha256: string } } };
  /** The prompts of the build, sorted. */
  names(): string[];
  has(name: string): boolean;
  /** The artifact of prompt `name`, checked against the manifest's sha256. */
  artifact(name: string): import("./render.js").Artifact;
  /** Render prompt `name` with `values` (input name → value). */
  render(name: string, values?: object): Rendered;
  /** The value of a provider response to prompt `name` (JSON text, or the decoded value), checked
   * against its output contract (`OutputError` lists every problem). */
  parse(name: string, response: unknown): unknown;
}

/** Open a build folder (a path, or a `file:` URL). Nothing is read until a prompt is asked for. */
export declare function load(buildDir?: string | URL, options?: LoadOptions): Runtime;
