"""Assertion selection (SPADE): choose the fewest assertions that catch the known bad outputs without flagging
too many good ones, with subsumption, confidence intervals and cross-validation.

Engine only: nothing here imports LSP code. See :mod:`spade_lsp.selection._select` for the formulation.
"""

from __future__ import annotations

from spade_lsp.selection._matrix import (
    AssertionSpec,
    SelectionInput,
    Subsumption,
    eval_run_input,
    load_matrix_file,
    matrix_from_json,
)
from spade_lsp.selection._select import METHODS, CrossValidation, Method, Selection, select
from spade_lsp.selection._stats import stratified_folds, wilson_interval
from spade_lsp.selection._subsumption import (
    Relation,
    build_relation,
    check_subsumes,
    dag_roots,
    static_subsumptions,
    transitive_closure,
)

__all__ = [
    "METHODS",
    "AssertionSpec",
    "CrossValidation",
    "Method",
    "Relation",
    "Selection",
    "SelectionInput",
    "Subsumption",
    "build_relation",
    "check_subsumes",
    "dag_roots",
    "eval_run_input",
    "load_matrix_file",
    "matrix_from_json",
    "select",
    "static_subsumptions",
    "stratified_folds",
    "transitive_closure",
    "wilson_interval",
]
