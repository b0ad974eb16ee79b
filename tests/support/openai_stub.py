"""A scripted OpenAI-compatible HTTP server on loopback, for testing LLM paths through the real litellm client.

Each test gives a ``script``: a callable from the request's JSON body to a :class:`Reply` (status, body,
headers, delay). The server records every request it receives. It runs on aiohttp in a thread of its own
(keep-alive, delays awaited rather than slept), so hundreds of concurrent requests cost it little and a
latency benchmark measures the client, not the stub. ``python -m tests.support.openai_stub --latency 0.2``
serves a fixed-latency echo model from a separate process and prints its api_base (with ``--judge``, a judge
that answers structured-output requests with valid answers on their scale).
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
from typing import Any

from aiohttp import web


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict -> JSON; str -> sent raw (for malformed answers)
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


def chat_reply(content: str, *, prompt_tokens: int = 10, completion_tokens: int = 5, delay_s: float = 0.0) -> Reply:
    """A well-formed chat completion whose message content is ``content``."""
    return Reply(
        body={
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
        },
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


@dataclass
class OpenAIStub:
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
        payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
        return web.Response(
            status=reply.status, text=payload, content_type="application/json", headers=reply.headers or None
        )

    async def _start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, backlog=1024)
        await site.start()
        server = site._server
        assert server is not None and server.sockets
        self.port = int(server.sockets[0].getsockname()[1])

    def __enter__(self) -> OpenAIStub:
        self._loop = asyncio.new_event_loop()
        started = threading.Event()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self._start())
            started.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="openai-stub", daemon=True)
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("the OpenAI stub did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._runner is not None and self._thread is not None
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


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
    command = [sys.executable, "-m", "tests.support.openai_stub", "--latency", str(latency_s)]
    process = subprocess.Popen(
        [*command, "--judge"] if judge else command,
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
