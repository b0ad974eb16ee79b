"""The statistics of reliability sampling: how far to trust a success rate measured on a handful of LLM outputs.

A prompt is sampled a few times on a few inputs, so every rate comes with an interval (Wilson or Clopper-Pearson),
samples of one input count as correlated (a cluster-robust design effect widens the interval), and early stopping
uses an anytime-valid test so that looking after every round does not inflate the error rate. ``analyse`` turns
the pass/fail tensor into the statistics part of the JSON document described in ``docs/reliability.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt
from scipy import special

from spade_lsp.reliability._names import METHODS, Method
from spade_lsp.reliability._validators import ValidatorSpec

Shape = Literal["rows", "columns", "all"]
Decision = Literal["above", "below"]
Verdict = Literal["pass", "fail", "inconclusive"]

DECIMALS: Final = 6
# log(1 - c) / log(1 - p) lands a hair above an exact integer in floating point (p = 0.9, c = 0.99 gives
# 2.0000000000000004); an attempt count within this much of an integer is taken to be that integer.
_ATTEMPTS_TOLERANCE: Final = 1e-9
# successes computed as rate * n_eff may exceed trials by rounding; more than this is a caller's error.
_COUNT_TOLERANCE: Final = 1e-9

FloatArray = npt.NDArray[np.float64]


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), DECIMALS)


@dataclass(frozen=True, slots=True)
class Rate:
    """A success rate with its interval; ``rate`` and the bounds are None when there were no trials.

    ``successes`` is a count for plain rates and may be fractional for clustered rates over scores.
    """

    successes: float
    trials: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None

    def to_json(self) -> dict[str, Any]:
        successes = float(self.successes)
        return {
            "successes": int(successes) if successes.is_integer() else round(successes, DECIMALS),
            "trials": int(self.trials),
            "rate": _rounded(self.rate),
            "ci_low": _rounded(self.ci_low),
            "ci_high": _rounded(self.ci_high),
        }

    def interval_json(self) -> dict[str, Any]:
        """``{"rate", "ci_low", "ci_high"}``, rounded."""
        return {"rate": _rounded(self.rate), "ci_low": _rounded(self.ci_low), "ci_high": _rounded(self.ci_high)}


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"unknown interval method {method!r}; expected one of {', '.join(METHODS)}")


def _check_confidence(confidence: float, what: str = "confidence") -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"{what} {confidence!r} is not a fraction strictly between 0 and 1")


def _z(confidence: float) -> float:
    """The two-sided normal quantile for ``confidence``."""
    return float(special.ndtri(0.5 + confidence / 2))  # the normal quantile (scipy.stats.norm.ppf)


def normal_quantile(confidence: float) -> float:
    """The two-sided normal quantile for ``confidence`` (1.96 for 0.95): what an interval's half-width is in
    standard errors."""
    return _z(confidence)


def binomial_interval(
    successes: float, trials: float, *, method: Method = "wilson", confidence: float
) -> tuple[float, float]:
    """The two-sided interval for a proportion of ``successes`` out of ``trials``.

    Both may be non-integer (an effective sample size). Matches ``scipy.stats.binomtest(k, n).proportion_ci``
    with ``method="wilson"`` or ``"exact"`` for integer counts.
    """
    _check_method(method)
    _check_confidence(confidence)
    if not trials > 0 or not math.isfinite(trials):
        raise ValueError(f"an interval needs a positive number of trials, got {trials!r}")
    if not -_COUNT_TOLERANCE * trials <= successes <= trials * (1 + _COUNT_TOLERANCE):
        raise ValueError(f"{successes!r} successes out of {trials!r} trials")
    successes = min(max(float(successes), 0.0), float(trials))
    if method == "wilson":
        z = _z(confidence)
        proportion = successes / trials
        denominator = 2 * (trials + z * z)
        centre = (2 * trials * proportion + z * z) / denominator
        half_width = z / denominator * math.sqrt(4 * trials * proportion * (1 - proportion) + z * z)
        low, high = centre - half_width, centre + half_width
    else:
        tail = (1 - confidence) / 2
        # beta quantiles through scipy.special, as scipy.stats.beta.ppf computes them: importing scipy.stats costs
        # about a second of every command's start
        low = float(special.betaincinv(successes, trials - successes + 1, tail)) if successes > 0 else 0.0
        high = float(special.betaincinv(successes + 1, trials - successes, 1 - tail)) if successes < trials else 1.0
    if successes == 0:
        low = 0.0
    if successes == trials:
        high = 1.0
    return min(max(low, 0.0), 1.0), min(max(high, 0.0), 1.0)


def rate(successes: int, trials: int, *, method: Method = "wilson", confidence: float) -> Rate:
    """``successes`` out of ``trials`` with its interval."""
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError(f"{successes!r} successes out of {trials!r} trials")
    _check_method(method)
    _check_confidence(confidence)
    if trials == 0:
        return Rate(successes, 0, None, None, None)
    low, high = binomial_interval(successes, trials, method=method, confidence=confidence)
    return Rate(successes, trials, successes / trials, low, high)


def _as_fractions(values: npt.ArrayLike, dimensions: int, what: str) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != dimensions:
        raise ValueError(f"{what} must be a {dimensions}-D array, got shape {array.shape}")
    observed = array[~np.isnan(array)]
    if observed.size and not ((observed >= 0.0) & (observed <= 1.0)).all():
        raise ValueError(f"{what} holds values outside [0, 1] (NaN marks a missing value)")
    return array


def design_effect(values: npt.ArrayLike) -> float:
    """How much clustering (rows of ``values``) inflates the variance of the mean over independent draws.

    The cluster-robust (sandwich) variance of the mean, with the small-sample factor G / (G - 1), divided by
    the simple binomial variance p (1 - p) / n; floored at 1. It is 1 when there is one cluster, at most one
    observed value per cluster, or the mean is 0 or 1.
    """
    array = _as_fractions(values, 2, "values")
    observed = ~np.isnan(array)
    count = int(observed.sum())
    per_cluster = observed.sum(axis=1)
    clusters = int((per_cluster > 0).sum())
    if count == 0 or clusters < 2 or int(per_cluster.max()) <= 1:
        return 1.0
    mean = float(array[observed].mean())
    if mean <= 0.0 or mean >= 1.0:
        return 1.0
    residual_sums = np.where(observed, array - mean, 0.0).sum(axis=1)
    robust_variance = float((residual_sums**2).sum()) / count**2 * clusters / (clusters - 1)
    simple_variance = mean * (1 - mean) / count
    return max(1.0, robust_variance / simple_variance)


def _clustered(values: FloatArray, method: Method, confidence: float) -> tuple[Rate, float]:
    """The clustered rate and its effective sample size (0 when nothing was observed)."""
    observed = ~np.isnan(values)
    count = int(observed.sum())
    total = float(values[observed].sum())
    if count == 0:
        return Rate(0, 0, None, None, None), 0.0
    mean = total / count
    effective = count / design_effect(values)
    low, high = binomial_interval(mean * effective, effective, method=method, confidence=confidence)
    return Rate(total, count, mean, low, high), effective


def clustered_rate(values: npt.ArrayLike, *, method: Method = "wilson", confidence: float) -> Rate:
    """The mean of a (clusters x items) array of values in [0, 1] (NaN missing), with an interval that
    accounts for items of one cluster being correlated: the binomial interval at the effective sample size
    n / deff (see :func:`design_effect`)."""
    _check_method(method)
    _check_confidence(confidence)
    return _clustered(_as_fractions(values, 2, "values"), method, confidence)[0]


#: The prior of the sequential test's mixtures: a Beta distribution with its mean at the minimum and the weight of
#: this many observations, cut at the minimum into one prior for each side (see :func:`sequential_evidence`).
SEQUENTIAL_PRIOR_WEIGHT: Final = 10.0


def _one_sided_log_mixture(successes: FloatArray, failures: FloatArray, minimum: float, *, above: bool) -> FloatArray:
    """log of the mixture likelihood ratio against p = ``minimum``, the prior being Beta(w m, w (1 - m)) (w the
    prior weight, m the minimum) restricted to (m, 1] (``above``) or [0, m) (below), at every element."""
    a, b = SEQUENTIAL_PRIOR_WEIGHT * minimum, SEQUENTIAL_PRIOR_WEIGHT * (1 - minimum)
    tail = special.betaincc if above else special.betainc  # the prior's mass on that side, regularised
    with np.errstate(divide="ignore"):  # a side holding none of the posterior's mass: log 0 = -inf, no evidence
        posterior = special.betaln(successes + a, failures + b) + np.log(tail(successes + a, failures + b, minimum))
    prior = float(special.betaln(a, b)) + math.log(float(tail(a, b, minimum)))
    boundary = successes * math.log(minimum) + failures * math.log1p(-minimum)
    return np.asarray(posterior - prior - boundary, dtype=np.float64)


def sequential_evidence(
    successes: npt.ArrayLike, trials: npt.ArrayLike, minimum: float, *, design_effect: npt.ArrayLike = 1.0
) -> tuple[FloatArray, FloatArray]:
    """The log e-values (log mixture likelihood ratios) that the rate is above and below ``minimum``, elementwise.

    Each is Robbins' (1970) mixture of the likelihood ratios q^S (1 - q)^F / (m^S (1 - m)^F) over alternatives q
    on one side of the minimum m, with a Beta prior of mean m and the weight of :data:`SEQUENTIAL_PRIOR_WEIGHT`
    observations cut at m (closed forms by the incomplete Beta function). For every q above m, one observation's
    factor has expectation p q / m + (1 - p)(1 - q)/(1 - m) <= 1 whenever the true rate p <= m, so the "above"
    mixture is a nonnegative supermartingale under the whole null p <= m (and the "below" one under p >= m), and
    by Ville's inequality it ever reaches 1 / a with probability at most a (Howard, Ramdas, McAuliffe and Sekhon
    2021, one-sided mixture boundaries). Counts are divided by ``design_effect`` (Kish's effective sample size,
    as :func:`clustered_rate` does) before mixing; with a design effect d >= 1 the deflated mixture is at most
    the undeflated one to the power 1 / d (Jensen), so the deflation never makes a decision more likely.
    """
    s = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    deff = np.asarray(design_effect, dtype=np.float64)
    if not 0.0 < minimum < 1.0:
        raise ValueError(f"minimum {minimum!r} is not a fraction strictly between 0 and 1")
    if (n < 0).any() or (s < 0).any() or (s > n).any():
        raise ValueError("successes must lie between 0 and trials")
    if not (np.isfinite(deff) & (deff >= 1.0)).all():
        raise ValueError("a design effect is at least 1")
    s_eff, f_eff = s / deff, (n - s) / deff
    return (
        _one_sided_log_mixture(s_eff, f_eff, minimum, above=True),
        _one_sided_log_mixture(s_eff, f_eff, minimum, above=False),
    )


def sequential_threshold(confidence: float) -> float:
    """The log e-value a side must reach: log(2 / (1 - confidence)), each side at half the error rate, so the
    chance of any wrong decision, even with the rate exactly at the minimum, is at most 1 - confidence."""
    _check_confidence(confidence)
    return math.log(2.0) - math.log1p(-confidence)


def sequential_decisions(
    successes: npt.ArrayLike,
    trials: npt.ArrayLike,
    minimum: float,
    *,
    confidence: float,
    design_effect: npt.ArrayLike = 1.0,
) -> npt.NDArray[np.int8]:
    """:func:`sequential_decision` elementwise, for a minimum strictly between 0 and 1: 1 above, -1 below, 0
    undecided (also with no trials)."""
    threshold = sequential_threshold(confidence)
    log_above, log_below = sequential_evidence(successes, trials, minimum, design_effect=design_effect)
    s = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    observed = np.divide(s, n, out=np.full(np.broadcast(s, n).shape, minimum), where=n > 0)
    above = (log_above >= threshold) & (observed > minimum)
    below = (log_below >= threshold) & (observed < minimum)
    return np.where(above & ~below, 1, np.where(below & ~above, -1, 0)).astype(np.int8)


def sequential_decision(
    successes: float,
    trials: float,
    minimum: float,
    *,
    confidence: float,
    design_effect: float = 1.0,
) -> Decision | None:
    """Whether the success rate is decidedly above or below ``minimum``, valid however often it is asked.

    Two one-sided mixture likelihood ratios against the boundary p = ``minimum`` (:func:`sequential_evidence`),
    each compared with 2 / (1 - confidence): "above" is wrong with probability at most (1 - confidence) / 2
    whenever the rate is at most the minimum, "below" likewise, however often the test is looked at and
    wherever it stops (Ville's inequality). A prior concentrated on the side of the minimum under test is what
    lets a check that passes every sample be decided: at the default minimum 0.9 and confidence 0.95, after 48
    straight passes (47 are not enough).

    Sampling pools a validator's samples over the inputs and looks after rounds that give every input the same
    number b of new samples. With inputs of own rates p_i, a round multiplies each mixture component by a factor
    of expectation prod_i f(p_i)^b <= f(mean of p_i)^(n b) <= 1 (f linear in p, the arithmetic-geometric mean
    inequality), so the test stays valid for the inputs' mean rate however their samples are alike; pass the
    design effect of the pooled samples (:func:`design_effect`) to deflate the evidence as the interval is
    widened, for inputs drawn from a larger population. None while undecided. A minimum of 0 is met by any data
    ("above" once there is a trial); a minimum of 1 is missed at the first failure and never decidedly met.
    """
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError(f"{successes!r} successes out of {trials!r} trials")
    if not 0.0 <= minimum <= 1.0:
        raise ValueError(f"minimum {minimum!r} is not a fraction in [0, 1]")
    _check_confidence(confidence)
    if not (math.isfinite(design_effect) and design_effect >= 1.0):
        raise ValueError(f"design effect {design_effect!r} is not at least 1")
    if trials == 0:
        return None
    if minimum == 0.0:
        return "above"
    if minimum == 1.0:
        return "below" if successes < trials else None
    code = int(sequential_decisions(successes, trials, minimum, confidence=confidence, design_effect=design_effect))
    return "above" if code == 1 else "below" if code == -1 else None


def _check_probability(p_pass: float | None) -> None:
    if p_pass is not None and not 0.0 <= p_pass <= 1.0:
        raise ValueError(f"P_pass {p_pass!r} is not a fraction in [0, 1]")


def expected_attempts(p_pass: float | None) -> float | None:
    """The mean number of attempts until one passes, 1 / P_pass; None when P_pass is unknown or 0."""
    _check_probability(p_pass)
    if p_pass is None or p_pass == 0.0:
        return None
    return 1.0 / p_pass


def attempts_for(p_pass: float | None, confidence: float) -> int | None:
    """The fewest attempts m with P(at least one passes) = 1 - (1 - P_pass)^m >= ``confidence``;
    None when P_pass is unknown or 0."""
    _check_probability(p_pass)
    _check_confidence(confidence)
    if p_pass is None or p_pass == 0.0:
        return None
    if p_pass == 1.0:
        return 1
    exact = math.log1p(-confidence) / math.log1p(-p_pass)
    return max(1, math.ceil(exact - _ATTEMPTS_TOLERANCE))


def shape_of(inputs: int, samples: int) -> Shape:
    """``rows`` (many inputs, one sample each; also 1 x 1), ``columns`` (one input, many samples), else ``all``."""
    if samples == 1 and inputs >= 1:
        return "rows"
    if inputs == 1 and samples > 1:
        return "columns"
    return "all"


def _verdict(measured: Rate, minimum: float) -> Verdict:
    # Compared as reported, so that a ci_low shown as 0.9 against a minimum of 0.9 reads as a pass.
    low, high = _rounded(measured.ci_low), _rounded(measured.ci_high)
    if low is None or high is None:
        return "inconclusive"
    if low >= minimum:
        return "pass"
    if high < minimum:
        return "fail"
    return "inconclusive"


def _passed_all(tensor: FloatArray) -> FloatArray:
    """Per output (inputs x samples): 1 when every validator was observed and passed, 0 when any observed
    validator failed, NaN otherwise (including outputs with nothing observed)."""
    observed = ~np.isnan(tensor)
    any_failed = (observed & (tensor == 0.0)).any(axis=2)
    all_passed = observed.all(axis=2) & observed.any(axis=2)
    return np.where(any_failed, 0.0, np.where(all_passed, 1.0, np.nan))


def _predicted(validator_rates: Sequence[tuple[Rate, float]], confidence: float) -> tuple[float, float, float] | None:
    """The product of the validator rates, right when validators fail independently, with a delta-method
    interval on the log scale, as (rate, low, high); None when there are no validators or one has no trials."""
    if not validator_rates or any(measured.rate is None for measured, _ in validator_rates):
        return None
    rates = [float(measured.rate) for measured, _ in validator_rates if measured.rate is not None]
    if min(rates) == 0.0:
        ceiling = math.prod(float(measured.ci_high or 0.0) for measured, _ in validator_rates)
        return 0.0, 0.0, ceiling
    log_product = sum(math.log(p) for p in rates)
    log_variance = sum((1 - p) / (effective * p) for p, (_, effective) in zip(rates, validator_rates, strict=True))
    half_width = _z(confidence) * math.sqrt(log_variance)
    low = min(max(math.exp(log_product - half_width), 0.0), 1.0)
    high = min(max(math.exp(log_product + half_width), 0.0), 1.0)
    return math.exp(log_product), low, high


def _disagreement(measured: Rate, predicted: tuple[float, float, float] | None) -> str | None:
    """The warning when the measured and predicted P_pass intervals do not overlap, else None."""
    if predicted is None or measured.rate is None or measured.ci_low is None or measured.ci_high is None:
        return None
    predicted_rate, predicted_low, predicted_high = predicted
    if measured.ci_low <= predicted_high and predicted_low <= measured.ci_high:
        return None
    return (
        f"the validators look correlated: measured P_pass {measured.rate:.3f} "
        f"[{measured.ci_low:.3f}, {measured.ci_high:.3f}] disagrees with the {predicted_rate:.3f} "
        f"[{predicted_low:.3f}, {predicted_high:.3f}] predicted from the product of their rates; "
        "trust the measured P_pass"
    )


def _heterogeneity_p(passes: npt.NDArray[np.int64], evaluated: npt.NDArray[np.int64]) -> float | None:
    """The chi-square test of homogeneity of P_pass across inputs, or None with too little data (fewer than two
    inputs with evaluated outputs, or fewer than two evaluated outputs per such input on average)."""
    with_data = evaluated > 0
    if int(with_data.sum()) < 2 or float(evaluated[with_data].mean()) < 2:
        return None
    table = np.column_stack([passes[with_data], evaluated[with_data] - passes[with_data]])
    if (table.sum(axis=0) == 0).any():
        return 1.0  # every output passed, or every output failed: nothing tells the inputs apart
    from scipy import stats  # only a comparison needs it (see the beta quantiles above)

    return float(stats.chi2_contingency(table).pvalue)


def _attempts_json(measured: Rate) -> dict[str, Any]:
    """Expected attempts with its interval, from the P_pass interval turned upside down."""
    return {
        "value": _rounded(expected_attempts(measured.rate)),
        "ci_low": _rounded(expected_attempts(measured.ci_high)),
        "ci_high": _rounded(expected_attempts(measured.ci_low)),
    }


def _weighted_scores(tensor: FloatArray, weights: FloatArray) -> FloatArray:
    """Per output, the weighted mean of its observed validator cells; NaN when their weights sum to 0."""
    observed = ~np.isnan(tensor)
    weight_sums = np.where(observed, weights, 0.0).sum(axis=2)
    weighted_sums = np.where(observed, tensor * weights, 0.0).sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(weight_sums > 0, weighted_sums / np.where(weight_sums > 0, weight_sums, 1.0), np.nan)


def _aggregate_json(measured: Rate) -> dict[str, Any]:
    return {**measured.interval_json(), "trials": int(measured.trials)}


def _check_tensor(tensor: npt.ArrayLike, validators: int, inputs: int) -> FloatArray:
    array = np.asarray(tensor, dtype=np.float64)
    if array.ndim != 3:
        raise ValueError(f"the tensor must be 3-D (inputs x samples x validators), got shape {array.shape}")
    if array.shape[2] != validators:
        raise ValueError(f"the tensor has {array.shape[2]} validator columns for {validators} validators")
    if array.shape[0] != inputs:
        raise ValueError(f"the tensor has {array.shape[0]} input rows for {inputs} inputs")
    known = array[~np.isnan(array)]
    if known.size and not ((known == 0.0) | (known == 1.0)).all():
        raise ValueError("the tensor may hold only 1 (pass), 0 (fail) and NaN (not observed)")
    return array


def _check_weights(weights: Sequence[float] | None, default: Sequence[int]) -> FloatArray:
    if weights is None:
        return np.asarray(default, dtype=np.float64)
    array = np.asarray(weights, dtype=np.float64)
    if array.shape != (len(default),):
        raise ValueError(f"{array.size} weights for {len(default)} validators")
    if not (np.isfinite(array) & (array >= 0)).all():
        raise ValueError("weights must be finite and non-negative")
    return array


def _check_errors(errors: Sequence[int] | None, validators: int) -> list[int]:
    if errors is None:
        return [0] * validators
    if len(errors) != validators:
        raise ValueError(f"{len(errors)} error counts for {validators} validators")
    if any(int(count) != count or count < 0 for count in errors):
        raise ValueError("error counts must be non-negative integers")
    return [int(count) for count in errors]


def analyse(
    tensor: npt.ArrayLike,
    validators: Sequence[ValidatorSpec],
    inputs: Sequence[str],
    *,
    method: Method = "wilson",
    confidence: float,
    target_confidence: float = 0.99,
    weights: Sequence[float] | None = None,
    errors: Sequence[int] | None = None,
    not_applicable: npt.ArrayLike | None = None,
) -> dict[str, Any]:
    """The statistics part of the reliability JSON document (``docs/reliability.md``) for ``tensor``
    (inputs x samples x validators: 1 pass, 0 fail, NaN not observed). ``not_applicable`` marks the NaN cells
    whose check does not apply to the input (it reads an input the example lacks): left out of that validator's
    rate like any NaN, but an output that passes every check that applies to it has passed them all."""
    _check_method(method)
    _check_confidence(confidence)
    _check_confidence(target_confidence, "target confidence")
    results = _check_tensor(tensor, len(validators), len(inputs))
    error_counts = _check_errors(errors, len(validators))
    skipped = np.zeros(results.shape, dtype=np.bool_) if not_applicable is None else np.asarray(not_applicable)
    if skipped.shape != results.shape:
        raise ValueError(f"not_applicable has shape {skipped.shape}, the tensor {results.shape}")
    input_count, sample_count, _ = results.shape
    observed = ~np.isnan(results)

    validator_rates = [_clustered(results[:, :, column], method, confidence) for column in range(len(validators))]
    validator_json = [
        {
            "name": spec.name,
            "message": spec.message,
            **measured.to_json(),
            "minimum": spec.minimum,
            "verdict": _verdict(measured, spec.minimum),
            "errors": error_count,
            "not_applicable": int(skipped[:, :, column].sum()),
        }
        for column, (spec, (measured, _), error_count) in enumerate(
            zip(validators, validator_rates, error_counts, strict=True)
        )
    ]

    passed_all = _passed_all(np.where(skipped & np.isnan(results), 1.0, results))
    measured, _ = _clustered(passed_all, method, confidence)
    predicted = _predicted(validator_rates, confidence)
    warning = _disagreement(measured, predicted)
    p_pass = {
        "measured": measured.to_json(),
        "predicted": dict(
            zip(("rate", "ci_low", "ci_high"), map(_rounded, predicted or (None, None, None)), strict=True)
        ),
        "agree": warning is None,
        "warning": warning,
    }

    evaluated = (~np.isnan(passed_all)).sum(axis=1).astype(np.int64)
    passes = np.nan_to_num(passed_all, nan=0.0).sum(axis=1).astype(np.int64)
    heterogeneity_p = _heterogeneity_p(passes, evaluated)
    per_input = []
    for name, input_passes, input_evaluated in zip(inputs, passes.tolist(), evaluated.tolist(), strict=True):
        input_rate = rate(input_passes, input_evaluated, method=method, confidence=confidence)
        per_input.append(
            {
                "input": name,
                "p_pass": input_rate.to_json(),
                "expected_attempts": _rounded(expected_attempts(input_rate.rate)),
                "attempts_for_99": attempts_for(input_rate.rate, target_confidence),
            }
        )

    input_profile = [
        {"input": name, **_clustered(results[row], method, confidence)[0].to_json()} for row, name in enumerate(inputs)
    ]
    output_profile = []
    for row, name in enumerate(inputs):
        for sample in range(sample_count):
            evaluated_cells = int(observed[row, sample].sum())
            if evaluated_cells == 0:
                continue
            passed_cells = int((results[row, sample] == 1.0).sum())
            verdict = passed_all[row, sample]
            output_profile.append(
                {
                    "input": name,
                    "sample": sample,
                    "passed": passed_cells,
                    "evaluated": evaluated_cells,
                    "rate": _rounded(passed_cells / evaluated_cells),
                    "passed_all": None if np.isnan(verdict) else bool(verdict == 1.0),
                }
            )
    validator_profile = [
        {"name": spec.name, **measured.to_json()}
        for spec, (measured, _) in zip(validators, validator_rates, strict=True)
    ]

    validator_trials = [measured.trials for measured, _ in validator_rates]
    weight_array = _check_weights(weights, validator_trials)
    mean_scores = _weighted_scores(results, np.ones(len(validators)))
    weighted_scores = _weighted_scores(results, weight_array)
    rated = [(measured.rate, index) for index, (measured, _) in enumerate(validator_rates) if measured.rate is not None]
    weakest: dict[str, Any] | None = None
    if rated:
        _, index = min(rated)  # the lowest rate; on a tie, the first validator
        weakest = {"name": validators[index].name, **_aggregate_json(validator_rates[index][0])}
    aggregate = {
        "mean": _aggregate_json(_clustered(mean_scores, method, confidence)[0]),
        "weighted_mean": _aggregate_json(_clustered(weighted_scores, method, confidence)[0]),
        "min": weakest,
    }

    return {
        "shape": shape_of(input_count, sample_count),
        "method": method,
        "confidence": float(confidence),
        "validators": validator_json,
        "p_pass": p_pass,
        "expected_attempts": _attempts_json(measured),
        "attempts_for_99": attempts_for(measured.rate, target_confidence),
        "inputs_differ": heterogeneity_p is not None and heterogeneity_p < 1 - confidence,
        "heterogeneity_p": _rounded(heterogeneity_p),
        "per_input": per_input,
        "profiles": {"input": input_profile, "output": output_profile, "validator": validator_profile},
        "aggregate": aggregate,
        "tensor": [
            [[None if math.isnan(cell) else int(cell) for cell in output] for output in row] for row in results.tolist()
        ],
    }
