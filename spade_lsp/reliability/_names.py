"""Interval method names, light to import: the command line and the job checks need them, not numpy."""

from __future__ import annotations

from typing import Final, Literal

Method = Literal["wilson", "clopper-pearson"]
METHODS: Final = ("wilson", "clopper-pearson")
