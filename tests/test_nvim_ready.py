""""The engine is not ready yet" is decided in one place (autodoc.lifecycle's queue): requests made before it is
open, by a plain rpc call or by a picker, are sent once it is, in the order they were made; when the host cannot
start, each of them fails once, with the message."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import PROJECT
from tests.nvim import neovim, python_line, rtp, wait_for
from tests.nvim.plugin import list_message, unspaced

MISSING = "autodoc: no Python with autodoc installed; run :AutodocInstall or make install in "

# What the host is sent, in order (observed on the way through, then sent as before), and the answers.
RECORD = """
_G.sent, _G.answers = {}, {}
local host = require('autodoc.host')
local notify = host.notify
host.notify = function(args)
  local method, params = args[2], args[3]
  table.insert(_G.sent, method .. (method:match('^search%.') and ' ' .. params[2] or ''))
  return notify(args)
end
function _G.ask(query)
  require('autodoc.rpc').request('search.query', { 'kb', query, { stages = { 'lexical' } } }, function(err, result)
    table.insert(_G.answers, { query = query, hits = result and #result.hits or nil,
      error = err and require('autodoc.rpc').describe(err) or nil })
  end)
end
"""

BEFORE_THE_ENGINE_OPENS = """
_G.ask('yeast')
require('autodoc').pick({ query = 'bread', workspace = 'kb' })
_G.ask('flour')
return require('autodoc.state').phase"""


def both_answers(nvim) -> list | None:
    answers = nvim.exec_lua("return _G.answers")
    return answers if len(answers) == 2 else None


def test_requests_made_before_the_engine_opens_are_sent_once_it_is_in_order(tmp_path: Path, notes: Path) -> None:
    db = tmp_path / "a.db"
    cli = [sys.executable, "-m", "autodoc_core", "--db", str(db), "--call"]
    subprocess.run([*cli, "workspace.add", json.dumps(["kb", str(notes)])], check=True, capture_output=True)
    subprocess.run([*cli, "workspace.index", json.dumps(["kb", {"wait": "lexical"}])], check=True,
                   capture_output=True)
    with neovim(tmp_path, rtp(PROJECT) + python_line() + RECORD, {"AUTODOC_DB": str(db)}) as nvim:
        assert nvim.exec_lua(BEFORE_THE_ENGINE_OPENS) == "starting"  # the first request opens it; none is sent
        answers = wait_for(lambda: both_answers(nvim), what="the answers to both plain requests")
        assert sorted(answers, key=str) == [{"query": "flour", "hits": 1}, {"query": "yeast", "hits": 1}], answers
        wait_for(lambda: "search.stream bread" in nvim.exec_lua("return _G.sent"), what="the picker's search")
        sent = nvim.exec_lua("return _G.sent")
        asked = [s for s in sent if s.startswith("search.")]
        assert sent[0] == "plugin.setup" and asked[:3] == ["search.query yeast", "search.stream bread",
                                                            "search.query flour"], sent
        picker = wait_for(lambda: nvim.exec_lua("local s = require('autodoc').picker_state(); "
                                                "return s and #s.hits > 0 and s"), what="the picker's hits")
        assert picker["query"] == "bread" and picker["hits"][0]["path"] == "notes/cooking.md"


def test_a_host_that_cannot_start_fails_each_waiting_request_once(tmp_path: Path) -> None:
    root = tmp_path / "autodoc.nvim"  # this plugin as a plugin manager clones it: no .venv, no python3 on PATH
    for part in ("lua", "plugin", "rplugin"):
        shutil.copytree(PROJECT / part, root / part)
    empty_path = tmp_path / "bin"
    empty_path.mkdir()
    with neovim(tmp_path, rtp(root) + RECORD, {"PATH": str(empty_path)}) as nvim:
        assert nvim.exec_lua(BEFORE_THE_ENGINE_OPENS) in ("starting", "failed")  # no interpreter: at once
        wait_for(lambda: nvim.exec_lua("return require('autodoc.state').phase") == "failed", what="the failure")
        answers = wait_for(lambda: both_answers(nvim), what="both plain requests answered")
        assert answers == [{"query": "yeast", "error": MISSING + str(root)},
                           {"query": "flour", "error": MISSING + str(root)}], answers
        wait_for(lambda: list_message(nvim) == unspaced(MISSING + str(root)),
                 what="the picker saying why, in place of hits")
        assert nvim.exec_lua("return _G.sent") == []
        assert len(nvim.exec_lua("return _G.answers")) == 2  # each failed once
        messages = nvim.exec_lua("return vim.fn.execute('messages')")
        assert messages.count(MISSING) == 1, messages  # said once, by the host
