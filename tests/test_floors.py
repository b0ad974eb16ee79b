"""The benchmark figures' record: one figure at a time, or many written together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import floors


def test_figures_reported_together_are_written_once_at_the_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = tmp_path / "bench.json"
    monkeypatch.setattr(floors, "BENCH_JSON", bench)
    monkeypatch.setattr(floors, "FIGURES", [])
    floors.figure("before", 1.0, "s")
    with floors.recorded_together():
        floors.figure("inside", 2.0, "s")
        with pytest.warns(floors.FloorMissed):
            floors.at_most("missed", 3.0, 2.0, "x")
        assert set(json.loads(bench.read_text())) == {"test_floors.py::before"}
    written = json.loads(bench.read_text())
    assert set(written) == {"test_floors.py::before", "test_floors.py::inside", "test_floors.py::missed"}
    assert written["test_floors.py::missed"]["ok"] is False and written["test_floors.py::inside"]["value"] == 2.0


def test_figures_reported_together_are_kept_when_the_block_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = tmp_path / "bench.json"
    monkeypatch.setattr(floors, "BENCH_JSON", bench)
    monkeypatch.setattr(floors, "FIGURES", [])
    with pytest.raises(RuntimeError), floors.recorded_together():
        floors.figure("measured", 1.0, "s")
        raise RuntimeError("a benchmark failed after its first figure")
    assert set(json.loads(bench.read_text())) == {"test_floors.py::measured"}
    floors.figure("after", 2.0, "s")  # written at once again
    assert set(json.loads(bench.read_text())) == {"test_floors.py::measured", "test_floors.py::after"}
