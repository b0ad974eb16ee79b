"""Selections in the store (migration ``0003_selection``: tables ``selections`` and ``subsumptions``), and the
evaluation run a selection is made from (``eval_runs``, read only here).

Every write is one :meth:`Store.write` transaction. The JSON columns are returned as stored: decoding them into
a selection problem is the selection package's business.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spade_lsp.store._database import Store

__all__ = [
    "EvalRunRow",
    "SelectionRecord",
    "load_subsumption_rows",
    "newest_finished_eval_run",
    "newest_selected",
    "newest_selections",
    "save_selection_record",
    "save_subsumption_rows",
]


def _now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass(frozen=True, slots=True)
class EvalRunRow:
    """A finished evaluation run's matrix, as stored (JSON text): assertions, labels ``y``, the pass matrix
    ``m``, the cell errors (None when there were none) and the example ids, the rows' names."""

    id: int
    assertions: str
    y: str
    m: str
    errors: str | None
    examples: str


def newest_finished_eval_run(store: Store, prompt_id: int) -> EvalRunRow | None:
    """The prompt's newest evaluation run that finished with a matrix, or None."""
    row = store.db.execute(
        "SELECT id, assertions, y, m, errors, examples FROM eval_runs WHERE prompt_id = ? AND status = 'done' "
        "AND m IS NOT NULL ORDER BY id DESC LIMIT 1",
        [prompt_id],
    ).fetchone()
    if row is None:
        return None
    return EvalRunRow(int(row[0]), row[1], row[2], row[3], row[4], row[5])


def load_subsumption_rows(store: Store, prompt_id: int) -> list[tuple[str, str, str]]:
    """The prompt's stored subsumption pairs (subsumer, subsumed, origin), oldest first."""
    rows = store.db.execute(
        "SELECT subsumer, subsumed, origin FROM subsumptions WHERE prompt_id = ? ORDER BY id", [prompt_id]
    ).fetchall()
    return [(str(a), str(b), str(origin)) for a, b, origin in rows]


def save_subsumption_rows(store: Store, prompt_id: int, pairs: Iterable[tuple[str, str, str]]) -> None:
    """Store pairs (subsumer, subsumed, origin) of a prompt, in one transaction; a known pair is kept."""
    with store.write() as db:
        for subsumer, subsumed, origin in pairs:
            db.execute(
                "INSERT OR IGNORE INTO subsumptions (prompt_id, subsumer, subsumed, origin, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [prompt_id, subsumer, subsumed, origin, _now()],
            )


@dataclass(frozen=True, slots=True)
class SelectionRecord:
    """A selection as stored, with the parameters that produced it."""

    source: str  # 'eval_run' or the matrix file's path
    method: str
    tau: float
    alpha: float
    parameters: Mapping[str, Any]
    selected: Sequence[str]
    coverage: float | None
    ffr: float | None
    status: str
    excluded_not_subsumed: Sequence[str]
    solve_seconds: float | None
    prompt_id: int | None = None  # None for a --matrix file
    eval_run_id: int | None = None


def save_selection_record(store: Store, record: SelectionRecord) -> int:
    """Store a selection; returns its id."""
    with store.write() as db:
        cursor = db.execute(
            "INSERT INTO selections (prompt_id, eval_run_id, source, method, tau, alpha, parameters, selected, "
            "coverage, ffr, status, excluded_not_subsumed, solve_seconds, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                record.prompt_id,
                record.eval_run_id,
                record.source,
                record.method,
                record.tau,
                record.alpha,
                json.dumps(dict(record.parameters), sort_keys=True),
                json.dumps(list(record.selected)),
                record.coverage,
                record.ffr,
                record.status,
                json.dumps(list(record.excluded_not_subsumed)),
                record.solve_seconds,
                _now(),
            ],
        )
        return int(cursor.lastrowid or 0)


def _names(text: str | None) -> list[str]:
    """A stored list of names; anything unreadable is no names."""
    try:
        loaded = json.loads(text) if text is not None else []
    except (TypeError, ValueError):
        loaded = []
    return [str(name) for name in loaded] if isinstance(loaded, list) else []


def newest_selected(store: Store, prompt_key: str) -> list[str] | None:
    """The names the prompt's newest selection chose, or None when it has no selection."""
    row = store.db.execute(
        "SELECT s.selected FROM selections s JOIN prompts p ON p.id = s.prompt_id WHERE p.path = ? "
        "ORDER BY s.id DESC LIMIT 1",
        [prompt_key],
    ).fetchone()
    return None if row is None else _names(row[0])


def newest_selections(store: Store) -> dict[str, list[str]]:
    """Prompt key -> the names its newest selection chose, for every prompt with a selection."""
    rows = store.db.execute(
        "SELECT p.path, s.selected FROM selections s JOIN prompts p ON p.id = s.prompt_id "
        "WHERE s.id = (SELECT max(id) FROM selections WHERE prompt_id = s.prompt_id) ORDER BY p.path"
    ).fetchall()
    return {str(path): _names(selected) for path, selected in rows}
