"""A prompt's key in the store (its path relative to the workspace root), and the error every database read
may raise. Light on purpose (no sqlite-utils): the language server imports it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

#: Every error reading or writing the database raises (a locked, replaced or older store): readers that show
#: what they can catch it without importing sqlite3 themselves.
DatabaseError = sqlite3.Error


def prompt_key(root: Path, prompt: Path) -> str:
    """The prompt's id in the store: its path relative to the workspace root, with / separators (its absolute
    path, for a prompt outside the root)."""
    resolved = prompt.resolve()
    try:
        return resolved.relative_to(root.resolve()).as_posix()
    except ValueError:
        return resolved.as_posix()
