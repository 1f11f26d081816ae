// Types of promptc-runtime's rendering core (src/render.js): no I/O, runs anywhere.

/** JSON values, as an artifact holds them. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export type Shape = "plain" | "anthropic" | "openai" | "openai-responses" | "gemini";
export declare const SHAPES: readonly Shape[];
export declare const JOINER: "\n\n";
export declare const ARTIFACT_SCHEMA: "promptc.artifact/2";

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
  /** that breakpoint is one of those the artifact marks for Anthropic */
  readonly anthropic: boolean;
}

export interface Message {
  role: string;
  content: string;
}

export interface Tool {
  name: string;
  description: string;
  input_schema: { [key: string]: Json };
}

export interface OutputSchema {
  name: string;
  schema: { [key: string]: Json };
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
  readonly params: { [key: string]: Json };
  readonly model: string | null;
  readonly tools: Tool[];
  readonly outputSchema: OutputSchema | null;
  readonly ttl: string | null;
  readonly headBreakpoint: boolean;
  /** The request in a provider's shape: the keyword arguments of its official SDK call. */
  asShape(shape: "plain", options?: ShapeOptions): Message[];
  asShape(shape?: Shape, options?: ShapeOptions): { [key: string]: unknown } | Message[];
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

/** A provider response that does not match the prompt's output contract. */
export declare class OutputError extends RenderError {
  readonly prompt: string;
  readonly problems: readonly string[];
}

/** The value of a provider response (JSON text, or the decoded value), checked against the
 * artifact's output contract. */
export declare function parseOutput(artifact: Artifact | object, response: unknown): unknown;

/** Render one artifact with `values` (input name → value). */
export declare function renderArtifact(artifact: Artifact | object, values?: object, options?: RenderOptions): Rendered;
