"""A vectorised simulation of early stopping in ``spade sample``, shared by the statistics tests and the benchmark.

It follows the sampler (``spade_lsp/reliability/_sampling.py``): a run samples ``inputs`` inputs up to
``samples`` times each, in rounds that give every input ``ceil(2 * concurrency / inputs)`` more samples; after
each round the validator is tested on its samples pooled over the inputs, with the design effect of what was
sampled so far (:func:`spade_lsp.reliability._stats.sequential_decisions`, the code the sampler runs), and the run
stops at the first decision. The same outputs sampled in full give the fixed-sample run, whose verdict is the
clustered interval against the minimum (``analyse``'s ``_verdict``), reproduced here for many runs at once.

Inputs differ as real ones do: each input's own pass rate is drawn from a Beta distribution with mean ``rate``
and intra-class correlation ``icc`` (0: every input passes at ``rate``), and its samples pass independently at
that rate. The truth a decision is judged against is ``rate``, the rate over the population of inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special, stats

from spade_lsp.reliability._stats import sequential_decisions

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Simulated:
    """``runs`` simulated runs of one shape at one true rate. Decisions are 1 (above the minimum; verdict
    pass), -1 (below; fail) and 0 (undecided; inconclusive)."""

    rate: float
    minimum: float
    inputs: int
    samples: int
    decision: IntArray  # the sequential test's decision when the run stopped (0: it never decided)
    stopped_at: IntArray  # samples per input when the run stopped (``samples``: it ran to the end)
    full: IntArray  # the verdict of the fixed-sample run on the same outputs, sampled in full
    reported: IntArray  # the verdict the early-stopped run reports (analyse on what it sampled)
    old_calls: IntArray  # calls the previous rule (per input, Beta(1, 1) mixture) made on the same outputs

    @property
    def truth(self) -> int:
        return 1 if self.rate > self.minimum else -1 if self.rate < self.minimum else 0

    @property
    def stopped_early(self) -> npt.NDArray[np.bool_]:
        return self.stopped_at < self.samples

    @property
    def outcome(self) -> IntArray:
        """The run's decision: the sequential test's where it stopped early, else the verdict on the full data
        (then the fixed-sample run's by construction)."""
        return np.where(self.stopped_early, self.decision, self.full)

    @property
    def calls_saved(self) -> float:
        """1 - calls used / calls of the full run, over all runs."""
        return 1.0 - float(self.stopped_at.mean()) / self.samples

    @property
    def old_calls_saved(self) -> float:
        return 1.0 - float(self.old_calls.mean()) / (self.inputs * self.samples)

    @property
    def agreement(self) -> float:
        """Share of runs whose decision is the fixed-sample run's."""
        return float((self.outcome == self.full).mean())

    @property
    def reported_agreement(self) -> float:
        """Share of runs whose reported verdict is the fixed-sample run's."""
        return float((self.reported == self.full).mean())

    def _wrong(self, decisions: IntArray) -> float:
        wrong = decisions != 0 if self.truth == 0 else decisions == -self.truth
        return float(wrong.mean())

    @property
    def error_rate(self) -> float:
        """Share of runs where the sequential test decided the wrong way (any decision at the boundary)."""
        return self._wrong(self.decision)

    @property
    def outcome_error_rate(self) -> float:
        """The same for the run's decision (the fixed-sample verdict where the test did not stop the run)."""
        return self._wrong(self.outcome)

    @property
    def full_error_rate(self) -> float:
        """The same for the fixed-sample run, for comparison."""
        return self._wrong(self.full)


def design_effects(values: FloatArray) -> FloatArray:
    """:func:`spade_lsp.reliability._stats.design_effect` of each ``values[r]`` (runs x inputs x samples, no
    missing values)."""
    runs, clusters, items = values.shape
    if clusters < 2 or items <= 1:
        return np.ones(runs)
    count = clusters * items
    mean = values.mean(axis=(1, 2))
    residual_sums = (values - mean[:, None, None]).sum(axis=2)
    robust = (residual_sums**2).sum(axis=1) / count**2 * clusters / (clusters - 1)
    simple = mean * (1 - mean) / count
    inside = (mean > 0) & (mean < 1)
    ratio = np.divide(robust, simple, out=np.ones(runs), where=inside)
    return np.asarray(np.maximum(1.0, ratio), dtype=np.float64)


def verdicts(values: FloatArray, minimum: float, confidence: float) -> IntArray:
    """``analyse``'s Wilson verdict of each ``values[r]`` (runs x inputs x samples of one validator, complete):
    the interval at the effective sample size, rounded as reported, against the minimum."""
    _, clusters, items = values.shape
    count = clusters * items
    effective = count / design_effects(values)
    proportion = values.mean(axis=(1, 2))
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    denominator = 2 * (effective + z * z)
    centre = (2 * effective * proportion + z * z) / denominator
    half = z / denominator * np.sqrt(4 * effective * proportion * (1 - proportion) + z * z)
    low = np.where(proportion <= 0, 0.0, np.clip(centre - half, 0.0, 1.0))
    high = np.where(proportion >= 1, 1.0, np.clip(centre + half, 0.0, 1.0))
    low, high = np.round(low, 6), np.round(high, 6)
    return np.where(low >= minimum, 1, np.where(high < minimum, -1, 0)).astype(np.int64)


def _old_calls(outputs: FloatArray, minimum: float, confidence: float) -> IntArray:
    """Calls the previous rule makes: each input stops at the first sample where the Beta(1, 1) mixture
    against the minimum, over that input's samples alone, reaches 1 / (1 - confidence)."""
    samples = outputs.shape[2]
    successes = np.cumsum(outputs, axis=2)
    trials = np.arange(1, samples + 1, dtype=np.float64)
    failures = trials - successes
    log_ratio = special.betaln(1 + successes, 1 + failures) - (
        successes * math.log(minimum) + failures * math.log1p(-minimum)
    )
    observed = successes / trials
    decided = (log_ratio >= -math.log1p(-confidence)) & (observed != minimum)
    first = np.where(decided.any(axis=2), decided.argmax(axis=2) + 1, samples)
    return np.asarray(first.sum(axis=1), dtype=np.int64)


def simulate(
    inputs: int,
    samples: int,
    rate: float,
    *,
    runs: int,
    seed: int,
    icc: float = 0.0,
    minimum: float = 0.9,
    confidence: float = 0.95,
    concurrency: int = 8,
    own_rates: npt.ArrayLike | None = None,
) -> Simulated:
    """Simulate ``runs`` runs of ``inputs`` x ``samples`` with one validator whose true rate is ``rate``;
    ``own_rates`` (one per input, the same in every run) replaces the Beta draws, ``rate`` then being their mean."""
    rng = np.random.default_rng(seed)
    if own_rates is not None:
        own = np.broadcast_to(np.asarray(own_rates, dtype=np.float64), (runs, inputs))
    elif icc == 0.0 or rate in (0.0, 1.0):
        own = np.full((runs, inputs), rate)
    else:
        weight = 1.0 / icc - 1.0
        own = rng.beta(rate * weight, (1 - rate) * weight, size=(runs, inputs))
    outputs = (rng.random((runs, inputs, samples)) < own[:, :, None]).astype(np.float64)
    block = max(1, math.ceil(2 * concurrency / inputs))
    decision = np.zeros(runs, dtype=np.int64)
    stopped_at = np.full(runs, samples, dtype=np.int64)
    reported = verdicts(outputs, minimum, confidence)
    full = reported.copy()
    open_ = np.ones(runs, dtype=bool)
    looks = sorted({min(samples, block * k) for k in range(1, samples + 1)})
    for look in looks:
        sampled = outputs[:, :, :look]
        successes = sampled.sum(axis=(1, 2))
        decided = sequential_decisions(
            successes,
            np.full(runs, inputs * look),
            minimum,
            confidence=confidence,
            design_effect=design_effects(sampled),
        ).astype(np.int64)
        new = open_ & (decided != 0)
        decision[new] = decided[new]
        if look < samples and new.any():
            stopped_at[new] = look
            reported[new] = verdicts(sampled[new], minimum, confidence)
        open_ &= ~new
    return Simulated(
        rate=rate,
        minimum=minimum,
        inputs=inputs,
        samples=samples,
        decision=decision,
        stopped_at=stopped_at,
        full=full,
        reported=reported,
        old_calls=_old_calls(outputs, minimum, confidence),
    )
