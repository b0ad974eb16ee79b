"""Provider batch APIs: the LLM layer's requests sent through litellm's files and batches API (OpenAI-style JSONL
batches), answered within the completion window at the provider's batch price.

:class:`BatchLiteLLMClient` is a :class:`~spade_lsp.llm.LiteLLMClient` whose :meth:`complete_many` answers
cached requests from the store as usual and sends the rest as one batch (per 50,000 requests): it writes the
JSONL (``custom_id`` = the request's cache key, body = what the synchronous path sends in ``json_schema``
mode), uploads it, records an ``llm_batches`` row *before* creating the batch, creates it, and polls every
``batch_poll_s``. The answers are validated as the synchronous path validates them, cached, and the row marked
collected in one transaction. A structured answer that is invalid is asked again through the synchronous
path, with its re-asks. A process that dies at any point resumes: the same request set finds its row and polls
the batch it holds; a row that never learnt its batch id (death between create and the write) is matched
against the provider's batch list by input file id or digest before anything is created again, so an accepted
batch is never submitted twice. A cancelled, expired or failed batch keeps every answer its output file holds;
the rest get an :class:`~spade_lsp.errors.LLMError` naming the batch and its status, and :attr:`batch_log`
says what was kept. A single :meth:`complete` (the editor's interactive calls) stays synchronous.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from spade_lsp.errors import LLMError
from spade_lsp.llm import (
    Completion,
    LiteLLMClient,
    LLMRequest,
    _import_litellm,
    _Invalid,
    _normalised,
    _read_json,
)

__all__ = ["BatchLiteLLMClient", "BatchPrice", "batch_price"]

#: OpenAI takes at most 50,000 requests in one batch.
MAX_BATCH_REQUESTS: Final = 50_000
#: Provider statuses after which a batch changes no more.
FINAL_STATUSES: Final = frozenset({"completed", "failed", "expired", "cancelled"})
_ENDPOINT: Final = "/v1/chat/completions"
_LIST_PAGES: Final = 10
_HEARTBEAT_S: Final = 1.0

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class BatchPrice:
    """Dollars per token for a batch's input and output (None: unknown), and where the figures come from."""

    input: float | None
    output: float | None
    source: str

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        if self.input is None or self.output is None:
            return None
        return prompt_tokens * self.input + completion_tokens * self.output


def batch_price(model: str) -> BatchPrice:
    """The batch price litellm's cost map gives ``model``; without one, the synchronous price as an upper bound
    (said in ``source``); without either, unknown."""
    litellm = _import_litellm()
    try:
        info: Mapping[str, Any] = litellm.get_model_info(model=model)
    except Exception:  # litellm raises for a model its map does not know
        return BatchPrice(None, None, f"litellm's price map does not know {model}")
    batch_in, batch_out = info.get("input_cost_per_token_batches"), info.get("output_cost_per_token_batches")
    if batch_in is not None and batch_out is not None:
        return BatchPrice(float(batch_in), float(batch_out), "batch price from litellm's price map")
    sync_in, sync_out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if sync_in is not None and sync_out is not None:
        return BatchPrice(
            float(sync_in),
            float(sync_out),
            f"litellm's price map has no batch price for {model}: priced at its synchronous price (an upper bound)",
        )
    return BatchPrice(None, None, f"litellm's price map has no price for {model}")


@dataclass
class _Answer:
    """What a batch said about one request: its text and tokens, or the error it gave."""

    text: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None


