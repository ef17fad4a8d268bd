"""The remote plugin and the Lua side in a real headless Neovim, driven through pynvim."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import write
from tests.nvim import MINIMAL_INIT, child_nvim, embed_with_held_server, outstanding, wait_for
from tests.nvim.plugin import (
    final_answer,
    host_poll,
    index_once,
    list_lines,
    lua,
    picker,
    picker_stages,
    picker_tick,
    ready,
    requested,
    settled,
)


def test_plugin_registers_without_update_remote_plugins(nvim) -> None:
    wait_for(lambda: nvim.funcs.exists("*AutodocRequest") == 1)  # defined once the host runs
    assert nvim.vars.get("autodoc_registration_error") is None
    wait_for(lambda: lua(nvim, "return require('autodoc').workspaces.kb ~= nil"))


def test_requests_answer_asynchronously(nvim) -> None:
    wait_for(lambda: lua(nvim, "return require('autodoc').workspaces.kb ~= nil"))
    index_once(nvim)
    lua(nvim, """
        _G.answer = nil
        require('autodoc.rpc').request('search.query', { 'kb', 'relational store', { stages = { 'lexical' } } },
          function(err, result) _G.answer = { err = err, result = result } end)""")
    answer = wait_for(lambda: lua(nvim, "return _G.answer"))
    assert not answer.get("err")
    assert answer["result"]["hits"][0]["path"] == "adr/0002.md"


def test_errors_reach_the_caller(nvim) -> None:
    lua(nvim, """
        _G.answer = nil
        require('autodoc.rpc').request('search.query', { 'nope', 'x' },
          function(err, result) _G.answer = { err = err } end)""")
    answer = wait_for(lambda: lua(nvim, "return _G.answer"))
    assert answer["err"]["code"] == -32060


def test_an_error_in_an_answer_s_callback_is_said_once_not_lost(nvim) -> None:
    """It went to the Python host's log only (as the failure of the call that delivered the answer)."""
    ready(nvim)
    lua(nvim, "_G.said, _G.calls = {}, 0; vim.notify = function(m) table.insert(_G.said, m) end")
    for _ in range(2):
        lua(nvim, "require('autodoc.rpc').request('search.query', { 'kb', 'bread', { stages = { 'lexical' } } }, "
                  "function() _G.calls = _G.calls + 1; error('boom in the callback') end)")
    wait_for(lambda: lua(nvim, "return _G.calls") == 2)
    said = [m for m in lua(nvim, "return _G.said") if "handling the answer" in m]
    assert len(said) == 1 and said[0].startswith("autodoc: handling the answer to search.query failed: ")
    assert "boom in the callback" in said[0] and "\n" not in said[0]  # one line; the traceback is logged
    log = lua(nvim, "return require('autodoc.rpc').log_path()")
    assert said[0].endswith(f"(traceback in {log})")
    with open(log, encoding="utf-8") as file:
        logged = file.read()
    assert logged.count("boom in the callback") >= 2 and "stack traceback" in logged


def test_picker_searches_as_you_type_and_jumps(nvim) -> None:
    ready(nvim)
    nvim.command("AutodocSearch")
    assert len(lua(nvim, "return vim.tbl_filter(function(w) return vim.api.nvim_win_get_config(w).relative ~= '' "
                         "end, vim.api.nvim_list_wins())")) == 4  # prompt, hits, toggles, preview
    nvim.input("relational store")
    wait_for(lambda: any("adr/0002.md" in line for line in list_lines(nvim)))
    row = list_lines(nvim)[0]  # 80 columns: the breadcrumb loses its middle, the rest shows
    assert row.startswith("adr/0002.md:6-8  ADR 0002 Ke") and "SQLite › Decision  " in row and "…" in row, row
    assert re.search(r"  \d\.\d\d  \[lexical(\+semantic)?\]$", row), row
    toggles = lua(nvim, "local s = require('autodoc.picker').state; "
                        "return vim.api.nvim_buf_get_lines(s.toggles_buf, 0, -1, false)[1]")
    assert toggles.startswith("[x] Lexical  [x] Semantic")
    marks = lua(nvim, "local s = require('autodoc.picker').state; "
                      "return #vim.api.nvim_buf_get_extmarks(s.preview_buf, -1, 0, -1, { details = true })")
    assert marks >= 3  # the span's lines and the query words
    nvim.input("<CR>")
    wait_for(lambda: nvim.current.buffer.name.endswith("adr/0002.md"))
    assert nvim.current.window.cursor[0] == 6  # line_start of the hit


def test_every_message_says_it_is_autodocs_even_for_a_workspace_named_autodoc_something(nvim) -> None:
    said = lua(nvim, """
        local said, notify = {}, vim.notify
        vim.notify = function(message) table.insert(said, message) end
        local state = require('autodoc.state')
        state.notify('autodoc-kb: 8 documents, 26 chunks, semantic ready')
        state.notify('autodoc: already prefixed')
        vim.notify = notify
        return said""")
    assert said == ["autodoc: autodoc-kb: 8 documents, 26 chunks, semantic ready", "autodoc: already prefixed"]


def test_an_index_report_of_one_file_says_file(nvim) -> None:
    text = lua(nvim, "return require('autodoc.progress').report_text('kb', { scanned = 1, added = 1, seconds = 0.1 })")
    assert text == "kb: 1 file scanned, 1 added (0.1 s)"


