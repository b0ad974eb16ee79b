"""``sample``: a sampling run. Its rounds are stored as they finish, so a cancelled or killed run keeps its
outputs (and the LLM cache makes the rerun that resumes it cost nothing for them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from spade_lsp._progress import Progress
from spade_lsp.jobs._spec import JobContext, JobParams, JobSpec, flag, number, setting

if TYPE_CHECKING:
    from spade_lsp.reliability import SampleOptions


class SampleParams(JobParams):
    """One run's sampling knobs: each but ``seed`` sets a setting for this run, within its bounds, resolved with
    the job's other settings."""

    inputs: int | None = setting("sample_inputs")
    samples: int | None = setting("samples_per_input")
    seed: int | None = number(0, integer=True)
    temperature: float | None = setting("temperature")
    interval: Literal["wilson", "clopper-pearson"] | None = setting("interval")
    confidence: float | None = setting("confidence")
    early_stopping: bool | None = setting("early_stopping")
    verify: bool | None = flag(setting="verifier")  # true: the verifier with its default criteria

    def options(self) -> SampleOptions:
        from spade_lsp.reliability import SampleOptions

        options: SampleOptions = SampleOptions(seed=self.seed or 0)
        return options


def run(ctx: JobContext, params: SampleParams, progress: Progress) -> dict[str, Any]:
    from spade_lsp.reliability import sample_prompt

    progress("planning the sampling run", 1.0)
    document: dict[str, Any] = sample_prompt(
        ctx.workspace, ctx.prompt, params.options(), settings=ctx.settings, progress=progress
    )
    return document


SPEC = JobSpec("sample", SampleParams, run, "sample the pipeline and measure how reliably it meets its checks")
