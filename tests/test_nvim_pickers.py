"""The search as a source of the pickers people already use, each loaded from ../shared/nvim-plugins
(pinned copies, for tests only): stages streamed (lexical first, then the full answer), the hit's
section previewed, and the jump to its line span."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import PROJECT, write
from tests.nvim import lua_string, neovim, python_line, requests_sent, rtp, setup_call, wait_for, wait_semantic_ready
from tests.nvim.pickers import (
    COUNT_INDEXED,
    OPEN,
    RECORD_RESULTS,
    STATE,
    VISIBLE,
    current_file,
    picker_init,
    terminal_lines,
    wait_indexed,
    with_plugins,
)


def test_telescope_streams_previews_and_jumps(tmp_path: Path, notes: Path) -> None:
    wide = "vim.o.columns = 200\nvim.o.lines = 50\n"  # wide enough for telescope to show its previewer
    init = rtp(PROJECT) + with_plugins("plenary.nvim", "telescope.nvim") + python_line() + wide + COUNT_INDEXED + \
        RECORD_RESULTS + setup_call(tmp_path / "a.db", notes) + "\nrequire('telescope').setup({})\n"
    with neovim(tmp_path, init) as nvim:
        wait_indexed(nvim)  # a search before the first index finds nothing to show
        nvim.command("Telescope autodoc")
        wait_for(lambda: nvim.current.buffer.options["filetype"] == "TelescopePrompt")
        nvim.input("relational store")
        picker = "require('telescope.actions.state').get_current_picker(vim.api.nvim_get_current_buf())"
        wait_for(lambda: nvim.exec_lua(f"local s = {STATE}; return s.prompt == 'relational store' "
                                       "and s.level == 'final'"))
        shown = nvim.exec_lua("return _G.results")
        assert shown[-1] == ["relational store", "final"]
        for index, (prompt, level) in enumerate(shown):  # never a lexical-only answer after the full one
            assert not (level == "partial" and [prompt, "final"] in shown[:index])
        lines = wait_for(lambda: [line for line in nvim.exec_lua(
            f"return vim.api.nvim_buf_get_lines({picker}.results_bufnr, 0, -1, false)") if "adr/0002.md:3-5" in line])
        assert "SQLite › Decision  1.00  [lexical" in lines[0]  # the breadcrumb may lose its middle, never its end
        preview = wait_for(lambda: nvim.exec_lua(
            f"local p = {picker}; local b = p.previewer and p.previewer.state and p.previewer.state.bufnr; "
            "return b and vim.api.nvim_buf_get_lines(b, 0, -1, false)"))
        assert "We keep every workspace in one embedded relational store." in preview
        # A file added and indexed asks the prompt again: the prompt read from telescope's prompt buffer, less
        # its prompt_prefix (public fields; telescope's _get_prompt is private).
        asked = len(nvim.exec_lua("return _G.results"))
        write(notes, "notes/pantry.md", "# Pantry\n\nFlour and salt.\n")
        nvim.exec_lua("require('autodoc').index('kb')")
        wait_for(lambda: ["relational store", "final"] in nvim.exec_lua("return _G.results")[asked:], timeout=60)
        assert all(prompt == "relational store" for prompt, _ in nvim.exec_lua("return _G.results")[asked:])
        nvim.input("<CR>")
        wait_for(lambda: current_file(nvim).endswith("adr/0002.md"))
        assert nvim.current.window.cursor[0] == 3


def wait_full_answer(nvim, module: str, prompt: str) -> list:
    wait_for(lambda: nvim.exec_lua(f"local s = {STATE}; return s ~= nil and s.prompt == '{prompt}' "
                                   "and s.level == 'final'"))
    shown = nvim.exec_lua("return _G.results")
    for index, (asked, level) in enumerate(shown):  # never a lexical-only answer after the full one
        assert not (level == "partial" and [asked, "final"] in shown[:index])
    return shown


def test_mini_pick_streams_previews_and_jumps(tmp_path: Path, notes: Path) -> None:
    init = picker_init(tmp_path, notes, "mini.pick", after=OPEN["mini_pick"][1])
    with neovim(tmp_path, init) as nvim:
        wait_indexed(nvim)
        nvim.input(":AutodocPick mini.pick<CR>")  # mini.pick blocks until it closes: never nvim.command
        wait_for(lambda: nvim.exec_lua("return MiniPick.is_picker_active()"))
        nvim.input("relational store")
        wait_full_answer(nvim, "mini_pick", "relational store")
        items = "return vim.tbl_map(function(i) return i.text end, MiniPick.get_picker_items() or {})"
        lines = wait_for(lambda: [line for line in nvim.exec_lua(items) if "adr/0002.md:3-5" in line])
        assert "SQLite › Decision  1.00  [lexical" in lines[0]  # the breadcrumb may lose its middle, never its end
        nvim.input("<Tab>")  # mini.pick's preview
        preview = wait_for(lambda: nvim.exec_lua(
            "local b = MiniPick.get_picker_state().buffers.preview; "
            "return b and vim.api.nvim_buf_is_valid(b) and vim.api.nvim_buf_get_lines(b, 0, -1, false)"))
        assert "We keep every workspace in one embedded relational store." in preview
        nvim.input("<CR>")
        wait_for(lambda: current_file(nvim).endswith("adr/0002.md"))
        assert nvim.current.window.cursor[0] == 3


MINI_PICK_VIEW = ("local s = MiniPick.get_picker_state(); local shown = vim.api.nvim_win_get_buf(s.windows.main); "
                  "return shown == s.buffers.main and 'list' or shown == s.buffers.preview and 'preview' or 'other'")
MINI_PICK_CURRENT = ("local m = MiniPick.get_picker_matches(); local p = require('autodoc').picker_state().previewed; "
                     "return { current = m.current and m.current.hit and m.current.hit.path, "
                     "previewed = p and p.path }")


def test_mini_pick_keeps_an_open_preview_when_the_list_refreshes(tmp_path: Path, notes: Path) -> None:
    """Issue 51 (walk): mini.pick shows its list whenever items are set, so an open preview (<Tab>) gave way to
    the list at every refresh (an index run's, a fill's, a later stage's). It stays, on the current item, until
    the user's own <Tab>."""
    other = tmp_path / "other"  # a second workspace, for <M-w>
    write(other, "store.md", "# Other store\n\nA relational store of another team.\n")
    init = picker_init(tmp_path, notes, "mini.pick", after=OPEN["mini_pick"][1]).replace(
        "name = 'kb', path = ", f"name = 'other', path = {lua_string(other)} }}, {{ name = 'kb', path = ")
    with neovim(tmp_path, init) as nvim:
        wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 2, what="both workspaces indexed")
        wait_semantic_ready(nvim)
        nvim.input(":AutodocPick mini.pick<CR>")  # mini.pick blocks until it closes: never nvim.command
        wait_for(lambda: nvim.exec_lua("return MiniPick.is_picker_active()"))
        nvim.input("relational store")
        wait_full_answer(nvim, "mini_pick", "relational store")
        nvim.input("<Tab>")
        wait_for(lambda: nvim.exec_lua(MINI_PICK_VIEW) == "preview")
        asked = len(nvim.exec_lua("return _G.results"))
        write(notes, "store.md", "# The relational store\n\nThe relational store keeps the relational store.\n")
        nvim.exec_lua("require('autodoc').index('kb')")  # the open list asks again: its items are set anew
        wait_for(lambda: ["relational store", "final"] in nvim.exec_lua("return _G.results")[asked:], timeout=60)
        # the list behind it has the new hit
        wait_for(lambda: "store.md" in (nvim.exec_lua(VISIBLE["mini_pick"]) or [""])[0])
        wait_for(lambda: nvim.exec_lua(MINI_PICK_VIEW) == "preview", what="the preview, open again after the refresh")
        shown = wait_for(lambda: (c := nvim.exec_lua(MINI_PICK_CURRENT))["previewed"] == c["current"] and c)
        assert shown["current"] == "store.md"  # the new current item, previewed
        nvim.input("<Tab>")  # the user's toggle still closes it
        wait_for(lambda: nvim.exec_lua(MINI_PICK_VIEW) == "list")
        nvim.input("<Tab>")
        wait_for(lambda: nvim.exec_lua(MINI_PICK_VIEW) == "preview")
        asked = len(nvim.exec_lua("return _G.results"))
        assert nvim.exec_lua("return MiniPick.get_picker_opts().source.name").startswith("AutoDoc · all")
        nvim.input("<M-w>")  # the next scope (the walk: its list showed, the preview closed)
        wait_for(lambda: nvim.exec_lua("return MiniPick.get_picker_opts().source.name").startswith("AutoDoc · kb"))
        wait_for(lambda: ["relational store", "final"] in nvim.exec_lua("return _G.results")[asked:], timeout=60)
        wait_for(lambda: nvim.exec_lua(MINI_PICK_VIEW) == "preview", what="the preview, open after <M-w>")


