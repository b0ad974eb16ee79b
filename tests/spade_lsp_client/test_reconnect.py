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


def test_a_daemon_lost_before_it_queued_the_job_leaves_the_cli_to_run_it(tmp_path: Path) -> None:
    """A daemon that answers ``initialize`` and hangs up on ``job/submit`` (it died before queueing the job): the
    CLI says so in a line and runs the job itself, instead of giving up with "lost the spade daemon"."""
    import socket
    import threading

    from spade_lsp_client import protocol

    root = (tmp_path / "ws").resolve()
    make_workspace(root)
    (root / "blurb.prompt").write_text("Write a blurb for {product}.\nKeep it under 12 words.\n", encoding="utf-8")
    (root / ".spade").mkdir(exist_ok=True)
    path = protocol.socket_path(root)
    submits: list[dict[str, object]] = []
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with protocol.socket_address(path) as address:
        server.bind(address)
    server.listen()

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection, connection.makefile("rwb") as stream:
                for line in stream:
                    message = json.loads(line)
                    if message.get("method") == "job/submit":
                        submits.append(message)
                        break  # hang up without answering: the daemon died before taking the job
                    if "id" in message:
                        info = {"version": "test", "root": str(root), "protocol": protocol.PROTOCOL_VERSION}
                        stream.write(protocol.encode({"jsonrpc": "2.0", "id": message["id"], "result": info}))
                        stream.flush()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "spade_lsp.cli", "synthesize", "blurb.prompt", "--synthesizer", "offline", "--json"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        server.close()
    assert submits, "the CLI handed the job to the (fake) daemon first"
    assert done.returncode == 0, done.stderr
    assert "the job was not queued; running it here instead" in done.stderr
    assert (root / "blurb_assertions.py").exists()
    assert "assert_at_most_11_words" in json.loads(done.stdout)["added"]  # "under 12 words"