def test_the_open_picker_fits_the_editor_again_when_it_is_resized(nvim) -> None:
    """A terminal narrowed under an open picker left the side-by-side layout: the preview covered the list."""
    ready(nvim)
    nvim.command("set columns=200 lines=50")
    nvim.command("AutodocSearch")
    nvim.input("relational store")
    wait_for(lambda: any("adr/0002.md" in line for line in list_lines(nvim)))
    wide = list_lines(nvim)[0]
    nvim.command("set columns=80 lines=40")
    geometry = "local s = require('autodoc.picker').state; local l, p = vim.api.nvim_win_get_config(s.list_win), " \
               "vim.api.nvim_win_get_config(s.preview_win); return { l.width, l.row, l.height, p.row, p.width }"
    list_width, list_row, list_height, preview_row, preview_width = wait_for(
        lambda: (lambda g: g if g[0] == 72 else None)(lua(nvim, geometry)), what="the list at 90% of 80 columns")
    assert preview_row > list_row + list_height and preview_width == 72  # the preview under the list, not over it
    narrow = wait_for(lambda: (lambda row: row if row != wide else None)(list_lines(nvim)[0]),
                      what="the rows fitted to the narrower list")
    assert len(narrow) <= list_width and narrow.startswith("adr/0002.md:6-8"), narrow


def test_the_selection_follows_the_first_hit_until_the_user_moves_it(nvim) -> None:
    """The lexical answer comes first, the full one replaces it: the selection stayed on the lexical answer's
    first hit, wherever the full answer ranked it, and Enter opened what it ranked second. The hits are shown
    by the test once the real answers are in (one arriving after them replaced them: a flaky failure)."""
    settled(nvim)
    nvim.command("AutodocSearch")
    nvim.input("store")
    final_answer(nvim, "store")
    selected = "local s = require('autodoc.picker').state; return require('autodoc.picker.render').selected(s).path"
    show = """local s = require('autodoc.picker').state
        local hit = function(path) return { path = path, line_start = 1, line_end = 1, breadcrumb = path } end
        local hits = {}
        for _, path in ipairs({ ... }) do table.insert(hits, hit(path)) end
        require('autodoc.picker.render').answer(s, { hits = hits, semantic = 'off', rank = {} })"""
    lua(nvim, show, "a.md", "b.md")
    lua(nvim, show, "b.md", "a.md")  # the full answer ranks the lexical first hit second
    assert lua(nvim, selected) == "b.md"
    nvim.input("<C-n>")  # the user picks the second hit: a refresh keeps it
    wait_for(lambda: lua(nvim, selected) == "a.md")
    lua(nvim, show, "c.md", "a.md", "b.md")
    assert lua(nvim, selected) == "a.md"
    nvim.input("x")  # another query starts on its first hit again
    final_answer(nvim, "storex")
    lua(nvim, show, "c.md", "a.md")
    assert lua(nvim, selected) == "c.md"


def test_the_list_title_says_what_a_user_needs_to_know(nvim) -> None:
    """No ranker configured is no news ("not re-ranked: no ranker is configured" titled every list of a user
    who never set one up); hits found by meaning alone, for words no section has, are said."""
    title = "return require('autodoc.picker.render').list_title(...)"
    hit = {"path": "a.md", "line_start": 1, "line_end": 1, "breadcrumb": "A", "via": ["lexical", "semantic"]}
    no_ranker = {"state": "off"}
    skipped = {"rerank": "no ranker is configured for this workspace"}
    words = {"hits": [hit], "rank": no_ranker, "query": {"candidates": 4},
             "stages": {"performed": ["lexical", "semantic"], "skipped": skipped}}
    assert lua(nvim, title, words) == " 1 hit "
    guess = {**words, "hits": [{**hit, "via": ["semantic"]}]}
    assert lua(nvim, title, guess) == " 1 hit · no section has these words: by meaning only "
    failed = {**words, "rank": {"state": "error", "error": "the ranker did not answer"}}
    assert lua(nvim, title, failed) == " 1 hit · not re-ranked: the ranker did not answer "
    filling = {**words, "semantic": "partial"}
    assert lua(nvim, title, filling) == " 1 hit · semantic partial "  # the count first: a narrow title keeps it
    switched_off = {**filling, "stages": {"requested": ["lexical"], "performed": ["lexical"]}}
    assert lua(nvim, title, switched_off) == " 1 hit "
    cut = {**words, "query": {"terms": [f"w{i}" for i in range(64)], "terms_left_out": 36}}
    assert lua(nvim, title, cut) == " 1 hit · only the first 64 of 100 terms searched "  # a long paste, cut silently


def test_an_index_run_that_changed_nothing_does_not_search_again(nvim) -> None:
    """A scan for outside changes runs every scan_ms: the open picker searched again after each one (and
    asked a paid ranker again), though nothing had changed."""
    ready(nvim)
    nvim.command("AutodocSearch bread")
    wait_for(lambda: picker(nvim, "answer"))
    before = picker_tick(nvim)
    fire = ("local ws, report = ...; vim.api.nvim_exec_autocmds('User', "
            "{ pattern = 'AutodocIndexed', data = { workspace = ws, report = report } })")
    lua(nvim, fire, "kb", {"added": 0, "changed": 0, "renamed": 0, "deleted": 0})
    lua(nvim, fire, "other", {"added": 1})  # another workspace's files
    assert picker_tick(nvim) == before
    lua(nvim, fire, "kb", {"added": 0, "changed": 1})
    assert picker_tick(nvim) == before + 1


