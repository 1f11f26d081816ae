// Rendering placeholder-renderer artifacts: a port of `promptc.runtime.render_artifact`. The same
// checks in the same order, the same messages, the same bytes. No I/O: this module runs anywhere
// (node, a browser, a worker); `load()` in index.js reads build folders.

import { checkValue } from "./inputtypes.js";
import { lossless, parse, plain } from "./json.js";
import { ARTIFACT_SCHEMA, JOINER, PLACEHOLDER_PATH, SHAPES, UNSAFE_NAMES, UNSAFE_PREFIX } from "./language.js";

export { dumps as dumpsJson, JsonNumber, parse as parseJson } from "./json.js";
import { isPlainObject, str, typeName } from "./python.js";
import { body as shapeBody, build as buildShape, ShapeError } from "./shapes.js";
import { suggestions } from "./suggest.js";
import { scan } from "./template.js";
import { emit as emitUsage, makeRecord, UsageError } from "./usage.js";

export { UsageError } from "./usage.js";

// How `usage({ to: path })` appends a record to a JSONL file: index.js installs node's file
// writer; without it (this module alone, in a browser) only functions receive records.
let usageWriter = null;

/** Install the function that appends a usage record to a JSONL file (index.js does). */
export function setUsageWriter(writer) {
  usageWriter = writer;
}

export { ARTIFACT_SCHEMA, JOINER, SHAPES };

/** An artifact cannot be rendered: unknown prompt, bad build folder, bad input value… */
export class RenderError extends Error {
  constructor(message) {
    super(message);
    this.name = "RenderError";
  }
}

export class MissingInputsError extends RenderError {
  constructor(prompt, missing) {
    const plural = missing.length !== 1 ? "s" : "";
    super(`prompt \`${prompt}\` is missing ${missing.length} input${plural}: ${missing.join(", ")}`);
    this.name = "MissingInputsError";
    this.prompt = prompt;
    this.missing = Object.freeze([...missing]);
  }
}

/** Python's order of strings: by code point (JavaScript's default sort is by UTF-16 unit). */
const byCodePoint = (a, b) => {
  const x = Array.from(a);
  const y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (d) return d;
  }
  return x.length - y.length;
};

/** Values for inputs the prompt does not take (often a misspelt one), as the Python runtime's
 * `UnknownInputsError`: `unknown`, `suggestions` (each to the input it was probably meant to be),
 * `missing` (the required inputs not passed). */
export class UnknownInputsError extends RenderError {
  constructor(prompt, unknown, known, missing) {
    const names = [...unknown].sort(byCodePoint);
    const close = {};
    for (const name of names) {
      const found = suggestions(name, known);
      if (found.length) close[name] = found[0];
    }
    const shown = names.map((n) => (Object.hasOwn(close, n) ? `${n} (did you mean \`${close[n]}\`?)` : n));
    const plural = names.length !== 1 ? "s" : "";
    let message = `prompt \`${prompt}\` got ${names.length} unknown input${plural}: ${shown.join(", ")}`;
    message += `; it takes: ${[...known].sort(byCodePoint).join(", ") || "no inputs"}`;
    const absent = [...missing].sort(byCodePoint);
    if (absent.length) message += `; missing: ${absent.join(", ")}`;
    super(message);
    this.name = "UnknownInputsError";
    this.prompt = prompt;
    this.unknown = Object.freeze(names);
    this.missing = Object.freeze(absent);
    this.suggestions = Object.freeze(close);
  }
}

export class InputTypeError extends RenderError {
  constructor(prompt, problems) {
    const plural = problems.length !== 1 ? "s" : "";
    super(`prompt \`${prompt}\`: ${problems.length} input${plural} of the wrong type: ` + problems.join("; "));
    this.name = "InputTypeError";
    this.prompt = prompt;
    this.problems = Object.freeze([...problems]);
  }
}

const has = (values, name) => Object.hasOwn(values, name) && values[name] !== undefined;

const NO_DEFAULT = Symbol("no default");
const isMap = (node) => node !== null && typeof node === "object" && !Array.isArray(node);

