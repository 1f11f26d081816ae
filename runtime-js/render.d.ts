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
  /** the anthropic shape puts `cache_control` on this block (a marker the artifact records) */
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
  /** The request in a provider's shape: the keyword arguments of its official SDK call, as plain
   * values. A shape of another provider than the artifact's needs `model`. */
  asShape(shape: "plain", options?: ShapeOptions): Message[];
  asShape(shape?: Shape, options?: ShapeOptions): { [key: string]: unknown } | Message[];
  /** The exact request body the pinned Python SDK sends for `asShape(shape)`: POST it as it is. */
  body(shape: Exclude<Shape, "plain">, options?: ShapeOptions): string;
  /** The fields under the Python runtime's names (`prefix_sha256`, `output_schema` …). */
  toJSON(): { [key: string]: unknown };
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
export declare function renderArtifact(artifact: Artifact | object | string | Uint8Array, values?: object): Rendered;
