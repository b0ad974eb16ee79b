"""Provider batch APIs (spade_lsp._batch) through the real litellm client against the loopback batch server:
submit, poll, collect; partial failures, expiry, cancellation, upload and create errors; resuming without
resubmitting; cached answers not resubmitted; structured answers validated; batch prices; the CLI's --batch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spade_lsp import cli
from spade_lsp._batch import BatchLiteLLMClient, batch_price
from spade_lsp._roles import Endpoint, make_client
from spade_lsp.config import Settings
from spade_lsp.errors import ConfigError, LLMError
from spade_lsp.llm import Completion, LLMRequest
from spade_lsp.store import Store, claim_llm_batches, llm_batch_state, take_over_llm_batch, update_llm_batch
from tests.support.batch_stub import BatchStub, LineError, echo

pytestmark = pytest.mark.timeout(120)

SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer"}},
    "required": ["score"],
    "additionalProperties": False,
}


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with Store.open(tmp_path) as opened:
        yield opened


def _client(stub: BatchStub, store: Store | None, model: str = "openai/stub", **kwargs: Any) -> BatchLiteLLMClient:
    return BatchLiteLLMClient(
        model,
        store=store,
        api_base=stub.api_base,
        api_key="no-key",
        poll_s=0.02,
        max_retries=1,
        timeout_s=20,
        **kwargs,
    )


def _requests(count: int, *, start: int = 0, schema: dict[str, Any] | None = None) -> list[LLMRequest]:
    return [LLMRequest([{"role": "user", "content": f"item {i}"}], schema, 0.0, 0) for i in range(start, count)]


def _rows(store: Store) -> list[tuple[Any, ...]]:
    return store.db.execute(
        "SELECT requested, batch_id, status, completed, failed, collected_at IS NOT NULL FROM llm_batches ORDER BY id"
    ).fetchall()


def test_a_batch_is_uploaded_once_polled_collected_cached_and_returned_in_order(store: Store) -> None:
    with BatchStub(complete_after_s=0.2) as stub:
        client = _client(stub, store)
        requests = [*_requests(30), _requests(1)[0]]  # the last repeats the first: sent once
        progress: list[tuple[int, int]] = []
        arrived: list[int] = []
        answers = client.complete_many(
            requests,
            on_progress=lambda done, total: progress.append((done, total)),
            on_result=lambda i, a: arrived.append(i),
        )
        assert [a.text for a in answers if isinstance(a, Completion)] == [f"echo: item {i}" for i in [*range(30), 0]]
        assert sorted(arrived) == list(range(31))
        assert stub.counts["upload"] == 1 and stub.counts["create"] == 1 and stub.counts["chat"] == 0
        lines = stub.requests()
        assert len(lines) == 30 and len({line["custom_id"] for line in lines}) == 30
        assert lines[0]["url"] == "/v1/chat/completions"
        assert lines[0]["body"] == {
            "model": "stub",
            "messages": [{"role": "user", "content": "item 0"}],
            "temperature": 0.0,
        }
        assert progress[-1] == (30, 30)
        assert _rows(store) == [(30, "batch-000002", "completed", 30, 0, 1)]
        assert client.usage.calls == 30 and client.usage.prompt_tokens == 300 and client.usage.cached == 1
        assert client.batch_log == [
            {
                "id": "batch-000002",
                "status": "completed",
                "requested": 30,
                "completed": 30,
                "failed": 0,
                "unanswered": 0,
                "invalid": 0,
                "cost": None,
                "price": "litellm's price map does not know openai/stub",
            }
        ]
        again = _client(stub, store).complete_many(requests)  # a new process: the store's cache answers
        assert all(isinstance(a, Completion) and a.cached for a in again)
        assert stub.counts["upload"] == 1 and stub.counts["create"] == 1


def test_cached_answers_are_not_resubmitted(store: Store) -> None:
    with BatchStub() as stub:
        client = _client(stub, store)
        client.complete_many(_requests(10))
        answers = client.complete_many(_requests(15))
        assert sum(1 for a in answers if isinstance(a, Completion) and a.cached) == 10
        assert stub.counts["create"] == 2
        second = [line for line in stub.requests()][10:]
        assert [line["body"]["messages"][0]["content"] for line in second] == [f"item {i}" for i in range(10, 15)]


def test_a_partly_failed_batch_keeps_its_answers_and_names_the_batch_for_the_rest(store: Store) -> None:
    def answer(body: dict[str, Any]) -> str | LineError:
        text = echo(body)
        return LineError("the model is overloaded") if text.endswith(("3", "7")) else text

    with BatchStub(answer) as stub:
        client = _client(stub, store)
        answers = client.complete_many(_requests(20))
        failed = [i for i, a in enumerate(answers) if isinstance(a, LLMError)]
        assert failed == [3, 7, 13, 17]
        message = str(answers[3])
        assert "batch batch-000002 (completed)" in message and "HTTP 500: the model is overloaded" in message
        assert "\n" not in message
        assert client.batch_log[0]["completed"] == 16 and client.batch_log[0]["failed"] == 4
        assert client.usage.failed == 4 and client.usage.calls == 20
        assert _rows(store) == [(20, "batch-000002", "completed", 16, 4, 1)]
        # a second run asks only for the four that failed
        client.complete_many(_requests(20))
        assert len(stub.requests()) == 24


def test_an_expired_batch_keeps_what_was_answered_and_reports_the_rest(store: Store) -> None:
    with BatchStub(complete_after_s=1.0, expire_after_s=0.3) as stub:
        client = _client(stub, store)
        answers = client.complete_many(_requests(10))
        kept = [a for a in answers if isinstance(a, Completion)]
        lost = [a for a in answers if isinstance(a, LLMError)]
        assert len(kept) == 3 and len(lost) == 7
        assert "not answered: batch batch-000002 ended expired (3 of 10 answered; those were kept)" in str(lost[0])
        assert client.batch_log[0]["status"] == "expired" and client.batch_log[0]["unanswered"] == 7
        assert _rows(store)[0][2] == "expired" and _rows(store)[0][5] == 1
        # the kept answers are cached: a rerun submits only the seven
        stub.expire_after_s = None
        stub.complete_after_s = 0.05
        again = client.complete_many(_requests(10))
        assert all(isinstance(a, Completion) for a in again) and len(stub.requests()) == 17


def test_should_stop_cancels_the_batch_at_the_provider_and_keeps_its_answers(store: Store) -> None:
    with BatchStub(complete_after_s=2.0) as stub:
        client = _client(stub, store)
        seen = [0]

        def polled(done: int, total: int) -> None:
            seen[0] = done

        answers = client.complete_many(_requests(10), should_stop=lambda: seen[0] >= 1, on_progress=polled)
        assert stub.counts["cancel"] == 1
        kept = sum(1 for a in answers if isinstance(a, Completion))
        assert 1 <= kept <= 9
        assert client.batch_log[0]["status"] == "cancelled" and client.batch_log[0]["completed"] == kept
        assert any("ended cancelled" in str(a) for a in answers if isinstance(a, LLMError))


def test_a_batch_cancelled_at_the_provider_is_reported(store: Store) -> None:
    def cancel(done: int, total: int) -> None:
        if done >= 3:
            stub.cancel_all()

    with BatchStub(complete_after_s=2.0) as stub:
        client = _client(stub, store)
        answers = client.complete_many(_requests(10), on_progress=cancel)
        kept = [i for i, a in enumerate(answers) if isinstance(a, Completion)]
        errors = [a for a in answers if isinstance(a, LLMError)]
        assert 3 <= len(kept) <= 9 and len(errors) == 10 - len(kept)
        assert kept == list(range(len(kept)))  # the batch answers in file order: the first ones were kept
        assert all(f"ended cancelled ({len(kept)} of 10 answered; those were kept)" in str(error) for error in errors)
        assert _rows(store) == [(10, "batch-000002", "cancelled", len(kept), 0, 1)]
        assert store.db.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0] == len(kept)
        assert client.batch_log[0]["completed"] == len(kept) and client.batch_log[0]["unanswered"] == len(errors)
        assert client.usage.failed == len(errors) and client.usage.calls == len(kept)


def test_a_cancelled_job_cancels_its_batch_and_the_next_run_collects_what_was_kept(store: Store) -> None:
    from spade_lsp.errors import JobCancelled

    with BatchStub(complete_after_s=2.0) as stub:

        def cancel(done: int, total: int) -> None:
            if done:
                raise JobCancelled("job 1 was cancelled")

        with pytest.raises(JobCancelled):
            _client(stub, store).complete_many(_requests(10), on_progress=cancel)
        assert stub.counts["cancel"] == 1 and not _rows(store)[0][5]
        answers = _client(stub, store).complete_many(_requests(10))
        assert stub.counts["create"] == 1 and _rows(store)[0][2] == "cancelled" and _rows(store)[0][5]
        assert 1 <= sum(1 for a in answers if isinstance(a, Completion)) <= 9


def test_an_upload_error_is_one_clear_line_and_loses_nothing(store: Store) -> None:
    with BatchStub(upload_status=400) as stub:
        client = _client(stub, store)
        answers = client.complete_many(_requests(5))
        assert all(isinstance(a, LLMError) for a in answers)
        message = str(answers[0])
        assert message.startswith("openai/stub: uploading the batch input failed: BadRequestError")
        assert "\n" not in message
        assert stub.counts["create"] == 0 and _rows(store) == []
        assert client.usage.failed == 5 and client.usage.cost_known


def test_a_create_refused_for_good_closes_its_row_and_the_next_run_submits_again(store: Store) -> None:
    with BatchStub(create_status=400) as stub:
        client = _client(stub, store)
        answers = client.complete_many(_requests(5))
        message = str(answers[0])
        assert "creating the batch failed" in message and "will be submitted again" in message
        assert _rows(store) == [(5, None, "lost", 0, 0, 1)]
        [(error,)] = store.db.execute("SELECT error FROM llm_batches").fetchall()
        assert "BadRequestError" in error
        assert client.usage.failed == 5
        stub.create_status = None
        answers = client.complete_many(_requests(5))
        assert all(isinstance(a, Completion) for a in answers)
        assert stub.counts["upload"] == 2 and stub.counts["create"] == 2


def test_a_create_refused_for_now_is_retried_with_the_same_upload(store: Store) -> None:
    with BatchStub(create_status=429) as stub:
        client = _client(stub, store)
        answers = client.complete_many(_requests(5))
        assert "creating the batch failed" in str(answers[0]) and "run again" in str(answers[0])
        assert _rows(store) == [(5, None, "create_failed", 0, 0, 0)]
        stub.create_status = None
        created = stub.counts["create"]
        answers = client.complete_many(_requests(5))
        assert all(isinstance(a, Completion) for a in answers)
        assert stub.counts["upload"] == 1 and stub.counts["create"] == created + 1 and stub.counts["list"] == 1


class _Died(Exception):
    """Stands for the process dying mid-poll: nothing after the raise runs."""


def test_a_batch_that_cannot_be_polled_is_kept_and_resumed_by_the_next_run(store: Store) -> None:
    with BatchStub(retrieve_status=503) as stub:
        answers = _client(stub, store).complete_many(_requests(4))
        message = str(answers[0])
        assert "polling batch batch-000002 failed" in message and "run again to resume it" in message
        assert stub.counts["retrieve"] >= 2 and not _rows(store)[0][5]
        stub.retrieve_status = None
        answers = _client(stub, store).complete_many(_requests(4))
        assert all(isinstance(a, Completion) for a in answers) and stub.counts["create"] == 1


def test_a_run_that_died_mid_poll_resumes_the_batch_without_resubmitting(tmp_path: Path) -> None:
    with BatchStub(complete_after_s=3.0) as stub:
        with Store.open(tmp_path) as store:

            def die(done: int, total: int) -> None:
                raise _Died

            with pytest.raises(_Died):
                _client(stub, store).complete_many(_requests(8), on_progress=die)
            [row] = _rows(store)
            assert row[1:3] == ("batch-000002", "in_progress") and not row[5]
        with Store.open(tmp_path) as store:  # the next process
            answers = _client(stub, store).complete_many(_requests(8))
            assert [a.text for a in answers if isinstance(a, Completion)] == [f"echo: item {i}" for i in range(8)]
            assert stub.counts["upload"] == 1 and stub.counts["create"] == 1
            assert _rows(store)[0][2:] == ("completed", 8, 0, 1)


def test_a_run_that_died_between_create_and_its_write_finds_the_batch_by_listing(store: Store) -> None:
    with BatchStub(complete_after_s=0.6) as stub:

        def die(done: int, total: int) -> None:
            raise _Died

        with pytest.raises(_Died):
            _client(stub, store).complete_many(_requests(8), on_progress=die)
        with store.write() as db:  # as if the batch id had never been written, by a process long dead
            db.execute("UPDATE llm_batches SET batch_id = NULL, status = 'submitting', updated_at = '2000-01-01'")
        answers = _client(stub, store).complete_many(_requests(8))
        assert all(isinstance(a, Completion) for a in answers)
        assert stub.counts["upload"] == 1 and stub.counts["create"] == 1 and stub.counts["list"] == 1


def test_structured_answers_are_validated_and_invalid_ones_asked_again_synchronously(store: Store) -> None:
    def answer(body: dict[str, Any]) -> str:
        text = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if text == "item 2":
            return "I would rather not say"  # invalid in the batch and at the first synchronous try
        return f'```json\n{{"score": {text.split()[-1]}}}\n```'

    with BatchStub(answer) as stub:
        client = _client(stub, store, max_reasks=1)
        answers = client.complete_many(_requests(4, schema=SCHEMA))
        assert [json.loads(a.text) for a in answers if isinstance(a, Completion)] == [
            {"score": 0},
            {"score": 1},
            {"score": 3},
        ]
        assert isinstance(answers[2], LLMError) and "is not valid JSON" in str(answers[2])
        assert all(line["body"]["response_format"]["type"] == "json_schema" for line in stub.requests())
        assert stub.counts["chat"] >= 2  # the invalid one, asked again synchronously (with a re-ask)
        assert client.batch_log[0]["invalid"] == 1


def test_batch_prices_come_from_litellms_price_map(store: Store) -> None:
    price = batch_price("gpt-4o-mini")
    assert (price.input, price.output) == (7.5e-08, 3e-07) and price.source == "batch price from litellm's price map"
    sync_only = batch_price("claude-sonnet-4-20250514")
    assert sync_only.input == 3e-06 and "no batch price" in sync_only.source
    assert batch_price("openai/stub").input is None
    with BatchStub() as stub:
        client = _client(stub, store, model="openai/gpt-4o-mini")
        [answer] = client.complete_many(_requests(1))
        assert isinstance(answer, Completion) and answer.cost == pytest.approx(10 * 7.5e-08 + 5 * 3e-07)
        assert client.usage.cost_known and client.usage.cost == pytest.approx(10 * 7.5e-08 + 5 * 3e-07)


def test_the_batch_setting_makes_a_batch_client_and_one_complete_stays_synchronous(store: Store) -> None:
    settings = Settings(batch=True, batch_poll_s=0.5, batch_completion_window="24h")
    with BatchStub() as stub:
        client = make_client(Endpoint("pipeline", "openai/stub", stub.api_base, None), settings, store=store)
        assert isinstance(client, BatchLiteLLMClient) and client.poll_s == 0.5
        assert client.complete([{"role": "user", "content": "one"}]).text == "echo: one"
        assert stub.counts["chat"] == 1 and stub.counts["create"] == 0
    plain = make_client(Endpoint("pipeline", "openai/stub", "http://127.0.0.1:9/v1", None), Settings(), store=store)
    assert not isinstance(plain, BatchLiteLLMClient)
    with pytest.raises(ConfigError, match="the embedded local model has no batch API"):
        make_client(Endpoint("pipeline", "local", None, None), settings, store=store)


def test_the_batch_setting_batches_the_judge_but_not_the_assistants_own_work(tmp_path: Path) -> None:
    """Taxonomy labels, synthesis and ``ask_llm`` must not wait for a batch window: only the pipeline's client and
    the judge's go through the batch API."""
    from spade_lsp.workspace import Workspace

    (tmp_path / "spade.toml").write_text(
        'batch = true\nmodel = "openai/stub"\napi_base = "http://127.0.0.1:9/v1"\nassistant_model = "same"\n',
        encoding="utf-8",
    )
    with Workspace(tmp_path) as workspace:
        assert isinstance(workspace.llm_client(), BatchLiteLLMClient)
        assert not isinstance(workspace.assistant_client(), BatchLiteLLMClient)
        judge = workspace.judge_client()
        assert isinstance(judge, BatchLiteLLMClient) and judge.poll_s == 30.0
    with Workspace(tmp_path, overrides={"batch": False}) as workspace:
        assert not isinstance(workspace.judge_client(), BatchLiteLLMClient)


