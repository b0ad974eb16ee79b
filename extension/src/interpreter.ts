// Which Python runs the server, and whether spade-lsp is installed there. No `vscode` import: unit-tested in Node.
import { execFile } from "node:child_process";
import * as os from "node:os";
import * as path from "node:path";

export type InterpreterSource = "setting" | "python-extension" | "default";

export interface Interpreter {
  command: string;
  source: InterpreterSource;
}

export const DEFAULT_INTERPRETER = "python3";

export interface Expansions {
  workspaceFolder?: string;
  home?: string;
}

/** `~` and `${workspaceFolder}` in a configured path, as users write them in settings.json. */
export function expandPath(value: string, expansions: Expansions = {}): string {
  const home = expansions.home ?? os.homedir();
  let out = value.trim();
  if (expansions.workspaceFolder !== undefined) {
    out = out.split("${workspaceFolder}").join(expansions.workspaceFolder);
  }
  if (out === "~") {
    out = home;
  } else if (out.startsWith("~/")) {
    out = path.join(home, out.slice(2));
  }
  return out;
}

/** The `spade.interpreter` setting, else the Python extension's active environment, else `python3`. */
export function chooseInterpreter(
  setting: string | null | undefined,
  fromPythonExtension: string | undefined,
  expansions: Expansions = {},
): Interpreter {
  if (typeof setting === "string" && setting.trim() !== "") {
    return { command: expandPath(setting, expansions), source: "setting" };
  }
  if (fromPythonExtension) {
    return { command: fromPythonExtension, source: "python-extension" };
  }
  return { command: DEFAULT_INTERPRETER, source: "default" };
}

export const LOG_LEVELS = ["debug", "info", "warning", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function serverArgs(logLevel: string | undefined): string[] {
  const level = (LOG_LEVELS as readonly string[]).includes(logLevel ?? "") ? logLevel : "warning";
  return ["-m", "spade_lsp_server", "--log-level", level as string];
}

/** A shell line that installs spade-lsp for this interpreter (quoted when the path needs it). */
export function installCommand(interpreter: string): string {
  const quoted = /^[\w@%+=:,./-]+$/.test(interpreter) ? interpreter : `"${interpreter.replace(/(["\\$`])/g, "\\$1")}"`;
  return `${quoted} -m pip install spade-lsp`;
}

export type Probe =
  | { ok: true; version: string }
  | { ok: false; reason: "missing" | "not-found" | "failed"; detail: string };

const PROBE = [
  "import importlib.metadata as m",
  "import spade_lsp_server",
  "print(m.version('spade-lsp'))",
].join("; ");

/** Runs the interpreter once to learn whether it can start the server, before the client spawns it. */
export function probe(command: string, timeoutMs = 30_000): Promise<Probe> {
  return new Promise((resolve) => {
    execFile(command, ["-c", PROBE], { timeout: timeoutMs, encoding: "utf8" }, (error, stdout, stderr) => {
      if (!error) {
        resolve({ ok: true, version: stdout.trim() });
        return;
      }
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "EACCES") {
        resolve({ ok: false, reason: "not-found", detail: `${command}: ${code === "ENOENT" ? "no such program" : "not executable"}` });
      } else if (/ModuleNotFoundError|PackageNotFoundError/.test(stderr)) {
        resolve({ ok: false, reason: "missing", detail: lastLine(stderr) });
      } else {
        resolve({ ok: false, reason: "failed", detail: lastLine(stderr) || error.message });
      }
    });
  });
}

function lastLine(text: string): string {
  const lines = text.trim().split(/\r?\n/);
  return lines[lines.length - 1] ?? "";
}

/** What the user reads when the server cannot start with this interpreter. */
export function probeMessage(interpreter: Interpreter, result: Probe): string | undefined {
  if (result.ok) {
    return undefined;
  }
  const where = {
    setting: "the spade.interpreter setting",
    "python-extension": "the Python extension's active environment",
    default: "the default; set spade.interpreter to choose another",
  }[interpreter.source];
  if (result.reason === "missing") {
    return `spade-lsp is not installed for ${interpreter.command} (${where}). Install it with: ${installCommand(interpreter.command)}`;
  }
  if (result.reason === "not-found") {
    return `Cannot run the Python interpreter ${interpreter.command} (${where}): ${result.detail}`;
  }
  return `The SPADE server cannot start with ${interpreter.command} (${where}): ${result.detail}`;
}
