"""Reading stored sampling runs and comparisons: light (no numpy), so the language server can read a report too."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from spade_lsp.errors import InputError

if TYPE_CHECKING:
    from spade_lsp.store import Store  # sqlite-utils would import numpy into the language server


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


def stored_comparison(store: Store, prompt_key: str) -> dict[str, Any] | None:
    """The prompt's newest comparison document (``spade compare``), or None."""
    row = store.db.execute(
        "SELECT c.document FROM comparisons c JOIN prompts p ON p.id = c.prompt_id WHERE p.path = ? "
        "ORDER BY c.id DESC LIMIT 1",
        [prompt_key],
    ).fetchone()
    return None if row is None else cast("dict[str, Any]", json.loads(row[0]))
