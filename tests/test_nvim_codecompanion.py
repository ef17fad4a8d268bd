"""AutoDoc as a CodeCompanion extension, with the real pinned CodeCompanion (v19.22.0, and plenary.nvim) in a
child Neovim, talking to an OpenAI-compatible stand-in model on 127.0.0.1 (tests/chat_server.py): the model
calls a tool, and the test reads what CodeCompanion sent back to it."""

from __future__ import annotations

import sys
from pathlib import Path

import pynvim

from tests.chat_server import ChatServer, chat_server, text_reply, tool_call
from tests.model_servers import Behaviour, model_server
from tests.nvim import lua_string, neovim, outstanding, wait_for
from tests.nvim.pickers import picker_init, wait_indexed

QUESTION = "why did we pick an embedded relational store"
ADR_LINE = "We keep every workspace in one embedded relational store."
CHANNELS = "return vim.tbl_map(function(c) return c.id end, vim.api.nvim_list_chans())"
HOST_RUNS = """local state
require('autodoc.rpc').request('host.state', {}, function(_, answer) state = answer end)
vim.wait(30000, function() return state ~= nil end)
return state and state.runs"""  # the host's documented read-only state (:help autodoc-host.state)


def codecompanion_setup(server: ChatServer, extension_opts: str = "{}") -> str:
    # extend() replaces the whole opts table: without tools = true no tool is sent to the model.
    return f"""
require('codecompanion').setup({{
  adapters = {{ http = {{ standin = function()
    return require('codecompanion.adapters').extend('openai_compatible', {{
      env = {{ url = {lua_string(server.url)}, api_key = 'none' }},
      schema = {{ model = {{ default = 'standin' }} }},
      opts = {{ stream = false, tools = true }},
    }})
  end }} }},
  interactions = {{ chat = {{ adapter = 'standin' }} }},
  extensions = {{ autodoc = {{ opts = {extension_opts} }} }},
}})
"""


def start(tmp_path: Path, notes: Path, server: ChatServer, *plugins: str, extension_opts: str = "{}"):
    init = picker_init(tmp_path, notes, "plenary.nvim", "codecompanion.nvim", *plugins,
                       after=codecompanion_setup(server, extension_opts))
    return neovim(tmp_path, init)


def ask(nvim: pynvim.Nvim, prompt: str) -> None:
    """Open a chat and send `prompt` as the user would."""
    nvim.exec_lua("""
        vim.cmd('CodeCompanionChat')
        local chat = require('codecompanion').last_chat()
        chat:add_buf_message({ role = 'user', content = ... })
        chat:submit()""", prompt)


def test_the_search_tool_answers_from_the_editors_engine(tmp_path: Path, notes: Path) -> None:
    replies = (tool_call("autodoc_search", {"query": QUESTION}), text_reply("It is in ADR 0002."))
    with chat_server(*replies) as server, start(tmp_path, notes, server) as nvim:
        wait_indexed(nvim)
        approval = "return require('codecompanion.config').interactions.chat.tools.autodoc_search.opts"
        assert nvim.exec_lua(approval)["require_approval_before"] is False  # they only read
        runs_before = nvim.exec_lua(HOST_RUNS)
        channels_before = nvim.exec_lua(CHANNELS)
        ask(nvim, "@{autodoc} " + QUESTION)
        wait_for(lambda: server.tool_messages(), timeout=60)
        offered = {t["function"]["name"]: t["function"]["parameters"] for t in server.requests[0]["tools"]}
        assert sorted(offered) == ["autodoc_documents", "autodoc_read", "autodoc_related", "autodoc_search",
                                   "autodoc_workspaces"]  # the group holds every one
        search = offered["autodoc_search"]  # the MCP tool's own schema, with the workspaces as an enum
        name_or_names = search["properties"]["workspace"]["anyOf"]  # left out: every workspace (WIRE-49)
        assert name_or_names[0]["enum"] == ["kb"] and name_or_names[1]["items"]["enum"] == ["kb"]
        assert offered["autodoc_read"]["properties"]["workspace"]["enum"] == ["kb"]
        assert search["additionalProperties"] is False
        assert {"facets", "paths"} <= set(search["properties"]) and search["properties"]["limit"]["maximum"] == 50
        assert offered["autodoc_workspaces"]["properties"] == {}  # an object, not a list
        sent = "\n".join(str(m.get("content")) for m in server.requests[0]["messages"])
        assert "its workspaces: kb" in sent  # the group's prompt names them
        output = server.tool_messages()[0]["content"]
        assert "adr/0002.md:3-5" in output  # the section's path and line span
        assert ADR_LINE in output  # and its text
        assert "via lexical" in output
        runs = nvim.exec_lua(HOST_RUNS)
        assert runs["agent.tool"] == runs_before.get("agent.tool", 0) + 1  # the editor's own host answered
        assert nvim.exec_lua(CHANNELS) == channels_before  # no second process (a job or a host) for the tool


