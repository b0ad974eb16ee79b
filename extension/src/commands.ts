// The palette commands and what their results say. No `vscode` import: unit-tested in Node.
//
// Palette ids (`spade-lsp.*`) are the extension's own; each sends `workspace/executeCommand` with the server's
// id (`spade.*`), which vscode-languageclient registers for code lenses and code actions. So nothing is
// registered twice, and the palette can pass the active editor's document as the prompt.

export type ServerCommand =
  | "spade.synthesize"
  | "spade.evaluate"
  | "spade.select"
  | "spade.sample"
  | "spade.compare"
  | "spade.report"
  | "spade.showHistory"
  | "spade.outputs"
  | "spade.trustWorkspace";

/** What a comparison varies: the extension asks for the two values before it sends the command. */
export type CompareKind = "versions" | "models" | "temperatures";

export interface PaletteCommand {
  id: string;
  title: string;
  server: ServerCommand;
  asks?: CompareKind;
}

export const PALETTE: readonly PaletteCommand[] = [
  { id: "spade-lsp.synthesize", title: "Synthesize assertions", server: "spade.synthesize" },
  { id: "spade-lsp.evaluate", title: "Run evaluation", server: "spade.evaluate" },
  { id: "spade-lsp.select", title: "Select assertions", server: "spade.select" },
  { id: "spade-lsp.sample", title: "Sample reliability", server: "spade.sample" },
  { id: "spade-lsp.compareVersions", title: "Compare versions…", server: "spade.compare", asks: "versions" },
  { id: "spade-lsp.compareModels", title: "Compare models…", server: "spade.compare", asks: "models" },
  { id: "spade-lsp.compareTemperatures", title: "Compare temperatures…", server: "spade.compare", asks: "temperatures" },
  { id: "spade-lsp.showReport", title: "Show report", server: "spade.report" },
  { id: "spade-lsp.showOutputs", title: "Show outputs", server: "spade.outputs" },
  { id: "spade-lsp.showHistory", title: "Show prompt history", server: "spade.showHistory" },
  { id: "spade-lsp.trustWorkspace", title: "Trust this workspace", server: "spade.trustWorkspace" },
];

type Result = Record<string, unknown>;

function list(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
}

function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function percent(value: unknown): string {
  return typeof value === "number" ? `${Math.round(value * 100)}%` : "?";
}

function basename(value: unknown): string {
  return typeof value === "string" ? value.split(/[\\/]/).pop() ?? value : "the sidecar module";
}

/** One line for a notification after a command finished; undefined when the editor already shows the result. */
export function summarize(command: ServerCommand, result: unknown): string | undefined {
  const r = (typeof result === "object" && result !== null ? result : {}) as Result;
  switch (command) {
    case "spade.synthesize": {
      const added = list(r.added);
      const updated = list(r.updated);
      const module = basename(r.sidecar);
      if (added.length === 0 && updated.length === 0) {
        return `SPADE: no new assertion; ${module} already covers every instruction it can check`;
      }
      const parts = [added.length ? `added ${added.join(", ")}` : "", updated.length ? `updated ${updated.join(", ")}` : ""];
      return `SPADE: ${parts.filter(Boolean).join("; ")} in ${module}`;
    }
    case "spade.evaluate": {
      const assertions = list(r.assertions).length;
      const examples = typeof r.examples === "number" ? r.examples : 0;
      let line = `SPADE: evaluated ${count(assertions, "assertion")} on ${count(examples, "example")}`;
      if (typeof r.run_id === "number") {
        line += ` (run ${r.run_id})`;
      }
      // cells that could not run for want of a model are not errors: the report counts them apart, so do we
      const waiting = list(r.needs_model).length;
      const waitingCells = typeof r.needs_model_cells === "number" ? r.needs_model_cells : 0;
      // a check that reads an input an example lacks does not apply there: neither an error nor a failure
      const notApplicable = typeof r.not_applicable_cells === "number" ? r.not_applicable_cells : 0;
      const errors =
        typeof r.errors_total === "number" ? Math.max(0, r.errors_total - waitingCells - notApplicable) : 0;
      if (typeof r.module_error === "string" && r.module_error) {
        line += `; the module failed to load: ${r.module_error}`;
      } else if (errors > 0) {
        line += `; ${count(errors, "cell")} raised an error`;
      }
      if (notApplicable > 0) {
        line += `; ${count(notApplicable, "cell")} not applicable (the example lacks an input the check reads)`;
      }
      if (waiting > 0) {
        line += `; ${count(waiting, "assertion")} ${waiting === 1 ? "needs" : "need"} a model and ${waiting === 1 ? "was" : "were"} left out (configure an assistant model to run ${waiting === 1 ? "it" : "them"})`;
      }
      return line;
    }
    case "spade.select": {
      const selected = list(r.selected);
      const notes = list(r.notes).filter((note) => note.startsWith("left out "));
      const left = notes.length ? `; ${notes.join("; ")}` : "";
      if (r.status === "infeasible") {
        const best = (r.best ?? {}) as Result;
        const reached = list(best.selected);
        const reach = reached.length
          ? ` The best it could reach: ${reached.join(", ")} (catches ${percent(best.coverage)} of the bad examples, flags ${percent(best.ffr)} of the good ones).`
          : "";
        const why = typeof r.reason === "string" ? r.reason : "the limits cannot both be met";
        return `SPADE: no set of assertions meets both limits: ${why}.${reach} Loosen spade.tau or spade.alpha in Settings, or label more examples${left}`;
      }
      return (
        `SPADE: selected ${count(selected.length, "assertion")} (${selected.join(", ") || "none"}); ` +
        `catches ${percent(r.coverage)} of the bad examples, flags ${percent(r.ffr)} of the good ones${left}`
      );
    }
    case "spade.sample": {
      const measured = ((r.p_pass ?? {}) as Result).measured as Result | undefined;
      const calls = typeof r.calls === "number" ? ` (${count(r.calls, "call")})` : "";
      const model = String(r.model ?? "the model");
      if (typeof measured?.rate !== "number") {
        return `SPADE: sampled ${model}${calls}, but no output could be checked: see the report (Show report).`;
      }
      const level = typeof r.confidence === "number" ? ` (${percent(r.confidence)} interval)` : "";
      const interval =
        typeof measured.ci_low === "number" && typeof measured.ci_high === "number"
          ? `, likely between ${percent(measured.ci_low)} and ${percent(measured.ci_high)}${level}`
          : "";
      return `SPADE: sampled ${model}${calls}: ${percent(measured.rate)} of its outputs passed every check${interval}. Show report for each check.`;
    }
    case "spade.compare":
      return typeof r.verdict === "string" ? `SPADE: ${r.verdict}. Show report for each check.` : undefined;
    case "spade.report":
    case "spade.showHistory":
    case "spade.outputs":
      return undefined;
    case "spade.trustWorkspace":
      return typeof r.path === "string"
        ? `SPADE: trusted ${r.path}: its own settings files and front matter may now choose models, endpoints, key variables and the sandbox`
        : undefined;
  }
}

