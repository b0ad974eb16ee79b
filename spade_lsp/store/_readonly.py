"""The store, opened read-only, without loading numpy.

``spade_lsp.store._database`` builds on sqlite-utils, which imports numpy (and pandas) at import time when they are
installed, only to map their scalar types to column types; a reader never needs that. Importing it with
those two marked missing keeps numpy (about 15 MB and 30 ms) out of the language server; sqlite-utils treats
them as optional and carries on. The marks are removed right after, so nothing else is affected.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from spade_lsp.errors import SpadeError

if TYPE_CHECKING:
    from spade_lsp.store._database import Store

_BLOCKED = ("numpy", "pandas")


def _store_module() -> type[Store]:
    if "spade_lsp.store._database" not in sys.modules:
        marked = [name for name in _BLOCKED if name not in sys.modules]
        for name in marked:
            sys.modules[name] = None  # type: ignore[assignment]  # "import numpy" now raises ImportError
        try:
            import spade_lsp.store._database  # noqa: F401
        finally:
            for name in marked:
                if sys.modules.get(name, 0) is None:
                    del sys.modules[name]
    from spade_lsp.store._database import Store

    return Store


def open_readonly(root: Path) -> tuple[Store | None, str | None]:
    """The workspace's store opened read-only, or (None, why) while it does not exist or cannot be read yet
    (the daemon creates and migrates it; the caller tries again later)."""
    store_class = _store_module()
    try:
        return store_class.open_readonly(root, busy_timeout_s=0.5), None
    except (SpadeError, sqlite3.Error, OSError) as error:
        return None, str(error)


def data_version(store: Store) -> int | None:
    """Changes whenever another connection (the daemon) commits: the cheap "did the store change" test."""
    try:
        row = store.db.execute("PRAGMA data_version").fetchone()
    except sqlite3.Error:
        return None
    return int(row[0]) if row else None
