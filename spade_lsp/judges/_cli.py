"""``spade judge`` and ``spade test``: LLM judges from the command line and in CI, and the daemon's judge job."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from spade_lsp.errors import InputError

if TYPE_CHECKING:
    from spade_lsp.workspace import Workspace

#: Runs a judge job in the workspace's daemon when one runs (None: run in this process).
DaemonJudge = Callable[[argparse.Namespace, dict[str, Any]], "dict[str, Any] | None"]
Progress = Callable[[str, float | None], None]

NOISE_SOURCES: Final = ("examples", "sampled")
#: Sample-index offset between two resamples of a whole pipeline (its units use indices below this).
RESAMPLE_STRIDE: Final = 10_000


def add_judge_parsers(commands: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    judge = commands.add_parser(
        "judge", help="judge the examples' outputs with an LLM judge pipeline or with their grading notes"
    )
    judge.add_argument("prompt", type=Path)
    which = judge.add_mutually_exclusive_group(required=True)
    which.add_argument("--pipeline", type=Path, metavar="FILE", help="a judge pipeline file (.toml, .yaml)")
    which.add_argument(
        "--grading-notes", action="store_true", help="judge each output against its example's grading note"
    )
    judge.add_argument(
        "--no-compare",
        dest="compare",
        action="store_false",
        help="grading notes: skip the same judge without notes (by default both run, for comparison)",
    )
    judge.add_argument(
        "--noise", type=int, metavar="K", help="pipeline: also resample it K times on the same outputs (judge noise)"
    )
    judge.add_argument(
        "--noise-source",
        choices=NOISE_SOURCES,
        default="examples",
        help="outputs for --noise: the examples' (default) or the newest sampling run's",
    )
    common(judge)

    test = commands.add_parser("test", help="run a prompt-response test (ModelGauge style) against the model")
    test.add_argument("name", nargs="?", help="the test's name (see --list)")
    test.add_argument("--list", action="store_true", help="list the tests this version knows")
    test.add_argument("--judge-model", metavar="MODEL", help="the annotators' model (default: the assistant model)")
    test.add_argument("--limit", type=int, metavar="N", help="run only the first N test items")
    common(test)


# -- spade judge ------------------------------------------------------------------------------------------


def judge_params(args: argparse.Namespace) -> dict[str, Any]:
    """The flags as a daemon job's params (checked by :func:`check_judge_params`)."""
    params: dict[str, Any] = {}
    if args.pipeline is not None:
        params["pipeline"] = str(args.pipeline.resolve())
    else:
        params["grading_notes"] = True
        params["compare"] = bool(args.compare)
    if args.noise is not None:
        params["noise"] = args.noise
        params["noise_source"] = args.noise_source
    check_judge_params(params)
    return params


def check_judge_params(params: Mapping[str, Any]) -> None:
    """Raises :class:`InputError` for params a judge job cannot run with."""
    pipeline = params.get("pipeline")
    grading = params.get("grading_notes", False)
    if (pipeline is None) == (not grading):
        raise InputError("a judge job needs exactly one of `pipeline` (a file) or `grading_notes`")
    if pipeline is not None and not isinstance(pipeline, str):
        raise InputError("params.pipeline: expected a file path")
    for flag in ("grading_notes", "compare"):
        if flag in params and not isinstance(params[flag], bool):
            raise InputError(f"params.{flag}: expected true or false")
    noise = params.get("noise")
    if noise is not None:
        if pipeline is None:
            raise InputError("--noise resamples a pipeline: give --pipeline FILE")
        if isinstance(noise, bool) or not isinstance(noise, int) or not 2 <= noise <= 100:
            raise InputError("--noise takes a number of resamples from 2 to 100")
        if params.get("noise_source", "examples") not in NOISE_SOURCES:
            raise InputError(f"params.noise_source: expected one of {', '.join(NOISE_SOURCES)}")


def judge_job(workspace: Workspace, prompt: Path, params: Mapping[str, Any], progress: Progress) -> dict[str, Any]:
    """Run a judge job (the CLI in-process, or the daemon) and return its document."""
    check_judge_params(params)
    if params.get("grading_notes"):
        from spade_lsp.judges._grading import grade_with_notes

        return grade_with_notes(workspace, prompt, compare=bool(params.get("compare", True)), progress=progress)
    from spade_lsp.judges._pipeline import Pipeline, run_pipeline

    pipeline = Pipeline.load(Path(str(params["pipeline"])))
    document = run_pipeline(workspace, prompt, pipeline, progress=progress)
    if params.get("noise") is not None:
        document["noise"] = _pipeline_noise(
            workspace, prompt, pipeline, int(params["noise"]), str(params.get("noise_source", "examples")), progress
        )
    return document


