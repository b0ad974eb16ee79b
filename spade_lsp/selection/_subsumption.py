"""Subsumption: which assertion catches every failure another catches.

"A subsumes B" means every response that fails B also fails A, so with A selected B adds nothing. Three
sources, merged into one relation and closed transitively:

- **static**, for generated checks of one family (:func:`static_subsumptions`): the pass region of A lies
  inside the pass region of B. A word limit of 100 subsumes a limit of 150; JSON with keys {a, b} subsumes
  plain valid JSON; ``includes``/``excludes``/``headings`` with a superset subsume the subset; placeholder
  bounds ("{word_count}") are compared only when identical; any other family only when the specs are identical
  (then the two are equivalent);
- **llm**: SPADE's two calls (:mod:`._llm`);
- **user**: pairs declared in a matrix file's ``K`` or stored by hand.

The examples are only ever a *filter*, never a proof: A cannot subsume B if B fails an example A passes
(:func:`empirically_possible`). Static and LLM pairs are always filtered. Declared (user) pairs are the
caller's statement about the assertions and are kept as given unless ``filter_declared``; pairs the examples
contradict are reported either way. Cycles (A subsumes B subsumes A) mean equivalence, which is allowed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spade_lsp.selection._matrix import AssertionSpec, BoolMatrix, SelectionInput, Subsumption

_SET_KEYS = {"json": "keys", "includes": "phrases", "excludes": "phrases", "headings": "headings"}


def _bound_within(inner: Any, outer: Any, *, upper: bool) -> bool:
    """Is bound ``inner`` at least as tight as ``outer``? None is unbounded; placeholders only equal themselves."""
    if outer is None:
        return True
    if inner is None:
        return False
    if isinstance(inner, str) or isinstance(outer, str):
        return bool(inner == outer)
    if isinstance(inner, bool) or isinstance(outer, bool):
        return False
    if not isinstance(inner, int | float) or not isinstance(outer, int | float):
        return False
    return bool(inner <= outer) if upper else bool(inner >= outer)


def _rest(spec: Mapping[str, Any], *skip: str) -> str:
    return json.dumps({k: v for k, v in spec.items() if k not in skip}, sort_keys=True, default=str)


def _as_set(value: Any) -> frozenset[str] | None:
    if value is None:
        return frozenset()
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return frozenset(value)
    return None


def check_subsumes(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Does check spec ``a`` subsume check spec ``b`` (every response failing b fails a)?"""
    family = a.get("family")
    if not isinstance(family, str) or family != b.get("family"):
        return False
    if family == "count":
        if _rest(a, "min", "max") != _rest(b, "min", "max"):  # same unit and options
            return False
        return _bound_within(a.get("min"), b.get("min"), upper=False) and _bound_within(
            a.get("max"), b.get("max"), upper=True
        )
    key = _SET_KEYS.get(family)
    if key is not None:
        if _rest(a, key) != _rest(b, key):
            return False
        sa, sb = _as_set(a.get(key)), _as_set(b.get(key))
        return sa is not None and sb is not None and sa >= sb
    return _rest(a) == _rest(b)  # starts_with, ends_with and unknown families: identical specs only


def static_subsumptions(assertions: Sequence[AssertionSpec]) -> list[Subsumption]:
    """Pairs proven from ``check`` specs, compared within a family only."""
    by_family: dict[str, list[AssertionSpec]] = {}
    for spec in assertions:
        if spec.check is not None and isinstance(spec.check.get("family"), str):
            by_family.setdefault(str(spec.check["family"]), []).append(spec)
    out: list[Subsumption] = []
    for group in by_family.values():
        for a in group:
            for b in group:
                if a is not b and a.check is not None and b.check is not None and check_subsumes(a.check, b.check):
                    out.append(Subsumption(a.name, b.name, "static"))
    return out


def empirically_possible(fails: BoolMatrix, subsumer: int, subsumed: int) -> bool:
    """False when ``subsumed`` fails an example ``subsumer`` passes: then it cannot subsume it."""
    return not bool(np.any(fails[:, subsumed] & ~fails[:, subsumer]))