def test_snacks_picker_streams_previews_and_jumps(tmp_path: Path, notes: Path) -> None:
    init = picker_init(tmp_path, notes, "snacks.nvim", after=OPEN["snacks"][1])
    with neovim(tmp_path, init) as nvim:
        wait_indexed(nvim)
        nvim.command("AutodocPick snacks")
        picker = "require('snacks').picker.get()[1]"
        wait_for(lambda: nvim.exec_lua(f"return {picker} ~= nil"))
        nvim.input("relational store")
        wait_full_answer(nvim, "snacks", "relational store")
        items = f"return vim.tbl_map(function(i) return i.text end, {picker}:items())"
        lines = wait_for(lambda: [line for line in nvim.exec_lua(items) if "adr/0002.md:3-5" in line])
        assert "SQLite › Decision  1.00  [lexical" in lines[0]  # the breadcrumb may lose its middle, never its end
        listed = wait_for(lambda: [line for line in nvim.exec_lua(
            f"return vim.api.nvim_buf_get_lines({picker}.list.win.buf, 0, -1, false)") if "adr/0002.md:3-5" in line])
        assert listed
        preview = (f"local w = {picker}.preview.win; "
                   "return w:buf_valid() and vim.api.nvim_buf_get_lines(w.buf, 0, -1, false) or {}")
        wait_for(lambda: "We keep every workspace in one embedded relational store." in nvim.exec_lua(preview))
        nvim.input("<CR>")
        wait_for(lambda: current_file(nvim).endswith("adr/0002.md"))
        assert nvim.current.window.cursor[0] == 3


