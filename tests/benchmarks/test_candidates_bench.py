"""The quality of offline candidates on the five shared SPADE pipelines, as a user would meet them.

Per pipeline, after importing its versions and examples, synthesizing offline and evaluating in the sandbox:
- *runnable*: candidates with a verdict on every example (no ``ask_llm``, which needs a model, and no error;
  a cell whose check does not apply to the example counts neither way);
- *noisy*: runnable candidates that flag more than tau of the good outputs (floor: at most 20% of runnable);
- *blind*: runnable candidates that catch no bad output;
- *exception cells*: cells that raised (a check that does not apply is no exception; floor: none);
- the best coverage at FFR <= tau after ``cov`` selection over the runnable candidates (the project's selector:
  the selection itself when coverage >= alpha is reachable, its ``best`` within tau otherwise).

Three readings, side by side:
- **raw**: every candidate written (``--include-held-back``): the checks themselves, before any data judged them;
- **in-sample**: candidates checked on all the labelled examples before they are written (what ``spade
  synthesize`` does), then evaluated on the same examples: noisy ones were held back by construction;
- **cross-validated**: two folds of the examples (whole inputs, ``fold_of``); candidates checked on one fold and
  evaluated on the other, so no candidate is scored on an example that decided whether it was offered. The
  figures are the two folds' totals (runnable, noisy, exception cells) and the mean of their best coverages.

The pipelines are the five of ``../shared/bench``; with ``SPADE_EXPERIMENTS`` naming a checkout of
``shreyashankar/spade-experiments``, also its pipelines the shared data lacks (``tests/support/spade_experiments.py``),
with their own coverage floor; and every pipeline of ``tests/data/fresh_pipelines`` (``FRESH``), with theirs.

Reproduce: ``.venv/bin/pytest -q -s tests/benchmarks/test_candidates_bench.py -p no:cacheprovider``
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from spade_lsp import usable_cpus
from tests.benchmarks.test_pipelines_e2e_bench import ALPHA, PIPELINES, TAU, run_pipeline
from tests.support.floors import at_least, at_most, figure, recorded_together
from tests.support.spade_experiments import extra_pipelines

pytestmark = pytest.mark.benchmark

#: Six prompts and 36 outputs written and labelled (by one annotator) for a review of the offline readings,
#: before any synthesis had run on them: prompts nothing here was fitted or written on, in the shared layout.
FRESH = Path(__file__).resolve().parents[1] / "data" / "fresh_pipelines"
FRESH_PIPELINES = tuple(sorted(p.name for p in (FRESH / "spade").iterdir() if p.is_dir()))
NOISY_SHARE_FLOOR = 0.20
COVERAGE_FLOOR = 0.4
FOLDS = 2
_NO_VERDICT = frozenset({"needs_model", "not_applicable"})


def quality(run: Any) -> dict[str, Any]:
    """Runnable, noisy and blind candidates of one evaluation run, and the best coverage within tau."""
    from spade_lsp.selection import eval_run_input, select

    good = [i for i, label in enumerate(run.y) if label == 1]
    bad = [i for i, label in enumerate(run.y) if label == 0]
    skipped = run.not_applicable_cells()
    faults = {(str(e["example"]), str(e["assertion"])) for e in run.errors if e["kind"] not in _NO_VERDICT}
    runnable: list[int] = []
    noisy: list[str] = []
    blind: list[str] = []
    for j, assertion in enumerate(run.assertions):
        column = [row[j] for row in run.m]
        if assertion.get("asks_llm") or any((run.examples[i], assertion["name"]) in faults for i in range(len(column))):
            continue
        runnable.append(j)
        applicable_good = [i for i in good if (i, j) not in skipped]
        if sum(column[i] == 0 for i in applicable_good) > TAU * len(applicable_good):
            noisy.append(assertion["name"])
        if not any(column[i] == 0 for i in bad):
            blind.append(assertion["name"])
    best = 0.0
    selected: list[str] = []
    if runnable and bad and good:  # a fold of a small pipeline may hold no bad (or no good) output: nothing to read
        index = {j: k for k, j in enumerate(runnable)}
        problem, _ = eval_run_input(
            [run.assertions[j] for j in runnable],
            run.y,
            [[row[j] for j in runnable] for row in run.m],
            not_applicable={(i, index[j]) for i, j in skipped if j in index},
        )
        chosen = select(problem, "cov", tau=TAU, alpha=ALPHA, folds=0, confidence=0.95)
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
        "exceptions": Counter(str(e["kind"]) for e in run.errors if e["kind"] not in _NO_VERDICT),
        "not_applicable": sum(1 for e in run.errors if e["kind"] == "not_applicable"),
        "error_assertions": sorted({str(e["assertion"]) for e in run.errors if e["kind"] not in _NO_VERDICT}),
        "best": best,
        "bad": len(bad),
        "good": len(good),
        "selected": selected,
    }


def _table(title: str, rows: list[tuple[str, dict[str, Any], int, int]]) -> None:
    print(f"\n{title}\n| pipeline | candidates | held back | runnable | flag > {TAU:g} of good | catch nothing |"
          f" exception cells | not applicable | best coverage at FFR <= {TAU:g} |")  # fmt: skip
    print("|---" * 9 + "|")
    for name, q, candidates, held in rows:
        share = len(q["noisy"]) / q["runnable"] if q["runnable"] else 0.0
        errors = ", ".join(f"{kind} {n}" for kind, n in sorted(q["exceptions"].items())) or "0"
        print(f"| {name} | {candidates} | {held} | {q['runnable']} | {len(q['noisy'])} ({share:.0%}) |"
              f" {len(q['blind'])} | {errors} | {q['not_applicable']} | {q['best']:.3f} |")  # fmt: skip


def _merged(folds: list[dict[str, Any]]) -> dict[str, Any]:
    """The folds of one pipeline as one row: counts added, the best coverage averaged over the folds that hold a
    bad output and a good one (a coverage within tau needs both)."""
    return {
        "runnable": sum(q["runnable"] for q in folds),
        "noisy": [name for q in folds for name in q["noisy"]],
        "blind": [name for q in folds for name in q["blind"]],
        "exceptions": sum((q["exceptions"] for q in folds), Counter()),
        "not_applicable": sum(q["not_applicable"] for q in folds),
        "error_assertions": sorted({a for q in folds for a in q["error_assertions"]}),
        "best": sum(q["best"] for q in scored) / len(scored)
        if (scored := [q for q in folds if q["bad"] and q["good"]])
        else 0.0,
        "selected": [name for q in folds for name in q["selected"]],
        "bad": sum(q["bad"] for q in folds),
        "good": sum(q["good"] for q in folds),
    }


Reading = tuple[str, dict[str, Any], int, int]


def _readings(root: Path, bench: Path, name: str) -> dict[str, Reading]:
    """One pipeline's three readings (raw, in-sample, cross-validated), each in workspaces of its own under
    ``root``."""
    out: dict[str, Reading] = {}
    synthesized, run = run_pipeline(root / "raw", bench, name, include_held_back=True)
    out["raw"] = (name, quality(run), len(synthesized.candidates), 0)
    synthesized, run = run_pipeline(root / "in", bench, name)
    out["in_sample"] = (name, quality(run), len(synthesized.candidates), len(synthesized.held_back))
    folds, candidates, held = [], 0, 0
    for k in range(FOLDS):
        synthesized, run = run_pipeline(root / "cv", bench, name, fold=(k, FOLDS))
        folds.append(quality(run))
        candidates += len(synthesized.candidates)
        held += len(synthesized.held_back)
    out["cv"] = (name, _merged(folds), candidates, held)
    return out


@pytest.mark.timeout(1800)  # a hundred pipelines, each synthesized and evaluated four times
def test_candidate_quality(tmp_path: Path, shared_bench: Path) -> None:
    extra = extra_pipelines(shared_bench, tmp_path / "experiments")
    sources = [(name, shared_bench) for name in PIPELINES] + [(name, tmp_path / "experiments") for name in extra]
    sources += [(name, FRESH) for name in FRESH_PIPELINES]
    # the figures do not depend on speed: the pipelines run a process per CPU (each its own workspaces), which
    # halves the benchmark's time on two cores
    spawn = multiprocessing.get_context("spawn")  # a fork of pytest would copy its threads' locks
    with concurrent.futures.ProcessPoolExecutor(usable_cpus(), mp_context=spawn) as pool:
        futures = [pool.submit(_readings, tmp_path / name, bench, name) for name, bench in sources]
        results = [future.result() for future in futures]
    readings: dict[str, list[Reading]] = {
        reading: [r[reading] for r in results] for reading in ("raw", "in_sample", "cv")
    }
    titles = {
        "raw": "raw: every candidate written (--include-held-back), evaluated on all examples",
        "in_sample": "in-sample: candidates checked on all labelled examples, then evaluated on them",
        "cv": f"cross-validated: checked on one of {FOLDS} folds of the examples, evaluated on the other (totals)",
    }
    with recorded_together():  # two thousand figures
        for reading, rows in readings.items():
            _table(titles[reading], rows)
            for name, q, _, _ in rows:
                print(f"{reading} {name}: noisy {q['noisy']}; blind {q['blind']}; raising {q['error_assertions']};"
                      f" selected {q['selected']}")  # fmt: skip
            for name, q, _, held in rows:
                if q["runnable"]:  # none runnable (every candidate needs a model, or was held back): no share to read
                    at_most(
                        f"{reading}_{name}_noisy_share",
                        len(q["noisy"]) / q["runnable"],
                        NOISY_SHARE_FLOOR,
                        "of runnable",
                    )
                at_most(f"{reading}_{name}_exception_cells", sum(q["exceptions"].values()), 0, "cells")
                figure(f"{reading}_{name}_runnable", q["runnable"], "candidates")
                figure(f"{reading}_{name}_held_back", held, "candidates")
                figure(f"{reading}_{name}_blind", len(q["blind"]), "candidates")
                figure(f"{reading}_{name}_not_applicable_cells", q["not_applicable"], "cells")
                figure(f"{reading}_{name}_best_coverage_within_tau", q["best"], "")
            for group, members in (("", PIPELINES), ("experiments_", extra), ("fresh_", FRESH_PIPELINES)):
                if members:
                    ours = [q for name, q, _, _ in rows if name in members]
                    noisy = sum(len(q["noisy"]) for q in ours) / max(sum(q["runnable"] for q in ours), 1)
                    at_most(f"{reading}_{group}all_noisy_share", noisy, NOISY_SHARE_FLOOR, "of runnable")
                    reached = sum(q["best"] >= COVERAGE_FLOOR for q in ours)
                    at_least(
                        f"{reading}_{group}pipelines_with_coverage_0.4_within_tau",
                        reached / len(members),
                        2 / 3,
                        "of pipelines",
                    )
