"""The offline SPADE taxonomy classifier: a small trained model, no network and no downloaded data.

A delta (:meth:`OfflineClassifier.classify_changes`): each changed sentence becomes a feature vector
(:mod:`spade_lsp.taxonomy._features`: the word-boundary rules' evidence in context, surface cues such as directive
mood, negation, numbers with units, quoted phrases, placeholders and format nouns, what a rewording adds, and the
nearest-neighbour similarity of its wordllama embedding to a seed corpus of labelled sentences). One logistic
regression per category scores it and a per-category threshold, calibrated on out-of-fold scores, turns scores
into labels (:mod:`spade_lsp.taxonomy._model`). A delta's labels are the union over its changes, so its score per
category is the maximum over them, which is how the model was trained from delta-level labels
(:mod:`spade_lsp.taxonomy._train`). A removed sentence carries no label.

A sentence read on its own (:meth:`OfflineClassifier.classify_sentence`, the editor's per-sentence view): the
*sentence head*, trained the same way on added sentences, over what a sentence shows by itself (the rules'
categories and the surface cues; no embedding), as a correction on top of the rules (cue weights regularised far
more strongly than the rules'), with thresholds calibrated out of fold on the seed corpus's sentences. It is
plain Python: the language server's read path never imports numpy or loads the embeddings, so its first
diagnostics stay fast. It is never a rephrasing.

Weights ship as package data (``model.json``). The embedding table and tokenizer come from the wordllama wheel,
read from local files, loaded lazily once per process on the first delta (:mod:`spade_lsp.taxonomy._embed`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from spade_lsp._types import SentenceChange
from spade_lsp.taxonomy import CATEGORY_IDS, PROMPT_REPHRASING
from spade_lsp.taxonomy._cues import CUE_NAMES, cues
from spade_lsp.taxonomy._rules import _classify_text, _is_inert, placeholders

__all__ = ["OfflineClassifier", "placeholders"]

_EMPTY: Final[frozenset[str]] = frozenset()
_REPHRASING: Final = frozenset({PROMPT_REPHRASING})

# ``_classify_text`` (the rules, cached) is re-exported so callers that clear this module's caches clear it too.
__rules_cache__ = _classify_text


@dataclass(frozen=True)
class _Head:
    """The sentence head as plain lists: per rule category and per cue, the weights of the nine categories."""

    rules: dict[str, list[float]]
    cues: list[list[float]]
    bias: list[float]
    cuts: list[float]

    @classmethod
    def from_dict(cls, head: dict[str, Any]) -> _Head:
        """The head from its ``model.json`` entry (``features``, ``weights``, ``bias``, ``thresholds``)."""
        expected = [f"rule:{c}" for c in CATEGORY_IDS] + [f"cue:{n}" for n in CUE_NAMES]
        if list(head["features"]) != expected:
            raise ValueError(
                "model.json does not match the sentence features; run `python -m spade_lsp.taxonomy._train`"
            )
        columns = [[float(head["weights"][c][i]) for c in CATEGORY_IDS] for i in range(len(expected))]
        return cls(
            rules={c: columns[i] for i, c in enumerate(CATEGORY_IDS)},
            cues=columns[len(CATEGORY_IDS) :],
            bias=[float(head["bias"][c]) for c in CATEGORY_IDS],
            cuts=[_logit(float(head["thresholds"][c])) for c in CATEGORY_IDS],
        )

    def labels(self, text: str) -> frozenset[str]:
        """Categories of one sentence read on its own (never a rephrasing)."""
        if _is_inert(text):
            return _EMPTY
        z = list(self.bias)
        for category in _classify_text(text):
            for j, w in enumerate(self.rules[category]):
                z[j] += w
        for value, weights in zip(cues(text), self.cues, strict=True):
            if value:
                for j, w in enumerate(weights):
                    z[j] += value * w
        return (
            frozenset(c for c, score, cut in zip(CATEGORY_IDS, z, self.cuts, strict=True) if score >= cut) - _REPHRASING
        )


def _logit(p: float) -> float:
    p = min(max(p, 1e-12), 1 - 1e-12)
    return math.log(p / (1 - p))


@functools.lru_cache(maxsize=1)
def _head() -> _Head:
    """The sentence head from ``model.json`` (read once per process; json only, no numpy)."""
    from spade_lsp.taxonomy._shipped import read_shipped

    return _Head.from_dict(read_shipped()["sentence"])


@functools.lru_cache(maxsize=65536)
def _sentence_labels(text: str) -> frozenset[str]:
    """Categories of one sentence read on its own (cached: prompts repeat across versions)."""
    return _head().labels(text)


class OfflineClassifier:
    """The trained offline SPADE classifier; the default when no model is configured."""

    name = "offline"

    def classify_sentence(self, text: str) -> frozenset[str]:
        """Categories of one sentence of a prompt, read on its own."""
        return _sentence_labels(text)

    def classify_changes(self, changes: Sequence[SentenceChange]) -> list[frozenset[str]]:
        """Categories of each change of one delta, in the same order (removed sentences: none)."""
        import numpy as np

        from spade_lsp.taxonomy._features import features, units_of
        from spade_lsp.taxonomy._model import shipped_model

        out: list[frozenset[str]] = [_EMPTY] * len(changes)
        units = units_of(changes)
        if not units:
            return out
        model = shipped_model()
        x = np.stack([features(unit, rules) for _, unit, rules in units])
        for (index, unit, _), labels in zip(units, model.decide(x), strict=True):
            out[index] = _EMPTY if _is_inert(unit.new) else labels
        return out
