"""``review``: record the editor's (or the CLI's) acceptances of exact texts of LLM-written functions
(:mod:`spade_lsp._review`)."""

from __future__ import annotations

from typing import Any, Literal

from spade_lsp._progress import Progress
from spade_lsp._review import accepted_items
from spade_lsp.jobs._spec import JobContext, JobParams, JobSpec, choice


class ReviewParams(JobParams):
    accept: list[Any] | None = None
    by: Literal["editor", "cli"] | None = choice("editor", "cli")

    def items(self) -> list[tuple[str, str]]:
        return accepted_items(self.accept)

    def check(self) -> None:
        self.items()


def run(ctx: JobContext, params: ReviewParams, progress: Progress) -> dict[str, Any]:
    from spade_lsp._review import review_job

    return review_job(ctx.workspace, ctx.prompt, params.items(), by=params.by or "editor")


SPEC = JobSpec("review", ReviewParams, run, "accept reviewed LLM-written assertion code")
