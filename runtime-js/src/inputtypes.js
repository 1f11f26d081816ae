// Checking input values against a prompt's `input_schema`: a port of `promptc.runtime.inputtypes`
// (`check_value`, `describe`), with the same messages, in the same order. Iterative.

import { codePoints, entries, isPlainObject, jsonDumps } from "./python.js";

const SCALARS = { string: "str", integer: "int", number: "float", boolean: "bool", null: "None" };
const JSON_TYPES = { string: "a string", integer: "an integer", number: "a number", boolean: "true or false" };

/** A schema written back in promptc's type language (`list[str]`, `int | None`). */
export function describe(schema) {
  if (schema && "anyOf" in schema) return schema.anyOf.map(describe).join(" | ");
  if (schema && "const" in schema) return jsonDumps(schema.const);
  if (schema && Array.isArray(schema.enum)) return schema.enum.map(jsonDumps).join(" | ");
  const kind = schema?.type;
  if (Array.isArray(kind)) return kind.map((k) => describe({ ...schema, type: k })).join(" | ");
  if (kind === "array") return `list[${describe(schema.items ?? {})}]`;
  if (kind === "object" && isSchema(schema.additionalProperties) && !("properties" in schema)) {
    return `dict[str, ${describe(schema.additionalProperties)}]`;
  }
  if (typeof kind !== "string") return "any";
  return Object.hasOwn(SCALARS, kind) ? SCALARS[kind] : kind === "object" ? "object" : "any";
}

/** JSON equality, as Python's `_same`: `1` is `1.0`, but `true` is not `1`. */
function same(expected, value) {
  if (typeof expected === "boolean" || typeof value === "boolean") return expected === value;
  if (typeof expected === "number" && typeof value === "number") return expected === value;
  if (Array.isArray(expected)) {
    return Array.isArray(value) && expected.length === value.length && expected.every((e, i) => same(e, value[i]));
  }
  if (isPlainObject(expected)) {
    if (!isPlainObject(value)) return false;
    const a = Object.keys(expected);
    const b = Object.keys(value);
    return a.length === b.length && a.every((k) => Object.hasOwn(value, k) && same(expected[k], value[k]));
  }
  if (expected === null) return value === null || value === undefined;
  return typeof expected === typeof value && expected === value;
}

function typeOk(kind, value) {
  switch (kind) {
    case "string":
      return typeof value === "string";
    case "integer":
      return (typeof value === "number" && Number.isInteger(value)) || typeof value === "bigint";
    case "number":
      return typeof value === "number" || typeof value === "bigint";
    case "boolean":
      return typeof value === "boolean";
    case "null":
      return value === null || value === undefined;
    case "array":
      return Array.isArray(value);
    case "object":
      return isPlainObject(value);
    default:
      return true;
  }
}

function shown(value) {
  const text = codePoints(jsonDumps(value));
  return text.length <= 40 ? text.join("") : text.slice(0, 37).join("") + "...";
}

function isSchema(node) {
  return node !== null && typeof node === "object" && !Array.isArray(node);
}

/** Every way `value` fails `schema`, as `path: expected …, got …` (depth-first, in order). */
export function checkValue(schema, value, path) {
  const problems = [];
  const stack = [[schema, value, path]];
  while (stack.length) {
    const [node, item, where] = stack.pop();
    if (!isSchema(node)) continue;
    if ("anyOf" in node) {
      if (!node.anyOf.some((option) => checkValue(option, item, where).length === 0)) {
        problems.push(`${where}: expected ${describe(node)}, got ${shown(item)}`);
      }
      continue;
    }
    const kind = node.type;
    const kinds = Array.isArray(kind) ? kind : typeof kind === "string" ? [kind] : [];
    if (kinds.length && !kinds.some((k) => typeOk(k, item))) {
      const expected =
        kinds.length === 1
          ? Object.hasOwn(JSON_TYPES, kinds[0])
            ? JSON_TYPES[kinds[0]]
            : describe(node)
          : describe({ type: kinds });
      problems.push(`${where}: expected ${expected}, got ${shown(item)}`);
      continue;
    }
    if ("const" in node && !same(node.const, item)) {
      problems.push(`${where}: expected ${describe({ const: node.const })}, got ${shown(item)}`);
      continue;
    }
    if (Array.isArray(node.enum) && !node.enum.some((option) => same(option, item))) {
      problems.push(`${where}: expected one of ${describe({ enum: node.enum })}, got ${shown(item)}`);
      continue;
    }
    const children = [];
    if (Array.isArray(item) && isSchema(node.items)) {
      item.forEach((element, i) => children.push([node.items, element, `${where}[${i}]`]));
    } else if (isPlainObject(item) && ("properties" in node || "required" in node || "additionalProperties" in node)) {
      const properties = isSchema(node.properties) ? node.properties : {};
      const present = (name) => Object.hasOwn(item, name) && item[name] !== undefined;
      for (const name of node.required ?? []) {
        if (!present(name)) problems.push(`${where}.${name}: required, missing`);
      }
      for (const name of Object.keys(properties)) {
        if (present(name)) children.push([properties[name], item[name], `${where}.${name}`]);
      }
      const extra = node.additionalProperties;
      if (isSchema(extra) || extra === false) {
        for (const [key, element] of entries(item)) {
          if (Object.hasOwn(properties, key)) continue;
          if (extra === false) problems.push(`${where}[${jsonDumps(String(key))}]: not allowed (the schema lists its keys)`);
          else children.push([extra, element, `${where}[${jsonDumps(key)}]`]);
        }
      }
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
  return problems;
}
