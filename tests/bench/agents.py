"""``make bench`` (a step of it): the CodeCompanion tool ``autodoc_search`` answered by the editor's own engine,
next to ``search.query`` over ``serve --stdio``, in the same run on the same database.

Indexes ``shared/data/techdocs`` lexically (embedder "none"), opens a child Neovim with AutoDoc, the pinned
CodeCompanion (and plenary.nvim) with the AutoDoc extension, and an OpenAI-compatible stand-in model on
127.0.0.1 that answers every chat request with a call of ``autodoc_search``. Each techdocs dev query goes, in a
rotating order, to:

- ``serve --stdio``: ``search.query`` as one JSON line (the reference);
- the tool through CodeCompanion: from its ``ToolsStarted`` event to ``ToolsFinished`` (the orchestrator runs
  the tool, the engine answers with the section texts, the output is added to the chat);
- ``require('autodoc.agents').call('search', ...)``: the same request without CodeCompanion.

Also counts the Neovim's channels and Python hosts before and after: the tool starts no second process.
Writes ``doc/benchmarks/agents.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pynvim

from tests.bench.mcp import WORKSPACE, LineClient, autodoc_command, index_techdocs
from tests.bench.retrieval import load_queries, percentile
from tests.chat_server import ChatServer, chat_server, text_reply, tool_call
from tests.nvim import lua_string, neovim, python_line, rtp, wait_for
from tests.nvim.pickers import with_plugins

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 5

TIMING = """
_G.bench = { started = {}, finished = {} }
vim.api.nvim_create_autocmd('User', { pattern = 'CodeCompanionToolsStarted',
  callback = function() table.insert(_G.bench.started, vim.uv.hrtime()) end })
vim.api.nvim_create_autocmd('User', { pattern = 'CodeCompanionToolsFinished',
  callback = function() table.insert(_G.bench.finished, vim.uv.hrtime()) end })
"""


def init_lua(db: Path, server: ChatServer) -> str:
    return rtp(ROOT) + with_plugins("plenary.nvim", "codecompanion.nvim") + python_line() + f"""
