"""Judge noise: resample a judge on fixed outputs, so that the judge's own disagreement with itself is told
apart from the generator's variance (different outputs for the same input), and report both.

The scores form a tensor S[input][output][resample]. Under the two-level random-effects model

    S[i][o][r] = mu_i + g_io + e_ior,   Var(g_io) = generator variance,   Var(e_ior) = judge variance,

the judge variance is estimated from the spread of one output's resamples and the generator variance from
the spread of an input's per-output means, less what the judge's noise contributes to that spread (the
between-output component of a nested ANOVA). See ``docs/judges.md`` ("Judge noise") for every key.
"""

from __future__ import annotations

import json
import logging
import math
import numbers
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from spade_lsp._progress import Progress
from spade_lsp.errors import InputError
from spade_lsp.judges._items import JudgeItem, items_from_examples

if TYPE_CHECKING:
    from spade_lsp.workspace import Workspace

__all__ = ["NoiseSource", "measure_noise", "noise_items", "noise_report"]

log = logging.getLogger(__name__)

NoiseSource = Literal["examples", "sampled"]
Scores = Sequence[Sequence[Sequence[float | None]]]
#: What a judge callable returns for one resample: a score per item, None where it gave no usable answer.
Judge = Callable[[Sequence[JudgeItem], int], Sequence[float | None]]
DECIMALS: Final = 6
_TOLERANCE: Final = 1e-12


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), DECIMALS)


def _score(value: Any, where: str) -> float | None:
    """A finite number, or None for "no usable answer" (None or NaN); booleans count as 1/0."""
    if value is None:
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if not isinstance(value, numbers.Real):
        raise ValueError(f"{where}: a score is a number or None, not {value!r}")
    number = float(value)
    if math.isnan(number):
        return None
    if math.isinf(number):
        raise ValueError(f"{where}: a score must be finite, not {number}")
    return number


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _variance(values: Sequence[float]) -> float:
    """The unbiased sample variance (n - 1 in the denominator); needs two values."""
    centre = _mean(values)
    return math.fsum((value - centre) ** 2 for value in values) / (len(values) - 1)


