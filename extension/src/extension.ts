// Entry point: the log channel, the status-bar item, palette commands, the report view, and restarts.
import * as vscode from "vscode";

import { PALETTE, type PaletteCommand, summarize, targetUri } from "./commands";
import { type JobStatus, type ServerState, statusView } from "./jobs";
import { onInterpreterChange } from "./python";
import { type ReportFiles, ReportView } from "./reportView";
import { Session } from "./session";
import { needsRestart } from "./settings";

const RESTART_DEBOUNCE_MS = 500;

/** The running session, so that deactivation can wait for the server to stop. */
let active: Session | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel("SPADE", { log: true });
  const status = vscode.window.createStatusBarItem("spade.status", vscode.StatusBarAlignment.Left, 50);
  status.name = "SPADE";
  let state: ServerState = "starting";
  let jobs: JobStatus[] = [];
  const render = (): void => {
    const view = statusView(state, jobs);
    status.text = view.text;
    status.tooltip = view.tooltip;
    status.command = view.command;
    status.show();
  };
  const session = new Session(log, {
    onState(next) {
      state = next;
      render();
    },
    onJobs(next) {
      jobs = next;
      render();
    },
  });
  active = session;
  const report = new ReportView();
  context.subscriptions.push(log, status, report);

  for (const command of PALETTE) {
    context.subscriptions.push(
      vscode.commands.registerCommand(command.id, (invokedOn?: unknown) => runPalette(command, invokedOn, session, report)),
    );
  }
  context.subscriptions.push(
    vscode.commands.registerCommand("spade-lsp.restart", () => session.restart()),
    vscode.commands.registerCommand("spade-lsp.showLog", () => log.show()),
  );

  let pending: NodeJS.Timeout | undefined;
  const restartSoon = (why: string): void => {
    clearTimeout(pending);
    pending = setTimeout(() => {
      log.info(`${why}: restarting the server`);
      void session.restart();
    }, RESTART_DEBOUNCE_MS);
  };
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (needsRestart((section) => event.affectsConfiguration(section))) {
        restartSoon("a setting the server reads at start changed");
      }
    }),
    { dispose: () => clearTimeout(pending) },
  );
  const pythonChanges = await onInterpreterChange(() => {
    if (session.interpreter?.source !== "setting") {
      restartSoon("the Python extension's active environment changed");
    }
  });
  if (pythonChanges) {
    context.subscriptions.push(pythonChanges);
  }

  render();
  void session.start(); // activation does not wait for the server: commands explain while it starts
}

async function runPalette(command: PaletteCommand, invokedOn: unknown, session: Session, report: ReportView): Promise<void> {
  const uri = targetUri(invokedOn, vscode.window.activeTextEditor?.document.uri.toString());
  if (!uri) {
    void vscode.window.showErrorMessage(`SPADE: ${command.title}: open a prompt file (or its _assertions.py module) first.`);
    return;
  }
  const viewing = command.server === "spade.report";
  try {
    const result = await session.execute(command.server, viewing ? [uri, { show: false }] : [uri]);
    if (viewing) {
      await report.show(result as ReportFiles);
      return;
    }
    const line = summarize(command.server, result);
    if (line) {
      void vscode.window.showInformationMessage(line);
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/cancelled$/.test(message)) {
      return; // the user cancelled it from the progress notification
    }
    void vscode.window.showErrorMessage(`SPADE: ${message}`);
  }
}

/** VS Code waits for the returned promise: the server gets its shutdown and exit before the window closes. */
export async function deactivate(): Promise<void> {
  await active?.stop();
  active = undefined;
}
