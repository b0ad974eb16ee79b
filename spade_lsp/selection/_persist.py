"""Selection in the store: the latest evaluation run as a selection input, subsumption pairs and selections,
through the repository in :mod:`spade_lsp.store` (each write one transaction there)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spade_lsp.errors import InputError, StoreError
from spade_lsp.selection._matrix import (
    ORIGINS,
    SelectionInput,
    Subsumption,
    eval_run_input,
    not_applicable_cells,
)
from spade_lsp.selection._select import Selection
from spade_lsp.store import (
    SelectionRecord,
    Store,
    load_subsumption_rows,
    newest_finished_eval_run,
    save_selection_record,
    save_subsumption_rows,
)


@dataclass(frozen=True)
class StoredRun:
    eval_run_id: int
    problem: SelectionInput
    error_cells: int
    unlabelled: int


def latest_eval_run(store: Store, prompt_id: int, *, prompt: str) -> StoredRun:
    """The newest finished evaluation run of a prompt as a selection input. Error cells count as failures;
    unlabelled examples are kept only for the empirical subsumption filter."""
    row = newest_finished_eval_run(store, prompt_id)
    if row is None:
        raise InputError(f"{prompt}: no finished evaluation run to select from; run `spade eval` first")
    run_id, assertions, y, m, cell_errors = row.id, row.assertions, row.y, row.m, row.errors
    try:
        assertions, m, waiting = _without_model_checks(json.loads(assertions), json.loads(m), cell_errors)
        if waiting and not assertions:
            raise InputError(
                f"{prompt}: every assertion of evaluation run {run_id} needs a model ({', '.join(waiting)}), so "
                "there is nothing to select from; configure an assistant model, or add checks that need none"
            )
        skipped = _not_applicable(assertions, row.examples, cell_errors)
        problem, errors = eval_run_input(
            assertions, json.loads(y), m, source=f"{prompt}: evaluation run {run_id}", not_applicable=skipped
        )
    except json.JSONDecodeError as error:
        raise StoreError(f"evaluation run {run_id} holds invalid JSON: {error}") from error
    unlabelled = int((problem.labels == -1).sum())
    notes = []
    if waiting:
        notes.append(
            f"left out {len(waiting)} assertion(s) that need a model and have none: {', '.join(waiting)} "
            "(they are not failures; configure an assistant model to use them)"
        )
    if errors:
        notes.append(f"{errors} cell(s) of evaluation run {run_id} were errors; they count as failures")
    if skipped:
        notes.append(
            f"{len(skipped)} cell(s) where a check does not apply (the example lacks an input it reads) flag nothing"
        )
    if unlabelled:
        notes.append(f"{unlabelled} unlabelled example(s) excluded from coverage and FFR")
    problem = SelectionInput(problem.assertions, problem.fails, problem.labels, problem.subsumptions, tuple(notes))
    return StoredRun(int(run_id), problem, errors, unlabelled)


def _without_model_checks(assertions: Any, m: Any, cell_errors: str | None) -> tuple[Any, Any, list[str]]:
    """The run without the assertions that could not run for want of a model (an ``ask_llm`` with none
    configured): their cells are no verdict, so counting them as failures would make every selection fail."""
    waiting = sorted(
        {
            str(e.get("assertion"))
            for e in (json.loads(cell_errors) if cell_errors else [])
            if isinstance(e, dict) and e.get("kind") == "needs_model"
        }
    )
    if not waiting or not isinstance(assertions, list) or not isinstance(m, list):
        return assertions, m, []
    keep = [j for j, a in enumerate(assertions) if not (isinstance(a, dict) and a.get("name") in waiting)]
    rows = [[row[j] for j in keep] if isinstance(row, list) and len(row) == len(assertions) else row for row in m]
    return [assertions[j] for j in keep], rows, waiting


def _not_applicable(assertions: Any, examples: str, cell_errors: str | None) -> set[tuple[int, int]]:
    names = [str(a.get("name")) for a in assertions if isinstance(a, dict)] if isinstance(assertions, list) else []
    ids = json.loads(examples) if examples else []
    errors = json.loads(cell_errors) if cell_errors else []
    if not isinstance(ids, list) or not isinstance(errors, list):
        return set()
    return not_applicable_cells([e for e in errors if isinstance(e, dict)], [str(i) for i in ids], names)


def load_subsumptions(store: Store, prompt_id: int, names: Sequence[str]) -> list[Subsumption]:
    """Stored pairs of a prompt between assertions that still exist."""
    known = set(names)
    rows = load_subsumption_rows(store, prompt_id)
    return [Subsumption(a, b, origin) for a, b, origin in rows if a in known and b in known and origin in ORIGINS]


def save_subsumptions(store: Store, prompt_id: int, pairs: Sequence[Subsumption]) -> None:
    """Store a prompt's pairs in one transaction; a pair already stored is kept."""
    save_subsumption_rows(store, prompt_id, [(pair.subsumer, pair.subsumed, pair.origin) for pair in pairs])


def save_selection(
    store: Store,
    selection: Selection,
    *,
    source: str,
    parameters: Mapping[str, Any],
    prompt_id: int | None = None,
    eval_run_id: int | None = None,
) -> int:
    """Store a selection with the parameters that produced it; returns its id."""
    record = SelectionRecord(
        source=source,
        method=selection.method,
        tau=selection.tau,
        alpha=selection.alpha,
        parameters=parameters,
        selected=list(selection.selected),
        coverage=selection.coverage,
        ffr=selection.ffr,
        status=selection.status,
        excluded_not_subsumed=list(selection.excluded_not_subsumed),
        solve_seconds=selection.solve_seconds,
        prompt_id=prompt_id,
        eval_run_id=eval_run_id,
    )
    return save_selection_record(store, record)
