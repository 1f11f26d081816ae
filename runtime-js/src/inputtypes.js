// Checking values against a contract (a prompt's `input_schema`, an output contract): a port of
// `promptc.runtime.inputtypes` (`check_value`, `describe`, `json_text`), with JSON Schema 2020-12's
// meaning for every keyword the build lets through, the same messages, in the same order.
// The build has already resolved every `$ref` and rewritten older drafts' spellings, so this
// reads one dialect. Iterative over values.

import { codePoints, entries, isPlainObject, jsonDumps } from "./python.js";

const SCALARS = { string: "str", integer: "int", number: "float", boolean: "bool", null: "None" };
const JSON_TYPES = { string: "a string", integer: "an integer", number: "a number", boolean: "true or false" };
/** As `inputtypes.MAX_SCHEMA_DEPTH`: `describe` says "any" below it. */
const MAX_SCHEMA_DEPTH = 64;

const isSchema = (node) => node !== null && typeof node === "object" && !Array.isArray(node);
const has = (object, key) => isSchema(object) && Object.hasOwn(object, key);

/** JSON text as both runtimes print it in messages (`inputtypes.json_text`). */
export const jsonText = jsonDumps;

/** A schema written back in promptc's type language (`list[str]`, `int | None`). */
export function describe(schema) {
  return describeAt(schema, 0);
}

function describeAt(schema, depth) {
  if (schema === true) return "any";
  if (schema === false) return "nothing";
  if (!isSchema(schema) || depth > MAX_SCHEMA_DEPTH) return "any";
  for (const word of ["anyOf", "oneOf"]) {
    if (Array.isArray(schema[word])) return schema[word].map((o) => describeAt(o, depth + 1)).join(" | ");
  }
  if (has(schema, "const")) return jsonDumps(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map(jsonDumps).join(" | ");
  const kind = schema.type;
  if (Array.isArray(kind)) return kind.map((k) => describeAt({ ...schema, type: k }, depth + 1)).join(" | ");
  if (kind === undefined && Array.isArray(schema.allOf) && schema.allOf.length) {
    return schema.allOf.map((o) => describeAt(o, depth + 1)).join(" & ");
  }
  if (kind === "array") {
    return `list[${has(schema, "prefixItems") ? "any" : describeAt(has(schema, "items") ? schema.items : {}, depth + 1)}]`;
  }
  if (kind === "object" && isSchema(schema.additionalProperties) && !has(schema, "properties")) {
    return `dict[str, ${describeAt(schema.additionalProperties, depth + 1)}]`;
  }
  if (typeof kind !== "string") return "any";
  return Object.hasOwn(SCALARS, kind) ? SCALARS[kind] : kind === "object" ? "object" : "any";
}

/** JSON equality, as Python's `_same`: `1` is `1.0`, but `true` is not `1`. */
function same(expected, value) {
  const stack = [[expected, value]];
  while (stack.length) {
    const [a, b] = stack.pop();
    if (typeof a === "boolean" || typeof b === "boolean") {
      if (a !== b) return false;
    } else if (isNumber(a) && isNumber(b)) {
      if (a != b) return false; // a number and a bigint compare by value
    } else if (Array.isArray(a)) {
      if (!Array.isArray(b) || a.length !== b.length) return false;
      a.forEach((e, i) => stack.push([e, b[i]]));
    } else if (isPlainObject(a)) {
      if (!isPlainObject(b)) return false;
      const ka = entries(a).map(([k]) => k);
      const kb = entries(b).map(([k]) => k);
      if (ka.length !== kb.length || !ka.every((k) => Object.hasOwn(b, k) && b[k] !== undefined)) return false;
      for (const k of ka) stack.push([a[k], b[k]]);
    } else if (a === null) {
      if (b !== null && b !== undefined) return false;
    } else if (!(typeof a === typeof b && a === b)) return false;
  }
  return true;
}

const isNumber = (v) => typeof v === "number" || typeof v === "bigint";

function typeOk(kind, value) {
  switch (kind) {
    case "string":
      return typeof value === "string";
    case "integer":
      return (typeof value === "number" && Number.isInteger(value)) || typeof value === "bigint";
    case "number":
      return isNumber(value);
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

const integral = (v) => typeof v === "bigint" || (typeof v === "number" && Number.isInteger(v));

function multiple(value, factor) {
  if (integral(value) && integral(factor)) {
    return typeof value === "bigint" || typeof factor === "bigint" ? BigInt(value) % BigInt(factor) === 0n : value % factor === 0;
  }
  const quotient = Number(value) / Number(factor);
  return Number.isFinite(quotient) && Number.isInteger(quotient);
}

/** A key equal for JSON-equal values (`uniqueItems`); any other object is unique. */
let unique = 0;
function canonical(value) {
  const out = [];
  const stack = [value];
  while (stack.length) {
    const item = stack.pop();
    if (typeof item === "string" && item.startsWith("\u0000")) {
      out.push(item.slice(1));
    } else if (Array.isArray(item)) {
      const parts = ["\u0000["];
      item.forEach((e, i) => parts.push(...(i ? ["\u0000,"] : []), e === undefined ? null : e));
      parts.push("\u0000]");
      for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]);
    } else if (isPlainObject(item)) {
      const parts = ["\u0000{"];
      entries(item)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .forEach(([k, v], i) => parts.push(...(i ? ["\u0000,"] : []), "\u0000" + JSON.stringify(k) + ":", v));
      parts.push("\u0000}");
      for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]);
    } else if (item === null || item === undefined || typeof item === "boolean" || isNumber(item)) {
      out.push(jsonDumps(item ?? null));
    } else if (typeof item === "string") {
      out.push(JSON.stringify(item));
    } else {
      out.push(`<object ${unique++}>`);
    }
  }
  return out.join("");
}

