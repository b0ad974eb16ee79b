"""``spade demo``: the whole pipeline, offline, on a prompt with several versions shipped in the package."""

from __future__ import annotations

import argparse
import json
import tempfile
from importlib import resources
from pathlib import Path
from typing import TextIO

from spade_lsp._columns import dump_json
from spade_lsp._history import Revision

DEMO_PROMPT = "product_description.prompt"
DEMO_INPUTS, DEMO_SAMPLES = 4, 3  # a dozen calls a version: about half a minute on two cores
DEMO_MAX_TOKENS = 160


def demo_versions() -> list[str]:
    """The demo prompt's versions, oldest first."""
    data = resources.files(__package__).joinpath("product_description.versions.json").read_text("utf-8")
    versions: list[str] = json.loads(data)
    return versions


def demo_examples() -> str:
    """The demo's labelled outputs, in ``NAME.examples.jsonl`` format."""
    return resources.files(__package__).joinpath("product_description.examples.jsonl").read_text("utf-8")


def run_demo(args: argparse.Namespace, out: TextIO) -> int:
    """Write the demo prompt and examples into a workspace, record its versions, and show history, deltas and
    sentences; then synthesize assertions offline and evaluate them on the examples in the sandbox."""
    if args.dir is not None:
        root = args.dir
        root.mkdir(parents=True, exist_ok=True)
        return _run(root, args, out)
    with tempfile.TemporaryDirectory(prefix="spade-demo-") as tmp:
        return _run(Path(tmp), args, out)


def _run(root: Path, args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp._assertion_jobs import evaluate, synthesize
    from spade_lsp._files import examples_path
    from spade_lsp._render import (
        delta_as_json,
        render_candidates,
        render_deltas,
        render_eval,
        render_held_back,
        render_history,
        render_sentences,
    )
    from spade_lsp.synthesis import OfflineSynthesizer
    from spade_lsp.workspace import Workspace

    versions = demo_versions()
    prompt = root / DEMO_PROMPT
    prompt.write_text(versions[-1], encoding="utf-8")
    (root / "spade.toml").touch()
    examples_path(prompt).write_text(demo_examples(), encoding="utf-8")
    from spade_lsp.config import resolve_file

    offline = {"classifier": "offline", "model": None}
    with Workspace(root, overrides=offline) as workspace:
        history = workspace.history
        history.record_revisions(prompt, [Revision(text=text, origin="import") for text in versions])
        recorded = history.versions(prompt)
        deltas = history.deltas(prompt)
        sentences = history.sentences(prompt)
        settings = resolve_file(root, prompt, offline, overrides_source="the demo")
        synthesized = synthesize(workspace, prompt, OfflineSynthesizer(), settings=settings)
        run = evaluate(workspace, prompt, settings=settings)
        if args.json:
            dump_json(
                {
                    "workspace": str(root),
                    "prompt": DEMO_PROMPT,
                    "versions": [v.number for v in recorded],
                    "deltas": [delta_as_json(d) for d in deltas],
                    "sentences": [
                        {"text": s.text, "categories": s.categories, "introduced_in": s.introduced_in}
                        for s in sentences
                    ],
                    "candidates": [c.name for c in synthesized.candidates],
                    "held_back": [verdict.to_json() for verdict in synthesized.held_back],
                    "matrix": run.matrix_json(),
                },
                out,
            )
            out.write("\n")
            return 0
        out.write(f"spade demo: workspace {root}\n\n")
        out.write(render_history(DEMO_PROMPT, recorded))
        out.write("\n" + render_deltas(DEMO_PROMPT, deltas))
        out.write("\n" + render_sentences(DEMO_PROMPT, sentences))
        out.write(f"\nassertions synthesized offline into {synthesized.update.path.name}:\n")
        verdicts = {name: verdict.to_json() for name, verdict in synthesized.verdicts.items()}
        out.write(render_candidates(synthesized.candidates, verdicts))
        held_back = [verdict.to_json() for verdict in synthesized.held_back]
        out.write(render_held_back(held_back, checked=len(synthesized.verdicts)))
        out.write(f"\nevaluated in the sandbox on {examples_path(prompt).name}:\n")
        out.write(render_eval(run, settings.tau))
    return _sample_locally(root, prompt, len(versions), out)


def _sample_locally(root: Path, prompt: Path, versions: int, out: TextIO) -> int:
    """With the ``local`` extra installed: sample the newest version with the embedded model, then compare it
    with the version before on the same inputs. Without it, one line says how to get it; the demo still passes."""
    from spade_lsp.cli._reliability import render_table
    from spade_lsp.config import resolve_file
    from spade_lsp.errors import SpadeError
    from spade_lsp.local_model import INSTALL_HINT, is_installed
    from spade_lsp.reliability import CompareOptions, SampleOptions, compare_prompt, render_comparison, sample_prompt
    from spade_lsp.workspace import Workspace

    if not is_installed():
        out.write(f"\nsampling with the local model skipped: it is not installed; {INSTALL_HINT}\n")
        return 0
    overrides = {
        "classifier": "offline",
        "model": "local",
        "max_tokens": DEMO_MAX_TOKENS,
        "sample_inputs": DEMO_INPUTS,
        "samples_per_input": DEMO_SAMPLES,
    }
    out.write(f"\nsampling {DEMO_PROMPT} with the local model (SmolLM2-135M-Instruct on llama.cpp):\n")
    try:
        with Workspace(root, overrides=overrides) as workspace:
            settings = resolve_file(root, prompt, overrides, overrides_source="the demo")
            sampled = sample_prompt(workspace, prompt, SampleOptions(), settings=settings)
            out.write(render_table(sampled))
            out.write(f"\ncomparing v{versions - 1} with v{versions} on the same inputs:\n")
            compared = CompareOptions(versions=(versions - 1, versions))
            out.write(render_comparison(compare_prompt(workspace, prompt, compared, settings=settings)))
    except SpadeError as error:  # the model could not start: the offline part above stands
        out.write(f"sampling with the local model failed: {error}\n")
    return 0
