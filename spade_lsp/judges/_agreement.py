"""How far to trust a judge: its positive rate, and on examples with human labels its alignment rate, Cohen's
kappa and confusion table, each with an interval.

Judgements are pass (True), fail (False) or undecided (None: "Unsure", or no usable answer). Alignment counts
an undecided judgement as a disagreement (the judge did not give the human's answer) and is also reported
over decided items only; kappa is computed over decided items, the only ones with two categories on each side.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spade_lsp.reliability import Method, Rate, normal_quantile, rate

__all__ = ["Agreement", "Kappa", "agreement", "cohen_kappa", "positive_rate"]


@dataclass(frozen=True, slots=True)
class Kappa:
    value: float | None
    se: float | None  # the large-sample standard error of Fleiss, Cohen and Everitt (1969)
    ci_low: float | None
    ci_high: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "value": _round(self.value),
            "se": _round(self.se),
            "ci_low": _round(self.ci_low),
            "ci_high": _round(self.ci_high),
        }


@dataclass(frozen=True, slots=True)
class Agreement:
    labelled: int
    decided: int
    alignment: Rate  # aligned / labelled (undecided counts as disagreement)
    alignment_decided: Rate  # aligned / decided
    kappa: Kappa
    confusion: dict[str, dict[str, int]]  # judge pass | fail | undecided -> human good | bad -> count

    def to_json(self) -> dict[str, Any]:
        return {
            "labelled": self.labelled,
            "decided": self.decided,
            "alignment": self.alignment.to_json(),
            "alignment_decided": self.alignment_decided.to_json(),
            "kappa": self.kappa.to_json(),
            "confusion": self.confusion,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def positive_rate(judgements: Sequence[bool | None], *, method: Method = "wilson", confidence: float) -> Rate:
    """Share of passes among every item judged (undecided ones included in the denominator)."""
    return rate(sum(1 for j in judgements if j is True), len(judgements), method=method, confidence=confidence)


def cohen_kappa(table: Sequence[Sequence[float]], *, confidence: float) -> Kappa:
    """Kappa of a k x k table of counts (rows: one rater, columns: the other), its standard error and a Wald
    interval clipped to [-1, 1]. None where undefined (no items, or both raters constant and equal)."""
    k = len(table)
    if k == 0 or any(len(row) != k for row in table):
        raise ValueError("cohen_kappa needs a square table")
    n = float(sum(sum(row) for row in table))
    if n <= 0:
        return Kappa(None, None, None, None)
    p = [[cell / n for cell in row] for row in table]
    rows = [sum(row) for row in p]
    columns = [sum(p[i][j] for i in range(k)) for j in range(k)]
    observed = sum(p[i][i] for i in range(k))
    expected = sum(rows[i] * columns[i] for i in range(k))
    if expected >= 1.0 - 1e-12:
        return Kappa(None, None, None, None)
    value = (observed - expected) / (1 - expected)
    diagonal = sum(p[i][i] * ((1 - expected) - (rows[i] + columns[i]) * (1 - observed)) ** 2 for i in range(k))
    off = sum(p[i][j] * (columns[i] + rows[j]) ** 2 for i in range(k) for j in range(k) if i != j)
    variance = (diagonal + (1 - observed) ** 2 * off - (observed * expected - 2 * expected + observed) ** 2) / (
        n * (1 - expected) ** 4
    )
    se = math.sqrt(max(variance, 0.0))
    z = normal_quantile(confidence)
    return Kappa(value, se, max(-1.0, value - z * se), min(1.0, value + z * se))


def agreement(
    judgements: Sequence[bool | None],
    labels: Sequence[int | None],
    *,
    method: Method = "wilson",
    confidence: float,
) -> Agreement:
    """Judge against human labels (1 good, 0 bad, None unlabelled: left out)."""
    if len(judgements) != len(labels):
        raise ValueError(f"{len(judgements)} judgements for {len(labels)} labels")
    confusion = {side: {"good": 0, "bad": 0} for side in ("pass", "fail", "undecided")}
    for judged, label in zip(judgements, labels, strict=True):
        if label is None:
            continue
        side = "undecided" if judged is None else ("pass" if judged else "fail")
        confusion[side]["good" if label == 1 else "bad"] += 1
    labelled = sum(sum(counts.values()) for counts in confusion.values())
    decided = labelled - sum(confusion["undecided"].values())
    aligned = confusion["pass"]["good"] + confusion["fail"]["bad"]
    table = [
        [confusion["pass"]["good"], confusion["pass"]["bad"]],
        [confusion["fail"]["good"], confusion["fail"]["bad"]],
    ]
    return Agreement(
        labelled=labelled,
        decided=decided,
        alignment=rate(aligned, labelled, method=method, confidence=confidence),
        alignment_decided=rate(aligned, decided, method=method, confidence=confidence),
        kappa=cohen_kappa(table, confidence=confidence),
        confusion=confusion,
    )
