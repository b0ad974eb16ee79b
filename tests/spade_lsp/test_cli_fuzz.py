"""Fuzzing the commands that read the user's JSON: a few hundred generated malformed, deeply nested and huge
inputs through ``spade taxonomy --jsonl``, ``spade import --versions``, ``spade import --examples`` and
``spade select --matrix``, in-process through the CLI's ``main``. Every one must be exit 2 with one line on
stderr, never a traceback (a ``RecursionError`` from 100,000 nested brackets was one)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from spade_lsp.cli import main

SEED = 20240611
DEPTHS = (201, 1_000, 5_000, 100_000)


def _deep(depth: int, opener: str) -> str:
    closer = {"[": "]", "{": "}"}[opener[0]]
    return opener * depth + "1" + closer * depth if opener == "[" else '{"a":' * depth + "1" + "}" * depth


def _malformed_json(rng: random.Random) -> Iterator[bytes]:
    """Texts no JSON command accepts, as whole files (so also as a JSONL file's one line)."""
    for depth in DEPTHS:
        yield _deep(depth, "[").encode()
        yield _deep(depth, "{").encode()
        yield ("[" * depth).encode()  # unterminated
        yield ('{"diff": ' + "[" * depth).encode()
    yield b""
    yield b"   \n\n \t\n"
    yield b"1" * 5_000  # an integer too long to convert
    yield b'["\\ud800"]'  # a lone surrogate
    yield b'{"diff": "+ \\udfff"}'
    yield b"\xff\xfe\x00\x00garbage"
    yield b"caf\xe9"
    yield b"\x00" * 64
    valid = json.dumps({"diff": "+ Keep it under 10 words.", "inputs": {"a": [1, 2, {"b": None}]}, "x": [1.5, "t"]})
    for _ in range(60):  # truncated documents
        cut = rng.randrange(1, len(valid) - 1)
        text = valid[:cut]
        try:
            json.loads(text)
        except ValueError:
            yield text.encode()
    for _ in range(60):  # random bytes and random printable noise
        blob = rng.randbytes(rng.randrange(1, 200)) if rng.random() < 0.5 else _noise(rng).encode()
        try:
            json.loads(blob)
        except (ValueError, RecursionError):
            yield blob


def _noise(rng: random.Random) -> str:
    alphabet = '[]{}":,0123456789.eE-+ truefalsnl\\u\n'
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 300)))


def _wrong_shapes() -> dict[str, list[str]]:
    """Valid JSON that each command must refuse for its shape."""
    deepish = "[" * 150 + "]" * 150  # under the nesting limit, still not a version or a line
    return {
        "versions": [
            "{}", "[]", "null", "1", '"text"', "[1]", "[null]", '[{"text": 3}]', '[{"content": []}]', f"[{deepish}]",
            '[["a"]]', '[{"other": "x"}]', "[true, false]", "[1e999]", "[NaN]",
        ],
        "taxonomy": [
            "[]", "1", '"x"', "null", '{"diff": 5}', '{"diff": null}', '{"before": "a"}', '{"after": "b"}',
            '{"before": 1, "after": 2}', '{"diff": "no prefix"}', '{"diff": ["+ a"]}', f'{{"diff": {deepish}}}',
            '{"text": "x"}', '{"diff": {"+": "a"}}', '{"before": [], "after": {}}',
        ],
        "examples": [
            "[]", "1", '{"id": "1"}', '{"inputs": 5}', '{"inputs": {}, "label": "maybe"}', '{"inputs": {}, "id": []}',
            '{"inputs": {}, "output": 5}', '{"inputs": {}, "grading_note": {}}', '{"inputs": {}, "id": true}',
            '{"inputs": {}, "prompt": [1]}', '{"inputs": {}, "label": 0.5}',
            '{"inputs": {}, "id": 1}\n{"inputs": {}, "id": "1"}',
        ],
        "matrix": [
            "[]", "1", "{}", '{"M": []}', '{"assertions": [], "M": [], "y": []}', '{"assertions": 5, "M": 1, "y": 2}',
            '{"assertions": [{"name": 1}], "M": [[1]], "y": [1]}',
            '{"assertions": [{"name": "a"}], "M": [[2]], "y": [1]}',
            '{"assertions": [{"name": "a"}], "M": [[1, 0]], "y": [1]}',
            f'{{"assertions": [], "M": {deepish}, "y": []}}',
            '{"assertions": [{"name": "a", "cost": "x"}], "M": [[1]], "y": [1]}',
            '{"assertions": [{"name": "a"}], "M": [[1]], "y": [1], "K": [[0, 5]]}',
        ],
    }  # fmt: skip


