"""Sampling end to end: the real litellm client against a scripted local model, validators in the sandbox,
the tensor in the store, and the CLI (`spade sample`, `spade check`, `spade report`)."""

from __future__ import annotations

import html.parser
import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spade_lsp import cli
from spade_lsp._progress import Progress
from spade_lsp.config import resolve_file
from spade_lsp.errors import InputError, LLMError, ModelNotConfiguredError
from spade_lsp.reliability import SampleOptions, latest_document, sample_prompt
from spade_lsp.workspace import Workspace
from tests.support.blurb import SAMPLING_SIDECAR, V3, CheapEveryFourth, examples_jsonl, sampling_workspace
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, error_reply
from tests.support.sampling import with_knobs


@pytest.fixture
def blurb(workspace_dir: Path) -> Path:
    return sampling_workspace(workspace_dir)


@pytest.fixture
def model() -> Iterator[OpenAIStub]:
    with OpenAIStub(CheapEveryFourth()) as stub:
        yield stub


def _overrides(stub: OpenAIStub) -> dict[str, Any]:
    return {"model": "openai/stub", "api_base": stub.api_base, "classifier": "offline"}


def _workspace(root: Path, stub: OpenAIStub) -> Workspace:
    return Workspace(root, overrides=_overrides(stub))


def _sample(
    workspace: Workspace,
    prompt: Path,
    stub: OpenAIStub | None,
    options: SampleOptions | None = None,
    *,
    progress: Progress | None = None,
    **knobs: Any,
) -> dict[str, Any]:
    """``sample_prompt`` with the prompt's settings resolved once, as the CLI resolves them: the workspace's files,
    the prompt's front matter, then the stub's overrides; ``knobs`` as a sample job's params (``samples=4``)."""
    settings = resolve_file(workspace.root, prompt, _overrides(stub) if stub is not None else None)
    return sample_prompt(workspace, prompt, options, settings=with_knobs(settings, **knobs), progress=progress)


def _validator(document: dict[str, Any], name: str) -> dict[str, Any]:
    return next(v for v in document["validators"] if v["name"] == name)


def test_many_inputs_many_samples_fill_the_tensor_with_hand_countable_rates(blurb: Path, model: OpenAIStub) -> None:
    with _workspace(blurb.parent, model) as workspace:
        document = _sample(workspace, blurb, model, samples=8, early_stopping=False)
    assert document["shape"] == "all" and document["inputs"] == ["g1", "g2", "b1", "b2"]
    no_cheap, short = _validator(document, "assert_no_cheap"), _validator(document, "assert_short")
    assert (no_cheap["successes"], no_cheap["trials"]) == (24, 32)  # 2 of every 8 samples per input say cheap
    assert (short["successes"], short["trials"], short["minimum"]) == (32, 32, 0.5)
    assert no_cheap["verdict"] == "fail"  # 75% with its interval wholly below the 90% minimum
    assert short["verdict"] == "pass"
    assert document["p_pass"]["measured"]["rate"] == 0.75
    assert document["attempts_for_99"] == 4  # ceil(log 0.01 / log 0.25)
    tensor = document["tensor"]
    assert len(tensor) == 4 and all(len(row) == 8 and all(len(cell) == 2 for cell in row) for row in tensor)
    assert sum(cell[1] for row in tensor for cell in row) == 24  # assert_no_cheap is the second validator
    assert (document["calls"], document["calls_planned"], document["calls_saved"]) == (32, 32, 0)
    assert document["tokens"] == {"prompt": 320, "completion": 160}
    assert len(model.requests) == 32
    assert {r["temperature"] for r in model.requests} == {1.0}


def test_the_three_shapes(blurb: Path, model: OpenAIStub) -> None:
    with _workspace(blurb.parent, model) as workspace:
        rows = _sample(workspace, blurb, model, samples=1)
        columns = _sample(workspace, blurb, model, inputs=1, samples=6, early_stopping=False)
    assert rows["shape"] == "rows" and len(rows["tensor"]) == 4 and len(rows["tensor"][0]) == 1
    assert columns["shape"] == "columns" and len(columns["inputs"]) == 1 and len(columns["tensor"][0]) == 6


def test_reruns_come_from_the_cache_and_reproduce_the_tensor(blurb: Path, model: OpenAIStub) -> None:
    knobs = {"samples": 4, "early_stopping": False}
    with _workspace(blurb.parent, model) as workspace:
        first = _sample(workspace, blurb, model, **knobs)
        again = _sample(workspace, blurb, model, **knobs)
        more = _sample(workspace, blurb, model, samples=6, early_stopping=False)
    assert again["tensor"] == first["tensor"]
    assert (again["calls"], again["calls_cached"]) == (0, 16)
    assert (more["calls"], more["calls_cached"]) == (8, 16)  # samples 4 and 5 of each input are new
    assert more["tensor"][0][:4] == first["tensor"][0]
    assert len(model.requests) == 24


