"""``autodoc mcp --http`` servers for the team tests (replicas, workers) and their benchmark: started as
subprocesses on 127.0.0.1, spoken to with plain JSON-RPC over HTTP (not a test module)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx2

from tests.conftest import PROJECT, wait_until

PROTOCOL = "2025-06-18"


class Server:
    """``autodoc --db DB mcp --http 127.0.0.1:0 --workers 1 OPTIONS`` (a later ``--workers`` wins), ready (its index
    open) once constructed."""

    def __init__(self, db: Path, *options: str, env: dict[str, str] | None = None) -> None:
        env = {**{key: value for key, value in os.environ.items() if key != "AUTODOC_MCP_TOKEN"}, **(env or {})}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "autodoc_core", "--db", str(db), "mcp", "--http", "127.0.0.1:0", "--workers", "1",
             *options], cwd=PROJECT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self._listening = threading.Event()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        assert self._listening.wait(120), f"the server never said it listens: {self.lines}"
        self.url = re.search(r"http://\S+/mcp", next(line for line in self.lines if "listening on" in line)).group(0)
        self.base = self.url.removesuffix("/mcp")
        wait_until(lambda: httpx2.get(f"{self.base}/health", timeout=60).json()["ready"], what="the server ready")

    def _read_stderr(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line)
            if "listening on" in line:
                self._listening.set()
        self._listening.set()

    def post(self, body: dict[str, Any], client: httpx2.Client | None = None) -> httpx2.Response:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "MCP-Protocol-Version": PROTOCOL}
        return (client or httpx2).post(self.url, content=json.dumps(body).encode(), headers=headers, timeout=120)

    def health(self) -> dict[str, Any]:
        return httpx2.get(f"{self.base}/health", timeout=60).json()

    def metrics(self) -> str:
        return httpx2.get(f"{self.base}/metrics", timeout=60).text

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(60)


def call(name: str, arguments: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}
