import assert from "node:assert/strict";
import { test } from "node:test";

import { cellReason, outputsPage, readGrid } from "../src/outputsHtml";

const answer = {
  prompt: "/ws/blurb.prompt",
  examples_file: "/ws/blurb.examples.jsonl",
  checks: [
    { name: "assert_short", line: 4, code: "def assert_short(example, prompt, response):\n    return len(response.split()) <= 12" },
    { name: "assert_no_cheap", line: 9, code: "def assert_no_cheap(...)" },
  ],
  rows: [
    { key: "example:g1", source: "examples", id: "g1", label: "good", text: "A lovely kettle.", cells: [1, 1], why: {} },
    { key: "example:b1", source: "examples", id: "b1", label: "bad", text: "A cheap mug.</script><script>alert(1)</script>", cells: [1, 0], why: {} },
    { key: "example:x", source: "examples", id: "x", label: "meh", text: null, cells: [null, 7], why: { assert_short: "KeyError: 'n'" } },
    { key: "sample:5:0:1", source: "v3 sampled (run 5)", id: "g1", sample: 1, label: null, text: "Nice.", cells: [1], why: {} },
    { source: "no key" },
  ],
  left_out: 3,
  eval_run: 2,
  sample_runs: [5],
};

test("the server's grid is read field by field: unknown labels and cells become none, short rows are padded", () => {
  const grid = readGrid(answer);
  assert.deepEqual(grid.rows.map((r) => r.key), ["example:g1", "example:b1", "example:x", "sample:5:0:1"]);
  assert.equal(grid.rows[2].label, null);
  assert.deepEqual(grid.rows[2].cells, [null, null]);
  assert.deepEqual(grid.rows[3].cells, [1, null]);
  assert.equal(grid.rows[3].sample, 1);
  assert.deepEqual(readGrid("nonsense").rows, []);
});

test("a cell says why in words: passed, flagged, raised, or not run", () => {
  const grid = readGrid(answer);
  const [short, cheap] = grid.checks;
  assert.equal(cellReason(grid.rows[0], short, 1), "assert_short passed this output.");
  assert.match(cellReason(grid.rows[1], cheap, 0), /^assert_no_cheap returned False on this output/);
  assert.equal(cellReason(grid.rows[2], short, null), "assert_short has no verdict here: KeyError: 'n'");
  assert.match(cellReason(grid.rows[3], cheap, null), /was not run on this output/);
});

test("the page: one row per output, a cell per check, grade buttons, filters, and no way for text to run script", () => {
  const page = outputsPage(readGrid(answer), "vscode-webview://abc", "N0nce");
  assert.match(page, /script-src 'nonce-N0nce'/);
  assert.equal((page.match(/<tr data-source=/g) ?? []).length, 4);
  assert.equal((page.match(/<td class="cell /g) ?? []).length, 8);
  assert.equal((page.match(/data-grade="bad"/g) ?? []).length, 4);
  assert.match(page, /<tr data-source="examples" data-failing="assert_no_cheap" data-key="example:b1">/);
  assert.match(page, /<option value="v3 sampled \(run 5\)">/);
  assert.ok(page.includes("3 example(s) from evaluation run 2, 1 sampled output(s) from run 5; 3 more not shown."));
  // the output's text is escaped in the table, and "<" is escaped in the embedded JSON: no second script runs
  assert.ok(page.includes("A cheap mug.&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
  assert.equal((page.match(/<script/g) ?? []).length, 2);
  assert.ok(page.includes("\\u003c/script>\\u003cscript>alert(1)"));
});

test("an empty grid says what to run", () => {
  const page = outputsPage(readGrid({ prompt: "/ws/a.prompt", checks: [], rows: [] }), "x", "n");
  assert.match(page, /No outputs yet: run “SPADE: Run evaluation”/);
  assert.match(page, /no evaluation yet, no sampling run yet/);
});

test("the two sides of a comparison: both runs named in the summary, each a source to filter by", () => {
  const rows = [
    { key: "sample:7:0:0", source: "v4 sampled (run 7)", id: "g1", sample: 0, label: null, text: "New.", cells: [1, 1], why: {} },
    { key: "sample:6:0:0", source: "v3 sampled (run 6)", id: "g1", sample: 0, label: null, text: "Old.", cells: [1, 0], why: {} },
  ];
  const page = outputsPage(readGrid({ ...answer, rows, sample_runs: [7, 6, "x"] }), "x", "n");
  assert.ok(page.includes("2 sampled output(s) from runs 7, 6;"));
  assert.match(page, /<option value="v4 sampled \(run 7\)">/);
  assert.match(page, /<option value="v3 sampled \(run 6\)">/);
});
