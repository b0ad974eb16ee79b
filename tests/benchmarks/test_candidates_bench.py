"""Issue: candidates that make sense. The quality of offline candidates on the five shared SPADE pipelines.

Per pipeline, after importing its versions and examples, synthesizing offline and evaluating in the sandbox:
- *runnable*: candidates with a verdict on every example (no ``ask_llm``, which needs a model, and no error);
- *noisy*: runnable candidates that flag more than tau of the good outputs (floor: at most 20% of runnable);
- *blind*: runnable candidates that catch no bad output;
- *errors*: error cells, by kind (a failure to measure is a named kind, never an exception's);
- the best coverage at FFR <= tau after ``cov`` selection over the runnable candidates (the project's selector:
  the selection itself when coverage >= alpha is reachable, its ``best`` within tau otherwise).

Reproduce: ``.venv/bin/pytest -q -s tests/benchmarks/test_candidates_bench.py -p no:cacheprovider``
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks.test_pipelines_e2e_bench import ALPHA, PIPELINES, TAU, run_pipeline
from tests.support.floors import at_most, figure

pytestmark = pytest.mark.benchmark

NOISY_SHARE_FLOOR = 0.20


def quality(run: Any) -> dict[str, Any]:
    """Runnable, noisy and blind candidates of one evaluation run, and the best coverage within tau."""
    from spade_lsp.selection import eval_run_input, select

    good = [i for i, label in enumerate(run.y) if label == 1]
    bad = [i for i, label in enumerate(run.y) if label == 0]
    runnable: list[int] = []
    noisy: list[str] = []
    blind: list[str] = []
    for j, assertion in enumerate(run.assertions):
        column = [row[j] for row in run.m]
        if assertion.get("asks_llm") or any(cell is None for cell in column):
            continue
        runnable.append(j)
        if sum(column[i] == 0 for i in good) > TAU * len(good):
            noisy.append(assertion["name"])
        if not any(column[i] == 0 for i in bad):
            blind.append(assertion["name"])
    best = 0.0
    selected: list[str] = []
    if runnable:
        problem, _ = eval_run_input(
            [run.assertions[j] for j in runnable], run.y, [[row[j] for j in runnable] for row in run.m]
        )
        chosen = select(problem, "cov", tau=TAU, alpha=ALPHA, folds=0)
        if chosen.status == "infeasible":
            reached = chosen.best or {}
            best, selected = float(reached.get("coverage") or 0.0), list(reached.get("selected") or [])
        else:
            best, selected = float(chosen.coverage or 0.0), list(chosen.selected)
    return {
        "runnable": len(runnable),
        "noisy": noisy,
        "blind": blind,
        "useful": len(runnable) - len(set(noisy) | set(blind)),
        "errors": Counter(str(error["kind"]) for error in run.errors),
        "error_assertions": sorted({str(error["assertion"]) for error in run.errors}),
        "best": best,
        "selected": selected,
    }


def test_candidate_quality(tmp_path: Path, shared_bench: Path) -> None:
    rows: list[tuple[str, dict[str, Any], int]] = []
    for name in PIPELINES:
        synthesized, run = run_pipeline(tmp_path, shared_bench, name)
        rows.append((name, quality(run), len(synthesized.candidates)))
    print(f"\n| pipeline | candidates | runnable | flag > {TAU:g} of good | catch nothing | useful | error cells |"
          f" best coverage at FFR <= {TAU:g} |")  # fmt: skip
    print("|---" * 8 + "|")
    total_runnable = total_noisy = 0
    for name, q, candidates in rows:
        share = len(q["noisy"]) / q["runnable"] if q["runnable"] else 0.0
        errors = ", ".join(f"{kind} {n}" for kind, n in sorted(q["errors"].items())) or "0"
        print(f"| {name} | {candidates} | {q['runnable']} | {len(q['noisy'])} ({share:.0%}) | {len(q['blind'])} |"
              f" {q['useful']} | {errors} | {q['best']:.3f} |")  # fmt: skip
        total_runnable += q["runnable"]
        total_noisy += len(q["noisy"])
    for name, q, _ in rows:
        print(f"{name}: noisy {q['noisy']}; blind {q['blind']}; erroring {q['error_assertions']};"
              f" selected {q['selected']}")  # fmt: skip
    for name, q, _ in rows:
        assert q["runnable"] > 0, name
        share = len(q["noisy"]) / q["runnable"]
        at_most(f"{name}_noisy_share", share, NOISY_SHARE_FLOOR, "of runnable")
        figure(f"{name}_runnable", q["runnable"], "candidates")
        figure(f"{name}_blind", len(q["blind"]), "candidates")
        figure(f"{name}_error_cells", sum(q["errors"].values()), "cells")
        figure(f"{name}_best_coverage_within_tau", q["best"], "")
    at_most("all_noisy_share", total_noisy / max(total_runnable, 1), NOISY_SHARE_FLOOR, "of runnable")
