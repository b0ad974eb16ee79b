"""``spade judge`` and ``spade test``: LLM judges from the command line and in CI, and the daemon's judge job."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from spade_lsp._progress import Progress
from spade_lsp.errors import InputError
from spade_lsp.reliability._cli import scale_flags

if TYPE_CHECKING:
    from spade_lsp.judges._test_files import TestFile
    from spade_lsp.workspace import Workspace

#: Runs a judge job in the workspace's daemon when one runs (None: run in this process).
DaemonJudge = Callable[[argparse.Namespace, dict[str, Any]], "dict[str, Any] | None"]

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
    pool = JudgeClients(workspace.judge_client(workspace.settings_for(prompt)))

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


def test_file_of(args: argparse.Namespace) -> Path | None:
    """The test file ``spade test`` was given (as given: messages name it so), or None for a shipped test's name
    or ``--list``."""
    from spade_lsp.judges._test_files import looks_like_test_file

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
    """A test file's run as a daemon job's params (checked by :func:`check_test_params`): the file's absolute
    path, and the flags."""
    params: dict[str, Any] = {"file": str(path.resolve())}
    if args.limit is not None:
        params["limit"] = args.limit
    if args.judge_model is not None:
        params["judge_model"] = args.judge_model
    check_test_params(params)
    return params


def check_test_params(params: Mapping[str, Any]) -> None:
    """Raises :class:`InputError` for params a test job cannot run with."""
    if not isinstance(params.get("file"), str) or not Path(params["file"]).is_absolute():
        raise InputError("params.file: expected the test file's absolute path")
    limit = params.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InputError("--limit must be at least 1")
    judge_model = params.get("judge_model")
    if judge_model is not None and (not isinstance(judge_model, str) or not judge_model.strip()):
        raise InputError("params.judge_model: expected a model name")


def test_job(workspace: Workspace, path: Path, params: Mapping[str, Any], progress: Progress) -> dict[str, Any]:
    """Run a test file (the daemon's ``test`` job, ``path`` the job's file) and return its stored document."""
    from spade_lsp.judges._test_files import load_test_file

    check_test_params(params)
    spec = load_test_file(Path(str(params.get("file") or path)))
    return run_test_file(
        workspace,
        spec,
        judge_model=params.get("judge_model"),
        limit=params.get("limit"),
        store=True,
        progress=progress,
    )


def run_test(
    args: argparse.Namespace,
    out: TextIO,
    open_workspace: Callable[..., Any],
    *,
    daemon_runs: bool = False,
    in_daemon: DaemonTest | None = None,
) -> int:
    """Run a prompt-response test: a shipped one by name, here; a test file as the daemon's ``test`` job when
    the workspace's daemon runs (``in_daemon``), else here. Runs here are stored unless the daemon runs: the
    daemon is the store's one writer while it runs (a shipped test is about the model, not a file of the
    workspace, so it is not a daemon job, and is then not stored)."""
    from spade_lsp.judges._prompt_tests import TESTS, render_test_report, run_prompt_test

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
        from spade_lsp.judges._test_files import load_test_file

        spec = load_test_file(path)  # a bad file fails here, before a daemon, a workspace or a model is touched
        document = in_daemon(path, test_params(args, path)) if in_daemon is not None else None
        if document is None:
            with open_workspace(args, test_anchor(args)) as workspace:
                document = run_test_file(
                    workspace,
                    spec,
                    judge_model=args.judge_model,
                    limit=args.limit,
                    store=not daemon_runs,
                    progress=_progress_line,
                )
            _not_stored(document, daemon_runs)
    else:
        with open_workspace(args, test_anchor(args)) as workspace:
            sut = workspace.llm_client()
            if args.judge_model is not None:  # named on the command line: on the assistant's endpoint when set
                judge = _with_model(
                    workspace.assistant_client() if workspace.has_assistant() else sut, args.judge_model
                )
            else:  # without an assistant model the LLM annotators are skipped, and the report says so
                judge = workspace.assistant_client() if workspace.has_assistant() else None
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


def run_test_file(
    workspace: Workspace,
    spec: TestFile,
    *,
    judge_model: str | None = None,
    limit: int | None = None,
    store: bool = True,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """A loaded test file, checked whole (the models it needs, its sidecar functions, looked up in the
    sandbox) before the first call, then run like a shipped test. The model under test is ``model``; judge
    annotators ask the assistant model (or ``judge_model``); code annotators run in the sandbox under the
    workspace's ``sandbox`` setting, their ``ask_llm`` answered by the assistant model."""
    from spade_lsp._roles import HOW_TO_CONFIGURE_ASSISTANT
    from spade_lsp.errors import ModelNotConfiguredError
    from spade_lsp.judges._prompt_tests import run_prompt_test
    from spade_lsp.sandbox import PYTHON_ONLY_WARNING, SandboxLimits

    settings = workspace.settings
    sut = workspace.llm_client()
    judge = None
    if spec.judges:
        if judge_model is not None:  # on the assistant's endpoint when one is set, else the model under test's
            judge = _with_model(workspace.assistant_client() if workspace.has_assistant() else sut, judge_model)
        elif workspace.has_assistant():
            judge = workspace.assistant_client(what=f"the judge annotator {spec.judges[0]!r} of {spec.path.name}")
        else:
            raise ModelNotConfiguredError(
                f"{spec.path}: annotator {spec.judges[0]!r} is an LLM judge and needs a model; "
                f"{HOW_TO_CONFIGURE_ASSISTANT}; or pass --judge-model MODEL"
            )
    limits = SandboxLimits(confinement=settings.sandbox)
    texts = spec.sidecar_text()
    ask = None
    if texts:
        from spade_lsp._assertion_jobs import assistant_ask

        spec.check_sidecars(limits, texts)
        ask = assistant_ask(workspace, settings)
    test = spec.build(limits=limits, ask_llm=ask, texts=texts)
    document = run_prompt_test(
        test, sut, judge=judge, store=workspace.store if store else None, limit=limit, progress=progress
    )
    if texts and limits.confinement == "python-only":
        document.setdefault("warnings", []).append(PYTHON_ONLY_WARNING)
    return document


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
