// Drives VS Code (code-server) in chromium through playwright-core, for tests/editors/test_vscode.py.
// Environment: SPADE_VSCODE_URL (the workbench with the folder open), SPADE_VSCODE_WORKSPACE (that folder),
// SPADE_VSCODE_SHOTS (where screenshots go), SPADE_VSCODE_OUT (the JSON result), SPADE_VSCODE_SCENARIO
// ("workflow"; "missing": the interpreter lacks spade-lsp until the driver sets spade.interpreter to
// SPADE_VSCODE_GOOD_PYTHON in the Settings editor; "compare": a model is configured with automatic sampling, and
// the driver saves a new version of the prompt; "dead-ends": no model, a support-reply prompt, every hint and
// next step). Each step records what the editor showed; the Python test
// asserts on it. On a failure the result carries the error and a screenshot.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const { chromium } = require("playwright-core");

const url = process.env.SPADE_VSCODE_URL;
const workspace = process.env.SPADE_VSCODE_WORKSPACE;
const shots = process.env.SPADE_VSCODE_SHOTS;
const out = process.env.SPADE_VSCODE_OUT;
const scenario = process.env.SPADE_VSCODE_SCENARIO || "workflow";
const WAIT_MS = Number(process.env.SPADE_VSCODE_WAIT_MS || 60000);
const ACTIVE_EDITOR = ".editor-group-container.active .editor-instance";
const FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

const result = { steps: [] };
function step(name, data) {
  result.steps.push(name);
  Object.assign(result, data);
}

async function until(what, probe, timeout = WAIT_MS) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    last = await probe();
    if (last) {
      return last;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
}

async function runCommand(page, title) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible" });
  await input.fill(`>${title}`);
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: title }).first();
  await row.waitFor({ state: "visible" });
  await page.keyboard.press("Enter");
}

/** Bring a workspace file to the front through Quick Open, whatever the sidebar shows: after the Settings
 * editor the explorer's tree item is not always there to click. F1 opens it (its text without the ">" is a file
 * search) wherever the focus is; Ctrl+P is taken by the Test Results terminal when that has the focus. */
async function showFile(page, name) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible" });
  await input.fill(name);
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: name }).first();
  await row.waitFor({ state: "visible" });
  await row.click(); // the row itself: Enter takes whichever row is highlighted, which may be another file
  await page.locator(`.tabs-container .tab.active[data-resource-name="${name}"]`).first().waitFor({ timeout: WAIT_MS });
}

async function notifications(page) {
  return page.locator(".notifications-toasts .notification-toast .notification-list-item-message").allInnerTexts();
}

async function main() {
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: FLAGS });
  try {
    const width = scenario === "compare" ? 1800 : 1400; // the comparison lens is a long line
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    try {
      const scenarios = { workflow: drive, missing: missingPackage, compare, "dead-ends": deadEnds };
      await scenarios[scenario](page);
    } catch (error) {
      result.error = String(error && error.stack ? error.stack : error);
      await page.screenshot({ path: path.join(shots, "failure.png") }).catch(() => {});
    }
  } finally {
    await browser.close();
    fs.writeFileSync(out, JSON.stringify(result, null, 2));
  }
}

async function openPrompt(page, name = "blurb.prompt") {
  await page.goto(url);
  await page.locator(".monaco-workbench").waitFor({ timeout: WAIT_MS });
  const prompt = page.getByRole("treeitem", { name, exact: true });
  await prompt.waitFor({ timeout: WAIT_MS });
  await prompt.dblclick();
  await page.locator(ACTIVE_EDITOR + " .view-lines").first().waitFor();
  return prompt;
}

/** The Problems panel's rows once it lists the spade problems that name their version (the daemon starts with
 * the server and imports the git history first): the newest version's unchecked instructions, two by default
 * (older ones are hints, which the panel does not list). */