def test_the_related_tool_and_an_unknown_path_as_a_tool_error(tmp_path: Path, notes: Path) -> None:
    replies = (tool_call("autodoc_related", {"path": "adr/0002.md", "line": 5}, "call_1"), text_reply("ok"),
               tool_call("autodoc_related", {"path": "adr/none.md"}, "call_2"), text_reply("ok"))
    with chat_server(*replies) as server, start(tmp_path, notes, server) as nvim:
        wait_indexed(nvim)
        ask(nvim, "@{autodoc_related} what else is said about the store decision?")
        wait_for(lambda: len(server.tool_messages()) >= 1, timeout=60)
        output = server.tool_messages()[0]["content"]
        assert "related to adr/0002.md" in output
        assert "Keep the index in SQLite › Decision" in output  # the section asked about
        wait_for(lambda: len(server.requests) >= 2, timeout=60)
        nvim.exec_lua("""
            local chat = require('codecompanion').last_chat()
            vim.wait(30000, function() return chat.current_request == nil end)
            chat:add_buf_message({ role = 'user', content = '@{autodoc_related} and this one?' })
            chat:submit()""")
        wait_for(lambda: len(server.tool_messages()) >= 2, timeout=60)
        error = server.tool_messages()[1]["content"]
        assert "related failed" in error and "adr/none.md" in error
        assert nvim.exec_lua("return vim.v.errmsg") == ""  # a tool error, not a Lua error


def test_the_slash_command_puts_chosen_sections_into_the_chat(tmp_path: Path, notes: Path) -> None:
    with chat_server() as server, start(tmp_path, notes, server) as nvim:
        wait_indexed(nvim)
        nvim.exec_lua("vim.cmd('CodeCompanionChat')")
        nvim.exec_lua("""
            local chat = require('codecompanion').last_chat()
            require('codecompanion.interactions.chat.slash_commands').new():execute(
              { label = 'autodoc', config = require('codecompanion.config').interactions.chat.slash_commands.autodoc },
              chat)""")
        wait_for(lambda: nvim.exec_lua("return require('autodoc.picker').state ~= nil"))
        nvim.input("relational store")
        wait_for(lambda: nvim.exec_lua("local s = require('autodoc').picker_state(); "
                                       "return s and #s.hits > 0 and s.hits[1].path == 'adr/0002.md'"))
        nvim.input("<CR>")
        context = wait_for(lambda: nvim.exec_lua(
            "local chat = require('codecompanion').last_chat(); local found = {}; "
            "for _, m in ipairs(chat.messages) do if m.context and m.context.id and m.context.id:find('autodoc') "
            "then table.insert(found, { id = m.context.id, content = m.content }) end end; "
            "return #found > 0 and found"))
        assert context[0]["id"] == "<autodoc>adr/0002.md:3-5</autodoc>"
        assert ADR_LINE in context[0]["content"] and 'lines="3-5"' in context[0]["content"]
        shown = nvim.exec_lua("local chat = require('codecompanion').last_chat(); "
                              "return vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false)")
        assert any("adr/0002.md:3-5" in line for line in shown)  # listed as context in the chat buffer


