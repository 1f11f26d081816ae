// promptc-runtime: render prompts that `promptc build` compiled, in JavaScript, byte for byte as
// the Python runtime (`promptc.runtime`) does. No dependencies; node's own modules only here
// (src/render.js, which does no I/O, runs anywhere).

import { createHash } from "node:crypto";
import { appendFileSync, readFileSync } from "node:fs";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

import { MANIFEST, MANIFEST_SCHEMA } from "./src/language.js";
import { parseOutput, readArtifact, RenderError, renderArtifact, setUsageWriter } from "./src/render.js";
import { suggestions } from "./src/suggest.js";
import { recordLine } from "./src/usage.js";

// `rendered.usage(response, { to: "usage.jsonl" })`: one line per record, one append each
setUsageWriter((path, record) => {
  appendFileSync(path instanceof URL ? fileURLToPath(path) : path, recordLine(record) + "\n");
});

export {
  adoptArtifact,
  ARTIFACT_SCHEMA,
  dumpsJson,
  InputTypeError,
  JOINER,
  JsonNumber,
  MissingInputsError,
  OutputError,
  parseJson,
  parseOutput,
  RenderError,
  readArtifact,
  Rendered,
  renderArtifact,
  SHAPES,
  UNKNOWN_INPUTS,
  UnknownInputsError,
  UsageError,
} from "./src/render.js";
export {
  countsOf,
  detectShape,
  isoTimestamp,
  makeRecord,
  OTEL_PROVIDER_NAMES,
  parseTimestamp,
  PENDING,
  recordLine,
  spanAttributes,
  USAGE_SCHEMA,
} from "./src/usage.js";
export { admits, checkValue, describe } from "./src/inputtypes.js";

export { MANIFEST, MANIFEST_SCHEMA };

/** A build folder: `manifest.json` plus one JSON artifact per prompt, read lazily. */
export class Runtime {
  #manifest = null;
  #artifacts = new Map();

  constructor(buildDir, options = {}) {
    this.buildDir = buildDir instanceof URL ? fileURLToPath(buildDir) : String(buildDir);
    /** values for inputs a prompt does not take: "error" (`UnknownInputsError`) or "ignore" */
    this.unknownInputs = options?.unknownInputs ?? "error";
  }

  get manifest() {
    if (this.#manifest === null) {
      const path = resolve(this.buildDir, MANIFEST);
      let data;
      try {
        data = JSON.parse(readFileSync(path, "utf8"));
      } catch (error) {
        if (error.code === "ENOENT") {
          throw new RenderError(`no ${MANIFEST} in \`${this.buildDir}\`: run \`promptc build\` first`);
        }
        throw new RenderError(`cannot read \`${path}\`: ${error.message}`);
      }
      if (data === null || typeof data !== "object" || data.schema !== MANIFEST_SCHEMA) {
        throw new RenderError(`\`${path}\`: not a ${MANIFEST_SCHEMA} manifest`);
      }
      this.#manifest = data;
    }
    return this.#manifest;
  }

  /** The prompts of the build, sorted. */
  names() {
    return Object.keys(this.manifest.artifacts).sort();
  }

  has(name) {
    return Object.hasOwn(this.manifest.artifacts, name);
  }

  /** The artifact of prompt `name` (its decoded JSON), checked against the manifest's sha256. */
  artifact(name) {
    const cached = this.#artifacts.get(name);
    if (cached !== undefined) return cached;
    if (!this.has(name)) {
      const close = suggestions(name, this.names(), Math.max(2, Math.floor(name.length / 3)));
      const hint = close.length ? `; did you mean ${close.map((c) => `\`${c}\``).join(" or ")}?` : "";
      const known = close.length ? "" : `; prompts: ${this.names().join(", ") || "(none)"}`;
      throw new RenderError(`no prompt \`${name}\` in \`${this.buildDir}\`${hint}${known}`);
    }
    const entry = this.manifest.artifacts[name];
    const root = resolve(this.buildDir);
    const path = resolve(root, entry.path);
    const inside = relative(root, path);
    if (!inside || inside.startsWith(".." + sep) || inside === ".." || isAbsolute(inside)) {
      throw new RenderError(`manifest entry \`${name}\` points outside \`${this.buildDir}\``);
    }
    let data;
    try {
      data = readFileSync(path);
    } catch (error) {
      throw new RenderError(`cannot read the artifact of \`${name}\`: ${error.message}`);
    }
    if (createHash("sha256").update(data).digest("hex") !== entry.sha256) {
      const file = path.split(sep).pop();
      throw new RenderError(`\`${file}\` does not match ${MANIFEST} (changed after the build); run \`promptc build\``);
    }
    let artifact;
    try {
      const text = data.toString("utf8");
      JSON.parse(text); // the platform's own message for a file that is not JSON
      artifact = readArtifact(text); // the tools and params in their written order, numbers as written
    } catch (error) {
      throw new RenderError(`\`${path}\`: ${error.message}`);
    }
    this.#artifacts.set(name, artifact);
    return artifact;
  }

  /** Render prompt `name` with `values` (an object: input name → value). */
  render(name, values = {}) {
    const artifact = this.artifact(name);
    return renderArtifact(artifact, values, {
      artifactSha256: this.manifest.artifacts[name].sha256,
      unknownInputs: this.unknownInputs,
    });
  }

  /** The value of a provider `response` to prompt `name`, checked against its output contract. */
  parse(name, response) {
    return parseOutput(this.artifact(name), response);
  }
}

/** Open a build folder (a path, or a `file:` URL). Nothing is read until a prompt is asked for.
 * `{ unknownInputs: "ignore" }`: `render` ignores values for inputs a prompt does not take. */
export function load(buildDir = "build", options = {}) {
  return new Runtime(buildDir, options);
}
