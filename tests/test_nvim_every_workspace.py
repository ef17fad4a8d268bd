"""Related sections over every workspace (issue 49) in a real headless Neovim with two workspaces indexed:
:AutodocRelated, each picker source's `related` and :AutodocRelatedLive list the sections of both, each row
labelled with its workspace, and open the right file; setup({ scope = 'current' }) keeps the buffer's own
workspace, as before. The search itself in every view: tests/test_nvim_views.py."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import PROJECT, write
from tests.nvim import lua_string, neovim, python_line, rtp, wait_for
from tests.nvim.pickers import COUNT_INDEXED, OPEN, STATE, VISIBLE, WIDE, current_file, terminal_lines, with_plugins

ADR = """\
# ADR 0002 Keep the index in SQLite

## Decision

We keep every workspace in one embedded relational store, with a write-ahead log.
"""
JOURNAL = """\
# Journal

## Monday

Read why the team keeps an embedded relational store with a write-ahead log.
"""
ROW = re.compile(r":\d+-\d+  .*\d\.\d\d  \[[A-Za-z+]+\]")


def two_workspaces(tmp_path: Path, scope: str = "all", plugins: tuple[str, ...] = (), after: str = "") -> str:
    write(tmp_path / "kb", "adr/0002.md", ADR)
    write(tmp_path / "kb", "notes/cooking.md", "# Cooking\n\n## Bread\n\nFlour, water, salt and yeast make bread.\n")
    write(tmp_path / "journal", "2026/monday.md", JOURNAL)
    workspaces = (f"{{ {{ name = 'kb', path = {lua_string(tmp_path / 'kb')} }}, "
                  f"{{ name = 'journal', path = {lua_string(tmp_path / 'journal')} }} }}")
    return rtp(PROJECT) + (with_plugins(*plugins) if plugins else "") + python_line() + WIDE + COUNT_INDEXED + \
        f"require('autodoc').setup({{ db = {lua_string(tmp_path / 'a.db')}, scope = '{scope}', related_ms = 0, " \
        f"workspaces = {workspaces} }})\n" + after


def indexed_both(nvim) -> None:
    wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 2)


def open_adr(nvim, tmp_path: Path) -> None:
    nvim.command(f"edit {tmp_path / 'kb' / 'adr' / '0002.md'}")
    nvim.current.window.cursor = (5, 0)


def list_lines(nvim) -> list[str]:
    return nvim.exec_lua("local s = require('autodoc.picker').state; "
                         "return s and vim.api.nvim_buf_get_lines(s.list_buf, 0, -1, false) or {}")


def labels(nvim, buf: str) -> list[str]:
    """The text each AutodocWorkspace mark covers in `buf` (a Lua expression)."""
    return nvim.exec_lua(f"""local buf = {buf}; local out = {{}}
        for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, -1, 0, -1, {{ details = true }})) do
          if m[4].hl_group == 'AutodocWorkspace' then
            local line = vim.api.nvim_buf_get_lines(buf, m[2], m[2] + 1, false)[1]
            table.insert(out, line:sub(m[3] + 1, m[4].end_col))
          end
        end
        return out""")


def test_autodoc_related_lists_every_workspace_s_sections_and_opens_the_right_file(tmp_path: Path) -> None:
    with neovim(tmp_path, two_workspaces(tmp_path)) as nvim:
        indexed_both(nvim)
        open_adr(nvim, tmp_path)
        nvim.command("AutodocRelated")
        row = wait_for(lambda: [line for line in list_lines(nvim) if line.startswith("journal 2026/monday.md:3-5")])
        assert ROW.search(row[0]), row
        state = "require('autodoc.picker').state"
        title = nvim.exec_lua(f"return vim.api.nvim_win_get_config({state}.prompt_win).title[1][1]")
        assert "AutoDoc related · all: journal, kb" in title
        assert "journal" in labels(nvim, f"{state}.list_buf")  # the label in its own highlight group
        nvim.input("<M-w>")  # the related sections of one workspace, the journal: no label
        wait_for(lambda: (lines := list_lines(nvim)) and all(line.startswith("2026/monday.md:") for line in lines)
                 and "AutoDoc related · journal" in nvim.exec_lua(
                     f"return vim.api.nvim_win_get_config({state}.prompt_win).title[1][1]"))
        assert nvim.exec_lua(f"return {STATE}.scope") == ["journal"]
        wait_for(lambda: any("why the team keeps" in line for line in nvim.exec_lua(
            f"return vim.api.nvim_buf_get_lines({state}.preview_buf, 0, -1, false)")))
        nvim.input("<CR>")
        wait_for(lambda: current_file(nvim) == str((tmp_path / "journal" / "2026" / "monday.md").resolve()))
        assert nvim.current.window.cursor[0] == 3


def test_the_current_scope_keeps_the_buffer_s_workspace(tmp_path: Path) -> None:
    with neovim(tmp_path, two_workspaces(tmp_path, scope="current")) as nvim:
        indexed_both(nvim)
        open_adr(nvim, tmp_path)
        nvim.command("AutodocRelated")
        wait_for(lambda: nvim.exec_lua(f"local s = {STATE}; return s and s.level == 'final' and s.related ~= nil"))
        assert nvim.exec_lua(f"return {STATE}.scope") == ["kb"]
        assert not any("monday.md" in line for line in list_lines(nvim))
        nvim.input("<Esc>")
        nvim.command(f"edit {tmp_path / 'journal' / '2026' / 'monday.md'}")  # not the first configured workspace
        nvim.command("AutodocSearch embedded relational store")  # the buffer's workspace: the journal
        wait_for(lambda: nvim.exec_lua(f"local s = {STATE}; return s and s.level == 'final' and s.prompt ~= ''"))
        assert nvim.exec_lua(f"return {STATE}.scope") == ["journal"]
        assert [hit["path"] for hit in nvim.exec_lua(f"return {STATE}.hits")] == ["2026/monday.md"]


def live(nvim, expression: str):
    return nvim.exec_lua(f"local s = require('autodoc.related').live.state; return {expression}")


def test_the_live_list_shows_every_workspace_s_sections_labelled(tmp_path: Path) -> None:
    with neovim(tmp_path, two_workspaces(tmp_path)) as nvim:
        indexed_both(nvim)
        open_adr(nvim, tmp_path)
        nvim.command("AutodocRelatedLive")
        wait_for(lambda: live(nvim, "s and s.shown ~= nil and #s.session:hits() > 0"))
        lines = live(nvim, "vim.api.nvim_buf_get_lines(s.buf, 0, -1, false)")
        assert lines[0].endswith(" · all: journal, kb"), lines[0]  # what is searched, as the picker's title says
        # drawn again at a new width (a walk: it kept the cuts of 80 columns at 200 until the cursor moved)
        width = live(nvim, "vim.api.nvim_win_get_width(s.win)")
        live(nvim, f"vim.api.nvim_win_set_width(s.win, {width // 2})")
        wait_for(lambda: live(nvim, "vim.fn.strdisplaywidth(vim.api.nvim_buf_get_lines(s.buf, 1, 2, false)[1])")
                 <= width // 2)
        row = [line for line in lines if line.startswith("journal 2026/monday.md:3-5")]
        assert row and ROW.search(row[0]), lines
        assert "journal" in labels(nvim, "require('autodoc.related').live.state.buf")
        nvim.exec_lua("vim.api.nvim_set_current_win(require('autodoc.related').live.state.win)")
        nvim.current.window.cursor = (lines.index(row[0]) + 1, 0)
        nvim.input("<CR>")
        wait_for(lambda: current_file(nvim) == str((tmp_path / "journal" / "2026" / "monday.md").resolve()))


@pytest.mark.parametrize("module", ["telescope", "mini_pick", "snacks", "fzf_lua"])
def test_each_picker_source_lists_every_workspace_s_related_sections(tmp_path: Path, module: str) -> None:
    if module == "fzf_lua" and shutil.which("fzf") is None:
        pytest.skip("the fzf binary is not installed (apt-get install -y fzf)")
    *plugins, after = OPEN[module]
    name = {"telescope": "telescope", "mini_pick": "mini.pick", "snacks": "snacks", "fzf_lua": "fzf-lua"}[module]

    def journal_rows() -> list[str]:
        lines = terminal_lines(nvim) if VISIBLE[module] is None else nvim.exec_lua(VISIBLE[module])
        return [line for line in lines if "journal 2026/monday.md:3-5" in line]

    with neovim(tmp_path, two_workspaces(tmp_path, plugins=tuple(plugins), after=after)) as nvim:
        indexed_both(nvim)
        open_adr(nvim, tmp_path)
        nvim.input(f":AutodocPick {name} related<CR>")  # mini.pick blocks until it closes: never nvim.command
        wait_for(lambda: nvim.exec_lua(f"local s = {STATE}; return s ~= nil and s.related ~= nil "
                                       "and s.level == 'final'"))
        assert nvim.exec_lua(f"return {STATE}.scope") == ["journal", "kb"]
        assert ROW.search(wait_for(journal_rows)[0])
        hits = nvim.exec_lua(f"return vim.tbl_map(function(h) return h.workspace end, {STATE}.hits)")
        if module == "mini_pick":
            nvim.exec_lua(f"MiniPick.set_picker_match_inds({{ {hits.index('journal') + 1} }})")
        else:
            nvim.input("monday")  # the prompt narrows the list to the journal's section
            wait_for(lambda: nvim.exec_lua(f"local s = {STATE}; return s.prompt == 'monday' and #s.hits == 1"))
            wait_for(lambda: len(journal_rows()) == 1)
        nvim.input("<CR>")
        wait_for(lambda: current_file(nvim) == str((tmp_path / "journal" / "2026" / "monday.md").resolve()))
        assert nvim.current.window.cursor[0] == 3


LIST_BUF = {
    "telescope": "require('telescope.actions.state').get_current_picker(vim.api.nvim_get_current_buf()).results_bufnr",
    "snacks": "require('snacks').picker.get()[1].list.win.buf",
    "mini_pick": "MiniPick.get_picker_state().buffers.main",
}


@pytest.mark.parametrize("module", ["telescope", "snacks", "mini_pick"])
def test_each_picker_source_draws_the_workspace_label_in_its_highlight(tmp_path: Path, module: str) -> None:
    """The label is AutodocWorkspace in every source's list (fzf-lua's, a terminal's: tests/test_nvim_tmux.py)."""
    *plugins, after = OPEN[module]
    name = {"telescope": "telescope", "mini_pick": "mini.pick", "snacks": "snacks"}[module]
    with neovim(tmp_path, two_workspaces(tmp_path, plugins=tuple(plugins), after=after)) as nvim:
        indexed_both(nvim)
        nvim.input(f":AutodocPick {name} relational store<CR>")  # mini.pick blocks: never nvim.command
        wait_for(lambda: nvim.exec_lua(f"local s = {STATE}; return s ~= nil and s.level == 'final' and #s.hits >= 2"))
        assert wait_for(lambda: sorted(set(labels(nvim, LIST_BUF[module])))) == ["journal", "kb     "]


