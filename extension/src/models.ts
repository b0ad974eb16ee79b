// The models in the status bar and its picker: what `spade.models` answers, read into the item's text and the
// picker's rows. No `vscode` import: unit-tested in Node.

export type ModelSetting = "model" | "assistantModel";

export interface Models {
  /** The pipeline's model (sampled and compared), as the prompt's settings resolve it; undefined when none. */
  model: string | undefined;
  /** The model spade-lsp asks for its own work; undefined when it works offline. */
  assistant: string | undefined;
  /** Models worth offering: the embedded one, then those the workspace sampled, most recent first. */
  recent: string[];
}

export interface ModelChoice {
  label: string;
  description?: string;
  /** The setting's new value; undefined: ask for a name; "" clears the editor's setting. */
  value: string | undefined;
}

const LOCAL = "local";

function name(value: unknown): string | undefined {
  return typeof value === "string" && value ? value : undefined;
}

/** The answer of `spade.models`, checked field by field. */
export function readModels(answer: unknown): Models {
  const r = (typeof answer === "object" && answer !== null ? answer : {}) as Record<string, unknown>;
  return {
    model: name(r.model),
    assistant: name(r.assistant_model),
    recent: Array.isArray(r.recent) ? r.recent.filter((m): m is string => typeof m === "string" && m !== "") : [],
  };
}

/** The status-bar item: the pipeline's model, the assistant in the tooltip. */
export function modelStatus(models: Models): { text: string; tooltip: string } {
  const pipeline = models.model ?? "no model";
  const assistant = models.assistant ?? "none (offline)";
  return {
    text: `$(hubot) ${pipeline}`,
    tooltip: `SPADE: pipeline model ${pipeline}; assistant model ${assistant}. Click to choose.`,
  };
}

/** The first picker: which of the two models to change. */
export function settingChoices(models: Models): { label: string; description: string; setting: ModelSetting }[] {
  return [
    { label: "Pipeline model", description: `${models.model ?? "not set"}: sampled and compared`, setting: "model" },
    {
      label: "Assistant model",
      description: `${models.assistant ?? "not set"}: writes checks, labels and judges`,
      setting: "assistantModel",
    },
  ];
}

/** The second picker: the known models (the current one marked), a name typed in, and clearing the setting. */
export function modelChoices(models: Models, setting: ModelSetting, editorValue: string | undefined): ModelChoice[] {
  const current = setting === "model" ? models.model : models.assistant;
  const known = [...new Set([...(current ? [current] : []), ...models.recent])];
  const choices: ModelChoice[] = known.map((model) => ({
    label: model,
    description: [model === current ? "current" : "", model === LOCAL ? "the embedded SmolLM2, offline" : ""]
      .filter(Boolean)
      .join(" · "),
    value: model,
  }));
  if (setting === "assistantModel" && models.model && !known.includes("same")) {
    choices.push({ label: "same", description: `the pipeline's model (${models.model})`, value: "same" });
  }
  choices.push({ label: "Enter a model name…", description: "any litellm name, e.g. openai/gpt-4o-mini", value: undefined });
  if (editorValue) {
    choices.push({ label: "Clear the editor's setting", description: "the workspace's spade.toml decides", value: "" });
  }
  return choices;
}
