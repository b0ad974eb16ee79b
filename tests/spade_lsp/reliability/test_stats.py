"""The statistics of reliability sampling against hand-computed figures, scipy, and a simulation."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import integrate, special, stats

from spade_lsp.reliability import METHODS, ValidatorSpec
from spade_lsp.reliability._stats import (
    SEQUENTIAL_PRIOR_WEIGHT,
    Rate,
    analyse,
    attempts_for,
    binomial_interval,
    clustered_rate,
    design_effect,
    expected_attempts,
    rate,
    sequential_decision,
    sequential_decisions,
    sequential_evidence,
    sequential_threshold,
)
from tests.spade_lsp.reliability.sequential_simulation import design_effects, simulate, verdicts

NaN = math.nan


# --- binomial intervals ---------------------------------------------------------------------------------------


def test_wilson_by_hand() -> None:
    # z = 1.959964, z^2 = 3.841459; denominator 2 (10 + z^2) = 27.682918;
    # centre (2 * 10 * 0.8 + z^2) / 27.682918 = 19.841459 / 27.682918 = 0.716740;
    # half width z / 27.682918 * sqrt(4 * 10 * 0.8 * 0.2 + z^2) = 0.070801 * 3.200228 = 0.226578.
    low, high = binomial_interval(8, 10, confidence=0.95)
    assert low == pytest.approx(0.716740 - 0.226578, abs=2e-6)
    assert high == pytest.approx(0.716740 + 0.226578, abs=2e-6)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)


def test_clopper_pearson_by_hand() -> None:
    # The exact bounds are Beta quantiles: low = Beta(8, 3).ppf(0.025), high = Beta(9, 2).ppf(0.975).
    low, high = binomial_interval(8, 10, method="clopper-pearson", confidence=0.95)
    assert (round(low, 4), round(high, 4)) == (0.4439, 0.9748)
    # At the edges the bounds are exactly 0 and 1: 0/5 has low 0 and high 1 - 0.025^(1/5) = 0.521824.
    assert binomial_interval(0, 5, method="clopper-pearson", confidence=0.95) == pytest.approx((0.0, 1 - 0.025**0.2))
    assert binomial_interval(0, 5, method="clopper-pearson", confidence=0.95)[0] == 0.0
    assert binomial_interval(5, 5, method="clopper-pearson", confidence=0.95) == pytest.approx((0.025**0.2, 1.0))
    assert binomial_interval(5, 5, method="clopper-pearson", confidence=0.95)[1] == 1.0


@pytest.mark.parametrize("method, scipy_method", [("wilson", "wilson"), ("clopper-pearson", "exact")])
@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_matches_scipy_binomtest(method: Any, scipy_method: str, confidence: float) -> None:
    for trials in [1, 2, 3, 5, 8, 13, 20, 37, 50]:
        for successes in range(trials + 1):
            expected = stats.binomtest(successes, trials).proportion_ci(confidence, method=scipy_method)
            low, high = binomial_interval(successes, trials, method=method, confidence=confidence)
            assert low == pytest.approx(expected.low, abs=1e-9), (successes, trials)
            assert high == pytest.approx(expected.high, abs=1e-9), (successes, trials)


def test_non_integer_counts_interpolate() -> None:
    # An effective sample size between two integers gives an interval between theirs (here at p = 0.5).
    for method in METHODS:
        narrow = binomial_interval(5, 10, method=method, confidence=0.95)
        wide = binomial_interval(2, 4, method=method, confidence=0.95)
        middle = binomial_interval(3.5, 7, method=method, confidence=0.95)
        assert wide[0] < middle[0] < narrow[0]
        assert narrow[1] < middle[1] < wide[1]


def test_rate_and_json() -> None:
    eight = rate(8, 10, confidence=0.95)
    assert eight.rate == 0.8
    assert eight.to_json() == {"successes": 8, "trials": 10, "rate": 0.8, "ci_low": 0.490162, "ci_high": 0.943318}
    assert rate(0, 0, confidence=0.95) == Rate(0, 0, None, None, None)
    assert rate(0, 0, confidence=0.95).to_json() == {
        "successes": 0,
        "trials": 0,
        "rate": None,
        "ci_low": None,
        "ci_high": None,
    }
    fractional = Rate(2.5, 4, 0.625, 0.1, 0.9).to_json()
    assert fractional["successes"] == 2.5
    assert isinstance(Rate(3.0, 4, 0.75, 0.3, 0.95).to_json()["successes"], int)


# --- clustering -----------------------------------------------------------------------------------------------


def test_clustered_rate_with_one_item_per_cluster_is_plain() -> None:
    values = np.array([[1.0], [0.0], [1.0], [1.0], [NaN], [0.0], [1.0]])
    for method in METHODS:
        assert clustered_rate(values, method=method, confidence=0.95) == rate(4, 6, method=method, confidence=0.95)
        # and a single cluster is plain too
        assert clustered_rate(values.T, method=method, confidence=0.95) == rate(4, 6, method=method, confidence=0.95)


def test_design_effect_by_hand() -> None:
    # Three inputs with two samples each: [1, 1], [1, 0], [0, 0]. p = 3/6 = 0.5, n = 6.
    # Residual sums per cluster: 1, 0, -1. Robust variance = (1 + 0 + 1) / 6^2 * 3/2 = 1/12.
    # Simple variance = 0.5 * 0.5 / 6 = 1/24. deff = 2, so n_eff = 3 and the interval is that of 1.5 / 3.
    values = np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 0.0]])
    assert design_effect(values) == pytest.approx(2.0)
    clustered = clustered_rate(values, confidence=0.95)
    low, high = binomial_interval(1.5, 3, confidence=0.95)
    assert (clustered.successes, clustered.trials, clustered.rate) == (3.0, 6, 0.5)
    assert clustered.ci_low == pytest.approx(low)
    assert clustered.ci_high == pytest.approx(high)


def test_design_effect_is_floored_at_one() -> None:
    # Every input half passes: the cluster sums of residuals are all 0, so the robust variance is 0.
    values = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    assert design_effect(values) == 1.0
    assert clustered_rate(values, confidence=0.95) == rate(3, 6, confidence=0.95)
    # all passing: p = 1, deff = 1
    assert design_effect(np.ones((3, 4))) == 1.0


def test_perfectly_clustered_data_widens_the_interval() -> None:
    # Five inputs always pass, five always fail, four samples each: really ten observations, not forty.
    values = np.repeat(np.array([[1.0]] * 5 + [[0.0]] * 5), 4, axis=1)
    clustered = clustered_rate(values, confidence=0.95)
    plain = rate(20, 40, confidence=0.95)
    assert clustered.rate == plain.rate == 0.5
    assert clustered.ci_low is not None and plain.ci_low is not None
    assert clustered.ci_high is not None and plain.ci_high is not None
    assert clustered.ci_low < plain.ci_low and clustered.ci_high > plain.ci_high
    # deff = (5 * 2^2 + 5 * 2^2) / 40^2 * 10/9 / (0.25 / 40) = 40/1600 * 10/9 * 160 = 4.444
    assert design_effect(values) == pytest.approx(40 / 9)


def test_clustered_rate_of_fractional_scores_and_missing_values() -> None:
    values = np.array([[0.5, 1.0, NaN], [0.25, NaN, NaN]])
    clustered = clustered_rate(values, confidence=0.95)
    assert clustered.successes == 1.75 and clustered.trials == 3
    assert clustered.rate == pytest.approx(1.75 / 3)
    assert clustered_rate(np.full((2, 2), NaN), confidence=0.95) == Rate(0, 0, None, None, None)


# --- sequential decisions -------------------------------------------------------------------------------------


def _mixture(successes: float, failures: float, minimum: float, *, above: bool) -> float:
    """The one-sided mixture likelihood ratio by numerical integration, against the closed form."""
    a, b = SEQUENTIAL_PRIOR_WEIGHT * minimum, SEQUENTIAL_PRIOR_WEIGHT * (1 - minimum)
    low, high = (minimum, 1.0) if above else (0.0, minimum)
    prior = integrate.quad(lambda q: stats.beta.pdf(q, a, b), low, high)[0]

    def ratio(q: float) -> float:
        log = successes * math.log(q / minimum) + failures * math.log((1 - q) / (1 - minimum))
        return math.exp(log) * float(stats.beta.pdf(q, a, b))

    return integrate.quad(ratio, low, high, points=[minimum], limit=200)[0] / prior


@pytest.mark.parametrize(
    ("successes", "trials", "minimum", "deff"),
    [(48, 48, 0.9, 1.0), (28, 40, 0.9, 1.0), (45, 50, 0.9, 1.0), (90, 100, 0.7, 3.0), (3, 10, 0.5, 1.0)],
)
def test_sequential_evidence_is_the_mixture_integral(successes: int, trials: int, minimum: float, deff: float) -> None:
    log_above, log_below = sequential_evidence(successes, trials, minimum, design_effect=deff)
    s, f = successes / deff, (trials - successes) / deff
    assert math.exp(float(log_above)) == pytest.approx(_mixture(s, f, minimum, above=True), rel=1e-6)
    assert math.exp(float(log_below)) == pytest.approx(_mixture(s, f, minimum, above=False), rel=1e-6)


def test_why_the_previous_rule_never_stopped_at_the_default_minimum() -> None:
    # Decisions were per (input, validator) over at most samples_per_input = 5 samples. Against p = 0.9 no
    # likelihood ratio on 5 straight passes exceeds 0.9^-5 = 1.69 (at q = 1), far from 1 / 0.05 = 20, and the
    # Beta(1, 1) mixture's is (1/6) / 0.9^5 = 0.28: a passing check was never decided for any input.
    assert pytest.approx(1.6935, abs=1e-4) == 0.9**-5
    assert math.exp(special.betaln(6, 1)) / 0.9**5 == pytest.approx(0.2823, abs=1e-4)
    assert sequential_decision(5, 5, 0.9, confidence=0.95) is None


def test_a_check_passing_every_sample_is_decided_above_within_48_samples() -> None:
    # Pooled over the inputs, at the default minimum 0.9 and confidence 0.95 the "above" mixture passes
    # 2 / 0.05 = 40 at the 48th straight pass (40.41; 37.01 after 47): one round of the shared pipelines'
    # 50 to 100 inputs. At 99% confidence (threshold 200) it takes 66.
    assert math.exp(float(sequential_evidence(48, 48, 0.9)[0])) == pytest.approx(40.41, abs=0.01)
    assert math.exp(float(sequential_evidence(47, 47, 0.9)[0])) == pytest.approx(37.01, abs=0.01)
    assert sequential_decision(48, 48, 0.9, confidence=0.95) == "above"
    assert sequential_decision(47, 47, 0.9, confidence=0.95) is None
    assert next(n for n in range(1, 100) if sequential_decision(n, n, 0.9, confidence=0.99)) == 66
    assert sequential_threshold(0.95) == pytest.approx(math.log(40))


def test_a_clearly_failing_check_is_decided_below() -> None:
    # 70% against 0.9: the "below" mixture is 33.3 at 21/30 and 129.9 at 28/40; every failure: 5 samples.
    assert sequential_decision(21, 30, 0.9, confidence=0.95) is None
    assert sequential_decision(28, 40, 0.9, confidence=0.95) == "below"
    assert next(n for n in range(1, 20) if sequential_decision(0, n, 0.9, confidence=0.95)) == 5


def test_a_rate_near_the_minimum_stays_undecided() -> None:
    for successes, trials in [(45, 50), (90, 100), (460, 500), (900, 1000), (9000, 10000), (8950, 10000)]:
        assert sequential_decision(successes, trials, 0.9, confidence=0.95) is None
    # (with enough samples a rate a little away from it is decided: 0.93 or 0.885 on 1,000 or 10,000)
    assert sequential_decision(930, 1000, 0.9, confidence=0.95) == "above"
    assert sequential_decision(8850, 10000, 0.9, confidence=0.95) == "below"


def test_the_design_effect_deflates_the_evidence() -> None:
    # 90/100 against 0.7: 22,826 as independent samples; with a design effect of 3, as 30 of 33.3: 18.5 < 40.
    assert sequential_decision(90, 100, 0.7, confidence=0.95) == "above"
    assert sequential_decision(90, 100, 0.7, design_effect=3.0, confidence=0.95) is None
    assert math.exp(float(sequential_evidence(90, 100, 0.7, design_effect=3.0)[0])) == pytest.approx(18.54, abs=0.01)


def test_sequential_decisions_match_the_scalar_rule() -> None:
    successes = np.array([48, 47, 28, 21, 0, 930, 90, 0])
    trials = np.array([48, 47, 40, 30, 5, 1000, 100, 0])
    codes = sequential_decisions(successes, trials, 0.9, confidence=0.95)
    expected = [
        sequential_decision(int(s), int(n), 0.9, confidence=0.95) for s, n in zip(successes, trials, strict=True)
    ]
    assert [{1: "above", -1: "below", 0: None}[int(c)] for c in codes] == expected


def test_sequential_decision_edges() -> None:
    assert sequential_decision(0, 0, 0.5, confidence=0.95) is None
    assert sequential_decision(0, 1, 0.0, confidence=0.95) == "above"
    assert sequential_decision(0, 0, 0.0, confidence=0.95) is None
    assert sequential_decision(9, 10, 1.0, confidence=0.95) == "below"
    assert sequential_decision(100, 100, 1.0, confidence=0.95) is None
    with pytest.raises(ValueError, match="design effect"):
        sequential_decision(5, 10, 0.5, design_effect=0.5, confidence=0.95)
    with pytest.raises(ValueError, match="successes"):
        sequential_decision(11, 10, 0.5, confidence=0.95)
    with pytest.raises(ValueError, match="confidence"):
        sequential_decision(5, 10, 0.5, confidence=1.0)


def test_looking_after_every_sample_keeps_the_error_rate_at_the_minimum() -> None:
    # 2,000 runs of 250 samples at p = minimum = 0.9, tested after every sample, stopping at the first decision:
    # any decision is an error, and Ville's inequality bounds the lot by 1 - confidence.
    rng = np.random.default_rng(20261125)
    successes = np.cumsum(rng.random((2000, 250)) < 0.9, axis=1)
    trials = np.broadcast_to(np.arange(1, 251), successes.shape)
    decided = sequential_decisions(successes, trials, 0.9, confidence=0.95) != 0
    assert decided.any(axis=1).mean() <= 0.05


def test_early_stopping_keeps_its_error_rate_at_the_minimum_in_the_sampler_design() -> None:
    # The sampler's design at the defaults: 50 inputs x 5 samples, a test after each round of one sample per
    # input. Inputs alike (icc 0) or not (icc 0.3, the design effect at work); 3,000 seeded runs each.
    for icc, seed in ((0.0, 11), (0.3, 12)):
        run = simulate(50, 5, 0.9, runs=3000, seed=seed, icc=icc)
        assert run.error_rate <= 0.05
    # for the inputs drawn, however differently they behave: four inputs whose own rates average 0.9
    run = simulate(4, 100, 0.9, runs=3000, seed=13, own_rates=[0.8, 1.0, 0.85, 0.95])
    assert run.error_rate <= 0.05


def test_early_stopping_saves_calls_on_clear_cases_and_keeps_the_decision() -> None:
    passing = simulate(50, 5, 0.99, runs=1000, seed=14)
    failing = simulate(50, 5, 0.7, runs=1000, seed=15)
    assert passing.calls_saved >= 0.3 and failing.calls_saved >= 0.3
    assert passing.agreement >= 0.95 and failing.agreement >= 0.95
    assert (passing.decision == 1).mean() > 0.9 and (failing.decision == -1).mean() > 0.9


def test_the_simulated_verdicts_are_analyse_s() -> None:
    rng = np.random.default_rng(16)
    own = rng.beta(2.7, 0.3, size=(30, 20))
    values = (rng.random((30, 20, 4)) < own[:, :, None]).astype(float)
    names = [str(i) for i in range(20)]
    for minimum in (0.8, 0.9):
        ours = verdicts(values, minimum, 0.95)
        for run, verdict in zip(values, ours.tolist(), strict=True):
            document = analyse(run[:, :, None], [ValidatorSpec("v", "", minimum)], names, confidence=0.95)
            assert {1: "pass", -1: "fail", 0: "inconclusive"}[verdict] == document["validators"][0]["verdict"]
    deffs = design_effects(values)
    assert deffs.tolist() == pytest.approx([design_effect(run) for run in values])


# --- attempts -------------------------------------------------------------------------------------------------


def test_attempts() -> None:
    # 1 - 0.1^2 = 0.99 exactly (floating point puts log(0.01)/log(0.1) a hair above 2)
    assert attempts_for(0.9, 0.99) == 2
    # 0.5^6 = 0.0156 > 0.01 >= 0.5^7 = 0.0078
    assert attempts_for(0.5, 0.99) == 7
    assert attempts_for(1.0, 0.99) == 1
    assert attempts_for(0.0, 0.99) is None
    assert attempts_for(None, 0.99) is None
    assert attempts_for(0.999, 0.5) == 1
    assert expected_attempts(0.8) == pytest.approx(1.25)
    assert expected_attempts(0.0) is None
    assert expected_attempts(None) is None


# --- analyse --------------------------------------------------------------------------------------------------

TWO_BY_THREE = np.array(
    [
        [[1, 1], [1, 0], [NaN, 1]],  # ex-1: passes all; fails b; a not observed (b passed)
        [[0, 0], [1, 1], [NaN, NaN]],  # ex-2: fails both; passes all; not sampled
    ]
)
SPECS = [ValidatorSpec("a", "A holds", 0.5), ValidatorSpec("b", "B holds", 0.9)]


def test_analyse_small_tensor_every_key() -> None:
    result = analyse(TWO_BY_THREE, SPECS, ["ex-1", "ex-2"], errors=[1, 0], confidence=0.95)
    assert list(result) == [
        "shape",
        "method",
        "confidence",
        "validators",
        "p_pass",
        "expected_attempts",
        "attempts_for_99",
        "inputs_differ",
        "heterogeneity_p",
        "per_input",
        "profiles",
        "aggregate",
        "tensor",
    ]
    assert (result["shape"], result["method"], result["confidence"]) == ("all", "wilson", 0.95)

    a, b = result["validators"]
    # a: 3 of 4 observed cells; clustered by input: ex-1 [1, 1], ex-2 [0, 1], p = 0.75, n = 4;
    # residual sums 0.5, -0.5; robust variance (0.25 + 0.25) / 16 * 2/1 = 1/16, simple 0.1875 / 4 = 3/64,
    # so deff = 4/3, n_eff = 3 and the interval is that of 2.25 / 3.
    a_low, a_high = binomial_interval(2.25, 3, confidence=0.95)
    assert a == {
        "name": "a",
        "message": "A holds",
        "successes": 3,
        "trials": 4,
        "rate": 0.75,
        "ci_low": round(a_low, 6),
        "ci_high": round(a_high, 6),
        "minimum": 0.5,
        "verdict": "inconclusive",
        "errors": 1,
        "not_applicable": 0,
    }
    # b: 3 of 5 (ex-1 [1, 0, 1], ex-2 [0, 1]); the interval (0.23, 0.88) lies below 0.9.
    assert b["successes"] == 3 and b["trials"] == 5 and b["rate"] == 0.6
    assert b["ci_high"] < 0.9 and b["verdict"] == "fail" and b["errors"] == 0

    # passed_all: ex-1 [True, False, None], ex-2 [False, True, -]: 2 of 4, clustered [1, 0] and [0, 1] -> deff 1
    p_pass = result["p_pass"]
    assert p_pass["measured"] == rate(2, 4, confidence=0.95).to_json()
    assert p_pass["predicted"]["rate"] == pytest.approx(0.75 * 0.6)
    assert p_pass["agree"] is True and p_pass["warning"] is None
    measured_low, measured_high = binomial_interval(2, 4, confidence=0.95)
    assert result["expected_attempts"] == {
        "value": 2.0,
        "ci_low": round(1 / measured_high, 6),
        "ci_high": round(1 / measured_low, 6),
    }
    assert result["attempts_for_99"] == 7  # 0.5^7 <= 0.01
    # two evaluated outputs per input, one pass each: the same rate, p = 1
    assert result["heterogeneity_p"] == 1.0 and result["inputs_differ"] is False
    assert result["per_input"] == [
        {
            "input": "ex-1",
            "p_pass": rate(1, 2, confidence=0.95).to_json(),
            "expected_attempts": 2.0,
            "attempts_for_99": 7,
        },
        {
            "input": "ex-2",
            "p_pass": rate(1, 2, confidence=0.95).to_json(),
            "expected_attempts": 2.0,
            "attempts_for_99": 7,
        },
    ]

    profiles = result["profiles"]
    # ex-1 over its samples x validators, clustered by sample: [1, 1], [1, 0], [-, 1]
    assert profiles["input"][0] == {"input": "ex-1", **clustered_rate(TWO_BY_THREE[0], confidence=0.95).to_json()}
    assert profiles["input"][0]["successes"] == 4 and profiles["input"][0]["trials"] == 5
    assert profiles["input"][1]["successes"] == 2 and profiles["input"][1]["trials"] == 4
    assert profiles["output"] == [
        {"input": "ex-1", "sample": 0, "passed": 2, "evaluated": 2, "rate": 1.0, "passed_all": True},
        {"input": "ex-1", "sample": 1, "passed": 1, "evaluated": 2, "rate": 0.5, "passed_all": False},
        {"input": "ex-1", "sample": 2, "passed": 1, "evaluated": 1, "rate": 1.0, "passed_all": None},
        {"input": "ex-2", "sample": 0, "passed": 0, "evaluated": 2, "rate": 0.0, "passed_all": False},
        {"input": "ex-2", "sample": 1, "passed": 2, "evaluated": 2, "rate": 1.0, "passed_all": True},
    ]
    assert profiles["validator"] == [
        {"name": "a", **{key: a[key] for key in ("successes", "trials", "rate", "ci_low", "ci_high")}},
        {"name": "b", **{key: b[key] for key in ("successes", "trials", "rate", "ci_low", "ci_high")}},
    ]

    aggregate = result["aggregate"]
    # per-output scores: ex-1 [1, 0.5, 1], ex-2 [0, 1]: mean 3.5 / 5 = 0.7
    mean_scores = clustered_rate([[1.0, 0.5, 1.0], [0.0, 1.0, NaN]], confidence=0.95)
    assert aggregate["mean"] == {**mean_scores.interval_json(), "trials": 5}
    assert aggregate["mean"]["rate"] == 0.7
    # weighted by trials (a 4, b 5): ex-1 [1, 4/9, 1], ex-2 [0, 1]: (3 + 4/9) / 5 = 0.688889
    weighted_scores = clustered_rate([[1.0, 4 / 9, 1.0], [0.0, 1.0, NaN]], confidence=0.95)
    assert aggregate["weighted_mean"] == {**weighted_scores.interval_json(), "trials": 5}
    assert aggregate["weighted_mean"]["rate"] == 0.688889
    assert aggregate["min"] == {"name": "b", "rate": 0.6, "ci_low": b["ci_low"], "ci_high": b["ci_high"], "trials": 5}

    assert result["tensor"] == [[[1, 1], [1, 0], [None, 1]], [[0, 0], [1, 1], [None, None]]]


def test_analyse_custom_weights_and_method() -> None:
    result = analyse(
        TWO_BY_THREE, SPECS, ["ex-1", "ex-2"], weights=[1.0, 0.0], method="clopper-pearson", confidence=0.9
    )
    assert (result["method"], result["confidence"]) == ("clopper-pearson", 0.9)
    # weight only on a: scores ex-1 [1, 1, -], ex-2 [0, 1]
    assert result["aggregate"]["weighted_mean"] == {
        **clustered_rate([[1.0, 1.0, NaN], [0.0, 1.0, NaN]], method="clopper-pearson", confidence=0.9).interval_json(),
        "trials": 4,
    }
    a_low = binomial_interval(2.25, 3, method="clopper-pearson", confidence=0.9)[0]  # n_eff = 3 as above
    assert result["validators"][0]["ci_low"] == round(a_low, 6)


@pytest.mark.parametrize(
    "inputs, samples, shape", [(3, 1, "rows"), (1, 4, "columns"), (1, 1, "rows"), (2, 3, "all"), (3, 3, "all")]
)
def test_shape_names(inputs: int, samples: int, shape: str) -> None:
    tensor = np.ones((inputs, samples, 1))
    result = analyse(tensor, [ValidatorSpec("a")], [f"ex-{i}" for i in range(inputs)], confidence=0.95)
    assert result["shape"] == shape


def test_verdicts_and_a_validator_never_observed() -> None:
    # rows: 50 inputs, one sample; a always passes (Wilson low 50 / (50 + z^2) = 0.9287 >= 0.9), b always
    # fails, c never observed.
    tensor = np.zeros((50, 1, 3))
    tensor[:, :, 0] = 1.0
    tensor[:, :, 2] = NaN
    specs = [ValidatorSpec("a"), ValidatorSpec("b"), ValidatorSpec("c")]
    result = analyse(tensor, specs, [f"ex-{i}" for i in range(50)], confidence=0.95)
    a, b, c = result["validators"]
    assert a["verdict"] == "pass" and a["ci_low"] == pytest.approx(50 / (50 + 1.959964**2), abs=1e-6)
    assert b["verdict"] == "fail" and b["rate"] == 0.0 and b["ci_low"] == 0.0
    assert c == {
        "name": "c",
        "message": "",
        "successes": 0,
        "trials": 0,
        "rate": None,
        "ci_low": None,
        "ci_high": None,
        "minimum": 0.9,
        "verdict": "inconclusive",
        "errors": 0,
        "not_applicable": 0,
    }
    # every output failed b, so passed_all is False everywhere despite c being unobserved
    assert result["p_pass"]["measured"]["successes"] == 0 and result["p_pass"]["measured"]["trials"] == 50
    assert result["p_pass"]["predicted"] == {"rate": None, "ci_low": None, "ci_high": None}
    assert result["expected_attempts"]["value"] is None and result["expected_attempts"]["ci_high"] is None
    assert result["attempts_for_99"] is None
    assert result["aggregate"]["min"]["name"] == "b"
    # rows: one sample per input, no heterogeneity test
    assert result["heterogeneity_p"] is None and result["inputs_differ"] is False


def test_predicted_zero_when_a_validator_never_passes() -> None:
    tensor = np.zeros((10, 1, 2))
    tensor[:, :, 0] = 1.0
    result = analyse(tensor, [ValidatorSpec("a"), ValidatorSpec("b")], [str(i) for i in range(10)], confidence=0.95)
    a_high, b_high = binomial_interval(10, 10, confidence=0.95)[1], binomial_interval(0, 10, confidence=0.95)[1]
    assert result["p_pass"]["predicted"] == {"rate": 0.0, "ci_low": 0.0, "ci_high": round(a_high * b_high, 6)}
    assert result["p_pass"]["agree"] is True


def test_nothing_observed() -> None:
    tensor = np.full((2, 3, 2), NaN)
    result = analyse(tensor, SPECS, ["ex-1", "ex-2"], confidence=0.95)
    assert result["p_pass"]["measured"] == {"successes": 0, "trials": 0, "rate": None, "ci_low": None, "ci_high": None}
    assert result["p_pass"]["agree"] is True
    assert result["expected_attempts"] == {"value": None, "ci_low": None, "ci_high": None}
    assert result["profiles"]["output"] == []
    assert result["aggregate"]["mean"] == {"rate": None, "ci_low": None, "ci_high": None, "trials": 0}
    assert result["aggregate"]["min"] is None
    assert result["per_input"][0]["attempts_for_99"] is None
    assert [v["verdict"] for v in result["validators"]] == ["inconclusive", "inconclusive"]
    # no samples at all
    empty = analyse(np.zeros((2, 0, 2)), SPECS, ["ex-1", "ex-2"], confidence=0.95)
    assert empty["tensor"] == [[], []] and empty["p_pass"]["measured"]["trials"] == 0


def test_heterogeneity_detects_inputs_that_differ() -> None:
    tensor = np.zeros((2, 10, 1))
    tensor[0] = 1.0  # ex-1 always passes, ex-2 never
    result = analyse(tensor, [ValidatorSpec("a")], ["ex-1", "ex-2"], confidence=0.95)
    # chi-square with Yates' correction on [[10, 0], [0, 10]]: expected 5 each, (|10 - 5| - 0.5)^2 / 5 * 4 = 16.2
    assert result["heterogeneity_p"] == pytest.approx(stats.chi2.sf(16.2, 1), abs=1e-6)
    assert result["inputs_differ"] is True
    assert [row["p_pass"]["rate"] for row in result["per_input"]] == [1.0, 0.0]
    assert [row["attempts_for_99"] for row in result["per_input"]] == [1, None]
    # the same rate on both inputs does not differ
    tensor[1, :5] = 1.0
    tensor[0, :5] = 0.0
    same = analyse(tensor, [ValidatorSpec("a")], ["ex-1", "ex-2"], confidence=0.95)
    assert same["heterogeneity_p"] == 1.0 and same["inputs_differ"] is False


def test_correlated_validators_trigger_the_warning() -> None:
    # two validators that pass and fail together, each at 0.5, over 200 outputs: measured 0.5 [0.43, 0.57]
    # versus predicted 0.25 with log-scale half width 1.96 * sqrt(2 * 0.5 / (200 * 0.5)) = 0.196: [0.21, 0.30].
    tensor = np.zeros((200, 1, 2))
    tensor[:100] = 1.0
    result = analyse(tensor, [ValidatorSpec("a"), ValidatorSpec("b")], [str(i) for i in range(200)], confidence=0.95)
    p_pass = result["p_pass"]
    assert p_pass["measured"]["rate"] == 0.5
    assert p_pass["predicted"]["rate"] == 0.25
    assert p_pass["predicted"]["ci_low"] == pytest.approx(0.25 * math.exp(-1.959964 * 0.1), abs=1e-5)
    assert p_pass["predicted"]["ci_high"] == pytest.approx(0.25 * math.exp(1.959964 * 0.1), abs=1e-5)
    assert p_pass["agree"] is False
    warning = p_pass["warning"]
    assert "correlated" in warning and "0.500" in warning and "0.250" in warning and "measured" in warning
    assert "\n" not in warning
    # independent validators (a alternates, b in blocks) agree
    independent = np.zeros((200, 1, 2))
    independent[::2, :, 0] = 1.0
    independent[:100, :, 1] = 1.0
    assert analyse(
        independent, [ValidatorSpec("a"), ValidatorSpec("b")], [str(i) for i in range(200)], confidence=0.95
    )["p_pass"]["agree"]


def test_validator_rate_is_clustered_by_input() -> None:
    # columns (one input) and rows (one sample each) reduce to the plain binomial; "all" clusters by input
    column = np.array([[[1.0], [1.0], [0.0], [1.0]]])
    assert (
        analyse(column, [ValidatorSpec("a")], ["ex"], confidence=0.95)["validators"][0]["ci_low"]
        == rate(3, 4, confidence=0.95).to_json()["ci_low"]
    )
    clustered = np.repeat(np.array([[[1.0]]] * 3 + [[[0.0]]] * 3), 4, axis=1)
    result = analyse(clustered, [ValidatorSpec("a")], [str(i) for i in range(6)], confidence=0.95)
    assert result["validators"][0] == {
        "name": "a",
        "message": "",
        **clustered_rate(clustered[:, :, 0], confidence=0.95).to_json(),
        "minimum": 0.9,
        "verdict": "fail",
        "errors": 0,
        "not_applicable": 0,
    }
    assert result["validators"][0]["ci_low"] < rate(12, 24, confidence=0.95).to_json()["ci_low"]


# --- argument errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: binomial_interval(1, 0, confidence=0.95),
        lambda: binomial_interval(3, 2, confidence=0.95),
        lambda: binomial_interval(1, 2, confidence=1.0),
        lambda: binomial_interval(1, 2, method="normal", confidence=0.95),  # type: ignore[arg-type]
        lambda: rate(-1, 2, confidence=0.95),
        lambda: rate(1, -1, confidence=0.95),
        lambda: clustered_rate([1.0, 0.0], confidence=0.95),
        lambda: clustered_rate([[1.5, 0.0]], confidence=0.95),
        lambda: sequential_decision(3, 2, 0.5, confidence=0.95),
        lambda: sequential_decision(1, 2, 1.5, confidence=0.95),
        lambda: sequential_decision(1, 2, 0.5, confidence=0.0),
        lambda: attempts_for(1.2, 0.99),
        lambda: attempts_for(0.5, 1.0),
        lambda: expected_attempts(-0.1),
    ],
)
def test_function_argument_errors(call: Any) -> None:
    with pytest.raises(ValueError):
        call()


@pytest.mark.parametrize(
    "tensor, inputs, options, message",
    [
        (np.ones((2, 3)), ["a", "b"], {}, "3-D"),
        (np.ones((2, 3, 1)), ["a", "b"], {}, "validator"),
        (np.ones((3, 3, 2)), ["a", "b"], {}, "input"),
        (np.full((2, 3, 2), 0.5), ["a", "b"], {}, "only 1"),
        (np.full((2, 3, 2), 2.0), ["a", "b"], {}, "only 1"),
        (np.ones((2, 3, 2)), ["a", "b"], {"confidence": 1.5}, "confidence"),
        (np.ones((2, 3, 2)), ["a", "b"], {"target_confidence": 0.0}, "target confidence"),
        (np.ones((2, 3, 2)), ["a", "b"], {"method": "exact"}, "method"),
        (np.ones((2, 3, 2)), ["a", "b"], {"weights": [1.0]}, "weights"),
        (np.ones((2, 3, 2)), ["a", "b"], {"weights": [1.0, -1.0]}, "weights"),
        (np.ones((2, 3, 2)), ["a", "b"], {"errors": [0]}, "error counts"),
    ],
)
def test_analyse_argument_errors(tensor: Any, inputs: list[str], options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        analyse(tensor, SPECS, inputs, **{"confidence": 0.95, **options})


def test_a_check_that_does_not_apply_is_no_trial_and_no_failure_of_the_output() -> None:
    """Input 0 lacks what validator b reads: b's cells there are no trials (not errors either), and an output
    that passes every check that applies to it has passed them all."""
    tensor = np.array([[[1.0, np.nan], [1.0, np.nan]], [[1.0, 1.0], [0.0, 1.0]]])
    skipped = np.zeros(tensor.shape, dtype=np.bool_)
    skipped[0, :, 1] = True
    specs = [ValidatorSpec("a"), ValidatorSpec("b")]
    document = analyse(tensor, specs, ["x", "y"], not_applicable=skipped, confidence=0.95)
    a, b = document["validators"]
    assert (a["trials"], a["not_applicable"]) == (4, 0)
    assert (b["trials"], b["successes"], b["not_applicable"], b["errors"]) == (2, 2, 2, 0)
    assert document["p_pass"]["measured"]["trials"] == 4 and document["p_pass"]["measured"]["successes"] == 3
    without = analyse(
        tensor, specs, ["x", "y"], confidence=0.95
    )  # the same NaN read as unobserved: those outputs are unknown
    assert without["p_pass"]["measured"]["trials"] == 2
    with pytest.raises(ValueError, match="not_applicable has shape"):
        analyse(tensor, specs, ["x", "y"], not_applicable=skipped[:, :1, :], confidence=0.95)
