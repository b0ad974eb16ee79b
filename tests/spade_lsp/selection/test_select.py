"""The selection methods on small hand-made problems, bad input, infeasibility and the solver backends."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spade_lsp.errors import InputError
from spade_lsp.selection import AssertionSpec, SelectionInput, Subsumption, load_matrix_file, select


def _problem(
    passes: list[list[int]],
    y: list[int],
    pairs: list[tuple[int, int]] = (),  # type: ignore[assignment]
    costs: list[float] | None = None,
) -> SelectionInput:
    n = len(passes[0])
    names = [f"a{j}" for j in range(n)]
    return SelectionInput(
        tuple(AssertionSpec(names[j], (costs or [0.0] * n)[j]) for j in range(n)),
        np.array(passes, dtype=np.int8) == 0,
        np.array(y, dtype=np.int8),
        tuple(Subsumption(names[a], names[b]) for a, b in pairs),
    )


# rows: 4 bad then 4 good. a0 catches bad 0-1, a1 bad 2-3, a2 all bad (but 3 of 4 good: FFR .75),
# a3 bad 0-2 with one good; a4 catches nothing and flags nothing.
PASSES = [
    [0, 1, 0, 0, 1],
    [0, 1, 0, 0, 1],
    [1, 0, 0, 0, 1],
    [1, 0, 0, 1, 1],
    [1, 1, 0, 0, 1],
    [1, 1, 0, 1, 1],
    [1, 1, 0, 1, 1],
    [1, 1, 1, 1, 1],
]
Y = [0, 0, 0, 0, 1, 1, 1, 1]


def test_base_is_every_assertion_within_tau_on_its_own() -> None:
    result = select(_problem(PASSES, Y), "base", folds=0, tau=0.25, alpha=0.6, confidence=0.95)
    assert result.selected == ("a0", "a1", "a3", "a4")
    assert result.status == "optimal"


def test_cov_is_the_fewest_meeting_both_constraints_with_higher_coverage_preferred() -> None:
    result = select(_problem(PASSES, Y), "cov", alpha=0.75, folds=0, tau=0.25, confidence=0.95)
    # one assertion reaches 0.75 only as a3 (FFR .25); two reach coverage 1: the fewest wins
    assert result.selected == ("a3",)
    assert (result.coverage, result.ffr) == (0.75, 0.25)
    result = select(_problem(PASSES, Y), "cov", alpha=1.0, folds=0, tau=0.25, confidence=0.95)
    assert result.selected == ("a0", "a1")
    assert (result.coverage, result.ffr) == (1.0, 0.0)


def test_sub_adds_every_addable_unsubsumed_assertion() -> None:
    problem = _problem(PASSES, Y)
    cov = select(problem, "cov", alpha=0.75, folds=0, tau=0.25, confidence=0.95)
    assert set(cov.excluded_not_subsumed) == {"a0", "a1", "a4"}
    sub = select(problem, "sub", alpha=0.75, folds=0, tau=0.25, confidence=0.95)
    assert sub.excluded_not_subsumed == ()
    assert sub.selected == ("a0", "a1", "a4") or len(sub.selected) <= 4
    # with a0 subsuming a4 (a4 never fails, so the examples allow it), a4 need not be selected
    sub = select(_problem(PASSES, Y, pairs=[(0, 4)]), "sub", alpha=0.75, folds=0, tau=0.25, confidence=0.95)
    assert "a4" not in sub.selected
    assert sub.excluded_not_subsumed == ()


def test_sub_leaves_out_assertions_that_would_push_ffr_over_tau() -> None:
    # a0 and a1 each flag a different good example; tau allows one of the two
    passes = [[0, 0], [0, 0], [0, 1], [1, 0], [1, 1], [1, 1]]
    result = select(_problem(passes, [0, 0, 1, 1, 1, 1]), "sub", tau=0.25, alpha=0.5, folds=0, confidence=0.95)
    assert len(result.selected) == 1
    assert result.excluded_not_subsumed == ()


def test_cost_prefers_cheap_assertions() -> None:
    passes = [[0, 0], [0, 0], [1, 1], [1, 1]]
    result = select(
        _problem(passes, [0, 0, 1, 1], pairs=[(0, 1), (1, 0)], costs=[30.0, 0.0]),
        "cost",
        folds=0,
        tau=0.25,
        alpha=0.6,
        confidence=0.95,
    )
    assert result.selected == ("a1",)
    assert result.cost == 0.0
    count = select(
        _problem(passes, [0, 0, 1, 1], pairs=[(0, 1), (1, 0)], costs=[30.0, 0.0]),
        "sub",
        folds=0,
        tau=0.25,
        alpha=0.6,
        confidence=0.95,
    )
    assert len(count.selected) == 1


def test_none_takes_the_roots_and_collapses_cycles() -> None:
    passes = [[0, 0, 0, 1], [1, 1, 0, 1]]
    # a0 <-> a1 equivalent (a cycle), both subsume a2? no: a2 fails more; a2 subsumes a0 and a1
    problem = _problem(passes, [-1, -1], pairs=[(0, 1), (1, 0), (2, 0)], costs=[1, 0, 0, 0])
    result = select(problem, "none", folds=0, tau=0.25, alpha=0.6, confidence=0.95)
    assert result.selected == ("a2", "a3")
    assert result.coverage is None and result.ffr is None
    assert result.excluded_not_subsumed == ()


def test_infeasible_says_which_constraint_and_what_is_reachable() -> None:
    # a0 catches bad 0 and flags nothing; a1 catches bad 1 but flags good 0
    problem = _problem([[0, 1], [1, 0], [1, 0], [1, 1]], [0, 0, 1, 1])
    for method in ("cov", "sub", "cost"):
        result = select(problem, method, tau=0.0, alpha=1.0, folds=0, confidence=0.95)  # type: ignore[arg-type]
        assert result.status == "infeasible"
        assert result.selected == ()
        assert result.reason == (
            "coverage >= 1 and FFR <= 0 cannot both be met: with FFR <= 0 the best coverage is 0.500 "
            "(FFR 0.000, 1 assertion); coverage >= 1 needs FFR >= 0.500"
        )
        assert result.best is not None and result.best["selected"] == ["a0"]
    unreachable = _problem([[1, 1], [0, 1], [1, 1]], [0, 0, 1])
    result = select(unreachable, "cov", alpha=0.9, folds=0, tau=0.25, confidence=0.95)
    assert result.reason is not None and "flag only 0.500 of the bad examples" in result.reason


def test_no_bad_or_no_good_examples_are_clear_errors() -> None:
    only_good = _problem([[1, 0], [1, 1]], [1, 1])
    with pytest.raises(InputError, match="no bad examples: coverage is undefined"):
        select(only_good, "sub", folds=0, tau=0.25, alpha=0.6, confidence=0.95)
    base = select(only_good, "base", folds=0, tau=0.25, alpha=0.6, confidence=0.95)
    assert base.coverage is None and "coverage is undefined" in " ".join(base.notes)
    only_bad = _problem([[1, 0], [0, 1]], [0, 0])
    with pytest.raises(InputError, match="no good examples"):
        select(only_bad, "cov", folds=0, tau=0.25, alpha=0.6, confidence=0.95)


def test_bad_parameters_are_clear_errors() -> None:
    with pytest.raises(InputError, match="tau must be between 0 and 1"):
        select(_problem(PASSES, Y), "sub", tau=1.5, alpha=0.6, confidence=0.95)
    with pytest.raises(InputError, match="unknown method"):
        select(_problem(PASSES, Y), "best", tau=0.25, alpha=0.6, confidence=0.95)  # type: ignore[arg-type]


def test_intervals_and_cross_validation_are_reported() -> None:
    result = select(_problem(PASSES * 3, Y * 3), "cov", alpha=1.0, folds=3, tau=0.25, confidence=0.95)
    assert result.coverage_interval is not None and result.coverage_interval[0] < 1.0
    assert result.cv is not None and result.cv.folds == 3
    document = result.to_json()
    for key in ("selected", "coverage", "ffr", "excluded_not_subsumed", "status", "solve_seconds"):
        assert key in document


@pytest.mark.parametrize("solver", ["pulp-highs", "cbc"])
@pytest.mark.parametrize("pipeline", ["emails", "sportroutine"])
def test_backends_agree_on_the_paper_data(shared_bench: Path, pipeline: str, solver: str) -> None:
    problem = load_matrix_file(shared_bench / "spade" / pipeline / "matrix.json")
    for method in ("cov", "sub"):
        ours = select(problem, method, folds=0, tau=0.25, alpha=0.6, confidence=0.95)
        other = select(problem, method, folds=0, solver=solver, tau=0.25, alpha=0.6, confidence=0.95)  # type: ignore[arg-type]
        assert (len(ours.selected), ours.coverage, ours.ffr) == (len(other.selected), other.coverage, other.ffr)
        assert other.solver == solver


def test_merged_duplicate_columns_still_need_their_own_subsumer() -> None:
    # a0 and a1 are identical columns; with no pair between them both must be selected under sub
    passes = [[0, 0], [1, 1], [1, 1]]
    assert len(select(_problem(passes, [0, 1, 1]), "sub", alpha=0.5, folds=0, tau=0.25, confidence=0.95).selected) == 2
    assert len(select(_problem(passes, [0, 1, 1]), "cov", alpha=0.5, folds=0, tau=0.25, confidence=0.95).selected) == 1
    assert (
        len(
            select(
                _problem(passes, [0, 1, 1], pairs=[(1, 0)]), "sub", alpha=0.5, folds=0, tau=0.25, confidence=0.95
            ).selected
        )
        == 1
    )
