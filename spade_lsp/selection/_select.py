"""Assertion selection: SPADE's methods as compact integer programs, verified against the data.

Notation. ``F[i, j]`` = assertion j fails example i (1 - SPADE's M). A set S *flags* example i when some j in S
fails it. G good and B bad labelled examples; ``coverage(S)`` = flagged bad / B, ``ffr(S)`` = flagged good / G.
Integer forms: FFR <= tau is ``flagged good <= T = floor(tau G)``, coverage >= alpha is
``flagged bad >= A = ceil(alpha B)``. An assertion whose own FFR exceeds tau is in no feasible set (FFR only
grows with S), so it is dropped before solving; the rest are the *candidates*.

Methods:

- ``base``: every candidate.
- ``cov``: fewest assertions with coverage >= alpha and FFR <= tau.
- ``sub``: ``cov`` plus: every excluded assertion that could still be added without pushing FFR above tau is
  subsumed by a selected one. "Could be added" is *relative to the selected set*: j is addable when
  ``ffr(S + {j}) <= tau`` (relative, because the paper's own published ``spade_sub`` selections leave
  out exactly such blocked assertions, e.g. three in finance). Per candidate j:
  ``x_j + sum_{i subsumes j} x_i + b_j >= 1`` where ``b_j`` ("blocked") may be 1 only if
  ``flagged_good(S) + flagged_good(S + {j}) - flagged_good(S) >= T + 1``, written with the exact flagged-good
  indicators as ``Phi - sum_{r in good rows j fails} m_r w_r - (T+1) b_j >= -sum m_r``. Selecting every
  addable assertion greedily from any ``cov`` solution satisfies this, so ``sub`` is feasible iff ``cov`` is.
  The subsumption relation is the transitive closure of declared, static and LLM pairs (:mod:`._subsumption`).
- ``cost``: the ``sub`` constraints, minimising total cost (tokens of assertions that ask an LLM).
- ``none``: no labels needed: the roots of the subsumption DAG, cycles collapsed first.

Compact formulation (no variable per example and assertion): identical candidate columns are merged into a
class variable ``u_c`` (``u_c >= x_j``, ``u_c <= sum x_j``; for ``cov`` one binary per class, the cheapest
member standing for it); identical example rows (over the classes) are merged with multiplicity ``m_r``; rows
no candidate fails are dropped. ``z_r <= sum_{c fails r} u_c`` for bad rows (continuous, pushed up),
``w_r >= u_c`` for each class failing good row r (continuous, pushed down), and for ``sub``/``cost``
``w_r <= sum u_c`` so the blocked test sees exact indicators.

Tie-breaking, "fewest, then higher coverage, then lower FFR", is one weighted objective with integer weights
that provably keep the order: ``W1 |S| - W2 flagged_bad + flagged_good`` with ``W2 = G + 1`` and
``W1 = (B + 1)(G + 1)`` (the tie-break terms move the objective by less than ``W1``, and FFR terms by less than
``W2``). The optimum over integer points is an integer, so HiGHS runs with an absolute gap below 1 and
"optimal" means lexicographically optimal. ``cost`` uses a second solve instead (costs are real numbers): the
minimum cost, then, with cost fixed at it, higher coverage, lower FFR, fewer assertions, by the same device.

Large problems (candidates x rows > 200,000) start HiGHS from a greedy feasible selection, so a time limit
still leaves an incumbent with a proven gap. Every solution is re-checked against F and y (coverage, FFR,
subsumption) before it is returned.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from spade_lsp.errors import InputError, SelectionError
from spade_lsp.selection._ilp import Model, SolveResult, solve
from spade_lsp.selection._matrix import BAD, GOOD, BoolMatrix, SelectionInput
from spade_lsp.selection._names import METHODS, Method, Solver
from spade_lsp.selection._stats import stratified_folds, wilson_interval
from spade_lsp.selection._subsumption import Relation, build_relation, dag_roots

Status = Literal["optimal", "feasible", "infeasible"]
_EPS: Final = 1e-9

Interval = tuple[float, float] | None


@dataclass(frozen=True, slots=True)
class CrossValidation:
    """Coverage and FFR of each fold's selection on the fold it did not see, pooled over the folds."""

    folds: int
    coverage: float | None
    coverage_interval: Interval
    ffr: float | None
    ffr_interval: Interval
    infeasible_folds: int
    mean_selected: float | None