def test_fzf_lua_streams_previews_and_jumps(tmp_path: Path, notes: Path) -> None:
    if shutil.which("fzf") is None:
        pytest.skip("the fzf binary is not installed (apt-get install -y fzf)")
    init = picker_init(tmp_path, notes, "fzf-lua")
    with neovim(tmp_path, init) as nvim:
        wait_indexed(nvim)
        nvim.command("AutodocPick fzf-lua")
        wait_for(lambda: nvim.exec_lua(f"return {STATE} ~= nil"))
        wait_for(lambda: nvim.api.get_mode()["mode"] == "t")
        nvim.input("relational store")
        wait_full_answer(nvim, "fzf_lua", "relational store")
        lines = wait_for(lambda: [line for line in terminal_lines(nvim) if "adr/0002.md:3-5" in line])
        assert "› Decision  1.00  [lexical" in lines[0]  # the breadcrumb lost its middle to fit fzf-lua's float
        preview = ("local p = require('fzf-lua').utils.fzf_winobj()._previewer; "
                   "return p and p.preview_bufnr and vim.api.nvim_buf_is_valid(p.preview_bufnr) "
                   "and vim.api.nvim_buf_get_lines(p.preview_bufnr, 0, -1, false) or {}")
        wait_for(lambda: "We keep every workspace in one embedded relational store." in nvim.exec_lua(preview))
        nvim.input("<CR>")
        wait_for(lambda: current_file(nvim).endswith("adr/0002.md"))
        assert nvim.current.window.cursor[0] == 3


