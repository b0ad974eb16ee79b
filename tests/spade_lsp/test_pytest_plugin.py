"""``pytest --spade`` (the pytest11 entry point): prompts with a selection become test items, judged on one sampling
run per prompt against the loopback stub, each in a pytest of its own (pytester's subprocess)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.blurb import SAMPLING_SIDECAR, V3, examples_jsonl, record
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, user_text

pytest_plugins = ["pytester"]

#: Three selected checks and one left out. With the stub's answers ("A cheap Kettle for you."): assert_short always
#: passes against a minimum of 0.5 (pass); assert_no_cheap never does (fail); assert_names_product always passes but
#: 12 samples cannot put its interval above 0.9 (inconclusive).
SIDECAR = (
    SAMPLING_SIDECAR
    + """

@assertion(category="Content/Inclusion", min_success=0.9)
def assert_names_product(example: dict, prompt: str, response: str) -> bool:
    return example["product"].lower() in response.lower()


def assert_not_selected(example: dict, prompt: str, response: str) -> bool:
    return False
"""
)
SELECTED = ["assert_short", "assert_no_cheap", "assert_names_product"]
IDS = [f"blurb.prompt::{name}" for name in SELECTED]


class CheapModel:
    """Answers "A cheap PRODUCT for you." and counts the requests it got (from any thread)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0

    def __call__(self, request: dict[str, Any]) -> Reply:
        product = user_text(request).split("for ", 1)[1].split(".", 1)[0]
        with self.lock:
            self.count += 1
        return chat_reply(f"A cheap {product} for you.")


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub(CheapModel()) as server:
        yield server


def _workspace(root: Path, settings: str, *, subdir: str = "") -> Path:
    """blurb.prompt with its examples, sidecar and a stored selection of :data:`SELECTED`; returns the prompt."""
    (root / "spade.toml").write_text(settings, encoding="utf-8")
    folder = root / subdir
    folder.mkdir(parents=True, exist_ok=True)
    prompt = folder / "blurb.prompt"
    (folder / "blurb.examples.jsonl").write_text(examples_jsonl(), encoding="utf-8")
    (folder / "blurb_assertions.py").write_text(SIDECAR, encoding="utf-8")
    record(root, prompt, V3)
    from spade_lsp.workspace import Workspace

    with Workspace(root) as workspace, workspace.store.write() as db:
        key = workspace.history.prompt_key(prompt)
        pid = db.execute("SELECT id FROM prompts WHERE path = ?", [key]).fetchone()[0]
        db.execute(
            "INSERT INTO selections (prompt_id, source, method, tau, alpha, parameters, selected, status, "
            "excluded_not_subsumed, solve_seconds, created_at) VALUES (?, 'eval_run', 'sub', 0.25, 0.6, '{}', ?, "
            "'optimal', '[]', 0.0, '2026-01-01')",
            [pid, json.dumps(SELECTED)],
        )
    return prompt


def _settings(stub: OpenAIStub | None) -> str:
    model = "" if stub is None else f'model = "openai/stub"\napi_base = "{stub.api_base}"\n'
    return model + 'classifier = "offline"\nsamples_per_input = 3\nllm_max_retries = 0\n'


def _requests(stub: OpenAIStub) -> int:
    return len(stub.requests)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=240)


