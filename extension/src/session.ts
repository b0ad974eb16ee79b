// The language client's life: choose the interpreter, check it has spade-lsp, start `python -m
// spade_lsp_server`, forward commands, mirror job status, restart on demand.
import * as readline from "node:readline";
import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
  type StaticFeature,
} from "vscode-languageclient/node";

import { chooseInterpreter, installCommand, type Interpreter, probe, probeMessage, serverArgs } from "./interpreter";
import { parseJobs, type JobStatus, type ServerState } from "./jobs";
import { activeInterpreter } from "./python";
import { stderrClassifier } from "./serverLog";
import { documentSelector } from "./settings";

export interface SessionEvents {
  onState(state: ServerState): void;
  onJobs(jobs: JobStatus[]): void;
}

/** Asks the server for `spade/jobStatus` (the server sends it only to clients that set this capability). */
const jobStatusFeature: StaticFeature = {
  fillClientCapabilities(capabilities) {
    // spadeClientCommands: lenses and code actions may name this extension's commands (the history rendered)
    // and VS Code's own (the settings editor, for "configure an assistant model")
    capabilities.experimental = { ...(capabilities.experimental ?? {}), spadeJobStatus: true, spadeClientCommands: true };
  },
  initialize() {},
  getState() {
    return { kind: "static" };
  },
  clear() {},
};

function lines(input: NodeJS.ReadableStream, each: (line: string) => void): void {
  readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on("line", each);
}

export class Session {
  private client: LanguageClient | undefined;
  private starting: Promise<void> | undefined;
  interpreter: Interpreter | undefined;

  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly events: SessionEvents,
  ) {}

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  start(): Promise<void> {
    this.starting ??= this.startClient().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async startClient(): Promise<void> {
    this.events.onState("starting");
    const folder = vscode.workspace.workspaceFolders?.[0];
    const config = vscode.workspace.getConfiguration("spade", folder?.uri);
    const configured = config.get<string>("interpreter")?.trim();
    const fromPython = configured ? undefined : await activeInterpreter(folder?.uri, this.log);
    const interpreter = chooseInterpreter(configured, fromPython, {
      workspaceFolder: folder?.uri.fsPath,
    });
    this.interpreter = interpreter;
    this.log.info(`interpreter: ${interpreter.command} (${interpreter.source})`);
    const checked = await probe(interpreter.command);
    const problem = probeMessage(interpreter, checked);
    if (problem !== undefined) {
      this.log.error(problem);
      this.events.onState("unavailable");
      void this.explain(problem, interpreter);
      return;
    }
    if (checked.ok) {
      this.log.info(`spade-lsp ${checked.version}`);
    }
    const serverOptions: ServerOptions = {
      command: interpreter.command,
      args: serverArgs(config.get<string>("logLevel")),
      options: { cwd: folder?.uri.fsPath },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: documentSelector(config.get<string[] | null>("promptGlobs")),
      synchronize: { configurationSection: "spade" },
      outputChannel: this.log,
      traceOutputChannel: this.log,
      diagnosticCollectionName: "spade",
      stdioOptions: {
        stdout: (input, channel) => lines(input, (line) => channel.info(line)),
        stderr: (input, channel) => {
          const classify = stderrClassifier();
          lines(input, (line) => {
            const { level, text } = classify(line);
            channel[level](text);
          });
        },
      },
    };
    const client = new LanguageClient("spade", "SPADE", serverOptions, clientOptions);
    client.registerFeature(jobStatusFeature);
    client.onDidChangeState(({ newState }) => {
      if (this.client !== client) {
        return;
      }
      this.events.onState(newState === State.Running ? "running" : newState === State.Starting ? "starting" : "stopped");
      if (newState !== State.Running) {
        this.events.onJobs([]);
      }
    });
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      this.log.error(`the server did not start: ${String(error)}`);
      this.events.onState("stopped");
      void vscode.window.showErrorMessage(`SPADE: the server did not start (${String(error)}). See the SPADE log.`, "Show log").then(
        (choice) => choice && this.log.show(),
      );
      return;
    }
    client.onNotification("spade/jobStatus", (params: unknown) => this.events.onJobs(parseJobs(params)));
    this.events.onState("running");
  }

  private async explain(problem: string, interpreter: Interpreter): Promise<void> {
    const copy = "Copy install command";
    const choose = "Set interpreter";
    const actions = problem.includes("not installed") ? [copy, choose] : [choose];
    const choice = await vscode.window.showErrorMessage(`SPADE: ${problem}`, ...actions);
    if (choice === copy) {
      await vscode.env.clipboard.writeText(installCommand(interpreter.command));
    } else if (choice === choose) {
      await vscode.commands.executeCommand("workbench.action.openSettings", "spade.interpreter");
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.events.onJobs([]);
    if (client?.needsStop()) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.log.warn(`the server did not stop cleanly: ${String(error)}`);
      }
    }
    await client?.dispose();
  }

  async restart(): Promise<void> {
    await this.starting;
    this.log.info("restarting the server");
    await this.stop();
    await this.start();
  }

  /** A job command (`spade.evaluate`, `spade.sample`, ...) that ``token`` cancels in the daemon: the job is named
   * here (`job_key`) because cancelling the request alone would leave the daemon's job running. */
  async executeJob(
    command: string,
    uri: string,
    options: Record<string, unknown>,
    token: vscode.CancellationToken,
  ): Promise<unknown> {
    const key = `${command}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const listener = token.onCancellationRequested(() => {
      void this.execute("spade.cancelJob", [key]).catch(() => undefined);
    });
    try {
      return await this.execute(command, [uri, { ...options, job_key: key }]);
    } finally {
      listener.dispose();
    }
  }

  /** `workspace/executeCommand` with the server's command id. */
  async execute(command: string, args: unknown[]): Promise<unknown> {
    await this.starting;
    if (!this.client || !this.running) {
      throw new Error("the SPADE server is not running (see the SPADE log, or run “SPADE: Restart server”)");
    }
    return this.client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
  }
}