async function spadeProblems(page) {
  await page.keyboard.press("Control+Shift+M");
  const rows = page.locator(".markers-panel .monaco-list-row");
  const wanted = Number(process.env.SPADE_VSCODE_PROBLEMS || "2");
  return until(`${wanted} spade problems with their versions`, async () => {
    const texts = await rows.allInnerTexts();
    return texts.filter((t) => t.includes("spade") && /introduced in v\d/.test(t)).length === wanted ? texts : undefined;
  });
}

async function missingPackage(page) {
  await openPrompt(page);
  const notice = await until("the missing-package notification", async () => {
    const texts = await notifications(page);
    return texts.find((t) => t.includes("spade-lsp is not installed"));
  });
  const buttons = await page.locator(".notifications-toasts .notification-toast .monaco-button").allInnerTexts();
  const errorIcon = await page.locator(".statusbar-item", { hasText: "SPADE" }).first().locator(".codicon-error").count();
  await page.screenshot({ path: path.join(shots, "missing-package.png") });
  step("notification", { notice, buttons, statusShowsError: errorIcon === 1 });
  // the user sets spade.interpreter in the Settings editor; the extension restarts the server with it
  await runCommand(page, "Preferences: Open User Settings");
  await page.locator(".settings-editor").waitFor({ timeout: WAIT_MS });
  await page.keyboard.type("spade.interpreter");
  // a machine-overridable setting: in code-server (a remote window) it lives in the Remote scope
  await page.locator(".settings-editor .settings-tabs-widget .action-label", { hasText: "Remote" }).first().click();
  const input = page.locator(".settings-editor .setting-item-contents", { hasText: "Interpreter" }).locator("input").first();
  await input.waitFor({ timeout: WAIT_MS });
  await input.fill(process.env.SPADE_VSCODE_GOOD_PYTHON);
  await input.press("Tab");
  // the status-bar item leaves its error state once the restarted server runs
  const item = page.locator(".statusbar-item", { hasText: "SPADE" }).first();
  await until("the restarted server", async () => ((await item.locator(".codicon-error").count()) === 0 ? true : undefined));
  await page.screenshot({ path: path.join(shots, "missing-package-setting.png") });
  await page.keyboard.press("Escape"); // leave the Settings editor
  await showFile(page, "blurb.prompt");
  const problems = await spadeProblems(page);
  await page.screenshot({ path: path.join(shots, "missing-package-fixed.png") });
  step("restarted", { problems });
}