def test_the_slash_command_with_telescope_takes_several_hits(tmp_path: Path, notes: Path) -> None:
    with chat_server() as server, start(tmp_path, notes, server, "telescope.nvim",
                                        extension_opts="{ provider = 'telescope', require_approval = true }") as nvim:
        nvim.exec_lua("require('telescope').setup({})")
        approval = "return require('codecompanion.config').interactions.chat.tools.autodoc_search.opts"
        assert nvim.exec_lua(approval)["require_approval_before"] is True  # off unless asked (the default test)
        wait_indexed(nvim)
        nvim.exec_lua("vim.cmd('CodeCompanionChat')")
        nvim.exec_lua("""
            local chat = require('codecompanion').last_chat()
            require('codecompanion.interactions.chat.slash_commands').new():execute(
              { label = 'autodoc', config = require('codecompanion.config').interactions.chat.slash_commands.autodoc },
              chat)""")
        wait_for(lambda: nvim.current.buffer.options["filetype"] == "TelescopePrompt")
        nvim.input("store bread")  # any-word: both notes
        picker = "require('telescope.actions.state').get_current_picker(vim.api.nvim_get_current_buf())"
        listed = (f"local p = {picker}; if not (p and p.manager) then return false end; local t = table.concat("
                  "vim.api.nvim_buf_get_lines(p.results_bufnr, 0, -1, false), '\\n'); "
                  "return t:find('adr/0002.md', 1, true) ~= nil and t:find('notes/cooking.md', 1, true) ~= nil")
        # both listed, and no answer still on its way (the final one redraws the list, and the marks with it)
        wait_for(lambda: nvim.exec_lua(listed) and outstanding(nvim) == 0)
        wait_for(lambda: nvim.exec_lua(listed))
        nvim.input("<Tab><Tab><CR>")  # mark two, take them
        ids = wait_for(lambda: nvim.exec_lua(
            "local chat = require('codecompanion').last_chat(); local ids = {}; "
            "for _, m in ipairs(chat.messages) do if m.context and m.context.id and m.context.id:find('autodoc') "
            "then table.insert(ids, m.context.id) end end; return #ids >= 2 and ids"))
        assert sorted(ids) == ["<autodoc>adr/0002.md:3-5</autodoc>", "<autodoc>notes/cooking.md:3-5</autodoc>"]


def test_the_editor_context_shares_the_section_under_the_cursor(tmp_path: Path, notes: Path) -> None:
    with chat_server(text_reply("noted")) as server, start(tmp_path, notes, server) as nvim:
        wait_indexed(nvim)
        nvim.command(f"edit {notes / 'adr' / '0002.md'}")
        nvim.current.window.cursor = (5, 0)
        ask(nvim, "#{autodoc} what does this decide?")
        wait_for(lambda: server.requests, timeout=60)
        sent = "\n".join(str(m.get("content")) for m in server.requests[0]["messages"])
        assert "in the section ADR 0002 Keep the index in SQLite › Decision (adr/0002.md:3-5)" in sent
        assert ADR_LINE in sent
        assert "What else the knowledge base says about it" in sent


