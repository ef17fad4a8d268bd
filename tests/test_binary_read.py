"""A file the indexer skipped as binary is refused by every read, with the indexer's own reason: the MCP ``read``
tool (a real ``autodoc mcp`` server), ``doc.read`` and ``agent.tool`` (the editor's agents). It was read as
pages of U+FFFD, handed to the agent as text with ``is_error`` false."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from autodoc_core.errors import INVALID_PARAMS, AutodocError
from autodoc_core.service.engine import Engine
from autodoc_core.surface.mcp import ERROR_META
from autodoc_core.surface.rpc import call as rpc_call
from tests.conftest import PROJECT, write
from tests.mcp_corpus import NOTES, setup_workspace

BLOB = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 40


@pytest.fixture
def with_blob(kb: Path) -> Path:
    write(kb, "storage.md", NOTES)
    (kb / "diagram.md").write_bytes(BLOB)  # an image saved under a Markdown name
    return kb


def talk(db: Path, log: Path, scenario: Callable[[ClientSession], Awaitable[None]]) -> None:
    """Run ``scenario`` against a real ``autodoc mcp`` server on ``db``, through the MCP SDK's stdio client."""
    params = StdioServerParameters(command=sys.executable, cwd=PROJECT,
                                   args=["-m", "autodoc_core", "--db", str(db), "mcp"])

    async def run() -> None:
        with anyio.fail_after(60), open(log, "a", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, send), ClientSession(read, send) as session:
                await session.initialize()
                await scenario(session)

    anyio.run(run)


def skipped_reason(db: Path) -> str:
    with Engine(db) as engine:
        problems = engine.workspace_status("kb")["problems"]
    [problem] = [p for p in problems if p["path"] == "diagram.md"]
    assert problem["kind"] == "skipped" and "binary" in problem["reason"]
    return problem["reason"]


def test_mcp_read_refuses_a_file_skipped_as_binary(tmp_path: Path, with_blob: Path) -> None:
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", with_blob)
    reason = skipped_reason(db)

    async def scenario(session: ClientSession) -> None:
        refused = await session.call_tool("read", {"path": "diagram.md"})
        assert refused.is_error and refused.structured_content is None
        assert refused.meta[ERROR_META]["code"] == INVALID_PARAMS
        text = refused.content[0].text
        assert reason in text and "diagram.md" in text and "\ufffd" not in text
        still = await session.call_tool("read", {"path": "storage.md"})  # a Markdown file beside it reads as before
        assert not still.is_error and still.structured_content["text"].startswith("---\ntitle: Storage notes")

    talk(db, tmp_path / "server.log", scenario)


def test_doc_read_and_agent_tool_refuse_it_with_the_same_reason(tmp_path: Path, with_blob: Path) -> None:
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", with_blob)
    reason = skipped_reason(db)
    with Engine(db) as engine:
        with pytest.raises(AutodocError) as refused:
            rpc_call(engine, "doc.read", ["kb", "diagram.md"])
        assert refused.value.code == INVALID_PARAMS and reason in refused.value.reason
        answer = rpc_call(engine, "agent.tool", ["read", {"path": "diagram.md"}])
        assert answer["is_error"] is True and answer["result"] is None
        assert reason in answer["text"] and answer["error"]["code"] == INVALID_PARAMS
        assert rpc_call(engine, "doc.read", ["kb", "storage.md"])["text"].startswith("---\ntitle: Storage notes")
