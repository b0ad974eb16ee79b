// The outputs grid's page: outputs as rows (the labelled examples, then the newest sampled outputs), checks as
// columns, each cell the check's verdict on that output. Built here as HTML (unit-tested in Node, no `vscode`
// import); the page's small script only filters rows, shows a clicked cell's detail and posts grades back.
import { basename } from "./checks";
import { escapeHtml } from "./reportHtml";

export interface GridCheck {
  name: string;
  line: number;
  code: string;
}

export interface GridRow {
  key: string;
  source: string;
  id: string;
  sample?: number;
  label: "good" | "bad" | null;
  text: string | null;
  cells: (number | null)[];
  why: Record<string, string>;
}

export interface Grid {
  prompt: string;
  examples_file: string;
  checks: GridCheck[];
  rows: GridRow[];
  left_out: number;
  eval_run: number | null;
  sample_runs: number[];
}

function list<T>(value: unknown, each: (item: Record<string, unknown>) => T | undefined): T[] {
  return (Array.isArray(value) ? value : []).flatMap((item) => {
    const read = typeof item === "object" && item !== null ? each(item as Record<string, unknown>) : undefined;
    return read === undefined ? [] : [read];
  });
}

/** The answer of `spade.outputs`, checked field by field (a server of another version may send less). */
export function readGrid(answer: unknown): Grid {
  const r = (typeof answer === "object" && answer !== null ? answer : {}) as Record<string, unknown>;
  const checks = list(r.checks, (c) =>
    typeof c.name === "string" ? { name: c.name, line: typeof c.line === "number" ? c.line : 0, code: String(c.code ?? "") } : undefined,
  );
  const rows = list(r.rows, (row): GridRow | undefined => {
    if (typeof row.key !== "string") {
      return undefined;
    }
    const cells = Array.isArray(row.cells) ? row.cells.map((c) => (c === 0 || c === 1 ? c : null)) : [];
    const why = typeof row.why === "object" && row.why !== null ? (row.why as Record<string, unknown>) : {};
    return {
      key: row.key,
      source: String(row.source ?? ""),
      id: String(row.id ?? ""),
      sample: typeof row.sample === "number" ? row.sample : undefined,
      label: row.label === "good" || row.label === "bad" ? row.label : null,
      text: typeof row.text === "string" ? row.text : null,
      cells: checks.map((_, j) => cells[j] ?? null),
      why: Object.fromEntries(Object.entries(why).map(([k, v]) => [k, String(v)])),
    };
  });
  const run = (value: unknown): number | null => (typeof value === "number" ? value : null);
  return {
    prompt: String(r.prompt ?? ""),
    examples_file: String(r.examples_file ?? ""),
    checks,
    rows,
    left_out: typeof r.left_out === "number" ? r.left_out : 0,
    eval_run: run(r.eval_run),
    sample_runs: Array.isArray(r.sample_runs) ? r.sample_runs.filter((id): id is number => typeof id === "number") : [],
  };
}

const MARK: Record<string, { symbol: string; word: string }> = {
  pass: { symbol: "✓", word: "passed" },
  fail: { symbol: "✗", word: "failed" },
  none: { symbol: "·", word: "not run on this output" },
};

function cellClass(value: number | null): keyof typeof MARK {
  return value === 1 ? "pass" : value === 0 ? "fail" : "none";
}

/** Why a cell reads as it does, in words: what the detail pane shows under the check's code. */
export function cellReason(row: GridRow, check: GridCheck, value: number | null): string {
  const why = row.why[check.name];
  if (value === 1) {
    return `${check.name} passed this output.`;
  }
  if (value === 0) {
    return `${check.name} returned False on this output: it flags it as breaking the instruction.`;
  }
  if (why) {
    return `${check.name} has no verdict here: ${why}`;
  }
  return `${check.name} was not run on this output (added after this run, or not selected for sampling).`;
}

function summary(grid: Grid): string {
  const examples = grid.rows.filter((r) => r.source === "examples").length;
  const sampled = grid.rows.length - examples;
  const parts = [
    grid.eval_run === null ? "no evaluation yet" : `${examples} example(s) from evaluation run ${grid.eval_run}`,
    grid.sample_runs.length === 0
      ? "no sampling run yet"
      : `${sampled} sampled output(s) from run${grid.sample_runs.length > 1 ? "s" : ""} ${grid.sample_runs.join(", ")}`,
  ];
  const more = grid.left_out ? `; ${grid.left_out} more not shown` : "";
  return `${parts.join(", ")}${more}. Click a cell for the output, the check's code and why; Good or Bad writes the label into ${basename(grid.examples_file)}.`;
}