def test_early_stopping_decides_each_check_on_the_pooled_samples_and_counts_the_calls_saved(
    workspace_dir: Path,
) -> None:
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    (workspace_dir / "blurb.examples.jsonl").write_text(examples_jsonl(), encoding="utf-8")
    (workspace_dir / "blurb_assertions.py").write_text(SAMPLING_SIDECAR, encoding="utf-8")
    with OpenAIStub(lambda request: chat_reply("A lovely thing for you.")) as stub:  # always passes both
        with _workspace(workspace_dir, stub) as workspace:
            document = _sample(workspace, prompt, stub, samples=100)
        sent = len(stub.requests)
    # With every sample passing, the one-sided mixture decides "above" after 12 pooled passes against 0.5 and 48
    # against 0.9 (test_stats). Rounds hold ceil(2 * 8 / 4) = 4 samples per input (twice the default concurrency
    # of 8, over four inputs), so the tests run on 16, 32, 48, ... pooled samples: assert_short is decided after
    # the first round (4 samples per input), assert_no_cheap after the third (12), and the run stops there.
    assert document["sequential"] == [
        {"validator": "assert_short", "decision": "above", "at_sample": 4, "trials": 16},
        {"validator": "assert_no_cheap", "decision": "above", "at_sample": 12, "trials": 48},
    ]
    assert document["calls_saved"] == 4 * (100 - 12) and sent == 4 * 12
    assert all(v["verdict"] == "pass" for v in document["validators"])
    assert document["early_stopping"] is True


def test_a_check_with_no_observed_result_does_not_hold_early_stopping_back(workspace_dir: Path) -> None:
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    (workspace_dir / "blurb.examples.jsonl").write_text(examples_jsonl(), encoding="utf-8")
    asks = (
        "\n\n@assertion(asks_llm=True)\n"
        "def assert_warm(example: dict, prompt: str, response: str) -> bool:\n"
        "    return ask_llm('Is the tone warm?', response)\n"
    )
    sidecar = SAMPLING_SIDECAR.replace("import assertion", "import ask_llm, assertion") + asks
    (workspace_dir / "blurb_assertions.py").write_text(sidecar, encoding="utf-8")
    # no assistant model: assert_warm needs one, so it never has a result
    with (
        OpenAIStub(lambda request: chat_reply("A lovely thing for you.")) as stub,
        _workspace(workspace_dir, stub) as ws,
    ):
        document = _sample(ws, prompt, stub, samples=100)
    assert [d["validator"] for d in document["sequential"]] == ["assert_short", "assert_no_cheap"]
    assert document["calls_saved"] == 4 * (100 - 12)  # as without assert_warm
    assert any("did not wait for checks with no observed result: assert_warm" in w for w in document["warnings"])


def test_early_stopping_keeps_sampling_while_a_check_sits_near_its_minimum(blurb: Path, model: OpenAIStub) -> None:
    # assert_no_cheap passes 3 of every 4 samples of each input: 75% against its 90% minimum is decided "below",
    # but only once enough samples are pooled; assert_short (always passing, minimum 0.5) is decided at once.
    with _workspace(blurb.parent, model) as workspace:
        document = _sample(workspace, blurb, model, samples=100)
    decisions = {d["validator"]: d for d in document["sequential"]}
    assert decisions["assert_short"]["decision"] == "above" and decisions["assert_short"]["at_sample"] == 4
    assert decisions["assert_no_cheap"]["decision"] == "below"
    stopped = decisions["assert_no_cheap"]["at_sample"]
    assert 4 < stopped < 100 and stopped % 4 == 0
    assert document["calls_saved"] == 4 * (100 - stopped)
    assert _validator(document, "assert_no_cheap")["verdict"] == "fail"


