"""The daemon fault injector: SIGKILL the workspace daemon at seeded random moments while CLIs wait on jobs
(sample, evaluate, judge, synthesize) and an editor saves prompts, then check the store.

After the last kill a clean daemon finishes what is left and the store must hold: ``PRAGMA integrity_check``
ok; every acknowledged version present exactly once, and each prompt's history a subsequence, in order, of
the texts the editor wrote (no false version, no false revert); every job finished (done, failed with a
reason, or cancelled), and every waiting CLI told how its job ended; every acknowledged sampling run, judge
run and evaluation present exactly once, with all its rows; no run left ``running``. LLM calls go through the
real litellm client to the loopback stub. The kill schedule comes from ``seed``, so a run can be replayed
(the interleaving with the daemon's threads still varies).
"""

from __future__ import annotations

import ast
import asyncio
import collections
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade_lsp.store import INTERRUPTED
from spade_lsp_client import DaemonClient, DaemonError, DaemonUnavailableError, daemon_running, run_job
from tests.spade_lsp_client.daemons import daemon_pid, process_gone
from tests.support.blurb import EXAMPLES, SAMPLING_SIDECAR, V3
from tests.support.openai_stub import OpenAIStub, judge_model

NOTES = "Summarise the meeting notes.\nAnswer in JSON.\nKeep it under 50 words.\n"
SAMPLE_INPUTS, SAMPLES = 4, 3
WAITERS = 3


@dataclass
class Figures:
    """What a fault run did and what the store held afterwards."""

    seed: int
    kills: int = 0
    restarts_by_clients: int = 0
    in_flight_at_kills: list[int] = field(default_factory=list)  # queued or running jobs when each kill hit
    running_at_kills: collections.Counter[str] = field(default_factory=collections.Counter)  # by kind
    edits: int = 0
    saves_acknowledged: int = 0
    jobs: int = 0
    outcomes: collections.Counter[str] = field(default_factory=collections.Counter)
    resumed: int = 0  # done after more than one attempt
    failure_reasons: collections.Counter[str] = field(default_factory=collections.Counter)
    waits: int = 0
    waits_lost: list[str] = field(default_factory=list)  # a CLI that never learnt how its job ended
    waits_wrong: list[str] = field(default_factory=list)  # a CLI told another ending than the store holds
    submits_unanswered: int = 0  # the daemon died before answering job/submit (nothing acknowledged)
    integrity: str = ""
    foreign_key_problems: int = 0
    versions: dict[str, int] = field(default_factory=dict)
    false_versions: list[str] = field(default_factory=list)
    acknowledged_missing: list[str] = field(default_factory=list)
    acknowledged_twice: list[str] = field(default_factory=list)
    newest_not_on_disk: list[str] = field(default_factory=list)
    unfinished_jobs: list[int] = field(default_factory=list)
    failed_without_reason: list[int] = field(default_factory=list)
    runs_acknowledged: collections.Counter[str] = field(default_factory=collections.Counter)
    run_problems: list[str] = field(default_factory=list)
    runs_interrupted: collections.Counter[str] = field(default_factory=collections.Counter)
    runs_left_running: int = 0
    unacknowledged_done_runs: collections.Counter[str] = field(default_factory=collections.Counter)
    seconds: float = 0.0

    def problems(self) -> list[str]:
        """Everything that breaks the invariants (empty when the run is clean)."""
        out: list[str] = []
        if self.integrity != "ok":
            out.append(f"integrity_check: {self.integrity}")
        if self.foreign_key_problems:
            out.append(f"{self.foreign_key_problems} foreign key problem(s)")
        for name in (
            "waits_lost",
            "waits_wrong",
            "false_versions",
            "acknowledged_missing",
            "acknowledged_twice",
            "newest_not_on_disk",
            "unfinished_jobs",
            "failed_without_reason",
            "run_problems",
        ):
            if getattr(self, name):
                out.append(f"{name}: {getattr(self, name)}")
        if self.runs_left_running:
            out.append(f"{self.runs_left_running} run(s) left running")
        return out

    def report(self) -> str:
        in_flight = self.in_flight_at_kills
        lines = [
            f"daemon fault injection (seed {self.seed}): {self.kills} SIGKILLs in {self.seconds:.0f} s",
            f"  jobs in flight at a kill: {sum(in_flight)} in all, mean {sum(in_flight) / max(len(in_flight), 1):.1f}, "
            f"max {max(in_flight, default=0)}; running by kind: {dict(sorted(self.running_at_kills.items()))}",
            f"  jobs: {self.jobs} ({dict(sorted(self.outcomes.items()))}); resumed after a kill and done: "
            f"{self.resumed}; failures: {dict(self.failure_reasons)}",
            f"  waiting CLIs: {self.waits}, every one told its job's ending: {not self.waits_lost}; "
            f"submits the daemon died before answering: {self.submits_unanswered}",
            f"  edits: {self.edits}, editor saves acknowledged: {self.saves_acknowledged}; versions: {self.versions}; "
            f"false versions: {len(self.false_versions)}; acknowledged versions missing "
            f"{len(self.acknowledged_missing)}, twice {len(self.acknowledged_twice)}",
            f"  runs acknowledged: {dict(sorted(self.runs_acknowledged.items()))}; interrupted at a kill: "
            f"{dict(sorted(self.runs_interrupted.items()))}; left running: {self.runs_left_running}; finished "
            f"but never acknowledged (the kill fell between the run's and the job's commit): "
            f"{dict(sorted(self.unacknowledged_done_runs.items()))}",
            f"  PRAGMA integrity_check: {self.integrity}; foreign key problems: {self.foreign_key_problems}; "
            f"problems: {self.problems() or 'none'}",
        ]
        return "\n".join(lines)