function rowHtml(grid: Grid, row: GridRow, index: number): string {
  const failing = grid.checks.filter((_, j) => row.cells[j] === 0).map((c) => c.name);
  const cells = grid.checks
    .map((check, j) => {
      const kind = cellClass(row.cells[j]);
      const title = `${check.name}: ${MARK[kind].word}`;
      const reason = escapeHtml(cellReason(row, check, row.cells[j]));
      return `<td class="cell ${kind}" data-row="${index}" data-check="${j}" data-reason="${reason}" title="${escapeHtml(title)}" tabindex="0">${MARK[kind].symbol}</td>`;
    })
    .join("");
  const label = row.label ? `<span class="label ${row.label}">${row.label}</span>` : `<span class="label none">unlabelled</span>`;
  const sample = row.sample === undefined ? "" : ` #${row.sample + 1}`;
  const text = row.text === null ? '<span class="missing">(no output)</span>' : escapeHtml(row.text);
  return [
    `<tr data-source="${escapeHtml(row.source)}" data-failing="${escapeHtml(failing.join(" "))}" data-key="${escapeHtml(row.key)}">`,
    `<td class="id">${escapeHtml(row.id)}${sample}<div class="source">${escapeHtml(row.source)}</div>${label}</td>`,
    `<td class="text"><div class="clip">${text}</div></td>`,
    cells,
    `<td class="grade"><button data-grade="good" data-row="${index}">Good</button> <button data-grade="bad" data-row="${index}">Bad</button></td>`,
    "</tr>",
  ].join("");
}

