"""A new user's walk (issue 51), in a real terminal at 80 columns and 'cmdheight' 1 (tmux, tests/nvim/terminal.py):
a mistyped workspace name, a command that cannot run, the related side list and the progress of a fill, as they
are on the screen."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT, write
from tests.nvim import wait_for
from tests.nvim.plugin import list_lines
from tests.nvim.terminal import Terminal, terminal
from tests.nvim.walk import messages, mode, start_editor

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def two_workspaces(tmp_path: Path, kb: Path) -> Path:
    """kb's two notes, and a second workspace `rfcs` with one."""
    write(kb, "adr/0002.md", "# ADR 0002 Keep the index in SQLite\n\n## Decision\n\n"
                             "We keep every workspace in one embedded relational store.\n")
    write(kb, "notes/cooking.md", "# Cooking\n\n## Bread\n\nFlour, water, salt and yeast make a relational bread.\n")
    rfcs = tmp_path / "rfcs"
    write(rfcs, "text/0001-store.md", "# RFC 1\n\n## Storage\n\nWhy we keep one embedded relational store.\n")
    return rfcs


def ready(term: Terminal) -> None:
    term.wait_for_screen("~")
    wait_for(lambda: term.nvim.exec_lua("return require('autodoc').state.phase") == "ready", timeout=120,
             what="the engine open")


def test_a_mistyped_workspace_is_said_and_stays_in_the_prompt_to_be_fixed(tmp_path: Path, kb: Path) -> None:
    """`:AutodocSearch @nosuch foo` raised the hit-enter prompt (a 69-cell message reaches the ruler's columns at
    80), and the picker's prompt held `foo` alone: the name to fix was gone."""
    rfcs = two_workspaces(tmp_path, kb)
    with start_editor(tmp_path, kb, 80, rfcs) as term:
        ready(term)
        term.keys(":AutodocSearch @nosuch-such-workspace relational store", literal=True)
        term.keys("Enter")
        shown = term.wait_for_screen("@nosuch-such-workspace relational store",
                                     "no workspace 'nosuch-such-workspace' (there are")
        assert "Press ENTER" not in shown and mode(term) == "i", shown
        assert "AutoDoc · " not in shown, shown  # nothing is searched: the title names no scope
        typed = "@nosuch-such-workspace relational store"
        wait_for(lambda: term.nvim.exec_lua("return vim.api.nvim_win_get_cursor(0)[2]") == len(typed),
                 what="the cursor after the prompt's last character (it sat on it: a key typed went before it)")
        said = "autodoc: no workspace 'nosuch-such-workspace' (there are @kb @rfcs; @* is every one)"
        listed = list_lines(term.nvim)  # wrapped between words in the list, not cut at its edge
        assert " ".join(listed) == said and len(listed) > 1, listed
        width = term.nvim.exec_lua("return vim.api.nvim_win_get_width(require('autodoc.picker').state.list_win)")
        assert all(len(line) <= width for line in listed), (width, listed)
        term.keys("C-u")  # the first key closes the kept message's float
        term.keys("@kb relational store", literal=True)
        shown = term.wait_for_screen("AutoDoc · kb", "adr/0002.md:")
        assert "@kb relational store" in shown and "nosuch" not in shown, shown
        assert term.nvim.exec_lua("return vim.api.nvim_get_current_line()") == "@kb relational store"


@pytest.mark.parametrize(("command", "said"), [
    (":AutodocIndex nosuch", "autodoc: no workspace 'nosuch' to index; there are kb, rfcs"),
    (":AutodocWorkspaceRemove nosuch", "autodoc: no workspace 'nosuch' to remove; there are kb, rfcs"),
    (":AutodocRelated", "autodoc: this buffer has no file, so it has no related sections"),
])
def test_a_command_that_cannot_run_says_why_in_one_kept_message(tmp_path: Path, kb: Path, command: str,
                                                                 said: str) -> None:
    """Each stopped at the hit-enter prompt at 80 columns (:AutodocIndex with two messages, its progress and the
    error), during which Neovim answers no plugin request."""
    rfcs = two_workspaces(tmp_path, kb)
    with start_editor(tmp_path, kb, 80, rfcs) as term:
        ready(term)
        wait_for(lambda: len(re.findall(r"(kb|rfcs): (\d+)/\2 embedded", messages(term))) == 2, timeout=120,
                 what="both fills' ends in :messages")
        term.keys(command, literal=True)
        term.keys("Enter")
        term.wait_for_screen(said)
        assert mode(term) == "n", term.screen()
        assert term.bottom(1) == said, term.screen()  # the one message, alone on its row
        assert messages(term).rstrip().endswith(said)


