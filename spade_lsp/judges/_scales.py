"""Typed scales: what a judge may answer, as a JSON schema for structured output and as a check on every
answer (models do not always honour the schema, so each answer is validated again here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from spade_lsp.errors import ConfigError

__all__ = ["OutOfScale", "Scale", "ScaleKind"]

ScaleKind = Literal["boolean", "likert", "discrete"]
SCALE_KINDS: Final = ("boolean", "likert", "discrete")
_TRUE: Final = frozenset({"yes", "true", "pass", "y", "1"})
_FALSE: Final = frozenset({"no", "false", "fail", "n", "0"})
_MAX_VALUES: Final = 100


class OutOfScale(ValueError):
    """An answer that is not a value of the scale (recorded per item, and asked again within the retries)."""


@dataclass(frozen=True, slots=True)
class Scale:
    """``values`` in order (boolean: True, False; Likert: low..high; discrete: as declared). ``passing`` are the
    values that count as a pass when a judgement is compared with a human label (good/bad)."""

    kind: ScaleKind
    values: tuple[Any, ...]
    passing: frozenset[Any]

    @classmethod
    def boolean(cls) -> Scale:
        return cls("boolean", (True, False), frozenset({True}))

    @classmethod
    def likert(cls, low: int = 1, high: int = 5, *, pass_at: int | None = None) -> Scale:
        """Integers ``low..high``; a pass is ``pass_at`` or above (default: the upper half, e.g. 4-5 of 1-5)."""
        if not isinstance(low, int) or not isinstance(high, int) or isinstance(low, bool) or isinstance(high, bool):
            raise ConfigError("a Likert scale needs integer bounds")
        if not low < high or high - low >= _MAX_VALUES:
            raise ConfigError(f"a Likert scale needs low < high and at most {_MAX_VALUES} points, not {low}..{high}")
        threshold = pass_at if pass_at is not None else low + (high - low) // 2 + 1
        if not low <= threshold <= high:
            raise ConfigError(f"pass_at {threshold} lies outside the Likert scale {low}..{high}")
        return cls("likert", tuple(range(low, high + 1)), frozenset(range(threshold, high + 1)))

    @classmethod
    def discrete(cls, values: Sequence[str | int], *, passing: Sequence[str | int] | None = None) -> Scale:
        """Named or numbered categories (categorical units, pairwise choices); ``passing`` defaults to the first."""
        options = tuple(values)
        if len(options) < 2 or len(options) > _MAX_VALUES:
            raise ConfigError(f"a discrete scale needs 2 to {_MAX_VALUES} values, not {len(options)}")
        if not all(isinstance(v, str | int) and not isinstance(v, bool) for v in options):
            raise ConfigError("a discrete scale's values must be strings or integers")
        if len(set(options)) != len(options):
            raise ConfigError(f"a discrete scale's values repeat: {list(options)}")
        chosen = tuple(passing) if passing is not None else options[:1]
        unknown = [v for v in chosen if v not in options]
        if unknown:
            raise ConfigError(f"passing values {unknown} are not values of the scale {list(options)}")
        return cls("discrete", options, frozenset(chosen))

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | str, *, where: str = "scale") -> Scale:
        """``"boolean"``, ``{type = "likert", min = 1, max = 5, pass_at = 4}`` or
        ``{type = "discrete", values = ["A", "B", "tie"], passing = ["A"]}``."""
        if isinstance(spec, str):
            spec = {"type": spec}
        if not isinstance(spec, Mapping):
            raise ConfigError(f"{where}: a scale is a name or a table, not {spec!r}")
        kind = spec.get("type")
        known = {"boolean": {"type"}, "likert": {"type", "min", "max", "pass_at"}}
        known["discrete"] = {"type", "values", "passing"}
        if kind not in known:
            raise ConfigError(f"{where}: scale type {kind!r} is not one of {', '.join(SCALE_KINDS)}")
        extra = sorted(set(spec) - known[kind])
        if extra:
            raise ConfigError(f"{where}: unknown key(s) for a {kind} scale: {', '.join(extra)}")
        try:
            if kind == "boolean":
                return cls.boolean()
            if kind == "likert":
                return cls.likert(spec.get("min", 1), spec.get("max", 5), pass_at=spec.get("pass_at"))
            values = spec.get("values")
            if not isinstance(values, list):
                raise ConfigError("a discrete scale needs `values`, a list")
            passing = spec.get("passing")
            if passing is not None and not isinstance(passing, list):
                raise ConfigError("`passing` is a list of values")
            return cls.discrete(values, passing=passing)
        except ConfigError as error:
            raise ConfigError(f"{where}: {error}") from None

    def to_spec(self) -> dict[str, Any]:
        if self.kind == "boolean":
            return {"type": "boolean"}
        if self.kind == "likert":
            return {"type": "likert", "min": self.values[0], "max": self.values[-1], "pass_at": min(self.passing)}
        return {
            "type": "discrete",
            "values": list(self.values),
            "passing": [v for v in self.values if v in self.passing],
        }

    def schema(self) -> dict[str, Any]:
        """The JSON schema of one answer on this scale."""
        if self.kind == "boolean":
            return {"type": "boolean"}
        if self.kind == "likert":
            return {"type": "integer", "minimum": self.values[0], "maximum": self.values[-1]}
        kinds = {"string" if isinstance(v, str) else "integer" for v in self.values}
        return {"type": sorted(kinds)[0] if len(kinds) == 1 else sorted(kinds), "enum": list(self.values)}

    def describe(self) -> str:
        """The scale in words, for the judge's instructions."""
        if self.kind == "boolean":
            return "true or false"
        if self.kind == "likert":
            return f"an integer from {self.values[0]} (worst) to {self.values[-1]} (best)"
        return "one of " + ", ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in self.values)

    def parse(self, value: Any) -> Any:
        """The scale's value for an answer, forgiving harmless spellings ("Yes", "4", "a" for "A"); raises
        :class:`OutOfScale` for anything else."""
        if self.kind == "boolean":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower() if isinstance(value, str | int) else None
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
            raise OutOfScale(f"{value!r} is not true or false")
        if self.kind == "likert":
            number: Any = value
            if isinstance(value, str):
                try:
                    number = int(value.strip())
                except ValueError:
                    raise OutOfScale(f"{value!r} is not an integer of {self.values[0]}..{self.values[-1]}") from None
            if isinstance(number, float) and number.is_integer():
                number = int(number)
            if isinstance(number, bool) or not isinstance(number, int) or number not in self.values:
                raise OutOfScale(f"{value!r} is outside the scale {self.values[0]}..{self.values[-1]}")
            return number
        if value in self.values and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            folded = value.strip().casefold()
            for option in self.values:
                if str(option).casefold() == folded:
                    return option
        raise OutOfScale(f"{value!r} is not one of {list(self.values)}")

    def passes(self, value: Any) -> bool:
        return value in self.passing

    def numeric(self, value: Any) -> float:
        """A number for averaging: 1/0 for boolean, the point for Likert, the position (0-based) for discrete
        values that are not numbers themselves."""
        if self.kind == "boolean":
            return 1.0 if value else 0.0
        if isinstance(value, int):
            return float(value)
        return float(self.values.index(value))
