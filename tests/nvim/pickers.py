"""The pickers' side of the Neovim tests: the pinned picker plugins (../shared/nvim-plugins, for tests only),
an init.lua that loads them with autodoc, and reading what each picker shows."""

from __future__ import annotations

from pathlib import Path

import pynvim
import pytest

from tests.conftest import PROJECT
from tests.nvim import python_line, rtp, setup_call, wait_for

PLUGINS = PROJECT.parent / "shared" / "nvim-plugins"


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


def picker_init(tmp_path: Path, notes: Path, *plugins: str, after: str = "") -> str:
    return rtp(PROJECT) + with_plugins(*plugins) + python_line() + WIDE + COUNT_INDEXED + \
        setup_call(tmp_path / "a.db", notes) + "\n" + after


def wait_indexed(nvim: pynvim.Nvim) -> None:
    wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 1)


def session_of(module: str) -> str:
    return f"require('autodoc.sources.{module}').session"


def terminal_lines(nvim: pynvim.Nvim) -> list[str]:
    return nvim.exec_lua("local lines = {}; for _, b in ipairs(vim.api.nvim_list_bufs()) do "
                         "if vim.bo[b].buftype == 'terminal' then "
                         "vim.list_extend(lines, vim.api.nvim_buf_get_lines(b, 0, -1, false)) end end; return lines")


VISIBLE = {  # the list lines each picker shows
    "mini_pick": "local b = MiniPick.get_picker_state().buffers.main; "
                 "return vim.api.nvim_buf_get_lines(b, 0, -1, false)",
    "snacks": "local w = require('autodoc.sources.snacks').picker.list.win; "
              "return vim.api.nvim_buf_get_lines(w.buf, 0, -1, false)",
    "fzf_lua": None,  # the terminal fzf draws in
    "telescope": "local p = require('telescope.actions.state').get_current_picker(vim.api.nvim_get_current_buf()); "
                 "return p and vim.api.nvim_buf_get_lines(p.results_bufnr, 0, -1, false) or {}",
}
OPEN = {"telescope": ("plenary.nvim", "telescope.nvim", "require('telescope').setup({})\n"),
        "mini_pick": ("mini.pick", "require('mini.pick').setup()\n"),
        "snacks": ("snacks.nvim", "require('snacks').setup({ picker = { enabled = true } })\n"),
        "fzf_lua": ("fzf-lua", "require('fzf-lua').setup({ winopts = { width = 1, preview = { hidden = true } } })\n")}
