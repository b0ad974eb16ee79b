"""The offline classifier's trained model: one logistic regression per category over a unit's features, and a
calibrated threshold per category. Weights are package data (``model.json``) written by
``python -m spade_lsp.taxonomy._train``; scoring them needs numpy only (scikit-learn is used to fit, never here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from spade_lsp.taxonomy import CATEGORY_IDS, COUNT
from spade_lsp.taxonomy._shipped import MODEL_FILE, read_shipped

__all__ = ["EVIDENCE", "MODEL_FILE", "RULES_DECIDE", "Model", "allowed", "forced", "read_shipped", "shipped_model"]

Matrix = npt.NDArray[np.float64]

#: Categories a unit can only have when one of these features is on. A count or a length needs a number, a bound,
#: a length word or the rules' count reading: without the gate the model learnt Count from placeholders and
#: task verbs, which count deltas often carry ("no more than [word_count] words"), and labelled a plain task
#: sentence ("Write a reply to the customer message {message}.") a length rule.
EVIDENCE: Final[dict[str, tuple[str, ...]]] = {
    COUNT: ("cue:number", "cue:number_unit", "cue:bound", "cue:quality_word", f"rule:{COUNT}", f"rule_delta:{COUNT}"),
}


#: Categories the rules' reading in context decides on its own when it fires: their count rules (a number with a
#: unit, a bound) are precise where the model, with few count deltas to learn from, ranks "Use three bullet
#: points." below a format rule. On the dev deltas the rules alone score Count 6 of 7 with one false positive.
RULES_DECIDE: Final[dict[str, str]] = {COUNT: f"rule_delta:{COUNT}"}


def forced(names: Sequence[str], x: Matrix) -> npt.NDArray[np.bool_]:
    """Per unit and category: whether the rules' reading decides it (:data:`RULES_DECIDE`)."""
    out = np.zeros((len(x), len(CATEGORY_IDS)), dtype=np.bool_)
    for category, feature in RULES_DECIDE.items():
        if feature in names:
            out[:, CATEGORY_IDS.index(category)] = x[:, names.index(feature)] > 0
    return out


def allowed(names: Sequence[str], x: Matrix) -> npt.NDArray[np.bool_]:
    """Per unit and category (n_units x n_categories): whether the unit shows the evidence the category needs
    (:data:`EVIDENCE`; True for the others, and for a feature set without those columns)."""
    out = np.ones((len(x), len(CATEGORY_IDS)), dtype=np.bool_)
    for category, needed in EVIDENCE.items():
        columns = [names.index(name) for name in needed if name in names]
        if columns:
            out[:, CATEGORY_IDS.index(category)] = (x[:, columns] > 0).any(axis=1)
    return out


@dataclass(frozen=True)
class Model:
    """Per-category weights (features x categories), intercepts and thresholds, in ``CATEGORY_IDS`` order."""

    feature_names: tuple[str, ...]
    weights: Matrix  # (n_features, n_categories)
    bias: Matrix  # (n_categories,)
    thresholds: Matrix  # (n_categories,)

    def probabilities(self, x: Matrix) -> Matrix:
        """P(category | unit) for each row of ``x`` (n_units x n_features) -> (n_units x n_categories)."""
        z = np.clip(x @ self.weights + self.bias, -30.0, 30.0)
        scored = np.where(allowed(self.feature_names, x), 1.0 / (1.0 + np.exp(-z)), 0.0)
        out: Matrix = np.where(forced(self.feature_names, x), 1.0, scored)
        return out

    def labels(self, probabilities: Matrix) -> list[frozenset[str]]:
        """Each row's categories: those at or above their threshold."""
        return _rows(probabilities >= self.thresholds)

    def decide(self, x: Matrix) -> list[frozenset[str]]:
        """Each unit's categories (the same as ``labels(probabilities(x))``, compared in logit space: no exp)."""
        names = self.feature_names
        return _rows(((x @ self.weights + self.bias >= self.cuts) & allowed(names, x)) | forced(names, x))

    @property
    def cuts(self) -> Matrix:
        """The thresholds in logit space."""
        cuts = self.__dict__.get("_cut_cache")
        if cuts is None:
            t = np.clip(self.thresholds, 1e-12, 1 - 1e-12)
            cuts = np.log(t / (1.0 - t))
            object.__setattr__(self, "_cut_cache", cuts)
        out: Matrix = cuts
        return out

    def to_dict(self) -> dict[str, Any]:
        """The model as package data (rounded, so a rebuild is byte-identical)."""
        return {
            "features": list(self.feature_names),
            "weights": {c: [round(float(w), 6) for w in self.weights[:, j]] for j, c in enumerate(CATEGORY_IDS)},
            "bias": {c: round(float(self.bias[j]), 6) for j, c in enumerate(CATEGORY_IDS)},
            "thresholds": {c: round(float(self.thresholds[j]), 6) for j, c in enumerate(CATEGORY_IDS)},
        }

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Model:
        names = tuple(str(n) for n in doc["features"])
        weights = np.array([doc["weights"][c] for c in CATEGORY_IDS], dtype=np.float64).T
        bias = np.array([doc["bias"][c] for c in CATEGORY_IDS], dtype=np.float64)
        thresholds = np.array([doc["thresholds"][c] for c in CATEGORY_IDS], dtype=np.float64)
        return cls(names, weights, bias, thresholds)


def _rows(hits: npt.NDArray[np.bool_]) -> list[frozenset[str]]:
    return [frozenset(c for c, hit in zip(CATEGORY_IDS, row, strict=True) if hit) for row in hits.tolist()]


@lru_cache(maxsize=1)
def shipped_model() -> Model:
    """The model shipped in the package (read once per process)."""
    from spade_lsp.taxonomy._features import FEATURE_NAMES

    model = Model.from_dict(read_shipped()["delta"])
    if model.feature_names != FEATURE_NAMES:
        raise ValueError("model.json does not match the feature set; run `python -m spade_lsp.taxonomy._train`")
    return model
