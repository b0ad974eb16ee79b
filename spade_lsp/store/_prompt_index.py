"""The ``prompts`` and ``versions`` tables as other tables' owners and the daemon look them up: a prompt's row
id by its key, the keys recorded, a prompt's version count. (Recording versions is the history's.)"""

from __future__ import annotations

from spade_lsp.errors import InputError
from spade_lsp.store._database import Store

__all__ = ["prompt_id", "recorded_prompt_id", "recorded_prompt_keys", "version_count"]


def prompt_id(store: Store, key: str) -> int | None:
    """The row id of the prompt recorded under ``key`` (its path relative to the workspace), or None."""
    row = store.db.execute("SELECT id FROM prompts WHERE path = ?", [key]).fetchone()
    return int(row[0]) if row else None


def recorded_prompt_id(store: Store, key: str) -> int:
    """:func:`prompt_id`, or :class:`InputError` when the prompt was never recorded (what is stored about a
    prompt hangs on its row)."""
    pid = prompt_id(store, key)
    if pid is None:
        raise InputError(f"{key}: not recorded in the store yet; save the prompt first")
    return pid


def recorded_prompt_keys(store: Store) -> list[str]:
    """Every prompt key the store knows."""
    return [str(row[0]) for row in store.db.execute("SELECT path FROM prompts")]


def version_count(store: Store, key: str) -> int:
    """How many versions the prompt recorded under ``key`` has (0: none, or not recorded)."""
    row = store.db.execute(
        "SELECT COUNT(*) FROM versions JOIN prompts ON prompts.id = versions.prompt_id WHERE prompts.path = ?",
        [key],
    ).fetchone()
    return int(row[0]) if row else 0
