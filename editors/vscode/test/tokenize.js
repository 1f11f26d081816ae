// Tokenise `.prompt` text with the real VS Code tokenizer (vscode-textmate on vscode-oniguruma),
// the extension's grammar, and a real Python grammar for the blocks' code.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

const ROOT = path.resolve(__dirname, "..");
const GRAMMARS = {
  "source.prompt": path.join(ROOT, "syntaxes", "prompt.tmLanguage.json"),
  "source.python": require.resolve("tm-grammars/grammars/python.json"),
};

let registry;

async function grammar() {
  if (!registry) {
    const wasm = fs.readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm"));
    const onigLib = oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength)).then(() => ({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (text) => new oniguruma.OnigString(text),
    }));
    registry = new vsctm.Registry({
      onigLib,
      loadGrammar: async (scopeName) => {
        const file = GRAMMARS[scopeName];
        if (!file) return null;
        return vsctm.parseRawGrammar(fs.readFileSync(file, "utf8"), file);
      },
    });
  }
  return registry.loadGrammar("source.prompt");
}

/** Every line of `text` as {line, tokens: [{text, scopes}]}, scopes without the root scope. */
async function tokenize(text) {
  const g = await grammar();
  let stack = vsctm.INITIAL;
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  return lines.map((line) => {
    const result = g.tokenizeLine(line, stack);
    stack = result.ruleStack;
    const tokens = result.tokens
      .map((t) => ({ text: line.slice(t.startIndex, t.endIndex), scopes: t.scopes.slice(1) }))
      .filter((t) => t.text !== "");
    return { line, tokens };
  });
}

/** The snapshot text: each source line, then one line per token with its scopes. */
function snapshot(lines) {
  const out = [];
  for (const { line, tokens } of lines) {
    out.push(`> ${line}`);
    for (const t of tokens) out.push(`  ${JSON.stringify(t.text)}  ${t.scopes.join(" ") || "-"}`);
  }
  return out.join("\n") + "\n";
}

module.exports = { tokenize, snapshot, ROOT };
