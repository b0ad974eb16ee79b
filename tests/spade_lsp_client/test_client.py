"""The daemon client against the real daemon: spawning, requests and errors, jobs, notifications, loss."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from spade_lsp_client import (
    INVALID_PARAMS,
    JOB_NOT_FOUND,
    METHOD_NOT_FOUND,
    DaemonClient,
    DaemonError,
    DaemonUnavailableError,
    daemon_running,
    ensure_daemon,
    run_job,
    socket_path,
)
from tests.spade_lsp_client.daemons import Daemons, async_wait_until, daemon_pid, make_workspace, process_gone


@pytest.fixture
def root(tmp_path: Path) -> Path:
    make_workspace(tmp_path / "ws")
    return (tmp_path / "ws").resolve()


async def test_connect_without_start_fails_fast_when_no_daemon_runs(root: Path) -> None:
    started = time.monotonic()
    with pytest.raises(DaemonUnavailableError, match="cannot connect"):
        await DaemonClient.connect(root, client_name="test", start=False)
    assert time.monotonic() - started < 1
    assert not daemon_running(root)
    assert socket_path(root) == root / ".spade" / "daemon.sock"


async def test_connect_spawns_one_daemon_that_later_connects_share(root: Path, daemons: Daemons) -> None:
    daemons.track(root)
    first = await DaemonClient.connect(root, client_name="editor")
    try:
        assert first.connected and first.info["protocol"] == 1 and first.info["root"] == str(root)
        assert daemon_running(root)
        await ensure_daemon(root)  # a daemon runs: nothing new is spawned
        second = await DaemonClient.connect(root, client_name="cli", start=False)
        assert second.info["pid"] == first.info["pid"] == daemon_pid(root)
        status = await second.request("daemon/status")
        assert status["clients"] == 2 and status["pid"] == first.info["pid"]
        await second.close()
        assert not second.connected
    finally:
        await first.close()


async def test_errors_carry_their_json_rpc_code(root: Path, daemons: Daemons) -> None:
    daemons.start(root)
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        with pytest.raises(DaemonError) as unknown:
            await client.request("no/such/method")
        assert unknown.value.code == METHOD_NOT_FOUND
        with pytest.raises(DaemonError) as missing:
            await client.request("job/get", {"id": 12345})
        assert missing.value.code == JOB_NOT_FOUND
        with pytest.raises(DaemonError) as bad:
            await client.submit_job("synthesize", "blurb.prompt", {"synthesizer": "magic"})
        assert bad.value.code == INVALID_PARAMS and "synthesizer" in str(bad.value)
        assert (await client.request("daemon/status"))["clients"] == 1  # the connection survived each error


async def test_jobs_report_progress_and_finish_with_results(root: Path, daemons: Daemons) -> None:
    daemons.start(root)
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        seen: list[tuple[str, dict[str, Any]]] = []
        unsubscribe = client.subscribe(lambda method, params: seen.append((method, params)))
        progress: list[dict[str, Any]] = []
        job = await client.submit_job("synthesize", root / "blurb.prompt", {"synthesizer": "offline"})
        assert job["status"] in ("queued", "running") and job["path"] == "blurb.prompt"
        done = await client.wait_job(job["id"], on_progress=progress.append, timeout_s=20)
        assert done["status"] == "done", done["error"]
        assert done["result"]["written"] and (root / "blurb_assertions.py").read_text() == done["result"]["text"]
        assert "assert_excludes_cheap" in done["result"]["added"]
        assert progress and all(p["id"] == job["id"] for p in progress)
        evaluated = await client.wait_job((await client.submit_job("evaluate", "blurb.prompt"))["id"], timeout_s=30)
        assert evaluated["status"] == "done", evaluated["error"]
        assert evaluated["result"]["examples"] == 4 and evaluated["result"]["run_id"] >= 1
        await async_wait_until(
            lambda: any(m == "prompt/changed" and p["origin"] == "job" for m, p in seen), what="prompt/changed"
        )
        unsubscribe()
        count = len(seen)
        await client.request("prompt/record", {"path": "blurb.prompt", "text": "A new version.\n"})
        await client.request("daemon/status")
        assert len(seen) == count  # unsubscribed


def test_run_job_is_synchronous_for_the_cli(root: Path, daemons: Daemons) -> None:
    daemons.start(root)
    progress: list[dict[str, Any]] = []
    job = run_job(root, "synthesize", root / "blurb.prompt", {"write": False}, on_progress=progress.append)
    assert job["status"] == "done" and not job["result"]["written"] and progress
    assert not (root / "blurb_assertions.py").exists()
    failed = run_job(root, "sample", root / "blurb.prompt", {})  # a failing job comes back failed, with why
    assert failed["status"] == "failed" and "no sidecar module to validate with" in failed["error"]


def test_run_job_without_a_daemon_raises_unless_asked_to_start(root: Path, daemons: Daemons) -> None:
    with pytest.raises(DaemonUnavailableError):
        run_job(root, "synthesize", root / "blurb.prompt", {})
    daemons.track(root)
    assert run_job(root, "synthesize", root / "blurb.prompt", {}, start=True)["status"] == "done"


async def test_a_dead_daemon_is_noticed_and_a_fresh_connect_restarts_it(root: Path, daemons: Daemons) -> None:
    daemons.track(root)
    client = await DaemonClient.connect(root, client_name="editor")
    lost = asyncio.Event()
    client.on_disconnect(lost.set)
    old_pid = client.info["pid"]
    os.kill(old_pid, signal.SIGKILL)
    await asyncio.wait_for(lost.wait(), 10)
    assert not client.connected
    with pytest.raises(DaemonUnavailableError):
        await client.request("daemon/status")
    await async_wait_until(lambda: process_gone(old_pid), what="the old daemon to exit")
    assert socket_path(root).exists()  # SIGKILL left the socket file behind
    fresh = await DaemonClient.connect(root, client_name="editor")
    try:
        assert fresh.info["pid"] != old_pid
        assert (await fresh.request("daemon/status"))["clients"] == 1
    finally:
        await fresh.close()
        await client.close()


async def test_close_does_not_count_as_a_disconnect(root: Path, daemons: Daemons) -> None:
    daemons.start(root)
    client = await DaemonClient.connect(root, client_name="test", start=False)
    calls: list[str] = []
    client.on_disconnect(lambda: calls.append("lost"))
    await client.close()
    await client.close()  # idempotent
    assert calls == []


def _spawning_first(monkeypatch: pytest.MonkeyPatch, command: list[str]) -> list[subprocess.Popen[bytes]]:
    """Make ``connect`` spawn ``command`` the first time and the real daemon after; the processes spawned."""
    from spade_lsp_client import _client

    spawned: list[subprocess.Popen[bytes]] = []
    real = _client.spawn_daemon

    def spawn(root: Path) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(command) if not spawned else real(root)
        spawned.append(process)
        return process

    monkeypatch.setattr(_client, "spawn_daemon", spawn)
    return spawned


async def test_a_spawned_daemon_killed_by_a_signal_is_replaced(
    root: Path, daemons: Daemons, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon the client started and something then killed (a supervisor, the OOM killer) was lost like any
    other: the client starts the next one rather than giving up."""
    daemons.track(root)
    spawned = _spawning_first(monkeypatch, ["sh", "-c", "kill -9 $$"])
    client = await DaemonClient.connect(root, client_name="cli")
    try:
        assert spawned[0].wait(5) == -signal.SIGKILL
        assert len(spawned) == 2 and client.info["pid"] == spawned[1].pid == daemon_pid(root)
    finally:
        await client.close()


async def test_a_spawned_daemon_that_refuses_to_start_is_reported_at_once(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exiting with an error is a refusal (bad settings, an unusable store) that would repeat: no second spawn."""
    spawned = _spawning_first(monkeypatch, ["sh", "-c", "exit 3"])
    started = time.monotonic()
    with pytest.raises(DaemonUnavailableError, match="exited with status 3"):
        await DaemonClient.connect(root, client_name="cli", timeout_s=10)
    assert len(spawned) == 1 and time.monotonic() - started < 5
