"""Benchmark: assertion selection against the SPADE paper (issue 4, section 6).

- On each ../shared/bench/spade/*/matrix.json at tau 0.25, alpha 0.6: ``sub`` meets both constraints and
  leaves no addable assertion unsubsumed (all recomputed here from M, y and K, independently of the engine),
  and selects no more assertions than the paper's ``spade_sub``; over the five pipelines, >= 10% fewer.
- Speed: >= 10x faster, in the same run, than the paper's formulation (a binary variable per example and
  assertion, solved with CBC) on the same five problems.
- 1,000 assertions x 10,000 examples (synthetic; see :func:`synthetic`) solved to optimality or a proven
  gap <= 1% in under 10 s.
- Re-selection after one label changes, at SPADE's size, in under 100 ms (median).
Run with ``make bench`` or ``pytest -q -s tests/benchmarks/test_selection_bench.py``.
"""

from __future__ import annotations

import json
import math
import statistics
import time
import warnings
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest

from spade_lsp.errors import SelectionError
from spade_lsp.selection import AssertionSpec, SelectionInput, Subsumption, load_matrix_file, select
from tests.support.floors import at_least, at_most, below

pytestmark = pytest.mark.benchmark

TAU, ALPHA = 0.25, 0.6
PIPELINES = ("codereviews", "emails", "finance", "lecturesummaries", "sportroutine")
TOTAL_REDUCTION_FLOOR = 0.10
SPEEDUP_FLOOR = 10.0
LARGE_FLOOR_S = 10.0
LARGE_GAP = 0.01
RESELECT_FLOOR_S = 0.100


def _load(bench: Path, name: str) -> dict[str, Any]:
    return dict(json.loads((bench / "spade" / name / "matrix.json").read_text(encoding="utf-8")))


def _rates(doc: dict[str, Any], names: list[str]) -> tuple[float, float]:
    """Coverage and FFR of a set of assertion names, recomputed from M and y in plain Python."""
    index = {a["name"]: j for j, a in enumerate(doc["assertions"])}
    chosen = [index[n] for n in names]
    flagged = [any(row[j] == 0 for j in chosen) for row in doc["M"]]
    bad = [f for f, label in zip(flagged, doc["y"], strict=True) if label == 0]
    good = [f for f, label in zip(flagged, doc["y"], strict=True) if label == 1]
    return sum(bad) / len(bad), sum(good) / len(good)


def _closure(n: int, pairs: list[list[int]]) -> list[list[bool]]:
    reach = [[False] * n for _ in range(n)]
    for a, b in pairs:
        reach[a][b] = True
    for k in range(n):  # Floyd-Warshall: independent of the engine's SCC/bitset closure
        for i in range(n):
            if reach[i][k]:
                row_k = reach[k]
                row_i = reach[i]
                for j in range(n):
                    if row_k[j]:
                        row_i[j] = True
    return reach


def _addable_unsubsumed(doc: dict[str, Any], names: list[str]) -> list[str]:
    """Excluded assertions whose addition keeps FFR <= tau and that no selected assertion subsumes (per K)."""
    assertions = [a["name"] for a in doc["assertions"]]
    reach = _closure(len(assertions), doc["K"])
    chosen = {assertions.index(n) for n in names}
    out = []
    for j, name in enumerate(assertions):
        if j in chosen:
            continue
        _, ffr = _rates(doc, [*names, name])
        if ffr <= TAU + 1e-12 and not any(reach[i][j] for i in chosen):
            out.append(name)
    return out


def test_sub_beats_the_paper_on_every_pipeline(shared_bench: Path) -> None:
    ours_total = paper_total = 0
    print(f"\n{'pipeline':18} {'paper':>5} {'ours':>5} {'coverage':>9} {'FFR':>6} {'paper cov/FFR':>14}  seconds")
    for name in PIPELINES:
        doc = _load(shared_bench, name)
        result = select(
            load_matrix_file(shared_bench / "spade" / name / "matrix.json"),
            "sub",
            tau=TAU,
            alpha=ALPHA,
            confidence=0.95,
        )
        paper = doc["paper"]["spade_sub"]
        coverage, ffr = _rates(doc, list(result.selected))
        paper_cov, paper_ffr = _rates(doc, paper["selected"])
        assert math.isclose(paper_cov, paper["coverage"]) and math.isclose(paper_ffr, paper["ffr"])
        assert result.status == "optimal"
        assert coverage >= ALPHA and ffr <= TAU
        assert math.isclose(coverage, result.coverage or 0) and math.isclose(ffr, result.ffr or 0)
        assert _addable_unsubsumed(doc, list(result.selected)) == []
        assert list(result.excluded_not_subsumed) == []
        assert len(result.selected) <= len(paper["selected"]), name
        ours_total += len(result.selected)
        paper_total += len(paper["selected"])
        print(
            f"{name:18} {len(paper['selected']):5} {len(result.selected):5} {coverage:9.3f} {ffr:6.3f} "
            f"{paper_cov:7.3f}/{paper_ffr:.3f}  {result.solve_seconds:.4f}"
        )
    reduction = 1 - ours_total / paper_total
    print(
        f"{'total':18} {paper_total:5} {ours_total:5}   reduction {reduction:.1%} (floor {TOTAL_REDUCTION_FLOOR:.0%})"
    )
    # the selections do not depend on the machine's speed: a smaller reduction is a regression, and fails
    at_least("sub_reduction_vs_paper", reduction, TOTAL_REDUCTION_FLOOR, "", strict=True)


