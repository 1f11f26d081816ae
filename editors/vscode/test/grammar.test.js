// The grammar against snapshot files, tokenised by the real vscode-textmate + vscode-oniguruma.
//
//   node --test test/                     compare with the committed snapshots
//   UPDATE_SNAPSHOTS=1 node --test test/  rewrite them (review the diff before committing)
//
// Snapshots: test/fixtures/NAME.prompt → test/fixtures/NAME.snap (every construct), and each
// example under the repository's prompts_src/ → test/examples/PATH.snap.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const { tokenize, snapshot, ROOT } = require("./tokenize.js");

const UPDATE = process.env.UPDATE_SNAPSHOTS === "1";
const FIXTURES = path.join(ROOT, "test", "fixtures");
const EXAMPLES_OUT = path.join(ROOT, "test", "examples");
const PROMPTS_SRC = path.resolve(ROOT, "..", "..", "prompts_src");

function walk(dir) {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

function cases() {
  const fixtures = walk(FIXTURES)
    .filter((f) => f.endsWith(".prompt"))
    .map((f) => ({ source: f, snap: f.replace(/\.prompt$/, ".snap") }));
  const examples = walk(PROMPTS_SRC)
    .filter((f) => f.endsWith(".prompt"))
    .map((f) => ({ source: f, snap: path.join(EXAMPLES_OUT, path.relative(PROMPTS_SRC, f).replace(/\.prompt$/, ".snap")) }));
  return [...fixtures, ...examples];
}

for (const { source, snap } of cases()) {
  test(`snapshot ${path.relative(path.resolve(ROOT, "..", ".."), source)}`, async () => {
    const actual = snapshot(await tokenize(fs.readFileSync(source, "utf8")));
    if (UPDATE) {
      fs.mkdirSync(path.dirname(snap), { recursive: true });
      fs.writeFileSync(snap, actual);
      return;
    }
    assert.ok(fs.existsSync(snap), `no snapshot ${path.relative(ROOT, snap)}: run UPDATE_SNAPSHOTS=1 node --test test/`);
    assert.equal(actual, fs.readFileSync(snap, "utf8"), `${path.relative(ROOT, snap)} differs: run UPDATE_SNAPSHOTS=1 node --test test/ and review`);
  });
}

test("every snapshot belongs to a source", () => {
  const wanted = new Set(cases().map((c) => c.snap));
  const stale = [...walk(FIXTURES), ...(fs.existsSync(EXAMPLES_OUT) ? walk(EXAMPLES_OUT) : [])]
    .filter((f) => f.endsWith(".snap") && !wanted.has(f));
  if (UPDATE) stale.forEach((f) => fs.unlinkSync(f));
  else assert.deepEqual(stale, []);
});

/** The scopes of the first token of `line` whose text is `text` (the root scope left out). */
async function scopesOf(source, line, text) {
  const lines = await tokenize(source);
  const found = lines[line].tokens.find((t) => t.text === text);
  assert.ok(found, `no token ${JSON.stringify(text)} on line ${line}: ${JSON.stringify(lines[line].tokens)}`);
  return found.scopes;
}

// What each construct is, stated once by hand (the snapshots then pin every token).
const CASES = [
  ["full-line comment", "/// note\n", 0, " note", "comment.line.triple-slash.prompt"],
  ["inline comment", "text /// note\n", 0, "///", "punctuation.definition.comment.prompt"],
  ["`///` glued to text is text", "a///b\n", 0, "a///b", null],
  ["a URL is text", "see file:///etc/hosts\n", 0, "see file:///etc/hosts", null],
  ["`/// http://` is a comment", "/// http://x\n", 0, " http://x", "comment.line.triple-slash.prompt"],
  ["escaped comment marker", "a \\/// b\n", 0, "\\///", "constant.character.escape.prompt"],
  ["reserved directive key", "/// input: q\n", 0, "input", "keyword.other.directive.prompt"],
  ["declared input", "/// input: q: str\n", 0, "q", "variable.parameter.input.prompt"],
  ["input type", "/// input: q: list[str]\n", 0, "list", "support.type.prompt"],
  ["section name", "/// section: rules stable\n", 0, "rules", "entity.name.section.prompt"],
  ["section boundary", "/// section: rules stable\n", 0, "stable", "storage.modifier.boundary.prompt"],
  ["section target", "/// section: d dynamic user_context\n", 0, "user_context", "storage.modifier.target.prompt"],
  ["include path", "/// include: _identity\n", 0, "_identity", "string.unquoted.path.prompt"],
  ["tools path", "/// tools: a.json, b.json\n", 0, "b.json", "string.unquoted.path.prompt"],
  ["param key", "/// param: temperature=0.2\n", 0, "temperature", "variable.other.property.prompt"],
  ["param number", "/// param: temperature=0.2\n", 0, "0.2", "constant.numeric.prompt"],
  ["cache ttl", "/// cache_ttl: 5m\n", 0, "5m", "constant.other.ttl.prompt"],
  ["bad cache ttl", "/// cache_ttl: 5h\n", 0, "5h", "invalid.illegal.ttl.prompt"],
  ["generic metadata key", "/// owner: me\n", 0, "owner", "variable.other.metadata.prompt"],
  ["uppercase key is a comment", "/// Section: x\n", 0, " Section: x", "comment.line.triple-slash.prompt"],
  ["inline comment on a directive", "/// tag: a /// why\n", 0, " why", "comment.line.triple-slash.prompt"],
  ["separator role", "----- user -----\n", 0, "user", "entity.name.tag.role.prompt"],
  ["separator role, any case", "----- USER -----\n", 0, "USER", "entity.name.tag.role.prompt"],
  ["unknown role", "----- tool -----\n", 0, "tool", "invalid.illegal.role.prompt"],
  ["comment after a separator", "----- user ----- /// q\n", 0, " q", "comment.line.triple-slash.prompt"],
  ["indented separator is text", "----- user -----\n ----- user -----\n", 1, " ----- user -----", null],
  ["header line before the first separator", "# header\n----- user -----\n", 0, " header", "comment.line.number-sign.header.prompt"],
  ["`#` line in a message is text", "----- user -----\n# heading\n", 1, "# heading", null],
  ["placeholder", "${user.name}\n", 0, "user.name", "variable.other.placeholder.prompt"],
  ["bad placeholder", "${ x }\n", 0, " x ", "invalid.illegal.placeholder.prompt"],
  ["empty placeholder", "${}\n", 0, "${}", "invalid.illegal.placeholder.prompt"],
  ["unterminated placeholder", "${x\n", 0, "${", "invalid.illegal.unterminated.prompt"],
  ["escaped opener", "\\{{ x }}\n", 0, "\\{{", "constant.character.escape.prompt"],
  ["expression block", "{{ x }}\n", 0, "{{", "punctuation.section.embedded.begin.prompt"],
  ["Python in a block", "{{ len(x) }}\n", 0, "len", "support.function.builtin.python"],
  ["Python in a statement block", "{# y = 1 #}\n", 0, "=", "keyword.operator.assignment.python"],
  ["left trim", "{{- x }}\n", 0, "-", "keyword.operator.trim.prompt"],
  ["structure tag", "{% for x in y %}\n", 0, "for", "keyword.control.flow.prompt"],
  ["Python after the tag", "{% for x in y %}\n", 0, "in", "keyword.operator.logical.python"],
  ["Jinja tag", "{% set x = 1 %}\n", 0, "set", "invalid.illegal.tag.prompt"],
  ["unterminated tag", "{% if x\n", 0, "{%", "invalid.illegal.unterminated.prompt"],
  ["multi-line block", "{#\nx = 1\n#}\n", 1, "=", "keyword.operator.assignment.python"],
  ["a separator cuts an open block", "{{ x\n----- user -----\n", 1, "user", "entity.name.tag.role.prompt"],
  ["comments are not read in a block", "{{ x /// y }}\n", 0, "//", "keyword.operator.arithmetic.python"],
  ["allow comment", "Date 2024-05-06. /// promptc: allow W706\n", 0, "W706", "constant.other.diagnostic-code.prompt"],
];

for (const [what, source, line, text, scope] of CASES) {
  test(`scope: ${what}`, async () => {
    const scopes = await scopesOf(source, line, text);
    if (scope === null) assert.deepEqual(scopes, [], `${JSON.stringify(text)} should be plain text, got ${scopes}`);
    else assert.ok(scopes.some((s) => s === scope || s.startsWith(scope + ".")), `${JSON.stringify(text)}: ${scopes} lacks ${scope}`);
  });
}
