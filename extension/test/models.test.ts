import assert from "node:assert/strict";
import { test } from "node:test";

import { modelChoices, modelStatus, readModels, settingChoices } from "../src/models";

test("the status bar names the pipeline's model and the assistant in its tooltip", () => {
  const models = readModels({ model: "openai/gpt-4o-mini", assistant_model: null, recent: ["local", "openai/x", 3] });
  assert.deepEqual(models, { model: "openai/gpt-4o-mini", assistant: undefined, recent: ["local", "openai/x"] });
  assert.deepEqual(modelStatus(models), {
    text: "$(hubot) openai/gpt-4o-mini",
    tooltip: "SPADE: pipeline model openai/gpt-4o-mini; assistant model none (offline). Click to choose.",
  });
  assert.equal(modelStatus(readModels(null)).text, "$(hubot) no model");
  assert.deepEqual(
    settingChoices(models).map((c) => [c.label, c.setting, c.description]),
    [
      ["Pipeline model", "model", "openai/gpt-4o-mini: sampled and compared"],
      ["Assistant model", "assistantModel", "not set: writes checks, labels and judges"],
    ],
  );
});

test("the picker offers the current model first, the known ones, a typed name, and clearing the setting", () => {
  const models = readModels({ model: "openai/gpt-4o-mini", assistant_model: "local", recent: ["local", "openai/gpt-4o-mini"] });
  const pipeline = modelChoices(models, "model", "openai/gpt-4o-mini");
  assert.deepEqual(
    pipeline.map((c) => [c.label, c.value, c.description]),
    [
      ["openai/gpt-4o-mini", "openai/gpt-4o-mini", "current"],
      ["local", "local", "the embedded SmolLM2, offline"],
      ["Enter a model name…", undefined, "any litellm name, e.g. openai/gpt-4o-mini"],
      ["Clear the editor's setting", "", "the workspace's spade.toml decides"],
    ],
  );
  const assistant = modelChoices(models, "assistantModel", undefined);
  assert.deepEqual(
    assistant.map((c) => [c.label, c.value]),
    [
      ["local", "local"],
      ["openai/gpt-4o-mini", "openai/gpt-4o-mini"],
      ["same", "same"],
      ["Enter a model name…", undefined],
    ],
  );
  assert.equal(assistant[0].description, "current · the embedded SmolLM2, offline");
});
