import assert from "node:assert/strict";
import { test } from "node:test";

import { parseJobs, statusView } from "../src/jobs";

const evaluate = { id: "a", title: "Evaluate assertions", prompt: "blurb.prompt", message: "running", percentage: 5 };

test("job status params are checked, malformed jobs dropped", () => {
  assert.deepEqual(parseJobs({ jobs: [evaluate, { id: 3 }, null, { id: "b", title: "Sample reliability" }] }), [
    evaluate,
    { id: "b", title: "Sample reliability", prompt: "", message: null, percentage: null },
  ]);
  assert.deepEqual(parseJobs(null), []);
  assert.deepEqual(parseJobs({ jobs: "x" }), []);
});

test("the status bar: idle, one job, several, and a stopped server", () => {
  assert.equal(statusView("running", []).text, "$(check) SPADE");
  const one = statusView("running", [evaluate]);
  assert.equal(one.text, "$(sync~spin) SPADE: Evaluate assertions 5%");
  assert.equal(one.tooltip, "SPADE background jobs:\n- Evaluate assertions (blurb.prompt) 5%: running");
  const two = statusView("running", [evaluate, { ...evaluate, id: "b", title: "Select assertions", percentage: null }]);
  assert.equal(two.text, "$(sync~spin) SPADE: Evaluate assertions 5% +1");
  assert.equal(statusView("stopped", [evaluate]).command, "spade-lsp.restart");
  assert.equal(statusView("unavailable", []).text, "$(error) SPADE");
  assert.equal(statusView("starting", []).command, "spade-lsp.showLog");
});
