"""The public SPADE experiments' pipelines in the layout of ``../shared/bench/spade``, to measure on pipelines the
shared data does not hold.

``shreyashankar/spade-experiments`` publishes eight pipelines; ``../shared/bench`` holds five of them. The
others (negotiation, statsbot, threads at the time of writing) are read from a checkout of that repository when
``SPADE_EXPERIMENTS`` names one: the repository has no licence, so its data is read where the user keeps it and
never copied into this one.

Per pipeline the checkout holds ``prompt_templates.py`` (``TEMPLATES``, the versions in order), one run's CSV
(``prompt``, ``example`` as a Python dict literal, ``response``) and ``labeled_responses.csv`` (``response``,
``label``: 1 good, 0 bad). The labels are joined to the run by response text, whitespace collapsed; one published
label row differs from its response by a letter's case, so a response without an exact match takes the
closest unmatched label row (difflib); one far from every label row stays unlabelled.
"""

from __future__ import annotations

import ast
import csv
import difflib
import json
import os
import re
import sys
from pathlib import Path

__all__ = ["ENV", "checkout", "convert", "extra_pipelines", "unseen_deltas"]

ENV = "SPADE_EXPERIMENTS"
_CLOSE_ENOUGH = 0.95


def checkout() -> Path | None:
    """The checkout ``SPADE_EXPERIMENTS`` names, or None when the variable is unset."""
    value = os.environ.get(ENV)
    if not value:
        return None
    root = Path(value)
    if not (root / "paper_experiments").is_dir():
        raise FileNotFoundError(f"{ENV}={value}: no paper_experiments/ there (a checkout of spade-experiments?)")
    return root


def _squashed(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _rows(path: Path) -> list[dict[str, str]]:
    csv.field_size_limit(sys.maxsize)
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _run_csv(directory: Path) -> Path:
    runs = [
        p
        for p in sorted(directory.glob("*.csv"))
        if not p.name.startswith(("assertion_res", "labeled_responses", "subsumption_results"))
    ]
    if len(runs) != 1:
        raise ValueError(f"{directory}: expected one run CSV, found {[p.name for p in runs]}")
    return runs[0]


def _templates(path: Path) -> list[str]:
    """The last ``TEMPLATES = [...]`` of the file, read as a literal (the file is data here, never run)."""
    found: object = None
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TEMPLATES" for t in node.targets):
            found = ast.literal_eval(node.value)
    if not isinstance(found, list) or not found or not all(isinstance(t, str) for t in found):
        raise ValueError(f"{path}: no TEMPLATES list of strings")
    return found


def _label_row(labels: dict[str, list[int]], response: str) -> str | None:
    """The key of ``response``'s label row: its own, else the closest unmatched one if close enough, else None
    (a response the experiment left unlabelled)."""
    if labels.get(response):
        return response
    ratio, closest = max(
        ((difflib.SequenceMatcher(None, response, k).ratio(), k) for k, v in labels.items() if v), default=(0.0, None)
    )
    return closest if ratio >= _CLOSE_ENOUGH else None


def convert(root: Path, name: str, out: Path) -> int:
    """Write ``out/versions.json`` and ``out/examples.jsonl`` for pipeline ``name`` of the checkout ``root``;
    returns the number of examples."""
    directory = root / "paper_experiments" / name
    templates = _templates(directory / "prompt_templates.py")
    labels: dict[str, list[int]] = {}
    for row in _rows(directory / "labeled_responses.csv"):
        labels.setdefault(_squashed(row["response"]), []).append(int(row["label"]))
    lines = []
    for i, row in enumerate(_rows(_run_csv(directory))):
        example = {
            "id": i,
            "inputs": ast.literal_eval(row["example"]),
            "prompt": row["prompt"],
            "response": row["response"],
        }
        key = _label_row(labels, _squashed(row["response"]))
        if key is not None:
            example["label"] = labels[key].pop(0)
        lines.append(json.dumps(example))
    out.mkdir(parents=True, exist_ok=True)
    (out / "versions.json").write_text(json.dumps(templates, indent=1), encoding="utf-8")
    (out / "examples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def extra_pipelines(shared: Path, out: Path) -> tuple[str, ...]:
    """Convert the checkout's pipelines that ``shared`` (the ``../shared/bench`` root) lacks into
    ``out/spade/NAME``; none when ``SPADE_EXPERIMENTS`` is unset."""
    root = checkout()
    if root is None:
        return ()
    names = sorted(
        p.name
        for p in (root / "paper_experiments").iterdir()
        if (p / "labeled_responses.csv").is_file() and not (shared / "spade" / p.name).exists()
    )
    for name in names:
        convert(root, name, out / "spade" / name)
    return tuple(names)


def unseen_deltas(dev: Path) -> list[dict[str, object]]:
    """The checkout's labelled deltas that ``dev`` (a dev.jsonl) lacks, as dev.jsonl lines (``repo``, ``diff``,
    ``after``, ``labels``; the paper's "N/A", no category, is an empty list); none when ``SPADE_EXPERIMENTS`` is
    unset."""
    root = checkout()
    if root is None:
        return []
    known = {json.loads(line)["diff"] for line in dev.read_text(encoding="utf-8").splitlines() if line.strip()}
    with (root / "taxonomy_labels.csv").open(newline="", encoding="utf-8-sig") as handle:
        rows = list(csv.DictReader(handle))
    return [
        {
            "repo": row["repo"],
            "diff": row["diff"],
            "after": row["formatted_prompt_template"],
            "labels": [tag.strip() for tag in row["ground_truth_tags"].split(",") if tag.strip() not in ("", "N/A")],
        }
        for row in rows
        if row["diff"] not in known
    ]
