"""Benchmark: the paired comparison's statistics by simulation (issue 9, section 4).

- Coverage: the paired interval (clustered by input, Student's t) covers the true difference in success rate in
  >= 93% of simulated experiments at 95% nominal, in every scenario below (inputs whose difficulty varies, a
  candidate that is better, worse or the same, one to five samples per input).
- Sample size: to detect a 10-point drop with 80% power at 95% confidence, the paired design (both variants on
  the same inputs) needs fewer inputs than the unpaired one (each variant on inputs of its own, compared with
  Welch's t on per-input rates). Both are found by simulation and printed, beside the analytic estimates the
  engine reports (``inputs_needed``).

The population: each input has a difficulty, so its baseline success probability is p_i = logistic(a_i),
a_i ~ Normal(mu, 1.2); the candidate's is logistic(a_i + shift). Samples are Bernoulli draws. The true
difference is E[logistic(a + shift) - logistic(a)] over the population (numerically integrated).
Run with ``make bench`` or ``pytest -q -s tests/benchmarks/test_compare_bench.py``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import stats

from spade_lsp.reliability._paired import paired_difference
from tests.support.floors import at_least, figure

pytestmark = pytest.mark.benchmark

COVERAGE_FLOOR = 0.93
REPLICATES = 2000
SPREAD = 1.2  # sd of the inputs' logit difficulty
POWER = 0.80
EFFECT = 0.10


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def true_difference(mu: float, shift: float) -> float:
    """E[logistic(a + shift) - logistic(a)], a ~ Normal(mu, SPREAD), by Gauss-Hermite quadrature."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    a = mu + SPREAD * nodes
    return float((weights * (_logistic(a + shift) - _logistic(a))).sum() / weights.sum())


def _draw(rng: np.random.Generator, inputs: int, samples: int, mu: float, shift: float) -> tuple[np.ndarray, ...]:
    a = rng.normal(mu, SPREAD, size=inputs)
    base = (rng.uniform(size=(inputs, samples)) < _logistic(a)[:, None]).astype(float)
    cand = (rng.uniform(size=(inputs, samples)) < _logistic(a + shift)[:, None]).astype(float)
    return base, cand


@dataclass(frozen=True)
class Scenario:
    inputs: int
    samples: int
    mu: float  # the baseline's logit difficulty: 1.4 is about 77% success
    shift: float


SCENARIOS = [
    Scenario(30, 5, 1.4, 0.0),
    Scenario(30, 5, 1.4, -0.6),
    Scenario(50, 3, 0.5, 0.5),
    Scenario(100, 1, 1.4, -0.6),
    Scenario(20, 5, 2.0, -1.0),
]


def test_the_paired_interval_covers_the_true_difference() -> None:
    rng = np.random.default_rng(20261123)
    print()
    for scenario in SCENARIOS:
        truth = true_difference(scenario.mu, scenario.shift)
        covered = 0
        for _ in range(REPLICATES):
            base, cand = _draw(rng, scenario.inputs, scenario.samples, scenario.mu, scenario.shift)
            diff = paired_difference(base, cand, confidence=0.95)
            assert diff.low is not None and diff.high is not None
            covered += diff.low <= truth <= diff.high
        coverage = covered / REPLICATES
        print(
            f"coverage {coverage:.3f} (95% nominal) with {scenario.inputs} inputs x {scenario.samples} samples, "
            f"true difference {100 * truth:+.1f} points"
        )
        # a seeded simulation: the figure does not depend on the machine, so a miss fails (strict)
        name = f"coverage_{scenario.inputs}x{scenario.samples}_mu{scenario.mu:g}_shift{scenario.shift:g}"
        at_least(name, coverage, COVERAGE_FLOOR, "", strict=True)


def _detects(rng: np.random.Generator, inputs: int, samples: int, mu: float, shift: float, paired: bool) -> bool:
    base, cand = _draw(rng, inputs, samples, mu, shift)
    if paired:
        diff = paired_difference(base, cand, confidence=0.95)
        return diff.verdict == "worse"
    # unpaired: the candidate on inputs of its own; Welch's t on the per-input rates
    other, _ = _draw(rng, inputs, samples, mu, shift)
    _, own = _draw(rng, inputs, samples, mu, shift)
    with warnings.catch_warnings():  # a handful of inputs can all share one rate: scipy warns, the test holds
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.ttest_ind(own.mean(axis=1), other.mean(axis=1), equal_var=False)
    return bool(result.pvalue < 0.05 and own.mean() < other.mean())


def _inputs_for_power(rng: np.random.Generator, samples: int, mu: float, shift: float, paired: bool) -> int:
    """The fewest inputs (on a 10% grid) detecting the drop in >= 80% of 400 simulated experiments."""
    low, high = 4, 8
    while _power(rng, high, samples, mu, shift, paired) < POWER:
        low, high = high, high * 2
    while high - low > max(2, low // 10):
        middle = (low + high) // 2
        if _power(rng, middle, samples, mu, shift, paired) >= POWER:
            high = middle
        else:
            low = middle
    return high


def _power(rng: np.random.Generator, inputs: int, samples: int, mu: float, shift: float, paired: bool) -> float:
    return float(np.mean([_detects(rng, inputs, samples, mu, shift, paired) for _ in range(400)]))


def test_the_paired_design_needs_fewer_inputs_for_a_ten_point_drop() -> None:
    rng = np.random.default_rng(7)
    samples, mu = 5, 1.4
    shift = _shift_for(mu, -EFFECT)
    assert true_difference(mu, shift) == pytest.approx(-EFFECT, abs=1e-4)
    paired = _inputs_for_power(rng, samples, mu, shift, paired=True)
    unpaired = _inputs_for_power(rng, samples, mu, shift, paired=False)
    # the engine's analytic estimates, from one pilot of 200 inputs
    base, cand = _draw(rng, 200, samples, mu, shift)
    pilot = paired_difference(base, cand, effect=EFFECT, power=POWER, confidence=0.95)
    print(
        f"\ninputs to detect a 10-point drop (80% power, 95% confidence, {samples} samples per input): "
        f"paired {paired}, unpaired {unpaired} per variant ({unpaired / paired:.1f}x); analytic from a pilot: "
        f"paired {pilot.inputs_needed_paired}, unpaired {pilot.inputs_needed_unpaired}"
    )
    figure("inputs_for_10pt_drop_paired", paired, "inputs")
    figure("inputs_for_10pt_drop_unpaired", unpaired, "inputs")
    assert paired < unpaired
    assert pilot.inputs_needed_paired is not None and pilot.inputs_needed_unpaired is not None
    assert pilot.inputs_needed_paired < pilot.inputs_needed_unpaired


def _shift_for(mu: float, difference: float) -> float:
    """The logit shift whose true difference is ``difference`` (bisection)."""
    low, high = -5.0, 5.0
    for _ in range(60):
        middle = (low + high) / 2
        if true_difference(mu, middle) < difference:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def test_true_difference_integrates_correctly() -> None:
    rng = np.random.default_rng(1)
    a = rng.normal(1.4, SPREAD, size=400_000)
    monte_carlo = float((_logistic(a - 0.6) - _logistic(a)).mean())
    assert true_difference(1.4, -0.6) == pytest.approx(monte_carlo, abs=2e-3)
    assert math.isclose(true_difference(0.3, 0.0), 0.0, abs_tol=1e-12)
