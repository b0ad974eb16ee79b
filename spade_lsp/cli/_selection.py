"""``spade select``: the CLI handler, wired into :mod:`spade_lsp.cli` by :func:`add_select_parser`.

- ``spade select PROMPT``: the newest finished evaluation run of the prompt in the workspace store; stored
  subsumption pairs (user, llm) plus static ones from check specs; with a model configured and no LLM pairs
  stored yet for the prompt, SPADE's two LLM calls propose them first. The selection is stored.
- ``spade select --matrix FILE``: the matrix contract (assertions, M, y, K; docs/cli.md). The selection is
  stored only when ``--workspace`` is given (a matrix file belongs to no prompt, and a CI run should not create a
  store by accident).

Exit codes: 0 a selection was found; 1 the run was infeasible (the reason says which constraint fails and
what is reachable); 2 bad input (raised as :class:`~spade_lsp.errors.InputError`, reported by the CLI).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from spade_lsp._columns import dump_json
from spade_lsp._fallbacks import Fallback
from spade_lsp.config import setting_help
from spade_lsp.errors import InputError
from spade_lsp.selection import METHODS, SOLVERS

if TYPE_CHECKING:  # loaded when a selection runs, not when the parser is built
    from spade_lsp.jobs.select import SelectOptions
    from spade_lsp.selection import Selection

EXIT_OK, EXIT_INFEASIBLE = 0, 1


def _unit(text: str) -> float:
    try:
        value = float(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from error
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}")
    return value


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from error
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def add_select_parser(commands: Any, common: Callable[[argparse.ArgumentParser], None]) -> argparse.ArgumentParser:
    """Register ``select`` on an argparse subparsers object; ``common`` adds the shared flags (--json, ...)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "select", help="choose the fewest assertions that catch the bad examples (SPADE's ILP)"
    )
    parser.add_argument("prompt", nargs="?", type=Path, help="use the prompt's newest evaluation run")
    parser.add_argument("--matrix", type=Path, metavar="FILE", help="a matrix file: assertions, M, y, K")
    parser.add_argument("--method", choices=METHODS, default="sub", help="selection method (default: sub)")
    parser.add_argument("--tau", type=_unit, help=setting_help("tau"))
    parser.add_argument("--alpha", type=_unit, help=setting_help("alpha"))
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds; 0 to skip (default: 5)")
    parser.add_argument("--time-limit", type=_positive, default=10.0, metavar="S", help="solver time limit")
    parser.add_argument("--solver", choices=SOLVERS, default="highs", help=argparse.SUPPRESS)
    parser.add_argument(
        "--filter-declared",
        action="store_true",
        help="also drop declared subsumption pairs (K) that the examples contradict",
    )
    common(parser)
    return parser


def _root(args: argparse.Namespace) -> Path:
    from spade_lsp.config import find_workspace_root

    if getattr(args, "workspace", None) is not None:
        return Path(args.workspace)
    return find_workspace_root(args.prompt if args.prompt is not None else Path.cwd())


def options_from_args(args: argparse.Namespace) -> SelectOptions:
    from spade_lsp.jobs.select import SelectOptions

    return SelectOptions(args.method, args.folds, args.time_limit, args.solver, args.filter_declared)


def select_params(args: argparse.Namespace) -> dict[str, Any]:
    """The flags as a ``select`` job's params (only those given; the daemon solves with HiGHS). ``--tau`` and
    ``--alpha`` are settings: they travel with ``--model`` in the job's ``settings``."""
    params: dict[str, Any] = {"method": args.method, "folds": args.folds, "time_limit": args.time_limit}
    params |= {"filter_declared": True} if args.filter_declared else {}
    return params


