// The outputs grid's panel: one webview per window showing a prompt's outputs with each check's verdict. A grade
// clicked there is written by the server into the examples file (an edit the editor applies, then saved here, so
// Ctrl+Z in that file takes it back), and the next step is offered: evaluate and select again.
import * as path from "node:path";
import * as vscode from "vscode";

import { outputsPage, readGrid } from "./outputsHtml";
import type { Session } from "./session";

const RERUN = "Re-run evaluation and selection";

interface GradeAnswer {
  examples_file?: string;
  id?: string;
  line?: number;
  added?: boolean;
  label?: string;
}

export class OutputsView implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private prompt: string | undefined;

  constructor(private readonly session: Session) {}

  /** The URI of the prompt whose grid has the focus: palette commands run from the grid act on it. */
  focusedPrompt(): string | undefined {
    return this.panel?.active ? this.prompt : undefined;
  }

  isShowing(prompt: string): boolean {
    return this.panel !== undefined && this.prompt === prompt;
  }

  /** Open (or bring to the front) the grid of ``prompt``. */
  async show(prompt: string): Promise<void> {
    await this.render(prompt);
    this.panel?.reveal(undefined, true);
  }

  /** Redraw the grid where it is: a refresh after a grade or a re-run must not take the tab the user went to
   * (the examples file, to undo) away from them. */
  private async refresh(prompt: string): Promise<void> {
    if (this.isShowing(prompt)) {
      await this.render(prompt);
    }
  }

  private async render(prompt: string): Promise<void> {
    const grid = readGrid(await this.session.execute("spade.outputs", [prompt]));
    const title = `SPADE outputs: ${path.basename(grid.prompt || vscode.Uri.parse(prompt).fsPath)}`;
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel("spade.outputs", title, vscode.ViewColumn.Beside, {
        enableScripts: true,
        localResourceRoots: [],
        retainContextWhenHidden: true,
      });
      this.panel.onDidDispose(() => {
        this.panel = undefined;
        this.prompt = undefined;
      });
      this.panel.webview.onDidReceiveMessage((message: unknown) => void this.received(message));
    }
    this.prompt = prompt;
    this.panel.title = title;
    this.panel.webview.html = outputsPage(grid, this.panel.webview.cspSource, nonce());
  }

  private async received(message: unknown): Promise<void> {
    const m = (typeof message === "object" && message !== null ? message : {}) as Record<string, unknown>;
    const prompt = this.prompt;
    if (!prompt) {
      return;
    }
    if (m.type === "openCheck" && typeof m.line === "number") {
      await this.openCheck(prompt, m.line);
    } else if (m.type === "grade" && typeof m.row === "string" && (m.label === "good" || m.label === "bad")) {
      await this.grade(prompt, m.row, m.label);
    }
  }

  private async openCheck(prompt: string, line: number): Promise<void> {
    const checks = (await this.session.execute("spade.checks", [prompt])) as { sidecar?: unknown } | undefined;
    if (typeof checks?.sidecar !== "string") {
      return;
    }
    const at = new vscode.Range(line, 0, line, 0);
    await vscode.window.showTextDocument(vscode.Uri.file(checks.sidecar), { selection: at, viewColumn: vscode.ViewColumn.One });
  }

  private async grade(prompt: string, row: string, label: "good" | "bad"): Promise<void> {
    let answer: GradeAnswer;
    try {
      answer = (await this.session.execute("spade.grade", [prompt, { row, label }])) as GradeAnswer;
    } catch (error) {
      void vscode.window.showErrorMessage(`SPADE: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    if (typeof answer.examples_file === "string") {
      // the edit is in the buffer; saved, so the evaluation reads it (undo in that file still takes it back)
      const document = await vscode.workspace.openTextDocument(vscode.Uri.file(answer.examples_file));
      await document.save();
    }
    await this.refresh(prompt);
    const file = path.basename(answer.examples_file ?? "the examples file");
    const what = answer.added ? `Added ${answer.id} as a ${label} example` : `Labelled ${answer.id} ${label}`;
    const choice = await vscode.window.showInformationMessage(
      `SPADE: ${what} in ${file} (line ${(answer.line ?? 0) + 1}; Ctrl+Z in that file undoes it). Re-run evaluation and selection to use the new label.`,
      RERUN,
    );
    if (choice === RERUN) {
      await this.rerun(prompt);
    }
  }

  private async rerun(prompt: string): Promise<void> {
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "SPADE: evaluating and selecting with the new labels" },
      async () => {
        try {
          await this.session.execute("spade.evaluate", [prompt]);
          await this.session.execute("spade.select", [prompt]);
        } catch (error) {
          void vscode.window.showErrorMessage(`SPADE: ${error instanceof Error ? error.message : String(error)}`);
        }
      },
    );
    await this.refresh(prompt);
  }

  dispose(): void {
    this.panel?.dispose();
  }
}

function nonce(): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  return Array.from({ length: 32 }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join("");
}
