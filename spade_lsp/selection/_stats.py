"""How far to trust coverage and FFR measured on a few dozen examples.

Wilson score intervals (not the normal approximation, which collapses to a point at 0 or 1 successes, the
usual case here), and stratified k-fold splits so every fold holds good and bad examples.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import numpy.typing as npt


def wilson_interval(successes: int, trials: int, *, confidence: float) -> tuple[float, float] | None:
    """The Wilson score interval for ``successes`` out of ``trials``; None when there are no trials."""
    if trials <= 0:
        return None
    if not 0 <= successes <= trials:
        raise ValueError(f"{successes} successes out of {trials} trials")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


def stratified_folds(labels: npt.NDArray[np.int8], folds: int, *, seed: int = 0) -> list[npt.NDArray[np.intp]]:
    """``folds`` disjoint test index sets over the labelled rows, each class dealt round-robin after a seeded
    shuffle, so each fold's good/bad mix matches the whole."""
    rng = np.random.default_rng(seed)
    buckets: list[list[int]] = [[] for _ in range(folds)]
    for label in (0, 1):
        rows = np.flatnonzero(labels == label)
        rng.shuffle(rows)
        for position, row in enumerate(rows.tolist()):
            buckets[position % folds].append(row)
    return [np.array(sorted(bucket), dtype=np.intp) for bucket in buckets]