def test_the_run_is_stored_round_by_round(blurb: Path, model: OpenAIStub) -> None:
    with _workspace(blurb.parent, model) as workspace:
        document = _sample(workspace, blurb, model, samples=4, early_stopping=False)
        db = workspace.store.db
        status, inputs, validators = db.execute(
            "SELECT status, inputs, validators FROM sample_runs WHERE id = ?", [document["run_id"]]
        ).fetchone()
        outputs = db.execute("SELECT count(*) FROM sample_outputs WHERE run_id = ?", [document["run_id"]]).fetchone()
        results = db.execute(
            "SELECT sum(passed), count(*) FROM sample_results WHERE run_id = ?", [document["run_id"]]
        ).fetchone()
        assert latest_document(workspace, blurb) == document
    assert status == "done" and json.loads(inputs) == ["g1", "g2", "b1", "b2"]
    assert [v["name"] for v in json.loads(validators)] == ["assert_short", "assert_no_cheap"]
    assert outputs[0] == 16 and tuple(results) == (16 + 12, 32)


def test_answers_are_validated_and_stored_while_the_rest_are_in_flight(blurb: Path) -> None:
    """Without early stopping the model is never kept waiting on the sandbox or the store: one early request is
    held at the server until the store holds the first 256 outputs, which only happens if the other answers are
    validated and written while that request is still out."""
    seen: dict[str, Any] = {"n": 0, "stored_while_held": None}
    lock = threading.Lock()
    store_path: list[Path] = []

    def stored() -> int:
        with sqlite3.connect(store_path[0], timeout=5) as db:
            return int(db.execute("SELECT count(*) FROM sample_outputs").fetchone()[0])

    def first_chunk_stored() -> bool:
        seen["stored_while_held"] = stored()
        return bool(seen["stored_while_held"] >= 256)

    def script(request: dict[str, Any]) -> Reply:
        with lock:
            seen["n"] += 1
            held = seen["n"] == 10
        reply = chat_reply("A lovely thing.")
        reply.until = first_chunk_stored if held else None
        return reply

    with OpenAIStub(script) as stub, _workspace(blurb.parent, stub) as workspace:
        store_path.append(workspace.store.path)
        document = _sample(workspace, blurb, stub, samples=80, early_stopping=False)
        outputs = workspace.store.db.execute("SELECT count(*) FROM sample_outputs").fetchone()[0]
    assert seen["stored_while_held"] == 256  # the first chunk, stored before the held answer came back
    assert document["calls"] == 320 and outputs == 320
    assert all(v["trials"] == 320 for v in document["validators"])


def test_a_cancelled_run_keeps_its_rounds_and_says_so(blurb: Path, model: OpenAIStub) -> None:
    class Stop(Exception):
        pass

    rounds = []

    def progress(message: str, percentage: float | None) -> None:
        if message.startswith("sampled"):
            rounds.append(message)
            raise Stop("stopped by the user")

    with _workspace(blurb.parent, model) as workspace:
        with pytest.raises(Stop):
            _sample(workspace, blurb, model, samples=40, early_stopping=False, progress=progress)
        status, error = workspace.store.db.execute("SELECT status, error FROM sample_runs").fetchone()
        kept = workspace.store.db.execute("SELECT count(*) FROM sample_outputs").fetchone()[0]
    assert status == "failed" and error == "stopped by the user"
    assert kept == 160 and len(rounds) == 1  # the first round (256 calls at most) was written before it stopped


def test_failed_calls_are_counted_and_every_call_failing_is_an_error(blurb: Path) -> None:
    state = {"n": 0}
    lock = threading.Lock()

    def flaky(request: dict[str, Any]) -> Reply:
        with lock:
            state["n"] += 1
            n = state["n"]
        return error_reply(400, "refused") if n % 5 == 0 else chat_reply("A lovely thing.")

    with OpenAIStub(flaky) as stub, _workspace(blurb.parent, stub) as workspace:
        document = _sample(workspace, blurb, stub, samples=5, early_stopping=False)
    assert document["calls_failed"] == 4 and any("4 of 20 calls failed" in w for w in document["warnings"])
    assert sum(v["trials"] for v in document["validators"]) == 2 * 16

    refusing = OpenAIStub(lambda request: error_reply(400, "always refused"))
    with (
        refusing as stub,
        _workspace(blurb.parent, stub) as ws,
        pytest.raises(LLMError, match=r"every call failed.*refused"),
    ):
        _sample(ws, blurb, stub, samples=2, temperature=0.5)  # not in the cache yet


def test_an_empty_answer_is_a_failed_call_that_no_check_sees(blurb: Path) -> None:
    """HTTP 200 with no text: not an output that passes the checks (an empty reply is under 12 words and never
    says "cheap"), but a failed call, counted and said, and never cached."""
    state = {"n": 0}
    lock = threading.Lock()

    def sometimes_empty(request: dict[str, Any]) -> Reply:
        with lock:
            state["n"] += 1
            n = state["n"]
        return chat_reply("" if n % 4 == 0 else "A lovely thing.")

    with OpenAIStub(sometimes_empty) as stub, _workspace(blurb.parent, stub) as workspace:
        document = _sample(workspace, blurb, stub, samples=5, early_stopping=False)
        cached = workspace.store.db.execute("SELECT count(*) FROM llm_cache").fetchone()[0]
    assert document["calls_failed"] == document["calls_empty"] == 5
    assert any("5 answer(s) were empty" in w for w in document["warnings"])
    assert sum(v["trials"] for v in document["validators"]) == 2 * 15  # the 15 answers with text, two checks each
    assert cached == 15


