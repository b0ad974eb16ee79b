import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { DEFAULT_PROMPT_GLOBS, PROMPT_LANGUAGES, documentSelector, needsRestart } from "../src/settings";
import { escapeHtml, markdownPage, withPolicy } from "../src/reportHtml";

test("the default globs are the engine's", () => {
  const config = fs.readFileSync(path.resolve(__dirname, "..", "..", "..", "spade_lsp", "config.py"), "utf8");
  const engine = /DEFAULT_PROMPT_GLOBS = \(([^)]*)\)/.exec(config)?.[1] ?? "";
  assert.deepEqual([...engine.matchAll(/"([^"]+)"/g)].map((m) => m[1]), [...DEFAULT_PROMPT_GLOBS]);
});

test("the document selector: prompt globs (setting or defaults) plus sidecars and examples", () => {
  const patterns = documentSelector(null).map((f) => f.pattern).filter(Boolean);
  assert.deepEqual(patterns, [...DEFAULT_PROMPT_GLOBS, "**/*_assertions.py", "**/*.examples.jsonl"]);
  const custom = documentSelector(["prompts/**/*.txt"]);
  assert.deepEqual(custom.map((f) => f.pattern ?? f.language), ["prompts/**/*.txt", "**/*_assertions.py", "**/*.examples.jsonl", "prompt", "prompty"]);
});

test("the manifest activates on, and documents, every default prompt glob", () => {
  const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, "..", "..", "package.json"), "utf8"));
  const events: string[] = manifest.activationEvents;
  for (const glob of DEFAULT_PROMPT_GLOBS) {
    assert.ok(events.includes(`workspaceContains:${glob}`), `no activation event for ${glob}`);
  }
  const setting = manifest.contributes.configuration.properties["spade.promptGlobs"];
  const listed = [...String(setting.markdownDescription).matchAll(/`(\*\*\/[^`]+)`/g)].map((m) => m[1]);
  assert.deepEqual(listed, [...DEFAULT_PROMPT_GLOBS]);
  for (const language of PROMPT_LANGUAGES) {
    assert.ok(events.includes(`onLanguage:${language}`), `no activation event for ${language} buffers`);
    assert.ok(manifest.contributes.languages.some((l: any) => l.id === language), `no language ${language}`);
  }
  const prompty = manifest.contributes.languages.find((l: any) => l.id === "prompty");
  assert.deepEqual(prompty.extensions, [".prompty"]);
});

test("only settings read at start restart the server", () => {
  assert.equal(needsRestart((s) => s === "spade.interpreter"), true);
  assert.equal(needsRestart((s) => s === "spade.logLevel"), true);
  assert.equal(needsRestart((s) => s === "spade.tau" || s === "spade"), false);
});

test("the report page carries a content security policy", () => {
  const html = withPolicy('<!DOCTYPE html><html><head lang="en"><title>r</title></head><body>x</body></html>', "vscode-resource:");
  assert.match(html, /^<!DOCTYPE html><html><head lang="en">\n<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline' vscode-resource:;/);
  assert.match(withPolicy("<p>bare</p>", "src"), /<head><meta http-equiv="Content-Security-Policy"[^>]*><\/head><body><p>bare<\/p>/);
  assert.equal(escapeHtml(`<a href="x">'&'</a>`), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  const page = markdownPage("SPADE report: a<b>.prompt", "<h1>r</h1>", "no samples", "src");
  assert.ok(page.includes("<title>SPADE report: a&lt;b&gt;.prompt</title>") && page.includes("<h1>r</h1>"));
});