def make_workspace(root: Path, api_base: str) -> dict[str, Path]:
    """``blurb.prompt`` (sampled, evaluated, judged against grading notes) and ``notes.prompt`` (synthesized)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "spade.toml").write_text(
        f'daemon_idle_timeout_s = 60\nmodel = "openai/stub"\napi_base = "{api_base}"\n', encoding="utf-8"
    )
    blurb = root / "blurb.prompt"
    blurb.write_text(V3, encoding="utf-8")
    notes = {"g1": "names the kettle", "b1": "does not call it cheap", "g2": "mentions reading"}
    lines = [{**e, "grading_note": notes[e["id"]]} if e["id"] in notes else e for e in EXAMPLES]
    (root / "blurb.examples.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
    (root / "blurb_assertions.py").write_text(SAMPLING_SIDECAR, encoding="utf-8")
    meeting = root / "notes.prompt"
    meeting.write_text(NOTES, encoding="utf-8")
    return {"blurb.prompt": blurb, "notes.prompt": meeting}


@contextmanager
def stub_model() -> Iterator[OpenAIStub]:
    """The pipeline's model and the judge, on loopback: each answer after 50 ms."""
    with OpenAIStub(judge_model(0.05)) as stub:
        yield stub


class _Daemon:
    """Starts the workspace's daemon and SIGKILLs whichever daemon holds its lock."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        command = [sys.executable, "-m", "spade_lsp_server.daemon", "--root", str(self.root), "--idle-timeout", "60"]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, cwd=self.root)
        self.processes.append(process)
        deadline = time.monotonic() + 30
        while not daemon_running(self.root):  # ours, or one a reconnecting CLI started meanwhile
            if time.monotonic() > deadline:
                raise RuntimeError(f"no daemon listens for {self.root} after 30 s")
            time.sleep(0.02)

    def kill(self) -> int | None:
        pid = daemon_pid(self.root)
        if pid is None:
            return None
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not process_gone(pid) and time.monotonic() < deadline:
            for process in self.processes:
                process.poll()  # reap ours
            time.sleep(0.01)
        return pid

    def stop(self) -> None:
        pid = daemon_pid(self.root)
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 20
            while not process_gone(pid) and time.monotonic() < deadline:
                for process in self.processes:
                    process.poll()
                time.sleep(0.02)
            if not process_gone(pid):
                os.kill(pid, signal.SIGKILL)
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait(10)


def _db(root: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{(root / '.spade' / 'spade.db').as_uri()}?mode=ro", uri=True, timeout=30)


class _Run:
    def __init__(self, root: Path, api_base: str, prompts: dict[str, Path], seed: int) -> None:
        self.root = root
        self.api_base = api_base
        self.prompts = prompts
        self.rng = random.Random(seed)
        self.seed = seed
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.written: dict[str, list[str]] = {key: [path.read_text(encoding="utf-8")] for key, path in prompts.items()}
        self.acknowledged: list[tuple[str, str]] = []  # (prompt, text) an editor save was told is recorded
        self.waited: list[tuple[int, str]] = []  # (job id, status the CLI was told)
        self.lost: list[str] = []
        self.unanswered = 0

    # -- the actors ------------------------------------------------------------------------------------

    def job(self, rng: random.Random) -> tuple[str, str, dict[str, Any]]:
        kind = rng.choice(["sample", "sample", "evaluate", "judge", "synthesize"])
        if kind == "sample":
            temperature = rng.choice([0.2, 0.5, 0.8, 1.0])
            params = {"inputs": SAMPLE_INPUTS, "samples": SAMPLES, "early_stopping": False, "temperature": temperature}
            return kind, "blurb.prompt", params
        if kind == "evaluate":
            return kind, "blurb.prompt", {"workers": 2}
        if kind == "judge":
            judge = {"assistant_model": "openai/judge", "assistant_api_base": self.api_base}
            return kind, "blurb.prompt", {"grading_notes": True, "settings": judge}
        return kind, "notes.prompt", {"synthesizer": "offline", "write": True}

    def waiter(self, number: int) -> None:
        """A CLI in a loop: submit a job, wait for it across daemon restarts (``run_job``, as ``spade`` does)."""
        rng = random.Random(self.seed * 1000 + number)
        while not self.stop.is_set():
            kind, key, params = self.job(rng)
            if not daemon_running(self.root):
                time.sleep(0.05)  # the CLI would work in-process; here it waits for the daemon
                continue
            try:
                job = run_job(
                    self.root,
                    kind,
                    self.prompts[key],
                    params,
                    client_name=f"cli{number}",
                    timeout_s=300,
                    reconnect_timeout_s=60,
                )
            except DaemonUnavailableError as error:
                with self.lock:
                    if "was waited for" in str(error):
                        self.lost.append(f"{kind}: {error}")  # after the job was acknowledged
                    else:
                        self.unanswered += 1  # connecting or submitting failed: nothing was acknowledged
                continue
            except DaemonError as error:
                with self.lock:
                    self.lost.append(f"{kind}: {error}")
                continue
            with self.lock:
                self.waited.append((int(job["id"]), str(job["status"])))

    def editor(self) -> None:
        """Edits both prompts with texts never seen before (atomic saves), and tells the daemon about half of
        them as an editor does after saving."""
        rng = random.Random(self.seed * 1000 + 999)
        number = 0
        while not self.stop.is_set():
            time.sleep(rng.uniform(0.1, 0.5))
            key = rng.choice(sorted(self.prompts))
            number += 1
            path = self.prompts[key]
            base = V3 if key == "blurb.prompt" else NOTES
            text = base + f"Edit {number}: keep it under {10 + number % 7} words.\n"
            with self.lock:
                self.written[key].append(text)
            temporary = path.with_name(f".{path.name}.tmp")
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, path)
            if rng.random() < 0.5:
                self.save(key, text)

    def save(self, key: str, text: str) -> None:
        async def record() -> dict[str, Any] | None:
            try:
                async with await DaemonClient.connect(self.root, client_name="editor", start=False) as client:
                    answer: dict[str, Any] = await client.request("prompt/record", {"path": key, "text": text})
                    return answer
            except DaemonUnavailableError:
                return None  # the daemon was down: the save is not acknowledged (the watcher records it)

        answer = asyncio.run(record())
        if answer is not None:
            with self.lock:
                self.acknowledged.append((key, text))


def run_faults(root: Path, api_base: str, *, kills: int, seed: int) -> Figures:
    """``kills`` SIGKILLs of the workspace daemon at seeded random moments, then the checks; the figures."""
    started = time.monotonic()
    prompts = make_workspace(root, api_base)
    figures = Figures(seed=seed)
    run = _Run(root, api_base, prompts, seed)
    daemon = _Daemon(root)
    daemon.start()
    actors = [threading.Thread(target=run.waiter, args=(n,), name=f"cli{n}") for n in range(WAITERS)]
    actors.append(threading.Thread(target=run.editor, name="editor"))
    for actor in actors:
        actor.start()
    try:
        for _ in range(kills):
            time.sleep(run.rng.uniform(0.3, 2.5))  # the kill point, from the seed
            with _db(root) as db:
                rows = db.execute("SELECT kind, status FROM jobs WHERE status IN ('queued', 'running')").fetchall()
            figures.in_flight_at_kills.append(len(rows))
            figures.running_at_kills.update(kind for kind, status in rows if status == "running")
            if daemon.kill() is not None:
                figures.kills += 1
            time.sleep(run.rng.uniform(0.0, 0.3))
            daemon.start()
        run.stop.set()
        for actor in actors:
            actor.join(400)
            if actor.is_alive():
                raise RuntimeError(f"{actor.name} did not finish")
        _settle(root, run)
    finally:
        run.stop.set()
        daemon.stop()
    figures.restarts_by_clients = max(0, len(_started_pids(root)) - len(daemon.processes))
    _check(root, run, figures)
    figures.seconds = time.monotonic() - started
    return figures


def _started_pids(root: Path) -> set[str]:
    log = (root / ".spade" / "daemon.log").read_text(encoding="utf-8", errors="replace")
    return {line.split("(pid ")[1].split(")")[0] for line in log.splitlines() if "serving" in line and "(pid " in line}


def _settle(root: Path, run: _Run) -> None:
    """Wait until no job is active and each prompt's newest version is its file's text (the watcher's)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with _db(root) as db:
            active = db.execute("SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')").fetchone()[0]
            newest = {key: _texts(db, key)[-1:] for key in run.prompts}
        if not active and all(newest[key] == [path.read_text(encoding="utf-8")] for key, path in run.prompts.items()):
            return
        time.sleep(0.2)


def _texts(db: sqlite3.Connection, key: str) -> list[str]:
    rows = db.execute(
        "SELECT b.content FROM versions v JOIN prompts p ON p.id = v.prompt_id JOIN blobs b ON b.hash = "
        "v.content_hash WHERE p.path = ? ORDER BY v.created_at, v.id",
        [key],
    ).fetchall()
    return [str(row[0]) for row in rows]


def _check(root: Path, run: _Run, figures: Figures) -> None:
    figures.edits = sum(len(texts) - 1 for texts in run.written.values())
    figures.saves_acknowledged = len(run.acknowledged)
    figures.waits = len(run.waited) + len(run.lost)
    figures.waits_lost = list(run.lost)
    figures.submits_unanswered = run.unanswered
    with _db(root) as db:
        figures.integrity = "; ".join(str(row[0]) for row in db.execute("PRAGMA integrity_check"))
        figures.foreign_key_problems = len(db.execute("PRAGMA foreign_key_check").fetchall())
        # versions: the texts written, in order, each once; every acknowledged save there exactly once
        for key, path in run.prompts.items():
            recorded = _texts(db, key)
            figures.versions[key] = len(recorded)
            order = {text: index for index, text in enumerate(run.written[key])}
            previous = -1
            for number, text in enumerate(recorded, 1):
                position = order.get(text)
                if position is None or position <= previous:
                    figures.false_versions.append(f"{key} v{number} (edit {position}, after edit {previous})")
                previous = position if position is not None else previous
            if recorded[-1:] != [path.read_text(encoding="utf-8")]:
                figures.newest_not_on_disk.append(key)
            for acknowledged_key, text in run.acknowledged:
                if acknowledged_key == key:
                    count = recorded.count(text)
                    if count == 0:
                        figures.acknowledged_missing.append(f"{key}: {text.splitlines()[-1]}")
                    elif count > 1:
                        figures.acknowledged_twice.append(f"{key}: {text.splitlines()[-1]}")
        # jobs: each finished, a failure with its reason; each CLI told the ending the store holds
        jobs = {
            int(row[0]): row[1:]
            for row in db.execute("SELECT id, kind, status, attempts, error, result FROM jobs ORDER BY id")
        }
        figures.jobs = len(jobs)
        for job_id, (kind, status, attempts, error, _) in jobs.items():
            figures.outcomes[f"{kind} {status}"] += 1
            if status in ("queued", "running"):
                figures.unfinished_jobs.append(job_id)
            if status == "failed":
                if not error:
                    figures.failed_without_reason.append(job_id)
                figures.failure_reasons[str(error).split(";")[0][:60]] += 1
            if status == "done" and attempts > 1:
                figures.resumed += 1
        for job_id, told in run.waited:
            if jobs[job_id][1] != told:
                figures.waits_wrong.append(f"job {job_id}: told {told}, stored {jobs[job_id][1]}")
        _check_runs(db, jobs, figures)
    sidecar = root / "notes_assertions.py"
    if sidecar.exists():
        try:
            ast.parse(sidecar.read_text(encoding="utf-8"))
        except SyntaxError as error:
            figures.run_problems.append(f"{sidecar.name} is not Python: {error}")


def _check_runs(db: sqlite3.Connection, jobs: dict[int, tuple[Any, ...]], figures: Figures) -> None:
    """Every run a done job acknowledged is there once, finished, with all its rows; none is left running."""
    acknowledged: dict[str, list[int]] = collections.defaultdict(list)
    for job_id, (kind, status, _, _, result) in jobs.items():
        if status != "done" or kind not in ("sample", "judge", "evaluate"):
            continue
        run_id = json.loads(result)["run_id"]
        acknowledged[kind].append(int(run_id))
        if kind == "sample":
            row = db.execute("SELECT status, document, inputs, validators FROM sample_runs WHERE id = ?", [run_id])
            found = row.fetchall()
            if len(found) != 1 or found[0][0] != "done" or found[0][1] is None:
                figures.run_problems.append(f"job {job_id}: sampling run {run_id} is {found}")
                continue
            cells = len(json.loads(found[0][2])) * SAMPLES
            outputs = db.execute("SELECT COUNT(*) FROM sample_outputs WHERE run_id = ?", [run_id]).fetchone()[0]
            results = db.execute("SELECT COUNT(*) FROM sample_results WHERE run_id = ?", [run_id]).fetchone()[0]
            if outputs != cells or results != cells * len(json.loads(found[0][3])):
                figures.run_problems.append(f"sampling run {run_id}: {outputs} outputs, {results} results")
        elif kind == "judge":
            found = db.execute("SELECT status, parameters FROM judge_runs WHERE id = ?", [run_id]).fetchall()
            if len(found) != 1 or found[0][0] != "done":
                figures.run_problems.append(f"job {job_id}: judge run {run_id} is {found}")
                continue
            questions = json.loads(found[0][1])["questions"]
            judged = db.execute("SELECT COUNT(*) FROM judgements WHERE run_id = ?", [run_id]).fetchone()[0]
            if judged != questions:
                figures.run_problems.append(f"judge run {run_id}: {judged} judgements of {questions}")
        else:
            found = db.execute("SELECT status FROM eval_runs WHERE id = ?", [run_id]).fetchall()
            if found != [("done",)]:
                figures.run_problems.append(f"job {job_id}: evaluation run {run_id} is {found}")
    for kind, ids in acknowledged.items():
        figures.runs_acknowledged[kind] = len(ids)
        if len(set(ids)) != len(ids):
            figures.run_problems.append(f"{kind}: a run acknowledged by two jobs")
    for kind, table, error in (
        ("sample", "sample_runs", "error"),
        ("judge", "judge_runs", "error"),
        ("evaluate", "eval_runs", "NULL"),
    ):
        rows = db.execute(f"SELECT id, status, {error} FROM {table}").fetchall()
        figures.runs_left_running += sum(1 for _, status, _ in rows if status == "running")
        figures.runs_interrupted[kind] = sum(1 for _, _, error in rows if str(error or "").startswith(INTERRUPTED))
        done = {run_id for run_id, status, _ in rows if status == "done"}
        figures.unacknowledged_done_runs[kind] = len(done - set(acknowledged.get(kind, [])))