def test_each_workspace_can_be_searched(nvim, tmp_path: Path) -> None:
    """Only the first workspace could be searched from the editor: `:AutodocSearch @name query` picks one, and
    <M-w> moves the open picker round every workspace, then each, with the same query."""
    ready(nvim)
    write(tmp_path / "other", "bread.md", "# Other bread\n\nRye bread from the other folder.\n")
    lua(nvim, "require('autodoc').add_workspace('other', ...)", str(tmp_path / "other"))
    wait_for(lambda: lua(nvim, "return require('autodoc').workspaces.other ~= nil"))
    state = "return require('autodoc').picker_state()"
    nvim.command("AutodocSearch @other bread")
    # 'other' was just added: its index run's end refreshes the open list (asked again), so wait for the list
    # itself rather than for any answer
    wait_for(lambda: [h["path"] for h in (picker(nvim, "hits") or [])] == ["bread.md"])
    shown = lua(nvim, state)
    assert shown["workspace"] == "other" and [h["path"] for h in shown["hits"]] == ["bread.md"]
    assert shown["query"] == "bread"
    nvim.input("<M-w>")  # after the last workspace: every one
    wait_for(lambda: lua(nvim, state)["scope"] == ["kb", "other"]
             and sorted(h["path"] for h in lua(nvim, state)["hits"]) == ["bread.md", "notes/cooking.md"])
    nvim.input("<M-w>")
    wait_for(lambda: lua(nvim, state).get("workspace") == "kb" and lua(nvim, state)["hits"]
             and lua(nvim, state)["hits"][0]["path"] == "notes/cooking.md")
    title = lua(nvim, "return vim.api.nvim_win_get_config(require('autodoc.picker').state.prompt_win).title")
    assert "AutoDoc · kb" in title[0][0]
    assert lua(nvim, "return vim.fn.getcompletion('AutodocSearch @o', 'cmdline')") == ["@other"]
    nvim.input("<Esc>")
    nvim.command("AutodocSearch @decorator usage")  # no workspace: said, and kept on screen, never dropped
    said = "autodoc: no workspace 'decorator' (there are @kb @other; @* is every one)"
    wait_for(lambda: lua(nvim, state) and lua(nvim, state).get("message") == said)
    assert said in lua(nvim, "return vim.fn.execute('messages')")
    assert lua(nvim, state)["hits"] == []


def test_files_with_problems_are_counted_and_listed(nvim, kb: Path) -> None:
    """A binary file, malformed YAML: the index message said only "32 files scanned, 30 changed", and the
    problems could be read only through the command line."""
    ready(nvim)
    wait_for(lambda: lua(nvim, "return _G.autodoc_indexed") >= 1)  # the start-up index ran: the files are new
    write(kb, "broken.md", "---\ntitle: x\ntags: [unclosed\nmore: : here\n---\n# Broken\n\ntext\n")
    write(kb, "binary.md", b"\x00\x01\x02 not text")
    report = index_once(nvim)
    assert len(report["problems"]) == 2
    text = lua(nvim, "return require('autodoc.progress').report_text('kb', ...)", report)
    said = "2 files with problems (:AutodocStatus lists them)"
    assert text.startswith(f"kb: 4 files scanned, 1 added, 1 skipped, {said}")
    # A second run reads only the binary file again; it said "1 with problems" where :AutodocStatus said 2.
    again = index_once(nvim)
    assert len(again["problems"]) == 1 and said in lua(nvim, "return require('autodoc.progress').report_text"
                                                         "('kb', ...)", again)
    nvim.command("AutodocStatus")
    wait_for(lambda: len(nvim.funcs.getqflist()) == 2)
    items = nvim.funcs.getqflist()
    assert sorted(nvim.funcs.bufname(item["bufnr"]).split("/")[-1] for item in items) == ["binary.md", "broken.md"]
    [yaml] = [item for item in items if nvim.funcs.bufname(item["bufnr"]).endswith("broken.md")]
    assert f"line {yaml['lnum']}" in yaml["text"] and yaml["lnum"] > 1, yaml  # it pointed at line 1
    assert yaml["type"] == "W" and not yaml["text"].startswith("warning"), yaml  # shown `|4 warning| warning: ...`
    assert "files with problems: in the quickfix list" in nvim.exec_lua("return vim.fn.execute('messages')")


def test_opening_a_hit_whose_file_was_deleted_says_so_and_updates(nvim, kb: Path) -> None:
    """A file deleted outside Neovim before the next scan: Enter opened an empty new buffer, silently."""
    ready(nvim)
    nvim.command("AutodocSearch bread")
    wait_for(lambda: picker(nvim, "hits") and picker(nvim, "hits")[0]["path"] == "notes/cooking.md")
    (kb / "notes" / "cooking.md").unlink()
    nvim.input("<CR>")
    wait_for(lambda: "notes/cooking.md was deleted since it was indexed" in nvim.exec_lua(
        "return vim.fn.execute('messages')"))
    assert picker(nvim, "query") == "bread"  # the picker stays open
    wait_for(lambda: all(hit["path"] != "notes/cooking.md" for hit in picker(nvim, "hits")))