/** As `promptc.runtime.path_defaults`: per key after the root, its schema's `default`. */
function pathDefaults(schema, path) {
  const [root, ...attrs] = path.split(".");
  let node = isMap(schema) && isMap(schema.properties) && Object.hasOwn(schema.properties, root) ? schema.properties[root] : null;
  return attrs.map((attr) => {
    node = isMap(node) && isMap(node.properties) && Object.hasOwn(node.properties, attr) ? node.properties[attr] : null;
    return isMap(node) && Object.hasOwn(node, "default") ? node.default : NO_DEFAULT;
  });
}

const UNSAFE = new Set(UNSAFE_NAMES);

/** The attribute rule (promptc.facts.language): a segment no placeholder path may read. */
const unsafeName = (name) => name.startsWith(UNSAFE_PREFIX) || UNSAFE.has(name);

/** The first segment of `path` the attribute rule refuses, or undefined. */
const unsafeSegment = (path) => path.split(".").find(unsafeName);

/** As `promptc.runtime.refused_path`, word for word. */
function refusedPath(path, segment) {
  const why = segment.startsWith(UNSAFE_PREFIX) ? "starts with `_`" : "reaches an object's internals";
  return (
    `\`\${${path}}\` reads \`${segment}\`, which ${why}: no placeholder path may (the build refuses it, E506); ` +
    "refused (the artifact was changed after the build, or built by an older promptc: rebuild it)"
  );
}

/** `${a.b.c}`: a plain object's own key (its schema's `default` when absent), else, of an
 * object that is not a JSON value (a class instance), a property. A segment the attribute rule
 * refuses (`constructor`, `__proto__`, …) is never read, whatever the value is (renderSection
 * refuses the path first; this is the last guard). */
function lookup(values, path, schema) {
  const refused = unsafeSegment(path);
  if (refused !== undefined) throw new RenderError(refusedPath(path, refused));
  const [root, ...attrs] = path.split(".");
  const defaults = attrs.length ? pathDefaults(schema, path) : [];
  let value = values[root];
  let walked = root;
  attrs.forEach((attr, i) => {
    const missing = () =>
      new RenderError(`\`\${${path}}\`: \`${walked}\` (${typeName(value)}) has no key or attribute \`${attr}\``);
    if (isPlainObject(value)) {
      if (Object.hasOwn(value, attr) && value[attr] !== undefined) value = value[attr];
      else if (defaults[i] !== NO_DEFAULT) value = defaults[i];
      else throw missing();
    } else if (
      value !== null &&
      ((typeof value === "object" && !Array.isArray(value)) || typeof value === "function") &&
      attr in value &&
      value[attr] !== undefined
    ) {
      value = value[attr];
    } else throw missing();
    walked += "." + attr;
  });
  return value;
}

function toText(value, path) {
  if (typeof value === "function") {
    throw new RenderError(`\`\${${path}}\` is a function (${value.name || "anonymous"}), not text: pass the value instead`);
  }
  return str(value);
}

function renderSection(text, values, prompt, section, schema) {
  if (!text.includes("$") && !text.includes("{") && !text.includes("\\")) return text;
  const tokens = scan(text);
  for (const token of tokens) {
    if (token.kind === "ph" && !PLACEHOLDER_PATH.test(token.text)) {
      throw new RenderError(`prompt \`${prompt}\`, section \`${section}\`: invalid placeholder \`\${${token.text}}\``);
    }
    if (token.kind === "ph" && !has(values, token.text.split(".", 1)[0])) {
      throw new MissingInputsError(prompt, [token.text.split(".", 1)[0]]);
    }
    const refused = token.kind === "ph" ? unsafeSegment(token.text) : undefined;
    if (refused !== undefined) {
      throw new RenderError(`prompt \`${prompt}\`, section \`${section}\`: ${refusedPath(token.text, refused)}`);
    }
  }
  if (tokens.some((token) => token.kind === "block")) {
    // The same message as promptc.runtime's `refused_block`: both refuse, by the renderer field.
    throw new RenderError(
      `prompt \`${prompt}\`, section \`${section}\`: the artifact's renderer is \`placeholder\`, which runs no code, ` +
        "but the section holds a `{{ }}`, `{# #}` or `{% %}` block; refused (the artifact was changed after the build: rebuild it)",
    );
  }
  return tokens.map((token) => (token.kind === "lit" ? token.text : toText(lookup(values, token.text, schema), token.text))).join("");
}

