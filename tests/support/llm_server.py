"""A real OpenAI-compatible chat-completions server for tests: a stdlib HTTP server on a free
loopback port, in a thread, answering ``POST /v1/chat/completions`` from a script and keeping
every request it got."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# One scripted answer: a chat.completion body, or (HTTP status, body) for an error.
Answer = dict[str, Any] | tuple[int, dict[str, Any]]

MODEL = "scripted-model"


def tool_call(
    name: str, arguments: dict[str, Any] | str, *, usage: tuple[int, int] = (50, 10)
) -> dict[str, Any]:
    """A completion asking for one tool call."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{name}",
                "type": "function",
                "function": {"name": name, "arguments": args},
            }
        ],
    }
    return completion(message, "tool_calls", usage)


def text(content: str, *, usage: tuple[int, int] = (80, 20)) -> dict[str, Any]:
    """A final answer."""
    return completion({"role": "assistant", "content": content}, "stop", usage)


def completion(
    message: dict[str, Any], finish_reason: str, usage: tuple[int, int]
) -> dict[str, Any]:
    prompt, answer = usage
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": answer,
            "total_tokens": prompt + answer,
        },
    }


class ScriptedServer:
    def __init__(self, answers: list[Answer]) -> None:
        self.answers = list(answers)
        self.requests: list[dict[str, Any]] = []
        # Request headers, names in lower case.
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL an OpenAI client takes (``.../v1``)."""
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()

    def next_answer(self, request: dict[str, Any], headers: dict[str, str]) -> Answer:
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers)
            if not self.answers:
                return 500, {"error": {"message": "the script has no more answers"}}
            return self.answers.pop(0)


@contextmanager
def scripted_server(answers: list[Answer]) -> Iterator[ScriptedServer]:
    server = ScriptedServer(answers).start()
    try:
        yield server
    finally:
        server.stop()


def _handler(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            answer = server.next_answer(json.loads(body), headers)
            status, payload = answer if isinstance(answer, tuple) else (200, answer)
            self._send(status, payload)

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test output is for the tests."""

    return Handler
