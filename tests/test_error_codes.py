"""The stage error codes reach callers through both surfaces: ``autodoc --call`` (exit 1, the error
object on stdout) and ``serve --stdio`` (a JSON-RPC error, the server keeps serving)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import PROJECT, LineReader, write
from tests.model_servers import model_server


def cli(db: Path, method: str, params: list) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "autodoc_core", "--db", str(db), "--call", method,
                           json.dumps(params)], capture_output=True, cwd=PROJECT, timeout=120)
    assert b"Traceback" not in done.stderr
    return done.returncode, json.loads(done.stdout)


class Server:
    """``autodoc serve --stdio`` with replies read under a deadline."""

    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "autodoc_core", "--db", str(db), "serve", "--stdio"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=PROJECT)
        self.lines = LineReader(self.proc.stdout)
        self.next_id = 0

    def ask(self, method: str, params: list) -> dict:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        answer = json.loads(self.lines.next(timeout=120))
        assert answer["id"] == self.next_id
        return answer

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def error_code(answer: dict) -> int:
    assert "error" in answer, answer
    assert answer["error"]["data"]["reason"]
    return answer["error"]["code"]


SEMANTIC_ONLY = {"stages": ["semantic"]}


def test_unsupported_embed_failed_and_switching_through_both_surfaces(tmp_path: Path, kb: Path) -> None:
    write(kb, "network.md", "# Network\n\n## Sockets\n\nPackets travel over sockets between hosts.\n")
    db = tmp_path / "a.db"
    assert cli(db, "workspace.add", ["kb", str(kb)])[0] == 0
    assert cli(db, "workspace.configure", ["kb", {"embedder": "none"}])[0] == 0
    assert cli(db, "workspace.index", ["kb"])[0] == 0

    # -32065: a semantic-only search in a workspace without an embedding model
    code, answer = cli(db, "search.query", ["kb", "sockets", SEMANTIC_ONLY])
    assert code == 1 and error_code(answer) == -32065
    server = Server(db)
    try:
        assert error_code(server.ask("search.query", ["kb", "sockets", SEMANTIC_ONLY])) == -32065
        assert server.ask("search.query", ["kb", "sockets"])["result"]["hits"]  # and it keeps serving
    finally:
        server.close()

    # -32067: the model server the vectors came from is gone
    with model_server("tei") as tei:
        embedder = {"provider": "tei", "url": tei.url, "retries": 0, "timeout": 5}
        assert cli(db, "workspace.configure", ["kb", {"embedder": embedder}])[0] == 0
        assert cli(db, "workspace.index", ["kb", {"wait": "semantic"}])[0] == 0
        # a fresh process asks the model for its dimensions first: complete vectors are "ready", not "switching"
        code, answer = cli(db, "search.query", ["kb", "sockets", SEMANTIC_ONLY])
        assert code == 0 and answer["semantic"] == "ready" and answer["hits"][0]["path"] == "network.md"
    code, answer = cli(db, "search.query", ["kb", "sockets", SEMANTIC_ONLY])
    assert code == 1 and error_code(answer) == -32067 and "cannot reach" in answer["error"]["data"]["reason"]
    server = Server(db)
    try:
        assert error_code(server.ask("search.query", ["kb", "sockets", SEMANTIC_ONLY])) == -32067
    finally:
        server.close()

    # -32069: another model is configured and its vectors are not complete yet
    with model_server("openai") as other:
        embedder = {"provider": "openai", "url": other.url, "model": "toy", "retries": 0, "timeout": 5}
        assert cli(db, "workspace.configure", ["kb", {"embedder": embedder}])[0] == 0
        code, answer = cli(db, "search.query", ["kb", "sockets", SEMANTIC_ONLY])
        assert code == 1 and error_code(answer) == -32069
        server = Server(db)
        try:
            answer = server.ask("search.query", ["kb", "sockets", SEMANTIC_ONLY])
            if "error" in answer:  # the server's own filler may already have finished the new model
                assert error_code(answer) == -32069
            else:
                assert answer["result"]["semantic"] == "ready"
        finally:
            server.close()
