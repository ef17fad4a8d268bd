"""The related sections in Neovim: :AutodocRelated and <Plug>(autodoc-related) in the built-in picker, the
same in each picker source (:AutodocPick {source} related), and the live side list (:AutodocRelatedLive)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import write
from tests.nvim import neovim, wait_for
from tests.nvim.pickers import OPEN, STATE, VISIBLE, current_file, picker_init, terminal_lines, wait_indexed

ADR = """\
# ADR 0002 Keep the index in SQLite

## Decision

We keep every workspace in one embedded relational store, with a write-ahead log.

## Backups

Copy the gecko file with the online backup API.
"""


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    write(root, "adr/0002.md", ADR)
    write(root, "design/storage.md", "# Storage design\n\n## Store\n\nThe gecko store follows "
                                     "[the ADR](../adr/0002.md): one relational store.\n")
    write(root, "notes/cooking.md", "# Cooking\n\n## Bread\n\nFlour, water, salt and yeast make bread.\n")
    return root


def list_lines(nvim) -> list[str]:
    return nvim.exec_lua("local s = require('autodoc.picker').state; "
                         "return s and vim.api.nvim_buf_get_lines(s.list_buf, 0, -1, false) or {}")


def open_at(nvim, kb: Path, relpath: str, line: int) -> None:
    nvim.command(f"edit {kb / relpath}")
    nvim.current.window.cursor = (line, 0)


def test_autodoc_related_lists_previews_toggles_and_jumps(tmp_path: Path, kb: Path) -> None:
    with neovim(tmp_path, picker_init(tmp_path, kb)) as nvim:
        wait_indexed(nvim)
        open_at(nvim, kb, "adr/0002.md", 5)
        nvim.command("AutodocRelated")
        state = "require('autodoc.picker').state"
        lines = wait_for(lambda: [line for line in list_lines(nvim) if line.startswith("design/storage.md:")])
        assert "link" in lines[0]  # the design note links to the ADR
        assert not any(line.startswith("adr/0002.md") for line in list_lines(nvim))
        related = nvim.exec_lua(f"return {state}.drawn.related")
        assert related["path"] == "adr/0002.md" and related["section"]["breadcrumb"].endswith("Decision")
        title = nvim.exec_lua(f"return vim.api.nvim_win_get_config({state}.prompt_win).title[1][1]")
        assert "related" in title
        preview = nvim.exec_lua(f"return vim.api.nvim_buf_get_lines({state}.preview_buf, 0, -1, false)")
        assert any("gecko store follows" in line for line in preview)
        nvim.input("<M-s>")  # the stage toggles ask again
        wait_for(lambda: nvim.exec_lua(f"local s = {STATE}; return s.stages.semantic == false and s.requested and "
                                       "not vim.tbl_contains(s.requested, 'semantic')"))
        nvim.input("<M-s>")
        nvim.input("bread")  # the prompt narrows the related sections by path and breadcrumb
        wait_for(lambda: all(line.startswith("notes/cooking.md") for line in list_lines(nvim)) or
                 list_lines(nvim) == [])
        nvim.input("<C-u>")
        wait_for(lambda: any(line.startswith("design/storage.md:") for line in list_lines(nvim)))
        nvim.input("<C-q>")
        items = wait_for(lambda: nvim.exec_lua("return vim.fn.getqflist({ items = 1 }).items"))
        assert any(nvim.exec_lua(f"return vim.api.nvim_buf_get_name({item['bufnr']})").endswith("design/storage.md")
                   for item in items)
        nvim.command("cclose")
        open_at(nvim, kb, "adr/0002.md", 9)
        nvim.exec_lua("vim.keymap.set('n', '<F5>', '<Plug>(autodoc-related)')")
        nvim.input("<F5>")
        wait_for(lambda: nvim.exec_lua(f"local s = {state}; return s and s.drawn and s.drawn.related and "
                                       "s.drawn.related.section.breadcrumb:find('Backups') ~= nil"))
        wait_for(lambda: any(line.startswith("design/storage.md:") for line in list_lines(nvim)))
        nvim.exec_lua(f"local s = {state}; for i, hit in ipairs(require('autodoc.picker.render').hits(s)) do "
                      "if hit.path == 'design/storage.md' then vim.api.nvim_win_set_cursor(s.list_win, { i, 0 }) "
                      "end end")
        nvim.input("<C-v>")
        wait_for(lambda: current_file(nvim).endswith("design/storage.md"))
        assert len(nvim.windows) == 2 and nvim.current.window.cursor[0] == 3


def test_a_buffer_outside_every_workspace_says_so(tmp_path: Path, kb: Path) -> None:
    write(tmp_path, "elsewhere.md", "# Elsewhere\n")
    with neovim(tmp_path, picker_init(tmp_path, kb)) as nvim:
        wait_indexed(nvim)
        nvim.command(f"edit {tmp_path / 'elsewhere.md'}")
        nvim.command("AutodocRelated")
        wait_for(lambda: "is in no workspace" in nvim.exec_lua("return vim.fn.execute('messages')"))
        assert nvim.exec_lua("return require('autodoc.picker').state") is None


TELESCOPE_SELECTED = ("local e = require('telescope.actions.state').get_selected_entry(); "
                      "return e and e.value.path or ''")


@pytest.mark.parametrize("module", ["telescope", "mini_pick", "snacks", "fzf_lua"])
def test_each_picker_source_lists_the_related_sections_and_jumps(tmp_path: Path, kb: Path, module: str) -> None:
    if module == "fzf_lua" and shutil.which("fzf") is None:
        pytest.skip("the fzf binary is not installed (apt-get install -y fzf)")
    *plugins, after = OPEN[module]
    name = {"telescope": "telescope", "mini_pick": "mini.pick", "snacks": "snacks", "fzf_lua": "fzf-lua"}[module]
    session = STATE

    def hit_lines() -> list[str]:
        lines = terminal_lines(nvim) if VISIBLE[module] is None else nvim.exec_lua(VISIBLE[module])
        return [line for line in lines if re.search(r"\.md:\d+-\d+", line)]

    def visible() -> list[str]:
        return [line for line in hit_lines() if "design/storage.md:" in line]

    with neovim(tmp_path, picker_init(tmp_path, kb, *plugins, after=after)) as nvim:
        wait_indexed(nvim)
        open_at(nvim, kb, "adr/0002.md", 5)
        nvim.input(f":AutodocPick {name} related<CR>")  # mini.pick blocks until it closes: never nvim.command
        wait_for(lambda: nvim.exec_lua(f"local s = {session}; return s ~= nil and s.related ~= nil and "
                                       "s.level == 'final'"))
        assert nvim.exec_lua(f"return {session}.related.path") == "adr/0002.md"
        hits = nvim.exec_lua(f"return vim.tbl_map(function(h) return h.path end, {session}.hits)")
        assert "design/storage.md" in hits and "adr/0002.md" not in hits
        assert "link" in wait_for(visible)[0]
        if module == "mini_pick":  # mini.pick's list starts on the first item; put it on the linked note
            index = hits.index("design/storage.md") + 1
            nvim.exec_lua(f"MiniPick.set_picker_match_inds({{ {index} }})")
        else:
            nvim.input("storage")  # the prompt narrows the list to the linked note
            wait_for(lambda: nvim.exec_lua(f"local s = {session}; return s.prompt == 'storage' and s.level == 'final' "
                                           "and #s.hits >= 1"))
            # The list drawn for "storage", not the one before it (the picker redraws after the session has
            # the answer, and a <CR> before that redraw may select another hit).
            wait_for(lambda: len(visible()) >= 1 and all("storage" in line.lower() for line in hit_lines()))
            if module == "telescope":
                wait_for(lambda: nvim.exec_lua(TELESCOPE_SELECTED) == "design/storage.md")
        nvim.input("<CR>")
        wait_for(lambda: current_file(nvim).endswith("design/storage.md"))
        assert nvim.current.window.cursor[0] == 3


def live(nvim, expression: str):
    return nvim.exec_lua(f"local s = require('autodoc.related').live.state; return {expression}")


def test_the_live_list_follows_the_cursor_from_section_to_section(tmp_path: Path, kb: Path) -> None:
    init = picker_init(tmp_path, kb).replace("require('autodoc').setup({ ",
                                             "require('autodoc').setup({ related_ms = 0, ")
    with neovim(tmp_path, init) as nvim:
        wait_indexed(nvim)
        open_at(nvim, kb, "adr/0002.md", 5)
        nvim.command("AutodocRelatedLive")
        wait_for(lambda: live(nvim, "s and s.shown ~= nil"))
        lines = live(nvim, "vim.api.nvim_buf_get_lines(s.buf, 0, -1, false)")
        assert lines[0].startswith("Related to adr/0002.md") and "Decision" in lines[0]
        assert any(line.startswith("design/storage.md:") for line in lines[1:])
        asked = live(nvim, "s.session.tick")
        nvim.input("k")  # line 4: still in Decision
        nvim.input("ix<Esc>")  # typing inside the section asks nothing
        nvim.exec_lua("vim.cmd('doautocmd CursorMoved')")
        assert live(nvim, "s.session.tick") == asked
        nvim.input("G")  # into Backups: asked, listed
        wait_for(lambda: live(nvim, "s.shown ~= nil and s.shown.line_start == 7"))
        assert live(nvim, "s.session.tick") == asked + 1
        live(nvim, "(function() require('autodoc').config.related_ms = 60000 end)()")  # an ask that stays pending
        nvim.input("gg")
        wait_for(lambda: live(nvim, "s.timer ~= nil"))
        nvim.input("G")  # back in the section listed before the ask went out: cancelled
        wait_for(lambda: live(nvim, "s.timer == nil"))
        assert live(nvim, "s.session.tick") == asked + 1
        nvim.exec_lua("vim.api.nvim_set_current_win(require('autodoc.related').live.state.win)")
        row = live(nvim, "(function() for i, h in ipairs(s.session:hits()) do if h.path == 'design/storage.md' then "
                         "return i + 1 end end end)()")
        nvim.current.window.cursor = (row, 0)
        nvim.input("<CR>")
        wait_for(lambda: current_file(nvim).endswith("design/storage.md"))
        nvim.command("AutodocRelatedLive")  # off again: the list closes, the cursor is followed no more
        assert live(nvim, "s") is None and len(nvim.windows) == 1
