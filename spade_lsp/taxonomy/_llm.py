"""The LLM taxonomy classifier: one structured-output call per delta (all its changes at once).

An answer the LLM layer gives up on (still off the schema after its re-asks) is read here too when it holds
JSON, so the error names what was wrong in this classifier's terms (an edit that does not exist, unknown
categories) rather than as a schema path."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ValidationError

from spade_lsp._types import ChangeKind, Position, Range, Sentence, SentenceChange
from spade_lsp.errors import LLMError
from spade_lsp.llm import LLMClient, ask_json
from spade_lsp.taxonomy import CATEGORY_IDS, DISPLAY_NAMES

_SYSTEM = (
    "You label edits to an LLM prompt template with the SPADE taxonomy of prompt deltas. "
    "Each edit is one sentence that was added, removed or modified. Give each edit every category that "
    "applies, or none (e.g. a role header or a blank line). Categories:\n"
    + "\n".join(f"- {cid}: {name}" for cid, name in DISPLAY_NAMES.items())
    + "\nStructural/PromptRephrasing is for a sentence reworded or clarified without a new requirement. "
    "Content/DataPlaceholders is for a new or renamed {placeholder} or input source."
)


def _schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "index": {"type": "integer"},
                        "labels": {"type": "array", "items": {"type": "string", "enum": list(CATEGORY_IDS)}},
                    },
                    "required": ["index", "labels"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["edits"],
        "additionalProperties": False,
    }


class _Edit(BaseModel):
    index: int
    labels: list[str]


class _Answer(BaseModel):
    edits: list[_Edit]


def _describe(index: int, change: SentenceChange) -> dict[str, Any]:
    item: dict[str, Any] = {"index": index, "kind": change.kind.value}
    if change.kind is not ChangeKind.ADDED and change.old is not None:
        item["before"] = change.old.text
    if change.kind is not ChangeKind.REMOVED and change.new is not None:
        item["after"] = change.new.text
    return item


class LLMClassifier:
    """Labels changes through :mod:`spade_lsp.llm` (cached in the store like every LLM call)."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client
        self.name = f"llm:{client.model}"
        self._sentence = lru_cache(maxsize=4096)(self._classify_sentence_uncached)

    def classify_sentence(self, text: str) -> frozenset[str]:
        return self._sentence(text)

    def _classify_sentence_uncached(self, text: str) -> frozenset[str]:
        unit = Sentence(text=text, start=0, end=len(text), range=Range(Position(0, 0), Position(0, len(text))))
        return self.classify_changes([SentenceChange(ChangeKind.ADDED, None, unit)])[0]

    def classify_changes(self, changes: Sequence[SentenceChange]) -> list[frozenset[str]]:
        if not changes:
            return []
        payload = json.dumps([_describe(i, c) for i, c in enumerate(changes)], ensure_ascii=False)
        messages = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": payload}]
        data = ask_json(self.client, messages, _schema(), what="taxonomy labels")
        try:
            answer = _Answer.model_validate(data)
        except ValidationError as error:
            detail = error.errors()[0]["msg"]
            raise LLMError(f"the model's taxonomy answer does not match the schema: {detail}") from error
        out: list[set[str]] = [set() for _ in changes]
        for edit in answer.edits:
            if not 0 <= edit.index < len(changes):
                raise LLMError(f"the model labelled edit {edit.index}, but there are only {len(changes)}")
            unknown = [label for label in edit.labels if label not in DISPLAY_NAMES]
            if unknown:
                raise LLMError(f"the model answered unknown categories {unknown}")
            out[edit.index].update(edit.labels)
        return [frozenset(labels) for labels in out]
