"""The method and solver names, kept apart from numpy and the solvers so the CLI can offer them as choices
without importing either."""

from __future__ import annotations

from typing import Final, Literal

Method = Literal["base", "cov", "sub", "cost", "none"]
METHODS: Final[tuple[Method, ...]] = ("base", "cov", "sub", "cost", "none")
Solver = Literal["highs", "pulp-highs", "cbc"]
SOLVERS: Final[tuple[Solver, ...]] = ("highs", "pulp-highs", "cbc")
