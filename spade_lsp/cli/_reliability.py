"""``spade sample``, ``spade check`` and ``spade report``: reliability from the command line and in CI."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from spade_lsp._columns import dump_json
from spade_lsp._fallbacks import Fallback
from spade_lsp.config import setting_choices, setting_help
from spade_lsp.errors import InputError
from spade_lsp.reliability import METHODS

#: Runs a sampling job in the workspace's daemon when one runs (None: run in this process).
DaemonSample = Callable[[argparse.Namespace, dict[str, Any]], "dict[str, Any] | None"]
#: The same for a comparison job.
DaemonCompare = DaemonSample


def _power_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--effect", type=float, default=0.10, metavar="D", help="the difference to size for (default 0.10: 10 points)"
    )
    parser.add_argument("--power", type=float, default=0.80, metavar="P", help="the power to size for (default 0.80)")


def _sampling_flags(parser: argparse.ArgumentParser, *, with_early_stopping: bool = True) -> None:
    parser.add_argument("prompt", type=Path)
    parser.add_argument("--inputs", type=int, metavar="N", help=setting_help("sample_inputs"))
    parser.add_argument("--samples", type=int, metavar="M", help=setting_help("samples_per_input"))
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="which inputs are drawn (default 0)")
    parser.add_argument("--temperature", type=float, metavar="T", help=setting_help("temperature"))
    parser.add_argument("--confidence", type=float, metavar="C", help=setting_help("confidence"))
    parser.add_argument(
        "--verify",
        action="store_true",
        default=None,
        help="add the LLM verifier (PASS/FAIL on each input and output) as a column; criteria: setting `verifier`",
    )
    if not with_early_stopping:  # a comparison samples every cell and has its own interval
        return
    parser.add_argument("--interval", choices=METHODS, help=setting_help("interval"))
    parser.add_argument(
        "--no-early-stop",
        dest="early_stopping",
        action="store_false",
        default=None,
        help=setting_help("early_stopping", "sample every input M times even when its checks are already decided"),
    )


def scale_flags(parser: argparse.ArgumentParser, *, executor: bool = True) -> None:
    """How the LLM calls and the checks run at scale: the settings ``batch``, and (sampling only) ``executor`` and
    ``ray_address``."""
    parser.add_argument(
        "--batch",
        action="store_true",
        default=None,
        help=setting_help("batch"),
    )
    if not executor:
        return
    parser.add_argument(
        "--executor",
        choices=setting_choices("executor"),
        help=setting_help("executor"),
    )
    parser.add_argument("--address", dest="ray_address", metavar="ADDR", help=setting_help("ray_address"))


def add_reliability_parsers(commands: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    sample = commands.add_parser("sample", help="sample the pipeline and measure how reliably it meets its checks")
    _sampling_flags(sample)
    scale_flags(sample)
    common(sample)

    check = commands.add_parser(
        "check", help="CI gate: exit 1 when a check's interval lies wholly below its minimum success rate"
    )
    _sampling_flags(check)
    scale_flags(check)
    check.add_argument("--latest", action="store_true", help="judge the newest stored run instead of sampling")
    check.add_argument(
        "--baseline",
        type=int,
        metavar="VERSION",
        help="instead: compare the newest version with this one (paired) and exit 1 when any check is detectably worse",
    )
    _power_flags(check)
    common(check)

    compare = commands.add_parser(
        "compare", help="paired comparison of prompt versions, models or temperatures on the same inputs"
    )
    _sampling_flags(compare, with_early_stopping=False)
    scale_flags(compare)
    what = compare.add_mutually_exclusive_group()
    what.add_argument(
        "--versions",
        type=int,
        nargs=2,
        metavar=("BASELINE", "CANDIDATE"),
        help="two recorded versions (default: the one before the newest, then the newest)",
    )
    what.add_argument("--models", nargs="+", metavar="MODEL", help="litellm model names; the first is the baseline")
    what.add_argument(
        "--temperatures", type=float, nargs="+", metavar="T", help="sampling temperatures; the first is the baseline"
    )
    _power_flags(compare)
    common(compare)

    report = commands.add_parser("report", help="the newest sampling run as a self-contained HTML file or JSON")
    report.add_argument("prompt", type=Path)
    report.add_argument("--html", type=Path, metavar="FILE", help="write the HTML report here")
    report.add_argument("--run", type=int, metavar="ID", help="a stored run (default: the prompt's newest)")
    common(report)


def job_params(args: argparse.Namespace) -> dict[str, Any]:
    """The sampling flags as a daemon job's params (only those given)."""
    names = ("inputs", "samples", "seed", "temperature", "interval", "confidence", "early_stopping", "verify")
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


