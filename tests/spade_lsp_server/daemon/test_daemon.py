"""The daemon as a real process: lock, socket, watcher, durable jobs, idle shutdown, many clients, bad input."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from spade_lsp_client import DaemonClient, DaemonError, daemon_running, socket_path
from tests.spade_lsp_client.daemons import (
    PROMPT,
    Daemons,
    RawConnection,
    async_wait_until,
    make_slow_prompt,
    make_workspace,
    process_gone,
    wait_until,
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    make_workspace(tmp_path / "ws")
    return (tmp_path / "ws").resolve()


class Recorder:
    """Collects a client's notifications."""

    def __init__(self, client: DaemonClient) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []
        client.subscribe(lambda method, params: self.seen.append((method, params)))

    def changed(self, path: str) -> list[dict[str, Any]]:
        return [p for m, p in self.seen if m == "prompt/changed" and p["path"] == path]


def versions(root: Path, key: str) -> int:
    with sqlite3.connect(root / ".spade" / "spade.db") as db:
        row = db.execute(
            "SELECT COUNT(*) FROM versions JOIN prompts ON prompts.id = prompt_id WHERE prompts.path = ?", [key]
        ).fetchone()
    return int(row[0])


def prompts(root: Path) -> list[str]:
    with sqlite3.connect(root / ".spade" / "spade.db") as db:
        return [row[0] for row in db.execute("SELECT path FROM prompts ORDER BY path")]


# -- process life ---------------------------------------------------------------------------------------


