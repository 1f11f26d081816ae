// The shared golden vectors (tests/vectors/*.json, written from the Python runtime by
// tests/js_vectors.py): this runtime renders each case to the same bytes, in every shape, or
// fails with the same error and message. The vector files are read losslessly (`parseJson`), so
// the artifact's tools and params keep their key order and number spelling, as the artifact file
// has them; `body(shape)` must then be the very string the Python runtime wrote.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";

import { adoptArtifact, parseJson, parseOutput, renderArtifact } from "../index.js";

const folder = new URL("../../tests/vectors/", import.meta.url);
const files = readdirSync(folder).filter((f) => f.endsWith(".json")).sort();

test("there are vectors", () => assert.ok(files.length >= 5, files.join(", ")));

for (const file of files) {
  const text = readFileSync(new URL(file, folder), "utf8");
  const vector = JSON.parse(text);
  const artifact = adoptArtifact(parseJson(text).get("artifact"));
  vector.cases.forEach((expected, i) => {
    test(`${vector.name} #${i}`, () => {
      let rendered;
      try {
        rendered = renderArtifact(artifact, expected.values);
      } catch (error) {
        if (!expected.error) throw error;
        assert.deepEqual({ type: error.name, message: error.message }, expected.error);
        return;
      }
      assert.equal(expected.error, undefined, "Python raised; JavaScript rendered");
      assert.equal(JSON.stringify(rendered), JSON.stringify(expected.rendered));
      for (const [shape, outcome] of Object.entries(expected.shapes)) {
        let request;
        try {
          request = rendered.asShape(shape, { model: outcome.model });
        } catch (error) {
          assert.ok(outcome.error, `${shape}: ${error.message}`);
          assert.deepEqual({ type: error.name, message: error.message }, outcome.error, shape);
          continue;
        }
        assert.equal(outcome.error, undefined, `${shape}: Python raised; JavaScript built a request`);
        assert.equal(JSON.stringify(request), JSON.stringify(outcome.request), shape);
        if (outcome.body !== undefined) {
          assert.equal(rendered.body(shape, { model: outcome.model }), outcome.body, `${shape}: body bytes`);
        }
      }
    });
  });
  (vector.parses ?? []).forEach((expected, i) => {
    test(`${vector.name} parse #${i}`, () => {
      let value;
      try {
        value = parseOutput(artifact, expected.response);
      } catch (error) {
        if (!expected.error) throw error;
        assert.deepEqual({ type: error.name, message: error.message }, expected.error);
        return;
      }
      assert.equal(expected.error, undefined, "Python raised; JavaScript parsed");
      assert.equal(JSON.stringify(value), JSON.stringify(expected.value));
    });
  });
}