@pytest.mark.parametrize("module", ["telescope", "mini_pick", "snacks", "fzf_lua"])
def test_lexical_hits_show_while_the_full_search_is_held_then_the_list_updates(
        tmp_path: Path, notes: Path, module: str) -> None:
    from tests.model_servers import Behaviour, model_server
    from tests.nvim import embed_with_held_server

    if module == "fzf_lua" and shutil.which("fzf") is None:
        pytest.skip("the fzf binary is not installed (apt-get install -y fzf)")
    *plugins, after = OPEN[module]
    name = {"telescope": "telescope", "mini_pick": "mini.pick", "snacks": "snacks", "fzf_lua": "fzf-lua"}[module]

    def visible() -> list[str]:
        lines = terminal_lines(nvim) if VISIBLE[module] is None else nvim.exec_lua(VISIBLE[module])
        return [line for line in lines if "notes/cooking.md:3-5" in line]

    with neovim(tmp_path, picker_init(tmp_path, notes, *plugins, after=after)) as nvim, \
            model_server("tei", Behaviour(hold_texts={"bread"})) as server:
        wait_indexed(nvim)
        embed_with_held_server(nvim, server)
        nvim.input(f":AutodocPick {name}<CR>")
        wait_for(lambda: nvim.exec_lua(f"return {STATE} ~= nil"))
        nvim.input("bread")
        assert server.behaviour.holding.wait(timeout=60)  # the full search for "bread" waits on its embedding
        lexical = wait_for(visible)
        assert "[lexical]" in lexical[0]
        assert nvim.exec_lua(f"return {STATE}.level") == "partial"
        server.behaviour.release.set()
        wait_full_answer(nvim, module, "bread")
        full = wait_for(lambda: [line for line in visible() if "semantic" in line])
        assert "lexical+semantic" in full[0]
        sent = requests_sent(nvim)  # both lists came from one request per query
        assert "search.query" not in sent and sent["search.stream"] >= 1


@pytest.mark.parametrize("module", ["telescope", "mini_pick", "snacks", "fzf_lua"])
def test_stage_keys_flip_the_stages_inside_each_picker(tmp_path: Path, notes: Path, module: str) -> None:
    if module == "fzf_lua" and shutil.which("fzf") is None:
        pytest.skip("the fzf binary is not installed (apt-get install -y fzf)")
    *plugins, after = OPEN[module]
    name = {"telescope": "telescope", "mini_pick": "mini.pick", "snacks": "snacks", "fzf_lua": "fzf-lua"}[module]
    session = STATE
    init = picker_init(tmp_path, notes, *plugins, after=after).replace(  # a stage may have a list of keys
        "require('autodoc').setup({ ", "require('autodoc').setup({ keys = { toggle_semantic = { '<M-s>', '<M-y>' } }, ")
    with neovim(tmp_path, init) as nvim:
        wait_indexed(nvim)
        wait_semantic_ready(nvim)  # the local model embedded both notes
        nvim.input(f":AutodocPick {name}<CR>")
        wait_for(lambda: nvim.exec_lua(f"return {session} ~= nil"))
        nvim.input("bread")
        wait_full_answer(nvim, module, "bread")
        assert nvim.exec_lua(f"return {session}.performed") == ["lexical", "semantic"]
        nvim.input("<M-s>")
        wait_for(lambda: nvim.exec_lua(f"local s = {session}; return s.stages.semantic == false "
                                       "and s.level == 'final' and #s.performed == 1"))
        assert nvim.exec_lua(f"return {session}.performed") == ["lexical"]
        nvim.input("<M-y>")  # the list's second key
        wait_for(lambda: nvim.exec_lua(f"local s = {session}; return s.stages.semantic "
                                       "and s.level == 'final' and #s.performed == 2"))
        nvim.input("<M-l>")  # lexical off: the semantic stage alone
        wait_for(lambda: nvim.exec_lua(f"local s = {session}; return s.level == 'final' "
                                       "and s.performed[1] == 'semantic'"))
        assert nvim.exec_lua(f"return {session}.stages.lexical") is False


