"""``spade select``: the CLI handler, wired into :mod:`spade_lsp.cli` by :func:`add_select_parser`.

- ``spade select PROMPT``: the newest finished evaluation run of the prompt in the workspace store; stored
  subsumption pairs (user, llm) plus static ones from check specs; with a model configured and no LLM pairs
  stored yet for the prompt, SPADE's two LLM calls propose them first. The selection is stored.
- ``spade select --matrix FILE``: the DESIGN.md contract. The selection is stored only when ``--workspace``
  is given (a matrix file belongs to no prompt, and a CI run should not create a store by accident).

Exit codes: 0 a selection was found; 1 the run was infeasible (the reason says which constraint fails and
what is reachable); 2 bad input (raised as :class:`~spade_lsp.errors.InputError`, reported by the CLI).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from spade_lsp._fallbacks import Fallback, Fallbacks
from spade_lsp.errors import InputError, SpadeError
from spade_lsp.selection._names import METHODS, SOLVERS, Method, Solver

if TYPE_CHECKING:  # loaded when a selection runs, not when the parser is built
    from spade_lsp.config import Settings
    from spade_lsp.selection._matrix import SelectionInput
    from spade_lsp.selection._select import Selection
    from spade_lsp.workspace import Workspace

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
    parser.add_argument("--tau", type=_unit, help="false-failure-rate ceiling (default: settings, 0.25)")
    parser.add_argument("--alpha", type=_unit, help="coverage floor (default: settings, 0.6)")
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


def _settings(args: argparse.Namespace) -> Settings:
    from spade_lsp.config import find_workspace_root, load_settings

    root = args.workspace if getattr(args, "workspace", None) is not None else None
    if root is None:
        anchor = args.prompt if args.prompt is not None else Path.cwd()
        root = find_workspace_root(anchor)
    return load_settings(Path(root))


@dataclass(frozen=True, slots=True)
class SelectOptions:
    """How to select, apart from where the matrix comes from (the CLI's flags; the daemon's job params).
    ``tau`` and ``alpha`` of None mean the workspace's settings."""

    method: Method = "sub"
    tau: float | None = None
    alpha: float | None = None
    folds: int = 5
    time_limit: float = 10.0
    solver: Solver = "highs"
    filter_declared: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SelectOptions:
        return cls(args.method, args.tau, args.alpha, args.folds, args.time_limit, args.solver, args.filter_declared)


def _parameters(options: SelectOptions, tau: float, alpha: float) -> dict[str, Any]:
    return {
        "method": options.method,
        "tau": tau,
        "alpha": alpha,
        "folds": options.folds,
        "time_limit": options.time_limit,
        "solver": options.solver,
        "filter_declared": options.filter_declared,
    }


def _run(options: SelectOptions, problem: SelectionInput, tau: float, alpha: float) -> Selection:
    from spade_lsp.selection._select import select

    if options.folds < 0:
        raise InputError(f"--folds must be 0 or more, got {options.folds}")
    return select(
        problem,
        options.method,
        tau=tau,
        alpha=alpha,
        folds=options.folds,
        time_limit=options.time_limit,
        solver=options.solver,
        filter_declared=options.filter_declared,
    )


def _from_matrix(args: argparse.Namespace) -> tuple[Selection, int | None]:
    from spade_lsp.selection._matrix import load_matrix_file

    options = SelectOptions.from_args(args)
    problem = load_matrix_file(args.matrix)
    if args.workspace is None:
        settings = _settings(args)
        return _run(options, problem, _pick(args.tau, settings.tau), _pick(args.alpha, settings.alpha)), None
    from spade_lsp.selection._persist import save_selection
    from spade_lsp.workspace import Workspace

    with Workspace(args.workspace) as workspace:
        tau, alpha = _pick(args.tau, workspace.settings.tau), _pick(args.alpha, workspace.settings.alpha)
        selection = _run(options, problem, tau, alpha)
        stored = save_selection(
            workspace.store, selection, source=str(args.matrix), parameters=_parameters(options, tau, alpha)
        )
    return selection, stored


