"""The product-blurb prompt many tests share: three versions, four labelled examples, and writers for both."""

from __future__ import annotations

import json
from pathlib import Path

from spade_lsp.workspace import Workspace, sync_prompt

V1 = "Write a product blurb for {product}.\nUse a friendly tone.\n"
V2 = V1 + "Keep it not exceeding 12 words.\n"
V3 = V2.replace("Use a friendly tone.", "Use a warm and friendly tone.") + 'Never use the word "cheap".\n'
EXAMPLES = [
    {"id": "g1", "inputs": {"product": "Kettle"}, "output": "A lovely kettle. Great for tea!", "label": "good"},
    {"id": "g2", "inputs": {"product": "Lamp"}, "output": "A warm lamp for happy reading nights.", "label": "good"},
    {"id": "b1", "inputs": {"product": "Mug"}, "output": "A cheap mug.", "label": "bad"},
    {"id": "b2", "inputs": {"product": "Shoe"}, "output": " ".join(["word"] * 20), "label": "bad"},
]  # fmt: skip


def examples_jsonl() -> str:
    return "".join(json.dumps(example) + "\n" for example in EXAMPLES)


def record(root: Path, prompt: Path, *texts: str) -> None:
    """Record each text as a saved version (what the daemon does on every save)."""
    with Workspace(root) as workspace:
        for text in texts:
            prompt.write_text(text, encoding="utf-8")
            sync_prompt(workspace, prompt, git=False)
