"""Persistence: the workspace's SQLite store (``.spade/spade.db``), its schema, and one repository per table
family. This package is the only place that holds SQL or touches the database; everything else reads and
writes through the names exported here.

Names load on first use: :class:`Store` builds on sqlite-utils, which imports numpy, and the language server
only ever opens the store read-only (:func:`open_readonly`) without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from spade_lsp.store._paths import STORE_DIR, STORE_FILE

if TYPE_CHECKING:
    from spade_lsp.store._database import DEFAULT_BUSY_TIMEOUT_S, Store
    from spade_lsp.store._readonly import data_version, open_readonly

__all__ = [
    "DEFAULT_BUSY_TIMEOUT_S",
    "STORE_DIR",
    "STORE_FILE",
    "Store",
    "data_version",
    "open_readonly",
]

#: name -> the private module that defines it (imported on first use).
_LAZY: dict[str, str] = {
    "DEFAULT_BUSY_TIMEOUT_S": "_database",
    "Store": "_database",
    "data_version": "_readonly",
    "open_readonly": "_readonly",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
