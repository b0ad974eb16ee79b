"""The LLM layer's tables: the response cache (``llm_cache``), what structured-output mode each endpoint takes
(``llm_capabilities``) and the provider batches with the cache keys each answers (``llm_batches``,
``llm_batch_keys``).

A cached response is stored as the JSON ``{"text": ...}``; the functions here take and give the text. Every
write is one :meth:`Store.write` transaction: answers are cached together with what the capability learnt, a
batch's answers together with closing its row, and a batch row is inserted (with its keys) in the transaction
that checked no open row holds those keys, so two processes never submit the same key twice.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from spade_lsp.store._database import Store

__all__ = [
    "ClaimedLLMBatches",
    "LLMBatchState",
    "NewLLMBatch",
    "OpenLLMBatch",
    "StoredCapability",
    "SubmittedLLMBatch",
    "cached_responses",
    "claim_llm_batches",
    "close_llm_batch_lost",
    "collect_llm_batch",
    "delete_llm_batch",
    "llm_batch_state",
    "llm_cache_size",
    "load_capability",
    "model_responses",
    "save_responses",
    "submitted_llm_batches",
    "take_over_llm_batch",
    "update_llm_batch",
]

#: keys per ``IN (...)`` query (SQLite's host parameter limit is far above; this keeps statements small)
_CHUNK: Final = 500
_CACHE_INSERT: Final = "INSERT OR REPLACE INTO llm_cache (key, model, response, created_at) VALUES (?, ?, ?, ?)"
_FULL_CHUNK_SELECT: Final = f"SELECT key, response FROM llm_cache WHERE key IN ({','.join('?' * _CHUNK)})"


def _now() -> str:
    return datetime.now(UTC).isoformat()


# -- the response cache -----------------------------------------------------------------------------------------


def cached_responses(store: Store, keys: Sequence[str]) -> dict[str, str]:
    """The cached text of each of ``keys`` the cache holds (``keys`` without duplicates)."""
    found: dict[str, str] = {}
    execute = store.db.conn.execute
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start : start + _CHUNK]
        sql = (
            _FULL_CHUNK_SELECT
            if len(chunk) == _CHUNK
            else f"SELECT key, response FROM llm_cache WHERE key IN ({','.join('?' * len(chunk))})"
        )
        for key, response in execute(sql, chunk).fetchall():
            found[key] = str(json.loads(response)["text"])
    return found


@dataclass(frozen=True, slots=True)
class StoredCapability:
    """The structured-output mode an endpoint and model takes (``json_schema``, ``json_object`` or ``prompt``)
    and why: the answer or the rejection that settled it. ``api_base`` is ``''`` for the provider's own."""

    api_base: str
    model: str
    structured_mode: str
    reason: str


def load_capability(store: Store, api_base: str, model: str) -> StoredCapability | None:
    """What the store learnt of ``(api_base, model)``, or None."""
    row = store.db.conn.execute(
        "SELECT structured_mode, reason FROM llm_capabilities WHERE api_base = ? AND model = ?", [api_base, model]
    ).fetchone()
    return None if row is None else StoredCapability(api_base, model, str(row[0]), str(row[1]))


def save_responses(
    store: Store, model: str, entries: Sequence[tuple[str, str]], *, capability: StoredCapability | None = None
) -> None:
    """Cache ``entries`` (key, text) as ``model``'s answers and store ``capability``, in one transaction."""
    now = _now()
    with store.write() as db:
        db.conn.executemany(_CACHE_INSERT, [(key, model, json.dumps({"text": text}), now) for key, text in entries])
        if capability is not None:
            db.conn.execute(
                "INSERT OR REPLACE INTO llm_capabilities (api_base, model, structured_mode, reason, updated_at)"
                " VALUES (?, ?, ?, ?, ?)",
                [capability.api_base, capability.model, capability.structured_mode, capability.reason, now],
            )


def llm_cache_size(store: Store, model: str) -> tuple[int, int]:
    """How many answers of ``model`` the cache holds, and their size (keys and responses, in characters)."""
    count, size = store.db.conn.execute(
        "SELECT count(*), coalesce(sum(length(key) + length(response)), 0) FROM llm_cache WHERE model = ?", [model]
    ).fetchone()
    return int(count), int(size)


