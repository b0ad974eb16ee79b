"""A per-user cache of the offline synthesizer's readings of single sentences (the plans behind each instruction's
hint: "Add assertion writes ..."), so a prompt opened again, in any process, is not read sentence by sentence
again. On a 2,000-sentence prompt that reading is most of the language server's start.

It lives outside every workspace (``$SPADE_PLAN_CACHE``, else ``$XDG_CACHE_HOME/spade-lsp/plans.sqlite``, else
``~/.cache/spade-lsp/plans.sqlite``; ``SPADE_PLAN_CACHE=off`` turns it off), so a cloned repository cannot put
words in its hints. Rows are keyed by the reading's inputs and by a fingerprint of the code that reads them: a
changed synthesizer never reads an old row, and the first write under a new fingerprint drops the old ones.

A cache, never a source of truth: any error reading or writing it (a locked, unwritable or damaged file) turns it
off for the process, and every plan is computed as if it were not there. It uses :mod:`sqlite3` directly: two
statements on the language server's start-up path, which sqlite-utils' import (numpy) would slow.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final

log = logging.getLogger(__name__)

PLAN_CACHE_ENV: Final = "SPADE_PLAN_CACHE"
_OFF: Final = frozenset({"", "0", "off", "no", "none", "false"})
#: Keys looked up per statement (well under SQLite's limit on bound parameters).
_CHUNK: Final = 500
#: Rows past which the cache starts again empty (a few hundred bytes each: about 100 MB at most).
MAX_ROWS: Final = 400_000
_TIMEOUT_S: Final = 0.2


def plan_cache_path() -> Path | None:
    """Where the cache lives, or None when ``SPADE_PLAN_CACHE`` turns it off."""
    explicit = os.environ.get(PLAN_CACHE_ENV)
    if explicit is not None:
        return None if explicit.strip().lower() in _OFF else Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "spade-lsp" / "plans.sqlite"


class PlanCache:
    """Plans (JSON text) by key, for one fingerprint of the code that computes them."""

    def __init__(self, path: Path, fingerprint: str) -> None:
        self.path = path
        self.fingerprint = fingerprint
        self._connection: sqlite3.Connection | None = None
        self._broken = False
        self._pruned = False
        self._lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection | None:
        if self._broken:
            return None
        if self._connection is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                connection = sqlite3.connect(
                    self.path, timeout=_TIMEOUT_S, isolation_level=None, check_same_thread=False
                )
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute("PRAGMA synchronous=NORMAL")
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS plans (fingerprint TEXT NOT NULL, key TEXT NOT NULL,"
                    " plan TEXT NOT NULL, PRIMARY KEY (fingerprint, key)) WITHOUT ROWID"
                )
            except (sqlite3.Error, OSError) as error:
                self._give_up(error)
                return None
            self._connection = connection
        return self._connection

    def _give_up(self, error: BaseException) -> None:
        log.info("the plan cache %s is off for this process: %s", self.path, error)
        self._broken = True
        if self._connection is not None:
            with contextlib.suppress(sqlite3.Error):
                self._connection.close()
            self._connection = None

    def get_many(self, keys: Iterable[str]) -> dict[str, str]:
        """The stored plans of those keys that have one."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, str] = {}
        with self._lock:
            connection = self._connect()
            if connection is None:
                return found
            try:
                for start in range(0, len(wanted), _CHUNK):
                    chunk = wanted[start : start + _CHUNK]
                    marks = ",".join("?" * len(chunk))
                    rows = connection.execute(
                        f"SELECT key, plan FROM plans WHERE fingerprint = ? AND key IN ({marks})",
                        (self.fingerprint, *chunk),
                    )
                    found.update((str(key), str(plan)) for key, plan in rows)
            except sqlite3.Error as error:
                self._give_up(error)
                return {}
        return found

    def put_many(self, plans: Mapping[str, str]) -> None:
        """Store these plans (one transaction); the first write of a process drops other fingerprints' rows."""
        if not plans:
            return
        with self._lock:
            connection = self._connect()
            if connection is None:
                return
            try:
                connection.execute("BEGIN IMMEDIATE")
                try:
                    if not self._pruned:
                        connection.execute("DELETE FROM plans WHERE fingerprint != ?", (self.fingerprint,))
                        (rows,) = connection.execute("SELECT count(*) FROM plans").fetchone()
                        if rows > MAX_ROWS:
                            connection.execute("DELETE FROM plans")
                    connection.executemany(
                        "INSERT OR REPLACE INTO plans (fingerprint, key, plan) VALUES (?, ?, ?)",
                        [(self.fingerprint, key, plan) for key, plan in plans.items()],
                    )
                    connection.execute("COMMIT")
                except BaseException:
                    connection.execute("ROLLBACK")
                    raise
                self._pruned = True
            except sqlite3.OperationalError as error:
                if "locked" in str(error) or "busy" in str(error):  # another process is writing: skip this write
                    log.debug("the plan cache is busy; not storing %d plans", len(plans))
                else:
                    self._give_up(error)
            except sqlite3.Error as error:
                self._give_up(error)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._connection.close()
                self._connection = None


_current: PlanCache | None = None
_current_lock = threading.Lock()


def plan_cache(fingerprint: str) -> PlanCache | None:
    """The process's cache for ``fingerprint`` at the configured path (None when turned off); opened again when
    the configured path changes."""
    global _current
    path = plan_cache_path()
    if path is None:
        return None
    with _current_lock:
        if _current is None or _current.path != path or _current.fingerprint != fingerprint:
            if _current is not None:
                _current.close()
            _current = PlanCache(path, fingerprint)
        return _current