def test_the_selection_decides_the_validators_and_front_matter_the_minimum(blurb: Path, model: OpenAIStub) -> None:
    blurb.write_text("---\nmin_success: 0.6\nsamples_per_input: 4\n---\n" + V3, encoding="utf-8")
    (blurb.parent / "blurb_assertions.py").write_text(
        SAMPLING_SIDECAR.replace(", min_success=0.9)", ")"), encoding="utf-8"
    )
    with _workspace(blurb.parent, model) as workspace:
        prompt_id = workspace.history.prompt_key(blurb)
        _sample(workspace, blurb, model, samples=1)  # records the prompt
        with workspace.store.write() as db:
            pid = db.execute("SELECT id FROM prompts WHERE path = ?", [prompt_id]).fetchone()[0]
            db.execute(
                "INSERT INTO selections (prompt_id, source, method, tau, alpha, parameters, selected, status, "
                "excluded_not_subsumed, solve_seconds, created_at) VALUES (?, 'eval_run', 'sub', 0.25, 0.6, '{}', "
                "'[\"assert_no_cheap\"]', 'optimal', '[]', 0.0, '2026-01-01')",
                [pid],
            )
        document = _sample(workspace, blurb, model, early_stopping=False)
    [only] = document["validators"]
    assert only["name"] == "assert_no_cheap" and only["minimum"] == 0.6  # from the front matter
    assert document["samples"] == 4  # samples_per_input from the front matter
    assert not any("no selection" in w for w in document["warnings"])


def test_the_front_matter_model_is_the_model_sampled(blurb: Path, model: OpenAIStub) -> None:
    """A ``model`` in the prompt's front matter beats the workspace's: the stub is asked for it, not for the
    workspace's model, and the run records it."""
    root = blurb.parent
    (root / "spade.toml").write_text(
        f'model = "openai/workspace-model"\napi_base = "{model.api_base}"\nclassifier = "offline"\n', encoding="utf-8"
    )
    blurb.write_text("---\nmodel: openai/front-matter-model\n---\n" + V3, encoding="utf-8")
    settings = resolve_file(root, blurb)  # as `spade sample` and the sample job resolve them, once
    assert settings.model == "openai/front-matter-model"
    with Workspace(root) as workspace:
        assert workspace.settings.model == "openai/workspace-model"
        document = sample_prompt(
            workspace, blurb, SampleOptions(), settings=with_knobs(settings, samples=2, early_stopping=False)
        )
        (stored,) = workspace.store.db.execute("SELECT model FROM sample_runs").fetchone()
    asked = {request["model"] for request in model.requests}
    assert asked == {"front-matter-model"}  # litellm sends the name without its provider prefix
    assert len(model.requests) == 8 and document["model"] == stored == "openai/front-matter-model"


def test_bad_input_gets_clear_errors(workspace_dir: Path, model: OpenAIStub) -> None:
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    with _workspace(workspace_dir, model) as workspace:
        with pytest.raises(InputError, match="no sidecar module"):
            _sample(workspace, prompt, model)
        (workspace_dir / "blurb_assertions.py").write_text(SAMPLING_SIDECAR, encoding="utf-8")
        with pytest.raises(InputError, match="no examples"):
            _sample(workspace, prompt, model)
        (workspace_dir / "blurb.examples.jsonl").write_text(examples_jsonl(), encoding="utf-8")
        (workspace_dir / "blurb_assertions.py").write_text("def assert_x(:\n", encoding="utf-8")
        with pytest.raises(InputError, match=r"blurb_assertions\.py"):
            _sample(workspace, prompt, model)
        with pytest.raises(InputError, match=r"params\.samples: expected an integer in \[1, 10000\], got 0"):
            _sample(workspace, prompt, model, samples=0)
    with Workspace(workspace_dir) as workspace:
        (workspace_dir / "blurb_assertions.py").write_text(SAMPLING_SIDECAR, encoding="utf-8")
        with pytest.raises(ModelNotConfiguredError, match=r"\[tool.spade\]"):
            _sample(workspace, prompt, None)