def test_checkhealth_names_the_pickers_that_are_installed(tmp_path: Path, notes: Path) -> None:
    init = picker_init(tmp_path, notes, "mini.pick", "snacks.nvim")
    with neovim(tmp_path, init) as nvim:
        nvim.command("checkhealth autodoc")
        text = "\n".join(nvim.current.buffer[:])
        assert "mini.pick: :AutodocPick mini.pick" in text and "snacks: :AutodocPick snacks" in text
        assert "telescope: not installed" in text and "fzf-lua: not installed" in text


def test_pick_autodoc_is_registered_whenever_the_plugin_loads(tmp_path: Path) -> None:
    """At start-up :Pick autodoc is registered on VimEnter; a plugin manager that loads the plugin later
    (lazy.nvim's cmd or keys) sources plugin/ after VimEnter, which used to leave it unregistered."""
    mini = with_plugins("mini.pick") + "require('mini.pick').setup()\n"
    with neovim(tmp_path, rtp(PROJECT) + mini) as nvim:
        assert nvim.exec_lua("return type(MiniPick.registry.autodoc)") == "function"
    with neovim(tmp_path, mini) as nvim:
        assert nvim.exec_lua("return MiniPick.registry.autodoc") is None
        nvim.exec_lua("vim.opt.runtimepath:prepend(...); vim.cmd('runtime plugin/autodoc.lua')", str(PROJECT))
        assert nvim.exec_lua("return type(MiniPick.registry.autodoc)") == "function"


LONG_FILE = "# Runbook\n\n" + "".join(f"Step {n}: check the dashboards and the alerts.\n\n" for n in range(1, 8)) + \
    "## Lease recovery\n\nThe lease recovery lock is taken again after a crash, once the lease expires.\n\n"
MOVE = {"telescope": ("<Down>", "<Up>"), "mini_pick": ("<C-n>", "<C-p>"), "snacks": ("<Down>", "<Up>"),
        "fzf_lua": ("<Down>", "<Up>")}
ERRORS = "return { vim.v.errmsg, vim.api.nvim_exec2('messages', { output = true }).output }"


def previewed(nvim, module: str) -> dict | None:
    """The hit the source previewed last, and whether its window shows it with the cursor on its span (a
    buffer no longer shown may be wiped already: mini.pick wipes the preview it replaces)."""
    return nvim.exec_lua(
        f"local p = {STATE}.previewed; if not p or not vim.api.nvim_win_is_valid(p.win or -1) then "
        "return nil end; local shown = vim.api.nvim_win_get_buf(p.win) == p.buf; return { path = p.path, "
        "line = p.line, shown = shown, lines = shown and vim.api.nvim_buf_line_count(p.buf) or -1, "
        "cursor = vim.api.nvim_win_get_cursor(p.win)[1] }")