def _paper_formulation(problem: SelectionInput) -> int:
    """SPADE's formulation of ``sub``: a binary per (example, assertion) cell, one per example, solved by CBC."""
    import pulp

    fails = problem.fails
    labels = problem.labels
    m, n = fails.shape
    good = [i for i in range(m) if labels[i] == 1]
    bad = [i for i in range(m) if labels[i] == 0]
    ceiling = math.floor(TAU * len(good) + 1e-9)
    closure = _closure(n, [[problem.index[p.subsumer], problem.index[p.subsumed]] for p in problem.subsumptions])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        lp = pulp.LpProblem("spade", pulp.LpMinimize)
        x = [pulp.LpVariable(f"x{j}", cat="Binary") for j in range(n)]
        v = [[pulp.LpVariable(f"v{i}_{j}", cat="Binary") for j in range(n)] for i in range(m)]
        f = [pulp.LpVariable(f"f{i}", cat="Binary") for i in range(m)]
        b = [pulp.LpVariable(f"b{j}", cat="Binary") for j in range(n)]
        lp += pulp.lpSum(x)
        for i in range(m):
            for j in range(n):
                lp += v[i][j] <= x[j]  # v = x_j AND (j fails i)
                lp += v[i][j] <= int(fails[i, j])
                lp += v[i][j] >= x[j] + int(fails[i, j]) - 1
                lp += f[i] >= v[i][j]
            lp += f[i] <= pulp.lpSum(v[i])
        lp += pulp.lpSum(f[i] for i in bad) >= math.ceil(ALPHA * len(bad) - 1e-9)
        flagged_good = pulp.lpSum(f[i] for i in good)
        lp += flagged_good <= ceiling
        for j in range(n):
            new = pulp.lpSum(1 - f[i] for i in good if fails[i, j])
            lp += flagged_good + new >= (ceiling + 1) * b[j]
            lp += x[j] + pulp.lpSum(x[i] for i in range(n) if closure[i][j]) + b[j] >= 1
        lp.solve(pulp.PULP_CBC_CMD(msg=False, timeLimit=300))
        assert lp.status == pulp.LpStatusOptimal and lp.sol_status == pulp.LpSolutionOptimal
    return sum(1 for var in x if (var.varValue or 0) > 0.5)


def test_compact_highs_is_ten_times_faster_than_the_papers_cbc_formulation(shared_bench: Path) -> None:
    ours_s = paper_s = 0.0
    print(f"\n{'pipeline':18} {'compact+HiGHS s':>15} {'per-cell+CBC s':>15} {'ratio':>6}")
    for name in PIPELINES:
        problem = load_matrix_file(shared_bench / "spade" / name / "matrix.json")
        start = time.perf_counter()
        result = select(problem, "sub", tau=TAU, alpha=ALPHA, folds=0, confidence=0.95)
        ours = time.perf_counter() - start
        start = time.perf_counter()
        count = _paper_formulation(problem)
        paper = time.perf_counter() - start
        assert count == len(result.selected), name  # same problem, same optimum
        ours_s += ours
        paper_s += paper
        print(f"{name:18} {ours:15.4f} {paper:15.3f} {paper / ours:6.0f}x")
    print(f"{'total':18} {ours_s:15.4f} {paper_s:15.3f} {paper_s / ours_s:6.0f}x (floor {SPEEDUP_FLOOR:.0f}x)")
    at_least("speedup_over_paper_cbc", paper_s / ours_s, SPEEDUP_FLOOR, "x")


