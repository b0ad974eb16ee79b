"""Benchmark: 100 SIGKILLs of the workspace daemon at seeded random moments while CLIs wait on sample,
evaluate, judge and synthesize jobs and an editor saves prompts (tests/faults/injector.py). Self-contained: it
prints its figures and asserts the invariants (integrity_check ok, every acknowledged version, run and
judgement exactly once, no false version, every job finished and its CLI told how). About 5 to 6 minutes on
two cores. Run with ``make bench`` or ``pytest -q -s tests/benchmarks/test_daemon_faults_bench.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.injector import run_faults, stub_model

pytestmark = pytest.mark.benchmark

KILLS = 100
SEED = 20240615


def test_one_hundred_sigkills(tmp_path: Path) -> None:
    with stub_model() as stub:
        figures = run_faults(tmp_path / "ws", stub.api_base, kills=KILLS, seed=SEED)
    print()
    print(figures.report())
    assert figures.problems() == [], figures.report()
    assert figures.kills == KILLS and figures.integrity == "ok" and not figures.false_versions
