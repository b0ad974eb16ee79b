"""What the editor's read model (:mod:`spade_lsp.overview`) reads besides the history: a prompt's newest
evaluation run, its newest selection, its newest finished sampling run's headline figures and the newest
comparison of a version. Rows come back with their JSON columns as stored; the overview decodes them.

Light on purpose (no sqlite-utils at import): the language server reads through it. A store from before a
table existed (the daemon migrates it) reads as having no such rows.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from spade_lsp.store._database import Store


class EvalRunSummaryRow(NamedTuple):
    """A finished evaluation run with its matrix (JSON columns as stored)."""

    id: int
    finished_at: str | None
    module_hash: str
    assertions: str
    y: str
    m: str
    errors: str | None
    seconds: float | None
    examples: str


class SelectionRow(NamedTuple):
    """A stored selection (``selected``: the JSON list of names as stored)."""

    id: int
    eval_run_id: int | None
    method: str
    tau: float
    alpha: float
    selected: str
    coverage: float | None
    ffr: float | None
    status: str
    created_at: str


class ReliabilityRow(NamedTuple):
    """The headline of a finished sampling run, read with SQLite's JSON functions (the tensor in its document
    is never loaded): P_pass measured with its interval, the confidence, and the failing checks (JSON list)."""

    run_id: int
    version: int | None
    model: str
    p_pass: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float | None
    finished_at: str | None
    failing: str | None


def _rows(store: Store, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    return list(store.db.execute(sql, params).fetchall())


def newest_eval_run(store: Store, prompt_id: int, run_id: int | None = None) -> EvalRunSummaryRow | None:
    """The prompt's newest evaluation run that finished with a matrix (or run ``run_id``, if it did)."""
    sql = (
        "SELECT id, finished_at, module_hash, assertions, y, m, errors, seconds, examples FROM eval_runs "
        "WHERE prompt_id = ? AND status = 'done' AND m IS NOT NULL "
    )
    params: list[Any] = [prompt_id]
    if run_id is not None:
        sql += "AND id = ? "
        params.append(run_id)
    rows = _rows(store, sql + "ORDER BY id DESC LIMIT 1", params)
    if not rows:
        return None
    row = rows[0]
    return EvalRunSummaryRow(int(row[0]), row[1], str(row[2]), row[3], row[4], row[5], row[6], row[7], row[8])


def newest_selection(store: Store, prompt_id: int) -> SelectionRow | None:
    """The prompt's newest selection."""
    rows = _rows(
        store,
        "SELECT id, eval_run_id, method, tau, alpha, selected, coverage, ffr, status, created_at FROM selections "
        "WHERE prompt_id = ? ORDER BY id DESC LIMIT 1",
        [prompt_id],
    )
    if not rows:
        return None
    sid, run_id, method, tau, alpha, selected, coverage, ffr, status, created_at = rows[0]
    return SelectionRow(
        int(sid),
        int(run_id) if run_id is not None else None,
        str(method),
        float(tau),
        float(alpha),
        selected,
        coverage,
        ffr,
        str(status),
        str(created_at),
    )


def newest_reliability(store: Store, prompt_id: int) -> ReliabilityRow | None:
    """The headline of the prompt's newest finished sampling run."""
    try:
        rows = _rows(
            store,
            "SELECT id, version, model, json_extract(document, '$.p_pass.measured.rate'), "
            "json_extract(document, '$.p_pass.measured.ci_low'), json_extract(document, '$.p_pass.measured.ci_high'), "
            "json_extract(document, '$.confidence'), finished_at, (SELECT json_group_array(json_extract(v.value, "
            "'$.name')) FROM json_each(document, '$.validators') v WHERE json_extract(v.value, '$.verdict') = 'fail') "
            "FROM sample_runs WHERE prompt_id = ? AND status = 'done' ORDER BY id DESC LIMIT 1",
            [prompt_id],
        )
    except sqlite3.OperationalError:
        return None  # a store from before sampling existed (the daemon migrates it)
    if not rows:
        return None
    run_id, version, model, rate, low, high, confidence, finished_at, failing = rows[0]
    return ReliabilityRow(
        int(run_id),
        None if version is None else int(version),
        str(model),
        rate,
        low,
        high,
        confidence,
        finished_at,
        failing,
    )


def newest_comparison_document(store: Store, prompt_id: int, candidate_version: int) -> str | None:
    """The JSON document of the newest comparison whose candidate is version ``candidate_version``."""
    try:
        rows = _rows(
            store,
            "SELECT document FROM comparisons WHERE prompt_id = ? AND candidate_version = ? ORDER BY id DESC LIMIT 1",
            [prompt_id, candidate_version],
        )
    except sqlite3.OperationalError:
        return None  # a store from before comparisons existed (the daemon migrates it)
    return str(rows[0][0]) if rows else None
