// Request shapes: a port of `promptc.runtime.shapes`. The same keys in the same order, the same refusals
// with the same messages, and the same bytes: `body(rendered, shape)` writes what the pinned
// Python SDK sends (`SHAPE_INFO[shape].body`, generated from providers.json).
//
// The tools, the output schema and the parameters reach here as lossless JSON trees (`json.js`:
// Maps in the written order, numbers as written), so `body` keeps the author's key order and
// Python's number spelling; `build` hands the keyword arguments out as plain JavaScript values,
// for the JavaScript SDKs (which write them with JSON.stringify: integer-like keys first).

import { dumps, plain } from "./json.js";
import { SYSTEM_ROLES } from "./language.js";
import { repr } from "./python.js";
import { MODEL_PATTERNS, MODEL_PREFIXES, PROVIDER_FACTS, SHAPE_INFO, SHAPE_PARAMS } from "./shape-params.js";

export class ShapeError extends Error {}

/** How the anthropic shapes mark the cache: the artifact's block markers, or one top-level marker. */
export const CACHING = Object.freeze(["blocks", "automatic"]);
const ANTHROPIC_SHAPES = ["anthropic", "anthropic-vertex"];

/** The caller's options (`caching`, `previousMessageId`: a `msg_…` id, null to opt in to cache
 * diagnostics on a first turn, undefined not to), checked as `ShapeOptions.check` checks them. */
function checkedOptions(options, shape) {
  const caching = options.caching ?? "blocks";
  const pid = options.previousMessageId;
  if (!CACHING.includes(caching)) {
    throw new ShapeError(`caching must be one of ${CACHING.join(", ")}, got ${repr(caching)}`);
  }
  const given = [];
  if (caching === "automatic") given.push("caching='automatic'");
  if (pid !== undefined) given.push("previous_message_id");
  if (given.length && !ANTHROPIC_SHAPES.includes(shape)) {
    throw new ShapeError(`${given.join(" and ")}: an option of the anthropic and anthropic-vertex shapes, not of ${shape}`);
  }
  if (pid !== undefined && pid !== null && !(typeof pid === "string" && pid)) {
    throw new ShapeError(`previous_message_id must be a message id (\`msg_…\`) or None, got ${repr(pid)}`);
  }
  return { caching, previousMessageId: pid };
}

/** A per-model fact of a provider (providers.json, `PROVIDER_FACTS`): the entry of the longest
 * model-name prefix that matches the model without its cross-Region prefix, else the value. */
function forModel(provider, key, model) {
  const entry = PROVIDER_FACTS[provider];
  if (entry === undefined) return null;
  let base = model ?? "";
  for (const prefix of entry.inference_profiles) {
    if (base.startsWith(prefix)) {
      base = base.slice(prefix.length);
      break;
    }
  }
  const fact = entry[key];
  let best = null;
  for (const prefix of Object.keys(fact.by_model)) {
    if (base && base.startsWith(prefix) && (best === null || prefix.length > best.length)) best = prefix;
  }
  return best === null ? fact.value : fact.by_model[best];
}

/** The artifact's `cache_ttl` when the model the request goes to offers it, else null. */
function offered(ttl, provider, model) {
  if (!ttl || !provider) return null;
  return (forModel(provider, "cache_ttls", model) ?? []).includes(ttl) ? ttl : null;
}

const isMap = (node) => node instanceof Map;

/** Whether OpenAI's strict structured outputs accept `schema` (a tree). Iterative. */
export function strictCompatible(schema) {
  const stack = [schema];
  while (stack.length) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      stack.push(...node);
      continue;
    }
    if (!isMap(node)) continue;
    if (node.get("type") === "object" || node.has("properties")) {
      const properties = node.has("properties") ? node.get("properties") : new Map();
      if (node.get("additionalProperties") !== false) return false;
      if (!isMap(properties)) return false;
      const required = node.get("required") ?? [];
      const names = new Set(typeof required === "string" ? [...required] : Array.isArray(required) ? required : []);
      const keys = new Set(properties.keys());
      if (names.size !== keys.size || [...names].some((n) => !keys.has(n))) return false;
    }
    stack.push(...node.values());
  }
  return true;
}

