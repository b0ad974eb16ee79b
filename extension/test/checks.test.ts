import assert from "node:assert/strict";
import { test } from "node:test";

import { isSidecar, readChecks, readSampled } from "../src/checks";

const answer = {
  prompt: "/ws/blurb.prompt",
  sidecar: "/ws/blurb_assertions.py",
  sidecar_exists: true,
  syntax_error: null,
  tau: 0.25,
  run_id: 3,
  stale: true,
  checks: [
    { name: "assert_short", line: 4, outcome: { state: "passed", message: "catches 2 of 2 bad, fails 0 of 2 good" } },
    { name: "assert_tea", line: 9, outcome: { state: "failed", message: "fails 1 of 2 good examples ..." } },
    { name: "assert_later", line: 14, outcome: null },
    { name: "assert_odd", line: 20, outcome: { state: "exploded" } },
    { line: 30 },
  ],
};

test("the server's checks become one test per check, under its prompt, with the engine's verdicts", () => {
  const checks = readChecks(answer);
  assert.ok(checks);
  assert.equal(checks.id, "/ws/blurb.prompt");
  assert.equal(checks.label, "blurb.prompt");
  assert.equal(checks.stale, true);
  assert.equal(checks.problem, undefined);
  assert.deepEqual(
    checks.tests.map((t) => [t.id, t.line, t.state, t.message]),
    [
      ["/ws/blurb.prompt::assert_short", 4, "passed", "catches 2 of 2 bad, fails 0 of 2 good"],
      ["/ws/blurb.prompt::assert_tea", 9, "failed", "fails 1 of 2 good examples ..."],
      ["/ws/blurb.prompt::assert_later", 14, "unrun", "not evaluated yet: run it"],
      ["/ws/blurb.prompt::assert_odd", 20, "unrun", "not evaluated yet: run it"],
    ],
  );
});

test("a prompt whose checks cannot be read says why, in one line", () => {
  const broken = readChecks({ ...answer, checks: [], syntax_error: "invalid syntax (line 3)" });
  assert.equal(broken?.problem, "blurb_assertions.py does not parse: invalid syntax (line 3)");
  const none = readChecks({ ...answer, checks: [], sidecar_exists: false });
  assert.match(none?.problem ?? "", /^no checks yet: run “SPADE: Synthesize assertions”/);
  assert.equal(readChecks({ checks: [] }), undefined);
  assert.equal(readChecks("nonsense"), undefined);
});

test("a sidecar module is known by its name", () => {
  assert.ok(isSidecar("/ws/blurb_assertions.py"));
  assert.ok(!isSidecar("/ws/blurb.prompt"));
  assert.ok(!isSidecar("/ws/assertions.py.bak"));
});

test("a sampling run's checks become interval verdicts per test; unknown states are skipped, not passed", () => {
  const sampled = readSampled(
    {
      p_pass: { measured: { rate: 0.75 } },
      checks: [
        { name: "assert_short", state: "passed", message: "16/16 passed (100.0%); 95% CI 80.6–100.0% lies above ..." },
        { name: "assert_no_cheap", state: "failed", message: "12/16 passed (75.0%); ... lies below the minimum" },
        { name: "assert_odd", state: "exploded", message: "?" },
        { state: "passed" },
      ],
    },
    "/ws/blurb.prompt",
  );
  assert.deepEqual(
    [...sampled].map(([id, r]) => [id, r.state, r.message.slice(0, 12)]),
    [
      ["/ws/blurb.prompt::assert_short", "passed", "16/16 passed"],
      ["/ws/blurb.prompt::assert_no_cheap", "failed", "12/16 passed"],
      ["/ws/blurb.prompt::assert_odd", "skipped", "?"],
    ],
  );
  assert.equal(readSampled({ calls: 3 }, "/ws/blurb.prompt").size, 0);
  assert.equal(readSampled(null, "/ws/blurb.prompt").size, 0);
});
