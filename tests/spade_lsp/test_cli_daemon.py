"""The CLI hands its writing jobs to the workspace daemon when one runs, and prints what it prints in-process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.spade_lsp_client.daemons import Daemons, daemons, make_workspace

__all__ = ["daemons"]


def _spade(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spade_lsp.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def _json(*args: str, cwd: Path) -> Any:
    result = _spade(*args, "--json", cwd=cwd)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def _jobs(root: Path) -> list[dict[str, Any]]:
    from spade_lsp.store import Store

    store = Store.open_readonly(root)
    assert store is not None
    with store:
        rows = store.db.query("SELECT kind, status, client FROM jobs ORDER BY id")
        return [{**row, "client": row["client"].split("-")[0]} for row in rows]  # the daemon numbers clients


def _without_timings(document: dict[str, Any]) -> dict[str, Any]:
    volatile = {"seconds", "solve_seconds", "run_id", "selection_id"}
    return {key: value for key, value in document.items() if key not in volatile}


def test_synthesize_eval_select_run_in_the_daemon_with_the_same_output(tmp_path: Path, daemons: Daemons) -> None:
    alone, shared = tmp_path / "alone", tmp_path / "shared"
    make_workspace(alone)
    make_workspace(shared)
    daemons.start(shared)

    for command in (["synthesize", "blurb.prompt"], ["eval", "blurb.prompt"], ["select", "blurb.prompt"]):
        here = _json(*command, cwd=alone)
        there = _json(*command, cwd=shared)
        assert _without_timings(there) == _without_timings(here), command

    assert (shared / "blurb_assertions.py").read_text() == (alone / "blurb_assertions.py").read_text()
    assert _jobs(shared) == [
        {"kind": "synthesize", "status": "done", "client": "cli"},
        {"kind": "evaluate", "status": "done", "client": "cli"},
        {"kind": "select", "status": "done", "client": "cli"},
    ]
    assert not (alone / ".spade" / "daemon.json").exists(), "no daemon is started when none runs"


def test_history_records_through_the_daemon_and_failures_keep_their_exit_code(tmp_path: Path, daemons: Daemons) -> None:
    prompt = make_workspace(tmp_path)
    daemons.start(tmp_path)
    assert len(_json("history", "blurb.prompt", cwd=tmp_path)["versions"]) == 1
    prompt.write_text(prompt.read_text() + "Mention the colour.\n", encoding="utf-8")
    history = _json("history", "blurb.prompt", cwd=tmp_path)
    assert len(history["versions"]) == 2  # recorded by the daemon (its watcher or the CLI's request), once
    assert _json("history", "blurb.prompt", "--no-sync", cwd=tmp_path) == history

    missing = _spade("eval", "nothing.prompt", cwd=tmp_path)
    assert missing.returncode == 2
    assert "nothing.prompt" in missing.stderr and "Traceback" not in missing.stderr


def test_a_model_given_on_the_command_line_goes_to_the_daemon_with_the_job(tmp_path: Path, daemons: Daemons) -> None:
    """``--model`` and ``--api-base`` beside a running daemon: the daemon (the store's one writer) samples, with
    them as the job's settings; the workspace's files name no model."""
    from tests.support.blurb import sampling_workspace
    from tests.support.openai_stub import OpenAIStub, chat_reply

    sampling_workspace(tmp_path)
    (tmp_path / "spade.toml").write_text('classifier = "offline"\n', encoding="utf-8")
    daemons.start(tmp_path)
    with OpenAIStub(lambda request: chat_reply("A lovely thing.")) as stub:
        flags = ["--model", "openai/from-the-command-line", "--api-base", stub.api_base, "--samples", "2"]
        document = _json("sample", "blurb.prompt", *flags, cwd=tmp_path)
    assert document["model"] == "openai/from-the-command-line" and document["calls"] == 8
    assert {r["model"] for r in stub.requests} == {"from-the-command-line"}
    assert _jobs(tmp_path) == [{"kind": "sample", "status": "done", "client": "cli"}]
