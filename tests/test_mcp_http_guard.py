"""`autodoc mcp --http`'s guards on every route, its named tokens and its access log: a real server on 127.0.0.1
(tests/test_mcp_http.Server), plain HTTP requests."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx2

from tests.conftest import PROJECT, write
from tests.mcp_corpus import NETWORK, NOTES, setup_workspace
from tests.test_mcp_http import search_call, serving

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef00"


def workspace(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    write(kb, "storage.md", NOTES)
    write(kb, "net/network.md", NETWORK)
    setup_workspace(tmp_path / "a.db", "kb", kb)
    return tmp_path / "a.db"


def test_health_and_metrics_refuse_a_rebound_host_and_a_foreign_origin(tmp_path: Path) -> None:
    """`/mcp` gave 421 to a Host it does not answer to, but `/health` answered any Host with the workspace names
    (a page on a DNS name rebound to 127.0.0.1 could read them): every route now applies the same rules."""
    with serving(workspace(tmp_path)) as server:
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
    with serving(workspace(tmp_path), "--token-file", str(tokens), token=None) as server:
        for token in (ALICE, BOB):
            assert server.post(search_call("gecko"), Authorization=f"Bearer {token}").status_code == 200
        tokens.write_text(f"alice {ALICE}\n")  # bob leaves the team
        assert server.post(search_call("gecko"), Authorization=f"Bearer {BOB}").status_code == 401
        assert server.post(search_call("gecko"), Authorization=f"Bearer {ALICE}").status_code == 200
        tokens.write_text(f"alice {ALICE}\nalice {BOB}\n")  # a mistake: nobody passes, and the log says why
        assert server.post(search_call("gecko"), Authorization=f"Bearer {ALICE}").status_code == 401
        assert any("the name is given twice" in line for line in server.lines)
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
    db = workspace(tmp_path)
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