def model_responses(store: Store, model: str) -> dict[str, str]:
    """Every cached answer of ``model``: key -> text (a response that cannot be read is left out)."""
    rows = store.db.conn.execute("SELECT key, response FROM llm_cache WHERE model = ?", [model]).fetchall()
    cached: dict[str, str] = {}
    for key, response in rows:
        with contextlib.suppress(ValueError, TypeError, KeyError):
            cached[str(key)] = str(json.loads(response)["text"])
    return cached


# -- provider batches --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SubmittedLLMBatch:
    """An open batch row the provider accepted (it has a batch id)."""

    id: int
    batch_id: str
    model: str


@dataclass(slots=True)
class OpenLLMBatch:
    """An open batch row holding some of the keys a claim asked for (``keys``: those of them it holds)."""

    id: int
    batch_id: str | None
    input_file_id: str | None
    status: str
    keys: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class NewLLMBatch:
    """A row a claim inserted (status ``uploading``) with its keys."""

    id: int
    digest: str
    keys: Sequence[str]


@dataclass(frozen=True, slots=True)
class ClaimedLLMBatches:
    """What :func:`claim_llm_batches` found open and what it inserted."""

    open: list[OpenLLMBatch]
    new: list[NewLLMBatch]


@dataclass(frozen=True, slots=True)
class LLMBatchState:
    """One batch row as stored now."""

    batch_id: str | None
    input_file_id: str | None
    status: str
    updated_at: str
    collected_at: str | None


def submitted_llm_batches(store: Store, endpoint: str) -> list[SubmittedLLMBatch]:
    """The open rows of ``endpoint`` that have a batch id, oldest first."""
    rows = store.db.conn.execute(
        "SELECT id, batch_id, model FROM llm_batches WHERE collected_at IS NULL AND batch_id IS NOT NULL "
        "AND endpoint = ? ORDER BY id",
        [endpoint],
    ).fetchall()
    return [SubmittedLLMBatch(int(row_id), str(batch_id), str(model)) for row_id, batch_id, model in rows]


def claim_llm_batches(
    store: Store,
    keys: Sequence[str],
    *,
    model: str,
    endpoint: str,
    lease_s: float,
    lost_error: str,
    split: Callable[[list[str]], Sequence[tuple[str, Sequence[str]]]],
) -> ClaimedLLMBatches:
    """In one transaction: the open rows holding any of ``keys``; a row with neither batch id nor upload whose
    lease (``lease_s``) ran out is closed as 'lost' (with ``lost_error``: its process died uploading) and left
    out; then the keys no remaining row holds are ``split`` into (digest, chunk) and each chunk inserted as a
    row (status 'uploading') with its keys. Two processes claiming the same keys never both insert them."""
    rows: dict[int, OpenLLMBatch] = {}
    lost: list[int] = []
    with store.write() as db:
        conn = db.conn
        stale = (datetime.now(UTC) - timedelta(seconds=lease_s)).isoformat()
        for start in range(0, len(keys), _CHUNK):
            part = keys[start : start + _CHUNK]
            marks = ",".join("?" * len(part))
            found = conn.execute(
                "SELECT b.id, b.batch_id, b.input_file_id, b.status, b.updated_at, k.key FROM llm_batch_keys k "
                f"JOIN llm_batches b ON b.id = k.batch_row WHERE b.collected_at IS NULL AND k.key IN ({marks})",
                part,
            ).fetchall()
            for row_id, batch_id, file_id, status, updated_at, key in found:
                row = rows.get(int(row_id))
                if row is None:
                    row = rows[int(row_id)] = OpenLLMBatch(int(row_id), batch_id, file_id, str(status))
                    if not batch_id and not file_id and str(updated_at) < stale:
                        lost.append(row.id)
                row.keys.add(str(key))
        now = _now()
        for row_id in lost:
            conn.execute(
                "UPDATE llm_batches SET status = 'lost', error = ?, updated_at = ?, collected_at = ? WHERE id = ?",
                [lost_error, now, now, row_id],
            )
        dead = set(lost)
        live = [row for row in rows.values() if row.id not in dead]
        covered = {key for row in live for key in row.keys}
        new: list[NewLLMBatch] = []
        for digest, chunk in split([key for key in keys if key not in covered]):
            cursor = conn.execute(
                "INSERT INTO llm_batches (digest, model, endpoint, requested, status, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, 'uploading', ?, ?)",
                [digest, model, endpoint, len(chunk), now, now],
            )
            row_id = int(cursor.lastrowid or 0)
            conn.executemany("INSERT INTO llm_batch_keys (batch_row, key) VALUES (?, ?)", [(row_id, k) for k in chunk])
            new.append(NewLLMBatch(row_id, digest, chunk))
    return ClaimedLLMBatches(live, new)


