// Entry point: the log channel, the status-bar item, palette commands, the report view, and restarts.
import * as vscode from "vscode";

import { messageActions, PALETTE, type PaletteCommand, summarize, targetUri } from "./commands";
import { askComparison } from "./compare";
import { type JobStatus, LongJobs, type ServerState, statusView } from "./jobs";
import { ModelPicker } from "./modelPicker";
import { OutputsView } from "./outputsView";
import { onInterpreterChange } from "./python";
import { type ReportFiles, ReportView } from "./reportView";
import { Session } from "./session";
import { needsRestart } from "./settings";
import { ChecksExplorer } from "./testExplorer";

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
      longJobs.changed(next);
    },
  });
  // a job that runs for more than a moment also gets a notification with its progress and a Cancel button
  const notices = new Map<string, { report: (job: JobStatus) => void; done: () => void }>();
  const longJobs = new LongJobs(
    {
      show(job) {
        void vscode.window.withProgress(
          { location: vscode.ProgressLocation.Notification, title: `SPADE: ${job.title} (${job.prompt})`, cancellable: true },
          (progress, token) =>
            new Promise<void>((resolve) => {
              let last = 0;
              const report = (current: JobStatus): void => {
                const percentage = current.percentage ?? last;
                progress.report({ message: current.message ?? undefined, increment: Math.max(0, percentage - last) });
                last = Math.max(last, percentage);
              };
              report(job);
              notices.set(job.id, { report, done: resolve });
              token.onCancellationRequested(() => {
                void session.execute("spade.cancelJob", [job.id]).catch(() => undefined);
              });
            }),
        );
      },
      update(job) {
        notices.get(job.id)?.report(job);
      },
      end(id) {
        notices.get(id)?.done();
        notices.delete(id);
      },
    },
    (callback, ms) => void setTimeout(callback, ms),
  );
  active = session;
  const report = new ReportView();
  const explorer = new ChecksExplorer(session);
  const models = new ModelPicker(session);
  const outputs = new OutputsView(session);
  context.subscriptions.push(log, status, report, explorer, models, outputs);

  for (const command of PALETTE) {
    context.subscriptions.push(
      vscode.commands.registerCommand(command.id, (invokedOn?: unknown) => runPalette(command, invokedOn, session, { report, outputs })),
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
  // activation does not wait for the server: commands explain while it starts; the checks appear once it runs
  void session.start().then(() => Promise.all([explorer.discover(), models.refresh()]));
}

interface Views {
  report: ReportView;
  outputs: OutputsView;
}

async function runPalette(command: PaletteCommand, invokedOn: unknown, session: Session, views: Views): Promise<void> {
  const { report, outputs } = views;
  const focused = report.focusedPrompt() ?? outputs.focusedPrompt();
  const uri = targetUri(invokedOn, vscode.window.activeTextEditor?.document.uri.toString() ?? focused);
  if (!uri) {
    void vscode.window.showErrorMessage(`SPADE: ${command.title}: open a prompt file (or its _assertions.py module) first.`);
    return;
  }
  const viewing = command.server === "spade.report";
  const history = command.server === "spade.showHistory";
  try {
    if (command.server === "spade.outputs") {
      await outputs.show(uri);
      return;
    }
    const asked = command.asks ? await askComparison(command.asks, uri, session) : undefined;
    if (command.asks && !asked) {
      return; // the user left the picker
    }
    const args = viewing || history ? [uri, { show: false }] : asked ? [uri, asked] : [uri];
    const result = await session.execute(command.server, args);
    if (viewing) {
      await report.show(result as ReportFiles);
      return;
    }
    if (history) {
      // the history rendered (a Markdown preview), not the raw Markdown
      const path = (result as { path?: unknown } | undefined)?.path;
      if (typeof path === "string") {
        await vscode.commands.executeCommand("markdown.showPreview", vscode.Uri.file(path));
      }
      return;
    }
    const line = summarize(command.server, result);
    if (line) {
      void offer(line, uri, false);
    }
    if (report.isShowing(uri)) {
      // the open report shows the new result
      await report.show((await session.execute("spade.report", [uri, { show: false }])) as ReportFiles);
    }
    if (outputs.isShowing(uri)) {
      await outputs.show(uri); // and the open grid, the new verdicts
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/: cancelled\b/.test(message)) {
      // the user cancelled it from the progress notification: say what was kept
      void vscode.window.showInformationMessage(`SPADE: ${message}`);
      return;
    }
    void offer(`SPADE: ${message}`, uri, true);
  }
}

/** A notification with the next steps its words name as buttons; the chosen one runs. */
async function offer(message: string, prompt: string, error: boolean): Promise<void> {
  const actions = messageActions(message);
  const titles = actions.map((action) => action.title);
  const chosen = await (error
    ? vscode.window.showErrorMessage(message, ...titles)
    : vscode.window.showInformationMessage(message, ...titles));
  const action = actions.find((item) => item.title === chosen);
  if (action) {
    await vscode.commands.executeCommand(action.command, ...action.args.map((arg) => (arg === "prompt" ? prompt : arg)));
  }
}

/** VS Code waits for the returned promise: the server gets its shutdown and exit before the window closes. */
export async function deactivate(): Promise<void> {
  await active?.stop();
  active = undefined;
}
