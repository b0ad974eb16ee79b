// The prompt's checks as tests: what `spade.checks` answers, read into test states. No `vscode` import:
// unit-tested in Node. The verdicts are the engine's (the same numbers `spade eval` computes); this only maps them.

export type CheckState = "passed" | "failed" | "errored" | "skipped" | "unrun";

export interface CheckTest {
  /** The test item's id: the prompt's path and the check's name, so two prompts' checks never collide. */
  id: string;
  name: string;
  /** 0-based line of the check's name in the sidecar module. */
  line: number;
  state: CheckState;
  message: string;
}

export interface PromptChecks {
  id: string;
  prompt: string;
  sidecar: string | undefined;
  label: string;
  tests: CheckTest[];
  /** One line for the whole prompt when its checks cannot be read (a syntax error, no sidecar yet). */
  problem: string | undefined;
  /** The sidecar changed since the evaluation the states come from: a run brings them up to date. */
  stale: boolean;
}

const STATES = new Set<CheckState>(["passed", "failed", "errored", "skipped"]);

function text(value: unknown): string | undefined {
  return typeof value === "string" && value ? value : undefined;
}

/** A path's last part (either separator): what a label shows of a file. */
export function basename(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}

/** The answer of `spade.checks`, checked field by field (a server of another version may send less). */
export function readChecks(answer: unknown): PromptChecks | undefined {
  if (typeof answer !== "object" || answer === null) {
    return undefined;
  }
  const r = answer as Record<string, unknown>;
  const prompt = text(r.prompt);
  if (!prompt) {
    return undefined;
  }
  const tests: CheckTest[] = [];
  for (const raw of Array.isArray(r.checks) ? r.checks : []) {
    const check = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
    const name = text(check.name);
    if (!name) {
      continue;
    }
    const outcome = (typeof check.outcome === "object" && check.outcome !== null ? check.outcome : {}) as Record<
      string,
      unknown
    >;
    const state = STATES.has(outcome.state as CheckState) ? (outcome.state as CheckState) : "unrun";
    tests.push({
      id: `${prompt}::${name}`,
      name,
      line: typeof check.line === "number" ? check.line : 0,
      state,
      message: text(outcome.message) ?? (state === "unrun" ? "not evaluated yet: run it" : ""),
    });
  }
  const sidecar = text(r.sidecar);
  let problem: string | undefined;
  if (text(r.syntax_error)) {
    problem = `${basename(sidecar ?? "the sidecar")} does not parse: ${text(r.syntax_error)}`;
  } else if (r.sidecar_exists === false) {
    problem = "no checks yet: run “SPADE: Synthesize assertions”, or accept an “Add assertion” action";
  }
  return {
    id: prompt,
    prompt,
    sidecar,
    label: basename(prompt),
    tests,
    problem,
    stale: r.stale === true,
  };
}

/** A sidecar module's name (`NAME_assertions.py`): saving one changes the checks of its prompt. */
export function isSidecar(path: string): boolean {
  return /_assertions\.py$/.test(path);
}

export interface CheckResult {
  state: CheckState;
  message: string;
}

/** The answer of `spade.sample`, per check of ``prompt`` (by test id): its interval verdict as a test state.
 * A check the run did not sample (the prompt's selection left it out) gets no entry. */
export function readSampled(answer: unknown, prompt: string): Map<string, CheckResult> {
  const results = new Map<string, CheckResult>();
  const checks = (answer as { checks?: unknown } | null)?.checks;
  for (const raw of Array.isArray(checks) ? checks : []) {
    const check = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
    const name = text(check.name);
    if (!name) {
      continue;
    }
    const state = STATES.has(check.state as CheckState) ? (check.state as CheckState) : "skipped";
    results.set(`${prompt}::${name}`, { state, message: text(check.message) ?? "" });
  }
  return results;
}

/** Why a check of the sidecar has no sampled verdict. */
export const NOT_SAMPLED =
  "not sampled: the prompt's latest selection left it out (run “SPADE: Select assertions” to choose again)";
