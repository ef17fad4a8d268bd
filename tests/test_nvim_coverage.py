"""Inside the picker you see how far the vectors have filled: its list's title says `semantic 14%` (it said
`semantic partial`, and the progress message was hidden under `-- INSERT --`). The fill is held at the toy TEI
server after its first batch (2 of 14 texts), then released: the title follows it to the end."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from autodoc_core.service.engine import Engine
from tests.conftest import PROJECT, write
from tests.model_servers import Behaviour, model_server
from tests.nvim import child_nvim, lua_string, wait_for

LIST_TITLE = ("local s = require('autodoc.picker').state; "
              "return s and vim.api.nvim_win_is_valid(s.list_win) and vim.api.nvim_win_get_config(s.list_win).title "
              "and vim.api.nvim_win_get_config(s.list_win).title[1][1] or ''")


def editor(tmp_path: Path, db: Path, workspaces: dict[str, Path], options: str) -> tuple[Path, dict[str, str]]:
    """An init.lua calling setup() on `db` with these workspaces and `options` (Lua fields), and XDG folders."""
    listed = ", ".join(f"{{ name = '{name}', path = {lua_string(root)} }}" for name, root in workspaces.items())
    init = tmp_path / "init.lua"
    init.write_text(f"vim.opt.runtimepath:prepend({lua_string(PROJECT)})\nvim.opt.swapfile = false\n"
                    f"vim.g.autodoc_python = {lua_string(sys.executable)}\n"
                    f"require('autodoc').setup({{ db = {lua_string(db)}, {options}, workspaces = {{ {listed} }} }})\n")
    env = {f"XDG_{folder.upper()}_HOME": str(tmp_path / folder) for folder in ("config", "data", "state")}
    return init, env


def test_the_list_title_says_how_far_the_vectors_have_filled(tmp_path: Path) -> None:
    kb, db = tmp_path / "kb", tmp_path / "autodoc.db"
    for i in range(14):
        write(kb, f"n{i:02}.md", f"# Note {i}\n\nFlour, water, salt and yeast make bread number {i}.\n")
    init, env = editor(tmp_path, db, {"kb": kb}, "poll_ms = 200")
    with model_server("tei", Behaviour(hold_after=1)) as server:
        with Engine(db) as engine:
            engine.workspace_add("kb", str(kb))
            engine.workspace_configure("kb", {"embedder": {"provider": "tei", "url": server.url, "batch_size": 2,
                                                           "timeout": 120}})
            engine.workspace_index("kb")
        with child_nvim("-u", str(init), env=env) as nvim:
            assert server.behaviour.holding.wait(timeout=60)  # 2 of 14 embedded, the next batch held
            nvim.command("AutodocSearch bread")
            title = lambda: nvim.exec_lua(LIST_TITLE)  # noqa: E731
            wait_for(lambda: "semantic 14%" in title(), timeout=60, what="'semantic 14%' in the list's title")
            assert "semantic partial" not in title()
            server.behaviour.release.set()
            wait_for(lambda: (nvim.exec_lua("return require('autodoc').picker_state().hits") or [{}])[0]
                     .get("via", []).count("semantic") == 1 and "semantic" not in title(), timeout=60,
                     what="the list refreshed once the vectors are complete, its title without the fill")
        server.behaviour.release.set()


def test_a_ready_workspace_beside_a_filling_one_does_not_refresh_the_list_again_and_again(tmp_path: Path) -> None:
    """Issue 51 (a new user's walk): with two workspaces, one ready and one filling, the open list's title started
    a fill watch for the ready one too; its first poll found it complete and said so (User AutodocSemanticReady),
    the list searched again, its title started the watch again: 15-60 searches a second, for the whole fill."""
    kb, notes, db = tmp_path / "kb", tmp_path / "notes", tmp_path / "autodoc.db"
    for i in range(14):
        write(kb, f"n{i:02}.md", f"# Note {i}\n\nFlour, water, salt and yeast make bread number {i}.\n")
    write(notes, "rye.md", "# Rye\n\nRye bread wants a sour starter.\n")
    write(notes, "oven.md", "# Oven\n\nBake the bread hot, then lower the heat.\n")
    init, env = editor(tmp_path, db, {"kb": kb, "notes": notes}, "poll_ms = 100, scope = 'all'")
    with model_server("tei", Behaviour(hold_after=1)) as server:
        with Engine(db) as engine:
            for name, root in (("notes", notes), ("kb", kb)):
                engine.workspace_add(name, str(root))
                engine.workspace_configure(name, {"embedder": {"provider": "tei", "url": server.url,
                                                               "batch_size": 2, "timeout": 120}})
            engine.workspace_index("notes", {"wait": "semantic"})  # its one batch: kb's batches are held
            engine.workspace_index("kb")
        with child_nvim("-u", str(init), env=env) as nvim:
            nvim.exec_lua("_G.events = { ready = {}, kb_progress = 0 }\n"
                          "vim.api.nvim_create_autocmd('User', { pattern = 'AutodocSemanticReady', callback = "
                          "function(e) table.insert(_G.events.ready, e.data.workspace) end })\n"
                          "vim.api.nvim_create_autocmd('User', { pattern = 'AutodocProgress', callback = "
                          "function(e) if e.data.workspace == 'kb' and e.data.work == 'embedding' then "
                          "_G.events.kb_progress = _G.events.kb_progress + 1 end end })")
            nvim.command("AutodocSearch bread")
            # the one filling is named: of several workspaces, `semantic 14%` read as the whole search's share
            wait_for(lambda: re.search(r"semantic kb \d+%", nvim.exec_lua(LIST_TITLE)), timeout=60,
                     what="the list's title saying kb's vectors fill")
            seen = nvim.exec_lua("return _G.events.kb_progress")
            wait_for(lambda: nvim.exec_lua("return _G.events.kb_progress") >= seen + 3, timeout=60,
                     what="three more polls of kb's fill")
            # At most the one a start-up index run may give (notes read as filling until the host has its
            # model); the loop gave dozens in these three polls.
            assert nvim.exec_lua("return _G.events.ready") in ([], ["notes"])
        server.behaviour.release.set()


def test_a_filling_workspace_beside_one_with_no_model_is_said(tmp_path: Path) -> None:
    """A review: a search of several says the least ready state, 'off' when one workspace has no model, and the
    title then said nothing of the other one's fill (the MCP answer did)."""
    kb, words, db = tmp_path / "kb", tmp_path / "words", tmp_path / "autodoc.db"
    for i in range(14):
        write(kb, f"n{i:02}.md", f"# Note {i}\n\nFlour, water, salt and yeast make bread number {i}.\n")
    write(words, "rye.md", "# Rye\n\nRye bread wants a sour starter.\n")
    init, env = editor(tmp_path, db, {"kb": kb, "words": words}, "poll_ms = 100, scope = 'all'")
    with model_server("tei", Behaviour(hold_after=1)) as server:
        with Engine(db) as engine:
            engine.workspace_add("kb", str(kb))
            engine.workspace_configure("kb", {"embedder": {"provider": "tei", "url": server.url, "batch_size": 2,
                                                           "timeout": 120}})
            engine.workspace_add("words", str(words))
            engine.workspace_configure("words", {"embedder": "none"})
            for name in ("kb", "words"):
                engine.workspace_index(name)
        with child_nvim("-u", str(init), env=env) as nvim:
            assert server.behaviour.holding.wait(timeout=60)
            nvim.command("AutodocSearch bread")
            wait_for(lambda: re.search(r"semantic kb (\d+%|partial)", nvim.exec_lua(LIST_TITLE)), timeout=60,
                     what="the list's title saying kb's vectors fill")
        server.behaviour.release.set()
