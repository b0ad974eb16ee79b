import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { comparedValues, messageActions, PALETTE, summarize, targetUri } from "../src/commands";

const root = path.resolve(__dirname, "..", "..");
const manifest = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));

test("every palette command is contributed under the SPADE category, with the issue's titles", () => {
  const contributed = new Map<string, { title: string; category: string }>(
    manifest.contributes.commands.map((c: { command: string; title: string; category: string }) => [c.command, c]),
  );
  for (const command of PALETTE) {
    assert.deepEqual(contributed.get(command.id), { command: command.id, title: command.title, category: "SPADE" });
  }
  const titles = [...contributed.values()].map((c) => c.title);
  for (const wanted of ["Synthesize assertions", "Run evaluation", "Select assertions", "Sample reliability", "Show report", "Show prompt history", "Restart server"]) {
    assert.ok(titles.includes(wanted), wanted);
  }
});

test("palette ids never collide with the server's, and each forwards to a command the server registers", () => {
  const features = path.join(root, "..", "server", "spade_lsp_server", "features");
  const serverSource = fs
    .readdirSync(features)
    .filter((name) => name.endsWith(".py"))
    .map((name) => fs.readFileSync(path.join(features, name), "utf8"))
    .join("\n");
  const registered = [...serverSource.matchAll(/@server\.command\("([^"]+)"\)/g)].map((m) => m[1]);
  for (const command of PALETTE) {
    assert.ok(registered.includes(command.server), `${command.server} is not a server command`);
    assert.ok(!registered.includes(command.id));
  }
});

test("settings are contributed with descriptions and scopes", () => {
  const properties = manifest.contributes.configuration.properties;
  for (const key of ["model", "apiBase", "tau", "alpha", "samplesPerInput", "promptGlobs", "daemonAutostart", "saveQuietS", "logLevel", "interpreter"]) {
    const setting = properties[`spade.${key}`];
    assert.ok(setting, key);
    assert.ok((setting.markdownDescription ?? setting.description ?? "").length > 20, key);
    assert.ok(["application", "machine", "machine-overridable", "window", "resource", "language-overridable"].includes(setting.scope), key);
  }
  // engine settings default to null, so spade.toml decides unless the user sets them in the editor
  assert.equal(properties["spade.tau"].default, null);
});

test("result summaries", () => {
  assert.equal(
    summarize("spade.evaluate", { run_id: 4, assertions: ["a", "b", "c"], examples: 4, errors_total: 0 }),
    "SPADE: evaluated 3 assertions on 4 examples (run 4)",
  );
  assert.equal(
    summarize("spade.evaluate", { run_id: 5, assertions: ["a"], examples: 1, errors_total: 2 }),
    "SPADE: evaluated 1 assertion on 1 example (run 5); 2 cells raised an error",
  );
  // in words for people: what the figures mean, not "coverage", "FFR" or the solver's status
  assert.equal(
    summarize("spade.select", { selected: ["a", "c"], coverage: 1, ffr: 0.125, status: "optimal" }),
    "SPADE: selected 2 assertions (a, c); catches 100% of the bad examples, flags 13% of the good ones",
  );
  // cells that need a model are not errors (the report counts them apart): the notification agrees
  assert.equal(
    summarize("spade.evaluate", {
      run_id: 6,
      assertions: ["a", "b"],
      examples: 6,
      errors_total: 6,
      needs_model: ["b"],
      needs_model_cells: 6,
    }),
    "SPADE: evaluated 2 assertions on 6 examples (run 6); 1 assertion needs a model and was left out (configure an assistant model to run it)",
  );
  // a check that reads an input an example lacks does not apply there: neither an error nor a failure
  assert.equal(
    summarize("spade.evaluate", {
      run_id: 7,
      assertions: ["a", "b"],
      examples: 4,
      errors_total: 3,
      not_applicable_cells: 2,
    }),
    "SPADE: evaluated 2 assertions on 4 examples (run 7); 1 cell raised an error; 2 cells not applicable (the example lacks an input the check reads)",
  );
  // selection without a model: what was left out, and what it reached
  assert.equal(
    summarize("spade.select", {
      selected: ["a"],
      coverage: 0.5,
      ffr: 0,
      status: "optimal",
      notes: ["left out 1 assertion(s) that need a model and have none: b (they are not failures)", "other"],
    }),
    "SPADE: selected 1 assertion (a); catches 50% of the bad examples, flags 0% of the good ones; left out 1 assertion(s) that need a model and have none: b (they are not failures)",
  );
  const infeasible = summarize("spade.select", {
    selected: [],
    status: "infeasible",
    reason: "coverage >= 0.6 and FFR <= 0.25 cannot both be met: with FFR <= 0.25 the best coverage is 0.333",
    best: { selected: ["a"], coverage: 0.333, ffr: 0 },
  });
  assert.match(infeasible ?? "", /^SPADE: no set of assertions meets both limits: coverage >= 0\.6/);
  assert.match(infeasible ?? "", /The best it could reach: a \(catches 33% of the bad examples, flags 0% of the good ones\)/);
  assert.match(infeasible ?? "", /Loosen spade\.tau or spade\.alpha in Settings/);
  assert.doesNotMatch(infeasible ?? "", /--|coverage \?/);
  assert.equal(
    summarize("spade.synthesize", { added: ["assert_x"], updated: [], sidecar: "/w/blurb_assertions.py" }),
    "SPADE: added assert_x in blurb_assertions.py",
  );
  assert.match(summarize("spade.synthesize", { added: [], updated: [], sidecar: "/w/b_assertions.py" }) ?? "", /no new assertion/);
  const sampled = { model: "local", p_pass: { measured: { rate: 0.875, ci_low: 0.7, ci_high: 0.95 } }, calls: 40, confidence: 0.9 };
  assert.equal(
    summarize("spade.sample", sampled),
    "SPADE: sampled local (40 calls): 88% of its outputs passed every check, likely between 70% and 95% " +
      "(90% interval). Show report for each check.",
  );
  assert.doesNotMatch(summarize("spade.sample", { model: "local", p_pass: { measured: { rate: null } } }) ?? "", /\?/);
  assert.equal(summarize("spade.report", {}), undefined);
  assert.equal(
    summarize("spade.compare", { verdict: "v2 is worse on 1 check (no_cheap 100% -> 25%) than v1 (4 inputs, 4 samples each; pass rates shown)" }),
    "SPADE: v2 is worse on 1 check (no_cheap 100% -> 25%) than v1 (4 inputs, 4 samples each; pass rates shown). Show report for each check.",
  );
});

test("a comparison's two values are read from what the user typed, the baseline first", () => {
  assert.deepEqual(comparedValues("models", "openai/gpt-4o-mini, local"), { values: ["openai/gpt-4o-mini", "local"] });
  assert.deepEqual(comparedValues("temperatures", "0.2 1"), { values: [0.2, 1] });
  assert.match(comparedValues("models", "local") .problem ?? "", /give two models, the baseline first/);
  assert.match(comparedValues("models", "local, local").problem ?? "", /two different models/);
  assert.match(comparedValues("temperatures", "0, 3").problem ?? "", /from 0 to 2/);
  assert.match(comparedValues("temperatures", "hot, cold").problem ?? "", /from 0 to 2/);
});

test("the target is the URI the command was invoked on, else the active editor's", () => {
  assert.equal(targetUri("file:///a.prompt", "file:///b.prompt"), "file:///a.prompt");
  assert.equal(targetUri({ scheme: "file", toString: () => "file:///c.prompt" }, undefined), "file:///c.prompt");
  assert.equal(targetUri(undefined, "file:///b.prompt"), "file:///b.prompt");
  assert.equal(targetUri(undefined, undefined), undefined);
});

test("a message's next steps become buttons: palette commands, settings, the examples file", () => {
  const titles = (message: string): string[] => messageActions(message).map((action) => action.title);
  assert.deepEqual(titles('Evaluate assertions: blurb.examples.jsonl: no examples; add labelled examples with "Open examples" (Ctrl+.)'), ["Open examples"]);
  assert.deepEqual(titles("SPADE: sampled local (4 calls): 50% of its outputs passed every check. Show report for each check."), ["Show report"]);
  assert.deepEqual(titles("no check can be written for this without a model; configure an assistant model (the spade.assistantModel setting)"), ["Configure an assistant model"]);
  assert.deepEqual(titles('Select assertions: no finished evaluation run to select from; run "SPADE: Run evaluation" first'), ["Run evaluation"]);
  assert.deepEqual(titles("Sample reliability: no model is configured: set the spade.model setting"), ["Set the model"]);
  assert.deepEqual(titles("SPADE: evaluated 3 assertions on 4 examples (run 4)"), []);
  const open = messageActions("no examples")[0];
  assert.deepEqual([open.command, open.args], ["spade.openExamples", ["prompt"]]);
  const settings = messageActions("configure an assistant model")[0];
  assert.deepEqual([settings.command, settings.args], ["workbench.action.openSettings", ["spade.assistantModel"]]);
});
