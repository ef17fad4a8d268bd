"""The stage error codes reach callers through both surfaces: ``autodoc --call`` (exit 1, the error
object on stdout) and ``serve --stdio`` (a JSON-RPC error, the server keeps serving)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import PROJECT, StdioServer, write
from tests.model_servers import model_server


def cli(db: Path, method: str, params: list) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "autodoc_core", "--db", str(db), "--call", method,
                           json.dumps(params)], capture_output=True, cwd=PROJECT, timeout=120)
    assert b"Traceback" not in done.stderr
    return done.returncode, json.loads(done.stdout)


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
    server = StdioServer(db)
    try:
        assert error_code(server.ask("search.query", ["kb", "sockets", SEMANTIC_ONLY])) == -32065
        assert server.ask("search.query", ["kb", "sockets"])["result"]["hits"]  # and it keeps serving
    finally:
        server.close()

    # -32067: the model server the vectors came from is gone
    with model_server("tei") as tei:
        embedder = {"provider": "tei", "url": tei.url, "retries": 0, "timeout": 5}
        assert cli(db, "workspace.configure", ["kb", {"embedder": embedder, "semantic_deadline": 60}])[0] == 0
        assert cli(db, "workspace.index", ["kb", {"wait": "semantic"}])[0] == 0
        # a fresh process asks the model for its dimensions first: complete vectors are "ready", not "switching"
        code, answer = cli(db, "search.query", ["kb", "sockets", SEMANTIC_ONLY])
        assert code == 0 and answer["semantic"] == "ready" and answer["hits"][0]["path"] == "network.md"
    code, answer = cli(db, "search.query", ["kb", "sockets", SEMANTIC_ONLY])
    assert code == 1 and error_code(answer) == -32067 and "cannot reach" in answer["error"]["data"]["reason"]
    server = StdioServer(db)
    try:
        assert error_code(server.ask("search.query", ["kb", "sockets", SEMANTIC_ONLY])) == -32067
    finally:
        server.close()

    # -32069: another model is configured and its vectors are not complete yet
    with model_server("openai") as other:
        embedder = {"provider": "openai", "url": other.url, "model": "toy", "retries": 0, "timeout": 5}
        assert cli(db, "workspace.configure", ["kb", {"embedder": embedder, "semantic_deadline": 60}])[0] == 0
        code, answer = cli(db, "search.query", ["kb", "sockets", SEMANTIC_ONLY])
        assert code == 1 and error_code(answer) == -32069
        server = StdioServer(db)
        try:
            answer = server.ask("search.query", ["kb", "sockets", SEMANTIC_ONLY])
            if "error" in answer:  # the server's own filler may already have finished the new model
                assert error_code(answer) == -32069
            else:
                assert answer["result"]["semantic"] == "ready"
        finally:
            server.close()


def test_an_unreachable_model_is_asked_once_and_searches_answer_by_words_meanwhile(tmp_path: Path, kb: Path) -> None:
    """A fresh engine whose remote model hangs: the first search waits for the semantic deadline once;
    the searches after it (within the retry window) skip the semantic stage at once with the reason,
    and no new probe is started for each. Broken on purpose: without the shared probe each search
    starts its own and the probe count grows."""
    import socket
    import threading

    from autodoc_core.service.engine import Engine

    write(kb, "network.md", "# Network\n\n## Sockets\n\nPackets travel over sockets between hosts.\n")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)  # accepts connections, never answers
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        with Engine(tmp_path / "a.db") as engine:
            engine.workspace_add("kb", str(kb))
            engine.workspace_configure("kb", {"embedder": {"provider": "tei", "url": url, "timeout": 60,
                                                           "retries": 0}, "semantic_deadline": 0.2})
            engine.workspace_index("kb")
            probes_before = sum(t.name == "autodoc-model-probe" for t in threading.enumerate())
            answers = [engine.search_query("kb", "sockets", None).to_wire() for _ in range(5)]
            probes_after = sum(t.name == "autodoc-model-probe" for t in threading.enumerate())
    finally:
        listener.close()
    assert probes_after - probes_before <= 1
    for answer in answers:
        assert answer["stages"]["performed"] == ["lexical"]
        assert "did not answer within the 0.2 s deadline" in answer["stages"]["skipped"]["semantic"]
        assert answer["hits"][0]["path"] == "network.md"


def test_a_lock_another_process_keeps_is_busy_not_a_bug(tmp_path: Path, kb: Path) -> None:
    """A process that stopped (or hung) inside a write transaction keeps SQLite's lock: a write from the
    command line waited out the busy timeout and then reported "internal error: BusyError", documented as
    a bug in AutoDoc. It is rpc.busy with what to do."""
    import apsw

    db = tmp_path / "a.db"
    write(kb, "a.md", "# A\n\ntext\n")
    assert cli(db, "workspace.add", ["kb", str(kb)])[0] == 0
    holder = apsw.Connection(str(db))
    holder.execute("BEGIN EXCLUSIVE")
    try:
        code, answer = cli(db, "workspace.configure", ["kb", {"fusion": "rrf"}])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 1 and error_code(answer) == -32066
    assert "another process holds the database's lock" in answer["error"]["data"]["reason"]


def test_one_check_for_a_count_and_a_number_in_range() -> None:
    """The check every option, setting and tool argument uses: JSON's true is not 1, and the ends count."""
    from autodoc_core.errors import number, whole_number

    assert [whole_number(v, 1, 50) for v in (1, 50, 0, 51, True, 5.0, "5", None)] == [True, True] + [False] * 6
    assert whole_number(10**9, 0) and not whole_number(-1, 0) and whole_number(-1)
    assert [number(v, 0.05, 60.0) for v in (0.05, 60, 2, 0.01, 61, False, "2")] == [True] * 3 + [False] * 4
