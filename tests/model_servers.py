"""Real HTTP servers on 127.0.0.1 speaking the TEI, OpenAI-compatible and Cohere v2 wire formats,
for provider tests. Vectors are a deterministic bag of hashed words, so similar texts are close."""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIMS = 32
HOLD_LIMIT_SECONDS = 120  # a held request is answered after this even if the test never releases it


def toy_vector(text: str, model: str = "") -> list[float]:
    """``model``: another toy model hashes words with it, so the same text gets an unrelated vector."""
    vector = [0.0] * DIMS
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.blake2b((model + word).encode(), digest_size=4).digest()
        vector[digest[0] % DIMS] += 1.0 if digest[1] % 2 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector] if any(vector) else [1.0] + [0.0] * (DIMS - 1)


@dataclass
class Behaviour:
    """What the server does next: fail with a status, stall, drop the connection, or answer garbage."""

    fail_status: list[int] = field(default_factory=list)  # statuses for the next requests, in order
    delay: float = 0.0
    drop_after: int | None = None  # answer this many embed requests, then drop every connection
    garbage: bool = False
    cut_answer: bool = False  # promise a longer body than is sent, then close (http.client.IncompleteRead)
    wrong_indices: bool = False
    echo_auth: bool = False  # error bodies quote the Authorization header, as careless servers do
    hold_after: int | None = None  # answer this many batches (2+ texts), then hold later ones until `release`
    release: threading.Event = field(default_factory=threading.Event)
    batches: int = 0  # requests with more than one text (a query embedding or a probe has one)
    hold_texts: set[str] = field(default_factory=set)  # hold the first request with each of these texts
    max_text_chars: int | None = None  # refuse (413, as TEI does over its payload limit) a longer input
    held: int = 0  # requests held so far
    holding: threading.Event = field(default_factory=threading.Event)  # set once a request is held
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    model: str = ""  # another value swaps the model behind the same name and dimensions (see toy_vector)


