"""``agent.tool``: an MCP tool answered by an engine that is open already (the editor's), for agents that live in
Neovim (CodeCompanion, avante.nvim). The same handlers as ``autodoc mcp``, so the hits' texts, their token
budget, the notes and the plain-text rendering are the MCP tools' own; only the engine is not opened here.

A failure the agent can act on comes back as an answer with ``is_error`` (the text names the problem and the
fix, as an MCP tool error does, worded for the tools the agent has), not as a JSON-RPC error: the editor hands
that text to the model as is.

The editor's tool schemas are the MCP tools' own: ``lua_agent_tools`` writes them as the Lua module
``lua/autodoc/agent_tools.lua`` (tests/test_docs.py checks it is current).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from autodoc_core.errors import AutodocError, from_sqlite, invalid_params
from autodoc_core.surface.tool_errors import tool_error

if TYPE_CHECKING:
    from autodoc_core.service.engine import Engine

AGENT_TOOLS = ("search", "related", "read", "documents", "workspaces")
AGENT_PREFIX = "autodoc_"  # an agent's tools share one namespace: autodoc_search, autodoc_related, ...


class OpenEngine:
    """The handle the MCP handlers ask for their engine: here the one the caller holds open."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get(self) -> Engine:
        return self.engine

    def file_changed(self) -> None:
        """The editor re-indexes a changed file when it is saved or scanned; nothing to wake here."""


def agent_tool(engine: Engine, name: str, arguments: dict[str, Any] | None = None,
               options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run the MCP tool ``name`` with ``arguments``: ``{is_error, text, result}`` (``result`` the structured
    answer, ``error`` the code, reason and fix when it failed). ``options.tools``: the tools the agent has,
    {engine name: its name for the agent}, so that a fix names only those (default: every agent tool)."""
    from autodoc_core.surface.mcp import Tools  # imports the MCP SDK: kept off the engine's start-up path

    offered = _offered(options)
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
        error = tool_error(name, known, offered)
        return {"is_error": True, "text": error.text, "result": None, "error": error.as_dict()}


def _offered(options: Any) -> dict[str, str]:
    tools = options.get("tools") if isinstance(options, dict) else None
    if not isinstance(tools, dict) or not all(isinstance(v, str) for v in tools.values()):
        return {tool: AGENT_PREFIX + tool for tool in AGENT_TOOLS}
    return {tool: agent_name for tool, agent_name in tools.items() if tool in AGENT_TOOLS}


# -- the editor's copy of the tool schemas ------------------------------------------------------------------

LUA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
LUA_KEYWORDS = {"and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
                "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while"}


def lua_value(value: Any, indent: str = "") -> str:
    """``value`` (JSON data) as a Lua expression; an empty object is ``vim.empty_dict()`` so that it goes back
    to the model as ``{}``, not ``[]``."""
    inner = indent + "  "
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "vim.NIL"}[value]
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string without \u escapes is a Lua string too
    if isinstance(value, list):
        if all(isinstance(item, str | int | float) for item in value):
            return "{ " + ", ".join(lua_value(item) for item in value) + " }"
        return "{\n" + "".join(f"{inner}{lua_value(item, inner)},\n" for item in value) + indent + "}"
    if not value:
        return "vim.empty_dict()"
    fields = []
    for key, item in value.items():
        name = key if LUA_NAME.match(key) and key not in LUA_KEYWORDS else f"[{json.dumps(key)}]"
        fields.append(f"{inner}{name} = {lua_value(item, inner)},\n")
    return "{\n" + "".join(fields) + indent + "}"


def lua_agent_tools() -> str:
    """The agent tools (name, the MCP tool, title, description, input schema) as the Lua module
    ``lua/autodoc/agent_tools.lua``: CodeCompanion's and avante's tools are made from it, so they cannot drift
    from the MCP tools."""
    from autodoc_core.surface.mcp_tools import TOOLS

    by_name = {tool.name: tool for tool in TOOLS}
    tools = [{"name": AGENT_PREFIX + name, "tool": name, "title": by_name[name].title,
              "description": by_name[name].description, "parameters": by_name[name].input_schema}
             for name in AGENT_TOOLS]
    return ("-- Generated from autodoc_core/surface/mcp_tools.py (agent_tool.lua_agent_tools): do not edit. "
            "Regenerate with\n"
            "-- python -c 'from autodoc_core.surface.agent_tool import lua_agent_tools; "
            "print(lua_agent_tools(), end=\"\")' > lua/autodoc/agent_tools.lua\n"
            f"return {lua_value(tools)}\n")
