"""``judge``: the examples' outputs judged by an LLM judge pipeline (a file) or against their grading notes;
``noise`` resamples a pipeline on the same outputs (judge noise)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from spade_lsp._progress import Progress
from spade_lsp.config import Settings
from spade_lsp.errors import InputError
from spade_lsp.jobs._spec import JobContext, JobParams, JobSpec, choice, flag

if TYPE_CHECKING:
    from spade_lsp.workspace import Workspace

NOISE_SOURCES: Final = ("examples", "sampled")
#: Sample-index offset between two resamples of a whole pipeline (its units use indices below this).
RESAMPLE_STRIDE: Final = 10_000


class JudgeParams(JobParams):
    pipeline: str | None = None
    grading_notes: bool | None = flag()
    compare: bool | None = flag()
    noise: int | None = None
    noise_source: Literal["examples", "sampled"] | None = choice(*NOISE_SOURCES)

    def check(self) -> None:
        """:class:`InputError` for params a judge job cannot run with."""
        pipeline, grading = self.pipeline, bool(self.grading_notes)
        if (pipeline is None) == (not grading):
            raise InputError("a judge job needs exactly one of `pipeline` (a file) or `grading_notes`")
        noise = self.noise
        if noise is not None:
            if pipeline is None:
                raise InputError("--noise resamples a pipeline: give --pipeline FILE")
            if not 2 <= noise <= 100:
                raise InputError("--noise takes a number of resamples from 2 to 100")


def run(ctx: JobContext, params: JudgeParams, progress: Progress) -> dict[str, Any]:
    """Run a judge job (the CLI in-process, or the daemon) and return its document."""
    from spade_lsp.judges import Pipeline, grade_with_notes, run_pipeline

    params.check()
    workspace, prompt, settings = ctx.workspace, ctx.prompt, ctx.settings
    if params.grading_notes:
        graded: dict[str, Any] = grade_with_notes(
            workspace, prompt, settings=settings, compare=params.compare is not False, progress=progress
        )
        return graded
    pipeline = Pipeline.load(Path(str(params.pipeline)))
    document: dict[str, Any] = run_pipeline(workspace, prompt, pipeline, settings=settings, progress=progress)
    if params.noise is not None:
        source = params.noise_source or "examples"
        document["noise"] = _pipeline_noise(workspace, prompt, pipeline, params.noise, source, progress, settings)
    return document


def _pipeline_noise(
    workspace: Workspace,
    prompt: Path,
    pipeline: Any,
    resamples: int,
    source: Literal["examples", "sampled"],
    progress: Progress,
    settings: Settings,
) -> dict[str, Any]:
    """The pipeline resampled on fixed outputs: each resample shifts every unit's sample index, so its answers
    are fresh calls (cached per resample, so a re-run costs nothing)."""
    from spade_lsp.judges import JudgeClients, measure_noise, noise_items

    groups = noise_items(workspace, prompt, source=source)
    pool = JudgeClients(workspace.judge_client(settings))

    def judge(items: Any, resample: int) -> list[float | None]:
        progress(f"judge noise: resample {resample + 1} of {resamples}", None)
        result = pipeline.run(pool, items, sample_offset=resample * RESAMPLE_STRIDE)
        return list(result.scores())

    noise: dict[str, Any] = measure_noise(groups, judge, resamples=resamples, confidence=settings.confidence)
    return noise


SPEC = JobSpec("judge", JudgeParams, run, "judge the examples' outputs with an LLM judge pipeline or grading notes")
