// JSON that keeps what Python keeps: the order of every object's keys as written, and every
// number as Python reads and writes it. JavaScript's own JSON cannot: an object puts integer-like
// keys first (`zeta, 10, 2` becomes `2, 10, zeta`), and a number is one double (`-0.0`, `100.0`
// and integers above 2^53 do not survive, `1e16` prints as `10000000000000000`).
//
// `parse(text)` reads JSON into a lossless tree: objects are `Map`s (insertion order is the written
// order, duplicate keys keep the first place and the last value, as a Python dict does), numbers
// are `JsonNumber`s holding the lexeme. `dumps(value, options)` writes a tree (or plain values)
// exactly as CPython's `json.dumps` writes the same data: the same escapes (`ensureAscii` as
// `ensure_ascii`), the same separators, an integer's digits, a float's `repr`. `plain(tree)` is the
// tree as ordinary JavaScript values, for code (and SDKs) that take those. Both walk iteratively:
// nesting depth is bounded by memory only.

import { reprFloat } from "./python.js";

/** A JSON number as written: an integer when the lexeme has no fraction or exponent (as Python's
 * `json` decides), else a float. */
export class JsonNumber {
  constructor(lexeme) {
    this.lexeme = lexeme;
    this.integer = !/[.eE]/.test(lexeme);
    Object.freeze(this);
  }

  /** The text CPython's `json.dumps` writes for the number Python read from the lexeme. */
  python() {
    if (this.integer) return this.lexeme === "-0" ? "0" : this.lexeme;
    return pythonFloat(Number(this.lexeme));
  }

  valueOf() {
    return Number(this.lexeme);
  }

  toJSON() {
    return Number(this.lexeme);
  }
}

/** Python's `repr(float(x))`, as `json.dumps` writes a float. */
export function pythonFloat(x, allowNan = false) {
  if (!Number.isFinite(x)) {
    if (!allowNan) throw new RangeError(`Out of range float values are not JSON compliant: ${x}`);
    return Number.isNaN(x) ? "NaN" : x > 0 ? "Infinity" : "-Infinity";
  }
  if (Object.is(x, -0)) return "-0.0";
  return reprFloat(x);
}

export class JsonSyntaxError extends SyntaxError {}

