// Reading artifact text: a port of `promptc.runtime.template.scan` for what a placeholder-renderer
// artifact holds. Left to right, at each position the first that applies: a backslash before an
// opener (a literal opener), `${…}` up to the first `}` on the same line (a placeholder), `{{ … }}`
// up to the first `}}` and `{# … #}` up to the first `#}` across lines, `{% … %}` up to the first
// `%}` on the same line (blocks: only the Python runtime runs them). An opener with no closer is
// literal text. Linear time, like the original.

import { TEMPLATE_ESCAPES } from "./language.js";

// a backslash before an opener, or an opener: the openers as `promptc.facts.language` has them
const OPENER = TEMPLATE_ESCAPES.map((opener) => opener.replace(/[$\\{}#%]/g, "\\$&")).join("|");
const CANDIDATE = new RegExp(`\\\\(?=${OPENER})|${OPENER}`, "g");

/** The first occurrence of `needle` at or after `start`, for non-decreasing starts. */
function next(text, needle) {
  let at = -2;
  return (start) => {
    if (at >= start || at === -1) return at;
    at = text.indexOf(needle, start);
    return at;
  };
}

/** Tokens `{kind: "lit" | "ph" | "block", text}` of one section's text. */
export function scan(text) {
  const tokens = [];
  let literal = "";
  const flush = () => {
    if (literal) tokens.push({ kind: "lit", text: literal });
    literal = "";
  };
  const brace = next(text, "}");
  const newline = next(text, "\n");
  const closers = { "{": next(text, "}}"), "#": next(text, "#}"), "%": next(text, "%}") };
  const search = new RegExp(CANDIDATE.source, "g");
  let at = 0;
  let last = 0;
  for (;;) {
    search.lastIndex = at;
    const match = search.exec(text);
    if (match === null) break;
    const start = match.index;
    const first = text[start];
    let end;
    if (first === "\\") end = start + 3;
    else {
      const second = text[start + 1];
      const close = (first === "$" ? brace : closers[second])(start + 2);
      const nl = first === "$" || second === "%" ? newline(start + 2) : -1;
      if (close === -1 || (nl > -1 && nl < close)) {
        at = start + 1; // unterminated here: literal text, look again one character on
        continue;
      }
      end = close + (first === "$" ? 1 : 2);
    }
    if (start > last) literal += text.slice(last, start);
    at = last = end;
    if (first === "\\") {
      literal += text.slice(start + 1, end);
      continue;
    }
    flush();
    const raw = text.slice(start, end);
    tokens.push(first === "$" ? { kind: "ph", text: raw.slice(2, -1) } : { kind: "block", text: raw });
  }
  if (last < text.length) literal += text.slice(last);
  flush();
  return tokens;
}
