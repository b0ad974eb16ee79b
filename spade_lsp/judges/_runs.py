"""Judge runs in the store (tables ``judge_runs`` and ``judgements``): started before the first call, their
judgements written in batches as they arrive, finished with the report. Each write is a transaction."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # the language server reads note histories: keep its imports to the standard library
    from spade_lsp.judges._ask import Answer
    from spade_lsp.store import Store

__all__ = ["Judgement", "RunKind", "finish_run", "note_history", "save_judgements", "start_run"]

RunKind = Literal["pipeline", "grading", "test", "noise"]


@dataclass(frozen=True, slots=True)
class Judgement:
    """One stored answer: which item, which judge, which of the judge's samples."""

    item: str
    judge: str
    answer: Answer
    sample: int = 0
    note: str | None = None


def _now() -> str:
    return datetime.now(UTC).isoformat()


def start_run(
    store: Store,
    *,
    kind: RunKind,
    name: str,
    parameters: Mapping[str, Any],
    prompt_id: int | None = None,
    version: int | None = None,
    model: str | None = None,
) -> int:
    with store.write() as db:
        cursor = db.execute(
            "INSERT INTO judge_runs (prompt_id, kind, name, version, model, status, parameters, started_at) "
            "VALUES (?, ?, ?, ?, ?, 'running', ?, ?)",
            [prompt_id, kind, name, version, model, json.dumps(dict(parameters)), _now()],
        )
        return int(cursor.lastrowid or 0)


def save_judgements(store: Store, run_id: int, judgements: Iterable[Judgement]) -> None:
    rows = [
        (
            run_id,
            j.item,
            j.judge,
            j.sample,
            None if j.answer.value is None else json.dumps(j.answer.value),
            j.answer.explanation,
            j.answer.problem,
            j.answer.detail,
            j.answer.attempts,
            j.note,
        )
        for j in judgements
    ]
    if not rows:
        return
    with store.write() as db:
        db.conn.executemany(
            "INSERT OR REPLACE INTO judgements (run_id, item, judge, sample, value, explanation, problem, detail, "
            "attempts, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )


def finish_run(
    store: Store, run_id: int, *, status: str, document: Mapping[str, Any] | None = None, error: str | None = None
) -> None:
    with store.write() as db:
        db.execute(
            "UPDATE judge_runs SET status = ?, document = ?, error = ?, finished_at = ? WHERE id = ?",
            [status, None if document is None else json.dumps(document), error, _now(), run_id],
        )


def note_history(store: Store, prompt_id: int, item: str, *, limit: int = 20) -> list[dict[str, Any]]:
    """The grading-note judgements of one example, newest first: run, time, judge, value, explanation, note."""
    rows = store.db.execute(
        "SELECT r.id, r.finished_at, r.model, r.version, j.judge, j.value, j.explanation, j.problem, j.note "
        "FROM judgements j JOIN judge_runs r ON r.id = j.run_id "
        "WHERE r.prompt_id = ? AND r.kind = 'grading' AND r.status = 'done' AND j.item = ? "
        "ORDER BY r.id DESC, j.judge LIMIT ?",
        [prompt_id, item, limit],
    ).fetchall()
    return [
        {
            "run_id": row[0],
            "finished_at": row[1],
            "model": row[2],
            "version": row[3],
            "judge": row[4],
            "value": None if row[5] is None else json.loads(row[5]),
            "explanation": row[6],
            "problem": row[7],
            "note": row[8],
        }
        for row in rows
    ]