function shapeParams(shape) {
  const entry = SHAPE_PARAMS[shape];
  if (entry === undefined) return {};
  const names = { ...entry };
  for (const native of Object.values(entry)) if (!Object.hasOwn(names, native)) names[native] = native;
  return names;
}

/** The artifact's params (a Map) under the names the shape's call takes, in their order. */
function params(rendered, shape) {
  const names = shapeParams(shape);
  const out = new Map();
  for (const [key, value] of rendered.params) {
    if (!Object.hasOwn(names, key)) continue;
    const native = names[key];
    const listed = native === "stop_sequences" || native === "stopSequences";
    out.set(native, listed && typeof value === "string" ? [value] : value);
  }
  return out;
}

/** The provider whose model names `model` starts with (`claude-…` → anthropic). */
export function providerOfModel(model) {
  if (!model) return null;
  for (const [name, pattern] of Object.entries(MODEL_PATTERNS)) if (pattern.test(model)) return name;
  let best = null;
  for (const [name, prefixes] of Object.entries(MODEL_PREFIXES)) {
    for (const prefix of prefixes) {
      if (model.startsWith(prefix) && (best === null || prefix.length > best[0] || (prefix.length === best[0] && name > best[1]))) {
        best = [prefix.length, name];
      }
    }
  }
  return best === null ? null : best[1];
}

/** Whether a request to `target` can go to a model of `provider`: its own, or the provider whose
 * models the platform serves under the same names. */
function serves(target, provider) {
  return target === provider || (PROVIDER_FACTS[target]?.same_as ?? null) === provider;
}

function model(rendered, shape, chosen) {
  const target = SHAPE_INFO[shape]?.provider ?? null;
  if (chosen) {
    const other = providerOfModel(chosen);
    if (target && other && !serves(target, other)) {
      throw new ShapeError(
        `prompt \`${rendered.name}\`: \`${chosen}\` is an ${other} model; the ${shape} request goes to ${target}: ` +
          `pass one of its models (\`--model\`, \`as_shape('${shape}', model=…)\`)`,
      );
    }
    return chosen;
  }
  const own = rendered.provider || providerOfModel(rendered.model);
  if (rendered.model && target && own && !serves(target, own)) {
    throw new ShapeError(
      `prompt \`${rendered.name}\` is built for \`${rendered.model}\` (${own}); the ${shape} request goes to ${target}: ` +
        `pass one of its models (\`--model\`, \`as_shape('${shape}', model=…)\`)`,
    );
  }
  if (!rendered.model) {
    throw new ShapeError(
      `prompt \`${rendered.name}\`: the ${shape} request needs a model; set \`/// param: model=…\`, ` +
        "`model` in [tool.promptc], or pass one (`--model`, `as_shape(shape, model=…)`)",
    );
  }
  return rendered.model;
}

function cacheKey(rendered, chosen) {
  if (!rendered.prefixSha256) return null;
  if (rendered.provider === null) return rendered.prefixSha256;
  if (rendered.provider !== "openai") return null;
  if (chosen && chosen !== rendered.model && chosen !== rendered.cacheModel) return null;
  return rendered.prefixSha256;
}

function refuseTurnless(rendered, shape, turns, system) {
  const needs = SHAPE_INFO[shape]?.requires;
  if (needs === "user_first" && turns.length && turns[0].role !== "user") {
    throw new ShapeError(
      `prompt \`${rendered.name}\`: the ${shape} request must start with a user turn, and its first turn is the ` +
        `${turns[0].role}'s; put a \`----- user -----\` message before it, or render the user turn non-empty`,
    );
  }
  if ((needs !== "user_turn" && needs !== "user_first") || turns.some((turn) => turn.role === "user")) return;
  let why;
  if (!turns.length && system) {
    why = "every message is a system message (the opening system and developer messages are its system part)";
  } else if (!turns.length) why = "every message rendered empty";
  else why = "its user turns rendered empty";
  const field = shape === "gemini" ? "contents" : "messages";
  throw new ShapeError(
    `prompt \`${rendered.name}\`: the ${shape} request has no user turn (${field}): ${why}; ` +
      "add a `----- user -----` message, or render its inputs non-empty",
  );
}