def test_a_database_given_after_the_engine_opened_is_said_to_wait_for_a_restart(nvim, tmp_path: Path) -> None:
    ready(nvim)
    lua(nvim, "require('autodoc').setup({ db = ..., workspaces = require('autodoc').config.workspaces })",
        str(tmp_path / "other.db"))
    messages = nvim.exec_lua("return vim.fn.execute('messages')")
    assert "autodoc: setup: 'db' takes effect when Neovim restarts (the engine is open already)" in messages
    assert "'python'" not in messages


def test_toggles_change_the_stages_and_persist(nvim) -> None:
    ready(nvim)
    nvim.command("AutodocSearch bread")
    wait_for(lambda: list_lines(nvim) and "notes/cooking.md" in list_lines(nvim)[0])
    nvim.input("<M-s>")
    wait_for(lambda: requested(nvim) and "semantic" not in requested(nvim))
    assert picker_stages(nvim)["semantic"] is False
    nvim.input("<M-l>")  # turning off the last retriever is refused
    assert picker_stages(nvim)["lexical"] is True
    nvim.input("<Esc>")
    nvim.command("AutodocSearch bread")
    assert picker_stages(nvim)["semantic"] is False  # kept across openings (and in stdpath('state'))
    nvim.input("<M-s>")
    assert picker_stages(nvim)["semantic"] is True


def test_a_late_answer_to_an_older_query_never_reaches_the_picker(nvim) -> None:
    """The full search for "bread" is held at the model server while "bread flour" is answered;
    released, its answer arrives last and is dropped. Broken on purpose: without both guards (the
    lane check in rpc._resolve and the picker's `seq` check; either alone suffices) it fails."""
    from tests.model_servers import Behaviour, model_server

    ready(nvim)
    with model_server("tei", Behaviour(hold_texts={"bread"})) as server:
        embed_with_held_server(nvim, server)
        nvim.command("AutodocSearch")
        nvim.input("bread")
        assert server.behaviour.holding.wait(timeout=60)  # the full search for "bread" waits on its embedding
        nvim.input(" flour")
        wait_for(lambda: (picker(nvim, "answer") or {}).get("query", {}).get("terms") == ["bread", "flour"]
                 and "semantic" in picker(nvim, "answer")["stages"]["performed"], timeout=60)
        server.behaviour.release.set()
        wait_for(lambda: outstanding(nvim) == 0, timeout=60)
        assert picker(nvim, "answer")["query"]["terms"] == ["bread", "flour"]
        assert picker(nvim, "query") == "bread flour"


def test_the_host_cancels_a_queued_request_that_a_newer_one_replaced(nvim) -> None:
    """Both host workers are held at the model server; of two requests queued behind them in one
    lane, the older is answered "cancelled" without running (its query is never embedded) and the
    newer runs; the held request in that lane still answers (whether it is wanted is its caller's to judge:
    autodoc.session's tick). Broken on purpose:
    with the host's `_superseded` always False, "salt" is embedded and this fails."""
    from tests.model_servers import Behaviour, model_server

    ready(nvim)
    with model_server("tei", Behaviour(hold_texts={"bread", "yeast"})) as server:
        embed_with_held_server(nvim, server)
        lua(nvim, """
            _G.seen = {}
            local rpc = require('autodoc.rpc')
            local function ask(name, query, stages, lane)
              rpc.request('search.query', { 'kb', query, { stages = stages } },
                function(err) table.insert(_G.seen, name .. (err and ':error' or '')) end, lane)
            end
            _G.ask = ask
            ask('held-x', 'bread', { 'lexical', 'semantic' }, 'x')
            ask('held-y', 'yeast', { 'lexical', 'semantic' }, 'y')""")
        wait_for(lambda: server.behaviour.held == 2, timeout=60)
        lua(nvim, """
            _G.ask('older', 'salt', { 'lexical', 'semantic' }, 'x')
            _G.ask('newer', 'water', { 'lexical' }, 'x')""")
        host_poll(nvim)
        server.behaviour.release.set()
        wait_for(lambda: outstanding(nvim) == 0, timeout=60)
        assert sorted(lua(nvim, "return _G.seen")) == ["held-x", "held-y", "newer"]
        embedded = [t for r in server.behaviour.requests if r["path"] == "/embed" for t in r["body"]["inputs"]]
        assert "salt" not in embedded and "bread" in embedded


def test_checkhealth_reports_host_dependencies_and_workspaces(nvim) -> None:
    ready(nvim)
    index_once(nvim)
    nvim.command("checkhealth autodoc")
    text = "\n".join(nvim.current.buffer[:])
    assert "remote plugin registered" in text
    assert "autodoc_core" in text and "MISSING" not in text
    assert "kb (" in text and "2 documents" in text
    assert "embedder: local:all-MiniLM-L6-v2:384:l2" in text
    assert "onnxruntime " in text and "onnx " in text  # the encoder's dependencies


