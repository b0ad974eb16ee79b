"""``compare``: a paired comparison of prompt versions, models or temperatures on the same inputs
(:func:`spade_lsp.reliability.compare_prompt`); stored where the editor's lens reads it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spade_lsp._progress import Progress
from spade_lsp.jobs._spec import JobContext, JobParams, JobSpec, flag, number, setting

if TYPE_CHECKING:
    from spade_lsp.reliability import CompareOptions


class CompareParams(JobParams):
    versions: list[int] | None = None
    baseline: int | None = None
    models: list[str] | None = None
    temperatures: list[float] | None = None
    inputs: int | None = setting("sample_inputs")
    samples: int | None = setting("samples_per_input")
    seed: int | None = number(0, integer=True)
    temperature: float | None = setting("temperature")
    confidence: float | None = setting("confidence")
    effect: float | None = None
    power: float | None = None
    verify: bool | None = flag(setting="verifier")

    def options(self) -> CompareOptions:
        """As the engine's options (:class:`InputError` for combinations it refuses)."""
        from spade_lsp.reliability import CompareOptions

        def pair(values: list[Any] | None) -> tuple[Any, ...] | None:
            return None if values is None else tuple(values)

        versions = pair(self.versions)
        return CompareOptions(
            versions=(versions[0], versions[1]) if versions is not None and len(versions) == 2 else versions,
            baseline=self.baseline,
            models=pair(self.models),
            temperatures=pair(self.temperatures),
            seed=self.seed or 0,
            effect=0.10 if self.effect is None else self.effect,
            power=0.80 if self.power is None else self.power,
        )

    def check(self) -> None:
        self.options()


def run(ctx: JobContext, params: CompareParams, progress: Progress) -> dict[str, Any]:
    from spade_lsp.reliability import compare_prompt

    return compare_prompt(ctx.workspace, ctx.prompt, params.options(), settings=ctx.settings, progress=progress)


SPEC = JobSpec("compare", CompareParams, run, "paired comparison of versions, models or temperatures")