class BatchLiteLLMClient(LiteLLMClient):
    """:class:`LiteLLMClient` whose batches go through the provider's batch API (see the module's docstring)."""

    #: The sampler sends every call of a run in one round: each round is one batch, waited for in full.
    round_calls: int = MAX_BATCH_REQUESTS

    def __init__(
        self,
        model: str,
        *,
        poll_s: float = 30.0,
        completion_window: str = "24h",
        **kwargs: Any,
    ) -> None:
        super().__init__(model, **kwargs)
        self.poll_s = poll_s
        self.completion_window = completion_window
        #: One summary per batch this client (and those :meth:`with_model` derives) collected, oldest first.
        self.batch_log: list[dict[str, Any]] = []
        self._log_lock = threading.Lock()

    @classmethod
    def adopt(cls, client: LiteLLMClient, *, poll_s: float, completion_window: str) -> BatchLiteLLMClient:
        """``client`` (its settings, limits, usage and cache) sending its batches through the provider's API."""
        batch = cls.__new__(cls)
        batch.__dict__.update(client.__dict__)
        batch.poll_s = poll_s
        batch.completion_window = completion_window
        batch.batch_log = []
        batch._log_lock = threading.Lock()
        return batch

    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        response_schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        sample_index: int = 0,
    ) -> Completion:
        """One call: synchronous (a batch of one would only wait)."""
        [answer] = LiteLLMClient.complete_many(self, [LLMRequest(messages, response_schema, temperature, sample_index)])
        if isinstance(answer, LLMError):
            raise answer
        return answer

    def complete_many(
        self,
        requests: Sequence[LLMRequest],
        *,
        on_result: Callable[[int, Completion | LLMError], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        on_progress: Progress | None = None,
    ) -> list[Completion | LLMError]:
        """Answers for ``requests`` in order: cached ones from the store, the rest through provider batches.
        ``on_progress(done, total)`` runs at every poll; an exception from it (or from ``on_result``) leaves the
        batch running for a later run to resume. When ``should_stop()`` turns true the batch is cancelled at the
        provider and what it answered is kept; so is it when ``on_progress`` raises
        :class:`~spade_lsp._jobs.JobCancelled` (the job was cancelled), the row then left for the next run."""
        results: list[Completion | LLMError | None] = [None] * len(requests)
        keys = [self._key(request) for request in requests]
        for index, text in self._cached_many(keys).items():
            schema = requests[index].response_schema
            if schema is not None:
                try:
                    text = _normalised(_read_json(text, schema))
                except _Invalid:
                    continue  # asked again, and replaced
            results[index] = Completion(text=text, cached=True, calls=0)
            self._deliver(results, index, results[index], on_result)  # type: ignore[arg-type]
        pending: dict[str, list[int]] = {}
        for index, result in enumerate(results):
            if result is None:
                pending.setdefault(keys[index], []).append(index)
        unique = list(pending)
        for start in range(0, len(unique), MAX_BATCH_REQUESTS):
            chunk = {key: pending[key] for key in unique[start : start + MAX_BATCH_REQUESTS]}
            self._run_batch(requests, chunk, results, on_result, should_stop, on_progress)
        return results  # type: ignore[return-value]

    # -- one batch ---------------------------------------------------------------------------------------------

    def _run_batch(
        self,
        requests: Sequence[LLMRequest],
        chunk: dict[str, list[int]],
        results: list[Completion | LLMError | None],
        on_result: Callable[[int, Completion | LLMError], None] | None,
        should_stop: Callable[[], bool] | None,
        on_progress: Progress | None,
    ) -> None:
        digest = self._digest(chunk)
        try:
            row_id, batch_id = self._submitted(requests, chunk, digest)
            batch = self._poll(row_id, batch_id, len(chunk), should_stop, on_progress)
            answers = self._download(batch)
        except LLMError as error:  # nothing was accepted, or it cannot be read now: the row (if any) stays open
            for indices in chunk.values():
                for index in indices:
                    self.usage.add_failure(Completion("", calls=0, cost=0.0))
                    self._deliver(results, index, error, on_result)
            return
        status = str(batch.status)
        price = batch_price(self.model)
        completions: dict[str, Completion] = {}
        failures: dict[str, LLMError] = {}
        invalid: list[str] = []
        unanswered = 0
        for key, indices in chunk.items():
            answer = answers.get(key)
            if answer is None:
                unanswered += 1
                why = f": {_batch_errors(batch.errors)}" if status == "failed" and batch.errors else ""
                failures[key] = LLMError(
                    f"{self.model}: not answered: batch {batch_id} ended {status}{why} "
                    f"({len(answers)} of {len(chunk)} answered; those were kept)"
                )
                continue
            if answer.error is not None:
                failures[key] = LLMError(f"{self.model}: batch {batch_id} ({status}): {answer.error}")
                continue
            assert answer.text is not None
            text = answer.text
            schema = requests[indices[0]].response_schema
            if schema is not None:
                try:
                    text = _normalised(_read_json(text, schema))
                except _Invalid:
                    invalid.append(key)  # a call answered all the same: counted, then asked again
                    self.usage.add(
                        Completion(
                            "",
                            prompt_tokens=answer.prompt_tokens,
                            completion_tokens=answer.completion_tokens,
                            cost=price.cost(answer.prompt_tokens, answer.completion_tokens),
                        )
                    )
                    continue
            completions[key] = Completion(
                text=text,
                prompt_tokens=answer.prompt_tokens,
                completion_tokens=answer.completion_tokens,
                cost=price.cost(answer.prompt_tokens, answer.completion_tokens),
            )
        self._collect(row_id, batch, [(key, c.text) for key, c in completions.items()])
        kept = sum(1 for a in answers.values() if a.error is None)
        self._log(batch_id, status, len(chunk), kept, len(chunk) - kept, unanswered, len(invalid), completions, price)
        for key, completion in completions.items():
            for position, index in enumerate(chunk[key]):
                # duplicates of one request share its answer: only the first paid for it
                shown = completion if position == 0 else Completion(text=completion.text, cached=True, calls=0)
                self._deliver(results, index, shown, on_result, count=True)
        for key, failure in failures.items():
            for index in chunk[key]:
                self.usage.add_failure(Completion("", calls=int(answers.get(key) is not None), cost=0.0))
                self._deliver(results, index, failure, on_result)
        if invalid:  # the synchronous path asks again, with what was wrong
            retried = [index for key in invalid for index in chunk[key]]
            again = LiteLLMClient.complete_many(self, [requests[i] for i in retried], should_stop=should_stop)
            for index, retry in zip(retried, again, strict=True):
                self._deliver(results, index, retry, on_result)

    def _deliver(
        self,
        results: list[Completion | LLMError | None],
        index: int,
        answer: Completion | LLMError,
        on_result: Callable[[int, Completion | LLMError], None] | None,
        *,
        count: bool = False,
    ) -> None:
        results[index] = answer
        if isinstance(answer, Completion) and (answer.cached or count):
            self.usage.add(answer)
        if on_result is not None:
            on_result(index, answer)

    def _digest(self, chunk: Mapping[str, list[int]]) -> str:
        payload = json.dumps({"endpoint": self.endpoint, "model": self.model, "keys": sorted(chunk)})
        return hashlib.sha256(payload.encode()).hexdigest()

    def _provider(self) -> tuple[str, str]:
        """The model name the provider knows and litellm's provider name (``openai/gpt-4o-mini`` -> both)."""
        litellm = _import_litellm()
        try:
            name, provider, _, _ = litellm.get_llm_provider(model=self.model, api_base=self.api_base)
        except Exception as error:
            raise LLMError(f"{self.model}: litellm cannot tell its provider: {_line(error)}") from None
        return str(name), str(provider)

    def _call(self, what: str, function: str, **kwargs: Any) -> Any:
        """One call of litellm's files and batches API, with the client's timeout, retries and credentials."""
        litellm = _import_litellm()
        _, provider = self._provider()
        try:
            return getattr(litellm, function)(
                custom_llm_provider=provider,
                api_base=self.api_base,
                api_key=self.api_key,
                timeout=self.timeout_s,
                max_retries=self.max_retries,
                **kwargs,
            )
        except Exception as error:  # litellm and the provider's SDK raise their own classes
            raise LLMError(f"{self.model}: {what} failed: {_line(error)}") from None

    # -- submit, or find what was submitted ----------------------------------------------------------------------

    def _submitted(
        self, requests: Sequence[LLMRequest], chunk: Mapping[str, list[int]], digest: str
    ) -> tuple[int, str]:
        """The (row, batch id) answering ``chunk``: the open row's, else a new batch's."""
        store = self.store
        row = None
        if store is not None:
            row = store.db.execute(
                "SELECT id, input_file_id, batch_id FROM llm_batches WHERE digest = ? AND collected_at IS NULL "
                "ORDER BY id DESC LIMIT 1",
                [digest],
            ).fetchone()
        if row is not None and row[2]:
            return int(row[0]), str(row[2])
        if row is not None:  # the process died between the upload and learning the batch id
            found = self._find(str(row[1]), digest)
            if found is not None:
                self._update(int(row[0]), batch_id=found, status="validating")
                return int(row[0]), found
            return int(row[0]), self._create(int(row[0]), str(row[1]), digest)
        name, _ = self._provider()
        lines = []
        for key, indices in chunk.items():
            body = {"model": name, "messages": [dict(m) for m in requests[indices[0]].messages]}
            body.update(self._parameters(requests[indices[0]]))
            lines.append(json.dumps({"custom_id": key, "method": "POST", "url": _ENDPOINT, "body": body}))
        data = ("\n".join(lines) + "\n").encode("utf-8")
        uploaded = self._call(
            "uploading the batch input", "create_file", file=("spade-batch.jsonl", data), purpose="batch"
        )
        file_id = str(uploaded.id)
        row_id = 0
        if store is not None:
            now = _now()
            with store.write() as db:
                cursor = db.execute(
                    "INSERT INTO llm_batches (digest, model, endpoint, requested, input_file_id, status, created_at, "
                    "updated_at) VALUES (?, ?, ?, ?, ?, 'submitting', ?, ?)",
                    [digest, self.model, self.endpoint, len(chunk), file_id, now, now],
                )
                row_id = int(cursor.lastrowid or 0)
        return row_id, self._create(row_id, file_id, digest)

    def _create(self, row_id: int, file_id: str, digest: str) -> str:
        batch = self._call(
            "creating the batch",
            "create_batch",
            completion_window=self.completion_window,
            endpoint=_ENDPOINT,
            input_file_id=file_id,
            metadata={"spade_digest": digest[:64]},
        )
        self._update(row_id, batch_id=str(batch.id), status=str(batch.status))
        return str(batch.id)

    def _find(self, file_id: str, digest: str) -> str | None:
        """The provider's batch made from ``file_id`` (or carrying ``digest``), if one was created."""
        after: str | None = None
        for _ in range(_LIST_PAGES):
            page = self._call("listing the provider's batches", "list_batches", after=after, limit=100)
            data = list(getattr(page, "data", None) or [])
            for batch in data:
                metadata = getattr(batch, "metadata", None) or {}
                if getattr(batch, "input_file_id", None) == file_id or metadata.get("spade_digest") == digest[:64]:
                    return str(batch.id)
            if not data or not getattr(page, "has_more", False):
                return None
            after = str(data[-1].id)
        return None

    # -- poll and collect --------------------------------------------------------------------------------------

    def _poll(
        self,
        row_id: int,
        batch_id: str,
        total: int,
        should_stop: Callable[[], bool] | None,
        on_progress: Progress | None,
    ) -> Any:
        """The batch once it is final, its row kept up to date on the way; polling errors are retried
        ``max_retries`` times in a row, then raise (the row stays open, for a later run to resume)."""
        failures = 0
        cancelled = False
        seen: tuple[str, int, int] | None = None
        done = 0
        while True:
            try:
                batch = self._call(f"polling batch {batch_id}", "retrieve_batch", batch_id=batch_id)
            except LLMError as error:
                failures += 1
                if failures > self.max_retries:
                    raise LLMError(f"{error}; the batch is kept: run again to resume it") from None
                self._wait(batch_id, on_progress, done, total)
                continue
            failures = 0
            counts = getattr(batch, "request_counts", None)
            completed = int(getattr(counts, "completed", 0) or 0)
            failed = int(getattr(counts, "failed", 0) or 0)
            status = str(batch.status)
            if (status, completed, failed) != seen:
                seen = (status, completed, failed)
                self._update(row_id, status=status, completed=completed, failed=failed)
            done = completed + failed
            self._progress(batch_id, on_progress, done, total)
            if status in FINAL_STATUSES:
                return batch
            if not cancelled and should_stop is not None and should_stop():
                self._call(f"cancelling batch {batch_id}", "cancel_batch", batch_id=batch_id)
                cancelled = True
            self._wait(batch_id, on_progress, done, total)

    def _wait(self, batch_id: str, on_progress: Progress | None, done: int, total: int) -> None:
        """``poll_s`` until the next poll, reporting progress at least every second meanwhile, so a cancelled
        job or a stopping daemon is heard at once, not at the next poll."""
        deadline = time.monotonic() + self.poll_s
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, _HEARTBEAT_S))
            if time.monotonic() < deadline:
                self._progress(batch_id, on_progress, done, total)

    def _progress(self, batch_id: str, on_progress: Progress | None, done: int, total: int) -> None:
        if on_progress is None:
            return
        try:
            on_progress(done, total)
        except Exception as error:
            from spade_lsp._jobs import JobCancelled

            if isinstance(error, JobCancelled):  # the user cancelled the job: stop the batch's spending too
                with contextlib.suppress(LLMError):
                    self._call(f"cancelling batch {batch_id}", "cancel_batch", batch_id=batch_id)
            raise  # the row stays open: the next run collects what the batch kept

    def _download(self, batch: Any) -> dict[str, _Answer]:
        """Every answer and error a final batch holds, by custom id."""
        answers: dict[str, _Answer] = {}
        for file_id in (getattr(batch, "error_file_id", None), getattr(batch, "output_file_id", None)):
            if not file_id:
                continue
            content = self._call(f"downloading {file_id} of batch {batch.id}", "file_content", file_id=file_id)
            for number, line in enumerate(bytes(content.content).decode("utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    answers[str(record["custom_id"])] = _read_line(record)
                except (ValueError, KeyError, TypeError) as error:
                    raise LLMError(
                        f"{self.model}: line {number} of {file_id} (batch {batch.id}) is unreadable: {error}"
                    ) from None
        return answers

    def _collect(self, row_id: int, batch: Any, entries: Sequence[tuple[str, str]]) -> None:
        """Cache ``entries`` and close the row in one transaction: a run resumed after this finds the answers
        cached, one resumed before finds the row open."""
        if self.store is None:
            return
        now = _now()
        counts = getattr(batch, "request_counts", None)
        with self.store.write() as db:
            db.conn.executemany(
                "INSERT OR REPLACE INTO llm_cache (key, model, response, created_at) VALUES (?, ?, ?, ?)",
                [(key, self.model, json.dumps({"text": text}), now) for key, text in entries],
            )
            db.execute(
                "UPDATE llm_batches SET status = ?, completed = ?, failed = ?, updated_at = ?, collected_at = ? "
                "WHERE id = ?",
                [
                    str(batch.status),
                    int(getattr(counts, "completed", 0) or 0),
                    int(getattr(counts, "failed", 0) or 0),
                    now,
                    now,
                    row_id,
                ],
            )

    def _update(self, row_id: int, **values: Any) -> None:
        if self.store is None or not row_id:
            return
        columns = ", ".join(f"{name} = ?" for name in values)
        with self.store.write() as db:
            db.execute(
                f"UPDATE llm_batches SET {columns}, updated_at = ? WHERE id = ?", [*values.values(), _now(), row_id]
            )

    def _log(
        self,
        batch_id: str,
        status: str,
        requested: int,
        kept: int,
        failed: int,
        unanswered: int,
        invalid: int,
        completions: Mapping[str, Completion],
        price: BatchPrice,
    ) -> None:
        costs = [c.cost for c in completions.values()]
        entry = {
            "id": batch_id,
            "status": status,
            "requested": requested,
            "completed": kept,
            "failed": failed - unanswered,
            "unanswered": unanswered,
            "invalid": invalid,
            "cost": round(sum(c for c in costs if c is not None), 6) if None not in costs else None,
            "price": price.source,
        }
        with self._log_lock:
            self.batch_log.append(entry)


def _read_line(record: Mapping[str, Any]) -> _Answer:
    """One line of an output or error file."""
    response = record.get("response") or {}
    error = record.get("error")
    status = response.get("status_code")
    body = response.get("body") or {}
    if error or status != 200:
        detail = (error or {}).get("message") or ((body.get("error") or {}).get("message")) or "no detail"
        return _Answer(error=f"HTTP {status}: {detail}" if status else str(detail))
    text = body["choices"][0]["message"]["content"]
    if not isinstance(text, str):
        return _Answer(error="the answer has no text content")
    usage = body.get("usage") or {}
    return _Answer(
        text=text,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )


def _batch_errors(errors: Any) -> str:
    data = getattr(errors, "data", None) or []
    messages = [str(getattr(e, "message", e)) for e in data]
    return "; ".join(messages[:3]) or "no detail"


def _line(error: Exception) -> str:
    message = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _now() -> str:
    return datetime.now(UTC).isoformat()
