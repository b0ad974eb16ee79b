"""Who runs a sampling or judge run, and settling the runs whose process is gone.

A run is written ``running`` when it starts and ended by the process that runs it. That process may be killed
(SIGKILL, a crash, a closed terminal) with no daemon to notice. Each run therefore records its owner, this
host's name, the process id and the process's start time (``/proc/PID/stat``, so a recycled pid is not taken
for the owner), and every entry point that opens the workspace for writing settles the runs whose owner is no
longer alive: they end ``failed`` with the reason, and what they stored (outputs, judgements, the LLM cache)
stays for the next run to reuse.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from spade_lsp.store._database import Store

__all__ = ["INTERRUPTED", "RESUME_HINTS", "SettledRun", "owner_alive", "process_owner", "settle_orphaned_runs"]

#: What a settled run's ``error`` says, with its table's hint of what to do.
INTERRUPTED: Final = "interrupted: the process running it stopped (killed or crashed) before it finished"
RESUME_HINTS: Final = {
    "sample_runs": "; sampling again resumes from the LLM cache",
    "judge_runs": "; judging again reuses the cached answers",
}


@dataclass(frozen=True, slots=True)
class SettledRun:
    table: str
    run_id: int
    owner: str


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat``, field 22), or None when there is
    no such process (or no /proc), or it has exited: a killed process stays a zombie until its parent reaps it
    (an editor that spawned the daemon may never), and a zombie runs nothing."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # the command name may hold spaces and parentheses
    if len(fields) <= 19 or fields[0] in ("Z", "X"):
        return None
    return fields[19]


@cache
def process_owner() -> str:
    """This process as a run's owner: ``host:pid:start``."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid()) or '?'}"


def owner_alive(owner: str) -> bool:
    """Whether the owner process may still run: true for another host's (which cannot be asked) and for an
    owner this host cannot check."""
    host, _, rest = owner.partition(":")
    pid, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit() or start == "?":
        return True
    if not os.path.isdir("/proc"):
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return False
        except OSError:
            return True
        return True
    return _start_time(int(pid)) == start


def settle_orphaned_runs(store: Store) -> list[SettledRun]:
    """End, in one transaction, the runs left ``running`` by a process of this host that is gone; the runs
    settled, for the caller to say so."""
    settled: list[SettledRun] = []
    now = datetime.now(UTC).isoformat()
    rows = [
        (table, int(run_id), str(owner))
        for table in RESUME_HINTS
        for run_id, owner in store.db.execute(
            f"SELECT id, owner FROM {table} WHERE status = 'running' AND owner IS NOT NULL"
        ).fetchall()
    ]
    gone = [SettledRun(table, run_id, owner) for table, run_id, owner in rows if not owner_alive(owner)]
    if not gone:
        return []
    with store.write() as db:
        for run in gone:
            cursor = db.execute(
                f"UPDATE {run.table} SET status = 'failed', error = ?, finished_at = ? "
                "WHERE id = ? AND status = 'running' AND owner = ?",
                [INTERRUPTED + RESUME_HINTS[run.table], now, run.run_id, run.owner],
            )
            if cursor.rowcount == 1:
                settled.append(run)
    return settled
