"""``relabel``: label a prompt's deltas with the assistant model after they were recorded with offline labels
(the daemon queues one after each recorded save when an assistant model is configured)."""

from __future__ import annotations

from typing import Any

from spade_lsp._progress import Progress
from spade_lsp._relabel import wants_relabel_settings
from spade_lsp.jobs._spec import JobContext, JobParams, JobSpec

__all__ = ["SPEC", "RelabelParams", "wants_relabel_settings"]


class RelabelParams(JobParams):
    pass


def run(ctx: JobContext, params: RelabelParams, progress: Progress) -> dict[str, Any]:
    from spade_lsp._relabel import relabel_prompt

    return relabel_prompt(ctx.workspace, ctx.prompt, settings=ctx.settings, progress=progress).to_json()


SPEC = JobSpec("relabel", RelabelParams, run, "relabel the prompt's deltas with the assistant model")