def test_the_next_workspace_asks_every_checked_stage_it_can_run(tmp_path: Path) -> None:
    """<M-w> from a workspace without a ranker to one with: the first search there asks for Rerank (what the
    workspace can run is learnt anew for it), never the stages the workspace left behind could run."""
    from tests.model_servers import model_server

    with neovim(tmp_path, two_workspaces(tmp_path)) as nvim, model_server("tei") as server:
        indexed_both(nvim)
        nvim.exec_lua("""_G.configured = false
            require('autodoc.rpc').request('workspace.configure',
              { 'kb', { ranker = { provider = 'tei', url = ... } } }, function() _G.configured = true end)
            require('autodoc.stages').save({ lexical = true, semantic = false, rerank = true })""", server.url)
        wait_for(lambda: nvim.exec_lua("return _G.configured"))
        nvim.exec_lua("require('autodoc').pick({ scope = 'journal', query = 'relational store' })")
        wait_for(lambda: nvim.exec_lua(f"local s = {STATE}; return s ~= nil and s.level == 'final' "
                                       "and s.scope[1] == 'journal' and s.available.rerank == false"))
        nvim.input("<M-w>")
        shown = wait_for(lambda: nvim.exec_lua(f"local s = {STATE}; return s.level == 'final' "
                                               "and s.scope[1] == 'kb' and s"))
        assert "rerank" in shown["requested"], shown


