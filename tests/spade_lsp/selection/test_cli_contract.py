"""The DESIGN.md contract through the installed ``spade`` executable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SPADE = Path(sys.executable).with_name("spade")


def test_spade_select_matrix_json(shared_bench: Path) -> None:
    matrix = shared_bench / "spade" / "sportroutine" / "matrix.json"
    done = subprocess.run(
        [str(SPADE), "select", "--matrix", str(matrix), "--method", "sub", "--tau", "0.25", "--alpha", "0.6", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    for key in ("selected", "coverage", "ffr", "excluded_not_subsumed", "status", "solve_seconds"):
        assert key in document
    assert document["status"] == "optimal"
    bad = subprocess.run(
        [str(SPADE), "select", "--matrix", str(matrix.parent / "versions.json")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.startswith("spade: error:")
