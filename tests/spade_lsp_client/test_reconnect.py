"""A CLI waiting on a daemon job survives the daemon's death: it reconnects to the next daemon and waits for
the same job id (the fault injector saw waiting CLIs exit 2 although the next daemon finished their job)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.spade_lsp_client.daemons import (
    Daemons,
    daemon_pid,
    make_slow_prompt,
    make_workspace,
    process_gone,
    wait_until,
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    make_workspace(tmp_path / "ws")
    root = (tmp_path / "ws").resolve()
    make_slow_prompt(root, examples=8, delay_s=0.5)
    return root


def _cli_eval(root: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "spade_lsp.cli", "eval", "slow.prompt", "--json"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _running_job(root: Path) -> int:
    import sqlite3

    with sqlite3.connect(root / ".spade" / "spade.db") as db:
        row = db.execute("SELECT id FROM jobs WHERE status = 'running' AND kind = 'evaluate'").fetchone()
    return int(row[0]) if row else 0


def _jobs(root: Path) -> list[tuple[int, str, int]]:
    import sqlite3

    with sqlite3.connect(root / ".spade" / "spade.db") as db:
        return db.execute("SELECT id, status, attempts FROM jobs ORDER BY id").fetchall()


@pytest.mark.parametrize("restarter", ["supervisor", "the cli itself"])
def test_a_waiting_cli_outlives_a_sigkilled_daemon_and_prints_the_jobs_result(
    root: Path, daemons: Daemons, restarter: str
) -> None:
    first = daemons.start(root)
    cli = _cli_eval(root)
    try:
        job_id = wait_until(lambda: _running_job(root) or cli.poll() is not None, timeout_s=30, what="the job")
        assert cli.poll() is None, cli.communicate()
        time.sleep(0.5)  # well inside the evaluation (8 x 0.5 s)
        daemons.kill(first)
        wait_until(lambda: process_gone(first.pid), what="the daemon to die")
        if restarter == "supervisor":
            daemons.start(root)
        else:
            daemons.track(root)  # the CLI spawns one (killed at teardown through the lock file)
        out, err = cli.communicate(timeout=90)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait(5)
    assert cli.returncode == 0, err
    document = json.loads(out)
    assert len(document["examples"]) == 8 and [a["name"] for a in document["assertions"]] == ["assert_slow"]
    assert _jobs(root) == [(job_id, "done", 2)]  # the same job, resumed once; nothing submitted twice
    assert daemon_pid(root) is not None and daemon_pid(root) != first.pid
