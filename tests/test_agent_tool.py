"""`agent.tool`: the MCP tools' answers from an engine that is open already (the editor's agents use it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from autodoc_core.service.engine import Engine
from autodoc_core.surface.mcp import Tools
from autodoc_core.surface.rpc import call


class Handle:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get(self) -> Engine:
        return self.engine

    def file_changed(self) -> None:
        pass


def test_agent_tool_answers_as_the_mcp_search_does(engine: Engine, notes: Path, indexed: Callable[..., dict]) -> None:
    indexed()
    args = {"query": "why did we pick an embedded relational store", "max_tokens": 50}
    answer = call(engine, "agent.tool", ["search", args])
    mcp_result, mcp_text = Tools(Handle(engine), allow_index=False).run("search", args)
    assert answer["is_error"] is False
    assert answer["text"] == mcp_text and answer["result"] == mcp_result  # one text budget, not two
    assert answer["result"]["hits"][0]["path"] == "adr/0002.md"
    assert "adr/0002.md:3-5" in answer["text"]


def test_agent_tool_failures_are_answers_the_model_reads(engine: Engine, notes: Path,
                                                         indexed: Callable[..., dict]) -> None:
    indexed()
    for name, args, expected in (("related", {"path": "adr/none.md"}, "related failed"),
                                 ("search", {"query": "x", "workspace": "nope"}, "search failed"),
                                 ("search", {"query": "x", "limit": 0}, "'limit' must be an integer"),
                                 ("index", {}, "unknown tool 'index'")):
        answer = call(engine, "agent.tool", [name, args])
        assert answer["is_error"] is True and expected in answer["text"], answer["text"]
        assert answer["error"]["fix"] in answer["text"]