def test_avante_tools_answer_through_the_same_engine(tmp_path: Path, notes: Path) -> None:
    with chat_server() as server, start(tmp_path, notes, server) as nvim:
        wait_indexed(nvim)
        nvim.exec_lua("""
            local tools = require('autodoc.agents').avante_tools()
            _G.names = vim.tbl_map(function(t) return t.name end, tools)
            _G.fields = {}
            for _, f in ipairs(tools[1].param.fields) do _G.fields[f.name] = f end
            tools[1].func({ query = ... }, function() end,
              function(result, err) _G.avante = { result = result, err = err or false } end)""",
                      QUESTION)
        answer = wait_for(lambda: nvim.exec_lua("return _G.avante"))
        assert nvim.exec_lua("return _G.names") == ["autodoc_search", "autodoc_related", "autodoc_read",
                                                    "autodoc_documents", "autodoc_workspaces"]
        result = answer["result"]
        assert answer["err"] is False and "adr/0002.md:3-5" in result and ADR_LINE in result
        fields = nvim.exec_lua("return _G.fields")  # the MCP search's arguments, flattened for avante
        assert sorted(fields) == ["facets", "limit", "max_tokens", "paths", "query", "stages", "workspace"]
        assert fields["workspace"]["description"].endswith("; one of kb") and fields["query"]["optional"] is False
        assert fields["facets"]["type"] == "string" and "(as JSON)" in fields["facets"]["description"]
        # the newer calling convention, func(params, { on_complete = ... }), and a sync call without either
        nvim.exec_lua("""
            local tools = require('autodoc.agents').avante_tools()
            tools[2].func({ path = 'adr/none.md' },
              { on_complete = function(r, e) _G.avante2 = { r = r or false, e = e } end })
            _G.sync = { tools[1].func({ query = 'bread' }) }""")
        answer = wait_for(lambda: nvim.exec_lua("return _G.avante2"))
        assert answer["r"] is False and "related failed" in answer["e"]
        assert "notes/cooking.md:3-5" in nvim.exec_lua("return _G.sync[1]")


def test_a_wrong_workspace_is_worded_for_the_tools_the_chat_has(tmp_path: Path, notes: Path) -> None:
    """A wrong workspace name's error told the model to "call the workspaces tool", which CodeCompanion did not
    offer: with autodoc_workspaces offered the fix names it; with only search and related it names the enum."""
    wrong = {"query": "store", "workspace": "nope"}
    replies = (tool_call("autodoc_search", wrong), text_reply("ok"), tool_call("autodoc_workspaces", {}, "call_2"),
               text_reply("ok"))
    with chat_server(*replies) as server, start(tmp_path, notes, server) as nvim:
        wait_indexed(nvim)
        ask(nvim, "@{autodoc} " + QUESTION)
        wait_for(lambda: server.tool_messages(), timeout=60)
        error = server.tool_messages()[0]["content"]
        assert "search failed" in error and "Call the autodoc_workspaces tool for the names" in error
        wait_for(lambda: len(server.requests) >= 2, timeout=60)
        nvim.exec_lua("""
            local chat = require('codecompanion').last_chat()
            vim.wait(30000, function() return chat.current_request == nil end)
            chat:add_buf_message({ role = 'user', content = '@{autodoc} which ones are there?' })
            chat:submit()""")
        wait_for(lambda: len(server.tool_messages()) >= 2, timeout=60)
        assert "- kb: " in server.tool_messages()[1]["content"]  # autodoc_workspaces answered
    replies = (tool_call("autodoc_search", wrong), text_reply("ok"))
    with chat_server(*replies) as server, start(tmp_path, notes, server,
                                                extension_opts="{ tools = { 'search', 'related' } }") as nvim:
        wait_indexed(nvim)
        ask(nvim, "@{autodoc} " + QUESTION)
        wait_for(lambda: server.tool_messages(), timeout=60)
        assert sorted(t["function"]["name"] for t in server.requests[0]["tools"]) == ["autodoc_related",
                                                                                   "autodoc_search"]
        error = server.tool_messages()[0]["content"]
        assert "search failed" in error and "workspaces tool" not in error
        assert "Use a name from the workspace argument's list of values" in error