def _outcomes(result: pytest.RunResult) -> dict[str, str]:
    """node id -> PASSED/FAILED/SKIPPED, from the lines of a ``-v`` run."""
    found: dict[str, str] = {}
    for line in result.outlines:
        match = re.match(r"(\S+::\S+) (PASSED|FAILED|SKIPPED|ERROR) ", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def test_collects_one_item_per_selected_check_without_sampling(pytester: pytest.Pytester, stub: OpenAIStub) -> None:
    _workspace(pytester.path, _settings(stub))
    result = _run(pytester, "--spade", "--collect-only", "-q")
    collected = [line for line in result.outlines if "::" in line]
    assert collected == IDS  # in the selection's order; assert_not_selected is no item
    assert _requests(stub) == 0


def test_items_pass_and_fail_on_one_run_and_a_second_run_is_free(pytester: pytest.Pytester, stub: OpenAIStub) -> None:
    _workspace(pytester.path, _settings(stub))
    first = _run(pytester, "--spade", "-v")
    first.assert_outcomes(passed=1, failed=2)
    assert _outcomes(first) == {IDS[0]: "PASSED", IDS[1]: "FAILED", IDS[2]: "FAILED"}
    assert _requests(stub) == 4 * 3  # one run for the three items: 4 inputs x 3 samples
    text = first.stdout.str()
    assert "assert_no_cheap failed: 0/12 passed (0.0%); 95% CI 0.0–24.2% lies below the minimum 90.0%" in text
    assert "check: Must avoid: Never use the word" in text
    assert "assert_names_product inconclusive: sample more" in text
    assert "12/12 passed (100.0%); 95% CI 75.8–100.0% straddles the minimum 90.0%" in text
    assert "Traceback" not in text and "raise _Failed" not in text  # one message each, no traceback
    assert "calls 12 made, 0 cached" in text

    second = _run(pytester, "--spade", "-v")
    assert _outcomes(second) == _outcomes(first)
    assert _requests(stub) == 12  # every sample came from the store's cache
    assert "calls 0 made, 12 cached" in second.stdout.str()

    lenient = _run(pytester, "--spade", "-v", "-rs", "--spade-inconclusive=skip", "--spade-inputs", "2")
    assert _outcomes(lenient) == {IDS[0]: "PASSED", IDS[1]: "FAILED", IDS[2]: "SKIPPED"}
    text = lenient.stdout.str()
    assert "SKIPPED [1] blurb.prompt:1: assert_names_product inconclusive: 6/6 passed (100.0%)" in text
    assert "2 input(s) x up to 3 sample(s)" in text
    assert _requests(stub) == 12  # two of the same inputs (seed 0), same sample indices: cached


def test_more_samples_decide_an_inconclusive_check(pytester: pytest.Pytester, stub: OpenAIStub) -> None:
    _workspace(pytester.path, _settings(stub))
    result = _run(pytester, "--spade", "-v", "--spade-samples", "12")
    # 48 of 48 puts the interval above 0.9; early stopping may stop once every check is decided
    assert _outcomes(result) == {IDS[0]: "PASSED", IDS[1]: "FAILED", IDS[2]: "PASSED"}
    assert 12 < _requests(stub) <= 48


def test_items_skip_with_the_reason_when_no_model_is_configured(pytester: pytest.Pytester) -> None:
    _workspace(pytester.path, _settings(None))
    result = _run(pytester, "--spade", "-rs")
    result.assert_outcomes(skipped=3)
    assert "no model is configured: set `model` under [tool.spade]" in result.stdout.str()
    assert "pass --spade-model," in result.stdout.str()  # the option that works here


def test_the_verifier_column_is_an_item_that_skips_without_an_assistant(
    pytester: pytest.Pytester, stub: OpenAIStub
) -> None:
    _workspace(pytester.path, _settings(stub) + "verifier = true\n")
    result = _run(pytester, "--spade", "-v", "-rs")
    assert _outcomes(result) == {
        IDS[0]: "PASSED", IDS[1]: "FAILED", IDS[2]: "FAILED", "blurb.prompt::verifier": "SKIPPED",
    }  # fmt: skip
    assert "the verifier column was not sampled: no assistant model is configured" in result.stdout.str()


def test_a_spade_error_fails_the_items_with_its_one_line(pytester: pytest.Pytester, stub: OpenAIStub) -> None:
    _workspace(pytester.path, _settings(stub))
    (pytester.path / "blurb.examples.jsonl").unlink()
    # -rN: no short summary, whose lines pytest cuts to the terminal's width except under CI
    result = _run(pytester, "--spade", "-rN")
    result.assert_outcomes(failed=3)
    text = result.stdout.str()
    assert text.count("blurb.examples.jsonl: no examples to take inputs from") == 3 + 1  # the items, the summary
    assert "Traceback" not in text and "spade_lsp/" not in text
    assert _requests(stub) == 0


def test_without_the_flag_the_plugin_collects_nothing(pytester: pytest.Pytester, stub: OpenAIStub) -> None:
    _workspace(pytester.path, _settings(stub))
    assert "--spade-inconclusive" in _run(pytester, "--help").stdout.str()  # the entry point loaded it
    result = _run(pytester)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert _requests(stub) == 0


def test_testpaths_do_not_hide_the_prompts(pytester: pytest.Pytester, stub: OpenAIStub) -> None:
    _workspace(pytester.path, _settings(stub), subdir="prompts")
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_unit.py").write_text("def test_unit():\n    assert 1 + 1 == 2\n")
    result = _run(pytester, "--spade", "--collect-only", "-q")
    assert [line for line in result.outlines if "::" in line] == [
        "tests/test_unit.py::test_unit",
        *(f"prompts/{node}" for node in IDS),
    ]
    explicit = _run(pytester, "--spade", "--collect-only", "-q", "tests")
    assert [line for line in explicit.outlines if "::" in line] == ["tests/test_unit.py::test_unit"]


def test_the_fixture_returns_the_run_document(pytester: pytest.Pytester, stub: OpenAIStub) -> None:
    _workspace(pytester.path, _settings(stub))
    pytester.makepyfile(
        test_blurb="""
        import pytest

        def test_blurb_is_short(spade_check):
            run = spade_check("blurb.prompt", samples=2, inputs=3)
            checks = {v["name"]: v for v in run["validators"]}
            assert set(checks) == {"assert_short", "assert_no_cheap", "assert_names_product"}
            assert checks["assert_short"]["successes"] == checks["assert_short"]["trials"] == 6
            assert run["p_pass"]["measured"]["rate"] == 0.0
            assert spade_check("blurb.prompt", samples=2, inputs=3) is run  # sampled once a session

        def test_no_cheap(spade_check):
            run = spade_check("blurb.prompt", samples=2, inputs=3)
            assert next(v for v in run["validators"] if v["name"] == "assert_no_cheap")["rate"] >= 0.9

        def test_unknown_option(spade_check):
            with pytest.raises(TypeError, match="unknown option 'sample'"):
                spade_check("blurb.prompt", sample=2)
        """
    )
    result = _run(pytester, "-v")  # the fixture needs no --spade
    assert _outcomes(result) == {
        "test_blurb.py::test_blurb_is_short": "PASSED",
        "test_blurb.py::test_no_cheap": "FAILED",  # the custom assert sees the stub's "cheap"
        "test_blurb.py::test_unknown_option": "PASSED",
    }
    assert _requests(stub) == 3 * 2


def _old_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest started in a fresh process that reads as pytest 7.4 when the plugin's entry point is imported."""
    code = (
        "import sys, pytest\n"
        "pytest.version_tuple, pytest.__version__ = (7, 4, 4), '7.4.4'\n"
        "raise SystemExit(pytest.main(sys.argv[1:]))\n"
    )
    command = [sys.executable, "-c", code, "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=120, check=False)


def test_an_old_pytest_starts_with_a_warning_and_no_spade_hooks(pytester: pytest.Pytester) -> None:
    """The entry point is loaded in every pytest run of the environment: with a pytest older than 8 it registers
    no item, fixture or option but ``--spade``, and a suite runs as without the plugin, with one warning."""
    (pytester.path / "blurb.prompt").write_text("Describe {product}.\n", encoding="utf-8")
    (pytester.path / "test_unit.py").write_text(
        "def test_unit():\n    assert 1 + 1 == 2\n\n\ndef test_no_fixture(request):\n"
        "    assert 'spade_check' not in request.fixturenames\n",
        encoding="utf-8",
    )
    done = _old_pytest(pytester.path, "-q", "-rw")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
    warning = "spade-lsp's pytest plugin (pytest --spade) needs pytest 8.0 or newer; this is pytest 7.4.4"
    assert warning in done.stdout and "blurb.prompt" not in done.stdout
    refused = _old_pytest(pytester.path, "--spade", "-q")
    assert refused.returncode == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {warning}, so it is not loaded" in refused.stderr, refused.stderr
    hidden = _old_pytest(pytester.path, "--spade-samples", "2")
    assert hidden.returncode == pytest.ExitCode.USAGE_ERROR and "unrecognized arguments" in hidden.stderr