@dataclass(frozen=True)
class Selection:
    """A selection and everything needed to judge it. ``selected`` is empty when ``status`` is infeasible."""

    method: Method
    tau: float
    alpha: float
    selected: tuple[str, ...]
    status: Status
    coverage: float | None
    ffr: float | None
    excluded_not_subsumed: tuple[str, ...]
    solve_seconds: float
    gap: float | None = None
    bad_flagged: int = 0
    bad_total: int = 0
    good_flagged: int = 0
    good_total: int = 0
    cost: float = 0.0
    coverage_interval: Interval = None
    ffr_interval: Interval = None
    cv: CrossValidation | None = None
    reason: str | None = None
    best: Mapping[str, Any] | None = None
    solver: str | None = None
    notes: tuple[str, ...] = ()
    contradicted: tuple[tuple[str, str], ...] = field(default=())
    fallbacks: tuple[Mapping[str, Any], ...] = ()  # side calls (LLM subsumption) that fell back, and why

    def to_json(self) -> dict[str, Any]:
        """The ``spade select --json`` document: the contract's keys first, then the extras."""
        out: dict[str, Any] = {
            "selected": list(self.selected),
            "coverage": self.coverage,
            "ffr": self.ffr,
            "excluded_not_subsumed": list(self.excluded_not_subsumed),
            "status": self.status,
            "solve_seconds": round(self.solve_seconds, 6),
            "method": self.method,
            "tau": self.tau,
            "alpha": self.alpha,
            "gap": self.gap,
            "cost": self.cost,
            "counts": {
                "bad_flagged": self.bad_flagged,
                "bad": self.bad_total,
                "good_flagged": self.good_flagged,
                "good": self.good_total,
            },
            "coverage_interval": list(self.coverage_interval) if self.coverage_interval else None,
            "ffr_interval": list(self.ffr_interval) if self.ffr_interval else None,
            "cv": None,
            "solver": self.solver,
            "notes": list(self.notes),
            "contradicted_pairs": [list(pair) for pair in self.contradicted],
            "fallbacks": [dict(item) for item in self.fallbacks],
        }
        if self.cv is not None:
            cv = self.cv
            out["cv"] = {
                "folds": cv.folds,
                "coverage": cv.coverage,
                "coverage_interval": list(cv.coverage_interval) if cv.coverage_interval else None,
                "ffr": cv.ffr,
                "ffr_interval": list(cv.ffr_interval) if cv.ffr_interval else None,
                "infeasible_folds": cv.infeasible_folds,
                "mean_selected": cv.mean_selected,
            }
        if self.status == "infeasible":
            out["reason"] = self.reason
            out["best"] = dict(self.best) if self.best is not None else None
        return out


class _Problem:
    """The labelled part of a selection input, with the integer thresholds and the candidates."""

    def __init__(self, problem: SelectionInput, tau: float, alpha: float, relation: Relation) -> None:
        labelled = problem.labels != -1
        self.source = problem
        self.fails: BoolMatrix = problem.fails[labelled]
        labels = problem.labels[labelled]
        self.good = labels == GOOD
        self.bad = labels == BAD
        self.G = int(self.good.sum())
        self.B = int(self.bad.sum())
        self.T = math.floor(tau * self.G + _EPS)
        self.A = math.ceil(alpha * self.B - _EPS)
        self.good_fails = self.fails[self.good]
        self.bad_fails = self.fails[self.bad]
        self.good_fail_count = self.good_fails.sum(axis=0)
        self.cand = np.flatnonzero(self.good_fail_count <= self.T)
        self.costs = np.array([a.cost for a in problem.assertions], dtype=np.float64)
        self.closure = relation.closure
        self.n = len(problem.assertions)

    def counts(self, chosen: Sequence[int]) -> tuple[int, int]:
        """(flagged bad, flagged good) for a set of assertion indices."""
        if not chosen:
            return 0, 0
        idx = np.asarray(chosen, dtype=np.intp)
        return int(self.bad_fails[:, idx].any(axis=1).sum()), int(self.good_fails[:, idx].any(axis=1).sum())

    def excluded_not_subsumed(self, chosen: Sequence[int], *, labels: bool = True) -> list[int]:
        """Excluded assertions that could be added keeping FFR <= tau and that no selected one subsumes."""
        idx = np.asarray(chosen, dtype=np.intp)
        subsumed = self.closure[idx].any(axis=0) if len(idx) else np.zeros(self.n, dtype=np.bool_)
        if not labels:
            addable = np.ones(self.n, dtype=np.bool_)
        else:
            flagged = self.good_fails[:, idx].any(axis=1) if len(idx) else np.zeros(self.G, dtype=np.bool_)
            extra = (self.good_fails & ~flagged[:, None]).sum(axis=0)
            addable = int(flagged.sum()) + extra <= self.T
        addable[idx] = False
        return np.flatnonzero(addable & ~subsumed).tolist()


