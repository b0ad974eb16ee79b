"""Paired comparisons of sampled variants (``comparisons``), as the editor's lens and the report read them."""

from __future__ import annotations

import json
from typing import Any

from spade_lsp.store._database import Store
from spade_lsp.store._prompt_index import recorded_prompt_id

__all__ = ["insert_comparison"]


def insert_comparison(
    store: Store,
    key: str,
    *,
    kind: str,
    baseline_run_id: int,
    candidate_version: int | None,
    document: dict[str, Any],
    created_at: str,
) -> int:
    """Store a comparison document of the prompt recorded under ``key``; returns its id."""
    with store.write() as db:
        pid = recorded_prompt_id(store, key)
        cursor = db.execute(
            "INSERT INTO comparisons (prompt_id, kind, baseline_run_id, candidate_version, document, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [pid, kind, baseline_run_id, candidate_version, json.dumps(document), created_at],
        )
        return int(cursor.lastrowid or 0)
