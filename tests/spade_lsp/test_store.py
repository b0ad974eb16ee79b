from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from spade_lsp.errors import StoreError, StoreLockedError
from spade_lsp.store import Store


def test_open_creates_wal_store_with_schema_and_gitignore(workspace_dir: Path) -> None:
    with Store.open(workspace_dir) as store:
        assert store.db.journal_mode == "wal"
        assert {"prompts", "versions", "blobs", "deltas", "changes", "sentences", "llm_cache"} <= set(
            store.db.table_names()
        )
    assert (workspace_dir / ".spade" / ".gitignore").read_text().strip().endswith("*")


def test_reopen_applies_no_migration_twice(workspace_dir: Path) -> None:
    Store.open(workspace_dir).close()
    with Store.open(workspace_dir) as store:
        applied = list(store.db.query("SELECT name FROM _sqlite_migrations"))
    assert [row["name"] for row in applied] == [
        "0001_history",
        "0002_assertions",
        "0003_selection",
        "0004_jobs",
        "0005_reliability",
        "0006_judges",
        "0007_comparisons",
        "0008_llm_capabilities",
        "0009_relabel",
        "0010_review",
        "0011_chat_prompts",
        "0012_llm_batches",
        "0013_candidate_verdicts",
        "0014_run_owners",
        "0015_author_dates",
    ]


def test_write_rolls_back_on_error(workspace_dir: Path) -> None:
    with Store.open(workspace_dir) as store:
        with pytest.raises(RuntimeError), store.write() as db:
            db.execute("INSERT INTO prompts (path, created_at) VALUES ('a.prompt', 'now')")
            raise RuntimeError("boom")
        assert store.db.execute("SELECT COUNT(*) FROM prompts").fetchone()[0] == 0


def test_corrupt_database_is_reported_and_left_untouched(workspace_dir: Path) -> None:
    path = workspace_dir / ".spade" / "spade.db"
    path.parent.mkdir()
    garbage = b"this is not sqlite" * 500
    path.write_bytes(garbage)
    with pytest.raises(StoreError, match=r"not a usable SQLite database.*move it aside"):
        Store.open(workspace_dir)
    assert path.read_bytes() == garbage


def test_store_from_newer_version_is_refused(workspace_dir: Path) -> None:
    Store.open(workspace_dir).close()
    conn = sqlite3.connect(workspace_dir / ".spade" / "spade.db")
    conn.execute(
        "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES ('spade_lsp', '9999_future', 'x')"
    )
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer spade-lsp"):
        Store.open(workspace_dir)


def test_locked_store_gives_a_clear_error_after_the_busy_timeout(workspace_dir: Path) -> None:
    Store.open(workspace_dir).close()
    holder = sqlite3.connect(workspace_dir / ".spade" / "spade.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with Store.open(workspace_dir, busy_timeout_s=0.2) as store:
            with pytest.raises(StoreLockedError, match="locked"), store.write():
                pass
            # reads still work while another process writes (WAL)
            assert store.db.execute("SELECT COUNT(*) FROM prompts").fetchone()[0] == 0
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_concurrent_writers_serialise_without_losing_rows(workspace_dir: Path) -> None:
    Store.open(workspace_dir).close()
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            with Store.open(workspace_dir) as store:
                for i in range(30):
                    with store.write() as db:
                        db.execute("INSERT INTO prompts (path, created_at) VALUES (?, 'now')", [f"{name}{i}"])
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(n,)) for n in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    with Store.open(workspace_dir) as store:
        assert store.db.execute("SELECT COUNT(*) FROM prompts").fetchone()[0] == 60


def test_a_run_owner_is_gone_once_killed_even_before_it_is_reaped() -> None:
    """A killed daemon stays a zombie until its parent reaps it, and some parents never do; a zombie runs
    nothing, so its runs are settled rather than left ``running`` for good."""
    from spade_lsp.store._owners import _start_time, owner_alive

    child = subprocess.Popen(["sleep", "60"])
    try:
        owner = f"{socket.gethostname()}:{child.pid}:{_start_time(child.pid)}"
        assert owner_alive(owner)
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline, "the child never became a zombie"
            time.sleep(0.01)
        assert not owner_alive(owner)  # not reaped yet: /proc still lists it
        assert owner_alive(f"{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid())}")
    finally:
        child.kill()
        child.wait()