# -- the CLI ----------------------------------------------------------------------------------------------


def _spade(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_spade_sample_json_prints_the_contract_keys(
    blurb: Path, model: OpenAIStub, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--model", "openai/stub", "--api-base", model.api_base, "--classifier", "offline"]
    code, out, _ = _spade(capsys, "sample", str(blurb), "--samples", "4", "--seed", "3", "--json", *flags)
    assert code == 0
    document = json.loads(out)
    for key in ("validators", "p_pass", "expected_attempts", "attempts_for_99", "calls", "cost"):
        assert key in document
    assert set(document["p_pass"]) >= {"measured", "predicted"}
    assert set(document["validators"][0]) >= {
        "name", "successes", "trials", "rate", "ci_low", "ci_high", "minimum", "verdict",
    }  # fmt: skip
    code, out, _ = _spade(capsys, "sample", str(blurb), "--samples", "4", "--inputs", "2", *flags)
    assert code == 0 and "assert_no_cheap" in out and "P_pass measured" in out and "2 input(s)" in out


def test_spade_sample_says_what_early_stopping_decided(workspace_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prompt = sampling_workspace(workspace_dir)
    with OpenAIStub(lambda request: chat_reply("A lovely thing for you.")) as stub:
        flags = ["--model", "openai/stub", "--api-base", stub.api_base, "--classifier", "offline"]
        code, out, _ = _spade(capsys, "sample", str(prompt), "--samples", "100", *flags)
    assert code == 0 and len(stub.requests) == 48
    assert "48 made, 0 cached, 352 saved by early stopping" in out
    assert (
        "early stopping decided assert_short above its minimum after 4 sample(s) per input; "
        "assert_no_cheap above its minimum after 12 sample(s) per input"
    ) in out


def test_spade_check_is_the_ci_gate(blurb: Path, model: OpenAIStub, capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["--model", "openai/stub", "--api-base", model.api_base, "--classifier", "offline"]
    code, out, _ = _spade(capsys, "check", str(blurb), "--samples", "8", "--no-early-stop", *flags)
    assert code == 1 and "FAILED: assert_no_cheap" in out
    assert out.index("assert_no_cheap") < out.index("assert_short")  # failures first
    (blurb.parent / "blurb_assertions.py").write_text(SAMPLING_SIDECAR.replace("min_success=0.9", "min_success=0.5"))
    code, out, _ = _spade(capsys, "check", str(blurb), "--samples", "8", "--no-early-stop", *flags)
    assert code == 0 and "FAILED" not in out
    code, _, _ = _spade(capsys, "check", str(blurb), "--latest", *flags)
    assert code == 0


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)


def test_spade_report_writes_html_and_json(
    blurb: Path, model: OpenAIStub, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    flags = ["--model", "openai/stub", "--api-base", model.api_base, "--classifier", "offline"]
    code, _, err = _spade(capsys, "report", str(blurb), "--html", str(tmp_path / "r.html"), *flags)
    assert code == 2 and "no finished sampling run" in err and "spade sample" in err
    assert _spade(capsys, "sample", str(blurb), "--samples", "4", *flags)[0] == 0
    code, out, _ = _spade(capsys, "report", str(blurb), "--html", str(tmp_path / "r.html"), *flags)
    assert code == 0 and "r.html" in out
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    parser = _Tags()
    parser.feed(page)
    assert "svg" in parser.tags and "script" not in parser.tags and "assert_no_cheap" in page
    code, out, _ = _spade(capsys, "report", str(blurb), "--json", *flags)
    assert code == 0 and json.loads(out)["validators"]


def test_examples_sharing_their_inputs_are_one_input(blurb: Path, model: OpenAIStub) -> None:
    examples = blurb.parent / "blurb.examples.jsonl"
    rows = [json.loads(line) for line in examples.read_text(encoding="utf-8").splitlines()]
    twin = {**rows[0], "id": "g1-twin", "output": "another output of the same input", "label": "bad"}
    examples.write_text("".join(json.dumps(row) + "\n" for row in [*rows, twin]), encoding="utf-8")
    knobs = {"samples": 3, "early_stopping": False}
    with _workspace(blurb.parent, model) as workspace:
        first = _sample(workspace, blurb, model, **knobs)
        again = _sample(workspace, blurb, model, **knobs)
    assert first["inputs"] == ["g1", "g2", "b1", "b2"]  # the twin's requests would be g1's, cached answers shared
    assert any("1 example(s) share their inputs" in w for w in first["warnings"])
    assert again["tensor"] == first["tensor"] and again["calls"] == 0