def delete_llm_batch(store: Store, row_id: int) -> None:
    """Forget a row (and its keys) whose upload failed: nothing of it was accepted."""
    with store.write() as db:
        db.conn.execute("DELETE FROM llm_batch_keys WHERE batch_row = ?", [row_id])
        db.conn.execute("DELETE FROM llm_batches WHERE id = ?", [row_id])


def llm_batch_state(store: Store, row_id: int) -> LLMBatchState | None:
    """Row ``row_id`` as stored now, or None when there is none."""
    found = store.db.conn.execute(
        "SELECT batch_id, input_file_id, status, updated_at, collected_at FROM llm_batches WHERE id = ?", [row_id]
    ).fetchone()
    if found is None:
        return None
    batch_id, file_id, status, updated_at, collected_at = found
    return LLMBatchState(batch_id, file_id, str(status), str(updated_at), collected_at)


def take_over_llm_batch(store: Store, row_id: int, *, status: str, updated_at: str) -> bool:
    """Mark an open row without a batch id as being submitted by this process, only if it is still as read
    (``status``, ``updated_at``): True when this process took it, False when another one did first."""
    with store.write() as db:
        taken = db.conn.execute(
            "UPDATE llm_batches SET status = 'submitting', updated_at = ? WHERE id = ? AND status = ? "
            "AND updated_at = ? AND batch_id IS NULL AND collected_at IS NULL",
            [_now(), row_id, status, updated_at],
        ).rowcount
    return bool(taken)


def update_llm_batch(
    store: Store,
    row_id: int,
    *,
    status: str | None = None,
    input_file_id: str | None = None,
    batch_id: str | None = None,
    completed: int | None = None,
    failed: int | None = None,
    error: str | None = None,
    submitted: bool = False,
) -> None:
    """Set the given columns of a row (None: unchanged; ``submitted``: the provider accepted it now)."""
    now = _now()
    values: dict[str, str | int] = {
        name: value
        for name, value in (
            ("input_file_id", input_file_id),
            ("batch_id", batch_id),
            ("status", status),
            ("completed", completed),
            ("failed", failed),
            ("error", error),
            ("submitted_at", now if submitted else None),
        )
        if value is not None
    }
    columns = "".join(f"{name} = ?, " for name in values)
    with store.write() as db:
        db.conn.execute(f"UPDATE llm_batches SET {columns}updated_at = ? WHERE id = ?", [*values.values(), now, row_id])


def close_llm_batch_lost(store: Store, row_id: int, error: str) -> None:
    """Close a row whose batch will never answer: its keys are submitted again by the next claim."""
    now = _now()
    with store.write() as db:
        db.conn.execute(
            "UPDATE llm_batches SET status = 'lost', error = ?, updated_at = ?, collected_at = ? WHERE id = ?",
            [error, now, now, row_id],
        )


def collect_llm_batch(
    store: Store,
    row_id: int,
    *,
    model: str,
    entries: Sequence[tuple[str, str]],
    status: str,
    completed: int,
    failed: int,
    error: str | None,
) -> None:
    """Cache a final batch's ``entries`` (key, text) as ``model``'s answers and close its row, in one
    transaction: a run resumed after this finds the answers cached, one resumed before finds the row open."""
    now = _now()
    with store.write() as db:
        db.conn.executemany(_CACHE_INSERT, [(key, model, json.dumps({"text": text}), now) for key, text in entries])
        db.conn.execute(
            "UPDATE llm_batches SET status = ?, completed = ?, failed = ?, error = ?, updated_at = ?, "
            "collected_at = ? WHERE id = ?",
            [status, completed, failed, error, now, now, row_id],
        )