const cacheControl = (ttl) => (ttl ? { type: "ephemeral", ttl } : { type: "ephemeral" });
const toolJson = (t) => ({ name: t.name, description: t.description, input_schema: t.input_schema });

function anthropic(rendered, chosen, options, shape = "anthropic") {
  const p = params(rendered, shape);
  if (!p.has("max_tokens")) {
    throw new ShapeError(
      `prompt \`${rendered.name}\`: the ${shape} request needs \`max_tokens\`; ` +
        "add `/// param: max_tokens=1024` to the prompt",
    );
  }
  const chosenModel = model(rendered, shape, chosen);
  const control = cacheControl(offered(rendered.ttl, SHAPE_INFO[shape].provider, chosenModel));
  const automatic = options.caching === "automatic";
  const marks = !automatic;
  const tools = rendered.tools.map(toolJson);
  if (tools.length && rendered.headBreakpoint && marks) tools[tools.length - 1].cache_control = { ...control };
  const system = [];
  const messages = [];
  let opening = true;
  rendered.messages.forEach((message, i) => {
    opening = opening && SYSTEM_ROLES.includes(message.role);
    const content = opening ? system : [];
    for (const block of rendered.blocks[i]) {
      if (!block.text) continue;
      content.push({ type: "text", text: block.text });
      if (block.anthropic && marks) content[content.length - 1].cache_control = { ...control };
    }
    if (!opening && content.length) {
      const role = SYSTEM_ROLES.includes(message.role) ? "user" : message.role;
      messages.push({ role, content });
    }
  });
  refuseTurnless(rendered, shape, messages, system.length > 0);
  const request = { model: chosenModel, max_tokens: p.get("max_tokens") };
  p.delete("max_tokens");
  if (automatic) request.cache_control = control;
  if (options.previousMessageId !== undefined) request.diagnostics = { previous_message_id: options.previousMessageId };
  if (tools.length) request.tools = tools;
  if (system.length) request.system = system;
  request.messages = messages;
  if (rendered.outputSchema !== null) {
    request.output_config = { format: { type: "json_schema", schema: rendered.outputSchema.schema } };
  }
  for (const [k, v] of p) request[k] = v;
  return request;
}

const anthropicVertex = (rendered, chosen, options) => anthropic(rendered, chosen, options, "anthropic-vertex");

/** The output schema as the JSON text Converse takes: compact, keys as written, non-ASCII kept. */
const schemaText = (schema) => dumps(schema, { ensureAscii: false, separators: [",", ":"], allowNan: true });

function bedrock(rendered, chosen) {
  const chosenModel = model(rendered, "bedrock", chosen);
  const ttl = offered(rendered.ttl, "bedrock", chosenModel);
  const point = ttl ? { type: "default", ttl } : { type: "default" };
  const p = params(rendered, "bedrock");
  const system = [];
  const messages = [];
  let opening = true;
  rendered.messages.forEach((message, i) => {
    opening = opening && SYSTEM_ROLES.includes(message.role);
    const content = opening ? system : [];
    for (const block of rendered.blocks[i]) {
      if (!block.text) continue;
      content.push({ text: block.text });
      if (block.anthropic) content.push({ cachePoint: { ...point } });
    }
    if (!opening && content.length) {
      const role = SYSTEM_ROLES.includes(message.role) ? "user" : message.role;
      const last = messages[messages.length - 1];
      if (last && last.role === role) last.content.push(...content);
      else messages.push({ role, content });
    }
  });
  refuseTurnless(rendered, "bedrock", messages, system.length > 0);
  const request = { modelId: chosenModel, messages };
  if (system.length) request.system = system;
  const inference = new Map();
  for (const name of SHAPE_INFO.bedrock.body.inference) if (p.has(name)) inference.set(name, p.get(name));
  if (inference.size) request.inferenceConfig = inference;
  if (rendered.tools.length) {
    const specs = rendered.tools.map((t) => {
      const spec = { name: t.name };
      if (t.description) spec.description = t.description;
      spec.inputSchema = { json: t.input_schema };
      return { toolSpec: spec };
    });
    if (rendered.headBreakpoint) specs.push({ cachePoint: { ...point } });
    request.toolConfig = { tools: specs };
  }
  const output = rendered.outputSchema;
  if (output !== null) {
    const structure = { jsonSchema: { schema: schemaText(output.schema), name: output.name } };
    request.outputConfig = { textFormat: { type: "json_schema", structure } };
  }
  return request;
}