function checked(prompt, schema, names, values) {
  const properties = schema.properties ?? {};
  const problems = [];
  for (const name of names) {
    const declared = properties[name];
    if (declared && Object.keys(declared).length && has(values, name)) {
      problems.push(...checkValue(declared, values[name], name));
    }
  }
  if (problems.length) throw new InputTypeError(prompt, problems);
  const absent = names.filter((name) => !has(values, name));
  if (!absent.length) return values;
  const filled = { ...values };
  for (const name of absent) filled[name] = null;
  return filled;
}

/** A provider response that does not match the prompt's output contract; `problems` lists every
 * way it fails, by path (`response.answer: expected a string, got 3`). */
export class OutputError extends RenderError {
  constructor(prompt, problems) {
    const plural = problems.length !== 1 ? "s" : "";
    super(
      `prompt \`${prompt}\`: the response does not match its output schema (${problems.length} problem${plural}): ` +
        problems.join("; "),
    );
    this.name = "OutputError";
    this.prompt = prompt;
    this.problems = Object.freeze([...problems]);
  }
}

/** The value of a provider `response` to prompt `artifact` (JSON text, or the decoded value:
 * `completion.choices[0].message.content`, `response.output_text`, `message.content[0].text` …),
 * checked against its output contract, as the Python runtime's `parse_output`. */
export function parseOutput(artifact, response) {
  if (typeof artifact === "string" || artifact instanceof Uint8Array) artifact = readArtifact(artifact);
  if (artifact === null || typeof artifact !== "object" || Array.isArray(artifact)) {
    throw new RenderError("an artifact is a JSON object");
  }
  const contract = artifact.output_contract ?? null;
  if (contract === null) {
    const why = artifact.output_schema
      ? "an output schema both runtimes cannot check (W827)"
      : "no `/// output:` schema";
    throw new RenderError(`prompt \`${artifact.name}\` has ${why}: there is no output contract to parse against`);
  }
  let value = response;
  if (typeof response === "string") {
    try {
      value = JSON.parse(response);
    } catch {
      throw new OutputError(artifact.name, ["response: not valid JSON"]);
    }
  }
  const problems = checkValue(contract, value, "response");
  if (problems.length) throw new OutputError(artifact.name, problems);
  return value;
}

/** [message, block] of the breakpoint that ends the cache-stable prefix on a block, or null. */
function stableEndOf(breakpoints) {
  const end = breakpoints.find((b) => b.stable_prefix && b.message !== null);
  return end === undefined ? null : Object.freeze([end.message, end.block]);
}

/** A rendered prompt: its messages, per message its blocks, and what the shapes need. */
export class Rendered {
  constructor(fields) {
    this.name = fields.name;
    this.messages = fields.messages;
    this.blocks = fields.blocks;
    this.prefixSha256 = fields.prefixSha256;
    this.params = fields.params;
    this.model = fields.model;
    this.tools = fields.tools;
    this.outputSchema = fields.outputSchema;
    this.ttl = fields.ttl;
    this.headBreakpoint = fields.headBreakpoint;
    this.provider = fields.provider;
    this.cacheModel = fields.cacheModel;
    /** [message, block] of the block that ends the cache-stable prefix (where the openai shapes put
     * `prompt_cache_breakpoint` for a model with explicit breakpoints), or null */
    this.stableEnd = fields.stableEnd ?? null;
    /** the sha256 of the artifact file (the manifest's), when rendered from a build folder */
    this.artifactSha256 = fields.artifactSha256 ?? null;
    /** when this request was rendered, in epoch seconds */
    this.renderedAt = fields.renderedAt ?? null;
    Object.freeze(this);
  }