def test_the_documents_list_of_both_workspaces_follows_their_index(tmp_path: Path) -> None:
    """:AutodocOpen over every workspace is a documents session: both workspaces' documents, labelled; a note
    indexed in one of them is listed when its AutodocIndexed comes (the session's refresh: the picker's own
    autocmd is gone), and `@kb` in the prompt lists kb's alone."""
    title = "return vim.api.nvim_win_get_config(require('autodoc.picker').state.prompt_win).title[1][1]"
    with neovim(tmp_path, two_workspaces(tmp_path)) as nvim:
        indexed_both(nvim)
        nvim.command("AutodocOpen")
        wait_for(lambda: any(line.startswith("journal 2026/monday.md:1-") for line in list_lines(nvim))
                 and any(line.startswith("kb      adr/0002.md:1-") for line in list_lines(nvim)))
        assert nvim.exec_lua(title) == " AutoDoc open · all: journal, kb "
        assert "journal" in labels(nvim, "require('autodoc.picker').state.list_buf")
        write(tmp_path / "journal", "2026/tuesday.md", "# Tuesday\n\nA new note.\n")
        nvim.command("AutodocIndex journal")
        wait_for(lambda: any(line.startswith("journal 2026/tuesday.md:1-") for line in list_lines(nvim)),
                 timeout=60)
        nvim.input("@kb ")
        wait_for(lambda: nvim.exec_lua(title) == " AutoDoc open · kb " and list_lines(nvim)
                 and all(line.startswith(("adr/", "notes/")) for line in list_lines(nvim)), timeout=60)
        assert nvim.exec_lua(f"return {STATE}.scope") == ["kb"]


