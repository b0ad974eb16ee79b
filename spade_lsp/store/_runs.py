"""Runs in the store: sampling runs (tables ``sample_runs``, ``sample_outputs``, ``sample_results``), judge runs
(``judge_runs``, ``judgements``), and the comparisons ``spade compare`` stores, read back for reports.

A sampling run is started before its first call, each round's outputs and results are written in one transaction
as the round finishes (killing the process loses no acknowledged round), and the run is finished with its
document. A judge run is the same: started, its judgements written in batches as they arrive, finished with the
report. Each write is one :meth:`Store.write` transaction.

Light on purpose: the language server reads documents and note histories through it, so it imports nothing but
the standard library at run time (the store itself, built on sqlite-utils, only for type checking).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, Protocol, cast

from spade_lsp.errors import InputError
from spade_lsp.store._owners import process_owner

if TYPE_CHECKING:
    from spade_lsp.store._database import Store

__all__ = [
    "JudgeRunKind",
    "Judgement",
    "SampleOutputRow",
    "SampleResultRow",
    "SampledOutputs",
    "StoredAnswer",
    "finish_judge_run",
    "finish_sample_run",
    "latest_sampled_outputs",
    "note_history",
    "recent_sampled_outputs",
    "sampled_outputs_of_run",
    "save_judgements",
    "save_sample_round",
    "start_judge_run",
    "start_sample_run",
    "stored_comparison",
    "stored_document",
]


def _now() -> str:
    return datetime.now(UTC).isoformat()


# -- sampling runs ----------------------------------------------------------------------------------------------


class SampleOutputRow(NamedTuple):
    """One output of a sampling run: input ``input``'s ``sample``-th output, or the error that took its place."""

    input: int
    sample: int
    output: str | None
    error: str | None
    cached: bool
    prompt_tokens: int
    completion_tokens: int
    cost: float | None


class SampleResultRow(NamedTuple):
    """One cell of the reliability tensor: validator ``validator`` on an output (1 pass, 0 fail, None an error)."""

    input: int
    sample: int
    validator: int
    passed: int | None
    error: str | None


def start_sample_run(
    store: Store,
    *,
    prompt_id: int,
    version: int | None,
    model: str,
    parameters: Mapping[str, Any],
    inputs: Sequence[str],
    validators: Sequence[Mapping[str, Any]],
    started_at: str,
) -> int:
    """Record a running sampling run; returns its id."""
    with store.write() as db:
        cursor = db.execute(
            "INSERT INTO sample_runs (prompt_id, version, model, status, parameters, inputs, validators, "
            "started_at, owner) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?)",
            [
                prompt_id,
                version,
                model,
                json.dumps(dict(parameters)),
                json.dumps(list(inputs)),
                json.dumps([dict(v) for v in validators]),
                started_at,
                process_owner(),
            ],
        )
        return int(cursor.lastrowid or 0)


def save_sample_round(
    store: Store, run_id: int, outputs: Sequence[SampleOutputRow], results: Sequence[SampleResultRow]
) -> None:
    """One round's outputs and validation results, in one transaction."""
    with store.write() as db:
        db.conn.executemany(
            "INSERT OR REPLACE INTO sample_outputs (run_id, input, sample, output, error, cached, prompt_tokens, "
            "completion_tokens, cost) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    run_id,
                    o.input,
                    o.sample,
                    o.output,
                    o.error,
                    int(o.cached),
                    o.prompt_tokens,
                    o.completion_tokens,
                    o.cost,
                )
                for o in outputs
            ],
        )
        db.conn.executemany(
            "INSERT OR REPLACE INTO sample_results (run_id, input, sample, validator, passed, error) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(run_id, *row) for row in results],
        )


def finish_sample_run(
    store: Store, run_id: int, *, status: str, document: Mapping[str, Any] | None = None, error: str | None = None
) -> None:
    """Mark a sampling run ``status`` (done, failed, cancelled) with its document or error."""
    with store.write() as db:
        db.execute(
            "UPDATE sample_runs SET status = ?, document = ?, error = ?, finished_at = ? WHERE id = ?",
            [status, None if document is None else json.dumps(document), error, _now(), run_id],
        )


def stored_document(store: Store, prompt_key: str, *, run_id: int | None = None) -> dict[str, Any] | None:
    """The document of a finished run: ``run_id`` (an :class:`InputError` when it is missing or unfinished),
    else the prompt's newest finished run, or None when it has none."""
    if run_id is not None:
        row = store.db.execute("SELECT document, status FROM sample_runs WHERE id = ?", [run_id]).fetchone()
        if row is None:
            raise InputError(f"sampling run {run_id} is not in the store")
        if row[0] is None:
            raise InputError(f"sampling run {run_id} did not finish ({row[1]})")
        return cast("dict[str, Any]", json.loads(row[0]))
    row = store.db.execute(
        "SELECT r.document FROM sample_runs r JOIN prompts p ON p.id = r.prompt_id "
        "WHERE p.path = ? AND r.status = 'done' ORDER BY r.id DESC LIMIT 1",
        [prompt_key],
    ).fetchone()
    return None if row is None else cast("dict[str, Any]", json.loads(row[0]))


