// Python's text of a value, for the values JSON can hold: what `str(value)` and
// `json.dumps(value, ensure_ascii=False)` print in CPython, so that `${x}` renders and error
// messages read byte for byte as the Python runtime's (`promptc.runtime`).
//
// JavaScript has one number type: an integral number prints as a Python int (`3`), any other as
// Python's float repr (`0.1`, `1e-05`, `1.5e+16`). A float that Python holds as `3.0` is `3` here.
//
// Which characters `repr` escapes comes from one table, `promptc.facts.printable` (generated into
// ./printable.js), not from `\p{C}`: the engine's Unicode version is Node's ICU's, newer than the
// Python runtime's, and the body must not depend on which runtime renders it.

import { NON_PRINTABLE } from "./printable.js";

function hex(cp, width) {
  return cp.toString(16).padStart(width, "0");
}

/** Python's `repr(str)`, with the printable characters of `promptc.facts.printable`'s Unicode version. */
export function reprString(text) {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    if (ch === quote || ch === "\\") out += "\\" + ch;
    else if (ch === "\t") out += "\\t";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (cp < 0x20 || cp === 0x7f) out += "\\x" + hex(cp, 2);
    else if (cp < 0x7f) out += ch;
    else if (NON_PRINTABLE.test(ch)) {
      out += cp <= 0xff ? "\\x" + hex(cp, 2) : cp <= 0xffff ? "\\u" + hex(cp, 4) : "\\U" + hex(cp, 8);
    } else out += ch;
  }
  return out + quote;
}

/** Python's `repr(float)` of a number that is not integral. */
export function reprFloat(x) {
  if (Number.isNaN(x)) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  // toExponential() gives the shortest digits that round-trip, as Python's repr does
  const [mantissa, exp] = x.toExponential().split("e");
  const e = Number(exp);
  const negative = mantissa.startsWith("-");
  const digits = mantissa.replace("-", "").replace(".", "");
  const sign = negative ? "-" : "";
  if (e < -4 || e >= 16) {
    const body = digits.length > 1 ? digits[0] + "." + digits.slice(1) : digits;
    return `${sign}${body}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
  }
  if (e < 0) return `${sign}0.${"0".repeat(-e - 1)}${digits}`;
  const whole = digits.slice(0, e + 1).padEnd(e + 1, "0");
  const frac = digits.slice(e + 1) || "0";
  return `${sign}${whole}.${frac}`;
}

function number(x) {
  if (typeof x === "bigint") return x.toString();
  return Number.isInteger(x) ? BigInt(x).toString() : reprFloat(x);
}

/** The Python type name of a value (as `type(value).__name__` says for the value JSON gives). */
export function typeName(value) {
  if (value === null || value === undefined) return "NoneType";
  if (typeof value === "boolean") return "bool";
  if (typeof value === "string") return "str";
  if (typeof value === "bigint") return "int";
  if (typeof value === "number") return Number.isInteger(value) ? "int" : "float";
  if (Array.isArray(value)) return "list";
  if (typeof value === "function") return "function";
  if (isPlainObject(value)) return "dict";
  return value.constructor?.name ?? "object";
}

export function isPlainObject(value) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Own entries with a value (an `undefined` value counts as no key, as JSON has it). */
export function entries(object) {
  return Object.entries(object).filter(([, v]) => v !== undefined);
}

/** Python's `repr(value)`; iterative, so any depth works. */
export function repr(value) {
  return write(value, (item) => (typeof item === "string" ? reprString(item) : null), "'", ": ");
}

/** Python's `str(value)`. */
export function str(value) {
  return typeof value === "string" ? value : repr(value);
}

/** Python's `json.dumps(value, ensure_ascii=False)`; a value JSON cannot hold is `"<type>"`. */
export function jsonDumps(value) {
  return write(value, (item) => (typeof item === "string" ? jsonString(item) : null), '"', ": ", true);
}

function jsonString(text) {
  let out = '"';
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (cp < 0x20) out += "\\u" + hex(cp, 4);
    else out += ch;
  }
  return out + '"';
}

function write(root, stringOf, _quote, colon, json = false) {
  const out = [];
  // a stack of pending writes: values, or literal text
  const stack = [{ value: root }];
  while (stack.length) {
    const item = stack.pop();
    if ("text" in item) {
      out.push(item.text);
      continue;
    }
    const value = item.value;
    const asString = stringOf(value);
    if (asString !== null) out.push(asString);
    else if (value === null || value === undefined) out.push(json ? "null" : "None");
    else if (typeof value === "boolean") out.push(json ? String(value) : value ? "True" : "False");
    else if (typeof value === "number" || typeof value === "bigint") {
      out.push(json && !Number.isFinite(value) && typeof value === "number" ? jsonSpecial(value) : number(value));
    } else if (Array.isArray(value)) {
      const parts = [{ text: "[" }];
      value.forEach((element, i) => {
        if (i) parts.push({ text: ", " });
        parts.push({ value: element });
      });
      parts.push({ text: "]" });
      for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]);
    } else if (isPlainObject(value)) {
      const parts = [{ text: "{" }];
      entries(value).forEach(([key, element], i) => {
        if (i) parts.push({ text: ", " });
        parts.push({ text: stringOf(key) + colon }, { value: element });
      });
      parts.push({ text: "}" });
      for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]);
    } else if (json) out.push(jsonString(`<${typeName(value)}>`));
    else out.push(String(value));
  }
  return out.join("");
}

function jsonSpecial(x) {
  return Number.isNaN(x) ? "NaN" : x > 0 ? "Infinity" : "-Infinity";
}

/** The number of code points (Python's `len(str)`). */
export function codePoints(text) {
  return Array.from(text);
}
