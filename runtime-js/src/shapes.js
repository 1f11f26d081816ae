// Request shapes: a port of `promptc.shapes`. The same keys in the same order, so that
// `JSON.stringify` of a shape here is the bytes of Python's `json.dumps` of the same shape.

import { SHAPE_PARAMS } from "./shape-params.js";

const SYSTEM_ROLES = ["system", "developer"];

export class ShapeError extends Error {}

/** Whether OpenAI's strict structured outputs accept `schema`. Iterative. */
export function strictCompatible(schema) {
  const stack = [schema];
  while (stack.length) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      stack.push(...node);
      continue;
    }
    if (node === null || typeof node !== "object") continue;
    if (node.type === "object" || "properties" in node) {
      const properties = node.properties ?? {};
      if (node.additionalProperties !== false) return false;
      if (properties === null || typeof properties !== "object" || Array.isArray(properties)) return false;
      const required = new Set(node.required ?? []);
      const names = new Set(Object.keys(properties));
      if (required.size !== names.size || [...required].some((n) => !names.has(n))) return false;
    }
    stack.push(...Object.values(node));
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

function params(rendered, shape) {
  const names = shapeParams(shape);
  const out = {};
  for (const [key, value] of Object.entries(rendered.params)) {
    if (!Object.hasOwn(names, key)) continue;
    const native = names[key];
    out[native] = native === "stop_sequences" && typeof value === "string" ? [value] : value;
  }
  return out;
}

function model(rendered, shape, chosen) {
  chosen = chosen || rendered.model;
  if (!chosen) {
    throw new ShapeError(
      `prompt \`${rendered.name}\`: the ${shape} request needs a model; set \`/// param: model=…\`, ` +
        "`model` in [tool.promptc], or pass one (`--model`, `as_shape(shape, model=…)`)",
    );
  }
  return chosen;
}

const cacheControl = (ttl) => (ttl ? { type: "ephemeral", ttl } : { type: "ephemeral" });
const toolJson = (t) => ({ name: t.name, description: t.description, input_schema: t.input_schema });

function anthropic(rendered, chosen) {
  const p = params(rendered, "anthropic");
  if (!Object.hasOwn(p, "max_tokens")) {
    throw new ShapeError(
      `prompt \`${rendered.name}\`: the anthropic request needs \`max_tokens\`; ` +
        "add `/// param: max_tokens=1024` to the prompt",
    );
  }
  const control = cacheControl(rendered.ttl);
  const tools = rendered.tools.map(toolJson);
  if (tools.length && rendered.headBreakpoint) tools[tools.length - 1].cache_control = { ...control };
  const system = [];
  const messages = [];
  let opening = true;
  rendered.messages.forEach((message, i) => {
    opening = opening && SYSTEM_ROLES.includes(message.role);
    const content = opening ? system : [];
    for (const block of rendered.blocks[i]) {
      if (block.text) content.push({ type: "text", text: block.text });
      if (block.anthropic && content.length) content[content.length - 1].cache_control = { ...control };
      else if (block.anthropic && !opening && messages.length) {
        const last = messages[messages.length - 1].content;
        last[last.length - 1].cache_control = { ...control };
      } else if (block.anthropic && tools.length && !system.length && !messages.length) {
        tools[tools.length - 1].cache_control = { ...control };
      }
    }
    if (!opening && content.length) {
      const role = SYSTEM_ROLES.includes(message.role) ? "user" : message.role;
      messages.push({ role, content });
    }
  });
  const request = { model: model(rendered, "anthropic", chosen), max_tokens: p.max_tokens };
  delete p.max_tokens;
  if (tools.length) request.tools = tools;
  if (system.length) request.system = system;
  request.messages = messages;
  if (rendered.outputSchema !== null) {
    request.output_config = { format: { type: "json_schema", schema: rendered.outputSchema.schema } };
  }
  return Object.assign(request, p);
}

const openaiMessages = (rendered) => rendered.messages.map((m) => ({ ...m }));

function openai(rendered, chosen) {
  const request = { model: model(rendered, "openai", chosen), messages: openaiMessages(rendered) };
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
  if (rendered.prefixSha256) request.prompt_cache_key = rendered.prefixSha256;
  return Object.assign(request, params(rendered, "openai"));
}

function openaiResponses(rendered, chosen) {
  const request = { model: model(rendered, "openai-responses", chosen), input: openaiMessages(rendered) };
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
  if (rendered.prefixSha256) request.prompt_cache_key = rendered.prefixSha256;
  return Object.assign(request, params(rendered, "openai-responses"));
}

function gemini(rendered, chosen) {
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
  Object.assign(config, params(rendered, "gemini"));
  const request = { model: model(rendered, "gemini", chosen), contents };
  if (Object.keys(config).length) request.config = config;
  return request;
}

const BUILDERS = {
  plain: (rendered) => openaiMessages(rendered),
  anthropic,
  openai,
  "openai-responses": openaiResponses,
  gemini,
};

export function build(rendered, shape, chosenModel = null) {
  if (!Object.hasOwn(BUILDERS, shape)) {
    throw new ShapeError(`unknown shape \`${shape}\`; shapes: ${Object.keys(BUILDERS).join(", ")}`);
  }
  return BUILDERS[shape](rendered, chosenModel);
}
