"""Evaluation runs (``eval_runs``): the pass matrix of a sidecar module's assertions on the examples."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spade_lsp._columns import json_pieces
from spade_lsp.errors import StoreError
from spade_lsp.store._database import Store
from spade_lsp.store._prompt_index import recorded_prompt_id

__all__ = ["StoredEvalRun", "insert_eval_run", "stored_eval_run"]


@dataclass(frozen=True, slots=True)
class StoredEvalRun:
    """The stored columns of one run, decoded."""

    run_id: int
    assertions: list[dict[str, Any]]
    examples: list[str]
    y: list[int | None]
    m: list[list[int | None]]
    errors: list[dict[str, Any]]
    seconds: float


def insert_eval_run(
    store: Store,
    key: str,
    *,
    started_at: str,
    finished_at: str,
    module_hash: str,
    examples_hash: str,
    parameters: dict[str, Any],
    assertions: list[dict[str, Any]],
    examples: Sequence[str],
    y: Sequence[int | None],
    m: Sequence[Sequence[int | None]],
    errors: list[dict[str, Any]],
    seconds: float,
) -> int:
    """Store a finished run of the prompt recorded under ``key``; returns its id. The per-example columns are
    written into their row in pieces (SQLite's incremental I/O): a run of a million examples never has its
    whole JSON text in memory, once here and again in SQLite's record."""
    columns = {"examples": examples, "y": y, "m": m}
    lengths = [sum(len(piece) for piece in json_pieces(values)) for values in columns.values()]
    with store.write() as db:
        pid = recorded_prompt_id(store, key)
        cursor = db.execute(
            "INSERT INTO eval_runs (prompt_id, started_at, finished_at, status, module_hash, examples_hash, parameters,"
            " assertions, examples, y, m, errors, seconds) VALUES (?, ?, ?, 'done', ?, ?, ?, ?,"
            " CAST(zeroblob(?) AS TEXT), CAST(zeroblob(?) AS TEXT), CAST(zeroblob(?) AS TEXT), ?, ?)",
            [
                pid,
                started_at,
                finished_at,
                module_hash,
                examples_hash,
                json.dumps(parameters),
                json.dumps(assertions),
                *lengths,
                json.dumps(errors),
                seconds,
            ],
        )
        run_id = int(cursor.lastrowid or 0)
        for name, values in columns.items():
            with db.conn.blobopen("eval_runs", name, run_id) as text:
                for piece in json_pieces(values):
                    text.write(piece)
        return run_id


def stored_eval_run(store: Store, run_id: int) -> StoredEvalRun:
    """A stored run; :class:`StoreError` when there is none by that id."""
    row = store.db.execute(
        "SELECT assertions, examples, y, m, errors, seconds FROM eval_runs WHERE id = ?", [run_id]
    ).fetchone()
    if row is None:
        raise StoreError(f"evaluation run {run_id} is not in the store")
    assertions, examples, y, m, errors, seconds = row
    return StoredEvalRun(
        run_id,
        json.loads(assertions),
        json.loads(examples),
        json.loads(y),
        json.loads(m or "[]"),
        json.loads(errors or "[]"),
        float(seconds or 0.0),
    )