async function drive(page) {
  const prompt = await openPrompt(page);

  // 1. the spade diagnostics in the Problems panel
  const problems = await spadeProblems(page);
  const status = await page.locator(".statusbar-item", { hasText: "SPADE" }).first().innerText();
  await page.screenshot({ path: path.join(shots, "1-problems.png") });
  step("problems", { problems, status });

  // 2. the "Add assertion" quick fix on the word-limit line; the sidecar module changes
  await page.locator(ACTIVE_EDITOR + " .view-lines").first().click();
  await page.keyboard.press("Control+G");
  await page.keyboard.type("3");
  await page.keyboard.press("Enter");
  const fix = page.locator(".action-widget .monaco-list-row", { hasText: "Add assertion for this instruction" }).first();
  await quickFixMenu(page, fix, "Add assertion");
  const actions = await page.locator(".action-widget .monaco-list-row").allInnerTexts();
  await page.screenshot({ path: path.join(shots, "2-quick-fix.png") });
  await fix.click();
  const sidecar = path.join(workspace, "blurb_assertions.py");
  const onDisk = await until("the sidecar module on disk", async () => {
    const text = fs.existsSync(sidecar) ? fs.readFileSync(sidecar, "utf8") : "";
    return text.includes("def assert_") ? text : undefined;
  });
  const module = page.getByRole("treeitem", { name: "blurb_assertions.py", exact: true });
  await module.dblclick();
  const shown = await until("the sidecar module in an editor", async () => {
    const text = (await page.locator(ACTIVE_EDITOR + " .view-lines").first().innerText()).replace(/\u00a0/g, " ");
    return text.includes("def assert_") ? text : undefined;
  });
  await page.screenshot({ path: path.join(shots, "3-sidecar.png") });
  step("quick fix", { actions, sidecar: onDisk, sidecarEditor: shown });

  // 3. "Run evaluation" from the command palette; the result is announced and the lenses show pass rates
  await prompt.dblclick();
  // the status-bar item names the running job (spade/jobStatus); a MutationObserver sees even a short one
  await page.evaluate(() => {
    const seen = [];
    window.__spadeStatusSeen = seen;
    const look = () => {
      for (const item of document.querySelectorAll(".statusbar-item")) {
        const text = item.textContent || "";
        if (text.includes("SPADE:")) {
          seen.push(text);
        }
      }
    };
    new MutationObserver(look).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  await runCommand(page, "SPADE: Run evaluation");
  const evaluated = await until("the evaluation's notification", async () => {
    const texts = await notifications(page);
    return texts.find((t) => t.startsWith("SPADE: evaluated"));
  });
  await page.screenshot({ path: path.join(shots, "4-evaluation.png") });
  await module.dblclick();
  const lens = await until("a pass-rate code lens in the sidecar", async () => {
    const texts = await page.locator(ACTIVE_EDITOR + " .codelens-decoration").allInnerTexts();
    return texts.find((t) => /pass \d+% on \d+ examples/.test(t));
  });
  await page.screenshot({ path: path.join(shots, "5-lenses.png") });
  const statusDuringJob = await page.evaluate(() => window.__spadeStatusSeen.find((t) => t.includes("Evaluate assertions")) ?? null);
  const statusAfter = await page.locator(".statusbar-item", { hasText: "SPADE" }).first().innerText();
  step("evaluation", { evaluated, lens, statusDuringJob, statusAfter });

  // 4. the report view
  const report = await showReport(page, "spade report: blurb.prompt");
  await page.screenshot({ path: path.join(shots, "6-report.png") });
  step("report", { report: report.text.slice(0, 4000) });

  // 5. the checks in the Test Explorer: the prompt with its check, run from there, with its verdict
  const { rows, promptRow } = await testExplorer(page, "assert_at_most_12_words");
  const checkRow = rows.filter({ hasText: "assert_at_most_12_words" }).first();
  await runCommand(page, "Test: Run All Tests");
  const testStates = await until("the check's verdict in the Test Explorer", async () => {
    const icons = await checkRow.locator(".codicon").evaluateAll((nodes) => nodes.map((node) => node.className));
    return icons.some((name) => /testing-(passed|failed|error|skipped)/.test(name)) ? icons : undefined;
  });
  const testRows = await rows.allInnerTexts();
  await page.screenshot({ path: path.join(shots, "7-tests.png") });
  step("tests", { testRows, testStates });

  // 6. the outputs grid: each example with its check's verdict, a cell's detail, and a grade written to the file
  const examplesFile = path.join(workspace, "blurb.examples.jsonl");
  const labelOf = (id) =>
    fs.readFileSync(examplesFile, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line)).find((row) => row.id === id)?.label;
  await showFile(page, "blurb.prompt");
  await watchNotifications(page);
  await runCommand(page, "SPADE: Show outputs");
  const gridFrame = async (probe) =>
    until("the outputs grid", async () => {
      for (const frame of page.frames().filter((f) => f !== page.mainFrame())) {
        // a webview's frame is replaced whenever its page is set again, so one may detach between two reads
        if ((await frame.locator("h2", { hasText: "Outputs of blurb.prompt" }).count().catch(() => 0)) > 0 && (await probe(frame).catch(() => false))) {
          return frame;
        }
      }
      return undefined;
    });
  let grid = await gridFrame(async (frame) => (await frame.locator("td.cell").count()) > 0);
  const cells = await grid.locator("td.cell").evaluateAll((nodes) => nodes.map((node) => node.className.replace("cell ", "")));
  await grid.locator("td.cell.fail").first().click();
  const detail = await until("the cell's detail", async () => {
    const text = await grid.locator("#detail").innerText();
    return text.includes("The check") ? text : undefined;
  });
  await grid.locator("#by-check").selectOption("any"); // only the outputs a check fails
  const shownFailing = await grid.locator("#shown").innerText();
  await grid.locator("#by-check").selectOption("");
  await grid.locator("#by-source").selectOption("examples"); // kept when the grid is drawn again after the grade
  const goodRow = grid.locator("tr[data-key]", { has: grid.locator(".label.good") }).first();
  const gradedKey = await goodRow.getAttribute("data-key");
  const gradedId = gradedKey.replace(/^example:/, "");
  const labelBefore = labelOf(gradedId);
  await goodRow.locator('button[data-grade="bad"]').click();
  const graded = await until("the grade's notification", async () => (await noticesSeen(page)).find((t) => t.includes("Labelled ")));
  const labelAfterGrade = labelOf(gradedId);
  grid = await gridFrame(async (frame) => (await frame.locator(`tr[data-key="${gradedKey}"] .label.bad`).count()) > 0);
  const sourceAfterGrade = await grid.locator("#by-source").inputValue();
  await page.screenshot({ path: path.join(shots, "8-outputs.png") });
  await page.locator(".notifications-toasts .notification-toast .monaco-button", { hasText: "Re-run evaluation and selection" }).first().click();
  const rerun = await until("the evaluation with the new label", async () =>
    (await noticesSeen(page)).find((t) => t.includes("evaluating and selecting")) ?? null,
  ).catch(() => null);
  // the re-run's progress ends before the undo, so the two never race for the examples file
  const rerunEnded = await until("the re-run's end", async () => !(await notifications(page)).some((t) => t.includes("evaluating and selecting")))
    .then(() => true)
    .catch(() => false);
  step("outputs", { cells, detail, shownFailing, sourceAfterGrade, gradedKey, labelBefore, labelAfterGrade, graded, rerun, rerunEnded });

  // Ctrl+Z in the examples file takes the grade back
  await showFile(page, "blurb.examples.jsonl");
  await page.locator(ACTIVE_EDITOR + " .view-lines").first().click();
  await page.keyboard.press("Control+Z");
  await page.keyboard.press("Control+S");
  const labelAfterUndo = await until("the label restored on disk", async () => (labelOf(gradedId) === labelBefore ? labelOf(gradedId) : undefined));
  step("undo", { labelAfterUndo });
}

/** "SPADE: Show report", then the webview's text once it holds ``marker`` (the workbench itself, the main
 * frame, is never read: its lenses and tabs may hold the marker too), and what the report's page draws. */
async function showReport(page, marker) {
  await runCommand(page, "SPADE: Show report");
  const reportTab = page.locator(".tabs-container .tab", { hasText: "SPADE report: blurb.prompt" });
  await reportTab.first().waitFor({ timeout: WAIT_MS });
  return until(`the report holding "${marker}"`, async () => {
    for (const frame of page.frames().filter((f) => f !== page.mainFrame())) {
      const text = await frame.locator("body").innerText().catch(() => "");
      if (text.includes(marker)) {
        // a frame replaced between two reads is read again on the next pass
        const heatmapCells = await frame.locator("svg rect.cell").count().catch(() => undefined);
        const headings = await frame.locator("h2, h3").allInnerTexts().catch(() => undefined);
        if (heatmapCells !== undefined && headings !== undefined) {
          return { frame, text, heatmapCells, headings };
        }
      }
    }
    return undefined;
  });
}

/** A model with automatic sampling: saving a new version makes the daemon sample both versions on the same
 * inputs and compare them; the prompt's top lens reads the comparison, and the report view shows it above the
 * reliability report (heatmap, intervals, profiles). */
async function compare(page) {
  await openPrompt(page);
  // lenses on one line share a decoration, separated by "|"
  const lenses = async () =>
    (await page.locator(ACTIVE_EDITOR + " .codelens-decoration").allInnerTexts()).flatMap((t) => t.split(/\s*\|\s*/).map((lens) => lens.replace(/\s+/g, " ").trim()));
  const before = await until("the prompt's summary lens", async () => (await lenses()).find((t) => t.startsWith("spade:")));
  step("opened", { summaryBefore: before });

  await page.locator(ACTIVE_EDITOR + " .view-lines").first().click();
  await page.keyboard.press("Control+End");
  await page.keyboard.type("Mention the price.");
  await page.keyboard.press("Control+S");
  await page.keyboard.press("Control+B"); // the explorer hides: the top line's lenses are long
  const lens = await until("the comparison lens", async () => (await lenses()).find((t) => t.startsWith("v2 vs v1: ")), 120000);
  await page.screenshot({ path: path.join(shots, "1-comparison-lens.png") });
  step("compared", { lens, lenses: await lenses() });

  const report = await showReport(page, "Comparison");
  await page.screenshot({ path: path.join(shots, "2-comparison-report.png") });
  if (report.heatmapCells > 0) {
    await report.frame.locator("svg rect.cell").first().scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(shots, "3-heatmap.png") });
  }
  step("report", { report: report.text.slice(0, 6000), heatmapCells: report.heatmapCells, headings: report.headings });

  // the same comparison asked from the palette: two versions picked from the history, a verdict in words
  await showFile(page, "blurb.prompt");
  await watchNotifications(page);
  await runCommand(page, "SPADE: Compare versions…");
  await pick(page, "v2");
  await pick(page, "v1");
  const verdict = await until("the comparison's verdict", async () => (await noticesSeen(page)).find((t) => t.includes(" than v1 ")), 120000);
  await page.screenshot({ path: path.join(shots, "4-comparison-verdict.png") });
  await page.keyboard.press("Control+1"); // the prompt's group: the refreshed report beside it may be the active one
  const lensAfter = await until("the short comparison lens", async () => (await lenses()).find((t) => t.startsWith("v2 vs v1: ")));
  step("palette", { verdict, lensAfter });

  // the Test Explorer's Sample profile on the prompt: each check's interval verdict on the pipeline's outputs
  const { rows, promptRow } = await testExplorer(page, "assert_no_cheap");
  await runUsingProfile(page, promptRow, "Sample the pipeline");
  const states = await until("each check's sampled verdict", async () => {
    const found = {};
    for (const name of ["assert_short", "assert_no_cheap"]) {
      const icons = await rows.filter({ hasText: name }).first().locator(".codicon").evaluateAll((nodes) => nodes.map((node) => node.className));
      const state = icons.map((icon) => /testing-(passed|failed|error|skipped)/.exec(icon)).find(Boolean);
      if (!state) {
        return undefined;
      }
      found[name] = state[1];
    }
    return found;
  }, 120000);
  await rows.filter({ hasText: "assert_no_cheap" }).first().click();
  await runCommand(page, "Test: Peek Output"); // the failure message, as a user opens it from the row
  const failure = await until("the failure's message", async () => {
    const texts = await page.locator(".peekview-widget").allInnerTexts();
    return texts.map((t) => t.replace(/\s+/g, " ")).find((t) => t.includes("passed ("));
  });
  await page.screenshot({ path: path.join(shots, "5-sampled-tests.png") });
  step("sampled tests", { states, failure });

  // the status bar's model picker: the pipeline's model shown, another one typed in, shown once chosen
  const modelItem = page.locator(".statusbar-item", { hasText: "openai/good" }).first();
  await modelItem.waitFor({ timeout: WAIT_MS });
  const modelBefore = await modelItem.innerText();
  await modelItem.click();
  await pick(page, "Pipeline model");
  await pick(page, "Enter a model name");
  await page.locator(".quick-input-widget input").fill("openai/bad");
  await page.keyboard.press("Enter");
  const modelAfter = await until("the chosen model in the status bar", async () => {
    const texts = await page.locator(".statusbar-item").allInnerTexts();
    return texts.find((t) => t.includes("openai/bad"));
  });
  await page.screenshot({ path: path.join(shots, "6-model-picker.png") });
  step("model picker", { modelBefore, modelAfter });

  // a sampled output graded in the outputs grid: it joins the examples file with its inputs
  await showFile(page, "blurb.prompt");
  await runCommand(page, "SPADE: Show outputs");
  const grid = await until("the grid's sampled outputs", async () => {
    for (const frame of page.frames().filter((f) => f !== page.mainFrame())) {
      if ((await frame.locator('tr[data-key^="sample:"]').count().catch(() => 0)) > 0) {
        return frame;
      }
    }
    return undefined;
  });
  const sampledRows = await grid.locator('tr[data-key^="sample:"]').count();
  const sampledSources = [...new Set(await grid.locator('tr[data-key^="sample:"]').evaluateAll((rows) => rows.map((row) => row.dataset.source)))];
  await grid.locator("#by-check").selectOption({ label: "failing assert_no_cheap" });
  const cheapRow = grid.locator('tr[data-key^="sample:"]:not([hidden])').first();
  const cheapText = await cheapRow.locator("td.text").innerText();
  await cheapRow.locator('button[data-grade="bad"]').click();
  const added = await until("the sampled output added as an example", async () => (await noticesSeen(page)).find((t) => t.includes("as a bad example")));
  await page.screenshot({ path: path.join(shots, "7-graded-output.png") });
  step("graded output", { sampledRows, sampledSources, cheapText, added });
}

