"""An OpenAI-compatible chat server on 127.0.0.1 standing in for a model: it answers each chat request with the
next scripted reply (a tool call, or text) and records every request it got, for the agent tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def text_reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


@dataclass
class ChatServer:
    replies: list[dict[str, Any]] = field(default_factory=list)  # the next assistant messages, in order
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def next_reply(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.requests.append(body)
            return self.replies.pop(0) if self.replies else text_reply("(no more scripted replies)")

    def tool_messages(self) -> list[dict[str, Any]]:
        """The tool results CodeCompanion sent back, over all requests (each request repeats the history)."""
        with self.lock:
            last = self.requests[-1] if self.requests else {"messages": []}
        return [m for m in last["messages"] if m.get("role") == "tool"]


class _Handler(BaseHTTPRequestHandler):
    server_state: ChatServer

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send({"object": "list", "data": [{"id": "standin", "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        message = self.server_state.next_reply(body)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        self._send({"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "standin",
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})


@contextmanager
def chat_server(*replies: dict[str, Any]) -> Iterator[ChatServer]:
    state = ChatServer(replies=list(replies))
    handler = type("Handler", (_Handler,), {"server_state": state})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
