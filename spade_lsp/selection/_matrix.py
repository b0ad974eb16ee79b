"""Selection input: assertions, the pass matrix, labels and declared subsumption pairs, validated.

Why a separate module: every entry point (a ``--matrix`` file, a stored evaluation run, tests) funnels
through :func:`matrix_from_json` or :class:`SelectionInput`, so bad input is refused with one clear
:class:`~spade_lsp.errors.InputError` before any solver runs.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from spade_lsp._inputs import read_json_file
from spade_lsp.errors import InputError

Origin = Literal["static", "llm", "user"]
ORIGINS: Final[tuple[Origin, ...]] = ("static", "llm", "user")
GOOD: Final = 1
BAD: Final = 0
UNLABELLED: Final = -1

BoolMatrix = npt.NDArray[np.bool_]
Labels = npt.NDArray[np.int8]


@dataclass(frozen=True, slots=True)
class AssertionSpec:
    """What selection needs to know of one assertion: its name, cost (LLM tokens; 0 for plain code) and,
    for generated checks, the ``check`` spec static subsumption reasons about."""

    name: str
    cost: float = 0.0
    check: Mapping[str, Any] | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Subsumption:
    """``subsumer`` catches every failure ``subsumed`` catches. ``origin``: who said so."""

    subsumer: str
    subsumed: str
    origin: Origin = "user"


@dataclass(frozen=True)
class SelectionInput:
    """One selection problem. ``fails[i, j]`` is True when assertion j fails example i (the complement of
    SPADE's M); ``labels[i]`` is 1 good, 0 bad, -1 unlabelled (unlabelled rows only feed the empirical
    subsumption filter)."""

    assertions: tuple[AssertionSpec, ...]
    fails: BoolMatrix
    labels: Labels
    subsumptions: tuple[Subsumption, ...] = ()
    notes: tuple[str, ...] = ()
    index: Mapping[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        names = [a.name for a in self.assertions]
        if len(set(names)) != len(names):
            duplicate = next(n for n in names if names.count(n) > 1)
            raise InputError(f"assertion {duplicate!r} appears more than once")
        if self.fails.ndim != 2 or self.fails.shape[1] != len(names):
            raise InputError(
                f"the matrix has {self.fails.shape[1] if self.fails.ndim == 2 else '?'} columns "
                f"but there are {len(names)} assertions"
            )
        if self.labels.shape != (self.fails.shape[0],):
            raise InputError(f"there are {self.labels.shape[0]} labels but {self.fails.shape[0]} matrix rows")
        if not np.isin(self.labels, (GOOD, BAD, UNLABELLED)).all():
            raise InputError("labels must be 1 (good), 0 (bad) or null (unlabelled)")
        for a in self.assertions:
            if not math.isfinite(a.cost) or a.cost < 0:
                raise InputError(f"assertion {a.name!r}: cost must be a finite number >= 0, got {a.cost!r}")
        object.__setattr__(self, "index", {name: j for j, name in enumerate(names)})
        for pair in self.subsumptions:
            for name in (pair.subsumer, pair.subsumed):
                if name not in self.index:
                    raise InputError(f"subsumption pair names an unknown assertion {name!r}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.assertions)

    def rows(self, keep: npt.NDArray[np.bool_] | npt.NDArray[np.intp]) -> SelectionInput:
        """The same problem on a subset of the examples (cross-validation folds, label edits)."""
        return SelectionInput(self.assertions, self.fails[keep], self.labels[keep], self.subsumptions, self.notes)

    def with_labels(self, labels: Labels) -> SelectionInput:
        return SelectionInput(self.assertions, self.fails, labels, self.subsumptions, self.notes)

    def with_subsumptions(self, extra: Sequence[Subsumption]) -> SelectionInput:
        return SelectionInput(self.assertions, self.fails, self.labels, (*self.subsumptions, *extra), self.notes)


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{what} must be a number, got {value!r}")
    number = float(value)
    if math.isnan(number):
        raise InputError(f"{what} is NaN; give a finite number >= 0 (0 for assertions that ask no LLM)")
    return number


def _cell(value: Any, *, row: int, col: int, allow_null: bool) -> bool | None:
    if value is None and allow_null:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    raise InputError(f"M[{row}][{col}] must be 0 or 1, got {value!r}")


def assertions_from_json(items: Any, *, where: str = "assertions") -> tuple[AssertionSpec, ...]:
    """Assertion dicts (``name``, optional ``cost``, ``check``, ``description``) as specs."""
    if not isinstance(items, list):
        raise InputError(f"{where} must be a list of objects with a `name`")
    out: list[AssertionSpec] = []
    for j, item in enumerate(items):
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not item["name"]:
            raise InputError(f"{where}[{j}] must be an object with a non-empty string `name`")
        cost = _number(item.get("cost", 0.0) if item.get("cost") is not None else 0.0, f"{where}[{j}].cost")
        check = item.get("check")
        if check is not None and not isinstance(check, Mapping):
            raise InputError(f"{where}[{j}].check must be an object or null")
        description = item.get("description") or item.get("sentence")
        out.append(
            AssertionSpec(
                name=item["name"],
                cost=cost,
                check=dict(check) if check is not None else None,
                description=str(description) if description is not None else None,
            )
        )
    return tuple(out)


def _pairs(raw: Any, assertions: Sequence[AssertionSpec]) -> tuple[Subsumption, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError("K must be a list of [subsumer, subsumed] pairs")
    names = [a.name for a in assertions]
    out: list[Subsumption] = []
    for p, pair in enumerate(raw):
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise InputError(f"K[{p}] must be a pair [i, j] (assertion i subsumes assertion j)")
        ends: list[str] = []
        for end in pair:
            if isinstance(end, int) and not isinstance(end, bool):
                if not 0 <= end < len(names):
                    raise InputError(f"K[{p}] names assertion {end}, but there are {len(names)} (0-based)")
                ends.append(names[end])
            elif isinstance(end, str) and end in names:
                ends.append(end)
            else:
                raise InputError(f"K[{p}]: {end!r} is neither an assertion index nor an assertion name")
        if ends[0] != ends[1]:  # "a subsumes a" says nothing
            out.append(Subsumption(ends[0], ends[1], "user"))
    return tuple(out)


def matrix_from_json(data: Any, *, source: str = "matrix") -> SelectionInput:
    """Validate a ``spade select --matrix`` document (the matrix contract) into a :class:`SelectionInput`.

    ``M[i][j]`` 1 = assertion j passes example i; ``y[i]`` 1 good, 0 bad, null unlabelled; ``K`` pairs of
    indices (or names). Every problem is an :class:`InputError` prefixed with ``source``.
    """
    try:
        if not isinstance(data, Mapping):
            raise InputError("expected a JSON object with `assertions`, `M` and `y`")
        for key in ("assertions", "M", "y"):
            if key not in data:
                raise InputError(f"missing `{key}`")
        assertions = assertions_from_json(data["assertions"])
        raw_m, raw_y = data["M"], data["y"]
        if not isinstance(raw_m, list) or not all(isinstance(row, list) for row in raw_m):
            raise InputError("`M` must be a list of rows (one per example), each a list of 0/1")
        if not isinstance(raw_y, list):
            raise InputError("`y` must be a list of labels (1 good, 0 bad)")
        if len(raw_y) != len(raw_m):
            raise InputError(f"shapes disagree: `M` has {len(raw_m)} rows but `y` has {len(raw_y)} labels")
        n = len(assertions)
        fails = np.zeros((len(raw_m), n), dtype=np.bool_)
        for i, row in enumerate(raw_m):
            if len(row) != n:
                raise InputError(f"shapes disagree: M[{i}] has {len(row)} cells but there are {n} assertions")
            for j, value in enumerate(row):
                fails[i, j] = not _cell(value, row=i, col=j, allow_null=False)
        labels = np.full(len(raw_y), UNLABELLED, dtype=np.int8)
        for i, label in enumerate(raw_y):
            if label is None:
                continue
            if isinstance(label, bool) or label not in (0, 1):
                raise InputError(f"y[{i}] must be 1 (good) or 0 (bad), got {label!r}")
            labels[i] = int(label)
        return SelectionInput(assertions, fails, labels, _pairs(data.get("K"), assertions))
    except InputError as error:
        raise InputError(f"{source}: {error}") from error


def load_matrix_file(path: Path) -> SelectionInput:
    """Read and validate a matrix file; errors name the file."""
    data = read_json_file(path)
    return matrix_from_json(data, source=str(path))


def not_applicable_cells(
    errors: Iterable[Mapping[str, Any]], examples: Sequence[str], names: Sequence[str]
) -> set[tuple[int, int]]:
    """(row, column) of an evaluation's ``not_applicable`` cells (a check reading an input the example lacks),
    from its cell errors, which name the example and the assertion."""
    cells = [e for e in errors if e.get("kind") == "not_applicable"]
    if not cells:
        return set()
    wanted = {str(e.get("example")) for e in cells}  # an index of these rows only: a run may hold a million
    row = {example: i for i, example in enumerate(examples) if example in wanted}
    column = {name: j for j, name in enumerate(names)}
    return {
        (row[str(e.get("example"))], column[str(e.get("assertion"))])
        for e in cells
        if str(e.get("example")) in row and str(e.get("assertion")) in column
    }


def _is_rows(value: object) -> bool:
    """A JSON array as loaded, or a run's column held in memory (any sequence that is not text)."""
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def eval_run_input(
    assertions: Any,
    y: Any,
    m: Any,
    *,
    source: str = "evaluation run",
    not_applicable: Collection[tuple[int, int]] = (),
) -> tuple[SelectionInput, int]:
    """A stored evaluation run (JSON columns of ``eval_runs``) as a selection input.

    Error cells (null in ``m``) count as failures, as a broken assertion would flag the output in production;
    the number of such cells is returned so the caller can say so. A ``not_applicable`` cell (row, column) is
    null too, but flags nothing: the check does not apply to that example, so it neither catches a bad one nor
    falsely fails a good one.
    """
    specs = assertions_from_json(assertions, where=f"{source}: assertions")
    if not _is_rows(y) or not _is_rows(m) or len(y) != len(m):
        raise InputError(f"{source}: labels and matrix rows disagree")
    fails = np.zeros((len(m), len(specs)), dtype=np.bool_)
    errors = 0
    for i, row in enumerate(m):
        if not _is_rows(row) or len(row) != len(specs):
            raise InputError(f"{source}: matrix row {i} does not have {len(specs)} cells")
        for j, value in enumerate(row):
            cell = _cell(value, row=i, col=j, allow_null=True)
            if cell is None and (i, j) in not_applicable:
                continue
            if cell is None:
                errors += 1
            fails[i, j] = not cell
    labels = np.array([UNLABELLED if v is None else int(v) for v in y], dtype=np.int8)
    return SelectionInput(specs, fails, labels), errors