/** Ctrl+. until the quick fix menu shows ``row``: pressed before the server's actions for the line arrived (a
 * busy machine), VS Code says there are none and closes the menu. */
async function quickFixMenu(page, row, what) {
  await until(`the quick fix menu with ${what}`, async () => {
    if (!(await row.isVisible())) {
      await page.keyboard.press("Escape");
      await page.keyboard.press("Control+.");
      await row.waitFor({ timeout: 5000 }).catch(() => undefined);
    }
    return (await row.isVisible()) ? true : undefined;
  });
}

/** The Test Explorer with blurb.prompt's row expanded until ``check``'s row shows: its rows and the prompt's row. */
async function testExplorer(page, check) {
  await runCommand(page, "Focus on Test Explorer View");
  const rows = page.locator(".test-explorer .monaco-list-row");
  const promptRow = rows.filter({ hasText: "blurb.prompt" }).first();
  await promptRow.waitFor({ timeout: WAIT_MS });
  await promptRow.click();
  await page.keyboard.press("ArrowRight"); // expand it
  await rows.filter({ hasText: check }).first().waitFor({ timeout: WAIT_MS });
  return { rows, promptRow };
}

/** "Execute Using Profile..." from ``row``'s context menu, then ``profile``: the menu is opened again until the
 * profile picker shows (a click that lands while the menu still lays itself out does nothing). */