@dataclass(frozen=True, slots=True)
class SampledOutputs:
    """The outputs of one finished sampling run: (input index, sample, output) in order."""

    run_id: int
    version: int | None
    model: str
    inputs: list[str]  # the example ids, by input index
    outputs: list[tuple[int, int, str]]


def _sampled_outputs(store: Store, run: Sequence[Any]) -> SampledOutputs:
    run_id = int(run[0])
    rows = store.db.execute(
        "SELECT input, sample, output FROM sample_outputs WHERE run_id = ? AND output IS NOT NULL "
        "ORDER BY input, sample",
        [run_id],
    ).fetchall()
    return SampledOutputs(
        run_id=run_id,
        version=None if run[1] is None else int(run[1]),
        model=str(run[2]),
        inputs=[str(value) for value in json.loads(run[3])],
        outputs=[(int(index), int(sample), str(output)) for index, sample, output in rows],
    )


_FINISHED_RUNS: Final = (
    "SELECT r.id, r.version, r.model, r.inputs FROM sample_runs r JOIN prompts p ON p.id = r.prompt_id "
    "WHERE p.path = ? AND r.status = 'done'"
)


def latest_sampled_outputs(store: Store, prompt_key: str) -> SampledOutputs | None:
    """Every output (not the errors) of the prompt's newest finished sampling run, or None without one."""
    row = store.db.execute(_FINISHED_RUNS + " ORDER BY r.id DESC LIMIT 1", [prompt_key]).fetchone()
    return None if row is None else _sampled_outputs(store, row)


def sampled_outputs_of_run(store: Store, prompt_key: str, run_id: int) -> SampledOutputs | None:
    """The outputs of one finished sampling run of this prompt, or None when it is not one."""
    row = store.db.execute(_FINISHED_RUNS + " AND r.id = ?", [prompt_key, run_id]).fetchone()
    return None if row is None else _sampled_outputs(store, row)


def recent_sampled_outputs(store: Store, prompt_key: str, *, limit: int) -> list[SampledOutputs]:
    """The newest finished run of each (version, model) the prompt was sampled with, newest first, at most
    ``limit``: the two sides of a comparison, or the versions a user sampled in turn, side by side."""
    rows = store.db.execute(
        _FINISHED_RUNS + " AND r.id IN (SELECT MAX(id) FROM sample_runs WHERE status = 'done' "
        "GROUP BY prompt_id, version, model) ORDER BY r.id DESC LIMIT ?",
        [prompt_key, limit],
    ).fetchall()
    return [_sampled_outputs(store, row) for row in rows]


def models_sampled(store: Store, *, limit: int = 8) -> list[str]:
    """The models the workspace's sampling runs used, the most recently used first: what a model picker offers
    besides the configured ones."""
    rows = store.db.execute(
        "SELECT model FROM sample_runs GROUP BY model ORDER BY MAX(id) DESC LIMIT ?", [limit]
    ).fetchall()
    return [str(row[0]) for row in rows]


def stored_comparison(store: Store, prompt_key: str) -> dict[str, Any] | None:
    """The prompt's newest comparison document (``spade compare``), or None."""
    row = store.db.execute(
        "SELECT c.document FROM comparisons c JOIN prompts p ON p.id = c.prompt_id WHERE p.path = ? "
        "ORDER BY c.id DESC LIMIT 1",
        [prompt_key],
    ).fetchone()
    return None if row is None else cast("dict[str, Any]", json.loads(row[0]))


# -- judge runs -------------------------------------------------------------------------------------------------

JudgeRunKind = Literal["pipeline", "grading", "test", "noise"]


class StoredAnswer(Protocol):
    """What a stored judgement keeps of a judge's answer (:class:`spade_lsp.judges.Answer` is one)."""

    @property
    def value(self) -> Any: ...
    @property
    def explanation(self) -> str | None: ...
    @property
    def problem(self) -> str | None: ...
    @property
    def detail(self) -> str | None: ...
    @property
    def attempts(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Judgement:
    """One stored answer: which item, which judge, which of the judge's samples."""

    item: str
    judge: str
    answer: StoredAnswer
    sample: int = 0
    note: str | None = None


def start_judge_run(
    store: Store,
    *,
    kind: JudgeRunKind,
    name: str,
    parameters: Mapping[str, Any],
    prompt_id: int | None = None,
    version: int | None = None,
    model: str | None = None,
) -> int:
    """Record a running judge run; returns its id."""
    with store.write() as db:
        cursor = db.execute(
            "INSERT INTO judge_runs (prompt_id, kind, name, version, model, status, parameters, started_at, owner) "
            "VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?)",
            [prompt_id, kind, name, version, model, json.dumps(dict(parameters)), _now(), process_owner()],
        )
        return int(cursor.lastrowid or 0)


def save_judgements(store: Store, run_id: int, judgements: Iterable[Judgement]) -> None:
    """A batch of a judge run's judgements, in one transaction (nothing to write: no transaction)."""
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


def finish_judge_run(
    store: Store, run_id: int, *, status: str, document: Mapping[str, Any] | None = None, error: str | None = None
) -> None:
    """Mark a judge run ``status`` (done, failed, cancelled) with its document or error."""
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
