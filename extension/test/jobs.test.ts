import assert from "node:assert/strict";
import { test } from "node:test";

import { LONG_JOB_MS, LongJobs, parseJobs, statusView } from "../src/jobs";

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

test("a job that runs long gets a notification until it ends; a short one never does", () => {
  const events: string[] = [];
  const timers: Array<() => void> = [];
  const jobs = new LongJobs(
    {
      show: (job) => events.push(`show ${job.id} ${job.percentage}`),
      update: (job) => events.push(`update ${job.id} ${job.percentage}`),
      end: (id) => events.push(`end ${id}`),
    },
    (callback, ms) => {
      assert.equal(ms, LONG_JOB_MS);
      timers.push(callback);
    },
  );
  const job = (id: string, percentage: number | null) => ({ id, title: "Evaluate assertions", prompt: "p", message: null, percentage });
  jobs.changed([job("short", 0), job("long", 0)]);
  jobs.changed([job("long", 10)]); // the short one ended before its timer
  for (const fire of timers) {
    fire();
  }
  jobs.changed([job("long", 60)]);
  jobs.changed([]);
  assert.deepEqual(events, ["show long 10", "update long 60", "end long"]);
});