def _agreeing_pairs(values: Sequence[float]) -> float:
    """Share of the pairs of resamples that gave the same score."""
    n = len(values)
    same = sum(count * (count - 1) // 2 for count in Counter(values).values())
    return same / (n * (n - 1) // 2)


def noise_report(scores: Scores, *, confidence: float) -> dict[str, Any]:
    """Judge and generator variance of ``scores`` (S[input][output][resample]: 0/1 pass indicators or numeric
    scores, None or NaN for no usable answer, left out). Ragged tensors are fine. Values that cannot be
    estimated (no output with two valid resamples, no input with two scored outputs, nothing valid at all)
    are None, and ``notes`` says why."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence {confidence!r} is not a fraction strictly between 0 and 1")
    from spade_lsp.reliability import normal_quantile, rate

    groups: list[list[list[float]]] = []  # per input, per output: the valid resamples
    valid = missing = widest = 0
    for i, outputs in enumerate(scores):
        group: list[list[float]] = []
        for o, resamples in enumerate(outputs):
            widest = max(widest, len(resamples))
            values = []
            for r, raw in enumerate(resamples):
                value = _score(raw, f"scores[{i}][{o}][{r}]")
                if value is None:
                    missing += 1
                else:
                    values.append(value)
            valid += len(values)
            group.append(values)
        groups.append(group)
    notes: list[str] = []

    # the judge: within-output variance, over outputs with two valid resamples or more
    resampled = [(i, o, values) for i, group in enumerate(groups) for o, values in enumerate(group) if len(values) > 1]
    judge_variance = _mean([_variance(values) for _, _, values in resampled]) if resampled else None
    if judge_variance is None:
        notes.append("no output has two valid resamples: the judge variance cannot be estimated")

    # the generator: between-output variance of per-output means within an input, less the judge's share of it
    between_sum = correction_sum = 0.0
    generator_df = 0
    for group in groups:
        scored = [values for values in group if values]
        if len(scored) < 2:
            continue
        degrees = len(scored) - 1
        generator_df += degrees
        between_sum += degrees * _variance([_mean(values) for values in scored])
        correction_sum += degrees * _mean([1.0 / len(values) for values in scored])
    between = between_sum / generator_df if generator_df else None
    generator_variance: float | None = None
    if between is None:
        notes.append("no input has two scored outputs: the generator variance cannot be estimated")
    elif judge_variance is not None:
        corrected = between - judge_variance * correction_sum / generator_df
        if corrected < -_TOLERANCE:  # below 0 by more than rounding
            notes.append("the judge's noise accounts for all the spread between outputs: generator variance 0")
        generator_variance = max(0.0, corrected)
    total = None if judge_variance is None or generator_variance is None else judge_variance + generator_variance
    judge_share = generator_share = None
    if total is not None and total > 0 and judge_variance is not None and generator_variance is not None:
        judge_share, generator_share = judge_variance / total, generator_variance / total

    flipped = [[i, o] for i, o, values in resampled if min(values) != max(values)]
    flip_rate = rate(len(flipped), len(resampled), method="wilson", confidence=confidence)
    agreement = _mean([_agreeing_pairs(values) for _, _, values in resampled]) if resampled else None

    means = [_mean(values) for group in groups for values in group if values]
    binary = valid > 0 and all(value in (0.0, 1.0) for group in groups for values in group for value in values)
    overall = _mean(means) if means else None
    judge_se = judge_se_of_mean = None
    if judge_variance is not None and means:
        inverse_counts = [1.0 / len(values) for group in groups for values in group if values]
        judge_se = math.sqrt(judge_variance / len(means))
        judge_se_of_mean = math.sqrt(judge_variance * _mean(inverse_counts) / len(means))
    mean_score = {
        "value": _rounded(overall),
        "judge_se": _rounded(judge_se),
        "judge_se_of_mean": _rounded(judge_se_of_mean),
    }
    pass_rate: dict[str, Any] | None = None
    if binary and overall is not None:
        z = normal_quantile(confidence)
        low = high = None
        if judge_se is not None:
            low, high = max(0.0, overall - z * judge_se), min(1.0, overall + z * judge_se)
        pass_rate = {
            "rate": _rounded(overall),
            "judge_se": _rounded(judge_se),
            "ci_low": _rounded(low),
            "ci_high": _rounded(high),
        }

    return {
        "confidence": float(confidence),
        "binary": binary,
        "inputs": len(groups),
        "outputs": sum(len(group) for group in groups),
        "outputs_scored": len(means),
        "outputs_resampled": len(resampled),
        "inputs_with_several_outputs": sum(1 for group in groups if sum(1 for values in group if values) > 1),
        "resamples": widest,
        "scores": valid,
        "missing": missing,
        "judge_variance": _rounded(judge_variance),
        "judge_df": sum(len(values) - 1 for _, _, values in resampled),
        "between_output_variance": _rounded(between),
        "generator_variance": _rounded(generator_variance),
        "generator_df": generator_df,
        "total_variance": _rounded(total),
        "judge_share": _rounded(judge_share),
        "generator_share": _rounded(generator_share),
        "flip_rate": flip_rate.to_json(),
        "flipped": flipped,
        "pairwise_agreement": _rounded(agreement),
        "mean_score": mean_score,
        "pass_rate": pass_rate,
        "notes": notes,
    }


def measure_noise(
    items_by_input: Sequence[Sequence[JudgeItem]],
    judge: Judge,
    *,
    resamples: int = 5,
    progress: Progress | None = None,
    confidence: float,
) -> dict[str, Any]:
    """Judge every fixed output ``resamples`` times and report the noise (:func:`noise_report`) with counts.

    ``judge(items, resample_index)`` scores every item once; the caller maps each resample index to distinct
    LLM sample indices (else the cache would return the same answer each time and the judge would look
    perfectly consistent)."""
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 2:
        raise InputError(f"judge noise needs at least 2 resamples of each output, not {resamples!r}")
    groups = [list(group) for group in items_by_input]
    flat = [item for group in groups for item in group]
    if not flat:
        raise InputError("judge noise: there are no outputs to judge")
    columns: list[list[float | None]] = []
    for resample in range(resamples):
        if progress is not None:
            progress(f"judge noise: resample {resample + 1} of {resamples}", round(100 * resample / resamples, 1))
        answered = list(judge(flat, resample))
        if len(answered) != len(flat):
            raise ValueError(f"the judge returned {len(answered)} scores for {len(flat)} items (resample {resample})")
        columns.append([_score(value, f"resample {resample}, item {flat[n].id!r}") for n, value in enumerate(answered)])
    if progress is not None:
        progress("judge noise: done", 100.0)
    tensor: list[list[list[float | None]]] = []
    position = 0
    for group in groups:
        tensor.append([[column[position + o] for column in columns] for o in range(len(group))])
        position += len(group)
    report = noise_report(tensor, confidence=confidence)
    report["resamples"] = resamples
    report["items"] = len(flat)
    report["flipped_items"] = [groups[i][o].id for i, o in report["flipped"]]
    return report


# -- the fixed outputs ------------------------------------------------------------------------------------


def noise_items(workspace: Workspace, prompt: Path, *, source: NoiseSource = "examples") -> list[list[JudgeItem]]:
    """The fixed outputs to resample the judge on, grouped by input. ``examples``: the examples file's
    outputs, examples with identical inputs forming one group (several outputs for an input are what the
    generator variance is estimated from); ``sampled``: every output of the prompt's newest finished
    sampling run, grouped by its input."""
    if source == "examples":
        return group_by_context(items_from_examples(workspace, prompt).items)
    if source == "sampled":
        return _sampled_items(workspace, prompt)
    raise InputError(f"unknown source of outputs {source!r}; expected examples or sampled")


def group_by_context(items: Sequence[JudgeItem]) -> list[list[JudgeItem]]:
    """Items with identical inputs (``context``) in one group, groups in order of first appearance."""
    groups: dict[str, list[JudgeItem]] = {}
    for item in items:
        key = json.dumps(_plain(item.context), sort_keys=True, ensure_ascii=False, default=str)
        groups.setdefault(key, []).append(item)
    return list(groups.values())


def _plain(value: Any) -> Any:
    """Mappings as dicts, so that two equal contexts of different mapping types dump alike."""
    if isinstance(value, Mapping):
        return {str(key): _plain(inner) for key, inner in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(inner) for inner in value]
    return value


def _sampled_items(workspace: Workspace, prompt: Path) -> list[list[JudgeItem]]:
    from spade_lsp._examples import prompt_examples
    from spade_lsp._files import examples_path
    from spade_lsp._prompts import parse_prompt, prompt_kind, render_conversation
    from spade_lsp.store import latest_sampled_outputs

    sampled = latest_sampled_outputs(workspace.store, workspace.history.prompt_key(prompt))
    if sampled is None:
        raise InputError(f"{prompt}: no finished sampling run to take outputs from; run `spade sample {prompt}` first")
    run_id, version = sampled.run_id, sampled.version
    versions = workspace.history.versions(prompt)
    chosen = next((v for v in versions if v.number == version), versions[-1] if versions else None)
    if chosen is None:
        raise InputError(f"{prompt}: the prompt has no recorded version")
    template = parse_prompt(
        workspace.history.content(chosen.content_hash), source=str(prompt), kind=prompt_kind(prompt)
    )
    source = examples_path(prompt)
    try:
        examples = {example.id: example for example in prompt_examples(prompt, template)}
    except InputError:
        examples = {}  # no examples file any more: every input is reported gone below
    input_ids = sampled.inputs
    by_input: dict[int, list[JudgeItem]] = {}
    gone: set[str] = set()
    for index, sample, output in sampled.outputs:
        example_id = input_ids[index] if 0 <= index < len(input_ids) else None
        example = examples.get(example_id) if example_id is not None else None
        if example is None:
            gone.add(str(example_id))
            continue
        rendered = example.prompt if example.prompt is not None else render_conversation(template, example.inputs)[0]
        by_input.setdefault(int(index), []).append(
            JudgeItem(
                id=f"{example.id}#{int(sample)}",
                input=rendered,
                output=str(output),
                context=dict(example.inputs),
                note=example.grading_note,
            )
        )
    if gone:
        log.warning(
            "sampling run %d: input(s) %s are no longer in %s; their outputs are left out",
            run_id,
            ", ".join(sorted(gone)),
            source,
        )
    if not by_input:
        raise InputError(
            f"{prompt}: sampling run {run_id} holds no outputs to judge"
            + (f" (its inputs {', '.join(sorted(gone))} are no longer in {source})" if gone else "")
        )
    return [by_input[index] for index in sorted(by_input)]
