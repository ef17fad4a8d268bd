"""``agent.tool``: an MCP tool answered by an engine that is open already (the editor's), for agents that live in
Neovim (CodeCompanion, avante.nvim). The same handlers as ``autodoc mcp``, so the hits' texts, their token
budget, the notes and the plain-text rendering are the MCP tools' own; only the engine is not opened here.

A failure the agent can act on comes back as an answer with ``is_error`` (the text names the problem and the
fix, as an MCP tool error does), not as a JSON-RPC error: the editor hands that text to the model as is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autodoc_core.errors import CODE_NAMES, AutodocError, from_sqlite, invalid_params

if TYPE_CHECKING:
    from autodoc_core.service.engine import Engine

AGENT_TOOLS = ("search", "related", "read", "documents", "workspaces")


class OpenEngine:
    """The handle the MCP handlers ask for their engine: here the one the caller holds open."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get(self) -> Engine:
        return self.engine

    def file_changed(self) -> None:
        """The editor re-indexes a changed file when it is saved or scanned; nothing to wake here."""


def agent_tool(engine: Engine, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run the MCP tool ``name`` with ``arguments``: ``{is_error, text, result}`` (``result`` the structured
    answer, ``error`` the code, reason and fix when it failed)."""
    from autodoc_core.surface.mcp import Tools  # imports the MCP SDK: kept off the engine's start-up path
    from autodoc_core.surface.mcp_tools import FIXES

    try:
        if name not in AGENT_TOOLS:
            raise invalid_params(f"unknown tool {name!r}; tools: {', '.join(AGENT_TOOLS)}")
        if arguments is not None and not isinstance(arguments, dict):
            raise invalid_params(f"arguments must be an object, got {arguments!r}")
        result, text = Tools(OpenEngine(engine), allow_index=False).run(name, arguments or {})
        return {"is_error": False, "text": text, "result": result}
    except Exception as exc:  # every failure is an answer the agent reads
        known = exc if isinstance(exc, AutodocError) else from_sqlite(exc)
        if known is None:
            raise  # a bug: the caller's error path logs its traceback
        return error_answer(name, known, FIXES.get(known.code, ""))


def error_answer(tool: str, exc: AutodocError, fix: str) -> dict[str, Any]:
    code_name = CODE_NAMES.get(exc.code, "rpc.error")
    text = f"{tool} failed ({exc.code} {code_name}): {exc.reason}. {fix}".rstrip()
    return {"is_error": True, "text": text, "result": None,
            "error": {"code": exc.code, "name": code_name, "reason": exc.reason, "fix": fix}}

