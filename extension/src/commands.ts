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
  | "spade.report"
  | "spade.showHistory";

export interface PaletteCommand {
  id: string;
  title: string;
  server: ServerCommand;
}

export const PALETTE: readonly PaletteCommand[] = [
  { id: "spade-lsp.synthesize", title: "Synthesize assertions", server: "spade.synthesize" },
  { id: "spade-lsp.evaluate", title: "Run evaluation", server: "spade.evaluate" },
  { id: "spade-lsp.select", title: "Select assertions", server: "spade.select" },
  { id: "spade-lsp.sample", title: "Sample reliability", server: "spade.sample" },
  { id: "spade-lsp.showReport", title: "Show report", server: "spade.report" },
  { id: "spade-lsp.showHistory", title: "Show prompt history", server: "spade.showHistory" },
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
      if (typeof r.module_error === "string" && r.module_error) {
        line += `; the module failed to load: ${r.module_error}`;
      } else if (typeof r.errors_total === "number" && r.errors_total > 0) {
        line += `; ${count(r.errors_total, "cell")} raised an error`;
      }
      return line;
    }
    case "spade.select": {
      const selected = list(r.selected);
      return (
        `SPADE: selected ${count(selected.length, "assertion")} (${selected.join(", ") || "none"}); ` +
        `coverage ${percent(r.coverage)}, false failures ${percent(r.ffr)}, ${String(r.status ?? "unknown")}`
      );
    }
    case "spade.sample": {
      const pPass = (r.p_pass ?? {}) as Result;
      const calls = typeof r.calls === "number" ? `, ${count(r.calls, "call")}` : "";
      return `SPADE: sampled ${String(r.model ?? "the model")}: P(pass) ${percent(pPass.measured)}${calls}. Show report for the intervals.`;
    }
    case "spade.report":
    case "spade.showHistory":
      return undefined;
  }
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