def _pick(value: float | None, default: float) -> float:
    return default if value is None else value


def _from_prompt(args: argparse.Namespace) -> tuple[Selection, int | None]:
    from spade_lsp.config import find_workspace_root
    from spade_lsp.workspace import Workspace

    keys = ("model", "api_base", "assistant_model", "assistant_api_base", "classifier")
    overrides = {key: getattr(args, key) for key in keys if getattr(args, key, None) is not None}
    root = args.workspace if args.workspace is not None else find_workspace_root(args.prompt)
    with Workspace(root, overrides=overrides) as workspace:
        return select_prompt(workspace, args.prompt, SelectOptions.from_args(args))


def select_prompt(workspace: Workspace, prompt: Path, options: SelectOptions) -> tuple[Selection, int]:
    """Select from the prompt's newest finished evaluation run and store the selection (and any subsumption
    pairs found on the way); returns it with its id. ``spade select PROMPT`` and the daemon's job share this."""
    from spade_lsp.selection._llm import propose_llm_subsumptions
    from spade_lsp.selection._matrix import SelectionInput
    from spade_lsp.selection._persist import latest_eval_run, load_subsumptions, save_selection, save_subsumptions
    from spade_lsp.selection._subsumption import static_subsumptions

    key = workspace.history.prompt_key(prompt)
    row = workspace.store.db.execute("SELECT id FROM prompts WHERE path = ?", [key]).fetchone()
    if row is None:
        raise InputError(f"{prompt}: not in the store; record it and run `spade eval` first")
    prompt_id = int(row[0])
    run = latest_eval_run(workspace.store, prompt_id, prompt=key)
    problem = run.problem
    stored = load_subsumptions(workspace.store, prompt_id, problem.names)
    static = static_subsumptions(problem.assertions)
    fresh = list(static)
    notes = list(problem.notes)
    settings = workspace.settings_for(prompt)  # front matter's tau and alpha count, as in the editor
    fallbacks = Fallbacks()
    if workspace.has_assistant(settings) and not any(pair.origin == "llm" for pair in stored):
        try:
            client = workspace.assistant_client(settings, what="subsumption")
            proposed = propose_llm_subsumptions(client, problem.assertions, problem.fails)
        except SpadeError as error:  # a side call that fails never aborts the selection
            fallbacks.add("subsumption", error, "used only the static and stored pairs")
        else:
            fresh += proposed
            notes.append(f"the model proposed and confirmed {len(proposed)} subsumption pair(s)")
    save_subsumptions(workspace.store, prompt_id, fresh)
    problem = SelectionInput(problem.assertions, problem.fails, problem.labels, (*stored, *fresh), tuple(notes))
    tau, alpha = _pick(options.tau, settings.tau), _pick(options.alpha, settings.alpha)
    selection = dataclasses.replace(_run(options, problem, tau, alpha), fallbacks=tuple(fallbacks.to_json()))
    selection_id = save_selection(
        workspace.store,
        selection,
        source="eval_run",
        parameters=_parameters(options, tau, alpha),
        prompt_id=prompt_id,
        eval_run_id=run.eval_run_id,
    )
    return selection, selection_id


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
) -> int:
    """Run ``spade select``; returns the exit code (bad input raises :class:`InputError`). ``daemon_select``
    runs a prompt's selection in the workspace daemon and returns its document, or None to run it here."""
    if (args.prompt is None) == (args.matrix is None):
        raise InputError("give either a PROMPT or --matrix FILE (not both)")
    document = daemon_select(args) if daemon_select is not None and args.prompt is not None else None
    if document is None:
        selection, selection_id = _from_matrix(args) if args.matrix is not None else _from_prompt(args)
        document = selection.to_json()
        if selection_id is not None:
            document["selection_id"] = selection_id
    if args.json:
        json.dump(document, out, ensure_ascii=False, indent=2)
        out.write("\n")
    else:
        _render(document, out)
    return EXIT_INFEASIBLE if document["status"] == "infeasible" else EXIT_OK
