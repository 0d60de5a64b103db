"""A real HTTP server on 127.0.0.1 speaking the OpenAI protocol, for tests of the LLM and embedding clients.

`POST /v1/chat/completions` answers from a scriptable queue of behaviours (`enqueue_chat`, `enqueue_status`,
`enqueue_delay`, `enqueue_malformed`), falling back to `default_chat_content` when the queue is empty.
`POST /v1/embeddings` returns deterministic unit vectors seeded by each input's hash, of the requested
`dimensions`, as floats or base64 (the openai client asks for base64). Every request body is recorded.

Use the `fake_openai` fixture (`from tests.fake_openai import fake_openai_fixture  # noqa: F401` in the test
module, or list this module in the root conftest's `pytest_plugins`) and `llm_settings(server)` to point the
LLM settings at it.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import hashlib
import itertools
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
from django.test import override_settings


@dataclass(frozen=True)
class ChatReply:
    content: str
    prompt_tokens: int | None = None  # None: counted from the request (words of all messages)
    completion_tokens: int | None = None  # None: words of the content


@dataclass(frozen=True)
class StatusReply:
    status: int
    message: str = "fake server error"


@dataclass(frozen=True)
class DelayedReply:
    seconds: float
    then: ChatReply | StatusReply | None  # None: the default chat content


Behaviour = ChatReply | StatusReply | DelayedReply


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]  # names lower-cased


def fake_embedding(text: str, dimensions: int) -> np.ndarray:
    """The unit vector the fake server returns for `text` (same text, same vector)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dimensions).astype(np.float32)
    return vector / np.linalg.norm(vector)


class FakeOpenAIServer:
    def __init__(self, *, default_chat_content: str = '{"ok": true}') -> None:
        self.default_chat_content = default_chat_content
        self.requests: list[RecordedRequest] = []
        self._behaviours: collections.deque[Behaviour] = collections.deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # --- scripting -------------------------------------------------------------------------------

    def enqueue_chat(
        self, content: str, *, prompt_tokens: int | None = None, completion_tokens: int | None = None
    ) -> None:
        self._enqueue(ChatReply(content, prompt_tokens, completion_tokens))

    def enqueue_status(self, status: int, message: str = "fake server error") -> None:
        self._enqueue(StatusReply(status, message))

    def enqueue_delay(self, seconds: float, then: str | ChatReply | StatusReply | None = None) -> None:
        """Wait `seconds` before answering with `then` (chat content, a reply, or the default content)."""
        self._enqueue(DelayedReply(seconds, ChatReply(then) if isinstance(then, str) else then))

    def enqueue_malformed(self, content: str = "Sure! Here is the JSON you asked for: {oops") -> None:
        self._enqueue(ChatReply(content))

    def _enqueue(self, behaviour: Behaviour) -> None:
        with self._lock:
            self._behaviours.append(behaviour)

    def next_behaviour(self) -> Behaviour:
        with self._lock:
            return self._behaviours.popleft() if self._behaviours else ChatReply(self.default_chat_content)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path.endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path.endswith("/embeddings")]

    # --- responses -------------------------------------------------------------------------------

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def chat_completion(self, body: dict[str, Any], reply: ChatReply) -> dict[str, Any]:
        request_words = sum(len(str(message.get("content", "")).split()) for message in body.get("messages", []))
        prompt_tokens = request_words if reply.prompt_tokens is None else reply.prompt_tokens
        completion_tokens = len(reply.content.split()) if reply.completion_tokens is None else reply.completion_tokens
        return {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake-model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        dimensions = int(body.get("dimensions") or 1536)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(texts):
            vector = fake_embedding(str(text), dimensions)
            embedding: Any = base64.b64encode(vector.astype("<f4").tobytes()).decode() if as_base64 else vector.tolist()
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        words = sum(len(str(text).split()) for text in texts)
        return {
            "object": "list",
            "data": data,
            "model": body.get("model", "fake-embedding"),
            "usage": {"prompt_tokens": words, "total_tokens": words},
        }


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 10  # idle keep-alive connections end, so their threads do not outlive the test by long

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send(400, _error("request body is not JSON", "invalid_request_error"))
                return
            server.record(
                RecordedRequest(self.path, body, {name.lower(): value for name, value in self.headers.items()})
            )
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up waiting
                if self.path.endswith("/chat/completions"):
                    self._answer_chat(body, server.next_behaviour())
                elif self.path.endswith("/embeddings"):
                    self._send(200, server.embeddings(body))
                else:
                    self._send(404, _error(f"unknown path {self.path}", "invalid_request_error"))

        def _answer_chat(self, body: dict[str, Any], behaviour: Behaviour) -> None:
            if isinstance(behaviour, DelayedReply):
                time.sleep(behaviour.seconds)
                behaviour = behaviour.then or ChatReply(server.default_chat_content)
            if isinstance(behaviour, StatusReply):
                self._send(behaviour.status, _error(behaviour.message, "server_error"))
            else:
                self._send(200, server.chat_completion(body, behaviour))

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            encoded = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(encoded)))
            self.end_headers()
            self.wfile.write(encoded)

    return Handler


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


@contextlib.contextmanager
def running_fake_openai(**options: Any) -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer(**options).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(name="fake_openai")
def fake_openai_fixture() -> Iterator[FakeOpenAIServer]:
    """A running fake server (import `fake_openai_fixture` into a test module; the fixture is `fake_openai`)."""
    with running_fake_openai() as server:
        yield server


@contextlib.contextmanager
def llm_settings(server: FakeOpenAIServer) -> Iterator[None]:
    """Point settings.LLM_* at the fake server for the duration of the block."""
    with override_settings(LLM_BASE_URL=server.base_url + "/v1", LLM_API_KEY="test", LLM_MODEL="fake-model"):
        yield
