"""The CLI under SIGKILL, with no daemon: commands (sample, eval, synthesize, and edits recorded by history) are
killed at seeded random moments, and others are let finish. Afterwards, as for the daemon
(tests/faults/test_daemon_faults.py): the store passes SQLite's integrity check; every result a finished command
printed (a sampling run, an evaluation run, a recorded version) is in the store, once; no run is left running
once the next command has looked; no version holds a text that was never written, and no two neighbours are
the same (no false revert, no duplicate)."""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.blurb import sampling_workspace
from tests.support.openai_stub import OpenAIStub, chat_reply

KILLS = 12
SEED = 20261127
_FIRST_GUESS_S = 3.0  # a command's run time before one was measured


@dataclass
class Ledger:
    """What finished commands acknowledged, and what was killed."""

    sample_runs: list[int] = field(default_factory=list)
    eval_runs: list[int] = field(default_factory=list)
    written: list[str] = field(default_factory=list)  # every text the prompt file held
    recorded: list[str] = field(default_factory=list)  # texts a finished `history` acknowledged (the newest)
    kills: int = 0
    kills_mid_run: int = 0


def _spade(root: Path, *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "spade_lsp.cli", *argv],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _query(root: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(root / ".spade" / "spade.db") as db:
        return db.execute(sql).fetchall()


def _acknowledge(ledger: Ledger, command: str, out: str, text: str) -> None:
    if command == "sample":
        ledger.sample_runs.append(int(json.loads(out)["run_id"]))
    elif command == "eval":
        ledger.eval_runs.append(int(json.loads(out)["run_id"]))
    elif command == "history":
        ledger.recorded.append(text)


def test_sigkills_of_cli_commands_lose_nothing_acknowledged(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    prompt = sampling_workspace(root)
    chance = random.Random(SEED)
    ledger = Ledger(written=[prompt.read_text(encoding="utf-8")])
    # answers slow enough that a sampling run is still running within the kill window (0.5-5 s), however fast
    # the command starts
    with OpenAIStub(lambda request: chat_reply("A lovely thing for you.", delay_s=0.5)) as stub:
        (root / "spade.toml").write_text(f'model = "openai/stub"\napi_base = "{stub.api_base}"\n', encoding="utf-8")
        argv = {
            "sample": ["sample", str(prompt), "--inputs", "4", "--samples", "3", "--no-early-stop", "--json"],
            "eval": ["eval", str(prompt), "--json"],
            "synthesize": ["synthesize", str(prompt), "--synthesizer", "offline"],
            "history": ["history", str(prompt)],
        }
        took: dict[str, list[float]] = {}  # how long each command ran when let finish
        step = 0
        while ledger.kills < KILLS:
            step += 1
            command = chance.choice(list(argv))
            if command == "history":  # an edit, then the command that records it
                text = ledger.written[-1] + f"Rule {step}: keep it friendly.\n"
                prompt.write_text(text, encoding="utf-8")
                ledger.written.append(text)
            started = time.monotonic()
            process = _spade(root, *argv[command])
            kill = chance.random() < 0.5
            if kill:
                # a moment within the command's own run, as long as it takes on this machine today: a fixed
                # window left every kill after the end once the commands got faster
                time.sleep(chance.uniform(0.1, 0.9) * statistics.median(took.get(command) or [_FIRST_GUESS_S]))
                if process.poll() is None:
                    os.kill(process.pid, signal.SIGKILL)
                    ledger.kills_mid_run += 1
                ledger.kills += 1
            out, err = process.communicate(timeout=300)
            if not kill:
                took.setdefault(command, []).append(time.monotonic() - started)
            if process.returncode in (0, 1):  # finished (1: a check failed): its result is acknowledged
                assert "Traceback" not in err, err
                _acknowledge(ledger, command, out, prompt.read_text(encoding="utf-8"))
            elif process.returncode != -signal.SIGKILL:
                raise AssertionError(f"spade {command} exited {process.returncode}: {err}")
        settle = _spade(root, *argv["history"])  # the next command: settles what the kills left running
        _, err = settle.communicate(timeout=120)
        assert settle.returncode == 0, err

    assert _query(root, "PRAGMA integrity_check") == [("ok",)]
    assert _query(root, "SELECT COUNT(*) FROM sample_runs WHERE status = 'running'") == [(0,)]
    assert _query(root, "SELECT COUNT(*) FROM judge_runs WHERE status = 'running'") == [(0,)]
    done = {int(r[0]) for r in _query(root, "SELECT id FROM sample_runs WHERE status = 'done'")}
    assert set(ledger.sample_runs) <= done, (ledger.sample_runs, done)
    evaluated = {int(r[0]) for r in _query(root, "SELECT id FROM eval_runs WHERE status = 'done'")}
    assert set(ledger.eval_runs) <= evaluated
    versions = [
        str(r[0])
        for r in _query(
            root,
            "SELECT b.content FROM versions v JOIN blobs b ON b.hash = v.content_hash ORDER BY v.created_at, v.id",
        )
    ]
    assert set(versions) <= set(ledger.written), "a version holds a text that was never written"
    assert all(a != b for a, b in itertools.pairwise(versions)), "two neighbouring versions are equal"
    assert all(versions.count(text) == 1 for text in ledger.recorded), "an acknowledged version is missing or twice"
    positions = [ledger.written.index(text) for text in versions]
    assert positions == sorted(positions), "the versions are not in the order the texts were written"
    print(
        f"\nCLI faults: {ledger.kills} kills ({ledger.kills_mid_run} mid-run), {len(ledger.sample_runs)} sampling "
        f"and {len(ledger.eval_runs)} evaluation runs acknowledged, {len(versions)} versions"
    )
    assert ledger.kills_mid_run > 0, "no kill hit a running command"
