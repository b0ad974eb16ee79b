"""Relabelling a prompt's deltas with the assistant model, after they were recorded with offline labels.

Recording never waits on an LLM; this runs afterwards (a daemon job after each recorded save, or at the end of a
CLI import). A delta whose labels the model could not give keeps its offline labels, and the result says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade_lsp._fallbacks import Fallbacks
from spade_lsp._progress import Progress
from spade_lsp._roles import assistant_endpoint
from spade_lsp.config import Settings
from spade_lsp.errors import SpadeError
from spade_lsp.workspace import Workspace

if TYPE_CHECKING:
    from spade_lsp.taxonomy import LLMClassifier

STEP = "taxonomy labels"
KEPT = "kept the offline labels"


@dataclass(slots=True)
class RelabelResult:
    classifier: str | None  # None: nothing to relabel with (no assistant model, or classifier = "offline")
    relabelled: int = 0
    kept_offline: int = 0
    fallbacks: Fallbacks = field(default_factory=Fallbacks)

    def to_json(self) -> dict[str, Any]:
        return {
            "classifier": self.classifier,
            "relabelled": self.relabelled,
            "kept_offline": self.kept_offline,
            "fallbacks": self.fallbacks.to_json(),
        }


def wants_relabel(workspace: Workspace, settings: Settings) -> bool:
    """Whether deltas should be relabelled by a model: an assistant is configured (or injected) and the
    classifier is not pinned to ``offline``."""
    return settings.classifier != "offline" and workspace.has_assistant(settings)


def wants_relabel_settings(settings: Settings) -> bool:
    """:func:`wants_relabel` from settings alone (the daemon's decision after a recorded save)."""
    return settings.classifier != "offline" and assistant_endpoint(settings) is not None


def assistant_classifier(workspace: Workspace, settings: Settings, fallbacks: Fallbacks) -> LLMClassifier | None:
    """The assistant model's classifier when labels should come from it; None, with the reason in
    ``fallbacks`` when one was wanted, when they stay offline."""
    if not wants_relabel(workspace, settings):
        if settings.classifier == "llm":
            fallbacks.add(STEP, "classifier = 'llm' but no assistant model is configured", KEPT)
        return None
    from spade_lsp.taxonomy import LLMClassifier

    try:
        return LLMClassifier(workspace.assistant_client(settings, what="taxonomy labels"))
    except SpadeError as error:  # configured but cannot start (the local model is not installed, say)
        fallbacks.add(STEP, error, KEPT)
        return None


def relabel_prompt(
    workspace: Workspace,
    path: Path,
    *,
    settings: Settings,
    progress: Progress | None = None,
) -> RelabelResult:
    """Label every delta of ``path`` not yet labelled by the assistant model; each delta is one call (cached in
    the store, so a re-run costs nothing). Failures fall back to the offline labels, never raise. ``settings``
    are the prompt's, resolved by the caller."""
    result = RelabelResult(None)
    classifier = assistant_classifier(workspace, settings, result.fallbacks)
    if classifier is None:
        return result
    result.classifier = classifier.name
    pending = workspace.history.unlabelled_deltas(path, classifier.name)
    labels = {}
    for done, (delta_id, changes) in enumerate(pending):
        if progress is not None:
            progress(f"labelling delta {done + 1} of {len(pending)}", 100.0 * done / max(len(pending), 1))
        try:
            labels[delta_id] = classifier.classify_changes(changes) if changes else []
        except Exception as error:  # an auxiliary answer that fails never aborts the job
            result.fallbacks.add(STEP, error, KEPT)
            result.kept_offline += 1
    workspace.history.relabel(path, labels, classifier.name)
    result.relabelled = len(labels)
    return result
