// load(): the repository's own build folder, read as the Python runtime reads it.
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { InputTypeError, load, MissingInputsError, RenderError } from "../index.js";

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