def _sample(
    args: argparse.Namespace,
    open_workspace: Callable[..., Any],
    in_daemon: DaemonSample,
    overrides: Mapping[str, Any] | None,
) -> dict[str, Any]:
    return _job("sample", job_params(args), args, open_workspace, in_daemon, overrides)


def _job(
    kind: str,
    params: dict[str, Any],
    args: argparse.Namespace,
    open_workspace: Callable[..., Any],
    in_daemon: DaemonSample,
    overrides: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The job in the workspace's daemon when one runs, else here; its settings are resolved the same way in
    both (the command line's options as the job's settings)."""
    from spade_lsp.jobs import run_here, validate_params

    validate_params(kind, params)  # bad flags fail here, before any daemon is asked
    document = in_daemon(args, params)
    if document is not None:
        return document
    from spade_lsp._llm_helper import start_early

    start_early()  # when not started yet: its litellm import runs on another core while the workspace is read
    with open_workspace(args, args.prompt) as workspace:
        return run_here(workspace, kind, args.prompt, params, _progress_line, overrides=overrides)


def _progress_line(message: str, percentage: float | None) -> None:
    if sys.stderr.isatty():
        print(f"\rspade: {message}".ljust(60), end="", file=sys.stderr, flush=True)


def run_sample(
    args: argparse.Namespace,
    out: TextIO,
    open_workspace: Callable[..., Any],
    in_daemon: DaemonSample,
    overrides: Mapping[str, Any] | None = None,
) -> int:
    document = _sample(args, open_workspace, in_daemon, overrides)
    _emit(args, out, document)
    return 0


def compare_params(args: argparse.Namespace) -> dict[str, Any]:
    """The compare flags as a ``compare`` job's params (only those given)."""
    names = ("versions", "models", "temperatures", "inputs", "samples", "seed", "temperature", "confidence")
    params = {name: getattr(args, name, None) for name in (*names, "verify")}
    params |= {"effect": args.effect, "power": args.power}
    return {name: value for name, value in params.items() if value is not None}


def run_compare(
    args: argparse.Namespace,
    out: TextIO,
    open_workspace: Callable[..., Any],
    in_daemon: DaemonCompare,
    overrides: Mapping[str, Any] | None = None,
) -> int:
    document = _job("compare", compare_params(args), args, open_workspace, in_daemon, overrides)
    _emit(args, out, document, _comparison_table)
    return 0


def _check_baseline(
    args: argparse.Namespace,
    out: TextIO,
    open_workspace: Callable[..., Any],
    in_daemon: DaemonCompare,
    overrides: Mapping[str, Any] | None,
) -> int:
    params = compare_params(args) | {"baseline": args.baseline}
    document = _job("compare", params, args, open_workspace, in_daemon, overrides)
    _emit(args, out, document, _comparison_table)
    comparison = document["comparisons"][0]
    worse = list(comparison["worse"])
    if comparison["overall"]["verdict"] == "worse":
        worse.append(comparison["overall"]["name"])
    if worse and not args.json:
        out.write(f"\nFAILED: {', '.join(worse)} detectably worse than v{args.baseline}\n")
    return 1 if worse else 0


def run_check(
    args: argparse.Namespace,
    out: TextIO,
    open_workspace: Callable[..., Any],
    in_daemon: DaemonSample,
    compare_in_daemon: DaemonCompare,
    overrides: Mapping[str, Any] | None = None,
) -> int:
    if args.baseline is not None:
        if args.latest:
            raise InputError("--latest and --baseline do not go together: a comparison samples both versions")
        return _check_baseline(args, out, open_workspace, compare_in_daemon, overrides)
    if args.latest:
        from spade_lsp.reliability import latest_document

        with open_workspace(args, args.prompt) as workspace:
            document = latest_document(workspace, args.prompt)
    else:
        document = _sample(args, open_workspace, in_daemon, overrides)
    _emit(args, out, document)
    failing = [v["name"] for v in document["validators"] if v["verdict"] == "fail"]
    if failing and not args.json:
        out.write(f"\nFAILED: {', '.join(failing)} below the minimum success rate\n")
    return 1 if failing else 0


def run_report(args: argparse.Namespace, out: TextIO, open_workspace: Callable[..., Any]) -> int:
    from spade_lsp._files import atomic_write_text
    from spade_lsp.reliability import latest_document, render_html

    with open_workspace(args, args.prompt) as workspace:
        document = latest_document(workspace, args.prompt, run_id=args.run)
    if args.html is not None:
        if args.html.is_dir():
            raise InputError(f"{args.html}: is a directory; give a file name for the report")
        atomic_write_text(args.html, render_html(document))
        if not args.json:
            out.write(
                f"{args.html}: report of run {document['run_id']} ({document['prompt']} v{document['version']})\n"
            )
    if args.json or args.html is None:
        _emit(args, out, document)
    return 0


def _comparison_table(document: Mapping[str, Any]) -> str:
    from spade_lsp.reliability import render_comparison

    return render_comparison(document)


def _emit(
    args: argparse.Namespace,
    out: TextIO,
    document: Mapping[str, Any],
    table: Callable[[Mapping[str, Any]], str] | None = None,
) -> None:
    if args.json:
        dump_json(document, out)
        out.write("\n")
    else:
        out.write((table or render_table)(document))
    for warning in document.get("warnings", []):
        print(f"spade: warning: {warning}", file=sys.stderr)
    for fallback in document.get("fallbacks") or []:
        print(f"spade: fell back: {Fallback(**fallback).message()}", file=sys.stderr)
    p_pass = document.get("p_pass", {})
    if p_pass.get("warning"):
        print(f"spade: warning: {p_pass['warning']}", file=sys.stderr)


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _interval(rate: Mapping[str, Any]) -> str:
    if rate.get("ci_low") is None:
        return "n/a"
    return f"{100 * rate['ci_low']:.1f}–{100 * rate['ci_high']:.1f}"


def render_table(document: Mapping[str, Any]) -> str:
    """The run as a readable table: validators, P_pass, attempts, calls and cost."""
    from tabulate import tabulate

    level = f"{100 * document['confidence']:g}% CI"
    rows = [
        [
            v["name"],
            f"{v['successes']}/{v['trials']}",
            _percent(v["rate"]),
            _interval(v),
            _percent(v["minimum"]),
            v["verdict"].upper() if v["verdict"] == "fail" else v["verdict"],
        ]
        for v in sorted(document["validators"], key=lambda v: (v["verdict"] != "fail", v["name"]))
    ]
    lines = [
        f"{document['prompt']} v{document['version']} on {document['model']}: {len(document['inputs'])} input(s) x "
        f"up to {document['samples']} sample(s) ({document['shape']}), run {document['run_id']}",
        "",
        tabulate(rows, headers=["validator", "passed", "rate", level, "minimum", "verdict"], disable_numparse=True),
        "",
    ]
    p_pass = document["p_pass"]
    measured, predicted = p_pass["measured"], p_pass["predicted"]
    lines.append(
        f"P_pass measured {_percent(measured['rate'])} ({_interval(measured)}); predicted from the validators "
        f"{_percent(predicted['rate'])} ({_interval(predicted)})"
    )
    attempts = document["expected_attempts"]
    value = "never" if attempts["value"] is None else f"{attempts['value']:.2f}"
    for_99 = document["attempts_for_99"]
    lines.append(f"expected attempts {value}; attempts for 99% confidence {'never' if for_99 is None else for_99}")
    if document.get("inputs_differ"):
        worst = max(
            (p for p in document["per_input"] if p["attempts_for_99"] is not None),
            key=lambda p: p["attempts_for_99"],
            default=None,
        )
        hopeless = [p["input"] for p in document["per_input"] if p["attempts_for_99"] is None]
        detail = f"; worst input {worst['input']} needs {worst['attempts_for_99']}" if worst else ""
        never = f"; never passing: {', '.join(hopeless)}" if hopeless else ""
        lines.append(f"inputs differ (p = {document['heterogeneity_p']:.3g}){detail}{never}")
    cost = "unknown cost" if document.get("cost") is None else f"${document['cost']:.4f}"
    lines.append(
        f"calls {document['calls']} made, {document['calls_cached']} cached, {document['calls_saved']} saved by "
        f"early stopping, {document['calls_failed']} failed; {cost}"
    )
    decided = [  # pooled per validator; a run stored before that kept decisions per input, not shown here
        f"{d['validator']} {d['decision']} its minimum after {d['at_sample']} sample(s) per input"
        for d in document.get("sequential") or []
        if "input" not in d
    ]
    if decided:
        lines.append(f"early stopping decided {'; '.join(decided)}")
    return "\n".join(lines) + "\n"
