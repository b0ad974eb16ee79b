"""The SPADE taxonomy of prompt deltas: category ids (a contract), display names, and classifiers.

A classifier labels each changed sentence of a delta with zero or more category ids; a delta's labels are
the union over its changes. The offline classifier is the default; the LLM classifier is used when a model
is configured. Both satisfy :class:`TaxonomyClassifier`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Protocol

from spade_lsp._lazy import lazy_exports
from spade_lsp._types import SentenceChange

if TYPE_CHECKING:  # the classifiers load on first use: the LLM one imports pydantic and the LLM layer
    from spade_lsp.taxonomy._llm import LLMClassifier
    from spade_lsp.taxonomy._offline import OfflineClassifier


PRESENTATION_FORMAT: Final = "Structural/PresentationFormat"
EXAMPLE_DEMONSTRATION: Final = "Structural/ExampleDemonstration"
PROMPT_REPHRASING: Final = "Structural/PromptRephrasing"
WORKFLOW_DESCRIPTION: Final = "Content/WorkflowDescription"
DATA_PLACEHOLDERS: Final = "Content/DataPlaceholders"
COUNT: Final = "Content/Count"
INCLUSION: Final = "Content/Inclusion"
EXCLUSION: Final = "Content/Exclusion"
QUALITATIVE_ASSESSMENT: Final = "Content/QualitativeAssessment"

DISPLAY_NAMES: Final[dict[str, str]] = {
    PRESENTATION_FORMAT: "Response format instruction",
    EXAMPLE_DEMONSTRATION: "Example demonstration",
    PROMPT_REPHRASING: "Prompt clarification",
    WORKFLOW_DESCRIPTION: "Workflow description",
    DATA_PLACEHOLDERS: "Data integration",
    COUNT: "Quantity instruction",
    INCLUSION: "Inclusion instruction",
    EXCLUSION: "Exclusion instruction",
    QUALITATIVE_ASSESSMENT: "Qualitative criteria",
}
"""SPADE's names (docs/editor.md's table): the hover gives them, a contract clients read."""

PLAIN_NAMES: Final[dict[str, str]] = {
    PRESENTATION_FORMAT: "Format rule",
    EXAMPLE_DEMONSTRATION: "Example",
    PROMPT_REPHRASING: "Rewording",
    WORKFLOW_DESCRIPTION: "Steps to follow",
    DATA_PLACEHOLDERS: "Input data",
    COUNT: "Length or count",
    INCLUSION: "Must include",
    EXCLUSION: "Must avoid",
    QUALITATIVE_ASSESSMENT: "Tone or quality",
}
"""The same categories in a prompt writer's words: hovers, lenses, the outline, the CLI's tables."""

#: One line per category, in words a prompt writer uses: what such a sentence asks of the answer.
EXPLANATIONS: Final[dict[str, str]] = {
    PRESENTATION_FORMAT: "how the answer is laid out: JSON, Markdown, bullets, how it starts or ends",
    EXAMPLE_DEMONSTRATION: "a sample of the answer you want, for the model to imitate",
    PROMPT_REPHRASING: "a sentence said differently that asks for nothing new",
    WORKFLOW_DESCRIPTION: "steps or a role for the model; the answer itself rarely shows them",
    DATA_PLACEHOLDERS: "where the prompt pulls in data, such as {first_name}, which the answer may have to use",
    COUNT: "a limit on words, sentences or items",
    INCLUSION: "something every answer must contain",
    EXCLUSION: "something no answer may contain",
    QUALITATIVE_ASSESSMENT: "a judgement such as concise, friendly or professional",
}

#: Category ids in SPADE's order (docs/editor.md lists them so); used to order labels deterministically.
CATEGORY_IDS: Final[tuple[str, ...]] = tuple(DISPLAY_NAMES)

#: Categories that state a requirement on the output, so an assertion can check them.
CHECKABLE: Final[frozenset[str]] = frozenset(
    {PRESENTATION_FORMAT, EXAMPLE_DEMONSTRATION, COUNT, INCLUSION, EXCLUSION, QUALITATIVE_ASSESSMENT}
)


def ordered(labels: frozenset[str] | set[str]) -> list[str]:
    """Labels in the taxonomy's canonical order."""
    return [c for c in CATEGORY_IDS if c in labels]


class TaxonomyClassifier(Protocol):
    """Labels the changes of one delta."""

    name: str

    def classify_sentence(self, text: str) -> frozenset[str]:
        """Categories of one sentence of a prompt, read on its own."""
        ...

    def classify_changes(self, changes: Sequence[SentenceChange]) -> list[frozenset[str]]:
        """Categories of each change of one delta, in the same order."""
        ...


def delta_labels(per_change: Sequence[frozenset[str]]) -> frozenset[str]:
    """A delta's labels: the union over its changed sentences."""
    out: set[str] = set()
    for labels in per_change:
        out |= labels
    return frozenset(out)


__all__ = [
    "CATEGORY_IDS",
    "CHECKABLE",
    "COUNT",
    "DATA_PLACEHOLDERS",
    "DISPLAY_NAMES",
    "EXAMPLE_DEMONSTRATION",
    "EXCLUSION",
    "EXPLANATIONS",
    "INCLUSION",
    "PLAIN_NAMES",
    "PRESENTATION_FORMAT",
    "PROMPT_REPHRASING",
    "QUALITATIVE_ASSESSMENT",
    "WORKFLOW_DESCRIPTION",
    "LLMClassifier",
    "OfflineClassifier",
    "TaxonomyClassifier",
    "delta_labels",
    "ordered",
]


__getattr__ = lazy_exports(__name__, globals())
