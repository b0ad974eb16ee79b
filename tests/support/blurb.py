"""The product-blurb prompt many tests share: three versions, four labelled examples, and writers for both."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from spade_lsp.workspace import Workspace, sync_prompt
from tests.support.openai_stub import Reply, chat_reply, user_text

V1 = "Write a product blurb for {product}.\nUse a friendly tone.\n"
V2 = V1 + "Keep it not exceeding 12 words.\n"
V3 = V2.replace("Use a friendly tone.", "Use a warm and friendly tone.") + 'Never use the word "cheap".\n'
EXAMPLES = [
    {"id": "g1", "inputs": {"product": "Kettle"}, "output": "A lovely kettle. Great for tea!", "label": "good"},
    {"id": "g2", "inputs": {"product": "Lamp"}, "output": "A warm lamp for happy reading nights.", "label": "good"},
    {"id": "b1", "inputs": {"product": "Mug"}, "output": "A cheap mug.", "label": "bad"},
    {"id": "b2", "inputs": {"product": "Shoe"}, "output": " ".join(["word"] * 20), "label": "bad"},
]  # fmt: skip


#: Two checks for sampling tests: length (minimum 0.5) and the word "cheap" (minimum 0.9).
SAMPLING_SIDECAR = """from spade_lsp.assertions import assertion


@assertion(category="Content/Count", sentence="Keep it not exceeding 12 words.", min_success=0.5)
def assert_short(example: dict, prompt: str, response: str) -> bool:
    return len(response.split()) <= 12


@assertion(category="Content/Exclusion", sentence='Never use the word "cheap".', min_success=0.9)
def assert_no_cheap(example: dict, prompt: str, response: str) -> bool:
    return "cheap" not in response.lower()
"""


def examples_jsonl() -> str:
    return "".join(json.dumps(example) + "\n" for example in EXAMPLES)


def record(root: Path, prompt: Path, *texts: str) -> None:
    """Record each text as a saved version (what the daemon does on every save)."""
    with Workspace(root) as workspace:
        for text in texts:
            prompt.write_text(text, encoding="utf-8")
            sync_prompt(workspace, prompt, git=False)


def sampling_workspace(root: Path) -> Path:
    """``blurb.prompt`` (V3), its examples and the two sampling checks in ``root``; returns the prompt's path."""
    prompt = root / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    (root / "blurb.examples.jsonl").write_text(examples_jsonl(), encoding="utf-8")
    (root / "blurb_assertions.py").write_text(SAMPLING_SIDECAR, encoding="utf-8")
    return prompt


class CheapEveryFourth:
    """A model whose every fourth answer for a product says "cheap": exactly a quarter of any multiple of four
    samples of one input break ``assert_no_cheap``, whatever order concurrent requests arrive in."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        product = user_text(request).split("for ", 1)[1].split(".", 1)[0]
        with self.lock:
            count = self.counts.get(product, 0)
            self.counts[product] = count + 1
        return chat_reply(f"A cheap {product}." if count % 4 == 0 else f"A lovely {product} for you.")


#: A sentence only the second version of the comparison tests' prompt has: the stub answers it as ``bad``.
PRICE_SENTENCE = "Mention the price."


class TwoModels:
    """``good`` never says "cheap". ``bad`` says it in every other answer for the kettle and the lamp (whatever
    order the requests arrive in, exactly half of an even number of samples) and always for the mug and the
    shoe. So with four samples: assert_no_cheap passes 16/16 on good and 2+2+0+0 = 4/16 on bad. A prompt with
    :data:`PRICE_SENTENCE` is answered as by ``bad``, whatever the model: a prompt version that got worse."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        product = user_text(request).split("for ", 1)[1].split(".", 1)[0]
        if request["model"] == "good" and PRICE_SENTENCE not in user_text(request):
            return chat_reply(f"A lovely {product} for you.", prompt_tokens=10, completion_tokens=6)
        with self.lock:
            count = self.counts.get(product, 0)
            self.counts[product] = count + 1
        cheap = product in ("Mug", "Shoe") or count % 2 == 0
        return chat_reply(f"A cheap {product}." if cheap else f"A lovely {product}.", prompt_tokens=10)
