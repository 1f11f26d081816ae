// load(): the repository's own build folder, read as the Python runtime reads it.
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { InputTypeError, load, MissingInputsError, RenderError, renderArtifact } from "../index.js";

const BUILD = new URL("../../build/", import.meta.url);

test("renders a prompt of the build folder, from a path or a URL", () => {
  const values = { customer_name: "Ann", product: "Acme", question: "Why?" };
  const rendered = load(BUILD).render("support/chat", values);
  assert.equal(rendered.messages.at(-1).content, "Hi, this is Ann. Why?");
  assert.equal(rendered.asShape("openai").model, "gpt-4o-mini");
  assert.deepEqual(load(BUILD.pathname).render("support/chat", values).messages, rendered.messages);
  assert.ok(load(BUILD).names().includes("helpdesk/agent"));
});

test("errors name what is wrong", () => {
  const runtime = load(BUILD);
  assert.throws(() => runtime.render("support/chat", {}), MissingInputsError);
  assert.throws(() => runtime.render("support/chta"), /no prompt `support\/chta` in .*did you mean `support\/chat`\?/);
  assert.throws(() => runtime.render("agents/planner", {}), /python renderer .*only the Python runtime/);
  assert.throws(() => load("/nonexistent").names(), /no manifest.json in `\/nonexistent`: run `promptc build` first/);
  const rendered = runtime.render("support/chat", { customer_name: "A", product: "B", question: "C" });
  assert.throws(() => rendered.asShape("cohere"), (e) => e instanceof RenderError && /unknown shape `cohere`/.test(e.message));
  assert.ok(InputTypeError.prototype instanceof RenderError);
});

test("an artifact changed after the build is refused", () => {
  const copy = mkdtempSync(join(tmpdir(), "promptc-"));
  cpSync(BUILD, copy, { recursive: true });
  const file = join(copy, "support", "chat.json");
  writeFileSync(file, readFileSync(file, "utf8").replace("support assistant", "evil assistant"));
  assert.throws(() => load(copy).artifact("support/chat"), /`chat.json` does not match manifest.json/);
});

test("a placeholder path never reads a name the attribute rule refuses, from a class instance either", () => {
  // The proto vector's artifact (tests/vectors/proto.json), its text rewritten to the
  // JavaScript form of the exploit: any object's `constructor` is its class, whose static fields
  // are the application's own. The build refuses such a path (E506); this runtime refuses it too.
  const vector = JSON.parse(readFileSync(new URL("../../tests/vectors/proto.json", import.meta.url), "utf8"));
  class Settings {
    static API_KEY = "sk-secret";
  }
  const values = { d: { k: "v" }, e: { ok: "y" }, a: new Settings() };
  for (const path of ["a.constructor.API_KEY", "a.constructor", "e.__proto__", "a.prototype", "a.__defineGetter__"]) {
    const artifact = structuredClone(vector.artifact);
    artifact.input_schema = { type: "object", properties: {}, required: ["d", "e", "a"] };
    const block = artifact.messages[0].blocks[0];
    artifact.messages[0].content = block.text = block.sections[0].text = `\${e.ok} \${${path}}`;
    const segment = path.split(".")[1];
    assert.throws(
      () => renderArtifact(artifact, values),
      (e) => e instanceof RenderError && e.message.includes(`\`\${${path}}\` reads \`${segment}\``) && !e.message.includes("sk-"),
      path,
    );
  }
});
