"""The sentence head (what the editor shows for each sentence) labels the taxonomy's typical cues, as DESIGN.md's
table gives them, written as full sentences; and it is measured in grouped cross-validation like the delta model."""

from __future__ import annotations

import pytest

from spade_lsp.taxonomy import (
    CATEGORY_IDS,
    COUNT,
    DATA_PLACEHOLDERS,
    EXAMPLE_DEMONSTRATION,
    EXCLUSION,
    INCLUSION,
    PRESENTATION_FORMAT,
    PROMPT_REPHRASING,
    QUALITATIVE_ASSESSMENT,
    WORKFLOW_DESCRIPTION,
    OfflineClassifier,
    _train,
)
from spade_lsp.taxonomy._cues import CUE_NAMES, cues

CLF = OfflineClassifier()

TYPICAL_CUES = [
    (PRESENTATION_FORMAT, "Answer in JSON."),
    (PRESENTATION_FORMAT, "Use markdown for the answer."),
    (PRESENTATION_FORMAT, "Start with a one-line summary."),
    (EXAMPLE_DEMONSTRATION, 'For example, a good title is "Ten ways to save water".'),
    (EXAMPLE_DEMONSTRATION, "Example output: Paris is the capital of France."),
    (WORKFLOW_DESCRIPTION, "First analyse the question, then write the answer."),
    (WORKFLOW_DESCRIPTION, "First list the steps, then explain each one."),
    (DATA_PLACEHOLDERS, "Write a new {product} description."),
    (DATA_PLACEHOLDERS, "Here is the customer's review: {review}"),
    (COUNT, "Keep the answer to at most 100 words."),
    (COUNT, "Give three bullet points."),
    (INCLUSION, "Mention the awards the restaurant has won."),
    (INCLUSION, "Always include a call to action."),
    (EXCLUSION, "Do not mention race."),
    (EXCLUSION, 'Never use the word "delve".'),
    (QUALITATIVE_ASSESSMENT, "Be concise."),
    (QUALITATIVE_ASSESSMENT, "Use a friendly tone."),
]


@pytest.mark.parametrize(("category", "text"), TYPICAL_CUES)
def test_typical_cue_gets_its_category(category: str, text: str) -> None:
    assert category in CLF.classify_sentence(text)


def test_task_with_placeholders_is_not_a_count() -> None:
    """tests/editors/test_neovim.py relies on this sentence not being checkable."""
    labels = CLF.classify_sentence("Write an email to {name} about {topic}.")
    assert COUNT not in labels
    assert DATA_PLACEHOLDERS in labels


def test_one_after_each_is_not_a_number() -> None:
    number = CUE_NAMES.index("number")
    assert cues("Then explain each one.")[number] == 0.0
    assert cues("Which one is better?")[number] == 0.0
    assert cues("Give one reason.")[number] == 1.0
    assert COUNT not in CLF.classify_sentence("First list the steps, then explain each one.")


def test_head_is_never_a_rephrasing() -> None:
    assert all(PROMPT_REPHRASING not in CLF.classify_sentence(text) for _, text in TYPICAL_CUES)


def test_head_thresholds_are_calibrated_not_fixed() -> None:
    from spade_lsp.taxonomy._model import read_shipped

    thresholds = read_shipped()["sentence"]["thresholds"]
    assert set(thresholds) == set(CATEGORY_IDS)
    assert any(abs(float(t) - 0.5) > 1e-6 for t in thresholds.values())


def test_sentence_basis_scores_without_rephrasing() -> None:
    import numpy as np

    bag = _train.Bag(np.zeros((0, 1)), frozenset({PROMPT_REPHRASING, COUNT}), "g", texts=("Give three tips.",))
    report = _train.sentence_basis([bag], [frozenset({COUNT, PROMPT_REPHRASING})])
    assert report.micro_f1 == 1.0
    assert PROMPT_REPHRASING not in {s.category for s in report.per_category}
    assert _train.by_sentence([bag], lambda text: frozenset({text})) == [frozenset({"Give three tips."})]
