// A long-running helper for tests/test_request_model_property.py: reads one JSON request per line
// on stdin — {"artifact": <the artifact file's text>, "values": {...}, "shape": …, "model": …,
// "options": null or {"caching": …, "previous_message_id": …} (Python's names)} —
// renders it with promptc-runtime and writes one JSON line back: {"body": <rendered.body(shape)>}
// or {"error": <message>}. The artifact is read from its text, as `load()` reads a build.
import { createInterface } from "node:readline";

import { readArtifact, renderArtifact } from "../runtime-js/index.js";

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line) continue;
  const job = JSON.parse(line);
  let answer;
  try {
    const rendered = renderArtifact(readArtifact(job.artifact), job.values);
    const options = { model: job.model };
    if (job.options?.caching !== undefined) options.caching = job.options.caching;
    if (job.options && "previous_message_id" in job.options) options.previousMessageId = job.options.previous_message_id;
    answer = { body: rendered.body(job.shape, options) };
  } catch (error) {
    answer = { error: `${error.name}: ${error.message}` };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}