# -- the command line ------------------------------------------------------------------------------------------


def _spade(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_spade_sample_batch_samples_through_one_batch(
    workspace_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.blurb import sampling_workspace

    monkeypatch.chdir(workspace_dir)
    prompt = sampling_workspace(workspace_dir)
    with BatchStub(lambda body: "A lovely thing for you.") as stub:
        (workspace_dir / "spade.toml").write_text(
            f'model = "openai/stub"\napi_base = "{stub.api_base}"\nbatch_poll_s = 0.02\n', encoding="utf-8"
        )
        args = ["sample", str(prompt), "--samples", "3", "--no-early-stop", "--json"]
        code, out, err = _spade(capsys, *args, "--batch")
        assert code == 0, err
        document = json.loads(out)
        assert stub.counts["create"] == 1 and stub.counts["chat"] == 0 and len(stub.requests()) == 12
        assert document["calls"] == 12 and document["calls_failed"] == 0
        [batch] = document["batches"]
        assert batch["status"] == "completed" and batch["requested"] == 12 and batch["completed"] == 12
        code, out, _ = _spade(capsys, *args, "--batch")  # again: every answer cached, nothing submitted
        assert code == 0 and json.loads(out)["calls_cached"] == 12 and stub.counts["create"] == 1


def test_spade_judge_batch_sends_each_layer_as_a_batch(
    workspace_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.spade_lsp.judges.test_cli import NOTES, PIPELINE, _blurb_judge
    from tests.support.blurb import EXAMPLES, V3

    monkeypatch.chdir(workspace_dir)
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    lines = [json.dumps({**example, "grading_note": NOTES[example["id"]]}) for example in EXAMPLES]
    (workspace_dir / "blurb.examples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (workspace_dir / "judges.toml").write_text(PIPELINE, encoding="utf-8")
    (workspace_dir / "spade.toml").write_text("batch_poll_s = 0.02\n", encoding="utf-8")
    with BatchStub(lambda body: _blurb_judge(body).body) as stub:
        flags = ["--assistant-model", "openai/judge", "--assistant-api-base", stub.api_base, "--batch"]
        code, out, err = _spade(capsys, "judge", str(prompt), "--pipeline", "judges.toml", "--json", *flags)
        assert code == 0, err
        document = json.loads(out)
        assert len(stub.requests()) == 4 * (3 + 1) and stub.counts["chat"] == 0
        assert stub.counts["create"] >= 2  # the judges' layer, then the verifier's
    assert [row["passed"] for row in document["rows"]] == [True, True, False, False]


def test_spade_compare_batch_sends_one_batch_per_model(
    workspace_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.blurb import TwoModels, sampling_workspace

    monkeypatch.chdir(workspace_dir)
    prompt = sampling_workspace(workspace_dir)
    model = TwoModels()
    with BatchStub(lambda body: model(body).body) as stub:
        (workspace_dir / "spade.toml").write_text(
            f'model = "openai/good"\napi_base = "{stub.api_base}"\nbatch_poll_s = 0.02\n', encoding="utf-8"
        )
        args = ["compare", str(prompt), "--models", "openai/good", "openai/bad", "--samples", "4", "--json"]
        code, out, err = _spade(capsys, *args, "--batch")
        assert code == 0, err
        assert stub.counts["create"] == 2 and stub.counts["chat"] == 0 and len(stub.requests()) == 32
    good, bad = json.loads(out)["variants"]
    assert (good["calls"], bad["calls"], bad["p_pass"]) == (16, 16, 0.25)


# -- review findings: overlapping request sets, lost batches, re-asks, races, listing, settings ------------------


def _die(done: int, total: int) -> None:
    raise _Died


def _wait_done(stub: BatchStub) -> None:
    """Until every batch of the stub is final (as the provider would finish them meanwhile)."""
    import time

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with stub.lock:
            if all(
                stub._object(batch)["status"] in ("completed", "expired", "cancelled")
                for batch in stub.batches.values()
            ):
                return
        time.sleep(0.05)
    raise AssertionError("the stub's batches did not finish")


def test_a_grown_request_set_polls_the_open_batch_and_submits_only_the_new_requests(tmp_path: Path) -> None:
    with BatchStub(complete_after_s=1.0) as stub:
        with Store.open(tmp_path) as store, pytest.raises(_Died):
            _client(stub, store).complete_many(_requests(8), on_progress=_die)
        with Store.open(tmp_path) as store:  # the next process asks for the same 8 and one more
            client = _client(stub, store)
            answers = client.complete_many(_requests(9))
            assert [a.text for a in answers if isinstance(a, Completion)] == [f"echo: item {i}" for i in range(9)]
            assert stub.counts["upload"] == 2 and stub.counts["create"] == 2
            assert [len(batch.lines) for batch in stub.batches.values()] == [8, 1]
            assert [row[0] for row in _rows(store)] == [8, 1] and all(row[5] for row in _rows(store))
            assert client.usage.calls == 9 and client.usage.cached == 0


def test_open_batches_no_request_needs_are_swept_into_the_cache(tmp_path: Path) -> None:
    with BatchStub(complete_after_s=0.3) as stub:
        with Store.open(tmp_path) as store, pytest.raises(_Died):
            _client(stub, store).complete_many(_requests(8), on_progress=_die)
        _wait_done(stub)
        with Store.open(tmp_path) as store:
            _client(stub, store).complete_many(_requests(12, start=10))  # other requests: the open row is swept
            assert all(row[5] for row in _rows(store))
            answers = _client(stub, store).complete_many(_requests(8))
            assert all(isinstance(a, Completion) and a.cached for a in answers)
            assert stub.counts["create"] == 2
            client = _client(stub, store)
            with pytest.raises(_Died):
                client.complete_many(_requests(30, start=20), on_progress=_die)
            _wait_done(stub)
            from spade_lsp._batch import collect_open_batches

            assert collect_open_batches(client) == 1 and all(row[5] for row in _rows(store))


def test_a_batch_the_provider_no_longer_has_is_closed_and_submitted_again(store: Store) -> None:
    with BatchStub(complete_after_s=0.5) as stub:
        with pytest.raises(_Died):
            _client(stub, store).complete_many(_requests(4), on_progress=_die)
        with stub.lock:
            stub.batches.clear()  # the provider forgot it
        answers = _client(stub, store).complete_many(_requests(4))
        message = str(answers[0])
        assert "NotFoundError" in message and "run again to resubmit" in message
        [row] = store.db.execute("SELECT status, error, collected_at IS NOT NULL FROM llm_batches").fetchall()
        assert row[0] == "lost" and "NotFoundError" in row[1] and row[2] == 1
        answers = _client(stub, store).complete_many(_requests(4))
        assert all(isinstance(a, Completion) for a in answers) and stub.counts["create"] == 2


def test_an_output_file_that_is_gone_closes_the_row_and_the_next_run_submits_again(store: Store) -> None:
    with BatchStub(complete_after_s=0.2) as stub:
        with pytest.raises(_Died):
            _client(stub, store).complete_many(_requests(4), on_progress=_die)
        _wait_done(stub)
        with stub.lock:
            [batch] = stub.batches.values()
            del stub.files[batch.finished["output_file_id"]]
        answers = _client(stub, store).complete_many(_requests(4))
        assert all(isinstance(a, LLMError) and "is gone" in str(a) for a in answers)
        [row] = store.db.execute("SELECT status, error, collected_at IS NOT NULL FROM llm_batches").fetchall()
        assert row[0] == "lost" and "output file" in row[1] and row[2] == 1
        answers = _client(stub, store).complete_many(_requests(4))
        assert all(isinstance(a, Completion) for a in answers) and stub.counts["create"] == 2


def test_an_unreadable_output_line_fails_its_request_only(store: Store) -> None:
    def mangle(line: str) -> str:
        return line.replace('"choices": [', '"choices": [[', 1) if "echo: item 3" in line else line

    with BatchStub(mangle=mangle) as stub:
        answers = _client(stub, store).complete_many(_requests(6))
        assert [i for i, a in enumerate(answers) if isinstance(a, LLMError)] == [3]
        assert "is unreadable" in str(answers[3])
        assert _rows(store)[0][5] == 1
        stub.mangle = None
        again = _client(stub, store).complete_many(_requests(6))
        assert all(isinstance(a, Completion) for a in again) and len(stub.requests()) == 7


def test_reasks_0_returns_the_invalid_answer_and_duplicates_are_asked_again_once(store: Store) -> None:
    from spade_lsp.llm import InvalidAnswerError

    with BatchStub(lambda body: '{"score": "high"}') as stub:
        client = _client(stub, store)
        request = LLMRequest([{"role": "user", "content": "item 0"}], SCHEMA, 0.0, 0, reasks=0)
        [answer] = client.complete_many([request])
        assert isinstance(answer, InvalidAnswerError) and answer.text == '{"score": "high"}'
        assert (
            str(answer)
            == "openai/stub: the model's answer does not match its schema at score: 'high' is not of type 'integer'"
        )
        assert stub.counts["chat"] == 0 and client.usage.failed == 1 and client.usage.calls == 1
        twice = _client(stub, store, max_reasks=0)
        answers = twice.complete_many(_requests(3, start=1, schema=SCHEMA) * 2)  # two keys, each twice
        assert all(isinstance(a, LLMError) for a in answers)
        assert stub.counts["chat"] == 2  # once per key, not per request
        assert twice.usage.failed == 2


def test_failures_are_counted_once_per_key(store: Store) -> None:
    with BatchStub(lambda body: LineError("overloaded")) as stub:
        client = _client(stub, store)
        answers = client.complete_many(_requests(3) * 2)
        assert all(isinstance(a, LLMError) for a in answers) and len(stub.requests()) == 3
        assert client.usage.failed == 3 and client.usage.calls == 3


def test_two_processes_asking_for_the_same_requests_submit_one_batch(tmp_path: Path) -> None:
    import threading

    with Store.open(tmp_path):
        pass
    with BatchStub(complete_after_s=0.5) as stub:
        results: list[list[Completion | LLMError]] = []

        def run() -> None:
            with Store.open(tmp_path) as store:
                results.append(_client(stub, store).complete_many(_requests(6)))

        threads = [threading.Thread(target=run) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert len(results) == 2 and all(isinstance(a, Completion) for result in results for a in result)
        assert stub.counts["upload"] == 1 and stub.counts["create"] == 1


def test_finding_a_lost_create_follows_the_list_pages_and_matches_the_input_file_only(store: Store) -> None:
    from tests.support.batch_stub import _Batch

    with BatchStub(complete_after_s=0.05) as stub:
        _client(stub, store).complete_many(_requests(4))  # collected: its batch carries the same digest
        with store.write() as db:
            db.execute("DELETE FROM llm_cache")
        stub.create_status = 429
        _client(stub, store).complete_many(_requests(4))
        stub.create_status = None
        with stub.lock:  # the batch to find is not on the first page: older than 150 newer ones
            for number in range(150):
                stub.batches[f"other-{number}"] = _Batch(f"other-{number}", "file-x", _ENDPOINT, "24h", None, [], 0.0)
        creates = stub.counts["create"]
        answers = _client(stub, store).complete_many(_requests(4))
        assert all(isinstance(a, Completion) for a in answers)
        assert stub.counts["list"] == 2 and stub.counts["create"] == creates + 1  # not adopted: the old batch
        newest = [b for b in stub.batches.values() if b.id.startswith("batch")][-1]
        [(file_id,)] = store.db.execute("SELECT input_file_id FROM llm_batches WHERE id = 2").fetchall()
        assert newest.input_file_id == file_id


_ENDPOINT = "/v1/chat/completions"


def test_the_uploaded_input_holds_no_api_key(store: Store) -> None:
    marker = "sk-MARKER-4f1c"
    with BatchStub() as stub:
        client = _client(stub, store)
        client.api_key = marker
        answers = client.complete_many(_requests(3))
        assert all(isinstance(a, Completion) for a in answers)
        uploads = [content for purpose, content in stub.files.values() if purpose == "batch"]
        assert len(uploads) == 1 and marker.encode() not in uploads[0] and b"item 2" in uploads[0]


def test_intermediate_statuses_are_polled_through(store: Store) -> None:
    with BatchStub(complete_after_s=1.0, validating_s=0.3, finalizing_s=0.3) as stub:
        answers = _client(stub, store).complete_many(_requests(5))
        assert all(isinstance(a, Completion) for a in answers)
        assert {"validating", "in_progress", "finalizing", "completed"} <= set(stub.statuses)
    with BatchStub(complete_after_s=2.0, cancelling_s=0.2) as stub:
        answers = _client(stub, store).complete_many(_requests(15, start=10), should_stop=lambda: bool(stub.statuses))
        assert "cancelling" in stub.statuses and stub.statuses[-1] == "cancelled"
        assert _rows(store)[-1][2] == "cancelled"


def test_the_completion_window_is_one_the_batch_api_takes(tmp_path: Path) -> None:
    from spade_lsp.config import load_settings

    (tmp_path / "spade.toml").write_text('batch_completion_window = "1h"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="takes only the completion window '24h'"):
        load_settings(tmp_path)


def test_structured_bodies_go_out_in_the_endpoints_mode_and_format_refusals_go_synchronous(store: Store) -> None:
    def answer(body: dict[str, Any]) -> str | LineError:
        if body.get("response_format", {}).get("type") == "json_schema":
            return LineError("response_format json_schema is not supported", "invalid_request_error", 400)
        return '{"score": 1}'

    with BatchStub(answer) as stub:
        client = _client(stub, store)
        answers = client.complete_many(_requests(3, schema=SCHEMA))
        assert all(isinstance(a, Completion) and json.loads(a.text) == {"score": 1} for a in answers)
        assert stub.counts["chat"] >= 3 and client.structured_mode() == "json_object"
        later = _client(stub, store)  # a new process: the store says json_object
        answers = later.complete_many(_requests(6, start=3, schema=SCHEMA))
        assert all(isinstance(a, Completion) for a in answers)
        last = stub.requests()[-1]["body"]
        assert last["response_format"]["type"] == "json_object" and "JSON Schema" in last["messages"][0]["content"]
        assert stub.counts["create"] == 2 and later.batch_log[0]["completed"] == 3


def test_chunks_are_capped_by_count_and_bytes_and_submitted_before_any_is_polled(store: Store) -> None:
    with BatchStub(complete_after_s=0.3) as stub:
        client = _client(stub, store)
        client.max_batch_requests = 4
        answers = client.complete_many(_requests(10))
        assert all(isinstance(a, Completion) for a in answers)
        assert [len(b.lines) for b in stub.batches.values()] == [4, 4, 2]
        assert stub.order[:4] == ["create", "create", "create", "retrieve"]  # all submitted, then polled
        sized = _client(stub, store)
        sized.max_batch_bytes = 500  # two lines of about 200 bytes each
        sized.complete_many(_requests(14, start=10))
        assert [len(b.lines) for b in stub.batches.values()][3:] == [2, 2]
        uploads = [content for purpose, content in stub.files.values() if purpose == "batch"]
        assert len(uploads) == 5 and all(len(content) <= 500 for content in uploads[3:])


# -- the store's batch rows (spade_lsp.store) -----------------------------------------------------------------------


def _split(keys: list[str]) -> list[tuple[str, list[str]]]:
    return [(f"digest-{'-'.join(keys)}", keys)] if keys else []


def test_a_claim_adopts_open_rows_and_inserts_only_the_keys_none_holds(store: Store) -> None:
    claim = {"model": "m", "endpoint": "", "lease_s": 3600.0, "lost_error": "died uploading", "split": _split}
    first = claim_llm_batches(store, ["a", "b"], **claim)
    assert first.open == [] and [(n.digest, list(n.keys)) for n in first.new] == [("digest-a-b", ["a", "b"])]
    second = claim_llm_batches(store, ["b", "c"], **claim)
    [adopted] = second.open
    assert (adopted.id, adopted.keys, adopted.status) == (first.new[0].id, {"b"}, "uploading")
    assert [list(n.keys) for n in second.new] == [["c"]]
    # a row whose process died before recording its upload, its lease long over: closed as lost, asked again
    with store.write() as db:
        db.execute("UPDATE llm_batches SET updated_at = '2000-01-01' WHERE id = ?", [first.new[0].id])
    third = claim_llm_batches(store, ["a", "c"], **claim)
    assert [o.id for o in third.open] == [second.new[0].id] and [list(n.keys) for n in third.new] == [["a"]]
    state = llm_batch_state(store, first.new[0].id)
    assert state is not None and (state.status, state.collected_at is not None) == ("lost", True)
    assert store.db.execute("SELECT error FROM llm_batches WHERE id = ?", [first.new[0].id]).fetchone() == (
        "died uploading",
    )


def test_a_batch_row_update_sets_only_the_columns_given(store: Store) -> None:
    claim = {"model": "m", "endpoint": "", "lease_s": 3600.0, "lost_error": "lost", "split": _split}
    [row] = claim_llm_batches(store, ["a"], **claim).new
    update_llm_batch(store, row.id, input_file_id="file-1", status="submitting")
    update_llm_batch(store, row.id, batch_id="batch-1", status="validating", submitted=True)
    update_llm_batch(store, row.id, completed=1, failed=0)
    found = store.db.execute(
        "SELECT input_file_id, batch_id, status, completed, failed, error, submitted_at IS NOT NULL, collected_at "
        "FROM llm_batches WHERE id = ?",
        [row.id],
    ).fetchone()
    assert found == ("file-1", "batch-1", "validating", 1, 0, None, 1, None)
    assert take_over_llm_batch(store, row.id, status="validating", updated_at="2000-01-01") is False