async function runUsingProfile(page, row, profile) {
  const picker = page.locator(".quick-input-widget .monaco-list-row", { hasText: profile }).first();
  await until(`the test profile picker with ${profile}`, async () => {
    if (await picker.isVisible()) {
      return true; // the last try's picker, slower to show than its wait: Escape would close it again
    }
    await page.keyboard.press("Escape");
    await row.click({ button: "right" });
    const entry = page.locator(".context-view .action-label", { hasText: "Execute Using Profile..." }).first();
    await entry.waitFor({ state: "visible", timeout: 5000 }).catch(() => undefined);
    await entry.click({ timeout: 5000 }).catch(() => undefined);
    await picker.waitFor({ state: "visible", timeout: 5000 }).catch(() => undefined);
    return (await picker.isVisible()) ? true : undefined;
  });
  await picker.click();
}

/** Choose the row of an open quick pick that holds ``label`` (typed into its filter first). */
async function pick(page, label) {
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible" });
  await input.fill(label);
  await page.locator(".quick-input-widget .monaco-list-row", { hasText: label }).first().waitFor({ state: "visible" });
  await page.keyboard.press("Enter");
}

/** Every notification text shown from now on (a toast may be gone before anyone reads it). */
async function watchNotifications(page) {
  await page.evaluate(() => {
    const seen = new Set();
    window.__spadeNotices = seen;
    const look = () => {
      for (const item of document.querySelectorAll(".notification-list-item-message")) {
        if (item.textContent) {
          seen.add(item.textContent);
        }
      }
    };
    new MutationObserver(look).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
}

async function noticesSeen(page) {
  return page.evaluate(() => [...window.__spadeNotices]);
}

async function lensTexts(page) {
  return (await page.locator(ACTIVE_EDITOR + " .codelens-decoration").allInnerTexts()).flatMap((t) =>
    t.split(/\s*\|\s*/).map((lens) => lens.replace(/\s+/g, " ").trim()),
  );
}

async function goToLine(page, line) {
  await page.keyboard.press("Control+G");
  await page.keyboard.type(String(line));
  await page.keyboard.press("Enter");
}

/** The hover at the cursor (Ctrl+K Ctrl+I), as text. */
async function hoverAt(page, line) {
  await goToLine(page, line);
  await page.keyboard.press("End");
  await page.keyboard.press("Home");
  await page.keyboard.press("ArrowRight");
  await page.keyboard.press("Control+K");
  await page.keyboard.press("Control+I");
  // the hover holds the line's problem first, then spade's own part (its History section)
  const parts = page.locator(".monaco-hover:not(.hidden) .hover-contents");
  await parts.first().waitFor({ timeout: WAIT_MS });
  const text = await until("spade's hover", async () => {
    const value = (await parts.allInnerTexts().catch(() => [])).join("\n");
    return value.includes("History") ? value : undefined;
  });
  await page.keyboard.press("Escape");
  return text;
}

/** No model configured, a support-reply prompt with three commits and six labelled examples: every instruction
 * has a hint or a reason, the next steps are quick fixes and lenses, evaluation and selection say what they did
 * without a model, no message names a CLI flag, and a whitespace-only save records no version. */
async function deadEnds(page) {
  const name = process.env.SPADE_VSCODE_PROMPT || "support_reply.prompt";
  await openPrompt(page, name);
  await watchNotifications(page);
  await page.keyboard.press("Control+B"); // the explorer hides: the top line's lenses are long
  // 1. the Problems panel: one hint per instruction, with the version from git
  await page.keyboard.press("Control+Shift+M");
  const rows = page.locator(".markers-panel .monaco-list-row");
  const wanted = Number(process.env.SPADE_VSCODE_PROBLEMS || "2");
  const problems = await until(`${wanted} spade problems with their versions`, async () => {
    const texts = await rows.allInnerTexts();
    const spade = texts.filter((t) => t.includes("\nspade\n"));
    return spade.length === wanted && spade.every((t) => /introduced in v\d/.test(t)) ? texts : undefined;
  });
  const summary = await until("the summary lens with the versions", async () =>
    (await lensTexts(page)).find((t) => /^spade: \d+ versions/.test(t)),
  );
  await page.screenshot({ path: path.join(shots, "1-hints.png") });
  step("hints", { problems, summary, lenses: await lensTexts(page) });

  // 2. hovers: a check's category in plain words; a sentence that is no instruction says why
  await page.locator(ACTIVE_EDITOR + " .view-lines").first().click();
  const hoverRefunds = await hoverAt(page, Number(process.env.SPADE_VSCODE_REFUNDS_LINE || "3"));
  const hoverRole = await hoverAt(page, 1);
  await goToLine(page, Number(process.env.SPADE_VSCODE_REFUNDS_LINE || "3"));
  await page.keyboard.press("Control+K");
  await page.keyboard.press("Control+I");
  await page.locator(".monaco-hover:not(.hidden) .hover-contents").first().waitFor({ timeout: WAIT_MS });
  await page.screenshot({ path: path.join(shots, "2-hover-needs-a-model.png") });
  await page.keyboard.press("Escape");
  step("hovers", { hoverRefunds, hoverRole });

  // 3. Ctrl+. on the exclusion: no empty "Add assertion", the model's setting, and the workflow's next steps
  const widget = page.locator(".action-widget .monaco-list-row");
  await quickFixMenu(page, widget.first(), "its next steps");
  const actions = await until("the next steps in the quick fix menu", async () => {
    const texts = await widget.allInnerTexts();
    return texts.some((t) => t.includes("Add assertions for all uncovered instructions")) ? texts : undefined;
  });
  await page.screenshot({ path: path.join(shots, "3-quick-fixes.png") });
  await page.locator(".action-widget .monaco-list-row", { hasText: "Add assertions for all uncovered instructions" }).first().click();
  const sidecar = path.join(workspace, name.replace(/\.prompt$/, "_assertions.py"));
  const module = await until("the sidecar module on disk", async () => {
    const text = fs.existsSync(sidecar) ? fs.readFileSync(sidecar, "utf8") : "";
    return text.includes("def assert_") ? text : undefined;
  });
  step("add all", { actions, sidecar: module });

  // 4. Run evaluation, then Select assertions, from the palette
  await runCommand(page, "SPADE: Run evaluation");
  const evaluated = await until("the evaluation's notification", async () =>
    (await notifications(page)).find((t) => t.startsWith("SPADE: evaluated")),
  );
  await page.screenshot({ path: path.join(shots, "4-evaluation.png") });
  await runCommand(page, "SPADE: Select assertions");
  const selected = await until("the selection's notification", async () =>
    (await notifications(page)).find((t) => /^SPADE: (selected|no set of assertions)/.test(t)),
  );
  await page.screenshot({ path: path.join(shots, "5-selection.png") });
  await page.keyboard.press("Control+Shift+M");
  // every instruction is checked now, so the prompt has no Problems row left (its hints are not listed)
  const after = await until("the Problems panel after selection", async () => {
    const texts = await rows.allInnerTexts();
    return texts.some((t) => /introduced in v\d/.test(t)) ? undefined : texts;
  });
  step("selection", { evaluated, selected, problemsAfter: after });

  // 5. a whitespace-only edit, saved: trailing spaces and a second blank line
  await showFile(page, name);
  await page.locator(ACTIVE_EDITOR + " .view-lines").first().click();
  await goToLine(page, 2);
  await page.keyboard.press("End");
  await page.keyboard.type("   ");
  await goToLine(page, Number(process.env.SPADE_VSCODE_LAST_LINE || "8"));
  await page.keyboard.press("End");
  await page.keyboard.press("Enter"); // a blank line after the last one
  await page.keyboard.press("Control+S");
  await new Promise((resolve) => setTimeout(resolve, 4000)); // the quiet period, and the daemon's record
  const summaryAfterSave = (await lensTexts(page)).find((t) => t.startsWith("spade:"));
  step("whitespace", { summaryAfterSave });

  // 6. the history, rendered
  await runCommand(page, "SPADE: Show prompt history");
  const preview = page.locator(".tabs-container .tab", { hasText: "Preview" });
  await preview.first().waitFor({ timeout: WAIT_MS });
  const historyTab = await preview.first().innerText();
  await page.screenshot({ path: path.join(shots, "6-history.png") });
  step("history", { historyTab, notices: await noticesSeen(page) });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
