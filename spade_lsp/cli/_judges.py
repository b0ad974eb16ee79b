"""``spade judge`` and ``spade test``: LLM judges from the command line and in CI, and the daemon's judge job."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from spade_lsp._columns import dump_json
from spade_lsp.cli._reliability import scale_flags
from spade_lsp.errors import InputError
from spade_lsp.jobs import run_here, validate_params
from spade_lsp.jobs.judge import NOISE_SOURCES

#: Runs a judge job in the workspace's daemon when one runs (None: run in this process).
DaemonJudge = Callable[[argparse.Namespace, dict[str, Any]], "dict[str, Any] | None"]


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
    scale_flags(judge, executor=False)  # a judge's calls stay in this process; --batch sends them as batches
    common(judge)

    test = commands.add_parser("test", help="run a prompt-response test (ModelGauge style) against the model")
    test.add_argument(
        "name", nargs="?", metavar="NAME|FILE", help="a shipped test's name (see --list), or a test file (.yaml)"
    )
    test.add_argument("--list", action="store_true", help="list the tests this version knows")
    test.add_argument("--judge-model", metavar="MODEL", help="the annotators' model (default: the assistant model)")
    test.add_argument("--limit", type=int, metavar="N", help="run only the first N test items")
    common(test)


# -- spade judge ------------------------------------------------------------------------------------------


def judge_params(args: argparse.Namespace) -> dict[str, Any]:
    """The flags as a ``judge`` job's params (checked by :mod:`spade_lsp.jobs.judge`)."""
    params: dict[str, Any] = {}
    if args.pipeline is not None:
        params["pipeline"] = str(args.pipeline.resolve())
    else:
        params["grading_notes"] = True
        params["compare"] = bool(args.compare)
    if args.noise is not None:
        params["noise"] = args.noise
        params["noise_source"] = args.noise_source
    validate_params("judge", params)
    return params


def run_judge(
    args: argparse.Namespace,
    out: TextIO,
    open_workspace: Callable[..., Any],
    in_daemon: DaemonJudge,
    overrides: Mapping[str, Any] | None = None,
) -> int:
    params = judge_params(args)
    if args.pipeline is not None:
        from spade_lsp.judges import Pipeline

        Pipeline.load(args.pipeline)  # a bad file fails here, before any daemon is asked
    document = in_daemon(args, params)
    if document is None:
        with open_workspace(args, args.prompt) as workspace:
            document = run_here(workspace, "judge", args.prompt, params, _progress_line, overrides=overrides)
    if args.json:
        _dump(out, document)
    elif params.get("grading_notes"):
        from spade_lsp.judges import render_grading_report

        out.write(render_grading_report(document))
    else:
        from spade_lsp.judges import render_pipeline_report

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


def test_file_of(args: argparse.Namespace) -> Path | None:
    """The test file ``spade test`` was given (as given: messages name it so), or None for a shipped test's name
    or ``--list``."""
    from spade_lsp.judges import looks_like_test_file

    if args.list or args.name is None or not looks_like_test_file(args.name):
        return None
    return Path(args.name)


def test_anchor(args: argparse.Namespace) -> Path:
    """Where ``spade test``'s workspace is found: ``--workspace``, else the test file's folder, else here."""
    if args.workspace is not None:
        return Path(args.workspace)
    return test_file_of(args) or Path.cwd()


#: Runs a test file as a job in the workspace's daemon when one runs: (file, params) -> the document, or None
#: when no daemon runs (then it runs here).
DaemonTest = Callable[[Path, dict[str, Any]], "dict[str, Any] | None"]


def test_params(args: argparse.Namespace, path: Path) -> dict[str, Any]:
    """A test file's run as a ``test`` job's params (checked by :mod:`spade_lsp.jobs.test`): the file's absolute
    path, and the flags."""
    params: dict[str, Any] = {"file": str(path.resolve())}
    if args.limit is not None:
        params["limit"] = args.limit
    if args.judge_model is not None:
        params["judge_model"] = args.judge_model
    validate_params("test", params)
    return params


def run_test(
    args: argparse.Namespace,
    out: TextIO,
    open_workspace: Callable[..., Any],
    *,
    daemon_runs: bool = False,
    in_daemon: DaemonTest | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> int:
    """Run a prompt-response test: a shipped one by name, here; a test file as the daemon's ``test`` job when
    the workspace's daemon runs (``in_daemon``), else here. Runs here are stored unless the daemon runs: the
    daemon is the store's one writer while it runs (a shipped test is about the model, not a file of the
    workspace, so it is not a daemon job, and is then not stored)."""
    from spade_lsp.config import resolve
    from spade_lsp.jobs.test import run_test_file, with_model
    from spade_lsp.judges import TESTS, render_test_report, run_prompt_test

    if args.list or args.name is None:
        if args.name is None and not args.list:
            raise InputError(f"name a test to run; known tests: {', '.join(sorted(TESTS))}")
        if args.json:
            _dump(out, {"tests": sorted(TESTS)})
        else:
            out.write("".join(f"{name}\n" for name in sorted(TESTS)))
        return 0
    if args.limit is not None and args.limit < 1:
        raise InputError("--limit must be at least 1")
    path = test_file_of(args)
    if path is None and args.name not in TESTS:
        raise InputError(
            f"unknown test {args.name!r}; known tests: {', '.join(sorted(TESTS))} (or give a test file, .yaml)"
        )
    if path is not None:
        from spade_lsp.judges import load_test_file

        spec = load_test_file(path)  # a bad file fails here, before a daemon, a workspace or a model is touched
        document = in_daemon(path, test_params(args, path)) if in_daemon is not None else None
        if document is None:
            with open_workspace(args, test_anchor(args)) as workspace:
                document = run_test_file(
                    workspace,
                    spec,
                    settings=resolve(workspace.root, None, overrides, overrides_source="command line"),
                    judge_model=args.judge_model,
                    limit=args.limit,
                    store=not daemon_runs,
                    progress=_progress_line,
                )
            _not_stored(document, daemon_runs)
    else:
        with open_workspace(args, test_anchor(args)) as workspace:
            settings = resolve(workspace.root, None, overrides, overrides_source="command line")  # no prompt
            sut = workspace.llm_client(settings)
            assistant = workspace.assistant_client(settings) if workspace.has_assistant(settings) else None
            # --judge-model: on the assistant's endpoint when set; without an assistant model the LLM annotators are
            # skipped, and the report says so
            judge = assistant if args.judge_model is None else with_model(assistant or sut, args.judge_model)
            store = None if daemon_runs else workspace.store
            document = run_prompt_test(
                args.name, sut, judge=judge, store=store, limit=args.limit, progress=_progress_line
            )
        _not_stored(document, daemon_runs)
    if args.json:
        _dump(out, document)
    else:
        out.write(render_test_report(document))
    _warn(document)
    return 0


def _not_stored(document: dict[str, Any], daemon_runs: bool) -> None:
    if daemon_runs:
        document.setdefault("warnings", []).append(
            "not stored: the workspace daemon runs and is the store's one writer; stop it to keep test runs"
        )


# -- output -----------------------------------------------------------------------------------------------


def _progress_line(message: str, percentage: float | None) -> None:
    if sys.stderr.isatty():
        print(f"\rspade: {message}".ljust(60), end="", file=sys.stderr, flush=True)


def _dump(out: TextIO, document: Mapping[str, Any]) -> None:
    dump_json(document, out)
    out.write("\n")


def _warn(document: Mapping[str, Any]) -> None:
    for warning in document.get("warnings", []):
        print(f"spade: warning: {warning}", file=sys.stderr)
