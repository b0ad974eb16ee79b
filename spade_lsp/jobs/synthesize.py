"""``synthesize``: candidates for the newest version's instructions (or only ``sentences``), planned into the
sidecar's text; written to disk only with ``write`` (default true). The editor passes ``write: false`` and its
buffer as ``sidecar_text``, and applies ``text`` itself. Candidates the labelled examples speak against are
held back (``held_back``, each with its reason) unless ``include_held_back``."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from spade_lsp._progress import Progress
from spade_lsp.jobs._spec import JobContext, JobParams, JobSpec, choice, expect, flag


class SynthesizeParams(JobParams):
    synthesizer: Literal["auto", "offline", "llm"] | None = choice("auto", "offline", "llm")
    sentences: list[str] | None = expect("a non-empty list of strings", min_length=1)
    sidecar_text: str | None = expect("a string")
    write: bool | None = flag()
    include_held_back: bool | None = flag()


def run(ctx: JobContext, params: SynthesizeParams, progress: Progress) -> dict[str, Any]:
    from spade_lsp._assertion_jobs import make_synthesizer, plan_synthesis, write_synthesis

    workspace = ctx.workspace
    synthesizer = make_synthesizer(workspace, params.synthesizer or "auto", settings=ctx.settings, prompt=ctx.prompt)
    result = plan_synthesis(
        workspace,
        ctx.prompt,
        synthesizer,
        settings=ctx.settings,
        sentences=params.sentences,
        sidecar_text=params.sidecar_text,
        include_held_back=bool(params.include_held_back),
        progress=progress,  # its last checkpoint comes before planning: nothing is written before it
    )
    if params.write is not False:
        write_synthesis(result)
    update = result.update
    return {
        "sidecar": str(update.path),
        "text": result.text,
        "written": update.written,
        "candidates": [dataclasses.asdict(candidate) for candidate in result.candidates],
        "added": update.added,
        "updated": update.updated,
        "unchanged": update.unchanged,
        "removed": update.removed,
        "kept_edited": update.kept_edited,
        "warnings": result.warnings,
        "fallbacks": result.fallbacks.to_json(),
        "verdicts": {name: verdict.to_json() for name, verdict in result.verdicts.items()},
        "held_back": [verdict.to_json() for verdict in result.held_back],
    }


SPEC = JobSpec("synthesize", SynthesizeParams, run, "write assertion candidates into the sidecar module")