def _from_matrix(args: argparse.Namespace, overrides: Mapping[str, Any]) -> tuple[Selection, int | None]:
    from spade_lsp.config import resolve
    from spade_lsp.selection import load_matrix_file

    options = options_from_args(args)
    problem = load_matrix_file(args.matrix)
    root = _root(args)
    settings = resolve(root, None, overrides, overrides_source="command line")  # a matrix has no front matter
    tau, alpha = settings.tau, settings.alpha
    if args.workspace is None:
        return options.solve(problem, settings), None
    from spade_lsp.selection import save_selection
    from spade_lsp.workspace import Workspace

    with Workspace(args.workspace) as workspace:
        selection = options.solve(problem, settings)
        stored = save_selection(
            workspace.store, selection, source=str(args.matrix), parameters=options.parameters(tau, alpha)
        )
    return selection, stored


def _from_prompt(args: argparse.Namespace, overrides: Mapping[str, Any]) -> tuple[Selection, int | None]:
    """The prompt's settings resolved once, as the daemon's job resolves them: the workspace's files, the
    prompt's front matter (its tau and alpha count, as in the editor), then the command line's options."""
    from spade_lsp.config import resolve_file
    from spade_lsp.jobs.select import select_prompt
    from spade_lsp.workspace import Workspace

    root = _root(args)
    settings = resolve_file(root.resolve(), args.prompt, overrides, overrides_source="command line")
    with Workspace(root) as workspace:
        return select_prompt(workspace, args.prompt, options_from_args(args), settings=settings)


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The command line's settings, for a caller that passes none: the one reading of them every command uses."""
    from spade_lsp.cli import _overrides as command_line_settings

    return command_line_settings(args)


def _render(document: dict[str, Any], out: TextIO) -> None:
    """The readable table of a ``--json`` document (so a selection the daemon ran renders the same)."""

    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    def interval(bounds: Sequence[float] | None) -> str:
        return "" if not bounds else f" [{bounds[0]:.2f}, {bounds[1]:.2f}]"

    out.write(
        f"method {document['method']}, tau {document['tau']:g}, alpha {document['alpha']:g}: {document['status']}"
        f" ({document['solve_seconds']:.3f} s)\n"
    )
    if document["status"] == "infeasible":
        out.write(f"{document['reason']}\n")
    else:
        out.write(
            f"{len(document['selected'])} assertion(s); coverage {pct(document['coverage'])}"
            f"{interval(document['coverage_interval'])}, FFR {pct(document['ffr'])}"
            f"{interval(document['ffr_interval'])}\n"
        )
        for name in document["selected"]:
            out.write(f"  {name}\n")
        cv = document.get("cv")
        if cv is not None:
            out.write(
                f"{cv['folds']}-fold cross-validation: coverage {pct(cv['coverage'])}"
                f"{interval(cv['coverage_interval'])}, FFR {pct(cv['ffr'])}{interval(cv['ffr_interval'])}\n"
            )
        if document["excluded_not_subsumed"]:
            out.write(f"excluded and not subsumed: {', '.join(document['excluded_not_subsumed'])}\n")
    for note in document["notes"]:
        out.write(f"note: {note}\n")
    for fallback in document.get("fallbacks") or []:
        out.write(f"fell back: {Fallback(**fallback).message()}\n")


def run_select(
    args: argparse.Namespace,
    out: TextIO,
    daemon_select: Callable[[argparse.Namespace], dict[str, Any] | None] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> int:
    """Run ``spade select``; returns the exit code (bad input raises :class:`InputError`). ``daemon_select``
    runs a prompt's selection in the workspace daemon and returns its document, or None to run it here;
    ``overrides`` are the command line's settings (``--model``, ...)."""
    if (args.prompt is None) == (args.matrix is None):
        raise InputError("give either a PROMPT or --matrix FILE (not both)")
    document = daemon_select(args) if daemon_select is not None and args.prompt is not None else None
    if document is None:
        chosen = overrides if overrides is not None else _overrides(args)
        selection, selection_id = _from_matrix(args, chosen) if args.matrix is not None else _from_prompt(args, chosen)
        document = selection.to_json()
        if selection_id is not None:
            document["selection_id"] = selection_id
    if args.json:
        dump_json(document, out)
        out.write("\n")
    else:
        _render(document, out)
    return EXIT_INFEASIBLE if document["status"] == "infeasible" else EXIT_OK