def test_checkhealth_names_the_encoder_and_its_cached_graph(nvim) -> None:
    from autodoc_core.providers.minilm import default_model_dir
    from autodoc_core.providers.onnx_encoder import OnnxEncoder

    graph = OnnxEncoder(default_model_dir()).graph.path  # written to the cache now, if it was not there
    ready(nvim)
    nvim.command("checkhealth autodoc")
    text = "\n".join(nvim.current.buffer[:])
    assert f"encoder: onnxruntime, graph cached: {graph}" in text


def test_open_picker_and_workspace_add_picker(nvim, tmp_path: Path) -> None:
    ready(nvim)
    title = ("local s = require('autodoc.picker').state; local t = s.list_win and "
             "vim.api.nvim_win_get_config(s.list_win).title; return type(t) == 'table' and t[1][1] or t")
    nvim.command("AutodocOpen")
    nvim.input("keep the index")
    wait_for(lambda: list_lines(nvim) and list_lines(nvim)[0].startswith("adr/0002.md:1-"))
    count = len(list_lines(nvim))
    assert lua(nvim, title).strip() == f"{count} document" + ("s" if count > 1 else "")  # the list's own noun
    nvim.input("<CR>")
    wait_for(lambda: nvim.current.buffer.name.endswith("adr/0002.md"))
    lua(nvim, f"require('autodoc').config.limit = {count - 1}")  # a list cut at its limit says there are more
    nvim.command("AutodocOpen keep the index")
    wait_for(lambda: lua(nvim, title) == f" {count - 1}+ documents ", what="the title of a list cut at its limit")
    nvim.input("<Esc>")
    lua(nvim, f"require('autodoc').config.limit = {count}")  # all of them, and not one more: no '+'
    nvim.command("AutodocOpen keep the index")
    wait_for(lambda: lua(nvim, title) == f" {count} document" + ("s " if count > 1 else " "))
    nvim.input("<Esc>")
    lua(nvim, "require('autodoc').config.limit = 30")
    other = tmp_path / "second-kb"
    write(other, "x.md", "# Second\n\nzebra\n")
    nvim.command(f"AutodocWorkspaceAdd {other}/")
    wait_for(lambda: list_lines(nvim) and str(other) in list_lines(nvim)[0])
    assert "1 Markdown file" in list_lines(nvim)[0] and "1 Markdown files" not in list_lines(nvim)[0]
    assert lua(nvim, title).strip() == "1 folder"
    nvim.input("<CR>")
    wait_for(lambda: lua(nvim, "return require('autodoc').workspaces['second-kb'] ~= nil"))


def test_workspace_add_counts_with_a_bounded_walk(nvim, tmp_path: Path) -> None:
    """The folder list counts Markdown files on the editor's thread at each keystroke: it looks at a
    bounded number of entries (a folder like $HOME used to be walked whole, through node_modules and .git)
    and says "N+" when it stopped early; hidden folders and node_modules are not counted."""
    ready(nvim)
    small = tmp_path / "small-kb"
    write(small, "x.md", "# X\n")
    write(small, "README.MD", "# Upper case, as the indexer counts it\n")
    write(small, "node_modules/pkg/README.md", "# pkg\n")
    write(small, "__pycache__/cached.md", "# skipped by the indexer\n")
    write(small, ".git/notes.md", "# hidden\n")
    write(small, ".draft.md", "# a hidden file, skipped by the indexer\n")
    nvim.command(f"AutodocWorkspaceAdd {small}/")
    wait_for(lambda: list_lines(nvim) and str(small) in list_lines(nvim)[0])
    assert "2 Markdown files" in list_lines(nvim)[0]
    nvim.input("<Esc>")
    big = tmp_path / "big-kb"
    walk = lua(nvim, "return require('autodoc.picker.finder').LIST_WALK")
    for i in range(walk + 50):
        write(big, f"n{i:05}.md", "# n\n")
    nvim.command(f"AutodocWorkspaceAdd {big}/")
    wait_for(lambda: list_lines(nvim) and str(big) in list_lines(nvim)[0])
    assert f"{walk}+ Markdown files" in list_lines(nvim)[0]
    nvim.input("<Esc>")


def test_the_folder_list_walks_a_bounded_total_and_lists_each_folder_once(nvim, tmp_path: Path) -> None:
    """/usr/share/ completes to hundreds of folders, each walked up to LIST_WALK entries at every keystroke:
    the editor froze for a second. The walks share one budget; folders past it show no count. The typed
    folder was listed twice (it is also its own completion), with a line span, relevance and stage."""
    ready(nvim)
    parent = tmp_path / "many"
    walk = lua(nvim, "return require('autodoc.picker.finder').LIST_WALK")
    total = lua(nvim, "return require('autodoc.picker.finder').LIST_WALK_TOTAL")
    folders = total // walk + 3
    for f in range(folders):
        for i in range(walk + 10):
            write(parent / f"kb{f:02}", f"n{i:05}.md", "# n\n")
    nvim.command(f"AutodocWorkspaceAdd {parent}/")
    wait_for(lambda: len(list_lines(nvim)) == folders + 1)  # the typed folder, then its subfolders
    counts = [line.split("  ")[1] for line in list_lines(nvim)]
    assert counts[0].endswith("+ Markdown files") and counts[-1] == "… Markdown files"
    nvim.input("<Esc>")
    nvim.command(f"AutodocWorkspaceAdd {parent}/kb00")
    wait_for(lambda: list_lines(nvim))
    assert list_lines(nvim) == [f"{parent}/kb00  {walk}+ Markdown files"]


