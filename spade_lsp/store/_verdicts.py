"""Candidate verdicts (``candidate_verdicts``): how each synthesized check did on the prompt's labelled examples
before it was offered (see :mod:`spade_lsp._precheck`).

The reader is light (no sqlite-utils at import): the language server reads the verdicts for its hints, and a
store from before the table existed reads as having none.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spade_lsp.store._database import Store

__all__ = ["candidate_verdicts", "save_candidate_verdicts"]


def save_candidate_verdicts(store: Store, key: str, verdicts: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
    """Store ``(code_sha, verdict JSON)`` pairs for the prompt recorded under ``key``, in one transaction; a
    check's newer verdict replaces its older one."""
    from spade_lsp.store._prompt_index import recorded_prompt_id

    now = datetime.now(UTC).isoformat()
    with store.write() as db:
        pid = recorded_prompt_id(store, key)
        for sha, verdict in verdicts:
            held_back = verdict.get("held_back")
            db.execute(
                "INSERT OR REPLACE INTO candidate_verdicts (prompt_id, code_sha, name, sentence, verdict, held_back, "
                "checked_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [pid, sha, str(verdict["name"]), str(verdict["sentence"]), json.dumps(verdict), held_back, now],
            )


def candidate_verdicts(store: Store, prompt_id: int) -> dict[str, dict[str, Any]]:
    """code_sha -> the newest verdict (JSON decoded) of each check of the prompt."""
    try:
        rows = store.db.execute(
            "SELECT code_sha, verdict FROM candidate_verdicts WHERE prompt_id = ?", [prompt_id]
        ).fetchall()
    except sqlite3.OperationalError:
        return {}  # a store from before verdicts were kept (the daemon migrates it)
    out: dict[str, dict[str, Any]] = {}
    for sha, verdict in rows:
        try:
            decoded = json.loads(verdict)
        except ValueError:
            continue
        if isinstance(decoded, dict):
            out[str(sha)] = decoded
    return out
