// Which documents the client sends to the server, and which settings need a restart. No `vscode` import.

/** The engine's default prompt globs (spade_lsp.config.DEFAULT_PROMPT_GLOBS). */
export const DEFAULT_PROMPT_GLOBS = [
  "**/*.prompt",
  "**/*.prompt.md",
  "**/*.prompt.txt",
  "**/*.prompty",
  "**/*.prompt.json",
  "**/*.prompt.yaml",
  "**/*.prompt.yml",
] as const;

/** Language ids of prompt buffers with no file yet (`untitled:`): spade's own, and Prompty's. */
export const PROMPT_LANGUAGES = ["prompt", "prompty"] as const;

/** Files the server reads besides prompts: sidecar modules, examples, settings. */
export const COMPANION_GLOBS = ["**/*_assertions.py", "**/*.examples.jsonl"] as const;

export interface FilePattern {
  scheme: "file" | "untitled";
  pattern?: string;
  language?: string;
}

/** Every prompt glob (the setting's, else the defaults) plus the companions, on disk; unsaved prompt buffers too. */
export function documentSelector(promptGlobs: readonly string[] | null | undefined): FilePattern[] {
  const globs = promptGlobs && promptGlobs.length > 0 ? promptGlobs : DEFAULT_PROMPT_GLOBS;
  const patterns = [...new Set([...globs, ...COMPANION_GLOBS])];
  return [
    ...patterns.map((pattern): FilePattern => ({ scheme: "file", pattern })),
    ...PROMPT_LANGUAGES.map((language): FilePattern => ({ scheme: "untitled", language })),
  ];
}

/** Settings read when the server starts; the others reach the running server as didChangeConfiguration. */
export const RESTART_SETTINGS = ["spade.interpreter", "spade.logLevel", "spade.promptGlobs"] as const;

export function needsRestart(affects: (section: string) => boolean): boolean {
  return RESTART_SETTINGS.some((section) => affects(section));
}