  /** The usage record of the provider's `response` to this request (an SDK response object or its
   * decoded JSON), as the Python runtime writes it. `options`: `shape` (read from the response when
   * left out), `model` (when sent to another model than the artifact's), `timestamp` (when the
   * response came), `started` (when the request was sent; default: when it was rendered), `to` (a
   * JSONL file path, a function, or a list of them), `span` (an OpenTelemetry span to set the
   * GenAI attributes on). */
  usage(response, options = {}) {
    try {
      return emitUsage(makeRecord(this, response, options), options, usageWriter);
    } catch (error) {
      if (error instanceof UsageError) throw new RenderError(`prompt \`${this.name}\`: ${error.message}`);
      throw error;
    }
  }

  /** The request in a provider's shape: the keyword arguments of its official SDK call, as plain
   * values (a JavaScript SDK writes them with JSON.stringify, which puts integer-like keys of a
   * tool's schema first: for the bytes Python sends, send `body(shape)`). `options`: `model`
   * (sent instead of the artifact's), and for the anthropic shapes `caching: "automatic"` (one
   * top-level `cache_control` instead of the block markers) and `previousMessageId` (the `id` of
   * the conversation's previous response, or null on its first turn: cache diagnostics). */
  asShape(shape = "plain", options = {}) {
    try {
      return buildShape(this, shape, options.model ?? null, options);
    } catch (error) {
      if (error instanceof ShapeError) throw new RenderError(error.message);
      throw error;
    }
  }

  /** The exact request body the pinned Python SDK sends for `asShape(shape)`, as a string: POST it
   * as it is (`fetch(url, { method: "POST", headers, body: rendered.body(shape) })`) and a Node
   * service sends the bytes a Python service sends, so both share the provider's cache. */
  body(shape, options = {}) {
    try {
      return shapeBody(this, shape, options.model ?? null, options);
    } catch (error) {
      if (error instanceof ShapeError) throw new RenderError(error.message);
      throw error;
    }
  }

  /** The fields under the names the Python runtime's `Rendered` gives them. */
  toJSON() {
    return {
      name: this.name,
      messages: this.messages,
      blocks: this.blocks,
      prefix_sha256: this.prefixSha256,
      params: plain(this.params),
      model: this.model,
      tools: plain(this.tools),
      output_schema: plain(this.outputSchema),
      ttl: this.ttl,
      head_breakpoint: this.headBreakpoint,
      provider: this.provider,
      cache_model: this.cacheModel,
      stable_end: this.stableEnd,
    };
  }
}

// The lossless JSON tree each artifact was read from (`readArtifact`): its tools, output schema and
// params keep their key order and number spelling through to `body()`.
const TREES = new WeakMap();

/** An artifact from its JSON text (a string or bytes): the decoded artifact, as `JSON.parse` gives
 * it, remembered with its lossless tree, so that its requests keep the author's key order and
 * Python's numbers. Pass this (or the text itself) to `renderArtifact`; a decoded object without a
 * tree renders the same text, but its tools' integer-like keys come first, as JavaScript has them. */
export function readArtifact(text) {
  const source = typeof text === "string" ? text : new TextDecoder().decode(text);
  return adoptArtifact(parse(source));
}

/** `readArtifact` for a tree `json.parse` already read (an artifact inside a larger document). */
export function adoptArtifact(tree) {
  const artifact = plain(tree);
  if (artifact !== null && typeof artifact === "object") TREES.set(artifact, tree);
  return artifact;
}

function treeOf(artifact) {
  const tree = TREES.get(artifact);
  if (tree !== undefined) return tree;
  return lossless(artifact);
}

