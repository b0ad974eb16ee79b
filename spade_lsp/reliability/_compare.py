"""``spade compare``: is the new prompt version (or this model, or this temperature) more reliable?

Each variant is sampled like ``spade sample`` does (docs/reliability.md), on the same inputs (the same seed draws
them) with the same sample indices and without early stopping, and every validator (the selected assertions, and
the LLM verifier when it is on) is applied to every output. Each variant is an ordinary sampling run in the
store; the comparison pairs cell (input, sample) of the baseline with the same cell of each candidate
(``_paired.py``) and is stored in ``comparisons``, where the editor's lens and the report read it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np

from spade_lsp._fallbacks import Fallbacks
from spade_lsp._progress import Progress
from spade_lsp.config import Settings
from spade_lsp.errors import InputError
from spade_lsp.reliability._paired import PairedDifference, paired_difference
from spade_lsp.reliability._sampling import SampleOptions, sample_prompt
from spade_lsp.reliability._stats import _passed_all
from spade_lsp.workspace import Workspace, synced_head

__all__ = ["OVERALL", "CompareOptions", "Variant", "compare_prompt", "plan_variants"]

Kind = Literal["versions", "models", "temperatures"]
#: The row for "every check passed on this output" (P_pass), compared like a check.
OVERALL: Final = "all checks"
_ORDER: Final = {"worse": 0, "better": 1, "no detectable difference": 2}


@dataclass(frozen=True, slots=True)
class Variant:
    label: str
    version: int | None = None
    model: str | None = None
    temperature: float | None = None


@dataclass(frozen=True, slots=True)
class CompareOptions:
    """What to compare (at most one of versions, models, temperatures; default: the newest version against the
    one before it) and the difference to size for. How much to sample is the settings' (``sample_inputs``,
    ``samples_per_input``, ``temperature``, ``confidence``, ``verifier``)."""

    versions: tuple[int, int] | None = None
    baseline: int | None = None  # this version against the newest (``spade check --baseline``)
    models: tuple[str, ...] | None = None
    temperatures: tuple[float, ...] | None = None
    seed: int = 0
    effect: float = 0.10
    power: float = 0.80

    def __post_init__(self) -> None:
        given = [name for name in ("versions", "baseline", "models", "temperatures") if getattr(self, name) is not None]
        if len(given) > 1:
            raise InputError(f"compare one thing at a time: got {' and '.join('--' + g for g in given)}")
        if self.versions is not None and (len(self.versions) != 2 or self.versions[0] == self.versions[1]):
            raise InputError("--versions takes two different version numbers: the baseline, then the candidate")
        for name in ("models", "temperatures"):
            values = getattr(self, name)
            if values is not None and (len(values) < 2 or len(set(values)) != len(values)):
                raise InputError(f"--{name} takes two or more different values; the first is the baseline")
        if not 0 < self.effect < 1:
            raise InputError("--effect must lie strictly between 0 and 1 (a difference in success rate)")
        if not 0 < self.power < 1:
            raise InputError("--power must lie strictly between 0 and 1")


def plan_variants(workspace: Workspace, prompt: Path, options: CompareOptions) -> tuple[Kind, list[Variant]]:
    """The variants, baseline first."""
    if options.models is not None:
        return "models", [Variant(model, model=model) for model in options.models]
    if options.temperatures is not None:
        return "temperatures", [Variant(f"T={t:g}", temperature=t) for t in options.temperatures]
    _, newest, _ = synced_head(workspace, prompt)
    if options.versions is not None or options.baseline is not None:
        baseline, candidate = options.versions if options.versions is not None else (options.baseline, newest)
        if baseline == candidate:
            raise InputError(f"{prompt}: v{newest} is the newest version; give an older one as the baseline")
        numbers = {v.number for v in workspace.history.versions(prompt)}
        for number in (baseline, candidate):
            if number not in numbers:
                raise InputError(f"{prompt}: no version {number}; it has v1..v{newest} (see `spade history`)")
    else:
        if newest < 2:
            raise InputError(f"{prompt}: only one version is recorded; edit and save it, or compare --models")
        baseline, candidate = newest - 1, newest
    return "versions", [Variant(f"v{baseline}", version=baseline), Variant(f"v{candidate}", version=candidate)]


def compare_prompt(
    workspace: Workspace,
    prompt: Path,
    options: CompareOptions | None = None,
    *,
    settings: Settings,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Sample every variant, compare each candidate with the baseline, store and return the document.
    ``settings`` are the prompt's, resolved by the caller; every variant is sampled under them."""
    options = options or CompareOptions()
    report = progress or (lambda message, percentage: None)
    kind, variants = plan_variants(workspace, prompt, options)
    documents: list[dict[str, Any]] = []
    for k, variant in enumerate(variants):

        def scaled(message: str, percentage: float | None, k: int = k, label: str = variant.label) -> None:
            overall = None if percentage is None else round((100 * k + percentage) / len(variants), 1)
            report(f"{label}: {message}", overall)

        sample = SampleOptions(seed=options.seed, version=variant.version, model=variant.model)
        # a paired comparison needs every cell of every variant; a temperature variant is sampled at its own
        variant_settings = settings.merged(
            {"early_stopping": False, **({} if variant.temperature is None else {"temperature": variant.temperature})},
            source="the comparison",
        )
        documents.append(sample_prompt(workspace, prompt, sample, settings=variant_settings, progress=scaled))
    document = compare_documents(kind, variants, documents, options)
    _store(workspace, prompt, kind, document)
    return document


