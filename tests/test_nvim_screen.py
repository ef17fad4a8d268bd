"""What the user must read stays on the screen until the next key: an error, or the answer to :AutodocStatus,
is not replaced by the progress of a workspace whose vectors fill. Neovim in a real terminal (tmux, 80 columns),
the fill held at the toy TEI server so progress keeps coming for as long as the test needs it."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from autodoc_core.service.engine import Engine
from tests.conftest import PROJECT, write
from tests.model_servers import Behaviour, model_server
from tests.nvim import child_nvim, lua_string, wait_for
from tests.nvim.terminal import Terminal, terminal

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

# Every progress update once, whatever became of it: drawn (Neovim's own Progress event of the echo) or held
# behind a kept message (autodoc's User AutodocProgress with shown = false).
# The ends of work (status "success" or "failed") are kept apart.
COUNT_UPDATES = """
    _G.updates, _G.ends = 0, {}
    vim.api.nvim_create_autocmd('Progress', { pattern = 'autodoc',
      callback = function() _G.updates = _G.updates + 1 end })
    vim.api.nvim_create_autocmd('User', { pattern = 'AutodocProgress', callback = function(event)
      if not event.data.shown then _G.updates = _G.updates + 1 end
      if event.data.status ~= 'running' then table.insert(_G.ends, event.data) end
    end })"""


# A progress message of either workspace (the status answer says "kb: 14 documents, ... · 2/14 embedded").
PROGRESS = re.compile(r"\b(kb|other): \d+/\d+ embedded")


def two_workspaces(tmp_path: Path, url: str) -> tuple[Path, Path, Path]:
    """`kb` (14 notes) and `other` (3), indexed, both embedded by the server at `url` two texts a batch."""
    kb, other, db = tmp_path / "kb", tmp_path / "other", tmp_path / "autodoc.db"
    for i in range(14):
        write(kb, f"n{i:02}.md", f"# Note {i}\n\nFlour, water, salt and yeast make bread number {i}.\n")
    for i in range(3):
        write(other, f"o{i}.md", f"# Other {i}\n\nA note about rivers and bridges, number {i}.\n")
    with Engine(db) as engine:
        for name, root in (("kb", kb), ("other", other)):
            engine.workspace_add(name, str(root))
            engine.workspace_configure(name, {"embedder": {"provider": "tei", "url": url, "batch_size": 2,
                                                           "timeout": 120}})
            engine.workspace_index(name)
    return kb, other, db


def editor(tmp_path: Path, kb: Path, other: Path, db: Path) -> tuple[Path, dict[str, str]]:
    init = tmp_path / "init.lua"
    workspaces = f"{{ name = 'kb', path = {lua_string(kb)} }}, {{ name = 'other', path = {lua_string(other)} }}"
    init.write_text(f"vim.opt.runtimepath:prepend({lua_string(PROJECT)})\nvim.opt.swapfile = false\n"
                    f"vim.opt.shadafile = 'NONE'\nvim.g.autodoc_python = {lua_string(sys.executable)}\n"
                    f"require('autodoc').setup({{ db = {lua_string(db)}, poll_ms = 200, "
                    f"workspaces = {{ {workspaces} }} }})\n")
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "TERM": "xterm-256color"}
    return init, env


def wait_for_updates(term: Terminal, count: int) -> None:
    """Wait for `count` more progress updates of the held fill (one every poll_ms)."""
    seen = term.nvim.exec_lua("return _G.updates")
    wait_for(lambda: term.nvim.exec_lua("return _G.updates") >= seen + count, timeout=60,
             what=f"{count} more progress updates")


def test_an_error_and_a_status_answer_stay_on_screen_while_progress_comes(tmp_path: Path) -> None:
    with model_server("tei", Behaviour(hold_after=2)) as server:
        kb, other, db = two_workspaces(tmp_path, server.url)
        with Engine(db) as engine:  # the server's first batch: only kb fills in the editor, whichever it asks first
            engine.workspace_index("other", {"wait": "semantic"})
        init, env = editor(tmp_path, kb, other, db)
        with terminal(init, env, columns=80, rows=24) as term:
            term.wait_for_screen("~")
            wait_for(lambda: term.nvim.exec_lua("return require('autodoc').state.phase") == "ready", timeout=60)
            assert server.behaviour.holding.wait(timeout=60)  # kb: 2 texts embedded, the next batch held
            term.nvim.exec_lua(COUNT_UPDATES)
            term.nvim.exec_lua("require('autodoc').watch_semantic('kb')")
            term.wait_for_screen("kb: 2/14 embedded")

            term.keys(":AutodocWorkspaceAdd ghost /no/such/dir", literal=True)
            term.keys("Enter")
            error = "root '/no/such/dir' is not a folder"
            term.wait_for_screen(error)
            wait_for_updates(term, 2)
            assert error in term.bottom(2) and not PROGRESS.search(term.bottom(2)), term.screen()
            term.keys("Escape")  # read: progress shows again
            wait_for(lambda: PROGRESS.search(term.bottom(1)), timeout=60, what="the progress after a key")
            assert error not in term.screen()

            # Four rows for messages: the answer's lines fit, no hit-enter prompt (which would hold every
            # update itself, and this test's questions too, until a key).
            term.nvim.command("set cmdheight=4")
            term.keys(":AutodocStatus", literal=True)
            term.keys("Enter")
            both = ("autodoc: kb: 14 documents, 14 sections, semantic partial", "other: 3 documents, 3 sections")
            term.wait_for_screen(*both)
            wait_for_updates(term, 2)
            shown = term.screen()
            assert all(line in shown for line in both), shown  # one answer of two lines, the first not replaced
            assert not PROGRESS.search(shown), shown
            term.keys("Escape")
            wait_for(lambda: PROGRESS.search(term.bottom(1)), timeout=60, what="the progress after a key")

            # The fill ends behind a kept error: its end is held, then shown and kept in :messages after a key.
            term.keys(":AutodocWorkspaceAdd ghost /no/such/dir", literal=True)
            term.keys("Enter")
            term.wait_for_screen(error)
            server.behaviour.release.set()
            kb_end = wait_for(lambda: [end for end in term.nvim.exec_lua("return _G.ends")
                                       if end["workspace"] == "kb" and end["work"] == "embedding"], timeout=60,
                              what="the end of kb's fill")[0]
            # its end says the pace and the time it took, as the README shows it (issue 51: the count alone)
            assert re.fullmatch(r"kb: 14/14 embedded · \d+\.\d/s · done in \d+:\d\d", kb_end["text"]), kb_end
            assert kb_end["status"] == "success" and not kb_end["shown"]
            messages = "return vim.fn.execute('messages')"
            assert error in term.bottom(4) and "kb: 14/14 embedded" not in term.nvim.exec_lua(messages)
            term.keys("Escape")
            wait_for(lambda: "kb: 14/14 embedded" in term.nvim.exec_lua(messages), timeout=60,
                     what="the end of kb's fill in :messages after a key")
        server.behaviour.release.set()


def test_a_status_too_long_for_the_message_area_is_shown_in_a_float(tmp_path: Path) -> None:
    """At cmdheight=1 the answer for two workspaces raised the hit-enter prompt, during which Neovim answers no
    plugin request; an error ended with its JSON-RPC code and named the engine's method (workspace.add) where
    the editor has a command. Both are shown in a float until the next key, in the editor's words; the code
    is in the log."""
    with model_server("tei") as server:
        kb, other, db = two_workspaces(tmp_path, server.url)
        init, env = editor(tmp_path, kb, other, db)
        with terminal(init, env, columns=80, rows=24) as term:
            term.wait_for_screen("~")
            wait_for(lambda: term.nvim.exec_lua("return require('autodoc').state.phase") == "ready", timeout=60)
            assert term.nvim.eval("&cmdheight") == 1
            term.keys(":AutodocStatus", literal=True)
            term.keys("Enter")
            shown = term.wait_for_screen("autodoc: kb: 14 documents, 14 sections", "other: 3 documents, 3 sections")
            assert "Press ENTER" not in shown, shown
            assert term.nvim.exec_lua("return 'answered'") == "answered"  # Neovim answers while it is shown
            assert "other: 3 documents" in term.nvim.exec_lua("return vim.fn.execute('messages')")  # kept there too
            term.keys("Escape")  # read
            wait_for(lambda: "other: 3 documents" not in term.screen(), timeout=60, what="the float closed by a key")
            assert term.nvim.eval("&messagesopt") == "hit-enter,history:500"  # the user's, as it was

            term.keys(":AutodocStatus nosuch", literal=True)
            term.keys("Enter")
            shown = term.wait_for_screen("no workspace named 'nosuch'", "with :AutodocWorkspaceAdd")
            assert "(-32" not in shown and "workspace.add" not in shown and "Press ENTER" not in shown, shown
            log = (tmp_path / "state" / "nvim" / "autodoc.log").read_text()
            assert "no workspace named 'nosuch'" in log and "(-32060)" in log, log
            term.keys("Escape")
            wait_for(lambda: "nosuch" not in term.screen(), timeout=60, what="the error's float closed by a key")


def test_the_pickers_error_is_kept_while_progress_comes(tmp_path: Path) -> None:
    """The picker said its errors with vim.notify, past the kept-message rule: the next progress update of a
    filling workspace replaced them at once. Now they hold progress back until a key, as every error does."""
    with model_server("tei", Behaviour(hold_after=1)) as server:
        kb, other, db = two_workspaces(tmp_path, server.url)
        init, env = editor(tmp_path, kb, other, db)
        with child_nvim("-u", str(init), env=env) as nvim:
            wait_for(lambda: nvim.exec_lua("return require('autodoc').state.phase") == "ready", timeout=60)
            assert server.behaviour.holding.wait(timeout=60)
            nvim.command("AutodocSearch @other rivers")
            wait_for(lambda: (nvim.exec_lua("return require('autodoc').picker_state().hits") or [{}])[0]
                     .get("path", "").startswith("o"), timeout=60, what="a note of 'other' in the list")
            nvim.exec_lua("_G.fill = {}; vim.api.nvim_create_autocmd('User', { pattern = 'AutodocProgress', "
                          "callback = function(event) if event.data.work == 'embedding' then "
                          "table.insert(_G.fill, event.data.shown) end end })")
            nvim.exec_lua("require('autodoc').watch_semantic('kb')")
            wait_for(lambda: nvim.exec_lua("return _G.fill")[-1:] == [True], timeout=60, what="progress drawn")
            other.rename(tmp_path / "unmounted")
            nvim.input("<CR>")
            wait_for(lambda: "is not there" in nvim.exec_lua("return vim.fn.execute('messages')"), timeout=60,
                     what="the picker's error")
            nvim.command("normal! zz")  # as the preview's redraw does: keys nobody typed read nothing
            seen = len(nvim.exec_lua("return _G.fill"))
            wait_for(lambda: len(nvim.exec_lua("return _G.fill")) >= seen + 2, timeout=60, what="2 more updates")
            assert nvim.exec_lua("return _G.fill")[seen:] == [False] * (len(nvim.exec_lua("return _G.fill")) - seen)
        server.behaviour.release.set()


def test_a_kept_message_s_float_breaks_its_lines_between_words(tmp_path: Path) -> None:
    """The float's 'linebreak' broke after '@' too ('breakat' is global): `@notes @techdocs @` / `zh; @* is every
    one)`. Its lines are broken between words, to the editor's width."""
    names = " ".join(f"@workspace{n}" for n in range(12)) + " @zh"
    message = f"autodoc: no workspace 'nmae' (there are {names}; @* is every one)"
    with child_nvim("--clean", "--cmd", f"set rtp^={PROJECT}") as nvim:
        nvim.command("set columns=80 lines=24")
        nvim.exec_lua("require('autodoc.screen').say(..., vim.log.levels.ERROR, true)", message)
        rows = wait_for(lambda: nvim.exec_lua("""
            for _, win in ipairs(vim.api.nvim_list_wins()) do
              if vim.api.nvim_win_get_config(win).relative ~= '' then
                return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false)
              end
            end"""))
    assert " ".join(rows) == message and all(len(row) <= 78 for row in rows), rows
    assert all(not row.endswith("@") for row in rows) and any(row.endswith("@zh;") or " @zh;" in row for row in rows)