function artifactOf(artifact) {
  if (typeof artifact === "string" || artifact instanceof Uint8Array) artifact = readArtifact(artifact);
  if (artifact === null || typeof artifact !== "object" || Array.isArray(artifact)) {
    throw new RenderError("an artifact is a JSON object");
  }
  if (artifact.schema !== ARTIFACT_SCHEMA) {
    throw new RenderError(
      `artifact \`${artifact.name ?? "?"}\` has schema ${JSON.stringify(artifact.schema)}; this runtime reads ${ARTIFACT_SCHEMA}`,
    );
  }
  if (artifact.renderer !== "placeholder") {
    throw new RenderError(
      `prompt \`${artifact.name}\` uses the ${artifact.renderer} renderer ({{ }} / {% %} blocks run Python): ` +
        "only the Python runtime (promptc.runtime) renders it",
    );
  }
  return artifact;
}

const field = (tree, key) => (tree instanceof Map ? tree.get(key) : undefined);

export const UNKNOWN_INPUTS = Object.freeze(["error", "ignore"]);

/** Render one artifact (the decoded JSON of `build/<name>.json`) with `values`.
 * `options.unknownInputs`: "error" (the default: a value for an input the prompt does not take is
 * an `UnknownInputsError`) or "ignore" (one set of values for many prompts); `options.artifactSha256`
 * is the artifact file's sha256, which usage records carry (`load()` passes the manifest's). */
export function renderArtifact(artifact, values = {}, options = {}) {
  const mode = options?.unknownInputs ?? "error";
  if (!UNKNOWN_INPUTS.includes(mode)) {
    throw new TypeError(`unknownInputs must be one of "error", "ignore", got ${JSON.stringify(mode)}`);
  }
  artifact = artifactOf(artifact);
  values = values ?? {};
  const name = artifact.name;
  const schema = artifact.input_schema ?? {};
  const inputs = artifact.inputs ?? [];
  const helpers = artifact.helpers ?? [];
  const required = new Set(schema.required ?? inputs);
  const known = [...new Set([...inputs, ...helpers])];
  const missing = known.filter((n) => !has(values, n) && (required.has(n) || helpers.includes(n))).sort();
  if (mode === "error") {
    const unknown = Object.keys(values).filter((k) => values[k] !== undefined && !known.includes(k));
    if (unknown.length) throw new UnknownInputsError(name, unknown, known, missing);
  }
  if (missing.length) throw new MissingInputsError(name, missing);
  values = checked(name, schema, inputs, values);
  const marks = new Map();
  for (const b of artifact.cache.breakpoints) marks.set(`${b.message},${b.block}`, b.anthropic);
  const messages = [];
  const allBlocks = [];
  artifact.messages.forEach((message, mi) => {
    const blocks = message.blocks.map((block, bi) => {
      const text = block.sections.map((s) => renderSection(s.text, values, name, s.name, schema)).join(JOINER);
      const key = `${mi},${bi}`;
      const marked = marks.has(key);
      return Object.freeze({ boundary: block.boundary, text, breakpoint: marked, anthropic: marked && marks.get(key) });
    });
    messages.push({ role: message.role, content: blocks.map((b) => b.text).join(JOINER) });
    allBlocks.push(blocks);
  });
  const tree = treeOf(artifact);
  const tools = field(tree, "tools") ?? [];
  const output = field(tree, "output_schema") ?? null;
  return new Rendered({
    name,
    messages,
    blocks: allBlocks,
    prefixSha256: artifact.cache.prefix_sha256,
    params: new Map(field(tree, "params") ?? []),
    model: artifact.model,
    tools: tools.map((t) => ({ name: t.get("name"), description: t.get("description"), input_schema: t.get("input_schema") })),
    outputSchema: output === null ? null : { name: output.get("name"), schema: output.get("schema") },
    ttl: artifact.cache.ttl,
    headBreakpoint: artifact.cache.breakpoints.some((b) => b.message === null && b.anthropic),
    provider: artifact.provider ? artifact.provider.name : null,
    cacheModel: artifact.cache.key ? artifact.cache.key.model : null,
    stableEnd: stableEndOf(artifact.cache.breakpoints),
    artifactSha256: options?.artifactSha256 ?? null,
    renderedAt: Date.now() / 1000,
  });
}