class _Handler(BaseHTTPRequestHandler):
    behaviour: Behaviour
    flavour: str

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # the http.server API
        if self.path == "/info":
            self._send(200, {"model_id": "toy/bag-of-words", "model_type": {"embedding": {"pooling": "mean"}},
                             "max_input_length": 512, "max_client_batch_size": 32})
        elif self.path == "/health":
            self._send(200, b"")
        else:
            self._send(404, {"error": "not found", "error_type": "Validation"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        behaviour = self.behaviour
        with behaviour.lock:
            behaviour.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization"),
                                       "at": time.monotonic()})
            answered = len(behaviour.requests)
            texts = body.get("inputs") or body.get("input") or body.get("texts") if isinstance(body, dict) else None
            batches = behaviour.batches = behaviour.batches + (isinstance(texts, list) and len(texts) > 1)
            status = behaviour.fail_status.pop(0) if behaviour.fail_status else None
        if behaviour.drop_after is not None and answered > behaviour.drop_after:
            self.connection.close()  # the server dies mid-batch: no answer at all
            return
        if self._held(texts, batches):
            with behaviour.lock:
                behaviour.held += 1
            behaviour.holding.set()
            behaviour.release.wait(timeout=HOLD_LIMIT_SECONDS)
        if behaviour.delay:
            time.sleep(behaviour.delay)
        if status is None and behaviour.max_text_chars is not None and isinstance(texts, list) \
                and any(len(text) > behaviour.max_text_chars for text in texts):
            status = 413
        if status:
            error = self._error(status)
            if behaviour.echo_auth:
                error = {"error": {"message": f"invalid credentials: {self.headers.get('Authorization')}"}}
            self._send(status, error)
            return
        if behaviour.garbage:
            self._send(200, b"{not json")
            return
        if behaviour.cut_answer:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'[{"index": 0, ')
            self.close_connection = True
            return
        getattr(self, f"_answer_{self.flavour}")(body)

    def _held(self, texts: Any, batches: int) -> bool:
        if not isinstance(texts, list):
            return False
        behaviour = self.behaviour
        with behaviour.lock:
            matched = behaviour.hold_texts.intersection(t for t in texts if isinstance(t, str))
            behaviour.hold_texts -= matched
        if matched:
            return True
        return behaviour.hold_after is not None and batches > behaviour.hold_after and len(texts) > 1

    def _error(self, status: int) -> Any:
        message = {429: "model is overloaded", 503: "unhealthy", 422: "validation failed"}.get(status, "error")
        if self.flavour == "openai":
            return {"error": {"message": message, "type": "server_error", "param": None, "code": status}}
        if self.flavour == "cohere":
            return {"message": message}
        return {"error": message, "error_type": "Overloaded" if status == 429 else "Validation"}

    def _rerank_scores(self, query: str, texts: list[str]) -> list[tuple[int, float]]:
        """Scores by toy cosine, best first; with wrong_indices, an index out of range."""
        q = toy_vector(query)
        pairs = [(i, sum(a * b for a, b in zip(q, toy_vector(t), strict=True))) for i, t in enumerate(texts)]
        pairs.sort(key=lambda p: -p[1])
        if self.behaviour.wrong_indices:
            pairs[0] = (len(texts) + 5, pairs[0][1])
        return pairs

    def _answer_tei(self, body: dict) -> None:
        if self.path == "/rerank":
            if "texts" not in body or "query" not in body:
                self._send(422, {"error": "missing field", "error_type": "Validation"})
                return
            if len(body["texts"]) > 32:  # TEI's default max_client_batch_size, as for /embed
                size = len(body["texts"])
                self._send(422, {"error": f"batch size {size} > maximum allowed batch size 32",
                                 "error_type": "Validation"})
                return
            self._send(200, [{"index": i, "score": s} for i, s in self._rerank_scores(body["query"], body["texts"])])
            return
        if self.path != "/embed":
            self._send(404, {"error": "not found", "error_type": "Validation"})
            return
        inputs = body.get("inputs")
        if not isinstance(inputs, list) or len(inputs) > 32:
            size = len(inputs) if isinstance(inputs, list) else 0
            self._send(422, {"error": f"batch size {size} > maximum allowed batch size 32", "error_type": "Validation"})
            return
        self._send(200, [toy_vector(text, self.behaviour.model) for text in inputs])

    def _answer_openai(self, body: dict) -> None:
        inputs = body["input"]
        data = [{"object": "embedding", "index": i, "embedding": toy_vector(t, self.behaviour.model)}
                for i, t in enumerate(inputs)]
        self._send(200, {"object": "list", "data": list(reversed(data)), "model": body["model"],
                         "usage": {"prompt_tokens": 1, "total_tokens": 1}})

    def _answer_cohere(self, body: dict) -> None:
        if self.path == "/v2/rerank":
            pairs = self._rerank_scores(body["query"], body["documents"])[: body.get("top_n") or None]
            self._send(200, {"id": "r", "results": [{"index": i, "relevance_score": s} for i, s in pairs],
                             "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}})
            return
        texts = body["texts"]
        vectors = [toy_vector(t, self.behaviour.model) for t in texts]
        self._send(200, {"id": "x", "embeddings": {"float": vectors}, "texts": texts,
                         "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": 1}},
                         "response_type": "embeddings_by_type"})


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients the tests kill mid-request leave broken pipes: not worth a traceback


@dataclass
class RunningServer:
    url: str
    behaviour: Behaviour
    server: ThreadingHTTPServer

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def model_server(flavour: str, behaviour: Behaviour | None = None) -> Iterator[RunningServer]:
    behaviour = behaviour or Behaviour()
    handler = type(f"{flavour}Handler", (_Handler,), {"behaviour": behaviour, "flavour": flavour})
    server = _QuietServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    running = RunningServer(f"http://127.0.0.1:{server.server_address[1]}", behaviour, server)
    try:
        yield running
    finally:
        running.stop()
