"""A failed tool call as the agent reads it, the same for MCP (``autodoc mcp``) and the editor's agents
(``agent.tool``): what went wrong, its code, and the fix, worded for the tools that agent has.

A fix may point at another tool ("call the workspaces tool"); an agent that was not given that tool must not be
sent to it. Each code's fixes are alternatives, most helpful first; ``{tool}`` in one names a tool the agent
must have for it to be said, by the name that agent knows it by (``workspaces`` over MCP, ``autodoc_workspaces``
in CodeCompanion).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autodoc_core.errors import (
    BUSY,
    CODE_NAMES,
    EMBED_FAILED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    IO_ERROR,
    NOT_FOUND,
    OUTSIDE_ROOT,
    SCHEMA_TOO_NEW,
    SWITCHING,
    UNKNOWN_WORKSPACE,
    UNSUPPORTED,
    AutodocError,
)

ADD_A_FOLDER = ("a new folder is added once from a shell: autodoc --call workspace.add "
                "'[\"NAME\", \"/path/to/folder\"]' (in Neovim: :AutodocWorkspaceAdd).")

FIXES: dict[int, tuple[str, ...]] = {
    UNKNOWN_WORKSPACE: (
        "Call the {workspaces} tool for the names; " + ADD_A_FOLDER,
        "Use a name from the workspace argument's list of values, or leave workspace out; " + ADD_A_FOLDER,
    ),
    OUTSIDE_ROOT: (
        "Give the path relative to the workspace root, as {search} returns it (or absolute inside the root; no ..).",
        "Give the path relative to the workspace root (or absolute inside the root; no ..).",
    ),
    NOT_FOUND: (
        "Call {documents} to find the file's path.",
        "Call {search} to find the file's path (a hit's path).",
        "Check the path: it is relative to the workspace root.",
    ),
    INVALID_PARAMS: ("Correct that argument and call again; the tool's input schema lists every argument.",),
    UNSUPPORTED: (
        "Leave stages out (or include \"lexical\") to search by words until an embedding model is configured "
        "and has embedded the documents; the {workspaces} tool shows the progress.",
        "Leave stages out (or include \"lexical\") to search by words until an embedding model is configured "
        "and has embedded the documents.",
    ),
    SWITCHING: (
        "Leave stages out (or include \"lexical\") to search by words meanwhile; the {workspaces} tool shows the "
        "embedding's progress.",
        "Leave stages out (or include \"lexical\") to search by words meanwhile.",
    ),
    EMBED_FAILED: (
        "Include \"lexical\" in stages; the {workspaces} tool shows the embedder's last error.",
        "Include \"lexical\" in stages to search by words.",
    ),
    BUSY: ("Another process is writing the index; call again in a few seconds.",),
    SCHEMA_TOO_NEW: ("Upgrade autodoc, or start the server with --db pointing at another file.",),
    IO_ERROR: ("Check the --db path and its folder's permissions; the next call opens the database again.",),
    INTERNAL_ERROR: ("This is a bug in AutoDoc; the server's stderr has the traceback.",),
}

MCP_NAMES = {name: name for name in ("search", "related", "read", "documents", "workspaces")}  # autodoc mcp's

NAMED_TOOL = re.compile(r"\{(\w+)\}")


def fix_for(code: int, offered: Mapping[str, str]) -> str:
    """The first fix for ``code`` whose tools are all in ``offered`` (engine tool name -> the agent's name)."""
    for fix in FIXES.get(code, ()):
        if all(tool in offered for tool in NAMED_TOOL.findall(fix)):
            return NAMED_TOOL.sub(lambda match: offered[match[1]], fix)
    return ""


@dataclass(frozen=True)
class ToolError:
    """One failed call: ``text`` is what the agent reads; the rest is its data."""

    tool: str
    code: int
    reason: str
    fix: str
    data: dict[str, Any]

    @property
    def name(self) -> str:
        return CODE_NAMES.get(self.code, "rpc.error")

    @property
    def text(self) -> str:
        return f"{self.tool} failed ({self.code} {self.name}): {self.reason}. {self.fix}".rstrip()

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "name": self.name, "reason": self.reason, "fix": self.fix, "data": self.data}


def tool_error(tool: str, exc: AutodocError, offered: Mapping[str, str], fix: str | None = None) -> ToolError:
    """``exc`` from the call of ``tool`` as the agent reads it; ``fix`` when the caller knows a better one."""
    return ToolError(tool, exc.code, exc.reason, fix_for(exc.code, offered) if fix is None else fix, exc.data)
