"""Benchmark figures against the issues' floors: printed, recorded to ``artifacts/bench.json``, never re-run.

The development machine and CI are virtual machines on shared hosts. They have slow spells in which everything
runs two to three times slower for a minute or so (seen in CI: the history and cold-start figures at 1.6-2x
their usual values in one run, the offline classifier's at 3.5x in another), which no median over a few seconds
can absorb. So a figure that depends on the machine's speed never fails a run: :func:`below`, :func:`at_most`
and :func:`at_least` print one line per figure,

    bench: test_history_bench.py::full_history_s: 0.8421 s (floor < 2 s) ok
    WARNING: bench: test_history_bench.py::full_history_s: 3.104 s (floor < 2 s) BELOW FLOOR

record it (``ok`` true or false) in ``artifacts/bench.json`` (``$SPADE_ARTIFACTS/bench.json`` when set), and
for a missed floor also issue a :class:`FloorMissed` warning, which pytest lists in its warnings summary. The
benchmarks' conftest prints every figure of the session again at the end. A benchmark that raises (a wrong
answer, a crash, a timeout) still fails: that is a functional failure, not a slow machine.

``strict=True`` is for a floor on a result that does not depend on the machine's speed (a seeded simulation's
coverage, the number of assertions a selection keeps): the figure is printed and recorded the same way, and a
miss then fails the benchmark, since no slow spell can explain it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "BENCH_JSON",
    "FIGURES",
    "Figure",
    "FloorMissed",
    "at_least",
    "at_most",
    "below",
    "figure",
    "record",
    "recorded_together",
]

ROOT = Path(__file__).resolve().parents[2]
BENCH_JSON = Path(os.environ.get("SPADE_ARTIFACTS", ROOT / "artifacts")) / "bench.json"

#: comparison -> (test, "better" direction)
_COMPARISONS = {
    "<": (lambda value, floor: value < floor, "lower"),
    "<=": (lambda value, floor: value <= floor, "lower"),
    ">=": (lambda value, floor: value >= floor, "higher"),
}


class FloorMissed(UserWarning):
    """A measured figure is worse than the floor the issue sets (a warning: the machine may be in a slow spell)."""


@dataclass(frozen=True)
class Figure:
    """One benchmark figure as printed and recorded."""

    key: str
    value: float
    unit: str
    floor: float | None
    comparison: str | None
    ok: bool

    @property
    def line(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        if self.floor is None:
            return f"bench: {self.key}: {self.value:.4g}{unit} (no floor)"
        verdict = "ok" if self.ok else "BELOW FLOOR"
        text = f"bench: {self.key}: {self.value:.4g}{unit} (floor {self.comparison} {self.floor:g}{unit}) {verdict}"
        return text if self.ok else f"WARNING: {text}"


#: Every figure reported in this session, in order (the benchmarks' conftest prints them at the end).
FIGURES: list[Figure] = []


def _caller() -> tuple[str, int]:
    """The benchmark module that reported the figure (the first frame outside this file), and the ``stacklevel``
    that points a warning at it from :func:`figure`."""
    frame, level = sys._getframe(2), 2
    while frame.f_code.co_filename == __file__ and frame.f_back is not None:
        frame, level = frame.f_back, level + 1
    return Path(frame.f_code.co_filename).name, level


def figure(
    name: str,
    value: float,
    unit: str,
    floor: float | None = None,
    comparison: str | None = None,
    *,
    runs: Iterable[float] = (),
    strict: bool = False,
) -> bool:
    """Print, record and check one figure; return whether it meets its floor (always true with no floor).

    ``comparison`` is how ``value`` must relate to ``floor``: ``"<"``, ``"<="`` or ``">="``. A miss prints a
    ``WARNING`` line and issues :class:`FloorMissed`; with ``strict`` it raises :class:`AssertionError` too.
    """
    if floor is None:
        ok, better = True, None
    else:
        if comparison not in _COMPARISONS:
            raise ValueError(f"comparison must be one of {sorted(_COMPARISONS)}, not {comparison!r}")
        test, better = _COMPARISONS[comparison]
        ok = bool(test(value, floor))
    module, stacklevel = _caller()
    result = Figure(f"{module}::{name}", float(value), unit, floor, comparison, ok)
    FIGURES.append(result)
    print(f"\n{result.line}", flush=True)
    record(result, better=better, runs=list(runs))
    if not ok:
        warnings.warn(FloorMissed(result.line.removeprefix("WARNING: ")), stacklevel=stacklevel)
        if strict:
            raise AssertionError(f"{result.line.removeprefix('WARNING: ')} (a result that does not depend on speed)")
    return ok


def below(
    name: str, value: float, floor: float, unit: str, *, runs: Iterable[float] = (), strict: bool = False
) -> bool:
    """``value`` (a time, a size) should stay under ``floor``."""
    return figure(name, value, unit, floor, "<", runs=runs, strict=strict)


def at_most(
    name: str, value: float, floor: float, unit: str, *, runs: Iterable[float] = (), strict: bool = False
) -> bool:
    """``value`` (a ratio to the ideal time) should not exceed ``floor``."""
    return figure(name, value, unit, floor, "<=", runs=runs, strict=strict)


def at_least(
    name: str, value: float, floor: float, unit: str, *, runs: Iterable[float] = (), strict: bool = False
) -> bool:
    """``value`` (a speed, a speed-up, a rate) should reach ``floor``."""
    return figure(name, value, unit, floor, ">=", runs=runs, strict=strict)


def record(result: Figure, *, better: str | None = None, runs: list[float] | None = None) -> None:
    """Merge one figure into ``bench.json`` (keyed by benchmark file and figure; other keys untouched), or, inside
    :func:`recorded_together`, at the end of that block.

    Safe for concurrent writers (a lock file, then an atomic replace). ``make bench`` removes the file first, so
    after it the file holds that run's figures only.
    """
    entry = {
        "value": round(result.value, 6),
        "unit": result.unit,
        "floor": result.floor,
        "comparison": result.comparison,
        "better": better,
        "ok": result.ok,
        "runs": [round(run, 6) for run in runs or []],
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if _pending is not None:
        _pending[result.key] = entry
    else:
        _merge({result.key: entry})


#: figures reported inside :func:`recorded_together`, not yet written
_pending: dict[str, dict[str, Any]] | None = None


@contextlib.contextmanager
def recorded_together() -> Iterator[None]:
    """The figures reported inside the block are written to ``bench.json`` once, when it ends (also by an
    exception): each write reads and rewrites the whole file, so a benchmark reporting two thousand figures one
    by one spent minutes on it."""
    global _pending
    if _pending is not None:  # already inside one
        yield
        return
    _pending = {}
    try:
        yield
    finally:
        pending, _pending = _pending, None
        if pending:
            _merge(pending)


def _merge(entries: dict[str, dict[str, Any]]) -> None:
    BENCH_JSON.parent.mkdir(parents=True, exist_ok=True)
    with BENCH_JSON.with_suffix(".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            figures: dict[str, Any] = json.loads(BENCH_JSON.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            figures = {}
        figures.update(entries)
        temporary = BENCH_JSON.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(temporary, BENCH_JSON)