def test_the_lock_lets_only_one_daemon_run(root: Path, daemons: Daemons) -> None:
    first = daemons.start(root)
    second = subprocess.run(
        [sys.executable, "-m", "spade_lsp_server.daemon", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert second.returncode == 0 and "already runs" in second.stderr
    assert first.poll() is None and daemon_running(root)
    info = json.loads((root / ".spade" / "daemon.json").read_text())
    assert info["pid"] == first.pid and info["protocol"] == 1


async def test_a_stale_socket_left_by_sigkill_is_replaced(root: Path, daemons: Daemons) -> None:
    first = daemons.start(root)
    daemons.kill(first)
    assert socket_path(root).exists() and not daemon_running(root)
    daemons.start(root)  # takes the lock the kernel released, removes the stale socket, binds again
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        assert client.info["pid"] != first.pid


async def test_a_workspace_path_longer_than_sun_path_works(tmp_path: Path, daemons: Daemons) -> None:
    deep = tmp_path.joinpath(*["d" * 40] * 4, "workspace")
    make_workspace(deep)
    assert len(os.fsencode(socket_path(deep))) > 108
    daemons.track(deep.resolve())
    async with await DaemonClient.connect(deep, client_name="test") as client:
        answer = await client.request("prompt/record", {"path": str(deep / "blurb.prompt")})
        assert answer == {"path": "blurb.prompt", "version": 1, "recorded": True, "warnings": []}
    assert daemon_running(deep)


def test_an_idle_daemon_stops_by_itself_but_not_while_a_client_is_connected(root: Path, daemons: Daemons) -> None:
    process = daemons.start(root, idle_timeout_s=0.5)

    async def hold() -> None:
        async with await DaemonClient.connect(root, client_name="test", start=False) as client:
            await asyncio.sleep(1.2)  # the point of the test: longer than the idle timeout
            assert (await client.request("daemon/status"))["idle_timeout_s"] == 0.5

    asyncio.run(hold())
    assert process.poll() is None
    assert process.wait(10) == 0
    assert not socket_path(root).exists() and not (root / ".spade" / "daemon.json").exists()


def test_start_up_imports_no_lsp_and_no_llm_library(root: Path) -> None:
    script = f"""
import asyncio, sys
from pathlib import Path
from spade_lsp_server.daemon._server import Daemon

async def main():
    daemon = Daemon(Path({str(root)!r}), idle_timeout_s=30)
    task = asyncio.create_task(daemon.run())
    while not Path({str(root)!r}, ".spade", "daemon.json").exists():
        await asyncio.sleep(0.01)
    daemon.request_stop()
    await task

asyncio.run(main())
print(sorted(m for m in ("pygls", "lsprotocol", "litellm", "highspy", "pulp") if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]", done.stderr


# -- the watcher ---------------------------------------------------------------------------------------------


async def test_an_atomic_save_outside_the_editor_records_a_version(root: Path, daemons: Daemons) -> None:
    daemons.start(root)
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        await watching(client)
        notes = Recorder(client)
        temporary = root / ".blurb.prompt.swp"
        temporary.write_text(PROMPT + "Use a friendly tone.\n", encoding="utf-8")
        os.replace(temporary, root / "blurb.prompt")  # what editors do
        await async_wait_until(lambda: notes.changed("blurb.prompt"), what="prompt/changed")
        assert notes.changed("blurb.prompt")[0]["origin"] == "watch"
        assert versions(root, "blurb.prompt") == 1
        nested = root / "prompts" / "deep" / "other.prompt.md"
        nested.parent.mkdir(parents=True)
        nested.write_text("Answer in JSON.\n", encoding="utf-8")
        await async_wait_until(lambda: notes.changed("prompts/deep/other.prompt.md"), what="nested prompt")


async def test_a_burst_of_writes_is_recorded_once_or_twice(root: Path, daemons: Daemons) -> None:
    daemons.start(root)
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        await watching(client)
        notes = Recorder(client)
        prompt = root / "burst.prompt"
        started = time.monotonic()
        for number in range(20):
            prompt.write_text(f"Write {number} words at most.\n", encoding="utf-8")
            await asyncio.sleep(0.005)
        assert time.monotonic() - started < 0.8  # well within one debounce window (MAX_DELAY_S)
        await async_wait_until(lambda: notes.changed("burst.prompt"), what="the burst to be recorded")
        await client.request("prompt/record", {"path": "burst.prompt"})  # the recorder's queue is drained
        assert 1 <= versions(root, "burst.prompt") <= 2
        assert len(notes.changed("burst.prompt")) == versions(root, "burst.prompt")


async def test_a_burst_of_editor_saves_is_one_version_after_the_quiet_period(root: Path, daemons: Daemons) -> None:
    """Autosave: three saves within the quiet period (``save_quiet_s``, here 1.5 s from spade.toml) are one
    version, the last text, and every request answers with it; a save after the quiet period is its own."""
    (root / "spade.toml").write_text("save_quiet_s = 1.5\n", encoding="utf-8")
    daemons.start(root)
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        first = await client.request("prompt/record", {"path": "blurb.prompt"})  # an open: recorded at once
        assert first["version"] == 1
        prompt = root / "blurb.prompt"
        texts = [PROMPT + f"Use at most {n} words.\n" for n in (10, 20, 30)]
        pending = []
        started = time.monotonic()
        for text in texts:
            prompt.write_text(text, encoding="utf-8")  # the watcher sees each write too
            pending.append(
                asyncio.ensure_future(client.request("prompt/record", {"path": "blurb.prompt", "text": text}))
            )
            await asyncio.sleep(0.3)
        answers = await asyncio.gather(*pending)
        assert time.monotonic() - started >= 1.5  # nothing was recorded before the quiet period ended
        assert [a["version"] for a in answers] == [2, 2, 2]
        assert [a["recorded"] for a in answers] == [True, True, True]
        assert versions(root, "blurb.prompt") == 2
        with sqlite3.connect(root / ".spade" / "spade.db") as db:
            newest = db.execute(
                "SELECT b.content FROM versions v JOIN blobs b ON b.hash = v.content_hash ORDER BY v.id DESC LIMIT 1"
            ).fetchone()[0]
        assert newest == texts[-1]
        # the editor's own quiet period (its settings) wins: 0 records at once
        now = PROMPT + "Use at most 40 words.\n"
        prompt.write_text(now, encoding="utf-8")
        answer = await client.request(
            "prompt/record", {"path": "blurb.prompt", "text": now, "settings": {"save_quiet_s": 0}}
        )
        assert answer["version"] == 3 and answer["recorded"] is True


async def test_git_venvs_and_node_modules_are_ignored(root: Path, daemons: Daemons) -> None:
    custom_venv = root / "env"
    custom_venv.mkdir()
    (custom_venv / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    daemons.start(root)
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        await watching(client)
        notes = Recorder(client)
        for ignored in (".git", ".venv", "venv", "node_modules/pkg", ".spade", "env/lib"):
            path = root / ignored / "hidden.prompt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("Never record me.\n", encoding="utf-8")
        (root / "notes.txt").write_text("not a prompt\n", encoding="utf-8")
        (root / "sentinel.prompt").write_text("Record me.\n", encoding="utf-8")  # written last
        await async_wait_until(lambda: notes.changed("sentinel.prompt"), what="the sentinel prompt")
        await asyncio.sleep(0.4)  # longer than the debounce: anything ignored wrongly would show up by now
    assert [p for m, p in notes.seen if m == "prompt/changed"] == notes.changed("sentinel.prompt")
    assert prompts(root) == ["sentinel.prompt"]


async def test_changed_prompt_globs_apply_without_a_restart(root: Path, daemons: Daemons) -> None:
    daemons.start(root)
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        await watching(client)
        notes = Recorder(client)
        (root / "spade.toml").write_text('daemon_idle_timeout_s = 30\nprompt_globs = ["**/*.tmpl"]\n')
        await watching(client, ["**/*.tmpl"])
        (root / "mail.tmpl").write_text("Write a mail.\n", encoding="utf-8")
        await async_wait_until(lambda: notes.changed("mail.tmpl"), what="a prompt matching the new glob")


async def test_chat_prompts_are_watched_and_a_half_typed_message_list_is_not_recorded(
    root: Path, daemons: Daemons
) -> None:
    """Prompty files and message lists (``.prompt.json``, ``.prompt.yaml``, ``.prompt.yml``) are prompts by the
    default globs; a list that does not parse is not a version (the daemon says why), its next valid text is."""
    daemons.start(root)
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        await watching(client)
        notes = Recorder(client)
        files = {
            "support.prompty": "---\nname: Support\n---\nsystem:\nBe brief.\n\nuser:\n{{question}}\n",
            "chat.prompt.json": json.dumps([{"role": "user", "content": "Answer in JSON."}]),
            "chat2.prompt.yaml": "messages:\n  - role: system\n    content: Never lie.\n",
            "chat3.prompt.yml": "- role: user\n  content: Keep it short.\n",
        }
        for name, text in files.items():
            (root / name).write_text(text, encoding="utf-8")
        for name in files:
            await async_wait_until(lambda name=name: notes.changed(name), what=f"{name} to be recorded")
            assert notes.changed(name)[0]["origin"] == "watch" and versions(root, name) == 1
        half = '[{"role": "user", "content": "Answer in JSON. Never'
        (root / "chat.prompt.json").write_text(half, encoding="utf-8")
        with pytest.raises(DaemonError) as refused:
            await client.request("prompt/record", {"path": "chat.prompt.json", "text": half})
        assert error_type(refused.value) == "ConfigError" and "not recorded until it parses" in str(refused.value)
        assert "invalid message list" in str(refused.value)
        valid = json.dumps([{"role": "user", "content": "Answer in JSON. Never lie."}])
        saved = await client.request("prompt/record", {"path": "chat.prompt.json", "text": valid})
        assert saved["recorded"] and saved["version"] == 2
    assert versions(root, "chat.prompt.json") == 2  # the watcher did not record the half-typed text either


def error_type(error: DaemonError) -> str | None:
    return error.data.get("type") if isinstance(error.data, dict) else None


async def watching(client: DaemonClient, globs: list[str] | None = None) -> None:
    """Until the daemon's watcher runs (it starts just after the socket listens), with ``globs`` if given."""
    deadline = time.monotonic() + 10
    while True:
        current = (await client.request("daemon/status"))["watching"]
        if current and (globs is None or current == globs):
            return
        assert time.monotonic() < deadline, f"the daemon is not watching {globs or 'anything'}: {current}"
        await asyncio.sleep(0.02)


async def test_prompts_changed_while_no_daemon_ran_are_recorded_at_start(root: Path, daemons: Daemons) -> None:
    first = daemons.start(root)
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        assert (await client.request("prompt/record", {"path": "blurb.prompt"}))["version"] == 1
    first.send_signal(signal.SIGTERM)
    assert first.wait(10) == 0
    (root / "blurb.prompt").write_text(PROMPT + "Use a friendly tone.\n", encoding="utf-8")  # e.g. git checkout
    daemons.start(root)
    wait_until(lambda: versions(root, "blurb.prompt") == 2, what="the catch-up record")


# -- many clients, bad input ---------------------------------------------------------------------------------


async def test_ten_clients_all_get_every_notification_and_their_jobs_done(root: Path, daemons: Daemons) -> None:
    daemons.start(root)
    clients = await asyncio.gather(*(DaemonClient.connect(root, client_name=f"c{n}", start=False) for n in range(10)))
    try:
        notes = [Recorder(client) for client in clients]
        answer = await clients[0].request("prompt/record", {"path": "blurb.prompt"})
        assert answer["recorded"] and answer["version"] == 1
        await async_wait_until(lambda: all(n.changed("blurb.prompt") for n in notes), what="all ten notified")
        for number in range(len(clients)):  # one prompt each: their jobs may run side by side
            (root / f"p{number}.prompt").write_text(f"Keep it under {number + 5} words.\n", encoding="utf-8")
        jobs = await asyncio.gather(
            *(c.submit_job("synthesize", f"p{n}.prompt", {"write": False}) for n, c in enumerate(clients))
        )
        finished = await asyncio.gather(
            *(c.wait_job(j["id"], timeout_s=30) for c, j in zip(clients, jobs, strict=True))
        )
        assert [job["status"] for job in finished] == ["done"] * 10, [job["error"] for job in finished]
        for note in notes:  # every client hears about every job, not just its own
            await async_wait_until(
                lambda note=note: len({p["id"] for m, p in note.seen if m == "job/finished"}) == 10,
                what="ten job/finished notifications",
            )
        # how long the ten jobs take side by side: tests/benchmarks/test_daemon_bench.py
        status = await clients[0].request("daemon/status")
        assert status["clients"] == 10 and status["jobs_active"] == 0
    finally:
        await asyncio.gather(*(client.close() for client in clients))


def test_malformed_lines_get_errors_and_the_connection_survives(root: Path, daemons: Daemons) -> None:
    daemons.start(root)
    raw = RawConnection(root)
    try:
        raw.send_raw(b"{this is not json\n")
        parse = raw.receive()
        assert parse["id"] is None and parse["error"]["code"] == -32700
        raw.send_raw(b"\xff\xfe\n")
        assert raw.receive()["error"]["code"] == -32700
        raw.send({"jsonrpc": "2.0", "id": 1})  # no method
        invalid = raw.receive()
        assert (
            invalid["id"] == 1 and invalid["error"]["code"] == -32600 and "string method" in invalid["error"]["message"]
        )
        raw.send_raw(b"[1, 2]\n")
        assert raw.receive()["error"]["code"] == -32600
        raw.send({"jsonrpc": "2.0", "id": 2, "method": "nope"})
        assert raw.receive()["error"]["code"] == -32601
        raw.send({"jsonrpc": "2.0", "method": "nope"})  # an unknown notification gets no answer
        raw.send({"jsonrpc": "2.0", "id": 3, "method": "daemon/status"})
        answer = raw.receive()
        assert answer["id"] == 3 and answer["result"]["clients"] == 1
    finally:
        raw.close()


@pytest.mark.parametrize(
    ("method", "params", "fragment"),
    [
        ("job/get", {"id": "7"}, "params.id"),
        ("job/get", {}, "params.id: required"),
        ("job/get", [1], "params must be an object"),
        ("job/submit", {"kind": "synthesize"}, "params.path"),
        ("job/submit", {"kind": "dance", "path": "blurb.prompt"}, "unknown job kind"),
        ("job/submit", {"kind": "synthesize", "path": "missing.prompt"}, "is not a file"),
        ("job/submit", {"kind": "evaluate", "path": "blurb.prompt", "params": {"workers": 0}}, "params.workers"),
        (
            "job/submit",
            {"kind": "select", "path": "blurb.prompt", "params": {"settings": {"tau": 2}}},
            "params.settings: tau",
        ),
        ("job/submit", {"kind": "synthesize", "path": "blurb.prompt", "params": {"writ": True}}, "unknown key"),
        ("prompt/record", {"path": "/etc/hostname"}, "outside the workspace"),
        ("prompt/record", {"path": "blurb.prompt", "text": 3}, "params.text"),
        ("job/list", {"active": "yes"}, "params.active"),
    ],
)
def test_bad_params_get_invalid_params(root: Path, daemons: Daemons, method: str, params: Any, fragment: str) -> None:
    daemons.start(root)
    raw = RawConnection(root)
    try:
        raw.send({"jsonrpc": "2.0", "id": 9, "method": method, "params": params})
        error = raw.receive()["error"]
        assert error["code"] == -32602 and fragment in error["message"]
    finally:
        raw.close()


#: A valid params object for every job kind (a new kind adds its example here: the registry test requires it).
KIND_EXAMPLES: dict[str, dict[str, Any]] = {
    "synthesize": {"synthesizer": "offline", "write": False},
    "evaluate": {"workers": 1},
    "select": {"method": "cov", "folds": 0, "settings": {"tau": 0.3}},
    "sample": {"samples": 1, "inputs": 1},
    "judge": {"grading_notes": True},
    "compare": {"samples": 1, "settings": {"model": "openai/m"}},
    "relabel": {},
    "review": {"accept": [{"name": "assert_a", "sha": "0" * 64}]},
    "test": {"file": "/nowhere/a-test.yaml", "limit": 1},
}


async def test_the_daemon_accepts_every_registered_kind_and_stores_its_params_as_checked(
    root: Path, daemons: Daemons
) -> None:
    from spade_lsp.jobs import JOB_KINDS, validate_params

    assert set(KIND_EXAMPLES) == set(JOB_KINDS)
    daemons.start(root)
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        for kind in JOB_KINDS:
            queued = await client.submit_job(kind, "blurb.prompt", KIND_EXAMPLES[kind])
            assert (queued["kind"], queued["params"]) == (kind, validate_params(kind, KIND_EXAMPLES[kind]).to_json())


async def test_engine_errors_come_back_as_spade_errors(root: Path, daemons: Daemons) -> None:
    daemons.start(root)
    (root / "binary.prompt").write_bytes(b"\x00\x01binary")
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        with pytest.raises(DaemonError) as error:
            await client.request("prompt/record", {"path": "binary.prompt"})
        assert error.value.code == -32000 and error.value.data == {"type": "PromptFileError"}
        assert "binary" in str(error.value)
        saved = await client.request("prompt/record", {"path": "blurb.prompt", "text": "The editor's text.\n"})
        assert saved["recorded"] and saved["version"] == 1
        again = await client.request("prompt/record", {"path": "blurb.prompt", "text": "The editor's text.\n"})
        assert not again["recorded"] and again["version"] == 1


# -- durable jobs --------------------------------------------------------------------------------------------


async def test_sigkill_mid_job_then_restart_resumes_it_and_keeps_finished_results(root: Path, daemons: Daemons) -> None:
    make_slow_prompt(root, examples=6, delay_s=0.25)
    first = daemons.start(root)
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        quick = await client.wait_job((await client.submit_job("synthesize", "blurb.prompt"))["id"], timeout_s=20)
        assert quick["status"] == "done"
        notes = Recorder(client)
        slow = await client.submit_job("evaluate", "slow.prompt", {"workers": 1})
        await async_wait_until(
            lambda: any(m == "job/progress" and p["id"] == slow["id"] for m, p in notes.seen), what="the slow job"
        )
        assert (await client.request("job/get", {"id": slow["id"]}))["status"] == "running"
        daemons.kill(first)  # SIGKILL, mid-evaluation
    restarted = daemons.start(root)
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        resumed = await client.wait_job(slow["id"], timeout_s=30)
        assert resumed["status"] == "done" and resumed["attempts"] == 2, resumed
        assert resumed["result"]["assertions"] == ["assert_slow"] and resumed["result"]["examples"] == 6
        assert await client.request("job/get", {"id": quick["id"]}) == quick  # the finished result survived
    assert restarted.poll() is None
    log = (root / ".spade" / "daemon.log").read_text()
    assert f"requeued [{slow['id']}]" in log


async def test_jobs_of_one_prompt_run_in_order_and_a_queued_one_can_be_cancelled(root: Path, daemons: Daemons) -> None:
    make_slow_prompt(root, examples=4, delay_s=0.25)
    daemons.start(root)
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        notes = Recorder(client)
        slow = await client.submit_job("evaluate", "slow.prompt", {"workers": 1})
        behind = await client.submit_job("synthesize", "slow.prompt", {"write": False})
        other = await client.submit_job("synthesize", "blurb.prompt", {"write": False})
        other_done = await client.wait_job(other["id"], timeout_s=20)  # another prompt: not held up
        assert other_done["status"] == "done"
        assert (await client.request("job/get", {"id": behind["id"]}))["status"] == "queued"
        cancelled = await client.request("job/cancel", {"id": behind["id"]})
        assert cancelled["status"] == "cancelled" and cancelled["cancel_requested"]
        await async_wait_until(
            lambda: any(m == "job/finished" and p["id"] == behind["id"] for m, p in notes.seen), what="job/finished"
        )
        assert (await client.wait_job(slow["id"], timeout_s=20))["status"] == "done"
        listed = await client.request("job/list", {"path": "slow.prompt"})
        assert [job["id"] for job in listed] == [behind["id"], slow["id"]]
        assert await client.request("job/list", {"active": True}) == []


def test_shutdown_with_a_running_job_hands_it_to_the_next_daemon(root: Path, daemons: Daemons) -> None:
    make_slow_prompt(root, examples=8, delay_s=0.5)

    async def submit_then_stop() -> int:
        async with await DaemonClient.connect(root, client_name="test", start=False) as client:
            notes = Recorder(client)
            job = await client.submit_job("evaluate", "slow.prompt", {"workers": 1})
            await async_wait_until(lambda: any(m == "job/progress" for m, _ in notes.seen), what="the job to start")
            assert await client.request("daemon/shutdown") == {}
            return int(job["id"])

    first = daemons.start(root)
    job_id = asyncio.run(submit_then_stop())
    assert first.wait(15) == 0
    wait_until(lambda: process_gone(first.pid), what="the daemon to exit")

    async def resume() -> dict[str, Any]:
        async with await DaemonClient.connect(root, client_name="test", start=False) as client:
            return await client.wait_job(job_id, timeout_s=30)

    daemons.start(root)
    job = asyncio.run(resume())
    assert job["status"] == "done" and job["result"]["examples"] == 8


def test_sigterm_stops_the_daemon_cleanly(root: Path, daemons: Daemons) -> None:
    process = daemons.start(root)
    process.send_signal(signal.SIGTERM)
    assert process.wait(10) == 0
    assert not socket_path(root).exists()
    assert "stopped" in (root / ".spade" / "daemon.log").read_text()


# -- the assistant model relabels in the background -------------------------------------------------------------


class _Labeller:
    """Labels every edit Content/Count, unlike the offline classifier would (a visible difference); holds its
    answers until released, so a test sees the state before the relabelling lands."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def __call__(self, request: dict[str, Any]) -> Any:
        from tests.support.openai_stub import chat_reply

        self.release.wait(30)
        edits = json.loads(next(m["content"] for m in request["messages"] if m["role"] == "user"))
        return chat_reply(json.dumps({"edits": [{"index": e["index"], "labels": ["Content/Count"]} for e in edits]}))


def _delta_labels(root: Path) -> list[tuple[str, str | None]]:
    with sqlite3.connect(root / ".spade" / "spade.db") as db:
        return db.execute("SELECT labels, labelled_by FROM deltas ORDER BY id").fetchall()


async def test_a_recorded_version_is_labelled_offline_then_relabelled_by_the_editors_assistant(
    root: Path, daemons: Daemons
) -> None:
    """Recording answers without waiting on a model; the assistant model named only in the editor's settings
    (sent with ``prompt/record``) relabels the delta in a ``relabel`` job, and clients hear when it is done."""
    from tests.support.openai_stub import OpenAIStub

    labeller = _Labeller()
    with OpenAIStub(labeller) as stub:
        daemons.start(root)
        editor = {"assistant_model": "openai/labeller", "assistant_api_base": stub.api_base}
        async with await DaemonClient.connect(root, client_name="test", start=False) as client:
            notes = Recorder(client)
            answer = await client.request("prompt/record", {"path": "blurb.prompt", "settings": editor})
            assert answer["recorded"] and answer["version"] == 1
            assert _delta_labels(root)[0][1] is None  # offline labels, already there when recording answered
            labeller.release.set()
            finished = await async_wait_until(
                lambda: [p for m, p in notes.seen if m == "job/finished" and p["kind"] == "relabel"],
                what="the relabel job",
            )
            assert finished[0]["status"] == "done" and finished[0]["result"]["relabelled"] == 1
            assert finished[0]["result"]["fallbacks"] == []
            assert len(stub.requests) == 1
            labels, labelled_by = _delta_labels(root)[0]
            assert labelled_by == "llm:openai/labeller" and json.loads(labels) == ["Content/Count"]
            with pytest.raises(DaemonError, match="settings"):  # bad editor settings are refused up front
                await client.request("prompt/record", {"path": "blurb.prompt", "settings": {"tau": 7}})


async def test_no_relabel_job_without_an_assistant_model(root: Path, daemons: Daemons) -> None:
    (root / "spade.toml").write_text('daemon_idle_timeout_s = 30\nmodel = "openai/pipeline-only"\n', encoding="utf-8")
    daemons.start(root)
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        assert (await client.request("prompt/record", {"path": "blurb.prompt"}))["recorded"]
        jobs = await client.request("job/list", {})
    assert jobs == [] and _delta_labels(root)[0][1] is None


async def test_the_start_catch_up_is_a_quiet_period_event_never_a_read_of_its_own(root: Path) -> None:
    """The socket serves before the start's catch-up runs, so a client may be in the middle of an autosave burst
    of a prompt the catch-up re-reads: the catch-up hands each known prompt to the debouncer, as the watcher
    does, and records nothing itself (a read from the file mid-burst would add a version). Deterministic: the
    daemon's catch-up runs alone, with a debouncer that only notes what it is given."""
    from spade_lsp.workspace import Workspace, sync_prompt
    from spade_lsp_server.daemon._server import Daemon

    with Workspace(root) as workspace:
        sync_prompt(workspace, root / "blurb.prompt", git=False)
    (root / "blurb.prompt").write_text(PROMPT + "Use at most 10 words.\n", encoding="utf-8")  # changed meanwhile

    class NotingDebouncer:
        def __init__(self) -> None:
            self.touched: list[Path] = []

        def touch(self, path: Path) -> None:
            self.touched.append(path)

        def cancel_all(self) -> None:
            pass

    daemon = Daemon(root, idle_timeout_s=30)
    noted = NotingDebouncer()
    daemon._debouncer = noted  # type: ignore[assignment]
    try:
        await daemon._catch_up()
    finally:
        await daemon._shutdown_sequence()
    assert noted.touched == [root / "blurb.prompt"]
    assert versions(root, "blurb.prompt") == 1  # nothing recorded behind the debouncer's back
