// What a comparison from the palette varies, asked before the server runs it: two versions from the prompt's
// history, two models, or two temperatures (the baseline first, as `spade compare` takes them).
import * as vscode from "vscode";

import { type CompareKind, comparedValues } from "./commands";
import type { Session } from "./session";

interface HistoryVersion {
  number: number;
  created_at?: string;
  message?: string | null;
}

/** The command's parameters, or undefined when the user left a picker (nothing runs then). */
export async function askComparison(kind: CompareKind, prompt: string, session: Session): Promise<Record<string, unknown> | undefined> {
  if (kind === "versions") {
    return askVersions(prompt, session);
  }
  const model = vscode.workspace.getConfiguration("spade", vscode.Uri.parse(prompt)).get<string>("model") ?? "";
  const text = await vscode.window.showInputBox({
    title: kind === "models" ? "SPADE: Compare models" : "SPADE: Compare temperatures",
    prompt:
      kind === "models"
        ? "Two models to sample on the same inputs, the baseline first (litellm names, or local for the embedded model)"
        : "Two sampling temperatures to compare on the same inputs, the baseline first",
    value: kind === "models" ? (model ? `${model}, ` : "") : "0, 1",
    validateInput: (value) => comparedValues(kind, value).problem,
  });
  const values = text === undefined ? undefined : comparedValues(kind, text).values;
  return values === undefined ? undefined : { [kind]: values };
}

async function askVersions(prompt: string, session: Session): Promise<Record<string, unknown> | undefined> {
  const history = (await session.execute("spade.showHistory", [prompt, { show: false }])) as { versions?: HistoryVersion[] };
  const versions = [...(history.versions ?? [])].reverse(); // newest first
  if (versions.length < 2) {
    void vscode.window.showInformationMessage(
      "SPADE: only one version of this prompt is recorded; edit and save it to make a second, or compare models instead.",
    );
    return undefined;
  }
  const item = (version: HistoryVersion): vscode.QuickPickItem & { number: number } => ({
    label: `v${version.number}`,
    description: [version.created_at?.slice(0, 16).replace("T", " "), version.message?.split("\n")[0]].filter(Boolean).join(" · "),
    number: version.number,
  });
  const candidate = await vscode.window.showQuickPick(versions.map(item), {
    title: "SPADE: Compare versions (1/2)",
    placeHolder: "The version to judge (the newest is first)",
  });
  if (!candidate) {
    return undefined;
  }
  const baseline = await vscode.window.showQuickPick(
    versions.filter((version) => version.number !== candidate.number).map(item),
    { title: "SPADE: Compare versions (2/2)", placeHolder: `The baseline to compare v${candidate.number} with` },
  );
  return baseline ? { versions: [baseline.number, candidate.number] } : undefined;
}