def _pipeline_noise(
    workspace: Workspace, prompt: Path, pipeline: Any, resamples: int, source: str, progress: Progress
) -> dict[str, Any]:
    """The pipeline resampled on fixed outputs: each resample shifts every unit's sample index, so its answers
    are fresh calls (cached per resample, so a re-run costs nothing)."""
    from spade_lsp.judges._ask import JudgeClients
    from spade_lsp.judges._noise import measure_noise, noise_items

    groups = noise_items(workspace, prompt, source=source)  # type: ignore[arg-type]
    pool = JudgeClients(workspace.assistant_client(workspace.settings_for(prompt), what="judging"))

    def judge(items: Any, resample: int) -> list[float | None]:
        progress(f"judge noise: resample {resample + 1} of {resamples}", None)
        result = pipeline.run(pool, items, sample_offset=resample * RESAMPLE_STRIDE)
        return list(result.scores())

    return measure_noise(groups, judge, resamples=resamples)


def run_judge(args: argparse.Namespace, out: TextIO, open_workspace: Callable[..., Any], in_daemon: DaemonJudge) -> int:
    params = judge_params(args)
    if args.pipeline is not None:
        from spade_lsp.judges._pipeline import Pipeline

        Pipeline.load(args.pipeline)  # a bad file fails here, before any daemon is asked
    document = in_daemon(args, params)
    if document is None:
        with open_workspace(args, args.prompt) as workspace:
            document = judge_job(workspace, args.prompt, params, _progress_line)
    if args.json:
        _dump(out, document)
    elif params.get("grading_notes"):
        from spade_lsp.judges._grading import render_grading_report

        out.write(render_grading_report(document))
    else:
        from spade_lsp.judges._pipeline import render_pipeline_report

        out.write(render_pipeline_report(document))
        if document.get("noise") is not None:
            out.write(render_noise(document["noise"]))
    _warn(document)
    return 0


def render_noise(noise: Mapping[str, Any]) -> str:
    """Judge noise in two lines: how much of the variance is the judge's, how much the generator's."""

    def share(key: str) -> str:
        value = noise.get(key)
        return "n/a" if value is None else f"{100 * value:.0f}%"

    flips = noise.get("flip_rate") or {}
    flip = "n/a" if flips.get("rate") is None else f"{100 * flips['rate']:.1f}%"
    return (
        f"\njudge noise ({noise.get('resamples')} resamples of {noise.get('outputs')} outputs): judge variance "
        f"{noise.get('judge_variance')}, generator variance {noise.get('generator_variance')} "
        f"(judge {share('judge_share')}, generator {share('generator_share')}); verdict flips on {flip} of outputs\n"
    )


# -- spade test -------------------------------------------------------------------------------------------


def run_test(
    args: argparse.Namespace, out: TextIO, open_workspace: Callable[..., Any], *, daemon_runs: bool = False
) -> int:
    """Run a prompt-response test here. Its run is stored unless the workspace's daemon runs: the daemon is the
    store's one writer while it runs (the test is about the model, not a prompt, so it is not a daemon job)."""
    from spade_lsp.judges._prompt_tests import TESTS, render_test_report, run_prompt_test

    if args.list or args.name is None:
        if args.name is None and not args.list:
            raise InputError(f"name a test to run; known tests: {', '.join(sorted(TESTS))}")
        if args.json:
            _dump(out, {"tests": sorted(TESTS)})
        else:
            out.write("".join(f"{name}\n" for name in sorted(TESTS)))
        return 0
    if args.name not in TESTS:
        raise InputError(f"unknown test {args.name!r}; known tests: {', '.join(sorted(TESTS))}")
    if args.limit is not None and args.limit < 1:
        raise InputError("--limit must be at least 1")
    anchor = args.workspace if args.workspace is not None else Path.cwd()
    with open_workspace(args, anchor) as workspace:
        sut = workspace.llm_client()
        if args.judge_model is not None:  # named on the command line: on the assistant's endpoint when set
            judge = _with_model(workspace.assistant_client() if workspace.has_assistant() else sut, args.judge_model)
        else:  # without an assistant model the LLM annotators are skipped, and the report says so
            judge = workspace.assistant_client() if workspace.has_assistant() else None
        store = None if daemon_runs else workspace.store
        document = run_prompt_test(args.name, sut, judge=judge, store=store, limit=args.limit, progress=_progress_line)
    if daemon_runs:
        document.setdefault("warnings", []).append(
            "not stored: the workspace daemon runs and is the store's one writer; stop it to keep test runs"
        )
    if args.json:
        _dump(out, document)
    else:
        out.write(render_test_report(document))
    _warn(document)
    return 0


def _with_model(client: Any, model: str) -> Any:
    derive = getattr(client, "with_model", None)
    if derive is None:
        raise InputError(f"--judge-model {model}: this client cannot switch models")
    return derive(model)


# -- output -----------------------------------------------------------------------------------------------


def _progress_line(message: str, percentage: float | None) -> None:
    if sys.stderr.isatty():
        print(f"\rspade: {message}".ljust(60), end="", file=sys.stderr, flush=True)


def _dump(out: TextIO, document: Mapping[str, Any]) -> None:
    json.dump(document, out, ensure_ascii=False, indent=2)
    out.write("\n")


def _warn(document: Mapping[str, Any]) -> None:
    for warning in document.get("warnings", []):
        print(f"spade: warning: {warning}", file=sys.stderr)
