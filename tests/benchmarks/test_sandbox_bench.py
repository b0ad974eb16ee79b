"""Benchmark: 100 pure-Python assertions on 1,000 examples in the sandbox, in under 10 s wall (issue 3, part 4).

Realistic shape: responses of 100-300 words; assertions count words and sentences, match regexes, parse JSON
and look for keywords. The time includes starting the two workers and loading the module in each.
Run with ``make bench`` or ``pytest -q -s tests/benchmarks/test_sandbox_bench.py``.
"""

from __future__ import annotations

import random
import statistics
import time

import pytest

from spade_lsp.sandbox import ModuleSource, SandboxCase, SandboxLimits, run_assertions
from tests.support.floors import below

FLOOR_S = 10.0
ASSERTIONS = 100
EXAMPLES = 1_000
RUNS = 3

pytestmark = pytest.mark.benchmark

_WORDS = [
    "the",
    "price",
    "deadline",
    "customer",
    "warranty",
    "author",
    "source",
    "title",
    "date",
    "risk",
    "goal",
    "review",
    "email",
    "summary",
    "report",
    "lecture",
    "routine",
    "finance",
    "code",
    "function",
    "module",
    "please",
    "thanks",
    "regards",
    "because",
    "however",
    "therefore",
]

_KINDS = [
    ("count", "return len(response.split()) <= {n}"),
    ("sentences", "return len(re.findall(r'[.!?]+', response)) >= {k}"),
    ("regex", "return re.search(r'\\b{w}\\b', response, re.IGNORECASE) is not None"),
    ("absent", "return '{w}' not in response.lower()"),
    ("json", "try:\n        json.loads(response)\n    except ValueError:\n        return False\n    return True"),
    ("keywords", "return sum(w in response for w in ('{w}', '{w2}', '{w3}')) >= 2"),
    ("bullets", "return sum(1 for line in response.splitlines() if line.startswith('- ')) <= {k}"),
    ("chars", "return len(response) < {n} * 6 and response.strip() != ''"),
    ("counter", "return Counter(response.lower().split()).most_common(1)[0][1] < {k} * 3"),
    ("starts", "return response.lstrip().startswith(('The', 'Dear', '{{', '- ', '{W}'))"),
]


def _module(rng: random.Random) -> str:
    lines = [
        "from collections import Counter",
        "import json",
        "import re",
        "from spade_lsp.assertions import assertion",
        "",
    ]
    for i in range(ASSERTIONS):
        kind, body = _KINDS[i % len(_KINDS)]
        words = rng.sample(_WORDS, 3)
        code = body.format(
            n=rng.randint(80, 320), k=rng.randint(2, 9), w=words[0], w2=words[1], w3=words[2], W=words[0].title()
        )
        lines += [
            "",
            f'@assertion(category="Content/Count", sentence="rule {i}", version=1, synthesizer="offline")',
            f"def assert_{kind}_{i}(example: dict, prompt: str, response: str) -> bool:",
            f"    {code}",
            "",
        ]
    return "\n".join(lines)


def _response(rng: random.Random) -> str:
    if rng.random() < 0.1:
        return '{"answer": "' + " ".join(rng.choices(_WORDS, k=rng.randint(20, 60))) + '"}'
    sentences = []
    for _ in range(rng.randint(8, 20)):
        words = rng.choices(_WORDS, k=rng.randint(8, 18))
        sentences.append(" ".join(words).capitalize() + rng.choice([".", "!", "?"]))
    text = " ".join(sentences)
    if rng.random() < 0.3:
        text += "\n" + "\n".join(f"- {rng.choice(_WORDS)}" for _ in range(rng.randint(1, 6)))
    return text


def test_100_assertions_on_1000_examples_under_10s() -> None:
    rng = random.Random(11)
    source = _module(rng)
    cases = [SandboxCase({"id": i}, "Write a reply.", _response(rng)) for i in range(EXAMPLES)]
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        result = run_assertions(ModuleSource(source, "bench_assertions.py"), cases, limits=SandboxLimits(workers=2))
        times.append(time.perf_counter() - start)
        assert result.module_error is None
        assert len(result.assertions) == ASSERTIONS
        assert result.errors == []
        assert all(v is not None for row in result.passed for v in row)
    median = statistics.median(times)
    print(
        f"\nsandbox: {ASSERTIONS} assertions x {EXAMPLES} examples, median {median:.2f} s over {RUNS} runs "
        f"(runs: {', '.join(f'{t:.2f}' for t in times)}; startup {result.timing.startup_s:.2f} s)"
    )
    below("100_assertions_x_1000_examples_s", median, FLOOR_S, "s", runs=times)