const WS = /[ \t\n\r]*/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const STRING_RUN = /[^"\\\u0000-\u001f]*/y;
const ESCAPES = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

/** Read JSON `text` into the lossless tree. */
export function parse(text) {
  let pos = 0;
  const fail = (what) => {
    throw new JsonSyntaxError(`${what} at position ${pos}`);
  };
  const skip = () => {
    WS.lastIndex = pos;
    WS.exec(text);
    pos = WS.lastIndex;
  };
  const string = () => {
    pos += 1; // the opening quote
    let out = "";
    for (;;) {
      STRING_RUN.lastIndex = pos;
      const run = STRING_RUN.exec(text)[0];
      out += run;
      pos += run.length;
      const ch = text[pos];
      if (ch === '"') {
        pos += 1;
        return out;
      }
      if (ch !== "\\") fail(ch === undefined ? "Unterminated string" : "Invalid control character");
      const esc = text[pos + 1];
      if (esc === "u") {
        const hex = text.slice(pos + 2, pos + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail("Invalid \\uXXXX escape");
        out += String.fromCharCode(parseInt(hex, 16));
        pos += 6;
      } else if (Object.hasOwn(ESCAPES, esc)) {
        out += ESCAPES[esc];
        pos += 2;
      } else fail("Invalid \\escape");
    }
  };
  // the containers being filled, innermost last; an object's entry holds the key awaiting its value
  const stack = [];
  let result;
  const put = (value) => {
    if (!stack.length) {
      result = value;
      return;
    }
    const top = stack[stack.length - 1];
    // Map.set on a key already there keeps its place and takes the new value: a dict's rule
    if (top.container instanceof Map) top.container.set(top.key, value);
    else top.container.push(value);
  };
  const key = (top) => {
    skip();
    if (text[pos] !== '"') fail("Expecting property name enclosed in double quotes");
    top.key = string();
    skip();
    if (text[pos] !== ":") fail("Expecting ':' delimiter");
    pos += 1;
  };
  let expectValue = true;
  for (;;) {
    if (expectValue) {
      skip();
      const ch = text[pos];
      if (ch === "{" || ch === "[") {
        pos += 1;
        const top = { container: ch === "{" ? new Map() : [], key: null };
        stack.push(top);
        skip();
        if (text[pos] === (ch === "{" ? "}" : "]")) {
          pos += 1;
          put(stack.pop().container);
          expectValue = false;
        } else if (ch === "{") key(top);
        continue;
      }
      if (ch === '"') put(string());
      else if (text.startsWith("true", pos)) {
        pos += 4;
        put(true);
      } else if (text.startsWith("false", pos)) {
        pos += 5;
        put(false);
      } else if (text.startsWith("null", pos)) {
        pos += 4;
        put(null);
      } else {
        NUMBER.lastIndex = pos;
        const match = NUMBER.exec(text);
        if (!match) fail("Expecting value");
        pos += match[0].length;
        put(new JsonNumber(match[0]));
      }
      expectValue = false;
      continue;
    }
    if (!stack.length) break;
    skip();
    const top = stack[stack.length - 1];
    const isObject = top.container instanceof Map;
    if (text[pos] === ",") {
      pos += 1;
      if (isObject) key(top);
      expectValue = true;
    } else if (text[pos] === (isObject ? "}" : "]")) {
      pos += 1;
      put(stack.pop().container);
    } else fail("Expecting ',' delimiter");
  }
  skip();
  if (pos !== text.length) fail("Extra data");
  return result;
}

/** The tree as ordinary JavaScript values: objects for Maps (integer-like keys then go first, as
 * JavaScript orders them), numbers for JsonNumbers. */
export function plain(tree) {
  const root = [undefined];
  const stack = [[root, 0, tree]];
  while (stack.length) {
    const [parent, slot, item] = stack.pop();
    if (item instanceof JsonNumber) parent[slot] = Number(item.lexeme);
    else if (item instanceof Map) {
      const out = {};
      for (const [k, v] of item) {
        out[k] = undefined;
        stack.push([out, k, v]);
      }
      parent[slot] = out;
    } else if (Array.isArray(item)) {
      const out = new Array(item.length);
      item.forEach((v, i) => stack.push([out, i, v]));
      parent[slot] = out;
    } else if (item !== null && typeof item === "object") {
      const out = {};
      for (const [k, v] of Object.entries(item)) {
        out[k] = undefined;
        stack.push([out, k, v]);
      }
      parent[slot] = out;
    } else parent[slot] = item;
  }
  return root[0];
}

/** Plain JavaScript values as a tree, for an artifact given already decoded: what can no longer be
 * told is read as JavaScript has it (the key order it iterates, an integral number as an integer). */
export function lossless(value) {
  const root = [undefined];
  const stack = [[root, 0, value]];
  while (stack.length) {
    const [parent, slot, item] = stack.pop();
    if (typeof item === "number") {
      parent[slot] = new JsonNumber(Number.isInteger(item) ? BigInt(item).toString() : String(item));
    } else if (typeof item === "bigint") parent[slot] = new JsonNumber(item.toString());
    else if (item instanceof JsonNumber || item === null || typeof item !== "object") parent[slot] = item;
    else if (Array.isArray(item)) {
      const out = new Array(item.length);
      item.forEach((v, i) => stack.push([out, i, v]));
      parent[slot] = out;
    } else {
      const out = new Map();
      const entries = item instanceof Map ? [...item] : Object.entries(item);
      for (const [k, v] of entries) {
        out.set(k, undefined);
        stack.push([out, k, v]);
      }
      parent[slot] = out;
    }
  }
  return root[0];
}

const hex4 = (code) => "\\u" + code.toString(16).padStart(4, "0");
const SHORT = { '"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f" };

/** A string as `json.dumps` writes it (`ensureAscii`: every character outside space..tilde as
 * `\uXXXX`, UTF-16 code units, lowercase hex, as CPython does). */
export function dumpString(text, ensureAscii = false) {
  const pattern = ensureAscii ? /["\\\u0000-\u001f\u007f-\uffff]/g : /["\\\u0000-\u001f]/g;
  return (
    '"' +
    text.replace(pattern, (ch) => {
      if (Object.hasOwn(SHORT, ch)) return SHORT[ch];
      return hex4(ch.charCodeAt(0));
    }) +
    '"'
  );
}

/** `value` (a tree, or plain values) as CPython's `json.dumps(value, ensure_ascii=…,
 * separators=…, allow_nan=…)` writes the same data. */
export function dumps(value, { ensureAscii = false, separators = [",", ":"], allowNan = false } = {}) {
  const [itemSep, keySep] = separators;
  const out = [];
  // work items: a value to write, or a literal string to emit
  const stack = [{ value }];
  while (stack.length) {
    const work = stack.pop();
    if (Object.hasOwn(work, "text")) {
      out.push(work.text);
      continue;
    }
    const item = work.value;
    if (item === null || item === undefined) out.push("null");
    else if (item === true) out.push("true");
    else if (item === false) out.push("false");
    else if (typeof item === "string") out.push(dumpString(item, ensureAscii));
    else if (item instanceof JsonNumber) out.push(item.integer ? item.python() : pythonFloat(Number(item.lexeme), allowNan));
    else if (typeof item === "number") {
      out.push(Number.isInteger(item) && !Object.is(item, -0) ? BigInt(item).toString() : pythonFloat(item, allowNan));
    } else if (typeof item === "bigint") out.push(item.toString());
    else if (Array.isArray(item)) {
      if (!item.length) {
        out.push("[]");
        continue;
      }
      out.push("[");
      stack.push({ text: "]" });
      for (let i = item.length - 1; i >= 0; i--) {
        stack.push({ value: item[i] });
        if (i) stack.push({ text: itemSep });
      }
    } else {
      const entries = item instanceof Map ? [...item] : Object.entries(item).filter(([, v]) => v !== undefined);
      if (!entries.length) {
        out.push("{}");
        continue;
      }
      out.push("{");
      stack.push({ text: "}" });
      for (let i = entries.length - 1; i >= 0; i--) {
        stack.push({ value: entries[i][1] });
        stack.push({ text: dumpString(String(entries[i][0]), ensureAscii) + keySep });
        if (i) stack.push({ text: itemSep });
      }
    }
  }
  return out.join("");
}