def synthetic(shared_bench: Path, *, n: int = 1000, m: int = 10_000, seed: int = 0) -> SelectionInput:
    """n assertions x m examples with SPADE's own failure rates.

    Each assertion's (coverage, FFR) pair is drawn from the 211 assertions of the five pipelines, so rates and
    sparsity (about 44% failing cells) match the paper's data rather than a guess; failures are correlated
    across assertions through a per-example severity factor (Gaussian copula, rho 0.5), as real bad outputs
    fail many checks at once. 40% bad examples. K: 1,000 random pairs, kept when the examples allow them.
    """
    pooled: list[tuple[float, float]] = []
    for name in PIPELINES:
        doc = _load(shared_bench, name)
        fails = np.array(doc["M"]) == 0
        y = np.array(doc["y"])
        pooled += list(zip(fails[y == 0].mean(axis=0).tolist(), fails[y == 1].mean(axis=0).tolist(), strict=True))
    rng = np.random.default_rng(seed)
    rates = np.array(pooled)[rng.integers(0, len(pooled), n)]
    labels = (rng.random(m) >= 0.4).astype(np.int8)
    latent = np.sqrt(0.5) * rng.standard_normal((m, 1)) + np.sqrt(0.5) * rng.standard_normal((m, n))
    inverse = np.vectorize(lambda q: NormalDist().inv_cdf(min(max(q, 1e-12), 1 - 1e-12)))
    threshold = np.where(labels[:, None] == 0, -inverse(rates[:, 0])[None, :], -inverse(rates[:, 1])[None, :])
    fails = latent > threshold
    names = [f"assert_{j}" for j in range(n)]
    pairs = []
    for a, b in rng.integers(0, n, (n, 2)).tolist():
        if a != b and not (fails[:, b] & ~fails[:, a]).any():
            pairs.append(Subsumption(names[a], names[b]))
    specs = tuple(AssertionSpec(name, float(rng.choice([0.0, 20.0]))) for name in names)
    return SelectionInput(specs, fails, labels, tuple(pairs))


@pytest.mark.parametrize("method", ["cov", "sub"])
def test_thousand_by_ten_thousand_in_under_ten_seconds(shared_bench: Path, method: str) -> None:
    problem = synthetic(shared_bench)
    start = time.perf_counter()
    try:
        result = select(
            problem, method, tau=TAU, alpha=ALPHA, folds=0, time_limit=LARGE_FLOOR_S, gap=LARGE_GAP, confidence=0.95
        )  # type: ignore[arg-type]
    except SelectionError as error:
        if "time limit" not in str(error):
            raise
        # no selection at all within the time limit: the time floor missed (a slow machine), not a wrong answer
        print(f"\n1000 x 10000 {method}: {error}")
        below(f"1000x10000_{method}_s", time.perf_counter() - start, LARGE_FLOOR_S, "s")
        return
    seconds = time.perf_counter() - start
    gap = result.gap or 0.0
    print(
        f"\n1000 x 10000 {method}: {seconds:.2f} s, status {result.status}, gap {gap:.2e}, "
        f"{len(result.selected)} selected, coverage {result.coverage:.3f}, FFR {result.ffr:.3f}, "
        f"density {problem.fails.mean():.2f}, {len(problem.subsumptions)} K pairs "
        f"(floor {LARGE_FLOOR_S:g} s, gap <= 1%)"
    )
    # the solver stops at the time limit: a gap over 1% there is the time floor missed, like a slow solve
    assert result.status in ("optimal", "feasible"), result.status
    below(f"1000x10000_{method}_s", seconds, LARGE_FLOOR_S, "s")
    at_most(f"1000x10000_{method}_gap", gap, LARGE_GAP, "")
    assert result.excluded_not_subsumed == () or method == "cov"


def test_reselection_after_one_label_change(shared_bench: Path) -> None:
    print(f"\n{'pipeline':18} {'median ms':>9} {'max ms':>7}")
    medians = []
    for name in PIPELINES:
        problem = load_matrix_file(shared_bench / "spade" / name / "matrix.json")
        select(problem, "sub", folds=0, tau=0.25, alpha=0.6, confidence=0.95)  # warm imports
        times = []
        for i in range(20):
            labels = problem.labels.copy()
            row = (i * 7) % len(labels)
            labels[row] = 1 - labels[row]
            start = time.perf_counter()
            select(problem.with_labels(labels), "sub", tau=TAU, alpha=ALPHA, folds=0, confidence=0.95)
            times.append(time.perf_counter() - start)
        medians.append(statistics.median(times))
        print(f"{name:18} {statistics.median(times) * 1000:9.1f} {max(times) * 1000:7.1f}")
    print(f"worst median {max(medians) * 1000:.1f} ms (floor {RESELECT_FLOOR_S * 1000:.0f} ms)")
    below("reselection_worst_median_s", max(medians), RESELECT_FLOOR_S, "s", runs=medians)
