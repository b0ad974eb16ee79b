"""``select``: SPADE's ILP on the prompt's newest finished evaluation run; the selection is stored.
``spade select PROMPT`` runs this too; ``tau`` and ``alpha`` not given come from the prompt's settings (the
workspace's files, its front matter, then the editor's or the command line's settings)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade_lsp._fallbacks import Fallbacks
from spade_lsp._progress import Progress
from spade_lsp.config import Settings
from spade_lsp.errors import InputError, SpadeError
from spade_lsp.jobs._spec import JobContext, JobParams, JobSpec, choice, flag, number
from spade_lsp.selection import METHODS, Method, Solver

if TYPE_CHECKING:
    from spade_lsp.selection import Selection, SelectionInput
    from spade_lsp.workspace import Workspace


class SelectParams(JobParams):
    """How to select; ``tau`` and ``alpha`` are settings (``params.settings``), resolved with the rest."""

    method: Method | None = choice(*METHODS)
    folds: int | None = number(0, 100, integer=True)
    time_limit: float | None = number(0.001)
    filter_declared: bool | None = flag()


@dataclass(frozen=True, slots=True)
class SelectOptions:
    """How to select, apart from where the matrix comes from (the CLI's flags; the job's params). The thresholds
    are settings (``tau``, ``alpha``): they come resolved, from the files, the front matter and the overrides."""

    method: Method = "sub"
    folds: int = 5
    time_limit: float = 10.0
    solver: Solver = "highs"
    filter_declared: bool = False

    @classmethod
    def from_params(cls, params: SelectParams) -> SelectOptions:
        return cls(
            method=params.method or "sub",
            folds=5 if params.folds is None else params.folds,
            time_limit=10.0 if params.time_limit is None else params.time_limit,
            filter_declared=bool(params.filter_declared),
        )

    def parameters(self, tau: float, alpha: float) -> dict[str, Any]:
        """As a stored selection records them."""
        return {
            "method": self.method,
            "tau": tau,
            "alpha": alpha,
            "folds": self.folds,
            "time_limit": self.time_limit,
            "solver": self.solver,
            "filter_declared": self.filter_declared,
        }

    def solve(self, problem: SelectionInput, settings: Settings) -> Selection:
        """The selection under these options and the settings' tau, alpha and confidence."""
        from spade_lsp.selection import select

        if self.folds < 0:
            raise InputError(f"--folds must be 0 or more, got {self.folds}")
        selection: Selection = select(
            problem,
            self.method,
            tau=settings.tau,
            alpha=settings.alpha,
            confidence=settings.confidence,
            folds=self.folds,
            time_limit=self.time_limit,
            solver=self.solver,
            filter_declared=self.filter_declared,
        )
        return selection


def select_prompt(
    workspace: Workspace, prompt: Path, options: SelectOptions, *, settings: Settings
) -> tuple[Selection, int]:
    """Select from the prompt's newest finished evaluation run and store the selection (and any subsumption
    pairs found on the way); returns it with its id."""
    from spade_lsp.selection import (
        SelectionInput,
        latest_eval_run,
        load_subsumptions,
        propose_llm_subsumptions,
        save_selection,
        save_subsumptions,
        static_subsumptions,
    )
    from spade_lsp.store import prompt_id

    key = workspace.history.prompt_key(prompt)
    found = prompt_id(workspace.store, key)
    if found is None:
        raise InputError(f"{prompt}: not in the store; record it and run `spade eval` first")
    run = latest_eval_run(workspace.store, found, prompt=key)
    problem = run.problem
    stored = load_subsumptions(workspace.store, found, problem.names)
    fresh = list(static_subsumptions(problem.assertions))
    notes = list(problem.notes)
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
    save_subsumptions(workspace.store, found, fresh)
    problem = SelectionInput(problem.assertions, problem.fails, problem.labels, (*stored, *fresh), tuple(notes))
    tau, alpha = settings.tau, settings.alpha
    selection = dataclasses.replace(options.solve(problem, settings), fallbacks=tuple(fallbacks.to_json()))
    selection_id = save_selection(
        workspace.store,
        selection,
        source="eval_run",
        parameters=options.parameters(tau, alpha),
        prompt_id=found,
        eval_run_id=run.eval_run_id,
    )
    return selection, selection_id


def run(ctx: JobContext, params: SelectParams, progress: Progress) -> dict[str, Any]:
    options = SelectOptions.from_params(params)
    progress(f"selecting ({options.method})", 5.0)
    selection, selection_id = select_prompt(ctx.workspace, ctx.prompt, options, settings=ctx.settings)
    document: dict[str, Any] = selection.to_json()
    document["selection_id"] = selection_id
    return document


SPEC = JobSpec("select", SelectParams, run, "choose the fewest assertions that catch the bad examples")
