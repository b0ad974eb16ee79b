"""A small sparse MILP builder and its solvers: HiGHS in-process (highspy), pulp+HiGHS, pulp+CBC.

Why not build the model with pulp objects: pulp creates a Python object per constraint and its HiGHS adapter
adds rows one ``addRow`` call at a time; at the 10^5-10^6 nonzeros of a 1,000 x 10,000 problem that alone
takes seconds. Rows are therefore collected as CSR blocks of numpy arrays and handed to HiGHS in one
``passModel`` call. The same arrays become a pulp problem for the CBC fallback (used when highspy is missing or
HiGHS reports an error) and for ``solver="pulp-highs"``, which tests use to check the backends agree.

The solution status is read from the solver, then checked: "optimal" needs HiGHS's optimal model status;
a time limit with an incumbent is "feasible" with HiGHS's relative gap; a time limit without one is a
:class:`~spade_lsp.errors.SelectionError`. Callers re-verify every solution against the data.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from spade_lsp.errors import SelectionError
from spade_lsp.selection._names import Solver

INF: Final = math.inf

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class SolveResult:
    status: Literal["optimal", "feasible", "infeasible"]
    values: FloatArray
    objective: float
    gap: float  # relative gap reported by the solver; 0.0 when optimal
    solver: str


class Model:
    """Columns with bounds, costs and integrality; rows as CSR blocks ``lower <= A x <= upper``; minimise."""

    def __init__(self) -> None:
        self._cost: list[FloatArray] = []
        self._lower: list[FloatArray] = []
        self._upper: list[FloatArray] = []
        self._integer: list[npt.NDArray[np.bool_]] = []
        self.num_cols = 0
        self._starts: list[IntArray] = []
        self._index: list[IntArray] = []
        self._value: list[FloatArray] = []
        self._row_lower: list[FloatArray] = []
        self._row_upper: list[FloatArray] = []
        self.num_rows = 0
        self.num_nz = 0

    def add_cols(self, count: int, *, lower: float = 0.0, upper: float = 1.0, integer: bool = False) -> IntArray:
        """``count`` new columns (cost 0); returns their indices."""
        first = self.num_cols
        self._cost.append(np.zeros(count))
        self._lower.append(np.full(count, lower))
        self._upper.append(np.full(count, upper))
        self._integer.append(np.full(count, integer, dtype=np.bool_))
        self.num_cols += count
        return np.arange(first, first + count, dtype=np.int64)

    def add_rows(
        self,
        starts: IntArray,
        index: IntArray,
        value: FloatArray,
        lower: FloatArray | float,
        upper: FloatArray | float,
    ) -> None:
        """A block of rows in CSR form: row r holds ``index[starts[r]:starts[r+1]]``."""
        rows = len(starts) - 1
        if rows <= 0:
            return
        self._starts.append(np.asarray(starts[:-1], dtype=np.int64) + self.num_nz)
        self._index.append(np.asarray(index, dtype=np.int64))
        self._value.append(np.asarray(value, dtype=np.float64))
        self._row_lower.append(np.broadcast_to(np.asarray(lower, dtype=np.float64), (rows,)).copy())
        self._row_upper.append(np.broadcast_to(np.asarray(upper, dtype=np.float64), (rows,)).copy())
        self.num_rows += rows
        self.num_nz += int(starts[-1])

    def add_row(
        self, index: Sequence[int] | IntArray, value: Sequence[float] | FloatArray, lower: float, upper: float
    ) -> None:
        index_array = np.asarray(index, dtype=np.int64)
        self.add_rows(
            np.array([0, len(index_array)], dtype=np.int64),
            index_array,
            np.asarray(value, dtype=np.float64),
            lower,
            upper,
        )

    def set_costs(self, cols: IntArray, costs: FloatArray | float) -> None:
        cost = self.costs()
        cost[cols] = costs
        self._cost = [cost]

    def costs(self) -> FloatArray:
        return np.concatenate(self._cost) if self._cost else np.zeros(0)

    def arrays(self) -> dict[str, Any]:
        def cat(parts: Sequence[npt.NDArray[Any]], dtype: Any) -> npt.NDArray[Any]:
            return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)

        starts = cat(self._starts, np.int64)
        return {
            "cost": self.costs(),
            "lower": cat(self._lower, np.float64),
            "upper": cat(self._upper, np.float64),
            "integer": cat(self._integer, np.bool_),
            "starts": np.append(starts, self.num_nz).astype(np.int64),
            "index": cat(self._index, np.int64),
            "value": cat(self._value, np.float64),
            "row_lower": cat(self._row_lower, np.float64),
            "row_upper": cat(self._row_upper, np.float64),
        }


def solve(
    model: Model,
    *,
    solver: Solver = "highs",
    time_limit: float = 10.0,
    abs_gap: float = 0.0,
    rel_gap: float = 0.0,
    start: FloatArray | None = None,
) -> SolveResult:
    """Solve ``model`` (``start``: a feasible point to begin from, HiGHS only); "highs" falls back to CBC
    when highspy is missing or HiGHS fails."""
    if solver == "highs":
        try:
            return _solve_highs(model, time_limit=time_limit, abs_gap=abs_gap, rel_gap=rel_gap, start=start)
        except _HighsUnavailable:
            return _solve_pulp(model, "cbc", time_limit=time_limit, abs_gap=abs_gap, rel_gap=rel_gap)
    return _solve_pulp(model, solver, time_limit=time_limit, abs_gap=abs_gap, rel_gap=rel_gap)


class _HighsUnavailable(Exception):
    pass


def _solve_highs(
    model: Model, *, time_limit: float, abs_gap: float, rel_gap: float, start: FloatArray | None = None
) -> SolveResult:
    try:
        import highspy
    except ImportError as error:  # pragma: no cover - highspy is a dependency
        raise _HighsUnavailable from error
    a = model.arrays()
    highs = highspy.Highs()  # type: ignore[no-untyped-call]
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("time_limit", float(time_limit))
    highs.setOptionValue("mip_rel_gap", float(rel_gap))
    highs.setOptionValue("mip_abs_gap", float(abs_gap))
    highs.setOptionValue("random_seed", 0)
    lp = highspy.HighsLp()
    lp.num_col_ = model.num_cols
    lp.num_row_ = model.num_rows
    big = highspy.kHighsInf
    lp.col_cost_ = a["cost"]
    lp.col_lower_ = np.where(np.isinf(a["lower"]), -big, a["lower"])
    lp.col_upper_ = np.where(np.isinf(a["upper"]), big, a["upper"])
    lp.row_lower_ = np.where(np.isinf(a["row_lower"]), -big, a["row_lower"])
    lp.row_upper_ = np.where(np.isinf(a["row_upper"]), big, a["row_upper"])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = model.num_cols
    lp.a_matrix_.num_row_ = model.num_rows
    lp.a_matrix_.start_ = a["starts"].astype(np.int32)
    lp.a_matrix_.index_ = a["index"].astype(np.int32)
    lp.a_matrix_.value_ = a["value"]
    lp.integrality_ = [
        highspy.HighsVarType.kInteger if flag else highspy.HighsVarType.kContinuous for flag in a["integer"].tolist()
    ]
    if highs.passModel(lp) != highspy.HighsStatus.kOk:
        raise _HighsUnavailable("HiGHS refused the model")
    if start is not None:
        incumbent = highspy.HighsSolution()
        incumbent.col_value = start.tolist()
        incumbent.value_valid = True
        highs.setSolution(incumbent)
    highs.run()
    status = highs.getModelStatus()
    statuses = highspy.HighsModelStatus
    info = highs.getInfo()
    if status in (statuses.kInfeasible, statuses.kUnboundedOrInfeasible):
        return SolveResult("infeasible", np.zeros(model.num_cols), math.nan, math.nan, "highs")
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    values = np.asarray(highs.getSolution().col_value, dtype=np.float64)
    objective = float(info.objective_function_value)
    if status == statuses.kOptimal and has_solution:
        # HiGHS also says "optimal" when the gap tolerance stopped it: only a closed gap is optimal here
        closed = objective - float(info.mip_dual_bound) <= max(abs_gap, 1e-9) or float(info.mip_gap) <= 1e-9
        if closed or not np.any(a["integer"]):
            return SolveResult("optimal", values, objective, 0.0, "highs")
        return SolveResult("feasible", values, objective, float(info.mip_gap), "highs")
    limits = (statuses.kTimeLimit, statuses.kIterationLimit, statuses.kInterrupt, statuses.kSolutionLimit)
    if status in limits:
        if not has_solution:
            raise SelectionError(
                f"HiGHS found no selection within the time limit of {time_limit:g} s; raise --time-limit"
            )
        return SolveResult("feasible", values, objective, float(info.mip_gap), "highs")
    raise _HighsUnavailable(f"HiGHS ended with {highs.modelStatusToString(status)}")


def _solve_pulp(model: Model, solver: Solver, *, time_limit: float, abs_gap: float, rel_gap: float) -> SolveResult:
    with warnings.catch_warnings():  # pulp 3.3 warns about its 4.0 API on every variable and on CBC
        warnings.simplefilter("ignore", DeprecationWarning)
        return _solve_pulp_quietly(model, solver, time_limit=time_limit, abs_gap=abs_gap, rel_gap=rel_gap)


def _solve_pulp_quietly(
    model: Model, solver: Solver, *, time_limit: float, abs_gap: float, rel_gap: float
) -> SolveResult:
    import pulp

    a = model.arrays()
    problem = pulp.LpProblem("selection", pulp.LpMinimize)
    columns = [
        pulp.LpVariable(
            f"c{k}",
            lowBound=None if math.isinf(lo) else lo,
            upBound=None if math.isinf(hi) else hi,
            cat=pulp.LpInteger if integer else pulp.LpContinuous,
        )
        for k, (lo, hi, integer) in enumerate(
            zip(a["lower"].tolist(), a["upper"].tolist(), a["integer"].tolist(), strict=True)
        )
    ]
    cost = a["cost"].tolist()
    problem += pulp.LpAffineExpression([(columns[k], c) for k, c in enumerate(cost) if c != 0])
    starts, index, value = a["starts"].tolist(), a["index"].tolist(), a["value"].tolist()
    for r, (lo, hi) in enumerate(zip(a["row_lower"].tolist(), a["row_upper"].tolist(), strict=True)):
        expr = pulp.LpAffineExpression([(columns[index[k]], value[k]) for k in range(starts[r], starts[r + 1])])
        if lo == hi:
            problem += expr == lo
            continue
        if not math.isinf(lo):
            problem += expr >= lo
        if not math.isinf(hi):
            problem += expr <= hi
    options: dict[str, Any] = {"msg": False, "timeLimit": time_limit, "gapRel": rel_gap, "gapAbs": abs_gap}
    backend = pulp.HiGHS(**options) if solver == "pulp-highs" else pulp.PULP_CBC_CMD(**options)
    try:
        problem.solve(backend)
    except pulp.PulpSolverError as error:
        raise SelectionError(f"the {solver} solver failed: {error}") from error
    name = "pulp-highs" if solver == "pulp-highs" else "cbc"
    if problem.status == pulp.LpStatusInfeasible:
        return SolveResult("infeasible", np.zeros(model.num_cols), math.nan, math.nan, name)
    values = np.array([v.varValue if v.varValue is not None else 0.0 for v in columns], dtype=np.float64)
    objective = float(pulp.value(problem.objective) or 0.0)
    if problem.status == pulp.LpStatusOptimal and problem.sol_status == pulp.LpSolutionOptimal:
        return SolveResult("optimal", values, objective, 0.0, name)
    if problem.sol_status == pulp.LpSolutionIntegerFeasible:
        return SolveResult("feasible", values, objective, math.nan, name)
    raise SelectionError(
        f"the {name} solver found no selection within {time_limit:g} s (status {pulp.LpStatus[problem.status]})"
    )
