// The status-bar item with the pipeline's model, and its picker: choosing a model writes the editor's setting
// (`spade.model` or `spade.assistantModel`), which the server reads as the user's, as if typed in Settings.
import * as vscode from "vscode";

import { type ModelSetting, modelChoices, type Models, modelStatus, readModels, settingChoices } from "./models";
import type { Session } from "./session";

export const PICK_MODEL = "spade-lsp.pickModel";

export class ModelPicker implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly disposables: vscode.Disposable[] = [];
  private models: Models | undefined;

  constructor(private readonly session: Session) {
    this.item = vscode.window.createStatusBarItem("spade.models", vscode.StatusBarAlignment.Left, 49);
    this.item.name = "SPADE models";
    this.item.command = PICK_MODEL;
    this.disposables.push(
      this.item,
      vscode.commands.registerCommand(PICK_MODEL, () => this.pick()),
      vscode.window.onDidChangeActiveTextEditor(() => void this.refresh()),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration("spade.model") || event.affectsConfiguration("spade.assistantModel")) {
          void this.refresh();
        }
      }),
    );
  }

  dispose(): void {
    for (const disposable of this.disposables) {
      disposable.dispose();
    }
  }

  /** The prompt's models (a prompt's front matter may name its own), or the workspace's. */
  async refresh(): Promise<void> {
    if (!this.session.running) {
      return;
    }
    const document = vscode.window.activeTextEditor?.document.uri.toString();
    let answer: unknown;
    try {
      answer = await this.session.execute("spade.models", document ? [document] : []);
    } catch {
      answer = await this.session.execute("spade.models", []).catch(() => undefined); // not a prompt: the workspace's
    }
    this.models = readModels(answer);
    const view = modelStatus(this.models);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.show();
  }

  private async pick(): Promise<void> {
    await this.refresh();
    const models = this.models ?? readModels(undefined);
    const which = await vscode.window.showQuickPick(settingChoices(models), { title: "SPADE: choose a model" });
    if (!which) {
      return;
    }
    const setting: ModelSetting = which.setting;
    const config = vscode.workspace.getConfiguration("spade", vscode.workspace.workspaceFolders?.[0]?.uri);
    const inspected = config.inspect<string>(setting);
    const editorValue = inspected?.workspaceFolderValue ?? inspected?.workspaceValue ?? inspected?.globalValue;
    const chosen = await vscode.window.showQuickPick(modelChoices(models, setting, editorValue || undefined), {
      title: `SPADE: ${which.label.toLowerCase()}`,
      placeHolder: which.description,
    });
    if (!chosen) {
      return;
    }
    const value =
      chosen.value ??
      (await vscode.window.showInputBox({
        title: `SPADE: ${which.label.toLowerCase()}`,
        prompt: "A litellm model name (provider/model), or local for the embedded model",
        validateInput: (text) => (text.trim() ? undefined : "Enter a model name"),
      }));
    if (value === undefined) {
      return;
    }
    const target = vscode.workspace.workspaceFolders ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
    await config.update(setting, value.trim() || undefined, target);
    await this.refresh();
  }
}
