"""A store whose pages are damaged, whatever query meets the damage first: one line and the fix, never a
traceback. The header's damage is caught when the store opens (:class:`~spade_lsp.store.Store`); damage
further in surfaces later, as SQLite's "database disk image is malformed" from any query, or as text that is
no longer UTF-8 when a row is read."""

from __future__ import annotations

import sqlite3
import traceback
from pathlib import Path

from spade_lsp.errors import StoreError
from spade_lsp.store._paths import STORE_DIR, STORE_FILE

__all__ = ["store_damage"]

_STORE_CODE = str(Path(__file__).parent)


def _raised_in_the_store(error: BaseException) -> bool:
    frames = traceback.extract_tb(error.__traceback__)
    return any(f.filename.startswith(_STORE_CODE) or "sqlite_utils" in f.filename for f in frames)


def store_damage(error: BaseException, root: Path | None = None) -> StoreError | None:
    """The one-line error for ``error`` when it is the store's damage (else None): a SQLite database error that
    is not a lock, or undecodable text read by the store's code."""
    if isinstance(error, StoreError):
        return None  # already said in one line
    damaged = isinstance(error, sqlite3.DatabaseError) and not _is_lock(error)
    damaged = damaged or (isinstance(error, UnicodeDecodeError) and _raised_in_the_store(error))
    if not damaged:
        return None
    path = (root / STORE_DIR / STORE_FILE) if root is not None else Path(STORE_DIR) / STORE_FILE
    reason = str(error).splitlines()[0] if str(error) else type(error).__name__
    return StoreError(
        f"{path} is damaged ({reason}); it was left untouched: move it aside (e.g. `mv {path} {path}.bad`) and "
        "spade re-creates it from your files and git history"
    )


def _is_lock(error: sqlite3.DatabaseError) -> bool:
    text = str(error).lower()
    return "locked" in text or "busy" in text
