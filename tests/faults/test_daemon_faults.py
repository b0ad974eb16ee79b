"""The daemon under SIGKILL: 15 kills at seeded random moments while CLIs wait on sample, evaluate, judge and
synthesize jobs and an editor saves; then the store's integrity, every acknowledged version, run and
judgement exactly once, no false version, every job finished with its CLI told how. The 100-kill run is
tests/benchmarks/test_daemon_faults_bench.py (``make bench``)."""

from __future__ import annotations

from pathlib import Path

from tests.faults.injector import run_faults, stub_model

KILLS = 15
SEED = 20240615


def test_fifteen_sigkills_lose_nothing_acknowledged_and_record_no_false_version(tmp_path: Path) -> None:
    with stub_model() as stub:
        figures = run_faults(tmp_path / "ws", stub.api_base, kills=KILLS, seed=SEED)
    print(figures.report())
    assert figures.problems() == [], figures.report()
    assert figures.kills == KILLS
    assert figures.integrity == "ok"
    assert sum(figures.in_flight_at_kills) > 0, "no kill hit a job in flight"
    assert figures.jobs > 0 and figures.waits > 0 and figures.edits > 0
