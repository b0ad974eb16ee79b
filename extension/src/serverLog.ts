// The server's stderr into the log channel at the level each line was logged with. The server formats its
// records as "spade-lsp LEVEL logger: message" (spade_lsp_server._main); a traceback's lines follow their
// record, so an unprefixed line keeps the level of the line before it. No `vscode` import: unit-tested in Node.

export type Level = "trace" | "debug" | "info" | "warn" | "error";

const PREFIX = /^spade-lsp (DEBUG|INFO|WARNING|ERROR|CRITICAL) (.*)$/;
const LEVELS: Record<string, Level> = { DEBUG: "debug", INFO: "info", WARNING: "warn", ERROR: "error", CRITICAL: "error" };

/** Returns a function that classifies one stderr line after another. */
export function stderrClassifier(): (line: string) => { level: Level; text: string } {
  let previous: Level = "error"; // unprefixed output before any record (an interpreter crash) is an error
  return (line) => {
    const match = PREFIX.exec(line);
    if (match) {
      previous = LEVELS[match[1]];
      return { level: previous, text: match[2] };
    }
    return { level: previous, text: line };
  };
}