/** Whether `value` passes `schema` (`checkValue` finds no problem). */
export function admits(schema, value) {
  return checkValue(schema, value, "value", 1).length === 0;
}

const present = (item, name) => Object.hasOwn(item, name) && item[name] !== undefined;

/** Every way `value` fails `schema`, as `path: expected …, got …` (depth-first, in order; at
 * most `limit` of them when given). */
export function checkValue(schema, value, path, limit = null) {
  const problems = [];
  const stack = [[schema, value, path]];
  while (stack.length) {
    if (limit !== null && problems.length >= limit) break;
    const [node, item, where] = stack.pop();
    if (node === true || (node !== false && !isSchema(node))) continue;
    if (node === false) {
      problems.push(`${where}: not allowed (the schema admits no value here)`);
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
    if (has(node, "const") && !same(node.const, item)) {
      problems.push(`${where}: expected ${describe({ const: node.const })}, got ${shown(item)}`);
      continue;
    }
    if (Array.isArray(node.enum) && !node.enum.some((option) => same(option, item))) {
      problems.push(`${where}: expected one of ${describe({ enum: node.enum })}, got ${shown(item)}`);
      continue;
    }
    if (typeof item === "string") {
      const length = codePoints(item).length;
      if (integral(node.minLength) && length < node.minLength) {
        problems.push(`${where}: expected at least ${jsonDumps(node.minLength)} characters, got ${length}`);
      }
      if (integral(node.maxLength) && length > node.maxLength) {
        problems.push(`${where}: expected at most ${jsonDumps(node.maxLength)} characters, got ${length}`);
      }
    } else if (isNumber(item)) {
      for (const [word, fails, sign] of [
        ["minimum", (b) => item < b, ">="],
        ["exclusiveMinimum", (b) => item <= b, ">"],
        ["maximum", (b) => item > b, "<="],
        ["exclusiveMaximum", (b) => item >= b, "<"],
      ]) {
        const bound = node[word];
        if (has(node, word) && isNumber(bound) && fails(bound)) {
          problems.push(`${where}: expected a number ${sign} ${jsonDumps(bound)}, got ${shown(item)}`);
        }
      }
      const factor = node.multipleOf;
      if (isNumber(factor) && factor > 0 && !multiple(item, factor)) {
        problems.push(`${where}: expected a multiple of ${jsonDumps(factor)}, got ${shown(item)}`);
      }
    } else if (Array.isArray(item)) {
      const count = item.length;
      if (integral(node.minItems) && count < node.minItems) {
        problems.push(`${where}: expected at least ${jsonDumps(node.minItems)} items, got ${count}`);
      }
      if (integral(node.maxItems) && count > node.maxItems) {
        problems.push(`${where}: expected at most ${jsonDumps(node.maxItems)} items, got ${count}`);
      }
      if (node.uniqueItems === true) {
        const first = new Map();
        item.forEach((element, i) => {
          const key = canonical(element);
          if (first.has(key)) problems.push(`${where}[${i}]: duplicate of ${where}[${first.get(key)}]`);
          else first.set(key, i);
        });
      }
      if (has(node, "contains")) {
        const matched = item.filter((element) => admits(node.contains, element)).length;
        const low = has(node, "minContains") ? node.minContains : 1;
        const high = node.maxContains;
        const what = describe(node.contains);
        if (integral(low) && matched < low) {
          problems.push(`${where}: expected at least ${jsonDumps(low)} items that are ${what}, got ${matched}`);
        }
        if (integral(high) && matched > high) {
          problems.push(`${where}: expected at most ${jsonDumps(high)} items that are ${what}, got ${matched}`);
        }
      }
    } else if (isPlainObject(item)) {
      for (const name of node.required ?? []) {
        if (!present(item, name)) problems.push(`${where}.${name}: required, missing`);
      }
      for (const [key, names] of Object.entries(isSchema(node.dependentRequired) ? node.dependentRequired : {})) {
        if (!present(item, key)) continue;
        for (const name of names) {
          if (!present(item, name)) problems.push(`${where}.${name}: required when ${where}.${key} is present, missing`);
        }
      }
      const count = entries(item).length;
      if (integral(node.minProperties) && count < node.minProperties) {
        problems.push(`${where}: expected at least ${jsonDumps(node.minProperties)} keys, got ${count}`);
      }
      if (integral(node.maxProperties) && count > node.maxProperties) {
        problems.push(`${where}: expected at most ${jsonDumps(node.maxProperties)} keys, got ${count}`);
      }
      if (has(node, "propertyNames")) {
        for (const [key] of entries(item)) {
          problems.push(...checkValue(node.propertyNames, key, `${where} key ${jsonDumps(String(key))}`));
        }
      }
    }
    const later = []; // checked after this node, in this order
    if (Array.isArray(node.anyOf) && !node.anyOf.some((option) => admits(option, item))) {
      problems.push(`${where}: expected ${describe({ anyOf: node.anyOf })}, got ${shown(item)}`);
    }
    if (Array.isArray(node.oneOf)) {
      const matched = node.oneOf.filter((option) => admits(option, item)).length;
      if (matched !== 1) {
        const what = describe({ oneOf: node.oneOf });
        problems.push(
          matched === 0
            ? `${where}: expected ${what}, got ${shown(item)}`
            : `${where}: expected exactly one of ${what}, got ${shown(item)}, which is ${matched} of them`,
        );
      }
    }
    if (has(node, "not") && admits(node.not, item)) {
      problems.push(`${where}: expected anything but ${describe(node.not)}, got ${shown(item)}`);
    }
    if (has(node, "if")) {
      const branch = admits(node.if, item) ? "then" : "else";
      if (has(node, branch)) later.push([node[branch], item, where]);
    }
    for (const sub of Array.isArray(node.allOf) ? node.allOf : []) later.push([sub, item, where]);
    if (Array.isArray(item)) {
      const prefix = Array.isArray(node.prefixItems) ? node.prefixItems : [];
      const rest = has(node, "items") ? node.items : true;
      item.forEach((element, i) => {
        const sub = i < prefix.length ? prefix[i] : rest;
        if (sub === false && i >= prefix.length) problems.push(`${where}[${i}]: not allowed (the schema lists its items)`);
        else if (sub !== true) later.push([sub, element, `${where}[${i}]`]);
      });
    } else if (isPlainObject(item)) {
      for (const [key, sub] of Object.entries(isSchema(node.dependentSchemas) ? node.dependentSchemas : {})) {
        if (present(item, key)) later.push([sub, item, where]);
      }
      const properties = isSchema(node.properties) ? node.properties : {};
      for (const name of Object.keys(properties)) {
        if (present(item, name)) later.push([properties[name], item[name], `${where}.${name}`]);
      }
      const extra = has(node, "additionalProperties") ? node.additionalProperties : true;
      if (extra !== true) {
        for (const [key, element] of entries(item)) {
          if (Object.hasOwn(properties, key)) continue;
          if (extra === false) problems.push(`${where}[${jsonDumps(String(key))}]: not allowed (the schema lists its keys)`);
          else later.push([extra, element, `${where}[${jsonDumps(String(key))}]`]);
        }
      }
    }
    for (let i = later.length - 1; i >= 0; i--) stack.push(later[i]);
  }
  return limit === null ? problems : problems.slice(0, limit);
}
