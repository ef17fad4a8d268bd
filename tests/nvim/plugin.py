"""The plugin tests' Neovim and its helpers: a child Neovim on ``minimal_init.lua`` over a two-note workspace
``kb`` (the ``nvim`` fixture in conftest), and what the plugin and stream tests ask it."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pynvim
import pytest

from tests.conftest import PROJECT, write
from tests.nvim import MINIMAL_INIT, child_nvim, outstanding, wait_for


@contextlib.contextmanager
def plugin_nvim(tmp_path: Path, kb: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[pynvim.Nvim]:
    """The child Neovim of the ``nvim`` fixture: its own database and XDG folders, the test kb's two notes."""
    write(kb, "adr/0002.md", "---\ntype: adr\n---\n# ADR 0002 Keep the index in SQLite\n\n## Decision\n\n"
                             "We keep every workspace in one embedded relational store.\n")
    write(kb, "notes/cooking.md", "# Cooking\n\n## Bread\n\nFlour, water, salt and yeast make bread.\n")
    env = {
        "AUTODOC_ROOT": str(PROJECT),
        "AUTODOC_PYTHON": sys.executable,
        "AUTODOC_TEST_KB": str(kb),
        "AUTODOC_DB": str(tmp_path / "autodoc.db"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),  # never the developer's own config
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)  # the child Neovim, and its Python host, inherit them
    with child_nvim("-u", str(MINIMAL_INIT)) as instance:
        yield instance


def lua(nvim: pynvim.Nvim, code: str, *args):
    return nvim.exec_lua(code, *args)


def index_once(nvim) -> dict:
    """Index the workspace through the plugin and wait for its report."""
    lua(nvim, "_G.report = nil; require('autodoc').index('kb', function(_, r) _G.report = r end)")
    return wait_for(lambda: lua(nvim, "return _G.report"))


# What the built-in picker shows, by the name a test asks for: the answer drawn, its hits, the prompt searched.
PICKER_FIELDS = {"answer": "s.drawn", "hits": "require('autodoc.picker.render').hits(s)", "query": "s.session.prompt"}


def picker(nvim, field: str):
    read = PICKER_FIELDS.get(field, "s." + field)
    return lua(nvim, f"local s = require('autodoc.picker').state; return s and {read}")


def picker_tick(nvim) -> int:
    """How many times the open picker has asked (require('autodoc').picker_state().tick)."""
    return lua(nvim, "return require('autodoc').picker_state().tick")


def picker_stages(nvim) -> dict:
    return lua(nvim, "return require('autodoc').picker_state().stages")


def requested(nvim) -> list[str] | None:
    """The stages the picker's answer on screen asked for (None before an answer to a search)."""
    return lua(nvim, "local s = require('autodoc').picker_state(); return s and s.requested")


def list_lines(nvim) -> list[str]:
    return lua(nvim, "local s = require('autodoc.picker').state; "
                     "return s and vim.api.nvim_buf_get_lines(s.list_buf, 0, -1, false) or {}")


def unspaced(text: str) -> str:
    return "".join(text.split())


def list_message(nvim) -> str:
    """The message the list shows in place of hits, its rows joined without their spaces (rows break between words
    at the list's width, and inside a word longer than a row): compare it with ``unspaced(expected)``."""
    return unspaced("".join(list_lines(nvim)))


def ready(nvim) -> None:
    wait_for(lambda: lua(nvim, "return require('autodoc').workspaces.kb ~= nil"))


def settled(nvim) -> None:
    """Nothing left that refreshes an open picker by itself: the start-up index run has answered and the
    vectors are complete (AutodocIndexed and AutodocSemanticReady each search again)."""
    ready(nvim)
    wait_for(lambda: lua(nvim, "return _G.autodoc_indexed") >= 1, timeout=60)
    # The event, not workspace.status: the plugin's own poll sees "ready" up to poll_ms later, and its
    # AutodocSemanticReady then refreshed the list the test had just filled.
    wait_for(lambda: lua(nvim, "return _G.autodoc_semantic_ready") >= 1, timeout=120)


def final_answer(nvim, term: str) -> None:
    """Wait for the picker to show an answer to `term` with no request on its way (the lexical answer and the
    full one are asked at once): an answer still coming would replace whatever the test shows next."""
    wait_for(lambda: (picker(nvim, "answer") or {}).get("query", {}).get("terms") == [term]
             and outstanding(nvim) == 0, timeout=60)


def host_poll(nvim) -> None:
    """A round trip through the host's event loop: every request sent before it has been received."""
    assert lua(nvim, "return vim.rpcrequest(vim.fn['remote#host#Require']('autodoc'), 'poll')") == "ok"