def test_a_workspace_another_process_adds_is_searched_by_name_and_counted(tmp_path: Path) -> None:
    """A walk: a workspace added from a shell while the editor ran was searched by `@*` (the engine knows it) but
    `@name` said there was no such workspace and the title counted the ones the editor had started with."""
    from autodoc_core.service.engine import Engine

    with neovim(tmp_path, two_workspaces(tmp_path)) as nvim:
        indexed_both(nvim)
        write(tmp_path / "later", "sourdough.md", "# Sourdough\n\nA starter of rye flour keeps for years.\n")
        with Engine(tmp_path / "a.db") as engine:
            engine.workspace_add("later", str(tmp_path / "later"))
            engine.workspace_configure("later", {"embedder": "none"})
            engine.workspace_index("later", lease_wait=60)
        nvim.command("AutodocSearch @later rye starter")
        wait_for(lambda: [hit["path"] for hit in nvim.exec_lua(f"return {STATE}.hits or {{}}")] == ["sourdough.md"])
        nvim.input("<Esc>")
        nvim.command("AutodocSearch @* rye starter")
        state = "require('autodoc.picker').state"
        wait_for(lambda: nvim.exec_lua(f"local s = {STATE}; return s and s.level == 'final' and s.prompt ~= ''"))
        title = nvim.exec_lua(f"return vim.api.nvim_win_get_config({state}.prompt_win).title[1][1]")
        assert "3 workspaces" in title or "journal, kb, later" in title, title