def _cases() -> list[tuple[str, bytes, bool]]:
    """(command, file content, whether the error must name the file: every JSON error does)."""
    rng = random.Random(SEED)
    commands = ("versions", "taxonomy", "examples")
    cases = [(command, data, True) for data in _malformed_json(rng) for command in commands]
    cases += [("matrix", data, True) for data in _malformed_json(random.Random(SEED + 1))]
    for command, texts in _wrong_shapes().items():
        cases += [(command, text.encode(), False) for text in texts]
    return cases


CASES = _cases()


def test_there_are_a_few_hundred_cases() -> None:
    assert len(CASES) >= 300
    assert sum(1 for _, data, _ in CASES if data.startswith(b"[" * 100_000)) >= 4


def test_every_malformed_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], workspace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace_dir)
    prompt = workspace_dir / "p.prompt"
    prompt.write_text("Keep it under 10 words.\n", encoding="utf-8")
    failures: list[str] = []
    for index, (command, data, named) in enumerate(CASES):
        source = workspace_dir / f"case{index}.{'jsonl' if command in ('taxonomy', 'examples') else 'json'}"
        source.write_bytes(data)
        argv = {
            "versions": ["import", str(prompt), "--versions", str(source)],
            "taxonomy": ["taxonomy", "--jsonl", str(source), "--workspace", str(workspace_dir)],
            "examples": ["import", str(prompt), "--examples", str(source), "--strict"],
            "matrix": ["select", "--matrix", str(source), "--json"],
        }[command]
        try:
            code = main(argv)
        except BaseException as error:  # the point: nothing may escape main
            failures.append(f"{command} {data[:40]!r}: raised {type(error).__name__}: {str(error)[:80]}")
            continue
        _, err = capsys.readouterr()
        if code != 2 or err.count("\n") != 1 or not err.startswith("spade: error: ") or "Traceback" in err:
            failures.append(f"{command} {data[:40]!r}: exit {code}, stderr {err[:200]!r}")
        elif named and str(source) not in err:
            failures.append(f"{command} {data[:40]!r}: the error does not name the file: {err[:200]!r}")
        source.unlink()
    assert not failures, f"{len(failures)} of {len(CASES)} cases:\n" + "\n".join(failures[:30])
    assert not (workspace_dir / "p.examples.jsonl").exists()  # no bad import wrote anything


def test_without_strict_a_malformed_examples_file_is_refused_or_imported_never_a_traceback(
    capsys: pytest.CaptureFixture[str], workspace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lenient (the default): a file with a usable line imports it, with a warning for each bad one; a file
    with none is exit 2 and one line naming the file."""
    monkeypatch.chdir(workspace_dir)
    prompt = workspace_dir / "p.prompt"
    prompt.write_text("Keep it under 10 words.\n", encoding="utf-8")
    failures: list[str] = []
    for index, (command, data, _) in enumerate(CASES):
        if command != "examples":
            continue
        source = workspace_dir / f"case{index}.jsonl"
        source.write_bytes(data)
        try:
            code = main(["import", str(prompt), "--examples", str(source)])
        except BaseException as error:  # the point: nothing may escape main
            failures.append(f"{data[:40]!r}: raised {type(error).__name__}: {str(error)[:80]}")
            continue
        _, err = capsys.readouterr()
        if "Traceback" in err or code not in (0, 2):
            failures.append(f"{data[:40]!r}: exit {code}, stderr {err[:200]!r}")
        elif code == 2 and (err.count("\n") != 1 or str(source) not in err):
            failures.append(f"{data[:40]!r}: exit 2 without one line naming the file: {err[:200]!r}")
        elif code == 0 and (f"{source}:" not in err or "; " not in err):
            failures.append(f"{data[:40]!r}: imported without a warning naming the line: {err[:200]!r}")
        source.unlink()
    assert not failures, "\n".join(failures[:30])
