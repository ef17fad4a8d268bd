"""The pickers' side of the Neovim tests: the pinned picker plugins (../shared/nvim-plugins, for tests only),
an init.lua that loads them with autodoc, and reading what each picker shows."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pynvim
import pytest

from tests.conftest import PROJECT
from tests.nvim import TRACK_REQUESTS, python_line, rtp, setup_call, wait_for

# $AUTODOC_SHARED: the shared folder of a checkout that is not beside it (a git worktree elsewhere).
PLUGINS = Path(os.environ.get("AUTODOC_SHARED", PROJECT.parent / "shared")) / "nvim-plugins"


def with_plugins(*names: str) -> str:
    missing = [name for name in names if not (PLUGINS / name).is_dir()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not in {PLUGINS}")
    return "".join(f"vim.opt.runtimepath:append('{PLUGINS / name}')\n" for name in names)


def current_file(nvim: pynvim.Nvim) -> str:
    """The current buffer's name, read in one request (a picker's buffers are wiped as it closes)."""
    return nvim.exec_lua("return vim.api.nvim_buf_get_name(0)")


COUNT_INDEXED = ("_G.indexed = 0\nvim.api.nvim_create_autocmd('User', { pattern = 'AutodocIndexed', "
                 "callback = function() _G.indexed = _G.indexed + 1 end })\n")
WIDE = "vim.o.columns = 200\nvim.o.lines = 50\n"
RECORD_RESULTS = ("_G.results = {}\nvim.api.nvim_create_autocmd('User', { pattern = 'AutodocResults', callback = "
                  "function(e) table.insert(_G.results, { e.data.prompt, e.data.level }) end })\n")


def picker_init(tmp_path: Path, notes: Path, *plugins: str, after: str = "") -> str:
    return rtp(PROJECT) + TRACK_REQUESTS + with_plugins(*plugins) + python_line() + WIDE + COUNT_INDEXED + \
        RECORD_RESULTS + setup_call(tmp_path / "a.db", notes) + "\n" + after


def wait_indexed(nvim: pynvim.Nvim) -> None:
    wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 1)


STATE = "require('autodoc').picker_state()"


def terminal_lines(nvim: pynvim.Nvim) -> list[str]:
    return nvim.exec_lua("local lines = {}; for _, b in ipairs(vim.api.nvim_list_bufs()) do "
                         "if vim.bo[b].buftype == 'terminal' then "
                         "vim.list_extend(lines, vim.api.nvim_buf_get_lines(b, 0, -1, false)) end end; return lines")


VISIBLE = {  # the list lines each picker shows
    "mini_pick": "local b = MiniPick.get_picker_state().buffers.main; "
                 "return vim.api.nvim_buf_get_lines(b, 0, -1, false)",
    "snacks": "local w = require('snacks').picker.get()[1].list.win; "
              "return vim.api.nvim_buf_get_lines(w.buf, 0, -1, false)",
    "fzf_lua": None,  # the terminal fzf draws in
    "telescope": "local p = require('telescope.actions.state').get_current_picker(vim.api.nvim_get_current_buf()); "
                 "return p and vim.api.nvim_buf_get_lines(p.results_bufnr, 0, -1, false) or {}",
}
OPEN = {"telescope": ("plenary.nvim", "telescope.nvim", "require('telescope').setup({})\n"),
        "mini_pick": ("mini.pick", "require('mini.pick').setup()\n"),
        "snacks": ("snacks.nvim", "require('snacks').setup({ picker = { enabled = true } })\n"),
        "fzf_lua": ("fzf-lua", "require('fzf-lua').setup({ winopts = { width = 1, preview = { hidden = true } } })\n")}


# -- the five views of a search session, driven alike (tests/test_nvim_views.py) ------------------------------

VIEWS = ["builtin", "telescope", "mini.pick", "snacks", "fzf-lua"]
VIEW_SETUP = {"builtin": ("",), "telescope": OPEN["telescope"], "mini.pick": OPEN["mini_pick"],
              "snacks": OPEN["snacks"], "fzf-lua": OPEN["fzf_lua"]}
VIEW_READY = {  # the view is open and takes keys
    "builtin": "local s = require('autodoc.picker').state; return s ~= nil and vim.api.nvim_get_mode().mode == 'i'",
    "telescope": "return vim.bo.filetype == 'TelescopePrompt' and vim.api.nvim_get_mode().mode == 'i'",
    "mini.pick": "return MiniPick.is_picker_active()",
    "snacks": "return #require('snacks').picker.get() > 0 and vim.api.nvim_get_mode().mode == 'i'",
    "fzf-lua": "return vim.api.nvim_get_mode().mode == 't'",
}


def view_init(tmp_path: Path, view: str, setup: str, columns: int = 200) -> str:
    """An init.lua with the view's picker loaded, `setup` (a setup() call) and the editor `columns` wide."""
    if view == "fzf-lua" and shutil.which("fzf") is None:
        pytest.skip("the fzf binary is not installed (apt-get install -y fzf)")
    *plugins, after = VIEW_SETUP[view]
    return rtp(PROJECT) + TRACK_REQUESTS + (with_plugins(*plugins) if plugins else "") + python_line() + \
        f"vim.o.columns = {columns}\nvim.o.lines = 50\n" + COUNT_INDEXED + setup + "\n" + after


def open_view(nvim: pynvim.Nvim, view: str, related: bool = False) -> None:
    """Open the view through its command (mini.pick blocks until it closes: typed, never nvim.command)."""
    if related:
        command = "AutodocRelated" if view == "builtin" else f"AutodocPick {view} related"
    else:
        command = "AutodocSearch" if view == "builtin" else f"AutodocPick {view}"
    nvim.input(f":{command}<CR>")
    wait_for(lambda: nvim.exec_lua(VIEW_READY[view]))


def screen(nvim: pynvim.Nvim) -> list[str]:
    """What the current tab page shows: every window's lines (a terminal's too) and its title and footer."""
    return nvim.exec_lua("""
        local out = {}
        local function text(chunks)
          if type(chunks) == 'string' then return chunks end
          local parts = {}
          for _, chunk in ipairs(chunks or {}) do table.insert(parts, type(chunk) == 'table' and chunk[1] or chunk) end
          return table.concat(parts)
        end
        for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
          local config = vim.api.nvim_win_get_config(win)
          table.insert(out, text(config.title))
          table.insert(out, text(config.footer))
          vim.list_extend(out, vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false))
        end
        return out""")


def picker_state(nvim: pynvim.Nvim) -> dict | None:
    return nvim.exec_lua("return require('autodoc').picker_state()")


def shows(nvim: pynvim.Nvim, *texts: str) -> list[str] | None:
    """The screen's lines holding each of `texts` (None until every one shows)."""
    lines = screen(nvim)
    found = [next((line for line in lines if text in line), None) for text in texts]
    return found if all(found) else None
