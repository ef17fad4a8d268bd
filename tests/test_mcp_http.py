"""`autodoc mcp --http`: a real server on 127.0.0.1, run as a subprocess, spoken to with the MCP SDK's own
Streamable HTTP client, and with plain HTTP requests for what a client library would never send."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from autodoc_core.store.lease import WriterLease
from tests.conftest import PROJECT, wait_until, write
from tests.mcp_corpus import NETWORK, NOTES, file_lines, setup_workspace

TOKEN = "test-token-0123456789abcdef"
PROTOCOL = "2025-06-18"


class Server:
    """``autodoc mcp --http 127.0.0.1:0``; its URL comes from the line it prints once it answers."""

    def __init__(self, db: Path, *options: str, token: str | None = TOKEN) -> None:
        env = {key: value for key, value in os.environ.items() if key != "AUTODOC_MCP_TOKEN"}
        if token is not None:
            env["AUTODOC_MCP_TOKEN"] = token
        self.process = subprocess.Popen(
            [sys.executable, "-m", "autodoc_core", "--db", str(db), "mcp", "--http", "127.0.0.1:0", "--workers", "1",
             *options],
            cwd=PROJECT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        self.lines: list[str] = []
        self._listening = threading.Event()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        assert self._listening.wait(60), f"the server never said it listens: {self.lines}"
        self.url = re.search(r"http://\S+/mcp", next(line for line in self.lines if "listening on" in line)).group(0)
        self.base = self.url.removesuffix("/mcp")
        self.token = token
        wait_until(lambda: httpx2.get(f"{self.base}/health", timeout=60).json()["ready"],  # the index open, the
                   what="the server ready")  # lease tried

    def _read_stderr(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line)
            if "listening on" in line:
                self._listening.set()
        self._listening.set()  # ended without the line: the wait above fails with what it said

    def headers(self, **extra: str) -> dict[str, str]:
        auth = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                "MCP-Protocol-Version": PROTOCOL, **auth, **extra}

    def post(self, body: bytes | dict[str, Any], **headers: str) -> httpx2.Response:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return httpx2.post(self.url, content=content, headers=self.headers(**headers), timeout=60)

    def metric(self, line_start: str) -> float | None:
        text = httpx2.get(f"{self.base}/metrics", headers=self.headers(), timeout=60).text
        for line in text.splitlines():
            if line.startswith(line_start + " "):
                return float(line.rsplit(" ", 1)[1])
        return None

    def wait_for_metric(self, line_start: str, value: float) -> None:
        def reached() -> bool:
            assert self.process.poll() is None, "the server ended"
            return self.metric(line_start) == value

        wait_until(reached, every=0.01, what=f"{line_start} at {value}")

    def health(self) -> dict[str, Any]:
        return httpx2.get(f"{self.base}/health", timeout=60).json()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


@contextmanager
def serving(db: Path, *options: str, token: str | None = TOKEN) -> Iterator[Server]:
    server = Server(db, *options, token=token)
    try:
        yield server
    finally:
        server.stop()


@asynccontextmanager
async def session(server: Server) -> AsyncIterator[ClientSession]:
    auth = {"Authorization": f"Bearer {server.token}"} if server.token else {}
    async with httpx2.AsyncClient(headers=auth, timeout=60) as http, \
            streamable_http_client(server.url, http_client=http) as (read, send), \
            ClientSession(read, send) as client:
        await client.initialize()
        yield client


def talk(server: Server, scenario: Any) -> None:
    async def run() -> None:
        with anyio.fail_after(60):
            async with session(server) as client:
                await scenario(client)

    anyio.run(run)


def search_call(query: str, request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": query}}}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    """One server for the tests that change nothing: a token, the default limits."""
    tmp = tmp_path_factory.mktemp("http")
    kb = tmp / "kb"
    write(kb, "storage.md", NOTES)
    write(kb, "net/network.md", NETWORK)
    setup_workspace(tmp / "a.db", "kb", kb)
    with serving(tmp / "a.db") as server:
        yield server, kb


def test_the_sdk_client_lists_the_tools_and_searches_relates_and_reads(served: tuple[Server, Path]) -> None:
    server, kb = served

    async def scenario(client: ClientSession) -> None:
        tools = sorted(tool.name for tool in (await client.list_tools()).tools)
        assert tools == ["documents", "read", "related", "search", "workspaces"]
        found = await client.call_tool("search", {"query": "write-ahead log snapshot"})
        assert not found.is_error
        top = found.structured_content["hits"][0]
        assert (top["path"], top["breadcrumb"]) == ("storage.md", "Storage › Write-ahead log")
        assert top["text"] == file_lines(kb / "storage.md", top["line_start"], top["line_end"])
        assert "geckos never wait" in found.content[0].text
        related = await client.call_tool("related", {"path": "net/network.md"})
        assert not related.is_error and related.structured_content["path"] == "net/network.md"
        read = await client.call_tool("read", {"path": "net/network.md", "line_start": 3, "line_end": 5})
        assert read.structured_content["text"] == file_lines(kb / "net/network.md", 3, 5)

    talk(server, scenario)
    assert server.metric('autodoc_mcp_tool_calls_total{outcome="ok",tool="search"}') >= 1
    assert server.metric('autodoc_mcp_tool_call_seconds_count{tool="read"}') >= 1


def test_a_request_without_the_token_or_with_another_is_refused_401(served: tuple[Server, Path]) -> None:
    server, _ = served
    missing = httpx2.post(server.url, content=json.dumps(search_call("gecko")), timeout=60,
                          headers={k: v for k, v in server.headers().items() if k != "Authorization"})
    wrong = server.post(search_call("gecko"), Authorization="Bearer " + TOKEN[:-1] + "X")
    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert wrong.headers["www-authenticate"].startswith("Bearer")
    assert TOKEN not in "".join(server.lines)  # never logged
    assert httpx2.get(f"{server.base}/metrics", timeout=60).status_code == 401


def test_a_page_on_another_origin_gets_403_and_the_servers_own_origin_passes(served: tuple[Server, Path]) -> None:
    server, _ = served
    refused = server.post(search_call("gecko"), Origin="http://attacker.example")
    own = server.post(search_call("gecko"), Origin=server.base)
    rebound = server.post(search_call("gecko"), Host="attacker.example")  # a DNS name rebound to 127.0.0.1
    assert (refused.status_code, own.status_code, rebound.status_code) == (403, 200, 421)
    assert own.json()["result"]["structuredContent"]["hits"]


def test_a_body_over_the_limit_gets_413(served: tuple[Server, Path]) -> None:
    server, _ = served
    answer = server.post(search_call("gecko " * 200_000))  # 1.2 MB, over the 1 MiB default
    assert answer.status_code == 413
    assert server.post(search_call("gecko")).status_code == 200


# -- every route's guards, named tokens, the access log ---------------------------------------------------

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef00"


def served_workspace(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    write(kb, "storage.md", NOTES)
    write(kb, "net/network.md", NETWORK)
    setup_workspace(tmp_path / "a.db", "kb", kb)
    return tmp_path / "a.db"


def test_health_and_metrics_refuse_a_rebound_host_and_a_foreign_origin(tmp_path: Path) -> None:
    """`/mcp` gave 421 to a Host it does not answer to, but `/health` answered any Host with the workspace names
    (a page on a DNS name rebound to 127.0.0.1 could read them): every route now applies the same rules."""
    with serving(served_workspace(tmp_path)) as server:
        health = f"{server.base}/health"
        assert httpx2.get(health, timeout=60).json()["workspaces"][0]["name"] == "kb"
        rebound = httpx2.get(health, headers={"Host": "attacker.example"}, timeout=60)
        foreign = httpx2.get(health, headers={"Origin": "http://attacker.example"}, timeout=60)
        assert (rebound.status_code, foreign.status_code) == (421, 403)
        assert "kb" not in rebound.text + foreign.text
        metrics = httpx2.get(f"{server.base}/metrics", headers={**server.headers(), "Host": "attacker.example"},
                             timeout=60)
        assert metrics.status_code == 421
        own = httpx2.get(health, headers={"Origin": server.base}, timeout=60)
        assert own.status_code == 200


def test_named_tokens_each_pass_and_one_taken_out_of_the_file_is_refused_at_once(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# name token\nalice {ALICE}\nbob   {BOB}\n")
    with serving(served_workspace(tmp_path), "--token-file", str(tokens), token=None) as server:
        for token in (ALICE, BOB):
            assert server.post(search_call("gecko"), Authorization=f"Bearer {token}").status_code == 200
        tokens.write_text(f"alice {ALICE}\n")  # bob leaves the team
        assert server.post(search_call("gecko"), Authorization=f"Bearer {BOB}").status_code == 401
        assert server.post(search_call("gecko"), Authorization=f"Bearer {ALICE}").status_code == 200
        tokens.write_text(f"alice {ALICE}\nalice {BOB}\n")  # a mistake: nobody passes, and the log says why
        assert server.post(search_call("gecko"), Authorization=f"Bearer {ALICE}").status_code == 401
        wait_until(lambda: any("the name is given twice" in line for line in server.lines),  # read by a thread
                   what="the log saying why the token file is refused")
    assert ALICE not in "".join(server.lines) and BOB not in "".join(server.lines)


def test_a_token_file_that_is_wrong_is_refused_before_the_server_starts(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {ALICE}\nbob {ALICE}\n")
    done = subprocess.run([sys.executable, "-m", "autodoc_core", "mcp", "--http", "127.0.0.1:0", "--token-file",
                           str(tokens)], cwd=PROJECT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "line 2: the token is given twice" in done.stderr, done.stderr
    assert ALICE not in done.stderr


def test_the_access_log_has_one_line_a_request_and_the_query_only_when_asked(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {ALICE}\n")
    log = tmp_path / "access.log"
    db = served_workspace(tmp_path)
    with serving(db, "--token-file", str(tokens), "--access-log", str(log), token=None) as server:
        assert server.post(search_call("gecko"), Authorization=f"Bearer {ALICE}").status_code == 200
        assert server.post(search_call("gecko"), Authorization=f"Bearer {BOB}").status_code == 401
        assert httpx2.get(f"{server.base}/health", headers={"Host": "attacker.example"}, timeout=60).status_code == 421
    lines = log.read_text().splitlines()
    line = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z client=127\.0\.0\.1:\d+ token=(\S+) path=(\S+) tool=(\S+) " \
           r"status=(\d+) ms=\d+\.\d"
    fields = [re.fullmatch(line, text).groups() for text in lines if "path=/mcp" in text or "status=421" in text]
    assert ("alice", "/mcp", "search", "200") in fields and ("-", "/mcp", "-", "401") in fields
    assert ("-", "/health", "-", "421") in fields
    assert "gecko" not in log.read_text() and ALICE not in log.read_text()
    log.unlink()
    with serving(db, "--token-file", str(tokens), "--access-log", str(log), "--access-log-queries",
                 token=None) as server:
        assert server.post(search_call("gecko"), Authorization=f"Bearer {ALICE}").status_code == 200
    assert any(re.search(r'tool=search status=200 ms=\S+ query="gecko"$', text)
               for text in log.read_text().splitlines()), log.read_text()


def test_health_needs_no_token_and_says_nothing_private(served: tuple[Server, Path]) -> None:
    server, kb = served
    answer = httpx2.get(f"{server.base}/health", timeout=60)
    health = answer.json()
    assert answer.status_code == 200 and health["ready"] is True and health["writer"] == "this process"
    assert [(ws["name"], ws["documents"], ws["semantic"]) for ws in health["workspaces"]] == [("kb", 2, "off")]
    assert str(kb) not in answer.text and str(os.getpid()) not in answer.text


def test_health_says_a_workspace_whose_folder_is_gone(tmp_path: Path) -> None:
    """Without it, /health listed a deleted workspace folder with its counts, as healthy as the others."""
    kb, gone = tmp_path / "kb", tmp_path / "gone"
    write(kb, "storage.md", NOTES)
    write(gone, "net/network.md", NETWORK)
    setup_workspace(tmp_path / "a.db", "kb", kb)
    setup_workspace(tmp_path / "a.db", "gone", gone)
    shutil.rmtree(gone)
    with serving(tmp_path / "a.db") as server:
        answer = httpx2.get(f"{server.base}/health", timeout=60)
        metrics = httpx2.get(f"{server.base}/metrics", headers=server.headers(), timeout=60).text
    folders = {ws["name"]: (ws["folder"], ws["documents"]) for ws in answer.json()["workspaces"]}
    assert folders == {"kb": ("ok", 1), "gone": ("gone", 1)}
    assert str(gone) not in answer.text
    assert 'autodoc_workspace_folder_state{state="gone",workspace="gone"} 1.0' in metrics
    assert 'autodoc_workspace_folder_state{state="ok",workspace="kb"} 1.0' in metrics


def test_metrics_in_prometheus_text_with_the_token(served: tuple[Server, Path]) -> None:
    server, _ = served
    server.post(search_call("gecko"))
    answer = httpx2.get(f"{server.base}/metrics", headers=server.headers(), timeout=60)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = answer.text
    assert "# TYPE autodoc_mcp_tool_call_seconds histogram" in text
    assert re.search(r'autodoc_mcp_tool_call_seconds_bucket\{le="\+Inf",tool="search"\} [1-9]', text)
    assert 'autodoc_workspace_documents{workspace="kb"} 2.0' in text
    assert re.search(r'autodoc_http_responses_total\{status="200"\} [1-9]', text)


def test_a_client_gone_mid_request_leaves_the_server_answering(served: tuple[Server, Path]) -> None:
    server, _ = served
    host, port = server.base.removeprefix("http://").split(":")
    head = "".join(f"{k}: {v}\r\n" for k, v in server.headers(Host=f"{host}:{port}").items())
    whole = json.dumps(search_call("snapshot readers")).encode()
    with socket.create_connection((host, int(port))) as gone_mid_body:
        gone_mid_body.sendall(f"POST /mcp HTTP/1.1\r\n{head}Content-Length: {len(whole)}\r\n\r\n".encode() + whole[:10])
        server.wait_for_metric("autodoc_mcp_requests_in_flight", 1)
    server.wait_for_metric("autodoc_mcp_requests_in_flight", 0)
    calls = 'autodoc_mcp_tool_calls_total{outcome="ok",tool="search"}'
    before = server.metric(calls) or 0
    with socket.create_connection((host, int(port))) as gone_before_answer:
        gone_before_answer.sendall(f"POST /mcp HTTP/1.1\r\n{head}Content-Length: {len(whole)}\r\n\r\n".encode() + whole)
    server.wait_for_metric(calls, before + 1)  # the search ran to its end with nobody to answer
    server.wait_for_metric("autodoc_mcp_requests_in_flight", 0)
    answer = server.post(search_call("snapshot readers"))
    assert answer.status_code == 200 and answer.json()["result"]["structuredContent"]["hits"]


def test_past_the_bound_in_flight_429_with_retry_after_and_past_the_time_limit_a_tool_error(tmp_path: Path,
                                                                                             kb: Path) -> None:
    write(kb, "storage.md", NOTES)
    setup_workspace(tmp_path / "a.db", "kb", kb)
    with serving(tmp_path / "a.db", "--max-in-flight", "1", "--request-seconds", "0.000001") as server:
        host, port = server.base.removeprefix("http://").split(":")
        head = "".join(f"{k}: {v}\r\n" for k, v in server.headers(Host=f"{host}:{port}").items())
        with socket.create_connection((host, int(port))) as slow:  # its body never ends: it stays in flight
            slow.sendall(f"POST /mcp HTTP/1.1\r\n{head}Content-Length: 1000\r\n\r\n{{".encode())
            server.wait_for_metric("autodoc_mcp_requests_in_flight", 1)
            refused = server.post(search_call("gecko"))
            assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
            assert "--max-in-flight" in refused.json()["error"]["message"]
        server.wait_for_metric("autodoc_mcp_requests_in_flight", 0)
        answered = server.post(search_call("gecko"))
        assert answered.status_code == 200 and server.metric('autodoc_http_responses_total{status="429"}') == 1
        result = answered.json()["result"]  # no search answers within a microsecond
        assert result["isError"] is True
        assert "no answer within the server's limit of 1e-06 s" in result["content"][0]["text"]
        assert server.metric('autodoc_mcp_tool_calls_total{outcome="timeout",tool="search"}') == 1


def test_a_non_loopback_address_without_a_token_is_refused_before_binding(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "AUTODOC_MCP_TOKEN"}
    done = subprocess.run([sys.executable, "-m", "autodoc_core", "--db", str(tmp_path / "a.db"), "mcp", "--http",
                           "0.0.0.0:0"], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "refusing to listen on 0.0.0.0:0 without a token" in done.stderr and "--token-file" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "a.db").exists()
    short = tmp_path / "token"
    short.write_text("secret\n")
    done = subprocess.run([sys.executable, "-m", "autodoc_core", "mcp", "--http", "127.0.0.1:0", "--token-file",
                           str(short)], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "at least 16 characters" in done.stderr


def test_with_another_process_writing_it_serves_reads_and_says_so(tmp_path: Path, kb: Path) -> None:
    write(kb, "storage.md", NOTES)
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", kb)
    editor = WriterLease(db, idle_release_seconds=math.inf)
    assert editor.try_acquire()
    try:
        with serving(db, "--scan-seconds", "1") as server:
            assert server.health()["writer"] == "another process"
            assert any("another process" in line and "serves searches" in line for line in server.lines)
            assert server.post(search_call("gecko")).json()["result"]["structuredContent"]["hits"]
            editor.release()
            wait_until(lambda: server.health()["writer"] == "this process",  # its next scan round takes it
                       every=0.05, what="the server taking the lease over")
    finally:
        editor.close()
