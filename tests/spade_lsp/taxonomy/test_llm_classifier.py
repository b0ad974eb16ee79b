"""The LLM taxonomy classifier through the real litellm client against a scripted loopback server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spade_lsp._deltas import diff_texts
from spade_lsp.errors import LLMError, ModelNotConfiguredError
from spade_lsp.taxonomy import CATEGORY_IDS, COUNT, EXCLUSION
from spade_lsp.taxonomy._llm import LLMClassifier
from spade_lsp.workspace import Workspace
from tests.support.openai_stub import OpenAIStub, chat_reply


def _labeller(request: dict[str, Any]) -> Any:
    """Answers like a model would: labels each edit by reading it."""
    edits = json.loads(request["messages"][-1]["content"])
    answer = []
    for edit in edits:
        text = edit.get("after", edit.get("before", "")).lower()
        labels = [COUNT] if "words" in text else []
        labels += [EXCLUSION] if "never" in text else []
        answer.append({"index": edit["index"], "labels": labels})
    return chat_reply(json.dumps({"edits": answer}))


def test_llm_classifier_labels_each_change_with_structured_output(workspace_dir: Path) -> None:
    with OpenAIStub(_labeller) as stub:
        overrides = {"model": "openai/stub", "api_base": stub.api_base, "classifier": "llm"}
        with Workspace(workspace_dir, overrides=overrides) as ws:
            classifier = ws.history.classifier
            assert classifier.name == "llm:openai/stub"
            changes = diff_texts("Summarise it.", "Summarise it. Use 50 words. Never guess.")
            labels = classifier.classify_changes(changes)
            assert labels == [frozenset({COUNT}), frozenset({EXCLUSION})]
            schema = stub.requests[0]["response_format"]["json_schema"]["schema"]
            enum = schema["properties"]["edits"]["items"]["properties"]["labels"]["items"]["enum"]
            assert enum == list(CATEGORY_IDS)
            # the same delta again comes from the store's cache
            classifier.classify_changes(changes)
            assert len(stub.requests) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json at all", "not valid JSON"),
        (json.dumps({"edits": [{"index": 0}]}), "schema"),
        (json.dumps({"edits": [{"index": 5, "labels": []}]}), "only 1"),
        (json.dumps({"edits": [{"index": 0, "labels": ["Content/Made-up"]}]}), "unknown categories"),
    ],
)
def test_unusable_answers_are_clear_errors(content: str, message: str) -> None:
    from spade_lsp.llm import LiteLLMClient

    with OpenAIStub(lambda request: chat_reply(content)) as stub:
        client = LiteLLMClient("openai/stub", api_base=stub.api_base, api_key="x", max_retries=0)
        with pytest.raises(LLMError, match=message):
            LLMClassifier(client).classify_changes(diff_texts("", "Use 50 words."))


def test_llm_classifier_without_a_model_says_how_to_configure(workspace_dir: Path) -> None:
    with pytest.raises(ModelNotConfiguredError, match="needs a model"):
        Workspace(workspace_dir, overrides={"classifier": "llm"})