def test_preview_of_a_file_that_shrank_since_indexing(nvim, kb: Path) -> None:
    """A hit's file cut short on disk (or deleted) before the next scan: the preview shows what is there
    and keeps the cursor inside it; it used to raise "Cursor position outside buffer"."""
    ready(nvim)
    wait_for(lambda: lua(nvim, "return _G.autodoc_indexed") >= 1)
    nvim.command("AutodocSearch bread")
    wait_for(lambda: list_lines(nvim) and "notes/cooking.md" in list_lines(nvim)[0])
    hit_start = picker(nvim, "hits")[0]["line_start"]
    assert hit_start > 1
    (kb / "notes" / "cooking.md").write_text("# Cooking\n")
    assert lua(nvim, "return pcall(require('autodoc.picker.render').preview, require('autodoc.picker').state)")
    (kb / "notes" / "cooking.md").unlink()  # deleted: the index's copy, at the hit's lines
    assert lua(nvim, "return pcall(require('autodoc.picker.render').preview, require('autodoc.picker').state)")
    shown = lua(nvim, "local s = require('autodoc.picker').state; "
                      "return vim.api.nvim_buf_get_lines(s.preview_buf, 0, -1, false)")
    assert shown[4] == "Flour, water, salt and yeast make bread.", shown
    # a path the index never held has no copy: the preview says it cannot read it
    assert lua(nvim, "local s = require('autodoc.picker').state; local hit = vim.deepcopy(s.session:hits()[1]); "
                     "hit.path = 'notes/never-indexed.md'; "
                     "return require('autodoc.picker.render').preview_lines(hit, s.session:file(hit))[1]"
               ).startswith("cannot read")


def test_an_empty_prompt_shows_no_rerank_box_without_a_ranker(nvim) -> None:
    """The empty prompt's answer (nothing asked) used to mark rerank available: '[x] Rerank' showed with no
    ranker configured, and the next search asked for it. The workspace's status now says."""
    ready(nvim)
    nvim.command("AutodocSearch")
    toggles = "local s = require('autodoc.picker').state; " \
              "return vim.api.nvim_buf_get_lines(s.toggles_buf, 0, -1, false)[1]"
    wait_for(lambda: lua(nvim, "return require('autodoc').picker_state().available.rerank == false"))
    assert "Rerank" not in lua(nvim, toggles)
    nvim.input("bread")
    wait_for(lambda: picker(nvim, "answer") and picker(nvim, "answer").get("hits"))
    nvim.input("<C-u>")
    wait_for(lambda: picker(nvim, "query") == "")
    assert "Rerank" not in lua(nvim, toggles)
    nvim.input("salt")  # the search after the empty prompt
    wait_for(lambda: picker(nvim, "query") == "salt" and picker(nvim, "answer").get("hits"))
    wait_for(lambda: requested(nvim) and "semantic" in requested(nvim))
    assert "rerank" not in requested(nvim)


def test_hidden_stage_cannot_be_flipped_and_choice_survives_a_restart(nvim, tmp_path: Path) -> None:
    ready(nvim)
    nvim.command("AutodocSearch bread")
    wait_for(lambda: picker(nvim, "answer"))
    toggles = lua(nvim, "local s = require('autodoc.picker').state; "
                        "return vim.api.nvim_buf_get_lines(s.toggles_buf, 0, -1, false)[1]")
    assert "Rerank" not in toggles  # no ranker configured: the box is hidden
    nvim.input("<M-r>")
    assert picker_stages(nvim)["rerank"] is True  # unchanged: it comes back as it was left
    nvim.input("<M-s>")
    wait_for(lambda: picker_stages(nvim)["semantic"] is False)
    saved = (tmp_path / "state" / "nvim" / "autodoc" / "stages.json").read_text()
    assert '"semantic":false' in saved.replace(" ", "")
    # a new Neovim with the same state folder reads the kept choice
    with child_nvim("-u", str(MINIMAL_INIT)) as second:
        assert second.exec_lua("return require('autodoc.stages').load()")["semantic"] is False


def test_open_picker_refreshes_when_a_new_model_finishes_filling(nvim) -> None:
    from tests.model_servers import Behaviour, model_server

    ready(nvim)
    index_once(nvim)
    with model_server("tei", Behaviour(delay=1.5)) as server:
        lua(nvim, """
            require('autodoc.rpc').request('workspace.configure',
              { 'kb', { embedder = { provider = 'tei', url = ..., timeout = 10 }, semantic_deadline = 60 } },
              function() require('autodoc').index('kb') end)""", server.url)
        nvim.command("AutodocSearch bread")
        title = lambda: lua(nvim, "local s = require('autodoc.picker').state; "  # noqa: E731
                                  "return s and vim.api.nvim_win_get_config(s.list_win).title[1][1]")
        # while the new model's vectors fill: 'semantic switching', 'semantic partial', or their share, 'semantic 50%'
        wait_for(lambda: re.search(r"semantic (switching|partial|\d+%)", title() or ""))
        # refreshed by itself once the vectors were complete: the full answer (its query embedding
        # takes the slow server's 1.5 s) replaces the lexical one in place
        wait_for(lambda: "semantic" in picker(nvim, "answer")["stages"]["performed"], timeout=60)
        assert picker(nvim, "answer")["semantic"] == "ready" and "semantic" not in title()
        assert "semantic" in picker(nvim, "hits")[0]["via"]


