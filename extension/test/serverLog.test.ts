import assert from "node:assert/strict";
import { test } from "node:test";

import { stderrClassifier } from "../src/serverLog";

test("server stderr lines keep their level; a traceback follows its record", () => {
  const classify = stderrClassifier();
  assert.deepEqual(classify("Traceback (most recent call last):"), { level: "error", text: "Traceback (most recent call last):" });
  assert.deepEqual(classify("spade-lsp INFO spade_lsp_server.server: published 3 diagnostics"), {
    level: "info",
    text: "spade_lsp_server.server: published 3 diagnostics",
  });
  assert.deepEqual(classify("spade-lsp WARNING spade_lsp_client: daemon slow"), { level: "warn", text: "spade_lsp_client: daemon slow" });
  assert.deepEqual(classify("spade-lsp ERROR x: boom"), { level: "error", text: "x: boom" });
  assert.deepEqual(classify('  File "x.py", line 1'), { level: "error", text: '  File "x.py", line 1' });
  assert.equal(classify("spade-lsp DEBUG y: detail").level, "debug");
});