@pytest.mark.parametrize("columns", [80, 200])
def test_the_related_side_list_leaves_the_document_readable(tmp_path: Path, kb: Path, columns: int) -> None:
    """At 80 columns the side list took 60 and left the document 19: now it takes 40% (40 to 60 columns) while
    the document keeps 60, and goes below the document in a narrower editor."""
    rfcs = two_workspaces(tmp_path, kb)
    with start_editor(tmp_path, kb, columns, rfcs) as term:
        ready(term)
        term.keys(f":edit {kb / 'adr' / '0002.md'}", literal=True)
        term.keys("Enter")
        term.keys(":AutodocRelatedLive", literal=True)
        term.keys("Enter")
        term.wait_for_screen("Related to adr/0002.md")
        document, side = term.nvim.exec_lua("""
            local side = vim.fn.bufwinid('autodoc://related')
            local pos = function(win) return vim.api.nvim_win_get_position(win) end
            return { { width = vim.api.nvim_win_get_width(0), row = pos(0)[1] },
                     { width = vim.api.nvim_win_get_width(side), row = pos(side)[1] } }""")
        assert document["width"] >= 60, (document, side)
        if columns == 80:  # below the document, as wide as the editor
            assert side["row"] > document["row"] and side["width"] == columns, (document, side)
        else:  # at its right: 60 columns
            assert side["row"] == document["row"] and side["width"] == 60, (document, side)


def test_the_documents_list_follows_the_scope_rules_of_a_search(tmp_path: Path, kb: Path) -> None:
    """:AutodocOpen listed the first workspace's documents whatever its prompt held: `@rfcs` was part of the
    text matched and `<M-w>` did nothing. Now it lists every workspace's (setup's scope), and `@name` and
    `<M-w>` choose as in a search."""
    rfcs = two_workspaces(tmp_path, kb)
    with start_editor(tmp_path, kb, 80, rfcs) as term:
        ready(term)
        term.keys(":AutodocOpen", literal=True)
        term.keys("Enter")
        term.wait_for_screen("AutoDoc open · all: kb, rfcs", "kb   adr/0002.md:1-", "rfcs text/0001-store.md:1-")
        term.keys("@rfcs ", literal=True)
        wait_for(lambda: "AutoDoc open · rfcs" in (shown := term.screen()) and "text/0001-store.md:1-" in shown
                 and "adr/0002.md" not in shown, timeout=60, what="rfcs' documents alone")
        term.keys("C-u")
        term.wait_for_screen("AutoDoc open · all: kb, rfcs", "adr/0002.md:1-")
        term.keys("M-w")  # the next scope: kb alone
        wait_for(lambda: "AutoDoc open · kb" in (shown := term.screen()) and "adr/0002.md:1-" in shown
                 and "0001-store.md" not in shown, timeout=60, what="kb's documents alone")
        term.keys("Enter")
        shown = term.wait_for_screen("kb/adr/0002.md")  # the selected document opened
        assert "We keep every workspace in one embedded relational store." in shown


def test_a_fill_s_end_says_its_pace_in_one_row_with_no_hit_enter_prompt(tmp_path: Path, kb: Path) -> None:
    """The fill's end said the count alone, where the README promises its pace; and a progress message reaching
    the ruler's columns (a long workspace name, large counts) raised the hit-enter prompt at 80 columns. Its
    last parts now give way first; the User AutodocProgress event keeps the whole text."""
    two_workspaces(tmp_path, kb)
    init = tmp_path / "init.lua"
    init.write_text(f"vim.opt.runtimepath:prepend({str(PROJECT)!r})\nvim.opt.swapfile = false\n"
                    f"vim.opt.shadafile = 'NONE'\nvim.g.autodoc_python = {sys.executable!r}\n"
                    "_G.ends = {}\nvim.api.nvim_create_autocmd('User', { pattern = 'AutodocProgress', callback = "
                    "function(e) if e.data.status == 'success' then table.insert(_G.ends, e.data.text) end end })\n"
                    f"require('autodoc').setup({{ db = {str(tmp_path / 'a.db')!r}, workspaces = {{ {{ "
                    f"name = 'engineering-handbook-and-runbooks', path = {str(kb)!r} }} }} }})\n")
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "TERM": "xterm-256color"}
    with terminal(init, env, 80, 24) as term:
        ready(term)
        ends = wait_for(lambda: [text for text in term.nvim.exec_lua("return _G.ends") if "embedded" in text],
                        timeout=120, what="the fill's end")
        assert re.fullmatch(r"engineering-handbook-and-runbooks: 2/2 embedded · \d+\.\d/s · done in \d+:\d\d",
                            ends[0]), ends
        assert mode(term) == "n" and "Press ENTER" not in term.screen(), term.screen()
        shown = term.bottom(1)
        assert shown.startswith("autodoc: 100% engineering-handbook-and-runbooks: 2/2 embedded") and len(shown) < 69