require('autodoc').setup({{ db = {lua_string(db)} }})
require('codecompanion').setup({{
  adapters = {{ http = {{ standin = function()
    return require('codecompanion.adapters').extend('openai_compatible', {{
      env = {{ url = {lua_string(server.url)}, api_key = 'none' }},
      schema = {{ model = {{ default = 'standin' }} }},
      opts = {{ stream = false, tools = true }},
    }})
  end }} }},
  interactions = {{ chat = {{ adapter = 'standin' }} }},
  extensions = {{ autodoc = {{ opts = {{}} }} }},
}})
""" + TIMING


def through_codecompanion(nvim: pynvim.Nvim, server: ChatServer, query: str) -> float:
    """One chat turn whose model calls the tool: ms from ToolsStarted to ToolsFinished."""
    server.replies[:] = [tool_call("autodoc_search", {"query": query, "workspace": WORKSPACE, "limit": LIMIT}),
                         text_reply("done")]
    done = len(nvim.exec_lua("return _G.bench.finished"))
    before = len(server.requests)
    nvim.exec_lua("""
        vim.cmd('CodeCompanionChat')
        local chat = require('codecompanion').last_chat()
        chat:add_buf_message({ role = 'user', content = '@{autodoc_search} ' .. ... })
        chat:submit()""", query)
    wait_for(lambda: len(nvim.exec_lua("return _G.bench.finished")) > done, timeout=120)
    wait_for(lambda: len(server.requests) >= before + 2, timeout=120)  # the tool's output went back
    output = [m for m in server.requests[-1]["messages"] if m.get("role") == "tool"][-1]["content"]
    if "failed" in output.split("\n")[0]:
        raise RuntimeError(output)
    started, finished = nvim.exec_lua("return { _G.bench.started[#_G.bench.started], "
                                      "_G.bench.finished[#_G.bench.finished] }")
    nvim.command("silent! bwipeout!")  # the chat: the next turn starts a new one
    return (finished - started) / 1e6


def through_agents(nvim: pynvim.Nvim, query: str) -> float:
    return nvim.exec_lua("""
        local began, answer = vim.uv.hrtime(), nil
        require('autodoc.agents').call('search', { query = ..., workspace = 'techdocs', limit = 5 },
          function(a) answer = a end)
        vim.wait(60000, function() return answer ~= nil end, 1)
        assert(answer and not answer.is_error, answer and answer.text)
        return (vim.uv.hrtime() - began) / 1e6""", query)


def processes(nvim: pynvim.Nvim) -> dict[str, int]:
    return nvim.exec_lua("""
        local hosts = 0
        for _, c in ipairs(vim.api.nvim_list_chans()) do
          if c.client and c.client.type == 'host' then hosts = hosts + 1 end
        end
        return { channels = #vim.api.nvim_list_chans(), hosts = hosts }""")


def measure(db: Path, queries: list[str], rounds: int, work: Path) -> dict[str, Any]:
    stdio = LineClient(autodoc_command(db, "serve", "--stdio"))
    samples: dict[str, list[float]] = {"stdio": [], "codecompanion": [], "agents": []}
    try:
        with chat_server() as server, neovim(work, init_lua(db, server)) as nvim:
            wait_for(lambda: nvim.exec_lua("return require('autodoc').phase") == "ready", timeout=120)

            def over_stdio(query: str) -> float:
                began = time.perf_counter()
                stdio.request("search.query", [WORKSPACE, query, {"limit": LIMIT}])
                return (time.perf_counter() - began) * 1000

            calls = {"stdio": over_stdio, "codecompanion": lambda q: through_codecompanion(nvim, server, q),
                     "agents": lambda q: through_agents(nvim, q)}
            for query in queries[:3]:  # warm: the engine's caches, CodeCompanion's modules, the MCP SDK import
                for call in calls.values():
                    call(query)
            before = processes(nvim)
            names = list(calls)
            for number, query in enumerate(q for _ in range(rounds) for q in queries):
                shift = number % len(names)
                for name in names[shift:] + names[:shift]:
                    samples[name].append(calls[name](query))
            after = processes(nvim)
    finally:
        stdio.close()
    return {"samples": samples, "before": before, "after": after}


def render(corpus: dict[str, Any], queries: int, rounds: int, found: dict[str, Any]) -> list[str]:
    samples = found["samples"]
    reference = statistics.median(samples["stdio"])
    labels = {
        "stdio": "`search.query` over `serve --stdio` (the reference: hits without texts)",
        "codecompanion": "`autodoc_search` through CodeCompanion (ToolsStarted to ToolsFinished)",
        "agents": "`require('autodoc.agents').call('search')` (the same request without CodeCompanion)",
    }
    rows = [f"| {label} | {statistics.median(samples[name]):.2f} | {percentile(samples[name], .95):.2f} | "
            f"{statistics.median(samples[name]) / reference:.2f} |" for name, label in labels.items()]
    before, after = found["before"], found["after"]
    return [
        "# Agents in Neovim: the CodeCompanion tool on the editor's engine",
        "",
        f"Generated by `python -m tests.bench.agents` (a step of `make bench`) on {time.strftime('%Y-%m-%d')}, "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; load average "
        f"{os.getloadavg()[0]:.1f} at the end (other jobs shared the cores: compare the rows, not runs).",
        "",
        f"Corpus: techdocs, {corpus['documents']} documents, {corpus['chunks']} sections, indexed lexically "
        f"(embedder none). {queries} dev queries x {rounds} rounds, limit {LIMIT}, each query to the three paths "
        "in a rotating order, after three warm-up queries.",
        "",
        "| Path | median ms | p95 ms | x reference |",
        "|---|---|---|---|",
        *rows,
        "",
        "The tool's answer also carries each hit's section text (read from its file, within the MCP search's "
        "default 2,000-token budget) and its plain-text rendering, which `search.query` does not; the "
        "CodeCompanion row adds the orchestrator's queue and the chat's tool output.",
        "",
        f"Processes: the child Neovim had {before['channels']} channels and {before['hosts']} remote-plugin "
        f"host(s) before the timed calls and {after['channels']} and {after['hosts']} after: the tool asks the "
        "editor's own engine; it starts no process and loads no model of its own.",
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="doc/benchmarks/agents.md")
    args = parser.parse_args()
    shared = Path(args.shared).resolve()
    queries = [q["query"] for q in load_queries(shared / "eval" / "techdocs-dev.jsonl")]
    work = Path(tempfile.mkdtemp(prefix="autodoc-agents-bench-"))
    try:
        db = work / "bench.db"
        corpus = index_techdocs(db, shared / "data" / "techdocs" / "docs")
        found = measure(db, queries, args.rounds, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = render(corpus, len(queries), args.rounds, found)
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
