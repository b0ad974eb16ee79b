"""Bad matrix input is refused with one clear InputError naming the problem."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from spade_lsp._columns import IndexedColumn
from spade_lsp.errors import InputError
from spade_lsp.selection import eval_run_input, load_matrix_file, matrix_from_json


def _doc(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "assertions": [{"name": "a", "cost": 0}, {"name": "b", "cost": 1.5}],
        "M": [[1, 0], [0, 1], [1, 1]],
        "y": [0, 0, 1],
        "K": [[0, 1]],
    }
    doc.update(changes)
    return doc


def test_a_valid_document_loads_with_fails_as_the_complement_of_m() -> None:
    problem = matrix_from_json(_doc())
    assert problem.names == ("a", "b")
    assert problem.fails.tolist() == [[False, True], [True, False], [False, False]]
    assert problem.labels.tolist() == [0, 0, 1]
    assert [(p.subsumer, p.subsumed, p.origin) for p in problem.subsumptions] == [("a", "b", "user")]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"M": [[1, 0], [0, 1]]}, "`M` has 2 rows but `y` has 3"),
        ({"M": [[1, 0], [0], [1, 1]]}, r"M\[1\] has 1 cells but there are 2 assertions"),
        ({"M": [[1, 0], [0, 2], [1, 1]]}, r"M\[1\]\[1\] must be 0 or 1"),
        ({"y": [0, 2, 1]}, r"y\[1\] must be 1 \(good\) or 0 \(bad\)"),
        ({"y": [0, "bad", 1]}, r"y\[1\] must be 1"),
        ({"assertions": [{"name": "a", "cost": math.nan}, {"name": "b"}]}, "NaN"),
        ({"assertions": [{"name": "a", "cost": -1}, {"name": "b"}]}, "finite number >= 0"),
        ({"assertions": [{"name": "a"}, {"name": "a"}]}, "more than once"),
        ({"K": [[0, 7]]}, r"K\[0\] names assertion 7"),
        ({"K": [[0]]}, r"K\[0\] must be a pair"),
    ],
)
def test_bad_documents_are_clear_errors(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        matrix_from_json(_doc(**changes), source="m.json")


def test_missing_keys_and_files_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"assertions": []}), encoding="utf-8")
    with pytest.raises(InputError, match=r"m.json: missing `M`"):
        load_matrix_file(path)
    path.write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match="invalid JSON"):
        load_matrix_file(path)
    with pytest.raises(InputError, match="no such file"):
        load_matrix_file(tmp_path / "absent.json")


def test_null_labels_are_unlabelled_and_self_pairs_are_ignored() -> None:
    problem = matrix_from_json(_doc(y=[0, None, 1], K=[[0, 0], ["b", "a"]]))
    assert problem.labels.tolist() == [0, -1, 1]
    assert [(p.subsumer, p.subsumed) for p in problem.subsumptions] == [("b", "a")]


def test_a_run_held_in_memory_columns_is_the_same_input_as_its_json() -> None:
    rows: IndexedColumn[tuple[int | None, list[int | None]]] = IndexedColumn()
    for label, verdicts in [(0, [1, 0]), (1, [1, 1]), (0, [1, 0]), (None, [None, 1])]:
        rows.append((label, tuple(verdicts)), (label, verdicts))
    assertions = [{"name": "a", "cost": 0}, {"name": "b", "cost": 1}]
    held, held_errors = eval_run_input(assertions, rows.column(0), rows.column(1))
    loaded, loaded_errors = eval_run_input(
        assertions, json.loads(json.dumps(list(rows.column(0)))), json.loads(json.dumps(list(rows.column(1))))
    )
    assert held.fails.tolist() == loaded.fails.tolist() == [[False, True], [False, False], [False, True], [True, False]]
    assert held.labels.tolist() == loaded.labels.tolist() == [0, 1, 0, -1]
    assert held_errors == loaded_errors == 1


@pytest.mark.parametrize("y", ["01", b"01", {"0": 0, "1": 1}])
def test_labels_that_are_not_an_array_are_refused(y: Any) -> None:
    with pytest.raises(InputError, match="labels and matrix rows disagree"):
        eval_run_input([{"name": "a", "cost": 0}], y, [[1], [0]])
