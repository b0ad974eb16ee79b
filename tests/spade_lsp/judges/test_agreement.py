"""Agreement with human labels: Cohen's kappa and its Fleiss-Cohen-Everitt standard error against values worked
out by hand, degenerate tables, and how undecided judgements count."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from spade_lsp.judges import agreement, cohen_kappa, positive_rate

Z = 1.959963984540054  # the normal quantile of 0.975


def test_kappa_of_a_2x2_table_by_hand() -> None:
    # rows: the judge (pass, fail); columns: the human (good, bad); n = 10.
    # p = [[.4, .1], [.1, .4]]: po = .8, row and column sums .5, pe = .5, kappa = (.8 - .5) / .5 = .6.
    # Fleiss-Cohen-Everitt (1969) variance:
    #   diagonal: .4 * (.5 - (.5 + .5) * .2)^2 * 2 = .4 * .09 * 2 = .072
    #   off-diagonal: (1 - po)^2 * sum p_ij (p_.i + p_j.)^2 = .04 * (.1 * 1 + .1 * 1) = .008
    #   (po pe - 2 pe + po)^2 = (.4 - 1 + .8)^2 = .04
    #   var = (.072 + .008 - .04) / (10 * .5^4) = .04 / .625 = .064
    kappa = cohen_kappa([[4, 1], [1, 4]], confidence=0.95)
    assert kappa.value == pytest.approx(0.6)
    assert kappa.se == pytest.approx(math.sqrt(0.064))
    assert kappa.ci_low == pytest.approx(0.6 - Z * math.sqrt(0.064))
    assert kappa.ci_high == 1.0  # .6 + 1.96 * .253 = 1.096, clipped to 1


def _fce_variance(table: list[list[int]]) -> Fraction:
    """The Fleiss-Cohen-Everitt large-sample variance, in exact fractions, written out term by term."""
    n = sum(sum(row) for row in table)
    k = len(table)
    p = [[Fraction(cell, n) for cell in row] for row in table]
    row = [sum(p[i]) for i in range(k)]
    col = [sum(p[i][j] for i in range(k)) for j in range(k)]
    po = sum(p[i][i] for i in range(k))
    pe = sum(row[i] * col[i] for i in range(k))
    first = sum(p[i][i] * ((1 - pe) - (row[i] + col[i]) * (1 - po)) ** 2 for i in range(k))
    second = (1 - po) ** 2 * sum(p[i][j] * (col[i] + row[j]) ** 2 for i in range(k) for j in range(k) if i != j)
    third = (po * pe - 2 * pe + po) ** 2
    return Fraction(first + second - third) / (n * (1 - pe) ** 4)


def test_kappa_of_the_3x3_example_of_fleiss() -> None:
    # Fleiss (1981), the example of Fleiss, Cohen & Everitt's standard error: proportions
    # [[.53, .05, .02], [.11, .14, .05], [.01, .06, .03]] of n = 200 (counts below). Row sums .60 .30 .10,
    # column sums .65 .25 .10; po = .70, pe = .39 + .075 + .01 = .475, kappa = .225 / .525 = 3/7.
    table = [[106, 10, 4], [22, 28, 10], [2, 12, 6]]
    kappa = cohen_kappa(table, confidence=0.95)
    assert kappa.value == pytest.approx(3 / 7)
    # By hand: diagonal .53(.525 - 1.25 * .3)^2 + .14(.525 - .55 * .3)^2 + .03(.525 - .2 * .3)^2
    #   = .53 * .0225 + .14 * .1296 + .03 * .216225 = .011925 + .018144 + .00648675 = .03655575;
    # off-diagonal p_ij (p_.i + p_j.)^2: .05 * .95^2 + .02 * .75^2 + .11 * .85^2 + .05 * .35^2 + .01 * .7^2
    #   + .06 * .4^2 = .045125 + .01125 + .079475 + .006125 + .0049 + .0096 = .156475, times (1 - po)^2 = .09
    #   gives .01408275; (po pe - 2 pe + po)^2 = (.3325 - .95 + .70)^2 = .0825^2 = .00680625;
    # variance (.03655575 + .01408275 - .00680625) / (200 * .525^4) = .04383225 / 15.19382813 = .00288488
    by_hand = 0.04383225 / (200 * 0.525**4)
    assert float(_fce_variance(table)) == pytest.approx(by_hand, rel=1e-12)
    assert kappa.se == pytest.approx(math.sqrt(by_hand), rel=1e-9)
    assert kappa.se == pytest.approx(0.05371, abs=5e-6)
    assert (kappa.ci_low, kappa.ci_high) == (
        pytest.approx(3 / 7 - Z * kappa.se),
        pytest.approx(3 / 7 + Z * kappa.se),
    )


def test_kappa_of_an_asymmetric_2x2_table_matches_the_formula_in_fractions() -> None:
    table = [[3, 1], [0, 3]]  # po = 6/7, pe = 24/49, kappa = 18/25; variance 24192/390625 (see test_grading)
    assert _fce_variance(table) == Fraction(24192, 390625)
    kappa = cohen_kappa(table, confidence=0.95)
    assert kappa.value == pytest.approx(18 / 25) and kappa.se == pytest.approx(math.sqrt(24192 / 390625))


def test_degenerate_tables_have_no_kappa() -> None:
    for table in ([[0, 0], [0, 0]], [[5, 0], [0, 0]], [[0, 0], [0, 7]]):
        kappa = cohen_kappa(table, confidence=0.95)
        assert (kappa.value, kappa.se, kappa.ci_low, kappa.ci_high) == (None, None, None, None)
        assert kappa.to_json() == {"value": None, "se": None, "ci_low": None, "ci_high": None}
    # raters constant but different: pe = 0, kappa = (0 - 0) / 1 = 0 (defined, no agreement beyond chance)
    assert cohen_kappa([[0, 4], [0, 0]], confidence=0.95).value == 0.0
    with pytest.raises(ValueError, match="square"):
        cohen_kappa([[1, 2, 3], [4, 5, 6]], confidence=0.95)
    with pytest.raises(ValueError, match="square"):
        cohen_kappa([], confidence=0.95)


def test_perfect_and_opposite_agreement() -> None:
    perfect = cohen_kappa([[3, 0], [0, 2]], confidence=0.95)
    assert perfect.value == pytest.approx(1.0) and perfect.se == pytest.approx(0.0, abs=1e-12)
    # po = 0, pe = 2 * .5 * .5 = .5: kappa = -1
    assert cohen_kappa([[0, 2], [2, 0]], confidence=0.95).value == pytest.approx(-1.0)


def test_undecided_judgements_count_against_alignment_but_not_kappa() -> None:
    judgements = [True, True, False, None, None, True, False, True]
    labels = [1, 0, 0, 1, 0, None, 1, 1]
    result = agreement(judgements, labels, confidence=0.95)
    assert (result.labelled, result.decided) == (7, 5)  # the unlabelled sixth item is left out
    assert result.confusion == {
        "pass": {"good": 2, "bad": 1},
        "fail": {"good": 1, "bad": 1},
        "undecided": {"good": 1, "bad": 1},
    }
    # aligned: pass-good 2 + fail-bad 1 = 3, of 7 labelled (undecided = disagreement) and of 5 decided
    assert (result.alignment.successes, result.alignment.trials) == (3, 7)
    assert (result.alignment_decided.successes, result.alignment_decided.trials) == (3, 5)
    p = 3 / 7
    centre = (p + Z * Z / 14) / (1 + Z * Z / 7)
    half = Z * math.sqrt(p * (1 - p) / 7 + Z * Z / 196) / (1 + Z * Z / 7)
    assert result.alignment.ci_low == pytest.approx(centre - half) and result.alignment.ci_high == pytest.approx(
        centre + half
    )
    # kappa over the decided 2x2 [[2, 1], [1, 1]]: po = 3/5, pe = 3/5 * 3/5 + 2/5 * 2/5 = 13/25,
    # kappa = (15/25 - 13/25) / (12/25) = 1/6
    assert result.kappa.value == pytest.approx(1 / 6)
    assert result.to_json()["kappa"]["value"] == round(1 / 6, 6)


def test_all_undecided_or_unlabelled() -> None:
    undecided = agreement([None, None], [1, 0], confidence=0.95)
    assert undecided.decided == 0 and undecided.alignment.successes == 0 and undecided.alignment.trials == 2
    assert undecided.alignment_decided.rate is None and undecided.kappa.value is None
    unlabelled = agreement([True, False], [None, None], confidence=0.95)
    assert unlabelled.labelled == 0 and unlabelled.alignment.rate is None
    with pytest.raises(ValueError, match="2 judgements for 1 labels"):
        agreement([True, False], [1], confidence=0.95)


def test_positive_rate_counts_undecided_in_the_denominator() -> None:
    result = positive_rate([True, None, False, True], confidence=0.95)
    assert (result.successes, result.trials, result.rate) == (2, 4, 0.5)
    assert positive_rate([], confidence=0.95).rate is None