def test_a_saved_edit_is_indexed_on_save(nvim, kb: Path) -> None:
    """The start-up index has finished before the edit, so only the save can index it. Broken on
    purpose: with `index_on_save = false` this times out."""
    ready(nvim)
    wait_for(lambda: lua(nvim, "return _G.autodoc_indexed") >= 1)
    nvim.command(f"edit {kb / 'notes' / 'cooking.md'}")
    nvim.current.buffer.append(["", "Sourdough needs a levain."])
    nvim.command("write")

    def found() -> bool:
        lua(nvim, """_G.found = nil
            require('autodoc.rpc').request('search.query', { 'kb', 'levain', { stages = { 'lexical' } } },
            function(err, r) _G.found = (not err) and #r.hits > 0 end)""")
        wait_for(lambda: lua(nvim, "return _G.found ~= nil"))
        return bool(lua(nvim, "return _G.found"))

    wait_for(found, timeout=60)


def test_a_saved_upper_case_md_file_is_indexed_on_save(nvim, kb: Path) -> None:
    """`PANTRY.MD` is Markdown to the indexer (suffixes compared lower-cased); a case-sensitive `*.md` autocmd
    pattern never saw its save (autodoc.markdown_file is the editor's one rule). The verdict is the save's own
    index run, of that one file: the editor's periodic scan would index it too, but scans every file."""
    ready(nvim)
    wait_for(lambda: lua(nvim, "return _G.autodoc_indexed") >= 1)
    lua(nvim, """_G.one_file_runs = {}
        vim.api.nvim_create_autocmd('User', { pattern = 'AutodocIndexed', callback = function(ev)
          local report = ev.data.report or {}
          if report.scanned == 1 then table.insert(_G.one_file_runs, report) end
        end })""")
    nvim.command(f"edit {kb / 'notes' / 'PANTRY.MD'}")
    nvim.current.buffer[:] = ["# Pantry", "", "## Grains", "", "Keep the quinoa dry."]
    nvim.command("write")
    wait_for(lambda: lua(nvim, "return #_G.one_file_runs") >= 1, timeout=120, what="the save's index run")
    assert lua(nvim, "return _G.one_file_runs[1].added") == 1


def test_quickfix_and_split_keys(nvim) -> None:
    ready(nvim)
    nvim.command("AutodocSearch bread")
    wait_for(lambda: list_lines(nvim) and "notes/cooking.md" in list_lines(nvim)[0])
    nvim.input("<C-q>")
    wait_for(lambda: nvim.funcs.getqflist())
    item = nvim.funcs.getqflist()[0]
    assert item["lnum"] == 3 and "Bread" in item["text"]
    nvim.command("cclose")
    windows = len(nvim.windows)
    nvim.command("AutodocSearch bread")
    wait_for(lambda: list_lines(nvim) and "notes/cooking.md" in list_lines(nvim)[0])
    nvim.input("<C-v>")
    wait_for(lambda: nvim.current.buffer.name.endswith("notes/cooking.md"))
    assert len(nvim.windows) == windows + 1 and nvim.current.window.cursor[0] == 3


@pytest.fixture
def garbage_db(tmp_path: Path) -> Path:
    db = tmp_path / "autodoc.db"  # the path the `nvim` fixture gives the plugin
    db.write_bytes(b"not a database\n" * 100)
    return db


def test_a_database_that_is_not_one_is_one_clear_message(garbage_db: Path, nvim) -> None:
    def messages() -> str:
        return nvim.exec_lua("return vim.api.nvim_exec2('messages', { output = true }).output")

    wait_for(lambda: "not a usable autodoc database" in messages())
    assert str(garbage_db) in messages() and "Traceback" not in messages()
    assert garbage_db.read_bytes() == b"not a database\n" * 100


def test_rerank_and_lexical_toggles_with_a_ranker_configured(nvim) -> None:
    """With a ranker configured the Rerank box shows; <M-r> takes the stage out of the next search and
    back; <M-l> leaves a semantic-only search whose hits all came from the semantic stage."""
    from tests.model_servers import model_server

    ready(nvim)
    with model_server("tei") as server:
        lua(nvim, """
            _G.report = nil
            require('autodoc.rpc').request('workspace.configure',
              { 'kb', { embedder = { provider = 'tei', url = ..., timeout = 60 }, semantic_deadline = 60,
                        ranker = { provider = 'tei', url = ..., timeout = 60 }, rerank_deadline = 60 } },
              function() require('autodoc.rpc').request('workspace.index', { 'kb', { wait = 'semantic' } },
                function(err, r) _G.report = r end) end)""", server.url)
        assert wait_for(lambda: lua(nvim, "return _G.report"), timeout=60)["semantic"] == "ready"
        nvim.command("AutodocSearch bread")

        def performed() -> list[str]:
            answer = picker(nvim, "answer") or {}
            return answer.get("stages", {}).get("performed", [])

        wait_for(lambda: "rerank" in performed(), timeout=60)
        toggles = lua(nvim, "local s = require('autodoc.picker').state; "
                            "return vim.api.nvim_buf_get_lines(s.toggles_buf, 0, -1, false)[1]")
        assert "[x] Rerank" in toggles
        assert picker(nvim, "hits")[0]["path"] == "notes/cooking.md"
        nvim.input("<M-r>")
        wait_for(lambda: requested(nvim) == ["lexical", "semantic"], timeout=60)
        assert "rerank" not in performed() and picker(nvim, "answer")["rank"]["state"] == "not_requested"
        nvim.input("<M-r>")
        wait_for(lambda: "rerank" in performed(), timeout=60)
        nvim.input("<M-l>")
        wait_for(lambda: requested(nvim) == ["semantic", "rerank"], timeout=60)
        assert performed() == ["semantic", "rerank"]
        assert all(hit["via"] == ["semantic", "rank"] for hit in picker(nvim, "hits"))  # found, then re-ranked


