"""A search asked in Neovim's first second (`nvim -c 'AutodocSearch @kb ...'`), before the Python host runs: its
final list, with the semantic stage, is drawn, and the lexical list before it says it is not final.

It was never drawn: the picker asked twice (its prompt filled, then the engine ready), and the newer ask, made
by the engine's opening queue, was sent before the older one still queued behind it; the host took the older
for the lane's newest, stopped the newer at its semantic stage, and the editor dropped the older one's answer.
Requests are now numbered as they are made, and the host runs a lane's greatest number."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from autodoc_core.service.engine import Engine
from tests.conftest import PROJECT, write
from tests.nvim import MINIMAL_INIT, child_nvim, wait_for

# Each list handed to the picker, with what its status line said (recorded from the first, by a -c before
# the search's).
RECORD = ("lua _G.drawn = {}; vim.api.nvim_create_autocmd('User', { pattern = 'AutodocResults', "
          "callback = function(event) local s = require('autodoc.session').current; "
          "table.insert(_G.drawn, { level = event.data.level, stages = event.data.stages, tick = event.data.tick, "
          "status = s:status() }) end })")


@pytest.fixture
def embedded_kb(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace indexed with every vector made before Neovim starts: nothing refreshes the picker later."""
    kb, db = tmp_path / "kb", tmp_path / "autodoc.db"
    write(kb, "adr/0002.md", "# ADR 0002 Keep the index in SQLite\n\n## Decision\n\n"
                             "We keep every workspace in one embedded store, for crash safety.\n")
    write(kb, "notes/cooking.md", "# Cooking\n\n## Bread\n\nFlour, water, salt and yeast make bread.\n")
    with Engine(db) as engine:
        engine.workspace_add("kb", str(kb))
        assert engine.workspace_index("kb", {"wait": "semantic"})["semantic"] == "ready"
    return kb, db


def test_a_search_asked_at_start_gets_its_final_list(tmp_path: Path, embedded_kb: tuple[Path, Path]) -> None:
    kb, db = embedded_kb
    env = {"AUTODOC_ROOT": str(PROJECT), "AUTODOC_PYTHON": sys.executable, "AUTODOC_TEST_KB": str(kb),
           "AUTODOC_DB": str(db), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_DATA_HOME": str(tmp_path / "data")}
    with child_nvim("-u", str(MINIMAL_INIT), "-c", RECORD, "-c", "AutodocSearch @kb crash safety", env=env) as nvim:
        drawn = lambda: nvim.exec_lua("return _G.drawn")  # noqa: E731
        final = wait_for(lambda: [d for d in drawn() if d["level"] == "final"], timeout=90,
                         what="the final list of the search asked at start")
        assert "semantic" in final[-1]["stages"], drawn()
        assert "to come" not in final[-1]["status"], final
        partial = [d for d in drawn() if d["level"] == "partial"]
        assert partial and all("so far, semantic to come" in d["status"] for d in partial), drawn()
        # the picker's own state agrees: its newest ask is answered with every stage
        shown = nvim.exec_lua("return require('autodoc').picker_state()")
        assert shown["level"] == "final" and "semantic" in shown["performed"] and shown["tick"] == final[-1]["tick"]


# Every text any buffer showed, from Neovim's first second (a buffer's lines as each change left them).
SHOWN = ("lua _G.shown = {}; vim.api.nvim_create_autocmd('BufNew', { callback = function(event) "
         "vim.api.nvim_buf_attach(event.buf, false, { on_lines = function(_, buf) "
         "table.insert(_G.shown, table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\\n')) end }) end })")


def test_a_picker_opened_while_the_engine_opens_says_no_false_error(tmp_path: Path,
                                                                     embedded_kb: tuple[Path, Path]) -> None:
    """A new user's walk: `make run` a second time opened the picker at once, and for about 5 s it said `no
    workspace yet; add one with :AutodocWorkspaceAdd` (its prompt, filled from the command, was asked before the
    engine had said which workspaces there are), then corrected itself."""
    kb, db = embedded_kb
    env = {"AUTODOC_ROOT": str(PROJECT), "AUTODOC_PYTHON": sys.executable, "AUTODOC_TEST_KB": str(kb),
           "AUTODOC_DB": str(db), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_DATA_HOME": str(tmp_path / "data")}
    with child_nvim("-u", str(MINIMAL_INIT), "-c", SHOWN, "-c", RECORD, "-c", "AutodocSearch crash safety",
                    env=env) as nvim:
        wait_for(lambda: [d for d in nvim.exec_lua("return _G.drawn") if d["level"] == "final"], timeout=90,
                 what="the final list of the search asked at start")
        shown = nvim.exec_lua("return _G.shown")
        assert shown and not [text for text in shown if "no workspace" in text], shown
        assert not [text for text in shown if "Rerank" in text], "a box for a ranker the workspace has not"