def compare_documents(
    kind: Kind,
    variants: Sequence[Variant],
    documents: Sequence[Mapping[str, Any]],
    options: CompareOptions,
) -> dict[str, Any]:
    """The comparison of finished sampling runs, cell by cell."""
    baseline = documents[0]
    names = [v["name"] for v in baseline["validators"]]
    for document in documents[1:]:
        if [v["name"] for v in document["validators"]] != names or document["inputs"] != baseline["inputs"]:
            raise InputError("the variants were not sampled with the same validators and inputs; sample them again")
    confidence = float(baseline["confidence"])
    tensors = [_tensor(d) for d in documents]
    messages = {v["name"]: v.get("message", "") for v in baseline["validators"]}
    comparisons = []
    for variant, tensor in zip(variants[1:], tensors[1:], strict=True):
        rows = []
        for index, name in enumerate(names):
            diff = paired_difference(
                tensors[0][:, :, index],
                tensor[:, :, index],
                confidence=confidence,
                effect=options.effect,
                power=options.power,
            )
            rows.append(_row(name, messages[name], diff))
        rows.sort(key=lambda r: (_ORDER[r["verdict"]], r["name"]))
        overall = paired_difference(
            _passed_all(tensors[0]), _passed_all(tensor), confidence=confidence, effect=options.effect,
            power=options.power,
        )  # fmt: skip
        comparisons.append(
            {
                "baseline": variants[0].label,
                "candidate": variant.label,
                "checks": rows,
                "overall": _row(OVERALL, "every check passed on the output", overall),
                "worse": [r["name"] for r in rows if r["verdict"] == "worse"],
                "better": [r["name"] for r in rows if r["verdict"] == "better"],
            }
        )
    return {
        "prompt": baseline["prompt"],
        "kind": kind,
        "created_at": datetime.now(UTC).isoformat(),
        "variants": [_variant_json(v, d) for v, d in zip(variants, documents, strict=True)],
        "inputs": baseline["inputs"],
        "samples": baseline["samples"],
        "confidence": confidence,
        "effect": options.effect,
        "power": options.power,
        "comparisons": comparisons,
        "warnings": sorted({w for d in documents for w in d.get("warnings", [])}),
        "fallbacks": Fallbacks.from_json(d.get("fallbacks") or [] for d in documents).to_json(),
    }


def _row(name: str, message: str, diff: PairedDifference) -> dict[str, Any]:
    return {"name": name, "message": message, **diff.to_json()}


def _variant_json(variant: Variant, document: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "label": variant.label,
        "version": document["version"],
        "model": document["model"],
        "temperature": document["temperature"],
        "run_id": document["run_id"],
        "p_pass": document["p_pass"]["measured"]["rate"],
        "calls": document["calls"],
        "calls_cached": document["calls_cached"],
        "calls_failed": document.get("calls_failed", 0),
        "tokens": document.get("tokens"),
        "cost": document.get("cost"),
    }


def _tensor(document: Mapping[str, Any]) -> np.ndarray[Any, np.dtype[np.float64]]:
    """The run's R[input][sample][validator]; a cell nothing measured (null) is NaN."""
    n, m, v = len(document["inputs"]), int(document["samples"]), len(document["validators"])
    tensor = np.array(document["tensor"], dtype=np.float64)
    if tensor.shape != (n, m, v):
        raise InputError(f"sampling run {document['run_id']}: its tensor is {tensor.shape}, expected {(n, m, v)}")
    return tensor


def _store(workspace: Workspace, prompt: Path, kind: Kind, document: dict[str, Any]) -> None:
    from spade_lsp.store import insert_comparison

    variants = document["variants"]
    document["comparison_id"] = insert_comparison(
        workspace.store,
        workspace.history.prompt_key(prompt),
        kind=kind,
        baseline_run_id=variants[0]["run_id"],
        candidate_version=variants[-1]["version"],
        document=document,
        created_at=document["created_at"],
    )
