"""Review records of LLM-written assertion code: ``generated_code`` (which functions an LLM wrote, by the
sha256 of their text) and ``code_reviews`` (the exact texts the user accepted). What they mean is
:mod:`spade_lsp._review`'s."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from spade_lsp.errors import StoreError
from spade_lsp.store._database import Store
from spade_lsp.store._prompt_index import prompt_id, recorded_prompt_id

__all__ = ["ReviewRecords", "record_acceptances", "record_generated_code", "review_records"]


@dataclass(frozen=True, slots=True)
class ReviewRecords:
    """One prompt's records: ``written`` name -> (sha as the LLM wrote it, model); ``accepted`` name -> shas."""

    written: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    accepted: dict[str, set[str]] = field(default_factory=dict)


def review_records(store: Store, key: str) -> ReviewRecords:
    """The LLM records and acceptances of the prompt recorded under ``key`` (none when it is not recorded);
    :class:`StoreError` when the store cannot be read (one being replaced, say)."""
    try:
        return _review_records(store, key)
    except sqlite3.Error as error:
        raise StoreError(f"cannot read the review records: {error}") from error


def _review_records(store: Store, key: str) -> ReviewRecords:
    pid = prompt_id(store, key)
    if pid is None:
        return ReviewRecords()
    written = {
        str(name): (str(sha), model)
        for name, sha, model in store.db.execute(
            "SELECT name, sha, model FROM generated_code WHERE prompt_id = ?", [pid]
        ).fetchall()
    }
    accepted: dict[str, set[str]] = {}
    for name, sha in store.db.execute("SELECT name, sha FROM code_reviews WHERE prompt_id = ?", [pid]).fetchall():
        accepted.setdefault(str(name), set()).add(str(sha))
    return ReviewRecords(written, accepted)


def record_generated_code(
    store: Store,
    key: str,
    written: Mapping[str, str],
    *,
    dropped: Iterable[str] = (),
    synthesizer: str,
    model: str | None,
    at: str,
) -> None:
    """In one transaction: ``written`` (name -> sha) now hold code ``synthesizer`` wrote; ``dropped`` names lose
    their record. Raises :class:`InputError` when the prompt is not recorded."""
    with store.write() as db:
        pid = recorded_prompt_id(store, key)
        for name in dropped:
            db.execute("DELETE FROM generated_code WHERE prompt_id = ? AND name = ?", [pid, name])
        for name, sha in written.items():
            db.execute(
                "INSERT INTO generated_code (prompt_id, name, sha, synthesizer, model, written_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (prompt_id, name) DO UPDATE SET "
                "sha = excluded.sha, synthesizer = excluded.synthesizer, model = excluded.model, "
                "written_at = excluded.written_at",
                [pid, name, sha, synthesizer, model, at],
            )


def record_acceptances(store: Store, key: str, items: Sequence[tuple[str, str]], *, by: str, at: str) -> None:
    """Record that ``by`` accepted each ``(name, sha)`` (an acceptance already recorded is kept)."""
    with store.write() as db:
        pid = recorded_prompt_id(store, key)
        for name, sha in items:
            db.execute(
                "INSERT OR IGNORE INTO code_reviews (prompt_id, name, sha, accepted_at, accepted_by) "
                "VALUES (?, ?, ?, ?, ?)",
                [pid, name, sha, at, by],
            )
