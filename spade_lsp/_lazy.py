"""Names a package exports on first use, so importing the package loads none of its modules (the language server
imports a few names from packages whose other modules pull in numpy, scipy, litellm or sqlite-utils)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, table: Mapping[str, str | tuple[str, str]], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``table`` maps each public name to the private module that
    defines it (or to ``(module, name there)``); the value is imported on first use and kept in ``namespace``."""

    def __getattr__(name: str) -> Any:
        where = table.get(name)
        if where is None:  # a submodule not imported yet: `from package import submodule` then imports it
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = (where, name) if isinstance(where, str) else where
        value = getattr(importlib.import_module(f"{package}.{module}"), attribute)
        namespace[name] = value
        return value

    return __getattr__