/** The page: a content security policy that allows only this page's own script (by its nonce). */
export function outputsPage(grid: Grid, cspSource: string, nonce: string): string {
  const sources = [...new Set(grid.rows.map((r) => r.source))];
  const checkOptions = grid.checks.map((c, j) => `<option value="${j}">failing ${escapeHtml(c.name)}</option>`).join("");
  const sourceOptions = sources.map((s) => `<option value="${escapeHtml(s)}">${escapeHtml(s)}</option>`).join("");
  const header = grid.checks.map((c) => `<th title="${escapeHtml(c.name)}"><span>${escapeHtml(c.name.replace(/^assert_/, ""))}</span></th>`).join("");
  const body = grid.rows.length
    ? grid.rows.map((row, i) => rowHtml(grid, row, i)).join("\n")
    : `<tr><td colspan="${grid.checks.length + 3}" class="missing">No outputs yet: run “SPADE: Run evaluation” (labelled examples) or “SPADE: Sample reliability” (the pipeline's outputs).</td></tr>`;
  // the detail pane's data: the rows and checks as JSON, "<" escaped so no text can close the script element
  const data = JSON.stringify({ prompt: grid.prompt, rows: grid.rows, checks: grid.checks }).replace(/</g, "\\u003c");
  const policy = `default-src 'none'; style-src 'unsafe-inline' ${cspSource}; script-src 'nonce-${nonce}';`;
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${policy}">
<title>SPADE outputs: ${escapeHtml(basename(grid.prompt))}</title>
<style>
body{font-family:var(--vscode-font-family);font-size:var(--vscode-font-size);color:var(--vscode-foreground);padding:0 1em}
.note{color:var(--vscode-descriptionForeground)}
select,button{font:inherit;color:var(--vscode-button-secondaryForeground);background:var(--vscode-button-secondaryBackground);border:1px solid var(--vscode-panel-border);padding:2px 6px}
button:hover{background:var(--vscode-button-secondaryHoverBackground)}
table{border-collapse:collapse;width:100%}
th,td{border:1px solid var(--vscode-panel-border);padding:3px 6px;vertical-align:top}
th{background:var(--vscode-editorWidget-background);font-weight:normal;white-space:nowrap}
td.id{white-space:nowrap}.source{color:var(--vscode-descriptionForeground);font-size:90%}
.label{font-size:85%;padding:0 4px;border-radius:3px}
.label.good{background:var(--vscode-testing-iconPassed);color:var(--vscode-editor-background)}
.label.bad{background:var(--vscode-testing-iconFailed);color:var(--vscode-editor-background)}
.label.none{border:1px dashed var(--vscode-panel-border)}
td.text{min-width:28ch}td.text .clip{white-space:pre-wrap;max-height:6em;overflow:auto;font-family:var(--vscode-editor-font-family)}
td.cell{text-align:center;cursor:pointer;font-weight:bold}
td.cell.pass{color:var(--vscode-testing-iconPassed)}td.cell.fail{color:var(--vscode-testing-iconFailed);background:var(--vscode-inputValidation-errorBackground)}
td.cell.none{color:var(--vscode-disabledForeground)}
td.cell.selected{outline:2px solid var(--vscode-focusBorder)}
.missing{color:var(--vscode-descriptionForeground);font-style:italic}
#detail{border-top:2px solid var(--vscode-panel-border);margin-top:1em;padding-top:.5em}
#detail pre{white-space:pre-wrap;background:var(--vscode-textCodeBlock-background);padding:6px}
</style></head><body>
<h2>Outputs of ${escapeHtml(basename(grid.prompt))}</h2>
<p class="note">${escapeHtml(summary(grid))}</p>
<p><label>Show <select id="by-check"><option value="">all outputs</option><option value="any">failing any check</option>${checkOptions}</select></label>
<label> from <select id="by-source"><option value="">every source</option>${sourceOptions}</select></label>
<span id="shown" class="note"></span></p>
<table><thead><tr><th>output</th><th>text</th>${header}<th>grade</th></tr></thead>
<tbody>
${body}
</tbody></table>
<section id="detail"><p class="note">Click a cell to see the output, the check's code and why.</p></section>
<script type="application/json" id="grid-data">${data}</script>
<script nonce="${nonce}">
(function () {
  const vscode = acquireVsCodeApi();
  const data = JSON.parse(document.getElementById("grid-data").textContent);
  const rows = Array.from(document.querySelectorAll("tbody tr[data-key]"));
  const byCheck = document.getElementById("by-check");
  const bySource = document.getElementById("by-source");
  const shown = document.getElementById("shown");
  const detail = document.getElementById("detail");
  function filter() {
    let count = 0;
    for (const row of rows) {
      const failing = row.dataset.failing ? row.dataset.failing.split(" ") : [];
      const check = byCheck.value;
      const wantCheck = check === "" || (check === "any" ? failing.length > 0 : failing.includes(data.checks[Number(check)].name));
      const wantSource = bySource.value === "" || row.dataset.source === bySource.value;
      row.hidden = !(wantCheck && wantSource);
      count += row.hidden ? 0 : 1;
    }
    shown.textContent = count + " of " + rows.length + " shown";
  }
  function text(tag, value, cls) {
    const node = document.createElement(tag);
    node.textContent = value;
    if (cls) node.className = cls;
    return node;
  }
  function show(cell) {
    document.querySelectorAll("td.cell.selected").forEach((c) => c.classList.remove("selected"));
    cell.classList.add("selected");
    const row = data.rows[Number(cell.dataset.row)];
    const check = data.checks[Number(cell.dataset.check)];
    const value = row.cells[Number(cell.dataset.check)];
    detail.replaceChildren(
      text("h3", check.name + " on " + row.id + (row.sample === undefined || row.sample === null ? "" : " #" + (row.sample + 1))),
      text("p", cell.dataset.reason || "", "reason"),
      text("h4", "Output"),
      text("pre", row.text === null ? "(no output)" : row.text, "output"),
      text("h4", "The check"),
      text("pre", check.code, "code"),
    );
    const open = text("button", "Open in the sidecar");
    open.addEventListener("click", () => vscode.postMessage({ type: "openCheck", line: check.line }));
    detail.appendChild(open);
  }
  document.querySelectorAll("td.cell").forEach((cell) => {
    cell.addEventListener("click", () => show(cell));
    cell.addEventListener("keydown", (event) => { if (event.key === "Enter") show(cell); });
  });
  document.querySelectorAll("button[data-grade]").forEach((button) => {
    button.addEventListener("click", () => {
      const row = data.rows[Number(button.dataset.row)];
      vscode.postMessage({ type: "grade", row: row.key, label: button.dataset.grade });
    });
  });
  // The page is drawn again after each grade and re-run: the filters and the scroll survive by the check's
  // name (a re-run may reorder the checks) and the source's value, through the webview's own state.
  function remember() {
    const check = byCheck.value === "" || byCheck.value === "any" ? byCheck.value : data.checks[Number(byCheck.value)].name;
    vscode.setState({ prompt: data.prompt, check, source: bySource.value, scrollY: window.scrollY });
  }
  const state = vscode.getState();
  const saved = state && state.prompt === data.prompt ? state : {};
  if (typeof saved.check === "string") {
    const index = data.checks.findIndex((c) => c.name === saved.check);
    byCheck.value = saved.check === "" || saved.check === "any" ? saved.check : index >= 0 ? String(index) : "";
  }
  if (typeof saved.source === "string" && Array.from(bySource.options).some((o) => o.value === saved.source)) {
    bySource.value = saved.source;
  }
  byCheck.addEventListener("change", () => { filter(); remember(); });
  bySource.addEventListener("change", () => { filter(); remember(); });
  window.addEventListener("scroll", remember, { passive: true });
  filter();
  if (typeof saved.scrollY === "number") window.scrollTo(0, saved.scrollY);
})();
</script>
</body></html>`;
}