/** A next step a message offers as a button: a palette command, a setting, or a file. */
export interface MessageAction {
  title: string;
  /** A VS Code command id and its arguments (`prompt` stands for the prompt's URI). */
  command: string;
  args: unknown[];
}

/** The buttons an error or notice gets, from the next steps its words name (the server words them for the editor:
 * palette commands, settings, "Open examples"; never CLI flags). */
export function messageActions(message: string): MessageAction[] {
  const out: MessageAction[] = [];
  const add = (title: string, command: string, ...args: unknown[]): void => {
    if (!out.some((action) => action.title === title)) {
      out.push({ title, command, args });
    }
  };
  if (/Open examples|labelled examples|no examples/i.test(message)) {
    add("Open examples", "spade.openExamples", "prompt");
  }
  if (/Run evaluation|evaluation run to select from/i.test(message)) {
    add("Run evaluation", "spade-lsp.evaluate", "prompt");
  }
  if (/assistant model|spade\.assistantModel/i.test(message)) {
    add("Configure an assistant model", "workbench.action.openSettings", "spade.assistantModel");
  }
  if (/spade\.model setting|no model is configured/i.test(message)) {
    add("Set the model", "workbench.action.openSettings", "spade.model");
  }
  if (/spade\.tau|spade\.alpha/.test(message)) {
    add("Open selection settings", "workbench.action.openSettings", "spade.tau");
  }
  if (/Show report/.test(message)) {
    add("Show report", "spade-lsp.showReport", "prompt");
  }
  if (/spade\.daemonAutostart/.test(message)) {
    add("Open setting", "workbench.action.openSettings", "spade.daemonAutostart");
  }
  return out;
}

/** The prompt a command is about: the URI it was invoked on (explorer, editor title), else the active editor's. */
export function targetUri(invokedOn: unknown, activeEditorUri: string | undefined): string | undefined {
  if (typeof invokedOn === "string" && invokedOn) {
    return invokedOn;
  }
  const fromObject = (invokedOn as { toString?: () => string; scheme?: unknown } | undefined) ?? undefined;
  if (fromObject && typeof fromObject.scheme === "string" && typeof fromObject.toString === "function") {
    return fromObject.toString();
  }
  return activeEditorUri;
}

/** Two values to compare, the baseline first, from what the user typed ("openai/a, local" or "0.2 1"); a
 * problem in words when the text does not hold two different ones. */
export function comparedValues(kind: "models" | "temperatures", text: string): { values?: (string | number)[]; problem?: string } {
  const parts = text.split(/[,\s]+/).map((part) => part.trim()).filter((part) => part !== "");
  if (parts.length !== 2) {
    return { problem: `give two ${kind}, the baseline first (for example ${kind === "models" ? "openai/gpt-4o-mini, local" : "0.2, 1"})` };
  }
  if (parts[0] === parts[1]) {
    return { problem: `give two different ${kind}` };
  }
  if (kind === "models") {
    return { values: parts };
  }
  const numbers = parts.map(Number);
  if (numbers.some((value) => !Number.isFinite(value) || value < 0 || value > 2)) {
    return { problem: "temperatures are numbers from 0 to 2" };
  }
  return { values: numbers };
}