const openaiMessages = (rendered) => rendered.messages.map((m) => ({ ...m }));

/** The turns of an openai request: for a model with explicit breakpoints, one text part per
 * non-empty block and `prompt_cache_breakpoint` on the part that ends the stable prefix (see
 * `_openai_turns`); for every other model the messages as they are. */
function openaiTurns(rendered, chosenModel, responses) {
  if (!forModel("openai", "explicit_breakpoints", chosenModel)) return openaiMessages(rendered);
  const end = rendered.ttl !== "none" ? rendered.stableEnd : null;
  const ttl = offered(rendered.ttl, "openai", chosenModel);
  const marker = ttl ? { mode: "explicit", ttl } : { mode: "explicit" };
  const kind = responses ? "input_text" : "text";
  return rendered.messages.map((message, mi) => {
    if (responses && message.role === "assistant") return { ...message };
    const parts = [];
    rendered.blocks[mi].forEach((block, bi) => {
      if (!block.text) return;
      parts.push({ type: kind, text: block.text });
      if (end !== null && end[0] === mi && end[1] === bi) parts[parts.length - 1].prompt_cache_breakpoint = { ...marker };
    });
    return { role: message.role, content: parts.length ? parts : message.content };
  });
}

function retention(request, chosenModel) {
  const kept = forModel("openai", "cache_retention", chosenModel);
  if (kept) request.prompt_cache_retention = kept;
}

function openai(rendered, chosen) {
  const chosenModel = model(rendered, "openai", chosen);
  const request = { model: chosenModel, messages: openaiTurns(rendered, chosenModel, false) };
  if (rendered.tools.length) {
    request.tools = rendered.tools.map((t) => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: t.input_schema },
    }));
  }
  const output = rendered.outputSchema;
  if (output !== null) {
    request.response_format = {
      type: "json_schema",
      json_schema: { name: output.name, schema: output.schema, strict: strictCompatible(output.schema) },
    };
  }
  const key = cacheKey(rendered, chosen);
  if (key) request.prompt_cache_key = key;
  retention(request, chosenModel);
  for (const [k, v] of params(rendered, "openai")) request[k] = v;
  return request;
}

function openaiResponses(rendered, chosen) {
  const chosenModel = model(rendered, "openai-responses", chosen);
  const request = { model: chosenModel, input: openaiTurns(rendered, chosenModel, true) };
  if (rendered.tools.length) {
    request.tools = rendered.tools.map((t) => ({
      type: "function",
      name: t.name,
      description: t.description,
      parameters: t.input_schema,
      strict: false,
    }));
  }
  const output = rendered.outputSchema;
  if (output !== null) {
    request.text = {
      format: { type: "json_schema", name: output.name, schema: output.schema, strict: strictCompatible(output.schema) },
    };
  }
  const key = cacheKey(rendered, chosen);
  if (key) request.prompt_cache_key = key;
  retention(request, chosenModel);
  for (const [k, v] of params(rendered, "openai-responses")) request[k] = v;
  return request;
}

function gemini(rendered, chosen) {
  const chosenModel = model(rendered, "gemini", chosen);
  const system = [];
  const contents = [];
  let opening = true;
  rendered.messages.forEach((message, i) => {
    opening = opening && SYSTEM_ROLES.includes(message.role);
    const parts = rendered.blocks[i].filter((b) => b.text).map((b) => ({ text: b.text }));
    if (opening) system.push(...parts);
    else if (parts.length) contents.push({ role: message.role === "assistant" ? "model" : "user", parts });
  });
  const config = {};
  if (system.length) config.system_instruction = { parts: system };
  if (rendered.tools.length) {
    config.tools = [
      {
        function_declarations: rendered.tools.map((t) => ({
          name: t.name,
          description: t.description,
          parameters_json_schema: t.input_schema,
        })),
      },
    ];
  }
  if (rendered.outputSchema !== null) {
    config.response_mime_type = "application/json";
    config.response_json_schema = rendered.outputSchema.schema;
  }
  for (const [k, v] of params(rendered, "gemini")) config[k] = v;
  refuseTurnless(rendered, "gemini", contents, system.length > 0);
  const request = { model: chosenModel, contents };
  if (Object.keys(config).length) request.config = config;
  return request;
}

