"""The layering the issue asked for, beyond what import-linter's contracts (``make lint``) see: SQL and database
handles appear only inside ``spade_lsp.store``."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = (ROOT / "spade_lsp", ROOT / "server" / "spade_lsp_server", ROOT / "client" / "spade_lsp_client")
STORE = ROOT / "spade_lsp" / "store"

#: The start of an SQL statement, in any case, at the start of a string or of an f-string's first part.
_SQL = re.compile(
    r"^\s*(SELECT\s.+\sFROM\s|INSERT\s+(OR\s+\w+\s+)?INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|CREATE\s+(UNIQUE\s+)?"
    r"(TABLE|INDEX|VIEW|TRIGGER)\s|ALTER\s+TABLE\s|DROP\s+(TABLE|INDEX)\s|PRAGMA\s+\w)",
    re.IGNORECASE | re.DOTALL,
)
#: What only a database handle has: sqlite-utils' tables and raw statements.
_HANDLE_CALLS = frozenset({"execute", "executescript", "executemany", "table", "rows_where", "query"})


def _python_files(*roots: Path) -> Iterator[Path]:
    for root in roots:
        yield from sorted(root.rglob("*.py"))


def _sql_strings(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.match(node.value):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.strip()[:60]!r}")
    return found


def _database_calls(path: Path) -> list[str]:
    """Any ``.db`` attribute, ``store.write`` (also as ``self.store`` or ``workspace.store``), and ``execute``,
    ``table`` and the like on a handle named ``db`` or ``conn``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        owner_name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
        if node.attr == "db":
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {owner_name}.db")
        elif owner_name in {"db", "database", "conn", "connection"} and node.attr in _HANDLE_CALLS:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {owner_name}.{node.attr}")
        elif owner_name in {"store", "_store"} and node.attr == "write":
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {owner_name}.write")
    return found


def _outside_the_store() -> list[Path]:
    return [path for path in _python_files(*SOURCES) if STORE not in path.parents]


def test_no_sql_outside_the_store() -> None:
    offenders = [hit for path in _outside_the_store() for hit in _sql_strings(path)]
    assert offenders == []
    # the positive control: the same detector finds the store's own statements
    inside = [hit for path in _python_files(STORE) for hit in _sql_strings(path)]
    assert len(inside) > 50, inside


def test_no_database_handle_outside_the_store() -> None:
    offenders = [hit for path in _outside_the_store() for hit in _database_calls(path)]
    assert offenders == []
    inside = [hit for path in _python_files(STORE) for hit in _database_calls(path)]
    assert len(inside) > 20, inside
