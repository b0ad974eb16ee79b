// The prompt's checks in VS Code's Test Explorer (the Testing API): one item per prompt, one child per check at
// its place in the sidecar module. "Run" evaluates the prompt's checks on its labelled examples (the server's
// `spade.evaluate`, the engine `spade eval` runs) and shows each check's verdict at the prompt's tau; "Sample"
// samples the pipeline (`spade.sample`, as `spade sample` does) and shows each check's interval verdict.
import * as vscode from "vscode";

import {
  type CheckResult,
  isSidecar,
  NOT_SAMPLED,
  type PromptChecks,
  readChecks,
  readSampled,
} from "./checks";
import type { Session } from "./session";

const SIDECARS = "**/*_assertions.py";
const EXCLUDED = "**/{node_modules,.spade,.git,.venv}/**";

export class ChecksExplorer implements vscode.Disposable {
  private readonly controller: vscode.TestController;
  private readonly disposables: vscode.Disposable[] = [];
  /** The prompt a test item stands for (its own, or its parent's). */
  private readonly prompts = new Map<string, string>();

  constructor(private readonly session: Session) {
    this.controller = vscode.tests.createTestController("spade", "SPADE checks");
    this.controller.resolveHandler = async (item) => {
      if (!item) {
        await this.discover();
      }
    };
    this.controller.refreshHandler = () => this.discover();
    this.controller.createRunProfile(
      "Run on the labelled examples",
      vscode.TestRunProfileKind.Run,
      (request, token) => this.run(request, token, (prompt) => this.evaluated(prompt, token)),
      true,
    );
    this.controller.createRunProfile(
      "Sample the pipeline (calls the model)",
      vscode.TestRunProfileKind.Run,
      (request, token) => this.run(request, token, (prompt) => this.sampled(prompt, token)),
      false,
    );
    this.disposables.push(
      this.controller,
      vscode.workspace.onDidSaveTextDocument((document) => {
        if (isSidecar(document.uri.fsPath) || this.prompts.has(document.uri.fsPath)) {
          void this.refresh(document.uri.toString());
        }
      }),
    );
  }

  dispose(): void {
    for (const disposable of this.disposables) {
      disposable.dispose();
    }
  }

  /** Every sidecar module of the workspace, read into items (the Test Explorer asks when it first opens). */
  async discover(): Promise<void> {
    const modules = await vscode.workspace.findFiles(SIDECARS, EXCLUDED, 500);
    await Promise.all(modules.map((uri) => this.refresh(uri.toString())));
  }

  /** The checks of the prompt that ``uri`` (the prompt or its sidecar) belongs to; undefined when it is none. */
  async refresh(uri: string): Promise<PromptChecks | undefined> {
    let checks: PromptChecks | undefined;
    try {
      checks = readChecks(await this.session.execute("spade.checks", [uri]));
    } catch {
      return undefined; // not a prompt's module (a plain Python file named *_assertions.py), or no server yet
    }
    if (!checks) {
      return undefined;
    }
    // the items already shown are kept (a run in progress reports on them), and updated in place
    const sidecar = checks.sidecar ? vscode.Uri.file(checks.sidecar) : undefined;
    const parent = this.controller.items.get(checks.id) ?? this.controller.createTestItem(checks.id, checks.label, sidecar);
    parent.error = checks.problem;
    parent.description = checks.stale ? "changed since the last run" : undefined;
    this.prompts.set(checks.id, checks.prompt);
    const children = checks.tests.map((test) => {
      const item = parent.children.get(test.id) ?? this.controller.createTestItem(test.id, test.name, sidecar);
      item.range = new vscode.Range(test.line, 0, test.line, 0);
      this.prompts.set(test.id, checks.prompt);
      return item;
    });
    parent.children.replace(children);
    this.controller.items.add(parent);
    return checks;
  }

  /** Each prompt's wanted checks through ``verdicts`` (one job per prompt), reported on their items. */
  private async run(
    request: vscode.TestRunRequest,
    token: vscode.CancellationToken,
    verdicts: (prompt: string) => Promise<Map<string, CheckResult>>,
  ): Promise<void> {
    const wanted = request.include ?? this.topLevel();
    const byPrompt = new Map<string, Set<string>>();
    for (const item of wanted) {
      const prompt = this.prompts.get(item.id);
      if (prompt === undefined) {
        continue;
      }
      const ids = byPrompt.get(prompt) ?? new Set<string>();
      if (item.children.size === 0 && item.id !== prompt) {
        ids.add(item.id);
      } else {
        item.children.forEach((child) => ids.add(child.id));
      }
      byPrompt.set(prompt, ids);
    }
    const run = this.controller.createTestRun(request);
    try {
      for (const [prompt, ids] of byPrompt) {
        if (token.isCancellationRequested) {
          break;
        }
        const parent = this.controller.items.get(prompt);
        const items = [...ids].map((id) => parent?.children.get(id)).filter((item): item is vscode.TestItem => !!item);
        items.forEach((item) => run.started(item));
        let results: Map<string, CheckResult>;
        try {
          results = await verdicts(prompt);
        } catch (error) {
          const message = new vscode.TestMessage(`SPADE: ${error instanceof Error ? error.message : String(error)}`);
          items.forEach((item) => run.errored(item, message));
          continue;
        }
        for (const item of items) {
          this.report(run, item, results.get(item.id));
        }
      }
    } finally {
      run.end();
    }
  }

  /** The checks evaluated on the labelled examples, read back as the server states them at the prompt's tau. */
  private async evaluated(prompt: string, token: vscode.CancellationToken): Promise<Map<string, CheckResult>> {
    const uri = vscode.Uri.file(prompt).toString();
    await this.session.executeJob("spade.evaluate", uri, {}, token);
    const checks = await this.refresh(uri);
    return new Map((checks?.tests ?? []).map((test) => [test.id, test]));
  }

  /** The pipeline sampled; a check the run left out (not selected) is skipped, saying why. */
  private async sampled(prompt: string, token: vscode.CancellationToken): Promise<Map<string, CheckResult>> {
    const uri = vscode.Uri.file(prompt).toString();
    const results = readSampled(await this.session.executeJob("spade.sample", uri, {}, token), prompt);
    const checks = await this.refresh(uri);
    for (const test of checks?.tests ?? []) {
      if (!results.has(test.id)) {
        results.set(test.id, { state: "skipped", message: NOT_SAMPLED });
      }
    }
    return results;
  }

  private report(run: vscode.TestRun, item: vscode.TestItem, result: CheckResult | undefined): void {
    if (!result) {
      run.skipped(item); // removed from the module while it ran
      return;
    }
    const message = new vscode.TestMessage(result.message);
    if (item.uri && item.range) {
      message.location = new vscode.Location(item.uri, item.range.start);
    }
    switch (result.state) {
      case "passed":
        run.passed(item);
        run.appendOutput(`${item.label}: ${result.message}\r\n`, undefined, item);
        break;
      case "failed":
        run.failed(item, message);
        break;
      case "errored":
        run.errored(item, message);
        break;
      default:
        run.skipped(item);
        run.appendOutput(`${item.label}: ${result.message}\r\n`, undefined, item);
    }
  }

  private topLevel(): vscode.TestItem[] {
    const all: vscode.TestItem[] = [];
    this.controller.items.forEach((item) => all.push(item));
    return all;
  }
}