def _merge_rows(patterns: BoolMatrix) -> tuple[BoolMatrix, npt.NDArray[np.float64]]:
    """Distinct non-empty rows and how many examples each stands for."""
    if patterns.shape[0] == 0 or patterns.shape[1] == 0:
        return np.zeros((0, patterns.shape[1]), dtype=np.bool_), np.zeros(0)
    keep = patterns.any(axis=1)
    unique, counts = np.unique(patterns[keep], axis=0, return_counts=True)
    return unique.astype(np.bool_), counts.astype(np.float64)


def _csr_lead(
    lead: npt.NDArray[np.int64], pattern: BoolMatrix, cols: npt.NDArray[np.int64], sign: float
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Rows ``lead[r] + sign * sum_{c in pattern[r]} cols[c]`` in CSR form."""
    rr, cc = np.nonzero(pattern)
    per_row = pattern.sum(axis=1) + 1
    starts = np.concatenate([[0], np.cumsum(per_row)]).astype(np.int64)
    total = int(starts[-1])
    index = np.empty(total, dtype=np.int64)
    value = np.full(total, sign, dtype=np.float64)
    lead_pos = starts[:-1]
    rest = np.ones(total, dtype=np.bool_)
    rest[lead_pos] = False
    index[lead_pos] = lead
    value[lead_pos] = 1.0
    index[rest] = cols[cc]
    del rr
    return starts, index, value


@dataclass
class _Built:
    model: Model
    x: npt.NDArray[np.int64]  # one binary per entry of ``stands_for``
    stands_for: npt.NDArray[np.intp]  # assertion index each x stands for
    z: npt.NDArray[np.int64]
    z_mult: npt.NDArray[np.float64]
    w: npt.NDArray[np.int64]
    w_mult: npt.NDArray[np.float64]
    u: npt.NDArray[np.int64]
    class_of: npt.NDArray[np.int64]
    bad_pat: BoolMatrix
    good_pat: BoolMatrix
    block: npt.NDArray[np.int64]
    phi: int
    ceiling: int | None

    def start(self, chosen: Sequence[int]) -> npt.NDArray[np.float64]:
        """Every column's value for the selection ``chosen`` (a warm start for the solver)."""
        values = np.zeros(self.model.num_cols)
        on = np.isin(self.stands_for, np.asarray(chosen, dtype=np.intp))
        values[self.x] = on
        u_on = np.zeros(len(self.u), dtype=np.bool_)
        np.logical_or.at(u_on, self.class_of, on)
        values[self.u] = u_on
        z_on = (self.bad_pat & u_on).any(axis=1)
        w_on = (self.good_pat & u_on).any(axis=1)
        values[self.z] = z_on
        values[self.w] = w_on
        if self.phi >= 0 and self.ceiling is not None:
            flagged = float(self.w_mult @ w_on)
            values[self.phi] = flagged
            for c in np.flatnonzero(self.block >= 0).tolist():
                new = float(self.w_mult @ (self.good_pat[:, c] & ~w_on))
                values[self.block[c]] = 1.0 if flagged + new >= self.ceiling + 1 else 0.0
        return values


def _build(
    p: _Problem,
    cols: npt.NDArray[np.intp],
    *,
    floor: int | None,
    ceiling: int | None,
    subsumption: bool,
) -> _Built:
    """The compact model over assertion indices ``cols``; objective left to the caller."""
    model = Model()
    fails = p.fails[:, cols]
    keys: dict[bytes, int] = {}
    class_of = np.array(
        [keys.setdefault(np.packbits(fails[:, k]).tobytes(), len(keys)) for k in range(len(cols))], dtype=np.int64
    )
    n_class = len(keys)
    members: list[list[int]] = [[] for _ in range(n_class)]
    for k, c in enumerate(class_of.tolist()):
        members[c].append(k)
    first = np.array([m[0] for m in members], dtype=np.intp)
    if not subsumption:  # one binary per class, its cheapest member standing for it
        reps = np.array([min(m, key=lambda k: (p.costs[cols[k]], cols[k])) for m in members], dtype=np.intp)
        x = model.add_cols(n_class, integer=True)
        u = x
        stands_for = cols[reps]
    else:
        x = model.add_cols(len(cols), integer=True)
        stands_for = cols
        u = np.empty(n_class, dtype=np.int64)
        multi = [c for c in range(n_class) if len(members[c]) > 1]
        for c in range(n_class):
            if len(members[c]) == 1:
                u[c] = x[members[c][0]]
        extra = model.add_cols(len(multi))
        for c, col in zip(multi, extra.tolist(), strict=True):
            u[c] = col
            for k in members[c]:
                model.add_row([col, int(x[k])], [1.0, -1.0], 0.0, math.inf)
            model.add_row([col, *x[members[c]].tolist()], [1.0] + [-1.0] * len(members[c]), -math.inf, 0.0)
    block = np.full(n_class, -1, dtype=np.int64)
    phi = -1
    class_fails = fails[:, first]
    bad_pat, bad_mult = _merge_rows(class_fails[p.bad])
    good_pat, good_mult = _merge_rows(class_fails[p.good])
    z = model.add_cols(len(bad_pat))
    w = model.add_cols(len(good_pat))
    if len(bad_pat):
        model.add_rows(*_csr_lead(z, bad_pat, u, -1.0), -math.inf, 0.0)  # z_r <= sum u
    if floor is not None:
        model.add_row(z, bad_mult, float(floor), math.inf)
    rr, cc = np.nonzero(good_pat)  # w_r >= u_c for each class failing good row r
    if len(rr):
        index = np.empty(2 * len(rr), dtype=np.int64)
        index[0::2], index[1::2] = w[rr], u[cc]
        value = np.tile([1.0, -1.0], len(rr))
        model.add_rows(np.arange(0, 2 * len(rr) + 1, 2, dtype=np.int64), index, value, 0.0, math.inf)
    if ceiling is not None and len(w):
        model.add_row(w, good_mult, -math.inf, float(ceiling))
    if subsumption:
        assert ceiling is not None
        mass = good_pat.astype(np.float64).T @ good_mult  # good examples each class fails
        blockable = (mass > 0) & (ceiling + 1 <= p.G)
        if blockable.any():
            model.add_rows(*_csr_lead(w, good_pat, u, -1.0), -math.inf, 0.0)  # w_r <= sum u: exact indicators
            phi = int(model.add_cols(1, upper=math.inf)[0])
            model.add_row([phi, *w.tolist()], [1.0, *(-good_mult).tolist()], 0.0, 0.0)
            for c in np.flatnonzero(blockable).tolist():
                b = int(model.add_cols(1)[0])
                block[c] = b
                rows = np.flatnonzero(good_pat[:, c])
                model.add_row(
                    [phi, *w[rows].tolist(), b],
                    [1.0, *(-good_mult[rows]).tolist(), -float(ceiling + 1)],
                    -float(good_mult[rows].sum()),
                    math.inf,
                )
        position = {int(a): k for k, a in enumerate(cols.tolist())}
        for k, j in enumerate(cols.tolist()):
            subsumers = [position[i] for i in np.flatnonzero(p.closure[:, j]).tolist() if i in position]
            terms = [int(x[k]), *x[subsumers].tolist()]
            b = int(block[class_of[k]])
            if b >= 0:
                terms.append(b)
            model.add_row(terms, [1.0] * len(terms), 1.0, math.inf)
    if not subsumption:
        class_of = np.arange(n_class, dtype=np.int64)
    return _Built(model, x, stands_for, z, bad_mult, w, good_mult, u, class_of, bad_pat, good_pat, block, phi, ceiling)


_WARM_START_SIZE: Final = 200_000  # candidates x labelled rows above which a greedy start is worth its time


def _greedy(p: _Problem, *, subsumption: bool) -> list[int] | None:
    """A feasible selection built greedily (coverage per new false failure, then the subsumption rule), used
    as the solver's starting incumbent on large problems; None when the greedy cover gets stuck.
    State is updated incrementally, so each step costs O(n) plus the rows it newly flags."""
    chosen = np.zeros(p.n, dtype=np.bool_)
    is_cand = np.zeros(p.n, dtype=np.bool_)
    is_cand[p.cand] = True
    bad_hit = np.zeros(p.B, dtype=np.bool_)
    good_hit = np.zeros(p.G, dtype=np.bool_)
    gain = p.bad_fails.sum(axis=0).astype(np.int64)  # bad rows each assertion would newly flag
    extra = p.good_fail_count.astype(np.int64).copy()  # good rows each assertion would newly flag
    subsumed = np.zeros(p.n, dtype=np.bool_)
    flagged = 0

    def add(j: int) -> None:
        nonlocal flagged
        chosen[j] = True
        new_bad = p.bad_fails[:, j] & ~bad_hit
        new_good = p.good_fails[:, j] & ~good_hit
        gain[:] -= p.bad_fails[new_bad].sum(axis=0)
        extra[:] -= p.good_fails[new_good].sum(axis=0)
        bad_hit[new_bad] = True
        good_hit[new_good] = True
        flagged += int(new_good.sum())
        subsumed[:] |= p.closure[j]

    while int(bad_hit.sum()) < p.A:
        ok = is_cand & ~chosen & (flagged + extra <= p.T) & (gain > 0)
        if not ok.any():
            return None
        add(int(np.argmax(np.where(ok, gain / (1.0 + extra), -1.0))))
    while subsumption:
        left = np.flatnonzero(is_cand & ~chosen & ~subsumed & (flagged + extra <= p.T))
        if not len(left):
            break
        covers = p.closure[np.ix_(left, left)].sum(axis=1)
        add(int(left[np.lexsort((extra[left], -covers))[0]]))
    return np.flatnonzero(chosen).tolist()


def _chosen(built: _Built, result: SolveResult) -> list[int]:
    return sorted(int(a) for a in built.stands_for[result.values[built.x] > 0.5].tolist())


def _solve_ilp(
    p: _Problem, method: Method, *, solver: Solver, time_limit: float, gap: float
) -> tuple[list[int] | None, SolveResult]:
    """Solve cov/sub/cost; None when infeasible."""
    sub = method in ("sub", "cost")
    built = _build(p, p.cand, floor=p.A, ceiling=p.T, subsumption=sub)
    model = built.model
    start = None
    if len(p.cand) * (p.B + p.G) > _WARM_START_SIZE:
        greedy = _greedy(p, subsumption=sub)
        start = built.start(greedy) if greedy is not None else None
    w2 = float(p.G + 1)
    if method != "cost":
        model.set_costs(built.x, float((p.B + 1) * (p.G + 1)))
        model.set_costs(built.z, -w2 * built.z_mult)
        model.set_costs(built.w, built.w_mult)
        result = solve(model, solver=solver, time_limit=time_limit, abs_gap=0.99, rel_gap=gap, start=start)
        return (None if result.status == "infeasible" else _chosen(built, result)), result
    costs = p.costs[built.stands_for]
    model.set_costs(built.x, costs)
    started = time.perf_counter()
    first = solve(model, solver=solver, time_limit=time_limit, abs_gap=1e-9, rel_gap=max(gap, 1e-9), start=start)
    if first.status == "infeasible":
        return None, first
    best_cost = float(costs @ (first.values[built.x] > 0.5))
    model.add_row(built.x, costs, -math.inf, best_cost + 1e-7 * max(1.0, best_cost))
    n1 = float(len(built.x) + 1)
    model.set_costs(built.x, 1.0)
    model.set_costs(built.z, -w2 * n1 * built.z_mult)
    model.set_costs(built.w, n1 * built.w_mult)
    remaining = max(0.1, time_limit - (time.perf_counter() - started))
    second = solve(model, solver=solver, time_limit=remaining, abs_gap=0.99, rel_gap=gap)
    if second.status == "infeasible":  # cannot happen: the first solution satisfies the cost row
        raise SelectionError("the cost tie-break solve lost the minimum-cost solution")
    status: Status = "optimal" if first.status == second.status == "optimal" else "feasible"
    merged = SolveResult(status, second.values, best_cost, max(first.gap, second.gap), second.solver)
    return _chosen(built, second), merged


def _fraction(k: int, n: int) -> float | None:
    return k / n if n else None


def _diagnose(
    p: _Problem, tau: float, alpha: float, *, solver: Solver, time_limit: float
) -> tuple[str, dict[str, Any]]:
    """Why coverage >= alpha with FFR <= tau is out of reach, and the best reachable coverage and FFR."""
    n1 = float(p.n + 1)
    best: dict[str, Any] = {}
    parts: list[str] = []
    if len(p.cand) == 0:
        lowest = int(p.good_fail_count.min()) if p.n else 0
        parts.append(
            f"no assertion keeps FFR <= {tau:g} on its own (the lowest FFR is {lowest / p.G:.3f})"
            if p.n
            else "there are no assertions"
        )
        best.update({"selected": [], "coverage": 0.0, "ffr": 0.0})
    else:
        built = _build(p, p.cand, floor=None, ceiling=p.T, subsumption=False)
        built.model.set_costs(built.x, 1.0)
        built.model.set_costs(built.z, -(p.G + 1) * n1 * built.z_mult)
        built.model.set_costs(built.w, n1 * built.w_mult)
        result = solve(built.model, solver=solver, time_limit=time_limit, abs_gap=0.99)
        chosen = _chosen(built, result)
        bad, good = p.counts(chosen)
        best.update(
            {"selected": [p.source.assertions[j].name for j in chosen], "coverage": bad / p.B, "ffr": good / p.G}
        )
        parts.append(
            f"with FFR <= {tau:g} the best coverage is {bad / p.B:.3f} "
            f"(FFR {good / p.G:.3f}, {len(chosen)} assertion{'s' if len(chosen) != 1 else ''})"
        )
    everything = int(p.bad_fails.any(axis=1).sum()) if p.n else 0
    if everything < p.A:
        parts.append(f"all {p.n} assertions together flag only {everything / p.B:.3f} of the bad examples")
    else:
        built = _build(p, np.arange(p.n, dtype=np.intp), floor=p.A, ceiling=None, subsumption=False)
        built.model.set_costs(built.x, 1.0)
        built.model.set_costs(built.z, -n1 * built.z_mult)
        built.model.set_costs(built.w, (p.B + 1) * n1 * built.w_mult)
        result = solve(built.model, solver=solver, time_limit=time_limit, abs_gap=0.99)
        _, good = p.counts(_chosen(built, result))
        parts.append(f"coverage >= {alpha:g} needs FFR >= {good / p.G:.3f}")
    reason = f"coverage >= {alpha:g} and FFR <= {tau:g} cannot both be met: " + "; ".join(parts)
    return reason, best


def _require_labels(p: _Problem, method: Method) -> None:
    if method == "none":
        return
    if method != "base" and p.B == 0:
        raise InputError(
            f"no bad examples: coverage is undefined, so method {method!r} cannot be used; "
            "label some bad examples, or use --method base or none"
        )
    if p.G == 0:
        raise InputError(
            f"no good examples: the false-failure rate is undefined, so method {method!r} cannot be used; "
            "label some good examples, or use --method none"
        )


def _core(
    problem: SelectionInput,
    method: Method,
    *,
    tau: float,
    alpha: float,
    time_limit: float,
    solver: Solver,
    filter_declared: bool,
    static: bool,
    gap: float,
    diagnose: bool,
) -> tuple[_Problem, Relation, list[int] | None, Status, float | None, str | None, dict[str, Any] | None, str | None]:
    relation = build_relation(problem, filter_declared=filter_declared, static=static)
    p = _Problem(problem, tau, alpha, relation)
    _require_labels(p, method)
    if method == "none":
        return p, relation, dag_roots(relation.closure, p.costs.tolist()), "optimal", 0.0, None, None, None
    if method == "base":
        return p, relation, p.cand.tolist(), "optimal", 0.0, None, None, None
    chosen, result = _solve_ilp(p, method, solver=solver, time_limit=time_limit, gap=gap)
    if chosen is None:
        reason, best = (
            _diagnose(p, tau, alpha, solver=solver, time_limit=time_limit) if diagnose else ("infeasible", None)
        )
        return p, relation, None, "infeasible", None, reason, best, result.solver
    gap_value = None if math.isnan(result.gap) else result.gap
    return p, relation, chosen, result.status, gap_value, None, None, result.solver


def _verify(p: _Problem, method: Method, chosen: Sequence[int], tau: float, alpha: float) -> list[int]:
    """Recompute the constraints from the data; a violation is a solver bug, never returned as a result."""
    bad, good = p.counts(chosen)
    if method in ("cov", "sub", "cost") and (bad < p.A or good > p.T):
        raise SelectionError(
            f"the solver's selection does not meet the constraints (coverage {bad}/{p.B} < {p.A} "
            f"or flagged good {good}/{p.G} > {p.T}); not using it"
        )
    not_subsumed = p.excluded_not_subsumed(chosen, labels=method != "none")
    if method in ("sub", "cost", "none") and not_subsumed:
        names = [p.source.assertions[j].name for j in not_subsumed]
        raise SelectionError(f"the solver's selection leaves addable assertions unsubsumed: {names}")
    return not_subsumed


def select(
    problem: SelectionInput,
    method: Method = "sub",
    *,
    tau: float,
    alpha: float,
    folds: int = 5,
    time_limit: float = 10.0,
    solver: Solver = "highs",
    filter_declared: bool = False,
    static: bool = True,
    gap: float = 0.0,
    confidence: float,
    seed: int = 0,
) -> Selection:
    """Select assertions with ``method`` (see the module docstring), with intervals and a ``folds``-fold
    cross-validated estimate (0 or 1: none). Raises :class:`InputError` for unusable input and
    :class:`SelectionError` when the solver fails; an infeasible problem is a result, not an error."""
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    for name, value in (("tau", tau), ("alpha", alpha)):
        if not 0 <= value <= 1 or math.isnan(value):
            raise InputError(f"{name} must be between 0 and 1, got {value!r}")
    if time_limit <= 0:
        raise InputError(f"the time limit must be positive, got {time_limit!r}")
    started = time.perf_counter()
    p, relation, chosen, status, gap_value, reason, best, solver_used = _core(
        problem,
        method,
        tau=tau,
        alpha=alpha,
        time_limit=time_limit,
        solver=solver,
        filter_declared=filter_declared,
        static=static,
        gap=gap,
        diagnose=True,
    )
    notes = list(problem.notes)
    if relation.dropped:
        notes.append(
            f"{len(relation.dropped)} subsumption pair(s) ignored: the examples refute them "
            f"(e.g. {relation.dropped[0].subsumer} does not flag everything {relation.dropped[0].subsumed} flags)"
        )
    if relation.contradicted:
        notes.append(
            f"{len(relation.contradicted)} declared subsumption pair(s) are contradicted by the examples but kept "
            "(declared pairs are trusted; pass --filter-declared to drop them)"
        )
    if p.B == 0:
        notes.append("no bad examples: coverage is undefined")
    if method == "none" and (p.B or p.G):
        notes.append("method none ignores the labels; coverage and FFR are reported for information")
    contradicted = tuple((pair.subsumer, pair.subsumed) for pair in relation.contradicted)
    if chosen is None:
        return Selection(
            method=method,
            tau=tau,
            alpha=alpha,
            selected=(),
            status="infeasible",
            coverage=None,
            ffr=None,
            excluded_not_subsumed=(),
            solve_seconds=time.perf_counter() - started,
            bad_total=p.B,
            good_total=p.G,
            reason=reason,
            best=best,
            solver=solver_used,
            notes=tuple(notes),
            contradicted=contradicted,
        )
    not_subsumed = _verify(p, method, chosen, tau, alpha)
    solve_seconds = time.perf_counter() - started
    bad, good = p.counts(chosen)
    names = problem.names
    cv = None
    if folds >= 2 and method != "none":
        cv = _cross_validate(
            problem,
            method,
            folds,
            tau=tau,
            alpha=alpha,
            time_limit=time_limit,
            solver=solver,
            filter_declared=filter_declared,
            static=static,
            gap=gap,
            confidence=confidence,
            seed=seed,
            notes=notes,
        )
    return Selection(
        method=method,
        tau=tau,
        alpha=alpha,
        selected=tuple(names[j] for j in chosen),
        status=status,
        coverage=_fraction(bad, p.B),
        ffr=_fraction(good, p.G),
        excluded_not_subsumed=tuple(names[j] for j in not_subsumed),
        solve_seconds=solve_seconds,
        gap=gap_value,
        bad_flagged=bad,
        bad_total=p.B,
        good_flagged=good,
        good_total=p.G,
        cost=float(sum(p.costs[j] for j in chosen)),
        coverage_interval=wilson_interval(bad, p.B, confidence=confidence),
        ffr_interval=wilson_interval(good, p.G, confidence=confidence),
        cv=cv,
        solver=solver_used,
        notes=tuple(notes),
        contradicted=contradicted,
    )


def _cross_validate(
    problem: SelectionInput,
    method: Method,
    folds: int,
    *,
    tau: float,
    alpha: float,
    time_limit: float,
    solver: Solver,
    filter_declared: bool,
    static: bool,
    gap: float,
    confidence: float,
    seed: int,
    notes: list[str],
) -> CrossValidation | None:
    """Select on k-1 folds, measure on the held-out fold; pooled counts over all folds."""
    labels = problem.labels
    n_bad, n_good = int((labels == BAD).sum()), int((labels == GOOD).sum())
    k = min(folds, n_bad if method != "base" else n_good, n_good)
    if k < 2:
        notes.append(f"cross-validation skipped: too few labelled examples for {folds} folds")
        return None
    if k < folds:
        notes.append(f"cross-validation uses {k} folds (not {folds}): too few examples of one label")
    bad_hit = bad_seen = good_hit = good_seen = infeasible = 0
    sizes: list[int] = []
    for test in stratified_folds(labels, k, seed=seed):
        train = np.ones(len(labels), dtype=np.bool_)
        train[test] = False
        train_problem = problem.rows(train)
        try:
            _, _, chosen, *_ = _core(
                train_problem,
                method,
                tau=tau,
                alpha=alpha,
                time_limit=time_limit,
                solver=solver,
                filter_declared=filter_declared,
                static=static,
                gap=gap,
                diagnose=False,
            )
        except InputError:  # a fold without bad (or good) training examples
            infeasible += 1
            continue
        if chosen is None:
            infeasible += 1
            continue
        sizes.append(len(chosen))
        held = problem.fails[test]
        flagged = held[:, chosen].any(axis=1) if chosen else np.zeros(len(test), dtype=np.bool_)
        test_labels = labels[test]
        bad_hit += int((flagged & (test_labels == BAD)).sum())
        bad_seen += int((test_labels == BAD).sum())
        good_hit += int((flagged & (test_labels == GOOD)).sum())
        good_seen += int((test_labels == GOOD).sum())
    return CrossValidation(
        folds=k,
        coverage=_fraction(bad_hit, bad_seen),
        coverage_interval=wilson_interval(bad_hit, bad_seen, confidence=confidence),
        ffr=_fraction(good_hit, good_seen),
        ffr_interval=wilson_interval(good_hit, good_seen, confidence=confidence),
        infeasible_folds=infeasible,
        mean_selected=sum(sizes) / len(sizes) if sizes else None,
    )
