// Checking input values against a prompt's `input_schema`: a port of `promptc.inputtypes`
// (`check_value`, `describe`), with the same messages, in the same order. Iterative.

import { codePoints, entries, isPlainObject, jsonDumps } from "./python.js";

const SCALARS = { string: "str", integer: "int", number: "float", boolean: "bool", null: "None" };
const JSON_TYPES = { string: "a string", integer: "an integer", number: "a number", boolean: "true or false" };

/** A schema written back in promptc's type language (`list[str]`, `int | None`). */
export function describe(schema) {
  if (schema && "anyOf" in schema) return schema.anyOf.map(describe).join(" | ");
  const kind = schema?.type;
  if (kind === "array") return `list[${describe(schema.items ?? {})}]`;
  if (kind === "object" && "additionalProperties" in schema) {
    return `dict[str, ${describe(schema.additionalProperties)}]`;
  }
  if (typeof kind !== "string") return "any";
  return Object.hasOwn(SCALARS, kind) ? SCALARS[kind] : kind === "object" ? "object" : "any";
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
    if ("anyOf" in node) {
      if (!node.anyOf.some((option) => checkValue(option, item, where).length === 0)) {
        problems.push(`${where}: expected ${describe(node)}, got ${shown(item)}`);
      }
      continue;
    }
    const kind = node.type;
    if (typeof kind === "string" && !typeOk(kind, item)) {
      const expected = Object.hasOwn(JSON_TYPES, kind) ? JSON_TYPES[kind] : describe(node);
      problems.push(`${where}: expected ${expected}, got ${shown(item)}`);
      continue;
    }
    const children = [];
    if (kind === "array" && isSchema(node.items)) {
      item.forEach((element, i) => children.push([node.items, element, `${where}[${i}]`]));
    } else if (kind === "object" && isPlainObject(item)) {
      const properties = isSchema(node.properties) ? node.properties : {};
      for (const name of node.required ?? []) {
        if (item[name] === undefined || !Object.hasOwn(item, name)) problems.push(`${where}.${name}: required, missing`);
      }
      const extra = node.additionalProperties;
      for (const [key, element] of entries(item)) {
        if (Object.hasOwn(properties, key)) children.push([properties[key], element, `${where}.${key}`]);
        else if (isSchema(extra)) children.push([extra, element, `${where}[${jsonDumps(key)}]`]);
      }
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
  return problems;
}
