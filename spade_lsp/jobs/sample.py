"""``sample``: a sampling run. Its rounds are stored as they finish, so a cancelled or killed run keeps its
outputs (and the LLM cache makes the rerun that resumes it cost nothing for them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from spade_lsp._progress import Progress
from spade_lsp.jobs._spec import JobContext, JobParams, JobSpec, choice, flag, number

if TYPE_CHECKING:
    from spade_lsp.reliability import SampleOptions


class SampleParams(JobParams):
    inputs: int | None = number(1, integer=True)
    samples: int | None = number(1, 10_000, integer=True)
    seed: int | None = number(0, integer=True)
    temperature: float | None = number(0, 2)
    interval: Literal["wilson", "clopper-pearson"] | None = choice("wilson", "clopper-pearson")
    confidence: float | None = number(0.5, 0.9999)
    early_stopping: bool | None = flag()
    verify: bool | None = flag()

    def options(self) -> SampleOptions:
        from spade_lsp.reliability import SampleOptions

        options: SampleOptions = SampleOptions(
            inputs=self.inputs,
            samples=self.samples,
            seed=self.seed or 0,
            temperature=self.temperature,
            early_stopping=self.early_stopping,
            interval=self.interval,
            confidence=self.confidence,
            verify=self.verify,
        )
        return options

    def check(self) -> None:
        self.options()  # the engine's own checks (InputError)


def run(ctx: JobContext, params: SampleParams, progress: Progress) -> dict[str, Any]:
    from spade_lsp.reliability import sample_prompt

    progress("planning the sampling run", 1.0)
    document: dict[str, Any] = sample_prompt(
        ctx.workspace, ctx.prompt, params.options(), settings=ctx.settings, progress=progress
    )
    return document


SPEC = JobSpec("sample", SampleParams, run, "sample the pipeline and measure how reliably it meets its checks")
