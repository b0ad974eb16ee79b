"""``evaluate``: run the sidecar's assertions on the examples in the sandbox and store the pass matrix."""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from spade_lsp._progress import Progress
from spade_lsp.jobs._spec import JobContext, JobParams, JobSpec, number

#: Error cells a job result carries; the full list is in the stored evaluation run.
MAX_ERROR_CELLS: Final = 100


class EvaluateParams(JobParams):
    timeout_s: float | None = number(0.001)
    memory_mb: int | None = number(64, integer=True, nullable=True)
    workers: int | None = number(1, 64, integer=True)


def run(ctx: JobContext, params: EvaluateParams, progress: Progress) -> dict[str, Any]:
    from spade_lsp._assertion_jobs import evaluate
    from spade_lsp.sandbox import SandboxLimits

    limits = SandboxLimits()
    chosen = {
        key: getattr(params, key) for key in ("timeout_s", "memory_mb", "workers") if key in params.model_fields_set
    }
    if chosen:
        limits = dataclasses.replace(limits, **chosen)
    progress("running the assertions in the sandbox", 5.0)  # the run is stored as it ends: no checkpoint after
    run = evaluate(ctx.workspace, ctx.prompt, settings=ctx.settings, limits=limits)
    return {
        "run_id": run.run_id,
        "assertions": [a["name"] for a in run.assertions],
        "examples": len(run.examples),
        "errors": run.errors[:MAX_ERROR_CELLS],
        "errors_total": len(run.errors),
        "needs_model": run.needs_model,
        "needs_model_cells": sum(1 for e in run.errors if e.get("kind") == "needs_model"),  # not errors: no model
        "not_applicable_cells": sum(1 for e in run.errors if e.get("kind") == "not_applicable"),  # nor these
        "module_error": run.module_error,
        "warnings": run.warnings,
        "seconds": round(run.seconds, 3),
    }


SPEC = JobSpec("evaluate", EvaluateParams, run, "run the sidecar's assertions on the examples, in the sandbox")
