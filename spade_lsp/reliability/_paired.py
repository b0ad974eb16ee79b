"""Paired comparison of two variants sampled on the same inputs with the same sample indices.

For one check, cell (i, j) of each variant is the j-th output for input i: 1 passed, 0 failed, NaN not measured.
Pairs are the cells measured in both. The difference in success rate (candidate minus baseline) is estimated
from the per-input mean differences, and its standard error is clustered by input (Miller 2024, "Adding Error
Bars to Evals", section on paired differences and clustering): the outputs of one input share its difficulty,
so they are not independent. The interval uses Student's t with (inputs - 1) degrees of freedom. When the
discordant pairs are few (under ``EXACT_BELOW``), or fewer than two inputs have pairs, the verdict comes from
McNemar's exact test on the discordant pairs instead of the interval.

Power uses the normal approximation: the minimum detectable effect at the inputs used is (z_(1-alpha/2) +
z_power) * SE, and the inputs needed to detect an effect delta are ((z_(1-alpha/2) + z_power) * sd / delta)^2,
where sd is the spread of the per-input differences (paired) or sqrt(var_baseline + var_candidate) of the
per-input rates (unpaired: each variant on inputs of its own, as many as that).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

__all__ = ["EXACT_BELOW", "PairedDifference", "mcnemar_exact", "paired_difference"]

FloatArray = npt.NDArray[np.float64]
Verdict = Literal["better", "worse", "no detectable difference"]
#: Below this many discordant pairs the verdict comes from McNemar's exact test.
EXACT_BELOW: Final = 25


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """One check compared: rates, their difference with a clustered interval, the exact test, the verdict."""

    baseline_rate: float | None
    candidate_rate: float | None
    difference: float | None
    standard_error: float | None
    low: float | None
    high: float | None
    inputs: int  # inputs with at least one pair (the clusters)
    pairs: int
    candidate_only: int  # discordant: the candidate passed, the baseline failed
    baseline_only: int  # discordant: the baseline passed, the candidate failed
    mcnemar_p: float
    test: Literal["interval", "mcnemar-exact"]
    verdict: Verdict
    confidence: float
    mde: float | None  # the smallest difference this many inputs detects with ``power``
    power: float
    effect: float
    inputs_needed_paired: int | None
    inputs_needed_unpaired: int | None

    def to_json(self) -> dict[str, Any]:
        def r(value: float | None) -> float | None:
            return None if value is None else round(value, 6)

        return {
            "baseline": r(self.baseline_rate),
            "candidate": r(self.candidate_rate),
            "difference": r(self.difference),
            "standard_error": r(self.standard_error),
            "low": r(self.low),
            "high": r(self.high),
            "confidence": self.confidence,
            "inputs": self.inputs,
            "pairs": self.pairs,
            "discordant": {"candidate_only": self.candidate_only, "baseline_only": self.baseline_only},
            "mcnemar_p": float(f"{self.mcnemar_p:.6g}"),  # p-values get small: significant digits
            "test": self.test,
            "verdict": self.verdict,
            "mde": r(self.mde),
            "power": self.power,
            "effect": self.effect,
            "inputs_needed": {"paired": self.inputs_needed_paired, "unpaired": self.inputs_needed_unpaired},
        }


def mcnemar_exact(candidate_only: int, baseline_only: int) -> float:
    """Two-sided exact McNemar p-value: the discordant pairs split as a fair coin would split them."""
    n = candidate_only + baseline_only
    if n == 0:
        return 1.0
    return float(stats.binomtest(min(candidate_only, baseline_only), n, 0.5).pvalue)


def _needed(sd: float, effect: float, confidence: float, power: float) -> int | None:
    if not math.isfinite(sd) or effect <= 0:
        return None
    z = float(stats.norm.ppf(1 - (1 - confidence) / 2) + stats.norm.ppf(power))
    return max(2, math.ceil((z * sd / effect) ** 2))


def paired_difference(
    baseline: npt.ArrayLike,
    candidate: npt.ArrayLike,
    *,
    confidence: float,
    effect: float = 0.10,
    power: float = 0.80,
) -> PairedDifference:
    """Compare one check's cells, ``baseline[i][j]`` against ``candidate[i][j]`` (inputs by samples)."""
    if not 0 < confidence < 1 or not 0 < power < 1:
        raise ValueError("confidence and power must lie strictly between 0 and 1")
    base = np.asarray(baseline, dtype=np.float64)
    cand = np.asarray(candidate, dtype=np.float64)
    if base.ndim != 2 or base.shape != cand.shape:
        raise ValueError(f"both variants need the same inputs-by-samples shape, got {base.shape} and {cand.shape}")
    paired = ~np.isnan(base) & ~np.isnan(cand)
    counts = paired.sum(axis=1)
    keep = counts > 0
    k = counts[keep].astype(np.float64)
    b = np.where(paired, base, 0.0)[keep]
    c = np.where(paired, cand, 0.0)[keep]
    n = int(keep.sum())
    pairs = int(k.sum())
    candidate_only = int(((c == 1) & (b == 0) & paired[keep]).sum())
    baseline_only = int(((b == 1) & (c == 0) & paired[keep]).sum())
    p_exact = mcnemar_exact(candidate_only, baseline_only)
    alpha = 1 - confidence
    if pairs == 0:
        return PairedDifference(
            None, None, None, None, None, None, 0, 0, 0, 0, 1.0, "mcnemar-exact",
            "no detectable difference", confidence, None, power, effect, None, None,
        )  # fmt: skip
    base_i = b.sum(axis=1) / k  # per-input rates
    cand_i = c.sum(axis=1) / k
    d_i = cand_i - base_i
    total = k.sum()
    difference = float((k * d_i).sum() / total)
    baseline_rate = float(b.sum() / total)
    candidate_rate = float(c.sum() / total)
    se: float | None = None
    low = high = mde = None
    needed_paired = needed_unpaired = None
    if n >= 2:
        # the cluster-robust (CR1) standard error of a ratio estimator; with equal k_i it is sd(d_i) / sqrt(n)
        se = float(math.sqrt(n / (n - 1) * float((k**2 * (d_i - difference) ** 2).sum())) / total)
        t = float(stats.t.ppf(1 - alpha / 2, n - 1))
        low, high = max(-1.0, difference - t * se), min(1.0, difference + t * se)
        z = float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))
        mde = z * se
        needed_paired = _needed(float(np.std(d_i, ddof=1)), effect, confidence, power)
        spread = float(np.var(base_i, ddof=1) + np.var(cand_i, ddof=1))
        needed_unpaired = _needed(math.sqrt(spread), effect, confidence, power)
    exact = candidate_only + baseline_only < EXACT_BELOW or se is None
    verdict: Verdict = "no detectable difference"
    if exact:
        if p_exact < alpha:
            verdict = "better" if candidate_only > baseline_only else "worse"
    elif low is not None and high is not None:
        if low > 0:
            verdict = "better"
        elif high < 0:
            verdict = "worse"
    return PairedDifference(
        baseline_rate, candidate_rate, difference, se, low, high, n, pairs, candidate_only, baseline_only,
        p_exact, "mcnemar-exact" if exact else "interval", verdict, confidence, mde, power, effect,
        needed_paired, needed_unpaired,
    )  # fmt: skip