def test_the_engine_starting_and_no_workspace_are_tool_errors(tmp_path: Path, notes: Path) -> None:
    init = picker_init(tmp_path, notes, "plenary.nvim", "codecompanion.nvim")
    init = init[:init.index("require('autodoc').setup(")]  # set up below, in the same call as the tool's
    with neovim(tmp_path, init) as nvim:
        starting = nvim.exec_lua("""
            require('autodoc').setup({ db = ..., workspaces = {} })
            local answer
            require('autodoc.agents').call('search', { query = 'store' }, function(a) answer = a end)
            return answer""", str(tmp_path / "a.db"))
        assert starting["is_error"] and "still starting" in starting["text"]
        wait_for(lambda: nvim.exec_lua("return require('autodoc').state.phase") == "ready", timeout=60)
        nvim.exec_lua("require('autodoc.agents').call('search', { query = 'store' }, function(a) _G.a = a end)")
        answer = wait_for(lambda: nvim.exec_lua("return _G.a"))
        assert answer["is_error"] and "search failed" in answer["text"] and "no workspace" in answer["text"]


def test_the_mcp_route_through_codecompanions_own_client(tmp_path: Path, notes: Path) -> None:
    """`autodoc mcp` as a CodeCompanion MCP server (no extension): its search tool answers the same stand-in."""
    replies = (tool_call("autodoc_search", {"query": QUESTION}), text_reply("ADR 0002."))
    with chat_server(*replies) as server:
        command = [sys.executable, "-m", "autodoc_core", "--db", str(tmp_path / "a.db"), "mcp"]
        mcp = f"mcp = {{ servers = {{ autodoc = {{ cmd = {{ {', '.join(map(lua_string, command))} }} }} }} }},"
        setup = codecompanion_setup(server).replace("extensions = { autodoc = { opts = {} } },", mcp)
        init = picker_init(tmp_path, notes, "plenary.nvim", "codecompanion.nvim", after=setup)
        with neovim(tmp_path, init) as nvim:
            wait_indexed(nvim)
            nvim.exec_lua("_G.loaded = false; require('codecompanion.mcp').enable_server('autodoc', "
                          "{ on_tools_loaded = function() _G.loaded = true end })")
            wait_for(lambda: nvim.exec_lua("return _G.loaded"), timeout=60)
            ask(nvim, "@{mcp:autodoc} " + QUESTION)  # CodeCompanion names an MCP server's group mcp:NAME
            wait_for(lambda: server.tool_messages(), timeout=60)
            offered = sorted(t["function"]["name"] for t in server.requests[0]["tools"])
            assert "autodoc_search" in offered and "autodoc_related" in offered
            output = server.tool_messages()[0]["content"]
            assert "adr/0002.md:3-5" in output and ADR_LINE in output


def test_the_search_tool_says_when_the_semantic_stage_is_still_filling(tmp_path: Path, notes: Path) -> None:
    """The embedder holds the editor's first batch of vectors: the tool's output begins with how far the semantic
    stage reaches and what to do (the MCP search's own sentence), and the words still find the section."""
    replies = (tool_call("autodoc_search", {"query": QUESTION}), text_reply("ADR 0002."))
    with chat_server(*replies) as server, model_server("tei", Behaviour(hold_after=0)) as tei, \
            start(tmp_path, notes, server) as nvim:
        try:
            wait_indexed(nvim)
            nvim.exec_lua("require('autodoc.rpc').request('workspace.configure', { 'kb', { embedder = { "
                          "provider = 'tei', url = ..., batch_size = 2, timeout = 120 }, semantic_deadline = 60 } }, "
                          "function() end)", tei.url)
            assert tei.behaviour.holding.wait(timeout=60)  # the new model's first batch: no vector yet
            ask(nvim, "@{autodoc} " + QUESTION)
            wait_for(lambda: server.tool_messages(), timeout=60)
            first, *rest = server.tool_messages()[0]["content"].splitlines()
            assert first.startswith("Semantic search ") and " sections so far" in first, first
            assert first.endswith(": a paraphrase may miss sections; try again later or search by words."), first
            assert "adr/0002.md:3-5" in "\n".join(rest)
        finally:
            tei.behaviour.release.set()
