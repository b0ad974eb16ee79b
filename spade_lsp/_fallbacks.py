"""What fell back, and why: a side call (an assistant model's labels, criteria, subsumption pairs, an
``ask_llm`` answer, a judge unit) that fails never aborts the main job; it is replaced by something offline or
left out, and the job's result says so. One record per distinct (step, reason, what was done instead)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Fallback:
    step: str  # what asked the model: "taxonomy labels", "criteria", "subsumption", ...
    reason: str  # why its answer could not be used
    instead: str  # what the job did instead
    count: int = 1

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "reason": self.reason, "instead": self.instead, "count": self.count}

    def message(self) -> str:
        times = f" ({self.count} times)" if self.count > 1 else ""
        return f"{self.step}: {self.instead}{times}, because {self.reason}"


class Fallbacks:
    """The fallbacks of one job, in the order they first happened."""

    def __init__(self) -> None:
        self._items: dict[tuple[str, str, str], int] = {}

    def add(self, step: str, reason: BaseException | str, instead: str, count: int = 1) -> None:
        key = (step, _reason(reason), instead)
        self._items[key] = self._items.get(key, 0) + count

    @classmethod
    def from_json(cls, documents: Iterable[Iterable[Mapping[str, Any]]]) -> Fallbacks:
        """The fallbacks of several results (their ``fallbacks`` lists), merged."""
        merged = cls()
        for items in documents:
            for item in items:
                merged.add(str(item["step"]), str(item["reason"]), str(item["instead"]), int(item.get("count", 1)))
        return merged

    @property
    def items(self) -> list[Fallback]:
        return [Fallback(step, reason, instead, count) for (step, reason, instead), count in self._items.items()]

    def to_json(self) -> list[dict[str, Any]]:
        return [item.to_json() for item in self.items]

    def messages(self) -> list[str]:
        return [item.message() for item in self.items]

    def __bool__(self) -> bool:
        return bool(self._items)


def _reason(reason: BaseException | str) -> str:
    if isinstance(reason, str):
        return reason
    text = str(reason).strip().splitlines()
    return (text[0] if text else type(reason).__name__)[:300]