const BUILDERS = {
  plain: (rendered) => openaiMessages(rendered),
  anthropic,
  openai,
  "openai-responses": openaiResponses,
  gemini,
  bedrock,
  "anthropic-vertex": anthropicVertex,
};

function request(rendered, shape, chosenModel, options = {}) {
  if (!Object.hasOwn(BUILDERS, shape)) {
    throw new ShapeError(`unknown shape \`${shape}\`; shapes: ${Object.keys(BUILDERS).join(", ")}`);
  }
  return BUILDERS[shape](rendered, chosenModel, checkedOptions(options, shape));
}

/** The keyword arguments of the shape's SDK call, as plain JavaScript values. */
export function build(rendered, shape, chosenModel = null, options = {}) {
  return plain(request(rendered, shape, chosenModel, options));
}

// ---------------------------------------------------------------------------------------------
// The bytes

function ordered(value, order) {
  const rank = new Map(order.map((key, i) => [key, i]));
  const keys = Object.keys(value).sort((a, b) => (rank.get(a) ?? rank.size) - (rank.get(b) ?? rank.size));
  const out = new Map();
  for (const key of keys) out.set(key, value[key]);
  return out;
}

const get = (node, key) => (node instanceof Map ? node.get(key) : node?.[key]);
const has = (node, key) => get(node, key) !== undefined && get(node, key) !== null;

function fields(value, table, nested) {
  if (!(value instanceof Map) && (value === null || typeof value !== "object" || Array.isArray(value))) return value;
  const out = new Map();
  for (const [name, rest] of table) {
    if (!has(value, name)) continue;
    const inner = get(value, name);
    out.set(rest, Object.hasOwn(nested, name) ? fields(inner, nested[name], nested) : inner);
  }
  return out;
}

function geminiBody(req, spec) {
  const config = req.config ?? {};
  const out = new Map();
  out.set(
    "contents",
    req.contents.map((c) => new Map([["parts", c.parts.map((p) => new Map([["text", p.text]]))], ["role", c.role]])),
  );
  if (config.system_instruction) {
    out.set("systemInstruction", new Map([["parts", config.system_instruction.parts.map((p) => new Map([["text", p.text]]))]]));
  }
  if (config.tools) {
    out.set(
      "tools",
      config.tools.map(
        (tool) =>
          new Map([
            [
              "functionDeclarations",
              tool.function_declarations.map(
                (d) =>
                  new Map([
                    ["description", d.description],
                    ["name", d.name],
                    ["parameters_json_schema", d.parameters_json_schema],
                  ]),
              ),
            ],
          ]),
      ),
    );
  }
  const nested = spec.fields;
  if (has(config, "tool_config")) out.set("toolConfig", fields(config.tool_config, nested.tool_config, nested));
  const generation = new Map();
  for (const [name, rest] of spec.generation) {
    if (!has(config, name)) continue;
    generation.set(rest, Object.hasOwn(nested, name) ? fields(config[name], nested[name], nested) : config[name]);
  }
  if (generation.size) out.set("generationConfig", generation);
  return out;
}

/** The request body of `shape` as the pinned Python SDK sends it: the same bytes, as a string. */
export function body(rendered, shape, chosenModel = null, options = {}) {
  if (shape === "plain") throw new ShapeError("the plain shape is not a request body: pick a provider's shape");
  const req = request(rendered, shape, chosenModel, options);
  const spec = SHAPE_INFO[shape].body;
  let payload;
  if (shape === "gemini") payload = geminiBody(req, spec);
  else {
    for (const key of spec.uri ?? []) delete req[key];
    payload = ordered(req, spec.order);
    for (const [key, value] of Object.entries(spec.append ?? {})) payload.set(key, value);
  }
  const serializer = spec.serializer;
  return dumps(payload, {
    ensureAscii: serializer.ensure_ascii,
    separators: serializer.separators,
    allowNan: serializer.allow_nan,
  });
}