@pytest.mark.parametrize("module", ["telescope", "mini_pick", "snacks", "fzf_lua"])
@pytest.mark.parametrize("termguicolors", [False, True], ids=["notermguicolors", "termguicolors"])
def test_moving_between_a_short_and_a_long_file_previews_each_without_an_error(
        tmp_path: Path, kb: Path, module: str, termguicolors: bool) -> None:
    """Telescope puts a new preview buffer in its window a tick after define_preview: the cursor set at once
    went to the previous, 3-line buffer ("Cursor position outside buffer", then Enter opened the wrong file)."""
    if module == "fzf_lua" and shutil.which("fzf") is None:
        pytest.skip("the fzf binary is not installed (apt-get install -y fzf)")
    write(kb, "short.md", "The lease recovery lock, in short.\nIt is taken again after a crash.\nThat is all.\n")
    write(kb, "runbook.md", LONG_FILE)
    assert LONG_FILE.count("\n") == 20
    *plugins, after = OPEN[module]
    if module == "fzf_lua":
        after = "require('fzf-lua').setup({})\n"  # its previewer shown
    name = {"telescope": "telescope", "mini_pick": "mini.pick", "snacks": "snacks", "fzf_lua": "fzf-lua"}[module]
    init = picker_init(tmp_path, kb, *plugins, after=after + f"vim.o.termguicolors = {str(termguicolors).lower()}\n")
    down, up = MOVE[module]
    with neovim(tmp_path, init) as nvim:
        wait_indexed(nvim)
        if module in ("mini_pick", "snacks"):  # the fill's end refreshes the open list, and the picker may then
            wait_semantic_ready(nvim)  # put its current item back on the first (mini.pick always; snacks once)
        nvim.input(f":AutodocPick {name}<CR>")
        wait_for(lambda: nvim.exec_lua(f"return {STATE} ~= nil"))
        if module == "fzf_lua":
            wait_for(lambda: nvim.api.get_mode()["mode"] == "t")
        nvim.input("lease recovery lock")
        wait_full_answer(nvim, module, "lease recovery lock")
        if module == "mini_pick":
            nvim.input("<Tab>")  # mini.pick shows the preview on demand; moving then keeps it
        seen = set()
        for key in [None, down, up, down, up]:
            before = previewed(nvim, module)
            if key:
                nvim.input(key)
                wait_for(lambda before=before: (previewed(nvim, module) or {}) != before)
            shown = wait_for(lambda: (p := previewed(nvim, module)) and p["shown"] and p["cursor"] == p["line"] and p)
            assert shown["lines"] == {"short.md": 3, "runbook.md": 20}[shown["path"]]
            seen.add(shown["path"])
        assert seen == {"short.md", "runbook.md"}
        errmsg, messages = nvim.exec_lua(ERRORS)
        assert errmsg == "" and "rror" not in messages, messages


def test_the_picker_s_highlights_are_its_own_overridable_and_visible_in_every_colour_mode(
        tmp_path: Path, notes: Path) -> None:
    """The selection used CursorLine, whose default has gui colours only; the preview wrapped mid-word."""
    own = "vim.api.nvim_set_hl(0, 'AutodocMatch', { underline = true })\n"  # a user's own, before plugin/ loads
    init = rtp(PROJECT) + python_line() + own + COUNT_INDEXED + setup_call(tmp_path / "a.db", notes) + "\n"
    with neovim(tmp_path, init) as nvim:
        wait_indexed(nvim)
        nvim.command("AutodocSearch relational store")
        state = "require('autodoc.picker').state"
        wait_for(lambda: nvim.exec_lua(f"local s = {state}; "
                                       "return s and #require('autodoc.picker.render').hits(s) > 0"))
        assert "CursorLine:AutodocSelection" in nvim.exec_lua(f"return vim.wo[{state}.list_win].winhighlight")
        assert nvim.exec_lua(f"local w = {state}.preview_win; return vim.wo[w].linebreak and vim.wo[w].breakindent")
        assert nvim.exec_lua("return vim.api.nvim_get_hl(0, { name = 'AutodocMatch' })").get("underline")  # kept
        for scheme in ("default", "blue", "shine", "quiet"):  # shipped with Neovim; quiet has few colours
            nvim.command(f"colorscheme {scheme}")
            for group in ("AutodocSelection", "AutodocSection"):
                look = nvim.exec_lua(f"return vim.api.nvim_get_hl(0, {{ name = '{group}', link = false }})")
                gui = bool(look.get("bg") or look.get("fg") or look.get("reverse") or look.get("underline"))
                cterm_look = look.get("cterm") or {}
                cterm = bool(look.get("ctermbg") or look.get("ctermfg") or cterm_look.get("reverse")
                             or cterm_look.get("underline") or cterm_look.get("bold"))
                assert gui and cterm, (scheme, group, look)
