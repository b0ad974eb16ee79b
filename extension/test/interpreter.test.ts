import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { chooseInterpreter, expandPath, installCommand, probe, probeMessage, serverArgs } from "../src/interpreter";

test("the setting wins, then the Python extension, then python3", () => {
  assert.deepEqual(chooseInterpreter("/opt/py/bin/python", "/env/bin/python"), { command: "/opt/py/bin/python", source: "setting" });
  assert.deepEqual(chooseInterpreter("  ", "/env/bin/python"), { command: "/env/bin/python", source: "python-extension" });
  assert.deepEqual(chooseInterpreter(null, undefined), { command: "python3", source: "default" });
});

test("~ and ${workspaceFolder} expand in the setting", () => {
  const expansions = { workspaceFolder: "/work/repo", home: "/home/ada" };
  assert.equal(expandPath("${workspaceFolder}/.venv/bin/python", expansions), "/work/repo/.venv/bin/python");
  assert.equal(expandPath("~/envs/spade/bin/python", expansions), "/home/ada/envs/spade/bin/python");
  assert.equal(chooseInterpreter("~/py", undefined, expansions).command, "/home/ada/py");
  assert.equal(expandPath("${workspaceFolder}/py", { home: "/h" }), "${workspaceFolder}/py"); // no folder open
});

test("the server runs as a module with the configured log level", () => {
  assert.deepEqual(serverArgs("info"), ["-m", "spade_lsp_server", "--log-level", "info"]);
  assert.deepEqual(serverArgs("chatty"), ["-m", "spade_lsp_server", "--log-level", "warning"]);
  assert.deepEqual(serverArgs(undefined), ["-m", "spade_lsp_server", "--log-level", "warning"]);
});

test("the install command quotes paths that need it", () => {
  assert.equal(installCommand("/usr/bin/python3"), "/usr/bin/python3 -m pip install spade-lsp");
  assert.equal(installCommand("/Users/Ada Lovelace/py"), '"/Users/Ada Lovelace/py" -m pip install spade-lsp');
});

function fakePython(body: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "spade-probe-"));
  const file = path.join(dir, "python");
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

test("probe: a missing program, a missing package, a broken install, a working one", async () => {
  const missingProgram = await probe("/nonexistent/bin/python");
  assert.deepEqual(missingProgram, { ok: false, reason: "not-found", detail: "/nonexistent/bin/python: no such program" });

  const withoutPackage = fakePython(`echo "ModuleNotFoundError: No module named 'spade_lsp_server'" >&2; exit 1`);
  const missing = await probe(withoutPackage);
  assert.deepEqual(missing, { ok: false, reason: "missing", detail: "ModuleNotFoundError: No module named 'spade_lsp_server'" });
  const message = probeMessage({ command: withoutPackage, source: "setting" }, missing) ?? "";
  assert.match(message, /^spade-lsp is not installed for .*python \(the spade.interpreter setting\)\. Install it with: .* -m pip install spade-lsp$/);

  const broken = await probe(fakePython(`echo "SyntaxError: bad" >&2; exit 1`));
  assert.deepEqual(broken, { ok: false, reason: "failed", detail: "SyntaxError: bad" });
  assert.equal(probeMessage({ command: "python3", source: "default" }, { ok: true, version: "1" }), undefined);
});

test("probe: the interpreter that has spade-lsp (SPADE_TEST_PYTHON, set by make)", { skip: !process.env.SPADE_TEST_PYTHON }, async () => {
  const result = await probe(process.env.SPADE_TEST_PYTHON as string);
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.match((result as { version: string }).version, /^\d+\.\d+/);
});
