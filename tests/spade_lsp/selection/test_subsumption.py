"""Static subsumption per check family, the empirical filter, transitive closure and DAG roots."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from spade_lsp.selection import (
    AssertionSpec,
    SelectionInput,
    Subsumption,
    build_relation,
    check_subsumes,
    dag_roots,
    static_subsumptions,
    transitive_closure,
)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({"family": "count", "unit": "words", "max": 100}, {"family": "count", "unit": "words", "max": 150}, True),
        ({"family": "count", "unit": "words", "max": 150}, {"family": "count", "unit": "words", "max": 100}, False),
        ({"family": "count", "unit": "words", "max": 100}, {"family": "count", "unit": "sentences", "max": 150}, False),
        (
            {"family": "count", "unit": "words", "min": 3, "max": 9},
            {"family": "count", "unit": "words", "min": 2},
            True,
        ),
        ({"family": "count", "unit": "words", "max": None}, {"family": "count", "unit": "words", "max": 10}, False),
        ({"family": "count", "unit": "words", "max": "{n}"}, {"family": "count", "unit": "words", "max": "{n}"}, True),
        ({"family": "count", "unit": "words", "max": "{n}"}, {"family": "count", "unit": "words", "max": 100}, False),
        ({"family": "count", "unit": "words", "max": "{n}"}, {"family": "count", "unit": "words"}, True),
        ({"family": "json", "keys": ["a", "b"]}, {"family": "json", "keys": []}, True),
        ({"family": "json", "keys": []}, {"family": "json", "keys": ["a"]}, False),
        ({"family": "includes", "phrases": ["x", "y"]}, {"family": "includes", "phrases": ["y"]}, True),
        ({"family": "excludes", "phrases": ["x", "y"]}, {"family": "excludes", "phrases": ["x"]}, True),
        ({"family": "excludes", "phrases": ["x"]}, {"family": "includes", "phrases": ["x"]}, False),
        ({"family": "headings", "headings": ["A", "B"]}, {"family": "headings", "headings": ["B"]}, True),
        ({"family": "starts_with", "phrase": "Hi"}, {"family": "starts_with", "phrase": "Hi"}, True),
        ({"family": "starts_with", "phrase": "Hi there"}, {"family": "starts_with", "phrase": "Hi"}, False),
        ({"family": "tone", "target": "friendly"}, {"family": "tone", "target": "friendly"}, True),
        ({"family": "tone", "target": "friendly"}, {"family": "tone", "target": "formal"}, False),
    ],
)
def test_static_rules(a: dict[str, Any], b: dict[str, Any], expected: bool) -> None:
    assert check_subsumes(a, b) is expected


def test_static_pairs_come_from_check_specs_only() -> None:
    specs = [
        AssertionSpec("w100", check={"family": "count", "unit": "words", "max": 100}),
        AssertionSpec("w150", check={"family": "count", "unit": "words", "max": 150}),
        AssertionSpec("opaque"),
    ]
    assert [(p.subsumer, p.subsumed, p.origin) for p in static_subsumptions(specs)] == [("w100", "w150", "static")]


def test_closure_is_transitive_and_cycles_are_equivalence() -> None:
    closure = transitive_closure(4, [(0, 1), (1, 2), (2, 1)])
    assert closure[0].tolist() == [False, True, True, False]
    assert closure[1, 2] and closure[2, 1]
    assert not closure.diagonal().any()


def test_roots_collapse_cycles_to_the_cheapest_member() -> None:
    # 0 <-> 1 (equivalent), both subsume 2; 3 stands alone
    closure = transitive_closure(4, [(0, 1), (1, 0), (1, 2)])
    assert dag_roots(closure, [5.0, 1.0, 0.0, 0.0]) == [1, 3]


def _problem(fails: list[list[int]], pairs: list[tuple[str, str, Any]], checks: bool = False) -> SelectionInput:
    names = [f"a{j}" for j in range(len(fails[0]))]
    return SelectionInput(
        tuple(AssertionSpec(n) for n in names),
        np.array(fails, dtype=np.bool_),
        np.zeros(len(fails), dtype=np.int8),
        tuple(Subsumption(a, b, origin) for a, b, origin in pairs),
    )


def test_examples_filter_llm_and_static_pairs_but_only_report_declared_ones() -> None:
    # a1 fails example 1, which a0 passes: a0 cannot subsume a1
    problem = _problem([[1, 1], [0, 1]], [("a0", "a1", "llm"), ("a0", "a1", "user")])
    relation = build_relation(problem)
    assert [p.origin for p in relation.dropped] == ["llm"]
    assert [p.origin for p in relation.contradicted] == ["user"]
    assert relation.closure[0, 1]
    strict = build_relation(problem, filter_declared=True)
    assert not strict.closure[0, 1]
    assert len(strict.dropped) == 2