def strongly_connected(n: int, edges: Sequence[Sequence[int]]) -> list[int]:
    """Component id of each node (Tarjan, iterative); ids come out in reverse topological order."""
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    comp = [-1] * n
    stack: list[int] = []
    counter = 0
    components = 0
    for root in range(n):
        if index[root] != -1:
            continue
        work: list[tuple[int, int]] = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            node, child = work[-1]
            if child < len(edges[node]):
                work[-1] = (node, child + 1)
                nxt = edges[node][child]
                if index[nxt] == -1:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack[nxt] = True
                    work.append((nxt, 0))
                elif on_stack[nxt]:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    comp[member] = components
                    if member == node:
                        break
                components += 1
    return comp


def transitive_closure(n: int, pairs: Iterable[tuple[int, int]]) -> BoolMatrix:
    """``closure[i, j]``: i subsumes j through a chain of pairs (i != j). Cycles make their members equivalent.

    Strongly connected components first, then reachability as bitsets over the condensed DAG: linear in the
    pairs times n/64, fast enough for thousands of assertions.
    """
    edges: list[list[int]] = [[] for _ in range(n)]
    for a, b in pairs:
        if a != b:
            edges[a].append(b)
    comp = strongly_connected(n, edges)
    count = max(comp, default=-1) + 1
    members: list[int] = [0] * count  # bitset of nodes per component
    succ: list[set[int]] = [set() for _ in range(count)]
    for node in range(n):
        members[comp[node]] |= 1 << node
        for nxt in edges[node]:
            if comp[nxt] != comp[node]:
                succ[comp[node]].add(comp[nxt])
    reach: list[int] = [0] * count  # nodes reachable from the component, its own members included
    for c in range(count):  # Tarjan numbers sinks first, so successors are already done
        bits = members[c]
        for s in succ[c]:
            bits |= reach[s]
        reach[c] = bits
    closure = np.zeros((n, n), dtype=np.bool_)
    for node in range(n):
        bits = reach[comp[node]]
        if bits:
            row = np.frombuffer(bits.to_bytes((n + 7) // 8, "little"), dtype=np.uint8)
            closure[node] = np.unpackbits(row, bitorder="little")[:n].astype(np.bool_)
        closure[node, node] = False
    return closure


@dataclass(frozen=True)
class Relation:
    """The subsumption relation selection uses: closed, filtered, with what was dropped or contradicted."""

    closure: BoolMatrix
    used: tuple[Subsumption, ...]
    dropped: tuple[Subsumption, ...]  # static/llm (or filtered user) pairs the examples refute
    contradicted: tuple[Subsumption, ...]  # user pairs the examples contradict but that were kept


def build_relation(problem: SelectionInput, *, filter_declared: bool = False, static: bool = True) -> Relation:
    """Merge declared, stored and static pairs, filter them on the examples, close transitively."""
    pairs = list(problem.subsumptions)
    if static:
        pairs += static_subsumptions(problem.assertions)
    seen: set[tuple[int, int]] = set()
    used: list[Subsumption] = []
    dropped: list[Subsumption] = []
    contradicted: list[Subsumption] = []
    for pair in pairs:
        a, b = problem.index[pair.subsumer], problem.index[pair.subsumed]
        if a == b:
            continue
        if not empirically_possible(problem.fails, a, b):
            if pair.origin != "user" or filter_declared:
                dropped.append(pair)
                continue
            contradicted.append(pair)
        if (a, b) not in seen:
            seen.add((a, b))
            used.append(pair)
    closure = transitive_closure(len(problem.assertions), sorted(seen))
    return Relation(closure, tuple(used), tuple(dropped), tuple(contradicted))


def dag_roots(closure: BoolMatrix, costs: Sequence[float]) -> list[int]:
    """One assertion per root of the subsumption DAG: equivalent assertions (cycles) collapse to their cheapest
    member (then the first), and a class is a root when nothing outside it subsumes it."""
    n = closure.shape[0]
    equivalent = closure & closure.T
    roots: list[int] = []
    done = np.zeros(n, dtype=np.bool_)
    for j in range(n):
        if done[j]:
            continue
        members = [j, *np.flatnonzero(equivalent[j]).tolist()]
        done[members] = True
        subsumers = closure[:, j].copy()
        subsumers[members] = False
        if not subsumers.any():
            roots.append(min(members, key=lambda m: (costs[m], m)))
    return sorted(roots)
