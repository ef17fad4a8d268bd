"""The search as a source of the pickers people already use, each loaded from ../shared/nvim-plugins
(pinned copies, for tests only): stages streamed (lexical first, then the full answer), the hit's
section previewed, and the jump to its line span."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.test_nvim_install import neovim, notes, python_line, rtp, setup_call  # noqa: F401 - notes: fixture
from tests.test_nvim_plugin import wait_for

PLUGINS = PROJECT.parent / "shared" / "nvim-plugins"


def with_plugins(*names: str) -> str:
    missing = [name for name in names if not (PLUGINS / name).is_dir()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not in {PLUGINS}")
    return "".join(f"vim.opt.runtimepath:append('{PLUGINS / name}')\n" for name in names)


def test_telescope_streams_previews_and_jumps(tmp_path: Path, notes: Path) -> None:  # noqa: F811
    wide = "vim.o.columns = 200\nvim.o.lines = 50\n"  # wide enough for telescope to show its previewer
    init = rtp(PROJECT) + with_plugins("plenary.nvim", "telescope.nvim") + python_line() + wide + \
        setup_call(tmp_path / "a.db", notes) + "\nrequire('telescope').setup({})\n"
    with neovim(tmp_path, init) as nvim:
        nvim.command("Telescope autodoc")
        wait_for(lambda: nvim.current.buffer.options["filetype"] == "TelescopePrompt")
        nvim.input("relational store")
        picker = "require('telescope.actions.state').get_current_picker(vim.api.nvim_get_current_buf())"
        session = "require('autodoc.sources.telescope').session"
        wait_for(lambda: nvim.exec_lua(f"local s = {session}; return s.prompt == 'relational store' and s.level == 2"))
        shown = nvim.exec_lua(f"return {session}.shown")
        assert shown[-1] == ["relational store", 2]
        for index, (prompt, level) in enumerate(shown):  # never a lexical-only answer after the full one
            assert not (level == 1 and [prompt, 2] in shown[:index])
        lines = wait_for(lambda: [line for line in nvim.exec_lua(
            f"return vim.api.nvim_buf_get_lines({picker}.results_bufnr, 0, -1, false)") if "adr/0002.md:3-5" in line])
        assert "Keep the index in SQLite › Decision" in lines[0]
        preview = wait_for(lambda: nvim.exec_lua(
            f"local p = {picker}; local b = p.previewer and p.previewer.state and p.previewer.state.bufnr; "
            "return b and vim.api.nvim_buf_get_lines(b, 0, -1, false)"))
        assert "We keep every workspace in one embedded relational store." in preview
        nvim.input("<CR>")
        wait_for(lambda: nvim.current.buffer.name.endswith("adr/0002.md"))
        assert nvim.current.window.cursor[0] == 3