def test_the_preview_marks_a_cjk_word_found_inside_a_clause(nvim, kb: Path) -> None:
    ready(nvim)
    write(kb, "zh/storage.md", "# 存储\n\n我们选择 SQLite，因为每个事务都写入预写日志。\n")
    index_once(nvim)
    nvim.command("AutodocSearch")
    nvim.input("事务")
    wait_for(lambda: any("zh/storage.md" in line for line in list_lines(nvim)))
    marked = lua(nvim, """local s = require('autodoc.picker').state
        local found = {}
        for _, m in ipairs(vim.api.nvim_buf_get_extmarks(s.preview_buf, -1, 0, -1, { details = true })) do
          if m[4].hl_group == 'AutodocMatch' then
            local line = vim.api.nvim_buf_get_lines(s.preview_buf, m[2], m[2] + 1, false)[1]
            table.insert(found, line:sub(m[3] + 1, m[4].end_col))
          end
        end
        return found""")
    assert marked == ["事务"]



def test_a_refused_key_s_reason_longer_than_the_list_keeps_its_end(nvim) -> None:
    """The walk at 80 columns: `<M-w>`'s refusal ended `...edit it to search anot` at the footer's edge."""
    ready(nvim)
    nvim.command("AutodocSearch")
    nvim.input("bread")
    wait_for(lambda: picker(nvim, "hits"))
    nvim.input("<M-w>")  # one workspace: nothing to go round
    footer = ("local s = require('autodoc.picker').state; local f = vim.api.nvim_win_get_config(s.list_win).footer; "
              "return { text = type(f) == 'table' and f[1] and f[1][1] or '', width = vim.api.nvim_win_get_width("
              "s.list_win) }")
    shown = wait_for(lambda: (f := lua(nvim, footer))["text"].strip() and f, what="the refusal in the footer")
    assert len(shown["text"]) <= shown["width"] - 2 and "…" in shown["text"], shown
    assert shown["text"].endswith("add another with :AutodocWorkspaceAdd "), shown

def test_the_list_says_what_the_querys_filters_could_not_do(kb: Path, nvim) -> None:
    """`type:adrr store` showed a blank "0 hits" in the picker, where the command line said the value matches no
    document and named the values there are; a misspelt field searched as words said nothing either."""
    write(kb, "adr/0002.md", "---\ntype: adr\nstatus: accepted\n---\n# ADR 2\n\n## Decision\n\n"
                             "We keep one embedded relational store.\n")
    settled(nvim)
    index_once(nvim)
    nvim.command("AutodocSearch")
    nvim.input("type:adrr store")
    title = ("local s = require('autodoc.picker').state; "
             "return s.drawn and require('autodoc.picker.render').list_title(s.drawn)")
    wait_for(lambda: "0 hits: type:'adrr' matches no document" in (lua(nvim, title) or ""), timeout=60,
             what="the filter's problem in the list's title")
    nvim.input("<C-u>statu:accepted store")
    wait_for(lambda: "did you mean status:?" in (lua(nvim, title) or ""), timeout=60, what="the field's hint")
    assert picker(nvim, "hits"), "the words were still searched"
    # At 80 columns the summary is longer than the list's title can show: the title keeps its first parts whole
    # and the footer shows the rest (the walk: "... was searched as word╮").
    border_of = """local s = require('autodoc.picker').state
      local config = vim.api.nvim_win_get_config(s.list_win)
      local function text(chunks) return type(chunks) == 'table' and chunks[1] and chunks[1][1] or '' end
      return { title = text(config.title), footer = text(config.footer), width = config.width }"""
    border = lua(nvim, border_of)
    assert len(border["title"]) <= border["width"] - 2 and re.match(r" \d+ hits? · ", border["title"]), border
    assert len(border["footer"]) <= border["width"] - 2, border  # cut in its middle, its end kept:
    assert border["footer"].endswith("(did you mean status:?) ") and "'statu'" in border["footer"], border
    # The fill's progress draws the title again (autodoc.coverage): the same way, never the whole summary.
    lua(nvim, """require('autodoc.coverage').text({ semantic = 'partial' })
      vim.api.nvim_exec_autocmds('User', { pattern = 'AutodocProgress',
        data = { work = 'embedding', workspace = 'kb', status = 'running', percent = 50 } })""")
    assert lua(nvim, border_of) == border
