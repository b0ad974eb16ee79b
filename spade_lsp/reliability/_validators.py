"""Validators: ``(name, message, predicate, minimum)``, the unit that sampling measures and retry enforces.

A predicate sees the output (one parameter) or the input and the output (two parameters). In a workspace the
validators are the prompt's selected sidecar assertions, which only ever run in the sandbox; there a
:class:`ValidatorSpec` (no predicate) names them. :class:`Validator` holds a predicate for library use, in the
caller's own process, with the caller's own code.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

DEFAULT_MINIMUM: Final = 0.9


@dataclass(frozen=True, slots=True)
class ValidatorSpec:
    """A validator's identity and threshold: what the statistics and the report need."""

    name: str
    message: str = ""
    minimum: float = DEFAULT_MINIMUM

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a validator needs a name")
        if not 0.0 <= self.minimum <= 1.0:
            raise ValueError(f"validator {self.name}: minimum {self.minimum!r} is not a fraction in [0, 1]")


@dataclass(frozen=True, slots=True)
class Validator:
    """A validator with its predicate. ``takes_input`` is inferred from the predicate's arity when None."""

    name: str
    predicate: Callable[..., Any]
    message: str = ""
    minimum: float = DEFAULT_MINIMUM
    takes_input: bool | None = None

    def __post_init__(self) -> None:
        ValidatorSpec(self.name, self.message, self.minimum)  # the same checks
        if self.takes_input is None:
            object.__setattr__(self, "takes_input", _arity(self.predicate) >= 2)

    @property
    def spec(self) -> ValidatorSpec:
        return ValidatorSpec(self.name, self.message, self.minimum)

    def check(self, output: str, input: Mapping[str, Any] | str | None = None) -> bool:
        """Whether ``output`` passes; only an exact ``True`` passes (``1`` or ``"yes"`` do not)."""
        result = self.predicate(input, output) if self.takes_input else self.predicate(output)
        return result is True


def _arity(function: Callable[..., Any]) -> int:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return 1
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in parameters if p.kind in positional and p.default is inspect.Parameter.empty)
