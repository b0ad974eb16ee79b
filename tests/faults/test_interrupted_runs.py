"""A sampling run interrupted by a SIGKILL of the daemon: the next daemon marks it interrupted at start-up, and
the resumed job (and any later run of the same sample) takes the answered calls from the LLM cache, so the
model is never asked the same call twice."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

from spade_lsp.store import INTERRUPTED
from spade_lsp_client import DaemonClient
from tests.spade_lsp_client.daemons import SETTINGS, Daemons, daemons, wait_until
from tests.support.blurb import sampling_workspace
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, user_text

__all__ = ["daemons"]

INPUTS, SAMPLES = 4, 4
ANSWERED_BEFORE_KILL = 6


class HoldAfter:
    """Answers the first ``answered`` requests at once and holds every later one (8 s: longer than the test waits
    for them) until ``release`` is set; counts the requests answered after it."""

    def __init__(self, answered: int) -> None:
        self.answered = answered
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.replies = 0
        self.after_release = 0

    def __call__(self, request: dict[str, Any]) -> Reply:
        product = user_text(request).split("for ", 1)[1].split(".", 1)[0]
        with self.lock:
            if self.release.is_set():
                self.after_release += 1
                return chat_reply(f"A lovely {product} for you.")
            self.replies += 1
            if self.replies <= self.answered:
                return chat_reply(f"A lovely {product} for you.")
        return chat_reply("too late", delay_s=8)


def _query(root: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(root / ".spade" / "spade.db") as db:
        return db.execute(sql, args).fetchall()


def test_a_killed_sampling_run_is_marked_interrupted_and_resumes_from_the_cache(
    tmp_path: Path, daemons: Daemons
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    sampling_workspace(root)
    (root / "spade.toml").write_text(SETTINGS, encoding="utf-8")
    model = HoldAfter(ANSWERED_BEFORE_KILL)
    with OpenAIStub(model) as stub:
        params = {
            "inputs": INPUTS,
            "samples": SAMPLES,
            "early_stopping": False,
            "settings": {"model": "openai/stub", "api_base": stub.api_base},
        }

        async def submit() -> int:
            async with await DaemonClient.connect(root, client_name="test", start=False) as client:
                return int((await client.submit_job("sample", "blurb.prompt", params))["id"])

        async def wait(job_id: int) -> dict[str, Any]:
            async with await DaemonClient.connect(root, client_name="test", start=False) as client:
                return await client.wait_job(job_id, timeout_s=60)

        first = daemons.start(root)
        job_id = asyncio.run(submit())
        # the answered calls reach the cache while the others are still waited for
        wait_until(
            lambda: _query(root, "SELECT COUNT(*) FROM llm_cache")[0][0] == ANSWERED_BEFORE_KILL,
            timeout_s=30,
            what="the answered calls in the LLM cache",
        )
        assert _query(root, "SELECT status FROM sample_runs") == [("running",)]
        assert _query(root, "SELECT COUNT(*) FROM sample_outputs") == [(0,)]  # the round never finished
        daemons.kill(first)
        asked_before_kill = len(stub.requests)
        model.release.set()

        daemons.start(root)
        log = (root / ".spade" / "daemon.log").read_text()
        assert "marked sample_runs [1] interrupted" in log  # at start-up, before serving
        status, error = _query(root, "SELECT status, error FROM sample_runs WHERE id = 1")[0]
        assert status == "failed" and error.startswith(INTERRUPTED) and "resumes from the LLM cache" in error

        resumed = asyncio.run(wait(job_id))
        assert resumed["status"] == "done" and resumed["attempts"] == 2, resumed
        document = resumed["result"]
        assert document["calls_cached"] == ANSWERED_BEFORE_KILL
        assert document["calls"] == INPUTS * SAMPLES - ANSWERED_BEFORE_KILL
        # the model was asked again only for the calls it had not answered
        assert model.after_release == INPUTS * SAMPLES - ANSWERED_BEFORE_KILL
        assert asked_before_kill > ANSWERED_BEFORE_KILL  # some were in flight when the daemon died

        # the same sample again costs nothing
        again = asyncio.run(wait(asyncio.run(submit())))
        assert again["status"] == "done" and again["result"]["calls_cached"] == INPUTS * SAMPLES
        assert model.after_release == INPUTS * SAMPLES - ANSWERED_BEFORE_KILL
        assert again["result"]["validators"] == document["validators"]

    runs = _query(root, "SELECT id, status FROM sample_runs ORDER BY id")
    assert runs == [(1, "failed"), (2, "done"), (3, "done")]
    outputs = _query(root, "SELECT run_id, COUNT(*) FROM sample_outputs GROUP BY run_id ORDER BY run_id")
    assert outputs == [(2, INPUTS * SAMPLES), (3, INPUTS * SAMPLES)]


def _cached(root: Path) -> int:
    """Answers in the LLM cache (0 while the store is still being created)."""
    try:
        return int(_query(root, "SELECT COUNT(*) FROM llm_cache")[0][0])
    except sqlite3.OperationalError:
        return 0


def test_a_killed_cli_run_is_settled_by_the_next_command_without_a_daemon(tmp_path: Path) -> None:
    """No daemon: ``spade sample`` killed with SIGKILL mid-run leaves its run ``running``; the next command (any
    command that opens the workspace) ends it as interrupted and says so once, and a new sampling run reuses
    what the killed one had answered."""
    import os
    import signal
    import subprocess
    import sys

    root = tmp_path / "ws"
    root.mkdir()
    prompt = sampling_workspace(root)
    model = HoldAfter(ANSWERED_BEFORE_KILL)
    with OpenAIStub(model) as stub:
        (root / "spade.toml").write_text(
            f'{SETTINGS}model = "openai/stub"\napi_base = "{stub.api_base}"\n', encoding="utf-8"
        )
        argv = [sys.executable, "-m", "spade_lsp.cli", "sample", str(prompt), "--inputs", str(INPUTS),
                "--samples", str(SAMPLES), "--no-early-stop", "--json"]  # fmt: skip
        sampling = subprocess.Popen(argv, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_until(
            lambda: _cached(root) == ANSWERED_BEFORE_KILL, timeout_s=60, what="the answered calls in the LLM cache"
        )
        os.kill(sampling.pid, signal.SIGKILL)
        sampling.wait(timeout=10)
        assert _query(root, "SELECT status FROM sample_runs") == [("running",)]
        model.release.set()

        history = subprocess.run(
            [sys.executable, "-m", "spade_lsp.cli", "history", str(prompt)], cwd=root, capture_output=True, text=True
        )
        assert history.returncode == 0, history.stderr
        assert "sampling run 1 was left running by a process that is gone" in history.stderr
        status, error = _query(root, "SELECT status, error FROM sample_runs WHERE id = 1")[0]
        assert status == "failed" and error.startswith(INTERRUPTED)
        again = subprocess.run([*argv], cwd=root, capture_output=True, text=True)
        assert again.returncode in (0, 1), again.stderr
        assert "left running" not in again.stderr  # said once
        assert _query(root, "SELECT status FROM sample_runs ORDER BY id") == [("failed",), ("done",)]
    assert model.after_release == INPUTS * SAMPLES - ANSWERED_BEFORE_KILL  # the answered calls came from the cache
