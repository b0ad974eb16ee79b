// The report view: one webview panel showing the active prompt's HTML report (heatmap, intervals, profiles),
// or its markdown report until the prompt has been sampled.
import * as fs from "node:fs/promises";
import * as path from "node:path";
import * as vscode from "vscode";

import { escapeHtml, markdownPage, withPolicy } from "./reportHtml";

/** What the server's `spade.report` answers (with `{"show": false}`: it only writes the files). */
export interface ReportFiles {
  prompt: string;
  path: string;
  html: string | null;
}

const NO_SAMPLES =
  "No sampling run yet, so this is the evaluation report. Run “SPADE: Sample reliability” (with a model configured) " +
  "for the reliability report: the validator heatmap, confidence intervals and profiles.";

export class ReportView implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private shown: ReportFiles | undefined;

  /** The URI of the prompt whose report has the focus: palette commands run from the report act on it. */
  focusedPrompt(): string | undefined {
    return this.panel?.active && this.shown ? vscode.Uri.file(this.shown.prompt).toString() : undefined;
  }

  /** Whether the report of this prompt (a URI) is open, so a new result should refresh it. */
  isShowing(prompt: string): boolean {
    return this.panel !== undefined && this.shown !== undefined && vscode.Uri.file(this.shown.prompt).toString() === prompt;
  }

  async show(files: ReportFiles): Promise<void> {
    const title = `SPADE report: ${path.basename(files.prompt)}`;
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel("spade.report", title, vscode.ViewColumn.Beside, {
        enableScripts: false,
        localResourceRoots: [],
      });
      this.panel.onDidDispose(() => {
        this.panel = undefined;
        this.shown = undefined;
      });
    }
    const panel = this.panel;
    this.shown = files;
    panel.title = title;
    panel.webview.html = await this.page(files, title, panel.webview.cspSource);
    panel.reveal(undefined, true);
  }

  private async page(files: ReportFiles, title: string, cspSource: string): Promise<string> {
    if (files.html) {
      return withPolicy(await fs.readFile(files.html, "utf8"), cspSource);
    }
    const markdown = await fs.readFile(files.path, "utf8");
    let body: string;
    try {
      body = await vscode.commands.executeCommand<string>("markdown.api.render", markdown);
    } catch {
      body = `<pre>${escapeHtml(markdown)}</pre>`; // the built-in markdown extension is disabled
    }
    return markdownPage(title, body, NO_SAMPLES, cspSource);
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
