"""The LLM taxonomy classifier through the real litellm client against a scripted loopback server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spade_lsp._deltas import diff_texts
from spade_lsp._relabel import relabel_prompt
from spade_lsp.errors import LLMError
from spade_lsp.taxonomy import CATEGORY_IDS, COUNT, EXCLUSION, LLMClassifier
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


def test_llm_classifier_labels_each_change_with_structured_output() -> None:
    from spade_lsp.llm import LiteLLMClient

    with OpenAIStub(_labeller) as stub:
        client = LiteLLMClient("openai/stub", api_base=stub.api_base, api_key="x")
        classifier = LLMClassifier(client)
        assert classifier.name == "llm:openai/stub"
        changes = diff_texts("Summarise it.", "Summarise it. Use 50 words. Never guess.")
        labels = classifier.classify_changes(changes)
        assert labels == [frozenset({COUNT}), frozenset({EXCLUSION})]
        schema = stub.requests[0]["response_format"]["json_schema"]["schema"]
        enum = schema["properties"]["edits"]["items"]["properties"]["labels"]["items"]["enum"]
        assert enum == list(CATEGORY_IDS)


def test_recording_labels_offline_and_the_assistant_relabels_afterwards(workspace_dir: Path) -> None:
    """Recording a version never waits on an LLM: it is labelled offline at once (no request), and relabelling
    asks the assistant model once per delta, stores its labels in place and rebuilds the sentences' categories;
    a second relabel costs nothing."""
    prompt = workspace_dir / "p.prompt"
    with OpenAIStub(_labeller) as stub:
        overrides = {"assistant_model": "openai/stub", "assistant_api_base": stub.api_base}
        with Workspace(workspace_dir, overrides=overrides) as ws:
            ws.history.record(prompt, "Summarise it.")
            ws.history.record(prompt, "Summarise it. Keep it to 50 words. Never guess.")
            assert stub.requests == []
            assert ws.history.classifier.name == "offline"
            offline = [d.classifier for d in ws.history.deltas(prompt)]
            assert offline == ["offline", "offline"]

            result = relabel_prompt(ws, prompt, settings=ws.settings)
            assert (result.classifier, result.relabelled, result.kept_offline) == ("llm:openai/stub", 2, 0)
            assert len(stub.requests) == 2 and not result.fallbacks
            deltas = ws.history.deltas(prompt)
            assert [d.classifier for d in deltas] == ["llm:openai/stub", "llm:openai/stub"]
            assert [c.labels for c in deltas[1].changes] == [(COUNT,), (EXCLUSION,)]
            categories = {s.text: s.categories for s in ws.history.sentences(prompt)}
            assert categories["Keep it to 50 words."] == (COUNT,)
            assert categories["Never guess."] == (EXCLUSION,)
            assert categories["Summarise it."] == ()  # the labeller gives it nothing: not the offline guess

            again = relabel_prompt(ws, prompt, settings=ws.settings)
            assert again.relabelled == 0 and len(stub.requests) == 2
            # a new version keeps the relabelled categories of the sentences it did not change
            ws.history.record(prompt, "Summarise it. Keep it to 50 words. Never guess. Be kind.")
            categories = {s.text: s.categories for s in ws.history.sentences(prompt)}
            assert categories["Never guess."] == (EXCLUSION,)


def test_a_failing_assistant_keeps_the_offline_labels_and_says_why(workspace_dir: Path) -> None:
    prompt = workspace_dir / "p.prompt"
    with OpenAIStub(lambda request: chat_reply("I think this is about counting words.")) as stub:
        overrides = {"assistant_model": "openai/stub", "assistant_api_base": stub.api_base, "llm_max_retries": 0}
        with Workspace(workspace_dir, overrides=overrides) as ws:
            ws.history.record(prompt, "Use at most 50 words.")
            before = [c.labels for c in ws.history.deltas(prompt)[0].changes]
            result = relabel_prompt(ws, prompt, settings=ws.settings)
            assert (result.relabelled, result.kept_offline) == (0, 1)
            [fallback] = result.fallbacks.items
            assert fallback.step == "taxonomy labels" and fallback.instead == "kept the offline labels"
            assert "JSON" in fallback.reason
            assert [c.labels for c in ws.history.deltas(prompt)[0].changes] == before
            assert ws.history.deltas(prompt)[0].classifier == "offline"


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


def test_classifier_llm_without_an_assistant_model_relabels_nothing_and_says_why(workspace_dir: Path) -> None:
    prompt = workspace_dir / "p.prompt"
    with Workspace(workspace_dir, overrides={"classifier": "llm", "model": "openai/pipeline"}) as ws:
        ws.history.record(prompt, "Use at most 50 words.")
        result = relabel_prompt(ws, prompt, settings=ws.settings)
        assert result.classifier is None
        [fallback] = result.fallbacks.items
        assert "no assistant model" in fallback.reason  # the pipeline's model is never borrowed
