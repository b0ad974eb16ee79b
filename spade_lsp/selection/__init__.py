"""Assertion selection (SPADE): choose the fewest assertions that catch the known bad outputs without flagging
too many good ones, with subsumption, confidence intervals and cross-validation.

Engine only: nothing here imports LSP code. See :mod:`spade_lsp.selection._select` for the formulation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spade_lsp._lazy import lazy_exports
from spade_lsp.selection._names import METHODS, SOLVERS, Method, Solver

if TYPE_CHECKING:  # the names below load on first use: numpy and the solvers stay off the CLI's start-up path
    from spade_lsp.selection._llm import propose_llm_subsumptions
    from spade_lsp.selection._matrix import (
        AssertionSpec,
        SelectionInput,
        Subsumption,
        eval_run_input,
        load_matrix_file,
        matrix_from_json,
        not_applicable_cells,
    )
    from spade_lsp.selection._persist import (
        StoredRun,
        latest_eval_run,
        load_subsumptions,
        save_selection,
        save_subsumptions,
    )
    from spade_lsp.selection._select import CrossValidation, Selection, select
    from spade_lsp.selection._stats import stratified_folds, wilson_interval
    from spade_lsp.selection._subsumption import (
        Relation,
        build_relation,
        check_subsumes,
        dag_roots,
        static_subsumptions,
        transitive_closure,
    )


__getattr__ = lazy_exports(__name__, globals())


__all__ = [
    "METHODS",
    "SOLVERS",
    "AssertionSpec",
    "CrossValidation",
    "Method",
    "Relation",
    "Selection",
    "SelectionInput",
    "Solver",
    "StoredRun",
    "Subsumption",
    "build_relation",
    "check_subsumes",
    "dag_roots",
    "eval_run_input",
    "latest_eval_run",
    "load_matrix_file",
    "load_subsumptions",
    "matrix_from_json",
    "not_applicable_cells",
    "propose_llm_subsumptions",
    "save_selection",
    "save_subsumptions",
    "select",
    "static_subsumptions",
    "stratified_folds",
    "transitive_closure",
    "wilson_interval",
]
