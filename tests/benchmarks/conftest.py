"""The benchmarks (``make bench``): every module here is marked ``benchmark``, and the session ends with every
figure it measured against its floor (see tests/support/floors.py)."""

from __future__ import annotations

import compileall
from pathlib import Path

import pytest

from tests.support.floors import BENCH_JSON, FIGURES

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session", autouse=True)
def _project_bytecode() -> None:
    """The project's own bytecode, written before anything is timed, as ``make bench`` does first (``make
    bytecode``): where PYTHONDONTWRITEBYTECODE is set (as here and on CI machines) every spade process a benchmark
    starts would otherwise compile spade's modules again, and a benchmark run with pytest alone on a fresh
    checkout would time that (one call from a cold start, 2026-12-04: about 3.3 s with it, 3.9 s without,
    medians of six)."""
    for package in ("spade_lsp", "server/spade_lsp_server", "client/spade_lsp_client"):
        compileall.compile_dir(ROOT / package, quiet=1)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Whatever sits under tests/benchmarks is a benchmark, marked or not, so ``-m "not benchmark"`` leaves it out."""
    for item in items:
        if "benchmarks" in item.path.parts and item.get_closest_marker("benchmark") is None:
            item.add_marker(pytest.mark.benchmark)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not FIGURES:
        return
    terminalreporter.section("benchmark figures against their floors")
    for figure in FIGURES:
        terminalreporter.line(figure.line)
    floored = [figure for figure in FIGURES if figure.floor is not None]
    missed = sum(not figure.ok for figure in floored)
    terminalreporter.line(
        f"{len(floored)} figures against a floor: {len(floored) - missed} ok, {missed} below floor; "
        f"{len(FIGURES) - len(floored)} without a floor; recorded in {BENCH_JSON}"
    )
