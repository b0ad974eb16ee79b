"""``make bench``'s last lines: how many figures in ``bench.json`` met their floor, and a WARNING line for each
that did not. Never fails on a missed floor (exit 0); a missing or unreadable file is reported, also with 0,
since the benchmarks' own exit code already says whether they ran.

Usage: ``python tests/support/bench_summary.py [artifacts/bench.json]``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _line(key: str, figure: dict[str, Any]) -> str:
    unit = f" {figure['unit']}" if figure.get("unit") else ""
    value = f"{figure['value']:.4g}{unit}"
    if figure.get("floor") is None:
        return f"bench: {key}: {value} (no floor)"
    return f"bench: {key}: {value} (floor {figure.get('comparison') or ''} {figure['floor']:g}{unit}) BELOW FLOOR"


def summarise(path: Path) -> list[str]:
    try:
        figures: dict[str, dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    except OSError:
        return [f"bench summary: no figures recorded ({path} does not exist)"]
    except ValueError as error:
        return [f"bench summary: {path} is not valid JSON: {error}"]
    floored = {key: figure for key, figure in figures.items() if figure.get("floor") is not None}
    missed = {key: figure for key, figure in floored.items() if not figure.get("ok", True)}
    lines = [
        f"bench summary: {len(floored)} figures against a floor: {len(floored) - len(missed)} ok, "
        f"{len(missed)} below floor; {len(figures) - len(floored)} without a floor ({path})"
    ]
    lines += [f"WARNING: {_line(key, figure)}" for key, figure in sorted(missed.items())]
    return lines


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else Path("artifacts") / "bench.json"
    print("\n".join(summarise(path)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
