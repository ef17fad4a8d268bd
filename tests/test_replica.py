"""Read replicas over Litestream and ``--workers``: real servers on 127.0.0.1, a real ``litestream`` (the `team`
extra) shipping to a ``file://`` URL, real SQLite files. No cloud, no network."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import apsw
import httpx2
import pytest

from autodoc_core.store.migrations import SCHEMA_VERSION
from tests.conftest import PROJECT, StdioServer, autodoc, wait_until, write
from tests.mcp_corpus import NETWORK, NOTES, setup_workspace
from tests.team_servers import Server, call

LITESTREAM = Path(sys.executable).with_name("litestream")
pytestmark = pytest.mark.skipif(not LITESTREAM.exists(), reason="the team extra (make dev installs it)")

CARBONARA = """\
# Carbonara

Guanciale, pecorino and eggs; no cream in a carbonara.
"""


def tool(server: Server, name: str, arguments: dict, request_id: int = 1) -> dict:
    answer = server.post(call(name, arguments, request_id))
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]


def search_paths(server: Server, query: str) -> list[str]:
    return [hit["path"] for hit in tool(server, "search", {"query": query})["structuredContent"]["hits"]]


def integrity(db: Path) -> str:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def start_fails(db: Path, *options: str, env: dict | None = None) -> str:
    """A server that must refuse to start: its status 2 and what it said."""
    done = subprocess.run([sys.executable, "-m", "autodoc_core", "--db", str(db), "mcp", "--http", "127.0.0.1:0",
                           *options], cwd=PROJECT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr


def test_a_writer_and_two_replicas(tmp_path: Path) -> None:
    writer_side, storage = tmp_path / "writer", tmp_path / "storage"
    kb = writer_side / "kb"
    write(kb, "storage.md", NOTES)
    write(kb, "net/network.md", NETWORK)
    setup_workspace(writer_side / "w.db", "kb", kb)
    url = storage.as_uri()
    # The writer dies inside the transaction of the third document it indexes (the second index call below).
    writer = Server(writer_side / "w.db", "--replicate-to", url, "--allow-index", "--scan-seconds", "0",
                    env={"AUTODOC_TEST_KILL_AT": "index.document:3"})
    replicas: list[Server] = []
    try:
        wait_until(lambda: writer.health()["replication"]["txid"] is not None, what="the first transaction shipped")
        replicas = [Server(tmp_path / f"r{n}" / "r.db", "--replica-of", url) for n in (1, 2)
                    if (tmp_path / f"r{n}").mkdir() is None]
        for replica in replicas:
            health = replica.health()
            assert health["role"] == "replica" and health["replication"]["txid"] is not None
            assert health["replication"]["lag_seconds"] is not None
            assert "autodoc_replica_lag_seconds" in replica.metrics()

        # The writer's folder out of the replicas' reach: they answer from the database's stored text.
        kb.rename(writer_side / "kb.away")
        try:
            for replica in replicas:
                found = tool(replica, "search", {"query": "write-ahead log snapshot"})["structuredContent"]
                top = found["hits"][0]
                assert (top["path"], top["breadcrumb"]) == ("storage.md", "Storage › Write-ahead log")
                assert "geckos never wait" in top["text"] and "text_problem" not in top
                assert "stores" in found["text_source"]
                read = tool(replica, "read", {"path": "net/network.md"})["structuredContent"]
                assert "Gecko replicas talk HTTP/2" in read["text"] and "stores" in read["text_source"]
                assert read["total_lines"] == len(NETWORK.splitlines())
        finally:
            (writer_side / "kb.away").rename(kb)

        # An index tool is the writer's: a replica offers none, and names its writer when asked for one.
        listed = replicas[0].post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).json()["result"]["tools"]
        assert "index" not in [t["name"] for t in listed]
        refused = replicas[0].post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                    "params": {"name": "index", "arguments": {}}}).json()
        assert url in refused["error"]["message"] and "litestream restore" in refused["error"]["message"]

        # A file added on the writer is searchable on both replicas.
        write(kb, "carbonara.md", CARBONARA)
        indexed = time.monotonic()
        assert not tool(writer, "index", {})["isError"]
        for replica in replicas:
            wait_until(lambda r=replica: "carbonara.md" in search_paths(r, "guanciale pecorino"), timeout=120,
                       what="the new file searchable on a replica")
        print(f"\nindexed on the writer to searchable on both replicas: {time.monotonic() - indexed:.2f} s")

        # The writer killed mid-transaction: the replicas keep answering, consistent, and say how stale they are.
        for number in range(5):
            write(kb, f"more/{number}.md", f"# More {number}\n\nUnfinished business {number}.\n")
        with pytest.raises(httpx2.TransportError):
            writer.post(call("index", {}))
        assert writer.process.wait(60) == -signal.SIGKILL
        for replica in replicas:
            assert "carbonara.md" in search_paths(replica, "guanciale pecorino")
            wait_until(lambda r=replica: r.health()["replication"]["lag_seconds"] == 0.0, timeout=120,
                       what="the replica holding every shipped transaction")
            assert replica.health()["replication"]["newest_change_seconds_ago"] is not None
            assert search_paths(replica, "unfinished business") == []  # nothing of the killed transaction
        for n in (1, 2):
            assert integrity(tmp_path / f"r{n}" / "r.db") == "ok"

        # A replica restarted resumes from the transaction it holds.
        served = replicas[0].health()["replication"]["txid"]
        replicas[0].stop()
        replicas[0] = Server(tmp_path / "r1" / "r.db", "--replica-of", url)
        assert replicas[0].health()["replication"]["txid"] == served
        assert "carbonara.md" in search_paths(replicas[0], "guanciale pecorino")
    finally:
        for server in [writer, *replicas]:
            if server.process.poll() is None:
                server.stop()


@pytest.fixture
def replica_file(tmp_path: Path) -> tuple[Path, str]:
    """A replica's file, restored by a replica server that is stopped again."""
    kb, storage = tmp_path / "kb", tmp_path / "storage"
    write(kb, "storage.md", NOTES)
    setup_workspace(tmp_path / "w.db", "kb", kb)
    url = storage.as_uri()
    done = subprocess.run([str(LITESTREAM), "replicate", "-once", str(tmp_path / "w.db"), url], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (tmp_path / "r").mkdir()
    replica = Server(tmp_path / "r" / "r.db", "--replica-of", url)
    replica.stop()
    return tmp_path / "r" / "r.db", url


def test_a_replicas_file_searches_and_refuses_every_write(replica_file: tuple[Path, str]) -> None:
    db, url = replica_file
    before = db.read_bytes()
    done = autodoc(db, "--call", "workspace.index", '["kb"]')
    error = json.loads(done.stdout)["error"]
    assert done.returncode == 1 and url in error["data"]["reason"]
    assert "litestream restore -o NEW.db" in error["data"]["reason"]
    found = autodoc(db, "--call", "search.query", '["kb", "write-ahead log"]')
    assert found.returncode == 0 and json.loads(found.stdout)["hits"][0]["path"] == "storage.md"
    stdio = StdioServer(db)
    try:
        assert stdio.ask("search.query", ["kb", "write-ahead log"])["result"]["hits"]
        refused = stdio.ask("workspace.add", ["other", str(db.parent)])["error"]
        assert url in refused["data"]["reason"]
    finally:
        stdio.close()
    assert db.read_bytes() == before
    assert not db.with_name("r.db.lease").exists()


def test_bad_replication_settings_are_said_at_start(tmp_path: Path, replica_file: tuple[Path, str]) -> None:
    storage = tmp_path / "storage"
    both = start_fails(tmp_path / "x.db", "--replicate-to", storage.as_uri(), "--replica-of", storage.as_uri())
    assert "exclude each other" in both
    missing = start_fails(tmp_path / "x.db", "--replica-of", storage.as_uri(),
                          env={"AUTODOC_LITESTREAM": str(tmp_path / "no-litestream")})
    assert "pip install 'autodoc[team]'" in missing
    empty = start_fails(tmp_path / "x.db", "--replica-of", (tmp_path / "empty").as_uri())
    assert "nothing is replicated" in empty and not (tmp_path / "x.db").exists()
    not_a_replica = start_fails(tmp_path / "w.db", "--replica-of", storage.as_uri())
    assert "is not a replica" in not_a_replica


def test_a_replica_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    conn = apsw.Connection(str(tmp_path / "old.db"))
    older = f"PRAGMA user_version={SCHEMA_VERSION - 1}"
    for statement in ("PRAGMA journal_mode=WAL", "CREATE TABLE workspaces(id)", older):
        conn.execute(statement).fetchall()
    conn.close()
    url = (tmp_path / "storage").as_uri()
    done = subprocess.run([str(LITESTREAM), "replicate", "-once", str(tmp_path / "old.db"), url],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    said = start_fails(tmp_path / "r.db", "--replica-of", url)
    assert f"schema version {SCHEMA_VERSION - 1}" in said and not (tmp_path / "r.db").exists()


def test_a_writer_that_cannot_reach_its_url_says_so_in_health(tmp_path: Path, kb: Path) -> None:
    write(kb, "storage.md", NOTES)
    setup_workspace(tmp_path / "w.db", "kb", kb)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the storage folder should be")
    writer = Server(tmp_path / "w.db", "--replicate-to", (blocked / "storage").as_uri())
    try:
        error = wait_until(lambda: writer.health()["replication"]["last_error"], timeout=120,
                           what="the replication error in /health")
        assert "blocked" in error or "not a directory" in error
        assert tool(writer, "search", {"query": "gecko"})["structuredContent"]["hits"]  # it serves all the same
    finally:
        writer.stop()


def test_two_workers_answer_32_clients(tmp_path: Path, kb: Path) -> None:
    write(kb, "storage.md", NOTES)
    write(kb, "net/network.md", NETWORK)
    setup_workspace(tmp_path / "a.db", "kb", kb)
    server = Server(tmp_path / "a.db", "--workers", "2")
    try:
        def client(number: int) -> list[int]:
            asked = [call("search", {"query": "gecko snapshot"}, number * 10 + k) for k in range(4)]
            return [server.post(body).status_code for body in asked]

        with ThreadPoolExecutor(32) as pool:
            statuses = [status for answers in pool.map(client, range(32)) for status in answers]
        assert statuses == [200] * 128
        answer = server.post(call("search", {"query": "write-ahead log"}))
        assert answer.json()["result"]["structuredContent"]["hits"][0]["path"] == "storage.md"
    finally:
        server.stop()
        shutil.rmtree(tmp_path / "kb", ignore_errors=True)


def test_the_editor_on_a_replicas_file_searches_and_refuses_to_index(tmp_path: Path, kb: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.nvim import wait_for
    from tests.nvim.plugin import lua, plugin_nvim

    write(kb, "storage.md", NOTES)
    setup_workspace(tmp_path / "w.db", "kb", kb)
    url = (tmp_path / "storage").as_uri()
    done = subprocess.run([str(LITESTREAM), "replicate", "-once", str(tmp_path / "w.db"), url], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    Server(tmp_path / "autodoc.db", "--replica-of", url).stop()  # the editor's database: a replica's file
    before = (tmp_path / "autodoc.db").read_bytes()
    with plugin_nvim(tmp_path, kb, monkeypatch) as nvim:
        wait_for(lambda: lua(nvim, "return require('autodoc').workspaces.kb ~= nil"), what="the workspace known")
        lua(nvim, "_G.answer = nil; local rpc = require('autodoc.rpc'); rpc.request('workspace.index', "
                  "{ 'kb', { wait = 'lexical' } }, function(err) _G.answer = { said = rpc.describe(err) } end)")
        refused = wait_for(lambda: lua(nvim, "return _G.answer"), what="the index run's answer")["said"]
        assert url in refused and "litestream restore -o NEW.db" in refused, refused
        lua(nvim, "_G.found = nil; require('autodoc.rpc').request('search.query', { 'kb', 'write-ahead log' }, "
                  "function(err, r) _G.found = { err = err, r = r } end)")
        found = wait_for(lambda: lua(nvim, "return _G.found"), what="the search's answer")
        assert found["r"]["hits"][0]["path"] == "storage.md", found
    assert (tmp_path / "autodoc.db").read_bytes() == before


def test_workers_default_to_the_number_of_cores(tmp_path: Path, kb: Path) -> None:
    write(kb, "storage.md", NOTES)
    setup_workspace(tmp_path / "a.db", "kb", kb)
    process = subprocess.Popen([sys.executable, "-m", "autodoc_core", "--db", str(tmp_path / "a.db"), "mcp", "--http",
                                "127.0.0.1:0"], cwd=PROJECT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)

    def workers() -> int:
        children = [int(pid) for task in Path(f"/proc/{process.pid}/task").glob("*/children")
                    for pid in task.read_text().split()]
        return sum(b"--worker-socket" in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in children
                   if Path(f"/proc/{pid}/cmdline").exists())

    cores = os.cpu_count() or 1
    try:
        wait_until(lambda: workers() == (cores if cores > 1 else 0), timeout=120, what=f"{cores} workers")
    finally:
        process.terminate()
        process.wait(60)
