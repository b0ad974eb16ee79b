"""A scripted OpenAI-compatible HTTP server on loopback, for testing LLM paths through the real litellm client.

Each test gives a ``script``: a callable from the request's JSON body to a :class:`Reply` (status, body,
headers, delay). The server records every request it receives. It runs on aiohttp in a thread of its own
(keep-alive, delays awaited rather than slept), so hundreds of concurrent requests cost it little and a
latency benchmark measures the client, not the stub. ``python -m tests.support.openai_stub --latency 0.2``
serves a fixed-latency echo model from a separate process and prints its api_base (with ``--judge``, a judge
that answers structured-output requests with valid answers on their scale). :class:`Faults` puts a
deterministic schedule of faults (429s with and without Retry-After, 500s, answers later than the client's
timeout, bodies cut mid-JSON or not JSON at all) in front of any script.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from aiohttp import web


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict -> JSON; str -> sent raw (for malformed answers)
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    #: held back (the server's loop keeps serving other requests) until this returns true, at most 30 s
    until: Callable[[], bool] | None = None


def completion_body(content: str, *, prompt_tokens: int = 10, completion_tokens: int = 5) -> dict[str, Any]:
    """A well-formed chat completion's JSON whose message content is ``content``."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "stub",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def chat_reply(content: str, *, prompt_tokens: int = 10, completion_tokens: int = 5, delay_s: float = 0.0) -> Reply:
    """A well-formed chat completion whose message content is ``content``."""
    return Reply(
        body=completion_body(content, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
        delay_s=delay_s,
    )


def error_reply(status: int, message: str = "scripted error", *, retry_after: float | None = None) -> Reply:
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    return Reply(status=status, body={"error": {"message": message, "type": "test", "code": status}}, headers=headers)


def user_text(request: dict[str, Any]) -> str:
    """The last user message of a chat request (what a script usually branches on)."""
    for message in reversed(request.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def judged_response(request: dict[str, Any]) -> str:
    """The response a judge question (``ask_llm``) asks about, fenced in its last user message: a script that
    answers by the response must not read the prompt or the question shown beside it."""
    return user_text(request).split("<response>\n", 1)[1].split("\n</response>", 1)[0]


#: The faults :class:`Faults` can send in place of an answer.
FAULT_KINDS = ("429", "429-retry-after", "500", "timeout", "truncated", "malformed")


def first_user_text(request: dict[str, Any]) -> str:
    """The first user message of a chat request: what a request is, whatever was appended to re-ask it."""
    for message in request.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


class Faults:
    """A deterministic fault schedule in front of a script. ``plan(key, attempt)`` names the fault (one of
    :data:`FAULT_KINDS`) for the ``attempt``-th arrival (0-based) of requests whose key is ``key`` (by default
    their first user message), or None to let ``script`` answer. What it sent is recorded per key, in order of
    arrival, with the arrival time, so a test counts attempts and waits at the stub itself.

    - ``429``: rate limited, no Retry-After; ``429-retry-after``: rate limited with ``Retry-After:
      retry_after`` (a number of seconds, any header text such as an HTTP date, or a function giving the text
      when the refusal is sent: a date fixed before the client's first call can be past by the time it arrives);
    - ``500``: a server error;
    - ``timeout``: the script's answer, sent ``timeout_delay_s`` late (beyond the client's timeout);
    - ``truncated``: a 200 whose JSON body is cut in the middle; ``malformed``: a 200 whose body is not JSON.
    """

    def __init__(
        self,
        script: Callable[[dict[str, Any]], Reply],
        plan: Callable[[str, int], str | None],
        *,
        key: Callable[[dict[str, Any]], str] = first_user_text,
        retry_after: float | str | Callable[[], str] = 0.05,
        timeout_delay_s: float = 2.0,
    ) -> None:
        self.script = script
        self.plan = plan
        self.key = key
        self.retry_after = retry_after
        self.timeout_delay_s = timeout_delay_s
        self.sent: dict[str, list[tuple[str, float]]] = {}  # key -> [(fault kind or "ok", arrival time)]
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        key = self.key(request)
        with self._lock:
            history = self.sent.setdefault(key, [])
            kind = self.plan(key, len(history))
            history.append((kind or "ok", time.monotonic()))
        if kind is None:
            return self.script(request)
        return self.fault(kind, request)

    def fault(self, kind: str, request: dict[str, Any]) -> Reply:
        match kind:
            case "429":
                return error_reply(429, "rate limited")
            case "429-retry-after":
                reply = error_reply(429, "rate limited")
                after = self.retry_after() if callable(self.retry_after) else self.retry_after
                reply.headers["Retry-After"] = after if isinstance(after, str) else f"{after:g}"
                return reply
            case "500":
                return error_reply(500, "internal error")
            case "timeout":
                late = self.script(request)
                return Reply(late.status, late.body, self.timeout_delay_s, dict(late.headers))
            case "truncated":
                body = json.dumps(chat_reply("an answer cut short").body)
                return Reply(body=body[: len(body) // 2])
            case "malformed":
                return Reply(body="<html><body>502 Bad Gateway</body></html>")
        raise ValueError(f"unknown fault {kind!r}")

    def counts(self) -> dict[str, int]:
        """How many of each reply (a fault kind, or "ok") were sent."""
        out: dict[str, int] = {}
        with self._lock:
            for history in self.sent.values():
                for kind, _ in history:
                    out[kind] = out.get(kind, 0) + 1
        return out

    def attempts(self, key: str) -> list[str]:
        with self._lock:
            return [kind for kind, _ in self.sent.get(key, [])]


class LoopbackServer:
    """An aiohttp app on loopback, served from its own thread and event loop for the ``with`` block; subclasses
    add their routes (``_routes``) and hold ``host``, ``port`` (0: any free one), ``_loop``, ``_runner`` and
    ``_thread``."""

    max_body_bytes = 64 * 1024 * 1024
    host: str
    port: int
    _loop: asyncio.AbstractEventLoop | None
    _runner: web.AppRunner | None
    _thread: threading.Thread | None

    def _routes(self, app: web.Application) -> None:
        raise NotImplementedError

    async def _start(self) -> None:
        app = web.Application(client_max_size=self.max_body_bytes)
        self._routes(app)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, backlog=1024)
        await site.start()
        server = site._server
        assert server is not None and server.sockets
        self.port = int(server.sockets[0].getsockname()[1])

    def __enter__(self) -> Self:
        self._loop = asyncio.new_event_loop()
        started = threading.Event()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self._start())
            started.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name=type(self).__name__, daemon=True)
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError(f"{type(self).__name__} did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._runner is not None and self._thread is not None
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


@dataclass
class OpenAIStub(LoopbackServer):
    script: Callable[[dict[str, Any]], Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    host: str = "127.0.0.1"
    port: int = 0
    _loop: asyncio.AbstractEventLoop | None = None
    _runner: web.AppRunner | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def api_base(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        with self._lock:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
        reply = self.script(body)
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.until is not None:
            deadline = time.monotonic() + 30.0
            while not reply.until() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
        return web.Response(
            status=reply.status, text=payload, content_type="application/json", headers=reply.headers or None
        )

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/{tail:.*}", self._handle)


def echo_model(latency_s: float) -> Callable[[dict[str, Any]], Reply]:
    """A model that answers every request with its user message after ``latency_s``."""
    return lambda request: chat_reply(f"echo: {user_text(request)[:200]}", delay_s=latency_s)


def judge_model(latency_s: float) -> Callable[[dict[str, Any]], Reply]:
    """A judge that answers every structured-output request after ``latency_s`` with a valid answer on the scale
    its ``response_format`` schema asks for (``{"explanation": ..., "score": ...}``), the score picked from a
    hash of the user message (so answers vary across items but are the same for the same message); requests
    without a schema get the echo answer."""

    def answer(request: dict[str, Any]) -> Reply:
        schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
        properties = schema.get("properties") or {}
        score = properties.get("score")
        if not isinstance(score, dict):
            return chat_reply(f"echo: {user_text(request)[:200]}", delay_s=latency_s)
        pick = zlib.crc32(user_text(request).encode("utf-8"))
        value: Any
        if "enum" in score:
            value = score["enum"][pick % len(score["enum"])]
        elif score.get("type") == "boolean":
            value = pick % 3 != 0
        elif score.get("type") == "integer":
            low, high = int(score.get("minimum", 0)), int(score.get("maximum", 10))
            value = low + pick % (high - low + 1)
        else:
            value = None
        body = {"explanation": "stub judgement", "score": value} if "explanation" in properties else {"score": value}
        return chat_reply(json.dumps(body), delay_s=latency_s)

    return answer


@contextlib.contextmanager
def stub_process(latency_s: float, *, judge: bool = False) -> Iterator[str]:
    """The fixed-latency model in a process of its own (so a benchmark measures the client, not the stub);
    yields its api_base."""
    arguments = ["--latency", str(latency_s), *(["--judge"] if judge else [])]
    with server_process("tests.support.openai_stub", *arguments) as api_base:
        yield api_base


@contextlib.contextmanager
def server_process(module: str, *arguments: str) -> Iterator[str]:
    """``python -m module arguments`` from the checkout, a loopback server that prints its api_base on its first
    line; yields that api_base and stops the process after."""
    process = subprocess.Popen(
        [sys.executable, "-m", module, *arguments],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        process.terminate()
        process.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description="a fixed-latency OpenAI-compatible echo server on loopback")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--judge", action="store_true", help="answer structured-output requests with a valid judge answer"
    )
    args = parser.parse_args()
    model = judge_model(args.latency) if args.judge else echo_model(args.latency)
    with OpenAIStub(model, port=args.port) as stub:
        print(stub.api_base, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
